#include "messages/nostr/negentropy_client.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <set>

#include "messages/nostr/canonical.hpp"
#include "messages/nostr/json.hpp"

namespace graspd::nostr::negentropy {

struct ClientSession::State {
  std::string subscription_id;
  Filter filter;
  Storage storage;
  std::optional<Negentropy> negentropy;
  std::set<EventId> have;
  std::set<EventId> need;
  std::size_t rounds = 0;
  std::size_t max_rounds = default_max_rounds;
};

namespace {

std::string with_subscription(std::string_view verb, std::string_view subscription_id) {
  std::string out = "[\"";
  out += verb;
  out += "\",";
  append_json_string_sanitized(out, subscription_id);
  return out;
}

/// Moves the ids not in `seen` from `found` to `fresh`.
void keep_new(std::vector<EventId>& found, std::set<EventId>& seen, std::vector<EventId>& fresh) {
  for (const auto& id : found)
    if (seen.insert(id).second) fresh.push_back(id);
  found.clear();
}

}  // namespace

ClientSession::ClientSession(std::unique_ptr<State> state) : state_(std::move(state)) {}

Result<ClientSession> ClientSession::open(std::string subscription_id, Filter filter,
                                          std::vector<Item> ours, std::size_t frame_size_limit,
                                          std::size_t max_rounds) {
  auto state = std::make_unique<State>();
  state->max_rounds = max_rounds;
  state->subscription_id = std::move(subscription_id);
  filter.limit.reset();
  state->filter = std::move(filter);
  state->storage = Storage(std::move(ours));
  auto negentropy = Negentropy::create(state->storage, frame_size_limit);
  if (!negentropy) return Result<ClientSession>::failure(negentropy.error());
  state->negentropy = *negentropy;
  return ClientSession(std::move(state));
}

std::string ClientSession::open_frame() const {
  std::string out = with_subscription("NEG-OPEN", state_->subscription_id);
  out += ',';
  out += serialize_filter(state_->filter);
  out += ",\"";
  out += message_to_hex(state_->negentropy->initiate());
  out += "\"]";
  return out;
}

std::string ClientSession::close_frame() const {
  return with_subscription("NEG-CLOSE", state_->subscription_id) + "]";
}

Result<ClientRound> ClientSession::on_message(std::string_view hex) {
  if (state_->rounds >= state_->max_rounds)
    return Result<ClientRound>::failure(
        Error{ErrorCode::too_many_rounds, "the relay kept reconciling past " +
                                              std::to_string(state_->max_rounds) +
                                              " rounds (NGIT_NEGENTROPY_MAX_ROUNDS)"});
  auto message = message_from_hex(hex);
  if (!message) return Result<ClientRound>::failure(message.error());
  std::vector<EventId> have;
  std::vector<EventId> need;
  auto next = state_->negentropy->reconcile(*message, have, need);
  if (!next) return Result<ClientRound>::failure(next.error());
  ++state_->rounds;
  ClientRound round;
  keep_new(have, state_->have, round.have);
  keep_new(need, state_->need, round.need);
  if (*next) {
    round.frame = with_subscription("NEG-MSG", state_->subscription_id) + ",\"" +
                  message_to_hex(**next) + "\"]";
  } else {
    round.frame = close_frame();
    round.done = true;
  }
  return round;
}

bool notice_refuses_negentropy(std::string_view message) {
  static constexpr std::array<std::string_view, 9> words = {
      "error",           "invalid",  "unrecognized", "bad msg", "bad message",
      "could not parse", "disabled", "unsupported",  "unknown"};
  std::string lower(message.substr(0, 512));
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return std::any_of(words.begin(), words.end(),
                     [&](std::string_view w) { return lower.find(w) != std::string::npos; });
}

const std::string& ClientSession::subscription_id() const {
  return state_->subscription_id;
}
const Filter& ClientSession::filter() const {
  return state_->filter;
}
std::size_t ClientSession::local_records() const {
  return state_->storage.size();
}
std::size_t ClientSession::rounds() const {
  return state_->rounds;
}
std::size_t ClientSession::have_count() const {
  return state_->have.size();
}
std::size_t ClientSession::need_count() const {
  return state_->need.size();
}

}  // namespace graspd::nostr::negentropy

namespace graspd::nostr {

std::string client_req(std::string_view subscription_id, const Filters& filters) {
  std::string out = "[\"REQ\",";
  append_json_string_sanitized(out, subscription_id);
  for (const auto& f : filters) {
    out += ',';
    out += serialize_filter(f);
  }
  return out + "]";
}

std::string client_close(std::string_view subscription_id) {
  std::string out = "[\"CLOSE\",";
  append_json_string_sanitized(out, subscription_id);
  return out + "]";
}

std::string client_event(std::string_view event_json) {
  std::string out = "[\"EVENT\",";
  out += event_json;
  return out + "]";
}

}  // namespace graspd::nostr

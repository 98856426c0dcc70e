#include "actors/sync/engine/relay_comparison.hpp"

#include <variant>

#include "messages/nostr/relay_message.hpp"

namespace graspd::sync {

namespace {

/// Text from a peer quoted in a reason is cut to this.
constexpr std::size_t max_quoted_bytes = 160;

/// A peer's text made fit to quote: cut, control characters blanked. (Not named `quoted`: an
/// unqualified call with a std::string would be ambiguous with std::quoted wherever <iomanip> is
/// visible.)
std::string fit_to_quote(std::string_view text) {
  std::string out(text.substr(0, max_quoted_bytes));
  for (auto& c : out)
    if (static_cast<unsigned char>(c) < 0x20) c = ' ';
  return out;
}

}  // namespace

RelayComparison::RelayComparison(nostr::Filters filters, LocalRecords local,
                                 std::size_t max_records, std::size_t max_rounds)
    : filters_(std::move(filters)),
      local_(std::move(local)),
      max_records_(max_records),
      max_rounds_(max_rounds) {}

RelayComparison::Step RelayComparison::start(std::optional<bool> peer_lists_nip77) {
  if (peer_lists_nip77 == false) return fail(std::string(no_nip77));
  return open_next();
}

RelayComparison::Step RelayComparison::fail(std::string reason) {
  Step step;
  if (session_) step.frames.push_back(session_->close_frame());
  session_.reset();
  finished_ = true;
  step.finished = true;
  step.failure = std::move(reason);
  return step;
}

RelayComparison::Step RelayComparison::open_next() {
  session_.reset();
  if (next_ == filters_.size()) {
    finished_ = true;
    return Step{{}, true, {}};
  }
  const auto& filter = filters_[next_];
  auto ours = local_ ? local_(filter, max_records_)
                     : std::optional<std::vector<nostr::negentropy::Item>>(
                           std::vector<nostr::negentropy::Item>{});
  if (!ours) return fail("too many events here to compare");
  auto session = nostr::negentropy::ClientSession::open(
      "rv" + std::to_string(next_), filter, std::move(*ours),
      nostr::negentropy::client_frame_size_limit, max_rounds_);
  ++next_;
  if (!session) return fail("cannot open a NIP-77 session: " + session.error().detail);
  session_.emplace(std::move(*session));
  return Step{{session_->open_frame()}, false, {}};
}

RelayComparison::Step RelayComparison::on_round(std::string_view hex) {
  answered_ = true;
  auto round = session_->on_message(hex);
  if (!round) return fail("NIP-77 session failed: " + fit_to_quote(round.error().detail));
  have_.insert(round->have.begin(), round->have.end());
  need_.insert(round->need.begin(), round->need.end());
  if (!round->done) return Step{{std::move(round->frame)}, false, {}};
  auto step = open_next();
  step.frames.insert(step.frames.begin(), std::move(round->frame));  // the NEG-CLOSE first
  return step;
}

RelayComparison::Step RelayComparison::on_frame(std::string_view text) {
  if (finished_ || !session_) return {};
  auto message = nostr::parse_relay_message(text, nostr::ParseLimits{});
  if (!message) return {};  // AUTH and anything else a relay may send on the side
  const auto& sub = session_->subscription_id();
  if (auto* msg = std::get_if<nostr::RelayNegMsg>(&*message); msg && msg->subscription_id == sub)
    return on_round(msg->hex);
  if (auto* err = std::get_if<nostr::RelayNegErr>(&*message); err && err->subscription_id == sub) {
    session_.reset();  // a NEG-ERR ends the session on the relay's side
    return fail("the relay refused the comparison: " + fit_to_quote(err->reason));
  }
  if (auto* closed = std::get_if<nostr::RelayClosed>(&*message);
      closed && closed->subscription_id == sub) {
    session_.reset();
    return fail("the relay closed the comparison: " + fit_to_quote(closed->message));
  }
  if (auto* notice = std::get_if<nostr::RelayNotice>(&*message);
      notice && !answered_ && nostr::negentropy::notice_refuses_negentropy(notice->message))
    return fail(std::string(no_nip77));
  return {};
}

}  // namespace graspd::sync

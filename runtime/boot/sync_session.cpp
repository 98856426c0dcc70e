#include <utility>  // before Asio, see docs/toolchain.md §1

#include "runtime/boot/sync_session.hpp"

#include <boost/asio/io_context.hpp>

#include <ostream>

#include "messages/nostr/verify.hpp"

namespace graspd::boot {

namespace {

/// The download subscription id, as strfry sync names it.
constexpr const char* download_id = "R";
/// Ids per download REQ: strfry's maxFilterLimit (and graspd's default limit) answer 500 per
/// filter.
constexpr std::size_t fetch_batch = 500;
/// Unanswered uploads: refilled up to the maximum once at most the low mark is out (strfry sync).
constexpr std::size_t upload_max = 100;
constexpr std::size_t upload_low = 50;
/// Refusals logged one by one; the rest are counted only.
constexpr std::uint64_t logged_refusal_limit = 20;

std::chrono::milliseconds tick_interval(bool terminal) {
  return terminal ? std::chrono::milliseconds(100) : std::chrono::milliseconds(1000);
}

/// Plain progress lines when stderr is not a terminal: one every few seconds.
std::chrono::steady_clock::duration progress_interval(bool terminal) {
  if (terminal) return std::chrono::milliseconds(100);
  return std::chrono::seconds(5);
}

}  // namespace

SyncSession::SyncSession(boost::asio::io_context& io, SyncArgs args,
                         std::shared_ptr<const store::EventStore> store,
                         std::unique_ptr<SyncIngest> ingest,
                         nostr::negentropy::ClientSession negentropy, nostr::ParseLimits limits,
                         SyncOutput output)
    : io_(io),
      args_(std::move(args)),
      store_(std::move(store)),
      ingest_(std::move(ingest)),
      negentropy_(std::move(negentropy)),
      limits_(limits),
      output_(output),
      timer_(io),
      throttle_(progress_interval(output.terminal)) {
  figures_.local_records = negentropy_.local_records();
  if (ingest_)
    ingest_->set_on_refused([this](const nostr::EventId& id, const std::string& why) {
      if (++logged_refusals_ <= logged_refusal_limit)
        say("sync: not stored " + nostr::to_hex(id) + ": " + why);
    });
  throttle_.due(Clock::now());  // the first line after one interval, not at once
}

void SyncSession::start(const ParsedUrl& url, runtime::RelayClientOptions options) {
  client_ = runtime::RelayClient::start(io_, url, std::move(options), shared_from_this());
  arm_timer();
}

void SyncSession::on_open(runtime::PeerLimits, bool) {
  last_activity_ = Clock::now();
  if (!finished_) client_->send(negentropy_.open_frame());
}

void SyncSession::on_message(std::string&& text) {
  last_activity_ = Clock::now();
  const auto bytes = text.size();
  if (!finished_) {
    auto parsed = nostr::parse_relay_message(text, limits_);
    if (parsed)
      dispatch(*parsed);
    else if (text.starts_with("[\"NEG-MSG\""))
      fail("the relay sent an unusable NEG-MSG: " + parsed.error());
    else if (!first_neg_msg_seen_)
      fail("the relay sent an unparsable frame: " + parsed.error());
    else
      say("sync: ignored an unparsable frame: " + parsed.error());
  }
  if (client_) client_->consumed(bytes);
}

void SyncSession::on_close(bool was_open, std::string reason) {
  if (!finished_) {
    if (was_open)
      fail("disconnected: " + reason);
    else
      fail(reason.starts_with("cannot connect") ? reason : "cannot connect: " + reason);
  }
  timer_.cancel();
  client_.reset();  // the client holds this handler: break the cycle
}

void SyncSession::dispatch(nostr::RelayMessage& message) {
  if (auto* msg = std::get_if<nostr::RelayNegMsg>(&message)) return on_neg_msg(*msg);
  if (auto* msg = std::get_if<nostr::RelayNegErr>(&message)) return on_neg_err(*msg);
  if (auto* msg = std::get_if<nostr::RelayNotice>(&message)) return on_notice(*msg);
  if (auto* msg = std::get_if<nostr::RelayEvent>(&message)) return on_event(*msg);
  if (auto* msg = std::get_if<nostr::RelayEose>(&message)) {
    if (msg->subscription_id == download_id) on_eose();
    return;
  }
  if (auto* msg = std::get_if<nostr::RelayClosed>(&message)) return on_closed(*msg);
  if (auto* msg = std::get_if<nostr::RelayOk>(&message)) return on_ok(*msg);
}

void SyncSession::on_neg_msg(const nostr::RelayNegMsg& msg) {
  if (msg.subscription_id != negentropy_.subscription_id() || figures_.reconciled) return;
  first_neg_msg_seen_ = true;
  auto round = negentropy_.on_message(msg.hex);
  if (!round && round.error().code == nostr::negentropy::ErrorCode::too_many_rounds)
    return fail(round.error().detail);
  if (!round) return fail("the relay sent an unusable NEG-MSG: " + round.error().detail);
  client_->send(round->frame);
  take_round(*round);
  pump();
}

void SyncSession::take_round(const nostr::negentropy::ClientRound& round) {
  figures_.rounds = negentropy_.rounds();
  figures_.have = negentropy_.have_count();
  figures_.need = negentropy_.need_count();
  figures_.reconciled = round.done;
  if (args_.print_missing) {
    for (const auto& id : round.have) output_.out << "have," << nostr::to_hex(id) << '\n';
    for (const auto& id : round.need) output_.out << "need," << nostr::to_hex(id) << '\n';
  }
  if (args_.uploads()) to_send_.insert(to_send_.end(), round.have.begin(), round.have.end());
  if (args_.downloads()) to_fetch_.insert(to_fetch_.end(), round.need.begin(), round.need.end());
}

void SyncSession::on_neg_err(const nostr::RelayNegErr& msg) {
  if (msg.subscription_id != negentropy_.subscription_id()) return;
  std::string why = "the relay answered NEG-ERR: " + msg.reason;
  if (msg.limit) why += " (its limit: " + std::to_string(*msg.limit) + " records)";
  fail(why);
}

void SyncSession::on_notice(const nostr::RelayNotice& msg) {
  if (!first_neg_msg_seen_ && nostr::negentropy::notice_refuses_negentropy(msg.message))
    return fail("the relay answered NOTICE \"" + msg.message + "\" (no NIP-77?)");
  say("sync: relay NOTICE: " + msg.message);
}

void SyncSession::on_event(nostr::RelayEvent& msg) {
  if (msg.subscription_id != download_id || asked_.erase(msg.event.id) == 0) return;
  ++figures_.received;
  if (auto check = nostr::check_event(msg.event); check != nostr::EventCheck::ok) {
    ++figures_.invalid;
    say("sync: dropped " + nostr::to_hex(msg.event.id) + ": " + nostr::describe(check));
    return;
  }
  ingest_->submit(std::make_shared<const nostr::Event>(std::move(msg.event)));
}

void SyncSession::on_eose() {
  if (!request_open_) return;
  request_open_ = false;
  figures_.not_delivered += asked_.size();
  asked_.clear();
  if (!ingest_->flush()) return fail("cannot write to the store: " + ingest_->error());
  pump();
}

void SyncSession::on_closed(const nostr::RelayClosed& msg) {
  if (msg.subscription_id != download_id || !request_open_) return;
  fail("the relay closed the download request: " + msg.message);
}

void SyncSession::on_ok(const nostr::RelayOk& msg) {
  if (unanswered_.erase(msg.event_id) == 0) return;
  if (msg.accepted) {
    ++figures_.sent_ok;
  } else {
    ++figures_.sent_refused;
    if (++logged_refusals_ <= logged_refusal_limit)
      say("sync: the relay refused " + nostr::to_hex(msg.event_id) + ": " + msg.message);
  }
  pump();
}

void SyncSession::pump() {
  if (finished_) return;
  if (!request_open_) request_next_batch();
  send_uploads();
  if (figures_.reconciled && !request_open_ && to_fetch_.empty() && to_send_.empty() &&
      unanswered_.empty())
    finish();
}

void SyncSession::request_next_batch() {
  if (to_fetch_.empty()) return;
  nostr::Filter filter;
  filter.ids.emplace();
  while (!to_fetch_.empty() && filter.ids->size() < fetch_batch) {
    asked_.insert(to_fetch_.front());
    filter.ids->push_back(to_fetch_.front());
    to_fetch_.pop_front();
  }
  request_open_ = true;
  client_->send(nostr::client_req(download_id, {filter}));
}

void SyncSession::send_uploads() {
  if (unanswered_.size() > upload_low) return;
  while (unanswered_.size() < upload_max && !to_send_.empty()) {
    auto id = to_send_.front();
    to_send_.pop_front();
    auto json = store_->get(id);
    if (!json) continue;  // deleted or expired since the reconciliation
    client_->send(nostr::client_event(*json));
    unanswered_.insert(id);
    ++figures_.sent;
  }
}

void SyncSession::fail(std::string why) {
  if (finished_) return;
  failure_ = std::move(why);
  finish();
}

void SyncSession::finish() {
  finished_ = true;
  timer_.cancel();
  if (client_) client_->close();
  draw_progress(true);
}

void SyncSession::arm_timer() {
  timer_.expires_after(tick_interval(output_.terminal));
  timer_.async_wait([self = shared_from_this()](const boost::system::error_code& ec) {
    if (!ec && !self->finished_) self->on_tick();
  });
}

void SyncSession::on_tick() {
  const auto idle = Clock::now() - last_activity_;
  if (args_.timeout_secs > 0 && idle >= std::chrono::seconds(args_.timeout_secs))
    return fail("timeout: nothing from the relay for " + std::to_string(args_.timeout_secs) + " s");
  draw_progress(false);
  arm_timer();
}

SyncFigures SyncSession::figures() const {
  auto figures = figures_;
  if (ingest_) {
    auto counts = ingest_->counts();
    figures.stored = counts.stored;
    figures.duplicate = counts.duplicate;
    figures.refused = counts.refused;
    figures.parked = counts.parked;
  }
  return figures;
}

void SyncSession::draw_progress(bool force) {
  if (!force && !throttle_.due(Clock::now())) return;
  if (force && !bar_drawn_) return;  // the summary follows; no bar to finish
  auto line = format_progress(figures(), Clock::now() - started_);
  if (output_.terminal) {
    output_.err << '\r' << line << "\x1b[K" << (force ? "\n" : "") << std::flush;
    bar_drawn_ = !force;
  } else if (!force) {
    output_.err << line << '\n' << std::flush;
  }
}

void SyncSession::say(const std::string& line) {
  if (bar_drawn_) output_.err << "\r\x1b[K";
  bar_drawn_ = false;
  output_.err << line << '\n' << std::flush;
}

}  // namespace graspd::boot

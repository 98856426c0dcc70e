// NegentropyHistory against a simulated peer that answers NIP-77 with our own
// responder and caps every REQ filter's answer: only missing events are
// fetched, in bounded batches; refusals split the window or fall back to REQ.
#include "actors/sync/engine/negentropy_history.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <set>

#include "actors/sync/engine/sync_filters.hpp"
#include "messages/nostr/canonical.hpp"
#include "messages/nostr/client_message.hpp"
#include "messages/nostr/json.hpp"
#include "messages/nostr/negentropy.hpp"
#include "messages/nostr/relay_message.hpp"

namespace graspd::sync {
namespace {

namespace neg = nostr::negentropy;
using Step = NegentropyHistory::Step;

nostr::Event event(int n, std::int64_t created_at) {
  nostr::Event ev;
  ev.id = nostr::sha256("event " + std::to_string(n));
  ev.kind = 1621;
  ev.created_at = created_at;
  return ev;
}

std::vector<neg::Item> items_of(const std::vector<nostr::Event>& events,
                                const nostr::Filter& filter) {
  std::vector<neg::Item> out;
  for (const auto& ev : events)
    if (filter.matches(ev)) out.push_back({static_cast<std::uint64_t>(ev.created_at), ev.id});
  return out;
}

/// A NIP-77 peer: answers NEG-OPEN/NEG-MSG from its events (NEG-ERR blocked past
/// `max_sync_events`), and REQ with at most `cap` events per filter.
struct Peer {
  std::vector<nostr::Event> events;
  std::size_t cap = 100;
  std::size_t max_sync_events = 1'000'000;
  std::map<std::string, std::pair<std::unique_ptr<neg::Storage>, neg::Negentropy>> sessions;
  std::size_t neg_opens = 0;
  std::size_t most_sessions = 0;
  std::size_t fetch_reqs = 0;
  std::size_t largest_fetch = 0;
  std::size_t stored_events_sent = 0;
  /// Fetch REQs (by ids) open at once, and how many to refuse with a rate-limit CLOSED.
  std::set<std::string> open_fetches;
  std::size_t most_fetches = 0;
  /// History REQs (pages and fetches: every REQ but a live one) open at once.
  std::set<std::string> open_history;
  std::size_t most_history = 0;
  std::size_t refuse_fetches = 0;
  /// NEG-OPENs allowed per tick (a token bucket of `open_burst`, as graspd's
  /// NGIT_NEGENTROPY_OPEN_RATE); unset: no limit. Refusals answer NEG-ERR rate-limited.
  std::optional<std::size_t> opens_per_tick;
  std::size_t open_burst = 0;
  std::size_t open_tokens = 0;
  std::size_t open_refusals = 0;

  void tick() { open_tokens = std::min(open_burst, open_tokens + opens_per_tick.value_or(0)); }

  /// The peer's answers to one client frame, in order.
  std::vector<std::string> handle(const std::string& frame) {
    auto msg = nostr::parse_client_message(frame, nostr::ParseLimits{});
    EXPECT_TRUE(msg.ok()) << frame;
    if (!msg) return {};
    if (auto* open = std::get_if<nostr::ClientNegOpen>(&*msg)) return neg_open(*open);
    if (auto* next = std::get_if<nostr::ClientNegMsg>(&*msg))
      return respond(next->subscription_id, next->message);
    if (auto* req = std::get_if<nostr::ClientReq>(&*msg)) return answer(*req);
    if (auto* close = std::get_if<nostr::ClientNegClose>(&*msg))
      sessions.erase(close->subscription_id);
    if (auto* close = std::get_if<nostr::ClientClose>(&*msg)) {
      open_fetches.erase(close->subscription_id);
      open_history.erase(close->subscription_id);
    }
    return {};
  }

  std::vector<std::string> neg_open(const nostr::ClientNegOpen& open) {
    if (opens_per_tick && open_tokens == 0) {
      ++open_refusals;
      return {"[\"NEG-ERR\",\"" + open.subscription_id +
              "\",\"rate-limited: too many NEG-OPEN on this connection, slow down\"]"};
    }
    if (opens_per_tick) --open_tokens;
    ++neg_opens;
    auto items = items_of(events, open.filter);
    if (items.size() > max_sync_events)
      return {"[\"NEG-ERR\",\"" + open.subscription_id + "\",\"blocked: too many query results\"," +
              std::to_string(max_sync_events) + "]"};
    auto storage = std::make_unique<neg::Storage>(std::move(items));
    auto server = neg::Negentropy::create(*storage, neg::server_frame_size_limit);
    sessions.erase(open.subscription_id);
    sessions.emplace(open.subscription_id, std::make_pair(std::move(storage), *server));
    most_sessions = std::max(most_sessions, sessions.size());
    return respond(open.subscription_id, open.message);
  }

  std::vector<std::string> respond(const std::string& id, const std::string& message) {
    auto it = sessions.find(id);
    if (it == sessions.end()) return {"[\"NEG-ERR\",\"" + id + "\",\"closed: unknown\"]"};
    auto reply = it->second.second.respond(message);
    EXPECT_TRUE(reply.ok());
    return {"[\"NEG-MSG\",\"" + id + "\",\"" + neg::message_to_hex(*reply) + "\"]"};
  }

  std::vector<std::string> answer(const nostr::ClientReq& req) {
    std::vector<std::string> out;
    const bool fetch = !req.filters.empty() && req.filters[0].ids;
    if (fetch && refuse_fetches > 0) {
      --refuse_fetches;
      return {"[\"CLOSED\",\"" + req.subscription_id +
              "\",\"rate-limited: too many open subscriptions\"]"};
    }
    if (fetch) {
      open_fetches.insert(req.subscription_id);
      most_fetches = std::max(most_fetches, open_fetches.size());
    }
    if (req.subscription_id.find('~') != std::string::npos) {
      open_history.insert(req.subscription_id);
      most_history = std::max(most_history, open_history.size());
    }
    for (const auto& f : req.filters) {
      if (f.ids) {
        ++fetch_reqs;
        largest_fetch = std::max(largest_fetch, f.ids->size());
      }
      std::size_t sent = 0;
      const auto limit = std::min<std::size_t>(f.limit.value_or(cap), cap);
      for (const auto& ev : events)
        if (sent < limit && f.matches(ev)) {
          out.push_back("[\"EVENT\",\"" + req.subscription_id + "\"," + nostr::serialize_event(ev) +
                        "]");
          ++sent;
          ++stored_events_sent;
        }
    }
    out.push_back("[\"EOSE\",\"" + req.subscription_id + "\"]");
    return out;
  }
};

/// Our side: the store the history reconciles against, and what arrived.
struct Us {
  std::vector<nostr::Event> stored;
  NegentropyLimits limits;
  std::shared_ptr<HistorySlots> slots = std::make_shared<HistorySlots>();
  std::unique_ptr<NegentropyHistory> history;
  Step totals;
  bool completed = false;
  /// Reads of our records for a session (not the one-record probes of take_empty).
  std::size_t session_reads = 0;

  Us() { reset(); }
  void reset() {
    history = std::make_unique<NegentropyHistory>(
        limits,
        [this](const nostr::Filter& f, std::size_t max) {
          if (max > 0) ++session_reads;
          auto items = items_of(stored, f);
          return items.size() > max ? std::nullopt : std::optional(std::move(items));
        },
        slots);
  }
  bool has(const nostr::EventId& id) const {
    return std::any_of(stored.begin(), stored.end(), [&](const auto& e) { return e.id == id; });
  }
};

void absorb(Us& us, Step&& step, std::deque<std::string>& outbox) {
  for (auto& f : step.frames) outbox.push_back(std::move(f));
  if (step.completed) us.completed = true;
  us.totals.rounds += step.rounds;
  us.totals.ids_needed += step.ids_needed;
  us.totals.fetches += step.fetches;
  us.totals.pages += step.pages;
  us.totals.unsupported = us.totals.unsupported || step.unsupported;
  us.totals.supported = us.totals.supported || step.supported;
  for (auto& f : step.fallback) us.totals.fallback.push_back(std::move(f));
}

/// Delivers one peer frame to `us` (events are stored when asked for).
void deliver(Us& us, const std::string& frame, std::deque<std::string>& outbox) {
  auto parsed = nostr::parse_relay_message(frame, nostr::ParseLimits{});
  ASSERT_TRUE(parsed.ok()) << frame;
  if (auto* ev = std::get_if<nostr::RelayEvent>(&*parsed)) {
    if (!us.history->asked_for(ev->subscription_id, ev->event)) return;
    us.history->on_event(ev->subscription_id, ev->event);
    if (!us.has(ev->event.id)) us.stored.push_back(ev->event);
  } else if (auto* eose = std::get_if<nostr::RelayEose>(&*parsed)) {
    absorb(us, us.history->on_eose(eose->subscription_id), outbox);
  } else if (auto* msg = std::get_if<nostr::RelayNegMsg>(&*parsed)) {
    absorb(us, us.history->on_neg_msg(msg->subscription_id, msg->hex), outbox);
  } else if (auto* err = std::get_if<nostr::RelayNegErr>(&*parsed)) {
    absorb(us, us.history->on_neg_err(err->subscription_id, err->reason), outbox);
  } else if (auto* closed = std::get_if<nostr::RelayClosed>(&*parsed)) {
    bool forgotten = false;
    const bool rate_limited = closed->message.rfind("rate-limited:", 0) == 0;
    absorb(us, us.history->on_closed(closed->subscription_id, forgotten, rate_limited), outbox);
  }
}

/// Runs the exchange until nothing is left to send; returns the frames sent.
std::vector<std::string> converse(Us& us, Peer& peer, Step first) {
  std::vector<std::string> sent;
  std::deque<std::string> outbox;
  absorb(us, std::move(first), outbox);
  while (!outbox.empty()) {
    auto frame = std::move(outbox.front());
    outbox.pop_front();
    sent.push_back(frame);
    for (const auto& reply : peer.handle(frame)) deliver(us, reply, outbox);
  }
  return sent;
}

/// Sends everything in `outbox` to the peer and its answers back until nothing is left; returns
/// how many subscriptions completed meanwhile.
std::size_t exchange(Us& us, Peer& peer, std::deque<std::string>& outbox) {
  std::size_t completed = 0;
  while (!outbox.empty()) {
    auto frame = std::move(outbox.front());
    outbox.pop_front();
    for (const auto& reply : peer.handle(frame)) deliver(us, reply, outbox);
    if (us.completed) ++completed, us.completed = false;
  }
  return completed;
}

nostr::Filter kind_filter(std::uint32_t kind) {
  nostr::Filter f;
  f.kinds = std::vector<std::uint32_t>{kind};
  return f;
}

nostr::Filter issues_filter() {
  return kind_filter(1621);
}

nostr::Event event_of_kind(int n, std::int64_t created_at, std::uint32_t kind) {
  auto ev = event(n, created_at);
  ev.kind = kind;
  return ev;
}

nostr::Filters live_filters(const std::string& frame) {
  auto msg = nostr::parse_client_message(frame, nostr::ParseLimits{});
  EXPECT_TRUE(msg.ok()) << frame;
  return msg ? std::get<nostr::ClientReq>(*msg).filters : nostr::Filters{};
}

TEST(NegentropyHistory, FetchesOnlyWhatWeLackPastTheRemoteCap) {
  // 1,000 events on one created_at, a peer capping REQ answers at 100: REQ pagination could
  // never page through them; negentropy names the ids and fetches them in batches.
  Peer peer;
  Us us;
  for (int i = 0; i < 1000; ++i) peer.events.push_back(event(i, 1700000000));
  for (int i = 0; i < 1000; i += 10) us.stored.push_back(peer.events[i]);
  auto sent = converse(us, peer, us.history->open("s1", {issues_filter()}, 1700000100));
  EXPECT_TRUE(us.completed);
  EXPECT_EQ(us.stored.size(), 1000u);
  EXPECT_EQ(us.totals.ids_needed, 900u);
  // 500 asked, 100 delivered: the cap is learnt and the rest asked 100 at a time.
  EXPECT_EQ(peer.fetch_reqs, 9u);
  EXPECT_EQ(peer.largest_fetch, 500u);
  EXPECT_EQ(peer.stored_events_sent, 900u) << "only missing events travel";
  EXPECT_TRUE(us.totals.supported);
  EXPECT_FALSE(us.totals.unsupported);
  // The live REQ asks for no stored events.
  auto live = nostr::parse_client_message(sent.front(), nostr::ParseLimits{});
  ASSERT_TRUE(live.ok());
  EXPECT_EQ(std::get<nostr::ClientReq>(*live).filters.at(0).limit, 0u);
  EXPECT_EQ(us.history->probing(), 0u);
}

TEST(NegentropyHistory, IdsMissingWithinTheCapAreGoneNotAskedAgain) {
  Peer peer;
  Us us;
  for (int i = 0; i < 30; ++i) peer.events.push_back(event(i, 1700000000 + i));
  us.stored.push_back(peer.events[0]);  // we hold some: reconciled, not paged
  std::deque<std::string> outbox;
  absorb(us, us.history->open("s1", {issues_filter()}, 1700000100), outbox);
  peer.handle(outbox[0]);
  auto reply = peer.handle(outbox[1]);
  // The peer deletes 5 events after naming them.
  peer.events.resize(25);
  outbox.clear();
  deliver(us, reply[0], outbox);
  while (!outbox.empty()) {
    auto frame = outbox.front();
    outbox.pop_front();
    for (const auto& r : peer.handle(frame)) deliver(us, r, outbox);
  }
  EXPECT_TRUE(us.completed);
  EXPECT_EQ(us.stored.size(), 25u);
  // 25 of 30 came back: the 5 are asked once more (the peer might cap at 25); nothing comes,
  // so they are gone and the history completes.
  EXPECT_EQ(peer.fetch_reqs, 2u);
}

TEST(NegentropyHistory, AtMostMaxSessionsAreOpenAtOnce) {
  Peer peer;
  Us us;
  us.limits.max_sessions = 2;
  us.reset();
  for (int i = 0; i < 100; ++i) peer.events.push_back(event(i, 1700000000 + i));
  us.stored.push_back(peer.events[0]);
  std::deque<std::string> outbox;
  std::vector<std::string> ids;
  for (int s = 0; s < 5; ++s) {
    ids.push_back("s" + std::to_string(s));
    absorb(us, us.history->open(ids.back(), {issues_filter(), issues_filter()}, 1700000200),
           outbox);
  }
  const auto completed = exchange(us, peer, outbox);
  EXPECT_EQ(peer.most_sessions, 2u);
  EXPECT_EQ(peer.neg_opens, 10u) << "two windows for each of five subscriptions";
  EXPECT_EQ(completed, 5u);
  EXPECT_EQ(us.stored.size(), 100u);
}

TEST(NegentropyHistory, FetchesTakeTurnsForTheHistorySlots) {
  // Five subscriptions each lack events: their fetch REQs take turns for the connection's history
  // slots, so the live REQs and the fetches stay within the peer's subscription cap less the
  // slots the plan keeps free.
  Peer peer;
  Us us;
  us.slots = std::make_shared<HistorySlots>(1);
  us.reset();
  for (int i = 0; i < 300; ++i) peer.events.push_back(event(i, 1700000000 + i));
  us.stored.push_back(peer.events[0]);
  std::deque<std::string> outbox;
  for (int s = 0; s < 5; ++s)
    absorb(us, us.history->open("s" + std::to_string(s), {issues_filter()}, 1700000400), outbox);
  const auto completed = exchange(us, peer, outbox);
  EXPECT_EQ(peer.most_fetches, 1u);
  EXPECT_EQ(us.slots->in_use(), 0u);
  EXPECT_GE(peer.fetch_reqs, 5u);
  EXPECT_EQ(completed, 5u);
  EXPECT_EQ(us.stored.size(), 300u);
}

TEST(NegentropyHistory, AFetchClosedForARateLimitIsAskedAgainAfterAPause) {
  Peer peer;
  peer.refuse_fetches = 2;
  Us us;
  for (int i = 0; i < 50; ++i) peer.events.push_back(event(i, 1700000000 + i));
  us.stored.push_back(peer.events[0]);
  std::deque<std::string> outbox;
  absorb(us, us.history->open("s1", {issues_filter()}, 1700000100), outbox);
  std::size_t completed = exchange(us, peer, outbox);
  EXPECT_EQ(us.stored.size(), 1u) << "refused: nothing yet but the one we held";
  EXPECT_EQ(completed, 0u) << "the ids are kept, not dropped";
  for (std::size_t tick = 0; tick < 2 * us.limits.rate_limit_ticks + 2; ++tick) {
    absorb(us, us.history->on_tick(), outbox);
    completed += exchange(us, peer, outbox);
  }
  EXPECT_EQ(us.stored.size(), 50u) << "asked again after the pause";
  EXPECT_EQ(completed, 1u);
}

/// Ticks both sides until `subscriptions` completed or `max_ticks` passed; returns the ticks.
std::size_t tick_until_complete(Us& us, Peer& peer, std::deque<std::string>& outbox,
                                std::size_t subscriptions, std::size_t max_ticks) {
  std::size_t completed = exchange(us, peer, outbox), ticks = 0;
  while (completed < subscriptions && ticks < max_ticks) {
    ++ticks;
    peer.tick();
    absorb(us, us.history->on_tick(), outbox);
    completed += exchange(us, peer, outbox);
  }
  return ticks;
}

TEST(NegentropyHistory, NegOpensRefusedForARateAreAskedAgainAtThePeersPace) {
  // graspd's server lets 2 NEG-OPENs a second through after a burst of 20: a sync over many
  // filters must wait for it, not page the rest by REQ (every stored event again).
  Peer peer;
  peer.opens_per_tick = 2;
  peer.open_burst = peer.open_tokens = 5;
  Us us;
  for (int i = 0; i < 400; ++i) peer.events.push_back(event(i, 1700000000 + i));
  for (int i = 0; i < 400; i += 2) us.stored.push_back(peer.events[i]);
  std::deque<std::string> outbox;
  const std::size_t subscriptions = 40;
  for (std::size_t s = 0; s < subscriptions; ++s) {
    auto window = issues_filter();
    window.since = 1700000000 + static_cast<std::int64_t>(s) * 10;
    window.until = *window.since + 9;
    absorb(us, us.history->open("s" + std::to_string(s), {window}, 1700001000), outbox);
  }
  const auto ticks = tick_until_complete(us, peer, outbox, subscriptions, 200);
  EXPECT_LT(ticks, 200u) << "every subscription completed";
  EXPECT_EQ(us.stored.size(), 400u);
  EXPECT_TRUE(us.totals.fallback.empty()) << "nothing paged by REQ";
  EXPECT_FALSE(us.totals.unsupported);
  EXPECT_EQ(peer.neg_opens, subscriptions) << "each window reconciled once";
  EXPECT_GT(peer.open_refusals, 0u) << "the pace was tested";
  EXPECT_EQ(us.session_reads, subscriptions) << "a refused window's records are read once";
  // The pace settles near the peer's rate: refusals are a fraction of the opens, not one per
  // tick per session slot.
  EXPECT_LE(peer.open_refusals, ticks) << "at most about one refusal a tick";
  EXPECT_GE(ticks, (subscriptions - peer.open_burst) / *peer.opens_per_tick) << "the peer's pace";
}

TEST(NegentropyHistory, AWindowThePeerKeepsRefusingForARateIsPaged) {
  Peer peer;
  peer.opens_per_tick = 0;  // never a token: every NEG-OPEN is refused
  Us us;
  for (int i = 0; i < 20; ++i) peer.events.push_back(event(i, 1700000000 + i));
  us.stored.push_back(peer.events[0]);  // we hold some: the filter is offered by NEG-OPEN
  std::deque<std::string> outbox;
  absorb(us, us.history->open("s1", {issues_filter()}, 1700000100), outbox);
  tick_until_complete(us, peer, outbox, 1, 10 * us.limits.max_open_refusals);
  ASSERT_EQ(us.totals.fallback.size(), 1u) << "paged by REQ after the refusals, not forever";
  EXPECT_EQ(peer.open_refusals, us.limits.max_open_refusals);
  EXPECT_FALSE(us.totals.unsupported) << "a rate limit is not a refusal of NIP-77";
  EXPECT_TRUE(us.totals.supported);
}

nostr::Filter root_filter(char letter, int first, int count) {
  nostr::Filter f;
  for (int i = first; i < first + count; ++i)
    f.tags[letter].push_back(nostr::to_hex(nostr::sha256("root " + std::to_string(i))));
  f.normalize();
  return f;
}

TEST(ReconcileWindows, FiltersDifferingOnlyInOneTagListsValuesAreJoined) {
  // item_filters' layout: e/E/q filters per chunk of 100 roots, plus a state filter.
  nostr::Filters filters;
  for (int chunk = 0; chunk < 4; ++chunk)
    for (char letter : {'e', 'E', 'q'}) filters.push_back(root_filter(letter, chunk * 100, 100));
  auto state = root_filter('d', 0, 3);
  state.kinds = std::vector<std::uint32_t>{30618};
  filters.push_back(state);
  filters[0].limit = 0;
  const auto windows = reconcile_windows(filters, 1000, 1 << 20);
  ASSERT_EQ(windows.size(), 4u) << "one window per shape: #e, #E, #q and the state";
  EXPECT_EQ(windows[0].tags.at('e').size(), 400u);
  EXPECT_FALSE(windows[0].limit) << "a NEG window never carries a limit";
  EXPECT_EQ(windows[3], state);
  // Every event one of the filters matches, the windows match, and no other.
  for (int i = 0; i < 500; ++i) {
    nostr::Event ev = event(i, 1700000000);
    ev.tags = {{"e", nostr::to_hex(nostr::sha256("root " + std::to_string(i)))}};
    EXPECT_EQ(nostr::matches_any(windows, ev), nostr::matches_any(filters, ev)) << i;
  }
}

TEST(ReconcileWindows, WindowsStayWithinTheValueAndByteCaps) {
  nostr::Filters filters;
  for (int chunk = 0; chunk < 10; ++chunk) filters.push_back(root_filter('e', chunk * 100, 100));
  EXPECT_EQ(reconcile_windows(filters, 250, 1 << 20).size(), 5u) << "200 values each";
  // A root is 67 bytes of filter JSON: 400 fit in 30,000 bytes, 500 do not.
  const auto by_bytes = reconcile_windows(filters, 1000, 30000);
  for (const auto& window : by_bytes) EXPECT_LE(nostr::serialize_filter(window).size(), 30000u);
  EXPECT_EQ(by_bytes.size(), 3u) << "400, 400 and 200 roots";
  auto other_kind = root_filter('e', 0, 100);
  other_kind.kinds = std::vector<std::uint32_t>{1};
  auto other_since = root_filter('e', 100, 100);
  other_since.since = 5;
  EXPECT_EQ(
      reconcile_windows({root_filter('e', 0, 100), other_kind, other_since}, 1000, 1 << 20).size(),
      3u)
      << "filters with other kinds or times are not joined";
}

TEST(NegentropyHistory, ASubscriptionOfManyRootChunksReconcilesOneWindowPerShape) {
  Peer peer;
  Us us;
  for (int i = 0; i < 300; ++i) {
    auto ev = event(i, 1700000000 + i);
    ev.tags = {{"e", nostr::to_hex(nostr::sha256("root " + std::to_string(i)))}};
    peer.events.push_back(ev);
    if (i % 10) us.stored.push_back(ev);
  }
  nostr::Filters filters;
  for (int chunk = 0; chunk < 3; ++chunk)
    for (char letter : {'e', 'E'}) filters.push_back(root_filter(letter, chunk * 100, 100));
  converse(us, peer, us.history->open("s1", filters, 1700001000));
  EXPECT_TRUE(us.completed);
  // The three #e chunks are one window; we hold nothing of the #E chunks, which are paged.
  EXPECT_EQ(peer.neg_opens, 1u) << "one session for #e, not one per chunk";
  EXPECT_EQ(us.stored.size(), 300u);
}

TEST(NegentropyHistory, ABatchThePeerKeepsClosingIsGivenUp) {
  Peer peer;
  peer.refuse_fetches = 1000;
  Us us;
  for (int i = 0; i < 20; ++i) peer.events.push_back(event(i, 1700000000 + i));
  us.stored.push_back(peer.events[0]);
  std::deque<std::string> outbox;
  absorb(us, us.history->open("s1", {issues_filter()}, 1700000100), outbox);
  std::size_t completed = 0;
  for (int tick = 0; tick < 100 && completed == 0; ++tick) {
    completed += exchange(us, peer, outbox);
    absorb(us, us.history->on_tick(), outbox);
  }
  EXPECT_EQ(completed, 1u) << "never asked for forever";
  EXPECT_EQ(1000 - peer.refuse_fetches, us.limits.max_fetch_attempts);
}

TEST(NegentropyHistory, EqualSetsFetchNothing) {
  Peer peer;
  Us us;
  for (int i = 0; i < 300; ++i) peer.events.push_back(event(i, 1700000000 + i));
  us.stored = peer.events;
  converse(us, peer, us.history->open("s1", {issues_filter()}, 1700001000));
  EXPECT_TRUE(us.completed);
  EXPECT_EQ(peer.fetch_reqs, 0u);
  EXPECT_EQ(us.totals.rounds, 1u);
}

TEST(NegentropyHistory, EachFilterIsReconciledInTurn) {
  Peer peer;
  Us us;
  for (int i = 0; i < 50; ++i) peer.events.push_back(event(i, 1700000000 + i));
  us.stored = {peer.events[0], peer.events[49]};  // one in each window
  auto early = issues_filter();
  early.until = 1700000019;
  auto late = issues_filter();
  late.since = 1700000030;
  converse(us, peer, us.history->open("s1", {early, late}, 1700001000));
  EXPECT_TRUE(us.completed);
  EXPECT_EQ(peer.neg_opens, 2u);
  EXPECT_EQ(us.stored.size(), 40u);
}

TEST(NegentropyHistory, ABlockedWindowIsSplitUntilThePeerAccepts) {
  Peer peer;
  peer.max_sync_events = 300;
  Us us;
  for (int i = 0; i < 1000; ++i) peer.events.push_back(event(i, 1700000000 + i / 10));
  us.stored.push_back(peer.events[0]);
  converse(us, peer, us.history->open("s1", {issues_filter()}, 1700000200));
  EXPECT_TRUE(us.completed);
  EXPECT_EQ(us.stored.size(), 1000u);
  EXPECT_FALSE(us.totals.unsupported);
  EXPECT_TRUE(us.totals.fallback.empty());
  EXPECT_GT(peer.neg_opens, 4u);
}

TEST(NegentropyHistory, ABlockedSecondFallsBackToPaginationWithoutBlamingThePeer) {
  Peer peer;
  peer.max_sync_events = 300;
  Us us;
  for (int i = 0; i < 1000; ++i) peer.events.push_back(event(i, 1700000000));
  us.stored.push_back(peer.events[0]);
  auto window = issues_filter();
  window.since = 1700000000;
  window.until = 1700000000;
  converse(us, peer, us.history->open("s1", {window}, 1700000200));
  ASSERT_EQ(us.totals.fallback.size(), 1u);
  EXPECT_EQ(us.totals.fallback[0].first, "s1");
  EXPECT_EQ(us.totals.fallback[0].second, nostr::Filters{window});
  EXPECT_FALSE(us.totals.unsupported);
  EXPECT_EQ(us.history->open_subscriptions(), 0u);
}

TEST(NegentropyHistory, AnErrorAnswerFallsBackAndMarksThePeer) {
  Us us;
  us.stored.push_back(event(1, 1700000000));
  auto step = us.history->open("s1", {issues_filter()}, 1700000000);
  ASSERT_EQ(step.frames.size(), 2u);
  auto fallback = us.history->on_neg_err("s1~n1", "error: unsupported");
  EXPECT_TRUE(fallback.unsupported);
  ASSERT_EQ(fallback.fallback.size(), 1u);
  EXPECT_EQ(us.history->open_subscriptions(), 0u);
}

TEST(NegentropyHistory, AnErrorNoticeBeforeTheFirstAnswerFallsBack) {
  Us us;
  us.stored.push_back(event(1, 1700000000));
  us.history->open("s1", {issues_filter()}, 1700000000);
  us.history->open("s2", {issues_filter()}, 1700000000);
  EXPECT_EQ(us.history->probing(), 2u);
  EXPECT_TRUE(us.history->on_notice("rate-limited: slow down").fallback.empty());
  auto step = us.history->on_notice("ERROR: bad msg: negentropy disabled");
  EXPECT_TRUE(step.unsupported);
  EXPECT_EQ(step.fallback.size(), 2u);
  // NEG-CLOSE for the sessions the peer may still hold.
  EXPECT_EQ(step.frames.size(), 2u);
}

TEST(NegentropyHistory, AnErrorNoticeAfterAnAnswerIsNotAboutNegentropy) {
  Peer peer;
  Us us;
  peer.events.push_back(event(1, 1700000000));
  us.stored = peer.events;
  converse(us, peer, us.history->open("s1", {issues_filter()}, 1700000100));
  us.history->open("s2", {issues_filter()}, 1700000100);
  EXPECT_TRUE(us.history->on_notice("ERROR: something else").fallback.empty());
}

TEST(NegentropyHistory, SilenceFallsBackAfterTheProbeTicks) {
  Us us;
  us.limits.probe_ticks = 3;
  us.reset();
  us.stored.push_back(event(1, 1700000000));
  us.history->open("s1", {issues_filter()}, 1700000000);
  EXPECT_TRUE(us.history->on_tick().fallback.empty());
  EXPECT_TRUE(us.history->on_tick().fallback.empty());
  auto step = us.history->on_tick();
  EXPECT_TRUE(step.unsupported);
  ASSERT_EQ(step.fallback.size(), 1u);
}

TEST(NegentropyHistory, OnlyAskedIdsAreTakenFromAFetch) {
  Peer peer;
  Us us;
  for (int i = 0; i < 3; ++i) peer.events.push_back(event(i, 1700000000 + i));
  us.stored.push_back(event(98, 1690000000));  // ours only: the filter is reconciled
  std::deque<std::string> outbox;
  absorb(us, us.history->open("s1", {issues_filter()}, 1700000100), outbox);
  // Live REQ, NEG-OPEN; the NEG-MSG answer makes us fetch.
  peer.handle(outbox[0]);
  auto reply = peer.handle(outbox[1]);
  auto step = us.history->on_neg_msg(
      "s1~n1", std::get<nostr::RelayNegMsg>(*nostr::parse_relay_message(reply[0], {})).hex);
  EXPECT_EQ(step.fetches, 1u);
  EXPECT_TRUE(us.history->asked_for("s1~f1", peer.events[0]));
  EXPECT_FALSE(us.history->asked_for("s1~f1", event(99, 1700000000)));
  EXPECT_TRUE(us.history->asked_for("s1", event(99, 1700000000))) << "live events match";
  auto other_kind = peer.events[0];
  other_kind.kind = 1;
  EXPECT_FALSE(us.history->asked_for("s1~f1", other_kind));
  EXPECT_FALSE(us.history->asked_for("s1~f2", peer.events[0]));
}

TEST(NegentropyHistory, AClosedLiveRequestForgetsTheSubscription) {
  Us us;
  us.stored.push_back(event(1, 1700000000));
  us.history->open("s1", {issues_filter()}, 1700000000);
  bool forgotten = false;
  auto step = us.history->on_closed("s1", forgotten);
  EXPECT_TRUE(forgotten);
  EXPECT_EQ(step.frames.size(), 1u);  // NEG-CLOSE of the open session
  EXPECT_EQ(us.history->open_subscriptions(), 0u);
}

TEST(NegentropyHistory, TooManyLocalRecordsGoToPagination) {
  Us us;
  us.limits.max_records = 5;
  us.reset();
  for (int i = 0; i < 6; ++i) us.stored.push_back(event(i, 1700000000));
  auto step = us.history->open("s1", {issues_filter()}, 1700000100);
  ASSERT_EQ(step.fallback.size(), 1u);
  EXPECT_FALSE(step.unsupported);
}

TEST(NegentropyHistory, AFilterWeHoldNothingOfIsPagedNotReconciled) {
  // From an empty store a NEG round would only list the peer's ids before the same download:
  // the history comes by REQ pages, the first on the live REQ, as without NIP-77.
  Peer peer;
  Us us;
  for (int i = 0; i < 1000; ++i) peer.events.push_back(event(i, 1700001000 - i));  // newest first
  auto sent = converse(us, peer, us.history->open("s1", {issues_filter()}, 1700002000));
  EXPECT_TRUE(us.completed);
  EXPECT_EQ(us.stored.size(), 1000u);
  EXPECT_EQ(peer.neg_opens, 0u);
  EXPECT_EQ(peer.fetch_reqs, 0u);
  EXPECT_GE(us.totals.pages, 10u) << "1,000 events at 100 a page";
  // Paging because we hold nothing says nothing about the peer's NIP-77.
  EXPECT_FALSE(us.totals.supported);
  EXPECT_FALSE(us.totals.unsupported);
  EXPECT_TRUE(us.totals.fallback.empty());
  EXPECT_FALSE(live_filters(sent.front()).at(0).limit) << "the live REQ carries the first page";
  EXPECT_EQ(us.slots->in_use(), 0u);
  EXPECT_EQ(us.history->open_subscriptions(), 1u) << "the live REQ stays";
}

TEST(NegentropyHistory, AFilterWeHoldIsReconciledBesideOneWeHoldNothingOf) {
  Peer peer;
  Us us;
  for (int i = 49; i >= 0; --i) peer.events.push_back(event(i, 1700000000 + i));
  us.stored.push_back(peer.events.back());  // the oldest, in `held`
  auto held = issues_filter();
  held.until = 1700000019;
  auto empty = issues_filter();
  empty.since = 1700000030;
  auto sent = converse(us, peer, us.history->open("s1", {held, empty}, 1700001000));
  EXPECT_TRUE(us.completed);
  EXPECT_EQ(peer.neg_opens, 1u) << "only the filter we hold some of";
  EXPECT_EQ(us.stored.size(), 40u);
  auto live = live_filters(sent.front());
  ASSERT_EQ(live.size(), 2u);
  EXPECT_EQ(std::count_if(live.begin(), live.end(), [](const auto& f) { return f.limit == 0u; }), 1)
      << "the reconciled filter's live half asks for no stored events";
}

TEST(NegentropyHistory, ASecondTheCapHidPartOfIsReconciledAfterThePages) {
  // 300 events on one second, 50 older ones, a peer capping REQ answers at 100 (its NIP-11
  // max_limit): REQ pages cannot get past the cap within that second, NIP-77 names the rest.
  Peer peer;
  const std::int64_t t = 1700000000;
  for (int i = 0; i < 300; ++i) peer.events.push_back(event(i, t));
  for (int i = 0; i < 50; ++i) peer.events.push_back(event(300 + i, t - 1 - i));
  Us us;
  us.history->cap_requests(peer.cap);
  converse(us, peer, us.history->open("s1", {issues_filter()}, t + 100));
  EXPECT_TRUE(us.completed);
  EXPECT_EQ(us.stored.size(), 350u);
  EXPECT_EQ(peer.neg_opens, 1u) << "one session, for the capped second alone";
  EXPECT_EQ(us.totals.ids_needed, 200u);
  EXPECT_TRUE(us.totals.supported);
  EXPECT_EQ(us.slots->in_use(), 0u);
}

TEST(NegentropyHistory, ASecondPastACapThePeerDoesNotAdvertiseIsReconciledToo) {
  // The peer answers at most 9 a filter and says nothing of it: its pages show the cap.
  Peer peer;
  peer.cap = 9;
  const std::int64_t t = 1700000000;
  for (int i = 0; i < 24; ++i) peer.events.push_back(event(i, t));
  for (int i = 0; i < 20; ++i) peer.events.push_back(event(100 + i, t - 1 - i));
  Us us;
  converse(us, peer, us.history->open("s1", {issues_filter()}, t + 100));
  EXPECT_TRUE(us.completed);
  EXPECT_EQ(us.stored.size(), 44u);
  EXPECT_EQ(peer.neg_opens, 1u);
}

TEST(NegentropyHistory, TheLastSecondOfAPagedHistoryIsNotTakenForACappedOne) {
  // The last second of a history is paged twice (the page at its own `until` steps past it);
  // smaller than the pages the peer sent before, it is the end of the history, not a cap.
  Peer peer;
  const std::int64_t t = 1700000000;
  for (int i = 0; i < 200; ++i) peer.events.push_back(event(i, t + 200 - i));  // newest first
  for (int i = 0; i < 30; ++i) peer.events.push_back(event(1000 + i, t - 10));
  Us us;
  converse(us, peer, us.history->open("s1", {issues_filter()}, t + 1000));
  EXPECT_TRUE(us.completed);
  EXPECT_EQ(us.stored.size(), 230u);
  EXPECT_EQ(peer.neg_opens, 0u);
}

TEST(NegentropyHistory, UnderAnAdvertisedCapAFullPageOfOneSecondIsNotReconciled) {
  // The peer advertises its cap (NIP-11 max_limit): 30 events on one second, all of the history,
  // come in one page well under it; paging them twice at the end is not a capped second.
  Peer peer;
  for (int i = 0; i < 30; ++i) peer.events.push_back(event(i, 1700000000));
  Us us;
  us.history->cap_requests(peer.cap);
  converse(us, peer, us.history->open("s1", {issues_filter()}, 1700000100));
  EXPECT_TRUE(us.completed);
  EXPECT_EQ(us.stored.size(), 30u);
  EXPECT_EQ(peer.neg_opens, 0u);
}

/// What a RelayConnection does with its two engines: one HistoryPager (subscriptions paged
/// without NIP-77) and one NegentropyHistory over the same history slots, every free slot granted
/// to the first REQ waiting whichever engine asked.
struct Connection {
  Us& us;
  HistoryPager pager;
  std::deque<std::string> outbox;
  std::size_t completed = 0;

  explicit Connection(Us& u) : us(u), pager(u.slots) {}

  void take(HistoryPager::Step step) {
    for (auto& f : step.frames) outbox.push_back(std::move(f));
    if (step.completed) ++completed;
    grant();
  }
  void take(Step step) {
    absorb(us, std::move(step), outbox);
    settle();
  }
  void settle() {
    if (us.completed) ++completed, us.completed = false;
    grant();
  }
  void grant() {
    while (auto waiter = us.slots->grant()) {
      if (waiter->user == pager.slot_user())
        take(pager.resume(waiter->id));
      else
        take(us.history->resume(waiter->user, waiter->id));
    }
  }
  void deliver_frame(const std::string& frame) {
    auto parsed = nostr::parse_relay_message(frame, nostr::ParseLimits{});
    ASSERT_TRUE(parsed.ok()) << frame;
    std::string id;
    std::visit(
        [&](const auto& m) {
          if constexpr (requires { m.subscription_id; }) id = m.subscription_id;
        },
        *parsed);
    if (!pager.owner_of(id)) {
      deliver(us, frame, outbox);
      return settle();
    }
    if (auto* ev = std::get_if<nostr::RelayEvent>(&*parsed)) {
      if (!pager.asked_for(id, ev->event)) return;
      pager.on_event(id, ev->event);
      if (!us.has(ev->event.id)) us.stored.push_back(ev->event);
    } else if (std::get_if<nostr::RelayEose>(&*parsed)) {
      take(pager.on_eose(id));
    }
  }
  void run(Peer& peer) {
    while (!outbox.empty()) {
      auto frame = std::move(outbox.front());
      outbox.pop_front();
      for (const auto& reply : peer.handle(frame)) deliver_frame(reply);
    }
  }
};

TEST(NegentropyHistory, PagesAndFetchesShareTheConnectionsHistorySlots) {
  // One subscription paged without NIP-77, one reconciled (fetching what it lacks), one we hold
  // nothing of (paged by NegentropyHistory): together never more history REQs than the slots.
  Peer peer;
  for (int i = 0; i < 300; ++i) {
    peer.events.push_back(event_of_kind(i, 1700001000 - i, 1));
    peer.events.push_back(event_of_kind(1000 + i, 1700001000 - i, 1621));
    peer.events.push_back(event_of_kind(2000 + i, 1700001000 - i, 1622));
  }
  Us us;
  us.stored.push_back(peer.events[1]);  // one issue held: kind 1621 is reconciled
  Connection connection(us);
  for (auto& frame : connection.pager.open("paged", {kind_filter(1)}))
    connection.outbox.push_back(std::move(frame));
  connection.take(us.history->open("reconciled", {kind_filter(1621)}, 1700002000));
  connection.take(us.history->open("empty", {kind_filter(1622)}, 1700002000));
  connection.run(peer);
  EXPECT_EQ(connection.completed, 3u);
  EXPECT_EQ(us.stored.size(), 900u);
  EXPECT_EQ(peer.most_history, us.slots->capacity()) << "both slots used, never a third";
  EXPECT_GT(peer.fetch_reqs, 1u);
  EXPECT_GT(us.totals.pages, 1u);
  EXPECT_EQ(us.slots->in_use(), 0u);
  EXPECT_EQ(us.slots->waiting(), 0u);
}

}  // namespace
}  // namespace graspd::sync

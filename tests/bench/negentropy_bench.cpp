// NIP-77 reconciliation. BM_FirstRound: the server's CPU for the first round over 100,000 records
// (the client lacking 1 %). BM_CatchUpBytes: what a catch-up moves, by how the records are cut into
// sessions: our client (Negentropy::initiate/reconcile) against our server (respond), the reference
// bucketing of both. The peer holds `records`; we lack 1 % of them, either spread evenly (every
// 100th: the worst case for range-based reconciliation) or the newest 1 % (a node that was down
// while the rest went on). Counters, per missing event of 719 bytes (what deploy/cluster.sh
// catchup's events average): `down_x` is what we receive (the NEG-MSGs plus the events themselves)
// over the missing bytes, `up_x` what we send. Hex doubles each message; every frame adds its JSON
// envelope. Run: build/<dir>/tests/bench/negentropy_bench; figures in docs/benchmarks.md.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <random>
#include <vector>

#include "messages/nostr/negentropy.hpp"

namespace {

namespace neg = graspd::nostr::negentropy;

constexpr double missing_event_bytes = 719;
/// ["NEG-MSG","<id>","..."] and ["NEG-OPEN","<id>",<filter>,"..."] around the hex.
constexpr std::size_t neg_msg_envelope = 40;
constexpr std::size_t neg_open_envelope = 60;
constexpr std::int64_t history_seconds = 30 * 86400;

enum class Layout { spread = 0, recent = 1 };

struct Sides {
  std::vector<std::vector<neg::Item>> peer, us;
  std::size_t missing = 0;
};

/// `records` random records over 30 days, dealt at random to `sessions` filters.
Sides make_sides(std::size_t records, std::size_t sessions, Layout layout) {
  std::mt19937_64 random(42);
  Sides sides;
  sides.peer.resize(sessions);
  sides.us.resize(sessions);
  const std::uint64_t start = 1700000000;
  const std::uint64_t recent_from = start + history_seconds - history_seconds / 100;
  for (std::size_t i = 0; i < records; ++i) {
    neg::Item item;
    item.timestamp = start + random() % history_seconds;
    for (auto& byte : item.id) byte = static_cast<std::uint8_t>(random());
    const auto session = random() % sessions;
    sides.peer[session].push_back(item);
    const bool lacking = layout == Layout::spread ? i % 100 == 0 : item.timestamp >= recent_from;
    if (lacking)
      ++sides.missing;
    else
      sides.us[session].push_back(item);
  }
  return sides;
}

struct Traffic {
  std::size_t sent = 0, received = 0, needed = 0;
};

Traffic reconcile(const std::vector<neg::Item>& peer_items, const std::vector<neg::Item>& ours) {
  const neg::Storage peer_storage(peer_items), our_storage(ours);
  auto server = neg::Negentropy::create(peer_storage, neg::server_frame_size_limit);
  auto client = neg::Negentropy::create(our_storage, neg::client_frame_size_limit);
  Traffic traffic;
  std::string message = client->initiate();
  traffic.sent += 2 * message.size() + neg_open_envelope;
  for (;;) {
    auto reply = server->respond(message);
    traffic.received += 2 * reply->size() + neg_msg_envelope;
    std::vector<graspd::nostr::EventId> have, need;
    auto next = client->reconcile(*reply, have, need);
    traffic.needed += need.size();
    if (!*next) return traffic;
    message = std::move(**next);
    traffic.sent += 2 * message.size() + neg_msg_envelope;
  }
}

void BM_CatchUpBytes(benchmark::State& state) {
  const auto records = static_cast<std::size_t>(state.range(0));
  const auto sessions = static_cast<std::size_t>(state.range(1));
  const auto sides = make_sides(records, sessions, static_cast<Layout>(state.range(2)));
  Traffic total;
  for (auto _ : state) {
    total = {};
    for (std::size_t s = 0; s < sessions; ++s) {
      const auto traffic = reconcile(sides.peer[s], sides.us[s]);
      total.sent += traffic.sent;
      total.received += traffic.received;
      total.needed += traffic.needed;
    }
  }
  const double missing_bytes = static_cast<double>(sides.missing) * missing_event_bytes;
  state.counters["missing"] = static_cast<double>(sides.missing);
  state.counters["found"] = static_cast<double>(total.needed);
  state.counters["down_x"] = 1.0 + static_cast<double>(total.received) / missing_bytes;
  state.counters["up_x"] = static_cast<double>(total.sent) / missing_bytes;
}

void BM_FirstRound(benchmark::State& state) {
  const auto sides = make_sides(100000, 1, Layout::spread);
  const neg::Storage peer(sides.peer[0]), ours(sides.us[0]);
  const auto first = neg::Negentropy::create(ours, neg::client_frame_size_limit)->initiate();
  const auto server = neg::Negentropy::create(peer, neg::server_frame_size_limit);
  for (auto _ : state) benchmark::DoNotOptimize(server->respond(first));
}
BENCHMARK(BM_FirstRound)->Unit(benchmark::kMillisecond);

// {records, sessions, layout}: 501 sessions was the 100,000-event catch-up before windows were
// joined by filter shape, ~100 after; 159 and ~20 the same at 10,000.
BENCHMARK(BM_CatchUpBytes)
    ->ArgsProduct({{100000}, {1, 26, 100, 501}, {0, 1}})
    ->ArgsProduct({{10000}, {20, 159}, {0, 1}})
    ->Unit(benchmark::kMillisecond);

}  // namespace

// EventStore benchmarks: batched ingest of pre-verified
// events, the writer's cost per new event into the 1,000,000-event store against
// an empty one (BM_WriteNew), 500-event queries by tag / author / kind on the
// 1M store, and open + ready time of that store.
//
// The 1M-event dataset is built once (signatures bypassed: the store trusts
// its caller) into $GRASPD_STORE_BENCH_DIR (default
// /tmp/graspd-store-bench-1m) and reused by later runs. Commands and figures:
// docs/benchmarks.md, sections "Store" and "Publishing into a store of
// 1,000,000 events".
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "store/lmdb/event_store.hpp"

namespace graspd::store {
namespace {

constexpr std::size_t kDatasetEvents = 1'000'000;
constexpr std::size_t kAuthors = 1000;  // ~1000 events per author
constexpr std::size_t kTopics = 500;    // ~2000 events per `t` value
constexpr std::int64_t kStart = 1'600'000'000;

/// Deterministic synthetic events shaped like NIP-34 traffic: ~550 bytes of
/// JSON with `t`, `p`, `e` and sometimes `a` tags.
class EventFactory {
 public:
  explicit EventFactory(std::uint64_t seed) : rng_(seed) {}

  /// `plain`: a tagless kind-1 event of one of 50 authors (what `graspd-load publish --authors
  /// 50` sends) instead of the NIP-34 shape.
  nostr::EventPtr make(std::size_t n, bool plain = false) {
    auto ev = std::make_shared<nostr::Event>();
    fill(ev->id);
    ev->pubkey = author(n % (plain ? 50 : kAuthors));
    ev->created_at = kStart + static_cast<std::int64_t>(n / 2);
    if (plain) {
      ev->kind = 1;
      ev->content = std::string(500, static_cast<char>('a' + n % 26));
      fill(ev->sig);
      return ev;
    }
    static constexpr std::uint32_t kinds[] = {1, 1, 1, 1, 7, 7, 1617, 1621, 1111, 1630};
    ev->kind = kinds[n % std::size(kinds)];
    ev->tags.push_back({"t", "topic-" + std::to_string((n / 7) % kTopics)});
    ev->tags.push_back({"p", nostr::to_hex(author((n * 31) % kAuthors))});
    nostr::Bytes32 ref;
    fill(ref);
    ev->tags.push_back({"e", nostr::to_hex(ref)});
    if (ev->kind >= 1617)
      ev->tags.push_back(
          {"a", "30617:" + nostr::to_hex(author(n % 97)) + ":repo-" + std::to_string(n % 13)});
    ev->content = std::string(180, static_cast<char>('a' + n % 26));
    fill(ev->sig);
    return ev;
  }

  static nostr::Pubkey author(std::size_t n) {
    nostr::Pubkey pk{};
    for (int i = 0; i < 8; ++i)
      pk[static_cast<std::size_t>(i)] = static_cast<std::uint8_t>(n >> (8 * i));
    pk[31] = 0x42;
    return pk;
  }

 private:
  template <std::size_t N>
  void fill(std::array<std::uint8_t, N>& bytes) {
    for (auto& b : bytes) b = static_cast<std::uint8_t>(rng_());
  }
  std::mt19937_64 rng_;
};

/// Bytes this process has handed to write()/pwrite() so far (`wchar` of /proc/self/io): LMDB
/// writes every page a commit dirtied, so this counts the pages a write touched.
std::uint64_t bytes_written() {
  std::ifstream io("/proc/self/io");
  std::string key;
  std::uint64_t value = 0;
  while (io >> key >> value)
    if (key == "wchar:") return value;
  return 0;
}

std::filesystem::path dataset_dir() {
  const char* env = std::getenv("GRASPD_STORE_BENCH_DIR");
  return env ? env : "/tmp/graspd-store-bench-1m";
}

/// Builds the 1M dataset unless a previous run completed it.
const std::filesystem::path& dataset() {
  static const std::filesystem::path dir = [] {
    auto dir = dataset_dir();
    auto marker = dir / "complete";
    if (std::filesystem::exists(marker)) return dir;
    std::filesystem::remove_all(dir);
    StoreOptions options;
    options.path = dir;
    options.durable = false;  // bulk build; the ingest benchmark measures durable commits
    EventStore store(options);
    EventFactory factory(1);
    auto start = std::chrono::steady_clock::now();
    std::vector<nostr::EventPtr> batch;
    for (std::size_t n = 0; n < kDatasetEvents; ++n) {
      batch.push_back(factory.make(n));
      if (batch.size() == 5000 || n + 1 == kDatasetEvents) {
        store.write_batch(batch);
        batch.clear();
      }
    }
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::fprintf(stderr, "built %zu-event dataset in %s: %.1f s (%.0f events/s, no fsync)\n",
                 kDatasetEvents, dir.c_str(), secs, kDatasetEvents / secs);
    std::ofstream(marker) << "ok\n";
    return dir;
  }();
  return dir;
}

EventStore& dataset_store() {
  static EventStore store([] {
    StoreOptions options;
    options.path = dataset();
    return options;
  }());
  return store;
}

/// Batched ingest of pre-built (pre-verified) events into a fresh store;
/// range(0) = events per write transaction, range(1) = 1 for durable commits
/// (fsync, the relay's setting), 0 for MDB_NOSYNC. Wall-clock time.
void BM_IngestBatched(benchmark::State& state) {
  auto dir = std::filesystem::temp_directory_path() / "graspd-store-bench-ingest";
  std::filesystem::remove_all(dir);
  std::size_t batch_size = static_cast<std::size_t>(state.range(0));
  EventFactory factory(2);
  std::size_t n = 0;
  {
    StoreOptions options;
    options.path = dir;
    options.durable = state.range(1) != 0;
    EventStore store(options);
    for (auto _ : state) {
      state.PauseTiming();
      std::vector<nostr::EventPtr> batch;
      for (std::size_t i = 0; i < batch_size; ++i) batch.push_back(factory.make(n++));
      state.ResumeTiming();
      auto outcomes = store.write_batch(batch);
      if (outcomes.front() != WriteOutcome::stored) state.SkipWithError("write failed");
    }
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(n));
  std::filesystem::remove_all(dir);
}
BENCHMARK(BM_IngestBatched)
    ->ArgNames({"batch", "durable"})
    ->Args({500, 1})
    ->Args({2000, 1})
    ->Args({5000, 1})
    ->Args({2000, 0})
    ->Unit(benchmark::kMillisecond)
    ->Iterations(50)
    ->UseRealTime();

/// A private copy of the 1M dataset that the write benchmark grows: reused by later runs (so
/// that `perf record` sees the writes, not the 2 GB copy) until it holds 5 % more events.
const std::filesystem::path& dataset_copy() {
  static const std::filesystem::path dir = [] {
    std::filesystem::path dir = dataset().string() + "-write";
    if (std::filesystem::exists(dir / "data.mdb")) {
      StoreOptions options;
      options.path = dir;
      if (EventStore(options).size() < kDatasetEvents + kDatasetEvents / 20) return dir;
    }
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    std::filesystem::copy_file(dataset() / "data.mdb", dir / "data.mdb");
    return dir;
  }();
  return dir;
}

/// The store writer's CPU cost per new event: durable write_batch of range(0) new events into
/// the 1M dataset (range(1) = 1) or into a store that starts empty (range(1) = 0), NIP-34-shaped
/// events (range(2) = 0) or tagless kind-1 ones as graspd-load publishes (range(2) = 1). CPU
/// time of the writing thread (LMDB, the kernel's share of pwrite/fdatasync); compare the
/// per_event counter of the two stores, run interleaved
/// (--benchmark_enable_random_interleaving) so machine load hits both alike.
void BM_WriteNew(benchmark::State& state) {
  const auto batch_size = static_cast<std::size_t>(state.range(0));
  const bool into_1m = state.range(1) != 0;
  const bool plain = state.range(2) != 0;
  auto empty_dir = std::filesystem::temp_directory_path() / "graspd-store-bench-write-empty";
  std::filesystem::remove_all(empty_dir);
  // Fresh ids in every run (the 1M copy is reused across runs); times follow the dataset's.
  static EventFactory factory(std::random_device{}());
  static std::size_t n = kDatasetEvents;
  {
    StoreOptions options;
    options.path = into_1m ? dataset_copy() : empty_dir;
    EventStore store(options);
    std::vector<nostr::EventPtr> batch;
    const auto written_before = bytes_written();
    for (auto _ : state) {
      state.PauseTiming();
      batch.clear();
      for (std::size_t i = 0; i < batch_size; ++i) batch.push_back(factory.make(n++, plain));
      state.ResumeTiming();
      auto outcomes = store.write_batch(batch);
      if (outcomes.front() != WriteOutcome::stored) {
        state.SkipWithError("write failed");
        break;
      }
    }
    state.counters["written_per_event"] = static_cast<double>(bytes_written() - written_before) /
                                          static_cast<double>(state.iterations() * batch_size);
  }
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(batch_size));
  state.counters["per_event"] = benchmark::Counter(
      static_cast<double>(batch_size),
      benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
  std::filesystem::remove_all(empty_dir);
}
BENCHMARK(BM_WriteNew)
    ->ArgNames({"batch", "into_1m", "plain"})
    ->ArgsProduct({{100, 2000}, {0, 1}, {0, 1}})
    ->Unit(benchmark::kMillisecond)
    ->Iterations(20);

void run_query(benchmark::State& state, const nostr::Filter& filter) {
  EventStore& store = dataset_store();
  nostr::Filters filters{filter};
  for (auto _ : state) {
    std::size_t hits = 0, bytes = 0;
    store.query(filters, [&](const QueryHit& hit) {
      ++hits;
      bytes += hit.json.size();
    });
    benchmark::DoNotOptimize(bytes);
    if (hits != 500) state.SkipWithError("expected 500 events");
  }
  state.SetItemsProcessed(state.iterations() * 500);
}

void BM_QueryByTag500(benchmark::State& state) {
  nostr::Filter f;
  f.tags['t'] = {"topic-123"};
  f.limit = 500;
  run_query(state, f);
}
BENCHMARK(BM_QueryByTag500)->Unit(benchmark::kMillisecond);

void BM_QueryByAuthor500(benchmark::State& state) {
  nostr::Filter f;
  f.authors = std::vector<nostr::Pubkey>{EventFactory::author(321)};
  f.limit = 500;
  run_query(state, f);
}
BENCHMARK(BM_QueryByAuthor500)->Unit(benchmark::kMillisecond);

void BM_QueryByKind500(benchmark::State& state) {
  nostr::Filter f;
  f.kinds = std::vector<std::uint32_t>{1621};
  f.until = kStart + 250'000;  // from the middle of the history, not the head
  f.limit = 500;
  run_query(state, f);
}
BENCHMARK(BM_QueryByKind500)->Unit(benchmark::kMillisecond);

/// Opening the 1M-event store and answering a first query.
void BM_OpenReady1M(benchmark::State& state) {
  auto dir = dataset();
  for (auto _ : state) {
    StoreOptions options;
    options.path = dir;
    EventStore store(options);
    nostr::Filter f;
    f.limit = 1;
    std::size_t hits = 0;
    store.query({f}, [&](const QueryHit&) { ++hits; });
    if (hits != 1 || store.size() != kDatasetEvents) state.SkipWithError("dataset incomplete");
  }
}
BENCHMARK(BM_OpenReady1M)->Unit(benchmark::kMillisecond)->Iterations(5);

}  // namespace
}  // namespace graspd::store

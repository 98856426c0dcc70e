// Nostr core hot paths: signature verification, id computation, parsing.
// Run: build/<dir>/tests/bench/nostr_bench (Release); figures in docs/benchmarks.md.
#include <benchmark/benchmark.h>
#include <rapidjson/document.h>

#include <vector>

#include "messages/nostr/canonical.hpp"
#include "messages/nostr/client_message.hpp"
#include "messages/nostr/json.hpp"
#include "messages/nostr/verify.hpp"

namespace {

using namespace graspd::nostr;

SecretKey key(int n) {
  SecretKey k{};
  k.fill(0x11);
  k[30] = static_cast<std::uint8_t>(n >> 8);
  k[31] = static_cast<std::uint8_t>(n);
  return k;
}

// A typical ~600-byte text note: a reply with e/p tags and 100 bytes of text.
Event typical_event(int author = 0) {
  Event ev;
  ev.kind = 1;
  ev.created_at = 1700000000;
  ev.tags = {{"e", std::string(64, 'a'), "wss://relay.example.com", "root"},
             {"p", std::string(64, 'b')}};
  ev.content =
      "Pushed a fix for the reconciliation bug: \"sync\" now finishes in one round trip. "
      "Thanks for the report!";
  return sign_event(ev, key(author));
}

void BM_VerifySignature(benchmark::State& state) {
  const Event ev = typical_event();
  for (auto _ : state) benchmark::DoNotOptimize(verify_signature(ev));
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_VerifySignature);

void BM_VerifySignatureUncached(benchmark::State& state) {
  const Event ev = typical_event();
  for (auto _ : state) benchmark::DoNotOptimize(detail::verify_signature_uncached(ev));
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_VerifySignatureUncached);

// Worst case for the pubkey cache: 1024 authors in rotation, nearly every
// lookup misses the 256-slot cache.
void BM_VerifySignatureManyAuthors(benchmark::State& state) {
  std::vector<Event> events;
  for (int i = 0; i < 1024; ++i) events.push_back(typical_event(i));
  std::size_t i = 0;
  for (auto _ : state) benchmark::DoNotOptimize(verify_signature(events[i++ % events.size()]));
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_VerifySignatureManyAuthors);

// The same 1024 events without the cache: the cost of a miss is the difference.
void BM_VerifySignatureManyAuthorsUncached(benchmark::State& state) {
  std::vector<Event> events;
  for (int i = 0; i < 1024; ++i) events.push_back(typical_event(i));
  std::size_t i = 0;
  for (auto _ : state)
    benchmark::DoNotOptimize(detail::verify_signature_uncached(events[i++ % events.size()]));
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_VerifySignatureManyAuthorsUncached);

void BM_CanonicalSerialization(benchmark::State& state) {
  const Event ev = typical_event();
  state.counters["bytes"] = static_cast<double>(canonical_serialization(ev).size());
  for (auto _ : state) benchmark::DoNotOptimize(canonical_serialization(ev));
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_CanonicalSerialization);

void BM_ComputeId(benchmark::State& state) {
  const Event ev = typical_event();
  for (auto _ : state) benchmark::DoNotOptimize(compute_id(ev));
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_ComputeId);

void BM_CheckEvent(benchmark::State& state) {
  const Event ev = typical_event();
  for (auto _ : state) benchmark::DoNotOptimize(check_event(ev));
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_CheckEvent);

void BM_SerializeEvent(benchmark::State& state) {
  const Event ev = typical_event();
  for (auto _ : state) benchmark::DoNotOptimize(serialize_event(ev));
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_SerializeEvent);

void BM_ParseEvent(benchmark::State& state) {
  const std::string json = serialize_event(typical_event());
  state.counters["bytes"] = static_cast<double>(json.size());
  const ParseLimits limits;
  for (auto _ : state) benchmark::DoNotOptimize(parse_event(json, limits));
  state.SetItemsProcessed(state.iterations());
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * json.size()));
}
BENCHMARK(BM_ParseEvent);

void BM_ParseClientMessageEvent(benchmark::State& state) {
  const std::string frame = "[\"EVENT\"," + serialize_event(typical_event()) + "]";
  const ParseLimits limits;
  for (auto _ : state) benchmark::DoNotOptimize(parse_client_message(frame, limits));
  state.SetItemsProcessed(state.iterations());
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * frame.size()));
}
BENCHMARK(BM_ParseClientMessageEvent);

void BM_ParseClientMessageReq(benchmark::State& state) {
  const std::string frame =
      "[\"REQ\",\"sub\",{\"kinds\":[1617,1618,1621],\"#a\":[\"30617:" + std::string(64, 'a') +
      ":repo\"],\"limit\":500},{\"authors\":[\"" + std::string(64, 'b') + "\"],\"kinds\":[0]}]";
  const ParseLimits limits;
  for (auto _ : state) benchmark::DoNotOptimize(parse_client_message(frame, limits));
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_ParseClientMessageReq);

// The DOM parse alone, normal vs in-situ (which needs a mutable copy of the
// frame): decides whether parse_client_message should parse in situ.
void BM_DomParse(benchmark::State& state) {
  const std::string frame = "[\"EVENT\"," + serialize_event(typical_event()) + "]";
  constexpr unsigned kFlags =
      rapidjson::kParseValidateEncodingFlag | rapidjson::kParseIterativeFlag;
  for (auto _ : state) {
    rapidjson::Document doc;
    doc.Parse<kFlags>(frame.data(), frame.size());
    benchmark::DoNotOptimize(doc.HasParseError());
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_DomParse);

void BM_DomParseInsitu(benchmark::State& state) {
  const std::string frame = "[\"EVENT\"," + serialize_event(typical_event()) + "]";
  constexpr unsigned kFlags = rapidjson::kParseValidateEncodingFlag |
                              rapidjson::kParseIterativeFlag | rapidjson::kParseInsituFlag;
  std::string buffer;
  for (auto _ : state) {
    buffer = frame;
    rapidjson::Document doc;
    doc.ParseInsitu<kFlags>(buffer.data());
    benchmark::DoNotOptimize(doc.HasParseError());
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_DomParseInsitu);

}  // namespace

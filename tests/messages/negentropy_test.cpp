// NIP-77 negentropy core: the spec's vectors (docs/spec/nip77-negentropy.md
// §3, §4, §9, computed by the C++ and JS references), seeded round trips of
// our initiator against our responder, and malformed input.
#include <gtest/gtest.h>

#include <random>
#include <set>
#include <string>
#include <vector>

#include "messages/nostr/canonical.hpp"
#include "messages/nostr/negentropy.hpp"

namespace graspd::nostr::negentropy {
namespace {

using IdSet = std::set<EventId>;

std::string unhex(std::string_view hex) {
  auto bytes = message_from_hex(hex);
  EXPECT_TRUE(bytes.ok()) << hex;
  return bytes.ok() ? *bytes : std::string();
}

std::string hex(std::string_view bytes) {
  return message_to_hex(bytes);
}

EventId filled(std::uint8_t byte) {
  EventId id;
  id.fill(byte);
  return id;
}

// id_i of the spec's vectors: SHA-256 of the ASCII decimal i.
EventId decimal_id(int i) {
  return sha256(std::to_string(i));
}

Negentropy make(const Storage& storage, std::size_t limit = 0) {
  auto neg = Negentropy::create(storage, limit);
  EXPECT_TRUE(neg.ok()) << neg.error().detail;
  return *neg;
}

// --- §3 varints -----------------------------------------------------------

TEST(NegentropyVarint, SpecVectors) {
  const std::vector<std::pair<std::uint64_t, std::string>> vectors = {
      {0, "00"},
      {127, "7f"},
      {128, "8100"},
      {255, "817f"},
      {300, "822c"},
      {16383, "ff7f"},
      {16384, "818000"},
      {1700000001, "86aacfe201"},
      {infinity, "81ffffffffffffffff7f"}};
  for (const auto& [value, encoded] : vectors) {
    EXPECT_EQ(hex(encode_varint(value)), encoded) << value;
    const std::string bytes = unhex(encoded);
    std::string_view in = bytes;
    auto decoded = read_varint(in);
    ASSERT_TRUE(decoded.ok()) << encoded;
    EXPECT_EQ(*decoded, value);
    EXPECT_TRUE(in.empty());
  }
}

TEST(NegentropyVarint, RejectsTruncationAndOverflow) {
  for (const char* bad : {"", "81", "ff80", "81ffffffffffffffff"}) {
    const std::string bytes = unhex(bad);
    std::string_view in = bytes;
    auto decoded = read_varint(in);
    ASSERT_FALSE(decoded.ok()) << bad;
    EXPECT_EQ(decoded.error().code, ErrorCode::truncated) << bad;
  }
  // 2^64 and a value 11 groups long.
  for (const char* bad : {"82808080808080808000", "ffffffffffffffffffff7f"}) {
    const std::string bytes = unhex(bad);
    std::string_view in = bytes;
    auto decoded = read_varint(in);
    ASSERT_FALSE(decoded.ok()) << bad;
    EXPECT_EQ(decoded.error().code, ErrorCode::varint_overflow) << bad;
  }
}

TEST(NegentropyVarint, AcceptsNonMinimalLikeTheReferences) {
  const std::string bytes = unhex("80807f");
  std::string_view in = bytes;
  auto decoded = read_varint(in);
  ASSERT_TRUE(decoded.ok());
  EXPECT_EQ(*decoded, 127u);
}

TEST(NegentropyBound, TimestampDeltasAndInfinity) {
  std::string out;
  TimestampEncoder enc;
  append_bound(out, enc, Bound{Item{1000, {}}, 0});
  Bound prefixed{Item{1005, {}}, 3};  // only the prefix travels; the rest is zero
  std::fill_n(prefixed.item.id.begin(), 3, 0xab);
  append_bound(out, enc, prefixed);
  append_bound(out, enc, Bound{Item{infinity, {}}, 0});
  // 1+1000, 1+5 with 3 prefix bytes, infinity.
  EXPECT_EQ(hex(out),
            "876900"
            "0603ababab"
            "0000");

  std::string_view in = out;
  TimestampDecoder dec;
  auto a = read_bound(in, dec);
  auto b = read_bound(in, dec);
  auto c = read_bound(in, dec);
  ASSERT_TRUE(a.ok() && b.ok() && c.ok());
  EXPECT_EQ(*a, (Bound{Item{1000, {}}, 0}));
  EXPECT_EQ(*b, prefixed);
  EXPECT_EQ(c->item.timestamp, infinity);
  EXPECT_TRUE(in.empty());
}

TEST(NegentropyBound, DecoderSaturatesToInfinity) {
  // 2^64-2 then a delta of 5: past the end, saturates like the C++ reference.
  std::string bytes = encode_varint(infinity) + encode_varint(0) + encode_varint(6) +
                      encode_varint(0) + encode_varint(3) + encode_varint(0);
  std::string_view in = bytes;
  TimestampDecoder dec;
  auto first = read_bound(in, dec);
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(first->item.timestamp, infinity - 1);
  auto second = read_bound(in, dec);
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(second->item.timestamp, infinity);
  auto third = read_bound(in, dec);  // stays at infinity
  ASSERT_TRUE(third.ok());
  EXPECT_EQ(third->item.timestamp, infinity);
}

TEST(NegentropyBound, RejectsLongPrefixAndTruncation) {
  TimestampDecoder dec;
  std::string bytes = unhex("0021") + std::string(33, 'x');
  std::string_view in = bytes;
  auto bound = read_bound(in, dec);
  ASSERT_FALSE(bound.ok());
  EXPECT_EQ(bound.error().code, ErrorCode::prefix_too_long);

  bytes = unhex("0005abcd");
  in = bytes;
  bound = read_bound(in, dec);
  ASSERT_FALSE(bound.ok());
  EXPECT_EQ(bound.error().code, ErrorCode::truncated);
}

TEST(NegentropyHex, RoundTripAndRejects) {
  EXPECT_EQ(hex(unhex("00ff10ABcd")), "00ff10abcd");
  EXPECT_FALSE(message_from_hex("abc").ok());
  EXPECT_EQ(message_from_hex("zz").error().code, ErrorCode::bad_hex);
}

// --- §2 order, storage ----------------------------------------------------

TEST(NegentropyStorage, SortsByTimestampThenIdAndDropsDuplicates) {
  const Storage storage({{5, filled(1)}, {3, filled(9)}, {5, filled(0)}, {3, filled(9)}});
  ASSERT_EQ(storage.size(), 3u);
  EXPECT_EQ(storage[0], (Item{3, filled(9)}));
  EXPECT_EQ(storage[1], (Item{5, filled(0)}));
  EXPECT_EQ(storage[2], (Item{5, filled(1)}));
  // The same id at two timestamps is two records.
  EXPECT_EQ(Storage({{1, filled(1)}, {2, filled(1)}}).size(), 2u);
}

TEST(NegentropyStorage, LowerBoundPadsPrefixWithZeros) {
  EventId a = filled(0x10), b = filled(0x10);
  b[1] = 0x20;
  const Storage storage({{7, a}, {7, b}, {8, filled(0)}});
  Bound bound{Item{7, {}}, 2};
  bound.item.id[0] = 0x10;
  bound.item.id[1] = 0x20;
  EXPECT_EQ(storage.lower_bound(bound), 1u);
  EXPECT_EQ(storage.lower_bound(bound, 2), 2u);
  EXPECT_EQ(storage.lower_bound(Bound{Item{8, {}}, 0}), 2u);
  EXPECT_EQ(storage.lower_bound(Bound{Item{infinity, {}}, 0}), 3u);
  EXPECT_EQ(storage.lower_bound(Bound{}, 9), 3u);
}

// --- §4 fingerprints ------------------------------------------------------

TEST(NegentropyFingerprint, SpecVectors) {
  auto fp = [](const Storage& s) {
    const Fingerprint f = s.fingerprint(0, s.size());
    return hex(std::string_view(reinterpret_cast<const char*>(f.data()), f.size()));
  };
  EXPECT_EQ(fp(Storage()), "7f9c9e31ac8256ca2f258583df262dbc");
  EXPECT_EQ(fp(Storage({{1, filled(0xee)}})), "d5530eded759c1cb5749aacb9bc66bb2");
  EventId one{};
  one[0] = 1;
  // The sum wraps to zero: the carry runs through all 32 bytes and is dropped.
  EXPECT_EQ(fp(Storage({{1, filled(0xff)}, {2, one}})), "58cc2f44d3a27866874701fbad573da9");
  std::vector<Item> items;
  for (int i = 0; i < 32; ++i) items.push_back({1700000000, decimal_id(i)});
  EXPECT_EQ(fp(Storage(items)), "fb67458b9a79d9de66ab89ba9bbd6705");
}

// --- §9 static messages ---------------------------------------------------

TEST(NegentropyMessages, InitiateOfAnEmptyStore) {
  const Storage empty;
  EXPECT_EQ(hex(make(empty).initiate()), "6100000200");
}

TEST(NegentropyMessages, InitiatePrefixes) {
  std::vector<Item> same_time, spread;
  for (int i = 0; i < 32; ++i) {
    same_time.push_back({1700000000, decimal_id(i)});
    spread.push_back({static_cast<std::uint64_t>(1000 + i), decimal_id(i)});
  }
  const Storage a(same_time), b(spread);
  EXPECT_EQ(hex(make(a).initiate()).substr(0, 22), "6186aacfe201013501a657");
  EXPECT_EQ(hex(make(b).initiate()).substr(0, 10), "61876b0001");
}

TEST(NegentropyMessages, ServerAnswersOfTheReferenceTests) {
  const Storage storage({{12345, filled(0xee)}});
  const Negentropy server = make(storage);
  auto reply = server.respond(unhex("6100000200"));
  ASSERT_TRUE(reply.ok()) << reply.error().detail;
  EXPECT_EQ(hex(*reply), "6100000201" + std::string(64, 'e'));
  reply = server.respond(unhex("62aabbccddeeff"));
  ASSERT_TRUE(reply.ok()) << reply.error().detail;
  EXPECT_EQ(hex(*reply), "61");
}

TEST(NegentropyMessages, ClientRefusesOtherVersions) {
  const Storage storage({{12345, filled(0xee)}});
  std::vector<EventId> have, need;
  auto next = make(storage).reconcile(unhex("62aabbccddeeff"), have, need);
  ASSERT_FALSE(next.ok());
  EXPECT_EQ(next.error().code, ErrorCode::unsupported_version);
  for (const char* bad : {"50", "70", "ff6100000200"}) {
    next = make(storage).reconcile(unhex(bad), have, need);
    ASSERT_FALSE(next.ok()) << bad;
    EXPECT_EQ(next.error().code, ErrorCode::bad_version) << bad;
    auto reply = make(storage).respond(unhex(bad));
    ASSERT_FALSE(reply.ok()) << bad;
    EXPECT_EQ(reply.error().code, ErrorCode::bad_version) << bad;
  }
}

TEST(NegentropyMessages, FrameSizeLimitBelow4096IsRefused) {
  const Storage storage;
  for (std::size_t limit : {1u, 200u, 4095u}) {
    auto neg = Negentropy::create(storage, limit);
    ASSERT_FALSE(neg.ok());
    EXPECT_EQ(neg.error().code, ErrorCode::frame_limit_too_small);
  }
  EXPECT_TRUE(Negentropy::create(storage, 0).ok());
  EXPECT_TRUE(Negentropy::create(storage, 4096).ok());
  static_assert(server_frame_size_limit == 500000 && client_frame_size_limit == 60000);
}

// --- reconciliation between our own two sides -----------------------------

struct Transcript {
  std::vector<std::string> messages;  // client first, then alternating
  IdSet have, need;
  bool finished = false;
};

Transcript run_sync(const Storage& client_set, const Storage& server_set, std::size_t client_limit,
                    std::size_t server_limit) {
  const Negentropy client = make(client_set, client_limit);
  const Negentropy server = make(server_set, server_limit);
  Transcript t;
  std::string message = client.initiate();
  for (int round = 0; round < 1000; ++round) {
    t.messages.push_back(message);
    auto reply = server.respond(message);
    if (!reply.ok()) {
      ADD_FAILURE() << "server: " << reply.error().detail;
      return t;
    }
    t.messages.push_back(*reply);
    std::vector<EventId> have, need;
    auto next = client.reconcile(*reply, have, need);
    if (!next.ok()) {
      ADD_FAILURE() << "client: " << next.error().detail;
      return t;
    }
    t.have.insert(have.begin(), have.end());
    t.need.insert(need.begin(), need.end());
    if (!next->has_value()) {
      t.finished = true;
      return t;
    }
    message = std::move(**next);
  }
  ADD_FAILURE() << "reconciliation did not terminate";
  return t;
}

std::string digest_prefix(const std::vector<std::string>& messages) {
  std::string joined;
  for (const auto& m : messages) {
    if (!joined.empty()) joined += '\n';
    joined += hex(m);
  }
  return to_hex(sha256(joined)).substr(0, 16);
}

std::vector<std::size_t> sizes(const std::vector<std::string>& messages) {
  std::vector<std::size_t> out;
  for (const auto& m : messages) out.push_back(m.size());
  return out;
}

struct Vector {
  Storage client, server;
  std::size_t client_limit, server_limit;
};

// The spec's transcript cases: n ids id_i at timestamp(i), the client without
// the ids where drop_client(i), the server without those where drop_server(i).
template <class Time, class DropClient, class DropServer>
Vector transcript_case(int n, Time timestamp, DropClient drop_client, DropServer drop_server,
                       std::size_t client_limit, std::size_t server_limit) {
  std::vector<Item> client, server;
  for (int i = 0; i < n; ++i) {
    const Item item{timestamp(i), decimal_id(i)};
    if (!drop_client(i)) client.push_back(item);
    if (!drop_server(i)) server.push_back(item);
  }
  return {Storage(std::move(client)), Storage(std::move(server)), client_limit, server_limit};
}

TEST(NegentropyTranscript, V1) {
  const auto v = transcript_case(
      1000, [](int) { return 1700000000u; }, [](int i) { return i % 10 == 0; },
      [](int i) { return i % 10 == 5; }, 0, 0);
  const auto t = run_sync(v.client, v.server, v.client_limit, v.server_limit);
  ASSERT_TRUE(t.finished);
  EXPECT_EQ(sizes(t.messages), (std::vector<std::size_t>{337, 5316, 17365, 17365}));
  EXPECT_EQ(t.have.size(), 100u);
  EXPECT_EQ(t.need.size(), 100u);
  EXPECT_EQ(digest_prefix(t.messages), "95dd94f5bd989054");
}

TEST(NegentropyTranscript, V2) {
  const auto v = transcript_case(
      20000, [](int i) { return 1700000000u + static_cast<unsigned>(i / 10); },
      [](int) { return true; }, [](int) { return false; }, 60000, 500000);
  const auto t = run_sync(v.client, v.server, v.client_limit, v.server_limit);
  ASSERT_TRUE(t.finished);
  EXPECT_EQ(sizes(t.messages), (std::vector<std::size_t>{5, 499869, 44, 140237}));
  EXPECT_EQ(t.have.size(), 0u);
  EXPECT_EQ(t.need.size(), 20000u);
  EXPECT_EQ(digest_prefix(t.messages), "f597aeee6b2be028");
}

TEST(NegentropyTranscript, V3) {
  const auto v = transcript_case(
      50000, [](int i) { return 1700000000u + static_cast<unsigned>(i / 3); },
      [](int i) { return i % 100 == 0; }, [](int i) { return i % 100 == 50; }, 60000, 500000);
  const auto t = run_sync(v.client, v.server, v.client_limit, v.server_limit);
  ASSERT_TRUE(t.finished);
  EXPECT_EQ(sizes(t.messages),
            (std::vector<std::size_t>{335, 5042, 59642, 294036, 5042, 78945, 28259, 28227}));
  EXPECT_EQ(t.have.size(), 500u);
  EXPECT_EQ(t.need.size(), 500u);
  EXPECT_EQ(digest_prefix(t.messages), "d80fd19779609ee4");
}

// --- seeded properties ----------------------------------------------------

struct Sets {
  std::vector<Item> client, server;
  IdSet only_client, only_server;
};

enum class Ids { random, long_shared_prefix };

EventId random_id(std::mt19937_64& rng, Ids kind) {
  EventId id;
  for (auto& byte : id) byte = static_cast<std::uint8_t>(rng());
  // Ids agreeing on their first 29 bytes force minimal bounds of up to 32 bytes.
  if (kind == Ids::long_shared_prefix) std::fill(id.begin(), id.begin() + 29, 0x42);
  return id;
}

// Each record is in both sets, only the client's or only the server's, with
// the given weights; `timestamps` distinct values starting at 1700000000.
Sets make_sets(std::uint64_t seed, std::size_t n, std::array<int, 3> weights,
               std::uint64_t timestamps, Ids ids = Ids::random) {
  std::mt19937_64 rng(seed);
  std::discrete_distribution<int> where({static_cast<double>(weights[0]),
                                         static_cast<double>(weights[1]),
                                         static_cast<double>(weights[2])});
  Sets s;
  IdSet used;
  while (used.size() < n) {
    const Item item{1700000000 + rng() % timestamps, random_id(rng, ids)};
    if (!used.insert(item.id).second) continue;
    switch (where(rng)) {
      case 0:
        s.client.push_back(item);
        s.server.push_back(item);
        break;
      case 1:
        s.client.push_back(item);
        s.only_client.insert(item.id);
        break;
      default:
        s.server.push_back(item);
        s.only_server.insert(item.id);
    }
  }
  return s;
}

void expect_reconciles(const Sets& sets, std::size_t client_limit, std::size_t server_limit) {
  const auto t = run_sync(Storage(sets.client), Storage(sets.server), client_limit, server_limit);
  ASSERT_TRUE(t.finished);
  EXPECT_EQ(t.have, sets.only_client);
  EXPECT_EQ(t.need, sets.only_server);
  for (std::size_t i = 0; i < t.messages.size(); ++i) {
    const std::size_t limit = i % 2 == 0 ? client_limit : server_limit;
    if (limit != 0) {
      EXPECT_LE(t.messages[i].size(), limit) << "message " << i << " exceeds the frame limit";
    }
  }
}

const std::vector<std::pair<std::size_t, std::size_t>> limit_pairs = {
    {0, 0}, {4096, 4096}, {client_frame_size_limit, server_frame_size_limit}, {0, 4096}, {4096, 0}};

TEST(NegentropyProperty, EmptyAgainstEmpty) {
  const Storage empty;
  const auto t = run_sync(empty, empty, 0, 0);
  ASSERT_TRUE(t.finished);
  EXPECT_EQ(t.messages.size(), 2u);
  EXPECT_EQ(hex(t.messages[1]), "6100000200");
  EXPECT_TRUE(t.have.empty() && t.need.empty());
}

TEST(NegentropyProperty, EqualSetsFinishInOneRoundTrip) {
  for (std::size_t n : {1u, 31u, 32u, 1000u, 20000u}) {
    const Sets sets = make_sets(n, n, {1, 0, 0}, 1 + n / 4);
    const auto t = run_sync(Storage(sets.client), Storage(sets.server), 0, 0);
    ASSERT_TRUE(t.finished);
    EXPECT_EQ(t.messages.size(), 2u) << n;
    // Below 32 records the server answers an IdList with its own list.
    if (n >= id_list_threshold) {
      EXPECT_EQ(t.messages[1], "\x61") << n;
    }
  }
}

TEST(NegentropyProperty, DisjointAndOneSided) {
  for (const auto& [cl, sl] : limit_pairs) {
    SCOPED_TRACE(std::to_string(cl) + "/" + std::to_string(sl));
    expect_reconciles(make_sets(1, 3000, {0, 1, 1}, 500), cl, sl);
    expect_reconciles(make_sets(2, 3000, {0, 1, 0}, 500), cl, sl);
    expect_reconciles(make_sets(3, 3000, {0, 0, 1}, 500), cl, sl);
  }
}

TEST(NegentropyProperty, OneItemDifferent) {
  for (std::uint64_t seed = 10; seed < 16; ++seed) {
    Sets sets = make_sets(seed, 5000, {1, 0, 0}, 2000);
    std::mt19937_64 rng(seed);
    const std::size_t victim = rng() % sets.client.size();
    const Item item = sets.client[victim];
    if (seed % 2 == 0) {
      sets.server.erase(sets.server.begin() + static_cast<std::ptrdiff_t>(victim));
      sets.only_client.insert(item.id);
    } else {
      sets.client.erase(sets.client.begin() + static_cast<std::ptrdiff_t>(victim));
      sets.only_server.insert(item.id);
    }
    expect_reconciles(sets, 0, 0);
    expect_reconciles(sets, client_frame_size_limit, server_frame_size_limit);
  }
}

TEST(NegentropyProperty, ManyItemsOnOneTimestamp) {
  for (const auto& [cl, sl] : limit_pairs) {
    SCOPED_TRACE(std::to_string(cl) + "/" + std::to_string(sl));
    expect_reconciles(make_sets(20, 4000, {90, 5, 5}, 1), cl, sl);
    expect_reconciles(make_sets(21, 2000, {50, 25, 25}, 1, Ids::long_shared_prefix), cl, sl);
    expect_reconciles(make_sets(22, 3000, {80, 10, 10}, 3, Ids::long_shared_prefix), cl, sl);
  }
}

TEST(NegentropyProperty, RandomMixes) {
  std::mt19937_64 rng(77);
  for (int i = 0; i < 20; ++i) {
    const std::size_t n = rng() % 4000;
    const std::array<int, 3> weights{static_cast<int>(rng() % 100), static_cast<int>(rng() % 10),
                                     static_cast<int>(rng() % 10 + 1)};
    const auto& [cl, sl] = limit_pairs[rng() % limit_pairs.size()];
    SCOPED_TRACE("case " + std::to_string(i));
    expect_reconciles(make_sets(rng(), n, weights, 1 + rng() % 3000), cl, sl);
  }
}

TEST(NegentropyProperty, HundredThousandItems) {
  const Sets sets = make_sets(100, 100000, {998, 1, 1}, 50000);
  expect_reconciles(sets, 0, 0);
  expect_reconciles(sets, client_frame_size_limit, server_frame_size_limit);
  expect_reconciles(sets, 4096, 4096);
}

// A first round over 100,000 records is answered with fingerprints, not id lists: every bucket
// of the client's first message that differs is split once (at most 16 x 16 fingerprints with
// their bounds, against 3.2 MB for the ids). Its CPU time is a benchmark figure
// (tests/bench/negentropy_bench, BM_FirstRound), not an assertion here.
TEST(NegentropyProperty, FirstRoundOverHundredThousandItemsIsAnsweredWithFingerprints) {
  const Sets sets = make_sets(101, 100000, {998, 1, 1}, 50000);
  const Storage client(sets.client), server(sets.server);
  const std::string first = make(client, client_frame_size_limit).initiate();
  const auto reply = make(server, server_frame_size_limit).respond(first);
  ASSERT_TRUE(reply.ok());
  EXPECT_LT(reply->size(), buckets * buckets * (fingerprint_size + 8));
  EXPECT_GT(reply->size(), buckets * fingerprint_size) << "a fingerprint for every bucket";
}

// --- malformed input ------------------------------------------------------

TEST(NegentropyMalformed, RejectedByBothSides) {
  std::vector<Item> items;
  for (int i = 0; i < 100; ++i) items.push_back({static_cast<std::uint64_t>(i / 3), decimal_id(i)});
  const Storage storage(items);
  const Negentropy neg = make(storage);
  const std::vector<std::pair<std::string, ErrorCode>> cases = {
      {"", ErrorCode::truncated},
      {"610000", ErrorCode::truncated},                             // mode missing
      {"61000001" + std::string(30, 'a'), ErrorCode::truncated},    // 15-byte fingerprint
      {"6100000201" + std::string(62, 'e'), ErrorCode::truncated},  // 31-byte id
      {"61000002ffffffffffffffff7f", ErrorCode::truncated},         // huge id count
      {"61000003", ErrorCode::bad_mode},
      {"6100007f", ErrorCode::bad_mode},
      {"610021" + std::string(66, '0') + "00", ErrorCode::prefix_too_long},
      {"6182808080808080808000000000", ErrorCode::varint_overflow},  // timestamp 2^64
      {"6100000282808080808080808000", ErrorCode::varint_overflow},  // id count 2^64
      {"61020000"
       "0081",
       ErrorCode::truncated},  // second range cut
  };
  for (const auto& [input, code] : cases) {
    const std::string bytes = unhex(input);
    auto reply = neg.respond(bytes);
    ASSERT_FALSE(reply.ok()) << input;
    EXPECT_EQ(reply.error().code, code) << input << ": " << reply.error().detail;
    EXPECT_FALSE(reply.error().detail.empty());
    std::vector<EventId> have, need;
    auto next = neg.reconcile(bytes, have, need);
    ASSERT_FALSE(next.ok()) << input;
    EXPECT_EQ(next.error().code, code) << input;
  }
}

TEST(NegentropyMalformed, ClientErrorLeavesHaveAndNeedUntouched) {
  const Storage storage({{1, filled(1)}, {2, filled(2)}});
  std::vector<EventId> have, need;
  // A valid IdList range (server holds 0x03..) followed by a bad mode.
  const std::string input = "6102000201" + std::string(64, '3') + "000003";
  auto next = make(storage).reconcile(unhex(input), have, need);
  ASSERT_FALSE(next.ok());
  EXPECT_TRUE(have.empty());
  EXPECT_TRUE(need.empty());
}

TEST(NegentropyMalformed, VersionOnlyMessages) {
  const Storage storage({{1, filled(1)}});
  // A bare version byte: the peer has nothing left to say.
  auto reply = make(storage).respond(unhex("61"));
  ASSERT_TRUE(reply.ok());
  EXPECT_EQ(hex(*reply), "61");
  std::vector<EventId> have, need;
  auto next = make(storage).reconcile(unhex("61"), have, need);
  ASSERT_TRUE(next.ok());
  EXPECT_FALSE(next->has_value());
}

}  // namespace
}  // namespace graspd::nostr::negentropy

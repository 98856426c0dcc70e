#include "actors/sync/engine/history_pager.hpp"

#include <gtest/gtest.h>

#include <rapidjson/document.h>

#include <algorithm>
#include <deque>

#include "messages/nostr/json.hpp"

namespace graspd::sync {
namespace {

/// A remote relay that answers REQ with at most `cap` newest matches per
/// filter (ties by lowest id), like strfry or a stricter public relay.
struct CappedRelay {
  std::vector<nostr::Event> events;
  std::size_t cap;

  std::vector<nostr::Event> answer(const nostr::Filters& filters) const {
    std::vector<nostr::Event> out;
    for (const auto& f : filters) {
      std::vector<nostr::Event> matches;
      for (const auto& ev : events)
        if (f.matches(ev)) matches.push_back(ev);
      std::sort(matches.begin(), matches.end(), [](const auto& a, const auto& b) {
        return a.created_at != b.created_at ? a.created_at > b.created_at : a.id < b.id;
      });
      if (matches.size() > cap) matches.resize(cap);
      for (auto& ev : matches)
        if (std::none_of(out.begin(), out.end(), [&](const auto& o) { return o.id == ev.id; }))
          out.push_back(ev);
    }
    return out;
  }
};

nostr::Event event(std::uint32_t n, std::int64_t created_at, char tag_value) {
  nostr::Event ev;
  ev.id.fill(0);
  ev.id[0] = static_cast<std::uint8_t>(n >> 8);
  ev.id[1] = static_cast<std::uint8_t>(n);
  ev.kind = 1;
  ev.created_at = created_at;
  ev.tags = {{"e", std::string(1, tag_value)}};
  return ev;
}

nostr::Filter tagged(char value) {
  nostr::Filter f;
  f.tags['e'] = {std::string(1, value)};
  return f;
}

/// Drives the pager against the relay until the history completes; returns
/// the ids received and the number of REQs sent.
struct Run {
  std::set<nostr::EventId> received;
  int reqs = 0;
  bool completed = false;
};

Run run(HistoryPager& pager, const CappedRelay& relay, nostr::Filters filters,
        bool history_only = false) {
  Run out;
  std::vector<std::string> frames =
      history_only ? pager.open_history("sub", filters) : pager.open("sub", filters);
  for (int guard = 0; guard < 1000 && !out.completed; ++guard) {
    std::string req;
    for (const auto& frame : frames)
      if (frame.rfind("[\"REQ\"", 0) == 0) req = frame;
    if (req.empty()) break;
    ++out.reqs;
    // Decode the REQ the pager built, as the remote relay would.
    rapidjson::Document doc;
    doc.Parse(req.c_str(), req.size());
    std::string wire_id = doc[1].GetString();
    nostr::Filters sent;
    for (rapidjson::SizeType i = 2; i < doc.Size(); ++i) {
      auto parsed = nostr::parse_filter(doc[i], nostr::ParseLimits{});
      EXPECT_TRUE(parsed.ok());
      sent.push_back(parsed.value());
    }
    for (const auto& ev : relay.answer(sent)) {
      pager.on_event(wire_id, ev);
      out.received.insert(ev.id);
    }
    auto step = pager.on_eose(wire_id);
    out.completed = step.completed.has_value();
    frames = step.frames;
  }
  return out;
}

TEST(HistoryPager, FetchesEverythingWhateverTheRemoteCap) {
  CappedRelay relay{{}, 20};
  for (std::uint32_t i = 0; i < 95; ++i) relay.events.push_back(event(i, 1000 + i, 'x'));
  for (std::size_t cap : {20u, 7u, 500u}) {
    relay.cap = cap;
    HistoryPager pager;
    auto result = run(pager, relay, {tagged('x')});
    EXPECT_TRUE(result.completed) << cap;
    EXPECT_EQ(result.received.size(), 95u) << cap;
    // Each page repeats the boundary event (until is inclusive).
    EXPECT_LE(result.reqs, static_cast<int>(95 / (cap - 1) + 3)) << cap;
  }
}

TEST(HistoryPager, HistoryBesideALiveRequestOpenedElsewhere) {
  // A NIP-77 subscription handed back keeps its live REQ "sub": the history starts at page 1,
  // and an EOSE of "sub" does not end it.
  CappedRelay relay{{}, 20};
  for (std::uint32_t i = 0; i < 95; ++i) relay.events.push_back(event(i, 1000 + i, 'x'));
  HistoryPager pager;
  auto frames = pager.open_history("sub", {tagged('x')});
  ASSERT_EQ(frames.size(), 1u);
  EXPECT_EQ(frames[0].rfind("[\"REQ\",\"sub~1\"", 0), 0u) << frames[0];
  EXPECT_FALSE(pager.on_eose("sub").completed);
  HistoryPager fresh;
  auto result = run(fresh, relay, {tagged('x')}, true);
  EXPECT_TRUE(result.completed);
  EXPECT_EQ(result.received.size(), 95u);
  // Closing it closes the page and the live REQ.
  auto closing = fresh.close("sub");
  EXPECT_EQ(closing.back(), "[\"CLOSE\",\"sub\"]");
}

std::pair<std::string, nostr::Filters> decode_req(const std::string& frame) {
  rapidjson::Document doc;
  doc.Parse(frame.c_str(), frame.size());
  nostr::Filters filters;
  for (rapidjson::SizeType i = 2; i < doc.Size(); ++i)
    filters.push_back(nostr::parse_filter(doc[i], nostr::ParseLimits{}).value());
  return {doc[1].GetString(), filters};
}

TEST(HistoryPager, AtMostMaxPagesAreOpenAtOnceAndEveryHistoryCompletes) {
  // Five subscriptions page back at once against a peer capping REQs at 10 events: with room
  // for two pages beside the live REQs, the other pages wait their turn.
  CappedRelay relay{{}, 10};
  const std::string values = "abcde";
  for (std::uint32_t i = 0; i < 250; ++i)
    relay.events.push_back(event(i, 1000 + i, values[i % values.size()]));
  HistoryPager pager(1'000'000, 2);
  std::deque<std::string> open;  // page REQs the peer holds, oldest first
  std::set<nostr::EventId> received;
  std::set<std::string> completed;
  std::size_t most_open = 0;
  auto take = [&](const std::vector<std::string>& frames) {
    for (const auto& frame : frames)
      if (frame.rfind("[\"REQ\"", 0) == 0) open.push_back(frame);
    most_open = std::max(most_open, open.size());
  };
  for (char v : values) take(pager.open_history(std::string("s") + v, {tagged(v)}));
  EXPECT_EQ(open.size(), 2u) << "two pages go out, three wait";
  for (int guard = 0; guard < 1000 && !open.empty(); ++guard) {
    auto [wire_id, filters] = decode_req(open.front());
    open.pop_front();
    for (const auto& ev : relay.answer(filters)) {
      pager.on_event(wire_id, ev);
      received.insert(ev.id);
    }
    auto step = pager.on_eose(wire_id);
    if (step.completed) completed.insert(*step.completed);
    take(step.frames);
  }
  EXPECT_LE(most_open, 2u);
  EXPECT_EQ(completed.size(), values.size());
  EXPECT_EQ(received.size(), relay.events.size());
}

TEST(HistoryPager, ClosingASubscriptionLetsAWaitingPageGo) {
  HistoryPager pager(1'000'000, 1);
  EXPECT_EQ(pager.open_history("a", {tagged('a')}).size(), 1u);
  EXPECT_TRUE(pager.open_history("b", {tagged('b')}).empty()) << "b waits for a's page";
  auto frames = pager.close("a");
  ASSERT_FALSE(frames.empty());
  EXPECT_EQ(frames.back().rfind("[\"REQ\",\"b~1\"", 0), 0u) << frames.back();
}

TEST(HistoryPager, FloodOnOneTimestampTerminates) {
  CappedRelay relay{{}, 20};
  for (std::uint32_t i = 0; i < 300; ++i) relay.events.push_back(event(i, 5000, 'x'));
  HistoryPager pager;
  auto result = run(pager, relay, {tagged('x')});
  EXPECT_TRUE(result.completed);
  // The first page, one that brings nothing new, then one past the flood's second (empty).
  EXPECT_EQ(result.reqs, 3);
}

TEST(HistoryPager, ACapOfOneStillWalksTheWholeHistory) {
  // A relay answering one event per REQ (found by the mesh simulator's limit_cap_one scenario):
  // each page repeats the boundary event, so the pager must step past it rather than stop.
  CappedRelay relay{{}, 1};
  for (std::uint32_t i = 0; i < 30; ++i) relay.events.push_back(event(i, 1000 + 10 * i, 'x'));
  relay.events.push_back(event(99, 1000, 'x'));  // two events share the oldest second
  HistoryPager pager;
  auto result = run(pager, relay, {tagged('x')});
  EXPECT_TRUE(result.completed);
  EXPECT_EQ(result.received.size(), 30u) << "all but the one hidden behind its twin's second";
  EXPECT_LE(result.reqs, 2 * 31 + 1);
}

TEST(HistoryPager, EachFilterPaginatesOnItsOwnBoundary) {
  // Filter x has a long history; filter y a few old events. One shared
  // `until` would skip x's middle.
  CappedRelay relay{{}, 10};
  for (std::uint32_t i = 0; i < 50; ++i) relay.events.push_back(event(i, 2000 + i, 'x'));
  for (std::uint32_t i = 100; i < 103; ++i) relay.events.push_back(event(i, 10 + i, 'y'));
  HistoryPager pager;
  auto result = run(pager, relay, {tagged('x'), tagged('y')});
  EXPECT_TRUE(result.completed);
  EXPECT_EQ(result.received.size(), 53u);
}

TEST(HistoryPager, EmptyHistoryCompletesAtFirstEose) {
  CappedRelay relay{{}, 10};
  HistoryPager pager;
  auto result = run(pager, relay, {tagged('x')});
  EXPECT_TRUE(result.completed);
  EXPECT_EQ(result.reqs, 1);
}

TEST(HistoryPager, LiveEventsAreNotHistoryAndPagesAreClosed) {
  HistoryPager pager;
  auto frames = pager.open("s1", {tagged('x')});
  ASSERT_EQ(frames.size(), 1u);
  EXPECT_TRUE(pager.on_event("s1", event(1, 100, 'x')));
  auto step = pager.on_eose("s1");
  ASSERT_TRUE(step.page_requested);
  EXPECT_NE(step.frames.back().find("\"s1~1\""), std::string::npos);
  EXPECT_NE(step.frames.back().find("\"until\":100"), std::string::npos);
  // A live event on the main subscription does not count as history.
  EXPECT_FALSE(pager.on_event("s1", event(2, 200, 'x')));
  auto done = pager.on_eose("s1~1");
  ASSERT_TRUE(done.completed);
  EXPECT_EQ(done.frames.front(), R"(["CLOSE","s1~1"])");
  // Closing the subscription closes only the main id now.
  EXPECT_EQ(pager.close("s1"), std::vector<std::string>{R"(["CLOSE","s1"])"});
  EXPECT_EQ(pager.open_subscriptions(), 0u);
}

TEST(HistoryPager, AskedForMeansTheFiltersAsOpenedWhilePagesMoveBack) {
  HistoryPager pager;
  pager.open("s1", {tagged('x')});
  EXPECT_TRUE(pager.asked_for("s1", event(1, 100, 'x')));
  EXPECT_FALSE(pager.asked_for("s1", event(2, 100, 'y'))) << "matches no filter";
  EXPECT_FALSE(pager.asked_for("other", event(3, 100, 'x'))) << "unknown subscription";
  pager.on_event("s1", event(1, 100, 'x'));
  pager.on_eose("s1");  // page 1 asks for until 100
  EXPECT_TRUE(pager.asked_for("s1~1", event(4, 50, 'x')));
  // Live events on the main subscription are newer than any page's until.
  EXPECT_TRUE(pager.asked_for("s1", event(5, 500, 'x')));
  pager.on_eose("s1~1");  // history complete: no filter pages any more
  EXPECT_TRUE(pager.asked_for("s1", event(6, 600, 'x')));
}

TEST(HistoryPager, ClosedPageEndsHistory) {
  HistoryPager pager;
  pager.open("s", {tagged('x')});
  pager.on_event("s", event(1, 100, 'x'));
  pager.on_eose("s");
  auto step = pager.on_closed("s~1");
  EXPECT_EQ(step.completed.value_or(""), "s");
  EXPECT_EQ(pager.owner_of("s~1").value_or(""), "s");
  EXPECT_FALSE(pager.owner_of("other").has_value());
}

}  // namespace
}  // namespace graspd::sync

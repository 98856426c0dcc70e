// Every limit and refusal path of the relay, hostile frames, a slow reader and
// a connection flood, against the real binary: each refusal carries a NIP-01
// prefix and the relay keeps serving other clients.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <thread>

#include "relay_test_helpers.hpp"
#include "tests/support/graspd_process.hpp"
#include "tests/support/http_client.hpp"
#include "tests/support/wait_until.hpp"

namespace graspd::test {
namespace {

using namespace std::chrono_literals;

bool starts_with(const std::string& text, std::string_view prefix) {
  return text.rfind(prefix, 0) == 0;
}

/// A graspd with extra environment, started in the constructor.
using Env = std::vector<std::pair<std::string, std::string>>;

struct Relay {
  explicit Relay(Env env = {}) : process(relay_options(std::move(env))) {
    started = process.start();
  }
  ~Relay() {
    if (process.running()) {
      EXPECT_EQ(process.stop(), 0) << process.stderr_text();
    }
  }
  std::unique_ptr<TestClient> client() { return TestClient::connect(process.port()); }
  GraspdProcess process;
  bool started = false;
};

std::string notice_after(TestClient& c, std::string frame) {
  c.send(std::move(frame));
  auto notice = c.next_as<nostr::RelayNotice>();
  return notice ? notice->message : "<no NOTICE>";
}

/// The connection still answers normally after the hostile frames.
void expect_still_serving(TestClient& c) {
  auto ok = c.publish(make_event(1, "still here " + std::to_string(std::rand())));
  ASSERT_TRUE(ok);
  EXPECT_TRUE(ok->accepted) << ok->message;
}

TEST(RelayHostileInput, MalformedFramesGetANoticeAndTheConnectionStaysOpen) {
  Relay relay;
  ASSERT_TRUE(relay.started) << relay.process.stderr_text();
  auto c = relay.client();
  ASSERT_TRUE(c);
  const std::vector<std::string> hostile = {
      "garbage",
      "",
      "[\"EVENT\",{\"id\":\"ab",                        // truncated JSON
      std::string(5000, '[') + std::string(5000, ']'),  // deep nesting
      "[\"COUNT\",\"x\",{\"limit\":123456789012345678901234567890}]",
      "[\"REQ\",\"x\",{\"since\":1e400}]",
      "[\"REQ\",\"\\ud800\",{}]",  // lone surrogate escape
      "{\"not\":\"an array\"}",
      "[\"NOPE\",1]",
      "[]",
      "[\"EVENT\"]",
      "[\"REQ\"]",
      "[\"CLOSE\"]",
      "[\"EVENT\",\"not an object\"]",
      "[\"REQ\",42,{}]",
  };
  for (const auto& frame : hostile) {
    c->send(frame);
    auto reply = c->next();
    ASSERT_TRUE(reply) << "no answer to " << frame.substr(0, 60);
    std::string message;
    if (auto* n = std::get_if<nostr::RelayNotice>(&*reply)) message = n->message;
    if (auto* cl = std::get_if<nostr::RelayClosed>(&*reply)) message = cl->message;
    if (auto* ok = std::get_if<nostr::RelayOk>(&*reply)) message = ok->message;
    EXPECT_FALSE(message.empty()) << c->last_text();
    EXPECT_NE(message.find(':'), std::string::npos) << "no prefix: " << message;
  }
  expect_still_serving(*c);
}

// RFC 6455 §8.1: a text frame that is not UTF-8 fails the connection (close
// code 1007). That one connection ends; the relay keeps serving the others.
TEST(RelayHostileInput, InvalidUtf8TextFrameClosesOnlyThatConnection) {
  Relay relay;
  ASSERT_TRUE(relay.started);
  auto bad = relay.client();
  auto good = relay.client();
  ASSERT_TRUE(bad && good);
  bad->send(std::string("[\"REQ\",\"\xff\xfe\",{}]"));
  EXPECT_FALSE(bad->next(2s));
  EXPECT_FALSE(bad->ws().is_open());
  expect_still_serving(*good);
}

TEST(RelayHostileInput, BinaryFrameGetsANotice) {
  Relay relay;
  ASSERT_TRUE(relay.started);
  auto c = relay.client();
  ASSERT_TRUE(c);
  c->ws().send_binary("[\"REQ\",\"x\",{}]");
  auto notice = c->next_as<nostr::RelayNotice>();
  ASSERT_TRUE(notice);
  EXPECT_TRUE(starts_with(notice->message, "invalid:")) << notice->message;
  expect_still_serving(*c);
}

TEST(RelayLimits, OversizedMessageIsDiscardedWithANotice) {
  Relay relay(Env{{"NGIT_MAX_MESSAGE_BYTES", "4096"}, {"NGIT_MAX_EVENT_BYTES", "2048"}});
  ASSERT_TRUE(relay.started) << relay.process.stderr_text();
  auto c = relay.client();
  ASSERT_TRUE(c);
  auto message = notice_after(*c, event_frame(make_event(1, std::string(10000, 'x'))));
  EXPECT_TRUE(starts_with(message, "invalid:")) << message;
  EXPECT_NE(message.find("too large"), std::string::npos) << message;
  // Between the message and the event limit: refused as an event.
  auto ev = make_event(1, std::string(3000, 'y'));
  auto ok = c->publish(ev);
  ASSERT_TRUE(ok);
  EXPECT_FALSE(ok->accepted);
  EXPECT_TRUE(starts_with(ok->message, "invalid:")) << ok->message;
  expect_still_serving(*c);
}

TEST(RelayLimits, TooManyTagsOrTooLongContentAreRefused) {
  Relay relay(Env{{"NGIT_MAX_EVENT_TAGS", "3"}, {"NGIT_MAX_CONTENT_LENGTH", "100"}});
  ASSERT_TRUE(relay.started) << relay.process.stderr_text();
  auto c = relay.client();
  ASSERT_TRUE(c);
  auto ok = c->publish(make_event(1, "tags", {{"t", "1"}, {"t", "2"}, {"t", "3"}, {"t", "4"}}));
  ASSERT_TRUE(ok);
  EXPECT_FALSE(ok->accepted);
  EXPECT_TRUE(starts_with(ok->message, "invalid:")) << ok->message;
  ok = c->publish(make_event(1, std::string(101, 'c')));
  ASSERT_TRUE(ok);
  EXPECT_FALSE(ok->accepted);
  EXPECT_TRUE(starts_with(ok->message, "invalid:")) << ok->message;
  expect_still_serving(*c);
}

TEST(RelayLimits, SubscriptionFilterAndSubidLimits) {
  Relay relay(
      {{"NGIT_MAX_SUBSCRIPTIONS", "2"}, {"NGIT_MAX_FILTERS", "2"}, {"NGIT_MAX_SUBID_LENGTH", "8"}});
  ASSERT_TRUE(relay.started) << relay.process.stderr_text();
  auto c = relay.client();
  ASSERT_TRUE(c);
  ASSERT_TRUE(c->query("one", "{}"));
  ASSERT_TRUE(c->query("two", "{}"));
  c->send(R"(["REQ","three",{}])");
  auto closed = c->next_as<nostr::RelayClosed>();
  ASSERT_TRUE(closed);
  EXPECT_EQ(closed->subscription_id, "three");
  EXPECT_TRUE(starts_with(closed->message, "rate-limited:")) << closed->message;
  // Replacing an open subscription is not a new one.
  ASSERT_TRUE(c->query("two", "{\"kinds\":[1]}"));
  // After a CLOSE there is room again.
  c->send(R"(["CLOSE","one"])");
  ASSERT_TRUE(c->query("three", "{}"));

  c->send(R"(["REQ","f",{},{},{}])");
  auto too_many_filters = c->next_as<nostr::RelayClosed>();
  ASSERT_TRUE(too_many_filters);
  EXPECT_NE(too_many_filters->message.find(':'), std::string::npos) << too_many_filters->message;

  auto message = notice_after(*c, R"(["REQ","waytoolongid",{}])");
  EXPECT_NE(message.find(':'), std::string::npos) << message;
  // Close the catch-all subscriptions so the next OK is not preceded by live events.
  c->send(R"(["CLOSE","two"])");
  c->send(R"(["CLOSE","three"])");
  expect_still_serving(*c);
}

TEST(RelayLimits, LimitIsCappedAndDefaulted) {
  Relay relay(Env{{"NGIT_MAX_LIMIT", "3"}, {"NGIT_DEFAULT_LIMIT", "2"}});
  ASSERT_TRUE(relay.started) << relay.process.stderr_text();
  auto c = relay.client();
  ASSERT_TRUE(c);
  for (int i = 0; i < 6; ++i)
    ASSERT_TRUE(c->publish(make_event(1, "e", {}, 1700000000 + i))->accepted);
  auto capped = c->query("cap", "{\"kinds\":[1],\"limit\":100}");
  ASSERT_TRUE(capped);
  EXPECT_EQ(capped->size(), 3u);
  auto defaulted = c->query("def", "{\"kinds\":[1]}");
  ASSERT_TRUE(defaulted);
  EXPECT_EQ(defaulted->size(), 2u);
}

TEST(RelayLimits, CountPastItsBudgetIsAnsweredApproximate) {
  Relay relay(Env{{"NGIT_MAX_COUNT_EXAMINED", "5"}});
  ASSERT_TRUE(relay.started) << relay.process.stderr_text();
  auto c = relay.client();
  ASSERT_TRUE(c);
  for (int i = 0; i < 12; ++i)
    ASSERT_TRUE(c->publish(make_event(1, "counted", {}, 1700000000 + i))->accepted);
  c->send("[\"COUNT\",\"few\",{\"kinds\":[1],\"until\":1700000002}]");
  auto exact = c->next_as<nostr::RelayCount>();
  ASSERT_TRUE(exact);
  EXPECT_EQ(exact->count, 3u);
  EXPECT_FALSE(exact->approximate);
  c->send("[\"COUNT\",\"all\",{\"kinds\":[1]}]");
  auto bounded = c->next_as<nostr::RelayCount>();
  ASSERT_TRUE(bounded);
  EXPECT_TRUE(bounded->approximate) << "12 events, 5 may be examined";
  EXPECT_LE(bounded->count, 5u);
}

TEST(RelayLimits, EventRateIsLimitedPerConnection) {
  Relay relay(Env{{"NGIT_EVENT_RATE", "1"}, {"NGIT_EVENT_BURST", "3"}});
  ASSERT_TRUE(relay.started) << relay.process.stderr_text();
  auto c = relay.client();
  ASSERT_TRUE(c);
  int accepted = 0, limited = 0;
  for (int i = 0; i < 6; ++i) {
    auto ok = c->publish(make_event(1, "burst " + std::to_string(i)));
    ASSERT_TRUE(ok);
    if (ok->accepted) ++accepted;
    if (!ok->accepted && starts_with(ok->message, "rate-limited:")) ++limited;
  }
  EXPECT_GE(accepted, 3);
  EXPECT_LE(accepted, 4);  // at most one token refilled meanwhile
  EXPECT_EQ(accepted + limited, 6);
  // Another connection has its own bucket.
  auto other = relay.client();
  ASSERT_TRUE(other);
  EXPECT_TRUE(other->publish(make_event(1, "other connection"))->accepted);
}

TEST(RelayLimits, ConnectionCapsRefuseWithANotice) {
  Relay relay(Env{{"NGIT_MAX_CONNECTIONS_PER_IP", "2"}});
  ASSERT_TRUE(relay.started) << relay.process.stderr_text();
  auto a = relay.client();
  auto b = relay.client();
  ASSERT_TRUE(a && b);
  ASSERT_TRUE(a->query("s", "{\"kinds\":[99]}"));  // both sessions are registered
  ASSERT_TRUE(b->query("s", "{\"kinds\":[99]}"));
  auto refused = relay.client();
  ASSERT_TRUE(refused);
  auto notice = refused->next_as<nostr::RelayNotice>();
  ASSERT_TRUE(notice);
  EXPECT_TRUE(starts_with(notice->message, "rate-limited:")) << notice->message;
  EXPECT_FALSE(refused->next(2s));  // then closed
  EXPECT_FALSE(refused->ws().is_open());
  expect_still_serving(*a);
  b.reset();
  // A slot is released once the server has seen the close; then a new connection works.
  EXPECT_TRUE(wait_until(
      [&] {
        auto metrics = http_get(relay.process.port(), "/metrics").body;
        return metric_value(metrics, "graspd_relay_connections") == 1;
      },
      10s));
  auto again = relay.client();
  ASSERT_TRUE(again);
  EXPECT_TRUE(again->query("q", "{\"limit\":0}"));
}

/// A WebSocket client that sends one REQ and then never reads its socket.
class NonReadingClient {
 public:
  explicit NonReadingClient(std::uint16_t port) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    int small = 4096;
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    connected_ = ::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
  }
  ~NonReadingClient() { ::close(fd_); }

  bool handshake_and_send(const std::string& text) {
    if (!connected_) return false;
    std::string request =
        "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n";
    if (!write_all(request)) return false;
    // Read just the 101 response head, byte by byte, so nothing else is consumed.
    std::string head;
    char ch;
    while (head.find("\r\n\r\n") == std::string::npos && ::read(fd_, &ch, 1) == 1) head += ch;
    if (head.find(" 101 ") == std::string::npos) return false;
    return write_all(masked_text_frame(text));
  }

 private:
  static std::string masked_text_frame(const std::string& text) {
    std::string frame;
    frame += static_cast<char>(0x81);
    if (text.size() < 126) {
      frame += static_cast<char>(0x80 | text.size());
    } else {
      frame += static_cast<char>(0x80 | 126);
      frame += static_cast<char>((text.size() >> 8) & 0xff);
      frame += static_cast<char>(text.size() & 0xff);
    }
    const char mask[4] = {0x11, 0x22, 0x33, 0x44};
    frame.append(mask, 4);
    for (std::size_t i = 0; i < text.size(); ++i) frame += static_cast<char>(text[i] ^ mask[i % 4]);
    return frame;
  }
  bool write_all(const std::string& bytes) {
    return ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL) ==
           static_cast<ssize_t>(bytes.size());
  }
  int fd_ = -1;
  bool connected_ = false;
};

/// The value of the sample `name` on the daemon's /metrics, 0 while it is absent.
std::uint64_t scraped_metric(std::uint16_t port, const std::string& name) {
  auto value = metric_value(http_get(port, "/metrics").body, name);
  return value < 0 ? 0 : static_cast<std::uint64_t>(value);
}

/// Publishes `count` events of 4,000 content bytes from `first_created_at` on and waits for every
/// OK.
void publish_many(TestClient& publisher, int count, std::int64_t first_created_at) {
  for (int i = 0; i < count; ++i)
    publisher.send(
        event_frame(make_event(1, std::string(4000, 'a' + i % 26), {}, first_created_at + i)));
  for (int i = 0; i < count; ++i) ASSERT_TRUE(publisher.next_as<nostr::RelayOk>());
}

TEST(RelayBackpressure, AnAnswerWaitsForItsReaderAndASlowLiveReaderIsDisconnected) {
  Relay relay(Env{{"NGIT_MAX_OUTBOUND_BYTES", "1048576"}, {"NGIT_MAX_LIMIT", "5000"}});
  ASSERT_TRUE(relay.started) << relay.process.stderr_text();
  const auto port = relay.process.port();
  auto publisher = relay.client();
  ASSERT_TRUE(publisher);
  // ~12 MB of stored events: far more than socket buffers plus the outbound bound.
  const int count = 3000;
  publish_many(*publisher, count, 1700000000);
  auto disconnects = [&] {
    return scraped_metric(port, "graspd_relay_slow_reader_disconnects_total");
  };

  // The answer leaves in chunks as its reader takes them: one that never reads holds about two
  // chunks in graspd and is not cut off for it.
  NonReadingClient slow_answer(port);
  ASSERT_TRUE(slow_answer.handshake_and_send(R"(["REQ","all",{"kinds":[1],"limit":5000}])"));
  EXPECT_FALSE(wait_until([&] { return disconnects() > 0; }, 1s))
      << "a reader that has not read its answer yet was disconnected";
  // A reader that reads gets the whole answer, twelve times its outbound bound.
  auto reader = relay.client();
  ASSERT_TRUE(reader);
  auto all = reader->query("all", R"({"kinds":[1],"limit":5000})");
  ASSERT_TRUE(all);
  EXPECT_EQ(all->size(), static_cast<std::size_t>(count));

  // Live events are not paced: a live subscriber that does not read is cut off at its bound.
  NonReadingClient slow_live(port);
  ASSERT_TRUE(slow_live.handshake_and_send(R"(["REQ","live",{"kinds":[1],"limit":0}])"));
  std::int64_t next_created_at = 1800000000;
  EXPECT_TRUE(wait_until(
      [&] {
        publish_many(*publisher, 200, next_created_at);
        next_created_at += 200;
        return disconnects() > 0;
      },
      20s));
  EXPECT_EQ(disconnects(), 1u);
  expect_still_serving(*publisher);
}

TEST(RelayFlood, ManyConnectionsAtOnceDoNotStopService) {
  Relay relay;
  ASSERT_TRUE(relay.started) << relay.process.stderr_text();
  std::vector<std::unique_ptr<runtime::WsClient>> flood;
  for (int i = 0; i < 200; ++i) {
    auto c = runtime::WsClient::connect("127.0.0.1", relay.process.port(), "/", {});
    if (c) {
      (*c)->send(R"(["REQ","f",{"kinds":[1]}])");
      flood.push_back(std::move(*c));
    }
  }
  EXPECT_EQ(flood.size(), 200u);
  auto c = relay.client();
  ASSERT_TRUE(c);
  ASSERT_TRUE(c->publish(make_event(1, "during the flood"))->accepted);
  // Every flooding subscriber got the live event (after its EOSE).
  std::size_t delivered = 0;
  for (auto& f : flood) {
    for (int i = 0; i < 3; ++i) {
      auto text = f->receive(5s);
      if (!text) break;
      if (text->rfind("[\"EVENT\"", 0) == 0) {
        ++delivered;
        break;
      }
    }
  }
  EXPECT_EQ(delivered, flood.size());
  flood.clear();
  expect_still_serving(*c);
}

}  // namespace
}  // namespace graspd::test

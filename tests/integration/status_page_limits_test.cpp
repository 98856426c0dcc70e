// GET / under attack, against the real binary: announcements with descriptions as large as the
// relay accepts, read by many concurrent clients from 127.0.0.2, while a victim on 127.0.0.1
// keeps asking REQs. The page stays under NGIT_STATUS_PAGE_MAX_BYTES with each field cut, and
// the victim's REQs stay answered promptly: the page is rendered at most once per interval on
// a thread of its own, not once per request on the network threads.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "relay_test_helpers.hpp"
#include "tests/support/graspd_process.hpp"

namespace graspd::test {
namespace {

using namespace std::chrono_literals;

/// `GET /` from 127.0.0.2 on a fresh connection; the whole answer (headers and body), or empty.
std::string get_root_from_attacker(std::uint16_t port) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return {};
  sockaddr_in from{};
  from.sin_family = AF_INET;
  ::inet_pton(AF_INET, "127.0.0.2", &from.sin_addr);
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(port);
  ::inet_pton(AF_INET, "127.0.0.1", &to.sin_addr);
  timeval timeout{30, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
  std::string answer;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&from), sizeof from) == 0 &&
      ::connect(fd, reinterpret_cast<sockaddr*>(&to), sizeof to) == 0) {
    std::string request = "GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
    if (::send(fd, request.data(), request.size(), MSG_NOSIGNAL) ==
        static_cast<ssize_t>(request.size())) {
      char buffer[65536];
      ssize_t n;
      while ((n = ::recv(fd, buffer, sizeof buffer, 0)) > 0) answer.append(buffer, std::size_t(n));
    }
  }
  ::close(fd);
  return answer;
}

std::string body_of(const std::string& answer) {
  auto end = answer.find("\r\n\r\n");
  return end == std::string::npos ? std::string() : answer.substr(end + 4);
}

constexpr std::size_t page_cap = 256 * 1024;
constexpr std::size_t field_cap = 200;

TEST(StatusPageLimits, HugeDescriptionsAndManyReadersStayBoundedAndTheVictimIsServed) {
  GraspdProcess relay(
      relay_options({{"NGIT_STATUS_PAGE_MAX_BYTES", std::to_string(page_cap)},
                     {"NGIT_STATUS_PAGE_MAX_FIELD_BYTES", std::to_string(field_cap)},
                     {"NGIT_STATUS_PAGE_INTERVAL_SECS", "1"}}));
  ASSERT_TRUE(relay.start()) << relay.stderr_text();
  auto publisher = TestClient::connect(relay.port());
  ASSERT_TRUE(publisher);
  // As large as the relay accepts: NGIT_MAX_EVENT_BYTES (512 KiB) for the whole event.
  constexpr int announcements = 24;
  const std::string description(400 * 1024, 'D');
  for (int i = 0; i < announcements; ++i) {
    auto ev = make_event(30617, "",
                         {{"d", "repo-" + std::to_string(i)},
                          {"name", std::string(100000, 'N')},
                          {"description", description}},
                         1700000000 + i, static_cast<std::uint8_t>(10 + i));
    auto ok = publisher->publish(ev);
    ASSERT_TRUE(ok && ok->accepted) << (ok ? ok->message : "no OK");
  }
  auto note = publisher->publish(make_event(1, "victim's note"));
  ASSERT_TRUE(note && note->accepted);

  // Unbounded, this page was the descriptions twice each (text and search attribute): 24 MB.
  auto page = body_of(get_root_from_attacker(relay.port()));
  ASSERT_FALSE(page.empty());
  EXPECT_LE(page.size(), page_cap);
  EXPECT_EQ(page.find(std::string(field_cap + 1, 'D')), std::string::npos);
  EXPECT_EQ(page.find(std::string(field_cap + 1, 'N')), std::string::npos);
  EXPECT_NE(page.find("</html>"), std::string::npos) << "a complete page, not a cut one";
  std::cout << "status page: " << page.size() << " bytes for " << announcements
            << " announcements of " << description.size() << " byte descriptions\n";

  // 16 readers from 127.0.0.2 ask for the page as fast as they can until the victim is done.
  std::atomic<bool> done{false};
  std::atomic<std::size_t> pages{0}, largest{0}, failures{0};
  std::vector<std::thread> attackers;
  for (int i = 0; i < 16; ++i)
    attackers.emplace_back([&] {
      while (!done) {
        auto body = body_of(get_root_from_attacker(relay.port()));
        if (body.empty()) {
          ++failures;
          continue;
        }
        ++pages;
        auto size = body.size();
        for (auto seen = largest.load(); size > seen && !largest.compare_exchange_weak(seen, size);)
          ;
      }
    });
  ASSERT_TRUE(wait_until([&] { return pages.load() >= 16; }, 60s)) << "the attack never got going";

  auto victim = TestClient::connect(relay.port());
  ASSERT_TRUE(victim);
  std::chrono::milliseconds slowest{0};
  for (int i = 0; i < 30; ++i) {
    auto start = std::chrono::steady_clock::now();
    victim->send(R"(["REQ","v)" + std::to_string(i) + R"(",{"kinds":[1],"limit":1}])");
    auto event = victim->next_as<nostr::RelayEvent>(10s);
    auto eose = victim->next_as<nostr::RelayEose>(10s);
    ASSERT_TRUE(event && eose) << "REQ " << i << " unanswered";
    slowest = std::max(slowest, std::chrono::duration_cast<std::chrono::milliseconds>(
                                    std::chrono::steady_clock::now() - start));
    victim->send(R"(["CLOSE","v)" + std::to_string(i) + R"("])");
  }
  done = true;
  for (auto& t : attackers) t.join();
  std::cout << "victim's slowest REQ " << slowest.count() << " ms while " << pages.load()
            << " pages were served to 127.0.0.2 (largest " << largest.load() << " bytes)\n";
  EXPECT_LT(slowest, 2000ms) << "generous bound: normally a few ms";
  EXPECT_LE(largest.load(), page_cap);
  EXPECT_EQ(failures.load(), 0u);
  EXPECT_EQ(relay.stop(), 0) << relay.stderr_text();
}

}  // namespace
}  // namespace graspd::test

// graspd-load: publishes pre-signed events over N WebSocket connections,
// runs REQ workloads and holds idle connections against a running relay;
// prints throughput and latency percentiles. `--url ws://HOST:PORT/` (or --host/--port) points it
// at any relay, strfry included.
//
//   graspd-load publish --port 7334 --events 100000 --connections 4 [--compression]
//   [--content-bytes 200] graspd-load req     --port 7334 --requests 200 --filter
//   '{"kinds":[1],"limit":500}' graspd-load idle    --port 7334 --connections 10000 --hold-secs 10
//
// GRASP workloads (publish): `--kind 30617 --announce HOST:PORT` makes event i the repository
// announcement "load-i" of author i % authors listing HOST:PORT; `--kind 1621 --repos R` makes
// event i an issue tagging repository "load-(i % R)" (announced the same way with the same
// --authors), so that a GRASP-01 relay accepts both.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <vector>

#include "messages/nostr/json.hpp"
#include "messages/nostr/verify.hpp"
#include "messages/relay_url.hpp"
#include "runtime/net/ws_client.hpp"

namespace {

using Clock = std::chrono::steady_clock;
using graspd::runtime::WsClient;

struct Args {
  std::string mode;
  std::string host = "127.0.0.1";
  std::uint16_t port = 7334;
  std::string path = "/";
  std::size_t events = 10000;
  std::size_t connections = 1;
  std::size_t window = 1000;
  std::size_t content_bytes = 200;
  std::size_t requests = 100;
  std::string filter = R"({"kinds":[1],"limit":500})";
  bool compression = false;
  int hold_secs = 10;
  int kind = 1;
  std::size_t authors = 1;
  std::string tag;        // adds ["t", tag] to every event
  std::string announce;   // host:port listed by announcements (kind 30617)
  std::size_t repos = 0;  // issues (kind 1621) tag one of this many announced repositories
};

void usage() {
  std::cerr
      << "usage: graspd-load publish|req|idle [--url ws://H:P/ | --host H --port P] [--events N] "
         "[--connections C]\n"
         "       [--window W] [--content-bytes B] [--compression] [--kind K] [--authors A] "
         "[--tag T]\n"
         "       [--announce HOST:PORT] [--repos R]\n"
         "       [--requests R] [--filter JSON] [--hold-secs S]\n";
}

bool parse_args(int argc, char** argv, Args& a) {
  if (argc < 2) return false;
  a.mode = argv[1];
  for (int i = 2; i < argc; ++i) {
    std::string k = argv[i];
    auto next = [&]() -> std::string { return i + 1 < argc ? argv[++i] : ""; };
    if (k == "--url") {  // any relay: ws://HOST[:PORT][/PATH] (plain WebSocket, no TLS)
      auto url = graspd::parse_url(next());
      if (!url || url->scheme != "ws") return false;
      a.host = url->host;
      a.port = url->port;
      a.path = url->path_and_query.empty() ? "/" : url->path_and_query;
    } else if (k == "--host")
      a.host = next();
    else if (k == "--port")
      a.port = static_cast<std::uint16_t>(std::stoul(next()));
    else if (k == "--events")
      a.events = std::stoull(next());
    else if (k == "--connections")
      a.connections = std::stoull(next());
    else if (k == "--window")
      a.window = std::stoull(next());
    else if (k == "--content-bytes")
      a.content_bytes = std::stoull(next());
    else if (k == "--requests")
      a.requests = std::stoull(next());
    else if (k == "--filter")
      a.filter = next();
    else if (k == "--compression")
      a.compression = true;
    else if (k == "--hold-secs")
      a.hold_secs = std::stoi(next());
    else if (k == "--kind")
      a.kind = std::stoi(next());
    else if (k == "--authors")
      a.authors = std::max<std::size_t>(1, std::stoull(next()));
    else if (k == "--tag")
      a.tag = next();
    else if (k == "--announce")
      a.announce = next();
    else if (k == "--repos")
      a.repos = std::stoull(next());
    else
      return false;
  }
  return a.mode == "publish" || a.mode == "req" || a.mode == "idle";
}

/// CPU seconds (user + system) this process has used so far: the load tool shares the machine's
/// cores with the relay, so its own cost is printed next to every throughput figure.
double cpu_seconds() {
  rusage usage{};
  ::getrusage(RUSAGE_SELF, &usage);
  auto secs = [](const timeval& t) { return static_cast<double>(t.tv_sec) + t.tv_usec / 1e6; };
  return secs(usage.ru_utime) + secs(usage.ru_stime);
}

void print_latency(const char* what, std::vector<double> ms) {
  if (ms.empty()) return;
  std::sort(ms.begin(), ms.end());
  auto pct = [&](double p) {
    return ms[std::min(ms.size() - 1, static_cast<std::size_t>(p * ms.size()))];
  };
  std::printf("%s latency ms: p50 %.3f  p90 %.3f  p99 %.3f  max %.3f\n", what, pct(0.5), pct(0.9),
              pct(0.99), ms.back());
}

graspd::nostr::SecretKey author_key(std::size_t author) {
  graspd::nostr::SecretKey key{};
  key.fill(0x42);
  std::memcpy(key.data() + 1, &author, sizeof author);
  return key;
}

/// The GRASP tags of event i: an announcement listing --announce, or an issue of a repository.
void add_grasp_tags(const Args& a, std::size_t i, graspd::nostr::Event& ev) {
  if (!a.announce.empty() && ev.kind == 30617) {
    auto d = "load-" + std::to_string(i);
    auto owner =
        graspd::nostr::to_hex(*graspd::nostr::pubkey_from_secret(author_key(i % a.authors)));
    ev.tags.push_back({"d", d});
    ev.tags.push_back({"clone", "http://" + a.announce + "/" + owner + "/" + d + ".git"});
    ev.tags.push_back({"relays", "ws://" + a.announce});
  } else if (a.repos > 0) {
    auto repo = i % a.repos;
    auto owner =
        graspd::nostr::to_hex(*graspd::nostr::pubkey_from_secret(author_key(repo % a.authors)));
    ev.tags.push_back({"a", "30617:" + owner + ":load-" + std::to_string(repo)});
  }
}

/// Signs events on all cores; every event is unique (content carries its index).
std::vector<std::string> presign(const Args& a) {
  std::vector<std::string> frames(a.events);
  auto now = static_cast<std::int64_t>(std::time(nullptr));
  unsigned threads = std::max(1u, std::thread::hardware_concurrency());
  std::vector<std::thread> pool;
  for (unsigned t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      for (std::size_t i = t; i < a.events; i += threads) {
        auto key = author_key(i % a.authors);
        graspd::nostr::Event ev;
        ev.kind = static_cast<std::uint32_t>(a.kind);
        ev.created_at = now - static_cast<std::int64_t>(i % 100000);
        ev.content = "load " + std::to_string(i) + " ";
        if (ev.content.size() < a.content_bytes)
          ev.content.append(a.content_bytes - ev.content.size(), 'x');
        if (!a.tag.empty()) ev.tags.push_back({"t", a.tag});
        add_grasp_tags(a, i, ev);
        frames[i] = "[\"EVENT\"," +
                    graspd::nostr::serialize_event(graspd::nostr::sign_event(ev, key)) + "]";
      }
    });
  }
  for (auto& th : pool) th.join();
  return frames;
}

/// One publishing connection: keeps `window` EVENTs in flight.
struct Publisher {
  std::unique_ptr<WsClient> ws;
  std::vector<const std::string*> frames;
  std::vector<Clock::time_point> sent_at;
  std::unordered_map<std::string_view, std::size_t> index_of;  // id hex (in `frames`) -> position
  std::mutex mutex;
  std::size_t next = 0, acked = 0, refused = 0;
  std::vector<double> latencies_ms;
  std::string first_refusal;
};

int run_publish(const Args& a) {
  std::fprintf(stderr, "signing %zu events...\n", a.events);
  auto frames = presign(a);
  std::vector<std::unique_ptr<Publisher>> pubs;
  std::mutex done_mutex;
  std::condition_variable done_cv;
  std::size_t total_acked = 0;
  for (std::size_t c = 0; c < a.connections; ++c) {
    auto p = std::make_unique<Publisher>();
    for (std::size_t i = c; i < frames.size(); i += a.connections) {
      // ["EVENT",{"id":"<64 hex>": a view into the frame, which outlives the publisher.
      p->index_of[std::string_view(frames[i]).substr(16, 64)] = p->frames.size();
      p->frames.push_back(&frames[i]);
    }
    p->sent_at.resize(p->frames.size());
    pubs.push_back(std::move(p));
  }
  for (auto& p : pubs) {
    WsClient::Options options;
    options.compression = a.compression;
    auto* raw = p.get();
    options.on_message = [raw, &a, &done_mutex, &done_cv, &total_acked](std::string&& text) {
      if (text.rfind("[\"OK\",\"", 0) != 0) return;
      auto now = Clock::now();
      std::lock_guard lock(raw->mutex);
      auto it = raw->index_of.find(std::string_view(text).substr(7, 64));
      if (it == raw->index_of.end()) return;
      raw->latencies_ms.push_back(
          std::chrono::duration<double, std::milli>(now - raw->sent_at[it->second]).count());
      if (text.compare(73, 4, "true") != 0) {
        if (raw->refused++ == 0) raw->first_refusal = text;
      }
      ++raw->acked;
      if (raw->next < raw->frames.size()) {
        raw->sent_at[raw->next] = Clock::now();
        raw->ws->send(*raw->frames[raw->next++]);
      }
      {
        std::lock_guard done(done_mutex);
        ++total_acked;
      }
      if (raw->acked == raw->frames.size()) done_cv.notify_all();
      (void)a;
    };
    auto connected = WsClient::connect(a.host, a.port, a.path, std::move(options));
    if (!connected) {
      std::cerr << "connect failed: " << connected.error().message << "\n";
      return 1;
    }
    p->ws = std::move(*connected);
  }
  auto start = Clock::now();
  auto cpu_start = cpu_seconds();
  for (auto& p : pubs) {
    std::lock_guard lock(p->mutex);
    while (p->next < p->frames.size() && p->next < a.window) {
      p->sent_at[p->next] = Clock::now();
      p->ws->send(*p->frames[p->next++]);
    }
  }
  {
    std::unique_lock lock(done_mutex);
    done_cv.wait_for(lock, std::chrono::minutes(10), [&] { return total_acked >= a.events; });
  }
  auto seconds = std::chrono::duration<double>(Clock::now() - start).count();
  std::vector<double> all;
  std::size_t refused = 0;
  for (auto& p : pubs) {
    std::lock_guard lock(p->mutex);
    all.insert(all.end(), p->latencies_ms.begin(), p->latencies_ms.end());
    refused += p->refused;
    if (!p->first_refusal.empty())
      std::fprintf(stderr, "first refusal: %s\n", p->first_refusal.c_str());
  }
  std::printf(
      "publish: %zu events over %zu connection(s), compression %s: %.0f events/s (%.2f s), %zu OK, "
      "%zu "
      "refused\n",
      a.events, a.connections, a.compression ? "on" : "off",
      static_cast<double>(all.size()) / seconds, seconds, all.size(), refused);
  print_latency("OK", all);
  std::printf("load tool CPU while publishing: %.2f s (%.0f%% of one core)\n",
              cpu_seconds() - cpu_start, 100 * (cpu_seconds() - cpu_start) / seconds);
  for (auto& p : pubs) p->ws->close();
  return all.size() == a.events ? 0 : 1;
}

/// Counts the frames of the REQ in flight on the client's io thread and wakes the caller only at
/// EOSE: a hand-off per frame would measure the load tool's scheduling, not the relay.
struct ReqWaiter {
  std::mutex mutex;
  std::condition_variable cv;
  std::size_t events = 0;
  bool eose = false;

  void on_message(const std::string& text) {
    if (text.rfind("[\"EVENT\"", 0) == 0) {
      std::lock_guard lock(mutex);
      ++events;
    } else if (text.rfind("[\"EOSE\"", 0) == 0) {
      std::lock_guard lock(mutex);
      eose = true;
      cv.notify_one();
    }
  }
  /// Events received before EOSE, or nullopt on timeout.
  std::optional<std::size_t> wait_eose(std::chrono::seconds timeout) {
    std::unique_lock lock(mutex);
    if (!cv.wait_for(lock, timeout, [&] { return eose; })) return std::nullopt;
    auto got = events;
    events = 0;
    eose = false;
    return got;
  }
};

int run_req(const Args& a) {
  ReqWaiter waiter;
  WsClient::Options options;
  options.compression = a.compression;
  options.on_message = [&waiter](std::string&& text) { waiter.on_message(text); };
  auto connected = WsClient::connect(a.host, a.port, a.path, std::move(options));
  if (!connected) {
    std::cerr << "connect failed: " << connected.error().message << "\n";
    return 1;
  }
  auto ws = std::move(*connected);
  std::vector<double> latencies;
  std::size_t events = 0;
  auto start = Clock::now();
  for (std::size_t r = 0; r < a.requests; ++r) {
    auto subid = "r" + std::to_string(r);
    auto t0 = Clock::now();
    ws->send("[\"REQ\",\"" + subid + "\"," + a.filter + "]");
    auto got = waiter.wait_eose(std::chrono::seconds(30));
    if (!got) {
      std::cerr << "timeout waiting for EOSE\n";
      return 1;
    }
    latencies.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
    events += *got;
    ws->send("[\"CLOSE\",\"" + subid + "\"]");
  }
  auto seconds = std::chrono::duration<double>(Clock::now() - start).count();
  std::printf("req: %zu requests, %.1f events per REQ, %.0f REQ/s, filter %s\n", a.requests,
              static_cast<double>(events) / static_cast<double>(a.requests),
              static_cast<double>(a.requests) / seconds, a.filter.c_str());
  print_latency("REQ->EOSE", latencies);
  return 0;
}

/// Idle connections with raw sockets (no thread per connection).
int run_idle(const Args& a) {
  std::vector<int> fds;
  const std::string request =
      "GET / HTTP/1.1\r\nHost: " + a.host +
      "\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
      "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n";
  auto start = Clock::now();
  for (std::size_t i = 0; i < a.connections; ++i) {
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) {
      std::perror("socket");
      break;
    }
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(a.port);
    ::inet_pton(AF_INET, a.host.c_str(), &addr.sin_addr);
    if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
        ::send(fd, request.data(), request.size(), MSG_NOSIGNAL) !=
            static_cast<ssize_t>(request.size())) {
      std::perror("connect");
      ::close(fd);
      break;
    }
    char buf[512];
    auto n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0 ||
        std::string(buf, static_cast<std::size_t>(n)).find(" 101 ") == std::string::npos) {
      std::cerr << "handshake refused at connection " << i << "\n";
      ::close(fd);
      break;
    }
    fds.push_back(fd);
  }
  std::printf("idle: %zu connections open in %.2f s; holding %d s\n", fds.size(),
              std::chrono::duration<double>(Clock::now() - start).count(), a.hold_secs);
  std::fflush(stdout);
  std::this_thread::sleep_for(std::chrono::seconds(a.hold_secs));
  for (int fd : fds) ::close(fd);
  return fds.size() == a.connections ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  Args args;
  if (!parse_args(argc, argv, args)) {
    usage();
    return 2;
  }
  if (args.mode == "publish") return run_publish(args);
  if (args.mode == "req") return run_req(args);
  return run_idle(args);
}

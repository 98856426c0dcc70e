// git hosting's internals shared by its translation units: the metrics, the state shared by every
// request (GitHttp::Shared), and Exchange, one HTTP request's life with its git child
// (git_exchange.cpp: answers, processes and streaming; git_exchange_rpc.cpp: the endpoints and
// receive-pack's authorisation). Not for use outside runtime/git_*.
#pragma once

#include <utility>  // before Asio, see docs/toolchain.md §1

#include "runtime/git/git_http.hpp"

#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <array>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <mutex>
#include <optional>
#include <set>

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/registry.h>

#include "messages/client_address.hpp"
#include "messages/nostr/nip19.hpp"
#include "runtime/git/git_process.hpp"
#include "runtime/git/git_process_slots.hpp"
#include "runtime/net/connection_limiter.hpp"
#include "runtime/net/http_routes.hpp"
#include "runtime/ops/log.hpp"

namespace graspd::runtime::git {

namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;
namespace fs = std::filesystem;
using ::graspd::git::ParseStatus;
using ::graspd::git::PushDecision;

inline constexpr std::size_t io_chunk = 64 * 1024;
/// A push's command list larger than this is refused (a few thousand refs).
inline constexpr std::size_t max_command_list = 1024 * 1024;
/// Refs listed by for-each-ref at most (bytes of output).
inline constexpr std::size_t max_ref_listing = 16 * 1024 * 1024;
inline constexpr std::size_t max_stderr = 2048;
/// An upload-pack request body is read up to this many bytes before a git process is taken for it
/// (a negotiation usually fits): a client that sends its request slowly holds only its connection.
inline constexpr std::size_t max_read_ahead = io_chunk;

class Exchange;

/// The Prometheus side of GitHttpCounters (fixed labels only).
struct GitMetrics {
  explicit GitMetrics(prometheus::Registry& registry)
      : requests(&prometheus::BuildCounter()
                      .Name("graspd_git_requests_total")
                      .Help("Git HTTP requests (every answer under /<npub>/)")
                      .Register(registry)
                      .Add({})),
        processes(
            prometheus::BuildGauge()
                .Name("graspd_git_processes")
                .Help(
                    "Git processes running under the process cap (clients' requests and repository "
                    "maintenance)")
                .Register(registry)
                .Add({})),
        refusals(prometheus::BuildCounter()
                     .Name("graspd_git_refused_total")
                     .Help("Git requests refused for a limit: busy (process cap or a push in "
                           "progress, 503), connections (connection cap overall or per address, "
                           "503), slow (body below the minimum rate, closed), too_large (413), "
                           "timeout (killed), push_rate (pushes per minute per address, ng), "
                           "nostr_refs (refs/nostr count or bytes of a repository, ng)")
                     .Register(registry)),
        pushes(prometheus::BuildCounter()
                   .Name("graspd_git_pushes_total")
                   .Help("Pushes by result: accepted (applied) or refused (authorisation or an "
                         "invalid command list)")
                   .Register(registry)),
        busy(&refusals.Add({{"reason", "busy"}})),
        connections(&refusals.Add({{"reason", "connections"}})),
        slow(&refusals.Add({{"reason", "slow"}})),
        too_large(&refusals.Add({{"reason", "too_large"}})),
        timeouts(&refusals.Add({{"reason", "timeout"}})),
        push_rate(&refusals.Add({{"reason", "push_rate"}})),
        nostr_refs(&refusals.Add({{"reason", "nostr_refs"}})),
        accepted(&pushes.Add({{"result", "accepted"}})),
        refused(&pushes.Add({{"result", "refused"}})) {}

  prometheus::Counter* requests;
  prometheus::Gauge& processes;
  prometheus::Family<prometheus::Counter>& refusals;
  prometheus::Family<prometheus::Counter>& pushes;
  prometheus::Counter* busy;
  prometheus::Counter* connections;
  prometheus::Counter* slow;
  prometheus::Counter* too_large;
  prometheus::Counter* timeouts;
  prometheus::Counter* push_rate;
  prometheus::Counter* nostr_refs;
  prometheus::Counter* accepted;
  prometheus::Counter* refused;
};

/// Pushes per minute per peer address: a token bucket each, `per_minute` deep, refilled at
/// `per_minute` a minute. Buckets refilled to the top are forgotten when many are kept, so the
/// memory is bounded by the addresses pushing within a minute.
class PushRate {
 public:
  explicit PushRate(std::size_t per_minute) : per_minute_(per_minute) {}
  /// True when `ip` may push now (a token taken).
  bool take(const std::string& ip, std::chrono::steady_clock::time_point now);

 private:
  struct Bucket {
    double tokens = 0;
    std::chrono::steady_clock::time_point at;
  };
  double refilled(const Bucket& bucket, std::chrono::steady_clock::time_point now) const;
  std::size_t per_minute_;
  std::map<std::string, Bucket> buckets_;
};

/// Bytes each peer address may push to GRASP-06 submission areas: a budget of `per_hour` bytes,
/// refilled at that rate. A push may start while some budget is left and is charged what it sent
/// once applied, so one address stores at most its budget plus one push an hour. Budgets full again
/// are forgotten when many are kept.
class AreaBytes {
 public:
  explicit AreaBytes(std::uint64_t per_hour) : per_hour_(per_hour) {}
  /// True when `ip` has budget left (always, with no budget configured).
  bool available(const std::string& ip, std::chrono::steady_clock::time_point now);
  void charge(const std::string& ip, std::uint64_t bytes,
              std::chrono::steady_clock::time_point now);

 private:
  struct Budget {
    double bytes = 0;
    std::chrono::steady_clock::time_point at;
  };
  Budget& budget(const std::string& ip, std::chrono::steady_clock::time_point now);
  std::uint64_t per_hour_;
  std::map<std::string, Budget> budgets_;
};

struct GitHttp::Shared {
  Repositories repositories;
  GitHttpOptions options;
  GitHttpHooks hooks;
  GitHttpCounters counters;
  std::unique_ptr<GitMetrics> metrics;
  std::string git;
  std::mutex mutex;
  std::shared_ptr<RepositoryLocks> locks;          // a push's, shared with the state applier
  std::vector<std::weak_ptr<Exchange>> exchanges;  // guarded by mutex
  bool stopping = false;                           // guarded by mutex
  std::shared_ptr<ProcessSlots> slots;  // the process cap, shared with repository maintenance
  ConnectionLimiter connections;
  PushRate push_rate;    // guarded by mutex
  AreaBytes area_bytes;  // guarded by mutex

  Shared(Repositories r, GitHttpOptions o, GitHttpHooks h, std::shared_ptr<RepositoryLocks> l,
         std::shared_ptr<ProcessSlots> s)
      : repositories(std::move(r)),
        options(std::move(o)),
        hooks(std::move(h)),
        locks(std::move(l)),
        slots(s ? std::move(s) : make_process_slots(options)),
        connections(options.max_connections, options.max_connections_per_ip),
        push_rate(options.pushes_per_minute_per_ip),
        area_bytes(options.pr_bytes_per_hour_per_ip) {}

  /// A process slot for `ip` now (taken), or `on_slot` in line for one (queued), or full (503).
  /// The share is per client address, an IPv6 client's by its /64.
  ProcessSlots::Grant take_slot(const std::string& ip, std::function<void()> on_slot) {
    return slots->take_or_queue(client_address_group(ip), std::move(on_slot));
  }
  /// Frees `ip`'s slot or passes it to the oldest waiter allowed one.
  void give_slot(const std::string& ip) { slots->give(client_address_group(ip)); }
  /// Keeps counters.processes_running and its gauge equal to the slots taken (ProcessSlots calls
  /// this under its lock, so the last number written is the current one).
  void show_running(std::size_t running) {
    counters.processes_running = running;
    if (metrics) metrics->processes.Set(static_cast<double>(running));
  }
  /// Counts one event in the counter and in its Prometheus twin.
  void bump(std::atomic<std::uint64_t>& counter, prometheus::Counter* GitMetrics::*twin) {
    ++counter;
    if (metrics) (metrics.get()->*twin)->Increment();
  }
};

class Exchange : public std::enable_shared_from_this<Exchange> {
 public:
  Exchange(std::shared_ptr<GitHttp::Shared> shared, beast::tcp_stream&& stream,
           std::unique_ptr<HeaderParser> header, beast::flat_buffer&& buffer,
           std::string remote_ip);

  ~Exchange();

  void start();

  /// Kills the git process and closes the connection (server shutdown). Any thread.
  void cancel();

  GitTarget target;

 private:
  // ---------------------------------------------------------------- simple answers

  template <class Body>
  void add_common_headers(http::response<Body>& response) {
    response.set(http::field::server, "graspd");
    for (const auto& [name, value] : cors_headers()) response.set(name, value);
    response.keep_alive(false);
  }

  void respond(unsigned status, std::string content_type, std::string body,
               std::vector<std::pair<std::string, std::string>> headers = {});

  void respond_text(unsigned status, std::string body,
                    std::vector<std::pair<std::string, std::string>> headers = {});

  void respond_busy();

  void respond_page(unsigned status);

  void method_not_allowed();

  /// After an answer: stop sending, discard what the client may still send (bounded), close; a
  /// close with unread input would reset the connection and could destroy the answer.
  void linger();

  void discard_more();

  void close();

  void abort();

  // ---------------------------------------------------------------- processes

  std::vector<std::string> git_argv(std::vector<std::string> command) const;

  std::vector<std::string> git_environment(bool with_protocol) const;

  /// Spawns git; false (logged) when it cannot be started.
  bool spawn(std::vector<std::string> command, bool with_protocol);

  void read_stderr();

  /// Calls `done(exit_code)` once the current child has exited (pidfd readable, then reaped).
  void wait_exit(std::function<void(int)> done);

  void arm_deadline();

  /// Runs `next` once a git process slot is this request's: at once, or after waiting in line
  /// (at most NGIT_GIT_QUEUE_SECS); 503 when the line is full or the wait is over.
  void with_slot(std::function<void()> next);

  void on_slot_granted(const std::function<void()>& next);

  /// The answer is complete (its last bytes may still be in flight): the slot is free again. A
  /// process still running at this point is killed first, so the cap stays true.
  void release_slot();

  // ---------------------------------------------------------------- request bodies

  enum class BodyError { none, too_large, bad, gone, slow };

  using BodyHandler = std::function<void(BodyError, std::string_view data)>;

  static BodyError body_error_of(const beast::error_code& error);

  void send_continue_once(std::function<void()> next);

  /// Next raw body bytes into raw_; `n` = 0 and done at the end. Each read must progress within
  /// idle_timeout and the body keep to min_body_rate (BodyError::slow).
  void read_raw(std::function<void(BodyError, std::size_t n, bool done)> handler);

  /// How much longer the client may take to send its body: idle_timeout, plus one second per
  /// min_body_rate bytes received, minus the time already spent waiting for it (time git spent
  /// taking the bytes is not the client's).
  std::chrono::steady_clock::duration body_allowance() const;

  /// Next decoded body bytes; an empty view at the end. Bounded by max_body_bytes after decoding.
  void next_decoded(BodyHandler handler);

  /// Sets up decoding from Content-Encoding; false (answered) when it is not supported.
  bool prepare_decoding();

  void answer_body_error(BodyError error);

  // ---------------------------------------------------------------- streaming to git

  /// Streams the rest of the request body into git. The answer is completed only once the body
  /// has been read to its end (or refused), so a limit is answered even when git exits early.
  void pump_body();

  void write_stdin(std::string_view data, std::function<void()> next);

  // ---------------------------------------------------------------- streaming from git

  void pump_output();

  void send_headers(std::function<void()> next);

  void write_chunk(std::string_view data, std::function<void()> next);

  void send_chunk(std::string_view data, std::function<void()> next);

  void finish_response();

  void on_output_end();

  void on_exit(int code);

  void complete(int code);

  // ---------------------------------------------------------------- endpoints

  void start_info_refs();

  void start_rpc();

  /// Reads an upload-pack body into head_ until its end or max_read_ahead bytes, then `next`: the
  /// git process is taken only for a request that has arrived.
  void read_ahead(std::function<void()> next);

  /// Pushes to one repository's branches and tags take turns: a push waits (up to ~5 s) for the
  /// one before it, or for the state applier, rather than failing; after that it gets 503.
  void wait_for_push_lock(int attempt, std::function<void()> next);

  // ---------------------------------------------------------------- receive-pack

  bool lock_push();

  void unlock_push();

  void read_commands();

  void on_commands(::graspd::git::CommandList list);

  /// A command list that cannot be applied: each ref it names is answered `ng` with `reason` in
  /// git's report-status (a 400 when it names none: not a git client).
  void refuse_invalid(const std::string& reason);
  /// Refuses every ref of the push with `reason` (report-status `ng`), counted under `twin`.
  void refuse_all(const std::string& reason, std::atomic<std::uint64_t>& counter,
                  prometheus::Counter* GitMetrics::*twin);
  /// The refusal reason when applying the push to `current` would pass the repository's refs/nostr
  /// count or bytes (and the push adds to them); nullopt when it stays within them.
  std::optional<std::string> nostr_refs_over(const ::graspd::git::RefMap& current) const;

  /// Only pushes that move branches or tags take the lock: anyone may push refs/nostr refs, and
  /// such a push must not hold up the maintainers' (git's own old-id check keeps them safe). Every
  /// push to a submission area takes it: its check (the ref is not there yet) and its write are
  /// one step, and the area is never removed while a push to it runs.
  bool needs_push_lock() const;

  /// The directory git serves for this request: the repository, or, for a submission area that
  /// does not exist (yet), the empty repository.
  std::string repository_path() const;

  /// Largest body this request may send: NGIT_GIT_MAX_BODY_BYTES, and for a submission area no more
  /// than an address's hourly budget for them either.
  std::uint64_t body_limit() const;

  void list_refs();

  void read_refs(const std::string& path);

  void on_refs(int code);

  void refuse_push();

  void drain_then(std::function<void()> next);

  void report_push();

  std::shared_ptr<GitHttp::Shared> shared_;
  beast::tcp_stream stream_;
  beast::flat_buffer buffer_;
  std::string remote_ip_;
  net::steady_timer deadline_;
  std::optional<http::request_parser<http::buffer_body>> parser_;
  http::verb method_ = http::verb::unknown;
  unsigned version_ = 11;
  std::string target_;
  std::string content_type_;
  std::string content_encoding_;
  std::string git_protocol_;
  std::string accept_;
  bool expect_continue_ = false;
  boost::optional<std::uint64_t> content_length_;
  bool slot_ = false;
  bool connection_counted_ = false;
  std::chrono::steady_clock::duration body_waited_{};
  std::uint64_t body_received_ = 0;
  bool waiting_for_slot_ = false;
  std::shared_ptr<net::steady_timer> slot_timer_;
  std::string push_lock_;
  std::unique_ptr<Child> child_;
  std::array<char, io_chunk> raw_{};
  std::array<char, io_chunk> out_{};
  std::vector<char> decoded_ = std::vector<char>(io_chunk);
  struct ZDeleter {
    void operator()(z_stream* z) const {
      ::inflateEnd(z);
      delete z;
    }
  };
  std::unique_ptr<z_stream, ZDeleter> inflater_;
  bool inflate_ended_ = false;
  std::uint64_t decoded_total_ = 0;
  std::string result_type_;
  std::string prefix_;
  bool headers_sent_ = false;
  bool answered_ = false;
  bool pumping_body_ = false;
  bool body_done_ = false;
  bool stdin_broken_ = false;
  std::optional<int> exit_code_;  ///< an answer (or the close) is under way: nothing else is sent
  std::unique_ptr<http::response<http::empty_body>> response_;
  std::unique_ptr<http::response_serializer<http::empty_body>> serializer_;
  std::string head_;
  std::string refs_text_;
  ::graspd::git::CommandList commands_;
  PushDecision decision_;
  std::optional<::graspd::git::StateRefs> state_;
  std::size_t discarded_ = 0;
};

}  // namespace graspd::runtime::git

#include <utility>  // before Asio, see docs/toolchain.md §1

#include "runtime/git/git_exchange.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/strand.hpp>
#include <future>
#include <thread>

namespace graspd::runtime::git {

std::string find_git_binary(const std::string& configured) {
  const std::string name = configured.empty() ? "git" : configured;
  if (name.find('/') != std::string::npos) return ::access(name.c_str(), X_OK) == 0 ? name : "";
  const char* path = std::getenv("PATH");
  std::string_view dirs = path ? path : "/usr/bin:/bin";
  while (true) {
    auto colon = dirs.find(':');
    auto dir = std::string(dirs.substr(0, colon));
    if (!dir.empty()) {
      auto candidate = dir + "/" + name;
      if (::access(candidate.c_str(), X_OK) == 0) return candidate;
    }
    if (colon == std::string_view::npos) break;
    dirs.remove_prefix(colon + 1);
  }
  return "";
}

namespace {

/// `stream`'s connection on `executor`: its descriptor leaves the reactor of the thread that
/// accepted it for the one `executor` runs on. A connection that failed meanwhile comes back
/// closed (its first operation then fails, and the exchange ends).
beast::tcp_stream moved_to(const net::any_io_executor& executor, beast::tcp_stream&& stream) {
  beast::error_code error;
  auto& socket = stream.socket();
  auto protocol = socket.local_endpoint(error).protocol();
  beast::tcp_stream out(executor);
  if (error) return out;
  auto fd = socket.release(error);
  if (error) return out;
  out.socket().assign(protocol, fd, error);
  if (error) ::close(fd);
  return out;
}

}  // namespace

// ------------------------------------------------------------------------------------------------

/// Git hosting's own network thread. A clone of a 50 MB repository copies 50 MB from git's pipe
/// to the socket; twenty at once kept the relay's network threads busy enough that WebSocket
/// answers waited seconds behind that work. On a thread of its own, the copying competes for CPU
/// like any process, and the relay's threads stay free to answer.
struct GitHttp::Network {
  net::io_context io{1};
  std::optional<net::executor_work_guard<net::io_context::executor_type>> work{
      net::make_work_guard(io)};
  std::thread thread{[this] { io.run(); }};

  ~Network() { shut_down(); }

  /// Lets the connections stop() aborted close for up to 2 s, then cuts the rest. Idempotent.
  void shut_down() {
    work.reset();
    if (!thread.joinable()) return;
    auto joined = std::async(std::launch::async, [this] { thread.join(); });
    if (joined.wait_for(std::chrono::seconds{2}) != std::future_status::ready) {
      log::warn(log::components::git, "git connections still busy after 2 s; cutting them");
      io.stop();
    }
    joined.wait();
  }
};

// ------------------------------------------------------------------------------------------------

GitHttp::GitHttp(Repositories repositories, GitHttpOptions options, GitHttpHooks hooks,
                 std::shared_ptr<RepositoryLocks> locks, prometheus::Registry* registry,
                 std::shared_ptr<ProcessSlots> slots)
    : shared_(std::make_shared<Shared>(
          std::move(repositories), std::move(options), std::move(hooks),
          locks ? std::move(locks) : std::make_shared<RepositoryLocks>(), std::move(slots))),
      network_(std::make_shared<Network>()) {
  if (registry) shared_->metrics = std::make_unique<GitMetrics>(*registry);
  shared_->slots->observe([shared = std::weak_ptr<Shared>(shared_)](std::size_t running) {
    if (auto alive = shared.lock()) alive->show_running(running);
  });
  shared_->git = find_git_binary(shared_->options.git_binary);
  if (shared_->git.empty())
    log::warn(log::components::git, "git was not found in PATH: git requests are answered 503");
}

GitHttp::~GitHttp() {
  stop();
  shared_->slots->observe({});
}

std::shared_ptr<ProcessSlots> make_process_slots(const GitHttpOptions& options) {
  return std::make_shared<ProcessSlots>(
      options.max_processes, options.queue_wait.count() > 0 ? max_queued_git_requests : 0,
      options.max_processes_per_ip);
}

HttpHandoffPredicate GitHttp::predicate() const {
  return [pr_submissions = shared_->options.pr_submissions](std::string_view target) {
    return is_git_path(target, pr_submissions);
  };
}

HttpHandoffHandler GitHttp::handler() {
  return [shared = shared_, network = network_](
             beast::tcp_stream&& stream, std::unique_ptr<HeaderParser> parser,
             beast::flat_buffer&& buffer, std::string remote_ip) {
    std::lock_guard lock{shared->mutex};
    if (shared->stopping) return;
    auto strand = net::make_strand(network->io);
    auto exchange =
        std::make_shared<Exchange>(shared, moved_to(strand, std::move(stream)), std::move(parser),
                                   std::move(buffer), std::move(remote_ip));
    // Forget finished exchanges while adding: the list stays as long as the open ones.
    auto& list = shared->exchanges;
    list.erase(std::remove_if(list.begin(), list.end(), [](auto& w) { return w.expired(); }),
               list.end());
    list.push_back(exchange);
    // Posted under the lock: a stop() that follows posts its abort after the start.
    net::post(strand, [exchange] { exchange->start(); });
  };
}

void GitHttp::stop() {
  std::vector<std::weak_ptr<Exchange>> open;
  {
    std::lock_guard lock{shared_->mutex};
    if (shared_->stopping) return;
    shared_->stopping = true;
    open.swap(shared_->exchanges);
  }
  for (auto& weak : open)
    if (auto exchange = weak.lock()) exchange->cancel();
  shared_->slots->clear_waiters();  // they hold their exchanges
  network_->shut_down();
}

const GitHttpCounters& GitHttp::counters() const {
  return shared_->counters;
}

const Repositories& GitHttp::repositories() const {
  return shared_->repositories;
}

const std::string& GitHttp::git_binary() const {
  return shared_->git;
}

}  // namespace graspd::runtime::git

// Git data fetches (docs/spec/git-hosting.md §8): object ids fetched into a repository here from
// other clone URLs, as many at once as runtime/git/engine/git_fetch_schedule.hpp allows
// (daemon-wide and per-host caps, per-host rate, retry backoff, skipped hosts). Each attempt
// resolves the URL's host asynchronously, checks the address (public unless allowed otherwise) and
// pins it (runtime/git/git_remote.*, the rule shared with the ref probe), then runs `git fetch` by
// id as a non-blocking child process (runtime/git/git_process.*); afterwards `cat-file` says what
// is still missing. Everything runs on the strand given at construction; call it only from there.
// Used by the state applier (runtime/git/git_state_sync.*). Include only in runtime/git_* (Asio).
#pragma once
#include <utility>  // before Asio, see docs/toolchain.md §1

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "messages/relay_url.hpp"
#include "runtime/git/engine/git_fetch_schedule.hpp"
#include "runtime/git/git_process.hpp"
#include "runtime/git/git_remote.hpp"
#include "runtime/git/git_repository.hpp"
#include "runtime/git/git_runner.hpp"

namespace prometheus {
class Registry;
template <typename T>
class Family;
class Counter;
class Gauge;
}  // namespace prometheus

namespace graspd::runtime::git {

struct GitFetcherOptions {
  /// NGIT_DOMAIN: clone URLs naming it are never fetched from.
  HostPort service;
  /// Fetch from loopback/private addresses too (tests; NGIT_SYNC_ALLOW_PRIVATE_ADDRESSES).
  bool allow_private_addresses = false;
  /// Wall-clock limit of one fetch (NGIT_GIT_FETCH_TIMEOUT_SECS).
  std::chrono::seconds fetch_timeout{300};
  /// Largest file one fetch may write (the pack), RLIMIT_FSIZE.
  std::uint64_t max_fetch_bytes = 1ull << 30;
  /// Concurrency, rate, backoff and host skipping (NGIT_GIT_FETCH_*).
  FetchLimits limits;
  /// A request is retried until this long after it was made (NGIT_PURGATORY_HOLD_SECS: the held
  /// event it serves is gone by then).
  std::chrono::seconds give_up_after{1800};
  /// trusted_host_key (runtime/git/git_remote.hpp) of the cluster peers (NGIT_SYNC_PEERS):
  /// operator input, fetched from whatever address they resolve to.
  std::set<std::string> trusted_hosts;
};

enum class FetchResult {
  complete,   ///< every wanted id is in the repository
  abandoned,  ///< no source had them before the request expired
  dropped,    ///< not queued: too many requests, or its author's or repository's share is full
};

/// What a caller wants fetched. A second request with the same key replaces the first (its `done`
/// is then never called).
struct FetchJob {
  std::string key;
  std::string repository;  ///< absolute path of the bare repository
  std::vector<std::string> ids;
  std::vector<std::string> urls;  ///< candidate clone URLs in order; unfetchable ones are left out
  std::chrono::seconds delay{0};  ///< before the first attempt
  /// Who it is for (hex key of the state's or pull request's author): the per-author shares.
  std::string author;
  /// The repository's own state (not a pull request's commit): not in its repository share.
  bool own_state = false;
  /// Asked before each attempt; false drops the request without calling `done`. Unset = always.
  std::function<bool()> still_wanted;
  /// Asked before each attempt after still_wanted: a time to wait again first (a push to the
  /// repository is under way and may bring the objects), or nullopt to go on. Unset = go on.
  std::function<std::optional<std::chrono::seconds>()> wait_more;
  /// Runs on the strand once the request ends.
  std::function<void(FetchResult)> done;
};

class GitFetcher : public std::enable_shared_from_this<GitFetcher> {
 public:
  /// `registry` may be null (tests).
  GitFetcher(GitRunner runner, GitFetcherOptions options, prometheus::Registry* registry);

  void request(FetchJob job);
  /// Drops the request with `key`, if any, without calling its `done` (its objects came another
  /// way).
  void cancel(const std::string& key);
  /// Drops every request; running fetches are killed when their strand goes.
  void stop();

 private:
  struct Pending {
    std::string repository;
    std::function<bool()> still_wanted;
    std::function<std::optional<std::chrono::seconds>()> wait_more;
    std::function<void(FetchResult)> done;
  };

  void pump();
  void start(FetchAttempt attempt);
  void fetch(FetchAttempt attempt, const PinnedRemote& remote);
  void fetched(FetchAttempt attempt, Collected result);
  void finish(const FetchAttempt& attempt, FetchOutcome outcome,
              const std::vector<std::string>& ids = {});
  void end(const std::string& key, FetchResult result);
  void arm_timer(FetchTime now);
  void count(std::string_view outcome, std::uint64_t n = 1);
  void refuse_url(const std::string& url, CloneUrlVerdict verdict);

  GitRunner runner_;
  GitFetcherOptions options_;
  FetchSchedule schedule_;
  std::map<std::string, Pending> pending_;
  boost::asio::ip::tcp::resolver resolver_;
  boost::asio::steady_timer timer_;
  std::optional<FetchTime> timer_at_;
  bool stopping_ = false;
  prometheus::Family<prometheus::Counter>* outcomes_ = nullptr;
  prometheus::Family<prometheus::Counter>* refused_urls_ = nullptr;
  std::optional<std::chrono::steady_clock::time_point> last_refusal_log_;
  prometheus::Gauge* requests_gauge_ = nullptr;
  prometheus::Gauge* running_gauge_ = nullptr;
  prometheus::Gauge* skipped_gauge_ = nullptr;
};

}  // namespace graspd::runtime::git

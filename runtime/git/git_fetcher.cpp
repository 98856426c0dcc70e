#include <utility>  // before Asio, see docs/toolchain.md §1

#include "runtime/git/git_fetcher.hpp"

#include <boost/asio/post.hpp>
#include <set>

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/registry.h>

#include "runtime/ops/log.hpp"

namespace graspd::runtime::git {

namespace net = boost::asio;

GitFetcher::GitFetcher(GitRunner runner, GitFetcherOptions options, prometheus::Registry* registry)
    : runner_(std::move(runner)),
      options_(std::move(options)),
      schedule_(options_.limits),
      resolver_(runner_.executor),
      timer_(runner_.executor) {
  if (!registry) return;
  outcomes_ = &prometheus::BuildCounter()
                   .Name("graspd_git_fetches_total")
                   .Help(
                       "Git data fetches from other clone URLs. Attempts by outcome: complete, "
                       "incomplete (objects still missing), not_our_ref (the source lacks an id), "
                       "failed, unreachable (DNS, connect or TLS: host skipped); requests: "
                       "backoff (every source failed, retry later), abandoned (expired), "
                       "dropped (queue full), author_share and repository_share (refused: the "
                       "author or the repository holds its share of requests), deferred (a push "
                       "to the repository was under way)")
                   .Register(*registry);
  for (auto outcome : {"complete", "incomplete", "not_our_ref", "failed", "unreachable", "backoff",
                       "abandoned", "dropped", "author_share", "repository_share", "deferred"})
    outcomes_->Add({{"outcome", outcome}});
  refused_urls_ = &prometheus::BuildCounter()
                       .Name("graspd_git_clone_urls_refused_total")
                       .Help(
                           "Clone URLs not fetched from because they break the plain-URL rule, "
                           "by reason: malformed, scheme, user_info, host (IDN, escapes, odd "
                           "numeric forms), query, fragment, path")
                       .Register(*registry);
  for (auto verdict : {CloneUrlVerdict::malformed, CloneUrlVerdict::scheme,
                       CloneUrlVerdict::user_info, CloneUrlVerdict::host, CloneUrlVerdict::query,
                       CloneUrlVerdict::fragment, CloneUrlVerdict::path})
    refused_urls_->Add({{"reason", std::string(verdict_name(verdict))}});
  auto gauge = [&](const char* name, const char* help) {
    return &prometheus::BuildGauge().Name(name).Help(help).Register(*registry).Add({});
  };
  requests_gauge_ =
      gauge("graspd_git_fetch_requests", "Git data fetch requests queued, waiting or running");
  running_gauge_ = gauge("graspd_git_fetches_running", "Git data fetches running now");
  skipped_gauge_ = gauge("graspd_git_fetch_hosts_skipped",
                         "Hosts skipped by git data fetches after a DNS, connect or TLS failure");
}

void GitFetcher::request(FetchJob job) {
  if (stopping_) return;
  std::vector<FetchSource> sources;
  std::set<std::string> seen;
  for (const auto& url : job.urls) {
    auto verdict = judge_clone_url(url, options_.service);
    // This service's own URL is not a bad URL: it is simply not a source.
    if (verdict != CloneUrlVerdict::fetchable && verdict != CloneUrlVerdict::this_service)
      refuse_url(url, verdict);
    if (auto source = fetch_source(url, options_.service); source && seen.insert(url).second)
      sources.push_back(std::move(*source));
  }
  auto done = std::move(job.done);
  auto finish_now = [&](FetchResult result, std::string_view counted) {
    count(counted);
    if (done) net::post(runner_.executor, [done = std::move(done), result] { done(result); });
  };
  if (sources.empty()) return finish_now(FetchResult::abandoned, "abandoned");
  auto now = std::chrono::steady_clock::now();
  FetchRequest request{job.key,
                       std::move(sources),
                       std::move(job.ids),
                       now + job.delay,
                       now + options_.give_up_after,
                       job.author,
                       job.repository,
                       job.own_state};
  switch (schedule_.add(std::move(request))) {
    case FetchSchedule::Added::dropped:
      return finish_now(FetchResult::dropped, "dropped");
    case FetchSchedule::Added::author_share:
      return finish_now(FetchResult::dropped, "author_share");
    case FetchSchedule::Added::repository_share:
      return finish_now(FetchResult::dropped, "repository_share");
    case FetchSchedule::Added::queued:
    case FetchSchedule::Added::replaced:
      break;
  }
  pending_[job.key] = {std::move(job.repository), std::move(job.still_wanted),
                       std::move(job.wait_more), std::move(done)};
  pump();
}

void GitFetcher::cancel(const std::string& key) {
  if (!pending_.erase(key)) return;
  schedule_.remove(key);
  pump();
}

void GitFetcher::stop() {
  stopping_ = true;
  pending_.clear();
  resolver_.cancel();
  timer_.cancel();
}

void GitFetcher::pump() {
  if (stopping_) return;
  auto now = std::chrono::steady_clock::now();
  while (auto attempt = schedule_.next(now)) start(std::move(*attempt));
  for (const auto& key : schedule_.take_abandoned()) end(key, FetchResult::abandoned);
  count("backoff", schedule_.take_backoffs());
  if (requests_gauge_) {
    requests_gauge_->Set(static_cast<double>(schedule_.requests()));
    running_gauge_->Set(static_cast<double>(schedule_.running()));
    skipped_gauge_->Set(static_cast<double>(schedule_.skipped_hosts(now)));
  }
  arm_timer(now);
}

void GitFetcher::arm_timer(FetchTime now) {
  auto at = schedule_.wakeup(now);
  if (!at || at == timer_at_) return;
  timer_at_ = at;
  timer_.expires_at(*at);
  timer_.async_wait([self = shared_from_this()](const boost::system::error_code& error) {
    if (error) return;  // re-armed or stopped
    self->timer_at_.reset();
    self->pump();
  });
}

/// Checks the request is still wanted, then resolves the host; the first acceptable address is
/// pinned for the fetch (runtime/git/git_remote.hpp: no second resolution between check and
/// connect).
void GitFetcher::start(FetchAttempt attempt) {
  auto it = pending_.find(attempt.key);
  if (it == pending_.end() || (it->second.still_wanted && !it->second.still_wanted())) {
    schedule_.finish(attempt, FetchOutcome::cancelled, std::chrono::steady_clock::now());
    pending_.erase(attempt.key);
    return;
  }
  if (it->second.wait_more) {
    if (auto wait = it->second.wait_more()) {
      count("deferred");
      return schedule_.defer(attempt, std::chrono::steady_clock::now() + *wait);
    }
  }
  auto url = *parse_url(attempt.url);  // fetch_source checked it
  bool any_address =
      any_address_allowed(url, options_.allow_private_addresses, options_.trusted_hosts);
  resolve_remote(resolver_, url, any_address,
                 [self = shared_from_this(), attempt = std::move(attempt)](
                     Result<PinnedRemote, RemoteUnresolved> pinned) mutable {
                   if (self->stopping_) return;
                   if (pinned) return self->fetch(std::move(attempt), *pinned);
                   log::info(log::components::git, "fetch from ", attempt.url, ": ",
                             unresolved_name(pinned.error()));
                   self->finish(attempt, FetchOutcome::unreachable);
                   self->pump();
                 });
}

void GitFetcher::fetch(FetchAttempt attempt, const PinnedRemote& remote) {
  auto it = pending_.find(attempt.key);
  if (it == pending_.end()) {
    finish(attempt, FetchOutcome::cancelled);
    return pump();
  }
  auto args = remote_options(remote);
  args.insert(args.end(),
              {"-c", "fetch.fsckObjects=true", "-c",
               "core.hooksPath=" + runner_.repositories.hooks_dir().string(), "fetch", "--quiet",
               "--no-tags", "--no-write-fetch-head", "--no-auto-gc", "--", attempt.url});
  args.insert(args.end(), attempt.ids.begin(), attempt.ids.end());
  runner_.run(runner_.argv(it->second.repository, std::move(args)), "", options_.fetch_timeout,
              options_.max_fetch_bytes,
              [self = shared_from_this(), attempt = std::move(attempt)](Collected result) mutable {
                if (self->stopping_) return;
                self->fetched(std::move(attempt), std::move(result));
              });
}

/// After a fetch: what is still missing decides the outcome (every wanted id, not only the ones
/// asked of this source); a failure is classified from git's stderr.
void GitFetcher::fetched(FetchAttempt attempt, Collected result) {
  auto it = pending_.find(attempt.key);
  if (result.exit_code == 0 && it != pending_.end()) {
    const auto* request = schedule_.find(attempt.key);
    auto wanted = request ? request->ids : attempt.ids;
    runner_.missing(it->second.repository, wanted,
                    [self = shared_from_this(), attempt = std::move(attempt)](
                        std::optional<std::vector<std::string>> missing) {
                      if (self->stopping_) return;
                      if (!missing)
                        self->finish(attempt, FetchOutcome::failed);
                      else if (missing->empty())
                        self->finish(attempt, FetchOutcome::complete);
                      else
                        self->finish(attempt, FetchOutcome::incomplete, *missing);
                      self->pump();
                    });
    return;
  }
  auto refused = refused_ids(result.err);
  auto outcome = !refused.empty()                   ? FetchOutcome::not_our_ref
                 : is_unreachable_error(result.err) ? FetchOutcome::unreachable
                                                    : FetchOutcome::failed;
  log::info(log::components::git, "fetch from ", attempt.url, " failed (",
            result.timed_out ? std::string("timeout") : std::to_string(result.exit_code), ", ",
            outcome_name(outcome), "): ", result.err);
  finish(attempt, outcome, refused);
  pump();
}

void GitFetcher::finish(const FetchAttempt& attempt, FetchOutcome outcome,
                        const std::vector<std::string>& ids) {
  if (outcome != FetchOutcome::cancelled) count(outcome_name(outcome));
  schedule_.finish(attempt, outcome, std::chrono::steady_clock::now(), ids);
  // A request replaced while this attempt ran is still in the schedule: it goes on.
  if (schedule_.find(attempt.key)) return;
  if (outcome == FetchOutcome::complete) return end(attempt.key, FetchResult::complete);
  if (outcome == FetchOutcome::cancelled) pending_.erase(attempt.key);
}

void GitFetcher::end(const std::string& key, FetchResult result) {
  auto it = pending_.find(key);
  if (it == pending_.end()) return;
  auto done = std::move(it->second.done);
  pending_.erase(it);
  if (result == FetchResult::abandoned) count("abandoned");
  // Posted: the caller may queue more work from it, which must not re-enter pump().
  if (done) net::post(runner_.executor, [done = std::move(done), result] { done(result); });
}

/// Counted always, logged at most once a minute: announcements are untrusted and their clone
/// URLs are judged again at every request.
void GitFetcher::refuse_url(const std::string& url, CloneUrlVerdict verdict) {
  if (refused_urls_)
    refused_urls_->Add({{"reason", std::string(verdict_name(verdict))}}).Increment();
  auto now = std::chrono::steady_clock::now();
  if (last_refusal_log_ && now - *last_refusal_log_ < std::chrono::minutes(1)) return;
  last_refusal_log_ = now;
  log::info(log::components::git, "clone URL not fetched from (", verdict_name(verdict),
            "; plain http(s) URLs only): ", url.substr(0, 256));
}

void GitFetcher::count(std::string_view outcome, std::uint64_t n) {
  if (outcomes_ && n > 0) outcomes_->Add({{"outcome", std::string(outcome)}}).Increment(double(n));
}

}  // namespace graspd::runtime::git

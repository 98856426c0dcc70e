// FetchSchedule (runtime/git/engine/git_fetch_schedule.hpp): every rule of git data fetch
// scheduling, with the time passed in by the test.
#include "runtime/git/engine/git_fetch_schedule.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace graspd::runtime::git {
namespace {

using namespace std::chrono_literals;

const FetchTime t0 = FetchTime{} + 1h;
const std::string a(40, 'a'), b(40, 'b'), c(40, 'c');

FetchSource source(const std::string& host) {
  return {"https://" + host + "/npub1x/r.git", host + ":443"};
}

FetchRequest request(const std::string& key, std::vector<std::string> hosts,
                     std::vector<std::string> ids = {a}, FetchTime ready = t0,
                     FetchTime expires = t0 + 1800s) {
  FetchRequest out{key, {}, std::move(ids), ready, expires, {}, {}, false};
  for (const auto& host : hosts) out.sources.push_back(source(host));
  return out;
}

FetchLimits limits() {
  FetchLimits out;
  out.max_running = 4;
  out.per_host_running = 2;
  out.per_host_per_minute = 60;
  out.max_requests = 16;
  out.backoff_base = 20s;
  out.backoff_cap = 120s;
  out.host_skip = 3600s;
  return out;
}

TEST(FetchSchedule, AtMostMaxRunningAttemptsAtOnceOverTheDaemon) {
  auto l = limits();
  l.max_running = 2;
  FetchSchedule schedule(l);
  for (auto key : {"r1", "r2", "r3"}) schedule.add(request(key, {std::string(key) + ".example"}));
  auto first = schedule.next(t0);
  auto second = schedule.next(t0);
  ASSERT_TRUE(first && second);
  EXPECT_EQ(first->key, "r1");
  EXPECT_EQ(second->key, "r2");
  EXPECT_FALSE(schedule.next(t0)) << "the daemon-wide cap is reached";
  EXPECT_EQ(schedule.running(), 2u);
  schedule.finish(*first, FetchOutcome::complete, t0 + 1s);
  auto third = schedule.next(t0 + 1s);
  ASSERT_TRUE(third);
  EXPECT_EQ(third->key, "r3");
}

TEST(FetchSchedule, AtMostPerHostAttemptsAtOnceAndOtherHostsAreNotHeldUp) {
  auto l = limits();
  l.per_host_running = 1;
  FetchSchedule schedule(l);
  schedule.add(request("r1", {"slow.example"}));
  schedule.add(request("r2", {"slow.example"}));
  schedule.add(request("r3", {"good.example"}));
  auto first = schedule.next(t0);
  ASSERT_TRUE(first);
  EXPECT_EQ(first->host, "slow.example:443");
  auto second = schedule.next(t0);
  ASSERT_TRUE(second);
  EXPECT_EQ(second->key, "r3") << "a busy host does not block a request for another host";
  EXPECT_FALSE(schedule.next(t0));
  schedule.finish(*first, FetchOutcome::failed, t0 + 5s);
  auto third = schedule.next(t0 + 5s);
  ASSERT_TRUE(third);
  EXPECT_EQ(third->key, "r2");
}

TEST(FetchSchedule, AtMostPerHostPerMinuteStartsAndTheWakeupSaysWhenTheNextMay) {
  auto l = limits();
  l.per_host_per_minute = 2;
  FetchSchedule schedule(l);
  for (auto key : {"r1", "r2", "r3"}) schedule.add(request(key, {"host.example"}));
  auto first = schedule.next(t0);
  ASSERT_TRUE(first);
  schedule.finish(*first, FetchOutcome::complete, t0 + 1s);
  auto second = schedule.next(t0 + 10s);
  ASSERT_TRUE(second);
  schedule.finish(*second, FetchOutcome::complete, t0 + 11s);
  EXPECT_FALSE(schedule.next(t0 + 20s)) << "two starts in the last minute";
  EXPECT_EQ(schedule.wakeup(t0 + 20s), t0 + 60s);
  EXPECT_FALSE(schedule.next(t0 + 59s));
  auto third = schedule.next(t0 + 60s);
  ASSERT_TRUE(third);
  EXPECT_EQ(third->key, "r3");
}

TEST(FetchSchedule, BackoffDoublesFromTwentySecondsToTwoMinutesAfterEverySourceFailed) {
  FetchSchedule schedule(limits());
  schedule.add(request("r", {"one.example", "two.example"}, {a}, t0, t0 + 3600s));
  auto now = t0;
  std::vector<std::chrono::seconds> waits;
  for (int round = 0; round < 5; ++round) {
    for (auto host : {"one.example:443", "two.example:443"}) {
      auto attempt = schedule.next(now);
      ASSERT_TRUE(attempt) << "round " << round;
      EXPECT_EQ(attempt->host, host) << "sources are tried in order";
      schedule.finish(*attempt, FetchOutcome::failed, now);
    }
    EXPECT_FALSE(schedule.next(now));
    auto wakeup = schedule.wakeup(now);
    ASSERT_TRUE(wakeup);
    waits.push_back(std::chrono::duration_cast<std::chrono::seconds>(*wakeup - now));
    EXPECT_FALSE(schedule.next(*wakeup - 1s));
    now = *wakeup;
  }
  EXPECT_EQ(waits, (std::vector<std::chrono::seconds>{20s, 40s, 80s, 120s, 120s}));
  EXPECT_EQ(schedule.take_backoffs(), 5u);
}

TEST(FetchSchedule, RequestIsAbandonedWhenTheNextRetryWouldStartAfterItExpires) {
  FetchSchedule schedule(limits());
  schedule.add(request("r", {"one.example"}, {a}, t0, t0 + 30s));
  auto attempt = schedule.next(t0);
  ASSERT_TRUE(attempt);
  schedule.finish(*attempt, FetchOutcome::failed, t0);  // retry at t0 + 20 s: before expiry
  EXPECT_TRUE(schedule.take_abandoned().empty());
  attempt = schedule.next(t0 + 20s);
  ASSERT_TRUE(attempt);
  schedule.finish(*attempt, FetchOutcome::failed, t0 + 20s);  // t0 + 60 s: after it
  EXPECT_EQ(schedule.take_abandoned(), std::vector<std::string>{"r"});
  EXPECT_EQ(schedule.requests(), 0u);
  EXPECT_FALSE(schedule.wakeup(t0 + 20s));
}

TEST(FetchSchedule, ANewRequestForTheKeyResetsBackoffAndExpiry) {
  FetchSchedule schedule(limits());
  schedule.add(request("r", {"one.example"}, {a}, t0, t0 + 3600s));
  auto now = t0;
  for (int round = 0; round < 3; ++round) {  // waits 20, 40, 80 s
    auto attempt = schedule.next(now);
    ASSERT_TRUE(attempt);
    schedule.finish(*attempt, FetchOutcome::failed, now);
    now = *schedule.wakeup(now);
  }
  EXPECT_EQ(schedule.add(request("r", {"one.example"}, {b}, now - 10s, now + 7200s)),
            FetchSchedule::Added::replaced);
  auto attempt = schedule.next(now - 10s);
  ASSERT_TRUE(attempt) << "the new request's own ready time counts";
  EXPECT_EQ(attempt->ids, std::vector<std::string>{b});
  schedule.finish(*attempt, FetchOutcome::failed, now - 10s);
  EXPECT_EQ(schedule.wakeup(now - 10s), now + 10s) << "backoff starts again at 20 s";
  EXPECT_EQ(schedule.find("r")->expires_at, now + 7200s);
}

TEST(FetchSchedule, UnreachableHostIsSkippedForAWhileByEveryRequest) {
  FetchSchedule schedule(limits());
  schedule.add(request("r1", {"dead.example", "good.example"}));
  auto attempt = schedule.next(t0);
  ASSERT_TRUE(attempt);
  schedule.finish(*attempt, FetchOutcome::unreachable, t0);
  EXPECT_EQ(schedule.skipped_hosts(t0), 1u);
  attempt = schedule.next(t0);
  ASSERT_TRUE(attempt);
  EXPECT_EQ(attempt->host, "good.example:443");
  schedule.finish(*attempt, FetchOutcome::complete, t0);

  // A later request lists the skipped host first: it goes straight to the next source.
  schedule.add(request("r2", {"dead.example", "other.example"}, {a}, t0 + 60s));
  attempt = schedule.next(t0 + 60s);
  ASSERT_TRUE(attempt);
  EXPECT_EQ(attempt->host, "other.example:443");
  schedule.finish(*attempt, FetchOutcome::failed, t0 + 60s);
  // Every source failed or is skipped: backoff, not a busy loop.
  EXPECT_FALSE(schedule.next(t0 + 60s));
  EXPECT_EQ(schedule.take_backoffs(), 1u);

  // After the skip window the host is tried again.
  EXPECT_EQ(schedule.skipped_hosts(t0 + 3600s), 0u);
  schedule.add(request("r3", {"dead.example"}, {a}, t0 + 3600s, t0 + 7200s));
  attempt = schedule.next(t0 + 3600s);
  ASSERT_TRUE(attempt);
  EXPECT_EQ(attempt->key, "r2") << "r2's retry is due first";
  attempt = schedule.next(t0 + 3600s);
  ASSERT_TRUE(attempt);
  EXPECT_EQ(attempt->host, "dead.example:443");
}

TEST(FetchSchedule, RequestWhoseOnlySourceIsSkippedBacksOffThenIsAbandoned) {
  FetchSchedule schedule(limits());
  schedule.add(request("probe", {"dead.example"}));
  auto attempt = schedule.next(t0);
  ASSERT_TRUE(attempt);
  schedule.finish(*attempt, FetchOutcome::unreachable, t0);  // → backoff
  schedule.add(request("r", {"dead.example"}, {a}, t0, t0 + 30s));
  EXPECT_FALSE(schedule.next(t0));        // skipped: backoff to t0 + 20 s
  EXPECT_FALSE(schedule.next(t0 + 20s));  // skipped again: the next retry is past expiry
  EXPECT_EQ(schedule.take_abandoned(), std::vector<std::string>{"r"});
  EXPECT_EQ(schedule.wakeup(t0 + 20s), t0 + 60s) << "probe's retry";
}

TEST(FetchSchedule, NotOurRefDropsThoseIdsAndRetriesTheRestFromTheSameSource) {
  FetchSchedule schedule(limits());
  schedule.add(request("r", {"one.example", "two.example"}, {a, b, c}));
  auto attempt = schedule.next(t0);
  ASSERT_TRUE(attempt);
  EXPECT_EQ(attempt->ids, (std::vector<std::string>{a, b, c}));
  schedule.finish(*attempt, FetchOutcome::not_our_ref, t0, {b});
  attempt = schedule.next(t0);
  ASSERT_TRUE(attempt) << "retried at once";
  EXPECT_EQ(attempt->host, "one.example:443");
  EXPECT_EQ(attempt->ids, (std::vector<std::string>{a, c}));
  schedule.finish(*attempt, FetchOutcome::not_our_ref, t0, {a, c});
  attempt = schedule.next(t0);
  ASSERT_TRUE(attempt) << "nothing left for that source: the next one gets every id";
  EXPECT_EQ(attempt->host, "two.example:443");
  EXPECT_EQ(attempt->ids, (std::vector<std::string>{a, b, c}));
  // A refusal naming no id that was asked for is no progress: the next source (here: backoff).
  schedule.finish(*attempt, FetchOutcome::not_our_ref, t0, {std::string(40, 'f')});
  EXPECT_FALSE(schedule.next(t0));
  EXPECT_EQ(schedule.take_backoffs(), 1u);
}

TEST(FetchSchedule, IncompleteFetchMovesOnWithTheIdsStillMissing) {
  FetchSchedule schedule(limits());
  schedule.add(request("r", {"one.example", "two.example"}, {a, b}));
  auto attempt = schedule.next(t0);
  ASSERT_TRUE(attempt);
  schedule.finish(*attempt, FetchOutcome::incomplete, t0, {b});
  attempt = schedule.next(t0);
  ASSERT_TRUE(attempt);
  EXPECT_EQ(attempt->host, "two.example:443");
  EXPECT_EQ(attempt->ids, std::vector<std::string>{b});
  schedule.finish(*attempt, FetchOutcome::complete, t0);
  EXPECT_EQ(schedule.requests(), 0u);
  EXPECT_TRUE(schedule.take_abandoned().empty());
}

TEST(FetchSchedule, RequestsAreBoundedAndReplacingOneIsNotANewOne) {
  auto l = limits();
  l.max_requests = 2;
  FetchSchedule schedule(l);
  EXPECT_EQ(schedule.add(request("r1", {"x.example"})), FetchSchedule::Added::queued);
  EXPECT_EQ(schedule.add(request("r2", {"x.example"})), FetchSchedule::Added::queued);
  EXPECT_EQ(schedule.add(request("r3", {"x.example"})), FetchSchedule::Added::dropped);
  EXPECT_EQ(schedule.add(request("r2", {"y.example"})), FetchSchedule::Added::replaced);
  EXPECT_EQ(schedule.requests(), 2u);
}

TEST(FetchSchedule, OneAttemptPerRequestAtATimeEvenWhenReplacedWhileRunning) {
  FetchSchedule schedule(limits());
  schedule.add(request("r", {"one.example"}, {a}));
  auto old = schedule.next(t0);
  ASSERT_TRUE(old);
  schedule.add(request("r", {"two.example"}, {b}));
  EXPECT_FALSE(schedule.next(t0)) << "the old attempt still runs";
  schedule.finish(*old, FetchOutcome::complete, t0 + 1s);  // stale: frees its slot only
  EXPECT_EQ(schedule.running(), 0u);
  auto fresh = schedule.next(t0 + 1s);
  ASSERT_TRUE(fresh);
  EXPECT_EQ(fresh->host, "two.example:443");
  EXPECT_EQ(fresh->ids, std::vector<std::string>{b});
  schedule.finish(*fresh, FetchOutcome::cancelled, t0 + 2s);
  EXPECT_EQ(schedule.requests(), 0u);
}

TEST(FetchSchedule, WaitsForTheFirstAttemptsReadyTime) {
  FetchSchedule schedule(limits());
  schedule.add(request("r", {"one.example"}, {a}, t0 + 60s));
  EXPECT_FALSE(schedule.next(t0));
  EXPECT_EQ(schedule.wakeup(t0), t0 + 60s);
  EXPECT_TRUE(schedule.next(t0 + 60s));
  EXPECT_FALSE(schedule.wakeup(t0 + 60s)) << "running: its finish wakes the caller";
}

TEST(FetchScheduleText, ClassifiesGitErrors) {
  EXPECT_TRUE(
      is_unreachable_error("fatal: unable to access 'https://x/': Could not resolve host: x\n"));
  EXPECT_TRUE(is_unreachable_error(
      "fatal: unable to access 'http://127.0.0.1:9/r.git/': Failed to connect to 127.0.0.1 port 9 "
      "after 0 ms: Couldn't connect to server\n"));
  EXPECT_TRUE(
      is_unreachable_error("fatal: unable to access 'https://x/': gnutls_handshake() failed\n"));
  EXPECT_TRUE(is_unreachable_error(
      "fatal: unable to access 'https://x/': server certificate verification failed\n"));
  EXPECT_FALSE(is_unreachable_error(
      "fatal: unable to access 'http://x/': The requested URL returned error: 500\n"));
  EXPECT_FALSE(is_unreachable_error(
      "error: RPC failed; curl 28 Operation too slow. Less than 1024 bytes/sec\n"));

  EXPECT_EQ(refused_ids("fatal: remote error: upload-pack: not our ref " + a + "\n"),
            std::vector<std::string>{a});
  EXPECT_EQ(refused_ids("not our ref " + a + "\nnot our ref " + b + "\nnot our ref " + a),
            (std::vector<std::string>{a, b}));
  EXPECT_TRUE(refused_ids("not our ref 1234\n").empty());
  EXPECT_TRUE(refused_ids("not our ref " + std::string(40, 'A')).empty());
  EXPECT_EQ(refused_ids("not our ref " + std::string(64, 'd')),
            std::vector<std::string>{std::string(64, 'd')});
}

TEST(FetchScheduleText, SourcesAreKeyedByLowercasedHostAndPort) {
  HostPort self{"relay.example.com", std::nullopt};
  auto https = fetch_source("https://Git.Example/npub1x/r.git", self);
  ASSERT_TRUE(https);
  EXPECT_EQ(https->host, "git.example:443");
  EXPECT_EQ(https->url, "https://Git.Example/npub1x/r.git");
  EXPECT_EQ(fetch_source("http://git.example:8080/r.git", self)->host, "git.example:8080");
  EXPECT_FALSE(fetch_source("https://relay.example.com/npub1x/r.git", self));
  EXPECT_FALSE(fetch_source("file:///etc/passwd", self));
}

struct CloneUrlCase {
  std::string url;
  CloneUrlVerdict verdict;
};

TEST(FetchScheduleText, PlainCloneUrlRuleTable) {
  using V = CloneUrlVerdict;
  HostPort self{"relay.example.com", std::nullopt};
  for (const auto& c : std::vector<CloneUrlCase>{
           {"https://git.example/npub1x/r.git", V::fetchable},
           {"http://git.example:8080/r.git", V::fetchable},
           {"https://git.sr.ht/~user/repo", V::fetchable},
           {"https://git.example/a%20b.git", V::fetchable},
           {"https://xn--mnchen-3ya.example/r.git", V::fetchable},
           {"https://[2001:db8::1]/r.git", V::fetchable},
           {"https://git.example/r.git?service=x", V::query},
           {"https://git.example/?a=1", V::query},
           {"https://git.example/r.git#frag", V::fragment},
           {"https://user:pw@git.example/r.git", V::user_info},
           {"https://user@git.example/r.git", V::user_info},
           {"ssh://git.example/r.git", V::scheme},
           {"git://git.example/r.git", V::scheme},
           {"file:///etc/passwd", V::malformed},
           {"ftp://git.example/r.git", V::scheme},
           {"https://m\xc3\xbcnchen.example/r.git", V::host},
           {"https://127.1/r.git", V::host},
           {"https://2130706433/r.git", V::host},
           {"https://git.example./r.git", V::host},
           {"https://git.example/a;b.git", V::path},
           {"https://git.example/a%zz.git", V::path},
           {"https://git.example/r\xc3\xbc.git", V::path},
           {"https://relay.example.com/npub1x/r.git", V::this_service},
           {"https://git.example/r .git", V::malformed},
           {"https://git.example/" + std::string(3000, 'a'), V::malformed},
       }) {
    EXPECT_EQ(verdict_name(judge_clone_url(c.url, self)), verdict_name(c.verdict)) << c.url;
    EXPECT_EQ(is_fetchable_clone_url(c.url, self), c.verdict == V::fetchable) << c.url;
  }
}

}  // namespace
}  // namespace graspd::runtime::git

namespace graspd::runtime::git {
namespace {

FetchRequest for_author(const std::string& key, const std::string& author,
                        const std::string& repository, const std::string& host,
                        bool own_state = false) {
  auto out = request(key, {host});
  out.author = author;
  out.repository = repository;
  out.own_state = own_state;
  return out;
}

TEST(FetchSchedule, OneAuthorKeepsAtMostItsShareOfRequestsOthersStillGetIn) {
  auto l = limits();
  l.max_requests = 16;
  l.per_author_requests = 3;
  l.per_repository_requests = 0;
  FetchSchedule schedule(l);
  // One pull request naming many repositories: its author's requests beyond the share are
  // refused, so the daemon-wide table keeps room for everyone else.
  for (int i = 0; i < 3; ++i)
    EXPECT_EQ(schedule.add(for_author("pr" + std::to_string(i), "mallory", "/r" + std::to_string(i),
                                      "tarpit.example")),
              FetchSchedule::Added::queued);
  EXPECT_EQ(schedule.add(for_author("pr3", "mallory", "/r3", "tarpit.example")),
            FetchSchedule::Added::author_share);
  EXPECT_EQ(schedule.add(for_author("pr0", "mallory", "/r0", "tarpit.example")),
            FetchSchedule::Added::replaced)
      << "a newer version of a kept request is no new request";
  EXPECT_EQ(schedule.add(for_author("victim", "alice", "/victim", "good.example", true)),
            FetchSchedule::Added::queued);
  EXPECT_EQ(schedule.requests(), 4u);
}

TEST(FetchSchedule, OneAuthorRunsAtMostItsShareOfSlotsWhileOthersStart) {
  auto l = limits();
  l.max_running = 4;
  l.per_host_running = 4;
  l.per_author_running = 1;
  l.per_repository_running = 0;
  FetchSchedule schedule(l);
  for (int i = 0; i < 8; ++i)
    schedule.add(for_author("pr" + std::to_string(i), "mallory", "/r" + std::to_string(i),
                            "tarpit" + std::to_string(i) + ".example"));
  schedule.add(for_author("victim", "alice", "/victim", "good.example", true));
  auto first = schedule.next(t0);
  auto second = schedule.next(t0);
  ASSERT_TRUE(first && second);
  EXPECT_EQ(first->key, "pr0");
  EXPECT_EQ(second->key, "victim") << "the tarpits' author holds its one slot; alice starts";
  EXPECT_FALSE(schedule.next(t0)) << "two slots stay free rather than go to the same author";
  EXPECT_EQ(schedule.running(), 2u);
  schedule.finish(*first, FetchOutcome::failed, t0 + 60s);
  auto third = schedule.next(t0 + 60s);
  ASSERT_TRUE(third);
  EXPECT_EQ(third->key, "pr1") << "the author's slot is free again";
}

TEST(FetchSchedule, ARepositorysOwnStateGetsInWhenPullRequestsFillItsShare) {
  auto l = limits();
  l.per_author_requests = 0;
  l.per_repository_requests = 2;
  l.per_repository_running = 1;
  l.per_host_running = 4;
  FetchSchedule schedule(l);
  EXPECT_EQ(schedule.add(for_author("pr a", "m1", "/victim", "tarpit.example")),
            FetchSchedule::Added::queued);
  EXPECT_EQ(schedule.add(for_author("pr b", "m2", "/victim", "tarpit.example")),
            FetchSchedule::Added::queued);
  EXPECT_EQ(schedule.add(for_author("pr c", "m3", "/victim", "tarpit.example")),
            FetchSchedule::Added::repository_share)
      << "strangers' pull requests fill the repository's share";
  EXPECT_EQ(schedule.add(for_author("state /victim", "alice", "/victim", "good.example", true)),
            FetchSchedule::Added::queued)
      << "the repository's own state is never kept out by them";
  auto first = schedule.next(t0);
  ASSERT_TRUE(first);
  EXPECT_FALSE(schedule.next(t0)) << "one attempt at a time per repository";
  schedule.finish(*first, FetchOutcome::complete, t0 + 1s);
  EXPECT_TRUE(schedule.next(t0 + 1s));
}

TEST(FetchSchedule, ADeferredAttemptFreesItsSlotAndWaitsThenGoesOnFromTheSameSource) {
  auto l = limits();
  l.max_running = 1;
  l.per_host_per_minute = 1;
  FetchSchedule schedule(l);
  schedule.add(request("r1", {"one.example", "two.example"}));
  auto attempt = schedule.next(t0);
  ASSERT_TRUE(attempt);
  schedule.defer(*attempt, t0 + 10s);
  EXPECT_EQ(schedule.running(), 0u);
  EXPECT_FALSE(schedule.next(t0 + 5s)) << "it waits";
  EXPECT_EQ(schedule.wakeup(t0 + 5s), t0 + 10s);
  auto again = schedule.next(t0 + 10s);
  ASSERT_TRUE(again) << "a deferred attempt does not count against the host's rate";
  EXPECT_EQ(again->host, "one.example:443");
}

}  // namespace
}  // namespace graspd::runtime::git

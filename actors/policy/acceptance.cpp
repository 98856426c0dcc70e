#include "actors/policy/acceptance.hpp"
#include "actors/policy/acceptance_metrics.hpp"
#include "actors/policy/acceptance_steps.hpp"
#include "messages/unix_clock.hpp"

#include <caf/event_based_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

#include <algorithm>
#include <chrono>
#include <functional>
#include <iostream>
#include <set>

#include "messages/nostr/nip34.hpp"
#include "messages/nostr/nip42.hpp"
#include "messages/nostr/nip62.hpp"
#include "runtime/ops/log.hpp"
#include "runtime/ops/progress.hpp"
#include "store/lmdb/event_store.hpp"
#include "store/lmdb/store_view.hpp"

namespace graspd {

namespace acceptance_steps {
namespace {

void update_gauges(Self self) {
  auto& st = self->state;
  if (st.metrics) st.metrics->update(*st.retry, st.counts, st.policy->pending_count());
}

policy::Decision decide(Self self, const nostr::Event& ev) {
  auto& st = self->state;
  auto decision = st.policy->evaluate_submission(
      ev, [&store = *st.store](const nostr::EventId& id) { return store.contains(id); });
  if (decision.already_here) return decision;
  ++st.decisions[static_cast<std::size_t>(decision.rule)];
  if (!decision.depends_on.empty()) ++st.counts.accepted_on_pending;
  if (st.metrics) st.metrics->count(policy::kind_group(ev.kind), decision);
  return decision;
}

/// Parks an event refused for a missing dependency and returns the refusal the client sees.
AcceptanceVerdict park(Self self, const Submission& submission, policy::Decision& decision) {
  auto& st = self->state;
  const auto& ev = submission.event;
  st.retry->park(ev, policy::RetryCache::approximate_bytes(*ev), decision.wait_keys,
                 st.config.unix_now(), submission.source);
  update_gauges(self);
  // Say so: the client should not resend, and may see the event stored later.
  decision.message += "; held for " + std::to_string(st.retry_ttl_minutes) +
                      " min and stored if what it depends on arrives";
  return AcceptanceVerdict{false, decision.message, WriteOutcome::error};
}

void judge(Self self, Submission submission);
void resubmit_released(Self self, const std::vector<std::string>& keys);
void consider_hold(Self self, Submission submission, policy::Decision decision,
                   policy::HeldKind kind);
std::optional<policy::HeldKind> held_kind(const AcceptanceState& st, const nostr::Event& ev,
                                          policy::Rule rule);

void on_written(Self self, Submission submission, WriteOutcome outcome) {
  auto& st = self->state;
  const auto& ev = submission.event;
  switch (st.policy->on_write_outcome(ev->id, outcome, ++submission.attempt)) {
    case policy::AfterWrite::done:
      if (wrote(outcome)) {
        if (ev->kind == nostr::nip34::kind::repo_state && st.config.git)
          self->send(st.config.git, StateStored{ev, came_by_sync(submission)});
        if ((ev->kind == nostr::nip34::kind::deletion ||
             ev->kind == nostr::nip62::kind_request_to_vanish) &&
            st.purgatory)
          withdraw_held(self, *ev);
      }
      return submission.reply(AcceptanceVerdict{true, {}, outcome});
    case policy::AfterWrite::refuse:
      ++st.counts.rejudged;
      return submission.reply(
          AcceptanceVerdict{false, std::string(store::ok_message(outcome)), outcome});
    case policy::AfterWrite::judge_again:
      ++st.counts.rejudged;
      return judge(self, std::move(submission));
  }
}

/// The writer did not answer: the event counts as not stored, the asker gets "error:" and the
/// failure is logged.
void on_write_failed(Self self, const Submission& submission, const caf::error& error) {
  auto& st = self->state;
  st.write_failures.report(self, error);
  st.policy->on_not_stored(submission.event->id, false);
  submission.reply(AcceptanceVerdict{true, {}, WriteOutcome::error});
}

}  // namespace

/// Stores an accepted event. Writes leave in decision order, so what an event depends on is
/// committed before it or earlier in the same transaction.
void write(Self self, Submission submission, std::vector<nostr::EventId> depends_on) {
  auto& st = self->state;
  auto ev = submission.event;
  st.policy->on_accepted(ev, depends_on);
  auto shared = std::make_shared<Submission>(std::move(submission));
  self->request(st.writer, caf::infinite, StoreWrite{ev, std::move(depends_on)})
      .then([self, shared](WriteOutcome outcome) { on_written(self, std::move(*shared), outcome); },
            [self, shared](caf::error& error) { on_write_failed(self, *shared, error); });
}

/// Asks git hosting to create the repository of `announcement` and calls `then` once it answered
/// (whatever the answer: a failure is logged there). Awaited, so that events are still judged and
/// written in the order they arrived; without git hosting `then` runs at once.
void create_repository_then(Self self, const nostr::EventPtr& announcement,
                            std::function<void()> then) {
  auto& git = self->state.config.git;
  if (!git) return then();
  // A repository that could not be created was logged by git hosting; the announcement is
  // stored either way (its clone URL answers 404 until an operator fixes the disk).
  self->request(git, caf::infinite, RepoAnnounced{announcement})
      .await([then]() { then(); }, [then](caf::error&) { then(); });
}

void store_accepted(Self self, Submission submission, policy::Decision decision) {
  if (!policy::creates_repository(decision.rule))
    return write(self, std::move(submission), std::move(decision.depends_on));
  auto event = submission.event;
  create_repository_then(
      self, event,
      [self, submission = std::move(submission), depends_on = std::move(decision.depends_on)] {
        write(self, submission, depends_on);
      });
}

namespace {

void act_on_accepted(Self self, Submission submission, policy::Decision decision);

/// Decides an event and acts on it: refuse, park, hold, or store and answer after the commit.
void judge(Self self, Submission submission) {
  const auto& ev = submission.event;
  auto decision = decide(self, *ev);
  if (decision.verdict == policy::Verdict::refuse_missing_dependency)
    return submission.reply(park(self, submission, decision));
  if (!decision.accepted()) return submission.reply(AcceptanceVerdict{false, decision.message, {}});
  if (nostr::is_ephemeral(ev->kind))
    return submission.reply(AcceptanceVerdict{true, {}, WriteOutcome::ephemeral_not_stored});
  if (decision.rule != policy::Rule::announcement_archived)
    return act_on_accepted(self, std::move(submission), std::move(decision));
  with_archive_room(self, std::move(submission), std::move(decision), act_on_accepted);
}

/// Holds or stores an accepted event.
void act_on_accepted(Self self, Submission submission, policy::Decision decision) {
  const auto& ev = submission.event;
  auto& st = self->state;
  auto kind = held_kind(st, *ev, decision.rule);
  if (!kind) return store_accepted(self, std::move(submission), std::move(decision));
  if (*kind != policy::HeldKind::state)
    return consider_hold(self, std::move(submission), std::move(decision), *kind);
  // A state for an identifier with no repository here is stored at once: nothing here could ever
  // release it. Awaited, like every question to git hosting, to keep the decision order.
  if (!st.config.git) return store_accepted(self, std::move(submission), std::move(decision));
  auto identifier = std::string(ev->d_tag());
  auto go_on = [self, submission, decision](bool exists) mutable {
    if (!exists) return store_accepted(self, std::move(submission), std::move(decision));
    consider_hold(self, std::move(submission), std::move(decision), policy::HeldKind::state);
  };
  self->request(st.config.git, caf::infinite, RepoExists{std::move(identifier)})
      .await([go_on](bool exists) mutable { go_on(exists); },
             [go_on](caf::error&) mutable { go_on(false); });
}

void resubmit_released(Self self, const std::vector<std::string>& keys) {
  auto& st = self->state;
  auto count_stored = [self](const AcceptanceVerdict& verdict) {
    if (verdict.accepted && store::is_accepted(verdict.outcome))
      ++self->state.counts.accepted_after_retry;
  };
  for (auto& released : st.retry->release_from(keys))
    judge(self, Submission{released.event, released.source, count_stored, 0});
  update_gauges(self);
}

}  // namespace

// ---------------------------------------------------------------- purgatory
// (docs/spec/git-hosting.md §6; the steps it shares: acceptance_purgatory.cpp)

namespace {

/// Full when the store holds the released announcement (or a newer version of it); forgotten when
/// it was refused (deleted, expired) or its write failed: it has left purgatory either way.
HeldRepositories::Change level_after_release(WriteOutcome outcome) {
  switch (outcome) {
    case WriteOutcome::stored:
    case WriteOutcome::duplicate:
    case WriteOutcome::replaced_older:
    case WriteOutcome::rejected_older_version:
      return HeldRepositories::Change::released;
    default:
      return HeldRepositories::Change::dropped;
  }
}

/// Restarts the holds of repository `identifier` (§6.3) and persists their new expiry.
void restart_holds(Self self, std::string_view identifier) {
  auto refreshed = self->state.purgatory->refresh(identifier, self->state.config.unix_now());
  HeldRecordChanges changes;
  for (const auto& entry : refreshed)
    changes.puts.emplace_back(entry.event->id, store::encode_held(entry));
  persist(self, std::move(changes));
}

/// An announcement already served (stored) for this owner and identifier: a replacement of it is
/// stored at once (§1.1).
bool serves_announcement(const AcceptanceState& st, const nostr::Event& ev) {
  nostr::Filter f;
  f.kinds = std::vector<std::uint32_t>{nostr::nip34::kind::repo_announcement};
  f.authors = std::vector<nostr::Pubkey>{ev.pubkey};
  f.tags['d'] = {std::string(ev.d_tag())};
  f.normalize();
  return st.view->exists({f});
}

/// What purgatory may hold (§6.1): a new announcement listing this service, a maintainer's state
/// (held only when a repository of its identifier is here, judge asks git hosting), a PR event
/// (hold_pull_request decides whether it waits). Everything else is stored as usual.
std::optional<policy::HeldKind> held_kind(const AcceptanceState& st, const nostr::Event& ev,
                                          policy::Rule rule) {
  if (!st.purgatory || st.store->contains(ev.id)) return std::nullopt;
  if (policy::creates_repository(rule)) {
    if (!st.purgatory->contains(ev.id) && serves_announcement(st, ev)) return std::nullopt;
    return policy::HeldKind::announcement;
  }
  if (rule == policy::Rule::state_maintainer) {
    // Older than the stored version: never served, so never held; the store answers it.
    if (policy::superseded_in(*st.view, ev)) return std::nullopt;
    return policy::HeldKind::state;
  }
  if (policy::is_pull_request_kind(ev.kind)) return policy::HeldKind::pull_request;
  return std::nullopt;
}

AcceptanceVerdict held_verdict() {
  return AcceptanceVerdict{true, std::string(store::ok_message(WriteOutcome::held)),
                           WriteOutcome::held};
}

/// Answers the submitter of held state `id` if it still waits.
void answer_state(Self self, const nostr::EventId& id, AcceptanceVerdict verdict) {
  auto& answers = self->state.state_answers;
  auto it = answers.find(id);
  if (it == answers.end()) return;
  auto reply = std::move(it->second);
  answers.erase(it);
  reply(std::move(verdict));
}

/// What follows a hold that was recorded: an announcement's repository is created, the held feed
/// told and what waited for it judged again; a state goes to git hosting (applied when its objects
/// are here, else fetched). Then the submitter hears `OK true`.
void after_hold(Self self, const Submission& submission, policy::HeldKind kind) {
  auto& st = self->state;
  const auto& ev = submission.event;
  auto answer = [self, submission] {
    publish_purgatory(self);
    submission.reply(held_verdict());
  };
  if (kind != policy::HeldKind::announcement) {
    if (!st.config.git) return answer();
    self->send(st.config.git, StateStored{ev, came_by_sync(submission)});
    if (st.config.state_answer_wait.count() <= 0) return answer();
    // Its objects may be here already (applied within milliseconds): then it is answered as the
    // stored event it becomes, not as held. Git hosting says which, or the wait ends.
    publish_purgatory(self);
    st.state_answers[ev->id] = submission.reply;
    self->delayed_send(self, st.config.state_answer_wait, StateAnswerDue{ev->id});
    return;
  }
  create_repository_then(self, ev, [self, ev, answer] {
    tell_held_feed(self, {ev}, HeldRepositories::Change::held);
    // A held announcement counts for the maintainer closure: what waited for it is judged again.
    resubmit_released(self, {policy::wait_key::identifier(ev->d_tag())});
    answer();
  });
}

/// Holds an accepted event that purgatory may hold, or stores it, and answers.
void consider_hold(Self self, Submission submission, policy::Decision decision,
                   policy::HeldKind kind) {
  auto& st = self->state;
  const auto& ev = submission.event;
  if (st.purgatory->contains(ev->id)) {
    // A held state that a sync peer serves now was pushed there, not here: its fetch starts at
    // once rather than after the wait for a client's push.
    if (ev->kind == nostr::nip34::kind::repo_state && came_by_sync(submission) && st.config.git)
      self->send(st.config.git, StateStored{ev, true});
    return submission.reply(
        AcceptanceVerdict{true, "duplicate: in purgatory", WriteOutcome::duplicate});
  }
  if (st.purgatory->expired_recently(ev->id)) {
    // Sync would bring it back every pass; a client resubmitting it means it.
    if (submission.source.rfind("relay:", 0) == 0)
      return submission.reply(AcceptanceVerdict{
          false, "blocked: it waited in purgatory for git data until it expired", {}});
    st.purgatory->forget_expired(ev->id);
  }
  if (kind == policy::HeldKind::pull_request)
    return hold_pull_request(self, std::move(submission), std::move(decision));
  restart_holds(self, ev->d_tag());
  auto result = st.purgatory->hold(ev, kind, st.config.unix_now(), submission.source);
  if (result.outcome == policy::Purgatory::Hold::duplicate)  // a newer version is held
    return submission.reply(AcceptanceVerdict{true,
                                              "duplicate: an older version (a newer one is held)",
                                              WriteOutcome::rejected_older_version});
  if (auto refusal = hold_refusal(self, result.outcome))
    return submission.reply(std::move(*refusal));
  auto gate = gate_on_peers(self, submission);
  record_hold(self, submission, result, [self, submission, kind, gate] {
    if (gate) send_to_peers(self, submission.event, gate);
    after_hold(self, submission, kind);
  });
}

/// Git data arrived for a repository: its holds restart, and the states whose objects are all
/// there leave purgatory with the owner's announcement (stored announcement first, §5.9).
void on_git_data(Self self, const GitDataArrived& arrived) {
  auto& st = self->state;
  if (!st.purgatory) return;
  // Not git data: states that wait for it, whose submitters now hear they are held.
  for (const auto& id : arrived.awaiting) answer_state(self, id, held_verdict());
  if (!arrived.awaiting.empty()) return;
  const auto& repository = arrived.repository;
  restart_holds(self, repository.identifier);
  std::vector<nostr::EventPtr> released;
  for (const auto& state : arrived.states)
    for (auto& ev : st.purgatory->release(repository.owner, repository.identifier, state))
      released.push_back(std::move(ev));
  on_pull_request_git_data(self, arrived);
  if (released.empty()) return;
  // Sync follows what the store holds: each released announcement's level changes once its write is
  // answered. Write failures are counted by on_write_failed.
  for (auto& ev : released)
    write_released(self, ev, [self, ev](AcceptanceVerdict verdict) {
      tell_held_feed(self, {ev}, level_after_release(verdict.outcome));
      // A state whose objects were here on arrival: its submitter hears what the store did.
      answer_state(self, ev->id, std::move(verdict));
    });
  publish_purgatory(self);
}

/// Ends holds past their time (§6.3): the events are forgotten but their ids remembered (not an
/// archive's), and an expired announcement's repository goes (§4.7).
void expire_purgatory(Self self) {
  auto& st = self->state;
  auto now = st.config.unix_now();
  expire_placeholders(self);
  auto archives = expiring_archives(self, now);
  auto remembered = [&archives](const policy::HeldEvent& entry) {
    return !archives.count(std::string(entry.event->d_tag()));
  };
  auto expired = st.purgatory->expire(now, remembered);
  if (expired.events.empty() && expired.forgotten.empty()) return;
  auto remember_until = now + st.purgatory->limits().remember_seconds;
  auto changes = erase_records(expired.forgotten);
  for (const auto& entry : expired.events)
    if (remembered(entry))
      changes.puts.emplace_back(entry.event->id, store::encode_expired(remember_until));
    else
      changes.erases.push_back(entry.event->id);
  persist(self, std::move(changes));
  std::vector<nostr::EventPtr> dropped;
  withdraw_repositories(self, expired.events, dropped);
  tell_held_feed(self, dropped, HeldRepositories::Change::dropped);
  publish_purgatory(self);
}

/// Reads the held events back (§6.5) and hands the held states to git hosting again: the fetches
/// they were waiting for did not survive the restart.
void start_purgatory(Self self) {
  auto& st = self->state;
  auto& config = st.config;
  if (!config.purgatory_enabled) return;
  st.purgatory = std::make_unique<policy::Purgatory>(config.purgatory);
  if (config.purgatory_figures) config.purgatory_figures->enabled = true;
  start_pull_requests(self, config.purgatory.hold_seconds);
  try {
    store::load_purgatory(*st.store, *st.purgatory, st.placeholders.get());
  } catch (const store::StoreError& error) {
    st.persist_failures.report(error.what(), self->clock().now());
  }
  st.policy->set_held_announcements(&st.purgatory->announcements());
  nostr::Filter states;
  states.kinds = std::vector<std::uint32_t>{nostr::nip34::kind::repo_state};
  std::vector<nostr::EventPtr> held_states;
  st.purgatory->scan({states}, [&](const nostr::Event& ev) {
    held_states.push_back(st.purgatory->find(ev.id)->event);
    return true;
  });
  if (config.git)
    for (auto& ev : held_states) self->send(config.git, StateStored{std::move(ev)});
  resume_pull_requests(self);
  publish_purgatory(self);
}

/// Judges a client's or a peer's event and answers once it is refused, parked or committed.
caf::result<AcceptanceVerdict> on_query(Self self, AcceptanceQuery& query) {
  // NIP-70: only the author, over a connection authenticated as it, may publish a protected event;
  // sync peers never are (they count the refusal themselves before asking).
  if (nostr::is_protected(*query.event) && !query.authenticated_author)
    return AcceptanceVerdict{false, std::string(nostr::protected_refusal_message), {}};
  auto promise = self->make_response_promise<AcceptanceVerdict>();
  auto deliver = [promise](AcceptanceVerdict verdict) mutable {
    promise.deliver(std::move(verdict));
  };
  judge(self, Submission{std::move(query.event), std::move(query.source), deliver, 0});
  return promise;
}

/// Drops parked events past their TTL and pending ones the store will not report, then re-arms.
void expire(Self self, std::chrono::seconds interval) {
  auto& st = self->state;
  st.retry->expire(st.config.unix_now());
  st.policy->sweep_pending();
  if (st.purgatory) expire_purgatory(self);
  update_gauges(self);
  self->delayed_send(self, interval, atom::tick::value);
}

}  // namespace
}  // namespace acceptance_steps

using namespace acceptance_steps;

acceptance_actor::behavior_type acceptance(Self self, AcceptanceConfig config,
                                           std::shared_ptr<const store::EventStore> store,
                                           store_writer_actor writer,
                                           std::shared_ptr<prometheus::Registry> registry) {
  auto& st = self->state;
  st.store = store;
  st.view = std::make_unique<store::EventStoreView>(store);
  st.policy = std::make_unique<policy::AcceptancePolicy>(config.policy, *st.view);
  // The startup load: every announcement and thread in the store, so it grows with the store.
  auto load_started = std::chrono::steady_clock::now();
  runtime::ProgressLine progress(std::cerr, runtime::stderr_is_terminal(), "startup load",
                                 "events");
  st.policy->load_from_store([&](std::uint64_t read) { progress.update(read); });
  progress.clear();
  store->for_each_moderation([&](const ModerationEntry& entry) {
    policy::apply_entry(st.policy->runtime_lists(), entry, true);
  });
  log::info("acceptance", "startup load from the store took ",
            std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() -
                                                                  load_started)
                .count(),
            " ms (", st.policy->eligible_author_count(), " eligible authors)");
  st.retry = std::make_unique<policy::RetryCache>(config.retry);
  st.retry_ttl_minutes = std::max<std::int64_t>(1, config.retry.ttl_seconds / 60);
  config.unix_now = or_system_clock(std::move(config.unix_now));
  st.writer = std::move(writer);
  st.registry = registry;
  // Purgatory's families exist with purgatory off too (at zero): dashboards and alerts find them.
  if (registry) {
    st.metrics = std::make_shared<AcceptanceMetrics>(*registry);
    st.metrics->register_purgatory(*registry);
  }
  const auto interval = config.expiry_interval;
  st.config = std::move(config);
  start_purgatory(self);
  if (st.config.git)
    self->send(st.config.git, atom::feed_subscribe::value,
               caf::actor_cast<git_data_feed_actor>(self));
  if (interval.count() > 0) self->delayed_send(self, interval, atom::tick::value);
  return {
      [=](AcceptanceQuery& query) -> caf::result<AcceptanceVerdict> {
        return on_query(self, query);
      },
      [=](const StoreCommits& batch) {
        for (const auto& committed : *batch.commits) {
          // With nothing parked, no wait key can release anything: none is built.
          const bool keys_wanted = self->state.retry->size() > 0;
          resubmit_released(self, self->state.policy->on_committed(*committed.event, keys_wanted));
          mirror_submissions_into(self, *committed.event);
        }
      },
      [=](GitDataArrived& arrived) { on_git_data(self, arrived); },
      [=](atom::feed_subscribe, held_feed_actor& subscriber) {
        subscribe_held_feed(self, std::move(subscriber));
      },
      [=](atom::feed_subscribe, peer_feed_actor& follower) {
        self->state.peer_feed = std::move(follower);
      },
      [=](atom::held_events) { return held_for_peers(self->state); },
      [=](const StoreModeration& changes) { return moderate(self, changes); },
      [=](atom::tick) { expire(self, interval); },
      [=](StateAnswerDue& due) { answer_state(self, due.state, held_verdict()); },
  };
}

}  // namespace graspd

// The acceptance actor's purgatory steps (docs/spec/git-hosting.md §6): holds recorded through the
// store writer, refusals past its bounds, the held feed, withdrawals and moderation of held events,
// released events written.
#include <utility>

#include "actors/policy/acceptance_metrics.hpp"
#include "actors/policy/acceptance_steps.hpp"
#include "messages/nostr/nip34.hpp"
#include "store/lmdb/store_view.hpp"

namespace graspd::acceptance_steps {

namespace {

/// One record to write.
HeldRecordChanges put_record(const nostr::EventId& id, std::string record) {
  HeldRecordChanges changes;
  changes.puts.emplace_back(id, std::move(record));
  return changes;
}

}  // namespace

void publish_purgatory(Self self) {
  auto& st = self->state;
  if (st.metrics) st.metrics->update(*st.purgatory, st.held_total);
  if (!st.config.purgatory_figures) return;
  auto counts = st.purgatory->counts();
  for (std::size_t i = 0; i < counts.size(); ++i) st.config.purgatory_figures->held[i] = counts[i];
  st.config.purgatory_figures->released = st.purgatory->stats().released;
  st.config.purgatory_figures->expired = st.purgatory->stats().expired;
}

std::optional<AcceptanceVerdict> hold_refusal(Self self, policy::Purgatory::Hold outcome) {
  using Hold = policy::Purgatory::Hold;
  const char* reason = nullptr;
  std::string_view message;
  switch (outcome) {
    case Hold::held:
    case Hold::duplicate:
      return std::nullopt;
    case Hold::full:
      reason = "full";
      message = "error: too many events are waiting for git data here; try again later";
      break;
    case Hold::author_share:
      reason = "author_share";
      message =
          "rate-limited: this author has too many events waiting for git data here; push their "
          "git data or try again later";
      break;
    case Hold::address_share:
      reason = "address_share";
      message =
          "rate-limited: too many events from your address are waiting for git data here; try "
          "again later";
      break;
    case Hold::sync_share:
      reason = "sync_share";
      message = "rate-limited: too many synced events are waiting for git data here";
      break;
  }
  if (self->state.metrics) self->state.metrics->refused(reason);
  return AcceptanceVerdict{false, std::string(message), {}};
}

void tell_held_feed(Self self, const std::vector<nostr::EventPtr>& events,
                    HeldRepositories::Change change) {
  HeldRepositories message;
  for (const auto& ev : events)
    if (ev->kind == nostr::nip34::kind::repo_announcement) message.entries.push_back({ev, change});
  if (message.entries.empty()) return;
  for (const auto& subscriber : self->state.held_feed) self->send(subscriber, message);
}

void subscribe_held_feed(Self self, held_feed_actor subscriber) {
  auto& st = self->state;
  st.held_feed.push_back(subscriber);
  if (!st.purgatory) return;
  nostr::Filter announcements;
  announcements.kinds = std::vector<std::uint32_t>{nostr::nip34::kind::repo_announcement};
  HeldRepositories snapshot;
  st.purgatory->scan({announcements}, [&](const nostr::Event& ev) {
    snapshot.entries.push_back({st.purgatory->find(ev.id)->event, HeldRepositories::Change::held});
    return true;
  });
  if (!snapshot.entries.empty()) self->send(subscriber, std::move(snapshot));
}

void persist(Self self, HeldRecordChanges changes) {
  if (changes.empty()) return;
  self->request(self->state.writer, caf::infinite, StoreHeld{std::move(changes)})
      .then(
          [self](bool committed) {
            if (!committed)
              self->state.persist_failures.report("the store writer could not commit them",
                                                  self->clock().now());
          },
          [self](caf::error& error) { self->state.persist_failures.report(self, error); });
}

HeldRecordChanges erase_records(std::vector<nostr::EventId> ids) {
  HeldRecordChanges changes;
  changes.erases = std::move(ids);
  return changes;
}

void record_hold(Self self, const Submission& submission,
                 const policy::Purgatory::HoldResult& result, std::function<void()> then) {
  auto& st = self->state;
  const auto& ev = submission.event;
  auto undo = [self, submission, replaced = result.replaced] {
    self->state.purgatory->undo_hold(submission.event->id, replaced);
    submission.reply(AcceptanceVerdict{false, std::string(unrecorded_hold_message), {}});
  };
  auto recorded = [self, replaced = result.replaced, then = std::move(then)] {
    ++self->state.held_total;
    // Only now: a failed put leaves the replaced version's record, and a record left here by a
    // failed erase loses to the newer one when read back (Purgatory::restore).
    if (replaced) persist(self, erase_records({replaced->event->id}));
    then();
  };
  // OK true promises the event survives a restart: without its record it is not held at all.
  // Awaited: what is judged next sees the hold as it stands, never one undone behind it.
  self->request(st.writer, caf::infinite,
                StoreHeld{put_record(ev->id, store::encode_held(*st.purgatory->find(ev->id)))})
      .await(
          [self, undo, recorded](bool committed) {
            if (committed) return recorded();
            self->state.persist_failures.report("the store writer could not commit it",
                                                self->clock().now());
            undo();
          },
          [self, undo](caf::error& error) {
            self->state.persist_failures.report(self, error);
            undo();
          });
}

void withdraw_repositories(Self self, const std::vector<policy::HeldEvent>& entries,
                           std::vector<nostr::EventPtr>& dropped) {
  auto& git = self->state.config.git;
  for (const auto& entry : entries) {
    if (entry.kind != policy::HeldKind::announcement) continue;
    dropped.push_back(entry.event);
    if (git) self->send(git, RepoWithdrawn{entry.event});
  }
}

/// The held events a stored deletion names (or, for a request to vanish, every held event of its
/// author up to it) leave purgatory unremembered (the stored request itself keeps them out of the
/// store), and a held announcement's repository goes (§4.6).
void withdraw_held(Self self, const nostr::Event& deletion) {
  auto& st = self->state;
  auto withdrawn = st.purgatory->withdraw(deletion);
  if (withdrawn.empty()) return;
  std::vector<nostr::EventId> ids;
  for (const auto& entry : withdrawn) ids.push_back(entry.event->id);
  persist(self, erase_records(std::move(ids)));
  std::vector<nostr::EventPtr> dropped;
  withdraw_repositories(self, withdrawn, dropped);
  tell_held_feed(self, dropped, HeldRepositories::Change::dropped);
  publish_purgatory(self);
}

bool moderate(Self self, const StoreModeration& changes) {
  auto& st = self->state;
  auto& lists = st.policy->runtime_lists();
  for (const auto& entry : changes.puts) policy::apply_entry(lists, entry, true);
  for (const auto& entry : changes.erases) policy::apply_entry(lists, entry, false);
  if (!st.purgatory) return true;
  std::vector<policy::HeldEvent> banned;
  for (const auto& id : changes.delete_events)
    if (auto entry = st.purgatory->drop(id)) banned.push_back(std::move(*entry));
  if (banned.empty()) return true;
  std::vector<nostr::EventPtr> dropped;
  withdraw_repositories(self, banned, dropped);
  tell_held_feed(self, dropped, HeldRepositories::Change::dropped);
  publish_purgatory(self);
  return true;
}

void write_released(Self self, nostr::EventPtr ev, Reply then) {
  // Push authorisation reads held records and the store together (§5.11): erasing the record
  // before the commit would leave a moment in which neither holds the event.
  auto forget_record = [self, ev, then = std::move(then)](AcceptanceVerdict verdict) {
    if (verdict.outcome != WriteOutcome::error) persist(self, erase_records({ev->id}));
    then(std::move(verdict));
  };
  write(self, Submission{std::move(ev), {}, std::move(forget_record), 0}, {});
}

}  // namespace graspd::acceptance_steps

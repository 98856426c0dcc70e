#include "actors/store/store_writer.hpp"

#include <caf/actor_system.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/sec.hpp>
#include <caf/spawn_options.hpp>

#include <algorithm>
#include <chrono>
#include <exception>
#include <limits>
#include <optional>
#include <span>

#include "messages/nostr/json.hpp"
#include "runtime/ops/log.hpp"

namespace graspd {

namespace {

using StoreWriterSelf = store_writer_actor::stateful_pointer<StoreWriterState>;

/// Sends `commits` to every feed subscriber as one message, when there are any.
void send_to_feed(StoreWriterSelf self, std::vector<StoreCommitted>&& commits) {
  if (commits.empty()) return;
  const auto msg = StoreCommits::of(std::move(commits));
  for (const auto& sub : self->state.subscribers) self->send(sub, msg);
}

void publish(StoreWriterSelf self, const std::vector<nostr::EventPtr>& events,
             const std::vector<store::WriteReport>& reports) {
  auto& st = self->state;
  std::vector<StoreCommitted> commits;
  commits.reserve(events.size());
  for (std::size_t i = 0; i < events.size(); ++i) {
    if (!reports[i].json) continue;
    ++st.committed;
    commits.push_back({events[i], reports[i].json, reports[i].outcome, reports[i].seq});
    st.tail_from = std::max(st.tail_from, reports[i].seq + 1);
  }
  send_to_feed(self, std::move(commits));
}

/// Publishes the events other processes committed with sequence numbers in [tail_from, to), at
/// most `max`. Their JSON was checked when they were written; one that does not parse is skipped.
/// A failed read is logged and tried again at the next look.
void publish_foreign(StoreWriterSelf self, std::uint64_t to, std::size_t max) {
  auto& st = self->state;
  if (st.tail_from >= to) return;
  nostr::ParseLimits limits;
  limits.max_message_bytes = limits.max_event_bytes = limits.max_content_length = 64u << 20;
  limits.max_event_tags = limits.max_tag_elements = 1u << 20;
  std::vector<StoreCommitted> commits;
  auto sink = [&](std::uint64_t seq, std::string_view json) {
    auto parsed = nostr::parse_event(json, limits);
    if (!parsed) return;
    ++st.foreign;
    commits.push_back({std::make_shared<const nostr::Event>(std::move(parsed.value())),
                       std::make_shared<const std::string>(json), WriteOutcome::stored, seq});
  };
  try {
    st.tail_from = st.store->for_each_committed(st.tail_from, to, max, sink);
  } catch (const std::exception& failure) {
    // Nothing of a failed read is published: tail_from did not move, the next look reads the
    // same records again (publishing the part read would send them twice).
    ++st.failed_batches;
    log::warn(StoreWriterState::name, "reading other processes' commits failed: ", failure.what());
    return;
  }
  send_to_feed(self, std::move(commits));
}

/// The first sequence number a batch committed, or none.
std::optional<std::uint64_t> first_seq(const std::vector<store::WriteReport>& reports) {
  std::optional<std::uint64_t> first;
  for (const auto& r : reports)
    if (r.seq > 0 && (!first || r.seq < *first)) first = r.seq;
  return first;
}

store::BatchReport write_all(StoreWriterState& st) {
  try {
    std::span<const std::vector<nostr::EventId>> depends_on;
    if (st.any_dependencies) depends_on = st.depends_on;
    return st.store->commit_batch(st.pending, depends_on, st.held);
  } catch (const std::exception&) {
    // commit_batch reports LMDB failures as outcomes; anything else (e.g.
    // bad_alloc) must still answer every waiting client.
    return {std::vector<store::WriteReport>(st.pending.size()),
            std::vector<bool>(st.held.size(), false)};
  }
}

void flush(StoreWriterSelf self) {
  auto& st = self->state;
  st.flush_queued = false;
  if (st.pending.empty() && st.held.empty()) return;
  auto started = self->clock().now();
  auto batch = write_all(st);
  const auto& reports = batch.events;
  ++st.batches;
  // Failed: nothing of it was committed.
  bool failed = std::none_of(batch.held.begin(), batch.held.end(), [](bool ok) { return ok; }) &&
                std::all_of(reports.begin(), reports.end(), [](const store::WriteReport& r) {
                  return r.outcome == WriteOutcome::error;
                });
  st.failed_batches += failed;
  if (st.config.observe_commit)
    st.config.observe_commit(reports.size(),
                             std::chrono::duration<double>(self->clock().now() - started).count(),
                             failed);
  for (std::size_t i = 0; i < reports.size(); ++i) st.promises[i].deliver(reports[i].outcome);
  for (std::size_t i = 0; i < batch.held.size(); ++i)
    st.held_promises[i].deliver(static_cast<bool>(batch.held[i]));
  // Whatever another process committed before this transaction goes first, whole.
  if (auto first = first_seq(reports))
    publish_foreign(self, *first, std::numeric_limits<std::size_t>::max());
  publish(self, st.pending, reports);
  st.pending.clear();
  st.depends_on.clear();
  st.any_dependencies = false;
  st.promises.clear();
  st.held.clear();
  st.held_promises.clear();
}

/// Joins the next transaction: pending events, held changes and all.
void queue_flush(StoreWriterSelf self) {
  auto& st = self->state;
  if (st.pending.size() + st.held.size() >= st.config.max_batch) {
    flush(self);
  } else if (!st.flush_queued) {
    // Queued behind every write already in the mailbox: they all join
    // this batch.
    st.flush_queued = true;
    self->send(self, atom::store_flush::value);
  }
}

/// Queues one write for the next transaction and answers it after the commit.
caf::result<WriteOutcome> enqueue_write(StoreWriterSelf self, StoreWrite& msg) {
  auto& st = self->state;
  auto promise = self->make_response_promise<WriteOutcome>();
  st.pending.push_back(std::move(msg.event));
  st.any_dependencies = st.any_dependencies || !msg.depends_on.empty();
  st.depends_on.push_back(std::move(msg.depends_on));
  st.promises.push_back(promise);
  queue_flush(self);
  return promise;
}

/// Queues purgatory record changes for the next transaction; answered after the commit.
caf::result<bool> enqueue_held(StoreWriterSelf self, StoreHeld& msg) {
  auto& st = self->state;
  auto promise = self->make_response_promise<bool>();
  st.held.push_back(std::move(msg.changes));
  st.held_promises.push_back(promise);
  queue_flush(self);
  return promise;
}

/// Applies management list changes in a transaction of their own, after every write queued before
/// them (a banned event accepted earlier is committed, then deleted).
bool moderate(StoreWriterSelf self, const StoreModeration& changes) {
  auto& st = self->state;
  flush(self);
  try {
    st.store->apply_moderation(changes);
    return true;
  } catch (const std::exception& failure) {
    ++st.failed_batches;
    log::warn(StoreWriterState::name, "management list change failed: ", failure.what());
    return false;
  }
}

void subscribe(StoreWriterSelf self, const store_feed_actor& subscriber) {
  auto& subs = self->state.subscribers;
  if (!subscriber || std::find(subs.begin(), subs.end(), subscriber) != subs.end()) return;
  self->monitor(subscriber);
  subs.push_back(subscriber);
}

void drop_subscriber(StoreWriterSelf self, const caf::actor_addr& source) {
  auto& subs = self->state.subscribers;
  subs.erase(std::remove_if(subs.begin(), subs.end(),
                            [&](const store_feed_actor& s) { return s.address() == source; }),
             subs.end());
}

/// Deletes the NIP-40 expired events and re-arms the sweep timer. A failed sweep is logged (at most
/// one line per interval) and tried again on the next tick.
void sweep(StoreWriterSelf self) {
  auto& st = self->state;
  flush(self);  // keep commit order: pending writes go first
  try {
    st.swept += st.store->sweep_expired(st.store->now());
  } catch (const std::exception& failure) {
    ++st.failed_batches;
    log::warn(StoreWriterState::name, "expiration sweep failed: ", failure.what());
  }
  self->delayed_send(self, st.config.sweep_interval, atom::store_sweep::value);
}

/// Publishes what other processes (graspd sync, graspd import) committed since the last look. With
/// a tail interval the writer polls; without one, boot's file watch sends store_tail on writes.
void tail(StoreWriterSelf self) {
  auto& st = self->state;
  flush(self);  // keep commit order: pending writes go first
  publish_foreign(self, std::numeric_limits<std::uint64_t>::max(), st.config.tail_max);
  if (st.config.tail_interval.count() > 0)
    self->delayed_send(self, st.config.tail_interval, atom::store_tail::value);
}

}  // namespace

store_writer_actor::behavior_type store_writer(StoreWriterSelf self,
                                               std::shared_ptr<store::EventStore> store,
                                               StoreWriterConfig config) {
  self->state.store = std::move(store);
  self->state.config = config;
  if (config.max_batch == 0) self->state.config.max_batch = 1;
  self->set_down_handler([self](caf::down_msg& dm) { drop_subscriber(self, dm.source); });
  if (config.sweep_interval.count() > 0)
    self->delayed_send(self, config.sweep_interval, atom::store_sweep::value);
  self->state.tail_from = self->state.store->next_seq();
  if (config.tail_interval.count() > 0)
    self->delayed_send(self, config.tail_interval, atom::store_tail::value);
  return {
      [self](StoreWrite& msg) -> caf::result<WriteOutcome> { return enqueue_write(self, msg); },
      [self](StoreHeld& msg) -> caf::result<bool> { return enqueue_held(self, msg); },
      [self](const StoreModeration& msg) { return moderate(self, msg); },
      [self](atom::feed_subscribe, const store_feed_actor& subscriber) {
        subscribe(self, subscriber);
      },
      [self](atom::store_flush) { flush(self); },
      [self](atom::store_sweep) { sweep(self); },
      [self](atom::store_tail) { tail(self); },
  };
}

store_writer_actor spawn_store_writer(caf::actor_system& system,
                                      std::shared_ptr<store::EventStore> store,
                                      StoreWriterConfig config) {
  return system.spawn<caf::detached>(store_writer, std::move(store), config);
}

}  // namespace graspd

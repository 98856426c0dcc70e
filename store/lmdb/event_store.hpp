// LMDB event store: durable storage of Nostr events with the indexes that let
// every NIP-01 filter be answered without a full scan, and the NIP-01/09/40
// write rules (replaceable heads, deletions, expiration, ephemeral kinds).
//
// Threading: one writer (write_batch / sweep_expired, normally only the store
// writer actor) and any number of concurrent readers on any thread (query /
// count / get). Readers never block the writer: each query runs in its own
// read transaction (the env is opened with MDB_NOTLS).
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "messages/nostr/event.hpp"
#include "messages/nostr/filter.hpp"
#include "messages/nostr/negentropy.hpp"
#include "messages/relay_url.hpp"
#include "messages/store_messages.hpp"

struct MDB_env;
struct MDB_txn;

namespace graspd::store {

/// Version of the on-disk layout. Bump it whenever keys or records change;
/// opening a store written with another version is refused, except version 1, which is
/// migrated at open (2 only added the id tail, store/lmdb/id_index.hpp).
inline constexpr std::uint32_t kSchemaVersion = 2;

/// Thrown when the store cannot be opened or an LMDB call fails.
class StoreError : public std::runtime_error {
 public:
  StoreError(const std::string& what, int code = 0) : std::runtime_error(what), code_(code) {}
  int code() const { return code_; }

 private:
  int code_;
};

struct StoreOptions {
  std::filesystem::path path;
  /// Initial LMDB map size; the map grows (doubling) on MDB_MAP_FULL.
  std::size_t initial_map_size = std::size_t{1} << 30;
  /// Hard ceiling for map growth; reaching it makes writes fail with an error.
  std::size_t max_map_size = std::size_t{1} << 40;
  unsigned max_readers = 512;
  /// false sets MDB_NOSYNC: commits survive a process crash but not an OS
  /// crash. Only for benchmarks and bulk tooling; the relay keeps it true.
  bool durable = true;
  /// New ids are merged into the id index in bulk once this many events were committed since
  /// the last merge (store/lmdb/id_index.hpp): larger means fewer, longer merges and a larger
  /// in-memory map (~70 bytes per event). Tests lower it.
  std::uint64_t ids_merge_every = 32768;
  /// Seconds since the epoch; injectable so tests control NIP-40 expiration.
  std::function<std::int64_t()> clock;
  /// This relay's service (NGIT_DOMAIN): a NIP-62 request to vanish whose `relay` tag names it
  /// (or ALL_RELAYS) deletes its author's events (docs/store.md "Requests to vanish"). nullopt:
  /// only ALL_RELAYS names this relay.
  std::optional<HostPort> service;
};

/// One event handed to a query callback. Views point into the read
/// transaction's memory map and are valid only during the callback.
struct QueryHit {
  std::string_view json;
  const nostr::EventId& id;
  std::int64_t created_at;
  std::uint32_t kind;
};

struct QueryOptions {
  /// Cap on events returned per filter, also applied when a filter has no
  /// `limit` (the relay passes its configured maximum).
  std::uint64_t max_limit = 500;
};

/// Per-event result of write_batch, with the stored JSON when the event was
/// committed (stored or replaced_older) so the change feed needs no copy.
struct WriteReport {
  WriteOutcome outcome = WriteOutcome::error;
  std::shared_ptr<const std::string> json;
  /// The stored record's sequence number (commit order), 0 when nothing was stored.
  std::uint64_t seq = 0;
};

/// One event of a stored query's answer without its JSON: what loads it later (load_answer).
/// What one write transaction did: a report per event, and per set of held record changes whether
/// it was applied.
struct BatchReport {
  std::vector<WriteReport> events;
  std::vector<bool> held;
};

struct AnswerRef {
  std::uint64_t seq = 0;
  nostr::EventId id{};
};

/// A stored query's answer as references, in the order query() streams it, with its horizon.
struct QueryAnswer {
  std::vector<AnswerRef> refs;
  std::uint64_t horizon = 0;
  /// How many leading references query_refs already handed to its sink with their JSON.
  std::size_t loaded = 0;
};

/// Receives one event of an answer with its stored JSON (valid during the call only); returns
/// false to stop after it.
using AnswerSink = std::function<bool(const AnswerRef&, std::string_view json)>;

struct CountResult {
  std::uint64_t count = 0;
  bool approximate = false;
};

class EventStore {
 public:
  /// Opens (creating if needed) the store in options.path. Throws StoreError
  /// with a clear message on schema mismatch or LMDB failure.
  explicit EventStore(StoreOptions options);
  ~EventStore();
  EventStore(const EventStore&) = delete;
  EventStore& operator=(const EventStore&) = delete;

  /// Applies the events in order inside ONE write transaction and returns
  /// after the commit. Events later in the batch see the earlier ones.
  /// `depends_on`, when not empty, runs parallel to `events`: an event is
  /// applied only if every id listed for it is stored at that point, else its
  /// outcome is dependency_missing (see StoreWrite::depends_on).
  std::vector<WriteReport> write_batch_with_json(
      std::span<const nostr::EventPtr> events,
      std::span<const std::vector<nostr::EventId>> depends_on = {});
  std::vector<WriteOutcome> write_batch(std::span<const nostr::EventPtr> events);
  /// write_batch_with_json plus purgatory record changes, all in one transaction: the store
  /// writer's batch. When the transaction cannot be committed with the held changes (the store
  /// is full), the events are written without them and every held change is reported failed.
  BatchReport commit_batch(std::span<const nostr::EventPtr> events,
                           std::span<const std::vector<nostr::EventId>> depends_on,
                           std::span<const HeldRecordChanges> held);

  /// Deletes events whose NIP-40 expiration is <= now; returns how many.
  std::size_t sweep_expired(std::int64_t now);

  /// Streams the events matching any filter: per filter newest-first by
  /// created_at then lowest id, at most min(limit, max_limit) each; the union
  /// is delivered deduplicated in that same order. Expired events are hidden.
  /// Returns the snapshot's horizon: every event committed before the query
  /// started has a WriteReport::seq below it, every later one at or above it.
  std::uint64_t query(const nostr::Filters& filters,
                      const std::function<void(const QueryHit&)>& sink,
                      const QueryOptions& options = {}) const;
  /// The events query() would stream, as references (about 40 bytes each instead of the JSON),
  /// and the same horizon: a caller can load the answer piece by piece with load_answer. The first
  /// events, until `first` returns false, go to `first` with their JSON from the same read
  /// transaction (a small answer is then complete without a second one).
  QueryAnswer query_refs(const nostr::Filters& filters, const QueryOptions& options = {},
                         const AnswerSink& first = {}) const;
  /// Hands `sink` the stored JSON of each reference, in order, inside one read transaction, until
  /// the sink returns false. An event deleted, replaced or expired since query_refs is skipped.
  /// Returns how many references were handled (skipped ones and the last one sunk included).
  std::size_t load_answer(std::span<const AnswerRef> refs, const AnswerSink& sink) const;
  /// The (created_at, id) of the events matching `filter`, newest first, at
  /// most min(filter.limit, max) of them (among events sharing the last
  /// created_at, which ones is unspecified). Reads only the index and each
  /// record's header: no sort, no JSON (NIP-77 snapshots).
  void for_each_record_key(
      const nostr::Filter& filter, std::uint64_t max,
      const std::function<void(std::int64_t created_at, const nostr::EventId& id)>& sink) const;
  /// The NIP-77 items of the events matching `filter` (its own `limit` honoured, as strfry
  /// does), or nullopt when more than `max` match: the NGIT_NEGENTROPY_MAX_SYNC_EVENTS bound
  /// that the server, the sync and `graspd sync` all apply.
  std::optional<std::vector<nostr::negentropy::Item>> negentropy_items(const nostr::Filter& filter,
                                                                       std::uint64_t max) const;
  /// True when any stored, unexpired event matches any filter (a filter's limit of 0 matches
  /// nothing): the acceptance policy's existence questions, without collecting an answer.
  bool exists(const nostr::Filters& filters) const;
  /// NIP-45 COUNT: distinct events matching any filter (limits ignored).
  std::uint64_t count(const nostr::Filters& filters) const;
  /// COUNT examining at most `max_examined` index entries: past that the
  /// count so far comes back marked approximate (NIP-45 "approximate": true).
  CountResult count_bounded(const nostr::Filters& filters, std::uint64_t max_examined) const;

  /// Stored JSON of one event, if present and not expired.
  std::optional<std::string> get(const nostr::EventId& id) const;
  bool contains(const nostr::EventId& id) const;
  /// Every stored, unexpired event in storage order (for export); the sink
  /// returns false to stop.
  void for_each(const std::function<bool(std::string_view json)>& sink) const;

  /// The next record sequence number: every committed event, by this process or another one
  /// on the same store, has WriteReport::seq below it (a query's horizon, taken alone).
  std::uint64_t next_seq() const;
  /// Stored, unexpired events with `from` <= seq < `to`, in commit order, at most `max`: what
  /// another process (graspd sync, graspd import) committed there. Returns the sequence number
  /// to continue from (past the last record examined, or `from` when none).
  std::uint64_t for_each_committed(
      std::uint64_t from, std::uint64_t to, std::size_t max,
      const std::function<void(std::uint64_t seq, std::string_view json)>& sink) const;

  /// Purgatory records (docs/spec/git-hosting.md §6.5), beside the events and never served:
  /// `record` is opaque here (store/lmdb/store_view.hpp). Each call is one small write transaction:
  /// for tests and offline tools; the daemon changes them only through the store writer
  /// (commit_batch).
  void put_held(const nostr::EventId& id, std::string_view record);
  void erase_held(const nostr::EventId& id);
  /// Every held record in id order, until the sink returns false.
  void for_each_held(
      const std::function<bool(const nostr::EventId& id, std::string_view record)>& sink) const;

  /// The NIP-86 management lists (the "moderation" database) and the deletion of banned events:
  /// one write transaction; a banned event leaves `events` and `held` alike. For the store writer
  /// (the daemon's only writer) and tests. Throws StoreError when it cannot be committed.
  void apply_moderation(const StoreModeration& changes);
  /// Every management list entry, by list then key.
  void for_each_moderation(const std::function<void(const ModerationEntry&)>& sink) const;

  /// Message of the last failed write transaction ("error: ...").
  std::string last_error() const;

  std::uint64_t size() const;
  /// Stored events by kind (from the kind index: `graspd stats`). Expired events not yet swept
  /// are still counted, as in size().
  std::map<std::uint32_t, std::uint64_t> count_by_kind() const;
  std::size_t map_size() const;
  /// The ceiling map_size() may grow to (StoreOptions::max_map_size).
  std::size_t max_map_size() const { return options_.max_map_size; }
  const std::filesystem::path& path() const { return options_.path; }
  std::int64_t now() const { return options_.clock(); }

  struct Dbs;  // LMDB database handles (internal)

 private:
  template <class Fn>
  auto read(Fn&& fn) const;
  /// The next record sequence number as `txn` sees it (a query's horizon).
  std::uint64_t horizon(MDB_txn* txn) const;
  /// Rewrites a schema-1 store's meta as schema 2 inside the opening transaction.
  void migrate_from_v1(MDB_txn* txn);
  /// Doubles the map (up to max_map_size); false when it is at the ceiling already.
  bool grow_map();
  /// Another process grew the map (MDB_MAP_RESIZED): takes its size, with no transaction of
  /// this process open. Every transaction runs under remap_mutex_ held shared, so this waits.
  void adopt_map_size() const;
  /// Applies one set of held record changes inside `txn`.
  void apply_held(MDB_txn* txn, const HeldRecordChanges& changes);
  /// One attempt at a batch (begun again after a map resize or growth); nullopt when it could not
  /// be committed (last_error says why).
  std::optional<std::vector<WriteReport>> try_batch(
      std::span<const nostr::EventPtr> events,
      std::span<const std::shared_ptr<const std::string>> jsons,
      std::span<const std::vector<nostr::EventId>> depends_on,
      std::span<const HeldRecordChanges> held);
  /// Runs `fn(txn)` in a write transaction and commits, beginning again after a map resize.
  template <class Fn>
  void write_small(Fn&& fn);
  /// After a failed write transaction: true when it is worth beginning again (the map was
  /// grown or adopted).
  bool recover(const StoreError& error);

  StoreOptions options_;
  MDB_env* env_ = nullptr;
  std::unique_ptr<Dbs> dbs_;
  mutable std::size_t map_size_ = 0;
  // Remapping (map growth, or adopting another process's size) invalidates pointers of in-flight
  // transactions, so readers and the writer hold this shared and a remap holds it exclusively.
  mutable std::shared_mutex remap_mutex_;
  mutable std::mutex error_mutex_;
  std::string last_error_;
};

/// True for outcomes that answer `OK true`.
bool is_accepted(WriteOutcome outcome);
/// NIP-01 OK message for an outcome ("duplicate: already have this event", ...).
std::string_view ok_message(WriteOutcome outcome);

}  // namespace graspd::store

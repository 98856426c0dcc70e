// Internal: finding a stored event by id. `ids` (id -> seq) holds the events with seq < ids_upto
// (meta); the events committed since (the id tail, seq in [ids_upto, next_seq)) are found
// through RecentIds, an in-memory map this process rebuilds from the tail of `events`, and are
// merged into `ids` in bulk every `ids_merge_every` events. Why: ids are random, so each new
// event put straight into `ids` dirtied its own leaf page (and its branch) in every commit:
// ~1.8 of the ~4.5 pages a commit wrote per event into a 1M-event store. A bulk merge writes each
// leaf once for many ids (docs/benchmarks.md, "Publishing into a store of 1,000,000 events").
#pragma once

#include <lmdb.h>

#include <array>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <optional>
#include <string_view>
#include <unordered_map>

namespace graspd::store::detail {

inline constexpr std::string_view kIdsUptoKey = "ids_upto";

/// A snapshot's id tail: events with seq in [upto, next) are not in `ids`.
struct IdTail {
  std::uint64_t upto = 1;
  std::uint64_t next = 1;
};

/// Reads the id tail of txn's snapshot from `meta`.
IdTail read_id_tail(MDB_txn* txn, MDB_dbi meta);

/// Ids of the committed events of the id tail, shared by every transaction of the process.
/// Entries are hints: a hit is checked against the transaction's own `events` (a snapshot
/// older or newer than the map sees the record it should, or none).
class RecentIds {
 public:
  /// Adds the committed events of `tail` not seen yet and forgets those merged into `ids`.
  /// `txn` must see committed data only: a read transaction, or a write transaction before its
  /// first write.
  void catch_up(MDB_txn* txn, MDB_dbi events, const IdTail& tail);

  /// The seq of the event with `id` among the tail [tail.upto, tail.next) as `txn` sees it.
  std::optional<std::uint64_t> find(MDB_txn* txn, MDB_dbi events, const IdTail& tail,
                                    const std::uint8_t* id) const;

 private:
  using Id = std::array<std::uint8_t, 32>;
  struct IdHash {
    std::size_t operator()(const Id& id) const {
      std::size_t h;
      std::memcpy(&h, id.data(), sizeof h);  // ids are SHA-256: any 8 bytes are uniform
      return h;
    }
  };

  mutable std::mutex mutex_;
  std::uint64_t base_ = 1;  // the map covers committed seqs [base_, end_)
  std::uint64_t end_ = 1;
  std::unordered_map<Id, std::uint64_t, IdHash> seqs_;
};

/// The seq of the event stored with `id` in the view of a transaction that has written
/// nothing: `ids`, then the id tail.
std::optional<std::uint64_t> find_committed_id(MDB_txn* txn, MDB_dbi ids, MDB_dbi events,
                                               MDB_dbi meta, RecentIds& recent,
                                               const std::uint8_t* id);

/// Puts the ids of the stored events with seq in [from, to) into `ids` in id order (each leaf
/// page is written once for all its new ids).
void merge_ids(MDB_txn* txn, MDB_dbi ids, MDB_dbi events, std::uint64_t from, std::uint64_t to);

}  // namespace graspd::store::detail

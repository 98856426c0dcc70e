// Internal read side of the store: the index planner and the Reader that runs
// NIP-01 filters inside one read transaction. Not part of the public API.
#pragma once

#include <lmdb.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <limits>
#include <string_view>
#include <vector>

#include "messages/nostr/filter.hpp"
#include "store/lmdb/event_store.hpp"
#include "store/lmdb/record.hpp"

namespace graspd::store::detail {

/// One matching event; views point into the read transaction's memory map.
struct Candidate {
  std::int64_t created_at;
  const std::uint8_t* id;
  std::string_view json;
  std::uint64_t seq;
  std::uint32_t kind;
};

/// NIP-01 order (created_at desc, id asc) of candidates.
bool candidate_order(const Candidate& a, const Candidate& b);

/// The read side: runs filters inside one read transaction.
class Reader {
 public:
  using OnMatch = std::function<void(const Candidate&)>;

  Reader(MDB_txn* txn, const EventStore::Dbs& db, std::int64_t now)
      : txn_(txn), db_(db), now_(now) {}

  /// Index entries a scan may still examine; exhausted = the answer is partial.
  struct Budget {
    std::uint64_t left = std::numeric_limits<std::uint64_t>::max();
    bool exhausted = false;
    bool take() {
      if (left == 0) return !(exhausted = true);
      --left;
      return true;
    }
  };

  /// Appends to `out` the events matching `f`, at least the `limit` newest
  /// (plus events tied with the limit-th on created_at, up to tie_allowance(limit)
  /// of them), unsorted.
  void collect(const nostr::Filter& f, std::uint64_t limit, std::vector<Candidate>& out);

  /// The ties examined past the limit-th match. Ties are ordered by id, which the index does not
  /// hold, so an exact answer reads every tied event: thousands of events sharing one timestamp
  /// made a `limit:1` query read all of them.
  static std::uint64_t tie_allowance(std::uint64_t limit) {
    return std::max<std::uint64_t>(limit, 256);
  }

  /// As above, handing each match to `on_match` and stopping when `budget` runs out.
  void collect(const nostr::Filter& f, std::uint64_t limit, Budget& budget,
               const OnMatch& on_match);

  bool load(std::uint64_t seq, RecordView& r) const;

  /// True when any stored event matches `f` (its limit aside, unless 0). An address lookup
  /// (replaceable or addressable kinds, their authors and `d` values) reads the current versions
  /// straight from `heads`; on a miss it falls back to the index scan, which also finds an event
  /// whose matching `d` is not its first.
  bool any(const nostr::Filter& f);

 private:
  /// The `heads` keys of the addresses `f` names, when it names them all exactly (at most 16).
  std::vector<std::string> head_keys(const nostr::Filter& f) const;
  void collect_ids(const nostr::Filter& f, Budget& budget, const OnMatch& on_match);
  bool accept(const nostr::Filter& f, std::uint64_t seq, const OnMatch& on_match);

  MDB_txn* txn_;
  const EventStore::Dbs& db_;
  std::int64_t now_;
};

}  // namespace graspd::store::detail

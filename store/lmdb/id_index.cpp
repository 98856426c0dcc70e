#include "store/lmdb/id_index.hpp"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "store/lmdb/lmdb.hpp"
#include "store/lmdb/record.hpp"

namespace graspd::store::detail {

namespace {

constexpr std::string_view kNextSeq = "next_seq";

std::uint64_t meta_seq(MDB_txn* txn, MDB_dbi meta, std::string_view key) {
  auto v = lookup(txn, meta, key);
  return v && v->size() == 8 ? read_be64(v->data()) : 1;
}

/// Calls fn(seq, record) for the stored events with seq in [from, to), in seq order.
template <class Fn>
void scan_events(MDB_txn* txn, MDB_dbi events, std::uint64_t from, std::uint64_t to, Fn&& fn) {
  if (from >= to) return;
  Cursor cursor(txn, events);
  std::uint64_t seq = from;
  MDB_val k{sizeof seq, &seq}, v;
  int rc = mdb_cursor_get(cursor.get(), &k, &v, MDB_SET_RANGE);
  for (; rc == MDB_SUCCESS; rc = mdb_cursor_get(cursor.get(), &k, &v, MDB_NEXT)) {
    std::uint64_t at;
    std::memcpy(&at, k.mv_data, sizeof at);
    if (at >= to) return;
    RecordView r;
    if (decode_record(to_view(v), r)) fn(at, r);
  }
  if (rc != MDB_NOTFOUND) check(rc, "scan id tail");
}

bool holds(MDB_txn* txn, MDB_dbi events, std::uint64_t seq, const std::uint8_t* id) {
  MDB_val k{sizeof seq, &seq}, v;
  int rc = mdb_get(txn, events, &k, &v);
  if (rc == MDB_NOTFOUND) return false;
  check(rc, "get event");
  RecordView r;
  return decode_record(to_view(v), r) && std::memcmp(r.id, id, 32) == 0;
}

}  // namespace

IdTail read_id_tail(MDB_txn* txn, MDB_dbi meta) {
  return IdTail{meta_seq(txn, meta, kIdsUptoKey), meta_seq(txn, meta, kNextSeq)};
}

void RecentIds::catch_up(MDB_txn* txn, MDB_dbi events, const IdTail& tail) {
  std::lock_guard lock(mutex_);
  if (tail.upto > base_) {
    // Merged into `ids`: a snapshot from before that merge falls back to scanning (find).
    std::erase_if(seqs_, [&](const auto& entry) { return entry.second < tail.upto; });
    base_ = tail.upto;
  }
  std::uint64_t from = std::max(end_, base_);
  if (from >= tail.next) return;
  scan_events(txn, events, from, tail.next, [&](std::uint64_t seq, const RecordView& r) {
    Id id;
    std::memcpy(id.data(), r.id, id.size());
    seqs_[id] = seq;
  });
  end_ = tail.next;
}

std::optional<std::uint64_t> RecentIds::find(MDB_txn* txn, MDB_dbi events, const IdTail& tail,
                                             const std::uint8_t* id) const {
  if (tail.upto >= tail.next) return std::nullopt;
  std::optional<std::uint64_t> candidate;
  std::uint64_t covered_from;
  {
    std::lock_guard lock(mutex_);
    covered_from = base_;
    Id key;
    std::memcpy(key.data(), id, key.size());
    if (auto it = seqs_.find(key); it != seqs_.end()) candidate = it->second;
  }
  if (candidate && *candidate >= tail.upto && *candidate < tail.next &&
      holds(txn, events, *candidate, id))
    return candidate;
  // A snapshot older than the last merge the map has seen: its part of the tail was dropped
  // from the map; read it (bounded by ids_merge_every events).
  std::optional<std::uint64_t> found;
  scan_events(txn, events, tail.upto, std::min(covered_from, tail.next),
              [&](std::uint64_t seq, const RecordView& r) {
                if (!found && std::memcmp(r.id, id, 32) == 0) found = seq;
              });
  return found;
}

std::optional<std::uint64_t> find_committed_id(MDB_txn* txn, MDB_dbi ids, MDB_dbi events,
                                               MDB_dbi meta, RecentIds& recent,
                                               const std::uint8_t* id) {
  if (auto seq = lookup_seq(txn, ids, std::string_view(reinterpret_cast<const char*>(id), 32)))
    return seq;
  IdTail tail = read_id_tail(txn, meta);
  if (tail.upto >= tail.next) return std::nullopt;
  recent.catch_up(txn, events, tail);
  return recent.find(txn, events, tail, id);
}

void merge_ids(MDB_txn* txn, MDB_dbi ids, MDB_dbi events, std::uint64_t from, std::uint64_t to) {
  std::vector<std::pair<std::array<std::uint8_t, 32>, std::uint64_t>> entries;
  scan_events(txn, events, from, to, [&](std::uint64_t seq, const RecordView& r) {
    entries.emplace_back();
    std::memcpy(entries.back().first.data(), r.id, 32);
    entries.back().second = seq;
  });
  std::sort(entries.begin(), entries.end());
  std::string value;
  for (const auto& [id, seq] : entries) {
    value.clear();
    append_be64(value, seq);
    MDB_val k{id.size(), const_cast<std::uint8_t*>(id.data())}, v = to_val(value);
    check(mdb_put(txn, ids, &k, &v, 0), "merge ids");
  }
}

}  // namespace graspd::store::detail

#include "store/lmdb/query.hpp"

#include <algorithm>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <unordered_set>

#include "store/lmdb/lmdb.hpp"
#include "store/lmdb/schema.hpp"

namespace graspd::store::detail {

namespace {

// ---- filter matching on records -----------------------------------------

template <class T>
bool in_sorted(const std::optional<std::vector<T>>& values, const T& x) {
  return !values || std::binary_search(values->begin(), values->end(), x);
}

/// Same semantics as nostr::Filter::matches, evaluated on a stored record.
bool record_matches(const nostr::Filter& f, const RecordView& r) {
  if (f.since && r.created_at < *f.since) return false;
  if (f.until && r.created_at > *f.until) return false;
  if (!in_sorted(f.kinds, r.kind)) return false;
  if (f.authors) {
    nostr::Pubkey pk;
    std::memcpy(pk.data(), r.pubkey, 32);
    if (!in_sorted(f.authors, pk)) return false;
  }
  if (!in_sorted(f.ids, r.event_id())) return false;
  for (const auto& condition : f.tags) {
    // Not a structured binding: clang 14 cannot capture those in a lambda.
    const char letter = condition.first;
    const auto& wanted = condition.second;
    bool found = r.any_tag([&](char l, std::string_view value) {
      return l == letter &&
             std::binary_search(wanted.begin(), wanted.end(), value,
                                [](std::string_view a, std::string_view b) { return a < b; });
    });
    if (!found) return false;
  }
  return true;
}

// ---- index scans ---------------------------------------------------------

/// Walks one index range `prefix | time | seq` from `until` down to `since`.
class RangeCursor {
 public:
  RangeCursor(MDB_txn* txn, MDB_dbi dbi, std::string prefix, std::uint64_t since,
              std::uint64_t until)
      : cursor_(txn, dbi), prefix_(std::move(prefix)), since_(since) {
    std::string upper = prefix_;
    append_be64(upper, until);
    append_be64(upper, std::numeric_limits<std::uint64_t>::max());
    MDB_val k = to_val(upper), v;
    int rc = mdb_cursor_get(cursor_.get(), &k, &v, MDB_SET_RANGE);
    if (rc == MDB_NOTFOUND)
      rc = mdb_cursor_get(cursor_.get(), &k, &v, MDB_LAST);
    else if (rc == MDB_SUCCESS)
      rc = mdb_cursor_get(cursor_.get(), &k, &v, MDB_PREV);
    settle(rc, k);
  }
  bool valid() const { return valid_; }
  std::uint64_t time() const { return time_; }
  std::uint64_t seq() const { return seq_; }
  void next() {
    MDB_val k, v;
    settle(mdb_cursor_get(cursor_.get(), &k, &v, MDB_PREV), k);
  }

 private:
  void settle(int rc, const MDB_val& k) {
    valid_ = false;
    if (rc == MDB_NOTFOUND) return;
    check(rc, "index scan");
    if (k.mv_size != prefix_.size() + 16) return;
    auto bytes = static_cast<const char*>(k.mv_data);
    if (std::memcmp(bytes, prefix_.data(), prefix_.size()) != 0) return;
    time_ = read_be64(bytes + prefix_.size());
    if (time_ < since_) return;
    seq_ = read_be64(bytes + prefix_.size() + 8);
    valid_ = true;
  }

  Cursor cursor_;
  std::string prefix_;
  std::uint64_t since_;
  std::uint64_t time_ = 0;
  std::uint64_t seq_ = 0;
  bool valid_ = false;
};

/// An index plan: which DB and which key prefixes cover a filter.
struct Plan {
  MDB_dbi dbi;
  std::vector<std::string> prefixes;
};

Plan plan_for(const nostr::Filter& f, const EventStore::Dbs& db) {
  Plan plan{db.created, {""}};
  // An address lookup (kinds + authors + #d, as the acceptance policy and clients do for
  // repositories) goes through the `d` values: an author may have many events of one kind, but
  // few share a `d`.
  const auto d_values = f.tags.find('d');
  const bool address_lookup = d_values != f.tags.end() && d_values->second.size() <= 8;
  if (f.authors && f.kinds && !address_lookup) {
    plan = {db.pubkind, {}};
    for (const auto& pk : *f.authors)
      for (auto kind : *f.kinds) {
        std::string p;
        append_bytes(p, pk.data(), 32);
        append_be32(p, kind);
        plan.prefixes.push_back(std::move(p));
      }
  } else if (!f.tags.empty()) {
    // The letter with the fewest values needs the fewest cursors (`d` for an address lookup).
    auto best = address_lookup ? d_values
                               : std::min_element(f.tags.begin(), f.tags.end(),
                                                  [](const auto& a, const auto& b) {
                                                    return a.second.size() < b.second.size();
                                                  });
    plan = {db.tags, {}};
    for (const auto& value : best->second) plan.prefixes.push_back(tag_prefix(best->first, value));
    // Truncated long values can collide; one cursor per distinct prefix.
    std::sort(plan.prefixes.begin(), plan.prefixes.end());
    plan.prefixes.erase(std::unique(plan.prefixes.begin(), plan.prefixes.end()),
                        plan.prefixes.end());
  } else if (f.authors) {
    plan = {db.pubkey, {}};
    for (const auto& pk : *f.authors)
      plan.prefixes.emplace_back(reinterpret_cast<const char*>(pk.data()), 32);
  } else if (f.kinds) {
    plan = {db.kind, {}};
    for (auto kind : *f.kinds) {
      std::string p;
      append_be32(p, kind);
      plan.prefixes.push_back(std::move(p));
    }
  }
  return plan;
}

}  // namespace

bool candidate_order(const Candidate& a, const Candidate& b) {
  return newer_first(a.created_at, a.id, b.created_at, b.id);
}

void Reader::collect(const nostr::Filter& f, std::uint64_t limit, std::vector<Candidate>& out) {
  Budget unlimited;
  collect(f, limit, unlimited, [&](const Candidate& c) { out.push_back(c); });
}

void Reader::collect(const nostr::Filter& f, std::uint64_t limit, Budget& budget,
                     const OnMatch& on_match) {
  if (limit == 0 || f.is_unsatisfiable()) return;
  if (f.ids) return collect_ids(f, budget, on_match);
  Plan plan = plan_for(f, db_);
  std::uint64_t since = f.since ? sortable_time(*f.since) : 0;
  std::uint64_t until =
      f.until ? sortable_time(*f.until) : std::numeric_limits<std::uint64_t>::max();
  std::vector<std::unique_ptr<RangeCursor>> cursors;
  for (auto& prefix : plan.prefixes) {
    auto c = std::make_unique<RangeCursor>(txn_, plan.dbi, std::move(prefix), since, until);
    if (c->valid()) cursors.push_back(std::move(c));
  }
  auto by_time = [](const auto& a, const auto& b) { return a->time() < b->time(); };
  std::make_heap(cursors.begin(), cursors.end(), by_time);
  std::unordered_set<std::uint64_t> seen;
  std::uint64_t matched = 0;
  std::uint64_t boundary = 0;
  std::uint64_t ties_left = tie_allowance(limit);
  while (!cursors.empty()) {
    std::pop_heap(cursors.begin(), cursors.end(), by_time);
    auto& c = cursors.back();
    std::uint64_t time = c->time();
    std::uint64_t seq = c->seq();
    if (matched >= limit && (time < boundary || ties_left-- == 0)) break;
    if (!budget.take()) break;
    c->next();
    if (c->valid())
      std::push_heap(cursors.begin(), cursors.end(), by_time);
    else
      cursors.pop_back();
    if (plan.prefixes.size() > 1 && !seen.insert(seq).second) continue;
    if (!accept(f, seq, on_match)) continue;
    if (++matched == limit) boundary = time;
  }
}

bool Reader::load(std::uint64_t seq, RecordView& r) const {
  return load_record(txn_, db_.events, seq, r);
}

void Reader::collect_ids(const nostr::Filter& f, Budget& budget, const OnMatch& on_match) {
  for (const auto& id : *f.ids) {
    if (!budget.take()) return;
    auto seq = find_committed_id(txn_, db_.ids, db_.events, db_.meta, *db_.recent, id.data());
    if (seq) accept(f, *seq, on_match);
  }
}

std::vector<std::string> Reader::head_keys(const nostr::Filter& f) const {
  constexpr std::size_t max_keys = 16;
  if (f.ids || !f.kinds || !f.authors) return {};
  const auto d_values = f.tags.find('d');
  const bool has_d = d_values != f.tags.end();
  std::size_t count = 0;
  for (auto kind : *f.kinds) {
    if (!has_address(kind) || (nostr::is_addressable(kind) && !has_d)) return {};
    count += nostr::is_addressable(kind) ? d_values->second.size() : 1;
  }
  if (count * f.authors->size() > max_keys) return {};
  std::vector<std::string> keys;
  keys.reserve(count * f.authors->size());
  for (const auto& pk : *f.authors)
    for (auto kind : *f.kinds) {
      if (!nostr::is_addressable(kind)) {
        keys.push_back(address_key(pk.data(), kind, {}));
        continue;
      }
      for (const auto& d : d_values->second) keys.push_back(address_key(pk.data(), kind, d));
    }
  return keys;
}

bool Reader::any(const nostr::Filter& f) {
  if ((f.limit && *f.limit == 0) || f.is_unsatisfiable()) return false;
  bool found = false;
  Budget budget;
  // The first match ends the scan: nothing is collected, so no tie needs reading.
  const OnMatch note = [&](const Candidate&) {
    found = true;
    budget.left = 0;
  };
  for (const auto& key : head_keys(f))
    if (auto seq = lookup_seq(txn_, db_.heads, key); seq && accept(f, *seq, note)) return true;
  collect(f, 1, budget, note);
  return found;
}

bool Reader::accept(const nostr::Filter& f, std::uint64_t seq, const OnMatch& on_match) {
  RecordView r;
  if (!load(seq, r) || is_expired(r, now_) || !record_matches(f, r)) return false;
  on_match(Candidate{r.created_at, r.id, r.json, seq, r.kind});
  return true;
}

}  // namespace graspd::store::detail

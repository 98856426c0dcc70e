#include "store/event_store.hpp"

#include <lmdb.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <limits>
#include <mutex>
#include <unordered_set>

#include "messages/nostr/json.hpp"
#include "messages/nostr/nip34.hpp"
#include "store/record.hpp"

namespace graspd::store {

using detail::RecordView;

struct EventStore::Dbs {
  MDB_dbi meta = 0;     // "schema_version" -> decimal text, "next_seq" -> be64
  MDB_dbi events = 0;   // seq (native u64, MDB_INTEGERKEY) -> record
  MDB_dbi ids = 0;      // id[32] -> seq be64
  MDB_dbi created = 0;  // time be64 | seq be64
  MDB_dbi pubkey = 0;   // pubkey[32] | time | seq
  MDB_dbi kind = 0;     // kind be32 | time | seq
  MDB_dbi pubkind = 0;  // pubkey[32] | kind be32 | time | seq
  MDB_dbi tags = 0;     // letter | len | value | time | seq
  MDB_dbi expiry = 0;   // expiration be64 | seq be64
  MDB_dbi heads = 0;    // address key -> seq be64 (current replaceable/addressable version)
  MDB_dbi deleted = 0;  // 'i' id pubkey -> "" ; 'a' address key -> deletion created_at be64
};

namespace {

constexpr std::string_view kSchemaKey = "schema_version";
constexpr std::string_view kNextSeqKey = "next_seq";

void check(int rc, const char* what) {
  if (rc != MDB_SUCCESS)
    throw StoreError(std::string("error: store: ") + what + ": " + mdb_strerror(rc), rc);
}

MDB_val to_val(std::string_view s) {
  return MDB_val{s.size(), const_cast<char*>(s.data())};
}
std::string_view to_view(const MDB_val& v) {
  return std::string_view(static_cast<const char*>(v.mv_data), v.mv_size);
}

std::string be64_string(std::uint64_t v) {
  std::string out;
  detail::append_be64(out, v);
  return out;
}

/// Owns a transaction; aborts it unless committed.
class Txn {
 public:
  Txn(MDB_env* env, unsigned flags) {
    int rc = mdb_txn_begin(env, nullptr, flags, &txn_);
    if (rc == MDB_MAP_RESIZED) {
      // Another process grew the map: adopt its size and retry once.
      check(mdb_env_set_mapsize(env, 0), "adopt map size");
      rc = mdb_txn_begin(env, nullptr, flags, &txn_);
    }
    check(rc, "begin transaction");
  }
  ~Txn() {
    if (txn_) mdb_txn_abort(txn_);
  }
  Txn(const Txn&) = delete;
  Txn& operator=(const Txn&) = delete;
  MDB_txn* get() const { return txn_; }
  void commit() {
    int rc = mdb_txn_commit(txn_);
    txn_ = nullptr;
    check(rc, "commit");
  }

 private:
  MDB_txn* txn_ = nullptr;
};

class Cursor {
 public:
  Cursor(MDB_txn* txn, MDB_dbi dbi) { check(mdb_cursor_open(txn, dbi, &cursor_), "open cursor"); }
  ~Cursor() { mdb_cursor_close(cursor_); }
  Cursor(const Cursor&) = delete;
  Cursor& operator=(const Cursor&) = delete;
  MDB_cursor* get() const { return cursor_; }

 private:
  MDB_cursor* cursor_ = nullptr;
};

std::optional<std::string_view> lookup(MDB_txn* txn, MDB_dbi dbi, std::string_view key) {
  MDB_val k = to_val(key), v;
  int rc = mdb_get(txn, dbi, &k, &v);
  if (rc == MDB_NOTFOUND) return std::nullopt;
  check(rc, "get");
  return to_view(v);
}

std::optional<std::uint64_t> lookup_seq(MDB_txn* txn, MDB_dbi dbi, std::string_view key) {
  auto v = lookup(txn, dbi, key);
  if (!v || v->size() != 8) return std::nullopt;
  return detail::read_be64(v->data());
}

bool load_record(MDB_txn* txn, MDB_dbi events, std::uint64_t seq, RecordView& out) {
  MDB_val k{sizeof seq, &seq}, v;
  int rc = mdb_get(txn, events, &k, &v);
  if (rc == MDB_NOTFOUND) return false;
  check(rc, "get event");
  return detail::decode_record(to_view(v), out);
}

std::string_view id_view(const std::uint8_t* id) {
  return std::string_view(reinterpret_cast<const char*>(id), 32);
}

bool is_expired(const RecordView& r, std::int64_t now) {
  return r.expiration != 0 && r.expiration <= now;
}

/// (created_at desc, id asc): NIP-01 order of a REQ's stored events.
bool newer_first(std::int64_t ts_a, const std::uint8_t* id_a, std::int64_t ts_b,
                 const std::uint8_t* id_b) {
  if (ts_a != ts_b) return ts_a > ts_b;
  return std::memcmp(id_a, id_b, 32) < 0;
}

std::string_view address_d(std::uint32_t kind, std::string_view d) {
  return nostr::is_addressable(kind) ? d : std::string_view{};
}

bool has_address(std::uint32_t kind) {
  return nostr::is_replaceable(kind) || nostr::is_addressable(kind);
}

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
    detail::append_be64(upper, until);
    detail::append_be64(upper, std::numeric_limits<std::uint64_t>::max());
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
    time_ = detail::read_be64(bytes + prefix_.size());
    if (time_ < since_) return;
    seq_ = detail::read_be64(bytes + prefix_.size() + 8);
    valid_ = true;
  }

  Cursor cursor_;
  std::string prefix_;
  std::uint64_t since_;
  std::uint64_t time_ = 0;
  std::uint64_t seq_ = 0;
  bool valid_ = false;
};

struct Candidate {
  std::int64_t created_at;
  const std::uint8_t* id;
  std::string_view json;
  std::uint64_t seq;
  std::uint32_t kind;
};

bool candidate_order(const Candidate& a, const Candidate& b) {
  return newer_first(a.created_at, a.id, b.created_at, b.id);
}

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
        detail::append_bytes(p, pk.data(), 32);
        detail::append_be32(p, kind);
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
    for (const auto& value : best->second)
      plan.prefixes.push_back(detail::tag_prefix(best->first, value));
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
      detail::append_be32(p, kind);
      plan.prefixes.push_back(std::move(p));
    }
  }
  return plan;
}

/// The read side: runs filters inside one read transaction.
class Reader {
 public:
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
  void collect(const nostr::Filter& f, std::uint64_t limit, std::vector<Candidate>& out) {
    Budget unlimited;
    collect(f, limit, unlimited, [&](const Candidate& c) { out.push_back(c); });
  }

  /// The ties examined past the limit-th match. Ties are ordered by id, which the index does not
  /// hold, so an exact answer reads every tied event: thousands of events sharing one timestamp
  /// made a `limit:1` query read all of them.
  static std::uint64_t tie_allowance(std::uint64_t limit) {
    return std::max<std::uint64_t>(limit, 256);
  }

  template <class OnMatch>
  void collect(const nostr::Filter& f, std::uint64_t limit, Budget& budget, OnMatch&& on_match) {
    if (limit == 0 || f.is_unsatisfiable()) return;
    if (f.ids) return collect_ids(f, budget, on_match);
    Plan plan = plan_for(f, db_);
    std::uint64_t since = f.since ? detail::sortable_time(*f.since) : 0;
    std::uint64_t until =
        f.until ? detail::sortable_time(*f.until) : std::numeric_limits<std::uint64_t>::max();
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

  bool load(std::uint64_t seq, RecordView& r) const {
    return load_record(txn_, db_.events, seq, r);
  }

 private:
  template <class OnMatch>
  void collect_ids(const nostr::Filter& f, Budget& budget, OnMatch& on_match) {
    for (const auto& id : *f.ids) {
      if (!budget.take()) return;
      auto seq = lookup_seq(txn_, db_.ids, id_view(id.data()));
      if (seq) accept(f, *seq, on_match);
    }
  }

  template <class OnMatch>
  bool accept(const nostr::Filter& f, std::uint64_t seq, OnMatch& on_match) {
    RecordView r;
    if (!load(seq, r) || is_expired(r, now_) || !record_matches(f, r)) return false;
    on_match(Candidate{r.created_at, r.id, r.json, seq, r.kind});
    return true;
  }

  MDB_txn* txn_;
  const EventStore::Dbs& db_;
  std::int64_t now_;
};

// ---- the write side ------------------------------------------------------

/// Applies events inside one write transaction.
class Writer {
 public:
  Writer(MDB_txn* txn, const EventStore::Dbs& db, std::int64_t now)
      : txn_(txn), db_(db), now_(now) {
    auto v = lookup(txn_, db_.meta, kNextSeqKey);
    next_seq_ = v && v->size() == 8 ? detail::read_be64(v->data()) : 1;
  }

  void finish() { put(db_.meta, kNextSeqKey, be64_string(next_seq_)); }
  /// Sequence number of the record the last stored/replaced outcome inserted.
  std::uint64_t last_seq() const { return next_seq_ - 1; }

  /// True when every event in `ids` is stored, counting this transaction's earlier writes.
  bool all_stored(std::span<const nostr::EventId> ids) const {
    return std::all_of(ids.begin(), ids.end(), [&](const nostr::EventId& id) {
      return lookup(txn_, db_.ids, id_view(id.data())).has_value();
    });
  }

  WriteOutcome apply(const nostr::Event& ev, std::string_view json) {
    if (nostr::is_ephemeral(ev.kind)) return WriteOutcome::ephemeral_not_stored;
    std::int64_t expiration = detail::expiration_of(ev);
    if (expiration != 0 && expiration <= now_) return WriteOutcome::expired;
    if (lookup(txn_, db_.ids, id_view(ev.id.data()))) return WriteOutcome::duplicate;
    if (lookup(txn_, db_.deleted, deleted_id_key(ev.id.data(), ev.pubkey.data())))
      return WriteOutcome::deleted;
    WriteOutcome outcome = WriteOutcome::stored;
    if (has_address(ev.kind)) {
      std::string address =
          detail::address_key(ev.pubkey.data(), ev.kind, address_d(ev.kind, ev.d_tag()));
      if (auto deleted_until = lookup(txn_, db_.deleted, "a" + address);
          deleted_until && deleted_until->size() == 8 &&
          ev.created_at <= detail::time_from_sortable(detail::read_be64(deleted_until->data())))
        return WriteOutcome::deleted;
      if (auto head = lookup_seq(txn_, db_.heads, address)) {
        RecordView current;
        if (load(*head, current)) {
          if (!newer_first(ev.created_at, ev.id.data(), current.created_at, current.id))
            return WriteOutcome::rejected_older_version;
          erase(*head);
          outcome = WriteOutcome::replaced_older;
        }
      }
    }
    insert(ev, expiration, json);
    if (ev.kind == nostr::nip34::kind::deletion) apply_deletion(ev);
    return outcome;
  }

  /// Deletes events with expiration <= now, at most `max` of them.
  std::size_t sweep(std::int64_t now, std::size_t max) {
    std::vector<std::uint64_t> doomed;
    {
      Cursor c(txn_, db_.expiry);
      MDB_val k, v;
      int rc = mdb_cursor_get(c.get(), &k, &v, MDB_FIRST);
      while (rc == MDB_SUCCESS && doomed.size() < max) {
        if (k.mv_size != 16) break;
        auto bytes = static_cast<const char*>(k.mv_data);
        if (detail::time_from_sortable(detail::read_be64(bytes)) > now) break;
        doomed.push_back(detail::read_be64(bytes + 8));
        rc = mdb_cursor_get(c.get(), &k, &v, MDB_NEXT);
      }
      if (rc != MDB_SUCCESS && rc != MDB_NOTFOUND) check(rc, "expiry scan");
    }
    for (auto seq : doomed) erase(seq);
    return doomed.size();
  }

 private:
  static std::string deleted_id_key(const std::uint8_t* id, const std::uint8_t* pubkey) {
    std::string key = "i";
    detail::append_bytes(key, id, 32);
    detail::append_bytes(key, pubkey, 32);
    return key;
  }

  bool load(std::uint64_t seq, RecordView& r) const {
    return load_record(txn_, db_.events, seq, r);
  }

  void put(MDB_dbi dbi, std::string_view key, std::string_view value) {
    MDB_val k = to_val(key), v = to_val(value);
    check(mdb_put(txn_, dbi, &k, &v, 0), "put");
  }
  void del(MDB_dbi dbi, std::string_view key) {
    MDB_val k = to_val(key);
    int rc = mdb_del(txn_, dbi, &k, nullptr);
    if (rc != MDB_NOTFOUND) check(rc, "delete");
  }

  /// Calls fn(dbi, key) for every index entry of a record.
  template <class Fn>
  void for_each_index_key(const RecordView& r, std::uint64_t seq, Fn&& fn) {
    std::string suffix;
    detail::append_be64(suffix, detail::sortable_time(r.created_at));
    detail::append_be64(suffix, seq);
    std::string kind;
    detail::append_be32(kind, r.kind);
    std::string pubkey(reinterpret_cast<const char*>(r.pubkey), 32);
    fn(db_.created, suffix);
    fn(db_.pubkey, pubkey + suffix);
    fn(db_.kind, kind + suffix);
    fn(db_.pubkind, pubkey + kind + suffix);
    r.any_tag([&](char letter, std::string_view value) {
      fn(db_.tags, detail::tag_prefix(letter, value) + suffix);
      return false;
    });
    if (r.expiration != 0) {
      std::string key;
      detail::append_be64(key, detail::sortable_time(r.expiration));
      detail::append_be64(key, seq);
      fn(db_.expiry, key);
    }
  }

  void insert(const nostr::Event& ev, std::int64_t expiration, std::string_view json) {
    std::uint64_t seq = next_seq_++;
    std::string record = detail::encode_record(ev, expiration, json);
    MDB_val k{sizeof seq, &seq}, v = to_val(record);
    check(mdb_put(txn_, db_.events, &k, &v, MDB_APPEND), "put event");
    std::string seq_be = be64_string(seq);
    put(db_.ids, id_view(ev.id.data()), seq_be);
    RecordView r;
    detail::decode_record(record, r);
    for_each_index_key(r, seq, [&](MDB_dbi dbi, const std::string& key) { put(dbi, key, {}); });
    if (has_address(ev.kind))
      put(db_.heads, detail::address_key(ev.pubkey.data(), ev.kind, address_d(ev.kind, ev.d_tag())),
          seq_be);
  }

  void erase(std::uint64_t seq) {
    RecordView view;
    if (!load(seq, view)) return;
    // Deleting the record may free its page; work on a copy.
    std::string record(reinterpret_cast<const char*>(view.id),
                       detail::kHeaderSize + view.tags.size());
    RecordView r;
    detail::decode_record(record, r);
    for_each_index_key(r, seq, [&](MDB_dbi dbi, const std::string& key) { del(dbi, key); });
    del(db_.ids, id_view(r.id));
    if (has_address(r.kind)) {
      std::string address = detail::address_key(r.pubkey, r.kind, address_d(r.kind, r.d_tag()));
      if (lookup_seq(txn_, db_.heads, address) == seq) del(db_.heads, address);
    }
    MDB_val k{sizeof seq, &seq};
    check(mdb_del(txn_, db_.events, &k, nullptr), "delete event");
  }

  void apply_deletion(const nostr::Event& request) {
    for (const auto& tag : request.tags) {
      if (tag.size() < 2) continue;
      if (tag[0] == "e") delete_by_id(request, tag[1]);
      if (tag[0] == "a") delete_by_address(request, tag[1]);
    }
  }

  void delete_by_id(const nostr::Event& request, std::string_view id_hex) {
    nostr::EventId id;
    if (!nostr::from_hex(id_hex, id)) return;
    // Remembered per (id, author): only the author's own re-submission is refused.
    put(db_.deleted, deleted_id_key(id.data(), request.pubkey.data()), {});
    auto seq = lookup_seq(txn_, db_.ids, id_view(id.data()));
    RecordView target;
    if (!seq || !load(*seq, target)) return;
    // Deleting a deletion request has no effect (NIP-09).
    if (target.kind == nostr::nip34::kind::deletion ||
        std::memcmp(target.pubkey, request.pubkey.data(), 32) != 0)
      return;
    erase(*seq);
  }

  void delete_by_address(const nostr::Event& request, std::string_view text) {
    auto address = nostr::nip34::parse_address(text);
    if (!address || address->author != request.pubkey) return;
    std::string key = detail::address_key(address->author.data(), address->kind,
                                          address_d(address->kind, address->identifier));
    std::int64_t until = request.created_at;
    if (auto previous = lookup(txn_, db_.deleted, "a" + key); previous && previous->size() == 8)
      until = std::max(until, detail::time_from_sortable(detail::read_be64(previous->data())));
    put(db_.deleted, "a" + key, be64_string(detail::sortable_time(until)));
    auto head = lookup_seq(txn_, db_.heads, key);
    RecordView current;
    if (head && load(*head, current) && current.created_at <= request.created_at) erase(*head);
  }

  MDB_txn* txn_;
  const EventStore::Dbs& db_;
  std::int64_t now_;
  std::uint64_t next_seq_ = 1;
};

std::int64_t system_now() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

// ---- EventStore ----------------------------------------------------------

EventStore::EventStore(StoreOptions options) : options_(std::move(options)), dbs_(new Dbs) {
  if (!options_.clock) options_.clock = system_now;
  std::error_code ec;
  std::filesystem::create_directories(options_.path, ec);
  if (ec)
    throw StoreError("error: store: cannot create directory " + options_.path.string() + ": " +
                     ec.message());
  check(mdb_env_create(&env_), "create environment");
  try {
    check(mdb_env_set_maxdbs(env_, 16), "set max dbs");
    check(mdb_env_set_maxreaders(env_, options_.max_readers), "set max readers");
    check(mdb_env_set_mapsize(env_, options_.initial_map_size), "set map size");
    unsigned flags = MDB_NOTLS | MDB_NORDAHEAD | (options_.durable ? 0 : MDB_NOSYNC);
    int rc = mdb_env_open(env_, options_.path.c_str(), flags, 0644);
    if (rc != MDB_SUCCESS)
      throw StoreError("error: store: cannot open LMDB environment at " + options_.path.string() +
                           ": " + mdb_strerror(rc),
                       rc);
    MDB_envinfo info;
    mdb_env_info(env_, &info);
    map_size_ = info.me_mapsize;

    Txn txn(env_, 0);
    auto open = [&](const char* name, unsigned db_flags, MDB_dbi& dbi) {
      check(mdb_dbi_open(txn.get(), name, db_flags | MDB_CREATE, &dbi), name);
    };
    open("meta", 0, dbs_->meta);
    open("events", MDB_INTEGERKEY, dbs_->events);
    open("ids", 0, dbs_->ids);
    open("created", 0, dbs_->created);
    open("pubkey", 0, dbs_->pubkey);
    open("kind", 0, dbs_->kind);
    open("pubkind", 0, dbs_->pubkind);
    open("tags", 0, dbs_->tags);
    open("expiry", 0, dbs_->expiry);
    open("heads", 0, dbs_->heads);
    open("deleted", 0, dbs_->deleted);
    std::string expected = std::to_string(kSchemaVersion);
    if (auto version = lookup(txn.get(), dbs_->meta, kSchemaKey)) {
      if (*version != expected)
        throw StoreError("error: store at " + options_.path.string() + " has schema version " +
                         std::string(*version) + " but this graspd supports only version " +
                         expected + "; export it with the matching graspd and import it again");
    } else {
      MDB_val k = to_val(kSchemaKey), v = to_val(expected);
      check(mdb_put(txn.get(), dbs_->meta, &k, &v, 0), "write schema version");
    }
    txn.commit();
  } catch (...) {
    mdb_env_close(env_);
    throw;
  }
}

EventStore::~EventStore() {
  mdb_env_close(env_);
}

template <class Fn>
auto EventStore::read(Fn&& fn) const {
  std::shared_lock lock(remap_mutex_);
  Txn txn(env_, MDB_RDONLY);
  return fn(txn.get());
}

void EventStore::grow_map() {
  std::unique_lock lock(remap_mutex_);
  std::size_t next = std::min(map_size_ * 2, options_.max_map_size);
  check(mdb_env_set_mapsize(env_, next), "grow map");
  MDB_envinfo info;
  mdb_env_info(env_, &info);
  map_size_ = info.me_mapsize;
}

std::vector<WriteReport> EventStore::write_batch_with_json(
    std::span<const nostr::EventPtr> events,
    std::span<const std::vector<nostr::EventId>> depends_on) {
  std::vector<std::shared_ptr<const std::string>> jsons(events.size());
  for (std::size_t i = 0; i < events.size(); ++i)
    if (events[i] && !nostr::is_ephemeral(events[i]->kind))
      jsons[i] = std::make_shared<const std::string>(nostr::serialize_event(*events[i]));
  std::vector<WriteReport> reports(events.size());
  for (;;) {
    try {
      Txn txn(env_, 0);
      Writer writer(txn.get(), *dbs_, now());
      for (std::size_t i = 0; i < events.size(); ++i) {
        if (!events[i]) {
          reports[i] = {WriteOutcome::error, nullptr, 0};
          continue;
        }
        WriteOutcome outcome =
            i < depends_on.size() && !writer.all_stored(depends_on[i])
                ? WriteOutcome::dependency_missing
                : writer.apply(*events[i], jsons[i] ? *jsons[i] : std::string_view{});
        bool committed = outcome == WriteOutcome::stored || outcome == WriteOutcome::replaced_older;
        reports[i] = {outcome, committed ? jsons[i] : nullptr, committed ? writer.last_seq() : 0};
      }
      writer.finish();
      txn.commit();
      return reports;
    } catch (const StoreError& e) {
      if (e.code() == MDB_MAP_FULL && map_size_ < options_.max_map_size) {
        grow_map();
        continue;
      }
      std::string message = e.code() == MDB_MAP_FULL
                                ? "error: store full: map size limit of " +
                                      std::to_string(options_.max_map_size) + " bytes reached"
                                : e.what();
      {
        std::lock_guard lock(error_mutex_);
        last_error_ = message;
      }
      for (auto& r : reports) r = {WriteOutcome::error, nullptr, 0};
      return reports;
    }
  }
}

std::vector<WriteOutcome> EventStore::write_batch(std::span<const nostr::EventPtr> events) {
  std::vector<WriteOutcome> outcomes;
  outcomes.reserve(events.size());
  for (auto& report : write_batch_with_json(events)) outcomes.push_back(report.outcome);
  return outcomes;
}

std::string EventStore::last_error() const {
  std::lock_guard lock(error_mutex_);
  return last_error_;
}

std::size_t EventStore::sweep_expired(std::int64_t now) {
  constexpr std::size_t kPerTxn = 10000;
  std::size_t total = 0;
  for (;;) {
    std::size_t swept = 0;
    try {
      Txn txn(env_, 0);
      Writer writer(txn.get(), *dbs_, now);
      swept = writer.sweep(now, kPerTxn);
      txn.commit();
    } catch (const StoreError& e) {
      if (e.code() == MDB_MAP_FULL && map_size_ < options_.max_map_size) {
        grow_map();
        continue;
      }
      throw;
    }
    total += swept;
    if (swept < kPerTxn) return total;
  }
}

std::uint64_t EventStore::query(const nostr::Filters& filters,
                                const std::function<void(const QueryHit&)>& sink,
                                const QueryOptions& options) const {
  return read([&](MDB_txn* txn) {
    auto next = lookup(txn, dbs_->meta, kNextSeqKey);
    std::uint64_t horizon = next && next->size() == 8 ? detail::read_be64(next->data()) : 1;
    Reader reader(txn, *dbs_, now());
    std::vector<Candidate> all;
    std::vector<Candidate> one;
    for (const auto& filter : filters) {
      std::uint64_t limit = std::min(filter.limit.value_or(options.max_limit), options.max_limit);
      one.clear();
      reader.collect(filter, limit, one);
      std::sort(one.begin(), one.end(), candidate_order);
      if (one.size() > limit) one.resize(limit);
      all.insert(all.end(), one.begin(), one.end());
    }
    if (filters.size() > 1) {
      std::sort(all.begin(), all.end(), candidate_order);
      all.erase(std::unique(all.begin(), all.end(),
                            [](const Candidate& a, const Candidate& b) { return a.seq == b.seq; }),
                all.end());
    }
    for (const auto& c : all)
      sink(QueryHit{c.json, *reinterpret_cast<const nostr::EventId*>(c.id), c.created_at, c.kind});
    return horizon;
  });
}

std::uint64_t EventStore::count(const nostr::Filters& filters) const {
  return count_bounded(filters, std::numeric_limits<std::uint64_t>::max()).count;
}

CountResult EventStore::count_bounded(const nostr::Filters& filters,
                                      std::uint64_t max_examined) const {
  return read([&](MDB_txn* txn) {
    Reader reader(txn, *dbs_, now());
    Reader::Budget budget{max_examined};
    constexpr auto no_limit = std::numeric_limits<std::uint64_t>::max();
    // Counted, not collected: a count over millions of events holds no list of them.
    std::uint64_t single = 0;
    std::unordered_set<std::uint64_t> distinct;
    for (const auto& filter : filters) {
      reader.collect(filter, no_limit, budget, [&](const Candidate& c) {
        if (filters.size() == 1)
          ++single;
        else
          distinct.insert(c.seq);
      });
      if (budget.exhausted) break;
    }
    return CountResult{filters.size() == 1 ? single : distinct.size(), budget.exhausted};
  });
}

std::optional<std::string> EventStore::get(const nostr::EventId& id) const {
  return read([&](MDB_txn* txn) -> std::optional<std::string> {
    auto seq = lookup_seq(txn, dbs_->ids, id_view(id.data()));
    RecordView r;
    if (!seq || !load_record(txn, dbs_->events, *seq, r) || is_expired(r, now()))
      return std::nullopt;
    return std::string(r.json);
  });
}

bool EventStore::contains(const nostr::EventId& id) const {
  return get(id).has_value();
}

void EventStore::for_each(const std::function<bool(std::string_view json)>& sink) const {
  read([&](MDB_txn* txn) {
    Cursor c(txn, dbs_->events);
    std::int64_t t = now();
    MDB_val k, v;
    int rc = mdb_cursor_get(c.get(), &k, &v, MDB_FIRST);
    for (; rc == MDB_SUCCESS; rc = mdb_cursor_get(c.get(), &k, &v, MDB_NEXT)) {
      RecordView r;
      if (!detail::decode_record(to_view(v), r) || is_expired(r, t)) continue;
      if (!sink(r.json)) return 0;
    }
    if (rc != MDB_NOTFOUND) check(rc, "scan events");
    return 0;
  });
}

std::uint64_t EventStore::size() const {
  return read([&](MDB_txn* txn) {
    MDB_stat stat;
    check(mdb_stat(txn, dbs_->events, &stat), "stat");
    return static_cast<std::uint64_t>(stat.ms_entries);
  });
}

std::size_t EventStore::map_size() const {
  std::shared_lock lock(remap_mutex_);
  return map_size_;
}

bool is_accepted(WriteOutcome outcome) {
  switch (outcome) {
    case WriteOutcome::stored:
    case WriteOutcome::duplicate:
    case WriteOutcome::replaced_older:
    case WriteOutcome::ephemeral_not_stored:
      return true;
    default:
      return false;
  }
}

std::string_view ok_message(WriteOutcome outcome) {
  switch (outcome) {
    case WriteOutcome::stored:
    case WriteOutcome::replaced_older:
    case WriteOutcome::ephemeral_not_stored:
      return "";
    case WriteOutcome::duplicate:
      return "duplicate: already have this event";
    case WriteOutcome::rejected_older_version:
      return "duplicate: an older version (a newer one is stored)";
    case WriteOutcome::deleted:
      return "blocked: this event was deleted by its author";
    case WriteOutcome::expired:
      return "invalid: event has expired";
    case WriteOutcome::dependency_missing:
      return "blocked: an event it depends on was not stored";
    case WriteOutcome::error:
      break;
  }
  return "error: could not store the event";
}

}  // namespace graspd::store

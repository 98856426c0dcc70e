#include "store/lmdb/event_store.hpp"
#include "messages/unix_clock.hpp"

#include <lmdb.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <limits>
#include <mutex>
#include <optional>
#include <unordered_set>

#include "messages/nostr/json.hpp"
#include "store/lmdb/lmdb.hpp"
#include "store/lmdb/query.hpp"
#include "store/lmdb/record.hpp"
#include "store/lmdb/schema.hpp"
#include "store/lmdb/write_rules.hpp"

namespace graspd::store {

using detail::Candidate;
using detail::check;
using detail::Cursor;
using detail::lookup;
using detail::lookup_seq;
using detail::Reader;
using detail::RecordView;
using detail::to_val;
using detail::to_view;
using detail::Txn;
using detail::Writer;

// ---- EventStore ----------------------------------------------------------

EventStore::EventStore(StoreOptions options) : options_(std::move(options)), dbs_(new Dbs) {
  options_.clock = or_system_clock(std::move(options_.clock));
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

    dbs_->ids_merge_every = std::max<std::uint64_t>(1, options_.ids_merge_every);
    Txn txn(env_, 0);
    detail::open_databases(txn.get(), *dbs_);
    std::string expected = std::to_string(kSchemaVersion);
    if (auto version = lookup(txn.get(), dbs_->meta, detail::kSchemaKey)) {
      if (*version == "1") {
        migrate_from_v1(txn.get());
      } else if (*version != expected)
        throw StoreError("error: store at " + options_.path.string() + " has schema version " +
                         std::string(*version) + " but this graspd supports only version " +
                         expected +
                         " (and migrates version 1); export it with the graspd that wrote it and "
                         "import it with this one: graspd export --data OLD | graspd import "
                         "--data NEW (docs/operations.md, \"Store layout versions\")");
    } else {
      MDB_val k = to_val(detail::kSchemaKey), v = to_val(expected);
      check(mdb_put(txn.get(), dbs_->meta, &k, &v, 0), "write schema version");
    }
    txn.commit();
  } catch (...) {
    mdb_env_close(env_);
    throw;
  }
}

/// Version 1 kept every id in `ids`: the same data with an empty id tail (ids_upto = next_seq).
/// O(1), whatever the store's size.
void EventStore::migrate_from_v1(MDB_txn* txn) {
  std::string upto = detail::be64_string(horizon(txn));
  std::string version = std::to_string(kSchemaVersion);
  MDB_val k = to_val(detail::kIdsUptoKey), v = to_val(upto);
  check(mdb_put(txn, dbs_->meta, &k, &v, 0), "migrate schema 1: id tail");
  k = to_val(detail::kSchemaKey);
  v = to_val(version);
  check(mdb_put(txn, dbs_->meta, &k, &v, 0), "migrate schema 1: version");
}

EventStore::~EventStore() {
  mdb_env_close(env_);
}

/// Attempts at beginning a transaction while other processes keep growing the map.
constexpr int kBeginAttempts = 8;

template <class Fn>
auto EventStore::read(Fn&& fn) const {
  for (int attempt = 1;; ++attempt) {
    std::shared_lock lock(remap_mutex_);
    std::optional<Txn> txn;
    try {
      txn.emplace(env_, MDB_RDONLY);
    } catch (const StoreError& e) {
      if (e.code() != MDB_MAP_RESIZED || attempt == kBeginAttempts) throw;
      lock.unlock();
      adopt_map_size();
      continue;
    }
    return fn(txn->get());
  }
}

void EventStore::adopt_map_size() const {
  std::unique_lock lock(remap_mutex_);
  check(mdb_env_set_mapsize(env_, 0), "adopt map size");
  MDB_envinfo info;
  mdb_env_info(env_, &info);
  map_size_ = info.me_mapsize;
}

bool EventStore::recover(const StoreError& error) {
  if (error.code() == MDB_MAP_RESIZED) {
    adopt_map_size();
    return true;
  }
  return error.code() == MDB_MAP_FULL && grow_map();
}

bool EventStore::grow_map() {
  std::unique_lock lock(remap_mutex_);
  if (map_size_ >= options_.max_map_size) return false;
  std::size_t next = std::min(map_size_ * 2, options_.max_map_size);
  check(mdb_env_set_mapsize(env_, next), "grow map");
  MDB_envinfo info;
  mdb_env_info(env_, &info);
  map_size_ = info.me_mapsize;
  return true;
}

void EventStore::apply_held(MDB_txn* txn, const HeldRecordChanges& changes) {
  for (const auto& [id, record] : changes.puts) {
    MDB_val k = to_val(detail::id_view(id.data())), v = to_val(record);
    check(mdb_put(txn, dbs_->held, &k, &v, 0), "write held event");
  }
  for (const auto& id : changes.erases) {
    MDB_val k = to_val(detail::id_view(id.data()));
    int rc = mdb_del(txn, dbs_->held, &k, nullptr);
    if (rc != MDB_NOTFOUND) check(rc, "erase held event");
  }
}

std::optional<std::vector<WriteReport>> EventStore::try_batch(
    std::span<const nostr::EventPtr> events,
    std::span<const std::shared_ptr<const std::string>> jsons,
    std::span<const std::vector<nostr::EventId>> depends_on,
    std::span<const HeldRecordChanges> held) {
  std::vector<WriteReport> reports(events.size());
  for (int attempt = 1;; ++attempt) {
    try {
      std::shared_lock lock(remap_mutex_);
      Txn txn(env_, 0);
      Writer writer(txn.get(), *dbs_, now(), options_.service);
      for (std::size_t i = 0; i < events.size(); ++i) {
        if (!events[i]) {
          reports[i] = {WriteOutcome::error, nullptr, 0};
          continue;
        }
        WriteOutcome outcome =
            i < depends_on.size() && !writer.all_stored(depends_on[i])
                ? WriteOutcome::dependency_missing
                : writer.apply(*events[i], jsons[i] ? *jsons[i] : std::string_view{});
        bool committed = wrote(outcome);
        reports[i] = {outcome, committed ? jsons[i] : nullptr, committed ? writer.last_seq() : 0};
      }
      for (const auto& changes : held) apply_held(txn.get(), changes);
      writer.finish();
      txn.commit();
      return reports;
    } catch (const StoreError& e) {
      if (attempt < kBeginAttempts && recover(e)) continue;
      std::string message = e.code() == MDB_MAP_FULL
                                ? "error: store full: map size limit of " +
                                      std::to_string(options_.max_map_size) + " bytes reached"
                                : e.what();
      std::lock_guard lock(error_mutex_);
      last_error_ = message;
      return std::nullopt;
    }
  }
}

BatchReport EventStore::commit_batch(std::span<const nostr::EventPtr> events,
                                     std::span<const std::vector<nostr::EventId>> depends_on,
                                     std::span<const HeldRecordChanges> held) {
  std::vector<std::shared_ptr<const std::string>> jsons(events.size());
  for (std::size_t i = 0; i < events.size(); ++i)
    if (events[i] && !nostr::is_ephemeral(events[i]->kind))
      jsons[i] = std::make_shared<const std::string>(nostr::serialize_event(*events[i]));
  BatchReport out;
  out.held.assign(held.size(), true);
  auto reports = try_batch(events, jsons, depends_on, held);
  // Held records that do not fit (a full store) must not cost the events their write: the events
  // are written again on their own, and only the held changes fail.
  if (!reports && !held.empty()) {
    out.held.assign(held.size(), false);
    reports = try_batch(events, jsons, depends_on, {});
  }
  if (reports) {
    out.events = std::move(*reports);
  } else {
    out.events.assign(events.size(), WriteReport{WriteOutcome::error, nullptr, 0});
    out.held.assign(held.size(), false);
  }
  return out;
}

std::vector<WriteReport> EventStore::write_batch_with_json(
    std::span<const nostr::EventPtr> events,
    std::span<const std::vector<nostr::EventId>> depends_on) {
  return commit_batch(events, depends_on, {}).events;
}

std::vector<WriteOutcome> EventStore::write_batch(std::span<const nostr::EventPtr> events) {
  std::vector<WriteOutcome> outcomes;
  outcomes.reserve(events.size());
  for (auto& report : write_batch_with_json(events)) outcomes.push_back(report.outcome);
  return outcomes;
}

template <class Fn>
void EventStore::write_small(Fn&& fn) {
  for (int attempt = 1;; ++attempt) {
    try {
      std::shared_lock lock(remap_mutex_);
      Txn txn(env_, 0);
      fn(txn.get());
      txn.commit();
      return;
    } catch (const StoreError& e) {
      if (attempt < kBeginAttempts && recover(e)) continue;
      throw;
    }
  }
}

void EventStore::put_held(const nostr::EventId& id, std::string_view record) {
  HeldRecordChanges changes;
  changes.puts.emplace_back(id, std::string(record));
  write_small([&](MDB_txn* txn) { apply_held(txn, changes); });
}

void EventStore::erase_held(const nostr::EventId& id) {
  HeldRecordChanges changes;
  changes.erases.push_back(id);
  write_small([&](MDB_txn* txn) { apply_held(txn, changes); });
}

void EventStore::for_each_held(
    const std::function<bool(const nostr::EventId&, std::string_view)>& sink) const {
  read([&](MDB_txn* txn) {
    Cursor cursor(txn, dbs_->held);
    MDB_val k, v;
    for (int rc = mdb_cursor_get(cursor.get(), &k, &v, MDB_FIRST); rc == MDB_SUCCESS;
         rc = mdb_cursor_get(cursor.get(), &k, &v, MDB_NEXT)) {
      if (k.mv_size != 32) continue;
      nostr::EventId id;
      std::memcpy(id.data(), k.mv_data, 32);
      if (!sink(id, to_view(v))) break;
    }
  });
}

namespace {

constexpr char moderation_letters[] = {'p', 'e', 'a'};

std::string moderation_key(const ModerationEntry& entry) {
  std::string key(1, moderation_letters[static_cast<std::size_t>(entry.list)]);
  key.append(reinterpret_cast<const char*>(entry.key.data()), entry.key.size());
  return key;
}

std::optional<ModerationList> moderation_list(char letter) {
  for (std::size_t i = 0; i < sizeof moderation_letters; ++i)
    if (moderation_letters[i] == letter) return static_cast<ModerationList>(i);
  return std::nullopt;
}

}  // namespace

void EventStore::apply_moderation(const StoreModeration& changes) {
  write_small([&](MDB_txn* txn) {
    for (const auto& entry : changes.puts) {
      auto key = moderation_key(entry);
      MDB_val k = to_val(key), v = to_val(entry.reason);
      check(mdb_put(txn, dbs_->moderation, &k, &v, 0), "write moderation entry");
    }
    for (const auto& entry : changes.erases) {
      auto key = moderation_key(entry);
      MDB_val k = to_val(key);
      int rc = mdb_del(txn, dbs_->moderation, &k, nullptr);
      if (rc != MDB_NOTFOUND) check(rc, "erase moderation entry");
    }
    if (changes.delete_events.empty()) return;
    Writer writer(txn, *dbs_, now(), options_.service);
    for (const auto& id : changes.delete_events) writer.erase_id(id);
    apply_held(txn, HeldRecordChanges{{}, changes.delete_events});
  });
}

void EventStore::for_each_moderation(
    const std::function<void(const ModerationEntry&)>& sink) const {
  read([&](MDB_txn* txn) {
    Cursor cursor(txn, dbs_->moderation);
    MDB_val k, v;
    for (int rc = mdb_cursor_get(cursor.get(), &k, &v, MDB_FIRST); rc == MDB_SUCCESS;
         rc = mdb_cursor_get(cursor.get(), &k, &v, MDB_NEXT)) {
      auto key = to_view(k);
      auto list = key.size() == 33 ? moderation_list(key[0]) : std::nullopt;
      if (!list) continue;
      ModerationEntry entry{*list, {}, std::string(to_view(v))};
      std::memcpy(entry.key.data(), key.data() + 1, 32);
      sink(entry);
    }
  });
}

std::string EventStore::last_error() const {
  std::lock_guard lock(error_mutex_);
  return last_error_;
}

std::size_t EventStore::sweep_expired(std::int64_t now) {
  constexpr std::size_t kPerTxn = 10000;
  std::size_t total = 0;
  for (int attempt = 1;;) {
    std::size_t swept = 0;
    try {
      std::shared_lock lock(remap_mutex_);
      Txn txn(env_, 0);
      Writer writer(txn.get(), *dbs_, now, options_.service);
      swept = writer.sweep(now, kPerTxn);
      txn.commit();
    } catch (const StoreError& e) {
      if (attempt++ < kBeginAttempts && recover(e)) continue;
      throw;
    }
    attempt = 1;
    total += swept;
    if (swept < kPerTxn) return total;
  }
}

namespace {

/// The events a query answers, in answer order: per filter the newest min(limit, max_limit)
/// (created_at desc, id asc), their union deduplicated. Views point into the reader's map.
std::vector<Candidate> select_answer(Reader& reader, const nostr::Filters& filters,
                                     const QueryOptions& options) {
  std::vector<Candidate> all;
  std::vector<Candidate> one;
  for (const auto& filter : filters) {
    std::uint64_t limit = std::min(filter.limit.value_or(options.max_limit), options.max_limit);
    one.clear();
    reader.collect(filter, limit, one);
    std::sort(one.begin(), one.end(), detail::candidate_order);
    if (one.size() > limit) one.resize(limit);
    all.insert(all.end(), one.begin(), one.end());
  }
  if (filters.size() > 1) {
    std::sort(all.begin(), all.end(), detail::candidate_order);
    all.erase(std::unique(all.begin(), all.end(),
                          [](const Candidate& a, const Candidate& b) { return a.seq == b.seq; }),
              all.end());
  }
  return all;
}

}  // namespace

std::uint64_t EventStore::horizon(MDB_txn* txn) const {
  auto next = lookup(txn, dbs_->meta, detail::kNextSeqKey);
  return next && next->size() == 8 ? detail::read_be64(next->data()) : 1;
}

std::uint64_t EventStore::query(const nostr::Filters& filters,
                                const std::function<void(const QueryHit&)>& sink,
                                const QueryOptions& options) const {
  return read([&](MDB_txn* txn) {
    Reader reader(txn, *dbs_, now());
    for (const auto& c : select_answer(reader, filters, options))
      sink(QueryHit{c.json, *reinterpret_cast<const nostr::EventId*>(c.id), c.created_at, c.kind});
    return horizon(txn);
  });
}

bool EventStore::exists(const nostr::Filters& filters) const {
  return read([&](MDB_txn* txn) {
    Reader reader(txn, *dbs_, now());
    return std::any_of(filters.begin(), filters.end(),
                       [&](const nostr::Filter& f) { return reader.any(f); });
  });
}

QueryAnswer EventStore::query_refs(const nostr::Filters& filters, const QueryOptions& options,
                                   const AnswerSink& first) const {
  return read([&](MDB_txn* txn) {
    Reader reader(txn, *dbs_, now());
    QueryAnswer answer;
    const auto selected = select_answer(reader, filters, options);
    answer.refs.reserve(selected.size());
    for (const auto& c : selected) {
      AnswerRef ref{c.seq, {}};
      std::memcpy(ref.id.data(), c.id, ref.id.size());
      answer.refs.push_back(ref);
    }
    answer.horizon = horizon(txn);
    bool more = static_cast<bool>(first);
    while (more && answer.loaded < selected.size()) {
      more = first(answer.refs[answer.loaded], selected[answer.loaded].json);
      ++answer.loaded;
    }
    return answer;
  });
}

std::size_t EventStore::load_answer(std::span<const AnswerRef> refs, const AnswerSink& sink) const {
  return read([&](MDB_txn* txn) {
    const auto t = now();
    std::size_t handled = 0;
    for (const auto& ref : refs) {
      ++handled;
      RecordView r;
      // Sequence numbers are never reused: the record is the same event or gone.
      if (!detail::load_record(txn, dbs_->events, ref.seq, r) || detail::is_expired(r, t)) continue;
      if (!sink(ref, r.json)) break;
    }
    return handled;
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

void EventStore::for_each_record_key(
    const nostr::Filter& filter, std::uint64_t max,
    const std::function<void(std::int64_t created_at, const nostr::EventId& id)>& sink) const {
  const auto limit = std::min(filter.limit.value_or(max), max);
  read([&](MDB_txn* txn) {
    Reader reader(txn, *dbs_, now());
    Reader::Budget unlimited;
    std::uint64_t delivered = 0;
    nostr::EventId id;
    // collect() may pass ties beyond the limit: they are not delivered.
    reader.collect(filter, limit, unlimited, [&](const Candidate& c) {
      if (delivered == limit) return;
      ++delivered;
      std::memcpy(id.data(), c.id, id.size());
      sink(c.created_at, id);
    });
    return 0;
  });
}

std::optional<std::vector<nostr::negentropy::Item>> EventStore::negentropy_items(
    const nostr::Filter& filter, std::uint64_t max) const {
  std::vector<nostr::negentropy::Item> items;
  // One past the bound tells "exactly max" from "more than max".
  for_each_record_key(filter, max + 1, [&](std::int64_t created_at, const nostr::EventId& id) {
    items.push_back({static_cast<std::uint64_t>(created_at), id});
  });
  if (items.size() > max) return std::nullopt;
  return items;
}

std::optional<std::string> EventStore::get(const nostr::EventId& id) const {
  return read([&](MDB_txn* txn) -> std::optional<std::string> {
    auto seq = detail::find_committed_id(txn, dbs_->ids, dbs_->events, dbs_->meta, *dbs_->recent,
                                         id.data());
    RecordView r;
    if (!seq || !detail::load_record(txn, dbs_->events, *seq, r) || detail::is_expired(r, now()))
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
      if (!detail::decode_record(to_view(v), r) || detail::is_expired(r, t)) continue;
      if (!sink(r.json)) return 0;
    }
    if (rc != MDB_NOTFOUND) check(rc, "scan events");
    return 0;
  });
}

std::uint64_t EventStore::next_seq() const {
  return read([&](MDB_txn* txn) -> std::uint64_t {
    auto next = lookup(txn, dbs_->meta, detail::kNextSeqKey);
    return next && next->size() == 8 ? detail::read_be64(next->data()) : 1;
  });
}

std::uint64_t EventStore::for_each_committed(
    std::uint64_t from, std::uint64_t to, std::size_t max,
    const std::function<void(std::uint64_t seq, std::string_view json)>& sink) const {
  return read([&](MDB_txn* txn) {
    Cursor c(txn, dbs_->events);
    std::int64_t t = now();
    std::uint64_t seq = from;
    MDB_val k{sizeof seq, &seq}, v;
    std::uint64_t next = from;
    int rc = mdb_cursor_get(c.get(), &k, &v, MDB_SET_RANGE);
    for (std::size_t sent = 0; rc == MDB_SUCCESS && sent < max;
         rc = mdb_cursor_get(c.get(), &k, &v, MDB_NEXT)) {
      std::uint64_t at;
      std::memcpy(&at, k.mv_data, sizeof at);
      if (at >= to) break;
      next = at + 1;
      RecordView r;
      if (!detail::decode_record(to_view(v), r) || detail::is_expired(r, t)) continue;
      sink(at, r.json);
      ++sent;
    }
    if (rc != MDB_SUCCESS && rc != MDB_NOTFOUND) check(rc, "scan new events");
    return next;
  });
}

std::uint64_t EventStore::size() const {
  return read([&](MDB_txn* txn) {
    MDB_stat stat;
    check(mdb_stat(txn, dbs_->events, &stat), "stat");
    return static_cast<std::uint64_t>(stat.ms_entries);
  });
}

std::map<std::uint32_t, std::uint64_t> EventStore::count_by_kind() const {
  return read([&](MDB_txn* txn) {
    std::map<std::uint32_t, std::uint64_t> counts;
    detail::Cursor c(txn, dbs_->kind);
    MDB_val k, v;
    int rc = mdb_cursor_get(c.get(), &k, &v, MDB_FIRST);
    for (; rc == MDB_SUCCESS; rc = mdb_cursor_get(c.get(), &k, &v, MDB_NEXT)) {
      if (k.mv_size < 4) continue;  // key: kind be32 | time | seq
      auto b = static_cast<const std::uint8_t*>(k.mv_data);
      ++counts[std::uint32_t{b[0]} << 24 | std::uint32_t{b[1]} << 16 | std::uint32_t{b[2]} << 8 |
               b[3]];
    }
    if (rc != MDB_NOTFOUND) check(rc, "scan kinds");
    return counts;
  });
}

std::size_t EventStore::map_size() const {
  std::shared_lock lock(remap_mutex_);
  return map_size_;
}

}  // namespace graspd::store

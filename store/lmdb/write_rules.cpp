#include "store/lmdb/write_rules.hpp"

#include <algorithm>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "messages/nostr/json.hpp"
#include "messages/nostr/nip34.hpp"
#include "messages/nostr/nip62.hpp"
#include "store/lmdb/lmdb.hpp"
#include "store/lmdb/schema.hpp"

namespace graspd::store::detail {

Writer::Writer(MDB_txn* txn, const EventStore::Dbs& db, std::int64_t now,
               const std::optional<HostPort>& service)
    : txn_(txn), db_(db), now_(now), service_(service), tail_(read_id_tail(txn, db.meta)) {
  next_seq_ = tail_.next;
  // Nothing is written yet: the transaction sees committed data only.
  db_.recent->catch_up(txn_, db_.events, tail_);
}

void Writer::finish() {
  put(db_.meta, kNextSeqKey, be64_string(next_seq_));
  if (next_seq_ - tail_.upto < db_.ids_merge_every) return;
  merge_ids(txn_, db_.ids, db_.events, tail_.upto, next_seq_);
  put(db_.meta, kIdsUptoKey, be64_string(next_seq_));
}

std::size_t Writer::IdHash::operator()(const Id& id) const {
  std::size_t h;
  std::memcpy(&h, id.data(), sizeof h);  // ids are SHA-256: any 8 bytes are uniform
  return h;
}

std::optional<std::uint64_t> Writer::find(const nostr::EventId& id) const {
  if (auto seq = lookup_seq(txn_, db_.ids, id_view(id.data()))) return seq;
  // Stored by this transaction, unless it erased the event again.
  if (auto it = inserted_.find(id); it != inserted_.end()) {
    RecordView r;
    return load(it->second, r) ? std::optional(it->second) : std::nullopt;
  }
  return db_.recent->find(txn_, db_.events, tail_, id.data());
}

bool Writer::all_stored(std::span<const nostr::EventId> ids) const {
  return std::all_of(ids.begin(), ids.end(),
                     [&](const nostr::EventId& id) { return find(id).has_value(); });
}

WriteOutcome Writer::apply(const nostr::Event& ev, std::string_view json) {
  if (nostr::is_ephemeral(ev.kind)) return WriteOutcome::ephemeral_not_stored;
  std::int64_t expiration = expiration_of(ev);
  if (expiration != 0 && expiration <= now_) return WriteOutcome::expired;
  if (find(ev.id)) return WriteOutcome::duplicate;
  if (auto until = vanished_until(ev.pubkey); until && ev.created_at <= *until)
    return WriteOutcome::deleted;
  // A deletion request against a request to vanish has no effect (NIP-62).
  if (ev.kind != nostr::nip62::kind_request_to_vanish &&
      lookup(txn_, db_.deleted, deleted_id_key(ev.id.data(), ev.pubkey.data())))
    return WriteOutcome::deleted;
  WriteOutcome outcome = WriteOutcome::stored;
  if (has_address(ev.kind)) {
    std::string address = address_key(ev.pubkey.data(), ev.kind, address_d(ev.kind, ev.d_tag()));
    if (auto deleted_until = lookup(txn_, db_.deleted, "a" + address);
        deleted_until && deleted_until->size() == 8 &&
        ev.created_at <= time_from_sortable(read_be64(deleted_until->data())))
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
  if (nostr::nip62::names_relay(ev, service_ ? &*service_ : nullptr)) apply_vanish(ev, last_seq());
  return outcome;
}

bool Writer::erase_id(const nostr::EventId& id) {
  auto seq = find(id);
  if (!seq) return false;
  erase(*seq);
  return true;
}

std::size_t Writer::sweep(std::int64_t now, std::size_t max) {
  std::vector<std::uint64_t> doomed;
  {
    Cursor c(txn_, db_.expiry);
    MDB_val k, v;
    int rc = mdb_cursor_get(c.get(), &k, &v, MDB_FIRST);
    while (rc == MDB_SUCCESS && doomed.size() < max) {
      if (k.mv_size != 16) break;
      auto bytes = static_cast<const char*>(k.mv_data);
      if (time_from_sortable(read_be64(bytes)) > now) break;
      doomed.push_back(read_be64(bytes + 8));
      rc = mdb_cursor_get(c.get(), &k, &v, MDB_NEXT);
    }
    if (rc != MDB_SUCCESS && rc != MDB_NOTFOUND) check(rc, "expiry scan");
  }
  for (auto seq : doomed) erase(seq);
  return doomed.size();
}

bool Writer::load(std::uint64_t seq, RecordView& r) const {
  return load_record(txn_, db_.events, seq, r);
}

void Writer::put(MDB_dbi dbi, std::string_view key, std::string_view value) {
  MDB_val k = to_val(key), v = to_val(value);
  check(mdb_put(txn_, dbi, &k, &v, 0), "put");
}
void Writer::del(MDB_dbi dbi, std::string_view key) {
  MDB_val k = to_val(key);
  int rc = mdb_del(txn_, dbi, &k, nullptr);
  if (rc != MDB_NOTFOUND) check(rc, "delete");
}

template <class Fn>
void Writer::for_each_index_key(const RecordView& r, std::uint64_t seq, Fn&& fn) {
  // One buffer holds each key in turn: an event has half a dozen index keys or more, most of
  // them past the short-string size, and this runs for every stored and every erased event.
  std::string key;
  key.reserve(64 + kMaxTagKeyValue);
  const std::uint64_t time = sortable_time(r.created_at);
  const auto with_suffix = [&]() -> const std::string& {
    append_be64(key, time);
    append_be64(key, seq);
    return key;
  };
  key.clear();
  fn(db_.created, with_suffix());
  key.assign(reinterpret_cast<const char*>(r.pubkey), 32);
  fn(db_.pubkey, with_suffix());
  key.clear();
  append_be32(key, r.kind);
  fn(db_.kind, with_suffix());
  key.assign(reinterpret_cast<const char*>(r.pubkey), 32);
  append_be32(key, r.kind);
  fn(db_.pubkind, with_suffix());
  r.any_tag([&](char letter, std::string_view value) {
    key.clear();
    append_tag_prefix(key, letter, value);
    fn(db_.tags, with_suffix());
    return false;
  });
  if (r.expiration != 0) {
    key.clear();
    append_be64(key, sortable_time(r.expiration));
    append_be64(key, seq);
    fn(db_.expiry, key);
  }
}

void Writer::insert(const nostr::Event& ev, std::int64_t expiration, std::string_view json) {
  std::uint64_t seq = next_seq_++;
  std::string record = encode_record(ev, expiration, json);
  MDB_val k{sizeof seq, &seq}, v = to_val(record);
  check(mdb_put(txn_, db_.events, &k, &v, MDB_APPEND), "put event");
  std::string seq_be = be64_string(seq);
  inserted_[ev.id] = seq;  // `ids` gets it at the next merge (finish)
  RecordView r;
  decode_record(record, r);
  for_each_index_key(r, seq, [&](MDB_dbi dbi, const std::string& key) { put(dbi, key, {}); });
  if (has_address(ev.kind))
    put(db_.heads, address_key(ev.pubkey.data(), ev.kind, address_d(ev.kind, ev.d_tag())), seq_be);
}

void Writer::erase(std::uint64_t seq) {
  RecordView view;
  if (!load(seq, view)) return;
  // Deleting the record may free its page; work on a copy.
  std::string record(reinterpret_cast<const char*>(view.id), kHeaderSize + view.tags.size());
  RecordView r;
  decode_record(record, r);
  for_each_index_key(r, seq, [&](MDB_dbi dbi, const std::string& key) { del(dbi, key); });
  if (seq < tail_.upto) del(db_.ids, id_view(r.id));  // the id tail needs no deletion
  if (has_address(r.kind)) {
    std::string address = address_key(r.pubkey, r.kind, address_d(r.kind, r.d_tag()));
    if (lookup_seq(txn_, db_.heads, address) == seq) del(db_.heads, address);
  }
  MDB_val k{sizeof seq, &seq};
  check(mdb_del(txn_, db_.events, &k, nullptr), "delete event");
}

void Writer::apply_deletion(const nostr::Event& request) {
  for (const auto& tag : request.tags) {
    if (tag.size() < 2) continue;
    if (tag[0] == "e") delete_by_id(request, tag[1]);
    if (tag[0] == "a") delete_by_address(request, tag[1]);
  }
}

void Writer::delete_by_id(const nostr::Event& request, std::string_view id_hex) {
  nostr::EventId id;
  if (!nostr::from_hex(id_hex, id)) return;
  // Remembered per (id, author): only the author's own re-submission is refused.
  put(db_.deleted, deleted_id_key(id.data(), request.pubkey.data()), {});
  auto seq = find(id);
  RecordView target;
  if (!seq || !load(*seq, target)) return;
  // Deleting a deletion request (NIP-09) or a request to vanish (NIP-62) has no effect.
  if (target.kind == nostr::nip34::kind::deletion ||
      target.kind == nostr::nip62::kind_request_to_vanish ||
      std::memcmp(target.pubkey, request.pubkey.data(), 32) != 0)
    return;
  erase(*seq);
}

void Writer::delete_by_address(const nostr::Event& request, std::string_view text) {
  auto address = nostr::nip34::parse_address(text);
  if (!address || address->author != request.pubkey) return;
  std::string key = address_key(address->author.data(), address->kind,
                                address_d(address->kind, address->identifier));
  std::int64_t until = request.created_at;
  if (auto previous = lookup(txn_, db_.deleted, "a" + key); previous && previous->size() == 8)
    until = std::max(until, time_from_sortable(read_be64(previous->data())));
  put(db_.deleted, "a" + key, be64_string(sortable_time(until)));
  auto head = lookup_seq(txn_, db_.heads, key);
  RecordView current;
  if (head && load(*head, current) && current.created_at <= request.created_at) erase(*head);
}

std::optional<std::int64_t> Writer::vanished_until(const nostr::Pubkey& author) const {
  auto until = lookup(txn_, db_.deleted, vanished_key(author.data()));
  if (!until || until->size() != 8) return std::nullopt;
  return time_from_sortable(read_be64(until->data()));
}

void Writer::apply_vanish(const nostr::Event& request, std::uint64_t request_seq) {
  auto until =
      std::max(request.created_at,
               vanished_until(request.pubkey).value_or(std::numeric_limits<std::int64_t>::min()));
  put(db_.deleted, vanished_key(request.pubkey.data()), be64_string(sortable_time(until)));
  // The author's events oldest first, from the `pubkey` index (pubkey · time · seq), up to the
  // request's created_at; erased after the walk, which erasing would disturb.
  std::vector<std::uint64_t> doomed;
  std::string author(id_view(request.pubkey.data()));
  {
    Cursor c(txn_, db_.pubkey);
    MDB_val k = to_val(author), v;
    int rc = mdb_cursor_get(c.get(), &k, &v, MDB_SET_RANGE);
    for (; rc == MDB_SUCCESS; rc = mdb_cursor_get(c.get(), &k, &v, MDB_NEXT)) {
      auto key = to_view(k);
      if (key.size() != 48 || key.substr(0, 32) != author) break;
      if (time_from_sortable(read_be64(key.data() + 32)) > request.created_at) break;
      auto seq = read_be64(key.data() + 40);
      if (seq != request_seq) doomed.push_back(seq);
    }
    if (rc != MDB_SUCCESS && rc != MDB_NOTFOUND) check(rc, "vanish scan");
  }
  for (auto seq : doomed) erase(seq);
}

}  // namespace graspd::store::detail

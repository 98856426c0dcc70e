// Internal layout of the store's LMDB databases: one DB per index, the key
// layout of each, and the record-level helpers both the read and the write
// side rely on. Not part of the public API; bump kSchemaVersion when it changes.
#pragma once

#include <lmdb.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>

#include "messages/nostr/event.hpp"
#include "store/lmdb/event_store.hpp"
#include "store/lmdb/id_index.hpp"
#include "store/lmdb/lmdb.hpp"
#include "store/lmdb/record.hpp"

namespace graspd::store {

struct EventStore::Dbs {
  MDB_dbi meta = 0;     // "schema_version" -> decimal text, "next_seq" -> be64,
                        // "ids_upto" -> be64 (absent = 1): see store/lmdb/id_index.hpp
  MDB_dbi events = 0;   // seq (native u64, MDB_INTEGERKEY) -> record
  MDB_dbi ids = 0;      // id[32] -> seq be64, for the events with seq < ids_upto
  MDB_dbi created = 0;  // time be64 | seq be64
  MDB_dbi pubkey = 0;   // pubkey[32] | time | seq
  MDB_dbi kind = 0;     // kind be32 | time | seq
  MDB_dbi pubkind = 0;  // pubkey[32] | kind be32 | time | seq
  MDB_dbi tags = 0;     // letter | len | value | time | seq
  MDB_dbi expiry = 0;   // expiration be64 | seq be64
  MDB_dbi heads = 0;    // address key -> seq be64 (current replaceable/addressable version)
  MDB_dbi deleted = 0;  // 'i' id pubkey -> "" ; 'a' address key -> deletion created_at be64;
                        // 'v' pubkey -> the latest request to vanish's created_at be64
  MDB_dbi held = 0;     // id[32] -> purgatory record (store/lmdb/store_view.hpp); added later, so
                        // an older store gains it empty without a schema change
  MDB_dbi moderation = 0;  // list letter ('p' banned pubkey, 'e' banned event, 'a' allowed pubkey)
                           // · key[32] -> reason (UTF-8); added later like `held`
  /// The ids of the events with seq >= ids_upto (not in `ids` yet).
  std::unique_ptr<detail::RecentIds> recent = std::make_unique<detail::RecentIds>();
  /// The id tail is merged into `ids` once it holds this many events.
  std::uint64_t ids_merge_every = 32768;
};

namespace detail {

inline constexpr std::string_view kSchemaKey = "schema_version";
inline constexpr std::string_view kNextSeqKey = "next_seq";

/// Opens (creating) every database of the layout inside `txn`.
inline void open_databases(MDB_txn* txn, EventStore::Dbs& dbs) {
  auto open = [&](const char* name, unsigned db_flags, MDB_dbi& dbi) {
    check(mdb_dbi_open(txn, name, db_flags | MDB_CREATE, &dbi), name);
  };
  open("meta", 0, dbs.meta);
  open("events", MDB_INTEGERKEY, dbs.events);
  open("ids", 0, dbs.ids);
  open("created", 0, dbs.created);
  open("pubkey", 0, dbs.pubkey);
  open("kind", 0, dbs.kind);
  open("pubkind", 0, dbs.pubkind);
  open("tags", 0, dbs.tags);
  open("expiry", 0, dbs.expiry);
  open("heads", 0, dbs.heads);
  open("deleted", 0, dbs.deleted);
  open("held", 0, dbs.held);
  open("moderation", 0, dbs.moderation);
}

inline std::string be64_string(std::uint64_t v) {
  std::string out;
  append_be64(out, v);
  return out;
}

inline std::string_view id_view(const std::uint8_t* id) {
  return std::string_view(reinterpret_cast<const char*>(id), 32);
}

/// The `d` part of an address key: only addressable kinds have one.
inline std::string_view address_d(std::uint32_t kind, std::string_view d) {
  return nostr::is_addressable(kind) ? d : std::string_view{};
}

inline bool has_address(std::uint32_t kind) {
  return nostr::is_replaceable(kind) || nostr::is_addressable(kind);
}

/// Key of a deleted-id entry in `deleted`: 'i' id pubkey.
inline std::string deleted_id_key(const std::uint8_t* id, const std::uint8_t* pubkey) {
  std::string key = "i";
  append_bytes(key, id, 32);
  append_bytes(key, pubkey, 32);
  return key;
}

/// Key of a vanished author in `deleted` (NIP-62): 'v' pubkey.
inline std::string vanished_key(const std::uint8_t* pubkey) {
  std::string key = "v";
  append_bytes(key, pubkey, 32);
  return key;
}

inline bool load_record(MDB_txn* txn, MDB_dbi events, std::uint64_t seq, RecordView& out) {
  MDB_val k{sizeof seq, &seq}, v;
  int rc = mdb_get(txn, events, &k, &v);
  if (rc == MDB_NOTFOUND) return false;
  check(rc, "get event");
  return decode_record(to_view(v), out);
}

inline bool is_expired(const RecordView& r, std::int64_t now) {
  return r.expiration != 0 && r.expiration <= now;
}

/// (created_at desc, id asc): NIP-01 order of a REQ's stored events.
inline bool newer_first(std::int64_t ts_a, const std::uint8_t* id_a, std::int64_t ts_b,
                        const std::uint8_t* id_b) {
  if (ts_a != ts_b) return ts_a > ts_b;
  return std::memcmp(id_a, id_b, 32) < 0;
}

}  // namespace detail
}  // namespace graspd::store

// Internal RAII wrappers and small helpers over the LMDB C API, shared by the
// store's read and write sides. Not part of the public API.
#pragma once

#include <lmdb.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "store/lmdb/event_store.hpp"
#include "store/lmdb/record.hpp"

namespace graspd::store::detail {

/// Throws StoreError (carrying the LMDB code) unless `rc` is MDB_SUCCESS.
inline void check(int rc, const char* what) {
  if (rc != MDB_SUCCESS)
    throw StoreError(std::string("error: store: ") + what + ": " + mdb_strerror(rc), rc);
}

inline MDB_val to_val(std::string_view s) {
  return MDB_val{s.size(), const_cast<char*>(s.data())};
}
inline std::string_view to_view(const MDB_val& v) {
  return std::string_view(static_cast<const char*>(v.mv_data), v.mv_size);
}

/// Owns a transaction; aborts it unless committed. Throws StoreError with code MDB_MAP_RESIZED
/// when another process grew the map: the caller adopts the size (no transaction of this process
/// may be open meanwhile, see EventStore::adopt_map_size) and begins again.
class Txn {
 public:
  Txn(MDB_env* env, unsigned flags) {
    check(mdb_txn_begin(env, nullptr, flags, &txn_), "begin transaction");
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

inline std::optional<std::string_view> lookup(MDB_txn* txn, MDB_dbi dbi, std::string_view key) {
  MDB_val k = to_val(key), v;
  int rc = mdb_get(txn, dbi, &k, &v);
  if (rc == MDB_NOTFOUND) return std::nullopt;
  check(rc, "get");
  return to_view(v);
}

/// A value stored as be64 (a sequence number); nullopt when absent or malformed.
inline std::optional<std::uint64_t> lookup_seq(MDB_txn* txn, MDB_dbi dbi, std::string_view key) {
  auto v = lookup(txn, dbi, key);
  if (!v || v->size() != 8) return std::nullopt;
  return read_be64(v->data());
}

}  // namespace graspd::store::detail

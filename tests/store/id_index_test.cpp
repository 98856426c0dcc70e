// The id index with its tail (store/lmdb/id_index.hpp): events are found by id whether their id was
// merged into `ids` or is still in the tail, across reopening, deletions and merges; a schema-1
// store (every id in `ids`) is migrated at open.
#include <gtest/gtest.h>

#include <lmdb.h>

#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "store/lmdb/event_store.hpp"
#include "store/lmdb/record.hpp"
#include "tests/store/store_test_util.hpp"

namespace graspd::store {
namespace {

using nostr::EventPtr;
using test::TempDir;
using test::unsigned_event;

/// Raw access to the LMDB files while no EventStore has them open: what an older graspd wrote,
/// and what this one left.
class RawStore {
 public:
  explicit RawStore(const TempDir& dir) {
    mdb_env_create(&env_);
    mdb_env_set_maxdbs(env_, 16);
    mdb_env_set_mapsize(env_, std::size_t{1} << 30);
    if (mdb_env_open(env_, dir.path().c_str(), 0, 0644) != 0) ADD_FAILURE() << "open";
    mdb_txn_begin(env_, nullptr, 0, &txn_);
  }
  ~RawStore() {
    mdb_txn_commit(txn_);
    mdb_env_close(env_);
  }
  MDB_dbi db(const char* name) {
    MDB_dbi dbi;
    EXPECT_EQ(mdb_dbi_open(txn_, name, 0, &dbi), 0) << name;
    return dbi;
  }
  std::optional<std::string> get(const char* name, const std::string& key) {
    MDB_val k{key.size(), const_cast<char*>(key.data())}, v;
    if (mdb_get(txn_, db(name), &k, &v) != 0) return std::nullopt;
    return std::string(static_cast<const char*>(v.mv_data), v.mv_size);
  }
  void put(const char* name, const std::string& key, const std::string& value) {
    MDB_val k{key.size(), const_cast<char*>(key.data())},
        v{value.size(), const_cast<char*>(value.data())};
    ASSERT_EQ(mdb_put(txn_, db(name), &k, &v, 0), 0);
  }
  void del(const char* name, const std::string& key) {
    MDB_val k{key.size(), const_cast<char*>(key.data())};
    mdb_del(txn_, db(name), &k, nullptr);
  }
  std::size_t entries(const char* name) {
    MDB_stat stat;
    mdb_stat(txn_, db(name), &stat);
    return stat.ms_entries;
  }
  std::uint64_t meta_seq(const char* key) {
    auto v = get("meta", key);
    return v && v->size() == 8 ? detail::read_be64(v->data()) : 0;
  }

 private:
  MDB_env* env_ = nullptr;
  MDB_txn* txn_ = nullptr;
};

class IdIndexTest : public ::testing::Test {
 protected:
  IdIndexTest() { open(); }

  void open(std::uint64_t merge_every = 4) {
    auto options = test::options_for(dir_, &now_);
    options.ids_merge_every = merge_every;
    store_ = std::make_unique<EventStore>(options);
  }

  std::vector<WriteOutcome> write(std::vector<EventPtr> events) {
    return store_->write_batch(events);
  }

  static EventPtr note(std::uint64_t n) { return unsigned_event(n, 7, 100 + n, 1); }
  static nostr::EventId id(std::uint64_t n) { return test::bytes_of(n, 0xee); }

  /// Found by get, by an `ids` REQ, and refused as a duplicate when written again.
  void expect_stored(std::uint64_t n) {
    EXPECT_TRUE(store_->contains(id(n))) << n;
    nostr::Filter f;
    f.ids = std::vector<nostr::EventId>{id(n)};
    EXPECT_EQ(store_->count({f}), 1u) << n;
    EXPECT_EQ(write({note(n)}).at(0), WriteOutcome::duplicate) << n;
  }

  std::int64_t now_ = 1'700'000'000;
  TempDir dir_;
  std::unique_ptr<EventStore> store_;
};

TEST_F(IdIndexTest, EveryIdIsFoundWhetherMergedOrInTheTail) {
  // The batches ending in 6 and 12 merge the tail (it holds 4 or more); 20 stays in it.
  for (std::uint64_t n = 1; n <= 11; n += 3)
    EXPECT_EQ(write({note(n), note(n + 1), note(n + 2)}),
              std::vector<WriteOutcome>(3, WriteOutcome::stored));
  for (std::uint64_t n = 1; n <= 12; ++n) expect_stored(n);
  EXPECT_FALSE(store_->contains(id(99)));
  // The same id twice in one batch: the second is a duplicate of the first.
  EXPECT_EQ(write({note(20), note(20)}),
            (std::vector<WriteOutcome>{WriteOutcome::stored, WriteOutcome::duplicate}));

  store_.reset();
  RawStore raw(dir_);
  // 13 events; the last merge (after 12, in the batch of 10..12) left 20 in the tail.
  EXPECT_EQ(raw.meta_seq("ids_upto"), 13u);
  EXPECT_EQ(raw.entries("ids"), 12u);
}

TEST_F(IdIndexTest, AReopenedStoreFindsTheTail) {
  write({note(1), note(2), note(3), note(4), note(5)});  // merged: 1..5
  write({note(6)});
  write({note(7)});
  store_.reset();
  open();
  for (std::uint64_t n = 1; n <= 7; ++n) expect_stored(n);
}

TEST_F(IdIndexTest, DeletedEventsAreGoneWhetherMergedOrInTheTail) {
  write({note(1), note(2), note(3), note(4)});  // merged
  write({note(5)});                             // tail
  auto deletion =
      unsigned_event(6, 7, 300, 5, {{"e", nostr::to_hex(id(2))}, {"e", nostr::to_hex(id(5))}});
  EXPECT_EQ(write({deletion}).at(0), WriteOutcome::stored);
  for (std::uint64_t n : {2, 5}) {
    EXPECT_FALSE(store_->contains(id(n))) << n;
    EXPECT_EQ(write({note(n)}).at(0), WriteOutcome::deleted) << n;
  }
  write({note(7), note(8), note(9)});  // merges the tail again, without the deleted 5
  store_.reset();
  open();
  for (std::uint64_t n : {1, 3, 4, 6, 7, 8, 9}) expect_stored(n);
  EXPECT_FALSE(store_->contains(id(2)));
  EXPECT_FALSE(store_->contains(id(5)));
}

TEST_F(IdIndexTest, ASchemaOneStoreIsMigratedAtOpen) {
  // Write with a tail that never merges, then rewrite the files as graspd with schema 1 left
  // them: every id in `ids`, no ids_upto.
  store_.reset();
  open(1'000'000);
  write({note(1), note(2), note(3)});
  store_.reset();
  {
    RawStore raw(dir_);
    ASSERT_EQ(raw.entries("ids"), 0u);
    for (std::uint64_t seq = 1; seq <= 3; ++seq) {
      std::string be;
      detail::append_be64(be, seq);
      raw.put("ids", std::string(reinterpret_cast<const char*>(id(seq).data()), 32), be);
    }
    raw.del("meta", "ids_upto");
    raw.put("meta", "schema_version", "1");
  }
  open(4);
  for (std::uint64_t n = 1; n <= 3; ++n) expect_stored(n);
  write({note(4)});
  expect_stored(4);
  store_.reset();
  RawStore raw(dir_);
  EXPECT_EQ(raw.get("meta", "schema_version"), std::to_string(kSchemaVersion));
  EXPECT_EQ(raw.meta_seq("ids_upto"), 4u) << "the migrated ids are not read again";
}

}  // namespace
}  // namespace graspd::store

// Internal write side of the store: the Writer that applies events inside one
// write transaction with the NIP-01 (replaceable heads), NIP-09 (deletions),
// NIP-40 (expiration) and NIP-62 (requests to vanish) rules. Not part of the public API.
#pragma once

#include <lmdb.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <unordered_map>

#include "messages/nostr/event.hpp"
#include "messages/store_messages.hpp"
#include "store/lmdb/event_store.hpp"
#include "store/lmdb/id_index.hpp"
#include "store/lmdb/record.hpp"

namespace graspd::store::detail {

/// Applies events inside one write transaction.
class Writer {
 public:
  /// `service`: this relay, which a request to vanish must name (StoreOptions::service).
  Writer(MDB_txn* txn, const EventStore::Dbs& db, std::int64_t now,
         const std::optional<HostPort>& service);

  /// Persists the next sequence number; called before committing a transaction that inserted.
  void finish();
  /// Sequence number of the record the last stored/replaced outcome inserted.
  std::uint64_t last_seq() const { return next_seq_ - 1; }

  /// True when every event in `ids` is stored, counting this transaction's earlier writes.
  bool all_stored(std::span<const nostr::EventId> ids) const;

  WriteOutcome apply(const nostr::Event& ev, std::string_view json);

  /// Deletes the stored event `id` (a banned one); false when none is stored.
  bool erase_id(const nostr::EventId& id);

  /// Deletes events with expiration <= now, at most `max` of them.
  std::size_t sweep(std::int64_t now, std::size_t max);

 private:
  bool load(std::uint64_t seq, RecordView& r) const;
  void put(MDB_dbi dbi, std::string_view key, std::string_view value);
  void del(MDB_dbi dbi, std::string_view key);
  /// Calls fn(dbi, key) for every index entry of a record.
  template <class Fn>
  void for_each_index_key(const RecordView& r, std::uint64_t seq, Fn&& fn);
  void insert(const nostr::Event& ev, std::int64_t expiration, std::string_view json);
  void erase(std::uint64_t seq);
  void apply_deletion(const nostr::Event& request);
  void delete_by_id(const nostr::Event& request, std::string_view id_hex);
  void delete_by_address(const nostr::Event& request, std::string_view text);
  /// The created_at up to which `author` asked this relay to vanish, if ever.
  std::optional<std::int64_t> vanished_until(const nostr::Pubkey& author) const;
  /// Erases every event of the request's author up to its created_at but the request (stored
  /// as `request_seq`), and remembers the horizon.
  void apply_vanish(const nostr::Event& request, std::uint64_t request_seq);

  /// The seq of the event stored with `id` as this transaction sees it.
  std::optional<std::uint64_t> find(const nostr::EventId& id) const;
  using Id = nostr::EventId;
  struct IdHash {
    std::size_t operator()(const Id& id) const;
  };

  MDB_txn* txn_;
  const EventStore::Dbs& db_;
  std::int64_t now_;
  const std::optional<HostPort>& service_;
  std::uint64_t next_seq_ = 1;
  IdTail tail_;  // the committed id tail when the transaction began
  std::unordered_map<Id, std::uint64_t, IdHash> inserted_;  // ids this transaction stored
};

}  // namespace graspd::store::detail

// The NIP-86 methods over the management lists, without I/O: what a call answers and what it
// changes (the management actor applies the changes through the acceptance actor and the store
// writer, then commits them here). Configured entries (NGIT_EVENT_BLACKLIST, the npub entries of
// NGIT_REPOSITORY_WHITELIST) are listed with reason "config" and cannot be removed at run time.
#pragma once

#include <array>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "messages/nostr/event.hpp"
#include "messages/nostr/nip86.hpp"
#include "messages/store_messages.hpp"

namespace graspd::ops {

/// What one method call does: answer at once (error or result), or apply `changes` first and
/// then answer `result_json`.
struct ManagementStep {
  std::string error;        ///< set: answered as {"error": ...}, nothing changes
  std::string result_json;  ///< the result (JSON) when there is no error
  StoreModeration changes;  ///< to apply before answering; empty for reads

  bool changes_something() const {
    return !changes.puts.empty() || !changes.erases.empty() || !changes.delete_events.empty();
  }
};

/// What the configuration decides about the lists.
struct ConfiguredLists {
  std::set<nostr::Pubkey> banned_pubkeys;   ///< NGIT_EVENT_BLACKLIST
  std::set<nostr::Pubkey> allowed_pubkeys;  ///< the npub entries of NGIT_REPOSITORY_WHITELIST
  /// Runtime bans need the acceptance policy (off under NGIT_ACCEPTANCE_POLICY=open).
  bool bans_available = true;
};

/// Longest reason kept with an entry (bytes; longer ones are cut).
inline constexpr std::size_t max_reason_bytes = 1024;

class ManagementLists {
 public:
  explicit ManagementLists(ConfiguredLists configured) : configured_(std::move(configured)) {}

  /// A runtime entry read from the store at start-up.
  void load(const ModerationEntry& entry);
  /// What `method` with `params` answers and changes.
  ManagementStep plan(nostr::nip86::Method method, const std::vector<std::string>& params) const;
  /// The changes of a step were applied: the lists now show them.
  void commit(const StoreModeration& changes);

  /// The methods this configuration offers (supportedmethods).
  std::vector<std::string> available_methods() const;
  bool allow_list_in_use() const { return configured_.allowed_pubkeys.size() > 0; }
  std::size_t runtime_size(ModerationList list) const;
  /// Whether `key` is a runtime entry of `list`.
  bool contains(ModerationList list, const nostr::Bytes32& key) const {
    return runtime(list).count(key) > 0;
  }

 private:
  using Entries = std::map<nostr::Bytes32, std::string>;
  const Entries& runtime(ModerationList list) const;
  Entries& runtime(ModerationList list);
  const std::set<nostr::Bytes32>* configured(ModerationList list) const;
  ManagementStep add(ModerationList list, const std::vector<std::string>& params) const;
  ManagementStep remove(ModerationList list, const std::vector<std::string>& params) const;
  ManagementStep listing(ModerationList list) const;
  /// Why `method` cannot run in this configuration; empty when it can.
  std::string unavailable(nostr::nip86::Method method) const;

  ConfiguredLists configured_;
  std::array<Entries, 3> runtime_;
};

}  // namespace graspd::ops

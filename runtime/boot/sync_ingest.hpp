// Where `graspd sync` puts what it downloads: the GRASP-01 acceptance policy and the store, run
// synchronously on the caller's thread. The acceptance steps are the policy's own
// (AcceptancePolicy::evaluate_submission and on_write_outcome, which the acceptance actor calls
// too). What differs: the store is written directly instead of through the writer actor, and
// neither purgatory nor git hosting runs in the command (an announcement is stored, its
// repository is not created). The steps: evaluate against the store plus the accepted-but-unwritten
// events → park an event whose dependency is missing → write the accepted ones in decision order,
// one transaction per flush → feed each commit to the policy, which releases the parked events it
// satisfies; those are judged again and written by the same flush. Events may so arrive in any
// order (a reply before its issue) within one run. Without a policy (`--policy open`) every event
// is written.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "messages/nostr/event.hpp"
#include "store/lmdb/event_store.hpp"
#include "store/lmdb/store_view.hpp"
#include "store/policy/acceptance_policy.hpp"
#include "store/policy/retry_cache.hpp"

namespace graspd::boot {

struct IngestCounts {
  std::uint64_t stored = 0;
  std::uint64_t duplicate = 0;
  /// Refused by the policy or by the store's rules (deleted, older version, expired, ephemeral).
  std::uint64_t refused = 0;
  /// Still waiting for a dependency (in the retry cache).
  std::uint64_t parked = 0;
  /// NIP-70 protected events (also in `refused`): never taken from a peer or a file.
  std::uint64_t protected_refused = 0;
};

class SyncIngest {
 public:
  /// `policy` nullopt = store every event (`--policy open`). `on_refused` hears each refusal's
  /// event id and NIP-01 message (for the log).
  SyncIngest(std::shared_ptr<store::EventStore> store, std::optional<policy::PolicyConfig> policy,
             std::function<void(const nostr::EventId&, const std::string&)> on_refused = {});

  void set_on_refused(std::function<void(const nostr::EventId&, const std::string&)> on_refused) {
    on_refused_ = std::move(on_refused);
  }

  /// Judges one event whose id and signature were checked; accepted ones wait for flush().
  void submit(nostr::EventPtr event);
  /// Writes everything accepted, and what the commits release, until nothing is left. False
  /// when the store failed (error() says why); nothing of the failed transaction is kept.
  bool flush();

  IngestCounts counts() const;
  const std::string& error() const { return error_; }

 private:
  struct Accepted {
    nostr::EventPtr event;
    std::vector<nostr::EventId> depends_on;
    int attempt = 0;
  };
  void judge(nostr::EventPtr event, int attempt);
  bool write_round();
  void on_outcome(Accepted& accepted, const store::WriteReport& report,
                  std::vector<nostr::EventPtr>& committed);
  void refuse(const nostr::EventId& id, const std::string& message);

  std::shared_ptr<store::EventStore> store_;
  std::unique_ptr<store::EventStoreView> view_;
  std::unique_ptr<policy::AcceptancePolicy> policy_;
  std::unique_ptr<policy::RetryCache> retry_;
  std::function<void(const nostr::EventId&, const std::string&)> on_refused_;
  std::vector<Accepted> batch_;
  IngestCounts counts_;
  std::string error_;
};

}  // namespace graspd::boot

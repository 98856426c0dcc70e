// GRASP-03 identity discovery (pure): which eligible authors' kind 0 and 10002 to ask for, where,
// and when. Inputs are the eligible authors with their sources (the user-index relays and the
// bootstrap relay for an author without a retained 10002; its write/unmarked outboxes once one is
// retained), a maintenance pass, and the outcome of the one batch in flight; the output is at
// most one new batch of at most `max_authors_per_query` authors for one source at a time.
//
//  - at most `max_batches` (NGIT_SYNC_PLUS_DISCOVERY_BATCHES) in flight, each on its own source,
//    no waiter queue: one source holds at most one of them, so one slow source does not stop
//    everyone's discovery;
//  - each batch has `source_budget` seconds in all (the fetch is cut there however the source
//    trickles); a source that spent it is backed off (retry, doubling per consecutive spent
//    budget, up to refresh) and gets no batch meanwhile;
//  - a round per author: every current source of the author is asked once; a source that appears
//    during the round (a newer 10002 naming new outboxes) joins it, until no unvisited source
//    remains;
//  - at most one new source per maintenance pass: a source not yet used since the last pass is
//    only started from on_pass(); sources already used in this pass continue right after a batch
//    completes;
//  - an author whose round finished is due again `refresh` seconds after it when it is found (a
//    retained 10002 or kind 0), `retry` seconds after it otherwise (missing or failed).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "messages/nostr/event.hpp"

namespace graspd::sync {

inline constexpr std::size_t max_authors_per_query = 100;

struct DiscoveryConfig {
  std::int64_t refresh_seconds = 86400;
  std::int64_t retry_seconds = 300;
  /// Batches in flight at once, on distinct sources (NGIT_SYNC_PLUS_DISCOVERY_BATCHES).
  std::size_t max_batches = 4;
  /// Seconds one batch may take in all (NGIT_SYNC_PLUS_DISCOVERY_BUDGET_SECS); 0: only the
  /// fetch path's own bounds.
  std::int64_t source_budget_seconds = 30;
};

/// One author as the controller sees it now.
struct DiscoveryAuthor {
  /// Where to ask, in order (canonical URLs).
  std::vector<std::string> sources;
  /// A retained kind 10002 or kind 0: the author was found.
  bool found = false;
};

struct DiscoveryBatch {
  std::uint64_t id = 0;
  std::string source;
  std::vector<nostr::Pubkey> authors;
  /// When it started (its budget runs from there).
  std::int64_t started = 0;
};

class DiscoveryPlan {
 public:
  explicit DiscoveryPlan(DiscoveryConfig config) : config_(config) {}

  /// Replaces the eligible authors; authors no longer eligible are forgotten.
  void set_authors(std::map<nostr::Pubkey, DiscoveryAuthor> authors);
  /// A maintenance pass: the budget of one new source is renewed; returns a batch to send, if any.
  std::optional<DiscoveryBatch> on_pass(std::int64_t now);
  /// The batch in flight ended; returns the next batch on a source already used in this pass.
  std::optional<DiscoveryBatch> on_done(std::uint64_t batch, bool ok, std::int64_t now);

  bool in_flight() const { return !in_flight_.empty(); }
  std::size_t batches_in_flight() const { return in_flight_.size(); }
  /// Batches that ended having spent their source's budget.
  std::uint64_t budgets_spent() const { return budgets_spent_; }
  /// Sources backed off at `now` for spending their budget.
  std::size_t sources_backed_off(std::int64_t now) const;
  /// Authors with a source left to ask now.
  std::size_t due_authors(std::int64_t now) const;
  /// Authors whose last successful query on a user index or the bootstrap relay ended with no
  /// retained relay list: they use the fallback relays.
  bool index_answered(const nostr::Pubkey& author) const;
  /// How many times an author's first index answer arrived (it only grows): a change after
  /// on_done means the fallback relays may now stand in for someone, so the caller reconciles.
  std::uint64_t index_answers() const { return index_answers_; }
  /// Sources and the number of authors each is asked for now (for /api/sync).
  std::map<std::string, std::size_t> pending_by_source(std::int64_t now) const;

 private:
  struct Round {
    std::set<std::string> visited;
    std::optional<std::int64_t> finished_at;
    bool failed = false;
  };
  struct Known {
    DiscoveryAuthor now;
    Round round;
    bool index_answered = false;
  };
  /// Whether the author's finished round is due again.
  bool round_due(const Known& known, std::int64_t now) const;
  /// The author's sources not asked in its current round (all of them when its last round is due).
  std::vector<std::string> pending_sources(const Known& known, std::int64_t now) const;
  std::optional<DiscoveryBatch> start(std::int64_t now, bool may_use_new_source);

  DiscoveryConfig config_;
  std::map<nostr::Pubkey, Known> authors_;
  /// Sources asked since the last maintenance pass (their connection is warm).
  std::set<std::string> warm_;
  std::map<std::uint64_t, DiscoveryBatch> in_flight_;
  std::uint64_t next_id_ = 1;
  struct Backoff {
    std::uint32_t spent = 0;
    std::int64_t until = 0;
  };
  /// Sources that spent their budget, and until when they get no batch.
  std::map<std::string, Backoff> backoff_;
  std::uint64_t budgets_spent_ = 0;
  std::uint64_t index_answers_ = 0;
  bool busy(const std::string& source, std::int64_t now) const;
  /// The batch on `source` ended at `now`: its budget spent (true) or not.
  void note_budget(const DiscoveryBatch& batch, bool ok, std::int64_t now);
  /// Sources that answered a batch successfully at least once while the author had no relay
  /// list: user-index sources.
  std::set<std::string> index_sources_;

 public:
  /// Marks `source` as a user-index source (a successful answer without a 10002 means "missing").
  void set_index_sources(std::set<std::string> sources) { index_sources_ = std::move(sources); }
};

}  // namespace graspd::sync

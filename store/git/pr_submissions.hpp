// GRASP-06 pull-request submission areas (docs/policy.md "Pull request submissions"): the rule
// for a push to `/prs/<submitter npub>/<identifier>.git`, which only creates `refs/nostr/<id>`
// refs, each once, for a PR event that is unknown here or names this area and the pushed commit.
// Pure: no I/O beyond StoreView, no git process.
#pragma once

#include <string>
#include <vector>

#include "messages/git_messages.hpp"
#include "messages/relay_url.hpp"
#include "store/git/git_push.hpp"
#include "store/policy/acceptance_policy.hpp"

namespace graspd::git {

/// Everything authorise_submission_push needs from the store (stored and held events) for a push
/// to submission area `area`: for each pushed id (hex) with a kind 1618/1619 event, its commit in
/// `pr_commits`, or in `pr_refusals` why that event cannot be pushed here (another signer, an
/// identifier it does not `a`-tag, no `clone` value naming this area on `service`).
PushAuthority submission_authority(const policy::StoreView& store, const HostPort& service,
                                   const RepositoryRef& area,
                                   const std::vector<std::string>& pr_ids);

/// §8.1–8.4: every update creates a `refs/nostr/<64 lowercase hex>` ref that is not here yet (no
/// other ref, no deletion, no move: an event id names one commit, so the first push stands), at
/// the commit its PR event names when one is known. One refusal refuses every update.
PushDecision authorise_submission_push(const std::vector<RefUpdate>& updates, const RefMap& current,
                                       const PushAuthority& authority);

}  // namespace graspd::git

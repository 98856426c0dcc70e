#include "store/git/pr_submissions.hpp"

#include "messages/nostr/nip19.hpp"
#include "messages/nostr/nip34.hpp"

namespace graspd::git {

namespace {

/// Why `pr` cannot have its ref in `area`, if it cannot (§8.2).
std::optional<std::string> area_mismatch(const nostr::Event& pr, const HostPort& service,
                                         const RepositoryRef& area) {
  if (pr.pubkey != area.owner)
    return "PR event is signed by " + nostr::encode_npub(pr.pubkey) + ", not this area's owner";
  if (!policy::pr_tags_identifier(pr, area.identifier))
    return "PR event does not tag a repository named '" + area.identifier + "'";
  for (const auto& tag : pr.tags) {
    if (tag.empty() || tag[0] != nostr::nip34::tag::clone) continue;
    for (std::size_t i = 1; i < tag.size(); ++i)
      if (policy::pr_submission_url_on(tag[i], service, area.owner, area.identifier))
        return std::nullopt;
  }
  return std::string("PR event has no clone URL naming this submission area");
}

}  // namespace

PushAuthority submission_authority(const policy::StoreView& store, const HostPort& service,
                                   const RepositoryRef& area,
                                   const std::vector<std::string>& pr_ids) {
  PushAuthority out;
  std::vector<nostr::EventId> ids;
  for (const auto& hex : pr_ids) {
    nostr::EventId id;
    if (hex.size() == 64 && nostr::from_hex(hex, id)) ids.push_back(id);
  }
  if (ids.empty()) return out;
  nostr::Filter prs;
  prs.ids = ids;
  prs.kinds = std::vector<std::uint32_t>{nostr::nip34::kind::pull_request,
                                         nostr::nip34::kind::pull_request_update};
  prs.normalize();
  store.scan({prs}, [&](const nostr::Event& pr) {
    auto id = nostr::to_hex(pr.id);
    if (auto mismatch = area_mismatch(pr, service, area)) {
      out.pr_refusals[id] = *mismatch;
      return true;
    }
    auto commit = pr.first_tag_value("c");
    // A PR event without a usable `c` tag fails closed: nothing matches it.
    out.pr_commits[id] = is_object_id(commit) ? std::string(commit) : "none";
    return true;
  });
  return out;
}

PushDecision authorise_submission_push(const std::vector<RefUpdate>& updates, const RefMap& current,
                                       const PushAuthority& authority) {
  PushDecision out;
  for (const auto& u : updates) {
    RefVerdict verdict{u.ref, true, {}};
    auto refuse = [&](std::string reason) {
      verdict.ok = false;
      verdict.reason = u.ref + ": " + std::move(reason);
    };
    auto id = nostr::nip34::refs_nostr_id(u.ref);
    if (!id) {
      refuse("only refs/nostr/<event-id> (64 lowercase hex) may be pushed to a pull request area");
    } else if (u.deletes()) {
      refuse("pull request refs cannot be deleted here");
    } else if (auto here = current.find(u.ref); here != current.end()) {
      refuse("names " + short_id(here->second) + " already; an event id names one commit");
    } else if (auto why = authority.pr_refusals.find(nostr::to_hex(*id));
               why != authority.pr_refusals.end()) {
      refuse(why->second);
    } else if (auto pr = authority.pr_commits.find(nostr::to_hex(*id));
               pr != authority.pr_commits.end() && pr->second != u.new_id) {
      refuse("pushed " + short_id(u.new_id) + ", PR event " + short_id(nostr::to_hex(*id)) +
             " names commit " + short_id(pr->second));
    }
    if (!verdict.ok && out.reason.empty()) out.reason = verdict.reason;
    out.refs.push_back(std::move(verdict));
  }
  out.accepted = out.reason.empty();
  if (!out.accepted)
    for (auto& verdict : out.refs)
      if (verdict.ok) {
        verdict.ok = false;
        verdict.reason = "refused with the rest of the push: " + out.reason;
      }
  return out;
}

}  // namespace graspd::git

// The NIP-11 relay information document. What it advertises is data (RelayInformation) derived
// from the Config, so a new capability extends relay_information(), not the JSON writer.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "runtime/config/config.hpp"

namespace graspd::runtime {

struct RelayInformation {
  std::string name;
  std::string description;
  /// The administrative contact: NGIT_OWNER_NPUB, else the relay key (docs/identity.md);
  /// empty = not published.
  std::string pubkey_hex;
  /// The relay's own key, which signs what the relay publishes (nips PR #1764); empty = none.
  std::string self_hex;
  std::string software;
  std::string version;
  std::vector<int> supported_nips;            ///< only NIPs graspd really implements
  std::vector<std::string> supported_grasps;  ///< "GRASP-01", "GRASP-02" while sync runs
  std::string repo_acceptance_criteria;       ///< one true sentence about what is stored
  /// How events are curated beyond spam prevention (GRASP-01: present whenever a curation list or
  /// an archive rule is configured); empty = omitted.
  std::string curation;
  std::vector<std::pair<std::string, std::int64_t>> limitation;  ///< in insertion order
  /// Boolean `limitation` fields (auth_required, restricted_writes), after the numbers.
  std::vector<std::pair<std::string, bool>> limitation_flags;
};

/// Everything the document advertises for this configuration.
RelayInformation relay_information(const Config& config);

/// Serializes `info` as the NIP-11 JSON document.
std::string nip11_json(const RelayInformation& info);

/// relay_information() + nip11_json(): the body served for `Accept: application/nostr+json`.
std::string build_nip11_document(const Config& config);

}  // namespace graspd::runtime

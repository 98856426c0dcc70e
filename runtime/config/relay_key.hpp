// The relay's own key (docs/identity.md): read at start from, in order, the systemd credential
// `relay_owner_nsec`, NGIT_RELAY_OWNER_NSEC, the file NGIT_RELAY_OWNER_NSEC_FILE; with none of
// them a new key is generated and written to that file (0600). ngit-grasp 3 reads the same
// sources, so a migrated deployment keeps its identity. The secret is never logged.
#pragma once

#include <functional>
#include <optional>
#include <string>

#include "messages/nostr/verify.hpp"
#include "runtime/config/config.hpp"

namespace graspd::runtime {

/// The file name of the relay key inside $CREDENTIALS_DIRECTORY (systemd LoadCredential=).
inline constexpr std::string_view relay_key_credential = "relay_owner_nsec";

/// Where the key in effect came from.
enum class RelayKeySource { credential, option, file, generated };

struct LoadedRelayKey {
  RelayKey key{};
  RelayKeySource source = RelayKeySource::option;
  std::string path;  ///< the credential or key file read or written; empty for the option
};

/// 32 random bytes (a candidate secret key); nullopt when the system has no randomness to give.
using SecretKeyGenerator = std::function<std::optional<nostr::SecretKey>()>;

/// getrandom(2).
SecretKeyGenerator system_key_generator();

/// The relay key of `config` (its relay_owner_nsec and relay_owner_nsec_file) and of the
/// environment's CREDENTIALS_DIRECTORY. An unreadable or invalid credential or file, or a file
/// that cannot be created, is a configuration error naming its source (never the key).
Result<LoadedRelayKey, ConfigError> load_relay_key(const Config& config,
                                                   const EnvironmentLookup& environment,
                                                   const SecretKeyGenerator& generate);

/// The start-up log line for a loaded key: a warning naming the new npub when it was generated.
std::string describe(const LoadedRelayKey& loaded);

}  // namespace graspd::runtime

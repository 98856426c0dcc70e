#include "runtime/config/relay_key.hpp"

#include <fcntl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "messages/nostr/nip19.hpp"

namespace graspd::runtime {

namespace {

constexpr std::string_view key_expected = "expected an nsec1... or 64-hex secret key";

ConfigError key_error(const std::string& source, const std::string& path, std::string_view why) {
  return {config_errc::invalid_value,
          "invalid " + source + " \"" + path + "\": " + std::string(why)};
}

std::optional<RelayKey> key_pair(const nostr::SecretKey& secret) {
  auto pubkey = nostr::pubkey_from_secret(secret);
  if (!pubkey) return std::nullopt;
  return RelayKey{secret, *pubkey};
}

/// The key held by the file at `path`; `source` names it in errors.
Result<RelayKey, ConfigError> read_key_file(const std::string& source, const std::string& path) {
  std::ifstream file(path);
  if (!file)
    return key_error(source, path, std::string("unreadable (") + std::strerror(errno) + ")");
  std::ostringstream text;
  text << file.rdbuf();
  auto secret = nostr::parse_secret_key(text.str());
  auto key = secret ? key_pair(*secret) : std::nullopt;
  if (!key) return key_error(source, path, std::string(key_expected) + " in the file");
  return *key;
}

std::optional<RelayKey> generate_key(const SecretKeyGenerator& generate) {
  // A random 32 bytes is no valid scalar with probability ~2^-128; a few tries are plenty.
  for (int attempt = 0; attempt < 8; ++attempt) {
    auto secret = generate();
    if (!secret) return std::nullopt;
    if (auto key = key_pair(*secret)) return key;
  }
  return std::nullopt;
}

/// Writes `key` to a new file at `path`, 0600: written whole to a private temporary file
/// (O_EXCL), then linked into place, so no reader ever sees a partial key and an existing file
/// is never replaced. Returns errno (EEXIST: another process created it first), 0 on success.
int write_new_key_file(const std::string& path, const RelayKey& key) {
  auto temporary = path + ".new." + std::to_string(::getpid());
  int fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) return errno;
  auto text = nostr::encode_nsec(key.secret) + "\n";
  int failure = 0;
  if (::fchmod(fd, 0600) != 0 ||
      ::write(fd, text.data(), text.size()) != static_cast<ssize_t>(text.size()) ||
      ::fsync(fd) != 0)
    failure = errno;
  ::close(fd);
  if (failure == 0 && ::link(temporary.c_str(), path.c_str()) != 0) failure = errno;
  ::unlink(temporary.c_str());
  return failure;
}

Result<LoadedRelayKey, ConfigError> from_key_file(const Config& config,
                                                  const SecretKeyGenerator& generate) {
  const std::string source = "NGIT_RELAY_OWNER_NSEC_FILE";
  const auto& path = config.relay_owner_nsec_file;
  if (path.empty()) return key_error(source, path, "expected a file path");
  std::error_code error;
  if (std::filesystem::exists(path, error)) {
    // Whatever the file's mode was, only the owner may read the key from now on.
    if (::chmod(path.c_str(), 0600) != 0)
      return key_error(source, path,
                       std::string("cannot set mode 0600 (") + std::strerror(errno) + ")");
    auto key = read_key_file(source, path);
    if (!key) return key.error();
    return LoadedRelayKey{*key, RelayKeySource::file, path};
  }
  auto key = generate_key(generate);
  if (!key) return key_error(source, path, "no randomness to generate a new key");
  if (int failure = write_new_key_file(path, *key); failure == EEXIST) {
    // Another process sharing the path generated one first: use that key.
    auto existing = read_key_file(source, path);
    if (!existing) return existing.error();
    return LoadedRelayKey{*existing, RelayKeySource::file, path};
  } else if (failure != 0) {
    return key_error(source, path,
                     std::string("cannot create the key file (") + std::strerror(failure) + ")");
  }
  return LoadedRelayKey{*key, RelayKeySource::generated, path};
}

}  // namespace

SecretKeyGenerator system_key_generator() {
  return []() -> std::optional<nostr::SecretKey> {
    nostr::SecretKey secret{};
    if (::getrandom(secret.data(), secret.size(), 0) != static_cast<ssize_t>(secret.size()))
      return std::nullopt;
    return secret;
  };
}

Result<LoadedRelayKey, ConfigError> load_relay_key(const Config& config,
                                                   const EnvironmentLookup& environment,
                                                   const SecretKeyGenerator& generate) {
  if (auto directory = environment("CREDENTIALS_DIRECTORY"); directory && !directory->empty()) {
    auto path = (std::filesystem::path(*directory) / relay_key_credential).string();
    std::error_code error;
    if (std::filesystem::exists(path, error)) {
      auto key = read_key_file("systemd credential " + std::string(relay_key_credential), path);
      if (!key) return key.error();
      return LoadedRelayKey{*key, RelayKeySource::credential, path};
    }
  }
  if (config.relay_owner_nsec) {
    // load_config checked the scalar already.
    if (auto key = key_pair(*config.relay_owner_nsec))
      return LoadedRelayKey{*key, RelayKeySource::option, {}};
    return ConfigError{config_errc::invalid_value,
                       "invalid NGIT_RELAY_OWNER_NSEC \"(elided)\": " + std::string(key_expected)};
  }
  return from_key_file(config, generate);
}

std::string describe(const LoadedRelayKey& loaded) {
  auto npub = nostr::encode_npub(loaded.key.pubkey);
  switch (loaded.source) {
    case RelayKeySource::credential:
      return "relay key " + npub + " from systemd credential " + loaded.path;
    case RelayKeySource::option:
      return "relay key " + npub + " from NGIT_RELAY_OWNER_NSEC";
    case RelayKeySource::file:
      return "relay key " + npub + " from " + loaded.path;
    case RelayKeySource::generated:
      break;
  }
  return "no relay key configured: generated a new one, " + npub + ", written to " + loaded.path +
         " (mode 0600); back this file up, it is the relay's identity (docs/identity.md)";
}

}  // namespace graspd::runtime

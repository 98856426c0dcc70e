// BIP-340 signature checks and signing for Nostr events (libsecp256k1).
#pragma once

#include <array>
#include <cstdint>
#include <optional>

#include "messages/nostr/event.hpp"

namespace graspd::nostr {

using SecretKey = std::array<std::uint8_t, 32>;

/// True when `ev.sig` is a valid BIP-340 signature of `ev.id` by `ev.pubkey`.
/// Does not recompute the id (see check_event). Thread-safe.
bool verify_signature(const Event& ev);

enum class EventCheck { ok, bad_id, bad_sig };

/// Recomputes the id, then verifies the signature.
EventCheck check_event(const Event& ev);

/// The NIP-01 OK message for a failed check ("invalid: ..."), empty for ok.
const char* describe(EventCheck check);

/// Fills pubkey, id and sig of `unsigned_ev` with the key `secret_key`.
/// Throws std::invalid_argument when the key is not a valid secp256k1 scalar.
Event sign_event(Event unsigned_ev, const SecretKey& secret_key);

/// The x-only public key of `secret_key`; nullopt for an invalid scalar.
std::optional<Pubkey> pubkey_from_secret(const SecretKey& secret_key);

/// BIP-340 primitives over raw bytes (exposed for the official test vectors).
bool schnorr_verify(const Signature& sig, const Bytes32& message, const Pubkey& pubkey);
std::optional<Signature> schnorr_sign(const Bytes32& message, const SecretKey& secret_key,
                                      const Bytes32& aux_rand);

namespace detail {
/// verify_signature without the per-thread parsed-pubkey cache (benchmarks).
bool verify_signature_uncached(const Event& ev);
}  // namespace detail

}  // namespace graspd::nostr

#include "messages/nostr/verify.hpp"

#include <openssl/rand.h>
#include <secp256k1.h>
#include <secp256k1_extrakeys.h>
#include <secp256k1_schnorrsig.h>

#include <cstring>
#include <stdexcept>

#include "messages/nostr/canonical.hpp"

namespace graspd::nostr {

namespace {

// Verification needs no precomputed tables: the static context is immutable,
// shared by every thread and allocates nothing.
const secp256k1_context* verify_context() {
  return secp256k1_context_static;
}

// Signing uses a randomized context (side-channel blinding), created once.
// libsecp256k1 functions taking a const context are thread-safe.
const secp256k1_context* sign_context() {
  static const secp256k1_context* ctx = [] {
    secp256k1_context* created = secp256k1_context_create(SECP256K1_CONTEXT_NONE);
    std::array<std::uint8_t, 32> seed{};
    if (RAND_bytes(seed.data(), static_cast<int>(seed.size())) != 1 ||
        secp256k1_context_randomize(created, seed.data()) != 1)
      throw std::runtime_error("secp256k1: cannot randomize the signing context");
    return created;
  }();
  return ctx;
}

bool parse_xonly(const Pubkey& pubkey, secp256k1_xonly_pubkey& out) {
  return secp256k1_xonly_pubkey_parse(verify_context(), &out, pubkey.data()) == 1;
}

bool verify_parsed(const Signature& sig, const Bytes32& message,
                   const secp256k1_xonly_pubkey& xonly) {
  return secp256k1_schnorrsig_verify(verify_context(), sig.data(), message.data(), message.size(),
                                     &xonly) == 1;
}

// Per-thread direct-mapped cache of parsed x-only keys. Parsing costs a
// square root (~12 % of a verification, docs/toolchain.md §6; see
// docs/benchmarks.md for the measurement on this code). Authors repeat a lot
// in practice, and thread_local needs no locking.
class PubkeyCache {
 public:
  const secp256k1_xonly_pubkey* get(const Pubkey& pubkey) {
    Slot& slot = slots_[slot_index(pubkey)];
    if (slot.valid && slot.key == pubkey) return &slot.parsed;
    slot.valid = false;
    if (!parse_xonly(pubkey, slot.parsed)) return nullptr;
    slot.key = pubkey;
    slot.valid = true;
    return &slot.parsed;
  }

 private:
  static constexpr std::size_t kSlots = 256;
  struct Slot {
    Pubkey key{};
    secp256k1_xonly_pubkey parsed{};
    bool valid = false;
  };
  // Keys are uniformly distributed x coordinates: any byte is a good hash.
  static std::size_t slot_index(const Pubkey& pubkey) { return pubkey[7] % kSlots; }

  std::array<Slot, kSlots> slots_{};
};

}  // namespace

bool schnorr_verify(const Signature& sig, const Bytes32& message, const Pubkey& pubkey) {
  secp256k1_xonly_pubkey xonly;
  return parse_xonly(pubkey, xonly) && verify_parsed(sig, message, xonly);
}

std::optional<Signature> schnorr_sign(const Bytes32& message, const SecretKey& secret_key,
                                      const Bytes32& aux_rand) {
  secp256k1_keypair keypair;
  if (secp256k1_keypair_create(sign_context(), &keypair, secret_key.data()) != 1)
    return std::nullopt;
  Signature sig{};
  const int signed_ok = secp256k1_schnorrsig_sign32(sign_context(), sig.data(), message.data(),
                                                    &keypair, aux_rand.data());
  std::memset(&keypair, 0, sizeof keypair);
  if (signed_ok != 1) return std::nullopt;
  return sig;
}

bool verify_signature(const Event& ev) {
  thread_local PubkeyCache cache;
  const secp256k1_xonly_pubkey* xonly = cache.get(ev.pubkey);
  return xonly != nullptr && verify_parsed(ev.sig, ev.id, *xonly);
}

bool detail::verify_signature_uncached(const Event& ev) {
  return schnorr_verify(ev.sig, ev.id, ev.pubkey);
}

EventCheck check_event(const Event& ev) {
  if (compute_id(ev) != ev.id) return EventCheck::bad_id;
  return verify_signature(ev) ? EventCheck::ok : EventCheck::bad_sig;
}

const char* describe(EventCheck check) {
  switch (check) {
    case EventCheck::ok:
      return "";
    case EventCheck::bad_id:
      return "invalid: event id does not match";
    case EventCheck::bad_sig:
      return "invalid: bad signature";
  }
  return "invalid: unknown check result";
}

std::optional<Pubkey> pubkey_from_secret(const SecretKey& secret_key) {
  secp256k1_keypair keypair;
  if (secp256k1_keypair_create(sign_context(), &keypair, secret_key.data()) != 1)
    return std::nullopt;
  secp256k1_xonly_pubkey xonly;
  Pubkey out{};
  const bool ok = secp256k1_keypair_xonly_pub(sign_context(), &xonly, nullptr, &keypair) == 1 &&
                  secp256k1_xonly_pubkey_serialize(sign_context(), out.data(), &xonly) == 1;
  std::memset(&keypair, 0, sizeof keypair);
  if (!ok) return std::nullopt;
  return out;
}

Event sign_event(Event unsigned_ev, const SecretKey& secret_key) {
  const auto pubkey = pubkey_from_secret(secret_key);
  if (!pubkey) throw std::invalid_argument("sign_event: invalid secret key");
  unsigned_ev.pubkey = *pubkey;
  unsigned_ev.id = compute_id(unsigned_ev);
  Bytes32 aux{};
  if (RAND_bytes(aux.data(), static_cast<int>(aux.size())) != 1)
    throw std::runtime_error("sign_event: no randomness");
  const auto sig = schnorr_sign(unsigned_ev.id, secret_key, aux);
  if (!sig) throw std::invalid_argument("sign_event: signing failed");
  unsigned_ev.sig = *sig;
  return unsigned_ev;
}

}  // namespace graspd::nostr

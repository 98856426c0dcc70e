#include "actors/relay/engine/connection_keys.hpp"

namespace graspd {

ConnectionKeys::ConnectionKeys(std::function<std::string()> make_challenge)
    : make_challenge_(std::move(make_challenge)) {}

std::optional<std::string> ConnectionKeys::challenge_to_send() {
  if (!challenge_.empty()) return std::nullopt;
  challenge_ = make_challenge_();
  return challenge_;
}

ConnectionKeys::Added ConnectionKeys::add(const nostr::Pubkey& pubkey) {
  if (keys_.contains(pubkey)) return Added::known;
  if (keys_.size() >= max_keys) return Added::too_many;
  keys_.insert(pubkey);
  return Added::added;
}

}  // namespace graspd

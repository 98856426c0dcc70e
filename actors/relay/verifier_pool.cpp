#include "actors/relay/verifier_pool.hpp"

#include <algorithm>

namespace graspd {

VerifierPool::VerifierPool(std::vector<verifier_actor> verifiers, std::size_t max_out)
    // A cap of zero would leave every check waiting forever.
    : verifiers_(std::move(verifiers)), max_out_(std::max<std::size_t>(max_out, 1)) {}

const verifier_actor& VerifierPool::next_verifier() {
  return verifiers_[turn_++ % verifiers_.size()];
}

}  // namespace graspd

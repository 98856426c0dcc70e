#include "runtime/ops/version.hpp"

namespace graspd::runtime {

// GRASPD_VERSION is defined for this file only, so a version bump rebuilds one TU.
std::string_view version() {
  return GRASPD_VERSION;
}

}  // namespace graspd::runtime

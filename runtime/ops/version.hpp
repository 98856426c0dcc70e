// The graspd version, from project(VERSION) in the top-level CMakeLists.txt.
#pragma once

#include <string_view>

namespace graspd::runtime {

std::string_view version();

}  // namespace graspd::runtime

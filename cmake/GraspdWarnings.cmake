# Our own code builds warning-free; system headers are exempt.
add_library(graspd_warnings INTERFACE)
target_compile_options(graspd_warnings INTERFACE -Wall -Wextra -Werror
  # g++ 12 at -O3 reports std::string concatenations (`"x" + std::to_string(n)`) as overlapping
  # memcpy: a known false positive of its -Wrestrict (GCC bug 105329), not a defect of ours.
  $<$<CXX_COMPILER_ID:GNU>:-Wno-restrict>)

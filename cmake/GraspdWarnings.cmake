# Our own code builds warning-free; system headers are exempt.
add_library(graspd_warnings INTERFACE)
target_compile_options(graspd_warnings INTERFACE -Wall -Wextra -Werror
  # g++ 12 at -O3 reports std::string concatenations (`"x" + std::to_string(n)`) as overlapping
  # memcpy: a known false positive of its -Wrestrict (GCC bug 105329), not a defect of ours.
  $<$<CXX_COMPILER_ID:GNU>:-Wno-restrict>)
if(CMAKE_UNITY_BUILD)
  # A unity build compiles each .cpp as an #include of a generated file, so g++ takes a class of
  # that .cpp with a member from its anonymous namespace for a header's class (which would be an
  # ODR hazard in a real header). Not one here: the warning only applies to headers.
  target_compile_options(graspd_warnings INTERFACE
    $<$<CXX_COMPILER_ID:GNU>:-Wno-subobject-linkage>)
endif()

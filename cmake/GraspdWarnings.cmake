# Our own code builds warning-free; system headers are exempt.
add_library(graspd_warnings INTERFACE)
target_compile_options(graspd_warnings INTERFACE -Wall -Wextra -Werror)

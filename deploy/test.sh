#!/usr/bin/env bash
# Installs dependencies, then builds and runs the whole test suite twice: the
# default build (g++) and the sanitizer build (clang, ASan + UBSan, fuzzers).
set -euo pipefail
cd "$(dirname "$0")/.."
deploy/install-deps.sh

# strfry is not a Debian package: the interop tests against it run when GRASPD_STRFRY names a binary
# (or strfry is on PATH) and skip, saying so, otherwise. A copy next to the checkout is picked up.
if [[ -z "${GRASPD_STRFRY:-}" && -x ../shared/tools/strfry/strfry ]]; then
  GRASPD_STRFRY=$(realpath ../shared/tools/strfry/strfry)
  export GRASPD_STRFRY
fi

jobs=$(nproc)
run_suite() {
  local preset=$1
  echo "=== graspd tests: preset $preset ===" >&2
  cmake --preset "$preset" >/dev/null
  cmake --build --preset "$preset"
  ctest --preset "$preset" -j "$jobs"
}
run_suite default
run_suite asan
echo "=== graspd tests: all passed ===" >&2

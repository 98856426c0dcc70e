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

# One test more than cores: the end-to-end tests spend part of their time waiting on sockets, timers
# and child processes (the default suite keeps 2 cores ~67% busy at -j2). No test depends on speed.
test_jobs=$(($(nproc) + 1))
run_suite() {
  local preset=$1
  echo "=== graspd tests: preset $preset ===" >&2
  cmake --preset "$preset" >/dev/null
  cmake --build --preset "$preset"
  ctest --preset "$preset" -j "$test_jobs"
}
run_suite default

# The Debian package, installed the way an operator installs it: its Depends must resolve, the
# installed binary must serve NIP-11 on loopback, and removal must leave no binary behind.
package_check() {
  echo "=== graspd tests: Debian package ===" >&2
  rm -f build/default/graspd_*.deb
  (cd build/default && cpack -G DEB >/dev/null)
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq ./build/default/graspd_*.deb >/dev/null
  local port=17334 log
  log=$(mktemp)
  NGIT_BIND_ADDRESS=127.0.0.1:$port NGIT_RELAY_DATA_PATH=$(mktemp -d) NGIT_GIT_DATA_PATH=$(mktemp -d) \
    NGIT_RELAY_OWNER_NSEC_FILE="$(mktemp -d)/relay-owner.nsec" /usr/bin/graspd --config /etc/graspd/graspd.conf 2>"$log" &
  local pid=$! nip11=""
  for _ in $(seq 1 100); do
    nip11=$(curl -sf -H 'Accept: application/nostr+json' "http://127.0.0.1:$port/" || true)
    [ -n "$nip11" ] && break
    sleep 0.1
  done
  kill "$pid" && wait "$pid" || true
  grep -q '"software"' <<<"$nip11" || { cat "$log" >&2; echo "installed graspd gave no NIP-11" >&2; exit 1; }
  DEBIAN_FRONTEND=noninteractive apt-get remove -y -qq graspd >/dev/null
  [ ! -e /usr/bin/graspd ] || { echo "apt-get remove left /usr/bin/graspd" >&2; exit 1; }
  rm -f "$log"
}
package_check
run_suite asan
echo "=== graspd tests: all passed ===" >&2

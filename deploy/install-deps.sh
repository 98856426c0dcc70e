#!/usr/bin/env bash
# Installs every build, test and runtime dependency from Debian 12 packages
# (and the npm packages the interop tests use). Idempotent: does nothing when
# everything is already present.
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(build-essential cmake ninja-build pkg-config ccache ca-certificates git
  libcaf-dev libboost-dev libssl-dev libsecp256k1-dev liblmdb-dev lmdb-utils rapidjson-dev
  libgtest-dev libgmock-dev libbenchmark-dev prometheus-cpp-dev prometheus zlib1g-dev
  clang libclang-rt-14-dev lld curl procps  # lld links both presets
  dpkg-dev  # dpkg-shlibdeps: the Debian package's Depends
  chromium  # the status page test renders in headless Chromium
  haproxy  # the cluster's balancer (deploy/cluster/) and its fault test (tests/cluster/)
  valgrind  # the ingest regression guard counts instructions under callgrind
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# Node.js may come from Debian (nodejs + npm) or from NodeSource (one nodejs package that ships npm
# and conflicts with Debian's npm): ask for the commands, not the packages.
command -v node >/dev/null 2>&1 || missing+=(nodejs)
command -v npm >/dev/null 2>&1 || missing+=(npm)
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" -ne 0 ]; then
    echo "install-deps: missing packages (${missing[*]}); run as root" >&2
    exit 1
  fi
  echo "install-deps: installing ${missing[*]}" >&2
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# npm packages for interop tests (nostr-tools, ws), pinned by the lock file.
if [ "${GRASPD_SKIP_NPM:-0}" != 1 ] && [ -f tests/interop/package.json ]; then
  if [ ! -d tests/interop/node_modules ] || [ tests/interop/package-lock.json -nt tests/interop/node_modules ]; then
    (cd tests/interop && npm ci --no-audit --no-fund --loglevel=error)
    touch tests/interop/node_modules
  fi
fi

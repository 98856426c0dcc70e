#!/usr/bin/env bash
# Installs dependencies, builds graspd (release preset) and runs it on its
# embedded defaults: 127.0.0.1:7334, LMDB under ./data/relay. Extra arguments
# are passed to graspd.
set -euo pipefail
cd "$(dirname "$0")/.."
GRASPD_SKIP_NPM=1 deploy/install-deps.sh
cmake --preset release >/dev/null
cmake --build --preset release --target graspd
exec build/release/graspd "$@"

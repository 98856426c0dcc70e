#!/usr/bin/env bash
# Clone benchmark of graspd's git hosting against nginx + fcgiwrap + `git http-backend` (what
# ngit-relay ships), on the same machine (docs/benchmarks.md, "Git hosting: clone"). Needs git, node
# and the ws and nostr-tools modules of tests/interop (`npm ci` there); the comparison needs nginx and
# fcgiwrap (`apt-get install nginx fcgiwrap`) and is skipped, saying so, without them.
#   tests/bench/git_clone_bench.sh [path/to/graspd] [--mb 50 --reps 5 --clients 20 --rounds 2 ...]
# Smoke run (a 2 MiB repository, 2 concurrent clones):
#   tests/bench/git_clone_bench.sh build/default/graspd --mb 2 --reps 1 --clients 2 --rounds 1 --idle-reqs 10
set -euo pipefail
here=$(dirname "$(realpath "$0")")
graspd=build/default/graspd
if [[ $# -gt 0 && $1 != --* ]]; then
  graspd=$1
  shift
fi
exec node "$here/git_clone_bench.mjs" --binary "$(realpath "$graspd")" "$@"

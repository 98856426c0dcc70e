#!/usr/bin/env bash
# graspd cluster kit (GRASP-02): starts N graspd nodes on loopback (free ports, temporary data
# dirs, sync on, private addresses allowed, policy grasp01), publishes one repository announcement
# listing every node to every node, waits until every node is connected to every other one,
# publishes E issues/comments of that repository to node 1 and reports, for every other node, the
# propagation latency p50/p99 (live subscriber receive time - send time) and loss (COUNT).
#
#   deploy/cluster.sh [--nodes N] [--events E] [--build-dir DIR] [--timeout S] [--keep] [--verbose]
#   deploy/cluster.sh fullsync [--repos R] [--issues I] [--comments C] [--events-cache FILE] [--strfry PATH] [--build-dir DIR]
#   deploy/cluster.sh catchup  [--repos R] [--issues I] [--comments C] [--missing-every M] [--missing spread|recent] [--events-cache FILE] [--strfry PATH] [--build-dir DIR]
#   deploy/cluster.sh memory   [--repos R] [--build-dir DIR]
#   deploy/cluster.sh plus     [--repos R] [--issues T] [--authors A] [--relays L] [--reconcile S] [--events-cache FILE]
#
# Run from anywhere after a build; the build dir defaults to the first of build/release,
# build/default (or GRASPD_BUILD_DIR) that holds a graspd binary. Exit status 0 = no loss.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/.." && pwd)"

build_dir="${GRASPD_BUILD_DIR:-}"
args=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --build-dir) build_dir="$2"; shift 2 ;;
    --build-dir=*) build_dir="${1#*=}"; shift ;;
    -h|--help) sed -n '2,16p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) args+=("$1"); shift ;;
  esac
done

. "$root/deploy/lib/graspd-binary.sh"
if ! binary="$(graspd_binary "$root" "$build_dir")"; then
  echo "cluster.sh: no graspd binary found (looked in build/release, build/default); build first or pass --build-dir" >&2
  exit 2
fi
command -v node >/dev/null || { echo "cluster.sh: node is required (deploy/install-deps.sh installs it)" >&2; exit 2; }
if [[ ! -d "$root/tests/interop/node_modules/nostr-tools" ]]; then
  echo "cluster.sh: installing tests/interop node modules" >&2
  (cd "$root/tests/interop" && npm ci --silent)
fi

# The node script kills its graspd children and removes their dirs itself on every exit path. The
# trap covers it being stuck (signing blocks its event loop) or killed: after 2 s the graspd children
# (by parent pid) and the node script are killed, and the kit's temporary parent dir is removed.
kit_tmp="$(mktemp -d "${TMPDIR:-/tmp}/graspd-kit.XXXXXX")"
kit_pid=""
cleanup() {
  trap - EXIT INT TERM
  if [[ -n "$kit_pid" ]] && kill -0 "$kit_pid" 2>/dev/null; then
    kill -TERM "$kit_pid" 2>/dev/null || true
    for _ in $(seq 20); do kill -0 "$kit_pid" 2>/dev/null || break; sleep 0.1; done
    if kill -0 "$kit_pid" 2>/dev/null; then
      for child in $(pgrep -P "$kit_pid" || true); do kill -KILL "$child" 2>/dev/null || true; done
      kill -KILL "$kit_pid" 2>/dev/null || true
    fi
  fi
  rm -rf "$kit_tmp"
}
trap cleanup EXIT
trap 'cleanup; exit 130' INT TERM

GRASPD_KIT_TMP="$kit_tmp" node "$here/cluster-kit.mjs" "${args[@]}" --binary "$binary" &
kit_pid=$!
wait "$kit_pid"

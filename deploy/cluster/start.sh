#!/usr/bin/env bash
# Starts a graspd cluster on loopback: N graspd nodes (free loopback ports, one data dir each)
# that keep each other complete (NGIT_SYNC_PEERS: every node, the same list for each), and HAProxy
# in front of them on 127.0.0.1:P, the one address clients use (NGIT_DOMAIN of every node).
# Runs in the foreground until Ctrl-C or SIGTERM, then stops HAProxy and every node.
#
#   deploy/cluster/start.sh [--nodes N] [--port P] [--build-dir DIR] [--data DIR]
#
#   --nodes N        graspd nodes (default 3)
#   --port P         the balancer's port on 127.0.0.1 (default 7400)
#   --build-dir DIR  where the graspd binary is (default: the first of build/release, build/default,
#                    or GRASPD_BUILD_DIR, that holds one)
#   --data DIR       data of the cluster (default ./data/cluster): node<i>/relay, node<i>/git,
#                    node<i>/graspd.log, haproxy.cfg, haproxy.log. Kept after the cluster stops;
#                    starting again with the same DIR reuses it.
#
# Needs haproxy (Debian package `haproxy`; deploy/install-deps.sh installs it) and curl.
# See docs/operations.md, "Running a cluster".
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"

nodes=3
port=7400
build_dir="${GRASPD_BUILD_DIR:-}"
data="./data/cluster"

die() { echo "start.sh: $*" >&2; exit 2; }
while [[ $# -gt 0 ]]; do
  case "$1" in
    --nodes) [[ $# -ge 2 ]] || die "--nodes needs a value"; nodes="$2"; shift 2 ;;
    --nodes=*) nodes="${1#*=}"; shift ;;
    --port) [[ $# -ge 2 ]] || die "--port needs a value"; port="$2"; shift 2 ;;
    --port=*) port="${1#*=}"; shift ;;
    --build-dir) [[ $# -ge 2 ]] || die "--build-dir needs a value"; build_dir="$2"; shift 2 ;;
    --build-dir=*) build_dir="${1#*=}"; shift ;;
    --data) [[ $# -ge 2 ]] || die "--data needs a value"; data="$2"; shift 2 ;;
    --data=*) data="${1#*=}"; shift ;;
    -h|--help) sed -n '2,18p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown argument $1 (see --help)" ;;
  esac
done
[[ "$nodes" =~ ^[1-9][0-9]*$ && "$nodes" -le 64 ]] || die "--nodes: expected 1 to 64, got \"$nodes\""
[[ "$port" =~ ^[1-9][0-9]*$ && "$port" -le 65535 ]] || die "--port: expected a TCP port, got \"$port\""

# The binary, found as deploy/cluster.sh finds it.
. "$root/deploy/lib/graspd-binary.sh"
binary="$(graspd_binary "$root" "$build_dir")" ||
  die "no graspd binary found (looked in build/release, build/default); build first or pass --build-dir"
haproxy="$(command -v haproxy || true)"
[[ -n "$haproxy" ]] || die "haproxy is required (apt-get install haproxy, or deploy/install-deps.sh)"
command -v curl >/dev/null || die "curl is required"

mkdir -p "$data"
data="$(cd "$data" && pwd)"

# True when something accepts connections on 127.0.0.1:$1.
listening() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
listening "$port" && die "127.0.0.1:$port is in use (pass --port)"

# Node ports: the first free ones above the balancer's.
ports=()
candidate=$((port + 1))
while [[ ${#ports[@]} -lt $nodes ]]; do
  [[ $candidate -le 65535 ]] || die "no free ports above $port"
  listening "$candidate" || ports+=("$candidate")
  candidate=$((candidate + 1))
done
peers=""
for p in "${ports[@]}"; do peers+="${peers:+,}ws://127.0.0.1:$p"; done

node_pids=()
haproxy_pid=""
stopping=0
# Stops HAProxy first (no new requests reach a node being stopped), then every node with SIGTERM
# (graceful: graspd exits within 5 s), SIGKILL after 10 s.
stop_all() {
  [[ $stopping -eq 1 ]] && return
  stopping=1
  trap - INT TERM EXIT
  if [[ -n "$haproxy_pid" ]] && kill -0 "$haproxy_pid" 2>/dev/null; then
    kill -TERM "$haproxy_pid" 2>/dev/null || true
    wait "$haproxy_pid" 2>/dev/null || true
  fi
  local pid
  for pid in "${node_pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in "${node_pids[@]}"; do
    for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -0 "$pid" 2>/dev/null && { echo "start.sh: node pid $pid did not stop in 10 s; killing it" >&2; kill -KILL "$pid" 2>/dev/null || true; }
    wait "$pid" 2>/dev/null || true
  done
}
trap 'stop_all; exit 130' INT
trap 'stop_all; exit 143' TERM
trap 'stop_all' EXIT

# Every client reaches a node from the balancer's address until graspd trusts X-Forwarded-For, so
# each per-address bound would be shared by all clients of the cluster together: they are switched
# off (0 = unlimited / no share) or set to the whole (100 %). The per-connection bounds stay.
per_address_limits=(
  NGIT_MAX_CONNECTIONS_PER_IP=0                    # WebSocket connections per address
  NGIT_GIT_MAX_CONNECTIONS_PER_IP=0                # git HTTP connections per address
  NGIT_GIT_MAX_PROCESSES_PER_IP=0                  # git processes per address (no share)
  NGIT_GIT_PUSHES_PER_MINUTE_PER_IP=0              # pushes per minute per address
  NGIT_NEGENTROPY_ADDRESS_SHARE_PERCENT=100        # NIP-77 records one address may hold
  NGIT_NEGENTROPY_ADDRESS_SCAN_RATE=0              # NIP-77 records one address may scan a second
  NGIT_NEGENTROPY_SCAN_QUEUE_PER_ADDRESS=1024      # NIP-77 scans one address may have waiting
  NGIT_PURGATORY_ADDRESS_SHARE_PERCENT=100         # purgatory one address may hold
)

# Starts node $1 (1-based) in the background, in a session of its own so that a Ctrl-C reaches
# only this script, which stops the nodes after HAProxy. Its environment is also written to
# node<i>/env (shell syntax), so a node stopped by hand can be started again the same way:
#   (set -a && . DATA/node2/env && exec setsid GRASPD) >>DATA/node2/graspd.log 2>&1 &
start_node() {
  local i="$1" p="${ports[$(($1 - 1))]}" dir="$data/node$1"
  mkdir -p "$dir"
  local node_env=(
    "${per_address_limits[@]}"
    NGIT_BIND_ADDRESS="127.0.0.1:$p"
    NGIT_DOMAIN="127.0.0.1:$port"        # the balancer: what clients use and announcements list
    NGIT_SYNC_PEERS="$peers"             # every node, the same list for each (a node skips itself)
    NGIT_SYNC_ENABLED=true
    NGIT_RELAY_DATA_PATH="$dir/relay"
    NGIT_GIT_DATA_PATH="$dir/git"
    NGIT_RELAY_OWNER_NSEC_FILE="$dir/relay-owner.nsec"
    NGIT_RELAY_NAME="graspd cluster 127.0.0.1:$port"   # one relay to clients: the same on every node
  )
  local kv
  for kv in "${node_env[@]}"; do printf '%s=%q\n' "${kv%%=*}" "${kv#*=}"; done > "$dir/env"
  env "${node_env[@]}" setsid "$binary" >>"$dir/graspd.log" 2>&1 &
  node_pids[$(($1 - 1))]=$!
}

# Waits until http://127.0.0.1:$1/healthz answers 200, up to $2 seconds; fails when pid $3 exits.
wait_healthy() {
  local until=$((SECONDS + $2))
  while [[ $SECONDS -lt $until ]]; do
    [[ -n "${3:-}" ]] && ! kill -0 "$3" 2>/dev/null && return 1
    curl -fsS -o /dev/null --max-time 1 "http://127.0.0.1:$1/healthz" 2>/dev/null && return 0
    sleep 0.1
  done
  return 1
}

echo "start.sh: $nodes nodes on 127.0.0.1 ports ${ports[*]}, data in $data"
for i in $(seq "$nodes"); do
  mkdir -p "$data/node$i"
  echo "=== start.sh $(date -u +%FT%TZ): node$i on 127.0.0.1:${ports[$((i - 1))]}" >> "$data/node$i/graspd.log"
done
echo "=== start.sh $(date -u +%FT%TZ): balancer on 127.0.0.1:$port" >> "$data/haproxy.log"
for i in $(seq "$nodes"); do start_node "$i"; done
for i in $(seq "$nodes"); do
  if ! wait_healthy "${ports[$((i - 1))]}" 30 "${node_pids[$((i - 1))]}"; then
    echo "start.sh: node$i (127.0.0.1:${ports[$((i - 1))]}) did not become healthy; the end of $data/node$i/graspd.log:" >&2
    tail -n 20 "$data/node$i/graspd.log" >&2 || true
    exit 1
  fi
done

cfg="$data/haproxy.cfg"
node_addresses=()
for p in "${ports[@]}"; do node_addresses+=("127.0.0.1:$p"); done
# HAProxy needs two descriptors per connection (client and node side): keep maxconn within the
# descriptors this shell may give it.
fd_limit="$(ulimit -Hn)"
maxconn=10000
if [[ "$fd_limit" =~ ^[0-9]+$ ]] && (( (fd_limit - 200) / 2 < maxconn )); then
  maxconn=$(( (fd_limit - 200) / 2 ))
  (( maxconn >= 100 )) || die "the descriptor limit (ulimit -Hn $fd_limit) is too low for HAProxy"
fi
"$here/render-haproxy.sh" --maxconn "$maxconn" "127.0.0.1:$port" "${node_addresses[@]}" > "$cfg"
"$haproxy" -c -q -f "$cfg" || die "haproxy refused $cfg"
setsid "$haproxy" -f "$cfg" -db >>"$data/haproxy.log" 2>&1 &
haproxy_pid=$!
if ! wait_healthy "$port" 20 "$haproxy_pid"; then
  echo "start.sh: the balancer on 127.0.0.1:$port did not answer /healthz; the end of $data/haproxy.log:" >&2
  tail -n 20 "$data/haproxy.log" >&2 || true
  exit 1
fi

cat <<INFO
start.sh: the cluster is up
  relay (WebSocket)  ws://127.0.0.1:$port
  git                http://127.0.0.1:$port/<npub>/<identifier>.git
  status page        http://127.0.0.1:$port/
  node metrics       http://127.0.0.1:$port/node/<1..$nodes>/metrics
INFO
for i in $(seq "$nodes"); do
  printf '  %-18s ws://127.0.0.1:%s  pid %s  log %s\n' "node$i" "${ports[$((i - 1))]}" "${node_pids[$((i - 1))]}" "$data/node$i/graspd.log"
done
echo "  haproxy            pid $haproxy_pid  config $cfg  log $data/haproxy.log"
echo "Ctrl-C stops the cluster."

# Runs until a signal, or until HAProxy exits (then everything is stopped). A node that exits
# (crash, kill -9) is reported; HAProxy takes it out of rotation, and it is not restarted.
declare -A reported=()
while kill -0 "$haproxy_pid" 2>/dev/null; do
  for i in $(seq "$nodes"); do
    pid="${node_pids[$((i - 1))]}"
    if [[ -z "${reported[$i]:-}" ]] && ! kill -0 "$pid" 2>/dev/null; then
      reported[$i]=1
      echo "start.sh: node$i (pid $pid) has exited; see $data/node$i/graspd.log" >&2
    fi
  done
  sleep 1 & wait $! || true
done
echo "start.sh: haproxy has exited; see $data/haproxy.log" >&2
exit 1

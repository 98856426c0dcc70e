#!/usr/bin/env bash
# Writes a complete haproxy.cfg for a graspd cluster to stdout, from haproxy.cfg.template beside
# this script.
#
#   deploy/cluster/render-haproxy.sh [--maxconn N] [--tls-cert PEM] BIND NODE...
#
#   BIND        the balancer's public address as HAProxy's `bind` takes it: 127.0.0.1:7400,
#               0.0.0.0:80, :443 (all addresses)
#   NODE        each graspd node's host:port (its NGIT_BIND_ADDRESS as reached from the balancer),
#               e.g. 10.0.0.11:7334; node n (from 1, in this order) is also GET /node/n/metrics
#   --maxconn   HAProxy's connection limit (default 10000; each WebSocket client holds one
#               connection to the client and one to a node)
#   --tls-cert  terminate TLS on BIND with this PEM (certificate, chain and key in one file):
#               clients use wss:// and https://, the nodes still get plain HTTP
#
# Check the result with `haproxy -c -f FILE`.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
template="$here/haproxy.cfg.template"
maxconn=10000
tls_cert=""

usage() { sed -n '2,18p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; }
die() { echo "render-haproxy.sh: $*" >&2; exit 2; }

positional=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --maxconn) [[ $# -ge 2 ]] || die "--maxconn needs a value"; maxconn="$2"; shift 2 ;;
    --maxconn=*) maxconn="${1#*=}"; shift ;;
    --tls-cert) [[ $# -ge 2 ]] || die "--tls-cert needs a file"; tls_cert="$2"; shift 2 ;;
    --tls-cert=*) tls_cert="${1#*=}"; shift ;;
    -h|--help) usage; exit 0 ;;
    --) shift; positional+=("$@"); break ;;
    -*) die "unknown option $1 (see --help)" ;;
    *) positional+=("$1"); shift ;;
  esac
done
[[ ${#positional[@]} -ge 2 ]] || { usage >&2; exit 2; }
[[ -r "$template" ]] || die "template $template not found"
[[ "$maxconn" =~ ^[1-9][0-9]*$ ]] || die "--maxconn: expected a positive integer, got \"$maxconn\""

bind="${positional[0]}"
nodes=("${positional[@]:1}")
# host:port with a numeric port; the host may be empty (all addresses) for the bind address only.
[[ "$bind" =~ ^[^[:space:]]*:[0-9]{1,5}$ ]] || die "bind address \"$bind\": expected host:port or :port"
for node in "${nodes[@]}"; do
  [[ "$node" =~ ^[^[:space:]]+:[0-9]{1,5}$ ]] || die "node \"$node\": expected host:port"
done
if [[ -n "$tls_cert" ]]; then
  [[ "$tls_cert" != *[[:space:]]* ]] || die "--tls-cert: the path must not contain spaces"
  bind="$bind ssl crt $tls_cert alpn http/1.1"
fi

servers=""
routes=""
metrics=""
for i in "${!nodes[@]}"; do
  n=$((i + 1))
  servers+="    server node$n ${nodes[$i]}"$'\n'
  routes+="    use_backend graspd_node${n}_metrics if { path /node/$n/metrics }"$'\n'
  metrics+="backend graspd_node${n}_metrics"$'\n'
  metrics+="    http-request set-path /metrics"$'\n'
  metrics+="    server node$n ${nodes[$i]} track graspd_nodes/node$n"$'\n'
  [[ $n -lt ${#nodes[@]} ]] && metrics+=$'\n'
done

while IFS= read -r line || [[ -n "$line" ]]; do
  case "$line" in
    @SERVERS@) printf '%s' "$servers" ;;
    @METRICS_ROUTES@) printf '%s' "$routes" ;;
    @METRICS_BACKENDS@) printf '%s' "$metrics" ;;
    *)
      line="${line//@BIND@/$bind}"
      line="${line//@MAXCONN@/$maxconn}"
      printf '%s\n' "$line"
      ;;
  esac
done < "$template"

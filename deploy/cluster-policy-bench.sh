#!/bin/bash
# Policy overhead benchmark (docs/benchmarks.md "GRASP-01 policy"): starts graspd with the given
# acceptance policy on PORT (fresh data dir /tmp/kitpol/POLICY, kept afterwards), publishes 100,000
# announcements and 2 x 200,000 issues with graspd-load. GRASPD_BUILD_DIR overrides build/kit.
# usage: deploy/cluster-policy-bench.sh grasp01|open PORT
set -u
pol=$1; port=$2; dir=/tmp/kitpol/$pol; rm -rf $dir; mkdir -p $dir
B=${GRASPD_BUILD_DIR:-$(cd "$(dirname "$0")/.." && pwd)/build/kit}
NGIT_BIND_ADDRESS=127.0.0.1:$port NGIT_RELAY_DATA_PATH=$dir/relay NGIT_ACCEPTANCE_POLICY=$pol NGIT_PURGATORY_ENABLED=false NGIT_SYNC_ENABLED=false NGIT_SYNC_PLUS_ENABLED=false NGIT_EVENT_RATE=10000000 NGIT_EVENT_BURST=10000000 NGIT_LOG_LEVEL=warn $B/graspd 2>$dir/log &
gpid=$!
for i in $(seq 100); do curl -sf 127.0.0.1:$port/healthz >/dev/null && break; sleep 0.1; done
echo "== $pol announcements"
$B/tests/load/graspd-load publish --port $port --kind 30617 --announce 127.0.0.1:$port --events 100000 --authors 1000 --connections 4 --content-bytes 100
echo "== $pol issues (store: 100k announcements)"
$B/tests/load/graspd-load publish --port $port --kind 1621 --repos 100000 --authors 1000 --events 200000 --connections 4 --content-bytes 200
echo "== $pol issues again (store: 100k announcements + 200k issues)"
$B/tests/load/graspd-load publish --port $port --kind 1621 --repos 100000 --authors 1000 --events 200000 --connections 4 --content-bytes 201
kill $gpid; wait $gpid
du -sh $dir/relay

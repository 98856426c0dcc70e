#!/usr/bin/env bash
# Clone of a ~50 MB repository (50 incompressible 1 MiB blobs in 10 commits, packed once) from
# graspd (git upload-pack --stateless-rpc behind its own listener), from `git http-backend` (CGI,
# behind Python's http.server --cgi) and from file:// (git alone, no HTTP). Three runs each.
#   tests/bench/git_clone_bench.sh [path/to/graspd]
set -euo pipefail
GRASPD=${1:-build/default/graspd}
GRASPD=$(realpath "$GRASPD")
W=$(mktemp -d /tmp/git-clone-bench.XXXXXX)
chmod 755 "$W"  # the CGI runs as nobody
trap 'kill ${GPID:-} ${CPID:-} 2>/dev/null || true; rm -rf "$W"' EXIT
cd "$W"
export HOME=$W GIT_CONFIG_NOSYSTEM=1 GIT_TERMINAL_PROMPT=0
git init -q -b main src
for c in $(seq 1 10); do
  for f in $(seq 1 5); do head -c 1048576 /dev/urandom > "src/f$c-$f.bin"; done
  git -C src add . && git -C src -c user.name=b -c user.email=b@b commit -q -m "c$c"
done
NPUB=npub1sg6plzptd64u62a878hep2kev88swjh3tw00gjsfl8f237lmu63q0uf63m
mkdir -p git/$NPUB
git clone -q --bare src git/$NPUB/bench.git
git -C git/$NPUB/bench.git repack -adq   # pack once: every clone reuses the pack
echo "repository: $(du -sh git/$NPUB/bench.git | cut -f1)"
# graspd serves any repository directory under its data path.
"$GRASPD" --bind-address 127.0.0.1:18555 --relay-data-path ./relay --git-data-path ./git \
  --sync-enabled false > graspd.log 2>&1 &
GPID=$!
mkdir -p cgi/cgi-bin
# Python's CGI server runs scripts as nobody when started as root: allow the foreign owner.
cat > cgi/cgi-bin/git <<CGI
#!/bin/sh
export GIT_PROJECT_ROOT=$W/git GIT_HTTP_EXPORT_ALL=1
export GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=safe.directory GIT_CONFIG_VALUE_0='*'
exec git http-backend
CGI
chmod +x cgi/cgi-bin/git
(cd cgi && exec python3 -m http.server --cgi 18556 --bind 127.0.0.1 > ../cgi.log 2>&1) &
CPID=$!
sleep 1
for run in 1 2 3; do
  rm -rf a b c
  /usr/bin/time -f "graspd       run $run: %e s" git clone -q http://127.0.0.1:18555/$NPUB/bench.git a
  /usr/bin/time -f "http-backend run $run: %e s" git clone -q \
    http://127.0.0.1:18556/cgi-bin/git/$NPUB/bench.git b 2>&1 | grep -v "warning: unable to access"
  /usr/bin/time -f "file://      run $run: %e s" git clone -q --no-local "file://$W/git/$NPUB/bench.git" c
done
[ "$(git -C a rev-parse HEAD)" = "$(git -C b rev-parse HEAD)" ] && echo "same HEAD"
grep VmHWM /proc/$GPID/status

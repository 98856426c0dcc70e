#!/usr/bin/env bash
# Builds the Debian package from a configured build tree with cpack and checks what it holds.
#   package_test.sh <build-dir> <version>
set -euo pipefail
build=$1
version=$2
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
fail() { echo "package test: $*" >&2; exit 1; }

cpack -G DEB --config "$build/CPackConfig.cmake" -B "$out" >"$out/cpack.log" 2>&1 ||
  { cat "$out/cpack.log" >&2; fail "cpack failed"; }
deb="$out/graspd_${version}_amd64.deb"
[ -f "$deb" ] || fail "no $deb (got: $(ls "$out"))"

contents=$(dpkg-deb -c "$deb")
for path in ./usr/bin/graspd ./lib/systemd/system/graspd.service ./etc/graspd/graspd.conf \
  ./usr/share/doc/graspd/operations.md; do
  grep -q " $path\$" <<<"$contents" || fail "$path missing from the package"
done

[ "$(dpkg-deb -f "$deb" Package)" = graspd ] || fail "wrong Package"
[ "$(dpkg-deb -f "$deb" Version)" = "$version" ] || fail "wrong Version"
[ "$(dpkg-deb -f "$deb" Architecture)" = amd64 ] || fail "wrong Architecture"
depends=$(dpkg-deb -f "$deb" Depends)
for library in libc6 liblmdb0 libssl3 libsecp256k1; do
  grep -q "$library" <<<"$depends" || fail "Depends lacks $library: $depends"
done
grep -q git <<<"$depends" || fail "Depends lacks git: $depends"

dpkg-deb -e "$deb" "$out/control"
grep -qx /etc/graspd/graspd.conf "$out/control/conffiles" || fail "graspd.conf is not a conffile"
grep -q "useradd --system" "$out/control/postinst" || fail "postinst creates no system user"
grep -q "/var/lib/graspd" "$out/control/postinst" || fail "postinst creates no /var/lib/graspd"

dpkg-deb -x "$deb" "$out/root"
unit="$out/root/lib/systemd/system/graspd.service"
grep -qx "ExecStart=/usr/bin/graspd --config /etc/graspd/graspd.conf" "$unit" || fail "unit ExecStart"
grep -qx "User=graspd" "$unit" || fail "unit User"
! grep -q DynamicUser "$unit" || fail "unit still uses a dynamic user"
"$out/root/usr/bin/graspd" --version | grep -qx "graspd $version" || fail "packaged binary --version"
echo "package test: $(basename "$deb") ($(du -h "$deb" | cut -f1)), Depends: $depends"

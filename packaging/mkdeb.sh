#!/bin/sh
# Build the .deb from the static binary: packaging/mkdeb.sh [OUTDIR]
# A native package: its version is the VERSION file's (0.1.0). DEB_REVISION=N
# (N > 1) builds a packaging-only rebuild 0.1.0+rN, which sorts newer.
set -eu
TOP=$(cd "$(dirname "$0")/.." && pwd)
P=$TOP/packaging
OUT=${1:-$P/out}
REV=${DEB_REVISION:-1}
VERSION=$(cat "$TOP/VERSION")
DEBVERSION=$VERSION
[ "$REV" = 1 ] || DEBVERSION=$VERSION+r$REV
SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(git -C "$TOP" log -1 --format=%ct 2>/dev/null || date +%s)}
export SOURCE_DATE_EPOCH

root=$(mktemp -d "${TMPDIR:-/tmp}/hookd-deb.XXXXXX")
trap 'rm -rf "$root"' EXIT
DEB_VERSION=$DEBVERSION "$P/stage.sh" deb "$root"
install -d "$root/usr/share/lintian/overrides"
install -m 0644 "$P/deb/lintian-overrides" "$root/usr/share/lintian/overrides/hookd"

install -d -m 0755 "$root/DEBIAN"
for s in postinst prerm postrm; do install -m 0755 "$P/deb/$s" "$root/DEBIAN/$s"; done
echo /etc/hookd/hookd.ini >"$root/DEBIAN/conffiles"
size=$(du -sk --exclude=DEBIAN "$root" | cut -f1)
sed -e "s/@DEBVERSION@/$DEBVERSION/" -e "s/@SIZE@/$size/" "$P/deb/control.in" >"$root/DEBIAN/control"
(cd "$root" && find . -path ./DEBIAN -prune -o -type f -print | sed 's|^\./||' | LC_ALL=C sort |
    xargs md5sum) >"$root/DEBIAN/md5sums"
chmod 0644 "$root/DEBIAN/control" "$root/DEBIAN/conffiles" "$root/DEBIAN/md5sums"
find "$root" -exec touch -h -d "@$SOURCE_DATE_EPOCH" {} +

mkdir -p "$OUT"
deb=$OUT/hookd_${DEBVERSION}_amd64.deb
dpkg-deb --root-owner-group -Zxz --build "$root" "$deb" >/dev/null
echo "mkdeb: $deb ($(stat -c %s "$deb") bytes)"

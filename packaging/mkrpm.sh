#!/bin/sh
# Build the .rpm from the static binary: packaging/mkrpm.sh [OUTDIR]
# RPM_RELEASE (default 1); the version comes from the VERSION file.
set -eu
TOP=$(cd "$(dirname "$0")/.." && pwd)
P=$TOP/packaging
OUT=${1:-$P/out}
REL=${RPM_RELEASE:-1}
export RPM_RELEASE=$REL
VERSION=$(cat "$TOP/VERSION")
SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(git -C "$TOP" log -1 --format=%ct 2>/dev/null || date +%s)}
export SOURCE_DATE_EPOCH

command -v rpmbuild >/dev/null 2>&1 || {
    echo "mkrpm: installing rpm (for rpmbuild)" >&2
    SUDO=""; [ "$(id -u)" = 0 ] || SUDO=sudo
    $SUDO env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=900 install -y -q --no-install-recommends rpm >&2 ||
    { $SUDO env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=900 update -q >&2 &&
      $SUDO env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=900 install -y -q --no-install-recommends rpm >&2; }
}

top=$(mktemp -d "${TMPDIR:-/tmp}/hookd-rpm.XXXXXX")
trap 'rm -rf "$top"' EXIT
mkdir -p "$top/SPECS" "$top/BUILD" "$top/BUILDROOT" "$top/RPMS"
{ cat "$P/rpm/hookd.spec"; "$P/changelog.sh" rpm "$VERSION-$REL"; } >"$top/SPECS/hookd.spec"
rpmbuild --quiet -bb --target x86_64 \
    --define "_topdir $top" --define "hookd_version $VERSION" \
    --define "hookd_release $REL" --define "hookd_top $TOP" \
    --define "use_source_date_epoch_as_buildtime 1" \
    --define "clamp_mtime_to_source_date_epoch 1" \
    --define "_buildhost reproducible" \
    "$top/SPECS/hookd.spec" >&2
mkdir -p "$OUT"
rpm=$(find "$top/RPMS" -name "hookd-$VERSION-$REL.*x86_64.rpm" | head -n 1)
[ -n "$rpm" ] || { echo "mkrpm: rpmbuild produced no package" >&2; exit 1; }
cp "$rpm" "$OUT/"
echo "mkrpm: $OUT/$(basename "$rpm") ($(stat -c %s "$rpm") bytes)"

#!/bin/sh
# Check the documentation a package installed: every man page is there,
# renders with man -l, and passes groff -ww and mandoc -T lint without a
# warning; the README and the operator guides are in /usr/share/doc/hookd.
#   packaging/doccheck.sh [ROOT]     (ROOT: where the package is unpacked; default /)
# Called by package-test.sh for each installed package. mandoc is installed
# with apt when missing (Debian); elsewhere its check is skipped, saying so.
set -eu
ROOT=${1:-}
MAN=$ROOT/usr/share/man
DOC=$ROOT/usr/share/doc/hookd
fail=0
die() { printf 'doccheck: FAIL: %s\n' "$*" >&2; fail=1; }

if ! command -v mandoc >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1; then
    SUDO=""; [ "$(id -u)" = 0 ] || SUDO=sudo
    $SUDO env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=900 install -y -q \
        --no-install-recommends mandoc groff-base man-db >/dev/null 2>&1 || true
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/hookd-doccheck.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
for page in man8/hookd.8 man5/hookd.ini.5 man7/hookd-protocol.7; do
    f=$MAN/$page.gz
    [ -f "$f" ] || { die "$f is not installed"; continue; }
    src=$tmp/$(basename "$page")
    gzip -dc "$f" >"$src"
    if grep -q '@VERSION@\|@DATE@' "$src"; then die "$page: placeholders left unsubstituted"; fi
    out=$(MANWIDTH=80 man -l "$src" 2>&1 >/dev/null) || die "$page: man -l failed: $out"
    [ -z "$out" ] || die "$page: man -l: $out"
    [ "$(MANWIDTH=80 man -l "$src" 2>/dev/null | wc -l)" -gt 20 ] || die "$page: man -l renders almost nothing"
    if command -v groff >/dev/null 2>&1; then
        out=$(groff -ww -man -z "$src" 2>&1) || die "$page: groff failed"
        [ -z "$out" ] || die "$page: groff -ww: $out"
    fi
    if command -v mandoc >/dev/null 2>&1; then
        out=$(mandoc -T lint -W warning "$src" 2>&1) || true
        [ -z "$out" ] || die "$page: mandoc -T lint: $out"
    else
        echo "doccheck: mandoc not available; its lint skipped" >&2
    fi
done
for d in README.md README.packaging.md operations-and-alerts.md affiliate-postbacks.md \
         scaling-postgresql.md backup-and-moving.md security-model.md; do
    [ -s "$DOC/$d" ] || die "$DOC/$d is not installed"
done
[ "$fail" = 0 ] && echo "doccheck: man pages render cleanly, documents installed"
exit "$fail"

#!/bin/sh
# Render packaging/changelog (Debian format; the newest entry says
# @PKGVERSION@ and gets the package version, made from the VERSION file, the
# one place that holds it) for a .deb or as an rpm %changelog body.
#   packaging/changelog.sh deb|rpm PKGVERSION
# (.deb: 0.1.0, or 0.1.0+r2 for a rebuild; .rpm: 0.1.0-1)
# When releasing a new version, write the old entry's version out literally
# and start a new entry with @PKGVERSION@.
set -eu
TOP=$(cd "$(dirname "$0")/.." && pwd)
PV=$2
src=$TOP/packaging/changelog
case $1 in
deb) sed -e "s/@PKGVERSION@/$PV/g" "$src" ;;
rpm) sed -e "s/@PKGVERSION@/$PV/g" "$src" | awk '
    /^[^ ]/ { v = $2; gsub(/[()]/, "", v); n = 0; delete items; next }
    /^  \* / { items[++n] = substr($0, 5); next }
    /^    / && n { t = $0; sub(/^ +/, "", t); items[n] = items[n] " " t; next }
    /^ -- / {
        line = substr($0, 5); i = index(line, ">  ")
        who = substr(line, 1, i); date = substr(line, i + 3)
        cmd = "date -u -d \"" date "\" \"+%a %b %d %Y\""; cmd | getline d; close(cmd)
        printf "* %s %s - %s\n", d, who, v
        for (j = 1; j <= n; j++) printf "- %s\n", items[j]
        print ""
    }' ;;
*) echo "usage: $0 deb|rpm PKGVERSION" >&2; exit 2 ;;
esac

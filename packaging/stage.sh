#!/bin/sh
# Lay out the installed file tree of hookd under DESTDIR; shared by the .deb
# (packaging/mkdeb.sh) and the .rpm (%install in packaging/rpm/hookd.spec).
#
#   packaging/stage.sh deb|rpm DESTDIR [BINARY]
#
# BINARY defaults to $HOOKD_PKG_BIN or build/static/hookd.stripped (made by
# `make static`); HOOKD_PKG_CONF (default conf/hookd.ini) is the config source.
# The system config is derived from conf/hookd.ini (the one settings list):
# only [storage] path, [server] socket and [server] group (hookd-clients) are
# rewritten, and the build fails if any key is not found.
set -eu

flavor=$1 dest=$2
TOP=$(cd "$(dirname "$0")/.." && pwd)
bin=${3:-${HOOKD_PKG_BIN:-$TOP/build/static/hookd.stripped}}
conf=${HOOKD_PKG_CONF:-$TOP/conf/hookd.ini}
P=$TOP/packaging
VERSION=$(cat "$TOP/VERSION")

die() { printf 'stage: error: %s\n' "$*" >&2; exit 1; }

[ -x "$bin" ] || die "no binary at $bin (run make static)"
[ -f "$conf" ] || die "$conf is missing"
case $flavor in
deb) unitdir=/lib/systemd/system ;;   # bookworm: units stay in /lib
rpm) unitdir=/usr/lib/systemd/system ;;
*) die "flavor must be deb or rpm" ;;
esac

# ini_get FILE SECTION KEY: the value of an uncommented key in a section
ini_get() {
    awk -v s="$2" -v k="$3" '
        /^[ \t]*\[/ { sec = $0; gsub(/^[ \t]*\[|\][ \t]*$/, "", sec); next }
        sec == s {
            line = $0
            if (line ~ /^[ \t]*[;#]/) next
            i = index(line, "="); if (!i) next
            key = substr(line, 1, i - 1); val = substr(line, i + 1)
            gsub(/^[ \t]+|[ \t]+$/, "", key); gsub(/^[ \t]+|[ \t]+$/, "", val)
            if (key == k) { print val; n++ }
        }
        END { exit n == 1 ? 0 : 1 }' "$1"
}

system_ini() { # src dst
    ini_get "$1" storage path >/dev/null ||
        die "conf/hookd.ini: [storage] path = ... not found exactly once"
    ini_get "$1" server socket >/dev/null ||
        die "conf/hookd.ini: [server] socket = ... not found exactly once"
    ini_get "$1" server group >/dev/null ||
        die "conf/hookd.ini: [server] group = ... not found exactly once"
    sed -e '/^[[:space:]]*\[storage\]/,/^[[:space:]]*\[/ s|^\([[:space:]]*\)path\([[:space:]]*\)=.*|\1path\2= /var/lib/hookd/hookd.db|' \
        -e '/^[[:space:]]*\[server\]/,/^[[:space:]]*\[/ s|^\([[:space:]]*\)socket\([[:space:]]*\)=.*|\1socket\2= /run/hookd/hookd.sock|' \
        -e '/^[[:space:]]*\[server\]/,/^[[:space:]]*\[/ s|^\([[:space:]]*\)group\([[:space:]]*\)=.*|\1group\2= hookd-clients|' \
        "$1" >"$2"
    [ "$(ini_get "$2" storage path)" = /var/lib/hookd/hookd.db ] ||
        die "rewriting [storage] path failed"
    [ "$(ini_get "$2" server socket)" = /run/hookd/hookd.sock ] ||
        die "rewriting [server] socket failed"
    [ "$(ini_get "$2" server group)" = hookd-clients ] ||
        die "rewriting [server] group failed"
}

# the pages' date is the build's source date (SOURCE_DATE_EPOCH: the last
# commit), so the sources hold no date and builds stay reproducible
MANDATE=$(date -u -d "@${SOURCE_DATE_EPOCH:-$(git -C "$TOP" log -1 --format=%ct 2>/dev/null || date +%s)}" +%Y-%m-%d)
manpage() { # src dst.gz
    sed -e "s/@VERSION@/$VERSION/g" -e "s/@DATE@/$MANDATE/g" "$1" | gzip -9n >"$2"
}

umask 022
install -d "$dest/usr/sbin" "$dest/etc/hookd" "$dest$unitdir" \
    "$dest/usr/lib/sysusers.d" "$dest/usr/lib/tmpfiles.d" \
    "$dest/usr/share/man/man8" "$dest/usr/share/man/man5" "$dest/usr/share/man/man7" \
    "$dest/usr/share/doc/hookd"
install -m 0755 "$bin" "$dest/usr/sbin/hookd"
system_ini "$conf" "$dest/etc/hookd/hookd.ini"
chmod 0644 "$dest/etc/hookd/hookd.ini"
install -m 0644 "$P/hookd.service" "$dest$unitdir/hookd.service"
install -m 0644 "$P/hookd.sysusers" "$dest/usr/lib/sysusers.d/hookd.conf"
install -m 0644 "$P/hookd.tmpfiles" "$dest/usr/lib/tmpfiles.d/hookd.conf"
manpage "$P/hookd.8" "$dest/usr/share/man/man8/hookd.8.gz"
manpage "$P/hookd.ini.5" "$dest/usr/share/man/man5/hookd.ini.5.gz"
manpage "$P/hookd-protocol.7" "$dest/usr/share/man/man7/hookd-protocol.7.gz"

doc=$dest/usr/share/doc/hookd
if [ -f "$TOP/README.md" ]; then install -m 0644 "$TOP/README.md" "$doc/README.md"; fi
install -m 0644 "$P/README.md" "$doc/README.packaging.md"
# the operator guides (README.md links to them as packaging/doc/NAME.md)
for g in "$P"/doc/*.md; do install -m 0644 "$g" "$doc/$(basename "$g")"; done
case $flavor in
deb)
    # native package (hookd ships its own packaging): changelog.gz
    install -m 0644 "$P/copyright" "$doc/copyright"
    "$P/changelog.sh" deb "${DEB_VERSION:-$VERSION}" | gzip -9n >"$doc/changelog.gz"
    ;;
rpm)
    install -d "$dest/usr/share/licenses/hookd"
    install -m 0644 "$P/copyright" "$dest/usr/share/licenses/hookd/copyright"
    "$P/changelog.sh" rpm "$VERSION-${RPM_RELEASE:-1}" >"$doc/changelog"
    ;;
esac

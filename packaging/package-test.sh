#!/bin/sh
# Test the built packages (make package-test runs mkdeb, mkrpm, then this):
#   packaging/package-test.sh [OUTDIR]
# - lintian on the .deb: no errors or warnings; the overrides used are
#   exactly the static-binary tags of packaging/deb/lintian-overrides
# - dpkg-deb -c and rpm -qlp list the expected files
# - .deb into a scratch root (dpkg --root): install, --version, smoke test,
#   upgrade keeping an edited config and the database, remove, purge
# - .deb into a scratch root: upgrade from the modes of the packages before
#   the privilege split (config root:hookd 0640, database 0640, clients in
#   group hookd) to hookd's own 0600/0700 and group hookd-clients
# - .deb into this machine: install, --version, smoke test, the packaged
#   daemon started without systemd as user hookd: a client account in
#   hookd-clients can send but cannot read the config, the database, its
#   -wal or a backup, and no file under /var/lib/hookd holds a secret;
#   systemd-analyze verify and security (exposure at most 2.0), remove, purge
# - .rpm into a scratch root (rpm --root)
# Installs lintian, rpm and (if safe) systemd with apt when missing.
# HOOKD_PKGTEST_HOST=0 skips the install on this machine, HOOKD_PKGTEST_SMOKE=0
# the smoke tests.
set -eu

TOP=$(cd "$(dirname "$0")/.." && pwd)
P=$TOP/packaging
OUT=$(cd "${1:-$P/out}" && pwd)
VERSION=$(cat "$TOP/VERSION")
DEB=$OUT/hookd_${VERSION}_amd64.deb
RPM=$OUT/hookd-${VERSION}-${RPM_RELEASE:-1}.x86_64.rpm
SUDO=""; [ "$(id -u)" = 0 ] || SUDO=sudo
WORK=$(mktemp -d "${TMPDIR:-/tmp}/hookd-pkgtest.XXXXXX")
HOST_INSTALLED=0
SERVE_PID=""

say() { printf '\n== %s\n' "$*"; }
ok() { printf 'ok: %s\n' "$*"; }
fail() { printf 'FAIL: %s\n' "$*" >&2; exit 1; }

cleanup() {
    rc=$?
    [ -n "$SERVE_PID" ] && kill "$SERVE_PID" 2>/dev/null || true
    if [ "$HOST_INSTALLED" = 1 ]; then
        echo "cleanup: purging hookd from this machine" >&2
        $SUDO env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=900 purge -y -q hookd >/dev/null 2>&1 || true
    fi
    rm -rf "$WORK"
    exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM

[ -f "$DEB" ] || fail "no $DEB (run make deb)"
[ -f "$RPM" ] || fail "no $RPM (run make rpm)"

apt_install() {
    missing=""
    for p in "$@"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing="$missing $p"
    done
    [ -z "$missing" ] && return 0
    echo "installing:$missing"
    $SUDO env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=900 install -y -q --no-install-recommends $missing >/dev/null ||
    { $SUDO env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=900 update -q >/dev/null &&
      $SUDO env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=900 install -y -q --no-install-recommends $missing >/dev/null; }
}

# ---------------------------------------------------------------- smoke test
# smoke BIN SYSTEM_INI: serve from BIN with a temp config derived from the
# packaged ini, then ping, send, stats --json, SIGTERM, exit 0.
smoke() {
    bin=$1 ini=$2
    if [ "${HOOKD_PKGTEST_SMOKE:-1}" = 0 ]; then
        echo "SKIPPED: smoke test with $bin (HOOKD_PKGTEST_SMOKE=0)"; return 0
    fi
    d=$(mktemp -d "$WORK/smoke.XXXXXX")
    cfg=$d/hookd.ini
    grep -q '^[[:space:]]*path[[:space:]]*=[[:space:]]*/var/lib/hookd/hookd.db' "$ini" ||
        fail "smoke: $ini lacks the system path"
    grep -q '^[[:space:]]*socket[[:space:]]*=[[:space:]]*/run/hookd/hookd.sock' "$ini" ||
        fail "smoke: $ini lacks the system socket"
    sed -e "s|^\([[:space:]]*path[[:space:]]*=\).*/var/lib/hookd/hookd.db.*|\1 $d/hookd.db|" \
        -e "s|^\([[:space:]]*socket[[:space:]]*=\).*/run/hookd/hookd.sock.*|\1 $d/run/hookd.sock|" \
        -e "s|^\([[:space:]]*group[[:space:]]*=\)[[:space:]]*hookd-clients[[:space:]]*$|\1|" \
        "$ini" >"$cfg"
    printf '\n[endpoint.smoke]\nurl = http://127.0.0.1:9/hook\n' >>"$cfg"
    "$bin" check-config -c "$cfg" >"$d/check.txt" 2>&1 || { cat "$d/check.txt"; fail "smoke: check-config failed"; }
    "$bin" serve -c "$cfg" >"$d/serve.log" 2>&1 &
    SERVE_PID=$!
    i=0
    while [ ! -S "$d/run/hookd.sock" ]; do
        i=$((i + 1))
        if [ $i -gt 100 ] || ! kill -0 "$SERVE_PID" 2>/dev/null; then
            cat "$d/serve.log"; fail "smoke: socket $d/run/hookd.sock did not appear"
        fi
        sleep 0.1
    done
    "$bin" ping -c "$cfg" || { cat "$d/serve.log"; fail "smoke: ping"; }
    "$bin" send -c "$cfg" --endpoint smoke --data '{"a":1}' || { cat "$d/serve.log"; fail "smoke: send"; }
    stats=$("$bin" stats -c "$cfg" --json) || { cat "$d/serve.log"; fail "smoke: stats"; }
    echo "stats: $stats"
    n=$(printf '%s' "$stats" | python3 -c '
import json, sys
r = json.load(sys.stdin)
assert r["ok"] is True, r
s = r["stats"]
print(sum(int(s[k]) for k in ("pending", "in_flight", "awaiting_retry", "dead_letter")))') ||
        fail "smoke: cannot read the stats reply"
    [ "$n" -ge 1 ] || fail "smoke: the message is not in the queue (pending+in_flight+awaiting_retry+dead_letter = $n)"
    kill -TERM "$SERVE_PID"
    rc=0; wait "$SERVE_PID" || rc=$?
    SERVE_PID=""
    [ "$rc" = 0 ] || { cat "$d/serve.log"; fail "smoke: hookd serve exited $rc after SIGTERM"; }
    ok "smoke test with $bin (queued=$n, clean exit on SIGTERM)"
}

# ---------------------------------------------------------------- privilege split
# The installed package's daemon, started as hookd(8) says for a machine
# without systemd, and a client account in group hookd-clients: it can send
# (finding the socket without a config), it cannot read the config, the
# database, its -wal or a backup, nor use an admin command; no file under
# /var/lib/hookd or in the backup holds the endpoint's secret.
CLIENT=hookd-pkgtest-client
SPLIT_SECRET=whsec_QmFja2dyb3VuZFNlY3JldEZvclRlc3Q=
split_test() {
    if [ "${HOOKD_PKGTEST_SMOKE:-1}" = 0 ]; then
        echo "SKIPPED: privilege split test (HOOKD_PKGTEST_SMOKE=0)"; return 0
    fi
    say "privilege split: client account $CLIENT in hookd-clients"
    getent passwd "$CLIENT" >/dev/null || $SUDO useradd --system -M -N -g nogroup -G hookd-clients -s /usr/sbin/nologin "$CLIENT"
    as_client() { $SUDO runuser -u "$CLIENT" -- "$@"; }
    # /run/hookd as systemd's RuntimeDirectory= makes it (hookd:hookd 0750);
    # hookd gives it to [server] group = hookd-clients, being a member
    $SUDO rm -rf /run/hookd
    $SUDO install -d -o hookd -g hookd -m 0750 /run/hookd
    # setpriv execs hookd (runuser would stay its parent and eat SIGTERM)
    $SUDO setpriv --reuid=hookd --regid=hookd --init-groups -- \
        /usr/sbin/hookd serve -c /etc/hookd/hookd.ini >"$WORK/split.log" 2>&1 &
    SERVE_PID=$!
    i=0
    while [ ! -S /run/hookd/hookd.sock ]; do
        i=$((i + 1))
        if [ $i -gt 100 ] || ! kill -0 "$SERVE_PID" 2>/dev/null; then
            cat "$WORK/split.log"; fail "split: /run/hookd/hookd.sock did not appear"
        fi
        sleep 0.1
    done
    [ "$(stat -c '%a %U %G' /run/hookd)" = "750 hookd hookd-clients" ] ||
        fail "split: /run/hookd is $(stat -c '%a %U %G' /run/hookd), want 750 hookd hookd-clients"
    [ "$(stat -c '%a %G' /run/hookd/hookd.sock)" = "660 hookd-clients" ] ||
        fail "split: the socket is $(stat -c '%a %G' /run/hookd/hookd.sock), want 660 hookd-clients"
    /usr/sbin/hookd endpoint-put split --url http://127.0.0.1:9/hook --secret "$SPLIT_SECRET" >/dev/null ||
        { cat "$WORK/split.log"; fail "split: endpoint-put as root"; }
    as_client /usr/sbin/hookd send --endpoint split --data '{"a":1}' ||
        { cat "$WORK/split.log"; fail "split: $CLIENT cannot send"; }
    ok "split: $CLIENT sends through /run/hookd/hookd.sock without a config"
    if as_client /usr/sbin/hookd pause split 2>"$WORK/e.txt"; then fail "split: $CLIENT could pause (admin)"; fi
    ok "split: admin commands refused to $CLIENT: $(head -n1 "$WORK/e.txt")"
    as_client /usr/sbin/hookd stats -c /etc/hookd/hookd.ini 2>"$WORK/e.txt" && fail "split: $CLIENT read the config"
    grep -q 'hookd.ini: cannot open: Permission denied' "$WORK/e.txt" || { cat "$WORK/e.txt"; fail "split: no reason given"; }
    ok "split: -c /etc/hookd/hookd.ini as $CLIENT: $(head -n1 "$WORK/e.txt")"
    /usr/sbin/hookd backup /var/lib/hookd/pkgtest-backup.db -c /etc/hookd/hookd.ini >/dev/null 2>&1 ||
        fail "split: hookd backup as root"
    [ -e /var/lib/hookd/hookd.db-wal ] || fail "split: no -wal while the daemon runs"
    for f in /etc/hookd/hookd.ini /var/lib/hookd/hookd.db /var/lib/hookd/hookd.db-wal \
             /var/lib/hookd/secret.key /var/lib/hookd/pkgtest-backup.db; do
        if as_client cat "$f" >/dev/null 2>&1; then fail "split: $CLIENT can read $f"; fi
    done
    if as_client /usr/sbin/hookd backup /tmp/pkgtest-client.db -c /etc/hookd/hookd.ini >/dev/null 2>&1; then
        fail "split: $CLIENT made a backup"
    fi
    ok "split: $CLIENT cannot read the config, the database, its -wal, the key or a backup"
    kill -TERM "$SERVE_PID"; rc=0; wait "$SERVE_PID" || rc=$?; SERVE_PID=""
    [ "$rc" = 0 ] || { cat "$WORK/split.log"; fail "split: hookd exited $rc after SIGTERM"; }
    for s in "$SPLIT_SECRET" "${SPLIT_SECRET#whsec_}"; do
        if $SUDO grep -rlaF -- "$s" /var/lib/hookd; then fail "split: the secret is stored in plain text"; fi
    done
    ok "split: the endpoint secret is in no file under /var/lib/hookd (database, -wal, backup)"
    $SUDO rm -f /var/lib/hookd/pkgtest-backup.db
    $SUDO userdel "$CLIENT" 2>/dev/null || true
}

# ---------------------------------------------------------------- expected files
EXPECTED_COMMON="/usr/sbin/hookd
/etc/hookd/hookd.ini
/usr/lib/sysusers.d/hookd.conf
/usr/lib/tmpfiles.d/hookd.conf
/usr/share/man/man8/hookd.8.gz
/usr/share/man/man5/hookd.ini.5.gz
/usr/share/doc/hookd/README.packaging.md"
EXPECTED_DEB="$EXPECTED_COMMON
/lib/systemd/system/hookd.service
/usr/share/doc/hookd/copyright
/usr/share/doc/hookd/changelog.gz
/usr/share/lintian/overrides/hookd"
EXPECTED_RPM="$EXPECTED_COMMON
/usr/lib/systemd/system/hookd.service
/usr/share/licenses/hookd/copyright
/usr/share/doc/hookd/changelog"

check_list() { # what expected-list actual-file
    printf '%s\n' "$2" | while read -r f; do
        grep -qx "$f" "$3" || { echo "missing from the $1: $f" >&2; exit 1; }
    done || fail "$1 lacks expected files"
    ok "$1 lists the expected files"
}

apt_install lintian rpm python3

# ---------------------------------------------------------------- lintian
say "lintian $DEB"
lintian --version
set +e
lintian --fail-on none --display-info --show-overrides "$DEB" >"$WORK/lintian.txt" 2>&1
lrc=$?
set -e
cat "$WORK/lintian.txt"
[ $lrc = 0 ] || fail "lintian did not run (exit $lrc)"
if grep -E '^[EW]: ' "$WORK/lintian.txt"; then fail "lintian reports errors or warnings"; fi
# compare "tag [context]" of the overrides used with those in the file
used=$(sed -n 's/^O: hookd[^:]*: //p' "$WORK/lintian.txt" | LC_ALL=C sort -u | tr '\n' ';')
wanted=$(sed -n 's/^hookd: //p' "$P/deb/lintian-overrides" | LC_ALL=C sort -u | tr '\n' ';')
echo "overridden: $used"
[ "$used" = "$wanted" ] || fail "lintian overrides used ($used) differ from the override file ($wanted)"
grep -q 'unused-override' "$WORK/lintian.txt" && fail "lintian: unused override"
ok "lintian: no errors or warnings; the overrides used are exactly those of the override file"

# ---------------------------------------------------------------- listings
say "package contents"
dpkg-deb -c "$DEB" >"$WORK/deb.contents"
awk '{ print $6 }' "$WORK/deb.contents" | sed 's|^\./|/|; s|/$||' >"$WORK/deb.list"
check_list ".deb" "$EXPECTED_DEB" "$WORK/deb.list"
grep -q ' root/root .* ./usr/sbin/hookd$' "$WORK/deb.contents" || fail ".deb: /usr/sbin/hookd not root-owned"
dpkg-deb -I "$DEB" conffiles | grep -qx /etc/hookd/hookd.ini || fail ".deb: /etc/hookd/hookd.ini is not a conffile"
ok ".deb: /etc/hookd/hookd.ini is a conffile"
rpm -qlp "$RPM" >"$WORK/rpm.list"
cat "$WORK/rpm.list"
check_list ".rpm" "$EXPECTED_RPM" "$WORK/rpm.list"
rpm -qp --qf '[%{FILEFLAGS:fflags} %{FILENAMES}\n]' "$RPM" | grep -q '^cn /etc/hookd/hookd.ini$' ||
    fail ".rpm: /etc/hookd/hookd.ini is not %config(noreplace)"
ok ".rpm: /etc/hookd/hookd.ini is %config(noreplace)"
for f in "$DEB" "$RPM"; do echo "size: $(basename "$f") $(stat -c %s "$f") bytes"; done

# ---------------------------------------------------------------- scratch root (.deb)
say "dpkg --root: install, upgrade, remove, purge"
R=$WORK/debroot
mkdir -p "$R/var/lib/dpkg/info" "$R/var/lib/dpkg/updates" "$R/var/lib/dpkg/triggers" "$R/etc"
: >"$R/var/lib/dpkg/status"; : >"$R/var/lib/dpkg/available"
dpkgr() { $SUDO dpkg --root="$R" --log=/dev/null --force-script-chrootless "$@"; }
dpkgr -i "$DEB"
"$R/usr/sbin/hookd" --version | grep -qx "hookd $VERSION" || fail "scratch root: hookd --version"
ok "scratch root: $("$R/usr/sbin/hookd" --version)"
grep -q '^hookd:' "$R/etc/passwd" || fail "scratch root: no hookd user"
uid=$(awk -F: '$1 == "hookd" { print $3 }' "$R/etc/passwd")
gid=$(awk -F: '$1 == "hookd" { print $3 }' "$R/etc/group")
# check_modes WHEN: the privilege split's files and groups in the scratch root
check_modes() {
    [ "$(stat -c '%a %u %g' "$R/etc/hookd/hookd.ini")" = "600 $uid $gid" ] ||
        fail "$1: hookd.ini is $(stat -c '%a %u %g' "$R/etc/hookd/hookd.ini"), want 600 $uid $gid"
    [ "$(stat -c '%a %u' "$R/var/lib/hookd")" = "700 $uid" ] ||
        fail "$1: /var/lib/hookd is $(stat -c '%a %u' "$R/var/lib/hookd"), want 700 $uid"
    [ "$(stat -c '%a %u' "$R/var/lib/hookd/secret.key")" = "600 $uid" ] ||
        fail "$1: no secret.key 0600 owned by hookd"
    grep -Eq '^[0-9a-f]{64}$' "$R/var/lib/hookd/secret.key" || fail "$1: secret.key is not 64 hex digits"
    awk -F: '$1 == "hookd-clients" { n = split($4, m, ","); for (i = 1; i <= n; i++) if (m[i] == "hookd") f = 1 }
        END { exit f ? 0 : 1 }' "$R/etc/group" || fail "$1: hookd is not a member of group hookd-clients"
    grep -q '^[[:space:]]*group[[:space:]]*=[[:space:]]*hookd-clients' "$R/etc/hookd/hookd.ini" ||
        fail "$1: hookd.ini lacks [server] group = hookd-clients"
}
check_modes "scratch root"
ok "scratch root: user hookd, group hookd-clients (hookd a member), /var/lib/hookd 0700, secret.key 0600, hookd.ini hookd:hookd 0600"
smoke "$R/usr/sbin/hookd" "$R/etc/hookd/hookd.ini"
"$P/doccheck.sh" "$R" || fail "scratch root: the installed documentation (packaging/doccheck.sh)"

# upgrade to a newer revision: keeps the edited config and the database.
# Before it, the scratch root is put back in the state the packages before
# the privilege split left: config root:hookd 0640 by statoverride,
# /var/lib/hookd 0750 and its database 0640, no group hookd-clients, and a
# client account in group hookd as their documentation said.
DEB_REVISION=2 "$P/mkdeb.sh" "$WORK/rev2" >/dev/null
echo "; edited by the package test" >>"$R/etc/hookd/hookd.ini"
echo "database sentinel" >"$R/var/lib/hookd/hookd.db"
$SUDO dpkg-statoverride --root="$R" --remove /etc/hookd/hookd.ini
$SUDO dpkg-statoverride --root="$R" --update --add root "#$gid" 0640 /etc/hookd/hookd.ini
chmod 0750 "$R/var/lib/hookd"; chmod 0640 "$R/var/lib/hookd/hookd.db"; rm -f "$R/var/lib/hookd/secret.key"
sed -i '/^hookd-clients:/d' "$R/etc/group" "$R/etc/gshadow" 2>/dev/null || true
echo "pkgtestapp:x:4999:4999::/nonexistent:/usr/sbin/nologin" >>"$R/etc/passwd"
sed -i "s/^\(hookd:[^:]*:[^:]*:\)\(.*\)$/\1\2,pkgtestapp/; s/^\(hookd:[^:]*:[^:]*:\),/\1/" "$R/etc/group"
grep -q '^hookd:.*pkgtestapp' "$R/etc/group" || fail "upgrade setup: pkgtestapp not in group hookd"
dpkgr -i "$WORK/rev2/hookd_${VERSION}+r2_amd64.deb"
dpkgr -s hookd | grep -qx "Version: ${VERSION}+r2" || fail "upgrade: version not ${VERSION}+r2"
grep -q '^; edited by the package test' "$R/etc/hookd/hookd.ini" || fail "upgrade lost the edited config"
grep -qx 'database sentinel' "$R/var/lib/hookd/hookd.db" || fail "upgrade lost the database"
check_modes "upgrade"
[ "$(stat -c %a "$R/var/lib/hookd/hookd.db")" = 600 ] || fail "upgrade: hookd.db is $(stat -c %a "$R/var/lib/hookd/hookd.db"), want 600"
awk -F: '$1 == "hookd-clients" && $4 ~ /(^|,)pkgtestapp(,|$)/ { f = 1 } END { exit f ? 0 : 1 }' "$R/etc/group" ||
    fail "upgrade: pkgtestapp (in group hookd) was not added to hookd-clients"
ok "upgrade ${VERSION} -> ${VERSION}+r2 keeps the edited config and the database"
ok "upgrade from the modes before the privilege split: hookd.ini 0600 hookd, /var/lib/hookd 0700, hookd.db 0600, key made, group hookd's client moved into hookd-clients"

dpkgr -r hookd
[ ! -e "$R/usr/sbin/hookd" ] || fail "remove left /usr/sbin/hookd"
[ -f "$R/var/lib/hookd/hookd.db" ] || fail "remove deleted the database"
[ -f "$R/etc/hookd/hookd.ini" ] || fail "remove deleted the config"
ok "remove keeps /var/lib/hookd and /etc/hookd/hookd.ini"
dpkgr -P hookd
[ ! -e "$R/var/lib/hookd" ] || fail "purge left /var/lib/hookd"
[ ! -e "$R/etc/hookd" ] || fail "purge left /etc/hookd"
dpkgr -l hookd 2>/dev/null | grep -q '^ii' && fail "purge: still installed"
[ -z "$(dpkg-statoverride --root="$R" --list)" ] || fail "purge left a statoverride"
left=$(cd "$R" && find . -path ./var/lib/dpkg -prune -o -path ./etc/passwd -prune -o \
    -path ./etc/group -prune -o -path ./etc/shadow -prune -o -path ./etc/gshadow -prune -o \
    -path './etc/*-' -prune -o -path ./etc/.pwd.lock -prune -o \
    \( -type f -o -type l \) -print | sed 's|^\.||')
[ -z "$left" ] || fail "purge left files: $left"
ok "purge removes /var/lib/hookd and /etc/hookd, leaves no files (the hookd user stays)"

# ---------------------------------------------------------------- scratch root (.rpm)
say "rpm --root"
RR=$WORK/rpmroot
mkdir -p "$RR"
rpm --root "$RR" --initdb
# The scratch root has no shell or useradd to run scriptlets with, and an
# empty database to satisfy Requires: files and metadata only.
rpm --root "$RR" -ivh --nodeps --noscripts "$RPM" 2>&1 | grep -v 'does not exist - using root' || true
rpm --root "$RR" -q hookd || fail "rpm --root: hookd not installed"
[ -x "$RR/usr/sbin/hookd" ] || fail "rpm --root: no /usr/sbin/hookd"
"$RR/usr/sbin/hookd" --version | grep -qx "hookd $VERSION" || fail "rpm --root: hookd --version"
rpm --root "$RR" -V --nodeps hookd | grep -v ' /etc/hookd/hookd.ini$' | grep . && fail "rpm --root: -V reports changes"
ok "rpm --root: installed, files verify, $("$RR/usr/sbin/hookd" --version)"
rpm --root "$RR" -e --noscripts hookd
[ ! -e "$RR/usr/sbin/hookd" ] || fail "rpm -e left /usr/sbin/hookd"
ok "rpm --root: erased"

# ---------------------------------------------------------------- this machine
if [ "${HOOKD_PKGTEST_HOST:-1}" = 0 ]; then
    say "skipping the install on this machine (HOOKD_PKGTEST_HOST=0)"
    exit 0
fi
say "dpkg -i on this machine"
if dpkg-query -W -f='${Status}' hookd 2>/dev/null | grep -q 'ok installed'; then
    fail "hookd is already installed on this machine; purge it first or set HOOKD_PKGTEST_HOST=0"
fi
HOST_INSTALLED=1
# apt-get waits for the dpkg lock (other jobs may be using apt) where dpkg -i fails
HOSTAPT="$SUDO env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=900 -y -qq"
$HOSTAPT install --no-install-recommends "$DEB"
/usr/sbin/hookd --version | grep -qx "hookd $VERSION" || fail "installed hookd --version"
ok "installed: $(/usr/sbin/hookd --version)"
getent passwd hookd >/dev/null || fail "no hookd user"
smoke /usr/sbin/hookd /etc/hookd/hookd.ini
split_test

# systemd-analyze verify, where the tool exists or can be installed safely
say "systemd-analyze verify"
if ! command -v systemd-analyze >/dev/null 2>&1; then
    sim=$(apt-get -s install --no-install-recommends systemd 2>/dev/null || true)
    if printf '%s\n' "$sim" | grep -Eq '^Remv |^Inst (systemd-sysv|sysvinit-core|init) '; then
        echo "skip: installing systemd here would remove packages or switch the init system"
    elif printf '%s\n' "$sim" | grep -q '^Inst systemd '; then
        apt_install systemd || echo "skip: systemd could not be installed"
    else
        echo "skip: no installable systemd package"
    fi
fi
if command -v systemd-analyze >/dev/null 2>&1; then
    unit=/lib/systemd/system/hookd.service
    if systemd-analyze verify "$unit" >"$WORK/verify.txt" 2>&1; then
        cat "$WORK/verify.txt"; ok "systemd-analyze verify $unit"
    else
        cat "$WORK/verify.txt"; fail "systemd-analyze verify $unit"
    fi
    systemd-analyze security --offline=yes "$unit" >"$WORK/security.txt" 2>&1 || true
    score=$(sed -n 's/.*Overall exposure level for hookd.service: \([0-9.]*\).*/\1/p' "$WORK/security.txt")
    if [ -z "$score" ]; then
        cat "$WORK/security.txt"; echo "skip: systemd-analyze security --offline gave no score here"
    else
        echo "systemd-analyze security: exposure $score"
        awk -v s="$score" 'BEGIN { exit s <= 2.0 ? 0 : 1 }' ||
            { grep '✗' "$WORK/security.txt"; fail "systemd-analyze security: exposure $score above 2.0"; }
        ok "systemd-analyze security: exposure $score (at most 2.0)"
    fi
fi

$HOSTAPT remove hookd
[ ! -e /usr/sbin/hookd ] || fail "host remove left /usr/sbin/hookd"
[ -f /etc/hookd/hookd.ini ] || fail "host remove deleted the config"
$HOSTAPT purge hookd
HOST_INSTALLED=0
[ ! -e /etc/hookd ] || fail "host purge left /etc/hookd"
[ ! -e /var/lib/hookd ] || fail "host purge left /var/lib/hookd"
[ ! -e /etc/systemd/system/multi-user.target.wants/hookd.service ] || fail "host purge left the enablement symlink"
ok "installed, smoke-tested, removed and purged on this machine (the hookd user stays)"
say "package-test: all passed"

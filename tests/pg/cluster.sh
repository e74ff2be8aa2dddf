#!/bin/sh
# A private, throwaway PostgreSQL cluster for the tests.
#
#   tests/pg/cluster.sh start DIR    initdb into DIR/data, start it (Unix
#                                    socket in DIR only, no TCP), print the
#                                    conninfo on stdout
#   tests/pg/cluster.sh stop DIR     stop it and remove DIR
#   tests/pg/cluster.sh down DIR     stop the server, keep its data (a
#                                    restart as tests see it)
#   tests/pg/cluster.sh up DIR       start it again after down
#   tests/pg/cluster.sh run CMD...   start one in a new temporary directory,
#                                    run CMD with HOOKD_TEST_PG set to its
#                                    conninfo, stop it; CMD's exit status
#
# PostgreSQL refuses to run as root: as root the cluster belongs to the
# `postgres` user of Debian's packages (or `nobody`). Trust authentication
# is safe here: the only way in is a socket in a directory only that user
# and root can enter. fsync stays on, PostgreSQL's default: the
# acknowledgements the tests check are the ones a server gives in
# production (measured: make integration-pg takes no longer with it).
# HOOKD_PG_DURABLE=0 turns fsync and full_page_writes off (a quicker
# cluster for experiments). HOOKD_PG_OPTS adds server options
# ("-c name=value ...") at start and restart.
set -eu

die() { printf 'pg-cluster: %s\n' "$*" >&2; exit 1; }

pgbin() {
    for d in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r); do
        [ -x "$d/initdb" ] && { echo "$d"; return; }
    done
    command -v initdb >/dev/null 2>&1 && { dirname "$(command -v initdb)"; return; }
    die "initdb not found: install Debian's postgresql package (make deps does)"
}

owner() {
    if [ "$(id -u)" = 0 ]; then
        if id postgres >/dev/null 2>&1; then echo postgres; else echo nobody; fi
    else
        id -un
    fi
}

as_owner() {
    u=$(owner)
    if [ "$(id -u)" = 0 ]; then
        runuser -u "$u" -- "$@"
    else
        "$@"
    fi
}

start() {
    dir=$1
    bin=$(pgbin)
    mkdir -p "$dir"
    [ "$(id -u)" = 0 ] && chown "$(owner)" "$dir"
    chmod 700 "$dir"
    as_owner "$bin/initdb" -D "$dir/data" -U hookd -A trust -E UTF8 --locale=C.UTF-8 --no-sync \
        >"$dir/initdb.log" 2>&1 || { cat "$dir/initdb.log" >&2; die "initdb failed"; }
    up "$dir"
    echo "host=$dir dbname=postgres user=hookd"
}

up() {
    dir=$1
    opts="-k $dir -c listen_addresses= -c max_connections=200"
    [ "${HOOKD_PG_DURABLE:-1}" = 1 ] || opts="$opts -c fsync=off -c full_page_writes=off"
    [ -z "${HOOKD_PG_OPTS:-}" ] || opts="$opts $HOOKD_PG_OPTS"
    as_owner "$(pgbin)/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 -o "$opts" start >/dev/null ||
        { cat "$dir/server.log" >&2; die "the server did not start"; }
}

down() {
    as_owner "$(pgbin)/pg_ctl" -D "$1/data" -m fast -w stop >/dev/null || die "the server did not stop"
}

stop() {
    dir=$1
    [ -d "$dir/data" ] && as_owner "$(pgbin)/pg_ctl" -D "$dir/data" -m immediate -w stop >/dev/null 2>&1 || true
    rm -rf "$dir"
}

case "${1:-}" in
start) [ $# -eq 2 ] || die "usage: $0 start DIR"; start "$2" ;;
stop) [ $# -eq 2 ] || die "usage: $0 stop DIR"; stop "$2" ;;
down) [ $# -eq 2 ] || die "usage: $0 down DIR"; down "$2" ;;
up) [ $# -eq 2 ] || die "usage: $0 up DIR"; up "$2" ;;
run)
    shift
    [ $# -ge 1 ] || die "usage: $0 run CMD..."
    dir=$(mktemp -d /tmp/hookd-pg.XXXXXX)
    trap 'stop "$dir"' EXIT INT TERM
    HOOKD_TEST_PG=$(start "$dir")
    export HOOKD_TEST_PG
    rc=0
    "$@" || rc=$?
    exit $rc
    ;;
*) die "usage: $0 start DIR | stop DIR | down DIR | up DIR | run CMD..." ;;
esac

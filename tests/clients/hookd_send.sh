#!/bin/sh
# Enqueue events into hookd from a shell script, with `hookd send`.
#
#     hookd_send.sh SOCKET ENDPOINT COUNT [PREFIX]
#
# One `hookd send` per event (a process each: fine for cron jobs and
# hooks, use a library client for volume). The event id makes a retry
# safe: hookd answers "duplicate" and stores nothing. `hookd send` exits
# 0 when stored, 3 when hookd is unreachable (retry), 1 when hookd
# refused: retry for storage_full, storage_error, storage_unavailable,
# shutting_down and busy (the codes hookd-protocol(7) marks "Retry: yes"),
# give up on anything else (a bad request stays bad).
set -u
sock=$1 endpoint=$2 count=$3 prefix=${4:-sh}
HOOKD=${HOOKD:-hookd}
retry_for=30                       # seconds without progress before giving up

i=0 dups=0
while [ "$i" -lt "$count" ]; do
    delay=1 waited=0
    while :; do
        out=$("$HOOKD" send -s "$sock" --endpoint "$endpoint" --event-id "$prefix-$i" --data "{\"i\":$i}" 2>&1)
        rc=$?
        [ "$rc" -eq 0 ] && break
        case "$rc:$out" in
        3:* | 1:*storage_full:* | 1:*storage_error:* | 1:*storage_unavailable:* | 1:*shutting_down:* | 1:*busy:*) ;;
        *) echo "error $out" >&2; exit 1 ;;
        esac
        if [ "$waited" -ge "$retry_for" ]; then
            echo "error no progress for $retry_for s ($out)" >&2
            exit 2
        fi
        echo "retrying in $delay s: $out" >&2
        sleep "$delay"
        waited=$((waited + delay))
        [ "$delay" -lt 4 ] && delay=$((delay * 2))
    done
    case $out in *duplicate*) dups=$((dups + 1)) ;; esac
    i=$((i + 1))
done
echo "acked=$count duplicates=$dups"

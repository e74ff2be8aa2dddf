#!/usr/bin/env bash
# tests/bench/cgfloor.sh - the storage floor (rawcycle: hookd's store
# module alone, no daemon) in instructions per message, phase by phase,
# beside cgdrain.sh's figures for hookd (same N, W and endpoints).
#
#   tests/bench/cgfloor.sh [-k K] [-n N] [-w W] [-E E] [-b B] [-p P] [-c]
#
# A database is created in a temporary directory from a hookd.ini with K
# endpoints (as cgdrain.sh writes it: synchronous = full, the endpoints
# paused), rawcycle runs N messages (after W uncounted) under valgrind's
# callgrind, and each phase's inclusive count over N is printed:
# floor_ir_enqueue (the INSERTs and their durable commits), floor_ir_claim,
# floor_ir_settle, floor_ir_commit (BEGIN and COMMIT of the drain rounds),
# floor_ir_checkpoint, floor_ir_total. -c: also the plain run's CPU figures
# (getrusage; rawcycle's own key=value lines). The batch shapes default to
# what hookd's writer showed while cgdrain.sh drained 3000 messages: about
# 20 rows a round in claims of up to 64 rows with one endpoint, 16 rows a
# round in claims of about 5 rows with 100 endpoints (-b, -p), 1000
# enqueues a transaction (-E, [storage] batch_max).
# Needs: valgrind; `make bench-tools` built.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
BIN=${BENCH_BIN:-$root/build/bench}
k=1 n=3000 w=200 e=1000 b='' p='' cpu=0
while getopts "k:n:w:E:b:p:c" o; do
  case $o in
  k) k=$OPTARG;; n) n=$OPTARG;; w) w=$OPTARG;; E) e=$OPTARG;; b) b=$OPTARG;; p) p=$OPTARG;; c) cpu=1;;
  *) sed -n '2,22p' "$0" >&2; exit 2;;
  esac
done
if [ "$k" = 1 ]; then b=${b:-20} p=${p:-64}; else b=${b:-16} p=${p:-5}; fi
[ -x "$BIN/rawcycle" ] || { echo "$BIN/rawcycle missing: make bench-tools" >&2; exit 2; }
command -v valgrind >/dev/null || { echo "valgrind missing" >&2; exit 2; }
work=$(mktemp -d "${TMPDIR:-/tmp}/cgfloor.XXXXXX")
trap '[ -n "${CGFLOOR_KEEP:-}" ] || rm -rf "$work"' EXIT

ini() {  # ini DIR: cgdrain.sh's configuration, K endpoints
  {
    printf '[storage]\npath = %s/hookd.db\nsynchronous = full\n[server]\nsocket = %s/hookd.sock\n' "$1" "$1"
    printf '[log]\nlevel = warn\n[delivery]\nallow_networks = 127.0.0.0/8\n'
    if [ "$k" = 1 ]; then printf '[endpoint.ep]\nurl = http://127.0.0.1:9/hook\npaused = true\n'
    else for i in $(seq 0 $((k - 1))); do printf '[endpoint.ep%d]\nurl = http://127.0.0.1:9/hook/%d\npaused = true\n' "$i" "$i"; done
    fi
  } >"$1/hookd.ini"
}
args=(-n "$n" -w "$w" -E "$e" -b "$b" -p "$p")
mkdir -p "$work/cg"
ini "$work/cg"
# the counters are zeroed after the warm-up and dumped after the count
# (CALLGRIND_ZERO_STATS, CALLGRIND_DUMP_STATS): part 1 is the count
valgrind --tool=callgrind --callgrind-out-file="$work/cg/out" "$BIN/rawcycle" -c "$work/cg/hookd.ini" "${args[@]}" \
  >"$work/cg/stdout" 2>"$work/cg/stderr" || { cat "$work/cg/stderr" >&2; exit 1; }
[ -s "$work/cg/out.1" ] || { echo "no callgrind dump (rawcycle built without valgrind/callgrind.h?)" >&2; exit 1; }
echo "floor_endpoints=$k messages=$n warm=$w enqueue_batch=$e round_budget=$b per_endpoint=$p"
callgrind_annotate --inclusive=yes --threshold=100 "$work/cg/out.1" 2>/dev/null |
  awk -v n="$n" '/:rc_(enqueue|claim|settle|begin|commit|checkpoint) \[/ {
      v = $1; gsub(",", "", v); f = $0; sub(/ \[.*/, "", f); sub(/.*:rc_/, "", f)
      if (f == "begin") f = "commit"
      ir[f] += v; tot += v }
    END { printf "floor_ir_enqueue=%d floor_ir_claim=%d floor_ir_settle=%d floor_ir_commit=%d floor_ir_checkpoint=%d floor_ir_total=%d\n",
          ir["enqueue"] / n, ir["claim"] / n, ir["settle"] / n, ir["commit"] / n, ir["checkpoint"] / n, tot / n }'
[ "$cpu" = 1 ] || exit 0
mkdir -p "$work/cpu"
ini "$work/cpu"
"$BIN/rawcycle" -c "$work/cpu/hookd.ini" "${args[@]}"

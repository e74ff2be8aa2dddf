#!/bin/sh
# stall.sh - worst stall of acknowledgements and deliveries while hookd's
# periodic jobs run over full latency rings and a retention backlog
# (make bench-stall).
#
# Two runs, same config, same client:
#   baseline  100 endpoints, empty latency rings, nothing to expire
#   loaded    100 endpoints x STALL_ROWS latency samples (default 10,000
#             each: every ring full, 1M rows) spread over the last 2 h with
#             a 1 h window, so the rollup reads half of them; and STALL_OLD
#             (default 1M) delivered messages 8 days old with their attempt
#             rows, which retention deletes in chunks during the run: how
#             fast it deletes beside the load, and what that costs the acks
# Each run: `stall run` enqueues STALL_RATE/s (default 1000, one every ms)
# for STALL_SECS (default 60; the cleanup job runs every 5 s, chunk after
# chunk while a backlog remains) round robin over the endpoints, measures every ack
# from its scheduled send time and every first delivery at its own HTTP
# receiver, asks `stats` every 100 ms, samples the -wal size.
# Results: build/bench/stall.txt (+ per-second timelines beside it).
# Knobs: STALL_ROWS STALL_SECS STALL_RATE STALL_KEEP=1 (keep the work dir).
set -eu

HOOKD=${HOOKD:?HOOKD=path of the hookd binary}
STALL=${STALL:?STALL=path of the stall tool}
OUT=${BENCH_OUT:-build/bench}
ROWS=${STALL_ROWS:-10000}
OLD=${STALL_OLD:-1000000}
SECS=${STALL_SECS:-60}
RATE=${STALL_RATE:-1000}
NEP=100
WORK=$(mkdir -p "$OUT" && cd "$OUT" && pwd)/stall.work.$$
RESULT=$OUT/stall.txt
pid=""

cleanup() {
  if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
    kill -TERM "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  fi
  if [ "${STALL_KEEP:-0}" != 1 ]; then rm -rf "$WORK"; else echo "stall: kept $WORK" >&2; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

freeport() {
  /usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

write_cfg() { # dir port
  d=$1
  {
    printf '[storage]\npath = %s/hookd.db\n' "$d"
    printf '[server]\nsocket = %s/hookd.sock\n' "$d"
    printf '[delivery]\nallow_networks = 127.0.0.0/8\ntimeout = 10s\n'
    printf '[latency]\nrollup_interval = 1s\nwindow = 1h\nslow_scan_interval = 5s\n'
    printf '[health]\nsummary_interval = 5s\n'
    printf '[retention]\ncleanup_interval = 5s\n'
    printf '[metrics]\nfile = %s/hookd.prom\ninterval = 1s\n' "$d"
    printf '[log]\nlevel = debug\n'
    i=0
    while [ $i -lt $NEP ]; do
      printf '[endpoint.e%03d]\nurl = http://127.0.0.1:%s/hook/%d\n' $i "$2" $i
      i=$((i + 1))
    done
  } >"$d/hookd.ini"
}

start_hookd() { # dir
  "$HOOKD" serve -c "$1/hookd.ini" >>"$1/hookd.log" 2>&1 &
  pid=$!
  n=0
  until "$HOOKD" ping -c "$1/hookd.ini" >/dev/null 2>&1; do
    n=$((n + 1))
    if [ $n -gt 600 ] || ! kill -0 "$pid" 2>/dev/null; then
      echo "stall: hookd did not start:" >&2
      tail -20 "$1/hookd.log" >&2
      exit 1
    fi
    sleep 0.1
  done
}

stop_hookd() {
  kill -TERM "$pid"
  wait "$pid" || { echo "stall: hookd exited with $?" >&2; exit 1; }
  pid=""
}

kv() { # key line
  printf '%s\n' "$2" | tr ' ' '\n' | sed -n "s/^$1=//p"
}

ms() { # microseconds -> ms with one decimal
  awk -v u="$1" 'BEGIN { printf "%.1f", u / 1000 }'
}

run_one() { # name rows
  name=$1
  d=$WORK/$name
  mkdir -p "$d"
  port=$(freeport)
  write_cfg "$d" "$port"
  start_hookd "$d"            # creates the schema and the endpoints
  stop_hookd
  if [ "$2" -gt 0 ]; then
    echo "stall: $name: generating $NEP x $2 latency samples and $OLD expired messages" >&2
    "$STALL" gen "$d/hookd.db" "$2" 7200 "$OLD" >"$d/gen.out"
    cat "$d/gen.out" >&2
    # the generator writes unsynced (synchronous=OFF): left in the page
    # cache, its hundreds of MB would be written back during hookd's first
    # fsyncs and measured as a stall of the run (ext4 flushes them first)
    sync "$d/hookd.db"
  fi
  before=$("$STALL" count "$d/hookd.db" 3600)
  dbsize=$(du -sm "$d/hookd.db" | cut -f1)
  echo "stall: $name: $before db_mb=$dbsize; running ${SECS}s at ${RATE}/s" >&2
  start_hookd "$d"
  set +e
  line=$("$STALL" run -s "$d/hookd.sock" -p e -n $NEP -r "$RATE" -d "$SECS" -R "$port" \
         -W "$d/hookd.db-wal" -T "$OUT/stall-timeline-$name.txt")
  rc=$?
  set -e
  after=$("$STALL" count "$d/hookd.db" 3600)
  stop_hookd
  echo "stall: $name: $line" >&2
  [ $rc -eq 0 ] || echo "stall: $name: the client saw errors or missing acks (rc=$rc)" >&2
  log=$d/hookd.log
  rollups=$(grep -c 'event=rollup ' "$log" || true)
  rollup_max=$(sed -n 's/.*event=rollup .*duration_ms=\([0-9]*\).*/\1/p' "$log" | sort -n | tail -1)
  cleanups=$(grep -c 'event=cleanup ' "$log" || true)
  deleted=$(sed -n 's/.*event=cleanup delivered=\([0-9]*\).*/\1/p' "$log" | awk '{ s += $1 } END { print s + 0 }')
  # how long retention took: from the first cleanup chunk to the last one
  c_first=$(grep -m1 'event=cleanup ' "$log" | sed 's/^ts=\([^ ]*\) .*/\1/')
  c_last=$(grep 'event=cleanup ' "$log" | tail -1 | sed 's/^ts=\([^ ]*\) .*/\1/')
  span_ms=0
  if [ -n "$c_first" ]; then
    span_ms=$(( $(date -d "$c_last" +%s%3N) - $(date -d "$c_first" +%s%3N) ))
  fi
  slow_jobs=$(grep 'event=job_slow' "$log" | sed 's/.*job=\([a-z_]*\) duration_ms=\([0-9]*\).*/\1:\2/' |
              sort -t: -k2 -n | tail -5 | tr '\n' ' ')
  eval "${name}_line=\$line ${name}_before=\$before ${name}_after=\$after ${name}_db=\$dbsize"
  eval "${name}_rollups=\$rollups ${name}_rollup_max=\${rollup_max:-0} ${name}_cleanups=\$cleanups"
  eval "${name}_deleted=\$deleted ${name}_slow_jobs=\"\$slow_jobs\" ${name}_rc=\$rc ${name}_span_ms=\$span_ms"
}

mkdir -p "$WORK"
t0=$(date +%s)
run_one baseline 0
run_one loaded "$ROWS"
t1=$(date +%s)

row() { # name
  eval "l=\$${1}_line"
  printf '%-9s %9s %9s %9s %9s | %9s %9s %9s | %9s %9s | %7s\n' "$1" \
    "$(ms "$(kv ack_p50_us "$l")")" "$(ms "$(kv ack_p99_us "$l")")" "$(ms "$(kv ack_p999_us "$l")")" \
    "$(ms "$(kv ack_max_us "$l")")" \
    "$(ms "$(kv deliver_p50_us "$l")")" "$(ms "$(kv deliver_p99_us "$l")")" "$(ms "$(kv deliver_max_us "$l")")" \
    "$(ms "$(kv stats_p99_us "$l")")" "$(ms "$(kv stats_max_us "$l")")" \
    "$(awk -v b="$(kv wal_max_bytes "$l")" 'BEGIN { printf "%.1f", b / 1048576 }')"
}

worst=$(kv ack_max_us "$loaded_line")
verdict="PASS"
[ "$worst" -lt 50000 ] || verdict="FAIL"
{
  echo "hookd stall benchmark ($(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores, took $((t1 - t0)) s)"
  echo "client: ${RATE} enqueues/s for ${SECS} s, one connection, paced; $NEP endpoints round robin;"
  echo "jobs: rollup 1s, window 1h, slow scan 5s, summary 5s, metrics file 1s, checkpoint 10s, cleanup 5s (after a full chunk the next one follows at once)"
  echo "latency samples and expired rows (before -> after): baseline $baseline_before -> $baseline_after; loaded $loaded_before -> $loaded_after (db ${loaded_db} MB)"
  echo
  echo "all times in ms      ack (enqueue, from scheduled send)  | first delivery at receiver    | stats query         | WAL max"
  printf '%-9s %9s %9s %9s %9s | %9s %9s %9s | %9s %9s | %7s\n' run p50 p99 p99.9 max p50 p99 max p99 max MiB
  row baseline
  row loaded
  echo
  echo "worst ack stall with 100 x ${ROWS} latency samples and $OLD expired rows: $(ms "$worst") ms (target < 50 ms): $verdict"
  echo "retention: $loaded_deleted expired rows deleted in $loaded_span_ms ms (first to last chunk) = $(awk -v n="$loaded_deleted" -v ms="$loaded_span_ms" 'BEGIN { if (ms > 0) printf "%.0f", n * 1000 / ms; else print "n/a" }') rows/s beside the load"
  echo "worst ack at second $(kv ack_worst_at_s "$loaded_line") of the loaded run (timeline: $OUT/stall-timeline-loaded.txt)"
  echo "loaded run: rollups=$loaded_rollups (longest ${loaded_rollup_max} ms, on the reader thread), cleanup chunks=$loaded_cleanups"
  echo "job_slow warnings (job:ms, worst 5): baseline [${baseline_slow_jobs}] loaded [${loaded_slow_jobs}]"
  echo "client exit: baseline rc=$baseline_rc loaded rc=$loaded_rc"
  echo
  echo "raw: baseline $baseline_line"
  echo "raw: loaded   $loaded_line"
} >"$RESULT"
cat "$RESULT"
# the verdict is the exit status: FAIL, or a client run that did not
# finish (its rc), fails `make stall` and anything that runs it
[ "$verdict" = PASS ] && [ "$baseline_rc" = 0 ] && [ "$loaded_rc" = 0 ] || {
  echo "stall: $verdict (client rc: baseline $baseline_rc, loaded $loaded_rc)" >&2; exit 1; }

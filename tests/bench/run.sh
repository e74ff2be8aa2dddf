#!/usr/bin/env bash
# tests/bench/run.sh - hookd benchmark driver (see tests/bench/README.md).
#   run.sh all|enqueue|delivery
# Normally run through `make bench`, `make bench-enqueue`, `make bench-delivery`.
# Everything is bounded (counts, durations, timeouts), loopback only, and
# every process started here (hookd, nginx, the seed's postgres) is stopped
# on exit. Ratios are what to read: the machine is shared and noisy, both
# sides of each ratio are measured in the same run, back to back.
set -euo pipefail
what=${1:-all}
case "$what" in all|enqueue|delivery) ;; *) echo "usage: $0 all|enqueue|delivery" >&2; exit 2;; esac

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
SHARED=${SHARED:-$(cd "$root/.." && pwd)/shared}
HOOKD=${HOOKD:-$root/build/hookd}
BIN=${BENCH_BIN:-$root/build/bench}
ENQ_N=${BENCH_ENQ_N:-200000}
ENQ_CONNS=${BENCH_ENQ_CONNS:-4}
ENQ_WINDOW=${BENCH_ENQ_WINDOW:-1000}
ENQ_ROUNDS=${BENCH_ENQ_ROUNDS:-2}
DEL_N=${BENCH_DEL_N:-200000}
DEL_INFLIGHT=${BENCH_DEL_INFLIGHT:-1024}
LAT_RATE=${BENCH_LAT_RATE:-1000}
LAT_SECS=${BENCH_LAT_SECS:-10}
WRK_SECS=${BENCH_WRK_SECS:-10}
SEED=${BENCH_SEED:-1}
SEED_N=${BENCH_SEED_N:-3000}
SEED_K=${BENCH_SEED_K:-3}
RESULTS=$BIN/results.txt

for f in "$HOOKD" "$BIN/loadgen" "$BIN/rawinsert" "$BIN/dbreport"; do
  [ -x "$f" ] || { echo "bench: $f missing (run through make)" >&2; exit 2; }
done
if [ "$what" != enqueue ]; then
  for f in "$SHARED/bench/receiver-nginx.sh" "$SHARED/bench/post.lua"; do
    [ -r "$f" ] || { echo "bench: $f missing (shared/ must sit beside the repository)" >&2; exit 2; }
  done
fi

# ---- packages: install only what is missing (Debian) ----
need_pkgs() {
  local missing=() p
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
  done
  [ ${#missing[@]} = 0 ] && return 0
  echo "bench: installing ${missing[*]}" >&2
  local sudo=; [ "$(id -u)" = 0 ] || sudo=sudo
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null ||
    { $sudo env DEBIAN_FRONTEND=noninteractive apt-get update -q >/dev/null &&
      $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null; }
}
if [ "$what" != enqueue ]; then
  command -v nginx >/dev/null || need_pkgs nginx-light
  need_pkgs wrk
  [ "$SEED" = 0 ] || need_pkgs postgresql python3-psycopg2 python3-requests
fi

# ---- lifecycle ----
mkdir -p "$BIN"
work=$(mktemp -d "$BIN/work.XXXXXX")
hookd_pids=()
nginx_dirs=()
seed_pid=
stop_pid() {  # stop_pid PID [grace seconds]: TERM, then KILL
  local pid=$1 n=$(( ${2:-20} * 10 ))
  kill -TERM "$pid" 2>/dev/null || return 0
  while kill -0 "$pid" 2>/dev/null && [ $n -gt 0 ]; do sleep 0.1; n=$((n - 1)); done
  kill -KILL "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
}
child=
# bg VAR CMD...: run CMD in the background, so that a signal is handled at
# once rather than when CMD ends, and put its stdout in VAR; CMD's status
bg() {
  local __var=$1 __rc=0; shift
  "$@" >"$work/bg.out" &
  child=$!
  wait "$child" || __rc=$?
  child=
  printf -v "$__var" '%s' "$(cat "$work/bg.out")"
  return $__rc
}
cleanup() {
  local p d
  trap - EXIT INT TERM
  [ -n "$child" ] && stop_pid "$child" 5
  [ -n "$seed_pid" ] && stop_pid "$seed_pid" 60
  for p in "${hookd_pids[@]}"; do stop_pid "$p" 5; done
  for d in "${nginx_dirs[@]}"; do "$SHARED/bench/receiver-nginx.sh" stop "$d" || true; done
  [ "${BENCH_KEEP:-0}" = 1 ] && echo "bench: kept $work" >&2 || rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

kv() { sed -n "s/.*\\b$1=\\([^ ]*\\).*/\\1/p" <<<"$2" | head -1; }
div() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.3f", a / b; else print "n/a" }'; }
ge() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a != "n/a" && a + 0 >= b + 0) }'; }
log() { echo "bench: $*" >&2; }

# the schema hookd migrates to: every file, in order
cat "$root"/schema/*.sql >"$work/schema.sql"
rows=$work/rows
: >"$rows"
row() { printf '%-58s %14s   %s\n' "$1" "$2" "${3:-}" >>"$rows"; }
verdict() { if ge "$1" "$2"; then echo "target >= $2: PASS"; else echo "target >= $2: FAIL"; fi; }

# write_conf DIR [endpoint lines...]: a config with everything in DIR
write_conf() {
  local d=$1; shift
  mkdir -p "$d"
  {
    printf '[storage]\npath = %s/hookd.db\nsynchronous = full\n' "$d"
    printf '[server]\nsocket = %s/hookd.sock\n' "$d"
    printf '[log]\nlevel = warn\n'
    printf '%s\n' "$@"
  } >"$d/hookd.ini"
}
HOOKD_PID=
start_hookd() {  # start_hookd DIR
  local d=$1 n=150
  (cd "$d" && exec "$HOOKD" serve -c "$d/hookd.ini") >"$d/hookd.log" 2>&1 &
  HOOKD_PID=$!
  hookd_pids+=("$HOOKD_PID")
  while [ ! -S "$d/hookd.sock" ]; do
    kill -0 "$HOOKD_PID" 2>/dev/null || { cat "$d/hookd.log" >&2; log "hookd exited"; exit 1; }
    n=$((n - 1)); [ $n -gt 0 ] || { cat "$d/hookd.log" >&2; log "no socket after 15 s"; exit 1; }
    sleep 0.1
  done
}
peak_rss_kb() { awk '/^VmHWM:/ { print $2 }' "/proc/$1/status"; }
# CPU seconds (user + system, all threads) the process has used so far
cpu_s() { awk -v hz="$(getconf CLK_TCK)" '{ printf "%.2f", ($14 + $15) / hz }' "/proc/$1/stat"; }
# microseconds of CPU per message
per_msg_us() { awk -v c="$1" -v n="$2" 'BEGIN { printf "%.1f", c * 1e6 / n }'; }

# ---- 1. enqueue ----
bench_enqueue() {
  local r best_h=0 best_r=0 best_u=0 out d hk rw ru db cpu best_cpu=
  log "enqueue: $ENQ_N pipelined enqueues over $ENQ_CONNS connections (window $ENQ_WINDOW), synchronous=full, $ENQ_ROUNDS rounds"
  for r in $(seq "$ENQ_ROUNDS"); do
    d=$work/enq$r
    # a paused endpoint: enqueues are stored, nothing is ever claimed, so
    # no delivery work competes with the measurement (checked below)
    write_conf "$d" '[endpoint.sink]' 'url = http://127.0.0.1:9/hook' 'paused = yes'
    start_hookd "$d"
    bg out "$BIN/loadgen" enqueue -s "$d/hookd.sock" -e sink -c "$ENQ_CONNS" -n "$ENQ_N" -w "$ENQ_WINDOW" -t "e$r" ||
      { log "enqueue round $r failed: $out"; exit 1; }
    cpu=$(cpu_s "$HOOKD_PID")
    log "  round $r hookd: $out cpu_s=$cpu"
    stop_pid "$HOOKD_PID"
    db=$("$BIN/dbreport" delivery "$d/hookd.db" 0 || true)
    [ "$(kv db_not_delivered "$db")" = "$ENQ_N" ] && [ "$(kv db_attempts "$db")" = 0 ] ||
      { log "  paused endpoint did not isolate enqueue: $db"; exit 1; }
    hk=$(kv enqueue_rate "$out")
    rm -f "$d"/hookd.db*
    bg rw "$BIN/rawinsert" -d "$d/raw.db" -s "$work/schema.sql" -n "$ENQ_N" -b 1000 -c "$ENQ_CONNS" -t "r$r"
    log "  round $r raw:   $rw"
    rw=$(kv raw_rate "$rw")
    # the same, with hookd's own INSERT statement: splits the gap into
    # "the SQL hookd runs" and "everything around it"
    bg ru "$BIN/rawinsert" -d "$d/raw.db" -s "$work/schema.sql" -n "$ENQ_N" -b 1000 -c "$ENQ_CONNS" -t "u$r" -U
    log "  round $r raw, hookd's statement: $ru"
    rm -f "$d"/raw.db*
    ru=$(kv raw_rate "$ru")
    awk -v a="$hk" -v b="$best_h" 'BEGIN { exit !(a > b) }' && best_h=$hk && best_cpu=$cpu
    awk -v a="$rw" -v b="$best_r" 'BEGIN { exit !(a > b) }' && best_r=$rw
    awk -v a="$ru" -v b="$best_u" 'BEGIN { exit !(a > b) }' && best_u=$ru
    row "enqueue round $r: hookd | raw | raw w/ hookd's INSERT" "$hk | $rw | $ru" "hookd/raw $(div "$hk" "$rw")"
  done
  local ratio; ratio=$(div "$best_h" "$best_r")
  row "enqueue: hookd acked enqueues/s (best of $ENQ_ROUNDS)" "$best_h" "$ENQ_CONNS conns, window $ENQ_WINDOW, synchronous=full"
  row "enqueue: raw SQLite inserts/s (best of $ENQ_ROUNDS)" "$best_r" "1 conn, prepared INSERT, 1000/txn, synchronous=full"
  row "enqueue: ratio hookd / raw" "$ratio" "$(verdict "$ratio" 0.50)"
  row "enqueue: hookd CPU per enqueue, us (all threads)" "$(per_msg_us "$best_cpu" "$ENQ_N")" \
    "less noise-sensitive than the rate; best round"
  row "enqueue: raw with hookd's INSERT ... RETURNING id, rows/s" "$best_u" \
    "diagnostic: the statement's own cost ($(div "$best_u" "$best_r") of plain)"
}

# ---- 2. delivery ----
bench_delivery() {
  local port d out db rss wrk_rate hk lat seed_line seed_rate ratio wait_rc

  port=$("$BIN/loadgen" freeport)
  nginx_dirs+=("$work/nginx")
  "$SHARED/bench/receiver-nginx.sh" start "$port" "$work/nginx" >&2

  log "delivery: wrk -t2 -c64 -d${WRK_SECS}s against nginx (the ceiling)"
  bg out wrk -t2 -c64 -d"${WRK_SECS}s" -s "$SHARED/bench/post.lua" "http://127.0.0.1:$port/hook"
  wrk_rate=$(awk '/^Requests\/sec:/ { printf "%.0f", $2 }' <<<"$out")
  log "  wrk: $wrk_rate req/s"

  log "delivery: $DEL_N messages streamed in, max_in_flight_per_endpoint=$DEL_INFLIGHT, workers=0"
  d=$work/del
  write_conf "$d" '[delivery]' 'workers = 0' "max_in_flight_per_endpoint = $DEL_INFLIGHT" \
    'allow_networks = 127.0.0.0/8' '[endpoint.nginx]' "url = http://127.0.0.1:$port/hook"
  start_hookd "$d"
  local perf_pid=
  if [ "${BENCH_PERF:-0}" = 1 ] && command -v perf >/dev/null; then
    # a CPU profile of the daemon during the whole run, with DWARF call
    # graphs (the libraries have no frame pointers)
    perf record -q -F 499 -e cpu-clock --call-graph dwarf,16384 -p "$HOOKD_PID" -o "$BIN/perf-delivery.data" \
      >/dev/null 2>&1 &
    perf_pid=$!
  fi
  bg out "$BIN/loadgen" enqueue -s "$d/hookd.sock" -e nginx -c 4 -n "$DEL_N" -w 1000 -t d ||
    { log "enqueue failed: $out"; exit 1; }
  log "  hookd enqueue: $out"
  local w; bg w "$BIN/dbreport" wait "$d/hookd.db" "$DEL_N" 600 || log "  WARNING: not all delivered: $w"
  log "  hookd settled: $w"
  if [ -n "$perf_pid" ]; then
    kill -INT "$perf_pid" 2>/dev/null || true
    wait "$perf_pid" 2>/dev/null || true
    log "  profile: perf report -i $BIN/perf-delivery.data --no-children --sort pid,dso"
  fi
  rss=$(peak_rss_kb "$HOOKD_PID")
  local dcpu; dcpu=$(cpu_s "$HOOKD_PID")
  stop_pid "$HOOKD_PID"
  db=$("$BIN/dbreport" delivery "$d/hookd.db" "$(kv first_send_ms "$out")") || true
  log "  db: $db"
  hk=$(kv db_delivered_rate "$db")
  [ "$(kv db_delivered "$db")" = "$DEL_N" ] || log "  WARNING: only $(kv db_delivered "$db") of $DEL_N delivered"
  rm -f "$d"/hookd.db*

  # The seed's run.sh preloads its rows and then times the workers; measure
  # hookd the same way for that ratio: enqueue to a paused endpoint, resume,
  # time from the resume to the last delivered_at.
  log "delivery: $DEL_N messages preloaded (endpoint paused), then resumed: the seed's method"
  local drain t0
  d=$work/drain
  write_conf "$d" '[delivery]' 'workers = 0' "max_in_flight_per_endpoint = $DEL_INFLIGHT" \
    'allow_networks = 127.0.0.0/8' '[endpoint.nginx]' "url = http://127.0.0.1:$port/hook" 'paused = yes'
  start_hookd "$d"
  bg out "$BIN/loadgen" enqueue -s "$d/hookd.sock" -e nginx -c 4 -n "$DEL_N" -w 1000 -t p ||
    { log "enqueue failed: $out"; exit 1; }
  t0=$(date +%s%3N)
  "$HOOKD" resume nginx -s "$d/hookd.sock" >/dev/null
  bg w "$BIN/dbreport" wait "$d/hookd.db" "$DEL_N" 600 || log "  WARNING: not all delivered: $w"
  stop_pid "$HOOKD_PID"
  drain=$("$BIN/dbreport" delivery "$d/hookd.db" "$t0") || true
  log "  drain db: $drain"
  rm -f "$d"/hookd.db*

  log "delivery: first-attempt latency at a steady $LAT_RATE/s for ${LAT_SECS}s"
  local steady lat rsteady nsteady fs rport w
  fs=$("$BIN/loadgen" fsync "$work/fsync.probe" -n 300)
  log "  disk: $fs"
  # (a) to nginx, measured from the database (ms columns)
  d=$work/lat
  write_conf "$d" '[delivery]' 'workers = 0' "max_in_flight_per_endpoint = $DEL_INFLIGHT" \
    'allow_networks = 127.0.0.0/8' '[endpoint.nginx]' "url = http://127.0.0.1:$port/hook"
  start_hookd "$d"
  bg steady "$BIN/loadgen" steady -s "$d/hookd.sock" -e nginx -r "$LAT_RATE" -d "$LAT_SECS" -t l ||
    { log "steady run failed: $steady"; exit 1; }
  log "  nginx steady: $steady"
  bg w "$BIN/dbreport" wait "$d/hookd.db" $((LAT_RATE * LAT_SECS)) 60 || log "  WARNING: latency run not settled"
  stop_pid "$HOOKD_PID"
  lat=$("$BIN/dbreport" latency "$d/hookd.db" l) || true
  log "  nginx latency (db): $lat"
  # (b) to loadgen's own receiver: exact send -> request arrival (us);
  # (c) the same with synchronous=normal: what is left without the fsync
  for sync in full normal; do
    d=$work/lat-$sync
    rport=$("$BIN/loadgen" freeport)
    write_conf "$d" '[delivery]' 'workers = 0' "max_in_flight_per_endpoint = $DEL_INFLIGHT" \
      'allow_networks = 127.0.0.0/8' '[endpoint.probe]' "url = http://127.0.0.1:$rport/hook"
    sed -i "s/^synchronous = full/synchronous = $sync/" "$d/hookd.ini"
    start_hookd "$d"
    bg out "$BIN/loadgen" steady -s "$d/hookd.sock" -e probe -r "$LAT_RATE" -d "$LAT_SECS" -t x -R "$rport" ||
      { log "steady run with receiver failed: $out"; exit 1; }
    log "  receiver steady, synchronous=$sync: $out"
    stop_pid "$HOOKD_PID"
    if [ $sync = full ]; then rsteady=$out; else nsteady=$out; fi
  done
  "$SHARED/bench/receiver-nginx.sh" stop "$work/nginx"

  seed_rate=
  if [ "$SEED" != 0 ]; then
    log "delivery: seed design, N=$SEED_N K=$SEED_K (slow by design)"
    "$SHARED/peers/seed-postgres/run.sh" "$SEED_N" "$SEED_K" "$("$BIN/loadgen" freeport)" >"$work/seed.out" 2>&1 &
    seed_pid=$!
    wait "$seed_pid" || { cat "$work/seed.out" >&2; log "seed run failed"; }
    seed_pid=
    seed_line=$(grep '^seed-postgres delivered' "$work/seed.out" || true)
    log "  $seed_line"
    seed_rate=$(sed -n 's/.*= \([0-9.]*\)\/s.*/\1/p' <<<"$seed_line")
  fi

  row "delivery: wrk ceiling, req/s (-t2 -c64 -d${WRK_SECS}s)" "$wrk_rate" "POST post.lua body to nginx 204"
  row "delivery: hookd delivered/s ($DEL_N msgs)" "$hk" \
    "first send to last delivered_at; $(kv db_delivered "$db") delivered, $(kv db_attempts "$db") attempts"
  ratio=$(div "$hk" "$wrk_rate")
  row "delivery: ratio hookd / wrk" "$ratio" "$(verdict "$ratio" 0.25)"
  local dr; dr=$(kv db_delivered_rate "$drain")
  row "delivery: hookd delivered/s, preloaded then resumed" "$dr" \
    "resume to last delivered_at; the seed's own method (rows first, then workers)"
  if [ -n "$seed_rate" ]; then
    row "delivery: seed-postgres delivered/s (N=$SEED_N K=$SEED_K)" "$seed_rate" "rows preloaded, then K workers"
    ratio=$(div "$dr" "$seed_rate")
    row "delivery: ratio hookd / seed (same method)" "$ratio" "$(verdict "$ratio" 100)"
    ratio=$(div "$hk" "$seed_rate")
    row "delivery: ratio hookd streamed / seed" "$ratio" "diagnostic: hookd also doing the enqueues"
  elif [ "$SEED" != 0 ]; then
    row "delivery: seed-postgres" "FAILED" "see the log above"
  else
    row "delivery: seed-postgres" "skipped" "BENCH_SEED=0"
  fi
  row "delivery: hookd CPU per message, us (all threads)" "$(per_msg_us "$dcpu" "$DEL_N")" \
    "enqueue + claim + HTTP + result; $dcpu s in all"
  row "delivery: hookd peak RSS, MiB (VmHWM)" "$(awk -v k="$rss" 'BEGIN { printf "%.1f", k / 1024 }')" "$DEL_N-message run"
  row "latency @${LAT_RATE}/s: achieved enqueue rate (nginx run)" "$(kv steady_rate "$steady")" \
    "acks $(kv acks "$steady"), send->ack p50/p99 $(kv ack_p50_us "$steady")/$(kv ack_p99_us "$steady") us"
  row "latency: enqueue->first attempt p50 ms (nginx, db)" "$(kv start_p50_ms "$lat")" \
    "created_at -> measured_at - response_ms, ms columns"
  local p99; p99=$(kv start_p99_ms "$lat")
  row "latency: enqueue->first attempt p99 ms (nginx, db)" "$p99" \
    "$(awk -v p="$p99" 'BEGIN { if (p != "" && p + 0 < 10) print "target < 10: PASS"; else print "target < 10: FAIL" }')"
  row "latency: enqueue->result recorded p50/p99 ms (nginx, db)" "$(kv done_p50_ms "$lat")/$(kv done_p99_ms "$lat")" \
    "created_at -> measured_at, max $(kv done_max_ms "$lat")"
  p99=$(kv arrive_p99_us "$rsteady")
  row "latency: client send->request arrival p50/p99 ms (exact)" \
    "$(awk -v a="$(kv arrive_p50_us "$rsteady")" -v b="$p99" 'BEGIN { printf "%.1f/%.1f", a / 1000, b / 1000 }')" \
    "synchronous=full, loadgen receiver, $(kv arrived "$rsteady") arrived; $(awk -v p="$p99" 'BEGIN { if (p != "" && p + 0 < 10000) print "target < 10: PASS"; else print "target < 10: FAIL" }')"
  row "latency: same with synchronous=normal p50/p99 ms (exact)" \
    "$(awk -v a="$(kv arrive_p50_us "$nsteady")" -v b="$(kv arrive_p99_us "$nsteady")" 'BEGIN { printf "%.1f/%.1f", a / 1000, b / 1000 }')" \
    "diagnostic: no fsync per commit"
  row "disk: fdatasync p50/p99 ms (4 KiB appends)" \
    "$(awk -v a="$(kv fsync_p50_us "$fs")" -v b="$(kv fsync_p99_us "$fs")" 'BEGIN { printf "%.1f/%.1f", a / 1000, b / 1000 }')" \
    "floor of every synchronous=full commit"
}

[ "$what" = delivery ] || bench_enqueue
[ "$what" = enqueue ] || bench_delivery

{
  echo "hookd benchmark ($what) $(date -u +%Y-%m-%dT%H:%M:%SZ) rev $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo '?')" \
    "on $(nproc) cores, $(uname -r)"
  printf '%-58s %14s   %s\n' "measure" "value" "notes"
  cat "$rows"
} | tee "$RESULTS"

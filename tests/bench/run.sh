#!/usr/bin/env bash
# tests/bench/run.sh - hookd benchmark driver (see tests/bench/README.md).
#   run.sh all|enqueue|delivery|scale|search|postgres|cluster|egress
# Normally run through `make bench`, `make bench-enqueue`, `make bench-delivery`,
# `make bench-scale` (search included), `make bench-search`, `make bench-postgres`,
# `make bench-cluster`.
# Everything is bounded (counts, durations, timeouts), loopback only, and
# every process started here (hookd, nginx, the seed's postgres) is stopped
# on exit. Ratios are what to read: the machine is shared and noisy, both
# sides of each ratio are measured in the same run, back to back.
set -euo pipefail
what=${1:-all}
case "$what" in all|enqueue|delivery|scale|search|postgres|cluster|egress) ;;
  *) echo "usage: $0 all|enqueue|delivery|scale|search|postgres|cluster|egress" >&2; exit 2;; esac

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
SHARED=${SHARED:-$(cd "$root/.." && pwd)/shared}
HOOKD=${HOOKD:-$root/build/hookd}
BIN=${BENCH_BIN:-$root/build/bench}
ENQ_N=${BENCH_ENQ_N:-200000}
ENQ_CONNS=${BENCH_ENQ_CONNS:-4}
ENQ_WINDOW=${BENCH_ENQ_WINDOW:-1000}
ENQ_ROUNDS=${BENCH_ENQ_ROUNDS:-2}
DEL_N=${BENCH_DEL_N:-100000}
LAT_RATES=${BENCH_LAT_RATES:-1000 10000}
LAT_SECS=${BENCH_LAT_SECS:-10}
SCALE_NEPS=${BENCH_SCALE_NEPS:-10000}
SCALE_MSGS=${BENCH_SCALE_MSGS:-1000000}
SCALE_SECS=${BENCH_SCALE_SECS:-30}
PUT_NEPS=${BENCH_PUT_NEPS:-50000}
SEARCH_ROWS=${BENCH_SEARCH_ROWS:-10000000}
SEARCH_NEPS=${BENCH_SEARCH_NEPS:-1000}
SEARCH_REPS=${BENCH_SEARCH_REPS:-7}
SEARCH_DIR=${BENCH_SEARCH_DIR:-}
WRK_SECS=${BENCH_WRK_SECS:-5}
DEL_ROUNDS=${BENCH_DEL_ROUNDS:-3}
SEED=${BENCH_SEED:-1}
SEED_N=${BENCH_SEED_N:-3000}
SEED_K=${BENCH_SEED_K:-3}
CL_N=${BENCH_CL_N:-20000}
CL_EPS=${BENCH_CL_EPS:-64}
CL_INFLIGHT=${BENCH_CL_INFLIGHT:-128}
RESULTS=$BIN/results.txt

for f in "$HOOKD" "$BIN/loadgen" "$BIN/rawinsert" "$BIN/rawcycle" "$BIN/dbreport" "$BIN/searchdb" "$BIN/hookd-nofilter"; do
  [ -x "$f" ] || { echo "bench: $f missing (run through make)" >&2; exit 2; }
done
if [ "$what" = all ] || [ "$what" = delivery ] || [ "$what" = postgres ] || [ "$what" = cluster ] ||
   [ "$what" = egress ]; then
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
if [ "$what" = all ] || [ "$what" = delivery ] || [ "$what" = postgres ]; then
  command -v nginx >/dev/null || need_pkgs nginx-light
  need_pkgs wrk
  [ "$SEED" = 0 ] || need_pkgs postgresql python3-psycopg2 python3-requests
fi
[ "$what" != all ] && [ "$what" != postgres ] || need_pkgs postgresql
[ "$what" != all ] && [ "$what" != enqueue ] || need_pkgs valgrind   # the filter hook's instruction counts
if [ "$what" = all ] || [ "$what" = cluster ]; then
  command -v nginx >/dev/null || need_pkgs nginx-light
  need_pkgs postgresql libnginx-mod-http-echo   # echo_sleep: a receiver that answers after 50 ms
fi
if [ "$what" = all ] || [ "$what" = egress ]; then
  command -v nginx >/dev/null || need_pkgs nginx-light
  need_pkgs openssl libnginx-mod-http-echo      # test CA; echo_sleep: answers after 20 ms
fi

# ---- lifecycle ----
mkdir -p "$BIN"
work=$(mktemp -d "$BIN/work.XXXXXX")
hookd_pids=()
nginx_dirs=()
pg_dir=
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
  [ -z "$pg_dir" ] || "$root/tests/pg/cluster.sh" stop "$pg_dir" || true
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
# per thread: name, CPU seconds, context switches (voluntary+involuntary),
# write calls and bytes; where a message's CPU goes, how often each thread
# sleeps for it and what the writer writes (WAL frames, checkpoints)
thread_cpu() {
  local t hz; hz=$(getconf CLK_TCK)
  for t in /proc/"$1"/task/*; do
    awk -v hz="$hz" -v cs="$(awk '/ctxt_switches/ { n += $2 } END { print n }' "$t/status")" \
      -v io="$(awk '/^(syscw|wchar):/ { printf "%s=%s ", $1, $2 }' "$t/io" | tr -d :)" \
      '{ sub(/^[^)]*\) /, ""); } { printf "%s cpu_s=%.2f ctxsw=%d %s\n", c, ($12 + $13) / hz, cs, io }' \
      c="$(cat "$t/comm")" "$t/stat"
  done | tr '\n' ' '
}
# microseconds of CPU per message
per_msg_us() { awk -v c="$1" -v n="$2" 'BEGIN { printf "%.1f", c * 1e6 / n }'; }
# the middle value (the lower middle of an even count)
median() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
maxof() { printf '%s\n' "$@" | sort -g | tail -1; }

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

# The filter hook's cost to endpoints without a filter: fan-out enqueues
# to FH_EPS endpoints (every one subscribed, none with a filter, paused),
# hookd against hookd-nofilter (bench.mk: the same code with the hook
# compiled out), counted in instructions by callgrind (a wall-clock pair
# cannot see a cost this small on a shared machine). One connection, one
# request in flight: every enqueue is its own commit, so both builds do
# exactly the same SQLite work and the counts repeat to within 0.01%.
# Rounds alternate (hook, none, none, hook); startup and shutdown,
# counted once with one enqueue, are taken off.
FH_N=${BENCH_FH_N:-2000}
FH_EPS=${BENCH_FH_EPS:-10}
fh_count() {  # fh_count BIN N TAG: instructions of hookd's whole run
  local d=$work/fh-$3 p lines
  mapfile -t lines < <(awk -v n="$FH_EPS" 'BEGIN { for (i = 0; i < n; i++)
    printf "[endpoint.f%d]\nurl = http://127.0.0.1:9/f/%d\nevent_types = *\npaused = yes\n", i, i }')
  write_conf "$d" "${lines[@]}"
  # instructions, not fsyncs, are measured
  sed -i 's/^synchronous = full$/synchronous = normal/' "$d/hookd.ini"
  (cd "$d" && exec valgrind --tool=callgrind --callgrind-out-file="$d/cg.out" "$1" serve -c "$d/hookd.ini") \
    >"$d/hookd.log" 2>&1 &
  p=$!
  hookd_pids+=("$p")
  local n=600
  while [ ! -S "$d/hookd.sock" ]; do
    kill -0 "$p" 2>/dev/null || { cat "$d/hookd.log" >&2; log "hookd under callgrind exited"; exit 1; }
    n=$((n - 1)); [ $n -gt 0 ] || { log "no socket under callgrind after 60 s"; exit 1; }
    sleep 0.1
  done
  "$BIN/loadgen" enqueue -s "$d/hookd.sock" -F fh -c 1 -w 1 -n "$2" -t "fh$3" >/dev/null ||
    { log "fan-out enqueue under callgrind failed"; exit 1; }
  stop_pid "$p" 60
  sed -n 's/^totals: *//p' "$d/cg.out"
  rm -rf "$d"
}
bench_filter_hook() {
  local base h1 n1 n2 h2 hook none ratio
  log "enqueue: the filter hook, fan-out to $FH_EPS endpoints without filters, $FH_N enqueues, callgrind"
  base=$(fh_count "$HOOKD" 1 base)
  h1=$(fh_count "$HOOKD" "$FH_N" h1); n1=$(fh_count "$BIN/hookd-nofilter" "$FH_N" n1)
  n2=$(fh_count "$BIN/hookd-nofilter" "$FH_N" n2); h2=$(fh_count "$HOOKD" "$FH_N" h2)
  log "  instructions: startup $base; hook $h1 $h2; no hook $n1 $n2"
  hook=$(awk -v a="$h1" -v b="$h2" -v s="$base" -v n="$FH_N" 'BEGIN { printf "%.0f", ((a + b) / 2 - s) / n }')
  none=$(awk -v a="$n1" -v b="$n2" -v s="$base" -v n="$FH_N" 'BEGIN { printf "%.0f", ((a + b) / 2 - s) / n }')
  ratio=$(awk -v a="$hook" -v b="$none" 'BEGIN { printf "%.4f", a / b }')
  row "enqueue: instructions/enqueue, fan-out to $FH_EPS, no filters" "$hook | $none" \
    "filter hook | compiled out: ratio $ratio (callgrind, 2 runs each); $(verdict_le "$ratio" 1.01)"
}

# ---- 2. delivery ----
# endpoint sections: one named nginx, or nginx0..nginx(K-1) on the same
# host (one path each)
ep_lines() {  # ep_lines PORT K [extra lines...]
  local port=$1 k=$2 i; shift 2
  if [ "$k" = 1 ]; then
    printf '%s\n' '[endpoint.nginx]' "url = http://127.0.0.1:$port/hook" "$@"
  else
    for i in $(seq 0 $((k - 1))); do
      printf '%s\n' "[endpoint.nginx$i]" "url = http://127.0.0.1:$port/hook/$i" "$@"
    done
  fi
}

# stream DEL_N messages to K endpoints of the same nginx with the default
# configuration; sets S_RATE S_CPU S_RSS S_DB
stream_run() {  # stream_run TAG PORT K
  local tag=$1 port=$2 k=$3 d out w eflag=(-e nginx)
  d=$work/del-$tag
  # allow_networks only lets the SSRF guard reach loopback; every
  # performance setting is the default
  mapfile -t lines < <(ep_lines "$port" "$k")
  write_conf "$d" '[delivery]' 'allow_networks = 127.0.0.0/8' "${lines[@]}"
  [ "$k" = 1 ] || eflag=(-e nginx -E "$k")
  start_hookd "$d"
  local perf_pid=
  if [ "${BENCH_PERF:-0}" = 1 ] && command -v perf >/dev/null; then
    perf record -q -F 499 -e cpu-clock --call-graph dwarf,16384 -p "$HOOKD_PID" -o "$BIN/perf-$tag.data" \
      >/dev/null 2>&1 &
    perf_pid=$!
  fi
  bg out "$BIN/loadgen" enqueue -s "$d/hookd.sock" "${eflag[@]}" -c 4 -n "$DEL_N" -w 1000 -t "d$tag" ||
    { log "enqueue failed: $out"; exit 1; }
  log "  hookd enqueue ($tag): $out"
  bg w "$BIN/dbreport" wait "$d/hookd.db" "$DEL_N" 600 || log "  WARNING: not all delivered: $w"
  if [ -n "$perf_pid" ]; then
    kill -INT "$perf_pid" 2>/dev/null || true
    wait "$perf_pid" 2>/dev/null || true
    log "  profile: perf report -i $BIN/perf-$tag.data --no-children --sort comm,dso"
  fi
  S_RSS=$(peak_rss_kb "$HOOKD_PID")
  S_CPU=$(cpu_s "$HOOKD_PID")
  log "  threads ($tag): $(thread_cpu "$HOOKD_PID")"
  stop_pid "$HOOKD_PID"
  S_DB=$("$BIN/dbreport" delivery "$d/hookd.db" "$(kv first_send_ms "$out")") || true
  log "  db ($tag): $S_DB"
  S_RATE=$(kv db_delivered_rate "$S_DB")
  [ "$(kv db_delivered "$S_DB")" = "$DEL_N" ] || log "  WARNING: only $(kv db_delivered "$S_DB") of $DEL_N delivered"
  rm -f "$d"/hookd.db*
}

mib() { awk -v k="$1" 'BEGIN { printf "%.1f", k / 1024 }'; }
le() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a != "" && a + 0 <= b + 0) }'; }
verdict_le() { if le "$1" "$2"; then echo "target <= $2: PASS"; else echo "target <= $2: FAIL"; fi; }

bench_delivery() {
  local port d out wrk_rate seed_line seed_rate ratio w
  local r1 c1 m1 db1 r100 c100 m100 db100

  port=$("$BIN/loadgen" freeport)
  nginx_dirs+=("$work/nginx")
  "$SHARED/bench/receiver-nginx.sh" start "$port" "$work/nginx" >&2

  # Rounds, each wrk then hookd with 1 and with 100 endpoints, back to
  # back: the machine's load moves all three alike within a round, so the
  # ratio of each round is read, and the median of them reported.
  local rr wr fl w1=() w100=() q1=() q100=() cpu1=() cpu100=() rss1=() rss100=() wrks=()
  local floors=() floorcpu=() qf1=() qf100=()
  for rr in $(seq "$DEL_ROUNDS"); do
    log "delivery round $rr/$DEL_ROUNDS: wrk -t1 -c64 -d${WRK_SECS}s against nginx (the ceiling)"
    bg out wrk -t1 -c64 -d"${WRK_SECS}s" -s "$SHARED/bench/post.lua" "http://127.0.0.1:$port/hook"
    wr=$(awk '/^Requests\/sec:/ { printf "%.0f", $2 }' <<<"$out")
    log "  wrk: $wr req/s"
    # libcurl alone, same nginx, same concurrency: the floor of hookd's
    # delivery threads (issue 14 keeps libcurl as the client)
    bg fl "$BIN/curlfloor" "http://127.0.0.1:$port/hook" -n "$DEL_N" -c 64 || log "  curlfloor failed: $fl"
    log "  libcurl floor: $fl"
    floors+=("$(kv floor_rate "$fl")") floorcpu+=("$(kv floor_cpu_us "$fl")")
    log "delivery round $rr: $DEL_N messages streamed in, default configuration, 1 endpoint"
    stream_run one "$port" 1
    r1=$S_RATE db1=$S_DB
    wrks+=("$wr") w1+=("$S_RATE") q1+=("$(div "$S_RATE" "$wr")") cpu1+=("$(per_msg_us "$S_CPU" "$DEL_N")")
    qf1+=("$(div "$S_RATE" "${floors[-1]}")")
    rss1+=("$S_RSS")
    log "delivery round $rr: $DEL_N messages streamed in, default configuration, 100 endpoints on the same host"
    stream_run hundred "$port" 100
    r100=$S_RATE db100=$S_DB
    w100+=("$S_RATE") q100+=("$(div "$S_RATE" "$wr")") cpu100+=("$(per_msg_us "$S_CPU" "$DEL_N")")
    qf100+=("$(div "$S_RATE" "${floors[-1]}")")
    rss100+=("$S_RSS")
    log "  round $rr: wrk $wr, 1 endpoint $r1 (${q1[-1]}, ${cpu1[-1]} us), 100 endpoints $r100 (${q100[-1]}, ${cpu100[-1]} us)"
  done
  wrk_rate=$(median "${wrks[@]}")
  r1=$(median "${w1[@]}") c1=$(median "${cpu1[@]}") m1=$(maxof "${rss1[@]}")
  r100=$(median "${w100[@]}") c100=$(median "${cpu100[@]}") m100=$(maxof "${rss100[@]}")

  # The seed's run.sh preloads its rows and then times the workers; measure
  # hookd the same way for that ratio: enqueue to a paused endpoint, resume,
  # time from the resume to the last delivered_at.
  # As many rounds as the streamed runs, median reported: one drain of
  # 100k lasts about 3 s, and a single one moved by a third between runs.
  local drain t0 drains=()
  d=$work/drain
  write_conf "$d" '[delivery]' 'allow_networks = 127.0.0.0/8' '[endpoint.nginx]' \
    "url = http://127.0.0.1:$port/hook" 'paused = yes'
  for rr in $(seq "$DEL_ROUNDS"); do
    log "delivery round $rr/$DEL_ROUNDS: $DEL_N messages preloaded (endpoint paused), then resumed: the seed's method"
    start_hookd "$d"
    bg out "$BIN/loadgen" enqueue -s "$d/hookd.sock" -e nginx -c 4 -n "$DEL_N" -w 1000 -t "p$rr" ||
      { log "enqueue failed: $out"; exit 1; }
    t0=$(date +%s%3N)
    "$HOOKD" resume nginx -s "$d/hookd.sock" >/dev/null
    bg w "$BIN/dbreport" wait "$d/hookd.db" "$DEL_N" 600 || log "  WARNING: not all delivered: $w"
    stop_pid "$HOOKD_PID"
    drain=$("$BIN/dbreport" delivery "$d/hookd.db" "$t0") || true
    log "  drain db: $drain"
    drains+=("$(kv db_delivered_rate "$drain")")
    rm -f "$d"/hookd.db*
  done
  "$SHARED/bench/receiver-nginx.sh" stop "$work/nginx"

  # enqueue -> first attempt, exact: the endpoint is loadgen's own
  # receiver, both ends on one monotonic clock, microseconds
  local fs floor rport rate lat_rows=()
  fs=$("$BIN/loadgen" fsync "$work/fsync.probe" -n 300)
  log "  disk: $fs"
  for rate in $LAT_RATES; do
    # the disk's own floor at this rate, just before hookd's run
    floor=$("$BIN/loadgen" fsync "$work/fsync.probe" -r "$rate" -d "$LAT_SECS")
    log "  durable-ack floor $rate/s: $floor"
    d=$work/lat-$rate
    rport=$("$BIN/loadgen" freeport)
    write_conf "$d" '[delivery]' 'allow_networks = 127.0.0.0/8' '[endpoint.probe]' "url = http://127.0.0.1:$rport/hook"
    start_hookd "$d"
    log "latency: steady $rate/s for ${LAT_SECS}s, default configuration"
    bg out "$BIN/loadgen" steady -s "$d/hookd.sock" -e probe -r "$rate" -d "$LAT_SECS" -t "x$rate" -R "$rport" ||
      { log "steady run with receiver failed: $out"; exit 1; }
    log "  receiver steady $rate/s: $out"
    stop_pid "$HOOKD_PID"
    lat_rows+=("$rate|$out|$floor")
  done

  seed_measure
  seed_rate=$SEED_RATE
  local each="median of $DEL_ROUNDS rounds"
  row "delivery: wrk ceiling, req/s (-t1 -c64 -d${WRK_SECS}s)" "$wrk_rate" "POST post.lua body to nginx 204; $each: ${wrks[*]}"
  local fr; fr=$(median "${floors[@]}")
  row "delivery: libcurl floor, req/s (curlfloor, 64 conns)" "$fr" \
    "libcurl alone, no queue/storage/signing; $each: ${floors[*]}"
  row "delivery: ratio libcurl floor / wrk" "$(div "$fr" "$wrk_rate")" \
    "the most hookd's client library allows; issue 14 asks hookd for 0.40"
  row "delivery: libcurl floor CPU per request, us" "$(median "${floorcpu[@]}")" "$each: ${floorcpu[*]}"
  row "delivery: hookd delivered/s, 1 endpoint ($DEL_N msgs)" "$r1" \
    "default config, streamed in; $each: ${w1[*]}; last: $(kv db_delivered "$db1") delivered, $(kv db_attempts "$db1") attempts"
  ratio=$(median "${q1[@]}")
  row "delivery: ratio hookd / wrk, 1 endpoint" "$ratio" "$each (each round's own): ${q1[*]}; $(verdict "$ratio" 0.40)"
  row "delivery: ratio hookd / libcurl floor, 1 endpoint" "$(median "${qf1[@]}")" "$each: ${qf1[*]}"
  row "delivery: hookd CPU per message, us, 1 endpoint" "$c1" \
    "all threads: enqueue + claim + HTTP + result; $each: ${cpu1[*]}"
  row "delivery: hookd peak RSS, MiB, 1 endpoint" "$(mib "$m1")" "highest round; $(verdict_le "$(mib "$m1")" 32)"
  row "delivery: hookd delivered/s, 100 endpoints, one host" "$r100" \
    "default config; $each: ${w100[*]}; last: $(kv db_delivered "$db100") delivered, $(kv db_attempts "$db100") attempts"
  ratio=$(median "${q100[@]}")
  row "delivery: ratio hookd / wrk, 100 endpoints" "$ratio" "$each: ${q100[*]}; $(verdict "$ratio" 0.40)"
  row "delivery: ratio hookd / libcurl floor, 100 endpoints" "$(median "${qf100[@]}")" "$each: ${qf100[*]}"
  row "delivery: hookd CPU per message, us, 100 endpoints" "$c100" "$each: ${cpu100[*]}"
  row "delivery: hookd peak RSS, MiB, 100 endpoints" "$(mib "$m100")" "highest round; $(verdict_le "$(mib "$m100")" 32)"
  local dr; dr=$(median "${drains[@]}")
  row "delivery: hookd delivered/s, preloaded then resumed" "$dr" \
    "resume to last delivered_at; the seed's own method (rows first, then workers); $each: ${drains[*]}"
  if [ -n "$seed_rate" ]; then
    row "delivery: seed-postgres delivered/s (N=$SEED_N K=$SEED_K)" "$seed_rate" "rows preloaded, then K workers"
    ratio=$(div "$dr" "$seed_rate")
    row "delivery: ratio hookd / seed (same method)" "$ratio" "$(verdict "$ratio" 150)"
    ratio=$(div "$r1" "$seed_rate")
    row "delivery: ratio hookd streamed / seed" "$ratio" "hookd also doing the enqueues; $(verdict "$ratio" 150)"
  elif [ "$SEED" != 0 ]; then
    row "delivery: seed-postgres" "FAILED" "see the log above"
  else
    row "delivery: seed-postgres" "skipped" "BENCH_SEED=0"
  fi
  local lr out p50 p99 floor
  for lr in "${lat_rows[@]}"; do
    IFS='|' read -r rate out floor <<<"$lr"
    p50=$(kv arrive_p50_us "$out") p99=$(kv arrive_p99_us "$out")
    row "latency @${rate}/s: enqueue->first attempt p50/p99 ms" \
      "$(awk -v a="$p50" -v b="$p99" 'BEGIN { printf "%.1f/%.1f", a / 1000, b / 1000 }')" \
      "exact send->arrival, $(kv arrived "$out") arrived, acks $(kv acks "$out"); $(awk -v p="$p99" 'BEGIN { if (p != "" && p + 0 < 5000) print "target p99 < 5: PASS"; else print "target p99 < 5: FAIL" }')"
    row "latency @${rate}/s: the disk's durable-ack floor p50/p99 ms" \
      "$(awk -v a="$(kv floor_p50_us "$floor")" -v b="$(kv floor_p99_us "$floor")" 'BEGIN { printf "%.1f/%.1f", a / 1000, b / 1000 }')" \
      "ideal group commit, fdatasync only, same rate just before; $(kv stall_ms "$floor") ms in fdatasyncs > 5 ms"
  done
  row "disk: fdatasync p50/p99 ms (4 KiB appends)" \
    "$(awk -v a="$(kv fsync_p50_us "$fs")" -v b="$(kv fsync_p99_us "$fs")" 'BEGIN { printf "%.1f/%.1f", a / 1000, b / 1000 }')" \
    "floor of every synchronous=full commit"
}

# The storage floor: what SQLite alone costs per delivered message.
# rawcycle links hookd's store module (no daemon, one thread) and runs the
# life of DEL_N messages in the writer's batch shapes: enqueued 1000 a
# durable transaction, then drained in rounds that settle what the last
# one claimed and claim more, in the shapes hookd's writer showed while
# 20,000 messages were streamed in natively (wshape.so counted commits and
# statements): about 27 rows a round in one claim with one endpoint, about
# 270 a round in claims of about 11 rows with 100 endpoints. CPU (user +
# system) per message, the median of DEL_ROUNDS runs each; the phases of
# the median run in the notes. The
# difference between hookd's CPU per message and the libcurl floor's per
# request, less this, is hookd's own overhead.
bench_storage_floor() {
  local rr k out d tot1=() tot100=() ph1=() ph100=() i m lines
  for rr in $(seq "$DEL_ROUNDS"); do
    for k in 1 100; do
      d=$work/floor-$k
      mapfile -t lines < <(ep_lines 9 "$k" 'paused = yes')
      write_conf "$d" '[delivery]' 'allow_networks = 127.0.0.0/8' "${lines[@]}"
      if [ "$k" = 1 ]; then set -- -b 27 -p 64; else set -- -b 274 -p 11; fi
      bg out "$BIN/rawcycle" -c "$d/hookd.ini" -n "$DEL_N" -w 200 -E 1000 "$@" -t "f$rr" ||
        { log "rawcycle failed: $out"; row "storage floor: SQLite alone, us per message" "FAILED" "rawcycle, $k endpoint(s)"; return 0; }
      log "  storage floor round $rr, $k endpoint(s): $(tr '\n' ' ' <<<"$out")"
      rm -f "$d"/hookd.db*
      m="$(kv floor_us_total "$out") enqueue $(kv floor_us_enqueue "$out"), claim $(kv floor_us_claim "$out"), settle $(kv floor_us_settle "$out"), commit $(kv floor_us_commit "$out"), checkpoint $(kv floor_us_checkpoint "$out")"
      if [ "$k" = 1 ]; then tot1+=("$(kv floor_us_total "$out")") ph1+=("$m"); else tot100+=("$(kv floor_us_total "$out")") ph100+=("$m"); fi
    done
  done
  local med1 med100 p1='' p100=''
  med1=$(median "${tot1[@]}") med100=$(median "${tot100[@]}")
  for i in "${ph1[@]}"; do [ "${i%% *}" = "$med1" ] && p1=${i#* } && break; done
  for i in "${ph100[@]}"; do [ "${i%% *}" = "$med100" ] && p100=${i#* } && break; done
  row "storage floor: SQLite alone, us per message" "$med1 | $med100" \
    "1 | 100 endpoints; rawcycle (hookd's store, no daemon), $DEL_N msgs, median of $DEL_ROUNDS: ${tot1[*]} | ${tot100[*]}; 1 endpoint: $p1; 100: $p100"
}

# The seed design's rate, measured once per run (delivery and postgres
# both compare with it); sets SEED_RATE ("" when skipped or failed).
SEED_RATE= SEED_DONE=
seed_measure() {
  local seed_line
  [ -z "$SEED_DONE" ] || return 0
  SEED_DONE=1
  [ "$SEED" != 0 ] || return 0
  log "seed design, N=$SEED_N K=$SEED_K (slow by design)"
  "$SHARED/peers/seed-postgres/run.sh" "$SEED_N" "$SEED_K" "$("$BIN/loadgen" freeport)" >"$work/seed.out" 2>&1 &
  seed_pid=$!
  wait "$seed_pid" || { cat "$work/seed.out" >&2; log "seed run failed"; }
  seed_pid=
  seed_line=$(grep '^seed-postgres delivered' "$work/seed.out" || true)
  log "  $seed_line"
  SEED_RATE=$(sed -n 's/.*= \([0-9.]*\)\/s.*/\1/p' <<<"$seed_line")
}

# ---- 4. hookd on PostgreSQL ----
# One node on a private cluster with PostgreSQL's durable defaults
# (tests/pg/cluster.sh, HOOKD_PG_DURABLE=1), nginx as the receiver; the
# seed design runs on the same PostgreSQL build and settings.
# pg_rate CONNINFO T0_MS: wait (the database's own count, polled) until
# DEL_N are delivered, then print delivered/s from T0 to the last one
pg_rate() {
  local ci=$1 t0=$2 n=0
  while [ "$n" -lt "$DEL_N" ]; do
    sleep 0.2
    n=$(psql "$ci" -AtX -c "SELECT count(*) FROM hookd_queue WHERE status = 'delivered'")
    [ $(( $(date +%s%3N) - t0 )) -lt 600000 ] || { log "  WARNING: only $n delivered after 600 s"; break; }
  done
  psql "$ci" -AtX -c "SELECT round($n / (extract(epoch FROM max(delivered_at)) - $t0 / 1000.0)) FROM hookd_queue WHERE status = 'delivered'"
}
bench_postgres() {
  local port ci d out t0 rate dr cpu rss ratio lines
  # in /tmp: the cluster's user must reach it ($work is private)
  pg_dir=$(mktemp -d /tmp/hookd-bench-pg.XXXXXX)
  ci=$(HOOKD_PG_DURABLE=1 "$root/tests/pg/cluster.sh" start "$pg_dir")
  port=$("$BIN/loadgen" freeport)
  nginx_dirs+=("$work/nginx-pg")
  "$SHARED/bench/receiver-nginx.sh" start "$port" "$work/nginx-pg" >&2

  # the seed's method: rows first (endpoint paused), then delivery alone
  log "postgres: $DEL_N messages preloaded (endpoint paused), then resumed"
  d=$work/pg-drain
  psql "$ci" -qAtX -c "CREATE DATABASE drain" >/dev/null
  write_conf "$d" '[storage]' 'backend = postgres' '[postgres]' "conninfo = ${ci/dbname=postgres/dbname=drain}" \
    '[delivery]' 'allow_networks = 127.0.0.0/8' '[endpoint.nginx]' "url = http://127.0.0.1:$port/hook" 'paused = yes'
  start_hookd "$d"
  bg out "$BIN/loadgen" enqueue -s "$d/hookd.sock" -e nginx -c 4 -n "$DEL_N" -w 1000 -t pgp ||
    { log "enqueue failed: $out"; exit 1; }
  log "  enqueue: $out"
  local erate; erate=$(kv enqueue_rate "$out")
  t0=$(date +%s%3N)
  "$HOOKD" resume nginx -s "$d/hookd.sock" >/dev/null
  dr=$(pg_rate "${ci/dbname=postgres/dbname=drain}" "$t0")
  cpu=$(cpu_s "$HOOKD_PID") rss=$(peak_rss_kb "$HOOKD_PID")
  log "  drained: $dr/s; hookd cpu ${cpu}s; threads: $(thread_cpu "$HOOKD_PID")"
  stop_pid "$HOOKD_PID"

  # streamed: enqueues and deliveries at once, as in the delivery section,
  # to 1 endpoint and to 100 on the same host
  local k rates=() scpus=()
  for k in 1 100; do
    log "postgres: $DEL_N messages streamed in, $k endpoint(s)"
    d=$work/pg-stream$k
    psql "$ci" -qAtX -c "CREATE DATABASE stream$k" >/dev/null
    local eflag=(-e nginx) cik=${ci/dbname=postgres/dbname=stream$k}
    [ "$k" = 1 ] || eflag=(-e nginx -E "$k")
    mapfile -t lines < <(ep_lines "$port" "$k")
    write_conf "$d" '[storage]' 'backend = postgres' '[postgres]' "conninfo = $cik" \
      '[delivery]' 'allow_networks = 127.0.0.0/8' "${lines[@]}"
    start_hookd "$d"
    bg out "$BIN/loadgen" enqueue -s "$d/hookd.sock" "${eflag[@]}" -c 4 -n "$DEL_N" -w 1000 -t "pgs$k" ||
      { log "enqueue failed: $out"; exit 1; }
    rate=$(pg_rate "$cik" "$(kv first_send_ms "$out")")
    rates+=("$rate") scpus+=("$(per_msg_us "$(cpu_s "$HOOKD_PID")" "$DEL_N")")
    log "  streamed ($k): $rate/s; threads: $(thread_cpu "$HOOKD_PID")"
    stop_pid "$HOOKD_PID"
  done
  "$SHARED/bench/receiver-nginx.sh" stop "$work/nginx-pg"
  "$root/tests/pg/cluster.sh" stop "$pg_dir"
  pg_dir=

  seed_measure
  row "postgres: enqueue/s, 1 node" "$erate" "4 connections, window 1000, paused endpoint, durable commits"
  row "postgres: delivered/s, preloaded then resumed" "$dr" "1 node, default config; the seed's method"
  row "postgres: delivered/s, streamed in, 1 endpoint" "${rates[0]}" "enqueues and deliveries at once; ${scpus[0]} us CPU/msg"
  row "postgres: delivered/s, streamed in, 100 endpoints" "${rates[1]}" "one nginx; ${scpus[1]} us CPU/msg"
  row "postgres: hookd CPU per message, us, preloaded" "$(per_msg_us "$cpu" "$DEL_N")" "peak RSS $(mib "$rss") MiB"
  if [ -n "$SEED_RATE" ]; then
    ratio=$(div "$dr" "$SEED_RATE")
    row "postgres: ratio hookd on PostgreSQL / seed (same method)" "$ratio" \
      "seed $SEED_RATE/s (N=$SEED_N K=$SEED_K); $(verdict "$ratio" 30)"
  else
    row "postgres: ratio hookd / seed" "skipped" "BENCH_SEED=0 or the seed run failed"
  fi
}

# ---- 3. many endpoints ----
# NEPS endpoints defined in the INI file; SCALE_PORT is closed (refused
# connections), so the retry run's endpoints all fail
bench_scale() {
  local d out r best1=0 bestn=0 cpu t0 t1 list_ms port rss lines
  port=$("$BIN/loadgen" freeport)   # nothing listens there: connections are refused
  log "scale: enqueue to 1 endpoint vs $SCALE_NEPS endpoints (paused), $ENQ_N each, $ENQ_ROUNDS rounds"
  for r in $(seq "$ENQ_ROUNDS"); do
    d=$work/scale1-$r
    write_conf "$d" '[endpoint.sink]' 'url = http://127.0.0.1:9/hook' 'paused = yes'
    start_hookd "$d"
    bg out "$BIN/loadgen" enqueue -s "$d/hookd.sock" -e sink -c "$ENQ_CONNS" -n "$ENQ_N" -w "$ENQ_WINDOW" -t "s$r" ||
      { log "enqueue failed: $out"; exit 1; }
    log "  round $r, 1 endpoint: $out"
    stop_pid "$HOOKD_PID"
    awk -v a="$(kv enqueue_rate "$out")" -v b="$best1" 'BEGIN { exit !(a > b) }' && best1=$(kv enqueue_rate "$out")
    rm -rf "$d"
    d=$work/scalen-$r
    mkdir -p "$d"
    awk -v n="$SCALE_NEPS" 'BEGIN { for (i = 0; i < n; i++) printf "[endpoint.ep%d]\nurl = http://127.0.0.1:9/hook/%d\npaused = yes\n", i, i }' >"$d/eps.ini"
    mapfile -t lines <"$d/eps.ini"
    write_conf "$d" "${lines[@]}"
    start_hookd "$d"
    bg out "$BIN/loadgen" enqueue -s "$d/hookd.sock" -e ep -E "$SCALE_NEPS" -c "$ENQ_CONNS" -n "$ENQ_N" -w "$ENQ_WINDOW" -t "n$r" ||
      { log "enqueue failed: $out"; exit 1; }
    log "  round $r, $SCALE_NEPS endpoints: $out"
    awk -v a="$(kv enqueue_rate "$out")" -v b="$bestn" 'BEGIN { exit !(a > b) }' && bestn=$(kv enqueue_rate "$out")
    if [ "$r" = 1 ]; then
      t0=$(date +%s%N)
      "$HOOKD" endpoints -s "$d/hookd.sock" --json >"$work/endpoints.json"
      t1=$(date +%s%N)
      list_ms=$(( (t1 - t0) / 1000000 ))
      log "  hookd endpoints with $SCALE_NEPS endpoints and $ENQ_N queued: $list_ms ms, $(wc -c <"$work/endpoints.json") bytes"
    fi
    stop_pid "$HOOKD_PID"
    rm -rf "$d"
  done

  # one endpoint per affiliate, created at run time (issue: 50,000 must
  # work, list in under a second, cost kilobytes each)
  local rss0 rss1 put_out list_json_ms list_text_ms per_ep
  log "scale: $PUT_NEPS postback endpoints created through endpoint.put"
  d=$work/putmany
  write_conf "$d"
  start_hookd "$d"
  rss0=$(awk '/^VmRSS:/ { print $2 }' "/proc/$HOOKD_PID/status")
  put_out=$(python3 "$here/putmany.py" "$d/hookd.sock" "$PUT_NEPS") || { log "endpoint.put failed: $put_out"; exit 1; }
  rss1=$(awk '/^VmRSS:/ { print $2 }' "/proc/$HOOKD_PID/status")
  t0=$(date +%s%N); "$HOOKD" endpoints -s "$d/hookd.sock" --json >"$work/put-endpoints.json"; t1=$(date +%s%N)
  list_json_ms=$(( (t1 - t0) / 1000000 ))
  t0=$(date +%s%N); "$HOOKD" endpoints -s "$d/hookd.sock" >"$work/put-endpoints.txt"; t1=$(date +%s%N)
  list_text_ms=$(( (t1 - t0) / 1000000 ))
  per_ep=$(awk -v a="$rss0" -v b="$rss1" -v n="$PUT_NEPS" 'BEGIN { printf "%.2f", (b - a) / n }')
  log "  $put_out rss_before_kb=$rss0 rss_after_kb=$rss1 list_json_ms=$list_json_ms list_text_ms=$list_text_ms"
  stop_pid "$HOOKD_PID"
  rm -rf "$d"

  log "scale: $SCALE_MSGS messages over $SCALE_NEPS endpoints that refuse connections, retrying for ${SCALE_SECS}s"
  d=$work/scalefail
  mkdir -p "$d"
  awk -v n="$SCALE_NEPS" -v p="$port" 'BEGIN { for (i = 0; i < n; i++) printf "[endpoint.ep%d]\nurl = http://127.0.0.1:%d/hook/%d\n", i, p, i }' >"$d/eps.ini"
  mapfile -t lines <"$d/eps.ini"
  write_conf "$d" '[delivery]' 'allow_networks = 127.0.0.0/8' "${lines[@]}"
  sed -i 's/^level = warn$/level = info/' "$d/hookd.ini"
  start_hookd "$d"
  bg out "$BIN/loadgen" enqueue -s "$d/hookd.sock" -e ep -E "$SCALE_NEPS" -c "$ENQ_CONNS" -n "$SCALE_MSGS" -w "$ENQ_WINDOW" -t f ||
    { log "enqueue failed: $out"; exit 1; }
  log "  enqueued: $out"
  local frate; frate=$(kv enqueue_rate "$out")
  # a fixed observation period is what this measures: memory while the
  # endpoints keep failing and their breakers trip and probe
  sleep "$SCALE_SECS"
  rss=$(peak_rss_kb "$HOOKD_PID")
  cpu=$(cpu_s "$HOOKD_PID")
  # search over that queue: an event id from its index, an endpoint and a
  # payload condition that no row meets (the walk reads its whole bound)
  local eid s_eid s_ep s_where
  eid=$("$HOOKD" messages -s "$d/hookd.sock" --limit 1 --ndjson | python3 -c 'import json,sys; print(json.loads(sys.stdin.readline())["event_id"])')
  t0=$(date +%s%N); "$HOOKD" messages -s "$d/hookd.sock" --event-id "$eid" --json >/dev/null; t1=$(date +%s%N)
  s_eid=$(( (t1 - t0) / 1000000 ))
  t0=$(date +%s%N); "$HOOKD" messages -s "$d/hookd.sock" --endpoint ep7 --json >/dev/null; t1=$(date +%s%N)
  s_ep=$(( (t1 - t0) / 1000000 ))
  t0=$(date +%s%N); "$HOOKD" messages -s "$d/hookd.sock" --where no.such.field=1 --json >/dev/null; t1=$(date +%s%N)
  s_where=$(( (t1 - t0) / 1000000 ))
  log "  search: event_id_ms=$s_eid endpoint_ms=$s_ep where_ms=$s_where"
  stop_pid "$HOOKD_PID"
  local nlines ntrans nsum
  nlines=$(grep -vc 'event=endpoint_added ' "$d/hookd.log" || true)
  ntrans=$(grep -c 'event=breaker_transition ' "$d/hookd.log" || true)
  nsum=$(grep -c 'event=breaker_transitions ' "$d/hookd.log" || true)
  local att; att=$("$BIN/dbreport" delivery "$d/hookd.db" 0 || true)
  log "  after ${SCALE_SECS}s: rss_kb=$rss cpu_s=$cpu log_lines=$nlines transition_lines=$ntrans summaries=$nsum db: $att"
  rm -rf "$d"

  local ratio; ratio=$(div "$bestn" "$best1")
  row "scale: enqueue/s, 1 endpoint (best of $ENQ_ROUNDS)" "$best1" "paused endpoint, $ENQ_N enqueues"
  row "scale: enqueue/s, $SCALE_NEPS endpoints (best of $ENQ_ROUNDS)" "$bestn" "round robin over them"
  row "scale: ratio $SCALE_NEPS endpoints / 1" "$ratio" "$(verdict "$ratio" 0.80)"
  row "scale: hookd endpoints, $SCALE_NEPS endpoints, ms" "$list_ms" \
    "with $ENQ_N queued; $(awk -v m="$list_ms" 'BEGIN { if (m + 0 < 1000) print "target < 1000: PASS"; else print "target < 1000: FAIL" }')"
  row "scale: endpoint.put/s, $PUT_NEPS postback endpoints" "$(kv put_rate "$put_out")" "pipelined, one admin connection"
  row "scale: RSS growth per endpoint, KiB" "$per_ep" "$(mib "$rss0") -> $(mib "$rss1") MiB for $PUT_NEPS endpoints"
  row "scale: hookd endpoints --json, $PUT_NEPS endpoints, ms" "$list_json_ms" "$(verdict_le "$list_json_ms" 1000)"
  row "scale: hookd endpoints (table), $PUT_NEPS endpoints, ms" "$list_text_ms" "$(verdict_le "$list_text_ms" 1000)"
  row "scale: peak RSS, MiB, $SCALE_MSGS queued over $SCALE_NEPS failing endpoints" "$(mib "$rss")" \
    "enqueued at $frate/s, then ${SCALE_SECS}s of retries; $(verdict_le "$(mib "$rss")" 64)"
  row "scale: log lines in that run" "$nlines" "besides start-up's endpoint_added; $ntrans breaker_transition lines, $nsum summaries"
  row "scale: hookd messages --event-id, $SCALE_MSGS rows, ms" "$s_eid" "idx_queue_event; $(verdict_le "$s_eid" 50)"
  row "scale: hookd messages --endpoint (1 of $SCALE_NEPS), $SCALE_MSGS rows, ms" "$s_ep" "newest first, 100 rows"
  row "scale: hookd messages --where, no match, ms" "$s_where" "reads its bound: 100000 rows with payloads"
}

# ---- 4b. search over a large queue ----
# SEARCH_ROWS rows over SEARCH_NEPS endpoints and 30 days (searchdb.c:
# the spread, statuses, event ids, payloads), in a database hookd created
# itself; then hookd serves it (endpoints paused, retention longer than
# the rows' age, no check at start) and search.py times the messages
# admin op, SEARCH_REPS queries of each kind. BENCH_SEARCH_DIR=DIR keeps
# the database in DIR and reuses it when it already holds SEARCH_ROWS rows
# (building 10M rows takes minutes and about 3 GB).
bench_search() {
  local d=${SEARCH_DIR:-$work/search} have=0 out gen lines first last line kind med max comp
  mkdir -p "$d"
  awk -v n="$SEARCH_NEPS" 'BEGIN { for (i = 0; i < n; i++) printf "[endpoint.ep%d]\nurl = http://127.0.0.1:9/hook/%d\npaused = yes\n", i, i }' >"$d/eps.ini"
  mapfile -t lines <"$d/eps.ini"
  write_conf "$d" '[storage]' 'check_at_start = off' '[retention]' 'delivered = 3650d' 'dead_letter = 3650d' \
    "${lines[@]}"
  if [ -f "$d/hookd.db" ] && [ -f "$d/searchdb.out" ] &&
     [ "$(kv rows "$(cat "$d/searchdb.out")")" = "$SEARCH_ROWS" ]; then
    have=1
    log "search: reusing $d/hookd.db ($(cat "$d/searchdb.out"))"
  fi
  if [ $have = 0 ]; then
    rm -f "$d/hookd.db" "$d/hookd.db-wal" "$d/hookd.db-shm"
    start_hookd "$d"       # creates the database and its endpoints
    stop_pid "$HOOKD_PID"
    log "search: inserting $SEARCH_ROWS rows over $SEARCH_NEPS endpoints and 30 days"
    bg gen "$BIN/searchdb" -d "$d/hookd.db" -n "$SEARCH_ROWS" || { log "searchdb failed: $gen"; exit 1; }
    echo "$gen" >"$d/searchdb.out"
    log "  $gen"
  fi
  gen=$(cat "$d/searchdb.out")
  first=$(kv first_ms "$gen"); last=$(kv last_ms "$gen")
  start_hookd "$d"
  bg out python3 "$here/search.py" "$d/hookd.sock" "$first" "$last" "$SEARCH_ROWS" "$SEARCH_NEPS" "$SEARCH_REPS" ||
    { log "search.py failed: $out"; exit 1; }
  stop_pid "$HOOKD_PID"
  [ -n "$SEARCH_DIR" ] || rm -rf "$d"
  log "  search over $SEARCH_ROWS rows, $SEARCH_REPS queries each:"
  row "search: rows, endpoints (30 days)" "$SEARCH_ROWS" "$SEARCH_NEPS endpoints; $SEARCH_REPS queries of each kind"
  while read -r line; do
    log "    $line"
    kind=$(kv kind "$line"); med=$(kv median_ms "$line"); max=$(kv max_ms "$line")
    comp=$(kv complete "$line")
    # a walk's cost is reported (its bound is what holds it), an index's is held to 50 ms
    if [ "$(kv walk "$line")" = 1 ]; then
      row "search: $kind, ms (median/worst)" "$med/$max" \
        "walk: read $(kv scanned "$line") rows, answered in full $comp"
    else
      row "search: $kind, ms (median/worst)" "$med/$max" "answered in full $comp; $(verdict_le "$max" 50)"
    fi
  done <<<"$out"
}

# ---- 5. several nodes on one PostgreSQL ----
# A receiver that answers every request after 50 ms (nginx with the echo
# module's echo_sleep: no thread per request), so delivery is bound by
# latency and concurrency, not CPU. CL_EPS endpoints on it (their in-flight
# caps, shared out among the nodes, do not bind); each node may have
# CL_INFLIGHT requests out ([delivery] max_in_flight_total), the same for
# one node and for two. CL_N messages streamed in, spread over the nodes.
slow_receiver() {  # slow_receiver PORT DIR
  local port=$1 dir=$2
  mkdir -p "$dir/logs" "$dir/tmp"
  cat >"$dir/nginx.conf" <<CONF
load_module /usr/lib/nginx/modules/ngx_http_echo_module.so;
worker_processes 1;
pid $dir/nginx.pid;
error_log $dir/logs/error.log warn;
events { worker_connections 8192; }
http {
  access_log off;
  client_body_temp_path $dir/tmp;
  keepalive_requests 1000000;
  keepalive_timeout 65s;
  server {
    listen 127.0.0.1:$port reuseport backlog=4096;
    location / { echo_read_request_body; echo_sleep 0.05; echo ok; }
  }
}
CONF
  nginx -c "$dir/nginx.conf" -p "$dir" -e "$dir/logs/error.log"
  nginx_dirs+=("$dir")
}
bench_cluster() {
  local port ci n i d cin t0 rates=() cpus=() pids lines outs
  pg_dir=$(mktemp -d /tmp/hookd-bench-pg.XXXXXX)
  ci=$(HOOKD_PG_DURABLE=1 "$root/tests/pg/cluster.sh" start "$pg_dir")
  port=$("$BIN/loadgen" freeport)
  slow_receiver "$port" "$work/nginx-slow"
  mapfile -t lines < <(ep_lines "$port" "$CL_EPS")
  for n in 1 2; do
    log "cluster: $CL_N messages streamed into $n node(s), $CL_EPS endpoints answering after 50 ms, $CL_INFLIGHT in flight per node"
    cin=${ci/dbname=postgres/dbname=cluster$n}
    psql "$ci" -qAtX -c "CREATE DATABASE cluster$n" >/dev/null
    pids=()
    for i in $(seq "$n"); do
      d=$work/cl$n-$i
      write_conf "$d" '[storage]' 'backend = postgres' '[postgres]' "conninfo = $cin" "node_name = n$i" \
        '[delivery]' 'allow_networks = 127.0.0.0/8' "max_in_flight_total = $CL_INFLIGHT" "${lines[@]}"
      start_hookd "$d"
      pids+=("$HOOKD_PID")
    done
    t0=$(date +%s%3N)
    outs=()
    for i in $(seq "$n"); do
      "$BIN/loadgen" enqueue -s "$work/cl$n-$i/hookd.sock" -e nginx -E "$CL_EPS" -c 2 -n $((CL_N / n)) -w 500 \
        -t "cl$n-$i" >"$work/cl$n-$i.out" &
      outs+=($!)
    done
    for i in "${outs[@]}"; do wait "$i" || { log "enqueue failed"; exit 1; }; done
    rates+=("$(DEL_N=$CL_N pg_rate "$cin" "$t0")")
    local c=0
    for i in "${pids[@]}"; do c=$(awk -v a="$c" -v b="$(cpu_s "$i")" 'BEGIN { printf "%.2f", a + b }'); done
    cpus+=("$(per_msg_us "$c" "$CL_N")")
    log "  $n node(s): ${rates[-1]} delivered/s; hookd CPU ${cpus[-1]} us/msg over the nodes"
    for i in "${pids[@]}"; do stop_pid "$i"; done
  done
  "$SHARED/bench/receiver-nginx.sh" stop "$work/nginx-slow"
  "$root/tests/pg/cluster.sh" stop "$pg_dir"
  pg_dir=
  local ratio; ratio=$(div "${rates[1]}" "${rates[0]}")
  row "cluster: delivered/s, 1 node, receiver answers in 50 ms" "${rates[0]}" \
    "$CL_EPS endpoints, max_in_flight_total = $CL_INFLIGHT; ${cpus[0]} us CPU/msg"
  row "cluster: delivered/s, 2 nodes, same database and receiver" "${rates[1]}" \
    "the same per node; ${cpus[1]} us CPU/msg over both"
  row "cluster: ratio 2 nodes / 1 node" "$ratio" "$(verdict "$ratio" 1.7)"
}

case "$what" in all|enqueue) bench_enqueue; bench_filter_hook;; esac
case "$what" in all|delivery) bench_delivery;; esac
case "$what" in all|scale) bench_scale;; esac
case "$what" in all|scale|search) bench_search;; esac
case "$what" in all|postgres) bench_postgres;; esac
case "$what" in all|cluster) bench_cluster;; esac
# shellcheck source=tests/bench/egress.sh
. "$here/egress.sh"
case "$what" in all|egress) bench_egress;; esac
case "$what" in all|delivery|egress) bench_storage_floor;; esac

{
  echo "hookd benchmark ($what) $(date -u +%Y-%m-%dT%H:%M:%SZ) rev $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo '?')" \
    "on $(nproc) cores, $(uname -r)"
  printf '%-58s %14s   %s\n' "measure" "value" "notes"
  cat "$rows"
} | tee "$RESULTS"

# The verdicts are the exit status: a FAIL, or a measure that did not run
# (FAILED, skipped), fails the run.
bad=$(grep -E ': FAIL|[[:space:]](FAILED|skipped)[[:space:]]' "$rows" || true)
if [ -n "$bad" ]; then
  printf 'bench: %s row(s) failed or did not run:\n%s\n' "$(printf '%s\n' "$bad" | wc -l)" "$bad" >&2
  exit 1
fi

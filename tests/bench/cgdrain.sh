#!/usr/bin/env bash
# tests/bench/cgdrain.sh - hookd's own work per delivered message, counted
# in instructions (valgrind's callgrind) or syscalls (strace -c), which a
# shared, noisy machine does not move the way it moves wall-clock rates.
#
#   tests/bench/cgdrain.sh [-m cg|strace] [-b HOOKD] [-p http|https|reconnect] [-k K] [-n N] [-w W] [-s] [-f] [-E]
#
# N messages (default 3000) are enqueued to K endpoints (default 1) that
# start paused; the count starts, the endpoints are resumed, the queue
# drains to a local nginx answering 204; the count stops. Only the drain
# is counted: claim, request, settle, their commits. -w W: W messages
# are delivered first, uncounted, so the keep-alive connections (and
# their TLS handshakes) are open before the count starts. -p reconnect: HTTPS
# to an nginx that closes every connection (a resumed TLS session per
# message, the many-hosts case). -s: hookd's and the floor's ca_file is the
# system CA bundle plus the test CA (what a deployment trusts; the cost of
# loading the trust store shows) instead of the test CA alone. -f: the
# libcurl floor too (curlfloor,
# same URL: the difference of an N and a 2N run, so its start-up cancels).
# -E: count the enqueue of the N messages instead (socket, intake, the
# writer's inserts and their commits; -m cg only), and stop there.
# Prints key=value lines: instructions (or each syscall) per message, in
# total and per thread function (writer_main, dthread_main, ...).
# Needs: valgrind, strace, nginx, openssl; `make bench-tools` built.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
BIN=${BENCH_BIN:-$root/build/bench}
mode=cg hookd=$root/build/hookd proto=http k=1 n=3000 w=0 floor=0 sysca=0 enq=0
while getopts "m:b:p:k:n:w:sfE" o; do
  case $o in
  m) mode=$OPTARG;; b) hookd=$OPTARG;; p) proto=$OPTARG;; k) k=$OPTARG;; n) n=$OPTARG;; w) w=$OPTARG;; s) sysca=1;; f) floor=1;; E) enq=1;;
  *) sed -n '2,'"$(grep -n '^set -euo' "$0" | cut -d: -f1)"'p' "$0" | sed '$d' >&2; exit 2;;
  esac
done
case $mode in cg|strace) ;; *) echo "-m cg or strace" >&2; exit 2;; esac
[ "$enq" = 0 ] || [ "$mode" = cg ] || { echo "-E needs -m cg" >&2; exit 2; }
for t in loadgen dbreport curlfloor; do
  [ -x "$BIN/$t" ] || { echo "$BIN/$t missing: make bench-tools" >&2; exit 2; }
done
work=$(mktemp -d "${TMPDIR:-/tmp}/cgdrain.XXXXXX")
ngx_pid= hk_pid= tr_pid=
cleanup() {
  [ -z "$tr_pid" ] || kill "$tr_pid" 2>/dev/null || true
  [ -z "$hk_pid" ] || kill "$hk_pid" 2>/dev/null || true
  [ -s "$work/ngx/nginx.pid" ] && kill "$(cat "$work/ngx/nginx.pid")" 2>/dev/null || true
  [ -n "${CGDRAIN_KEEP:-}" ] || rm -rf "$work"
}
trap cleanup EXIT

# a test CA and a server certificate for localhost
c=$work/certs; mkdir -p "$c"
openssl req -x509 -newkey rsa:2048 -nodes -keyout "$c/ca.key" -out "$c/ca.pem" -days 2 -subj /CN=cgdrain-ca \
  -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign 2>/dev/null
openssl req -newkey rsa:2048 -nodes -keyout "$c/srv.key" -out "$c/srv.csr" -subj /CN=localhost 2>/dev/null
printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\n' >"$c/srv.ext"
openssl x509 -req -in "$c/srv.csr" -CA "$c/ca.pem" -CAkey "$c/ca.key" -CAcreateserial -out "$c/srv.pem" \
  -days 2 -sha256 -extfile "$c/srv.ext" 2>/dev/null
cafile=$c/ca.pem
if [ "$sysca" = 1 ]; then
  sys=/etc/ssl/certs/ca-certificates.crt
  [ -s "$sys" ] || { echo "$sys missing (ca-certificates)" >&2; exit 2; }
  cafile=$c/trust.pem; cat "$sys" "$c/ca.pem" >"$cafile"
fi

port=$("$BIN/loadgen" freeport)
case $proto in
http) listen="listen 127.0.0.1:$port;" ka=65 url=http://127.0.0.1:$port/hook;;
https) listen="listen 127.0.0.1:$port ssl;" ka=65 url=https://localhost:$port/hook;;
reconnect) listen="listen 127.0.0.1:$port ssl;" ka=0 url=https://localhost:$port/hook;;
*) echo "-p http, https or reconnect" >&2; exit 2;;
esac
g=$work/ngx; mkdir -p "$g/logs" "$g/tmp"
cat >"$g/nginx.conf" <<CONF
worker_processes 1;
pid $g/nginx.pid;
error_log $g/logs/error.log warn;
events { worker_connections 4096; }
http {
  log_format conn '\$connection \$connection_requests \$ssl_session_reused';
  access_log $g/logs/access.log conn;
  client_body_temp_path $g/tmp;
  keepalive_requests 1000000;
  keepalive_timeout ${ka}s;
  ssl_certificate $c/srv.pem;
  ssl_certificate_key $c/srv.key;
  ssl_session_cache shared:SSL:32m;
  server { $listen location / { return 204; } }
}
CONF
nginx -c "$g/nginx.conf" -p "$g" -e "$g/logs/error.log"
for _ in $(seq 50); do [ -s "$g/nginx.pid" ] && break; sleep 0.1; done

# hookd: default configuration; a long timeout, as callgrind runs it ~50x slower
d=$work/hookd; mkdir -p "$d"
{
  printf '[storage]\npath = %s/hookd.db\nsynchronous = full\n[server]\nsocket = %s/hookd.sock\n[log]\nlevel = warn\n' "$d" "$d"
  printf '[delivery]\nallow_networks = 127.0.0.0/8, ::1/128\nca_file = %s\n' "$cafile"
  if [ "$k" = 1 ]; then printf '[endpoint.ep]\nurl = %s\ntimeout = 60s\npaused = true\n' "$url"
  else for i in $(seq 0 $((k - 1))); do printf '[endpoint.ep%d]\nurl = %s/%d\ntimeout = 60s\npaused = true\n' "$i" "$url" "$i"; done
  fi
} >"$d/hookd.ini"
if [ "$mode" = cg ]; then
  (cd "$d" && exec valgrind --tool=callgrind --callgrind-out-file="$d/cg.%p" "$hookd" serve -c "$d/hookd.ini") >"$d/log" 2>&1 &
else
  (cd "$d" && exec "$hookd" serve -c "$d/hookd.ini") >"$d/log" 2>&1 &
fi
hk_pid=$!
for _ in $(seq 600); do [ -S "$d/hookd.sock" ] && break; sleep 0.2; done
[ -S "$d/hookd.sock" ] || { cat "$d/log" >&2; echo "hookd did not start" >&2; exit 1; }
if [ "$k" = 1 ]; then eps=(ep) ef=(-e ep); else mapfile -t eps < <(seq -f 'ep%g' 0 $((k - 1))); ef=(-e ep -E "$k"); fi
if [ "$w" -gt 0 ]; then
  "$BIN/loadgen" enqueue -s "$d/hookd.sock" "${ef[@]}" -c 4 -n "$w" -w 1000 -t warm >"$work/enq" 2>&1 ||
    { cat "$work/enq" >&2; exit 1; }
  for e in "${eps[@]}"; do "$hookd" resume -s "$d/hookd.sock" "$e" >/dev/null; done
  "$BIN/dbreport" wait "$d/hookd.db" "$w" 1800 >"$work/wait" 2>&1 || { cat "$work/wait" >&2; exit 1; }
  for e in "${eps[@]}"; do "$hookd" pause -s "$d/hookd.sock" "$e" >/dev/null; done
fi
cgcount() {  # the counts since the last zeroing, per message
  callgrind_control -d "$hk_pid" >/dev/null 2>&1
  for _ in $(seq 50); do ls "$d"/cg.*.1 >/dev/null 2>&1 && break; sleep 0.2; done
  callgrind_annotate --inclusive=yes --threshold=100 "$(ls "$d"/cg.*.1)" 2>/dev/null |
    awk -v n="$n" '/PROGRAM TOTALS/ { gsub(",", "", $1); printf "hookd_ir_per_msg=%d\n", $1 / n }
      /:(writer_main|dthread_main|server_run|reader_main|sq_claim|sq_settle|sq_enqueue|sq_commit|proto_parse|curl_multi_socket_action) \[/ {
        v = $1; gsub(",", "", v); f = $0; sub(/ \[.*/, "", f); sub(/.*:/, "", f); printf "hookd_ir_%s=%d\n", f, v / n }'
}
[ "$enq" = 0 ] || callgrind_control -z "$hk_pid" >/dev/null 2>&1
"$BIN/loadgen" enqueue -s "$d/hookd.sock" "${ef[@]}" -c 4 -n "$n" -w 1000 -t cgdrain >"$work/enq" 2>&1 ||
  { cat "$work/enq" >&2; exit 1; }
if [ "$enq" = 1 ]; then
  echo "hookd_mode=cg-enqueue proto=$proto endpoints=$k messages=$n"
  cgcount
  exit 0
fi
if [ "$mode" = cg ]; then
  callgrind_control -z "$hk_pid" >/dev/null 2>&1
else
  strace -c -f -p "$hk_pid" -o "$work/strace" 2>/dev/null & tr_pid=$!
  sleep 1
fi
: >"$g/logs/access.log"
for e in "${eps[@]}"; do "$hookd" resume -s "$d/hookd.sock" "$e" >/dev/null; done
"$BIN/dbreport" wait "$d/hookd.db" $((w + n)) 1800 >"$work/wait" 2>&1 || { cat "$work/wait" >&2; exit 1; }
retries=$(sqlite3 "$d/hookd.db" "SELECT sum(attempt_count) - count(*) FROM webhook_queue" 2>/dev/null || echo "?")
conns=$(awk '$2 == 1 { n++; if ($3 == "r") r++ } END { printf "%d resumed=%d", n, r }' "$g/logs/access.log")
echo "hookd_mode=$mode proto=$proto system_ca=$sysca endpoints=$k messages=$n retries=$retries connections=$conns"
if [ "$mode" = cg ]; then
  cgcount
else
  kill -INT "$tr_pid"; wait "$tr_pid" 2>/dev/null || true; tr_pid=
  awk -v n="$n" '$4 ~ /^[0-9]+$/ && $NF != "total" && $4 / n >= 0.005 { printf "hookd_sys_%s=%.2f\n", $NF, $4 / n }' "$work/strace"
fi
kill -TERM "$hk_pid"; wait "$hk_pid" 2>/dev/null || true; hk_pid=

[ "$floor" = 1 ] || exit 0
fl() {  # fl N: the floor's instructions (or syscall counts) for N requests
  local m=$1
  if [ "$mode" = cg ]; then
    valgrind --tool=callgrind --callgrind-out-file="$work/fl.$m" "$BIN/curlfloor" "$url" -n "$m" -c 64 -C "$cafile" \
      $([ "$proto" = reconnect ] && echo -F) >/dev/null 2>&1
    callgrind_annotate "$work/fl.$m" 2>/dev/null | awk '/PROGRAM TOTALS/ { gsub(",", "", $1); print $1 }'
  else
    strace -c -f -o "$work/fl.$m" "$BIN/curlfloor" "$url" -n "$m" -c 64 -C "$cafile" \
      $([ "$proto" = reconnect ] && echo -F) >/dev/null 2>&1
    awk '$4 ~ /^[0-9]+$/ && $NF != "total" { print $NF, $4 }' "$work/fl.$m"
  fi
}
if [ "$mode" = cg ]; then
  a=$(fl "$n") b=$(fl $((2 * n)))
  echo "floor_ir_per_req=$(( (b - a) / n ))"
else
  fl "$n" >"$work/fa"; fl $((2 * n)) >"$work/fb"
  awk -v n="$n" 'NR == FNR { a[$1] = $2; next } ($2 - a[$1]) / n >= 0.005 { printf "floor_sys_%s=%.2f\n", $1, ($2 - a[$1]) / n }' "$work/fa" "$work/fb"
fi

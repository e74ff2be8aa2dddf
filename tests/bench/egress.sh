# tests/bench/egress.sh - the egress section of run.sh (sourced by it):
# the packaged static binary beside the dynamic build and the libcurl
# floor, over HTTP and HTTPS, and the many-hosts TLS run. Uses run.sh's
# helpers (write_conf, start_hookd, stop_pid, row, kv, ...).
#
# 1. Keep-alive cases: EG_N messages streamed in to 1 endpoint and to 100
#    endpoints on one host, nginx answering 204, over HTTP and over HTTPS
#    (certificate from a test CA, TLS verified, ca_file = that CA). Each
#    round measures, back to back: each build's floor (curlfloor, same URL,
#    64 connections, on the same libcurl as the build: Debian's on OpenSSL,
#    and curlfloor-static on the static build's libcurl, mbedTLS and
#    mimalloc), the dynamic build, the static build. EG_ROUNDS rounds,
#    medians reported. Then the reconnect floor: curlfloor -F, a fresh
#    connection per request with its TLS session resumed (what the
#    many-hosts case pays per message at least), trusting what the
#    many-hosts run trusts.
# 2. Many hosts: EG_HOSTS HTTPS endpoints on as many distinct loopback
#    address:port pairs (one nginx, one listen socket each, answering
#    after 20 ms), EG_MSGS rounds of one message per endpoint, EG_GAP
#    seconds apart; nginx closes idle connections after 1 s, so every
#    round reconnects. nginx's log says which connections resumed a TLS
#    session. ca_file is what a deployment trusts: the system CA bundle
#    (/etc/ssl/certs/ca-certificates.crt, ~140 CAs) plus the test CA, so
#    the cost of loading the trust store per connection shows.

EG_N=${BENCH_EG_N:-50000}
EG_ROUNDS=${BENCH_EG_ROUNDS:-3}
EG_HOSTS=${BENCH_EG_HOSTS:-1000}
EG_MSGS=${BENCH_EG_MSGS:-20}
EG_GAP=${BENCH_EG_GAP:-2}
# h2 on demand (BENCH_EG_PARTS="keepalive h2 many"): hookd speaks HTTP/1.1
# (xfer.c says why), so the case only shows it stays there
EG_PARTS=${BENCH_EG_PARTS:-keepalive many}
HOOKD_STATIC=${HOOKD_STATIC:-$root/build/static/hookd}
FLOOR_STATIC=${CURLFLOOR_STATIC:-$BIN/curlfloor-static}
TABLE_OUT=${BENCH_TABLE:-$here/README.md}

# a test CA and one server certificate for localhost, 127.0.0.1 and
# every many-hosts address (subjectAltName IP entries)
eg_certs() {  # eg_certs DIR ADDR...
  local d=$1 a san="DNS:localhost,IP:127.0.0.1"; shift
  mkdir -p "$d"
  for a in "$@"; do san="$san,IP:$a"; done
  openssl req -x509 -newkey rsa:2048 -nodes -keyout "$d/ca.key" -out "$d/ca.pem" -days 2 -subj /CN=hookd-bench-ca \
    -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign 2>/dev/null
  openssl req -newkey rsa:2048 -nodes -keyout "$d/srv.key" -out "$d/srv.csr" -subj /CN=localhost 2>/dev/null
  printf 'subjectAltName=%s\n' "$san" >"$d/srv.ext"
  openssl x509 -req -in "$d/srv.csr" -CA "$d/ca.pem" -CAkey "$d/ca.key" -CAcreateserial -out "$d/srv.pem" \
    -days 2 -sha256 -extfile "$d/srv.ext" 2>/dev/null
  # the many-hosts trust: the system bundle and the test CA
  if [ -s /etc/ssl/certs/ca-certificates.crt ]; then
    cat /etc/ssl/certs/ca-certificates.crt "$d/ca.pem" >"$d/trust.pem"
  else
    log "egress: no /etc/ssl/certs/ca-certificates.crt (ca-certificates): the many-hosts run trusts the test CA only"
    cp "$d/ca.pem" "$d/trust.pem"
  fi
}

# nginx over TLS: eg_nginx DIR LISTEN_FILE DELAY KEEPALIVE_S [LOG]
# DELAY 0: answers 204 at once; otherwise after DELAY seconds (echo module)
eg_nginx() {
  local dir=$1 listens=$2 delay=$3 ka=$4 log=${5:-}
  mkdir -p "$dir/logs" "$dir/tmp"
  {
    [ "$delay" = 0 ] || echo "load_module /usr/lib/nginx/modules/ngx_http_echo_module.so;"
    cat <<CONF
worker_processes 1;
worker_rlimit_nofile 65536;
pid $dir/nginx.pid;
error_log $dir/logs/error.log warn;
events { worker_connections 16384; }
http {
  log_format conn '\$connection \$connection_requests \$ssl_session_reused';
  $( [ -n "$log" ] && echo "access_log $dir/logs/access.log conn buffer=256k flush=1s;" || echo "access_log off;" )
  client_body_temp_path $dir/tmp;
  client_max_body_size 1m;
  keepalive_requests 1000000;
  keepalive_timeout ${ka}s;
  ssl_certificate $work/certs/srv.pem;
  ssl_certificate_key $work/certs/srv.key;
  ssl_session_cache shared:SSL:32m;
  ssl_session_timeout 10m;
  server {
$(sed 's/^/    /' "$listens")
CONF
    if [ "$delay" = 0 ]; then
      echo "    location / { return 204; }"
    else
      echo "    location / { echo_read_request_body; echo_sleep $delay; echo ok; }"
    fi
    printf '  }\n}\n'
  } >"$dir/nginx.conf"
  nginx -c "$dir/nginx.conf" -p "$dir" -e "$dir/logs/error.log"
  nginx_dirs+=("$dir")
  local n=50
  while [ ! -s "$dir/nginx.pid" ] && [ $n -gt 0 ]; do sleep 0.1; n=$((n - 1)); done
}

# nginx's log from now on: eg_log_start NGINX_DIR
eg_log_start() {
  : >"$1/logs/access.log"   # nginx appends: its next lines start the file
}
# TLS connections since eg_log_start: eg_log_conns NGINX_DIR REQUESTS sets
# L_CONNS (connections: their first request) and L_RES (of them resumed),
# once the log holds REQUESTS lines (the buffer flushes within a second)
eg_log_conns() {
  local f=$1/logs/access.log n=50
  while [ "$(wc -l <"$f")" -lt "$2" ] && [ $n -gt 0 ]; do sleep 0.1; n=$((n - 1)); done
  read -r L_CONNS L_RES < <(awk '$2 == 1 { n++; if ($3 == "r") r++ } END { print n + 0, r + 0 }' "$f")
}

# endpoint sections: eg_eps BASE_URL K (K=1: one endpoint "ep")
eg_eps() {
  local url=$1 k=$2 i
  if [ "$k" = 1 ]; then
    printf '%s\n' '[endpoint.ep]' "url = $url"
  else
    for i in $(seq 0 $((k - 1))); do printf '%s\n' "[endpoint.ep$i]" "url = $url/$i"; done
  fi
}

# eg_stream BIN TAG URL K [NGINX_DIR]: EG_N messages streamed in to K
# endpoints of one host, default configuration; sets E_RATE (delivered/s),
# E_CPU (us/msg), E_CONNS (connections nginx saw; "-" without its log)
eg_stream() {
  local bin=$1 tag=$2 url=$3 k=$4 ngx=${5:-} d out w db eflag=(-e ep) lines
  d=$work/eg-$tag
  mapfile -t lines < <(eg_eps "$url" "$k")
  write_conf "$d" '[delivery]' 'allow_networks = 127.0.0.0/8, ::1/128' "ca_file = $work/certs/ca.pem" "${lines[@]}"
  [ "$k" = 1 ] || eflag=(-e ep -E "$k")
  [ -z "$ngx" ] || eg_log_start "$ngx"
  HOOKD=$bin start_hookd "$d"
  bg out "$BIN/loadgen" enqueue -s "$d/hookd.sock" "${eflag[@]}" -c 4 -n "$EG_N" -w 1000 -t "g$tag" ||
    { log "enqueue failed: $out"; exit 1; }
  bg w "$BIN/dbreport" wait "$d/hookd.db" "$EG_N" 600 || log "  WARNING: not all delivered: $w"
  E_CPU=$(per_msg_us "$(cpu_s "$HOOKD_PID")" "$EG_N")
  stop_pid "$HOOKD_PID"
  db=$("$BIN/dbreport" delivery "$d/hookd.db" "$(kv first_send_ms "$out")") || true
  E_RATE=$(kv db_delivered_rate "$db") E_CONNS=-
  [ -z "$ngx" ] || { eg_log_conns "$ngx" "$EG_N"; E_CONNS=$L_CONNS; }
  log "  $tag: $E_RATE/s, $E_CPU us CPU/msg; $(kv db_delivered "$db") delivered, $(kv db_attempts "$db") attempts; $E_CONNS connections"
  [ "$(kv db_delivered "$db")" = "$EG_N" ] || log "  WARNING: only $(kv db_delivered "$db") of $EG_N delivered"
  rm -rf "$d"
}

# the many-hosts run for one binary: eg_many BIN TAG; sets M_CPU (us/msg
# from the first message on), M_NET (the same less what hookd spends idle
# over as long: its per-second cost measured for EG_IDLE seconds before
# the first message), M_CONNS (TLS handshakes), M_RES (of them resumed),
# M_RATE (resumed share of the reconnects: handshakes after each host's
# first), M_ATT (attempts)
EG_IDLE=${BENCH_EG_IDLE:-5}
eg_many() {
  local bin=$1 tag=$2 d r out w ngx=$work/nginx-many c0 c1 c2 t1 t2 n=$((EG_MSGS * EG_HOSTS))
  d=$work/many-$tag
  write_conf "$d" '[delivery]' 'allow_networks = 127.0.0.0/8' "ca_file = $work/certs/trust.pem" "${MANY_EPS[@]}"
  eg_log_start "$ngx"
  HOOKD=$bin start_hookd "$d"
  # a fixed period is what this measures: hookd's cost with nothing to do
  c0=$(cpu_s "$HOOKD_PID"); sleep "$EG_IDLE"; c1=$(cpu_s "$HOOKD_PID"); t1=$(date +%s%N)
  for r in $(seq "$EG_MSGS"); do
    bg out "$BIN/loadgen" enqueue -s "$d/hookd.sock" -e h -E "$EG_HOSTS" -c 1 -n "$EG_HOSTS" -w 500 -t "m$tag$r" ||
      { log "enqueue failed: $out"; exit 1; }
    # every message of the round tried once (a retry's backoff must not
    # hold the next round)
    bg w "$BIN/dbreport" wait "$d/hookd.db" $((r * EG_HOSTS)) 120 -a || log "  WARNING: round $r: not all attempted: $w"
    # the spread is what this measures: idle connections close between rounds
    [ "$r" = "$EG_MSGS" ] || sleep "$EG_GAP"
  done
  bg w "$BIN/dbreport" wait "$d/hookd.db" "$n" 120 || log "  WARNING: not all delivered: $w"
  c2=$(cpu_s "$HOOKD_PID") t2=$(date +%s%N)
  M_CPU=$(awk -v a="$c1" -v b="$c2" -v n="$n" 'BEGIN { printf "%.1f", (b - a) * 1e6 / n }')
  M_NET=$(awk -v c0="$c0" -v a="$c1" -v b="$c2" -v i="$EG_IDLE" -v w="$(( (t2 - t1) / 1000000 ))" -v n="$n" \
    'BEGIN { printf "%.1f", ((b - a) - (a - c0) / i * w / 1000) * 1e6 / n }')
  log "  idle: $(awk -v c0="$c0" -v a="$c1" -v i="$EG_IDLE" 'BEGIN { printf "%.1f", (a - c0) / i * 1000 }') ms CPU/s; run $(( (t2 - t1) / 1000000 )) ms"
  log "  threads ($tag): $(thread_cpu "$HOOKD_PID")"
  stop_pid "$HOOKD_PID"
  eg_log_conns "$ngx" $((EG_MSGS * EG_HOSTS))
  M_CONNS=$L_CONNS M_RES=$L_RES M_IDLE=$(awk -v c0="$c0" -v a="$c1" -v i="$EG_IDLE" 'BEGIN { printf "%.1f", (a - c0) / i * 1000 }')
  M_RATE=$(awk -v c="$M_CONNS" -v r="$M_RES" -v h="$EG_HOSTS" 'BEGIN { if (c > h) printf "%.3f", r / (c - h); else print "n/a" }')
  local db; db=$("$BIN/dbreport" delivery "$d/hookd.db" 0 || true)
  M_ATT=$(kv db_attempts "$db")
  log "  many hosts ($tag): $M_CPU us CPU/msg ($M_NET less idle), $M_CONNS TLS handshakes, $M_RES resumed ($M_RATE of reconnects), $M_ATT attempts; db: $db"
  rm -rf "$d"
}

bench_egress() {
  local hport sport ngx rr p k b tag url i a
  local -A rate cpu conns
  local bins=(dyn) fl bin fb
  local -A flr rfl
  command -v openssl >/dev/null || need_pkgs openssl
  if [ -x "$HOOKD_STATIC" ] && [ -x "$FLOOR_STATIC" ]; then
    bins+=(static)
  else
    log "egress: $HOOKD_STATIC or $FLOOR_STATIC missing (make static): the static columns stay empty"
  fi
  eg_certs "$work/certs"
  hport=$("$BIN/loadgen" freeport)
  nginx_dirs+=("$work/nginx-eg-http")
  "$SHARED/bench/receiver-nginx.sh" start "$hport" "$work/nginx-eg-http" >&2
  sport=$("$BIN/loadgen" freeport)
  # a name, not an address: the keep-alive cases do not depend on IP
  # certificates (the many-hosts run does)
  printf '%s\n' "listen 127.0.0.1:$sport ssl reuseport backlog=4096;" "listen [::1]:$sport ssl reuseport backlog=4096;" \
    >"$work/listen-eg"
  eg_nginx "$work/nginx-eg-https" "$work/listen-eg" 0 65 log
  case " $EG_PARTS " in *" keepalive "*) ;; *) EG_ROUNDS=0;; esac
  for rr in $(seq "$EG_ROUNDS"); do
    for p in http https; do
      for k in 1 100; do
        if [ "$p" = http ]; then url=http://127.0.0.1:$hport/hook; else url=https://localhost:$sport/hook; fi
        for b in "${bins[@]}"; do
          if [ "$b" = dyn ]; then fb=$BIN/curlfloor; else fb=$FLOOR_STATIC; fi
          bg fl "$fb" "$url" -n "$EG_N" -c 64 -C "$work/certs/ca.pem" || log "  curlfloor failed: $fl"
          log "egress round $rr, $p, $k endpoint(s): $b floor $fl"
          rate[floor$b-$p-$k]+="$(kv floor_rate "$fl") " cpu[floor$b-$p-$k]+="$(kv floor_cpu_us "$fl") "
          flr[$b]=$(kv floor_rate "$fl")
        done
        for b in "${bins[@]}"; do
          if [ "$b" = dyn ]; then bin=$HOOKD; else bin=$HOOKD_STATIC; fi
          eg_stream "$bin" "$b-$p-$k-$rr" "$url" "$k" "$([ "$p" = https ] && echo "$work/nginx-eg-https")"
          rate[$b-$p-$k]+="$E_RATE " cpu[$b-$p-$k]+="$E_CPU " conns[$b-$p-$k]+="$E_CONNS "
          rate[q$b-$p-$k]+="$(div "$E_RATE" "${flr[$b]}") "
        done
      done
    done
  done
  "$SHARED/bench/receiver-nginx.sh" stop "$work/nginx-eg-http"
  for b in "${bins[@]}"; do
    if [ "$b" = dyn ]; then fb=$BIN/curlfloor; else fb=$FLOOR_STATIC; fi
    bg fl "$fb" "https://localhost:$sport/hook" -n 2000 -c 16 -C "$work/certs/trust.pem" -F || log "  curlfloor -F failed: $fl"
    log "egress: $b reconnect floor (a resumed TLS connection per request): $fl"
    rfl[$b]=$(kv floor_cpu_us "$fl")
  done

  # HTTP/2 where the receiver offers it (ALPN): 100 endpoints over HTTPS,
  # against the same nginx with http2 on; libcurl's default asks for h2
  # (the static build has no nghttp2 and stays on HTTP/1.1)
  local h2rounds=$EG_ROUNDS
  case " $EG_PARTS " in *" h2 "*) ;; *) h2rounds=0;; esac
  if [ "$h2rounds" -gt 0 ]; then
    local h2port; h2port=$("$BIN/loadgen" freeport)
    printf '%s\n' "listen 127.0.0.1:$h2port ssl http2 reuseport backlog=4096;" \
      "listen [::1]:$h2port ssl http2 reuseport backlog=4096;" >"$work/listen-h2"
    eg_nginx "$work/nginx-eg-h2" "$work/listen-h2" 0 65 log
    for rr in $(seq "$h2rounds"); do
      for b in "${bins[@]}"; do
        if [ "$b" = dyn ]; then bin=$HOOKD; else bin=$HOOKD_STATIC; fi
        eg_stream "$bin" "$b-h2-100-$rr" "https://localhost:$h2port/hook" 100 "$work/nginx-eg-h2"
        rate[$b-h2]+="$E_RATE " cpu[$b-h2]+="$E_CPU " conns[$b-h2]+="$E_CONNS "
      done
    done
    "$SHARED/bench/receiver-nginx.sh" stop "$work/nginx-eg-h2"
  fi

  # many hosts: 100 addresses x 10 ports (EG_HOSTS pairs), one nginx
  local ports=() addrs=()
  for i in $(seq 0 9); do ports+=("$("$BIN/loadgen" freeport)"); done
  for i in $(seq 0 $((EG_HOSTS / 10 - 1))); do addrs+=("127.1.$((i / 200)).$((i % 200 + 1))"); done
  eg_certs "$work/certs" "${addrs[@]}"
  MANY_EPS=()
  : >"$work/listen-many"
  for i in $(seq 0 $((EG_HOSTS - 1))); do
    a=${addrs[$((i / 10))]} p=${ports[$((i % 10))]}
    echo "listen $a:$p ssl backlog=1024;" >>"$work/listen-many"
    MANY_EPS+=("[endpoint.h$i]" "url = https://$a:$p/hook")
  done
  "$SHARED/bench/receiver-nginx.sh" stop "$work/nginx-eg-https"
  eg_nginx "$work/nginx-many" "$work/listen-many" 0.02 1 log
  local -A mcpu mconns mres mrate mnet midle matt
  : >"$work/egress.many.md"
  case " $EG_PARTS " in *" many "*) ;; *) bins=();; esac
  for b in "${bins[@]}"; do
    if [ "$b" = dyn ]; then bin=$HOOKD; else bin=$HOOKD_STATIC; fi
    log "egress: many hosts, $b: $EG_HOSTS HTTPS endpoints on distinct address:port pairs, $EG_MSGS rounds ${EG_GAP}s apart, answers after 20 ms"
    eg_many "$bin" "$b"
    mcpu[$b]=$M_CPU mconns[$b]=$M_CONNS mres[$b]=$M_RES mrate[$b]=$M_RATE mnet[$b]=$M_NET midle[$b]=$M_IDLE matt[$b]=$M_ATT
  done
  "$SHARED/bench/receiver-nginx.sh" stop "$work/nginx-many"

  # rows: medians of the rounds, every round in the notes
  local each="median of $EG_ROUNDS" fr fc dr dc sr sc md
  : >"$work/egress.md"
  local cases="http https"
  [ "$EG_ROUNDS" -gt 0 ] || cases=
  for p in $cases; do
    for k in 1 100; do
      md="| ${p^^}, $k endpoint$([ "$k" = 1 ] || echo s)"
      for b in dyn static; do
        if [ -z "${rate[$b-$p-$k]:-}" ]; then md="$md | - | - | - | -"; continue; fi
        fr=$(median ${rate[floor$b-$p-$k]}) fc=$(median ${cpu[floor$b-$p-$k]})
        row "egress $p $k ep: $b libcurl floor req/s | CPU us/req" "$fr | $fc" "curlfloor, 64 conns; $each: ${rate[floor$b-$p-$k]}"
        md="$md | $fr/s, $fc µs"
        dr=$(median ${rate[q$b-$p-$k]}) dc=$(median ${cpu[$b-$p-$k]})
        row "egress $p $k ep: $b hookd / floor | CPU us/msg" "$dr | $dc" \
          "overhead over the floor $(awk -v a="$dc" -v b="$fc" 'BEGIN { printf "%.1f", a - b }') us; ratios ${rate[q$b-$p-$k]}; CPU ${cpu[$b-$p-$k]}; connections ${conns[$b-$p-$k]}; $(verdict "$dr" "$([ "$k" = 1 ] && echo 0.80 || echo 0.70)")"
        md="$md | $dr | $dc µs | $(awk -v a="$dc" -v b="$fc" 'BEGIN { printf "%+.1f µs", a - b }')"
      done
      if [ -n "${cpu[static-$p-$k]:-}" ]; then
        sc=$(div "$(median ${cpu[static-$p-$k]})" "$(median ${cpu[dyn-$p-$k]})")
        row "egress $p $k ep: static / dynamic CPU per message" "$sc" "$(verdict_le "$sc" 1.2)"
        md="$md | $sc |"
      else
        md="$md | - |"
      fi
      echo "$md" >>"$work/egress.md"
    done
  done
  : >"$work/egress.h2.md"
  for b in dyn static; do
    [ -n "${cpu[$b-h2]:-}" ] || continue
    row "egress h2 offered, 100 ep, $b: delivered/s | CPU us/msg" "$(median ${rate[$b-h2]}) | $(median ${cpu[$b-h2]})" \
      "HTTP/1.1-only receiver: $(median ${rate[$b-https-100]:-n/a}) | $(median ${cpu[$b-https-100]:-n/a}); connections ${conns[$b-h2]} (h1: ${conns[$b-https-100]:-})"
    echo "| HTTPS, 100 endpoints, receiver offers HTTP/2, $([ "$b" = dyn ] && echo dynamic || echo static) build | $(median ${rate[$b-h2]})/s | $(median ${cpu[$b-h2]}) µs | $(median ${conns[$b-h2]}) | $(median ${rate[$b-https-100]:-0})/s | $(median ${cpu[$b-https-100]:-0}) µs | $(median ${conns[$b-https-100]:-0}) |" >>"$work/egress.h2.md"
  done
  for b in "${bins[@]}"; do
    local ka; ka=$(median ${cpu[$b-https-1]})
    row "egress many hosts, $b: CPU us/msg | x keep-alive" "${mcpu[$b]} | $(div "${mcpu[$b]}" "$ka")" \
      "$EG_HOSTS hosts x $EG_MSGS msgs, ${matt[$b]} attempts; less idle (${midle[$b]} ms/s): ${mnet[$b]} us, $(div "${mnet[$b]}" "$ka")x; $(verdict_le "$(div "${mcpu[$b]}" "$ka")" 3)"
    row "egress $b reconnect floor: CPU us/req" "${rfl[$b]:-}" "curlfloor -F: a fresh connection per request, TLS session resumed"
    row "egress many hosts, $b: handshakes | resumed | resumed/reconnects" "${mconns[$b]} | ${mres[$b]} | ${mrate[$b]}" \
      "$(verdict "${mrate[$b]}" 0.90)"
    echo "| many hosts, $([ "$b" = dyn ] && echo dynamic || echo static) build | ${mcpu[$b]} µs per message ($(div "${mcpu[$b]}" "$ka")x its HTTPS keep-alive case); ${mnet[$b]} µs less the idle cost (${midle[$b]} ms of CPU a second) | ${rfl[$b]:--} µs | ${mconns[$b]} TLS handshakes, ${matt[$b]} attempts for $((EG_HOSTS * EG_MSGS)) messages | ${mres[$b]} resumed: ${mrate[$b]} of reconnects |" >>"$work/egress.many.md"
  done
  eg_table >"$work/table.md"
  "$here/readme-table.sh" "$TABLE_OUT" <"$work/table.md" && log "egress: table written to $TABLE_OUT"
}

# the table for tests/bench/README.md (between its bench-table markers)
eg_table() {
  echo "Measured by \`make bench\` ($(nproc) cores; $EG_N messages a run, median of $EG_ROUNDS rounds; ratios are each round's own)."
  echo
  echo "| case | dynamic build's floor (Debian's libcurl, OpenSSL): rate, CPU per request | dynamic hookd / floor | dynamic CPU per message | dynamic overhead | static build's floor (its libcurl, mbedTLS, mimalloc) | static hookd / its floor | static CPU per message | static overhead | static / dynamic CPU |"
  echo "|---|---|---|---|---|---|---|---|---|---|"
  cat "$work/egress.md"
  echo
  if [ -s "$work/egress.h2.md" ]; then
    echo "| HTTP/2 | delivered/s | CPU per message | connections | same, HTTP/1.1-only receiver: delivered/s | CPU | connections |"
    echo "|---|---|---|---|---|---|---|"
    cat "$work/egress.h2.md"
    echo
  fi
  echo "| many hosts ($EG_HOSTS HTTPS endpoints, distinct address:port, 20 ms answers, $EG_MSGS rounds ${EG_GAP} s apart, idle connections closed after 1 s; ca_file = the system CA bundle plus the test CA) | CPU | reconnect floor: a resumed TLS connection per request | TLS handshakes, attempts | resumption |"
  echo "|---|---|---|---|---|"
  cat "$work/egress.many.md"
}

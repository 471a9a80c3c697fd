#!/usr/bin/env bash
# bench/relay.sh - the latency relay is never the bottleneck: curl fetches a 1 GiB file from
# nginx on loopback directly and through build/latency-relay at 0 ms, then through the relay at
# the cloud's delay (one connection: at most --window bytes per delay), and wrk asks for a
# 100 KiB file over 64 connections through the relay at the cloud's delay. The relay's CPU
# (user+sys from /proc) is given per GB relayed.
#
# Usage: bench/relay.sh      Settings: CLOUD_DELAY_MS [15], CLOUD_WINDOW [4M].
# Results: bench/results/relay.json.
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
source "$REPO/bench/lib/nginx.sh"

DELAY="${CLOUD_DELAY_MS:-15}"
WINDOW="${CLOUD_WINDOW:-4M}"
need curl wrk nginx jq
[ -x "$RELAY_BIN" ] || die "$RELAY_BIN is missing: make build/latency-relay"
mkdir -p "$WORK/www"
head -c 1G /dev/zero >"$WORK/www/big"
head -c 102400 /dev/urandom >"$WORK/www/small"
chmod -R a+rX "$WORK/www"
nginx_static_start origin "$(free_port)" "$WORK/www" 1
ORIGIN="${NGX_URL#http://}"

relay_start() { # DELAY_MS -> RELAY_URL, RELAY_PID
    local port
    port="$(free_port)"
    "$RELAY_BIN" --listen "127.0.0.1:$port" --target "$ORIGIN" --delay-ms "$1" --window "$WINDOW" --quiet &
    RELAY_PID=$!
    bench_track "$RELAY_PID"
    RELAY_URL="http://127.0.0.1:$port"
    wait_http "$RELAY_URL/small"
}

fetch() { curl -fsS -o /dev/null -w '%{speed_download} %{time_starttransfer}' "$1"; }

cat <<EOF
== bench/relay.sh: build/latency-relay against nginx on loopback (1 worker)
EOF
printf '%-40s %10s %12s %14s\n' path "MB/s" "TTFB ms" "relay CPU s/GB"
OUT="$WORK/rows.jsonl"
: >"$OUT"
row() { # NAME MB/s TTFB_S CPU_S_PER_GB
    printf '%-40s %10.0f %12.2f %14s\n' "$1" "$2" "$(awk -v t="$3" 'BEGIN {print t * 1000}')" "$4"
    jq -nc --arg n "$1" --argjson mb "$2" --argjson t "$3" --arg cpu "$4" \
        '{path: $n, mb_per_s: $mb, ttfb_ms: ($t * 1000), relay_cpu_s_per_gb: (if $cpu == "" then null else ($cpu | tonumber) end)}' >>"$OUT"
}

fetch "$NGX_URL/big" >/dev/null # into the page cache
read -r bps ttfb <<<"$(fetch "$NGX_URL/big")"
row "curl 1 GiB, direct" "$(awk -v b="$bps" 'BEGIN {print b / 1e6}')" "$ttfb" ""

relay_start 0
c0="$(cpu_of "$RELAY_PID")"
read -r bps ttfb <<<"$(fetch "$RELAY_URL/big")"
c1="$(cpu_of "$RELAY_PID")"
row "curl 1 GiB, relay 0 ms" "$(awk -v b="$bps" 'BEGIN {print b / 1e6}')" "$ttfb" \
    "$(awk -v a="$c0" -v b="$c1" 'BEGIN {printf "%.3f", (b - a) / 1.073741824}')"
bench_stop "$RELAY_PID"

relay_start "$DELAY"
c0="$(cpu_of "$RELAY_PID")"
read -r bps ttfb <<<"$(fetch "$RELAY_URL/big")"
c1="$(cpu_of "$RELAY_PID")"
row "curl 1 GiB, relay $DELAY ms, window $WINDOW" "$(awk -v b="$bps" 'BEGIN {print b / 1e6}')" "$ttfb" \
    "$(awk -v a="$c0" -v b="$c1" 'BEGIN {printf "%.3f", (b - a) / 1.073741824}')"
c0="$(cpu_of "$RELAY_PID")"
read -r rps mbs p50 p99 n _ <<<"$(wrk_run "$RELAY_URL/small" 5 64)"
c1="$(cpu_of "$RELAY_PID")"
row "wrk -c 64 100 KiB, relay $DELAY ms" "$mbs" "$(awk -v p="$p50" 'BEGIN {print p / 1000}')" \
    "$(awk -v a="$c0" -v b="$c1" -v n="$n" 'BEGIN {printf "%.3f", (b - a) / (n * 102400 / 1e9)}')"
echo "   wrk: $rps requests/s, p50 $p50 ms, p99 $p99 ms (the round trip is $((2 * DELAY)) ms)"
bench_stop "$RELAY_PID"

RESULT="$(jq -s --argjson d "$DELAY" --arg w "$WINDOW" --arg rps "$rps" --arg p50 "$p50" --arg p99 "$p99" '
    {settings: {delay_ms: $d, window: $w}, rows: .,
     wrk_100k_64_connections: {requests_per_s: ($rps | tonumber), p50_ms: ($p50 | tonumber),
                               p99_ms: ($p99 | tonumber)}}' "$OUT")"
bench_write_results "$RESULT"

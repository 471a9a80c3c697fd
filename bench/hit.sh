#!/usr/bin/env bash
# bench/hit.sh - hit-path throughput: s3cached serving cached objects against nginx serving the
# same bytes as static files, side by side in one run, with wrk on loopback.
#
# Usage: bench/hit.sh [DURATION_SECONDS] [CONNECTIONS]
# Prints one table row per object size and setup, and the ratio s3cached / nginx.
# The gateway is the optimized build (build/s3cached); build it with `make` first.
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DUR="${1:-10}"
CONNS="${2:-32}"
WORK="$(mktemp -d /tmp/s3cached-bench.XXXXXX)"
PIDS=()
cleanup() {
    for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$WORK"
}
trap cleanup EXIT

free_port() { /usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# The upstream: nginx serving a directory laid out as /bucket/key answers GETs like S3 does for
# these tests; the gateway reads each object once from it, then only from its cache.
mkdir -p "$WORK/www/bench" "$WORK/nginx"
chmod 755 "$WORK"  # nginx workers run unprivileged when started as root
for size in 4096 102400 4194304; do
    head -c "$size" /dev/urandom > "$WORK/www/bench/obj-$size"
done
chmod -R a+rX "$WORK/www"
NGINX_PORT="$(free_port)"
cat > "$WORK/nginx/nginx.conf" <<NGX
worker_processes 1;
pid $WORK/nginx/nginx.pid;
error_log $WORK/nginx/error.log warn;
events { worker_connections 1024; }
http {
    access_log off;
    sendfile on;
    tcp_nopush off;
    keepalive_requests 100000;
    server {
        listen 127.0.0.1:$NGINX_PORT;
        root $WORK/www;
    }
}
NGX
nginx -c "$WORK/nginx/nginx.conf" -p "$WORK/nginx" -g 'daemon off;' &
PIDS+=($!)

# Two gateways on one cache layout each: the default (CRC32C of every chunk checked on each
# hit) and --no-verify-checksums, to show what the check costs.
start_gateway() { # port cachedir extra-args...
    local port="$1" dir="$2"; shift 2
    env -u AWS_ACCESS_KEY_ID -u AWS_SECRET_ACCESS_KEY -u AWS_PROFILE \
        AWS_SHARED_CREDENTIALS_FILE=/nonexistent \
        "$REPO/build/s3cached" --listen "127.0.0.1:$port" --upstream "http://127.0.0.1:$NGINX_PORT" \
        --cache-dir "$dir" --cache-size 1G --threads 1 --log-level warn "$@" &
    PIDS+=($!)
}
GW_PORT="$(free_port)"
start_gateway "$GW_PORT" "$WORK/cache"
GW_PID="${PIDS[-1]}"
NOCRC_PORT="$(free_port)"
start_gateway "$NOCRC_PORT" "$WORK/cache-nocrc" --no-verify-checksums
NOCRC_PID="${PIDS[-1]}"
sleep 1

for port in "$GW_PORT" "$NOCRC_PORT"; do
    for size in 4096 102400 4194304; do
        curl -fsS -o /dev/null "http://127.0.0.1:$port/bench/obj-$size"  # miss: fills the cache
    done
done
sleep 0.5
for port in "$GW_PORT" "$NOCRC_PORT"; do
    for size in 4096 102400 4194304; do
        hdr="$(curl -fsS -D - -o /dev/null "http://127.0.0.1:$port/bench/obj-$size" | tr -d '\r' | grep -i '^x-cache')"
        [ "$hdr" = "X-Cache: HIT" ] || { echo "object $size is not a hit: $hdr" >&2; exit 1; }
    done
done

# CPU seconds (user+sys) a process has used, from /proc.
cpu_of() { awk '{print ($14 + $15) / 100}' "/proc/$1/stat"; }

run_wrk() { # url -> "req/s MB/s p50 p99"
    wrk -t 1 -c "$CONNS" -d "${DUR}s" --latency "$1" > "$WORK/wrk.out"
    awk '/Requests\/sec/ {r=$2} /Transfer\/sec/ {t=$2}
         /^ +50%/ {p50=$2} /^ +99%/ {p99=$2}
         END {u=substr(t,length(t)-1); v=substr(t,1,length(t)-2)+0;
              if (u=="GB") v*=1024; if (u=="KB") v/=1024; printf "%s %.1f %s %s", r, v, p50, p99}' "$WORK/wrk.out"
}

NGX_PID="$(cat "$WORK/nginx/nginx.pid")"
NGX_WORKER="$(pgrep -P "$NGX_PID" | head -1)"
printf '%-10s %-15s %12s %10s %10s %10s %14s\n' size server "requests/s" "MB/s" p50 p99 "cpu-ms/1k-req"
for size in 4096 102400 4194304; do
    for who in s3cached s3cached-nocrc nginx; do
        case "$who" in
        s3cached) url="http://127.0.0.1:$GW_PORT/bench/obj-$size"; pid="$GW_PID" ;;
        s3cached-nocrc) url="http://127.0.0.1:$NOCRC_PORT/bench/obj-$size"; pid="$NOCRC_PID" ;;
        nginx) url="http://127.0.0.1:$NGINX_PORT/bench/obj-$size"; pid="$NGX_WORKER" ;;
        esac
        c0="$(cpu_of "$pid")"
        read -r rps mbs p50 p99 <<<"$(run_wrk "$url")"
        c1="$(cpu_of "$pid")"
        total="$(awk '/requests in/ {print $1}' "$WORK/wrk.out")"
        cpu="$(awk -v a="$c0" -v b="$c1" -v n="$total" 'BEGIN {printf "%.1f", (b-a)*1000*1000/n}')"
        printf '%-10s %-15s %12s %10s %10s %10s %14s\n' "$size" "$who" "$rps" "$mbs" "$p50" "$p99" "$cpu"
        echo "$size $who $rps" >> "$WORK/rows"
    done
done
echo
awk '{r[$1" "$2]=$3} END {for (s in r) {split(s,a," "); if (a[2]!="nginx") printf "ratio %s/nginx requests/s at %s bytes: %.2f\n", a[2], a[1], r[s]/r[a[1]" nginx"]}}' "$WORK/rows" | sort
curl -fsS "http://127.0.0.1:$GW_PORT/_s3cached/stats"; echo

# bench/lib/common.sh - sourced by every benchmark: a scratch directory, the processes a
# script starts (stopped on exit, Ctrl-C included), ports, CPU accounting, the gateway,
# wrk, and the results file.
#
# After sourcing: REPO, BENCH_NAME, WORK (removed on exit unless BENCH_KEEP=1), RESULTS_DIR.
# CACHES: where caches are made (WORK, or a directory under BENCH_CACHE_DIR when it is set);
# gw_start makes a cache directory given under WORK anew there.
# Cleanup hooks run last registered first: bench_on_exit 'command ...'.

set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
BENCH_NAME="$(basename "${0%.sh}")"
RESULTS_DIR="${BENCH_RESULTS_DIR:-$REPO/bench/results}"
WORK="$(mktemp -d "/tmp/s3cached-bench-$BENCH_NAME.XXXXXX")"
chmod 755 "$WORK" # nginx workers run unprivileged when nginx is started as root
BENCH_PIDS=()
BENCH_HOOKS=()
BENCH_T0="$(date +%s)"

# Stops what this script started (by process id), then runs the hooks, then removes $WORK.
bench_cleanup() {
    local rc=$? p i
    trap - EXIT INT TERM
    for p in "${BENCH_PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
    for p in "${BENCH_PIDS[@]}"; do
        for i in $(seq 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
        kill -9 "$p" 2>/dev/null || true
    done
    for ((i = ${#BENCH_HOOKS[@]} - 1; i >= 0; i--)); do eval "${BENCH_HOOKS[$i]}" || true; done
    if [ "${BENCH_KEEP:-0}" = 1 ]; then
        echo "bench: kept $WORK" >&2
    else
        rm -rf "$WORK"
    fi
    exit "$rc"
}
trap bench_cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

bench_on_exit() { BENCH_HOOKS+=("$1"); }

# Where caches are made: WORK, or with BENCH_CACHE_DIR (e.g. /dev/shm; see docs/benchmarks.md,
# "Memory the host took back") a directory of this run's there, removed on exit.
CACHES="$WORK"
if [ -n "${BENCH_CACHE_DIR:-}" ]; then
    CACHES="$(mktemp -d "$BENCH_CACHE_DIR/s3cached-bench-$BENCH_NAME.XXXXXX")"
    chmod 755 "$CACHES" # nginx workers run unprivileged when nginx is started as root
    bench_on_exit "rm -rf '$CACHES'"
fi

# Remembers a process to stop on exit.
bench_track() { BENCH_PIDS+=("$1"); }

# Stops one tracked process now and waits for it.
bench_stop() {
    local pid="$1" i
    kill "$pid" 2>/dev/null || return 0
    for i in $(seq 100); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.05; done
    kill -9 "$pid" 2>/dev/null || true
}

say() { printf '%s: %s\n' "$BENCH_NAME" "$*" >&2; }
die() { say "ERROR: $*"; exit 1; }

need() {
    local t
    for t in "$@"; do command -v "$t" >/dev/null 2>&1 || die "$t is missing (make deps; tools/install-deps.sh --bench)"; done
}

# A TCP port free on ADDR (default 127.0.0.1; any loopback address works: 127.0.0.2, ...).
free_port() {
    python3 -c 'import socket, sys; s=socket.socket(); s.bind((sys.argv[1],0)); print(s.getsockname()[1])' \
        "${1:-127.0.0.1}"
}

# Waits until URL answers anything over HTTP (any status), at most SECONDS (default 20).
wait_http() {
    local url="$1" secs="${2:-20}" i
    for i in $(seq $((secs * 20))); do
        curl -s -o /dev/null --max-time 1 "$url" && return 0
        sleep 0.05
    done
    die "$url did not answer within ${secs}s"
}

# CPU seconds (user+sys) used so far by the given processes together, from /proc/PID/stat.
cpu_of() {
    local tick p total=0
    tick="$(getconf CLK_TCK)"
    for p in "$@"; do
        total=$((total + $(awk '{print $14 + $15}' "/proc/$p/stat")))
    done
    awk -v t="$total" -v k="$tick" 'BEGIN {printf "%.3f", t / k}'
}

# The machine's CPU ticks so far, all CPUs: "IDLE TOTAL" (idle and iowait, and everything), from
# /proc/stat. Two readings give the share of the machine left idle between them.
machine_ticks() { awk '/^cpu / {t = 0; for (i = 2; i <= NF; i++) t += $i; print $5 + $6, t}' /proc/stat; }

# The whole machine's busy CPU seconds so far: user, nice, system, irq and softirq of every CPU
# (/proc/stat; not idle, iowait or steal). Over loopback the kernel's work of receiving a
# response runs in whichever process's context it happens to (the sender's or the receiver's),
# so a server's own CPU moves with it; the machine's total does not.
machine_busy() {
    awk -v k="$(getconf CLK_TCK)" '/^cpu / {printf "%.3f", ($2 + $3 + $4 + $7 + $8) / k}' /proc/stat
}

# Milliseconds per 10,000 requests of the CPU seconds between two readings: per_10k A B N.
per_10k() { awk -v a="$1" -v b="$2" -v n="$3" 'BEGIN {printf "%.1f", n ? (b - a) * 1000 * 10000 / n : 0}'; }

# The processes of an nginx whose master pid is $1 that serve and keep its cache: the workers
# and the cache manager. Not the cache loader, which exits a minute after start (a CPU reading
# across its exit failed: its /proc entry was gone).
nginx_workers() { pgrep -P "$1" -f 'worker process|cache manager' | tr '\n' ' '; }

# Where the gateway's binary is; BENCH_GATEWAY overrides (e.g. another build).
GATEWAY_BIN="${BENCH_GATEWAY:-$REPO/build/s3cached}"
TRAINSIM_BIN="${BENCH_TRAINSIM:-$REPO/build/s3cached-trainsim}"
RELAY_BIN="${BENCH_RELAY:-$REPO/build/latency-relay}"
SIM_BIN="$REPO/build/s3cached-sim"

# Credentials the gateway and the trainer sign with: s3rver's built-in pair. nginx's static
# front does not check them; s3rver does, on what reaches it (PUT, LIST).
export AWS_ACCESS_KEY_ID=S3RVER AWS_SECRET_ACCESS_KEY=S3RVER AWS_REGION=us-east-1
unset AWS_SESSION_TOKEN AWS_PROFILE
export AWS_SHARED_CREDENTIALS_FILE=/nonexistent

# Starts a gateway: gw_start PORT CACHE_DIR UPSTREAM_URL [more s3cached options...], listening
# on GW_HOST:PORT (GW_HOST defaults to 127.0.0.1; another loopback address stands for another
# node). Sets GW_PID and GW_URL; its log is $WORK/gw-PORT.log. Waits for /healthz.
gw_start() {
    local port="$1" dir="$2" upstream="$3" host="${GW_HOST:-127.0.0.1}"
    shift 3
    if [ "$CACHES" != "$WORK" ] && [[ "$dir" == "$WORK"/* ]]; then
        dir="$(mktemp -d "$CACHES/$(basename "$dir").XXXXXX")" # a new one each time, as under WORK
    fi
    [ -x "$GATEWAY_BIN" ] || die "$GATEWAY_BIN is missing: make"
    "$GATEWAY_BIN" --listen "$host:$port" --upstream "$upstream" --cache-dir "$dir" \
        --log-level warn "$@" >"$WORK/gw-$port.log" 2>&1 &
    GW_PID=$!
    bench_track "$GW_PID"
    GW_URL="http://$host:$port"
    wait_http "$GW_URL/healthz"
}

# One counter from the gateway's stats: gw_stat URL FIELD.
gw_stat() { curl -fsS "$1/_s3cached/stats" | jq -r ".$2"; }

# Runs wrk; prints "requests_per_s mb_per_s p50_ms p99_ms requests errors".
# wrk_run URL DURATION_S CONNECTIONS [THREADS] [LUA_SCRIPT]
wrk_run() {
    local url="$1" dur="$2" conns="$3" threads="${4:-1}" lua="${5:-}"
    local args=(-t "$threads" -c "$conns" -d "${dur}s" --latency)
    [ -n "$lua" ] && args+=(-s "$lua")
    wrk "${args[@]}" "$url" >"$WORK/wrk.out" 2>&1 || { cat "$WORK/wrk.out" >&2; die "wrk failed"; }
    awk 'function ms(v) { if (v ~ /us$/) return v / 1000; if (v ~ /ms$/) return v + 0;
                         if (v ~ /m$/) return v * 60000; if (v ~ /s$/) return v * 1000; return v }
         /Requests\/sec/ {r = $2} /Transfer\/sec/ {t = $2}
         /^ +50%/ {p50 = ms($2)} /^ +99%/ {p99 = ms($2)}
         /requests in/ {n = $1}
         /Non-2xx|Socket errors/ {e += 1}
         END {u = substr(t, length(t) - 1); v = substr(t, 1, length(t) - 2) + 0;
              if (u == "GB") v *= 1024; if (u == "KB") v /= 1024; if (u ~ /[0-9]B/) v /= 1048576;
              printf "%s %.1f %.3f %.3f %d %d\n", r, v * 1.048576, p50, p99, n, e}' "$WORK/wrk.out"
}

# The machine and the build, for the results file.
bench_env_json() {
    jq -n --arg host "$(uname -n)" --arg kernel "$(uname -r)" --arg cpus "$(nproc)" \
        --arg cpu "$(awk -F': ' '/model name/ {print $2; exit}' /proc/cpuinfo)" \
        --arg mem "$(awk '/MemTotal/ {printf "%.1f GiB", $2 / 1048576}' /proc/meminfo)" \
        --arg commit "$(git -C "$REPO" rev-parse --short HEAD 2>/dev/null || echo unknown)" \
        --arg dirty "$(git -C "$REPO" status --porcelain --untracked-files=no 2>/dev/null | wc -l)" \
        --arg date "$(date -u +%Y-%m-%dT%H:%M:%SZ)" \
        --arg nginx "$(nginx -v 2>&1 | sed 's/.*nginx\///')" \
        --arg wrk "$(wrk -v 2>&1 | awk 'NR==1 {print $2}')" \
        '{date: $date, host: $host, kernel: $kernel, cpus: ($cpus | tonumber), cpu: $cpu,
          memory: $mem, commit: $commit, uncommitted_files: ($dirty | tonumber),
          nginx: $nginx, wrk: $wrk}'
}

# Writes the results file: bench_write_results JSON. Adds the command, the environment and
# the wall time; the file is $RESULTS_DIR/$BENCH_NAME.json unless BENCH_RESULTS names one.
bench_write_results() {
    local out="${BENCH_RESULTS:-$RESULTS_DIR/$BENCH_NAME.json}"
    mkdir -p "$(dirname "$out")"
    jq --arg cmd "$BENCH_CMD" --argjson env "$(bench_env_json)" \
        --arg wall "$(($(date +%s) - BENCH_T0))" \
        '{benchmark: $ENV.BENCH_NAME, command: $cmd, env: $env, wall_s: ($wall | tonumber)} + .' \
        <<<"$1" >"$out.tmp"
    mv "$out.tmp" "$out"
    say "results: $out"
}
export BENCH_NAME

# The command line as run, with the benchmark settings given in the environment, for the
# header and the results file.
BENCH_CMD="$(env | { grep -E '^(CLOUD_(DELAY_MS|RATE|CONN_RATE|WINDOW|GETS|BUCKET|NGINX_WORKERS)|(HIT|MISS|EPOCHS|WARMUP|CHURN|PLOTS|LARGE|CONVERGENCE|PLANS|FLEET|MEMORY|LOCKS)_[A-Z_]+|EPOCHS|BENCH_(GATEWAY|TRAINSIM|RELAY|PLANBENCH))=' || true; } | sort |
    while IFS='=' read -r k v; do printf '%s=%q ' "$k" "$v"; done)"
BENCH_CMD="${BENCH_CMD}bench/$(basename "$0")"
[ "$#" -eq 0 ] || BENCH_CMD="$BENCH_CMD$(printf ' %q' "$@")"
printf '$ %s\n' "$BENCH_CMD"

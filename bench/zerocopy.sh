#!/usr/bin/env bash
# bench/zerocopy.sh - what sending hits with sendfile saves (issue 14, gateway/zerocopy.h): the
# same build with and without --zero-copy, and nginx proxy_cache for reference, on bodies
# that are one stored value each:
#   102400    a 100 KiB object (one chunk)
#   4194304   a 4 MiB object, in one chunk only with --chunk-size 4M (the gateways here)
#   8388608   bytes=0-8388607 of a 16 MiB object: one block of a block object (8 MiB blocks)
# Each row is RUNS runs of wrk -t1 -c CONNECTIONS -d DURATION_S, the two gateways alternating,
# with the server's CPU (user+sys from /proc/PID/stat over the run) and the whole machine's
# (every CPU's busy time: the server, wrk and the kernel's loopback work wherever it ran;
# machine_busy in lib/common.sh) per 10,000 hits; printed as median (min-max). The gateway
# and nginx run HIT_THREADS threads/workers (default 1).
#
# Usage: bench/zerocopy.sh [DURATION_S [CONNECTIONS [RUNS]]]     (defaults 5, 32, 3)
# Results: bench/results/zerocopy.json.
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
source "$REPO/bench/lib/nginx.sh"
source "$REPO/bench/lib/hits.sh"

DUR="${1:-5}"
CONNS="${2:-32}"
RUNS="${3:-3}"
THREADS="${HIT_THREADS:-1}"
need wrk nginx curl jq

mkdir -p "$WORK/www/bench"
head -c 102400 /dev/urandom >"$WORK/www/bench/obj-102400"
head -c 4194304 /dev/urandom >"$WORK/www/bench/obj-4194304"
head -c 16777216 /dev/urandom >"$WORK/www/bench/obj-16777216"
chmod -R a+rX "$WORK/www"
nginx_static_start static "$(free_port)" "$WORK/www" "$THREADS"
STATIC_URL="$NGX_URL"
nginx_proxy_cache_start proxycache "$(free_port)" "${STATIC_URL#http://}" 1g "$THREADS"
PC_URL="$NGX_URL"
PC_PID="$NGX_PID"
gw_start "$(free_port)" "$WORK/cache-zc" "$STATIC_URL" --cache-size 1G --threads "$THREADS" \
    --chunk-size 4M --zero-copy
ZC_URL="$GW_URL"
ZC_PID="$GW_PID"
gw_start "$(free_port)" "$WORK/cache-copy" "$STATIC_URL" --cache-size 1G --threads "$THREADS" \
    --chunk-size 4M
CP_URL="$GW_URL"
CP_PID="$GW_PID"

# (size label, path, Range header or "")
CASES=("102400 obj-102400 -" "4194304 obj-4194304 -" "8388608 obj-16777216 bytes=0-8388607")

caches_warm "$ZC_URL $CP_URL $PC_URL" "${CASES[@]}"
zc0="$(gw_stat "$ZC_URL" hits_zero_copy)"

ROWS="$WORK/rows.jsonl"
: >"$ROWS"
for run in $(seq "$RUNS"); do
    say "run $run of $RUNS"
    for c in "${CASES[@]}"; do
        read -r size path rng <<<"$c"
        # alternate which gateway goes first
        if [ $((run % 2)) = 1 ]; then order="zc copy"; else order="copy zc"; fi
        for who in $order; do
            case "$who" in
            zc) hit_row s3cached-zero-copy "$ZC_URL" "$ZC_PID" "$size" "$path" "$rng" "$run" ;;
            copy) hit_row s3cached-no-zero-copy "$CP_URL" "$CP_PID" "$size" "$path" "$rng" "$run" ;;
            esac
        done
        hit_row nginx-proxy-cache "$PC_URL" "$(nginx_workers "$PC_PID")" "$size" "$path" "$rng" "$run"
    done
done
zc1="$(gw_stat "$ZC_URL" hits_zero_copy)"
cp1="$(gw_stat "$CP_URL" hits_zero_copy)"
[ "$cp1" = 0 ] || die "the gateway without --zero-copy sent $cp1 hits zero-copy"

RESULT="$(jq -s --argjson dur "$DUR" --argjson conns "$CONNS" --argjson runs "$RUNS" \
    --argjson threads "$THREADS" --argjson zc "$((zc1 - zc0))" '
    . as $rows
    | def med(f): (map(f) | sort) as $v | {median: $v[($v | length) / 2 | floor], min: $v[0], max: $v[-1]};
    {settings: {duration_s: $dur, connections: $conns, runs: $runs, server_threads: $threads,
                chunk_size: "4M", block_size: "8M"},
     zero_copy_hits_during_runs: $zc,
     rows: $rows,
     summary: [group_by([.size, .server])[] | {size: .[0].size, server: .[0].server,
                requests_per_s: med(.requests_per_s), cpu_ms_per_10k: med(.cpu_ms_per_10k),
                machine_cpu_ms_per_10k: med(.machine_cpu_ms_per_10k)}]}' "$ROWS")"
echo
printf '%-8s %-24s %26s %26s %30s\n' size server "requests/s median (min-max)" "CPU ms/10k median (min-max)" \
    "machine ms/10k median (min-max)"
jq -r '.summary[] | [.size, .server,
        "\(.requests_per_s.median | round) (\(.requests_per_s.min | round)-\(.requests_per_s.max | round))",
        "\(.cpu_ms_per_10k.median) (\(.cpu_ms_per_10k.min)-\(.cpu_ms_per_10k.max))",
        "\(.machine_cpu_ms_per_10k.median) (\(.machine_cpu_ms_per_10k.min)-\(.machine_cpu_ms_per_10k.max))"] | @tsv' <<<"$RESULT" |
    awk -F'\t' '{printf "%-8s %-24s %26s %26s %30s\n", $1, $2, $3, $4, $5}'
bench_write_results "$RESULT"

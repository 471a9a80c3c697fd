#!/usr/bin/env bash
# bench/hit.sh - the hit path: GET throughput and latency of cached objects (4 KiB, 100 KiB,
# 4 MiB), with wrk on loopback, for
#   s3cached                          the default: each chunk's CRC32C checked once per
#                                     residency (its first hit, then only once its pages left
#                                     the page cache), chunks under 16 KiB at every hit, and
#                                     the scrubber at its default --scrub-rate
#   s3cached --no-verify-checksums    what the checks cost
#   nginx proxy_cache                 nginx as a caching reverse proxy: how people cache S3
#   nginx static                      nginx sending the same bytes as plain files (reference)
# all in one run, one after the other, each with the same number of threads/workers. The
# ratio s3cached / nginx proxy_cache is the comparison; the server's CPU (user+sys from
# /proc/PID/stat over the run) is given per 10,000 hits, and so is the whole machine's (every
# CPU's busy time over the run: the server, wrk, and the kernel's loopback work wherever it
# ran, which moves between the server's account and wrk's; machine_busy in lib/common.sh).
#
# Usage: bench/hit.sh [DURATION_S [CONNECTIONS]]     (defaults 10 and 32)
# Settings: HIT_THREADS [1] gateway threads = nginx workers; wrk uses one thread, and the
# two share the machine's cores. Results: bench/results/hit.json.
# No emulated cloud: a hit never reaches the upstream (checked on the gateway's counters).
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
source "$REPO/bench/lib/nginx.sh"

DUR="${1:-10}"
CONNS="${2:-32}"
THREADS="${HIT_THREADS:-1}"
SIZES=(4096 102400 4194304)
need wrk nginx curl jq

# The origin: static files under /bench/; every cache reads each object once from it.
mkdir -p "$WORK/www/bench"
for size in "${SIZES[@]}"; do head -c "$size" /dev/urandom >"$WORK/www/bench/obj-$size"; done
chmod -R a+rX "$WORK/www"
nginx_static_start static "$(free_port)" "$WORK/www" "$THREADS"
STATIC_URL="$NGX_URL"
STATIC_PID="$NGX_PID"
nginx_proxy_cache_start proxycache "$(free_port)" "${STATIC_URL#http://}" 1g "$THREADS"
PC_URL="$NGX_URL"
PC_PID="$NGX_PID"
gw_start "$(free_port)" "$WORK/cache" "$STATIC_URL" --cache-size 1G --threads "$THREADS"
GW1_URL="$GW_URL"
GW1_PID="$GW_PID"
gw_start "$(free_port)" "$WORK/cache-nocrc" "$STATIC_URL" --cache-size 1G --threads "$THREADS" \
    --no-verify-checksums
GW2_URL="$GW_URL"
GW2_PID="$GW_PID"

# Warm every cache (the first read is a miss that fills it), then check the second is a hit.
for url in "$GW1_URL" "$GW2_URL" "$PC_URL"; do
    for size in "${SIZES[@]}"; do curl -fsS -o /dev/null "$url/bench/obj-$size"; done
done
sleep 0.5
for url in "$GW1_URL" "$GW2_URL" "$PC_URL"; do
    for size in "${SIZES[@]}"; do
        hdr="$(curl -fsS -D - -o /dev/null "$url/bench/obj-$size" | tr -d '\r' | grep -i '^x-cache:' || true)"
        [ "${hdr,,}" = "x-cache: hit" ] || die "$url/bench/obj-$size is not a hit: '$hdr'"
    done
done
misses0="$(( $(gw_stat "$GW1_URL" misses) + $(gw_stat "$GW2_URL" misses) ))"

cat <<EOF
== bench/hit.sh: hit path, all objects cached; wrk -t1 -c $CONNS -d ${DUR}s on loopback
   servers: $THREADS gateway thread(s) = $THREADS nginx worker(s); objects 4 KiB, 100 KiB, 4 MiB
   CPU: the server's user+sys from /proc over the run (the nginx rows: its workers)
EOF
printf '%-8s %-24s %12s %10s %9s %9s %16s %18s\n' size server "requests/s" "MB/s" "p50 ms" "p99 ms" \
    "CPU ms/10k hits" "machine ms/10k"
ROWS="$WORK/rows.jsonl"
: >"$ROWS"
for size in "${SIZES[@]}"; do
    for who in s3cached s3cached-no-verify nginx-proxy-cache nginx-static; do
        case "$who" in
        s3cached) url="$GW1_URL"; pids="$GW1_PID" ;;
        s3cached-no-verify) url="$GW2_URL"; pids="$GW2_PID" ;;
        nginx-proxy-cache) url="$PC_URL"; pids="$(nginx_workers "$PC_PID")" ;;
        nginx-static) url="$STATIC_URL"; pids="$(nginx_workers "$STATIC_PID")" ;;
        esac
        # shellcheck disable=SC2086
        c0="$(cpu_of $pids)"
        m0="$(machine_busy)"
        read -r rps mbs p50 p99 n errs <<<"$(wrk_run "$url/bench/obj-$size" "$DUR" "$CONNS")"
        m1="$(machine_busy)"
        # shellcheck disable=SC2086
        c1="$(cpu_of $pids)"
        cpu10k="$(per_10k "$c0" "$c1" "$n")"
        mach10k="$(per_10k "$m0" "$m1" "$n")"
        printf '%-8s %-24s %12s %10s %9s %9s %16s %18s\n' "$size" "$who" "$rps" "$mbs" "$p50" "$p99" \
            "$cpu10k" "$mach10k"
        jq -nc --arg size "$size" --arg who "$who" --arg rps "$rps" --arg mbs "$mbs" \
            --arg p50 "$p50" --arg p99 "$p99" --arg n "$n" --arg errs "$errs" \
            --arg cpu "$(awk -v a="$c0" -v b="$c1" 'BEGIN {printf "%.3f", b - a}')" --arg cpu10k "$cpu10k" \
            --arg mach "$(awk -v a="$m0" -v b="$m1" 'BEGIN {printf "%.3f", b - a}')" --arg mach10k "$mach10k" \
            '{size: ($size | tonumber), server: $who, requests_per_s: ($rps | tonumber),
              mb_per_s: ($mbs | tonumber), p50_ms: ($p50 | tonumber), p99_ms: ($p99 | tonumber),
              requests: ($n | tonumber), wrk_error_lines: ($errs | tonumber),
              cpu_s: ($cpu | tonumber), cpu_ms_per_10k: ($cpu10k | tonumber),
              machine_cpu_s: ($mach | tonumber), machine_cpu_ms_per_10k: ($mach10k | tonumber)}' >>"$ROWS"
    done
done
misses1="$(( $(gw_stat "$GW1_URL" misses) + $(gw_stat "$GW2_URL" misses) ))"
[ "$misses1" = "$misses0" ] || say "WARNING: the gateways missed $((misses1 - misses0)) times during the runs"

RESULT="$(jq -s --argjson dur "$DUR" --argjson conns "$CONNS" --argjson threads "$THREADS" \
    --argjson misses "$((misses1 - misses0))" '
    def row(s; w): map(select(.size == s and .server == w))[0];
    . as $rows
    | {settings: {duration_s: $dur, connections: $conns, wrk_threads: 1, server_threads: $threads,
                  sizes: [4096, 102400, 4194304]},
       rows: $rows, gateway_misses_during_runs: $misses,
       ratios: [ [4096, 102400, 4194304][] as $s
                 | (row($s; "s3cached")) as $g | (row($s; "s3cached-no-verify")) as $g2
                 | (row($s; "nginx-proxy-cache")) as $n | (row($s; "nginx-static")) as $st
                 | {size: $s,
                    rps_vs_proxy_cache: ($g.requests_per_s / $n.requests_per_s),
                    rps_no_verify_vs_proxy_cache: ($g2.requests_per_s / $n.requests_per_s),
                    rps_vs_static: ($g.requests_per_s / $st.requests_per_s),
                    cpu_vs_proxy_cache: ($g.cpu_ms_per_10k / $n.cpu_ms_per_10k),
                    cpu_no_verify_vs_proxy_cache: ($g2.cpu_ms_per_10k / $n.cpu_ms_per_10k),
                    machine_cpu_vs_proxy_cache:
                        ($g.machine_cpu_ms_per_10k / $n.machine_cpu_ms_per_10k)} ] }
    | .bars = ((.ratios[] | select(.size == 102400)) as $r
               | {rps_at_least_proxy_cache_100k: {want: ">= 1.0", got: $r.rps_vs_proxy_cache,
                                                  met: ($r.rps_vs_proxy_cache >= 1.0)},
                  cpu_at_most_0_8_proxy_cache_100k: {want: "<= 0.8", got: $r.cpu_vs_proxy_cache,
                                                     met: ($r.cpu_vs_proxy_cache <= 0.8)}})' "$ROWS")"
echo
jq -r '.ratios[] | "ratio s3cached / nginx proxy_cache at \(.size) bytes: requests/s \(.rps_vs_proxy_cache * 100 | round / 100) (no-verify \(.rps_no_verify_vs_proxy_cache * 100 | round / 100)), CPU per hit \(.cpu_vs_proxy_cache * 100 | round / 100) (no-verify \(.cpu_no_verify_vs_proxy_cache * 100 | round / 100)), machine CPU per hit \(.machine_cpu_vs_proxy_cache * 100 | round / 100)"' <<<"$RESULT"
jq -r '.bars | to_entries[] | "bar \(.key): want \(.value.want), got \(.value.got * 100 | round / 100): \(if .value.met then "met" else "MISSED" end)"' <<<"$RESULT"
bench_write_results "$RESULT"

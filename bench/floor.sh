#!/usr/bin/env bash
# bench/floor.sh - the floor under the CPU-per-hit bars (issue 14): what the least possible
# server spends per hit on this machine, beside nginx proxy_cache and the gateway, in one run.
#
# The least possible server is build/http-floor (tools/http-floor): one epoll loop that
# answers every request with the same file, no parsing, no cache, no checks. Three of it:
#   floor-copy          the body from an mmap with sendmsg (the gateway's way, from LMDB's map)
#   floor-sendfile-2m   sendfile, 2 MiB a call (nginx's sendfile_max_chunk)
#   floor-sendfile-128k sendfile, 128 KiB a call (libmicrohttpd 0.9.75's chunk)
#   floor-sendfile-2m-nagle  as floor-sendfile-2m, but Nagle's algorithm left on and the
#                       header sent alone: the same work, split otherwise between the server's
#                       account and the client's (the gauge's swing, not a way to serve)
# and the gateway with and without --zero-copy (--chunk-size 4M, so that 4 MiB is one value),
# and nginx proxy_cache, the bars' reference. Bodies: a 100 KiB object, a 4 MiB object and an
# 8 MiB range of one block of a 16 MiB object (the floor sends an 8 MiB file).
#
# Each row is RUNS runs of wrk -t1 -c CONNECTIONS -d DURATION_S; in each run the servers go
# in a rotated order. CPU per hit is the server's user+sys from /proc over the run, and the
# whole machine's busy time (machine_busy in lib/common.sh), per 10,000 hits. The ratios to
# nginx proxy_cache are taken run by run and given as median (min-max).
#
# Usage: bench/floor.sh [DURATION_S [CONNECTIONS [RUNS]]]     (defaults 5, 32, 3)
# One thread/worker each (the bars' one-thread setting). Results: bench/results/floor.json.
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
source "$REPO/bench/lib/nginx.sh"
source "$REPO/bench/lib/hits.sh"

DUR="${1:-5}"
CONNS="${2:-32}"
RUNS="${3:-3}"
FLOOR="$REPO/build/http-floor"
need wrk nginx curl jq
[ -x "$FLOOR" ] || die "build/http-floor is missing: make build/http-floor"

mkdir -p "$WORK/www/bench" "$WORK/floor"
head -c 102400 /dev/urandom >"$WORK/www/bench/obj-102400"
head -c 4194304 /dev/urandom >"$WORK/www/bench/obj-4194304"
head -c 16777216 /dev/urandom >"$WORK/www/bench/obj-16777216"
head -c 8388608 "$WORK/www/bench/obj-16777216" >"$WORK/floor/obj-8388608"
cp "$WORK/www/bench/obj-102400" "$WORK/www/bench/obj-4194304" "$WORK/floor/"
chmod -R a+rX "$WORK/www"
nginx_static_start static "$(free_port)" "$WORK/www" 1
STATIC_URL="$NGX_URL"
nginx_proxy_cache_start proxycache "$(free_port)" "${STATIC_URL#http://}" 1g 1
PC_URL="$NGX_URL"
PC_PID="$NGX_PID"
gw_start "$(free_port)" "$WORK/cache-copy" "$STATIC_URL" --cache-size 1G --threads 1 --chunk-size 4M
CP_URL="$GW_URL"
CP_PID="$GW_PID"
gw_start "$(free_port)" "$WORK/cache-zc" "$STATIC_URL" --cache-size 1G --threads 1 --chunk-size 4M \
    --zero-copy
ZC_URL="$GW_URL"
ZC_PID="$GW_PID"

# The floor servers: FLOOR_URL[size mode] and FLOOR_PID[size mode].
declare -A FLOOR_URL FLOOR_PID
floor_start() { # SIZE MODE CHUNK [nagle]
    local port key="$1 $2-$3${4:+-$4}"
    port="$(free_port)"
    "$FLOOR" "$port" "$WORK/floor/obj-$1" "$2" "$3" ${4:+"$4"} &
    FLOOR_PID["$key"]=$!
    bench_track $!
    FLOOR_URL["$key"]="http://127.0.0.1:$port"
    wait_http "http://127.0.0.1:$port/" || die "http-floor did not start"
}
SIZES=(102400 4194304 8388608)
for size in "${SIZES[@]}"; do
    floor_start "$size" copy 0
    floor_start "$size" sendfile 2097152
    floor_start "$size" sendfile 131072
    floor_start "$size" sendfile 2097152 nagle
done

# (size, path at the caches, Range header or -)
CASES=("102400 obj-102400 -" "4194304 obj-4194304 -" "8388608 obj-16777216 bytes=0-8388607")
caches_warm "$CP_URL $ZC_URL $PC_URL" "${CASES[@]}"
for size in "${SIZES[@]}"; do
    for k in "$size copy-0" "$size sendfile-2097152" "$size sendfile-131072" "$size sendfile-2097152-nagle"; do
        got="$(curl -fsS "${FLOOR_URL[$k]}/x" | wc -c)"
        [ "$got" = "$size" ] || die "http-floor $k sent $got bytes, not $size"
    done
done

ROWS="$WORK/rows.jsonl"
: >"$ROWS"
SERVERS=(nginx-proxy-cache s3cached s3cached-zero-copy floor-copy floor-sendfile-2m floor-sendfile-128k
    floor-sendfile-2m-nagle)
for run in $(seq "$RUNS"); do
    say "run $run of $RUNS"
    for c in "${CASES[@]}"; do
        read -r size path rng <<<"$c"
        n="${#SERVERS[@]}"
        for i in $(seq 0 $((n - 1))); do
            who="${SERVERS[$(((i + run) % n))]}" # rotated: each run starts with another server
            case "$who" in
            nginx-proxy-cache) hit_row "$who" "$PC_URL" "$(nginx_workers "$PC_PID")" "$size" "$path" "$rng" "$run" ;;
            s3cached) hit_row "$who" "$CP_URL" "$CP_PID" "$size" "$path" "$rng" "$run" ;;
            s3cached-zero-copy) hit_row "$who" "$ZC_URL" "$ZC_PID" "$size" "$path" "$rng" "$run" ;;
            floor-copy) k="$size copy-0" ;;
            floor-sendfile-2m) k="$size sendfile-2097152" ;;
            floor-sendfile-128k) k="$size sendfile-131072" ;;
            floor-sendfile-2m-nagle) k="$size sendfile-2097152-nagle" ;;
            esac
            case "$who" in
            floor-*) hit_row "$who" "${FLOOR_URL[$k]}" "${FLOOR_PID[$k]}" "$size" x - "$run" ;;
            esac
        done
    done
done

RESULT="$(jq -s --argjson dur "$DUR" --argjson conns "$CONNS" --argjson runs "$RUNS" '
    . as $rows
    | def med(f): (map(f) | sort) as $v
        | {median: $v[($v | length) / 2 | floor], min: $v[0], max: $v[-1]};
      def nginx(r): $rows | map(select(.server == "nginx-proxy-cache" and .size == r.size
                                        and .run == r.run))[0];
    {settings: {duration_s: $dur, connections: $conns, runs: $runs, server_threads: 1,
                gateway_chunk_size: "4M", block_size: "8M"},
     rows: $rows,
     summary: [group_by([.size, .server])[]
               | {size: .[0].size, server: .[0].server,
                  requests_per_s: med(.requests_per_s), cpu_ms_per_10k: med(.cpu_ms_per_10k),
                  machine_cpu_ms_per_10k: med(.machine_cpu_ms_per_10k),
                  cpu_vs_proxy_cache: med(. as $r | $r.cpu_ms_per_10k / nginx($r).cpu_ms_per_10k),
                  machine_cpu_vs_proxy_cache:
                      med(. as $r | $r.machine_cpu_ms_per_10k / nginx($r).machine_cpu_ms_per_10k)}]}' "$ROWS")"
echo
printf '%-8s %-24s %22s %22s %26s %26s\n' size server "requests/s" "CPU ms/10k" "CPU / proxy_cache" \
    "machine / proxy_cache"
jq -r 'def r2: . * 100 | round / 100;
       def m(f): "\(f.median | r2) (\(f.min | r2)-\(f.max | r2))";
       .summary[] | [.size, .server, "\(.requests_per_s.median | round)", "\(.cpu_ms_per_10k.median)",
                     m(.cpu_vs_proxy_cache), m(.machine_cpu_vs_proxy_cache)] | @tsv' <<<"$RESULT" |
    awk -F'\t' '{printf "%-8s %-24s %22s %22s %26s %26s\n", $1, $2, $3, $4, $5, $6}'
bench_write_results "$RESULT"

#!/usr/bin/env bash
# bench/churn.sh - a full cache under continuous miss-and-evict load. wrk asks the gateway for
# objects it has never seen (every request a miss: fetch, store, and once the cache is full,
# evict) from a fast loopback origin, so the store, not the upstream, sets the pace. From the
# gateway's counters, sampled every 0.25 s:
#   empty-cache insert rate   objects stored per second from empty until the cache is full
#   steady insert rate        objects stored per second once the cache has turned over once
#                             (everything in it was inserted while evicting), until the hot-set
#                             measurement starts (its wrk takes CPU from the churn)
# and the hit latency of a small hot set (wrk, 2 connections) on the idle gateway before the
# churn and again during its last seconds. LMDB reuses freed pages only as runs of
# contiguous free pages as long as a value: chunks of large values ask for long runs, which a
# churned free list may not have (the file then grows, or the writer scans the free list), so
# each chunk size is run separately, and the file's size and free pages are reported at the end.
#
# Usage: bench/churn.sh [CHUNK_SIZE...]          (default: 64K 256K 1M)
# Settings: CHURN_OBJECT [1M] object size; CHURN_CACHE [512M] --cache-size; CHURN_SECONDS [20]
#   churn per chunk size; CHURN_CONNECTIONS [8]; CHURN_HOT_SECONDS [4]. Results:
#   bench/results/churn.json.
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

CHUNKS=("$@")
[ "${#CHUNKS[@]}" -gt 0 ] || CHUNKS=(64K 256K 1M)
OBJ="${CHURN_OBJECT:-1M}"
CACHE="${CHURN_CACHE:-512M}"
DUR="${CHURN_SECONDS:-20}"
CONNS="${CHURN_CONNECTIONS:-8}"
HOTDUR="${CHURN_HOT_SECONDS:-4}"
HOT=16
need wrk nginx curl jq
OBJ_B="$(numfmt --from=iec "$OBJ")"
CACHE_B="$(numfmt --from=iec "$CACHE")"

# The origin: every key under /bench/churn/ is the same OBJ-byte file, every key under
# /bench/hot/ the same 100 KiB file.
mkdir -p "$WORK/www" "$WORK/origin"
head -c "$OBJ_B" /dev/urandom >"$WORK/www/churn.bin"
head -c 102400 /dev/urandom >"$WORK/www/hot.bin"
chmod -R a+rX "$WORK/www" "$WORK/origin"
ORIGIN_PORT="$(free_port)"
cat >"$WORK/origin/nginx.conf" <<NGX
worker_processes 1;
pid $WORK/origin/nginx.pid;
error_log $WORK/origin/error.log warn;
events { worker_connections 4096; }
http {
    access_log off;
    sendfile on;
    tcp_nopush off;
    keepalive_requests 1000000;
    default_type application/octet-stream;
    server {
        listen 127.0.0.1:$ORIGIN_PORT;
        root $WORK/www;
        location /bench/churn/ { try_files /churn.bin =404; }
        location /bench/hot/ { try_files /hot.bin =404; }
    }
}
NGX
nginx -c "$WORK/origin/nginx.conf" -p "$WORK/origin" -g 'daemon off;' &
bench_track $!
wait_http "http://127.0.0.1:$ORIGIN_PORT/bench/hot/x"

cat >"$WORK/churn.lua" <<'LUA'
-- every request a key never asked for before: /bench/churn/<run>-<thread>-<n>
local threads = 0
function setup(thread) thread:set("tid", threads); threads = threads + 1 end
function init(args) prefix = "/bench/churn/" .. args[1] .. "-" .. tid .. "-"; n = 0 end
function request() n = n + 1; return wrk.format("GET", prefix .. n) end
LUA
cat >"$WORK/hot.lua" <<LUA
-- the hot set, round robin
local i = 0
function request() i = i % $HOT + 1; return wrk.format("GET", "/bench/hot/" .. i) end
LUA

cat <<EOF
== bench/churn.sh: every request a miss of a new $OBJ object, cache $CACHE, ${DUR}s per chunk size, wrk -c $CONNS
   origin: nginx on loopback (no emulated latency: the store sets the pace); gateway policy: default, $(nproc) threads
   hot set: $HOT objects of 100 KiB, wrk -c 2 for ${HOTDUR}s, idle and during the churn's last seconds
EOF
printf '%-8s %12s %12s %7s %10s %10s %10s %10s %10s %9s\n' chunk "empty ins/s" "steady ins/s" ratio \
    "hit p50 ms" "hit p99" "churn p50" "churn p99" "file MiB" "free pgs"
OUT="$WORK/rows.jsonl"
: >"$OUT"
run=0
for chunk in "${CHUNKS[@]}"; do
    run=$((run + 1))
    dir="$WORK/cache-$chunk"
    gw_start "$(free_port)" "$dir" "http://127.0.0.1:$ORIGIN_PORT" --cache-size "$CACHE_B" \
        --chunk-size "$chunk"
    for _ in 1 2 3; do
        for i in $(seq $HOT); do curl -fsS -o /dev/null "$GW_URL/bench/hot/$i"; done
    done
    read -r _ _ idle_p50 idle_p99 _ _ <<<"$(wrk_run "$GW_URL/" "$HOTDUR" 2 1 "$WORK/hot.lua")"

    # The sampler: t fills_stored evictions used_bytes misses, every 0.25 s.
    tl="$WORK/timeline-$chunk"
    (
        t0="$(date +%s.%N)"
        while :; do
            curl -fsS "$GW_URL/_s3cached/stats" 2>/dev/null |
                jq -r --arg t "$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN {printf "%.3f", b - a}')" \
                    '"\($t) \(.fills_stored) \(.evictions) \(.used_bytes) \(.misses)"' || true
            sleep 0.25
        done
    ) >"$tl" &
    sampler=$!
    bench_track "$sampler"
    wrk -t 1 -c "$CONNS" -d "${DUR}s" --latency -s "$WORK/churn.lua" "$GW_URL/" -- "$run" \
        >"$WORK/churn-wrk-$chunk.out" 2>&1 &
    churn_wrk=$!
    sleep $((DUR - HOTDUR - 1))
    read -r _ _ busy_p50 busy_p99 _ _ <<<"$(wrk_run "$GW_URL/" "$HOTDUR" 2 1 "$WORK/hot.lua")"
    wait "$churn_wrk" || true
    bench_stop "$sampler"
    cp "$WORK/churn-wrk-$chunk.out" "$WORK/wrk.out"
    read -r churn_p50 churn_p99 <<<"$(awk 'function ms(v) { if (v ~ /us$/) return v / 1000; if (v ~ /ms$/) return v + 0; if (v ~ /s$/) return v * 1000; return v }
        /^ +50%/ {a = ms($2)} /^ +99%/ {b = ms($2)} END {print a + 0, b + 0}' "$WORK/wrk.out")"
    stats="$(curl -fsS "$GW_URL/_s3cached/stats")"
    bench_stop "$GW_PID"
    file_b="$(stat -c %s "$dir/data.mdb" 2>/dev/null || echo 0)"
    free_pages="$(mdb_stat -ef "$dir" 2>/dev/null | awk '/Free pages:/ {print $3; exit}')"
    rm -rf "$dir"

    row="$(jq -n --arg chunk "$chunk" --argjson obj "$OBJ_B" --argjson cap "$CACHE_B" \
        --rawfile tl "$tl" --argjson ip50 "$idle_p50" --argjson ip99 "$idle_p99" \
        --argjson bp50 "$busy_p50" --argjson bp99 "$busy_p99" --argjson cp50 "$churn_p50" \
        --argjson cp99 "$churn_p99" --argjson stats "$stats" --argjson file "$file_b" \
        --arg free "${free_pages:-}" --argjson stop "$((DUR - HOTDUR - 1))" '
        [$tl | split("\n")[] | select(length > 0) | split(" ") | map(tonumber)
         | {t: .[0], fills: .[1], evictions: .[2], used: .[3], misses: .[4]}] as $s
        | ($s | map(select(.evictions > 0 or .used >= 0.95 * $cap)) | first) as $full
        | (if $full then ($s | map(select(.fills >= $full.fills + ($cap / $obj))) | first) else null end) as $turned
        | ($s | map(select(.t <= $stop)) | last) as $fin
        | {chunk: $chunk,
           empty_inserts_per_s: (if $full and $full.t > 0 then $full.fills / $full.t else null end),
           full_after_s: ($full.t // null),
           steady_from_s: ($turned.t // null),
           steady_inserts_per_s: (if $turned and $fin.t > $turned.t + 1
                                  then ($fin.fills - $turned.fills) / ($fin.t - $turned.t) else null end),
           hit_idle_p50_ms: $ip50, hit_idle_p99_ms: $ip99,
           hit_churn_p50_ms: $bp50, hit_churn_p99_ms: $bp99,
           miss_p50_ms: $cp50, miss_p99_ms: $cp99,
           steady_until_s: $fin.t, used_bytes_at_end: ($s | last | .used), capacity_bytes: $cap,
           lmdb_file_bytes: $file, lmdb_free_pages: (if $free == "" then null else ($free | tonumber) end),
           gateway_stats: ($stats | {hits, misses, fills_stored, fills_failed, evictions, objects, used_bytes}),
           timeline: $s}
        | .steady_vs_empty = (if .steady_inserts_per_s and .empty_inserts_per_s
                              then .steady_inserts_per_s / .empty_inserts_per_s else null end)')"
    echo "$row" >>"$OUT"
    jq -r 'def r(x): if x == null then "n/a" else (x * 100 | round) / 100 end;
        [.chunk, r(.empty_inserts_per_s), r(.steady_inserts_per_s), r(.steady_vs_empty),
         r(.hit_idle_p50_ms), r(.hit_idle_p99_ms), r(.miss_p50_ms), r(.miss_p99_ms),
         r(.lmdb_file_bytes / 1048576), (.lmdb_free_pages // "n/a")] | @tsv' <<<"$row" |
        awk -F'\t' '{printf "%-8s %12s %12s %7s %10s %10s %10s %10s %10s %9s\n", $1, $2, $3, $4, $5, $6, $7, $8, $9, $10}'
    jq -r '"         hot-set hits during the churn: p50 \(.hit_churn_p50_ms) ms, p99 \(.hit_churn_p99_ms) ms; full after \(.full_after_s // "n/a") s, steady from \(.steady_from_s // "n/a") s"' <<<"$row"
done

RESULT="$(jq -s --arg obj "$OBJ" --arg cache "$CACHE" --argjson dur "$DUR" --argjson conns "$CONNS" \
    --argjson hot "$HOT" --argjson hotdur "$HOTDUR" '
    {settings: {object: $obj, cache: $cache, seconds_per_chunk_size: $dur, connections: $conns,
                hot_objects: $hot, hot_seconds: $hotdur, sample_interval_s: 0.25},
     rows: .,
     bars: [.[] | {chunk, steady_vs_empty, met: ((.steady_vs_empty // 0) >= 0.5)}]}' "$OUT")"
echo
jq -r '.bars[] | "bar: chunk \(.chunk): steady insert rate \(if .steady_vs_empty == null then "n/a" else "\((.steady_vs_empty * 100 | round))%" end) of the empty-cache rate (want >= 50%): \(if .met then "met" else "MISSED" end)"' <<<"$RESULT"
bench_write_results "$RESULT"

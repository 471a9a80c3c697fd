#!/usr/bin/env bash
# bench/miss.sh - the miss path against the emulated cloud: what going through the gateway
# costs when the object is not cached, against reading the cloud directly, for 4 KiB,
# 100 KiB and 4 MiB objects:
#   time to first byte   one client, one kept-alive connection, K objects one after the
#                        other (curl): direct, then K other objects through an empty gateway
#                        (each a miss), then the same K again (hits, for reference). Medians.
#   throughput           s3cached-trainsim reading a whole dataset once, 16 requests in flight,
#                        no compute: direct, then through a new, empty gateway (all misses).
# Ratios are gateway / direct (TTFB: lower is better; throughput: higher is better).
#
# Usage: bench/miss.sh [K]        (default 30 objects per TTFB series)
# Settings: MISS_WORKERS [16]; the cloud's CLOUD_* settings. Results: bench/results/miss.json.
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
source "$REPO/bench/lib/cloud.sh"

K="${1:-30}"
WORKERS="${MISS_WORKERS:-16}"
# size label, bytes, objects in the throughput dataset
SIZES=("4K 4096 1000" "100K 102400 1000" "4M 4194304 96")
need jq curl
[ -x "$TRAINSIM_BIN" ] || die "$TRAINSIM_BIN is missing: make build/s3cached-trainsim"

cloud_up
for s in "${SIZES[@]}"; do
    read -r label bytes n <<<"$s"
    [ "$n" -ge $((2 * K + 2)) ] || n=$((2 * K + 2))
    cloud_seed "miss-${label,,}/" "$n" --size "$label"
done

cat <<EOF
== bench/miss.sh: misses through s3cached against the cloud directly
   cloud: ${CLOUD_DELAY_MS} ms each way ($((2 * CLOUD_DELAY_MS)) ms round trip; a new connection one round trip more), $CLOUD_RATE each way
   TTFB: curl, one kept-alive connection, $K objects per series (the first request of each series, which opens the connection, is not counted)
   throughput: s3cached-trainsim, one pass over the dataset, $WORKERS requests in flight, no compute
EOF

# TTFB series: ttfb_series BASE_URL PREFIX FIRST COUNT -> JSON {ttfb_ms: [...], total_ms: [...]}
ttfb_series() {
    local base="$1" prefix="$2" first="$3" count="$4" cfg="$WORK/curl.cfg" i
    : >"$cfg"
    for ((i = first - 1; i < first + count; i++)); do # one more in front: opens the connection
        printf 'url = "%s/%s/%s%08d.bin"\noutput = "/dev/null"\n' "$base" "$CLOUD_BUCKET" "$prefix" "$i" >>"$cfg"
    done
    curl -sS -K "$cfg" -w '%{http_code} %{time_starttransfer} %{time_total} %{size_download}\n' |
        tail -n +2 | jq -Rsc 'split("\n") | map(select(length > 0) | split(" "))
            | if any(.[0] != "200") then error("a request failed: \(map(.[0]) | unique)") else . end
            | {ttfb_ms: map(.[1] | tonumber * 1000), total_ms: map(.[2] | tonumber * 1000),
               bytes: (.[0][3] | tonumber)}'
}

median() { jq -c 'sort | if length == 0 then null elif length % 2 == 1 then .[length / 2 | floor]
                  else (.[length / 2 - 1] + .[length / 2]) / 2 end'; }

train_once() { # ENDPOINT PREFIX N LABEL JSON_OUT
    "$TRAINSIM_BIN" train --endpoint "$1" --bucket "$CLOUD_BUCKET" --prefix "$2" --objects "$3" \
        --size "$4" --epochs 1 --workers "$WORKERS" --compute-ms 0 --stats-url none \
        --json "$5" --quiet >"$5.log" 2>&1 || { cat "$5.log" >&2; die "trainsim failed"; }
}

OUT="$WORK/rows.jsonl"
: >"$OUT"
printf '%-6s %-22s %10s %10s %11s %10s %10s\n' size path "TTFB p50" "total p50" "objects/s" "MB/s" "p99 ms"
for s in "${SIZES[@]}"; do
    read -r label bytes n <<<"$s"
    [ "$n" -ge $((2 * K + 2)) ] || n=$((2 * K + 2))
    prefix="miss-${label,,}/"
    direct="$(ttfb_series "$CLOUD_URL" "$prefix" 1 "$K")"
    gw_start "$(free_port)" "$WORK/cache-ttfb-$label" "$CLOUD_URL" --cache-size 2G
    m0="$(gw_stat "$GW_URL" misses)"
    gmiss="$(ttfb_series "$GW_URL" "$prefix" $((K + 2)) "$K")"
    m1="$(gw_stat "$GW_URL" misses)"
    sleep 0.5 # the last fills finish storing
    ghit="$(ttfb_series "$GW_URL" "$prefix" $((K + 2)) "$K")"
    m2="$(gw_stat "$GW_URL" misses)"
    bench_stop "$GW_PID"
    [ $((m1 - m0)) -ge "$K" ] || say "WARNING: only $((m1 - m0)) misses in the gateway's miss series"
    [ "$m2" = "$m1" ] || say "WARNING: $((m2 - m1)) misses in the gateway's hit series"

    train_once "$CLOUD_URL" "$prefix" "$n" "$label" "$WORK/td-$label.json"
    gw_start "$(free_port)" "$WORK/cache-tp-$label" "$CLOUD_URL" --cache-size 2G
    train_once "$GW_URL" "$prefix" "$n" "$label" "$WORK/tg-$label.json"
    gstats="$(curl -fsS "$GW_URL/_s3cached/stats")"
    bench_stop "$GW_PID"
    rm -rf "$WORK/cache-ttfb-$label" "$WORK/cache-tp-$label"

    row="$(jq -n --arg lab "$label" --argjson bytes "$bytes" --argjson n "$n" \
        --argjson d "$direct" --argjson gm "$gmiss" --argjson gh "$ghit" \
        --argjson dmed "$(jq -c .ttfb_ms <<<"$direct" | median)" \
        --argjson dtot "$(jq -c .total_ms <<<"$direct" | median)" \
        --argjson gmed "$(jq -c .ttfb_ms <<<"$gmiss" | median)" \
        --argjson gtot "$(jq -c .total_ms <<<"$gmiss" | median)" \
        --argjson hmed "$(jq -c .ttfb_ms <<<"$ghit" | median)" \
        --argjson htot "$(jq -c .total_ms <<<"$ghit" | median)" \
        --slurpfile td "$WORK/td-$label.json" --slurpfile tg "$WORK/tg-$label.json" \
        --argjson gs "$gstats" '
        def tp(x): x[0].epochs[0] | {objects_per_s, mb_per_s, wall_s,
                                     p50_ms: (.lat_p50_ms // .p50_ms), p99_ms: (.lat_p99_ms // .p99_ms)};
        {size: $lab, bytes: $bytes,
         ttfb: {direct_p50_ms: $dmed, gateway_miss_p50_ms: $gmed, gateway_hit_p50_ms: $hmed,
                direct_total_p50_ms: $dtot, gateway_miss_total_p50_ms: $gtot,
                gateway_hit_total_p50_ms: $htot,
                ratio_ttfb_miss_vs_direct: ($gmed / $dmed), ratio_total_miss_vs_direct: ($gtot / $dtot),
                samples: {direct: $d, gateway_miss: $gm, gateway_hit: $gh}},
         throughput: {objects: $n, direct: tp($td), gateway_miss: tp($tg),
                      ratio_mb_per_s: (tp($tg).mb_per_s / tp($td).mb_per_s),
                      gateway_stats: ($gs | {hits, misses, fills_stored, fills_failed,
                                             bytes_from_upstream})}}')"
    echo "$row" >>"$OUT"
    jq -r '
        def r(x): (x * 100 | round) / 100;
        [.size, "direct", r(.ttfb.direct_p50_ms), r(.ttfb.direct_total_p50_ms),
         (.throughput.direct.objects_per_s | round), r(.throughput.direct.mb_per_s), r(.throughput.direct.p99_ms)],
        [.size, "s3cached miss", r(.ttfb.gateway_miss_p50_ms), r(.ttfb.gateway_miss_total_p50_ms),
         (.throughput.gateway_miss.objects_per_s | round), r(.throughput.gateway_miss.mb_per_s),
         r(.throughput.gateway_miss.p99_ms)],
        [.size, "s3cached hit (ref.)", r(.ttfb.gateway_hit_p50_ms), r(.ttfb.gateway_hit_total_p50_ms), "", "", ""]
        | @tsv' <<<"$row" | awk -F'\t' '{printf "%-6s %-22s %10s %10s %11s %10s %10s\n", $1, $2, $3, $4, $5, $6, $7}'
done

RESULT="$(jq -s --argjson k "$K" --argjson w "$WORKERS" --argjson cloud "$CLOUD_JSON" '
    {settings: {ttfb_objects_per_series: $k, throughput_workers: $w}, cloud: $cloud, rows: .,
     ratios: [.[] | {size, ttfb_miss_vs_direct: .ttfb.ratio_ttfb_miss_vs_direct,
                     total_miss_vs_direct: .ttfb.ratio_total_miss_vs_direct,
                     throughput_miss_vs_direct: .throughput.ratio_mb_per_s}]}' "$OUT")"
echo
jq -r '.ratios[] | "ratio gateway miss / direct at \(.size): TTFB \(.ttfb_miss_vs_direct * 100 | round / 100), whole object \(.total_miss_vs_direct * 100 | round / 100), throughput \(.throughput_miss_vs_direct * 100 | round / 100)"' <<<"$RESULT"
bench_write_results "$RESULT"

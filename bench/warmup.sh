#!/usr/bin/env bash
# bench/warmup.sh - how fast a manifest warms the cache against the emulated cloud: 10,000
# objects posted as one manifest to an empty gateway (a cache that holds them all), timed
# from the POST until the manifest reports every object cached, and compared with the least
# time the cloud's latency and bandwidth allow at the gateway's prefetch concurrency C:
#
#   one fetch on an open connection >= RTT + size / rate      (latency)
#   allowed objects/s = min(C / (RTT + size / rate), rate / size)   (bandwidth)
#   allowed time = one handshake (RTT) + N / allowed objects/s
#   share = allowed time / measured time                       (the bar: >= 90 %)
#
# Usage: bench/warmup.sh [CONCURRENCY...]   (default: 32, the gateway's default, which the
#        latency limits, and 128, which the bandwidth limits). Each row also gives the gateway's CPU
#        per object (user+sys over the run) and the share of the machine left idle: a run with
#        little idle is bounded by this machine's cores, not by the gateway or the link.
#        Before each gateway run, a "direct" row: curl --parallel fetching the same objects
#        straight from the cloud, C at a time, to /dev/null: what a plain client gets from this
#        cloud on this machine at that concurrency (the relay and the cloud's servers share
#        the cores), the reference for the gateway's share. The direct row also gives the mean
#        time to its first bytes (curl's time_starttransfer), the gateway's row the mean wait of
#        its upstream requests for their response heads (s3cached_upstream_response_seconds):
#        the same quantity, seen from each side. The progress is followed by
#        bench/lib/watch_manifest.py on one connection: a shell loop of curl and jq took half
#        a core from the gateway being measured.
# Settings: WARMUP_OBJECTS [10000] of WARMUP_SIZE [110K]; the cloud's CLOUD_* settings.
# Results: bench/results/warmup.json (with each run's progress over time).
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
source "$REPO/bench/lib/cloud.sh"

N="${WARMUP_OBJECTS:-10000}"
SIZE="${WARMUP_SIZE:-110K}"
CONCS=("$@")
[ "${#CONCS[@]}" -gt 0 ] || CONCS=(32 128)
PREFIX="trainsim/"
need jq curl
SIZE_B="$(numfmt --from=iec "$SIZE")"

cloud_up
cloud_seed "$PREFIX" "$N" --size "$SIZE"
RATE_B="$(jq .rate_bytes_per_s <<<"$CLOUD_JSON")"
RTT_S="$(awk -v d="$CLOUD_DELAY_MS" 'BEGIN {print 2 * d / 1000}')"

BODY="$WORK/manifest.json"
seq 0 $((N - 1)) | awk -v p="$PREFIX" '{printf "%s%08d.bin\n", p, $1}' | jq -R . |
    jq -sc --arg b "$CLOUD_BUCKET" '{bucket: $b, keys: ., name: "bench/warmup.sh"}' >"$BODY"

cat <<EOF
== bench/warmup.sh: a manifest of $N objects x $SIZE ($((N * SIZE_B / 1048576)) MiB) into an empty gateway
   cloud: ${CLOUD_DELAY_MS} ms each way ($((2 * CLOUD_DELAY_MS)) ms round trip), $CLOUD_RATE each way ($((RATE_B / 1000000)) MB/s)
EOF
printf '%-12s %9s %11s %9s %12s %9s  %-10s %8s %6s\n' concurrency "time s" "objects/s" "MB/s" "allowed s" share "limited by" "gw ms/obj" "idle"
OUT="$WORK/runs.jsonl"
: >"$OUT"
DIRECT="$WORK/direct.jsonl"
: >"$DIRECT"
# curl's config: every object once, to /dev/null (an error fails the run: --fail).
seq 0 $((N - 1)) | awk -v u="$CLOUD_URL/$CLOUD_BUCKET/$PREFIX" \
    '{printf "url = \"%s%08d.bin\"\noutput = \"/dev/null\"\n", u, $1}' >"$WORK/direct.curl"
# What latency and bandwidth allow at concurrency $c (the formula above), for both rows' jq.
ALLOWED='def allowed($c): ($c / ($rtt + $size / $rate)) as $lat | ($rate / $size) as $bw
    | ([$lat, $bw] | min) as $r
    | {rate: $r, seconds: ($rtt + $n / $r), limited_by: (if $lat < $bw then "latency" else "bandwidth" end)};'
ALLOWED_ARGS=(--argjson n "$N" --argjson size "$SIZE_B" --argjson rate "$RATE_B" --argjson rtt "$RTT_S")
for c in "${CONCS[@]}"; do
    t0="$(date +%s.%N)"
    curl -fsS --no-progress-meter --parallel --parallel-immediate --parallel-max "$c" -K "$WORK/direct.curl" \
        -w '%{time_starttransfer}\n' >"$WORK/direct-ttfb" || die "direct: curl failed"
    t1="$(date +%s.%N)"
    dt="$(awk -v a="$t0" -v b="$t1" 'BEGIN {print b - a}')"
    # The mean wait for the first byte from the transfer's start (connection set-up included,
    # as in the gateway's upstream_head_ms_mean).
    ttfb="$(awk '{s += $1} END {print NR ? s / NR * 1000 : 0}' "$WORK/direct-ttfb")"
    row="$(jq -nc "${ALLOWED_ARGS[@]}" --argjson c "$c" --argjson t "$dt" --argjson ttfb "$ttfb" "$ALLOWED"'
        {concurrency: $c, seconds: $t, objects_per_s: ($n / $t), share: (allowed($c).seconds / $t),
         first_byte_ms_mean: $ttfb}')"
    echo "$row" >>"$DIRECT"
    jq -r '["direct " + (.concurrency | tostring), (.seconds * 100 | round / 100),
            (.objects_per_s | round), "", "", ((.share * 1000 | round) / 10 | tostring) + "%"] | @tsv' \
        <<<"$row" | awk -F'\t' '{printf "%-12s %9s %11s %9s %12s %9s\n", $1, $2, $3, $4, $5, $6}'
    gw_start "$(free_port)" "$WORK/cache-$c" "$CLOUD_URL" --cache-size $((N * SIZE_B * 2)) \
        --prefetch-concurrency "$c"
    t0="$(date +%s.%N)"
    cpu0="$(cpu_of "$GW_PID")"
    read -r idle0 ticks0 <<<"$(machine_ticks)"
    id="$(curl -fsS -X POST "$GW_URL/_s3cached/manifests" -H 'Content-Type: application/json' \
        --data-binary @"$BODY" | jq -r .id)"
    t_post="$(date +%s.%N)"
    timeline="$WORK/timeline-$c"
    : >"$timeline"
    watched="$(python3 "$REPO/bench/lib/watch_manifest.py" "$GW_URL" "$id" "$t0" "$timeline" 600)" ||
        die "manifest $id did not warm"
    { read -r p; read -r now; } <<<"$watched"
    state="$(jq -r .state <<<"$p")"
    [ "$(jq -r .objects_cached <<<"$p")" = "$N" ] || die "manifest $id: not $N objects: $p"
    t1="$now"
    cpu1="$(cpu_of "$GW_PID")"
    read -r idle1 ticks1 <<<"$(machine_ticks)"
    stats="$(curl -fsS "$GW_URL/_s3cached/stats")"
    # The gateway's mean wait for an upstream response head, from each attempt's start.
    up_head_ms="$(curl -fsS "$GW_URL/metrics" | awk '
        /^s3cached_upstream_response_seconds_sum/ {s = $2} /^s3cached_upstream_response_seconds_count/ {n = $2}
        END {print n ? s / n * 1000 : 0}')"
    bench_stop "$GW_PID"
    rm -rf "$WORK/cache-$c"
    row="$(jq -n "${ALLOWED_ARGS[@]}" --argjson c "$c" \
        --arg t0 "$t0" --arg tp "$t_post" --arg t1 "$t1" --arg state "$state" \
        --argjson stats "$stats" --rawfile tl "$timeline" --argjson uphead "$up_head_ms" \
        --argjson gwcpu "$(awk -v a="$cpu0" -v b="$cpu1" 'BEGIN {print b - a}')" \
        --argjson idle "$(awk -v i="$((idle1 - idle0))" -v t="$((ticks1 - ticks0))" 'BEGIN {print t ? i / t : 0}')" "$ALLOWED"'
        (($t1 | tonumber) - ($t0 | tonumber)) as $t
        | allowed($c) as $a
        | {concurrency: $c, seconds: $t, post_seconds: (($tp | tonumber) - ($t0 | tonumber)),
           objects_per_s: ($n / $t), mb_per_s: ($n * $size / $t / 1e6),
           allowed_seconds: $a.seconds, allowed_objects_per_s: $a.rate,
           limited_by: $a.limited_by,
           share: ($a.seconds / $t), final_state: $state,
           prefetched_objects: $stats.prefetched_objects,
           gateway_cpu_seconds: $gwcpu, gateway_cpu_ms_per_object: ($gwcpu * 1000 / $n),
           machine_idle_share: $idle, upstream_head_ms_mean: $uphead,
           bytes_from_upstream: $stats.bytes_from_upstream,
           timeline: [$tl | split("\n")[] | select(length > 0) | split(" ")
                      | {t: (.[0] | tonumber), cached: (.[1] | tonumber)}]}')"
    echo "$row" >>"$OUT"
    jq -r '[.concurrency, (.seconds * 100 | round / 100), (.objects_per_s | round),
            (.mb_per_s | round), (.allowed_seconds * 100 | round / 100),
            ((.share * 1000 | round) / 10 | tostring) + "%", .limited_by,
            (.gateway_cpu_ms_per_object * 1000 | round / 1000),
            ((.machine_idle_share * 1000 | round) / 10 | tostring) + "%"] | @tsv' <<<"$row" |
        awk -F'\t' '{printf "%-12s %9s %11s %9s %12s %9s  %-10s %8s %6s\n", $1, $2, $3, $4, $5, $6, $7, $8, $9}'
done

RESULT="$(jq -s --argjson n "$N" --arg size "$SIZE" --argjson sb "$SIZE_B" --argjson cloud "$CLOUD_JSON" \
    --slurpfile direct "$DIRECT" '
    {settings: {objects: $n, size: $size, size_bytes: $sb, manifest: "keys, one epoch, in order"},
     cloud: $cloud, runs: ., direct: $direct,
     gateway_vs_direct: [.[] as $g | $direct[] | select(.concurrency == $g.concurrency)
                         | {concurrency, objects_per_s: ($g.objects_per_s / .objects_per_s)}],
     bars: [.[] | {concurrency, share, met: (.share >= 0.9)}]}' "$OUT")"
echo
jq -r '.gateway_vs_direct[] | "gateway / direct at concurrency \(.concurrency): objects/s \(.objects_per_s * 100 | round / 100)"' <<<"$RESULT"
jq -r '.bars[] | "bar: warm-up at concurrency \(.concurrency) reaches \((.share * 1000 | round) / 10)% of what latency and bandwidth allow (want >= 90%): \(if .met then "met" else "MISSED" end)"' <<<"$RESULT"
bench_write_results "$RESULT"

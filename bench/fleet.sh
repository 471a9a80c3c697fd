#!/usr/bin/env bash
# bench/fleet.sh - three nodes' gateways as one fleet against three independent gateways, through
# the emulated cloud (docs/fleet.md). Each gateway has a cache of C bytes; the dataset is
# FLEET_RATIO [2.5] x C: too large for one gateway, small enough for the fleet's 3 x C. It is read
# for 3 shuffled epochs by one data-parallel job spread over the gateways as over three nodes: one
# s3cached-trainsim a gateway, --world-size 3 --rank r, each reading its DistributedSampler share
# of every epoch through its own gateway, the ranks stepping together (--step-barrier). Setups:
#   independent   3 gateways, no fleet: each pulls from the bucket what it misses
#   fleet         the same 3 gateways as a fleet (--peers, --fleet-listen, a fleet secret),
#                 --fleet-copy none: a miss asks the object's owner before the bucket
#   fleet-hot     the same, --fleet-copy hot
#   fleet-all     the same, --fleet-copy all
# The gateways listen on 127.0.0.2, .3, .4 (one loopback address a node), each on its own
# port, and in a fleet also on a peer port (--fleet-listen) on the same address.
# Requests are counted at the bucket (the cloud's nginx access log: GETs of the dataset's keys,
# those with a Range, HEADs) and bytes at the relay in front of it (cloud_bytes_back: every byte
# from the cloud, headers included), epoch by epoch: each epoch is its own trainsim run (seed
# S+e reads epoch e's shuffle) and the counters are read once the cloud link is quiet. Per
# epoch: wall time (the slowest rank's), data-stall share (the largest), upstream GETs and bytes,
# and the reads served without the bucket (1 - upstream GETs / reads: hits, local or peer).
#
# Usage: bench/fleet.sh [SETUP...]      (default: independent fleet fleet-hot fleet-all)
# Settings: FLEET_OBJECTS [3000] objects of FLEET_SIZE [110K]; FLEET_RATIO [2.5] the dataset over
#   one gateway's cache; FLEET_EPOCHS [3]; FLEET_WORKERS [16] requests in flight a rank;
#   FLEET_COMPUTE_MS [10] GPU time per batch of FLEET_BATCH [32]; FLEET_SEED [42];
#   FLEET_POLICY [s3fifo]; FLEET_PEER_TIMEOUT [50] ms (--peer-timeout); the cloud's CLOUD_*
#   (bench/lib/cloud.sh). Results: bench/results/fleet.json.
# The fleet setups need a gateway built with the fleet (--peers, --fleet-listen, ...);
# `bench/fleet.sh independent` runs without.
CLOUD_ACCESS_LOG=1
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
source "$REPO/bench/lib/cloud.sh"

N="${FLEET_OBJECTS:-3000}"
SIZE="${FLEET_SIZE:-110K}"
RATIO="${FLEET_RATIO:-2.5}"
EPOCHS="${FLEET_EPOCHS:-3}"
WORKERS="${FLEET_WORKERS:-16}"
COMPUTE_MS="${FLEET_COMPUTE_MS:-10}"
BATCH="${FLEET_BATCH:-32}"
SEED="${FLEET_SEED:-42}"
POLICY="${FLEET_POLICY:-s3fifo}"
PEER_TIMEOUT="${FLEET_PEER_TIMEOUT:-50}"
GATEWAYS=3
THREADS="$(nproc)"
PREFIX="fleet/"
ALL_SETUPS=(independent fleet fleet-hot fleet-all)
SETUPS=("$@")
[ "${#SETUPS[@]}" -gt 0 ] || SETUPS=("${ALL_SETUPS[@]}")
for s in "${SETUPS[@]}"; do
    [[ " ${ALL_SETUPS[*]} " == *" $s "* ]] || die "unknown setup $s (one of: ${ALL_SETUPS[*]})"
done
need jq curl awk
[ -x "$TRAINSIM_BIN" ] || die "$TRAINSIM_BIN is missing: make build/s3cached-trainsim"
[ -x "$GATEWAY_BIN" ] || die "$GATEWAY_BIN is missing: make"
if [[ " ${SETUPS[*]} " == *" fleet"* ]]; then
    for flag in --peers --self --fleet-listen --fleet-secret-file --fleet-copy --peer-timeout; do
        "$GATEWAY_BIN" --help 2>&1 | grep -q -- "^  $flag " ||
            die "$GATEWAY_BIN has no $flag: the fleet setups need a gateway with the fleet (bench/fleet.sh independent runs without)"
    done
fi

SIZE_B="$(numfmt --from=iec "$SIZE")"
DATASET_B=$((N * SIZE_B))
CACHE_B="$(awk -v d="$DATASET_B" -v r="$RATIO" 'BEGIN {printf "%d", d / r}')"
[ "$CACHE_B" -gt 0 ] || die "FLEET_RATIO $RATIO gives no cache"
cloud_up
cloud_seed "$PREFIX" "$N" --size "$SIZE"

# The fleet secret, as a file only this user reads.
SECRET="$WORK/fleet-secret"
(umask 077 && head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$SECRET")

cat <<EOF
== bench/fleet.sh: $N objects x $SIZE ($((DATASET_B / 1048576)) MiB), $GATEWAYS gateways of $((CACHE_B / 1048576)) MiB each (dataset = $RATIO x one cache, $(awk -v r="$RATIO" -v g="$GATEWAYS" 'BEGIN {printf "%.0f", 100 * r / g}') % of the fleet's), $EPOCHS shuffled epochs (seed $SEED)
   readers: $GATEWAYS s3cached-trainsim ranks, one per gateway, $WORKERS requests in flight each, batch $BATCH, $COMPUTE_MS ms compute per batch, stepping together
   gateways: --policy $POLICY, $THREADS threads each; fleet: --peer-timeout $PEER_TIMEOUT
   cloud: ${CLOUD_DELAY_MS} ms each way ($((2 * CLOUD_DELAY_MS)) ms round trip), $CLOUD_RATE each way; requests counted in its access log
EOF

# Starts the setup's gateways on 127.0.0.2.. (one address a node). Sets GW_PIDS and GW_URLS.
# FLEET_COPY set: they form a fleet with that --fleet-copy.
gateways_start() { # SETUP [FLEET_COPY]
    local setup="$1" copy="${2:-}" i hosts=() ports=() fports=() peers=""
    GW_PIDS=()
    GW_URLS=()
    for ((i = 0; i < GATEWAYS; i++)); do
        hosts+=("127.0.0.$((i + 2))")
        ports+=("$(free_port "${hosts[$i]}")")
        fports+=("$(free_port "${hosts[$i]}")")
        [ "${fports[$i]}" != "${ports[$i]}" ] || die "the same free port twice"
        peers="$peers${peers:+,}http://${hosts[$i]}:${fports[$i]}"
    done
    for ((i = 0; i < GATEWAYS; i++)); do
        local fleet=()
        [ -z "$copy" ] || fleet=(--peers "$peers" --self "http://${hosts[$i]}:${fports[$i]}"
            --fleet-listen "${hosts[$i]}:${fports[$i]}" --fleet-secret-file "$SECRET"
            --fleet-copy "$copy" --peer-timeout "$PEER_TIMEOUT")
        GW_HOST="${hosts[$i]}" gw_start "${ports[$i]}" "$WORK/cache-$setup-$i" "$CLOUD_URL" \
            --cache-size "$CACHE_B" --policy "$POLICY" --threads "$THREADS" "${fleet[@]}"
        GW_PIDS+=("$GW_PID")
        GW_URLS+=("$GW_URL")
    done
}

# One epoch: the ranks at once, each through its own gateway, then their JSON merged as one
# run's epoch (wall time the slowest rank's, stall the largest, objects and bytes summed).
epoch_run() { # SETUP EPOCH(0-based) JSON_OUT
    local setup="$1" e="$2" js="$3" r pids=() failed=0 files=()
    local steps="$WORK/steps-$setup-$e"
    rm -f "$steps"
    for ((r = 0; r < GATEWAYS; r++)); do
        "$TRAINSIM_BIN" train --endpoint "${GW_URLS[$r]}" --bucket "$CLOUD_BUCKET" \
            --prefix "$PREFIX" --objects "$N" --size "$SIZE" --workers "$WORKERS" \
            --batch-size "$BATCH" --compute-ms "$COMPUTE_MS" --epochs 1 \
            --shuffle-seed $((SEED + e)) --world-size "$GATEWAYS" --rank "$r" \
            --step-barrier "$steps" --stats-url none --json "$js.$r" --quiet \
            >"$js.$r.log" 2>&1 &
        pids+=("$!")
        bench_track "$!"
        files+=("$js.$r")
    done
    for r in "${!pids[@]}"; do
        wait "${pids[$r]}" || { failed=1; cat "$js.$r.log" >&2; }
    done
    [ "$failed" = 0 ] || die "$setup: a rank failed in epoch $((e + 1))"
    rm -f "$steps"
    jq -s --argjson epoch "$((e + 1))" '[.[].epochs[0]] as $e
        | ($e | map(.wall_s) | max) as $wall
        | {epoch: $epoch, wall_s: $wall, stall_s: ($e | map(.stall_s) | max),
           stall_share: (($e | map(.stall_s) | max) / $wall),
           objects: ($e | map(.objects) | add), bytes: ($e | map(.bytes) | add),
           objects_per_s: (($e | map(.objects) | add) / $wall),
           mb_per_s: (($e | map(.bytes) | add) / $wall / 1e6),
           p50_ms: ($e | map(.lat_p50_ms) | max), p99_ms: ($e | map(.lat_p99_ms) | max),
           failed: ($e | map(.failed) | add), corrupt: ($e | map(.corrupt) | add)}' \
        "${files[@]}" >"$js"
}

OUT="$WORK/setups.jsonl"
: >"$OUT"
LOG_LINE=1
read -r _ _ _ _ _ lines <<<"$(cloud_requests "$LOG_LINE")"
LOG_LINE=$((LOG_LINE + lines)) # the seeding's requests are not counted
BYTES_BEFORE="$(cloud_bytes_back_settled)"
for setup in "${SETUPS[@]}"; do
    t0=$SECONDS
    copy=""
    case "$setup" in
    fleet) copy=none ;;
    fleet-*) copy="${setup#fleet-}" ;;
    esac
    gateways_start "$setup" "$copy"
    : >"$WORK/$setup.epochs.jsonl"
    for ((e = 0; e < EPOCHS; e++)); do
        js="$WORK/$setup-$e.json"
        epoch_run "$setup" "$e" "$js"
        bytes="$(cloud_bytes_back_settled)"
        read -r gets ranged heads other body lines <<<"$(cloud_requests "$LOG_LINE" "$PREFIX")"
        LOG_LINE=$((LOG_LINE + lines))
        jq -c --argjson gets "$gets" --argjson ranged "$ranged" --argjson heads "$heads" \
            --argjson other "$other" --argjson body "$body" \
            --argjson bytes "$((bytes - BYTES_BEFORE))" '. + {upstream_gets: $gets,
             upstream_ranged_gets: $ranged, upstream_heads: $heads, upstream_other: $other,
             upstream_bytes: $bytes, upstream_body_bytes: $body,
             served_without_bucket: (if .objects > 0 then 1 - $gets / .objects else null end)}' \
            "$js" >>"$WORK/$setup.epochs.jsonl"
        BYTES_BEFORE="$bytes"
        jq -r --arg s "$setup" '"\($s | .[0:12] | . + " " * (12 - length)) epoch \(.epoch)  \(.wall_s * 100 | round / 100) s  stall \(.stall_share * 1000 | round / 10)%  upstream \(.upstream_gets) GETs (\(.upstream_ranged_gets) ranged, \(.upstream_heads) HEADs), \(.upstream_bytes / 1048576 | round) MiB  served without the bucket \(if .served_without_bucket == null then "n/a" else (.served_without_bucket * 1000 | round / 10 | tostring) + "%" end)  failed \(.failed) corrupt \(.corrupt)"' \
            <<<"$(tail -n 1 "$WORK/$setup.epochs.jsonl")"
    done
    stats="$(for u in "${GW_URLS[@]}"; do curl -fsS "$u/_s3cached/stats" || echo null; done | jq -s -c .)"
    for p in "${GW_PIDS[@]}"; do bench_stop "$p"; done
    for ((i = 0; i < GATEWAYS; i++)); do rm -rf "$WORK/cache-$setup-$i"; done
    jq -s -c --arg s "$setup" --arg copy "$copy" --argjson st "$stats" \
        --argjson t "$((SECONDS - t0))" --argjson n "$N" '
        {setup: $s, fleet_copy: (if $copy == "" then null else $copy end), run_s: $t,
         epochs: .,
         totals: {upstream_gets: (map(.upstream_gets) | add),
                  upstream_gets_per_object: ((map(.upstream_gets) | add) / $n),
                  upstream_heads: (map(.upstream_heads) | add),
                  upstream_bytes: (map(.upstream_bytes) | add),
                  wall_s: (map(.wall_s) | add),
                  failed: (map(.failed) | add), corrupt: (map(.corrupt) | add)},
         gateway_stats: $st}' "$WORK/$setup.epochs.jsonl" >>"$OUT"
done

RESULT="$(jq -s --argjson n "$N" --arg size "$SIZE" --argjson sb "$SIZE_B" --argjson cache "$CACHE_B" \
    --argjson g "$GATEWAYS" --arg ratio "$RATIO" --argjson epochs "$EPOCHS" \
    --argjson workers "$WORKERS" --argjson compute "$COMPUTE_MS" --argjson batch "$BATCH" \
    --argjson seed "$SEED" --arg policy "$POLICY" --argjson pt "$PEER_TIMEOUT" \
    --argjson threads "$THREADS" --argjson cloud "$CLOUD_JSON" '
    . as $setups
    | ($setups | map({key: .setup, value: .}) | from_entries) as $by
    | {settings: {objects: $n, size: $size, size_bytes: $sb, dataset_bytes: ($n * $sb),
                  gateways: $g, cache_bytes_per_gateway: $cache,
                  fleet_cache_bytes: ($g * $cache), dataset_over_one_cache: ($ratio | tonumber),
                  epochs: $epochs, ranks: $g, workers_per_rank: $workers,
                  compute_ms_per_batch: $compute, batch: $batch, shuffle_seed: $seed,
                  policy: $policy, peer_timeout_ms: $pt, gateway_threads: $threads},
       cloud: $cloud, setups: $setups}
    | if ($by.independent and $by.fleet) then
        .fleet_vs_independent = {
            upstream_bytes: {independent: $by.independent.totals.upstream_bytes,
                             fleet: $by.fleet.totals.upstream_bytes,
                             ratio: (if $by.independent.totals.upstream_bytes > 0
                                     then $by.fleet.totals.upstream_bytes
                                          / $by.independent.totals.upstream_bytes else null end)},
            epochs: [range(0; $epochs) as $i
                | {epoch: ($i + 1),
                   wall_s: {independent: $by.independent.epochs[$i].wall_s,
                            fleet: $by.fleet.epochs[$i].wall_s},
                   upstream_gets: {independent: $by.independent.epochs[$i].upstream_gets,
                                   fleet: $by.fleet.epochs[$i].upstream_gets},
                   upstream_bytes: {independent: $by.independent.epochs[$i].upstream_bytes,
                                    fleet: $by.fleet.epochs[$i].upstream_bytes}}]}
      else . end
    | if $by.fleet then
        .bars = {upstream_gets_per_object: ($by.fleet.totals
                    | {gets: .upstream_gets, objects: $n, per_object: .upstream_gets_per_object,
                       met: (.upstream_gets_per_object <= 1.05)}),
                 served_without_bucket: [$by.fleet.epochs[1:][]
                    | {epoch, served_without_bucket, met: (.served_without_bucket >= 0.95)}],
                 no_failed_reads: ($by.fleet.totals | {failed, corrupt,
                    met: (.failed == 0 and .corrupt == 0)})}
      else . end' "$OUT")"
echo
printf '%-12s %5s %9s %7s %10s %11s %9s\n' setup epoch "wall s" stall "up GETs" "up MiB" "no bucket"
jq -r '.setups[] | .setup as $s | .epochs[] | [$s, .epoch, (.wall_s * 100 | round / 100),
       ((.stall_share * 1000 | round) / 10), .upstream_gets, (.upstream_bytes / 1048576 | round),
       (if .served_without_bucket == null then "n/a" else ((.served_without_bucket * 1000 | round) / 10 | tostring) end)] | @tsv' \
    <<<"$RESULT" | awk -F'\t' '{printf "%-12s %5s %9.2f %6.1f%% %10d %11d %8s%%\n", $1, $2, $3, $4, $5, $6, $7}'
jq -r '.setups[] | "\(.setup): \(.totals.upstream_gets) upstream GETs for \(.epochs[0].objects) reads an epoch (\(.totals.upstream_gets_per_object * 100 | round / 100) per object), \(.totals.upstream_bytes / 1048576 | round) MiB from the bucket"' <<<"$RESULT"
jq -r '.fleet_vs_independent? // empty | "fleet / independent: upstream bytes \(.upstream_bytes.ratio * 1000 | round / 1000)"' <<<"$RESULT"
jq -r '.bars? // empty | "bar: fleet upstream GETs \(.upstream_gets_per_object.gets) for \(.upstream_gets_per_object.objects) objects (\(.upstream_gets_per_object.per_object * 100 | round / 100) per object, want <= 1.05): \(if .upstream_gets_per_object.met then "met" else "MISSED" end)",
    (.served_without_bucket[] | "bar: fleet epoch \(.epoch) served without the bucket \(.served_without_bucket * 1000 | round / 10)% (want >= 95%): \(if .met then "met" else "MISSED" end)"),
    "bar: fleet failed reads \(.no_failed_reads.failed), corrupt \(.no_failed_reads.corrupt) (want 0): \(if .no_failed_reads.met then "met" else "MISSED" end)"' <<<"$RESULT"
bench_write_results "$RESULT"

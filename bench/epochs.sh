#!/usr/bin/env bash
# bench/epochs.sh - training epochs against the emulated cloud: a dataset twice the cache,
# 3 shuffled epochs, read by s3cached-trainsim (a DataLoader emulator) through
#   direct                 no cache: the trainer reads the cloud
#   nginx-proxy-cache      nginx caching reverse proxy, the same byte budget
#   s3fifo, lru, fixed, importance
#                          s3cached with that policy, no manifest
#   clairvoyant            s3cached --policy clairvoyant with the run's manifest, no prefetch
#                          (the policy plans evictions by the future; nothing is fetched early)
#   clairvoyant-prefetch   the same, and the gateway prefetches ahead of the trainer
# Every setup reads the same objects in the same order (trainsim's shuffle is the manifest's).
# Per epoch: wall time, data-stall share (time the simulated GPU waited for data), hit ratio.
#
# Usage: bench/epochs.sh [SETUP...]          (default: all of the above, in that order)
# Settings: EPOCHS_OBJECTS [6000] objects of EPOCHS_SIZE [110K]; EPOCHS [3];
#   EPOCHS_WORKERS [16] trainer requests in flight; EPOCHS_COMPUTE_MS [10] GPU time per batch of
#   EPOCHS_BATCH [32]; EPOCHS_PREFETCH_CONCURRENCY [64] the gateway's prefetches in flight;
#   EPOCHS_SEED [42]; the cloud's CLOUD_* (bench/lib/cloud.sh). Results: bench/results/epochs.json.
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
source "$REPO/bench/lib/cloud.sh"
source "$REPO/bench/lib/nginx.sh"

N="${EPOCHS_OBJECTS:-6000}"
SIZE="${EPOCHS_SIZE:-110K}"
EPOCHS="${EPOCHS:-3}"
WORKERS="${EPOCHS_WORKERS:-16}"
COMPUTE_MS="${EPOCHS_COMPUTE_MS:-10}"
BATCH="${EPOCHS_BATCH:-32}"
PREFETCH_C="${EPOCHS_PREFETCH_CONCURRENCY:-64}"
SEED="${EPOCHS_SEED:-42}"
THREADS="$(nproc)"
PREFIX="trainsim/"
ALL_SETUPS=(direct nginx-proxy-cache s3fifo lru fixed importance clairvoyant clairvoyant-prefetch)
SETUPS=("$@")
[ "${#SETUPS[@]}" -gt 0 ] || SETUPS=("${ALL_SETUPS[@]}")
for s in "${SETUPS[@]}"; do
    [[ " ${ALL_SETUPS[*]} " == *" $s "* ]] || die "unknown setup $s (one of: ${ALL_SETUPS[*]})"
done
need jq curl
[ -x "$TRAINSIM_BIN" ] || die "$TRAINSIM_BIN is missing: make build/s3cached-trainsim"

SIZE_B="$(numfmt --from=iec "$SIZE")"
DATASET_B=$((N * SIZE_B))
CACHE_B=$((DATASET_B / 2))
cloud_up
cloud_seed "$PREFIX" "$N" --size "$SIZE"

cat <<EOF
== bench/epochs.sh: $N objects x $SIZE ($((DATASET_B / 1048576)) MiB), cache $((CACHE_B / 1048576)) MiB (half), $EPOCHS shuffled epochs (seed $SEED)
   trainer: s3cached-trainsim, $WORKERS requests in flight, batch $BATCH, $COMPUTE_MS ms compute per batch, 2 batches prefetched
   cloud: ${CLOUD_DELAY_MS} ms each way ($((2 * CLOUD_DELAY_MS)) ms round trip), $CLOUD_RATE each way
   caches: $THREADS gateway threads = $THREADS nginx workers; gateway prefetch concurrency $PREFETCH_C
EOF

# The run's plan as a manifest: the dataset's keys in index order, shuffled per epoch exactly
# as trainsim shuffles (docs/manifests.md).
manifest_body() { # PREFETCH(true|false)
    seq 0 $((N - 1)) | awk -v p="$PREFIX" '{printf "%s%08d.bin\n", p, $1}' |
        jq -R . | jq -sc --arg b "$CLOUD_BUCKET" --argjson e "$EPOCHS" --argjson s "$SEED" \
            --argjson pf "$1" '{bucket: $b, keys: ., num_epochs: $e, shuffle: true, seed: $s,
                               prefetch: $pf, name: "bench/epochs.sh"}'
}

train() { # ENDPOINT JSON_OUT [more trainsim options]
    local endpoint="$1" out="$2"
    shift 2
    "$TRAINSIM_BIN" train --endpoint "$endpoint" --bucket "$CLOUD_BUCKET" --prefix "$PREFIX" \
        --objects "$N" --size "$SIZE" --workers "$WORKERS" --batch-size "$BATCH" \
        --compute-ms "$COMPUTE_MS" --json "$out" --quiet "$@" >"$out.log" 2>&1 ||
        { cat "$out.log" >&2; die "trainsim failed ($*)"; }
}

OUT="$WORK/setups.jsonl"
: >"$OUT"
for setup in "${SETUPS[@]}"; do
    t0=$SECONDS
    js="$WORK/$setup.json"
    extra='{}'
    case "$setup" in
    direct)
        train "$CLOUD_URL" "$js" --epochs "$EPOCHS" --shuffle-seed "$SEED" --stats-url none
        ;;
    nginx-proxy-cache)
        # nginx has no counters: one epoch per trainsim run (seed S+e is epoch e's shuffle),
        # and its access log says HIT or MISS for each request.
        nginx_proxy_cache_start ngx "$(free_port)" "${CLOUD_URL#http://}" "$CACHE_B" "$THREADS" count
        nginx_size_sampler_start ngx
        line=1
        : >"$WORK/ngx-epochs.jsonl"
        for ((e = 0; e < EPOCHS; e++)); do
            train "$NGX_URL" "$WORK/ngx-$e.json" --epochs 1 --shuffle-seed $((SEED + e)) --stats-url none
            read -r h m lines <<<"$(nginx_cache_counts ngx "$line")"
            line=$((line + lines))
            jq --argjson e "$((e + 1))" --argjson h "$h" --argjson m "$m" \
                '.epochs[0] + {epoch: $e, hits: $h, misses: $m,
                               hit_ratio: (if $h + $m > 0 then $h / ($h + $m) else null end)}' \
                "$WORK/ngx-$e.json" >>"$WORK/ngx-epochs.jsonl"
        done
        jq -s --slurpfile c "$WORK/ngx-0.json" '{config: $c[0].config, epochs: .}' \
            "$WORK/ngx-epochs.jsonl" >"$js"
        bench_stop "$NGX_SAMPLER_PID"
        extra="$(jq -n --arg atend "$(du -sb "$WORK/ngx/cache" | cut -f1)" --arg peak "$(nginx_size_peak ngx)" \
            --argjson budget "$CACHE_B" '{cache_dir_bytes_at_end: ($atend | tonumber),
            cache_dir_bytes_peak: ($peak | tonumber), peak_over_budget: (($peak | tonumber) / $budget)}')"
        say "nginx cache directory: peak $(nginx_size_peak ngx) bytes for a max_size of $CACHE_B"
        bench_stop "$NGX_PID"
        ;;
    s3fifo | lru | fixed | importance | clairvoyant | clairvoyant-prefetch)
        policy="${setup%-prefetch}"
        gw_start "$(free_port)" "$WORK/cache-$setup" "$CLOUD_URL" --cache-size "$CACHE_B" \
            --policy "$policy" --threads "$THREADS" --prefetch-concurrency "$PREFETCH_C"
        case "$setup" in
        clairvoyant)
            mid="$(manifest_body false | curl -fsS -X POST "$GW_URL/_s3cached/manifests" \
                -H 'Content-Type: application/json' --data-binary @- | jq -r .id)"
            train "$GW_URL" "$js" --epochs "$EPOCHS" --manifest-id "$mid"
            ;;
        clairvoyant-prefetch)
            train "$GW_URL" "$js" --epochs "$EPOCHS" --shuffle-seed "$SEED" --gateway-order
            ;;
        *)
            train "$GW_URL" "$js" --epochs "$EPOCHS" --shuffle-seed "$SEED"
            ;;
        esac
        extra="$(curl -fsS "$GW_URL/_s3cached/stats" | jq '{gateway_stats: .}')"
        bench_stop "$GW_PID"
        rm -rf "$WORK/cache-$setup"
        ;;
    esac
    jq -c --arg s "$setup" --argjson x "$extra" --argjson t "$((SECONDS - t0))" \
        '{setup: $s, run_s: $t, config: .config, epochs: [.epochs[] |
          {epoch, wall_s, stall_s, stall_share, objects_per_s, mb_per_s,
           p50_ms: (.lat_p50_ms // .p50_ms), p99_ms: (.lat_p99_ms // .p99_ms),
           hits, misses, hit_ratio, failed, corrupt}]} + $x' "$js" >>"$OUT"
    jq -r '.setup as $s | .epochs[] | [$s, .epoch, (.wall_s * 100 | round / 100),
           ((.stall_share * 1000 | round) / 10), (.objects_per_s | round),
           (if .hit_ratio == null then "n/a" else ((.hit_ratio * 1000 | round) / 10) end)] | @tsv' \
        <<<"$(tail -n 1 "$OUT")" |
        awk -F'\t' 'BEGIN {if (!shown) {}} {printf "%-22s epoch %s  %8.2f s  stall %5.1f%%  %6d obj/s  hits %s%%\n", $1, $2, $3, $4, $5, $6}'
done

RESULT="$(jq -s --argjson n "$N" --arg size "$SIZE" --argjson sb "$SIZE_B" --argjson cache "$CACHE_B" \
    --argjson epochs "$EPOCHS" --argjson workers "$WORKERS" --argjson compute "$COMPUTE_MS" \
    --argjson batch "$BATCH" --argjson pfc "$PREFETCH_C" --argjson seed "$SEED" \
    --argjson threads "$THREADS" --argjson cloud "$CLOUD_JSON" '
    . as $setups
    | ($setups | map({key: .setup, value: .}) | from_entries) as $by
    | {settings: {objects: $n, size: $size, size_bytes: $sb, dataset_bytes: ($n * $sb),
                  cache_bytes: $cache, epochs: $epochs, trainer_workers: $workers,
                  compute_ms_per_batch: $compute, batch: $batch, shuffle_seed: $seed,
                  gateway_threads: $threads, nginx_workers: $threads,
                  gateway_prefetch_concurrency: $pfc},
       cloud: $cloud, setups: $setups}
    | if ($by.direct and $by["clairvoyant-prefetch"]) then
        .bars = {clairvoyant_prefetch_vs_direct: [range(1; $epochs) as $i
                 | {epoch: ($i + 1),
                    speedup: ($by.direct.epochs[$i].wall_s / $by["clairvoyant-prefetch"].epochs[$i].wall_s),
                    stall_share: $by["clairvoyant-prefetch"].epochs[$i].stall_share}
                 | . + {met: (.speedup >= 5 and .stall_share < 0.10)}]}
      else . end' "$OUT")"
echo
jq -r '.bars.clairvoyant_prefetch_vs_direct[]? | "bar: epoch \(.epoch) clairvoyant-prefetch \(.speedup * 100 | round / 100)x faster than direct (want >= 5), stall \((.stall_share * 1000 | round) / 10)% (want < 10%): \(if .met then "met" else "MISSED" end)"' <<<"$RESULT"
bench_write_results "$RESULT"

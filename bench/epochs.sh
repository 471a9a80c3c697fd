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
#   clairvoyant-cache-aware
#                          the same with the cache-aware order (trainsim --cache-aware): each
#                          epoch reads what the gateway holds first, then the rest
# and the same for the EPOCHS_RANKS [8] ranks of one data-parallel job on one node (8 GPUs), each
# an s3cached-trainsim --world-size 8 --rank r reading its DistributedSampler share of every
# epoch, the ranks stepping together through --step-barrier as DDP's all-reduce makes them:
#   direct-ranks, lru-ranks, clairvoyant-ranks (one manifest a rank, no prefetch),
#   clairvoyant-prefetch-ranks (each rank registers its manifest and the gateway prefetches)
# For the gateway's rank setups the hits are counted in its access log, epoch by epoch, and set
# against the offline optimum on the trace it saw (build/s3cached-sim's optimum row: Belady's
# MIN with bypass) and an exact LRU on the same trace.
# Every setup reads the same objects in the same order (trainsim's shuffle is the manifest's).
# Per epoch: wall time, data-stall share (time the simulated GPU waited for data), hit ratio.
# A rank setup's epoch is its slowest rank's; its stall is the largest rank's.
#
# Usage: bench/epochs.sh [SETUP...]          (default: all of the above, in that order)
# Settings: EPOCHS_OBJECTS [6000] objects of EPOCHS_SIZE [110K]; EPOCHS [3];
#   EPOCHS_WORKERS [16] trainer requests in flight; EPOCHS_COMPUTE_MS [10] GPU time per batch of
#   EPOCHS_BATCH [32]; EPOCHS_PREFETCH_CONCURRENCY [64] the gateway's prefetches in flight;
#   EPOCHS_SEED [42]; EPOCHS_RANKS [8] ranks of the rank setups, each with EPOCHS_RANK_WORKERS [4]
#   requests in flight and batches of EPOCHS_BATCH; the cloud's CLOUD_* (bench/lib/cloud.sh).
#   Results: bench/results/epochs.json.
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
RANKS="${EPOCHS_RANKS:-8}"
RANK_WORKERS="${EPOCHS_RANK_WORKERS:-4}"
THREADS="$(nproc)"
PREFIX="trainsim/"
ALL_SETUPS=(direct nginx-proxy-cache s3fifo lru fixed importance clairvoyant clairvoyant-prefetch
    clairvoyant-cache-aware direct-ranks lru-ranks clairvoyant-ranks clairvoyant-prefetch-ranks)
SETUPS=("$@")
[ "${#SETUPS[@]}" -gt 0 ] || SETUPS=("${ALL_SETUPS[@]}")
for s in "${SETUPS[@]}"; do
    [[ " ${ALL_SETUPS[*]} " == *" $s "* ]] || die "unknown setup $s (one of: ${ALL_SETUPS[*]})"
done
need jq curl
[ -x "$TRAINSIM_BIN" ] || die "$TRAINSIM_BIN is missing: make build/s3cached-trainsim"
[ -x "$SIM_BIN" ] || die "$SIM_BIN is missing: make build/s3cached-sim"

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
# as trainsim shuffles (docs/manifests.md); with RANK, that rank's share of a RANKS-rank job.
manifest_body() { # PREFETCH(true|false) [RANK]
    seq 0 $((N - 1)) | awk -v p="$PREFIX" '{printf "%s%08d.bin\n", p, $1}' |
        jq -R . | jq -sc --arg b "$CLOUD_BUCKET" --argjson e "$EPOCHS" --argjson s "$SEED" \
            --argjson pf "$1" --arg r "${2:-}" --argjson w "$RANKS" '
            {bucket: $b, keys: ., num_epochs: $e, shuffle: true, seed: $s,
             prefetch: $pf, name: "bench/epochs.sh"}
            + if $r == "" then {} else {world_size: $w, rank: ($r | tonumber)} end'
}

train() { # ENDPOINT JSON_OUT [more trainsim options]
    local endpoint="$1" out="$2"
    shift 2
    "$TRAINSIM_BIN" train --endpoint "$endpoint" --bucket "$CLOUD_BUCKET" --prefix "$PREFIX" \
        --objects "$N" --size "$SIZE" --workers "$WORKERS" --batch-size "$BATCH" \
        --compute-ms "$COMPUTE_MS" --json "$out" --quiet "$@" >"$out.log" 2>&1 ||
        { cat "$out.log" >&2; die "trainsim failed ($*)"; }
}

# Runs the RANKS ranks of one job at once, stepping together, and merges their JSON into JS as
# one run: an epoch's wall time is its slowest rank's, its stall the largest rank's, objects
# and bytes the ranks' sum. With MIDS set (an array, one manifest id a rank) each rank reads
# its manifest's order.
ranks_train() { # ENDPOINT JS [more trainsim options for every rank]
    local endpoint="$1" js="$2" r pids=() failed=0
    shift 2
    local steps="$js.steps"
    rm -f "$steps"
    for ((r = 0; r < RANKS; r++)); do
        local own=()
        [ "${#MIDS[@]}" -eq 0 ] || own=(--manifest-id "${MIDS[$r]}")
        "$TRAINSIM_BIN" train --endpoint "$endpoint" --bucket "$CLOUD_BUCKET" --prefix "$PREFIX" \
            --objects "$N" --size "$SIZE" --workers "$RANK_WORKERS" --batch-size "$BATCH" \
            --compute-ms "$COMPUTE_MS" --epochs "$EPOCHS" --world-size "$RANKS" --rank "$r" \
            --step-barrier "$steps" --json "$js.$r" --quiet "${own[@]}" "$@" >"$js.$r.log" 2>&1 &
        pids+=("$!")
        bench_track "$!"
    done
    for r in "${!pids[@]}"; do
        wait "${pids[$r]}" || { failed=1; cat "$js.$r.log" >&2; }
    done
    [ "$failed" = 0 ] || die "a rank failed ($*)"
    rm -f "$steps"
    local files=()
    for ((r = 0; r < RANKS; r++)); do files+=("$js.$r"); done
    jq -s '{config: (.[0].config | del(.rank)), epochs: [range(0; .[0].epochs | length) as $i
            | [.[].epochs[$i]] as $e
            | ($e | map(.wall_s) | max) as $wall
            | {epoch: $e[0].epoch, wall_s: $wall, stall_s: ($e | map(.stall_s) | max),
               stall_share: (($e | map(.stall_s) | max) / $wall),
               sync_s: ($e | map(.sync_s) | max),
               objects: ($e | map(.objects) | add), bytes: ($e | map(.bytes) | add),
               objects_per_s: (($e | map(.objects) | add) / $wall),
               mb_per_s: (($e | map(.bytes) | add) / $wall / 1e6),
               lat_p50_ms: ($e | map(.lat_p50_ms) | max), lat_p99_ms: ($e | map(.lat_p99_ms) | max),
               hits: null, misses: null, hit_ratio: null,
               failed: ($e | map(.failed) | add), corrupt: ($e | map(.corrupt) | add)}]}' \
        "${files[@]}" >"$js"
}

# The hits of a rank setup from the gateway's access log (LOG): per epoch (the trace cut into
# epochs of RANKS x ceil(N / RANKS) reads; the ranks' step barrier keeps epochs apart), and
# the optimum and LRU on the whole trace (build/s3cached-sim). Rewrites JS's epochs' hits and
# prints the "trace" object for the setup's record.
trace_hits() { # LOG JS
    local log="$1" js="$2" per_epoch=$((RANKS * ((N + RANKS - 1) / RANKS)))
    jq -R -r --arg b "$CLOUD_BUCKET" 'fromjson? | select(.type == "access" and .method == "GET"
        and .bucket == $b) | [.key, .cache] | @tsv' "$log" >"$js.trace.tsv"
    cut -f1 "$js.trace.tsv" >"$js.trace"
    "$SIM_BIN" --trace "$js.trace" --capacity "$CACHE_B" --size "$SIZE_B" --policy lru --csv \
        >"$js.sim.csv"
    jq -R -s --argjson per "$per_epoch" --slurpfile run "$js" \
        --arg sim "$(cat "$js.sim.csv")" '
        split("\n") | map(select(. != "") | split("\t")[1]) as $cache
        | ($sim | split("\n") | map(split(",")) | map({key: .[0], value: (.[1] | tonumber?)})
           | from_entries) as $model
        | [range(0; $run[0].epochs | length) as $i | $cache[$i * $per:($i + 1) * $per]
           | {hits: map(select(. == "HIT")) | length, misses: map(select(. != "HIT")) | length}]
            as $ep
        | {run: ($run[0] | .epochs |= [to_entries[] | .value + $ep[.key]
                  + {hit_ratio: (if $ep[.key].hits + $ep[.key].misses > 0
                                 then $ep[.key].hits / ($ep[.key].hits + $ep[.key].misses)
                                 else null end)}]),
           trace: {reads: ($cache | length), hits: ($cache | map(select(. == "HIT")) | length),
                   optimum_hits: $model.optimum, lru_model_hits: $model.lru,
                   of_optimum: (if $model.optimum > 0
                                then ($cache | map(select(. == "HIT")) | length) / $model.optimum
                                else null end)}}' "$js.trace.tsv" >"$js.hits"
    jq '.run' "$js.hits" >"$js"
    jq -c '.trace' "$js.hits"
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
    direct-ranks)
        MIDS=()
        ranks_train "$CLOUD_URL" "$js" --shuffle-seed "$SEED" --stats-url none
        extra="$(jq -n --argjson r "$RANKS" --argjson w "$RANK_WORKERS" \
            '{ranks: $r, rank_workers: $w}')"
        ;;
    lru-ranks | clairvoyant-ranks | clairvoyant-prefetch-ranks)
        policy="${setup%-ranks}"
        policy="${policy%-prefetch}"
        port="$(free_port)"
        gw_start "$port" "$WORK/cache-$setup" "$CLOUD_URL" --cache-size "$CACHE_B" \
            --policy "$policy" --threads "$THREADS" --prefetch-concurrency "$PREFETCH_C" \
            --access-log
        MIDS=()
        case "$setup" in
        clairvoyant-ranks)
            for ((r = 0; r < RANKS; r++)); do
                MIDS+=("$(manifest_body false "$r" | curl -fsS -X POST \
                    "$GW_URL/_s3cached/manifests" -H 'Content-Type: application/json' \
                    --data-binary @- | jq -r .id)")
            done
            ranks_train "$GW_URL" "$js" --stats-url none
            ;;
        clairvoyant-prefetch-ranks)
            ranks_train "$GW_URL" "$js" --shuffle-seed "$SEED" --gateway-order --stats-url none
            ;;
        *)
            ranks_train "$GW_URL" "$js" --shuffle-seed "$SEED" --stats-url none
            ;;
        esac
        stats="$(curl -fsS "$GW_URL/_s3cached/stats")"
        bench_stop "$GW_PID"
        trace="$(trace_hits "$WORK/gw-$port.log" "$js")"
        extra="$(jq -n --argjson r "$RANKS" --argjson w "$RANK_WORKERS" --argjson st "$stats" \
            --argjson t "$trace" '{ranks: $r, rank_workers: $w, gateway_stats: $st, trace: $t}')"
        say "$setup: $(jq -r '"\(.hits) hits of \(.reads) reads; optimum \(.optimum_hits), lru model \(.lru_model_hits)"' <<<"$trace")"
        rm -rf "$WORK/cache-$setup"
        ;;
    s3fifo | lru | fixed | importance | clairvoyant | clairvoyant-prefetch | clairvoyant-cache-aware)
        policy="${setup%-prefetch}"
        policy="${policy%-cache-aware}"
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
        clairvoyant-cache-aware)
            train "$GW_URL" "$js" --epochs "$EPOCHS" --shuffle-seed "$SEED" --cache-aware
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
           hits, misses, hit_ratio, failed, corrupt}
          + if has("sync_s") then {sync_s} else {} end]} + $x' "$js" >>"$OUT"
    jq -r '.setup as $s | .epochs[] | [$s, .epoch, (.wall_s * 100 | round / 100),
           ((.stall_share * 1000 | round) / 10), (.objects_per_s | round),
           (if .hit_ratio == null then "n/a" else ((.hit_ratio * 1000 | round) / 10) end)] | @tsv' \
        <<<"$(tail -n 1 "$OUT")" |
        awk -F'\t' 'BEGIN {if (!shown) {}} {printf "%-22s epoch %s  %8.2f s  stall %5.1f%%  %6d obj/s  hits %s%%\n", $1, $2, $3, $4, $5, $6}'
done

RESULT="$(jq -s --argjson n "$N" --arg size "$SIZE" --argjson sb "$SIZE_B" --argjson cache "$CACHE_B" \
    --argjson epochs "$EPOCHS" --argjson workers "$WORKERS" --argjson compute "$COMPUTE_MS" \
    --argjson batch "$BATCH" --argjson pfc "$PREFETCH_C" --argjson seed "$SEED" \
    --argjson threads "$THREADS" --argjson cloud "$CLOUD_JSON" --argjson ranks "$RANKS" \
    --argjson rank_workers "$RANK_WORKERS" '
    . as $setups
    | ($setups | map({key: .setup, value: .}) | from_entries) as $by
    | {settings: {objects: $n, size: $size, size_bytes: $sb, dataset_bytes: ($n * $sb),
                  cache_bytes: $cache, epochs: $epochs, trainer_workers: $workers,
                  compute_ms_per_batch: $compute, batch: $batch, shuffle_seed: $seed,
                  gateway_threads: $threads, nginx_workers: $threads,
                  gateway_prefetch_concurrency: $pfc, ranks: $ranks,
                  rank_workers: $rank_workers},
       cloud: $cloud, setups: $setups}
    | if ($by.direct and $by["clairvoyant-prefetch"]) then
        .bars = {clairvoyant_prefetch_vs_direct: [range(1; $epochs) as $i
                 | {epoch: ($i + 1),
                    speedup: ($by.direct.epochs[$i].wall_s / $by["clairvoyant-prefetch"].epochs[$i].wall_s),
                    stall_share: $by["clairvoyant-prefetch"].epochs[$i].stall_share}
                 | . + {met: (.speedup >= 5 and .stall_share < 0.10)}]}
      else . end
    | if ($by["clairvoyant-prefetch"] and $by["clairvoyant-cache-aware"]) then
        .bars.cache_aware_vs_clairvoyant = [range(1; $epochs) as $i
            | {epoch: ($i + 1),
               speedup: ($by["clairvoyant-prefetch"].epochs[$i].wall_s
                         / $by["clairvoyant-cache-aware"].epochs[$i].wall_s)}
            | . + {met: (.speedup >= 1.5)}]
      else . end
    | if $by["clairvoyant-ranks"] then
        .bars.ranks_clairvoyant_vs_optimum = ($by["clairvoyant-ranks"].trace
            | {hits, optimum_hits, of_optimum, lru_model_hits,
               lru_hits: $by["lru-ranks"].trace.hits?, met: (.of_optimum >= 0.97)})
      else . end
    | if ($by["direct-ranks"] and $by["clairvoyant-prefetch-ranks"]) then
        .bars.ranks_clairvoyant_prefetch_vs_direct = [range(1; $epochs) as $i
            | {epoch: ($i + 1),
               speedup: ($by["direct-ranks"].epochs[$i].wall_s
                         / $by["clairvoyant-prefetch-ranks"].epochs[$i].wall_s)}]
      else . end' "$OUT")"
echo
jq -r '.bars.clairvoyant_prefetch_vs_direct[]? | "bar: epoch \(.epoch) clairvoyant-prefetch \(.speedup * 100 | round / 100)x faster than direct (want >= 5), stall \((.stall_share * 1000 | round) / 10)% (want < 10%): \(if .met then "met" else "MISSED" end)"' <<<"$RESULT"
jq -r '.bars.cache_aware_vs_clairvoyant[]? | "bar: epoch \(.epoch) clairvoyant-cache-aware \(.speedup * 100 | round / 100)x faster than clairvoyant-prefetch (want >= 1.5): \(if .met then "met" else "MISSED" end)"' <<<"$RESULT"
jq -r '.bars.ranks_clairvoyant_vs_optimum? // empty | "bar: clairvoyant-ranks (no prefetch) hits \(.hits), \((.of_optimum // 0) * 1000 | round / 10)% of the optimum \(.optimum_hits) (want >= 97%; lru \(.lru_hits // "n/a")): \(if .met then "met" else "MISSED" end)"' <<<"$RESULT"
jq -r '.bars.ranks_clairvoyant_prefetch_vs_direct[]? | "ranks: epoch \(.epoch) clairvoyant-prefetch-ranks \(.speedup * 100 | round / 100)x faster than direct-ranks"' <<<"$RESULT"
bench_write_results "$RESULT"

#!/usr/bin/env bash
# bench/convergence.sh - is the cache-aware order (docs/manifests.md, "cache_aware") safe for
# convergence? A small real model (an MLP, python3-torch) trains on a synthetic 10-class task
# whose training samples are objects in a local s3rver, read through the gateway in the order
# GatewaySampler yields, once with the seeded order (cache_aware=False) and once cache-aware
# (cache_aware=True), over several seeds (the two orders alternate which runs first), each run
# on a fresh gateway whose cache holds half of the training set. Per run and epoch: training
# loss, held-out loss and accuracy, the hit ratio (X-Cache), and how far the epoch's order is
# from an independent shuffle of the previous one: Spearman's rho between each sample's
# positions in epochs e and e+1 (0 for independent shuffles) and the share of epoch e's second
# half that epoch e+1 reads in its first half (0.5). bench/convergence.py does the training.
#
# Usage: bench/convergence.sh [POLICY...]    (default: clairvoyant lru)
# Settings: CONVERGENCE_SAMPLES [3000] training samples (objects of 2,052 bytes),
#   CONVERGENCE_TEST [2000] held-out samples (in memory), CONVERGENCE_EPOCHS [12],
#   CONVERGENCE_SEEDS ["1 2 3"] the shuffle and weight seeds, CONVERGENCE_CACHE_SHARE [50] the
#   cache as a percentage of the training set's bytes, CONVERGENCE_PREFETCH [0] 1: the gateway
#   prefetches ahead (the hits then depend on how far it races ahead of the trainer).
# Needs /usr/bin/python3 with python3-torch and numpy (Debian), node_modules/.bin/s3rver and
# build/s3cached; no root, no network namespace. Results: bench/results/convergence.json.
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
source "$REPO/bench/lib/s3rver.sh"

SAMPLES="${CONVERGENCE_SAMPLES:-3000}"
TEST="${CONVERGENCE_TEST:-2000}"
EPOCHS_N="${CONVERGENCE_EPOCHS:-12}"
read -r -a SEEDS <<<"${CONVERGENCE_SEEDS:-1 2 3}"
SHARE="${CONVERGENCE_CACHE_SHARE:-50}"
PREFETCH="${CONVERGENCE_PREFETCH:-0}"
POLICIES=("$@")
[ "${#POLICIES[@]}" -gt 0 ] || POLICIES=(clairvoyant lru)
PY=/usr/bin/python3
BUCKET=conv
OBJECT_B=2052 # bench/convergence.py: a 4-byte label and 512 float32 features
need jq curl
[ -x "$GATEWAY_BIN" ] || die "$GATEWAY_BIN is missing: make"
"$PY" -c 'import torch, numpy' 2>/dev/null || die "$PY cannot import torch and numpy: apt-get install python3-torch python3-numpy"

CACHE_B=$((SAMPLES * OBJECT_B * SHARE / 100))
[ "$CACHE_B" -ge 1048576 ] || die "the cache ($CACHE_B bytes) is below the gateway's 1 MiB minimum: more CONVERGENCE_SAMPLES"
load() { cut -d' ' -f1-3 /proc/loadavg; }
LOAD_START="$(load)"

cat <<EOF
== bench/convergence.sh: $SAMPLES training samples x $OBJECT_B bytes, cache $CACHE_B bytes ($SHARE %), $EPOCHS_N epochs, seeds ${SEEDS[*]}, policies ${POLICIES[*]}, prefetch $PREFETCH
   load average at start: $LOAD_START ($(nproc) cores)
EOF

s3rver_start "$BUCKET"
"$PY" "$REPO/bench/convergence.py" seed --s3 "$S3RVER_URL" --bucket "$BUCKET" \
    --train "$SAMPLES" --test "$TEST" >/dev/null || die "seeding failed"

RUNS=()
run() { # POLICY ORDER SEED
    local policy="$1" order="$2" seed="$3" out="$WORK/run-$1-$2-$3.json"
    gw_start "$(free_port)" "$WORK/cache" "$S3RVER_URL" --cache-size "$CACHE_B" --policy "$policy"
    "$PY" "$REPO/bench/convergence.py" train --gateway "$GW_URL" --bucket "$BUCKET" \
        --train "$SAMPLES" --test "$TEST" --order "$order" --seed "$seed" --epochs "$EPOCHS_N" \
        --prefetch "$PREFETCH" --policy "$policy" --out "$out" 2>"$out.log" ||
        { cat "$out.log" >&2; die "training failed ($policy $order seed $seed)"; }
    tail -n 1 "$out.log" >&2
    bench_stop "$GW_PID"
    rm -rf "$WORK/cache"
    RUNS+=("$out")
}

for policy in "${POLICIES[@]}"; do
    i=0
    for seed in "${SEEDS[@]}"; do
        if [ $((i % 2)) = 0 ]; then
            run "$policy" seeded "$seed"
            run "$policy" cache-aware "$seed"
        else
            run "$policy" cache-aware "$seed"
            run "$policy" seeded "$seed"
        fi
        i=$((i + 1))
    done
done

SETTINGS="$(jq -n --argjson n "$SAMPLES" --argjson t "$TEST" --argjson ob "$OBJECT_B" \
    --argjson c "$CACHE_B" --argjson share "$SHARE" --argjson e "$EPOCHS_N" \
    --arg seeds "${SEEDS[*]}" --arg policies "${POLICIES[*]}" --argjson pf "$PREFETCH" \
    --arg l0 "$LOAD_START" --arg l1 "$(load)" \
    '{training_samples: $n, held_out_samples: $t, object_bytes: $ob, cache_bytes: $c,
      cache_share_percent: $share, epochs: $e, seeds: ($seeds | split(" ") | map(tonumber)),
      policies: ($policies | split(" ")), prefetch: ($pf == 1), world_size: 1,
      model: "MLP 512-128-10, SGD momentum 0.9 lr 0.002 weight decay 5e-4, batch 32",
      loadavg_start: $l0, loadavg_end: $l1}')"
RESULT="$("$PY" "$REPO/bench/convergence.py" summarize --settings "$SETTINGS" "${RUNS[@]}")"
echo "   load average at end: $(load)"
bench_write_results "$RESULT"

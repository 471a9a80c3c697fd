#!/usr/bin/env bash
# bench/plans.sh - a 10-million-key plan: how long it takes to parse and register, the peak
# memory while it does, and the memory a registered manifest keeps per key. Each setup is one
# run of build/plan-bench (tools/planbench/main.c: a fresh process per run), PLANS_RUNS times;
# the table shows the median and the spread (min-max) of the runs.
#
#   parse s          plan_parse() of the body (prefix: the listed keys appended and finished)
#   parse peak       the peak RSS while parsing, over the RSS before (the body not counted)
#   register s       what mf_activate() builds from the plan: order, per-item state, future
#   register peak    the peak RSS while registering, over the RSS before
#   B/key, B/access  bytes held after registering (plan + state + future, by allocation
#                    accounting: mallinfo2, malloc's overhead included), per distinct key and
#                    per planned access of this rank
#
# Usage: bench/plans.sh [SETUP...]   (default: every setup below)
#   keys-1e-1r   "keys": PLANS_KEYS keys, 1 epoch, world_size 1, shuffled; the keys listed
#                ascending, as from a listing (no key is looked up: none can repeat)
#   unsorted-1e-1r  the same keys listed in a random order (each looked up for repeats)
#   keys-3e-1r   3 epochs
#   keys-1e-8r   rank 0 of world_size 8, 1 epoch
#   keys-3e-8r   rank 0 of 8, 3 epochs
#   epochs-3     "epochs": 3 lists, each PLANS_KEYS/3 keys shuffled (the keys limit counts
#                every entry of every list)
#   prefix-1e-1r the keys as a prefix's listing returns them, 1 epoch, shuffled
# Settings: PLANS_KEYS [10000000], PLANS_RUNS [3]; BENCH_PLANBENCH another build/plan-bench.
# A "keys" body of 10M such keys is 320 MB: plan-bench raises plan_parse's body limit to fit
# (the gateway takes 64 MiB, about 2 million of these keys).
# Results: bench/results/plans.json (every run, and the medians).
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

KEYS="${PLANS_KEYS:-10000000}"
RUNS="${PLANS_RUNS:-3}"
BIN="${BENCH_PLANBENCH:-$REPO/build/plan-bench}" # another build, to compare
need jq
[ -x "$BIN" ] || die "$BIN is missing: make build/plan-bench"

declare -A SETUP=(
    [keys-1e-1r]="--form keys --keys $KEYS --epochs 1 --world-size 1 --shuffle"
    [unsorted-1e-1r]="--form keys --keys $KEYS --epochs 1 --world-size 1 --shuffle --unsorted"
    [keys-3e-1r]="--form keys --keys $KEYS --epochs 3 --world-size 1 --shuffle"
    [keys-1e-8r]="--form keys --keys $KEYS --epochs 1 --world-size 8 --shuffle"
    [keys-3e-8r]="--form keys --keys $KEYS --epochs 3 --world-size 8 --shuffle"
    [epochs-3]="--form epochs --keys $((KEYS / 3)) --epochs 3"
    [prefix-1e-1r]="--form prefix --keys $KEYS --epochs 1 --world-size 1 --shuffle"
)
ORDER=(keys-1e-1r unsorted-1e-1r keys-3e-1r keys-1e-8r keys-3e-8r epochs-3 prefix-1e-1r)
SETUPS=("$@")
[ "${#SETUPS[@]}" -gt 0 ] || SETUPS=("${ORDER[@]}")
for s in "${SETUPS[@]}"; do [ -n "${SETUP[$s]:-}" ] || die "no setup $s (one of: ${ORDER[*]})"; done

echo "== bench/plans.sh: $KEYS keys like train/n01440764/00001234.JPEG, $RUNS runs per setup"
printf '%-15s %10s %20s %18s %20s %18s %8s %10s\n' setup accesses "parse s" "parse peak MB" \
    "register s" "register peak MB" "B/key" "B/access"
# median and spread of field F over the runs in a JSON array: "m [lo-hi]" (scale, decimals)
stat() {
    jq -r --arg f "$1" --argjson k "$2" --argjson d "$3" \
        'map(.[$f] / $k) | sort | "\(.[length / 2 | floor] * pow(10; $d) | round / pow(10; $d)) [\(.[0] * pow(10; $d) | round / pow(10; $d))-\(.[-1] * pow(10; $d) | round / pow(10; $d))]"' <<<"$4"
}
ALL="$WORK/runs.jsonl"
: >"$ALL"
for s in "${SETUPS[@]}"; do
    : >"$WORK/$s.jsonl"
    for r in $(seq "$RUNS"); do
        # shellcheck disable=SC2086 # the setup's options are words
        "$BIN" ${SETUP[$s]} | jq -c --arg s "$s" '{setup: $s} + .' >>"$WORK/$s.jsonl"
    done
    runs="$(jq -s . "$WORK/$s.jsonl")"
    cat "$WORK/$s.jsonl" >>"$ALL"
    printf '%-15s %10s %20s %18s %20s %18s %8s %10s\n' "$s" "$(jq '.[0].accesses' <<<"$runs")" \
        "$(stat parse_s 1 2 "$runs")" "$(stat parse_peak_rss 1e6 0 "$runs")" \
        "$(stat register_s 1 2 "$runs")" "$(stat register_peak_rss 1e6 0 "$runs")" \
        "$(stat per_key 1 1 "$runs" | cut -d' ' -f1)" "$(stat per_access 1 1 "$runs" | cut -d' ' -f1)"
done
echo "   kept bytes per setup (median run): plan, state arrays, future"
jq -s -r 'group_by(.setup)[] | sort_by(.kept_bytes) | .[length / 2 | floor] |
    "   \(.setup): plan \(.plan_bytes / .keys * 10 | round / 10) B/key, state \(.state_bytes / .keys * 10 | round / 10) B/key, future \(.future_bytes / .accesses * 10 | round / 10) B/access"' "$ALL"

bench_write_results "$(jq -s --argjson keys "$KEYS" --argjson runs "$RUNS" '
    def med(f): map(f) | sort | .[length / 2 | floor];
    {keys: $keys, runs_per_setup: $runs, runs: .,
     medians: (group_by(.setup) | map({setup: .[0].setup, accesses: .[0].accesses,
        parse_s: med(.parse_s), parse_peak_rss: med(.parse_peak_rss),
        register_s: med(.register_s), register_peak_rss: med(.register_peak_rss),
        plan_bytes: med(.plan_bytes), state_bytes: med(.state_bytes),
        future_bytes: med(.future_bytes), per_key: med(.per_key),
        per_access: med(.per_access)}))}' "$ALL")"

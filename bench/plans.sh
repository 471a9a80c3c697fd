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
#   gateway      the whole registration through build/s3cached: a "keys" body of
#                PLANS_GATEWAY_KEYS keys (2,000,000: 64 MB, within the 64 MiB bound), 1 epoch,
#                shuffled, "prefetch": false, POSTed with curl; the time until the reply (the
#                registrar parses a large body: 202, state "parsing") and until the state is
#                "planned"; the gateway's peak RSS over its RSS before the POST, and its RSS
#                kept once registered (RSS deltas: the allocator's free memory counts too)
# Settings: PLANS_KEYS [10000000], PLANS_GATEWAY_KEYS [2000000], PLANS_RUNS [3];
# BENCH_PLANBENCH another build/plan-bench, BENCH_GATEWAY another build/s3cached.
# A "keys" body of 10M such keys is 320 MB: plan-bench raises plan_parse's body limit to fit
# (the gateway takes 64 MiB, about 2 million of these keys).
# Results: bench/results/plans.json (every run, and the medians).
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

KEYS="${PLANS_KEYS:-10000000}"
GW_KEYS="${PLANS_GATEWAY_KEYS:-2000000}"
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
    [gateway]="gateway"
)
ORDER=(keys-1e-1r unsorted-1e-1r keys-3e-1r keys-1e-8r keys-3e-8r epochs-3 prefix-1e-1r gateway)
SETUPS=("$@")
[ "${#SETUPS[@]}" -gt 0 ] || SETUPS=("${ORDER[@]}")
for s in "${SETUPS[@]}"; do [ -n "${SETUP[$s]:-}" ] || die "no setup $s (one of: ${ORDER[*]})"; done

LOAD0="$(cut -d' ' -f1-3 /proc/loadavg)"
echo "== bench/plans.sh: $KEYS keys like train/n01440764/00001234.JPEG, $RUNS runs per setup"
printf '%-15s %10s %20s %18s %20s %18s %8s %10s\n' setup accesses "parse s" "parse peak MB" \
    "register s" "register peak MB" "B/key" "B/access"
# median and spread of field F over the runs in a JSON array: "m [lo-hi]" (scale, decimals)
spread() {
    jq -r --arg f "$1" --argjson k "$2" --argjson d "$3" \
        'map(.[$f] / $k) | sort | "\(.[length / 2 | floor] * pow(10; $d) | round / pow(10; $d)) [\(.[0] * pow(10; $d) | round / pow(10; $d))-\(.[-1] * pow(10; $d) | round / pow(10; $d))]"' <<<"$4"
}
# A /proc/PID/status field in bytes.
proc_bytes() { awk -v f="$2:" '$1 == f {print $2 * 1024}' "/proc/$1/status"; }

# One registration through a fresh gateway (the "gateway" setup): one JSON line.
gateway_run() {
    local body="$WORK/gateway-body.json" pid rss0 t0 t1 t2 reply id state hwm rss1
    [ -s "$body" ] || "$BIN" --form keys --keys "$GW_KEYS" --shuffle --print-body >"$body"
    gw_start "$(free_port)" "$WORK/gateway-cache-$1" "http://127.0.0.1:9" --policy clairvoyant
    pid="$GW_PID"
    echo 5 >"/proc/$pid/clear_refs" # the peak RSS starts at the RSS now
    rss0="$(proc_bytes "$pid" VmRSS)"
    t0="$(date +%s.%N)"
    reply="$(curl -fsS -X POST "$GW_URL/_s3cached/manifests" -H 'Content-Type: application/json' \
        --data-binary @"$body")"
    t1="$(date +%s.%N)"
    id="$(jq -r .id <<<"$reply")"
    while state="$(curl -fsS "$GW_URL/_s3cached/manifests/$id" | jq -r .state)" &&
        [ "$state" = parsing ]; do sleep 0.02; done
    t2="$(date +%s.%N)"
    [ "$state" = planned ] || die "manifest $id: state $state"
    hwm="$(proc_bytes "$pid" VmHWM)"
    rss1="$(proc_bytes "$pid" VmRSS)"
    bench_stop "$pid"
    jq -nc --argjson keys "$GW_KEYS" --argjson body "$(stat -c %s "$body")" \
        --argjson post "$(awk -v a="$t0" -v b="$t1" 'BEGIN {print b - a}')" \
        --argjson reg "$(awk -v a="$t0" -v b="$t2" 'BEGIN {print b - a}')" \
        --argjson peak "$((hwm - rss0))" --argjson kept "$((rss1 - rss0))" \
        '{form: "keys", keys: $keys, epochs: 1, world_size: 1, accesses: $keys, body_bytes: $body,
          post_s: $post, parse_s: $reg, parse_peak_rss: $peak, register_s: 0,
          register_peak_rss: 0, kept_rss: $kept, per_key: ($kept / $keys),
          per_access: ($kept / $keys)}'
}

ALL="$WORK/runs.jsonl"
: >"$ALL"
for s in "${SETUPS[@]}"; do
    : >"$WORK/$s.jsonl"
    for r in $(seq "$RUNS"); do
        if [ "$s" = gateway ]; then
            gateway_run "$r"
        else
            # shellcheck disable=SC2086 # the setup's options are words
            "$BIN" ${SETUP[$s]}
        fi | jq -c --arg s "$s" '{setup: $s} + .' >>"$WORK/$s.jsonl"
    done
    runs="$(jq -s . "$WORK/$s.jsonl")"
    cat "$WORK/$s.jsonl" >>"$ALL"
    if [ "$s" = gateway ]; then
        printf '%-15s %10s  POST answered %s s, planned after %s s; RSS peak +%s MB, kept +%s MB: %s B/key\n' \
            "$s" "$GW_KEYS" "$(spread post_s 1 3 "$runs")" "$(spread parse_s 1 2 "$runs")" \
            "$(spread parse_peak_rss 1e6 0 "$runs")" "$(spread kept_rss 1e6 0 "$runs")" \
            "$(spread per_key 1 1 "$runs")"
        continue
    fi
    printf '%-15s %10s %20s %18s %20s %18s %8s %10s\n' "$s" "$(jq '.[0].accesses' <<<"$runs")" \
        "$(spread parse_s 1 2 "$runs")" "$(spread parse_peak_rss 1e6 0 "$runs")" \
        "$(spread register_s 1 2 "$runs")" "$(spread register_peak_rss 1e6 0 "$runs")" \
        "$(spread per_key 1 1 "$runs" | cut -d' ' -f1)" "$(spread per_access 1 1 "$runs" | cut -d' ' -f1)"
done
echo "   kept bytes per setup (median run): plan, state arrays, future"
jq -s -r 'map(select(.setup != "gateway")) | group_by(.setup)[] | sort_by(.kept_bytes) | .[length / 2 | floor] |
    "   \(.setup): plan \(.plan_bytes / .keys * 10 | round / 10) B/key, state \(.state_bytes / .keys * 10 | round / 10) B/key, future \(.future_bytes / .accesses * 10 | round / 10) B/access"' "$ALL"

LOAD1="$(cut -d' ' -f1-3 /proc/loadavg)"
echo "   load average (1, 5, 15 min) before: $LOAD0; after: $LOAD1 (other work shares the cores)"
bench_write_results "$(jq -s --argjson keys "$KEYS" --argjson runs "$RUNS" \
    --arg load0 "$LOAD0" --arg load1 "$LOAD1" '
    def med(f): map(f) | sort | .[length / 2 | floor];
    {keys: $keys, runs_per_setup: $runs, load_before: $load0, load_after: $load1, runs: .,
     medians: (group_by(.setup) | map({setup: .[0].setup, accesses: .[0].accesses,
        parse_s: med(.parse_s), parse_peak_rss: med(.parse_peak_rss),
        register_s: med(.register_s), register_peak_rss: med(.register_peak_rss),
        plan_bytes: med(.plan_bytes), state_bytes: med(.state_bytes),
        future_bytes: med(.future_bytes), per_key: med(.per_key),
        per_access: med(.per_access), post_s: med(.post_s), kept_rss: med(.kept_rss)}))}' \
    "$ALL")"

#!/usr/bin/env bash
# bench/all.sh - every benchmark, one after the other: what `make bench` runs. Each script's
# output goes to the terminal and to bench/results/NAME.txt, its numbers to
# bench/results/NAME.json; the plots go to docs/img/. The budget is 15 minutes on 2 cores;
# bench/results/all.json records how long each step took.
#
# Usage: bench/all.sh [STEP...]     (default: relay hit miss warmup epochs churn large fleet plots)
# Needs root (the emulated cloud is a network namespace), build/s3cached, build/s3cached-sim,
# build/s3cached-trainsim and build/latency-relay (make bench builds them).
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$REPO"
RESULTS="${BENCH_RESULTS_DIR:-$REPO/bench/results}"
mkdir -p "$RESULTS"
STEPS=("$@")
[ "${#STEPS[@]}" -gt 0 ] || STEPS=(relay hit miss warmup epochs churn large fleet plots)
BUDGET_S=900

declare -A ARGS=(
    [relay]=""     # the relay is not the bottleneck: a few seconds
    [hit]="10 32"  # 10 s per row, 32 connections: 12 rows
    [miss]="30"    # 30 objects per TTFB series
    [warmup]=""    # concurrency 32 and 128
    [epochs]=""    # every setup
    [churn]=""     # chunk sizes 64K 256K 1M
    [large]=""     # parts a b c, 3 runs each (LARGE_* settings)
    [fleet]=""     # 3 independent gateways, then 3 as a fleet (--fleet-copy none, hot, all)
    [plots]=""
)
for s in "${STEPS[@]}"; do
    [ -x "bench/$s.sh" ] || { echo "bench/all.sh: no bench/$s.sh" >&2; exit 2; }
done
for b in "${BENCH_GATEWAY:-build/s3cached}" build/s3cached-sim "${BENCH_RELAY:-build/latency-relay}" \
    "${BENCH_TRAINSIM:-build/s3cached-trainsim}"; do
    [ -x "$b" ] || { echo "bench/all.sh: $b is missing: make bench builds it" >&2; exit 1; }
done

T0=$SECONDS
TIMES="$(mktemp)"
trap 'rm -f "$TIMES"' EXIT
status=0
for s in "${STEPS[@]}"; do
    t=$SECONDS
    echo
    echo "######## bench/$s.sh ${ARGS[$s]:-}"
    # shellcheck disable=SC2086
    if bench/"$s".sh ${ARGS[$s]:-} 2>&1 | tee "$RESULTS/$s.txt"; then rc=0; else rc=$?; fi
    [ "$rc" = 0 ] || status=1
    echo "$s $((SECONDS - t)) $rc" >>"$TIMES"
done
TOTAL=$((SECONDS - T0))
echo
echo "######## bench/all.sh: seconds per step"
awk '{printf "  %-8s %5d s%s\n", $1, $2, ($3 == 0 ? "" : "  FAILED (exit " $3 ")")}' "$TIMES"
printf '  %-8s %5d s (budget %d s: %s)\n' total "$TOTAL" "$BUDGET_S" "$([ "$TOTAL" -le "$BUDGET_S" ] && echo met || echo MISSED)"
jq -Rs --argjson total "$TOTAL" --argjson budget "$BUDGET_S" --arg date "$(date -u +%Y-%m-%dT%H:%M:%SZ)" \
    --arg commit "$(git rev-parse --short HEAD 2>/dev/null || echo unknown)" --arg cpus "$(nproc)" '
    split("\n") | map(select(length > 0) | split(" ")
                      | {step: .[0], seconds: (.[1] | tonumber), exit: (.[2] | tonumber)})
    | {benchmark: "all", date: $date, commit: $commit, cpus: ($cpus | tonumber), steps: .,
       total_seconds: $total, budget_seconds: $budget, within_budget: ($total <= $budget)}' \
    "$TIMES" >"$RESULTS/all.json"
exit "$status"

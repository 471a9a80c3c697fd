#!/usr/bin/env bash
# bench/hit-ab.sh - the hit path of two builds side by side: has a change made hits slower?
#
# Usage: bench/hit-ab.sh REV [RUNS [DURATION_S [CONNECTIONS]]]     (defaults 3, 10, 32)
#
# Builds REV (a commit, e.g. the one before a refactor) in a scratch worktree, then runs
# bench/hit.sh RUNS times for each build, alternating (REV, this checkout, REV, ...), so that
# the machine's drift spreads over both. Each run also measures nginx proxy_cache, the
# comparison every row is judged against. Prints, per object size and server, the median
# requests/s and CPU per 10k hits of each build over its runs with the spread (min-max), and
# writes bench/results/hit-ab.json with every run. Uses only loopback, like bench/hit.sh.
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
REV="${1:?usage: bench/hit-ab.sh REV [RUNS [DURATION_S [CONNECTIONS]]]}"
RUNS="${2:-3}"
DUR="${3:-10}"
CONNS="${4:-32}"
OUT="$REPO/bench/results/hit-ab.json"
SCRATCH="$(mktemp -d /tmp/s3cached-hit-ab.XXXXXX)"
cleanup() {
    git -C "$REPO" worktree remove --force "$SCRATCH/old" >/dev/null 2>&1 || true
    rm -rf "$SCRATCH"
}
trap cleanup EXIT

git -C "$REPO" worktree add -q --detach "$SCRATCH/old" "$REV"
make -s -C "$SCRATCH/old" build/s3cached
make -s -C "$REPO" build/s3cached
OLD_BIN="$SCRATCH/old/build/s3cached"
NEW_BIN="$REPO/build/s3cached"
NEW_REV="$(git -C "$REPO" rev-parse --short HEAD)$(git -C "$REPO" diff --quiet || echo +)"
OLD_REV="$(git -C "$REPO" rev-parse --short "$REV")"

for i in $(seq "$RUNS"); do
    for side in old new; do
        bin="$OLD_BIN"
        [ "$side" = new ] && bin="$NEW_BIN"
        echo "hit-ab: run $i of $RUNS, $side build" >&2
        BENCH_GATEWAY="$bin" BENCH_RESULTS_DIR="$SCRATCH/$side-$i" "$REPO/bench/hit.sh" "$DUR" "$CONNS" \
            >"$SCRATCH/$side-$i.log" 2>&1 || { tail -n 20 "$SCRATCH/$side-$i.log"; exit 1; }
    done
done

python3 - "$SCRATCH" "$RUNS" "$OLD_REV" "$NEW_REV" "$OUT" "bench/hit-ab.sh $*" <<'EOF'
import json, statistics, sys
scratch, runs, old_rev, new_rev, out, command = sys.argv[1:7]
runs = int(runs)
data = {side: [json.load(open(f"{scratch}/{side}-{i}/hit.json")) for i in range(1, runs + 1)]
        for side in ("old", "new")}
table = {}
for side, results in data.items():
    for r in results:
        for row in r["rows"]:
            key = (row["size"], row["server"])
            table.setdefault(key, {}).setdefault(side, []).append(row)
def stat(rows, field):
    v = sorted(x[field] for x in rows)
    return statistics.median(v), v[0], v[-1]
print(f"hit path, {runs} alternating runs each: {old_rev} (old) and {new_rev} (new)")
print(f"{'size':>8} {'server':<20} {'req/s old':>24} {'req/s new':>24} {'CPU ms/10k old':>22} {'CPU ms/10k new':>22}")
summary = []
for (size, server), sides in sorted(table.items()):
    cells = []
    entry = {"size": size, "server": server}
    for side in ("old", "new"):
        rq = stat(sides[side], "requests_per_s")
        cpu = stat(sides[side], "cpu_ms_per_10k")
        entry[side] = {"requests_per_s": rq, "cpu_ms_per_10k": cpu}
        cells.append((rq, cpu))
    summary.append(entry)
    f = lambda m: f"{m[0]:,.0f} ({m[1]:,.0f}-{m[2]:,.0f})"
    g = lambda m: f"{m[0]:.1f} ({m[1]:.1f}-{m[2]:.1f})"
    print(f"{size:>8} {server:<20} {f(cells[0][0]):>24} {f(cells[1][0]):>24} "
          f"{g(cells[0][1]):>22} {g(cells[1][1]):>22}")
json.dump({"benchmark": "hit-ab", "command": command, "old": old_rev, "new": new_rev,
           "runs": runs, "median_min_max": summary, "raw": data}, open(out, "w"), indent=1)
EOF
echo "hit-ab: results in ${OUT#$REPO/}" >&2

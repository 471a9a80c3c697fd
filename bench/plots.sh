#!/usr/bin/env bash
# bench/plots.sh - the plots of docs/benchmarks.md, PNG, drawn by gnuplot into docs/img/:
#   policy-hit-ratio.png  hit ratio per policy against the cache size (3 shuffled epochs, from
#                         the trace simulator, build/s3cached-sim, which runs the real policy
#                         code) with the offline optimum; the live gateways' hit ratios from
#                         bench/results/epochs.json as points at their cache size
#   epoch-time.png        wall time of each epoch per setup         (bench/results/epochs.json)
#   stall-share.png       data-stall share of each epoch per setup  (bench/results/epochs.json)
#   hit-path.png          hit requests/s per object size and server (bench/results/hit.json)
#   warmup.png            objects cached against time, per prefetch concurrency, with the
#                         least time latency and bandwidth allow    (bench/results/warmup.json)
#   churn.png             objects stored per second over time, per chunk size
#                                                                   (bench/results/churn.json)
# A plot whose results file is missing is skipped with a note. The simulator's numbers go to
# bench/results/sim.json.
#
# Usage: bench/plots.sh        Settings: PLOTS_SIM_OBJECTS [10000], PLOTS_DIR [docs/img].
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

need gnuplot jq
IMG="${PLOTS_DIR:-$REPO/docs/img}"
SIM_N="${PLOTS_SIM_OBJECTS:-10000}"
mkdir -p "$IMG"
[ -x "$SIM_BIN" ] || die "$SIM_BIN is missing: make"
R="$RESULTS_DIR"
TERM_PNG="set terminal pngcairo size 900,520 font 'sans,11' noenhanced"
command -v gnuplot >/dev/null && gnuplot -e 'set terminal' 2>&1 | grep -q pngcairo ||
    TERM_PNG="set terminal png size 900,520 noenhanced"
PLOTTED=()

# ---- hit ratio against cache size, from the simulator ---------------------------------------
SIM_CSV="$WORK/sim.csv"
echo "capacity_pct,policy,hits,accesses,hit_ratio,byte_hit_ratio" >"$SIM_CSV"
for pct in 5 10 20 30 40 50 60 70 80 90 100; do
    "$SIM_BIN" --gen epochs --objects "$SIM_N" --epochs 3 --seed 42 --capacity "$pct%" --csv |
        tail -n +2 | sed "s/^/$pct,/" >>"$SIM_CSV"
done
jq -Rs --argjson n "$SIM_N" '
    split("\n") | .[1:] | map(select(length > 0) | split(","))
    | {settings: {generator: "epochs", objects: $n, epochs: 3, seed: 42, size: "1M"},
       rows: map({capacity_pct: (.[0] | tonumber), policy: .[1], hits: (.[2] | tonumber),
                  accesses: (.[3] | tonumber), hit_ratio: (.[4] | tonumber)})}' "$SIM_CSV" >"$WORK/sim.json"
BENCH_RESULTS="$R/sim.json" bench_write_results "$(cat "$WORK/sim.json")"
POLICIES="$(awk -F, 'NR > 1 {print $2}' "$SIM_CSV" | awk '!seen[$0]++' | tr '\n' ' ')"
for p in $POLICIES; do
    awk -F, -v p="$p" 'NR > 1 && $2 == p {print $1, $5 * 100}' "$SIM_CSV" >"$WORK/sim-$p.dat"
done
LIVE=""
if [ -f "$R/epochs.json" ]; then
    jq -r '(.settings.cache_bytes / .settings.dataset_bytes * 100) as $pct | .setups[]
           | select(.epochs[0].hit_ratio != null)
           | ([.epochs[] | .hits // 0] | add) as $h | ([.epochs[] | .misses // 0] | add) as $m
           | select($h + $m > 0) | "\($pct) \($h / ($h + $m) * 100) \(.setup)"' \
        "$R/epochs.json" >"$WORK/live.dat"
    [ -s "$WORK/live.dat" ] && LIVE=", '$WORK/live.dat' using 1:2 with points pt 7 ps 1.3 lc rgb '#000000' title 'live gateway / nginx (epochs.sh)', '' using 1:2:3 with labels left offset 1,0 font ',8' notitle"
fi
{
    echo "$TERM_PNG"
    echo "set output '$IMG/policy-hit-ratio.png'"
    echo "set title 'Hit ratio over 3 shuffled epochs ($SIM_N objects), by cache size'"
    echo "set xlabel 'cache size (% of the dataset)'; set ylabel 'hit ratio (%)'"
    echo "set key top left; set grid; set xrange [0:105]; set yrange [0:70]"
    printf "plot "
    sep=""
    for p in $POLICIES; do
        style="lw 2"
        [ "$p" = optimum ] && style="lw 3 dt 2 lc rgb '#000000'"
        printf "%s'%s' using 1:2 with linespoints %s title '%s'" "$sep" "$WORK/sim-$p.dat" "$style" "$p"
        sep=", "
    done
    echo "$LIVE"
} >"$WORK/policy.gp"
gnuplot "$WORK/policy.gp" && PLOTTED+=(policy-hit-ratio.png)

# ---- epochs: time and stall share per setup ---------------------------------------------------
if [ -f "$R/epochs.json" ]; then
    jq -r '.setups[] | [.setup] + [.epochs[] | .wall_s] | @tsv' "$R/epochs.json" >"$WORK/epoch-time.dat"
    jq -r '.setups[] | [.setup] + [.epochs[] | .stall_share * 100] | @tsv' "$R/epochs.json" >"$WORK/stall.dat"
    E="$(jq '.settings.epochs' "$R/epochs.json")"
    SUB="$(jq -r '"\(.settings.objects) objects of \(.settings.size), cache = half, \(.cloud.rtt_ms) ms RTT, \(.cloud.rate), \(.settings.compute_ms_per_batch) ms compute per batch of \(.settings.batch)"' "$R/epochs.json")"
    bars() { # DATA OUT TITLE YLABEL
        {
            echo "$TERM_PNG"
            echo "set output '$2'"
            echo "set title \"$3\\n$SUB\" font ',11'"
            echo "set ylabel '$4'; set grid ytics; set key top right"
            echo "set datafile separator '\t'"
        echo "set style data histograms; set style histogram clustered gap 1"
            echo "set style fill solid 0.85 border -1; set boxwidth 0.9"
            echo "set xtics rotate by -30 font ',9'; set yrange [0:*]"
            printf "plot "
            for ((e = 1; e <= E; e++)); do
                [ "$e" -gt 1 ] && printf ", "
                if [ "$e" = 1 ]; then
                    printf "'%s' using %d:xtic(1) title 'epoch %d'" "$1" $((e + 1)) "$e"
                else
                    printf "'' using %d title 'epoch %d'" $((e + 1)) "$e"
                fi
            done
            echo
        } >"$WORK/bars.gp"
        gnuplot "$WORK/bars.gp"
    }
    bars "$WORK/epoch-time.dat" "$IMG/epoch-time.png" "Epoch time per setup (lower is better)" "seconds" &&
        PLOTTED+=(epoch-time.png)
    bars "$WORK/stall.dat" "$IMG/stall-share.png" "Data-stall share per setup (lower is better)" "% of the epoch the GPU waited" &&
        PLOTTED+=(stall-share.png)
else
    say "no $R/epochs.json: epoch-time.png and stall-share.png skipped (run bench/epochs.sh)"
fi

# ---- hit path ---------------------------------------------------------------------------------
if [ -f "$R/hit.json" ]; then
    jq -r '.rows | group_by(.size)[] | [(.[0].size | if . >= 1048576 then "\(. / 1048576) MiB" else "\(. / 1024) KiB" end)]
           + [.[] | .requests_per_s] | @tsv' "$R/hit.json" >"$WORK/hit.dat"
    mapfile -t SERVERS < <(jq -r '.rows[].server' "$R/hit.json" | awk '!seen[$0]++')
    {
        echo "$TERM_PNG"
        echo "set output '$IMG/hit-path.png'"
        echo "set title 'Hit path: requests/s, all objects cached (higher is better)'"
        echo "set ylabel 'requests/s (log scale)'; set logscale y; set grid ytics; set key top right"
        echo "set datafile separator '\t'"
        echo "set style data histograms; set style histogram clustered gap 1"
        echo "set style fill solid 0.85 border -1; set boxwidth 0.9; set yrange [10:*]"
        printf "plot "
        for i in "${!SERVERS[@]}"; do
            [ "$i" -gt 0 ] && printf ", "
            if [ "$i" = 0 ]; then
                printf "'%s' using %d:xtic(1) title '%s'" "$WORK/hit.dat" $((i + 2)) "${SERVERS[$i]}"
            else
                printf "'' using %d title '%s'" $((i + 2)) "${SERVERS[$i]}"
            fi
        done
        echo
    } >"$WORK/hit.gp"
    gnuplot "$WORK/hit.gp" && PLOTTED+=(hit-path.png)
else
    say "no $R/hit.json: hit-path.png skipped (run bench/hit.sh)"
fi

# ---- warm-up ----------------------------------------------------------------------------------
if [ -f "$R/warmup.json" ]; then
    mapfile -t CS < <(jq -r '.runs[].concurrency' "$R/warmup.json")
    : >"$WORK/allowed.lst"
    N="$(jq '.settings.objects' "$R/warmup.json")"
    RTT="$(jq '.cloud.rtt_ms / 1000' "$R/warmup.json")"
    {
        echo "$TERM_PNG"
        echo "set output '$IMG/warmup.png'"
        echo "set title 'Warm-up of a $N-object manifest against the emulated cloud'"
        echo "set xlabel 'seconds since the POST'; set ylabel 'objects cached'; set grid; set key bottom right"
        printf "plot "
        for i in "${!CS[@]}"; do
            c="${CS[$i]}"
            jq -r --argjson c "$c" '.runs[] | select(.concurrency == $c) | .timeline[] | "\(.t) \(.cached)"' \
                "$R/warmup.json" >"$WORK/warm-$c.dat"
            allowed="$(jq -r --argjson c "$c" '.runs[] | select(.concurrency == $c) | .allowed_seconds' "$R/warmup.json")"
            printf "%s'%s' using 1:2 with lines lw 2 lc %d title 'concurrency %s', '-' using 1:2 with lines dt 2 lc %d title 'allowed at %s'" \
                "$([ "$i" -gt 0 ] && echo ", ")" "$WORK/warm-$c.dat" $((i + 1)) "$c" $((i + 1)) "$c"
            echo "$c $allowed" >>"$WORK/allowed.lst"
        done
        echo
        while read -r c allowed; do
            printf '%s 0\n%s %s\ne\n' "$RTT" "$allowed" "$N"
        done <"$WORK/allowed.lst"
    } >"$WORK/warm.gp"
    gnuplot "$WORK/warm.gp" && PLOTTED+=(warmup.png)
else
    say "no $R/warmup.json: warmup.png skipped (run bench/warmup.sh)"
fi

# ---- churn ------------------------------------------------------------------------------------
if [ -f "$R/churn.json" ]; then
    mapfile -t CH < <(jq -r '.rows[].chunk' "$R/churn.json")
    {
        echo "$TERM_PNG"
        echo "set output '$IMG/churn.png'"
        echo "set title 'Objects stored per second under continuous misses, by chunk size (dotted: cache full)'"
        jq -r '.rows | to_entries[] | select(.value.full_after_s != null)
               | "set arrow from \(.value.full_after_s), graph 0 to \(.value.full_after_s), graph 1 nohead dt 3 lc \(.key + 1)"' \
            "$R/churn.json"
        echo "set xlabel 'seconds'; set ylabel 'inserts/s (1 s window)'; set grid; set key top right"
        printf "plot "
        for i in "${!CH[@]}"; do
            ch="${CH[$i]}"
            jq -r --arg c "$ch" '.rows[] | select(.chunk == $c) | .timeline as $t
                | range(4; $t | length) as $i
                | "\($t[$i].t) \(($t[$i].fills - $t[$i - 4].fills) / ($t[$i].t - $t[$i - 4].t))"' \
                "$R/churn.json" >"$WORK/churn-$ch.dat"
            [ "$i" -gt 0 ] && printf ", "
            printf "'%s' using 1:2 with lines lw 2 lc %d title 'chunk %s'" "$WORK/churn-$ch.dat" $((i + 1)) "$ch"
        done
        echo
    } >"$WORK/churn.gp"
    gnuplot "$WORK/churn.gp" && PLOTTED+=(churn.png)
else
    say "no $R/churn.json: churn.png skipped (run bench/churn.sh)"
fi

echo "== bench/plots.sh: ${PLOTTED[*]:-nothing} in ${IMG#"$REPO"/}"

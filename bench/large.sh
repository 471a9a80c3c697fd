#!/usr/bin/env bash
# bench/large.sh - large objects through the emulated cloud (issue 11), side by side in one run:
#   (a) shard     one LARGE_SHARD object (1 GiB) streamed whole by 1, then 4 concurrent
#                 readers (LARGE_READERS; curl to /dev/null, one plain sequential GET each, as
#                 a tar reader or `aws s3 cp s3://... -` reads): direct (the readers straight at
#                 the cloud), then through a new, empty gateway (cold), then through it again
#                 (warm). Aggregate MiB/s and time to first byte. One reader is the bar's "one
#                 direct stream"; four share the cloud's bandwidth direct, and one fill cached.
#   (b) ranges    LARGE_B_REQUESTS (512) random LARGE_RANGE (8 MiB) ranges of one LARGE_OBJ
#                 (2 GiB) object, LARGE_B_CLIENTS (4) in flight, with a cache of LARGE_CACHE
#                 (1 GiB): the gateway (--cache-size) against nginx proxy_cache with the slice
#                 module (slice LARGE_RANGE, max_size LARGE_CACHE), the same seeded sequence
#                 for both. The first half fills the cache ("fill"), the second is read from a
#                 full one ("steady"). Hit ratio and MiB/s per half.
#   (c) parallel  LARGE_C_OBJECTS (8) objects of LARGE_C_SIZE (64 MiB), each read as parallel
#                 LARGE_RANGE ranges (8 in flight: the s3torchconnector / AWS CRT pattern), cold:
#                 direct, the gateway and nginx slice. MiB/s.
# Upstream bytes for every row come from one counter all three paths go through: the bytes the
# latency relay carried back from the cloud (headers included), read once nothing moves any
# more (fills and read-ahead that finish after the client count too). "upstream per object
# byte" divides them by the bytes of the object(s) the row reads; in (b) also by the bytes the
# clients were sent (1 - that is the byte hit ratio). The gateway's own bytes_from_upstream is
# recorded next to it as a cross-check.
#
# Every part runs LARGE_RUNS (3) times, the paths in alternating order, each run with new,
# empty caches; the summary gives the median and the spread (min, max) of the runs.
#
# Usage: bench/large.sh [PART...]      (parts a b c; default all three)
# Settings (environment, defaults in brackets; sizes take K, M, G):
#   LARGE_SHARD [1G]  LARGE_READERS ["1 4"] reader counts, one series each  (a)
#   LARGE_OBJ [2G]  LARGE_CACHE [1G]  LARGE_B_REQUESTS [512]  LARGE_B_CLIENTS [4]
#   LARGE_B_ALIGN [LARGE_RANGE] offsets are multiples of this  LARGE_SEED [11]   (b)
#   LARGE_B_GW_CACHE [LARGE_CACHE] the gateway's cache in (b) alone: nginx's max_size is
#                    enforced late, so its cache peaks above it; give the gateway that peak
#                    to compare equal memory
#   LARGE_C_OBJECTS [8]  LARGE_C_SIZE [64M]                               (c)
#   LARGE_RANGE [8M] the range size of (b) and (c), and nginx's slice
#   LARGE_RUNS [3]  LARGE_THREADS [cores] gateway --threads = nginx workers
#   BENCH_CACHE_DIR [the scratch directory] where the gateway's and nginx's caches are made,
#                    e.g. /dev/shm: on a VM that hands free memory back to its host, a cache
#                    on ext4 written in large writes pays the host's faults (docs/benchmarks.md)
#   LARGE_GW_ARGS [""] more gateway options, e.g. "--block-size 8M --fetch-parallelism 4"
#   and the cloud's CLOUD_* settings. Results: bench/results/large.json.
# A reduced smoke run: LARGE_SHARD=64M LARGE_OBJ=256M LARGE_CACHE=128M LARGE_B_REQUESTS=64
#   LARGE_C_OBJECTS=2 LARGE_RUNS=1 bench/large.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
source "$REPO/bench/lib/cloud.sh"
source "$REPO/bench/lib/nginx.sh"

bytes_of() { numfmt --from=iec "${1^^}" || die "not a size: $1"; }

PARTS=("$@")
[ "${#PARTS[@]}" -gt 0 ] || PARTS=(a b c)
for p in "${PARTS[@]}"; do
    case "$p" in a | b | c) ;; *) die "unknown part $p (a, b or c)" ;; esac
done
want() { [[ " ${PARTS[*]} " == *" $1 "* ]]; }

SHARD="$(bytes_of "${LARGE_SHARD:-1G}")"
read -r -a READERS <<<"${LARGE_READERS:-1 4}"
OBJ="$(bytes_of "${LARGE_OBJ:-2G}")"
CACHE="$(bytes_of "${LARGE_CACHE:-1G}")"
B_GW_CACHE="$(bytes_of "${LARGE_B_GW_CACHE:-${LARGE_CACHE:-1G}}")"
RANGE="$(bytes_of "${LARGE_RANGE:-8M}")"
B_REQUESTS="${LARGE_B_REQUESTS:-512}"
B_CLIENTS="${LARGE_B_CLIENTS:-4}"
B_ALIGN="$(bytes_of "${LARGE_B_ALIGN:-$RANGE}")"
SEED="${LARGE_SEED:-11}"
C_OBJECTS="${LARGE_C_OBJECTS:-8}"
C_SIZE="$(bytes_of "${LARGE_C_SIZE:-64M}")"
C_PARALLEL=$(((C_SIZE + RANGE - 1) / RANGE))
RUNS="${LARGE_RUNS:-3}"
THREADS="${LARGE_THREADS:-$(nproc)}"
read -r -a GW_ARGS <<<"${LARGE_GW_ARGS:-}"
# (a) and (c) hold everything they read: their caches are twice what they read.
A_CACHE=$((2 * SHARD))
C_CACHE=$((2 * C_OBJECTS * C_SIZE))
[ "$OBJ" -ge "$RANGE" ] || die "LARGE_OBJ must be at least LARGE_RANGE"
[ "$B_ALIGN" -ge 1 ] || die "LARGE_B_ALIGN must be at least 1"
[ "$RUNS" -ge 1 ] || die "LARGE_RUNS must be at least 1"
need curl jq nginx numfmt python3

cloud_up
want a && cloud_seed_random large-a/ 1 "$SHARD"
want b && cloud_seed_random large-b/ 1 "$OBJ"
want c && cloud_seed_random large-c/ "$C_OBJECTS" "$C_SIZE"
A_KEY="$CLOUD_BUCKET/large-a/00000000.bin"
B_KEY="$CLOUD_BUCKET/large-b/00000000.bin"
C_KEY() { printf '%s/large-c/%08d.bin' "$CLOUD_BUCKET" "$1"; }

mib() { awk -v b="$1" 'BEGIN {printf "%g", b / 1048576}'; }
cat <<EOF
== bench/large.sh: large objects, the gateway against direct and nginx proxy_cache + slice
   cloud: ${CLOUD_DELAY_MS} ms each way, $CLOUD_RATE each way${CLOUD_CONN_RATE:+, $CLOUD_CONN_RATE/s per connection}; $RUNS run(s) per part, paths in alternating order, new caches each run
   gateway: --threads $THREADS ${GW_ARGS[*]:-}; nginx: $THREADS worker(s), slice $(mib "$RANGE") MiB
   (a) $(mib "$SHARD") MiB shard, ${READERS[*]} concurrent sequential reader(s) (curl), gateway cache $(mib "$A_CACHE") MiB
   (b) $B_REQUESTS random $(mib "$RANGE") MiB ranges (offsets multiple of $B_ALIGN, seed $SEED) of a $(mib "$OBJ") MiB object, $B_CLIENTS in flight, cache $(mib "$CACHE") MiB
   (c) $C_OBJECTS objects of $(mib "$C_SIZE") MiB, $C_PARALLEL parallel $(mib "$RANGE") MiB ranges each, cold, cache $(mib "$C_CACHE") MiB
   caches made in: $CACHES
   upstream bytes: what the relay carried back from the cloud (one counter for every path)
EOF

ROWS="$WORK/rows.jsonl"
: >"$ROWS"

# Runs COMMAND (which prints a JSON object with wall_s and served_bytes) between two readings
# of the relay's counter and appends one row to $ROWS:
# measure PART PATH PHASE RUN OBJECT_BYTES GATEWAY_URL|- COMMAND...
measure() {
    local part="$1" path="$2" phase="$3" run="$4" obj="$5" gw="$6" u0 u1 g0=null g1=null out
    shift 6
    [ "$gw" = - ] || g0="$(gw_stat "$gw" bytes_from_upstream)"
    u0="$(cloud_bytes_back)"
    out="$("$@")"
    u1="$(cloud_bytes_back_settled)"
    [ "$gw" = - ] || g1="$(gw_stat "$gw" bytes_from_upstream)"
    jq -c --arg part "$part" --arg path "$path" --arg phase "$phase" --argjson run "$run" \
        --argjson obj "$obj" --argjson up $((u1 - u0)) --argjson g0 "$g0" --argjson g1 "$g1" '
        {part: $part, path: $path, phase: $phase, run: $run, object_bytes: $obj} + .
        + {mib_per_s: (.served_bytes / 1048576 / .wall_s), upstream_bytes: $up,
           upstream_per_object_byte: ($up / $obj),
           upstream_per_served_byte: ($up / .served_bytes),
           gateway_bytes_from_upstream: (if $g0 == null then null else $g1 - $g0 end)}' \
        <<<"$out" >>"$ROWS"
    tail -n 1 "$ROWS" | jq -r '
        def r(x): if x == null then "-" else (x * 100 | round) / 100 end;
        [.part + (if .readers then "/\(.readers)" else "" end), .path, .phase, .run, r(.mib_per_s), r(.ttfb_p50_ms), r(.upstream_per_object_byte),
         (.x_cache | to_entries | map("\(.key)=\(.value)") | join(",") | if . == "" then "-" else . end)]
        | @tsv' | awk -F'\t' '{printf "%-4s %-12s %-6s run %-2s %9s MiB/s  TTFB %8s ms  upstream/object byte %6s  X-Cache %s\n", $1, $2, $3, $4, $5, $6, $7, $8}'
}

# The curl lines "code ttfb_s total_s bytes x-cache" (stdin) as JSON; every code must be CODE
# and every size SIZE: curl_json T0 T1 CODE SIZE.
curl_json() {
    jq -Rsc --arg t0 "$1" --arg t1 "$2" --arg code "$3" --argjson size "$4" '
        split("\n") | map(select(length > 0) | split(" "))
        | if any(.[0] != $code) then error("status \(map(.[0]) | unique), wanted \($code)")
          elif any(.[3] | tonumber != $size) then error("sizes \(map(.[3]) | unique), wanted \($size)")
          else . end
        | map(.[1] | tonumber * 1000) as $ttfb
        | {wall_s: (($t1 | tonumber) - ($t0 | tonumber)), requests: length,
           served_bytes: (map(.[3] | tonumber) | add),
           ttfb_p50_ms: ($ttfb | sort | .[length / 2 | floor]), ttfb_max_ms: ($ttfb | max),
           x_cache: (map(.[4] // "" | select(length > 0)) | group_by(.) | map({(.[0]): length}) | add // {})}'
}
CURL_W='%{http_code} %{time_starttransfer} %{time_total} %{size_download} %header{x-cache}\n'

# (a) N concurrent readers of URL, each the whole object, each its own curl and connection.
stream_readers() { # URL N SIZE
    local url="$1" n="$2" size="$3" i t0 t1 pids=()
    rm -f "$WORK"/reader-*.out
    t0="$(date +%s.%N)"
    for ((i = 0; i < n; i++)); do
        curl -sS -o /dev/null -w "$CURL_W" "$url" >"$WORK/reader-$i.out" &
        pids+=("$!")
    done
    for i in "${pids[@]}"; do wait "$i" || die "a reader of $url failed"; done
    t1="$(date +%s.%N)"
    cat "$WORK"/reader-*.out | curl_json "$t0" "$t1" 200 "$size" | jq -c --argjson n "$n" '{readers: $n} + .'
}

# (b) and (c): the ranges in the file RANGES ("first last" per line) of URL, PARALLEL in flight
# over kept-alive connections (one curl), in order. Every range is LEN bytes.
ranges_read() { # URL RANGES PARALLEL LEN
    local url="$1" ranges="$2" par="$3" len="$4" cfg="$WORK/ranges.cfg" t0 t1
    # One group of options per range, "next" between them; -s and -S hold for one group only.
    CURL_W="$CURL_W" awk -v u="$url" '
        NR > 1 {print "next"}
        {printf "url = \"%s\"\nrange = \"%s-%s\"\noutput = \"/dev/null\"\nwrite-out = \"%s\"\nsilent\nshow-error\n",
                (NF > 2 ? $3 : u), $1, $2, ENVIRON["CURL_W"]}' "$ranges" >"$cfg"
    t0="$(date +%s.%N)"
    # (stderr to a file: curl -Z draws its progress meter whatever -s says)
    curl -sS -Z --parallel-max "$par" -K "$cfg" >"$WORK/ranges.out" 2>"$WORK/ranges.err" ||
        { grep -a 'curl:' "$WORK/ranges.err" >&2; die "a range of $url failed"; }
    t1="$(date +%s.%N)"
    curl_json "$t0" "$t1" 206 "$len" <"$WORK/ranges.out"
}

gw_fresh() { # NAME CACHE_BYTES: a new gateway with an empty cache
    rm -rf "$CACHES/cache-$1"
    gw_start "$(free_port)" "$CACHES/cache-$1" "$CLOUD_URL" --cache-size "$2" --threads "$THREADS" \
        ${GW_ARGS[@]+"${GW_ARGS[@]}"}
}
gw_done() { bench_stop "$GW_PID"; rm -rf "$CACHES/cache-$1"; }
ngx_fresh() { # NAME MAX_SIZE: a new nginx proxy_cache + slice with an empty cache
    rm -rf "${WORK:?}/$1" "${CACHES:?}/ngx-cache-$1"
    NGX_CACHE_DIR="$CACHES/ngx-cache-$1" nginx_proxy_cache_start "$1" "$(free_port)" "${CLOUD_URL#http://}" "$2" "$THREADS" "slice=$RANGE"
}
ngx_done() { bench_stop "$NGX_PID"; rm -rf "${WORK:?}/$1" "${CACHES:?}/ngx-cache-$1"; }

# The order of PATHS in run R: rotated by one each run, so no path always goes first.
order() { # R PATH...
    local r="$1"
    shift
    local n=$# i
    local all=("$@")
    for ((i = 0; i < n; i++)); do echo "${all[$(((i + r) % n))]}"; done
}

if want a; then
    for ((r = 1; r <= RUNS; r++)); do
        for n in "${READERS[@]}"; do
            for path in $(order "$r" direct gateway); do
                case "$path" in
                direct)
                    measure a direct cold "$r" "$SHARD" - stream_readers "$CLOUD_URL/$A_KEY" "$n" "$SHARD"
                    ;;
                gateway)
                    gw_fresh a "$A_CACHE"
                    measure a gateway cold "$r" "$SHARD" "$GW_URL" stream_readers "$GW_URL/$A_KEY" "$n" "$SHARD"
                    measure a gateway warm "$r" "$SHARD" "$GW_URL" stream_readers "$GW_URL/$A_KEY" "$n" "$SHARD"
                    gw_done a
                    ;;
                esac
            done
        done
    done
fi

if want b; then
    # One seeded sequence of range starts, for both servers and every run.
    python3 - "$OBJ" "$RANGE" "$B_ALIGN" "$B_REQUESTS" "$SEED" >"$WORK/b-all.txt" <<'PY'
import random, sys
obj, rng, align, n, seed = map(int, sys.argv[1:])
r = random.Random(seed)
slots = (obj - rng) // align + 1
for _ in range(n):
    first = r.randrange(slots) * align
    print(first, first + rng - 1)
PY
    half=$((B_REQUESTS / 2))
    head -n "$half" "$WORK/b-all.txt" >"$WORK/b-fill.txt"
    tail -n +$((half + 1)) "$WORK/b-all.txt" >"$WORK/b-steady.txt"
    NGX_PEAKS="$WORK/b-nginx-peaks.jsonl"
    : >"$NGX_PEAKS"
    for ((r = 1; r <= RUNS; r++)); do
        for path in $(order "$r" gateway nginx-slice); do
            case "$path" in
            gateway)
                gw_fresh b "$B_GW_CACHE"
                for phase in fill steady; do
                    measure b gateway "$phase" "$r" "$OBJ" "$GW_URL" \
                        ranges_read "$GW_URL/$B_KEY" "$WORK/b-$phase.txt" "$B_CLIENTS" "$RANGE"
                done
                gw_done b
                ;;
            nginx-slice)
                ngx_fresh ngx-b "$CACHE"
                nginx_size_sampler_start ngx-b
                for phase in fill steady; do
                    measure b nginx-slice "$phase" "$r" "$OBJ" - \
                        ranges_read "$NGX_URL/$B_KEY" "$WORK/b-$phase.txt" "$B_CLIENTS" "$RANGE"
                done
                bench_stop "$NGX_SAMPLER_PID"
                jq -nc --argjson r "$r" --argjson peak "$(nginx_size_peak ngx-b)" --argjson budget "$CACHE" \
                    '{run: $r, cache_dir_bytes_peak: $peak, peak_over_budget: ($peak / $budget)}' >>"$NGX_PEAKS"
                say "nginx cache directory: peak $(nginx_size_peak ngx-b) bytes for a max_size of $CACHE"
                ngx_done ngx-b
                ;;
            esac
        done
    done
fi

if want c; then
    : >"$WORK/c-ranges.txt"
    for ((i = 0; i < C_OBJECTS; i++)); do
        for ((off = 0; off < C_SIZE; off += RANGE)); do
            last=$((off + RANGE - 1))
            [ "$last" -lt "$C_SIZE" ] || last=$((C_SIZE - 1))
            echo "$off $last $(C_KEY "$i")" >>"$WORK/c-ranges.txt"
        done
    done
    [ $((C_SIZE % RANGE)) = 0 ] || die "LARGE_C_SIZE must be a multiple of LARGE_RANGE"
    c_read() { # BASE_URL: every object's ranges, C_PARALLEL in flight
        sed "s|\([^ ]*\)\$|$1/\1|" "$WORK/c-ranges.txt" >"$WORK/c-urls.txt"
        ranges_read "$1" "$WORK/c-urls.txt" "$C_PARALLEL" "$RANGE"
    }
    for ((r = 1; r <= RUNS; r++)); do
        for path in $(order "$r" direct gateway nginx-slice); do
            case "$path" in
            direct) measure c direct cold "$r" $((C_OBJECTS * C_SIZE)) - c_read "$CLOUD_URL" ;;
            gateway)
                gw_fresh c "$C_CACHE"
                measure c gateway cold "$r" $((C_OBJECTS * C_SIZE)) "$GW_URL" c_read "$GW_URL"
                gw_done c
                ;;
            nginx-slice)
                ngx_fresh ngx-c "$C_CACHE"
                measure c nginx-slice cold "$r" $((C_OBJECTS * C_SIZE)) - c_read "$NGX_URL"
                ngx_done ngx-c
                ;;
            esac
        done
    done
fi

# The summary: per part, path and phase, the median and spread of the runs.
RESULT="$(jq -s --argjson cloud "$CLOUD_JSON" --slurpfile peaks "${NGX_PEAKS:-/dev/null}" \
    --arg parts "${PARTS[*]}" --arg gwargs "${LARGE_GW_ARGS:-}" --arg cachedir "${BENCH_CACHE_DIR:-}" \
    --argjson bgwcache "$B_GW_CACHE" \
    --argjson shard "$SHARD" --argjson readers "$(printf '%s\n' "${READERS[@]}" | jq -sc .)" --argjson obj "$OBJ" \
    --argjson cache "$CACHE" --argjson range "$RANGE" --argjson breq "$B_REQUESTS" \
    --argjson bcli "$B_CLIENTS" --argjson balign "$B_ALIGN" --argjson seed "$SEED" \
    --argjson cobj "$C_OBJECTS" --argjson csize "$C_SIZE" --argjson cpar "$C_PARALLEL" \
    --argjson runs "$RUNS" --argjson threads "$THREADS" --argjson acache "$A_CACHE" \
    --argjson ccache "$C_CACHE" '
    def med: sort | if length == 0 then null elif length % 2 == 1 then .[length / 2 | floor]
                    else (.[length / 2 - 1] + .[length / 2]) / 2 end;
    def spread(f): map(f) | map(select(. != null)) | if length == 0 then null
                   else {median: med, min: min, max: max, runs: .} end;
    def hits: if (.x_cache | length) == 0 then null else (.x_cache.HIT // 0) / .requests end;
    . as $rows
    | ($rows | group_by([.part, .readers, .path, .phase]) | map({
         part: .[0].part, readers: .[0].readers, path: .[0].path, phase: .[0].phase, runs: length,
         mib_per_s: spread(.mib_per_s), ttfb_p50_ms: spread(.ttfb_p50_ms),
         ttfb_max_ms: spread(.ttfb_max_ms),
         upstream_per_object_byte: spread(.upstream_per_object_byte),
         upstream_per_served_byte: spread(.upstream_per_served_byte),
         byte_hit_ratio: spread(1 - .upstream_per_served_byte),
         hit_ratio_x_cache: spread(hits)})) as $sum
    | def pick(p; q; ph): $sum | map(select(.part == p and .path == q and .phase == ph))[0];
      def pick_a(n; q; ph): $sum | map(select(.part == "a" and .readers == n and .path == q
                                              and .phase == ph))[0];
      def ratio(x; y): if x == null or y == null or y == 0 then null else x / y end;
    {settings: {parts: ($parts | split(" ")), runs: $runs, gateway_threads: $threads,
                nginx_workers: $threads, gateway_args: $gwargs, range_bytes: $range,
                cache_dir: (if $cachedir == "" then "scratch directory" else $cachedir end),
                a: {shard_bytes: $shard, readers: $readers, gateway_cache_bytes: $acache},
                b: {object_bytes: $obj, cache_bytes: $cache, gateway_cache_bytes: $bgwcache,
                    requests: $breq, in_flight: $bcli,
                    offset_alignment: $balign, seed: $seed, fill_requests: ($breq / 2 | floor)},
                c: {objects: $cobj, object_bytes: $csize, ranges_in_flight: $cpar,
                    gateway_cache_bytes: $ccache, nginx_max_size: $ccache}},
     cloud: $cloud, summary: $sum, rows: $rows, nginx_b_cache_peaks: $peaks,
     ratios: {
        a: [$readers[] as $n | {readers: $n,
            cold_gateway_vs_direct_mib_per_s: ratio(pick_a($n; "gateway"; "cold").mib_per_s.median;
                                                    pick_a($n; "direct"; "cold").mib_per_s.median),
            warm_gateway_vs_direct_mib_per_s: ratio(pick_a($n; "gateway"; "warm").mib_per_s.median;
                                                    pick_a($n; "direct"; "cold").mib_per_s.median),
            cold_gateway_vs_direct_ttfb: ratio(pick_a($n; "gateway"; "cold").ttfb_p50_ms.median;
                                               pick_a($n; "direct"; "cold").ttfb_p50_ms.median)}
            | select(.cold_gateway_vs_direct_mib_per_s != null)],
        b_steady_gateway_vs_nginx_slice_mib_per_s:
            ratio(pick("b"; "gateway"; "steady").mib_per_s.median;
                  pick("b"; "nginx-slice"; "steady").mib_per_s.median),
        c_gateway_vs_direct_mib_per_s: ratio(pick("c"; "gateway"; "cold").mib_per_s.median;
                                             pick("c"; "direct"; "cold").mib_per_s.median),
        c_gateway_vs_nginx_slice_mib_per_s: ratio(pick("c"; "gateway"; "cold").mib_per_s.median;
                                                  pick("c"; "nginx-slice"; "cold").mib_per_s.median)}}
    | .bars = ({
        a_cold_sequential_at_least_direct: {want: ">= 1.0 (goal >= 2.0), the fewest readers",
                                            at_least: 1.0,
                                            got: (.ratios.a | min_by(.readers)
                                                  | .cold_gateway_vs_direct_mib_per_s)},
        b_steady_at_least_nginx_slice: {want: ">= 1.0", at_least: 1.0,
                                        got: .ratios.b_steady_gateway_vs_nginx_slice_mib_per_s},
        c_upstream_per_object_byte: {want: "<= 1.05", at_most: 1.05,
                                     got: pick("c"; "gateway"; "cold").upstream_per_object_byte.median}}
        | with_entries(select(.value.got != null))
        | map_values(.met = (if .at_most != null then .got <= .at_most else .got >= .at_least end)))' \
    "$ROWS")"

echo
echo "summary: medians of $RUNS run(s) [min - max]"
jq -r '
    def r(x): if x == null then "-" else (x * 100 | round) / 100 end;
    def s(x): if x == null then "-" elif x.runs | length > 1 then "\(r(x.median)) [\(r(x.min))-\(r(x.max))]"
              else "\(r(x.median))" end;
    .summary[] | [.part + (if .readers then "/\(.readers)" else "" end), .path, .phase, s(.mib_per_s), s(.ttfb_p50_ms), s(.upstream_per_object_byte),
                  s(.hit_ratio_x_cache)] | @tsv' <<<"$RESULT" |
    awk -F'\t' 'BEGIN {printf "%-4s %-12s %-6s %24s %22s %24s %18s\n", "part", "path", "phase", "MiB/s", "TTFB p50 ms", "upstream/object byte", "X-Cache HIT ratio"}
                {printf "%-4s %-12s %-6s %24s %22s %24s %18s\n", $1, $2, $3, $4, $5, $6, $7}'
jq -r '
    def r(x): if x == null then "-" else (x * 100 | round) / 100 end;
    (.ratios.a[] | "ratio a, \(.readers) reader(s), gateway / direct: cold MiB/s \(r(.cold_gateway_vs_direct_mib_per_s)), warm MiB/s \(r(.warm_gateway_vs_direct_mib_per_s)), cold TTFB \(r(.cold_gateway_vs_direct_ttfb))"),
    (.ratios | del(.a) | to_entries[] | select(.value != null) | "ratio \(.key): \(r(.value))")' <<<"$RESULT"
jq -r '.bars | to_entries[] | "bar \(.key): want \(.value.want), got \(.value.got * 100 | round / 100): \(if .value.met then "met" else "MISSED" end)"' <<<"$RESULT"
bench_write_results "$RESULT"

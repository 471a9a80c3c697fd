#!/usr/bin/env bash
# bench/memory.sh - the memory a cached object costs beyond LMDB's map, at MEMORY_OBJECTS
# (1,000,000) small objects (MEMORY_SIZE bytes, 64), for every policy.
#
# Method. build/s3cached-memfill (tools/memfill/main.c) fills a store through the store API
# (store_put, as a gateway does after that many misses; nothing evicted), once. Then, for each
# policy, in a fresh process each time:
#   store      s3cached-memfill open: store_open() on the filled directory (the warm-restart
#              scan, store/store_scan.c, registers every object with the policy), then a read
#              view on every object (a hit each). RssAnon (/proc/self/status) after, less
#              before: anonymous memory only, so the map's resident pages (RssFile: the page
#              cache, shared with the kernel) are not counted. "heap" is what malloc holds for
#              live allocations (mallinfo2), after less before: the structures themselves,
#              without the allocator's free memory.
#   policy     s3cached-memfill policy: the policy alone, no store, MEMORY_OBJECTS on_insert()
#              and as many on_hit(): its heap bytes per object.
#   gateway    build/s3cached started on the filled directory with --policy P, RssAnon once it
#              answers /healthz, less the RssAnon of the same gateway started on an empty
#              directory: everything a running gateway keeps per object (its threads' stacks
#              and buffers are in both and cancel out).
# All per object: divided by the number of objects. Fixed costs are spread over them too
# (LMDB's write-transaction page lists, about 4 MiB of heap; the store's 64 thread slots,
# 40 KiB): at 20,000 objects they add about 200 B an object to "store heap", at 1M about 4 B.
#
# Where the bytes are (by construction; the "policy" rows measure them): the store keeps no
# per-object structure in memory beyond the policy (records, ids and chunks are in LMDB; the
# scan's sorting array is freed before the gateway serves); the policy keeps one node per
# entry in a pool that grows by doubling, found through an open-addressing id map (policy/
# nodes.c, idmap.c, 4 B a slot):
#   lru          16 B node (id, list links) + id map
#   fixed        24 B node (+ size) + id map
#   s3fifo       node with frequency and queue + id map, and a ghost entry per key hash evicted
#   importance   64 B node (key hash, size, score, tick, count, heap position, key-hash chain)
#                + id map + key-hash map + 4 B heap slot
#   clairvoyant  56 B node (id, key hash, size, next use, stamp, heap/list links) + id map +
#                4 B heap slot
# The stats are per bucket and per operation, not per object.
#
# Usage: bench/memory.sh [POLICY...]        (default: every policy)
# Settings: MEMORY_OBJECTS [1000000], MEMORY_SIZE [64], MEMORY_DIR (a directory filled by an
# earlier run to reuse; the fill takes about two minutes here, most of it in fsync).
# Results: bench/results/memory.json.
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

N="${MEMORY_OBJECTS:-1000000}"
SIZE="${MEMORY_SIZE:-64}"
MEMFILL="${BENCH_MEMFILL:-$REPO/build/s3cached-memfill}"
POLICIES=("$@")
[ "${#POLICIES[@]}" -gt 0 ] || POLICIES=(s3fifo lru fixed importance clairvoyant)
need curl jq
[ -x "$MEMFILL" ] || die "$MEMFILL is missing: make"

DIR="${MEMORY_DIR:-$WORK/filled}"
if [ ! -e "$DIR/data.mdb" ]; then
    say "filling $DIR with $N objects of $SIZE bytes"
    "$MEMFILL" fill "$DIR" "$N" "$SIZE" >"$WORK/fill.json" 2>"$WORK/fill.log" || {
        cat "$WORK/fill.log" >&2
        die "the fill failed"
    }
fi
mkdir -p "$WORK/empty"

rss_anon() { awk '/^RssAnon:/ {print $2 * 1024}' "/proc/$1/status"; }

# The gateway's RssAnon on a cache directory once it answers, into ANON: gw_anon DIR POLICY.
gw_anon() {
    # The upstream is never asked: nothing is read through the gateway.
    gw_start "$(free_port)" "$1" "http://127.0.0.1:9" --cache-size 8G --policy "$2"
    sleep 1
    ANON="$(rss_anon "$GW_PID")"
    bench_stop "$GW_PID"
}

cat <<EOF
== bench/memory.sh: memory per cached object beyond LMDB's map, $N objects of $SIZE bytes
   RssAnon deltas (the map's pages are RssFile and not counted); heap: malloc's live bytes
EOF
printf '%-12s %16s %16s %18s %18s\n' policy "gateway B/obj" "store B/obj" "store heap B/obj" "policy heap B/obj"
ROWS="$WORK/rows.jsonl"
: >"$ROWS"
for p in "${POLICIES[@]}"; do
    store="$("$MEMFILL" open "$DIR" "$p" 2>/dev/null)" || die "s3cached-memfill open $p failed"
    pol="$("$MEMFILL" policy "$p" "$N" 2>/dev/null)" || die "s3cached-memfill policy $p failed"
    objects="$(jq -r .objects <<<"$store")"
    gw_anon "$DIR" "$p"
    full="$ANON"
    gw_anon "$WORK/empty" "$p"
    empty="$ANON"
    gw="$(awk -v a="$full" -v b="$empty" -v n="$objects" 'BEGIN {printf "%.1f", (a - b) / n}')"
    printf '%-12s %16s %16s %18s %18s\n' "$p" "$gw" "$(jq -r .rss_anon_per_object_after_hits <<<"$store")" \
        "$(jq -r .heap_per_object_after_hits <<<"$store")" "$(jq -r .heap_per_object <<<"$pol")"
    jq -nc --arg p "$p" --argjson store "$store" --argjson pol "$pol" --argjson gw "$gw" \
        --argjson full "$full" --argjson empty "$empty" \
        '{policy: $p, objects: $store.objects, gateway_rss_anon_per_object: $gw,
          gateway_rss_anon_full: $full, gateway_rss_anon_empty: $empty,
          store_rss_anon_per_object: $store.rss_anon_per_object_after_hits,
          store_heap_per_object: $store.heap_per_object_after_hits,
          policy_heap_per_object: $pol.heap_per_object}' >>"$ROWS"
done
RESULT="$(jq -s --argjson n "$N" --argjson size "$SIZE" \
    '{settings: {objects: $n, object_size: $size}, rows: .,
      bar: {want: "<= 200 bytes per object beyond the map (gateway RssAnon)",
            met: (map(.gateway_rss_anon_per_object <= 200) | all)}}' "$ROWS")"
echo
jq -r '"bar: <= 200 B per object beyond the map: \(if .bar.met then "met" else "MISSED" end) for every policy measured"' <<<"$RESULT"
bench_write_results "$RESULT"

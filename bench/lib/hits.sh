# bench/lib/hits.sh - what the scripts that measure hits of given bodies share (bench/zerocopy.sh,
# bench/floor.sh): a body is "SIZE PATH RANGE", the object under /bench/ and the Range header
# to send, or - for the whole object. Sourced after lib/common.sh.

# The X-Cache a GET answers: xcache_of URL PATH RANGE.
xcache_of() {
    local hdr=()
    [ "$3" = - ] || hdr=(-H "Range: $3")
    curl -fsS -D - -o /dev/null "${hdr[@]}" "$1/bench/$2" | tr -d '\r' |
        awk -F': ' 'tolower($1) == "x-cache" {print $2}'
}

# Fills each cache with each body (the first read of the whole object is a miss that fills it;
# a block object, every block), then checks the next read of the body is a hit:
# caches_warm "URL ..." BODY...
caches_warm() {
    local urls="$1" url c size path rng
    shift
    for url in $urls; do
        for c in "$@"; do
            read -r size path rng <<<"$c"
            xcache_of "$url" "$path" - >/dev/null
        done
    done
    sleep 1
    for url in $urls; do
        for c in "$@"; do
            read -r size path rng <<<"$c"
            [ "$(xcache_of "$url" "$path" "$rng" | tr A-Z a-z)" = hit ] || die "$url $path $rng is not a hit"
        done
    done
}

# One wrk run of hits, appended to $ROWS as a JSON line with the server's CPU (PIDS) and the
# machine's per 10,000 hits: hit_row SERVER URL PIDS SIZE PATH RANGE RUN. Fails on wrk errors.
hit_row() {
    local who="$1" url="$2" pids="$3" size="$4" path="$5" rng="$6" run="$7" lua="" c0 c1 m0 m1 rps n errs
    if [ "$rng" != - ]; then
        lua="$WORK/range-$size.lua"
        printf 'wrk.headers["Range"] = "%s"\n' "$rng" >"$lua"
    fi
    # shellcheck disable=SC2086
    c0="$(cpu_of $pids)"
    m0="$(machine_busy)"
    read -r rps _ _ _ n errs <<<"$(wrk_run "$url/bench/$path" "$DUR" "$CONNS" 1 "$lua")"
    m1="$(machine_busy)"
    # shellcheck disable=SC2086
    c1="$(cpu_of $pids)"
    [ "$errs" = 0 ] || die "$who: wrk reported errors at $size bytes"
    jq -nc --arg size "$size" --arg who "$who" --arg run "$run" --arg rps "$rps" --arg n "$n" \
        --arg cpu10k "$(per_10k "$c0" "$c1" "$n")" --arg mach10k "$(per_10k "$m0" "$m1" "$n")" \
        '{size: ($size | tonumber), server: $who, run: ($run | tonumber),
          requests_per_s: ($rps | tonumber), requests: ($n | tonumber),
          cpu_ms_per_10k: ($cpu10k | tonumber), machine_cpu_ms_per_10k: ($mach10k | tonumber)}' >>"$ROWS"
}

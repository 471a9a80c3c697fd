#!/usr/bin/env bash
# bench/locks.sh - what hits share between threads: lock calls and futex waits per hit.
#
# Requests per second on this 2-core machine (wrk sharing the cores) move by tens of percent
# between runs; lock counts do not. Two counts, on one gateway (--threads LOCKS_THREADS, 2) in
# front of nginx, one 100 KiB object cached:
#   per hit    LOCKS_HITS (500) keep-alive GETs, one at a time (curl), with perf counting
#              uprobes on libc's pthread_mutex_lock and pthread_rwlock_rdlock: every lock call
#              of the gateway's process (libmicrohttpd's, OpenSSL's, LMDB's and ours), per hit.
#              A lock shared by threads on every hit (the store's policy lock, LMDB's reader
#              table, OpenSSL's method store, the slow-client guard) shows up here even when
#              nothing waits on it.
#   under load wrk -t1 -c32 for LOCKS_DURATION (5) seconds: futex(2) calls of the gateway (a
#              pthread lock calls futex only when it must wait or wake a waiter) and context
#              switches, per 10,000 hits, and the requests per second (indicative).
# Needs root (perf probe) and perf. BENCH_GATEWAY picks the binary (A/B: run it twice).
#
# Usage: bench/locks.sh             Results: bench/results/locks.json
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
source "$REPO/bench/lib/nginx.sh"

THREADS="${LOCKS_THREADS:-2}"
HITS="${LOCKS_HITS:-500}"
DUR="${LOCKS_DURATION:-5}"
need perf wrk nginx curl jq
LIBC="$(ldd "$GATEWAY_BIN" | awk '/libc\.so/ {print $3}')"
[ -n "$LIBC" ] || die "cannot find the gateway's libc"
perf probe -q -x "$LIBC" -a 'sc_mutex_lock=pthread_mutex_lock' 2>/dev/null || true
perf probe -q -x "$LIBC" -a 'sc_rwlock_rdlock=pthread_rwlock_rdlock' 2>/dev/null || true
bench_on_exit "perf probe -q -d 'probe_libc:sc_*' >/dev/null 2>&1"

mkdir -p "$WORK/www/bench"
head -c 102400 /dev/urandom >"$WORK/www/bench/obj"
chmod -R a+rX "$WORK/www"
nginx_static_start static "$(free_port)" "$WORK/www" 1
gw_start "$(free_port)" "$WORK/cache" "$NGX_URL" --cache-size 1G --threads "$THREADS"
curl -fsS -o /dev/null "$GW_URL/bench/obj"
sleep 0.3
hdr="$(curl -fsS -D - -o /dev/null "$GW_URL/bench/obj" | tr -d '\r' | grep -i '^x-cache:' || true)"
[ "${hdr,,}" = "x-cache: hit" ] || die "not a hit: '$hdr'"

# Per hit: HITS sequential GETs on one connection while perf counts.
for i in $(seq "$HITS"); do printf 'url = "%s"\noutput = "/dev/null"\n' "$GW_URL/bench/obj"; done >"$WORK/curl.cfg"
perf stat -x, -e probe_libc:sc_mutex_lock,probe_libc:sc_rwlock_rdlock -p "$GW_PID" \
    -o "$WORK/locks.csv" -- sleep 4 &
PERF=$!
sleep 0.7
curl -fsS -K "$WORK/curl.cfg"
wait "$PERF"
mutex="$(awk -F, '/sc_mutex_lock/ {print $1}' "$WORK/locks.csv")"
rwlock="$(awk -F, '/sc_rwlock_rdlock/ {print $1}' "$WORK/locks.csv")"

# Under load: futex calls and context switches while wrk runs.
perf stat -x, -e syscalls:sys_enter_futex,context-switches -p "$GW_PID" -o "$WORK/load.csv" \
    -- sleep "$((DUR + 1))" &
PERF=$!
read -r rps _ _ _ n _ <<<"$(wrk_run "$GW_URL/bench/obj" "$DUR" 32)"
wait "$PERF"
futex="$(awk -F, '/sys_enter_futex/ {print $1}' "$WORK/load.csv")"
cs="$(awk -F, '/context-switches/ {print $1}' "$WORK/load.csv")"

RESULT="$(jq -n --argjson hits "$HITS" --argjson mutex "$mutex" --argjson rwlock "$rwlock" \
    --argjson futex "$futex" --argjson cs "$cs" --argjson n "$n" --argjson rps "$rps" \
    --argjson threads "$THREADS" --argjson dur "$DUR" \
    '{settings: {threads: $threads, hits: $hits, duration_s: $dur, connections: 32},
      per_hit: {mutex_lock: ($mutex / $hits), rwlock_rdlock: ($rwlock / $hits)},
      under_load: {requests: $n, requests_per_s: $rps, futex_per_10k: ($futex * 10000 / $n),
                   context_switches_per_10k: ($cs * 10000 / $n)}}')"
jq -r '"per hit: \(.per_hit.mutex_lock * 100 | round / 100) pthread_mutex_lock, \(.per_hit.rwlock_rdlock * 100 | round / 100) pthread_rwlock_rdlock
under load (\(.settings.threads) threads): \(.under_load.requests_per_s) requests/s, \(.under_load.futex_per_10k | round) futex calls and \(.under_load.context_switches_per_10k | round) context switches per 10k hits"' <<<"$RESULT"
bench_write_results "$RESULT"

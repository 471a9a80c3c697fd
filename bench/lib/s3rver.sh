# bench/lib/s3rver.sh - sourced after common.sh: a plain s3rver on loopback (no namespace, no
# delay, no root), as tests/integration/harness/s3rver.py starts it, for benchmarks that
# measure what a cache decides rather than how fast the cloud is (bench/convergence.sh).
#
# s3rver_start BUCKET starts it in $WORK/s3rver (stopped on exit) and sets S3RVER_URL and
# S3RVER_PID. It checks SigV4 with its one key pair, S3RVER/S3RVER (common.sh exports it).

s3rver_start() {
    local bucket="$1" port
    local s3rver="$REPO/node_modules/.bin/s3rver"
    [ -x "$s3rver" ] || die "$s3rver is missing: tools/install-deps.sh (or, in a worktree, link node_modules)"
    need node curl
    port="$(free_port)"
    mkdir -p "$WORK/s3rver"
    # --openssl-legacy-provider: s3rver's ListObjectsV2 tokens use a cipher Node 17+ refuses
    node --openssl-legacy-provider "$s3rver" --address 127.0.0.1 --port "$port" \
        --directory "$WORK/s3rver/data" --silent --configure-bucket "$bucket" \
        >"$WORK/s3rver/s3rver.log" 2>&1 &
    S3RVER_PID=$!
    bench_track "$S3RVER_PID"
    S3RVER_URL="http://127.0.0.1:$port"
    # s3rver answers 200 on / (ListBuckets) once it is up.
    for _ in $(seq 400); do
        [ "$(curl -s -o /dev/null -w '%{http_code}' "$S3RVER_URL/" || true)" = 200 ] && return 0
        kill -0 "$S3RVER_PID" 2>/dev/null || { cat "$WORK/s3rver/s3rver.log" >&2; die "s3rver died"; }
        sleep 0.05
    done
    die "s3rver did not answer within 20 s (log: $WORK/s3rver/s3rver.log)"
}

#!/usr/bin/env bash
# run-local.sh - runs the gateway locally for trying it out (`make run`).
#
# With an upstream configured (S3CACHED_UPSTREAM or --upstream among the
# arguments) it just execs build/s3cached with the environment and arguments.
# Otherwise it starts s3rver on 127.0.0.1:9000 with a temp dir, creates bucket
# `demo` with a few seeded objects, and runs the gateway on 127.0.0.1:8080 in
# front of it (cache in ./build/run-cache). Ctrl-C stops both.
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BIN="${S3CACHED_BIN:-$REPO/build/s3cached}"
S3RVER_PORT="${S3RVER_PORT:-9000}"
GW_LISTEN="${S3CACHED_LISTEN:-127.0.0.1:8080}"

say() { printf 'run-local: %s\n' "$*"; }
die() {
    say "ERROR: $*" >&2
    exit 1
}

[ -x "$BIN" ] || die "$BIN missing: run 'make' first"

upstream_given() {
    [ -n "${S3CACHED_UPSTREAM:-}" ] && return 0
    local a
    for a in "$@"; do
        case "$a" in
        --upstream | --upstream=*) return 0 ;;
        esac
    done
    return 1
}

if upstream_given "$@"; then
    exec "$BIN" "$@"
fi

S3RVER="$REPO/node_modules/.bin/s3rver"
[ -x "$S3RVER" ] || die "s3rver missing: run tools/install-deps.sh"

DATA="$(mktemp -d /tmp/s3cached-run-s3rver.XXXXXX)"
S3RVER_PID=""
GW_PID=""
# Stops the gateway first (it may still be talking to s3rver), then s3rver.
stop_pid() {
    [ -n "$1" ] || return 0
    kill "$1" 2>/dev/null || return 0
    wait "$1" 2>/dev/null || true
}
cleanup() {
    trap - EXIT INT TERM
    stop_pid "$GW_PID"
    stop_pid "$S3RVER_PID"
    rm -rf "$DATA"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# s3rver's ListObjectsV2 continuation tokens need the legacy OpenSSL provider on Node 17+.
node --openssl-legacy-provider "$S3RVER" --address 127.0.0.1 --port "$S3RVER_PORT" \
    --directory "$DATA/data" --silent --configure-bucket demo >"$DATA/s3rver.log" 2>&1 &
S3RVER_PID=$!

for _ in $(seq 1 100); do
    curl -s -o /dev/null "http://127.0.0.1:$S3RVER_PORT/" && break
    kill -0 "$S3RVER_PID" 2>/dev/null || die "s3rver exited: $(tail -n 5 "$DATA/s3rver.log")"
    sleep 0.1
done
curl -s -o /dev/null "http://127.0.0.1:$S3RVER_PORT/" || die "s3rver did not answer on port $S3RVER_PORT"
say "s3rver on http://127.0.0.1:$S3RVER_PORT (data in $DATA)"

# A few image-like objects (random bytes, JPEG-sized) and a small manifest.
export AWS_ACCESS_KEY_ID=S3RVER AWS_SECRET_ACCESS_KEY=S3RVER AWS_REGION=us-east-1
/usr/bin/python3 - "$S3RVER_PORT" <<'EOF' || die "seeding bucket demo failed"
import os
import sys

import boto3
from botocore.config import Config

c = boto3.client("s3", endpoint_url="http://127.0.0.1:%s" % sys.argv[1],
                 config=Config(s3={"addressing_style": "path"}))
names = []
for i in range(8):
    name = "images/img_%04d.jpg" % i
    c.put_object(Bucket="demo", Key=name, Body=os.urandom(200 * 1024 + i * 4096),
                 ContentType="image/jpeg")
    names.append(name)
c.put_object(Bucket="demo", Key="shards/shard-000.tar", Body=os.urandom(8 * 1024 * 1024),
             ContentType="application/x-tar")
c.put_object(Bucket="demo", Key="manifest.txt", Body="\n".join(names).encode() + b"\n",
             ContentType="text/plain")
EOF
say "bucket demo seeded: images/img_0000..0007.jpg, shards/shard-000.tar, manifest.txt"

mkdir -p "$REPO/build/run-cache"
"$BIN" --listen "$GW_LISTEN" --upstream "http://127.0.0.1:$S3RVER_PORT" --region us-east-1 \
    --cache-dir "$REPO/build/run-cache" "$@" &
GW_PID=$!

for _ in $(seq 1 100); do
    curl -s -o /dev/null "http://$GW_LISTEN/_s3cached/stats" && break
    kill -0 "$GW_PID" 2>/dev/null || die "s3cached exited"
    sleep 0.1
done

cat <<EOF

s3cached on http://$GW_LISTEN in front of s3rver (Ctrl-C stops both). Try:

  export AWS_ACCESS_KEY_ID=S3RVER AWS_SECRET_ACCESS_KEY=S3RVER AWS_REGION=us-east-1
  export AWS_ENDPOINT_URL=http://$GW_LISTEN
  aws s3 ls s3://demo --recursive --endpoint-url http://$GW_LISTEN
  aws s3 cp s3://demo/images/img_0000.jpg /tmp/img.jpg --endpoint-url http://$GW_LISTEN
  curl -s http://$GW_LISTEN/_s3cached/stats
  status page: http://$GW_LISTEN/_s3cached/

EOF

wait "$GW_PID"

#!/usr/bin/env bash
# run.sh - runs the integration suite (pytest) against s3rver and radosgw.
#
# Usage: tests/integration/run.sh [pytest args...]   (paths relative to tests/integration)
#   S3CACHED_BIN=path      gateway binary (default build/asan/s3cached)
#   S3CACHED_IT_DIRECT=1   no gateway: point the tests at the upstreams (harness check)
#   S3CACHED_IT_VALGRIND=1 the optimized build under valgrind memcheck (make valgrind)
#   S3CACHED_IT_ZERO_COPY=1 every gateway with --zero-copy (hits sent with sendfile)
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
if [ -n "${S3CACHED_BIN:-}" ]; then
    S3CACHED_BIN="$(realpath -m "$S3CACHED_BIN")"
    export S3CACHED_BIN
fi
cd "$here"
export PYTHONDONTWRITEBYTECODE=1
exec /usr/bin/python3 -m pytest -p no:cacheprovider -q -rfEs --durations=10 "$@"

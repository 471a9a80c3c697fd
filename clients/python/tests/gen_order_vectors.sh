#!/usr/bin/env bash
# gen_order_vectors.sh - regenerates order_vectors.json from the gateway's plan code.
# Run from anywhere after `make` (it links the objects in build/obj).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../../.." && pwd)"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
make -C "$repo" -s build/lib/libmanifest.a
libs=()
for d in manifest upstream sigv4 proto store policy common; do libs+=("$repo/build/lib/lib$d.a"); done
cc -std=c11 -D_GNU_SOURCE -O1 -I"$repo" -o "$tmp/gen" "$here/gen_order_vectors.c" "${libs[@]}" \
    $(pkg-config --libs libmicrohttpd libcurl jansson openssl zlib) -llmdb -lpthread -lm
"$tmp/gen" | /usr/bin/python3 -c '
import json, sys
v = json.load(sys.stdin)
print("[\n" + ",\n".join(json.dumps(t, separators=(",", ":")) for t in v) + "\n]")' \
    > "$here/order_vectors.json"
echo "wrote $here/order_vectors.json"

#!/usr/bin/env bash
# gen_order_vectors.sh - regenerates order_vectors.json from the gateway's plan code.
# Run from anywhere after `make` (it links the objects in build/obj).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../../.." && pwd)"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
objs=()
for d in common policy store gateway; do
    for o in "$repo/build/obj/$d"/*.o; do
        [ "$(basename "$o")" = main.o ] || objs+=("$o")
    done
done
cc -std=c11 -D_GNU_SOURCE -O1 -I"$repo" -o "$tmp/gen" "$here/gen_order_vectors.c" "${objs[@]}" \
    $(pkg-config --libs libmicrohttpd libcurl jansson openssl) -llmdb -lpthread -lm
"$tmp/gen" | /usr/bin/python3 -c '
import json, sys
v = json.load(sys.stdin)
print("[\n" + ",\n".join(json.dumps(t, separators=(",", ":")) for t in v) + "\n]")' \
    > "$here/order_vectors.json"
echo "wrote $here/order_vectors.json"

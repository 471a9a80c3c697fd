# bench/lib/cloud.sh - sourced after common.sh: a "cloud" bucket on this machine.
#
#   latency relay (host, 127.0.0.1:P)  --veth, tbf both ways-->  netns: nginx :80 --> s3rver
#   CLOUD_URL: the far-away bucket         each byte held          GET/HEAD of objects: static
#   delay each way (build/latency-relay)   CLOUD_RATE each way     files from s3rver's data dir;
#                                                                  everything else: s3rver
#
# Cloud buckets are far away: tens of milliseconds to the first byte and a bounded bandwidth
# per node. The kernel here has no netem, so the bandwidth cap is the tbf qdisc on both ends
# of a veth pair into a network namespace, and the delay is the latency relay in front.
# s3rver (node) answers PUT and LIST but only ~1,200 GETs/s of 100 KiB; nginx serving its
# data directory answers GETs the same way (same bytes, same MD5 ETag, Content-Length,
# Last-Modified, ranges) about 30x faster, so nginx takes the GETs.
#
# Settings (environment, defaults in brackets):
#   CLOUD_DELAY_MS [15]     one-way delay, each direction: a request on an open connection
#                           waits 2x this for its first byte; a new connection one more
#                           round trip (the TCP handshake)
#   CLOUD_RATE [2gbit]      tbf rate, each direction (tc units: 2gbit, 500mbit, ...)
#   CLOUD_WINDOW [4M]       bytes the relay holds per direction of one connection: one
#                           connection moves at most this per delay (a TCP window)
#   CLOUD_CONN_RATE [none]  bytes a second one connection moves each way (K/M/G), as S3's
#                           per-connection throughput (about 90 MB/s a GET); empty: no bound
#   CLOUD_GETS [nginx]      nginx: GETs served by nginx; s3rver: everything to s3rver
#   CLOUD_BUCKET [bench]    the bucket created at start
#   CLOUD_NGINX_WORKERS [2] the cloud's nginx workers (it is the far side, not measured)
#   CLOUD_ACCESS_LOG [0]    1: the cloud's nginx logs every request that reaches it, so that
#                           requests can be counted at the bucket (cloud_requests)
#   CLOUD_CHECKSUMS [none]  crc64nvme: whole-object GETs asked with x-amz-checksum-mode:
#                           ENABLED get x-amz-checksum-crc64nvme (FULL_OBJECT) beside the MD5
#                           ETag, as S3 sends for every object written since December 2024
#                           (computed by build/s3cached-checksum); none: the ETag only
#
# cloud_up starts it all and sets:
#   CLOUD_URL       http://127.0.0.1:PORT, through the relay: delay + bandwidth cap
#   CLOUD_SEED_URL  http://10.a.b.2:80, straight into the namespace: bandwidth cap, no delay
#                   (for seeding the bucket, not for measuring)
#   CLOUD_DATA      s3rver's data directory
#   CLOUD_JSON      the settings, as JSON, for the results file
# cloud_etags must run after objects are added (it maps each key to its MD5 for nginx, and
# with CLOUD_CHECKSUMS=crc64nvme to its CRC-64/NVME).
# cloud_bytes_back prints the bytes the relay has carried back from the cloud so far: the one
# counter every path to the cloud (direct, the gateway, nginx) goes through, HTTP headers
# included. With CLOUD_ACCESS_LOG=1, cloud_requests counts the requests the bucket received.
# Everything (processes, namespace, veth pair, qdiscs) goes away on exit, Ctrl-C included.
# A namespace left over by a killed run (s3cb-PID with PID gone) is removed at the next start.
# Needs root (CAP_NET_ADMIN) for the namespace and the qdiscs.

CLOUD_DELAY_MS="${CLOUD_DELAY_MS:-15}"
CLOUD_RATE="${CLOUD_RATE:-2gbit}"
CLOUD_WINDOW="${CLOUD_WINDOW:-4M}"
CLOUD_CONN_RATE="${CLOUD_CONN_RATE:-}"
CLOUD_GETS="${CLOUD_GETS:-nginx}"
CLOUD_BUCKET="${CLOUD_BUCKET:-bench}"
CLOUD_NGINX_WORKERS="${CLOUD_NGINX_WORKERS:-2}"
CLOUD_ACCESS_LOG="${CLOUD_ACCESS_LOG:-0}"
CLOUD_CHECKSUMS="${CLOUD_CHECKSUMS:-none}"
CLOUD_NS=""
CLOUD_S3RVER_PORT=4568 # inside the namespace: nothing else listens there

# tc rate ("2gbit", "500mbit", "100mbps") in bytes per second.
cloud_rate_bytes() {
    awk -v r="$1" 'BEGIN {
        n = r + 0; u = tolower(substr(r, length(n "") + 1));
        m["bit"] = 1/8; m["kbit"] = 1000/8; m["mbit"] = 1e6/8; m["gbit"] = 1e9/8;
        m["bps"] = 1; m["kbps"] = 1000; m["mbps"] = 1e6; m["gbps"] = 1e9; m[""] = 1/8;
        if (!(u in m)) { print "bad rate: " r > "/dev/stderr"; exit 1 }
        printf "%.0f", n * m[u] }'
}

# Removes namespaces (and their processes) left by benchmark runs that were killed.
cloud_gc() {
    local ns pid
    for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep -E '^s3cb-[0-9]+$' || true); do
        pid="${ns#s3cb-}"
        kill -0 "$pid" 2>/dev/null && continue
        say "removing namespace $ns left by a run that is gone"
        local ip relay
        ip="$(ip netns exec "$ns" ip -4 -o addr show 2>/dev/null | awk '$2 != "lo" {sub(/\/.*/, "", $4); print $4; exit}')"
        if [ -n "$ip" ]; then # its relay, left in this namespace
            for relay in $(pgrep -f "latency-relay .*--target $ip:80 " || true); do
                # and the gateways that used it as their upstream
                local port gw
                port="$(tr '\0' ' ' <"/proc/$relay/cmdline" 2>/dev/null | sed -n 's/.*--listen 127\.0\.0\.1:\([0-9]*\) .*/\1/p')"
                if [ -n "$port" ]; then
                    for gw in $(pgrep -f "s3cached .*--upstream http://127\.0\.0\.1:$port " || true); do
                        kill "$gw" 2>/dev/null || true
                    done
                fi
                kill "$relay" 2>/dev/null || true
            done
        fi
        for pid in $(ip netns pids "$ns" 2>/dev/null); do kill -9 "$pid" 2>/dev/null || true; done
        ip netns del "$ns" 2>/dev/null || true
    done
}

cloud_down() {
    [ -n "$CLOUD_NS" ] || return 0
    local pid i
    [ -n "${CLOUD_RELAY_PID:-}" ] && bench_stop "$CLOUD_RELAY_PID"
    [ -f "$WORK/cloud/nginx/nginx.pid" ] && bench_stop "$(cat "$WORK/cloud/nginx/nginx.pid")"
    [ -n "${CLOUD_S3RVER_PID:-}" ] && bench_stop "$CLOUD_S3RVER_PID"
    for pid in $(ip netns pids "$CLOUD_NS" 2>/dev/null); do kill "$pid" 2>/dev/null || true; done
    for i in $(seq 40); do [ -z "$(ip netns pids "$CLOUD_NS" 2>/dev/null)" ] && break; sleep 0.05; done
    for pid in $(ip netns pids "$CLOUD_NS" 2>/dev/null); do kill -9 "$pid" 2>/dev/null || true; done
    ip link del "$CLOUD_VETH_HOST" 2>/dev/null || true # takes its peer and both qdiscs along
    ip netns del "$CLOUD_NS" 2>/dev/null || true
    CLOUD_NS=""
}

# Picks a free 10.a.b.0/30 for the veth pair: not on any interface nor in any route.
cloud_pick_subnet() {
    local n a b used
    used="$(ip -4 -o addr show; ip -4 route show table all 2>/dev/null)"
    for n in $(seq 0 200); do
        a=$((200 + ($$ + n) % 50))
        b=$((($$ / 50 + n * 7) % 250 + 1))
        grep -q "10\.$a\.$b\." <<<"$used" || { echo "10.$a.$b"; return; }
    done
    die "no free 10.x.y.0/30 subnet for the veth pair"
}

# Writes the nginx map from each object's file ("/bucket/key._S3rver_object", the $uri once
# try_files has found it) to its quoted MD5, s3rver's ETag.
cloud_etags() {
    local map="$WORK/cloud/nginx/etags.map"
    find "$CLOUD_DATA" -name '*._S3rver_object.md5' -print0 |
        xargs -0 -r awk -v root="$CLOUD_DATA" '
            FNR == 1 { k = substr(FILENAME, length(root) + 1); sub(/\.md5$/, "", k);
                       if (k !~ /[\047;{} \t]/) printf "\047%s\047 \047\"%s\"\047;\n", k, $1 }' \
            >"$map.tmp"
    mv "$map.tmp" "$map"
    cloud_checksums
    if [ -f "$WORK/cloud/nginx/nginx.pid" ]; then
        local old
        old="$(nginx_workers "$(cat "$WORK/cloud/nginx/nginx.pid")")"
        kill -HUP "$(cat "$WORK/cloud/nginx/nginx.pid")"
        # The reload is done when the old workers are gone.
        for i in $(seq 100); do
            local alive=0 p
            for p in $old; do kill -0 "$p" 2>/dev/null && alive=1; done
            [ "$alive" = 0 ] && break
            sleep 0.05
        done
    fi
    say "cloud: ETag map of $(wc -l <"$map") objects"
}

# Writes the nginx map from each object's file to its CRC-64/NVME in base64 (empty unless
# CLOUD_CHECKSUMS=crc64nvme).
cloud_checksums() {
    local map="$WORK/cloud/nginx/checksums.map"
    case "$CLOUD_CHECKSUMS" in
    none) : >"$map.tmp" ;;
    crc64nvme)
        [ -x "$REPO/build/s3cached-checksum" ] || die "CLOUD_CHECKSUMS=crc64nvme needs make all"
        find "$CLOUD_DATA" -name '*._S3rver_object' -print0 |
            xargs -0 -r "$REPO/build/s3cached-checksum" |
            awk -v root="$CLOUD_DATA" '{ k = substr($0, length($1) + 3 + length(root));
                if (k !~ /[\047;{} \t]/) printf "\047%s\047 \047%s\047;\n", k, $1 }' >"$map.tmp" ;;
    *) die "CLOUD_CHECKSUMS: none or crc64nvme, not $CLOUD_CHECKSUMS" ;;
    esac
    mv "$map.tmp" "$map"
}

# Puts N objects under PREFIX in the bucket, once: cloud_seed_with PREFIX N ID COMMAND...
# COMMAND puts them (through CLOUD_SEED_URL); ID names what it puts (the same ID, the same
# objects). Seeding is slow (s3rver takes about 250 PUTs/s), so the objects are kept in
# $BENCH_DATA_CACHE (default build/bench-data; `make clean` removes it) and hard-linked into
# the next cloud that wants the same ID and at most as many objects. Then refreshes the ETag map.
cloud_seed_with() {
    local prefix="$1" n="$2" id="$3"
    shift 3
    case "$prefix" in
    */) ;;
    *) die "cloud_seed: the prefix must end with / (it is kept as a directory)" ;;
    esac
    local sub="$CLOUD_BUCKET/${prefix%/}"
    local root="${BENCH_DATA_CACHE:-$REPO/build/bench-data}" key have=0
    key="$(printf '%s|%s|%s' "$CLOUD_BUCKET" "$prefix" "$id" | md5sum | cut -c1-16)"
    local cached="$root/$key"
    [ -f "$cached/objects" ] && have="$(cat "$cached/objects")"
    if [ "$have" -ge "$n" ]; then
        mkdir -p "$(dirname "$CLOUD_DATA/$sub")"
        cp -al "$cached/data/$sub" "$(dirname "$CLOUD_DATA/$sub")/"
        say "cloud: $n objects under $prefix linked from $cached ($have seeded there)"
    else
        local t0=$SECONDS
        "$@" || die "seeding $n objects under $prefix failed"
        say "cloud: seeded $n objects under $prefix in $((SECONDS - t0)) s"
        rm -rf "$cached.tmp" "$cached"
        mkdir -p "$(dirname "$cached.tmp/data/$sub")"
        if cp -al "$CLOUD_DATA/$sub" "$(dirname "$cached.tmp/data/$sub")/" 2>/dev/null; then
            printf '%s %s\n' "$prefix" "$id" >"$cached.tmp/options"
            echo "$n" >"$cached.tmp/objects"
            mv "$cached.tmp" "$cached"
        else
            rm -rf "$cached.tmp" # another file system: no cache, seed every time
        fi
    fi
    cloud_etags
}

# Puts a trainsim dataset in the bucket: cloud_seed PREFIX OBJECTS [more trainsim dataset
# options, e.g. --size 4M], kept for the next run as cloud_seed_with says.
cloud_seed() {
    local prefix="$1" n="$2"
    shift 2
    [ -x "$TRAINSIM_BIN" ] || die "$TRAINSIM_BIN is missing: make build/s3cached-trainsim"
    # The objects' bytes are trainsim's: a change to its generator must not reuse old ones.
    local gen="$REPO/tools/trainsim/dataset.c"
    [ -f "$gen" ] || gen="$TRAINSIM_BIN"
    cloud_seed_with "$prefix" "$n" "$*|$(md5sum <"$gen")" \
        "$TRAINSIM_BIN" seed --endpoint "$CLOUD_SEED_URL" --bucket "$CLOUD_BUCKET" \
        --prefix "$prefix" --objects "$n" "$@" --workers 32 --quiet
}

# Puts random objects in the bucket: cloud_seed_random PREFIX OBJECTS SIZE (bytes), keys
# PREFIX%08u.bin like trainsim's, each with one signed PUT (trainsim's objects stop at 1 GiB;
# these may be larger, up to S3's 5 GiB for one PUT). Kept for the next run (cloud_seed_with).
cloud_seed_random() {
    local prefix="$1" n="$2" size="$3"
    cloud_seed_with "$prefix" "$n" "random $size" cloud_put_random "$prefix" "$n" "$size"
}

cloud_put_random() { # PREFIX OBJECTS SIZE: the PUTs of cloud_seed_random
    local prefix="$1" n="$2" size="$3" i
    for ((i = 0; i < n; i++)); do
        head -c "$size" /dev/urandom >"$WORK/cloud/put.bin"
        curl -fsS -o /dev/null --aws-sigv4 "aws:amz:$AWS_REGION:s3" \
            --user "$AWS_ACCESS_KEY_ID:$AWS_SECRET_ACCESS_KEY" -H 'x-amz-content-sha256: UNSIGNED-PAYLOAD' \
            -T "$WORK/cloud/put.bin" "$CLOUD_SEED_URL/$CLOUD_BUCKET/$(printf '%s%08d.bin' "$prefix" "$i")" ||
            { rm -f "$WORK/cloud/put.bin"; return 1; }
    done
    rm -f "$WORK/cloud/put.bin"
}

# The bytes the relay has carried from the cloud back to its clients so far (headers and
# bodies of every path through CLOUD_URL). The relay prints its counters on SIGUSR1.
cloud_bytes_back() {
    local log="$WORK/cloud/relay.log" n0 i
    n0="$(grep -c 'bytes .* back' "$log" || true)"
    kill -USR1 "$CLOUD_RELAY_PID"
    for i in $(seq 200); do
        [ "$(grep -c 'bytes .* back' "$log" || true)" -gt "$n0" ] && break
        sleep 0.01
    done
    [ "$i" -lt 200 ] || die "the relay did not print its counters"
    grep 'bytes .* back' "$log" | tail -n 1 | sed -n 's/.* to the target, \([0-9]*\) back.*/\1/p'
}

# cloud_bytes_back once nothing has moved for half a second (fills and read-ahead that go on
# after the client has its bytes are counted too), at most 60 s.
cloud_bytes_back_settled() {
    local a b i
    a="$(cloud_bytes_back)"
    for i in $(seq 120); do
        sleep 0.5
        b="$(cloud_bytes_back)"
        [ "$b" = "$a" ] && break
        a="$b"
    done
    echo "$b"
}

# With CLOUD_ACCESS_LOG=1: the requests that reached the bucket from outside (through the relay
# or the seeding URL; nginx's own re-request of an If-Match is left out) since line FROM (1:
# the first) of the log: cloud_requests FROM [KEY_PREFIX]. Prints "GETS RANGED_GETS HEADS OTHER
# BODY_BYTES LINES": GETs of keys under /BUCKET/KEY_PREFIX, those of them with a Range, HEADs
# of such keys, every other request, the GETs' body bytes, and the log lines read (FROM +
# LINES is the next FROM). nginx writes each line when its request ends.
cloud_requests() {
    local from="$1" prefix="${2:-}" log="$WORK/cloud/nginx/access.log"
    [ "$CLOUD_ACCESS_LOG" = 1 ] || die "cloud_requests needs CLOUD_ACCESS_LOG=1 before cloud_up"
    tail -n +"$from" "$log" | awk -v self="$CLOUD_IP_NS" -v want="/$CLOUD_BUCKET/$prefix" '
        { lines++ }
        $1 == self { next }
        { split($3, u, "?"); key = (index(u[1], want) == 1 && u[1] != want) }
        $2 == "GET" && key { gets++; body += $5; if ($6 != "\"-\"") ranged++; next }
        $2 == "HEAD" && key { heads++; next }
        { other++ }
        END { printf "%d %d %d %d %d %d\n", gets, ranged, heads, other, body, lines }'
}

cloud_write_nginx_conf() {
    local dir="$WORK/cloud/nginx" log="access_log off;"
    mkdir -p "$dir"
    [ -f "$dir/etags.map" ] || : >"$dir/etags.map"
    [ -f "$dir/checksums.map" ] || : >"$dir/checksums.map"
    if [ "$CLOUD_ACCESS_LOG" = 1 ]; then
        : >"$dir/access.log"
        # One line a request, written unbuffered: address, method, target as sent, status,
        # body bytes, Range (nginx writes an empty value as "-"; the quotes keep its spaces).
        log="log_format cloud '\$remote_addr \$request_method \$request_uri \$status \$body_bytes_sent \"\$http_range\"';
    access_log $dir/access.log cloud;"
    fi
    cat >"$dir/nginx.conf" <<NGX
# The emulated cloud's front: object GET/HEAD from s3rver's files, the rest to s3rver.
worker_processes $CLOUD_NGINX_WORKERS;
pid $dir/nginx.pid;
error_log $dir/error.log warn;
events { worker_connections 8192; }
http {
    $log
    sendfile on;
    tcp_nopush off;
    tcp_nodelay on;
    keepalive_requests 1000000;
    keepalive_timeout 300s;
    default_type application/octet-stream;
    etag off;                          # S3's ETag is the MD5, from the map below
    map_hash_max_size 1048576;
    map_hash_bucket_size 128;
    map \$uri \$s3_etag { include $dir/etags.map; }
    # The same, by the request's own path (before try_files has found the file): for If-Match.
    map \$uri._S3rver_object \$s3_etag_of_key { include $dir/etags.map; }
    # The object's CRC-64/NVME (CLOUD_CHECKSUMS), sent as S3 does: asked for, and never with a
    # range (a whole-object checksum would not describe a part).
    map \$uri \$s3_crc64nvme { include $dir/checksums.map; }
    map "\$http_x_amz_checksum_mode:\$http_range" \$s3_checksum_asked { "~*^enabled:\$" 1; default 0; }
    map \$s3_checksum_asked \$s3_checksum { 1 \$s3_crc64nvme; default ""; }
    map \$s3_checksum \$s3_checksum_type { "" ""; default FULL_OBJECT; }
    upstream s3rver { server 127.0.0.1:$CLOUD_S3RVER_PORT; keepalive 32; }
    upstream cloud_self { server $CLOUD_IP_NS:80; keepalive 32; }
    server {
        listen $CLOUD_IP_NS:80 backlog=4096;
        root $CLOUD_DATA;
        client_max_body_size 0;
        location / {
            error_page 418 = @s3rver;
            if (\$request_method !~ ^(GET|HEAD)\$) { return 418; }
            error_page 419 = @if_match;
            if (\$args != "") { return 418; }
            if (\$http_if_match != "") { return 419; }
            add_header ETag \$s3_etag always;
            add_header x-amz-request-id nginx-static always;
            add_header x-amz-checksum-crc64nvme \$s3_checksum always;
            add_header x-amz-checksum-type \$s3_checksum_type always;
            try_files \$uri._S3rver_object @s3rver;
        }
        # S3 answers 412 to an If-Match that names another ETag, and the object to one that
        # names its own. nginx's own check compares with nginx's ETag, which is off here (the
        # map's is added later, by add_header), so it would refuse every If-Match: the check
        # is made here, then the request asks this server again without it (over loopback).
        location @if_match {
            set \$if_match_ok 0;
            if (\$http_if_match = \$s3_etag_of_key) { set \$if_match_ok 1; }
            if (\$http_if_match = "*") { set \$if_match_ok 1; }
            if (\$s3_etag_of_key = "") { set \$if_match_ok 1; }   # no such object: s3rver's 404
            if (\$if_match_ok = 0) { return 412; }
            proxy_pass http://cloud_self;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_set_header Host \$http_host;
            proxy_set_header If-Match "";
            proxy_buffering off;
        }
        location @s3rver {
            proxy_pass http://s3rver;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_set_header Host \$http_host;   # SigV4 signs the Host header
            proxy_request_buffering off;
            proxy_buffering off;
        }
    }
}
NGX
}

cloud_up() {
    need ip tc nginx node curl jq
    [ "$(id -u)" = 0 ] || die "the emulated cloud needs root (network namespace, tc)"
    [ -x "$RELAY_BIN" ] || die "$RELAY_BIN is missing: make build/latency-relay"
    local s3rver="$REPO/node_modules/.bin/s3rver"
    [ -x "$s3rver" ] || die "$s3rver is missing: tools/install-deps.sh"
    cloud_gc
    CLOUD_NS="s3cb-$$"
    CLOUD_VETH_HOST="s3cb$$h"
    CLOUD_VETH_NS="s3cb$$n"
    bench_on_exit cloud_down
    local net
    net="$(cloud_pick_subnet)"
    CLOUD_IP_HOST="$net.1"
    CLOUD_IP_NS="$net.2"
    CLOUD_DATA="$WORK/cloud/data"
    mkdir -p "$CLOUD_DATA" "$WORK/cloud/nginx"
    chmod 755 "$WORK/cloud" "$CLOUD_DATA"

    ip netns add "$CLOUD_NS"
    ip link add "$CLOUD_VETH_HOST" type veth peer name "$CLOUD_VETH_NS"
    ip link set "$CLOUD_VETH_NS" netns "$CLOUD_NS"
    ip addr add "$CLOUD_IP_HOST/30" dev "$CLOUD_VETH_HOST"
    ip link set "$CLOUD_VETH_HOST" up
    ip netns exec "$CLOUD_NS" ip addr add "$CLOUD_IP_NS/30" dev "$CLOUD_VETH_NS"
    ip netns exec "$CLOUD_NS" ip link set "$CLOUD_VETH_NS" up
    ip netns exec "$CLOUD_NS" ip link set lo up

    # tbf both ways: the host side shapes requests and uploads, the namespace side answers.
    # burst: 2 ms at the rate (at least 256 KiB, so 64 KiB GSO segments pass whole);
    # latency 20 ms of queue before tbf drops, so TCP sees a bounded link, not a bottomless one.
    local rate_b burst
    rate_b="$(cloud_rate_bytes "$CLOUD_RATE")"
    burst=$((rate_b / 500))
    [ "$burst" -ge 262144 ] || burst=262144
    CLOUD_TBF="rate $CLOUD_RATE burst $burst latency 20ms"
    # shellcheck disable=SC2086
    tc qdisc add dev "$CLOUD_VETH_HOST" root tbf $CLOUD_TBF
    # shellcheck disable=SC2086
    ip netns exec "$CLOUD_NS" tc qdisc add dev "$CLOUD_VETH_NS" root tbf $CLOUD_TBF

    # s3rver inside the namespace, on its loopback.
    local s3addr="127.0.0.1" s3port="$CLOUD_S3RVER_PORT"
    if [ "$CLOUD_GETS" = s3rver ]; then
        s3addr="$CLOUD_IP_NS"
        s3port=80
    fi
    ip netns exec "$CLOUD_NS" node --openssl-legacy-provider "$s3rver" --address "$s3addr" \
        --port "$s3port" --directory "$CLOUD_DATA" --silent \
        --configure-bucket "$CLOUD_BUCKET" >"$WORK/cloud/s3rver.log" 2>&1 &
    CLOUD_S3RVER_PID=$!
    bench_track "$CLOUD_S3RVER_PID"
    case "$CLOUD_GETS" in
    nginx)
        cloud_write_nginx_conf
        ip netns exec "$CLOUD_NS" nginx -c "$WORK/cloud/nginx/nginx.conf" \
            -p "$WORK/cloud/nginx" -g 'daemon off;' &
        bench_track $!
        ;;
    s3rver) ;;
    *) die "CLOUD_GETS must be nginx or s3rver" ;;
    esac
    CLOUD_SEED_URL="http://$CLOUD_IP_NS:80"
    # s3rver answers 200 on / (ListBuckets) once it is up.
    local i
    for i in $(seq 400); do
        [ "$(curl -s -o /dev/null -w '%{http_code}' "$CLOUD_SEED_URL/" || true)" = 200 ] && break
        kill -0 "$CLOUD_S3RVER_PID" 2>/dev/null || { cat "$WORK/cloud/s3rver.log" >&2; die "s3rver died"; }
        sleep 0.05
    done
    [ "$i" -lt 400 ] || die "the cloud did not come up (s3rver log: $WORK/cloud/s3rver.log)"

    local port
    port="$(free_port)"
    "$RELAY_BIN" --listen "127.0.0.1:$port" --target "$CLOUD_IP_NS:80" \
        --delay-ms "$CLOUD_DELAY_MS" --window "$CLOUD_WINDOW" \
        ${CLOUD_CONN_RATE:+--rate "$CLOUD_CONN_RATE"} --quiet 2>>"$WORK/cloud/relay.log" &
    CLOUD_RELAY_PID=$!
    bench_track "$CLOUD_RELAY_PID"
    CLOUD_URL="http://127.0.0.1:$port"
    wait_http "$CLOUD_URL/"
    CLOUD_JSON="$(jq -n --arg delay "$CLOUD_DELAY_MS" --arg rate "$CLOUD_RATE" \
        --arg rate_b "$rate_b" --arg tbf "$CLOUD_TBF" --arg window "$CLOUD_WINDOW" \
        --arg gets "$CLOUD_GETS" --arg ns "$CLOUD_NS" --arg net "$net.0/30" \
        --arg conn_rate "$CLOUD_CONN_RATE" --arg checksums "$CLOUD_CHECKSUMS" \
        '{one_way_delay_ms: ($delay | tonumber), rtt_ms: (2 * ($delay | tonumber)),
          rate: $rate, rate_bytes_per_s: ($rate_b | tonumber), tbf: $tbf,
          per_connection_rate: (if $conn_rate == "" then null else $conn_rate end),
          relay_window: $window, gets_served_by: $gets, namespace: $ns, veth_net: $net,
          checksums: $checksums,
          new_connection_extra_ms: (2 * ($delay | tonumber))}')"
    say "cloud: $CLOUD_URL -> relay (${CLOUD_DELAY_MS} ms each way) -> $CLOUD_VETH_HOST (tbf $CLOUD_RATE both ways) -> $CLOUD_NS $CLOUD_IP_NS:80 ($CLOUD_GETS GETs, s3rver)"
}

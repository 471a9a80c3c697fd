# bench/lib/nginx.sh - sourced after common.sh: nginx as the comparison, configured the way
# people cache S3 with it, and tuned as fairly as we know how.
#
#   nginx_proxy_cache_start NAME PORT UPSTREAM_HOST:PORT MAX_SIZE WORKERS [count] [slice=SIZE]
#       a caching reverse proxy (proxy_cache) on 127.0.0.1:PORT in front of UPSTREAM; its
#       cache lives in $WORK/NAME/cache (in NGX_CACHE_DIR if set), beside the gateway's. With
#       "count", an access log of one $upstream_cache_status per request ($WORK/NAME/cache.log,
#       read with nginx_cache_counts) gives the hit ratio. With "slice=SIZE" (e.g. slice=8m), the
#       slice module caches large objects as aligned SIZE pieces, each fetched with its own
#       Range request: how nginx caches large objects and ranges (below).
#   nginx_static_start NAME PORT ROOT WORKERS
#       static files under ROOT (the reference row of the hit benchmark, and a fast origin).
# Both set NGX_PID (the master), NGX_URL and NGX_DIR.
#
# Every choice, and why (docs/benchmarks.md repeats them):
#   worker_processes WORKERS      as many as the gateway's --threads in the same run
#   sendfile on, tcp_nopush off   hits go from the page cache to the socket without a copy;
#                                 no corking, as the gateway does not cork either
#   tcp_nodelay on                (the default) no Nagle delay on the last segment
#   keepalive_requests 1000000    clients keep their connections, as with the gateway
#   open_file_cache               cached files' descriptors stay open between hits
#   access_log off                unless counting hits ("count"): the gateway logs no request
#   proxy_cache_path ... levels=1:2 keys_zone=s3:64m max_size=MAX_SIZE inactive=365d
#                   use_temp_path=off
#                                 the same byte budget as the gateway's --cache-size; 64 MiB
#                                 of keys (~500,000 objects); nothing expires by age; a fill
#                                 is written in the cache directory and renamed (no copy)
#   proxy_cache_key $uri          an S3 object is its path: no Host, no query, no signature
#   proxy_cache_valid 200 365d    objects are immutable while cached (as the gateway assumes)
#   proxy_ignore_headers ...      an object's Cache-Control/Expires metadata cannot defeat it
#   proxy_cache_lock on           concurrent misses of one object make one upstream fetch, as
#                                 the gateway's shared fills do
#   proxy_buffering on, proxy_buffers 32 64k, proxy_buffer_size 64k
#                                 big buffers: a 4 MiB answer needs few reads
#   upstream keepalive 64, proxy_http_version 1.1, Connection ""
#                                 connections to the upstream are reused, as the gateway's
#                                 libcurl pool reuses them
#   proxy_set_header Host $http_host
#                                 the client's SigV4 signature (which covers Host) stays valid
#                                 at the upstream; nginx cannot re-sign as the gateway does, so
#                                 it forwards the client's own Authorization
#   add_header X-Cache $upstream_cache_status   HIT/MISS, to check the warm-up
# With slice=SIZE (ngx_http_slice_module, in Debian's nginx), as its documentation sets it up:
#   slice SIZE                    a request is served as the SIZE-aligned slices it covers
#   proxy_cache_key $uri$slice_range   each slice is cached on its own
#   proxy_set_header Range $slice_range   and fetched from the upstream with its own range
#   proxy_cache_valid 200 206 365d     a slice is a 206 from the upstream
#                                 X-Cache is then the status of the first slice a request covers

nginx_start_conf() { # NAME: runs $WORK/NAME/nginx.conf
    local dir="$WORK/$1"
    nginx -t -q -c "$dir/nginx.conf" -p "$dir" 2>"$dir/nginx-t.log" ||
        { cat "$dir/nginx-t.log" >&2; die "nginx refused $dir/nginx.conf"; }
    nginx -c "$dir/nginx.conf" -p "$dir" -g 'daemon off;' &
    NGX_PID=$!
    bench_track "$NGX_PID"
    NGX_DIR="$dir"
}

nginx_proxy_cache_start() {
    local name="$1" port="$2" upstream="$3" max_size="$4" workers="$5" opt
    local dir="$WORK/$name" log="access_log off;" cache="${NGX_CACHE_DIR:-$WORK/$name/cache}"
    local key='proxy_cache_key $uri;' valid='proxy_cache_valid 200 365d;'
    shift 5
    mkdir -p "$dir" "$cache"
    chmod 755 "$dir"
    echo "$cache" >"$dir/cache.path"
    for opt in "$@"; do
        case "$opt" in
        count)
            log="log_format st '\$upstream_cache_status';
    access_log $dir/cache.log st buffer=64k flush=1s;"
            ;;
        slice=*)
            nginx -V 2>&1 | grep -q with-http_slice_module || die "this nginx has no slice module"
            key="slice ${opt#slice=};
            proxy_cache_key \$uri\$slice_range;
            proxy_set_header Range \$slice_range;"
            valid='proxy_cache_valid 200 206 365d;'
            ;;
        *) die "nginx_proxy_cache_start: unknown option $opt" ;;
        esac
    done
    cat >"$dir/nginx.conf" <<NGX
# nginx as a caching reverse proxy for S3 (bench/lib/nginx.sh says why each line is there).
worker_processes $workers;
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
    open_file_cache max=200000 inactive=300s;
    open_file_cache_valid 300s;
    proxy_cache_path $cache levels=1:2 keys_zone=s3:64m max_size=$max_size
                     inactive=365d use_temp_path=off;
    upstream origin {
        server $upstream;
        keepalive 64;
        keepalive_requests 1000000;
        keepalive_timeout 300s;
    }
    server {
        listen 127.0.0.1:$port backlog=4096;
        location / {
            proxy_pass http://origin;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_set_header Host \$http_host;
            proxy_cache s3;
            $key
            $valid
            proxy_cache_lock on;
            proxy_cache_lock_timeout 60s;
            proxy_cache_lock_age 60s;
            proxy_ignore_headers Cache-Control Expires Set-Cookie X-Accel-Expires Vary;
            proxy_buffering on;
            proxy_buffer_size 64k;
            proxy_buffers 32 64k;
            proxy_busy_buffers_size 256k;
            proxy_read_timeout 120s;
            add_header X-Cache \$upstream_cache_status always;
        }
    }
}
NGX
    nginx_start_conf "$name"
    NGX_URL="http://127.0.0.1:$port"
    wait_http "$NGX_URL/"
}

nginx_static_start() {
    local name="$1" port="$2" root="$3" workers="$4"
    local dir="$WORK/$name"
    mkdir -p "$dir"
    chmod 755 "$dir"
    cat >"$dir/nginx.conf" <<NGX
# nginx serving files: the reference for the hit path, and a fast origin.
worker_processes $workers;
pid $dir/nginx.pid;
error_log $dir/error.log warn;
events { worker_connections 8192; }
http {
    access_log off;
    sendfile on;
    tcp_nopush off;
    tcp_nodelay on;
    keepalive_requests 1000000;
    keepalive_timeout 300s;
    open_file_cache max=200000 inactive=300s;
    open_file_cache_valid 300s;
    default_type application/octet-stream;
    server {
        listen 127.0.0.1:$port backlog=4096;
        root $root;
    }
}
NGX
    nginx_start_conf "$name"
    NGX_URL="http://127.0.0.1:$port"
    wait_http "$NGX_URL/"
}

# nginx enforces max_size from its cache manager process, which looks at the size at most every
# 10 s while nothing expires: in between the cache grows past the budget. This samples the
# cache directory's bytes every second into $WORK/NAME/size.log (start, then nginx_size_peak).
nginx_size_sampler_start() {
    local name="$1" cache
    cache="$(cat "$WORK/$name/cache.path")"
    (while :; do du -sb "$cache" 2>/dev/null | cut -f1; sleep 1; done) \
        >"$WORK/$name/size.log" &
    bench_track $!
    NGX_SAMPLER_PID=$!
}

# The largest cache directory size sampled so far, in bytes.
nginx_size_peak() { sort -n "$WORK/$1/size.log" | tail -n 1; }

# HIT and MISS lines in a counting proxy's log since line FROM (1-based):
# prints "hits misses lines".
nginx_cache_counts() {
    local name="$1" from="${2:-1}"
    sleep 1.2 # the log buffer is flushed every second
    tail -n "+$from" "$WORK/$name/cache.log" 2>/dev/null |
        awk '$1 == "HIT" {h++} $1 == "MISS" || $1 == "EXPIRED" {m++} END {printf "%d %d %d\n", h, m, NR}'
}

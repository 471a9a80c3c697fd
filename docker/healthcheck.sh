#!/bin/sh
# s3cached-healthcheck: the image's HEALTHCHECK. Asks the gateway's /healthz on the address it
# listens on: --listen from the container's command line if given (it wins over the
# environment, as in the gateway), else S3CACHED_LISTEN, else the gateway's default. A wildcard
# host (0.0.0.0, ::) is asked on loopback. Exit 0: healthy.
set -eu

listen="${S3CACHED_LISTEN:-127.0.0.1:8080}"
# PID 1 is the gateway, or docker-init (docker run --init) followed by the gateway's arguments.
if [ -r /proc/1/cmdline ]; then
    prev=""
    for arg in $(tr '\0' '\n' </proc/1/cmdline); do
        case "$prev:$arg" in
        --listen:*) listen="$arg" ;;
        *:--listen=*) listen="${arg#--listen=}" ;;
        esac
        prev="$arg"
    done
fi

port="${listen##*:}"
host="${listen%:*}"
case "$host" in
"" | 0.0.0.0) host=127.0.0.1 ;;
"[::]" | ::) host="[::1]" ;;
\[*) ;;
*:*) host="[$host]" ;;
esac
exec curl -fsS --noproxy "*" --max-time 3 -o /dev/null "http://$host:$port/healthz"

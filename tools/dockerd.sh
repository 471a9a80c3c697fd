#!/usr/bin/env bash
# dockerd.sh - makes sure a Docker engine answers, for `make docker-test`.
#
#   tools/dockerd.sh            start Debian's dockerd in the background if no engine answers,
#                               wait for its socket; then make the base images if missing
#   tools/dockerd.sh --engine   only the engine
#
# Idempotent: an engine that already answers (started here before, by systemd, or by hand) is
# used as it is, and base images that exist are kept. Machines without systemd (CI, containers)
# get a dockerd of their own, logging to /var/log/s3cached-dockerd.log. Uses Debian's docker.io
# (/usr/bin/docker, /usr/sbin/dockerd), never another docker client on PATH.
#
# No image registry is reachable from CI, so the images the Dockerfiles build FROM
# (debian:bookworm, debian:bookworm-slim) are made locally: mmdebstrap --variant=minbase from
# the Debian mirror apt is configured with, imported with `docker import` (about 45 s, once:
# the engine keeps them across runs).
set -euo pipefail

DOCKER=/usr/bin/docker
DOCKERD=/usr/sbin/dockerd
LOG=/var/log/s3cached-dockerd.log
LOCK=/run/s3cached-dockerd.lock
SUITE=bookworm
WAIT_SECONDS=60

say() { printf 'dockerd.sh: %s\n' "$*" >&2; }
die() {
    say "ERROR: $*"
    exit 1
}

engine_answers() { "$DOCKER" version --format '{{.Server.Version}}' >/dev/null 2>&1; }

start_engine() {
    [ -x "$DOCKERD" ] && [ -x "$DOCKER" ] || die "$DOCKERD or $DOCKER missing: tools/install-deps.sh installs docker.io"
    [ "$(id -u)" -eq 0 ] || die "no Docker engine answers and starting one needs root"
    say "no Docker engine answers: starting $DOCKERD (log: $LOG)"
    # setsid: the engine outlives this script and the make that ran it.
    # 9>&-: the engine must not inherit (and so hold) the lock of this script.
    setsid "$DOCKERD" >>"$LOG" 2>&1 </dev/null 9>&- &
    local waited=0
    until engine_answers; do
        kill -0 $! 2>/dev/null || {
            tail -n 20 "$LOG" >&2
            die "dockerd exited while starting (log above)"
        }
        [ "$waited" -lt $((WAIT_SECONDS * 5)) ] || die "dockerd did not answer within ${WAIT_SECONDS} s (see $LOG)"
        sleep 0.2
        waited=$((waited + 1))
    done
    say "Docker engine up"
}

# The first http(s) URI of apt's Debian sources for the suite (deb822 or one-line format).
debian_mirror() {
    local uri
    uri="$(grep -hs -A3 '^Types:.*deb' /etc/apt/sources.list.d/*.sources |
        awk '/^URIs:/ {print $2}' | grep -v -- '-security' | head -n1 || true)"
    if [ -z "$uri" ]; then
        uri="$(grep -hs '^deb ' /etc/apt/sources.list /etc/apt/sources.list.d/*.list |
            awk -v s="$SUITE" '$3 == s {print $2}' | head -n1 || true)"
    fi
    printf '%s\n' "${uri:-http://deb.debian.org/debian}"
}

make_base_images() {
    if "$DOCKER" image inspect "debian:$SUITE" "debian:$SUITE-slim" >/dev/null 2>&1; then
        return
    fi
    command -v mmdebstrap >/dev/null 2>&1 || die "mmdebstrap missing: tools/install-deps.sh installs it"
    local mirror
    mirror="$(debian_mirror)"
    say "making debian:$SUITE and debian:$SUITE-slim with mmdebstrap from $mirror (about a minute)"
    local tar log
    tar="$(mktemp /tmp/s3cached-debian-$SUITE.XXXXXX.tar)"
    log="$(mktemp /tmp/s3cached-mmdebstrap.XXXXXX.log)"
    mmdebstrap --variant=minbase --format=tar \
        --hook-dir=/usr/share/mmdebstrap/hooks/merged-usr \
        "$SUITE" "$tar" \
        "deb $mirror $SUITE main" "deb $mirror $SUITE-updates main" >"$log" 2>&1 || {
        tail -n 30 "$log" >&2
        rm -f "$tar" "$log"
        die "mmdebstrap failed (its last lines above)"
    }
    rm -f "$log"
    local imported=0
    "$DOCKER" import --change 'CMD ["bash"]' "$tar" "debian:$SUITE" >/dev/null || imported=$?
    rm -f "$tar"
    [ "$imported" -eq 0 ] || die "docker import failed"
    # One root file system for both names: -slim only trims documentation upstream.
    "$DOCKER" tag "debian:$SUITE" "debian:$SUITE-slim"
    say "base images ready"
}

main() {
    local engine_only=false
    case "${1:-}" in
    --engine) engine_only=true ;;
    "") ;;
    *)
        echo "usage: tools/dockerd.sh [--engine]" >&2
        exit 2
        ;;
    esac
    # One starter at a time: two concurrent `make docker-test` must not start two engines.
    exec 9>"$LOCK"
    flock 9
    engine_answers || start_engine
    $engine_only || make_base_images
}

main "$@"

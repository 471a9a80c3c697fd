#!/usr/bin/env bash
# install-deps.sh - installs what building and testing s3cached needs on Debian 12
# (libclang-rt-14-dev: the libFuzzer and sanitizer runtimes of `make fuzz`).
#
# Idempotent and fast when everything is present: Debian packages are checked
# with dpkg-query first, `apt-get update` runs once and only if one is missing,
# and `npm ci` runs only when node_modules is older than package-lock.json.
# Runs as root, or through sudo otherwise. Prints one line per step; on failure
# prints the failing step and the tail of its log.
#
#   tools/install-deps.sh           what `make test` needs
#   tools/install-deps.sh --bench   that, plus what `make bench` needs (gnuplot for the plots)
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
LOG="$(mktemp /tmp/s3cached-deps.XXXXXX.log)"
trap 'rm -f "$LOG"' EXIT

PKGS=(
    build-essential pkg-config clang clang-format libclang-rt-14-dev libtsan2
    libmicrohttpd-dev liblmdb-dev libcurl4-openssl-dev libjansson-dev
    libcmocka-dev libssl-dev zlib1g-dev lmdb-utils
    awscli python3-boto3 python3-pytest python3-torch python3-smart-open
    nginx wrk curl valgrind chromium
    radosgw ceph-mon ceph-osd ceph-common
    docker-compose prometheus python3-yaml systemd
    docker.io mmdebstrap
)

# Only `make bench` draws plots; `make test` does not need gnuplot.
BENCH_PKGS=(gnuplot-nox)
case "${1:-}" in
--bench) PKGS+=("${BENCH_PKGS[@]}") ;;
"") ;;
*)
    echo "usage: tools/install-deps.sh [--bench]" >&2
    exit 2
    ;;
esac

say() { printf 'install-deps: %s\n' "$*"; }

die() {
    say "ERROR: $*" >&2
    if [ -s "$LOG" ]; then
        say "last lines of the log:" >&2
        tail -n 30 "$LOG" >&2
    fi
    exit 1
}

# Runs a command as root: directly if we are root, else through sudo.
as_root() {
    if [ "$(id -u)" -eq 0 ]; then
        "$@"
    elif command -v sudo >/dev/null 2>&1; then
        sudo "$@"
    else
        die "not root and sudo is missing; run this script as root"
    fi
}

# Prints the packages of "$@" that are not fully installed.
missing_packages() {
    local p status
    for p in "$@"; do
        status="$(dpkg-query -W -f='${db:Status-Abbrev}' "$p" 2>/dev/null || true)"
        case "$status" in
        ii*) ;;
        *) printf '%s\n' "$p" ;;
        esac
    done
}

install_debian_packages() {
    local want=("${PKGS[@]}")
    if ! command -v node >/dev/null 2>&1; then
        want+=(nodejs npm)
    elif ! command -v npm >/dev/null 2>&1; then
        want+=(npm)
    fi
    local missing
    mapfile -t missing < <(missing_packages "${want[@]}")
    if [ "${#missing[@]}" -eq 0 ]; then
        say "Debian packages: all ${#want[@]} present"
        return
    fi
    say "Debian packages: installing ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    as_root apt-get update -q >>"$LOG" 2>&1 || die "apt-get update failed"
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q \
        --no-install-recommends "${missing[@]}" >>"$LOG" 2>&1 ||
        die "apt-get install failed for: ${missing[*]}"
    mapfile -t missing < <(missing_packages "${want[@]}")
    [ "${#missing[@]}" -eq 0 ] || die "still missing after install: ${missing[*]}"
    # nginx, prometheus and ceph packages may start system services; the tests run their own.
    # (docker-compose, prometheus and systemd's systemd-analyze check the deployment files:
    # tests/integration/test_deploy.py. docker.io and mmdebstrap build and run the image:
    # test_docker_sidecar.py starts the engine itself, tools/dockerd.sh.)
    as_root systemctl disable --now nginx >/dev/null 2>&1 || true
    as_root systemctl disable --now prometheus >/dev/null 2>&1 || true
}

# True when node_modules is there and newer than the lock file.
node_modules_current() {
    local stamp="$REPO/node_modules/.package-lock.json"
    [ -f "$stamp" ] || return 1
    [ -f "$REPO/package-lock.json" ] || return 0
    [ "$stamp" -nt "$REPO/package-lock.json" ] || return 1
    [ -x "$REPO/node_modules/.bin/s3rver" ] || return 1
    [ -d "$REPO/node_modules/@aws-sdk/client-s3" ] || return 1
    [ -d "$REPO/node_modules/kubernetes-models" ] || return 1
}

install_node_modules() {
    command -v npm >/dev/null 2>&1 || die "npm is missing"
    if node_modules_current; then
        say "npm packages: present"
        return
    fi
    cd "$REPO"
    if [ -f package-lock.json ]; then
        say "npm packages: npm ci"
        npm ci --no-audit --no-fund --loglevel=error >>"$LOG" 2>&1 || die "npm ci failed"
    else
        say "npm packages: npm install (no package-lock.json)"
        npm install --no-audit --no-fund --loglevel=error >>"$LOG" 2>&1 || die "npm install failed"
    fi
    [ -x node_modules/.bin/s3rver ] || die "node_modules/.bin/s3rver missing after npm"
}

install_debian_packages
install_node_modules
say "done"

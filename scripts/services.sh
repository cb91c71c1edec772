#!/usr/bin/env bash
# Install what the integration tests and benches of this workspace need
# (ARCHITECTURE.md, "Tests and their servers"):
#
#   scripts/services.sh install     install whatever is missing (idempotent)
#
# The tests and benches start their servers themselves, through the fixtures
# of leader-rig (leader_rig::fixtures): each on a free port of
# 127.0.0.1 in a temporary directory of its own, stopped when the test process
# ends. They find the programs below on PATH (and ~/.cargo/bin):
#   * redis-server (standalone, TLS-only and cluster nodes) and redis-cli,
#     which checks that a TLS server answers (Debian: redis-server, redis-tools);
#   * openssl, which makes the TLS server's CA and certificate;
#   * libfaketime, which runs the clock-skew tests' child processes with their
#     wall clock off;
#   * PostgreSQL's server binaries, initdb and postgres (Debian: postgresql),
#     found on PATH or in the newest /usr/lib/postgresql/*/bin;
#   * etcd and etcdctl (Debian: etcd-server, etcd-client), the members of the
#     single-member server and the three-member cluster of the etcd tests;
#   * protoc and the protobuf well-known types (Debian: protobuf-compiler,
#     libprotobuf-dev), which the build of the etcd client
#     crate (etcd-client) needs to compile etcd's protocol files;
#   * secantusd-rs, a MongoDB wire-compatible server (crate secantus-mdb,
#     built with cargo install; the build needs cmake);
#   * mdbook, which builds the user guide (guide/; built with cargo install).
set -euo pipefail

# Pinned MongoDB-compatible test server (crate and the binary it installs).
readonly SECANTUS_CRATE=secantus-mdb
readonly SECANTUS_VERSION=0.5.3-beta.196
readonly SECANTUS_BIN=secantusd-rs

# Pinned mdBook, which builds the user guide (scripts/test.sh). Only its `search` feature:
# the book is built, never served or watched, and leaving `serve` and `watch` out makes the
# build smaller (2 min 41 s on the 2-core machine while another build ran).
readonly MDBOOK_VERSION=0.5.4

# Debian packages the servers and the secantus build need.
# libfaketime lets the clock-skew tests run a node whose wall clock is off.
# etcd-server and etcd-client (etcdctl) are the etcd members of the etcd tests; protobuf-compiler
# (protoc) and libprotobuf-dev (the well-known .proto files it imports) are what the etcd
# client crate's build script compiles etcd's gRPC protocol with.
readonly APT_PACKAGES=(redis-server redis-tools cmake openssl libfaketime postgresql
    etcd-server etcd-client protobuf-compiler libprotobuf-dev)

# `cargo install` puts binaries here; make sure we find what it installed.
export PATH="${CARGO_HOME:-$HOME/.cargo}/bin:$PATH"

log() {
    printf '[services] %s\n' "$*" >&2
}

die() {
    log "error: $*"
    exit 1
}

usage() {
    cat >&2 <<'EOF'
usage: scripts/services.sh install
EOF
    exit 2
}

# Seconds since the epoch, with microseconds (for timing messages).
now() {
    printf '%s' "${EPOCHREALTIME:-$(date +%s.%N)}"
}

# Seconds elapsed since START (a value of `now`), one decimal.
elapsed_since() {
    awk -v s="$1" -v e="$(now)" 'BEGIN { printf "%.1f", e - s }'
}

# Run a command as root: directly when we are root, else through sudo.
as_root() {
    if [[ $(id -u) -eq 0 ]]; then
        "$@"
    elif command -v sudo >/dev/null 2>&1; then
        sudo "$@"
    else
        die "need root (or sudo) to run: $*"
    fi
}

# True when the Debian package $1 is installed.
deb_installed() {
    [[ $(dpkg-query -W -f='${Status}' "$1" 2>/dev/null || true) == "install ok installed" ]]
}

# Run an apt-get command, waiting for a dpkg/apt lock another process holds
# (e.g. an install started in the background) instead of failing on it.
apt_get() {
    local attempt
    for attempt in 1 2 3 4 5 6 7 8 9 10; do
        if as_root env DEBIAN_FRONTEND=noninteractive \
            apt-get -o DPkg::Lock::Timeout=300 -y -q "$@"; then
            return 0
        fi
        log "apt-get $1 failed (attempt $attempt/10; maybe a lock is held); retrying in 15 s"
        sleep 15
    done
    die "apt-get $* kept failing"
}

install_apt_packages() {
    local missing=() pkg
    for pkg in "${APT_PACKAGES[@]}"; do
        deb_installed "$pkg" || missing+=("$pkg")
    done
    if [[ ${#missing[@]} -eq 0 ]]; then
        log "Debian packages already installed: ${APT_PACKAGES[*]}"
        return 0
    fi
    log "installing Debian packages: ${missing[*]}"
    apt_get update
    apt_get install --no-install-recommends "${missing[@]}"
}

install_secantus() {
    if command -v "$SECANTUS_BIN" >/dev/null 2>&1; then
        log "$SECANTUS_BIN already installed: $(command -v "$SECANTUS_BIN")"
        return 0
    fi
    command -v cargo >/dev/null 2>&1 || die "cargo is not on PATH"
    log "building $SECANTUS_CRATE $SECANTUS_VERSION with cargo install (the first build takes about 8 minutes)"
    local started
    started=$(now)
    cargo install "$SECANTUS_CRATE" --version "$SECANTUS_VERSION" --locked --ignore-rust-version
    command -v "$SECANTUS_BIN" >/dev/null 2>&1 ||
        die "cargo install finished but $SECANTUS_BIN is not on PATH"
    log "$SECANTUS_BIN installed in $(elapsed_since "$started") s"
}

install_mdbook() {
    if command -v mdbook >/dev/null 2>&1 && [[ $(mdbook --version) == "mdbook v$MDBOOK_VERSION" ]]; then
        log "mdbook $MDBOOK_VERSION already installed: $(command -v mdbook)"
        return 0
    fi
    log "building mdbook $MDBOOK_VERSION with cargo install (about 3 minutes)"
    local started
    started=$(now)
    cargo install mdbook --version "$MDBOOK_VERSION" --locked --no-default-features --features search
    log "mdbook installed in $(elapsed_since "$started") s"
}

cmd_install() {
    # cmake is needed by the secantus build, so Debian packages come first.
    install_apt_packages
    install_secantus
    install_mdbook
}

main() {
    [[ $# -ge 1 ]] || usage
    local cmd=$1
    shift
    case $cmd in
    install)
        [[ $# -eq 0 ]] || usage
        cmd_install
        ;;
    *) usage ;;
    esac
}

main "$@"

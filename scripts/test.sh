#!/usr/bin/env bash
# The test command for this workspace (the README and CI run this).
#
#   scripts/test.sh [EXTRA CARGO TEST ARGS...]
#
# It installs what the tests need (scripts/services.sh install), starts the
# Redis and MongoDB-compatible test servers in a temporary directory, exports
# the LEADER_TEST_* variables they are found by (including
# LEADER_TEST_REQUIRE_SERVERS=1, so a missing server is a failure, never a
# skip), then runs, in order:
#   1. cargo fmt --all -- --check
#   2. cargo clippy --workspace --all-targets --all-features -- -D warnings
#   3. cargo doc --workspace --no-deps --all-features with RUSTDOCFLAGS=-D warnings
#   4. cargo test --workspace --all-features [EXTRA ARGS]   (doctests included)
# Every step runs even if an earlier one failed, so one run shows every
# problem; the script exits non-zero if any step failed. The servers are
# stopped on every exit: success, failure or Ctrl-C.
set -euo pipefail

repo_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
cd "$repo_root"

services=("bash" "$repo_root/scripts/services.sh")

# cargo install puts the MongoDB-compatible server here.
export PATH="${CARGO_HOME:-$HOME/.cargo}/bin:$PATH"

step() {
    printf '\n==> %s\n' "$*"
}

step "Installing test dependencies (scripts/services.sh install)"
"${services[@]}" install

svc_dir=$(mktemp -d "${TMPDIR:-/tmp}/leader-test-services.XXXXXX")

cleanup() {
    local status=$?
    # Ignore further Ctrl-C while the servers are being stopped.
    trap '' INT TERM
    step "Stopping test servers"
    "${services[@]}" stop "$svc_dir" || status=1
    exit "$status"
}
trap cleanup EXIT
# Turn signals into an ordinary exit, so the EXIT trap stops the servers.
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP

step "Starting test servers in $svc_dir"
"${services[@]}" start "$svc_dir"
# shellcheck source=/dev/null
source "$svc_dir/env"
grep '^export ' "$svc_dir/env" | sed 's/^export /    /'

failed=()

run_step() {
    step "$*"
    if "$@"; then
        printf '==> ok: %s\n' "$*"
    else
        printf '==> FAILED (exit %s): %s\n' "$?" "$*"
        failed+=("$*")
    fi
}

run_step cargo fmt --all -- --check
run_step cargo clippy --workspace --all-targets --all-features -- -D warnings
run_step env RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps --all-features
run_step cargo test --workspace --all-features "$@"

if ((${#failed[@]} > 0)); then
    printf '\n==> %d step(s) failed:\n' "${#failed[@]}"
    printf '    %s\n' "${failed[@]}"
    exit 1
fi
printf '\n==> all steps passed\n'

#!/usr/bin/env bash
# Install, start and stop the servers that the integration tests of this
# workspace talk to (DESIGN.md section 8).
#
#   scripts/services.sh install     install whatever is missing (idempotent)
#   scripts/services.sh start DIR   start every server, wait until each one
#                                   answers, and write DIR/env
#   scripts/services.sh stop DIR    stop exactly the processes `start DIR`
#                                   started (by recorded PID), then remove DIR
#
# What `start` runs, all bound to 127.0.0.1 on ports picked here:
#   * a standalone redis-server without persistence;
#   * a three-master Redis Cluster (no replicas);
#   * a redis-server that speaks only TLS, with a CA and server certificate
#     generated into DIR (the server certificate is valid for IP 127.0.0.1 and
#     DNS localhost);
#   * secantusd-rs, a MongoDB wire-compatible server (a one-node replica set
#     named `secantus`).
#
# DIR/env holds `export` lines for the tests (source it):
#   LEADER_TEST_REDIS_URL, LEADER_TEST_REDIS_CLUSTER_URLS (comma-separated),
#   LEADER_TEST_REDIS_TLS_URL, LEADER_TEST_REDIS_TLS_CA, LEADER_TEST_MONGODB_URI,
#   LEADER_TEST_REDIS_SERVER_BIN, LEADER_TEST_MONGODB_SERVER_BIN (so fault tests
#   can run private server instances), LEADER_TEST_FAKETIME_LIB (libfaketime, for
#   the clock-skew tests) and LEADER_TEST_REQUIRE_SERVERS=1.
#
# Layout of DIR:
#   .leader-test-services   marker: `stop` only deletes a DIR that has it
#   pids/NAME               "PID STARTTIME EXE" of each process started
#   logs/NAME.log           stdout/stderr of each server
#   redis/, cluster-N/, redis-tls/, mongodb/   working directories
#   ca.crt, ca.key, server.crt, server.key     TLS material
#   env                     the variables above
set -euo pipefail

# Pinned MongoDB-compatible test server (crate and the binary it installs).
readonly SECANTUS_CRATE=secantus-mdb
readonly SECANTUS_VERSION=0.5.3-beta.196
readonly SECANTUS_BIN=secantusd-rs

# Debian packages the servers and the secantus build need.
# libfaketime lets the clock-skew tests run a node whose wall clock is off.
readonly APT_PACKAGES=(redis-server redis-tools cmake openssl libfaketime postgresql)

# Name of the marker file that identifies a directory made by `start`.
readonly MARKER=.leader-test-services

# How long (seconds) each kind of server may take to become ready.
readonly REDIS_READY_TIMEOUT=30
readonly CLUSTER_READY_TIMEOUT=60
readonly MONGODB_READY_TIMEOUT=120
# How long `stop` waits after SIGTERM before it sends SIGKILL.
readonly STOP_GRACE_SECONDS=15

# When secantusd-rs was started (set by start_mongodb, for its timing message).
MONGODB_STARTED=

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
       scripts/services.sh start DIR
       scripts/services.sh stop DIR
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

# ---------------------------------------------------------------------------
# install
# ---------------------------------------------------------------------------

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

# The path of libfaketime's shared library (Debian puts it under the multiarch dir).
faketime_lib() {
    local lib
    lib=$(dpkg -L libfaketime 2>/dev/null | grep '/libfaketime\.so\.1$' | head -n 1)
    [[ -n $lib && -e $lib ]] || die "libfaketime is not installed (run: scripts/services.sh install)"
    printf '%s' "$lib"
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

cmd_install() {
    # cmake is needed by the secantus build, so Debian packages come first.
    install_apt_packages
    install_secantus
}

# ---------------------------------------------------------------------------
# process bookkeeping
# ---------------------------------------------------------------------------

# Read /proc/PID/stat of process $1 into the caller's variable `stat`; fails
# when there is no such process. (Not `stat=$(<file)`: when that redirection
# fails, bash exits the whole script under `set -e`, whatever `||` follows.)
proc_stat() {
    { read -r stat <"/proc/$1/stat"; } 2>/dev/null
}

# Print the start time (field 22 of /proc/PID/stat, in clock ticks since
# boot) of process $1; fails when there is no such process. Together with the
# PID it identifies a process even if the PID is later reused.
proc_starttime() {
    local stat rest
    proc_stat "$1" || return 1
    # The command name (field 2) may hold spaces and parentheses: drop
    # everything up to its closing parenthesis; field 3 is then index 0.
    rest=${stat##*) }
    local -a fields
    read -r -a fields <<<"$rest"
    printf '%s' "${fields[19]}"
}

# True when process $1 exists and is not a zombie.
proc_running() {
    local stat rest
    proc_stat "$1" || return 1
    rest=${stat##*) }
    [[ ${rest:0:1} != Z ]]
}

# Start a server in the background, in working directory WORKDIR, with its
# output in DIR/logs/NAME.log, and record it in DIR/pids/NAME.
#   spawn DIR NAME WORKDIR BINARY ARGS...
spawn() {
    local dir=$1 name=$2 workdir=$3 bin=$4
    shift 4
    local exe pid starttime
    exe=$(readlink -f "$(command -v "$bin")")
    # stdin from /dev/null and output to a file, so the server holds no
    # descriptor of the caller (a `$(...)` or a CI log pipe would wait for it).
    # The subshell execs the server, so $! is the server's own PID.
    (cd "$workdir" && exec "$bin" "$@") </dev/null >>"$dir/logs/$name.log" 2>&1 &
    pid=$!
    starttime=$(proc_starttime "$pid") || starttime=unknown
    printf '%s %s %s\n' "$pid" "$starttime" "$exe" >"$dir/pids/$name"
    # Until the subshell has exec'd, /proc/PID/exe is bash, and the checks
    # below would take the server for gone: wait for the exec (or an exit).
    local tries=0
    while proc_running "$pid" && [[ $(proc_exe "$pid") != "$exe" ]] && ((tries++ < 100)); do
        sleep 0.05
    done
    log "started $name (pid $pid)"
}

# Print the executable of process $1 (as /proc shows it, without the
# " (deleted)" the kernel appends when the file was replaced meanwhile).
proc_exe() {
    local exe
    exe=$(readlink "/proc/$1/exe" 2>/dev/null) || return 1
    printf '%s' "${exe% (deleted)}"
}

# True when the process recorded in pid file $1 is still the very process
# that was started (same PID, same start time, same executable) and running.
recorded_proc_alive() {
    local pid starttime exe
    read -r pid starttime exe <"$1" || return 1
    [[ $pid =~ ^[0-9]+$ ]] || return 1
    proc_running "$pid" || return 1
    [[ $starttime == unknown || $(proc_starttime "$pid") == "$starttime" ]] || return 1
    [[ $(proc_exe "$pid") == "$exe" ]]
}

# Stop every process recorded under $1/pids: SIGTERM, wait, then SIGKILL what
# is left. Fails if a process survives.
stop_recorded() {
    local dir=$1 f pid waited=0
    local -a alive=()
    [[ -d $dir/pids ]] || return 0
    for f in "$dir"/pids/*; do
        [[ -e $f ]] || continue
        if recorded_proc_alive "$f"; then
            read -r pid _ <"$f"
            log "stopping $(basename "$f") (pid $pid)"
            kill -TERM "$pid" 2>/dev/null || true
            alive+=("$f")
        fi
    done
    # Wait for them to exit, SIGKILL after the grace period.
    while [[ ${#alive[@]} -gt 0 ]]; do
        local -a still=()
        for f in "${alive[@]}"; do
            recorded_proc_alive "$f" && still+=("$f")
        done
        alive=("${still[@]+"${still[@]}"}")
        [[ ${#alive[@]} -gt 0 ]] || break
        if ((waited == STOP_GRACE_SECONDS * 10)); then
            for f in "${alive[@]}"; do
                read -r pid _ <"$f"
                log "$(basename "$f") (pid $pid) ignored SIGTERM; sending SIGKILL"
                kill -KILL "$pid" 2>/dev/null || true
            done
        elif ((waited > (STOP_GRACE_SECONDS + 10) * 10)); then
            die "processes still running: ${alive[*]}"
        fi
        sleep 0.1
        waited=$((waited + 1))
    done
}

# ---------------------------------------------------------------------------
# start helpers
# ---------------------------------------------------------------------------

# Print N distinct TCP ports that are free on 127.0.0.1, space-separated.
# They are taken below the kernel's ephemeral range, so outgoing connections
# do not grab them between this probe and the server's bind.
free_ports() {
    local n=$1
    if command -v python3 >/dev/null 2>&1; then
        python3 - "$n" <<'EOF'
import random, socket, sys

n = int(sys.argv[1])
try:
    with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
        eph_low = int(f.read().split()[0])
except OSError:
    eph_low = 32768
lo, hi = 10000, eph_low - 1
held, ports = [], []
for _ in range(10000):
    if len(ports) == n:
        break
    if hi - lo > 1000:
        port = random.randint(lo, hi)
        if port in ports:
            continue
    else:
        port = 0  # odd ephemeral range: let the kernel choose
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        s.bind(("127.0.0.1", port))
    except OSError:
        s.close()
        continue
    held.append(s)  # keep it bound so the next pick differs
    ports.append(s.getsockname()[1])
for s in held:
    s.close()
if len(ports) != n:
    sys.exit("could not find enough free ports")
print(" ".join(map(str, ports)))
EOF
    else
        # Fallback without python3: random ports that `ss` does not list.
        local used port ports=()
        used=" $(ss -Htan 2>/dev/null | awk '{ n = split($4, a, ":"); printf "%s ", a[n] }') "
        while ((${#ports[@]} < n)); do
            port=$((10000 + RANDOM % 22000))
            [[ $used == *" $port "* ]] && continue
            used+="$port "
            ports+=("$port")
        done
        printf '%s\n' "${ports[*]}"
    fi
}

# Poll until COMMAND succeeds, every 0.1 s, at most TIMEOUT seconds. Fails
# at once if the server process recorded as NAME in DIR exits meanwhile, so a
# server that dies at start-up does not cost the whole timeout.
#   wait_for TIMEOUT WHAT DIR NAME COMMAND...
wait_for() {
    local timeout=$1 what=$2 dir=$3 name=$4
    shift 4
    local deadline=$((SECONDS + timeout))
    # (die must not run inside the redirection below: its message, and the
    # EXIT trap that prints the logs, would go to /dev/null.)
    until "$@" >/dev/null 2>&1; do
        recorded_proc_alive "$dir/pids/$name" ||
            die "$name exited while starting; see $dir/logs/$name.log"
        ((SECONDS < deadline)) || die "$what was not ready after $timeout s"
        sleep 0.1
    done
}

# PING a Redis server: redis_ping PORT [redis-cli TLS options...]
redis_ping() {
    local port=$1
    shift
    [[ $(redis-cli "$@" -h 127.0.0.1 -p "$port" PING 2>/dev/null) == PONG ]]
}

# True when the cluster node on port $1 sees all three masters and all slots.
cluster_ok() {
    local info
    info=$(redis-cli -h 127.0.0.1 -p "$1" CLUSTER INFO 2>/dev/null | tr -d '\r') || return 1
    grep -qx 'cluster_state:ok' <<<"$info" &&
        grep -qx 'cluster_slots_assigned:16384' <<<"$info" &&
        grep -qx 'cluster_known_nodes:3' <<<"$info"
}

# Options every redis-server gets: loopback only, no persistence, foreground
# (spawn records the PID itself), working directory $1.
redis_common_args() {
    printf '%s\n' --bind 127.0.0.1 --protected-mode yes --daemonize no \
        --save '' --appendonly no --dir "$1" --loglevel notice
}

start_redis_standalone() {
    local dir=$1 port=$2 started
    started=$(now)
    mkdir -p "$dir/redis"
    local -a common
    mapfile -t common < <(redis_common_args "$dir/redis")
    spawn "$dir" redis "$dir/redis" redis-server "${common[@]}" --port "$port"
    wait_for "$REDIS_READY_TIMEOUT" "redis (port $port)" "$dir" redis redis_ping "$port"
    log "redis ready on 127.0.0.1:$port after $(elapsed_since "$started") s"
}

# start_redis_cluster DIR PORT1 PORT2 PORT3 BUS1 BUS2 BUS3
start_redis_cluster() {
    local dir=$1 started i
    local -a ports=("$2" "$3" "$4") bus=("$5" "$6" "$7") common
    started=$(now)
    for i in 0 1 2; do
        mkdir -p "$dir/cluster-$i"
        mapfile -t common < <(redis_common_args "$dir/cluster-$i")
        # The cluster bus port is given explicitly (the default, port+10000,
        # may be taken or beyond 65535).
        spawn "$dir" "redis-cluster-$i" "$dir/cluster-$i" redis-server "${common[@]}" \
            --port "${ports[i]}" --cluster-enabled yes \
            --cluster-config-file "$dir/cluster-$i/nodes.conf" \
            --cluster-port "${bus[i]}" --cluster-node-timeout 5000
    done
    for i in 0 1 2; do
        wait_for "$REDIS_READY_TIMEOUT" "redis cluster node (port ${ports[i]})" \
            "$dir" "redis-cluster-$i" redis_ping "${ports[i]}"
    done
    redis-cli --cluster create "127.0.0.1:${ports[0]}" "127.0.0.1:${ports[1]}" \
        "127.0.0.1:${ports[2]}" --cluster-replicas 0 --cluster-yes \
        >>"$dir/logs/redis-cluster-create.log" 2>&1 ||
        die "redis-cli --cluster create failed; see $dir/logs/redis-cluster-create.log"
    for i in 0 1 2; do
        wait_for "$CLUSTER_READY_TIMEOUT" "redis cluster state on port ${ports[i]}" \
            "$dir" "redis-cluster-$i" cluster_ok "${ports[i]}"
    done
    log "redis cluster ready on 127.0.0.1:${ports[0]},${ports[1]},${ports[2]} after $(elapsed_since "$started") s"
}

# Write a self-signed CA (DIR/ca.crt, ca.key) and a server certificate it
# signs (DIR/server.crt, server.key) for IP 127.0.0.1 and DNS localhost. The
# extensions are spelled out in a config of our own so that strict verifiers
# (rustls/webpki) accept the chain, whatever the system openssl.cnf says.
make_tls_material() {
    local dir=$1
    cat >"$dir/openssl.cnf" <<'EOF'
[req]
distinguished_name = dn
prompt = no

[dn]
CN = leader test CA

[ca_ext]
basicConstraints = critical, CA:TRUE
keyUsage = critical, keyCertSign, cRLSign
subjectKeyIdentifier = hash

[server_ext]
basicConstraints = critical, CA:FALSE
keyUsage = critical, digitalSignature, keyEncipherment
extendedKeyUsage = serverAuth
subjectAltName = IP:127.0.0.1, DNS:localhost
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid, issuer
EOF
    (
        umask 077
        openssl req -x509 -new -nodes -newkey rsa:2048 -sha256 -days 3650 \
            -config "$dir/openssl.cnf" -extensions ca_ext \
            -keyout "$dir/ca.key" -out "$dir/ca.crt"
        openssl req -new -nodes -newkey rsa:2048 -sha256 \
            -config "$dir/openssl.cnf" -subj "/CN=localhost" \
            -keyout "$dir/server.key" -out "$dir/server.csr"
        openssl x509 -req -sha256 -days 3650 -in "$dir/server.csr" \
            -CA "$dir/ca.crt" -CAkey "$dir/ca.key" \
            -set_serial "0x$(openssl rand -hex 8)" \
            -extfile "$dir/openssl.cnf" -extensions server_ext \
            -out "$dir/server.crt"
    ) >>"$dir/logs/openssl.log" 2>&1 || die "openssl failed; see $dir/logs/openssl.log"
    chmod 644 "$dir/ca.crt" "$dir/server.crt"
    openssl verify -CAfile "$dir/ca.crt" "$dir/server.crt" >/dev/null ||
        die "generated server certificate does not verify against the CA"
}

start_redis_tls() {
    local dir=$1 port=$2 started
    started=$(now)
    make_tls_material "$dir"
    mkdir -p "$dir/redis-tls"
    local -a common
    mapfile -t common < <(redis_common_args "$dir/redis-tls")
    spawn "$dir" redis-tls "$dir/redis-tls" redis-server "${common[@]}" \
        --port 0 --tls-port "$port" \
        --tls-cert-file "$dir/server.crt" --tls-key-file "$dir/server.key" \
        --tls-ca-cert-file "$dir/ca.crt" --tls-auth-clients no
    # A redis-server built without TLS (Debian's has it) rejects --tls-port
    # as a bad directive and exits at once; say so plainly.
    sleep 0.2
    if ! recorded_proc_alive "$dir/pids/redis-tls" &&
        grep -q "^>>> 'tls-" "$dir/logs/redis-tls.log" 2>/dev/null; then
        die "this redis-server was built without TLS support"
    fi
    wait_for "$REDIS_READY_TIMEOUT" "redis TLS (port $port)" \
        "$dir" redis-tls redis_ping "$port" --tls --cacert "$dir/ca.crt"
    log "redis TLS ready on 127.0.0.1:$port after $(elapsed_since "$started") s"
}

# True when something accepts TCP connections on 127.0.0.1:$1.
tcp_open() {
    (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

# Start secantusd-rs in the background; wait_mongodb waits for it. It is
# started first and awaited last, so the Redis servers come up meanwhile.
start_mongodb() {
    local dir=$1 port=$2
    command -v "$SECANTUS_BIN" >/dev/null 2>&1 ||
        die "$SECANTUS_BIN not found; run: scripts/services.sh install"
    mkdir -p "$dir/mongodb"
    # An explicit (empty) config file turns off the search for secantusd.toml
    # in the working and home directories, so a stray one changes nothing.
    : >"$dir/mongodb/secantusd.toml"
    MONGODB_STARTED=$(now)
    # A small cache and WAL file keep memory and disk use low (the default
    # WAL file alone is 128 MB, allocated in full).
    spawn "$dir" mongodb "$dir/mongodb" "$SECANTUS_BIN" \
        --config "$dir/mongodb/secantusd.toml" \
        --host 127.0.0.1 --port "$port" --storage-path "$dir/mongodb/data" \
        --cache-size 256M --log-file-max 16MB
}

wait_mongodb() {
    local dir=$1 port=$2
    # secantusd-rs opens its WiredTiger store before it listens, so an
    # accepted connection means it serves commands.
    wait_for "$MONGODB_READY_TIMEOUT" "$SECANTUS_BIN (port $port)" "$dir" mongodb tcp_open "$port"
    log "$SECANTUS_BIN ready on 127.0.0.1:$port ($(elapsed_since "$MONGODB_STARTED") s after it was started)"
}

# Print one `export NAME='VALUE'` line. Single quotes keep the line readable
# by dotenv-style parsers too; a ' inside VALUE is written as '\''.
env_line() {
    local q="'\\''"
    printf "export %s='%s'\n" "$1" "${2//\'/$q}"
}

# Make DIR absolute; an existing DIR must be empty (e.g. made by mktemp -d).
absolute_dir() {
    local dir=$1
    if [[ -e $dir ]]; then
        [[ -d $dir ]] || die "$dir exists and is not a directory"
    else
        mkdir -p "$dir"
    fi
    (cd "$dir" && pwd -P)
}

# On a failed start: show the end of each log, then stop what was started
# (the directory stays, for its logs, until `stop`).
on_start_failure() {
    local dir=$1 f
    log "start failed; last lines of the server logs:"
    for f in "$dir"/logs/*.log; do
        [[ -e $f ]] || continue
        printf '==> %s <==\n' "$f" >&2
        tail -n 20 "$f" >&2 || true
    done
    stop_recorded "$dir" || true
}

cmd_start() {
    local dir
    dir=$(absolute_dir "$1")
    if [[ -n $(ls -A "$dir") ]]; then
        die "$dir is not empty (already started? run: scripts/services.sh stop $dir)"
    fi
    command -v redis-server >/dev/null 2>&1 || die "redis-server not found; run: scripts/services.sh install"
    command -v redis-cli >/dev/null 2>&1 || die "redis-cli not found; run: scripts/services.sh install"
    command -v openssl >/dev/null 2>&1 || die "openssl not found; run: scripts/services.sh install"

    touch "$dir/$MARKER"
    mkdir -p "$dir/pids" "$dir/logs"
    # shellcheck disable=SC2064 # expand $dir now: it is local to this function
    trap "on_start_failure '$dir'" EXIT

    local started
    started=$(now)
    local -a p
    local faketime
    faketime=$(faketime_lib)
    # standalone, 3 cluster nodes + their bus ports, TLS, mongodb
    read -r -a p <<<"$(free_ports 9)"
    ((${#p[@]} == 9)) || die "could not pick free ports"

    # secantusd-rs is started first and awaited last (see start_mongodb).
    start_mongodb "$dir" "${p[8]}"
    start_redis_standalone "$dir" "${p[0]}"
    start_redis_cluster "$dir" "${p[1]}" "${p[2]}" "${p[3]}" "${p[4]}" "${p[5]}" "${p[6]}"
    start_redis_tls "$dir" "${p[7]}"
    wait_mongodb "$dir" "${p[8]}"

    {
        echo "# Written by scripts/services.sh start; source this file."
        env_line LEADER_TEST_REQUIRE_SERVERS 1
        env_line LEADER_TEST_REDIS_URL "redis://127.0.0.1:${p[0]}/"
        env_line LEADER_TEST_REDIS_CLUSTER_URLS \
            "redis://127.0.0.1:${p[1]}/,redis://127.0.0.1:${p[2]}/,redis://127.0.0.1:${p[3]}/"
        env_line LEADER_TEST_REDIS_TLS_URL "rediss://127.0.0.1:${p[7]}/"
        env_line LEADER_TEST_REDIS_TLS_CA "$dir/ca.crt"
        # secantusd-rs answers `hello` as the primary of a one-node replica set
        # `secantus` whose one host is the address it listens on, so drivers
        # connect with or without replicaSet=secantus; directConnection=true
        # keeps them on this one server without topology discovery.
        env_line LEADER_TEST_MONGODB_URI "mongodb://127.0.0.1:${p[8]}/?directConnection=true"
        env_line LEADER_TEST_REDIS_SERVER_BIN "$(command -v redis-server)"
        env_line LEADER_TEST_MONGODB_SERVER_BIN "$(command -v "$SECANTUS_BIN")"
        env_line LEADER_TEST_FAKETIME_LIB "$faketime"
    } >"$dir/env.tmp"
    mv "$dir/env.tmp" "$dir/env"

    trap - EXIT
    log "all servers ready after $(elapsed_since "$started") s; variables in $dir/env"
}

cmd_stop() {
    local dir=$1
    if [[ ! -e $dir ]]; then
        log "$dir does not exist; nothing to stop"
        return 0
    fi
    dir=$(cd "$dir" && pwd -P)
    if [[ ! -e $dir/$MARKER ]]; then
        # An empty directory is what `mktemp -d` left when start never ran.
        if rmdir "$dir" 2>/dev/null; then
            return 0
        fi
        die "$dir was not made by scripts/services.sh start (no $MARKER); leaving it alone"
    fi
    stop_recorded "$dir"
    rm -rf -- "$dir"
    log "stopped; removed $dir"
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
    start)
        [[ $# -eq 1 ]] || usage
        cmd_start "$1"
        ;;
    stop)
        [[ $# -eq 1 ]] || usage
        cmd_stop "$1"
        ;;
    *) usage ;;
    esac
}

main "$@"

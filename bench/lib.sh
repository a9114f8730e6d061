# shellcheck shell=bash
# Shared helpers of the benchmark scripts in bench/ (sourced, not run).
#
# Provides: tool installation (idempotent, Debian apt), the wirelab release
# build, a private lab of two network namespaces joined by a veth pair with
# addresses only inside them, RPS/GRO setup, bounded process helpers and a
# cleanup trap that removes everything the script created.
#
# Traffic goes only to 198.18.0.2 (the receiving namespace) from 198.18.0.1.

set -euo pipefail

BENCH_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO_DIR="$(cd "$BENCH_DIR/.." && pwd)"

# Unique names per run: namespaces wlb<pid>t / wlb<pid>r, veth wlbt<pid> / wlbr<pid>
# (interface names are limited to 15 characters).
LAB_ID="${LAB_ID:-$$}"
NS_TX="wlb${LAB_ID}t"
NS_RX="wlb${LAB_ID}r"
IF_TX="wlbt${LAB_ID}"
IF_RX="wlbr${LAB_ID}"
IP_TX=198.18.0.1
IP_RX=198.18.0.2
TX_CPU="${TX_CPU:-0}"
RX_CPU="${RX_CPU:-1}"

WIRELAB="$REPO_DIR/target/release/wirelab"
BENCH_PIDS=()
WORK=""

log() { printf '[%(%H:%M:%S)T] %s\n' -1 "$*" >&2; }
die() { log "error: $*"; exit 1; }

need_root() {
    [ "$(id -u)" = 0 ] || die "the benchmarks need root (network namespaces, RPS, tcpdump); run with sudo"
}

# install_tools CMD:PACKAGE ... — installs only the packages whose command is missing.
install_tools() {
    local missing=() pair cmd pkg
    for pair in "$@"; do
        cmd="${pair%%:*}"; pkg="${pair#*:}"
        command -v "$cmd" >/dev/null 2>&1 || missing+=("$pkg")
    done
    if [ "${#missing[@]}" -gt 0 ]; then
        log "installing: ${missing[*]}"
        export DEBIAN_FRONTEND=noninteractive
        apt-get update -qq >/dev/null
        apt-get install -y -qq "${missing[@]}" >/dev/null
    fi
    for pair in "$@"; do
        cmd="${pair%%:*}"
        command -v "$cmd" >/dev/null 2>&1 || die "$cmd still missing after installing ${pair#*:}"
    done
}

build_wirelab() {
    if [ "${SKIP_BUILD:-0}" = 1 ] && [ -x "$WIRELAB" ]; then
        log "using existing $WIRELAB (SKIP_BUILD=1)"
        return
    fi
    command -v cargo >/dev/null 2>&1 || die "cargo not found: install Rust (rustup) first"
    log "building wirelab (release)"
    (cd "$REPO_DIR" && cargo build --release -q -p wirelab) || die "cargo build --release failed"
    [ -x "$WIRELAB" ] || die "$WIRELAB not built"
}

# A private copy of the binary, so a rebuild of target/ during the run
# (other builds on the same tree) cannot change what is measured.
freeze_wirelab() {
    cp "$WIRELAB" "$WORK/wirelab"
    WIRELAB_BUILT="$(date -u -r "$WIRELAB" '+%Y-%m-%d %H:%M:%S UTC'), tree $(git -C "$REPO_DIR" describe --always --dirty 2>/dev/null || echo '?')"
    WIRELAB="$WORK/wirelab"
    # The `wirelab-base` variant: another build (WIRELAB_BASE=path), for a
    # before/after comparison in one run.
    if [ -n "${WIRELAB_BASE:-}" ]; then
        [ -x "$WIRELAB_BASE" ] || die "WIRELAB_BASE=$WIRELAB_BASE is not an executable"
        cp "$WIRELAB_BASE" "$WORK/wirelab-base"
        WIRELAB_BASE="$WORK/wirelab-base"
    fi
}

# The binary a wirelab variant runs: WIRELAB_BASE for `wirelab-base`.
wirelab_bin() {
    if [ "$1" = wirelab-base ]; then
        [ -n "${WIRELAB_BASE:-}" ] || die "the wirelab-base variant needs WIRELAB_BASE=path/to/wirelab"
        echo "$WIRELAB_BASE"
    else
        echo "$WIRELAB"
    fi
}

nsrx() { ip netns exec "$NS_RX" "$@"; }
nstx() { ip netns exec "$NS_TX" "$@"; }

lab_up() {
    log "lab: $NS_TX($IF_TX $IP_TX) <-veth-> $NS_RX($IF_RX $IP_RX)"
    ip netns add "$NS_TX"
    ip netns add "$NS_RX"
    ip link add "$IF_TX" netns "$NS_TX" type veth peer name "$IF_RX" netns "$NS_RX"
    nstx ip addr add "$IP_TX/30" dev "$IF_TX"
    nsrx ip addr add "$IP_RX/30" dev "$IF_RX"
    nstx ip link set lo up
    nsrx ip link set lo up
    nstx ip link set "$IF_TX" up
    nsrx ip link set "$IF_RX" up
    # GRO off on both ends (rx_packets then counts each frame sent, none merged)
    # and no offload surprises.
    nstx ethtool -K "$IF_TX" gro off >/dev/null 2>&1 || true
    nsrx ethtool -K "$IF_RX" gro off >/dev/null 2>&1 || true
    # Receive processing of the receiving namespace on the other CPU (RPS).
    local mask
    mask=$(printf '%x' $((1 << RX_CPU)))
    nsrx sh -c "echo $mask > /sys/class/net/$IF_RX/queues/rx-0/rps_cpus"
    # Replies (iperf3/D-ITG control, ICMP) go back to the sender: steer them to the sender CPU.
    nstx sh -c "echo $(printf '%x' $((1 << TX_CPU))) > /sys/class/net/$IF_TX/queues/rx-0/rps_cpus"
    # Generous socket buffers (the tools ask for them); these sysctls are
    # global, so the old values are restored on exit.
    SAVED_SYSCTLS="$(sysctl -e net.core.rmem_max net.core.wmem_max net.core.netdev_max_backlog 2>/dev/null | tr -d ' ' | tr '\n' ' ')"
    sysctl -qw net.core.rmem_max=67108864 net.core.wmem_max=67108864 \
        net.core.netdev_max_backlog=10000 >/dev/null 2>&1 || true
    # Make sure the path works before measuring anything.
    nstx ping -c 1 -W 2 "$IP_RX" >/dev/null || die "lab: ping $IP_RX failed"
    LAB_GRO="$(nsrx ethtool -k "$IF_RX" 2>/dev/null | awk '/generic-receive-offload/{print $2}')"
    LAB_RPS="$(nsrx cat /sys/class/net/$IF_RX/queues/rx-0/rps_cpus)"
}

# bg NS NAME CMD... — starts CMD in namespace NS in the background and keeps
# its pid in $BG_PID. `ip netns exec` and `taskset` exec, so the pid is the
# tool's own and a signal reaches it (a shell function here would put a
# subshell in between and the signal would miss the tool).
bg() {
    local ns="$1" name="$2"; shift 2
    ip netns exec "$ns" "$@" >"$WORK/$name.out" 2>"$WORK/$name.err" &
    BG_PID=$!
    BENCH_PIDS+=("$BG_PID")
}

# stop_pid PID [SIGNAL] — signals one process we started and waits for it (bounded).
stop_pid() {
    local pid="$1" sig="${2:-TERM}" i
    kill -s "$sig" "$pid" 2>/dev/null || true
    for i in $(seq 1 50); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
    kill -0 "$pid" 2>/dev/null && kill -s KILL "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
}

# wait_port NS PROTO PORT — waits (≤ 5 s) until something listens on PORT in NS.
wait_port() {
    local ns="$1" proto="$2" port="$3" i
    for i in $(seq 1 50); do
        if ip netns exec "$ns" ss -Hln"${proto:0:1}" "sport = :$port" 2>/dev/null | grep -q .; then
            return 0
        fi
        sleep 0.1
    done
    log "warning: nothing listening on $proto/$port in $ns after 5 s"
}

cleanup() {
    local rc=$? pid
    set +e
    for pid in "${BENCH_PIDS[@]:-}"; do
        [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null && kill -s KILL "$pid" 2>/dev/null
    done
    # Anything still running inside our namespaces (children of ip netns exec).
    for ns in "$NS_TX" "$NS_RX"; do
        for pid in $(ip netns pids "$ns" 2>/dev/null); do kill -s KILL "$pid" 2>/dev/null; done
    done
    local kv
    for kv in ${SAVED_SYSCTLS:-}; do sysctl -qw "$kv" >/dev/null 2>&1; done
    ip netns del "$NS_TX" 2>/dev/null
    ip netns del "$NS_RX" 2>/dev/null
    if [ -n "$WORK" ] && [ "${KEEP_WORK:-0}" != 1 ]; then rm -rf "$WORK"; fi
    [ -n "$WORK" ] && [ "${KEEP_WORK:-0}" = 1 ] && log "raw files kept in $WORK"
    exit "$rc"
}

lab_init() {
    need_root
    WORK="$(mktemp -d /tmp/wirelab-bench.XXXXXX)"
    trap cleanup EXIT
    trap 'exit 130' INT TERM
}

machine_info() {
    echo "machine: $(nproc) CPUs ($(awk -F: '/model name/{print $2; exit}' /proc/cpuinfo | sed 's/^ *//')), kernel $(uname -r)"
    echo "load before: $(cut -d' ' -f1-3 /proc/loadavg); sender CPU $TX_CPU, receiver CPU $RX_CPU; GRO on $IF_RX: ${LAB_GRO:-?}; rps_cpus on $IF_RX: ${LAB_RPS:-?}"
    echo "wirelab binary: built ${WIRELAB_BUILT:-?} (copied at start)"
    echo "tools: $("$WIRELAB" --version 2>&1 | head -1); $(sockperf --version 2>&1 | head -1); $(iperf3 --version 2>&1 | head -1 | cut -d' ' -f1-2); D-ITG $(dpkg-query -W -f='${Version}' d-itg 2>/dev/null); $(tcpdump --version 2>&1 | head -1)"
}

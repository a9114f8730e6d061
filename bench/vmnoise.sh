#!/usr/bin/env bash
# The timing floor of this machine: a thread that never sleeps, pinned to
# each CPU in turn, records every moment it lost the CPU for longer than a
# threshold (bench/vmnoise.c). On a VM this shows the host's preemption of
# the vCPU (invisible to tracing inside the guest) and the guest's own tick;
# every pacing tool on that CPU inherits these stalls, so they bound the p99 /
# p99.9 that bench/pacing.sh and bench/replay.sh can show for any tool.
#
# Usage: bench/vmnoise.sh [--seconds S] [--threshold-ns N]
#   --seconds S       run length per CPU (default 3)
#   --threshold-ns N  smallest gap counted as a stall (default 5000)
# Prints one JSON line per CPU. Needs gcc (installed from Debian if missing).

set -euo pipefail
SECS=3
THR=5000
while [ $# -gt 0 ]; do
    case "$1" in
        --seconds) SECS="$2"; shift 2 ;;
        --threshold-ns) THR="$2"; shift 2 ;;
        -h|--help) sed -n '2,13p' "$0"; exit 0 ;;
        *) echo "unknown argument $1 (see --help)" >&2; exit 2 ;;
    esac
done
if ! command -v gcc >/dev/null; then
    [ "$(id -u)" = 0 ] || { echo "gcc is missing: apt-get install gcc" >&2; exit 1; }
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq gcc >/dev/null
fi
WORK="$(mktemp -d /tmp/wirelab-vmnoise.XXXXXX)"
trap 'rm -rf "$WORK"' EXIT
gcc -O2 -o "$WORK/vmnoise" "$(dirname "${BASH_SOURCE[0]}")/vmnoise.c"
echo "machine: $(nproc) CPUs, kernel $(uname -r), load $(cut -d' ' -f1-3 /proc/loadavg)"
for cpu in $(seq 0 $(($(nproc) - 1))); do
    printf 'cpu %s: ' "$cpu"
    taskset -c "$cpu" "$WORK/vmnoise" "$SECS" "$THR"
done

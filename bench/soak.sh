#!/usr/bin/env bash
# Soak: wirelab send -> recv with a wirelab capture on the receiving interface,
# for a long time at a steady rate, and tcpdump capturing the same interface
# beside it (the peer a user would otherwise leave running). Each minute the
# resident memory (VmRSS) of every process is sampled; at the end the
# script judges what a long run must keep:
#   - memory flat: each wirelab process grows by at most GROWTH_KB (1 MiB)
#     from the first minute's sample to the last (the first minute holds the
#     one-time allocations: rings, queues, histograms);
#   - no loss: the receiver's lost = 0 against the sender's count, and the
#     capture's drops (ring and interface) = 0;
#   - readable files: every pcapng file the capture rotated through, and
#     tcpdump's, read whole by capinfos (Wireshark's reader) with a packet
#     count, and the capture's files hold what the interface received.
# Both captures rotate (wirelab --rotate-size/--rotate-files, tcpdump -C/-W),
# as a capture left running for hours would; the record files of send and
# recv are kept whole (--record), since their writers are what a leak would
# be in. Prints one line per minute, then a table per process.
#
# Usage: sudo bench/soak.sh [--minutes N] [--rate PPS] [--size BYTES] [--no-peer]
#   defaults: 30 minutes, 100000 pps, 64-byte payload, tcpdump beside.
#   env: SKIP_BUILD=1, KEEP_WORK=1, TX_CPU/RX_CPU, GROWTH_KB (default 1024).
set -euo pipefail
. "$(dirname "$0")/lib.sh"

MINUTES=30
RATE=100000
SIZE=64
PEER=1
GROWTH_KB="${GROWTH_KB:-1024}"
while [ $# -gt 0 ]; do
    case "$1" in
        --minutes) MINUTES="$2"; shift 2 ;;
        --rate) RATE="$2"; shift 2 ;;
        --size) SIZE="$2"; shift 2 ;;
        --no-peer) PEER=0; shift ;;
        -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        *) die "unknown option $1 (see --help)" ;;
    esac
done
[[ "$MINUTES" =~ ^[1-9][0-9]*$ ]] || die "--minutes takes a whole number of minutes ≥ 1"
[[ "$RATE" =~ ^[1-9][0-9]*$ ]] || die "--rate takes packets per second"

lab_init
install_tools tcpdump:tcpdump capinfos:tshark ethtool:ethtool ping:iputils-ping
build_wirelab
freeze_wirelab
lab_up

PORT=5757
SECS=$((MINUTES * 60))
PACKETS=$((RATE * SECS))
# What the run writes: two record files (64 bytes a probe) and the two
# captures' rotating rings (at most ROT_FILES files of ROT_MB each).
ROT_MB=256
ROT_FILES=4
need_mb=$(((PACKETS * 128) / 1000000 + 2 * ROT_MB * (ROT_FILES + 1)))
free_mb=$(df -Pm "$WORK" | awk 'NR == 2 { print $4 }')
[ "$free_mb" -gt "$need_mb" ] || die "the run needs about $need_mb MB in $WORK, $free_mb MB free: use fewer --minutes or a lower --rate"

log "soak: $MINUTES min at $RATE pps, $SIZE-byte payload ($PACKETS probes), peer capture: $([ $PEER = 1 ] && echo tcpdump || echo none)"
echo "machine: $(nproc) CPUs, kernel $(uname -r); load before: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "wirelab: built ${WIRELAB_BUILT:-?}; $(tcpdump --version 2>&1 | head -1)"

rx_if_packets() { nsrx cat "/sys/class/net/$IF_RX/statistics/rx_packets"; }
if_before=$(rx_if_packets)

mkdir -p "$WORK/wl" "$WORK/td"
bg "$NS_RX" capture taskset -c "$RX_CPU" "$WIRELAB" capture -i "$IF_RX" -Q in -s 128 \
    -w "$WORK/wl/cap.pcapng" --rotate-size "${ROT_MB}MiB" --rotate-files "$ROT_FILES" --json -q
CAP_PID=$BG_PID
TD_PID=""
if [ "$PEER" = 1 ]; then
    # -C is in millions of bytes; -Q in: the same frames as wirelab's; -Z
    # root: with -C tcpdump would otherwise write its files as its own
    # user, which cannot enter the private work directory.
    bg "$NS_RX" tcpdump taskset -c "$RX_CPU" tcpdump -i "$IF_RX" -Q in -s 128 -n -Z root \
        --time-stamp-precision=nano -w "$WORK/td/cap.pcap" -C "$ROT_MB" -W "$ROT_FILES" "udp port $PORT"
    TD_PID=$BG_PID
fi
bg "$NS_RX" recv taskset -c "$RX_CPU" "$WIRELAB" recv --bind "$IP_RX" -p "$PORT" \
    --record "$WORK/rx.wlr" --json -q
RECV_PID=$BG_PID
wait_port "$NS_RX" udp "$PORT"
sleep 1
bg "$NS_TX" send taskset -c "$TX_CPU" "$WIRELAB" send "$IP_RX" -p "$PORT" -r "$RATE" \
    -d "${SECS}s" -s "$SIZE" --record "$WORK/tx.wlr" --json -q
SEND_PID=$BG_PID

rss_kb() { awk '/^VmRSS:/ { print $2 }' "/proc/$1/status" 2>/dev/null || echo 0; }
NAMES=(send recv capture)
PIDS=("$SEND_PID" "$RECV_PID" "$CAP_PID")
if [ -n "$TD_PID" ]; then NAMES+=(tcpdump); PIDS+=("$TD_PID"); fi
declare -A FIRST LAST MAX
printf '%-6s' minute >&2
printf ' %12s' "${NAMES[@]/%/ RSS kB}" >&2
echo >&2
for m in $(seq 1 "$MINUTES"); do
    # Sampled just before the minute ends, while the sender still runs.
    end=$((SECONDS + 60))
    while [ $SECONDS -lt $((end - 1)) ] && kill -0 "$SEND_PID" 2>/dev/null; do sleep 1; done
    printf '%-6s' "$m" >&2
    for i in "${!NAMES[@]}"; do
        n=${NAMES[$i]}
        v=$(rss_kb "${PIDS[$i]}")
        [ "$m" = 1 ] && FIRST[$n]=$v
        LAST[$n]=$v
        [ "${MAX[$n]:-0}" -ge "$v" ] || MAX[$n]=$v
        printf ' %12s' "$v" >&2
    done
    echo >&2
    kill -0 "$SEND_PID" 2>/dev/null || break
    sleep 1
done
# The sender ends by its duration (bounded: a minute past it).
for _ in $(seq 1 60); do kill -0 "$SEND_PID" 2>/dev/null || break; sleep 1; done
wait "$SEND_PID" || die "wirelab send failed: $(cat "$WORK/send.err")"
# The receiver ends on the sender's end marker; the captures are stopped
# after the last frame had time to leave the rings.
for _ in $(seq 1 20); do kill -0 "$RECV_PID" 2>/dev/null || break; sleep 0.5; done
stop_pid "$RECV_PID" INT
sleep 2
stop_pid "$CAP_PID" INT
[ -n "$TD_PID" ] && stop_pid "$TD_PID" INT
if_delta=$(($(rx_if_packets) - if_before))

json() { python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2], {}, {"d": d}))' "$@"; }
sent=$(json "$WORK/send.out" 'd["totals"]["sent"]')
received=$(json "$WORK/recv.out" 'd["totals"]["received"]')
lost=$(json "$WORK/recv.out" 'd["totals"]["lost"]')
cap_frames=$(json "$WORK/capture.out" 'd["packets"]')
cap_drops=$(json "$WORK/capture.out" 'sum(d["loss"].values())')
td_line=""
if [ -n "$TD_PID" ]; then td_line=$(grep -E 'packets (captured|dropped by kernel)' "$WORK/tcpdump.err" | paste -sd, - || true); fi

# Every file left in each capture's ring read whole by Wireshark's reader.
files_ok=1
count_files() {
    local total=0 f c
    for f in "$@"; do
        if ! c=$(capinfos -M -c -T -r "$f" 2>&1 | awk -F'\t' 'NF >= 2 { print $2 }'); then
            files_ok=0; log "capinfos cannot read $f"; continue
        fi
        [[ "$c" =~ ^[0-9]+$ ]] || { files_ok=0; log "capinfos: no count for $f: $c"; continue; }
        total=$((total + c))
    done
    echo "$total"
}
wl_files=("$WORK"/wl/*)
wl_in_files=$(count_files "${wl_files[@]}")
td_in_files="-"
if [ -n "$TD_PID" ]; then td_files=("$WORK"/td/*); td_in_files=$(count_files "${td_files[@]}"); fi

echo
echo "## soak: $MINUTES min, $RATE pps, $SIZE-byte payload"
echo "frames at $IF_RX: $if_delta; sent $sent; received $received; lost $lost"
echo "wirelab capture: $cap_frames frames, $cap_drops drops; ${#wl_files[@]} files kept, $wl_in_files frames in them (capinfos)"
[ -n "$TD_PID" ] && echo "tcpdump: $td_line; $td_in_files frames in its kept files (capinfos)"
echo
echo "| process | RSS after 1 min (kB) | RSS at the end (kB) | growth (kB) | max (kB) |"
echo "|---|---|---|---|---|"
verdict=0
for n in "${NAMES[@]}"; do
    g=$((LAST[$n] - FIRST[$n]))
    echo "| $n | ${FIRST[$n]} | ${LAST[$n]} | $g | ${MAX[$n]} |"
    if [ "$n" != tcpdump ] && [ "$g" -gt "$GROWTH_KB" ]; then
        log "FAIL: $n grew by $g kB (more than $GROWTH_KB kB) after the first minute"; verdict=1
    fi
done
[ "$lost" = 0 ] || { log "FAIL: the receiver lost $lost probes"; verdict=1; }
[ "$received" = "$sent" ] || { log "FAIL: sent $sent, received $received"; verdict=1; }
[ "$cap_drops" = 0 ] || { log "FAIL: the capture dropped $cap_drops frames"; verdict=1; }
[ "$files_ok" = 1 ] || { log "FAIL: a capture file is not readable"; verdict=1; }
[ "$verdict" = 0 ] && log "soak passed: memory flat, no loss, every file readable"
exit "$verdict"

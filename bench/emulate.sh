#!/usr/bin/env bash
# wirelab emulate against the kernel's own bridge (the ceiling) and tbf (for
# rate), side by side in one run: the judge of the emulator's accuracy.
# Namespaces A –veth– E –veth– B, the device under test in E:
#   bridge   a kernel bridge over E's two veths (no delay: the ceiling)
#   wirelab  wirelab emulate --a EA --b EB --both STAGES
#   wirelab-rt  the same with --rt-priority (SCHED_FIFO, locked memory)
#   tbf      the kernel bridge with tbf on E's B-side egress (rate only)
#
# Judge: tcpdump with ns stamps on E's A-side interface (`-Q in`, what enters)
# and at B's interface (`-Q in`, what E sent; wirelab sends past the qdisc,
# where E's own taps do not see it), matched by content with
# `wirelab emulate verify`; interface counters for loss and rates. Traffic
# goes to MAC addresses nobody owns: B (and A) count the frames at their
# interface and drop them, so nothing answers and nothing else crosses E
# (IPv6 off, static neighbours).
#
# Measurements:
#   delay    never early and accuracy at `delay 1ms`, 10 kpps (error p50/p99/max)
#   tableb1  Table B.1 workloads of the NIST Net trace-emulation thesis
#            (8 kpps, 86-byte frames): bridge, delay 0, delay 121us,
#            staircases of 10 packets per 121/122 µs up then down, a
#            1 µs-per-packet ramp up then down; avg/σ/min/max of the error
#            beside the thesis's figures
#   maxpps   max lossless rate of 64-byte frames one way with `delay 1ms`
#            (stepped `wirelab replay --pps`, loss from A tx vs B rx counters),
#            then both directions at once; ratio to the bridge
#   rate     delivered rate at 1/10/100 Mbit/s (150 % offered, 1500-byte
#            frames), wirelab `rate` vs tbf, from B's rx_bytes
#
#   gbit     the same with 1518-byte frames, one way: Gbit/s of L2 bytes
#   flows    two flows (ports 5001, 5002; 1 kpps of 1000-byte payloads each)
#            into `rate 4mbit` with a pipe per flow (each should get 4 Mbit/s)
#            and with `sched drr weights 1,3` (1 : 3 of 4 Mbit/s): Mbit/s per
#            port from B's tcpdump stamps over 2 s while both send. Printed,
#            not judged (crates/wirelab-link/src/tests_flows.rs checks the
#            shares on a virtual clock; the e2e test checks the counts).
# Usage: sudo bench/emulate.sh [--quick] [--only "delay tableb1 maxpps gbit rate flows"] [--rt PRIO] [--keep]
#   --quick   shorter runs and fewer steps (about 1 minute instead of 3)
#   --rt PRIO delay and Table B.1 also with `wirelab-rt`: wirelab emulate
#             --rt-priority PRIO (default 50; 0 leaves it out)
# Environment: SKIP_BUILD=1, CARGO_TARGET_DIR (where the release build is),
#   EMU_ARGS (more wirelab emulate flags, e.g. "--rt-priority 50").

source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
WIRELAB="${CARGO_TARGET_DIR:-$REPO_DIR/target}/release/wirelab"

QUICK=0
ONLY="delay tableb1 maxpps gbit rate flows"
RT=50
while [ $# -gt 0 ]; do
    case "$1" in
        --quick) QUICK=1; shift ;;
        --only) ONLY="$2"; shift 2 ;;
        --rt) RT="$2"; shift 2 ;;
        --keep) KEEP_WORK=1; shift ;;
        -h|--help) sed -n '2,44p' "$0"; exit 0 ;;
        *) die "unknown argument $1 (see --help)" ;;
    esac
done

if [ "$QUICK" = 1 ]; then
    DELAY_N=5000; B1_N=2000; STEP_S=1; RATE_S=3
    PPS_STEPS="100000 200000 300000"
    GBIT_STEPS="40000 80000 120000"
else
    DELAY_N=20000; B1_N=8000; STEP_S=2; RATE_S=6
    PPS_STEPS="50000 100000 150000 200000 250000 300000 350000 400000 500000 600000"
    GBIT_STEPS="50000 100000 150000 200000 250000 300000 350000 400000"
fi

ID="${LAB_ID}"
NS_A="wle${ID}a"; NS_E="wle${ID}e"; NS_B="wle${ID}b"
IF_A="wleA${ID}"; IF_EA="wleEA${ID}"; IF_EB="wleEB${ID}"; IF_B="wleB${ID}"
# lib.sh's names, for its helpers.
NS_TX="$NS_A"; NS_RX="$NS_B"
IP_A=198.18.9.1; IP_B=198.18.9.2
# Destinations nobody owns: A→B frames to MAC_TO_B, B→A frames to MAC_TO_A.
IP_TO_B=198.18.9.3; MAC_TO_B=02:00:00:00:00:b3
IP_TO_A=198.18.9.4; MAC_TO_A=02:00:00:00:00:a4
MAC_SRC_A=02:00:00:00:00:a1; MAC_SRC_B=02:00:00:00:00:b1
EMU_PID=""

nsa() { ip netns exec "$NS_A" "$@"; }
nse() { ip netns exec "$NS_E" "$@"; }
nsb() { ip netns exec "$NS_B" "$@"; }

cleanup() {
    local rc=$? pid ns
    set +e
    for pid in "${BENCH_PIDS[@]:-}"; do
        [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null && kill -s KILL "$pid" 2>/dev/null
    done
    for ns in "$NS_A" "$NS_E" "$NS_B"; do
        for pid in $(ip netns pids "$ns" 2>/dev/null); do kill -s KILL "$pid" 2>/dev/null; done
        ip netns del "$ns" 2>/dev/null
    done
    if [ -n "$WORK" ] && [ "${KEEP_WORK:-0}" != 1 ]; then rm -rf "$WORK"; fi
    [ -n "$WORK" ] && [ "${KEEP_WORK:-0}" = 1 ] && log "raw files kept in $WORK"
    exit "$rc"
}

lab3_up() {
    log "lab: $NS_A($IF_A) <-veth-> ($IF_EA)$NS_E($IF_EB) <-veth-> ($IF_B)$NS_B"
    local ns
    for ns in "$NS_A" "$NS_E" "$NS_B"; do
        ip netns add "$ns"
        ip netns exec "$ns" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 \
            net.ipv6.conf.default.disable_ipv6=1
        ip -n "$ns" link set lo up
    done
    ip link add "$IF_A" netns "$NS_A" type veth peer name "$IF_EA" netns "$NS_E"
    ip link add "$IF_EB" netns "$NS_E" type veth peer name "$IF_B" netns "$NS_B"
    nsa ip addr add "$IP_A/24" dev "$IF_A"
    nsb ip addr add "$IP_B/24" dev "$IF_B"
    nsa ip neigh replace "$IP_TO_B" lladdr "$MAC_TO_B" dev "$IF_A" nud permanent
    nsb ip neigh replace "$IP_TO_A" lladdr "$MAC_TO_A" dev "$IF_B" nud permanent
    local dev
    for dev in "$NS_A:$IF_A" "$NS_E:$IF_EA" "$NS_E:$IF_EB" "$NS_B:$IF_B"; do
        # No IGMP reports of the interfaces' own into the measured traffic.
        ip -n "${dev%%:*}" link set "${dev#*:}" multicast off up
        ip netns exec "${dev%%:*}" ethtool -K "${dev#*:}" gro off >/dev/null 2>&1 || true
    done
}

bridge_on() {
    nse ip link add br0 type bridge stp_state 0 forward_delay 0 mcast_snooping 0
    nse ip link set br0 multicast off
    nse ip link set "$IF_EA" master br0
    nse ip link set "$IF_EB" master br0
    nse ip link set br0 up
}

bridge_off() { nse ip link del br0 2>/dev/null || true; }

tbf_on() { # RATE (tc syntax)
    nse tc qdisc replace dev "$IF_EB" root tbf rate "$1" burst 16kb latency 100ms
}

tbf_off() { nse tc qdisc del dev "$IF_EB" root 2>/dev/null || true; }

# emu_start STAGES_A2B [STAGES_B2A] — wirelab emulate in E (JSON report in $WORK/emu.out).
emu_start() {
    bg "$NS_E" emu "$WIRELAB" emulate --a "$IF_EA" --b "$IF_EB" \
        --a2b "$1" --b2a "${2-$1}" --json ${EMU_ARGS:-} ${EMU_EXTRA:-}
    EMU_PID=$BG_PID
    sleep 0.5
    kill -0 "$EMU_PID" 2>/dev/null || die "wirelab emulate did not start: $(cat "$WORK/emu.err")"
}

emu_stop() {
    [ -n "$EMU_PID" ] && stop_pid "$EMU_PID" INT
    EMU_PID=""
}

# mode_on MODE [STAGES_A2B [STAGES_B2A]] / mode_off MODE — the device under test in E.
mode_on() {
    case "$1" in
        bridge) bridge_on ;;
        wirelab) EMU_EXTRA=""; emu_start "${@:2}" ;;
        wirelab-rt) EMU_EXTRA="--rt-priority $RT"; emu_start "${@:2}" ;;
    esac
}
mode_off() {
    case "$1" in
        bridge) bridge_off ;;
        wirelab|wirelab-rt) emu_stop ;;
    esac
}

# judge_start — tcpdump on E's A side (in) and at B (in), ns stamps; waits
# until both write.
judge_start() {
    rm -f "$WORK/in.pcap" "$WORK/out.pcap"
    bg "$NS_E" td-in tcpdump -i "$IF_EA" -Q in -nn -s 128 -B 65536 \
        --time-stamp-precision=nano -w "$WORK/in.pcap"
    TD_IN=$BG_PID
    bg "$NS_B" td-out tcpdump -i "$IF_B" -Q in -nn -s 128 -B 65536 \
        --time-stamp-precision=nano -w "$WORK/out.pcap"
    TD_OUT=$BG_PID
    local i
    for i in $(seq 1 100); do
        [ -e "$WORK/in.pcap" ] && [ -e "$WORK/out.pcap" ] && return 0
        sleep 0.05
    done
    die "tcpdump did not start: $(cat "$WORK/td-in.err" "$WORK/td-out.err")"
}

# judge_stop — after the TPACKET_V3 block retire (up to 1 s).
judge_stop() {
    sleep 1.5
    stop_pid "$TD_IN" TERM
    stop_pid "$TD_OUT" TERM
    JUDGE_DROPS=$(cat "$WORK/td-in.err" "$WORK/td-out.err" |
        awk '/dropped by kernel/ {s += $1} END {print s + 0}')
}

# probes N RATE PAYLOAD — wirelab send from A towards B's unowned MAC.
probes() {
    nsa "$WIRELAB" send "$IP_TO_B" --rate "$2" -n "$1" --size "$3" \
        >"$WORK/send.out" 2>"$WORK/send.err" || die "wirelab send failed: $(cat "$WORK/send.err")"
}

# verify NAME ARGS... — wirelab emulate verify of the last captures.
verify() {
    local name="$1"; shift
    "$WIRELAB" emulate verify "$WORK/in.pcap" "$WORK/out.pcap" --json "$@" \
        >"$WORK/$name.verify.json" 2>"$WORK/$name.verify.err" ||
        die "verify $name failed: $(cat "$WORK/$name.verify.err")"
    cp "$WORK/in.pcap" "$WORK/$name.in.pcap"
    cp "$WORK/out.pcap" "$WORK/$name.out.pcap"
}

vj() { jq -r "$2" "$WORK/$1.verify.json"; }

# ns µs with 2 decimals; "-" for null.
us() { awk -v v="$1" 'BEGIN { if (v == "null" || v == "") print "-"; else printf "%.2f", v / 1000 }'; }

RESULTS=()
row() { RESULTS+=("$*"); }

# The devices of the delay measurements.
devices() {
    if [ "$RT" != 0 ]; then echo bridge wirelab wirelab-rt; else echo bridge wirelab; fi
}

run_delay() {
    log "delay accuracy: delay 1ms, 10 kpps, $DELAY_N probes; $(devices)"
    local mode cfg
    for mode in $(devices); do
        judge_start
        mode_on "$mode" "delay 1ms" ""
        probes "$DELAY_N" 10kpps 64
        judge_stop
        mode_off "$mode"
        if [ "$mode" = bridge ]; then cfg=(); else cfg=(--delay 1ms); fi
        verify "delay-$mode" "${cfg[@]}"
        local n="delay-$mode"
        row "delay|$mode|$(vj "$n" .in_frames)|$(vj "$n" .matched)|$(vj "$n" .lost)|$(vj "$n" .extra)|$(vj "$n" .early)|$(us "$(vj "$n" .error.p50_ns)")|$(us "$(vj "$n" .error.p99_ns)")|$(us "$(vj "$n" .error.max_ns)")|$JUDGE_DROPS"
    done
}

# The thesis's delay patterns as delays-format traces (µs per line), up then down.
make_traces() {
    local half=$((B1_N / 2))
    awk -v h="$half" 'BEGIN { for (i = 0; i < 2 * h; i++) { k = (i < h) ? i : 2 * h - 1 - i; print int(k / 10) * 121 } }' >"$WORK/stair121.delays"
    awk -v h="$half" 'BEGIN { for (i = 0; i < 2 * h; i++) { k = (i < h) ? i : 2 * h - 1 - i; print int(k / 10) * 122 } }' >"$WORK/stair122.delays"
    awk -v h="$half" 'BEGIN { for (i = 0; i < 2 * h; i++) { k = (i < h) ? i : 2 * h - 1 - i; print k } }' >"$WORK/ramp1.delays"
}

run_tableb1() {
    log "Table B.1 workloads: 8 kpps, 86-byte frames, $B1_N probes each; $(devices)"
    make_traces
    local w mode stages seed_fig
    for w in off delay0 delay121 stair121 stair122 ramp1; do
        case "$w" in
            off) stages=""; seed_fig="2.22|2.05|0|540" ;;
            delay0) stages="delay 0us"; seed_fig="2.20|2.87|0|589" ;;
            delay121) stages="delay 121us"; seed_fig="-60.65|36.19|-121|488" ;;
            stair121) stages="trace $WORK/stair121.delays at-end hold"; seed_fig="58.32|62.47|-96|305" ;;
            stair122) stages="trace $WORK/stair122.delays at-end hold"; seed_fig="59.49|57.87|-95|635" ;;
            ramp1) stages="trace $WORK/ramp1.delays at-end hold"; seed_fig="67.84|60.66|-85|647" ;;
        esac
        for mode in $(devices); do
            # The bridge is the "NIST Net off" row; wirelab runs the others.
            if [ "$w" = off ] && [ "$mode" != bridge ]; then continue; fi
            if [ "$w" != off ] && [ "$mode" = bridge ]; then continue; fi
            judge_start
            mode_on "$mode" "$stages" ""
            # 86-byte frames: 14 + 20 + 8 + 44.
            probes "$B1_N" 8kpps 44
            judge_stop
            mode_off "$mode"
            local n="b1-$w-$mode" t
            if [ -n "$stages" ]; then verify "$n" --stages "$stages"; else verify "$n"; fi
            t=$(vj "$n" '.table_b1 | "\(.avg_us)|\(.sigma_us)|\(.min_us)|\(.max_us)"')
            row "b1|$w|$mode|$(vj "$n" .in_frames)|$(vj "$n" .matched)|$(vj "$n" .lost)|$(vj "$n" .extra)|$(vj "$n" .early)|$t|$seed_fig|$JUDGE_DROPS"
        done
    done
}

# A pcap of 1000 64-byte frames (ethertype 0x88b5, a sequence number at byte
# 14) from SRC to DST, for wirelab replay to loop over.
make_frames() { # FILE DST SRC [FRAME_BYTES (64)]
    python3 - "$1" "$2" "$3" "${4:-64}" <<'EOF'
import struct, sys
path, dst, src = sys.argv[1], bytes.fromhex(sys.argv[2].replace(':', '')), bytes.fromhex(sys.argv[3].replace(':', ''))
size = int(sys.argv[4]) - 4  # without the FCS
with open(path, 'wb') as f:
    f.write(struct.pack('<IHHiIII', 0xa1b23c4d, 2, 4, 0, 0, 65535, 1))
    for i in range(1000):
        frame = dst + src + b'\x88\xb5' + struct.pack('>I', i) + bytes(size - 18)
        f.write(struct.pack('<IIII', 1, i * 1000, len(frame), len(frame)))
        f.write(frame)
EOF
}

cnt() { ip netns exec "$1" cat "/sys/class/net/$2/statistics/$3"; }

# blast DIRS RATE — RATE × STEP_S 64-byte frames at RATE pps in each
# direction of DIRS ("a2b" or "a2b b2a"); sets SENT/LOST (summed) and
# ACHIEVED (pps, a2b).
blast() {
    local dirs="$1" rate="$2" n=$(($2 * STEP_S)) d
    local a_tx0 b_rx0 b_tx0 a_rx0 pids=()
    a_tx0=$(cnt "$NS_A" "$IF_A" tx_packets); b_rx0=$(cnt "$NS_B" "$IF_B" rx_packets)
    b_tx0=$(cnt "$NS_B" "$IF_B" tx_packets); a_rx0=$(cnt "$NS_A" "$IF_A" rx_packets)
    for d in $dirs; do
        if [ "$d" = a2b ]; then
            ip netns exec "$NS_A" "$WIRELAB" replay -i "$IF_A" --pps "$rate" --loop 0 --limit "$n" \
                --json "$WORK/a2b.pcap" >"$WORK/blast-$d.out" 2>"$WORK/blast-$d.err" &
        else
            ip netns exec "$NS_B" "$WIRELAB" replay -i "$IF_B" --pps "$rate" --loop 0 --limit "$n" \
                --json "$WORK/b2a.pcap" >"$WORK/blast-$d.out" 2>"$WORK/blast-$d.err" &
        fi
        pids+=($!); BENCH_PIDS+=($!)
    done
    for d in "${pids[@]}"; do wait "$d" || true; done
    sleep 0.3 # the last frames' delay
    local a_tx b_rx b_tx a_rx
    a_tx=$(( $(cnt "$NS_A" "$IF_A" tx_packets) - a_tx0 )); b_rx=$(( $(cnt "$NS_B" "$IF_B" rx_packets) - b_rx0 ))
    b_tx=$(( $(cnt "$NS_B" "$IF_B" tx_packets) - b_tx0 )); a_rx=$(( $(cnt "$NS_A" "$IF_A" rx_packets) - a_rx0 ))
    SENT=$((a_tx + b_tx)); LOST=$((a_tx - b_rx + b_tx - a_rx))
    # What the generator reached, first to last departure (it sends a
    # count; when it cannot keep the rate it takes longer).
    ACHIEVED=$(jq -r '.fidelity.pps | floor' "$WORK/blast-a2b.out" 2>/dev/null || echo 0)
}

# sweep MODE DIRS — steps PPS_STEPS until two in a row lose; MAXOK = the
# highest lossless achieved rate (per direction).
sweep() {
    local mode="$1" dirs="$2" rate bad=0
    MAXOK=0
    mode_on "$mode" "delay 1ms"
    for rate in $PPS_STEPS; do
        blast "$dirs" "$rate"
        log "  $mode [$dirs] $rate pps asked: $ACHIEVED pps sent per direction, $LOST of $SENT lost"
        row "pps|$mode|${dirs// /+}|$rate|$ACHIEVED|$SENT|$LOST"
        if [ "$LOST" = 0 ]; then
            bad=0
            [ "$ACHIEVED" -gt "$MAXOK" ] && MAXOK=$ACHIEVED
        else
            bad=$((bad + 1))
            [ "$bad" -ge 2 ] && break
        fi
    done
    mode_off "$mode"
    if [ "$mode" = wirelab ]; then
        EMU_REPORT="$(jq -c '{a2b: {ring_drops: .a2b.ring_drops, send_failures: .a2b.send_failures, early: .a2b.early}, b2a: {ring_drops: .b2a.ring_drops, early: .b2a.early}}' "$WORK/emu.out" 2>/dev/null || echo '?')"
        row "emu|${dirs// /+}|$EMU_REPORT"
    fi
}

run_maxpps() {
    log "max lossless rate, 64-byte frames, delay 1ms; steps: $PPS_STEPS pps, $STEP_S s each"
    make_frames "$WORK/a2b.pcap" "$MAC_TO_B" "$MAC_SRC_A"
    make_frames "$WORK/b2a.pcap" "$MAC_TO_A" "$MAC_SRC_B"
    local dirs mode
    for dirs in "a2b" "a2b b2a"; do
        for mode in bridge wirelab; do
            sweep "$mode" "$dirs"
            row "maxok|$mode|${dirs// /+}|$MAXOK"
        done
    done
}

# The 1500-byte variant of maxpps: one way, delay 1ms, Gbit/s of L2 bytes.
run_gbit() {
    log "max lossless rate, 1518-byte frames (1500-byte payload), delay 1ms; steps: $GBIT_STEPS pps, $STEP_S s each"
    make_frames "$WORK/a2b.pcap" "$MAC_TO_B" "$MAC_SRC_A" 1518
    local mode saved="$PPS_STEPS"
    PPS_STEPS="$GBIT_STEPS"
    for mode in bridge wirelab; do
        sweep "$mode" "a2b"
        row "gbit|$mode|$MAXOK"
    done
    PPS_STEPS="$saved"
}

# run_flows — per-flow pipes and DRR weights, measured (see the header).
run_flows() {
    log "flows: two 8 Mbit/s flows into 4 Mbit/s, per-flow pipes and drr weights 1,3"
    local stages
    for stages in "rate 4mbit queue droptail packets=400 per-flow dport" \
        "rate 4mbit sched drr weights 1,3 limit 800"; do
        emu_start "$stages" ""
        rm -f "$WORK/flows.pcap"
        bg "$NS_B" td-flows tcpdump -i "$IF_B" -Q in -nn -s 64 -B 65536 \
            --time-stamp-precision=nano -w "$WORK/flows.pcap" udp
        local td=$BG_PID
        sleep 0.5
        nsa "$WIRELAB" send "$IP_TO_B" --port 5001 --rate 1kpps --size 1000 -d 3.5s \
            >/dev/null 2>"$WORK/send1.err" &
        local s1=$!
        sleep 0.3
        nsa "$WIRELAB" send "$IP_TO_B" --port 5002 --rate 1kpps --size 1000 -d 3s \
            >/dev/null 2>"$WORK/send2.err" || die "wirelab send failed: $(cat "$WORK/send2.err")"
        wait "$s1" || die "wirelab send failed: $(cat "$WORK/send1.err")"
        sleep 1.5
        emu_stop
        stop_pid "$td" TERM
        # Mbit/s per destination port over 2 s from 0.5 s after port 5002's
        # first frame (ns pcap, Ethernet + IPv4 + UDP).
        python3 - "$WORK/flows.pcap" "$stages" <<'EOF'
import struct, sys
b = open(sys.argv[1], "rb").read()
frames, off = [], 24
while off + 16 <= len(b):
    s, ns, cl, ln = struct.unpack_from("<IIII", b, off)
    f = b[off + 16:off + 16 + cl]
    if len(f) >= 38:
        frames.append((s * 10**9 + ns, struct.unpack_from(">H", f, 36)[0], ln))
    off += 16 + cl
start = min(t for t, p, _ in frames if p == 5002) + 500_000_000
bits = {p: sum(l * 8 for t, q, l in frames if q == p and start <= t < start + 2 * 10**9) / 2e6
        for p in (5001, 5002)}
ratio = bits[5002] / bits[5001] if bits[5001] else float("nan")
print("%-52s port 5001 %.3f Mbit/s, port 5002 %.3f Mbit/s, 5002:5001 %.3f"
      % (sys.argv[2], bits[5001], bits[5002], ratio))
EOF
    done
}

run_rate() {
    log "rate accuracy: 1, 10, 100 Mbit/s, 150 % offered with 1500-byte frames, $RATE_S s each"
    local mbit mode pps n
    for mbit in 1 10 100; do
        pps=$((mbit * 1000000 * 3 / 2 / 12000))
        n=$((pps * RATE_S))
        for mode in tbf wirelab; do
            if [ "$mode" = tbf ]; then bridge_on; tbf_on "${mbit}mbit"; else emu_start "rate ${mbit}mbit" ""; fi
            # 1500-byte frames: 14 + 20 + 8 + 1458.
            nsa "$WIRELAB" send "$IP_TO_B" --rate "$pps" -n "$n" --size 1458 \
                >"$WORK/send.out" 2>"$WORK/send.err" &
            local spid=$!
            BENCH_PIDS+=("$spid")
            # The middle of the run, after the shaper's queue formed: one
            # process in B polls the counter every ms (a process per reading
            # would add its own start-up to the window) and takes the rate
            # between its first and last change, so whole frames are counted.
            nsb python3 - "/sys/class/net/$IF_B/statistics/rx_bytes" 1.5 $((RATE_S - 2)) \
                >"$WORK/rate-$mbit-$mode.txt" <<'EOF'
import sys, time
path, start, length = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
f = open(path)
def read():
    f.seek(0)
    return int(f.read())
time.sleep(start)
end = time.monotonic() + length
prev, first, last = read(), None, None
while time.monotonic() < end:
    v = read()
    if v != prev:
        t = time.monotonic_ns()
        if first is None:
            first = (t, v)
        last = (t, v)
        prev = v
    time.sleep(0.001)
if first is None or last[0] == first[0]:
    print("nan")
else:
    print("%.4f" % ((last[1] - first[1]) * 8 / ((last[0] - first[0]) / 1e9) / 1e6))
EOF
            wait "$spid" || true
            if [ "$mode" = tbf ]; then tbf_off; bridge_off; else emu_stop; fi
            row "rate|$mbit|$mode|$(cat "$WORK/rate-$mbit-$mode.txt")"
        done
    done
}

print_tables() {
    echo
    echo "## Link emulation (wirelab emulate) — $(date -u '+%Y-%m-%d %H:%M UTC')"
    echo "$(machine_info3)"
    echo
    local r
    if printf '%s\n' "${RESULTS[@]}" | grep -q '^delay|'; then
        echo "Delay accuracy, delay 1ms at 10 kpps ($DELAY_N probes; error = applied − configured, µs; the bridge's configured delay is 0):"
        echo
        echo "| device | in | matched | lost | extra | early | error p50 | p99 | max | judge drops |"
        echo "|---|---|---|---|---|---|---|---|---|---|"
        printf '%s\n' "${RESULTS[@]}" | awk -F'|' '$1 == "delay" { printf "| %s |", $2; for (i = 3; i <= NF; i++) printf " %s |", $i; print "" }'
        echo
    fi
    if printf '%s\n' "${RESULTS[@]}" | grep -q '^b1|'; then
        echo "Table B.1 workloads of the NIST Net trace-emulation thesis (8 kpps, 86-byte frames, $B1_N probes; error µs avg / σ / min / max; negative = early):"
        echo
        echo "| workload | device | in | matched | lost | extra | early | avg / σ / min / max | NIST Net (seed) |"
        echo "|---|---|---|---|---|---|---|---|---|"
        printf '%s\n' "${RESULTS[@]}" | awk -F'|' '$1 == "b1" {
            name = $2; if (name == "off") name = "off (no emulator)"
            printf "| %s | %s | %s | %s | %s | %s | %s | %.2f / %.2f / %.2f / %.2f | %s / %s / %s / %s |\n", name, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16 }'
        echo
    fi
    if printf '%s\n' "${RESULTS[@]}" | grep -q '^maxok|'; then
        echo "Max lossless rate, 64-byte frames, wirelab with delay 1ms (pps per direction, achieved; steps $PPS_STEPS, $STEP_S s each):"
        echo
        echo "| directions | bridge | wirelab | wirelab / bridge |"
        echo "|---|---|---|---|"
        local dirs b w
        for dirs in a2b a2b+b2a; do
            b=$(printf '%s\n' "${RESULTS[@]}" | awk -F'|' -v d="$dirs" '$1 == "maxok" && $2 == "bridge" && $3 == d { print $4 }')
            w=$(printf '%s\n' "${RESULTS[@]}" | awk -F'|' -v d="$dirs" '$1 == "maxok" && $2 == "wirelab" && $3 == d { print $4 }')
            [ -n "$b" ] && echo "| $dirs | $b | $w | $(awk -v b="$b" -v w="$w" 'BEGIN { if (b > 0) printf "%.2f", w / b; else print "-" }') |"
        done
        echo
        echo "Steps (device, directions, asked pps, achieved pps, sent, lost):"
        printf '%s\n' "${RESULTS[@]}" | awk -F'|' '$1 == "pps" { printf "  %s %s %s: %s sent/s, %s lost of %s\n", $2, $3, $4, $5, $7, $6 }'
        printf '%s\n' "${RESULTS[@]}" | awk -F'|' '$1 == "emu" { printf "  wirelab counters (%s): %s\n", $2, $3 }'
        echo
    fi
    if printf '%s\n' "${RESULTS[@]}" | grep -q '^gbit|'; then
        echo "Max lossless rate, 1518-byte frames one way, wirelab with delay 1ms (L2 Gbit/s without FCS and preamble; steps $GBIT_STEPS pps):"
        echo
        echo "| bridge | wirelab | wirelab / bridge |"
        echo "|---|---|---|"
        local gb gw
        gb=$(printf '%s\n' "${RESULTS[@]}" | awk -F'|' '$1 == "gbit" && $2 == "bridge" { print $3 }')
        gw=$(printf '%s\n' "${RESULTS[@]}" | awk -F'|' '$1 == "gbit" && $2 == "wirelab" { print $3 }')
        awk -v b="$gb" -v w="$gw" 'BEGIN { printf "| %.2f Gbit/s (%d pps) | %.2f Gbit/s (%d pps) | %s |\n", b * 1514 * 8 / 1e9, b, w * 1514 * 8 / 1e9, w, (b > 0 ? sprintf("%.2f", w / b) : "-") }'
        echo
    fi
    if printf '%s\n' "${RESULTS[@]}" | grep -q '^rate|'; then
        echo "Rate accuracy (delivered Mbit/s of L2 bytes at B, 150 % offered):"
        echo
        echo "| rate | tbf | wirelab | wirelab error | wirelab / tbf |"
        echo "|---|---|---|---|---|"
        local m t w
        for m in 1 10 100; do
            t=$(printf '%s\n' "${RESULTS[@]}" | awk -F'|' -v m="$m" '$1 == "rate" && $2 == m && $3 == "tbf" { print $4 }')
            w=$(printf '%s\n' "${RESULTS[@]}" | awk -F'|' -v m="$m" '$1 == "rate" && $2 == m && $3 == "wirelab" { print $4 }')
            [ -n "$t" ] && echo "| $m Mbit/s | $t | $w | $(awk -v w="$w" -v m="$m" 'BEGIN { printf "%+.2f %%", (w / m - 1) * 100 }') | $(awk -v t="$t" -v w="$w" 'BEGIN { printf "%.4f", w / t }') |"
        done
        echo
    fi
}

machine_info3() {
    echo "machine: $(nproc) CPUs ($(awk -F: '/model name/{print $2; exit}' /proc/cpuinfo | sed 's/^ *//')), kernel $(uname -r); load before: $LOAD_BEFORE"
    echo "wirelab binary: built ${WIRELAB_BUILT:-?}; $(tcpdump --version 2>&1 | head -1)"
}

lab_init
trap cleanup EXIT
install_tools tcpdump:tcpdump jq:jq ethtool:ethtool python3:python3 tc:iproute2 ip:iproute2
build_wirelab
freeze_wirelab
LOAD_BEFORE="$(cut -d' ' -f1-3 /proc/loadavg)"
lab3_up
T_START=$(date +%s)
for part in $ONLY; do
    case "$part" in
        delay) run_delay ;;
        tableb1) run_tableb1 ;;
        maxpps) run_maxpps ;;
        gbit) run_gbit ;;
        rate) run_rate ;;
        flows) run_flows ;;
        *) die "unknown part $part (delay tableb1 maxpps gbit rate flows)" ;;
    esac
done
print_tables
log "done in $(( $(date +%s) - T_START )) s"

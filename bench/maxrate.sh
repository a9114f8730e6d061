#!/usr/bin/env bash
# Maximum packet rate of one flow, 64-byte UDP payload: wirelab send/recv
# against iperf3, D-ITG, sockperf (and trafgen, a raw AF_PACKET ring, as a
# reference), side by side and interleaved in one run.
#
# Counted three ways in the receiving namespace: the interface
# (/sys/class/net/IF/statistics/rx_packets; on veth with GRO off this is the
# sender's transmit count), UDP InDatagrams / RcvbufErrors (/proc/net/snmp:
# queued to a socket / dropped at a full socket buffer), and the receiving
# application's own count (wirelab recv JSON `received`, iperf3's server
# report, ITGDec of D-ITG's receiver log; sockperf's server reports none).
# Receive processing is steered to the other CPU with RPS, GRO is off, the
# sender is pinned to CPU 0 and the receiver to CPU 1.
#
# Then a loss sweep: paced rates (default 100/150/200/250 kpps) for wirelab,
# iperf3 and D-ITG (with -poll), to see where each receiver starts losing.
# trafgen changes net.core socket memory sysctls while it runs and restores
# them on exit (this netsniff-ng version has no --no-sock-mem).
#
# Usage: sudo bench/maxrate.sh [--reps N] [--seconds S] [--tools "..."]
#                              [--sweep "100000 150000 ..."|none] [--keep]
#   --reps N      repetitions per tool at full blast (default 3)
#   --seconds S   length of each run (default 4)
#   --tools LIST  subset of: wirelab wirelab+record iperf3 ditg sockperf, or trafgen
#                 (not default: its TX ring flush fails with EAGAIN on veth here)
#   --sweep LIST  paced rates in pps for the loss sweep, or "none"
#   --sweep-tools LIST  tools of the sweep (default "wirelab iperf3 ditg";
#                 also wirelab+record); --reps 0 runs the sweep only
# Environment: SKIP_BUILD=1, RESULTS_OUT=FILE (per-run JSON lines), TX_CPU/RX_CPU.
# Default run: about 4 minutes on a 2-core VM.

source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

REPS=3
SECS=4
TOOLS="wirelab wirelab+record iperf3 ditg sockperf"
SWEEP="100000 150000 200000 250000"
SWEEP_TOOLS="wirelab iperf3 ditg"
PAYLOAD=64
while [ $# -gt 0 ]; do
    case "$1" in
        --reps) REPS="$2"; shift 2 ;;
        --seconds) SECS="$2"; shift 2 ;;
        --tools) TOOLS="$2"; shift 2 ;;
        --sweep) SWEEP="$2"; shift 2 ;;
        --sweep-tools) SWEEP_TOOLS="$2"; shift 2 ;;
        --keep) KEEP_WORK=1; shift ;;
        -h|--help) sed -n '2,32p' "$0"; exit 0 ;;
        *) die "unknown argument $1 (see --help)" ;;
    esac
done
[ "$SWEEP" = none ] && SWEEP=""

lab_init
install_tools sockperf:sockperf ITGSend:d-itg ITGRecv:d-itg ITGDec:d-itg iperf3:iperf3 \
    trafgen:netsniff-ng ethtool:ethtool ping:iputils-ping taskset:util-linux python3:python3 \
    ss:iproute2 ip:iproute2
build_wirelab
freeze_wirelab
lab_up
RESULTS="$WORK/maxrate.jsonl"
SWEEP_RESULTS="$WORK/sweep.jsonl"
: >"$RESULTS"
: >"$SWEEP_RESULTS"
machine_info

# snmp_udp FIELD — a field of the Udp: line of /proc/net/snmp in the receiving namespace.
snmp_udp() {
    nsrx awk -v f="$1" '/^Udp:/{ if (!h) { for (i = 1; i <= NF; i++) idx[$i] = i; h = 1 } else { print $idx[f]; exit } }' /proc/net/snmp
}
counters() {
    echo "$(nsrx cat /sys/class/net/$IF_RX/statistics/rx_packets) $(snmp_udp InDatagrams) $(snmp_udp RcvbufErrors) $(nstx cat /sys/class/net/$IF_TX/statistics/tx_packets)"
}

# json_get FILE EXPR — evaluates a Python expression on the JSON document j.
json_get() {
    python3 -c 'import json,sys
try:
    j = json.load(open(sys.argv[1]))
    v = eval(sys.argv[2])
    print(v if v is not None else "")
except Exception:
    print("")' "$1" "$2"
}

PORT=30000
# run_one TOOL RATE(0 = as fast as possible) REP OUTFILE
run_one() {
    local tool="$1" rate="$2" rep="$3" out="$4"
    PORT=$((PORT + 1))
    local port=$PORT tag="$tool-$rate-$rep" rx_pid="" sender_rc=0 sent="" app=""
    local bound=$((SECS * 4 + 15))
    local b a
    case "$tool" in
        wirelab|wirelab+record)
            local rrec=() srec=()
            if [ "$tool" = wirelab+record ]; then
                rrec=(--record "$WORK/rx-$tag.wlr"); srec=(--record "$WORK/tx-$tag.wlr")
            fi
            bg "$NS_RX" "recv-$tag" taskset -c "$RX_CPU" "$WIRELAB" recv -4 --port "$port" --json \
                --quiet --timeout "${bound}s" "${rrec[@]}"
            rx_pid=$BG_PID
            wait_port "$NS_RX" udp "$port"
            local pace=(--interval 0)
            [ "$rate" != 0 ] && pace=(--rate "$rate")
            b=$(counters)
            nstx timeout "$bound" taskset -c "$TX_CPU" "$WIRELAB" send "$IP_RX" --port "$port" \
                "${pace[@]}" --size "$PAYLOAD" --duration "${SECS}s" --json --quiet "${srec[@]}" \
                >"$WORK/send-$tag.out" 2>"$WORK/send-$tag.err" || sender_rc=$?
            # The receiver ends by itself after the end-of-flow markers (+ linger).
            for _ in $(seq 1 100); do kill -0 "$rx_pid" 2>/dev/null || break; sleep 0.1; done
            stop_pid "$rx_pid" TERM
            a=$(counters)
            sent=$(json_get "$WORK/send-$tag.out" 'sum(f["engine"]["sent"] for f in j["flows"])')
            app=$(json_get "$WORK/recv-$tag.out" 'sum(f["received"] for f in j["flows"])')
            rm -f "$WORK/rx-$tag.wlr" "$WORK/tx-$tag.wlr"
            ;;
        iperf3)
            bg "$NS_RX" "recv-$tag" iperf3 -s -1 -p "$port" -J -A "$RX_CPU"
            rx_pid=$BG_PID
            wait_port "$NS_RX" tcp "$port"
            local bw=0
            [ "$rate" != 0 ] && bw=$((rate * PAYLOAD * 8))
            b=$(counters)
            nstx timeout "$bound" iperf3 -c "$IP_RX" -p "$port" -u -b "$bw" -l "$PAYLOAD" \
                -t "$SECS" -J -A "$TX_CPU" >"$WORK/send-$tag.out" 2>"$WORK/send-$tag.err" || sender_rc=$?
            for _ in $(seq 1 50); do kill -0 "$rx_pid" 2>/dev/null || break; sleep 0.1; done
            stop_pid "$rx_pid" TERM
            a=$(counters)
            sent=$(json_get "$WORK/send-$tag.out" 'j["end"]["sum"]["packets"]')
            app=$(json_get "$WORK/recv-$tag.out" 'j["end"]["sum"]["packets"] - j["end"]["sum"]["lost_packets"]')
            ;;
        ditg)
            bg "$NS_RX" "recv-$tag" taskset -c "$RX_CPU" ITGRecv
            rx_pid=$BG_PID
            wait_port "$NS_RX" tcp 9000
            # Full blast: an unreachable rate; paced: -poll, without it D-ITG falls far behind.
            local r=1000000 poll=()
            [ "$rate" != 0 ] && r=$rate && poll=(-poll)
            b=$(counters)
            nstx timeout "$bound" taskset -c "$TX_CPU" ITGSend -a "$IP_RX" -rp "$port" -T UDP \
                -C "$r" "${poll[@]}" -c "$PAYLOAD" -t "$((SECS * 1000))" -l "$WORK/ditg-tx-$tag.log" \
                -x "$WORK/ditg-rx-$tag.log" >"$WORK/send-$tag.out" 2>"$WORK/send-$tag.err" || sender_rc=$?
            sleep 1
            stop_pid "$rx_pid" TERM
            a=$(counters)
            sent=$(ITGDec "$WORK/ditg-tx-$tag.log" 2>/dev/null | awk '/Total packets/{v=$NF} END{print v}')
            app=$(ITGDec "$WORK/ditg-rx-$tag.log" 2>/dev/null | awk '/Total packets/{v=$NF} END{print v}')
            rm -f "$WORK/ditg-tx-$tag.log" "$WORK/ditg-rx-$tag.log"
            ;;
        sockperf)
            bg "$NS_RX" "recv-$tag" taskset -c "$RX_CPU" sockperf sr -i "$IP_RX" -p "$port"
            rx_pid=$BG_PID
            wait_port "$NS_RX" udp "$port"
            b=$(counters)
            nstx timeout "$bound" taskset -c "$TX_CPU" sockperf tp -i "$IP_RX" -p "$port" \
                -m "$PAYLOAD" --mps max -t "$SECS" >"$WORK/send-$tag.out" 2>"$WORK/send-$tag.err" || sender_rc=$?
            sleep 1
            stop_pid "$rx_pid" TERM
            a=$(counters)
            sent=$(grep -ho 'Total of [0-9]* messages sent' "$WORK/send-$tag.out" "$WORK/send-$tag.err" | awk '{print $3}' | head -1)
            ;;
        trafgen)
            # Raw AF_PACKET TX ring: one frame template, UDP checksum 0 (allowed on IPv4).
            local dmac smac
            dmac=$(nsrx cat /sys/class/net/$IF_RX/address | sed 's/^/0x/; s/:/, 0x/g')
            smac=$(nstx cat /sys/class/net/$IF_TX/address | sed 's/^/0x/; s/:/, 0x/g')
            cat >"$WORK/trafgen-$tag.cfg" <<EOF
{
  $dmac, $smac, 0x08, 0x00,
  0x45, 0x00, const16($((20 + 8 + PAYLOAD))), const16(0), 0x40, 0x00, 64, 17, csumip(14, 33),
  198, 18, 0, 1, 198, 18, 0, 2,
  const16(40000), const16($port), const16($((8 + PAYLOAD))), const16(0),
  fill(0x00, $PAYLOAD)
}
EOF
            bg "$NS_RX" "recv-$tag" taskset -c "$RX_CPU" sockperf sr -i "$IP_RX" -p "$port"
            rx_pid=$BG_PID
            wait_port "$NS_RX" udp "$port"
            b=$(counters)
            nstx timeout -s INT "$SECS" taskset -c "$TX_CPU" trafgen --dev "$IF_TX" \
                --conf "$WORK/trafgen-$tag.cfg" --cpus 1 -q -C \
                >"$WORK/send-$tag.out" 2>"$WORK/send-$tag.err" || sender_rc=$?
            [ "$sender_rc" = 124 ] && sender_rc=0
            sleep 1
            stop_pid "$rx_pid" TERM
            a=$(counters)
            ;;
        *) die "unknown tool $tool" ;;
    esac
    [ "$sender_rc" = 0 ] || log "warning: $tag sender exit $sender_rc: $(tail -3 "$WORK/send-$tag.err" | tr '\n' ' ')"
    python3 - "$tool" "$rate" "$rep" "$SECS" "$b" "$a" "${sent:-}" "${app:-}" "$sender_rc" >>"$out" <<'EOF'
import json, sys
tool, rate, rep, secs, b, a, sent, app, rc = sys.argv[1:]
secs = float(secs)
b = [int(x) for x in b.split()]
a = [int(x) for x in a.split()]
d = [y - x for x, y in zip(b, a)]
r = dict(tool=tool, rate=int(rate), rep=int(rep), seconds=secs, sender_rc=int(rc),
         if_rx=d[0], udp_in=d[1], rcvbuf_errors=d[2], if_tx=d[3],
         if_rx_kpps=round(d[0] / secs / 1000, 1), udp_in_kpps=round(d[1] / secs / 1000, 1))
if sent:
    r["sent"] = int(float(sent)); r["sent_kpps"] = round(int(float(sent)) / secs / 1000, 1)
if app:
    r["app_rx"] = int(float(app)); r["app_rx_kpps"] = round(int(float(app)) / secs / 1000, 1)
    base = r.get("sent") or d[0]
    if base:
        r["app_loss_pct"] = round(max(0, base - r["app_rx"]) / base * 100, 3)
print(json.dumps(r))
EOF
    tail -1 "$out" >&2
}

for rep in $(seq 1 "$REPS"); do
    for tool in $TOOLS; do
        log "full blast, rep $rep/$REPS, $tool (${SECS}s)"
        run_one "$tool" 0 "$rep" "$RESULTS"
    done
done
for rate in $SWEEP; do
    for tool in $SWEEP_TOOLS; do
        log "sweep $rate pps, $tool (${SECS}s)"
        run_one "$tool" "$rate" 1 "$SWEEP_RESULTS"
    done
done

echo
echo "## Maximum rate, 64-byte payload, one flow"
machine_info
[ -s "$RESULTS" ] && python3 "$BENCH_DIR/analyze.py" maxrate-table "$RESULTS"
[ -s "$SWEEP_RESULTS" ] && python3 "$BENCH_DIR/analyze.py" loss-table "$SWEEP_RESULTS"
if [ -n "${RESULTS_OUT:-}" ]; then cat "$RESULTS" "$SWEEP_RESULTS" >"$RESULTS_OUT"; log "per-run results in $RESULTS_OUT"; fi
exit 0

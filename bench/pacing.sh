#!/usr/bin/env bash
# Pacing accuracy of wirelab send against sockperf, D-ITG and iperf3, side by
# side in one run.
#
# For each rate (1, 10, 100 kpps; 100-byte UDP payload) and each tool, in
# interleaved order (A B C ... A B C ...), the packets are captured by tcpdump
# with nanosecond timestamps in the receiving namespace (taken at netif_rx in
# the sender's context on veth: the sender's pacing) and analysed by
# bench/analyze.py: |IAT - ideal| p50/p99/p99.9/max, mean rate, drift (ppm),
# missed packets. Prints one table per rate and the ratios wirelab / best peer.
#
# Usage: sudo bench/pacing.sh [--reps N] [--rates "1000 10000 100000"]
#                             [--seconds "5 5 2"] [--tools "..."] [--keep]
#   --reps N       repetitions of each (rate, tool) pair (default 2)
#   --rates LIST   packet rates in pps (default "1000 10000 100000")
#   --seconds LIST run length per rate in whole seconds (default "5 5 2")
#   --tools LIST   subset of: wirelab wirelab-spin wirelab+record wirelab-planned wirelab-burst
#                  wirelab-nophase (--phase off: no start-phase calibration)
#                  wirelab-sleepy (--spin-margin 100us: sleeps through most of each gap)
#                  sockperf ditg ditg-poll iperf3 (wirelab-burst: --late burst, everything due
#                  sent at once after a stall; wirelab-sfNN: --spread-factor 0.NN, catch-up
#                  gaps at least NN % of the original; wirelab-planned: --planned-start, the schedule anchored
#                  at the planned start instead of the first departure)
#   --rt PRIO      run every sender (all tools alike) under SCHED_FIFO PRIO via chrt,
#                  to shield pacing from other load on the sender's CPU
#   --keep         keep the raw pcaps and logs (printed path)
# Environment: SKIP_BUILD=1 uses an existing target/release/wirelab;
#              RESULTS_OUT=FILE keeps the per-run JSON lines;
#              TX_CPU / RX_CPU (default 0 / 1).
# Default run: about 6 minutes on a 2-core VM.

source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

REPS=2
RATES="1000 10000 100000"
SECONDS_LIST="5 5 2"
TOOLS="wirelab wirelab-spin wirelab+record sockperf ditg ditg-poll iperf3"
PAYLOAD=100
RT_PRIO=""
while [ $# -gt 0 ]; do
    case "$1" in
        --reps) REPS="$2"; shift 2 ;;
        --rates) RATES="$2"; shift 2 ;;
        --seconds) SECONDS_LIST="$2"; shift 2 ;;
        --tools) TOOLS="$2"; shift 2 ;;
        --rt) RT_PRIO="$2"; shift 2 ;;
        --keep) KEEP_WORK=1; shift ;;
        -h|--help) sed -n '2,25p' "$0"; exit 0 ;;
        *) die "unknown argument $1 (see --help)" ;;
    esac
done

lab_init
install_tools sockperf:sockperf ITGSend:d-itg ITGRecv:d-itg iperf3:iperf3 tcpdump:tcpdump \
    ethtool:ethtool ping:iputils-ping taskset:util-linux python3:python3 ss:iproute2 ip:iproute2
build_wirelab
freeze_wirelab
lab_up
RESULTS="$WORK/pacing.jsonl"
: >"$RESULTS"
machine_info

PORT=20000
# Sender prefix: pinned to the sender CPU, optionally SCHED_FIFO.
SEND_PFX=(taskset -c "$TX_CPU")
[ -n "$RT_PRIO" ] && SEND_PFX=(chrt -f "$RT_PRIO" taskset -c "$TX_CPU")
[ -n "$RT_PRIO" ] && echo "senders run under SCHED_FIFO priority $RT_PRIO (chrt -f $RT_PRIO)"
# run_one TOOL RATE SECONDS REP
run_one() {
    local tool="$1" rate="$2" secs="$3" rep="$4"
    local count=$((rate * secs)) interval_ns=$((1000000000 / rate))
    local bound=$((secs * 3 + 10))
    PORT=$((PORT + 1))
    local port=$PORT tag="$tool-$rate-$rep" pcap="$WORK/$tool-$rate-$rep.pcap"
    local rx_pid="" sender_rc=0 counted="--count $count" wl=""

    # Reference capture on the receiving interface, only this run's port.
    bg "$NS_RX" "tcpdump-$tag" taskset -c "$RX_CPU" tcpdump -i "$IF_RX" -n -s 128 -B 65536 ${TCPDUMP_OPTS:-} \
        --time-stamp-precision=nano -w "$pcap" "udp dst port $port"
    local td_pid=$BG_PID i
    for i in $(seq 1 50); do
        grep -q "listening on" "$WORK/tcpdump-$tag.err" 2>/dev/null && break
        sleep 0.1
    done

    case "$tool" in
        wirelab*)
            wl="--wirelab"
            bg "$NS_RX" "recv-$tag" taskset -c "$RX_CPU" "$WIRELAB" recv -4 --port "$port" --quiet \
                --json --timeout "$((bound))s"
            rx_pid=$BG_PID
            wait_port "$NS_RX" udp "$port"
            local extra=()
            [ "$tool" = wirelab-spin ] && extra+=(--wait spin)
            [ "$tool" = wirelab+record ] && extra+=(--record "$WORK/tx-$tag.wlr")
            [ "$tool" = wirelab-planned ] && extra+=(--planned-start)
            [ "$tool" = wirelab-burst ] && extra+=(--late burst)
            [ "$tool" = wirelab-nophase ] && extra+=(--phase off)
            [ "$tool" = wirelab-sleepy ] && extra+=(--spin-margin 100us)
            case "$tool" in wirelab-sf*) extra+=(--spread-factor "0.${tool#wirelab-sf}") ;; esac
            nstx timeout "$bound" "${SEND_PFX[@]}" "$(wirelab_bin "$tool")" send "$IP_RX" --port "$port" \
                --rate "$rate" --size "$PAYLOAD" --count "$count" --quiet --json "${extra[@]}" \
                >"$WORK/send-$tag.out" 2>"$WORK/send-$tag.err" || sender_rc=$?
            ;;
        sockperf)
            counted=""   # sockperf runs for a time, not a count
            bg "$NS_RX" "recv-$tag" taskset -c "$RX_CPU" sockperf sr -i "$IP_RX" -p "$port"
            rx_pid=$BG_PID
            wait_port "$NS_RX" udp "$port"
            nstx timeout "$bound" "${SEND_PFX[@]}" sockperf tp -i "$IP_RX" -p "$port" \
                -m "$PAYLOAD" --mps "$rate" -t "$secs" \
                >"$WORK/send-$tag.out" 2>"$WORK/send-$tag.err" || sender_rc=$?
            ;;
        ditg|ditg-poll)
            local poll=()
            [ "$tool" = ditg-poll ] && poll=(-poll)
            bg "$NS_RX" "recv-$tag" taskset -c "$RX_CPU" ITGRecv
            rx_pid=$BG_PID
            wait_port "$NS_RX" tcp 9000
            nstx timeout "$bound" "${SEND_PFX[@]}" ITGSend -a "$IP_RX" -rp "$port" -T UDP \
                -C "$rate" -c "$PAYLOAD" -z "$count" "${poll[@]}" \
                >"$WORK/send-$tag.out" 2>"$WORK/send-$tag.err" || sender_rc=$?
            ;;
        iperf3)
            bg "$NS_RX" "recv-$tag" taskset -c "$RX_CPU" iperf3 -s -1 -p "$port"
            rx_pid=$BG_PID
            wait_port "$NS_RX" tcp "$port"
            nstx timeout "$bound" "${SEND_PFX[@]}" iperf3 -c "$IP_RX" -p "$port" -u \
                -b "$((rate * PAYLOAD * 8))" -l "$PAYLOAD" -k "$count" \
                >"$WORK/send-$tag.out" 2>"$WORK/send-$tag.err" || sender_rc=$?
            ;;
        *) die "unknown tool $tool" ;;
    esac
    [ "$sender_rc" = 0 ] || log "warning: $tag sender exit $sender_rc: $(tail -2 "$WORK/send-$tag.err" | tr '\n' ' ')"
    # libpcap's TPACKET_V3 ring retires a block after up to 1 s: wait before stopping.
    sleep "${CAPTURE_TAIL_WAIT:-1.5}"
    stop_pid "$td_pid" TERM
    [ -n "$rx_pid" ] && stop_pid "$rx_pid" TERM
    local dropped
    dropped=$(awk '/dropped by kernel/{print $1}' "$WORK/tcpdump-$tag.err")
    [ "${dropped:-0}" = 0 ] || log "warning: tcpdump dropped $dropped packets in $tag"
    # shellcheck disable=SC2086
    python3 "$BENCH_DIR/analyze.py" iat "$pcap" --interval-ns "$interval_ns" --port "$port" \
        --payload "$PAYLOAD" $counted $wl --tag "tool=$tool" --tag "rate=$rate" --tag "rep=$rep" \
        --tag "pcap_dropped=${dropped:-0}" --tag "sender_rc=$sender_rc" | tee -a "$RESULTS" >&2
    [ "${KEEP_WORK:-0}" = 1 ] || rm -f "$pcap"
}

set -- $SECONDS_LIST
for rate in $RATES; do
    secs="${1:-2}"; [ $# -gt 0 ] && shift
    for rep in $(seq 1 "$REPS"); do
        for tool in $TOOLS; do
            log "rate $rate pps, rep $rep/$REPS, $tool (${secs}s)"
            run_one "$tool" "$rate" "$secs" "$rep"
        done
    done
done

echo
echo "## Pacing: |IAT - ideal| from tcpdump ns timestamps in the receiving namespace"
machine_info
python3 "$BENCH_DIR/analyze.py" pacing-table "$RESULTS"
if [ -n "${RESULTS_OUT:-}" ]; then cp "$RESULTS" "$RESULTS_OUT"; log "per-run results in $RESULTS_OUT"; fi
exit 0

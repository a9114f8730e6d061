#!/usr/bin/env bash
# wirelab replay against tcpreplay, side by side in one run.
#
# 1. Top speed: 1,000,000 64-byte frames and 100,000 1400-byte frames (L2
#    bytes in the pcap, FCS not included), counted at the receiving veth
#    (rx_packets delta; the rate is taken between the counter's first and last
#    movement, sampled every 1 ms, so tool start-up and -K preloading do not
#    count). Tools: wirelab --topspeed, tcpreplay -t, tcpreplay -t -K;
#    interleaved A B C A B C, medians, ratios.
# 2. Fidelity at original speed: tcpdump with nanosecond timestamps in the
#    receiving namespace is the judge (stamped at netif_rx in the sender's
#    context on veth). Traces: 50,000 frames with exponential gaps (mean
#    100 us, seeded); CBR at 1 ms (5,000 frames), 100 us (50,000) and 10 us
#    (200,000). Per run: |inter-departure error| = |captured gap - original
#    gap| p50/p99/p99.9/max, total duration error (ppm), missing frames,
#    achieved rate. wirelab (defaults: --spin auto, --late spread), wirelab
#    --spin 10s (spins through every gap, as tcpreplay does) and tcpreplay
#    (default timing), interleaved, medians, ratios.
#
# Frames are 0x88b5 (local experimental ethertype) to a MAC nobody owns, so
# the receiver drops them right after counting; a sequence number at byte 14
# pairs captured frames with the trace.
#
# Usage: sudo bench/replay.sh [--reps N] [--fid-reps N] [--only top|fidelity] [--keep]
#   --reps N      repetitions of each top-speed run (default 3)
#   --fid-reps N  repetitions of each fidelity run (default 2)
#   --only X      run only the top-speed or only the fidelity part
#   --fid-tools L subset of: wirelab wirelab-spin wirelab-mmsg wirelab-spin-mmsg tcpreplay
#                 wirelab-sf8 wirelab-h64 wirelab-h256 wirelab-nophase (-spin = --spin 10s: never sleeps;
#                 -mmsg = --tx sendmmsg; -sf8 = --spread-factor 0.8: catch-up gaps at least
#                 80 % of the original; -hN = --spread-horizon N: a stall worked off over ~N gaps;
#                 -nophase = --phase off: no start-phase calibration)
#   --traces L    subset of: exp100us cbr1ms cbr100us cbr10us
#   --keep        keep traces, captures and logs (path printed)
# Environment: SKIP_BUILD=1 uses an existing target/release/wirelab;
#              TX_CPU / RX_CPU (default 0 / 1); RESULTS_OUT=FILE keeps the JSON lines;
#              RT_PRIO=N runs every sender (wirelab and tcpreplay alike) under chrt -f N.
# Default run: about 5 minutes on a 2-core VM (bounded: every tool run has a timeout).

source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

REPS=3
FID_REPS=2
ONLY=""
FID_TOOLS="wirelab wirelab-spin tcpreplay"
TRACES="exp100us cbr1ms cbr100us cbr10us"
while [ $# -gt 0 ]; do
    case "$1" in
        --reps) REPS="$2"; shift 2 ;;
        --fid-reps) FID_REPS="$2"; shift 2 ;;
        --only) ONLY="$2"; shift 2 ;;
        --fid-tools) FID_TOOLS="$2"; shift 2 ;;
        --traces) TRACES="$2"; shift 2 ;;
        --keep) KEEP_WORK=1; shift ;;
        -h|--help) sed -n '2,30p' "$0"; exit 0 ;;
        *) die "unknown argument $1 (see --help)" ;;
    esac
done

lab_init
install_tools tcpreplay:tcpreplay tcpdump:tcpdump python3:python3 ethtool:ethtool \
    ping:iputils-ping taskset:util-linux ip:iproute2
build_wirelab
lab_up
RESULTS="$WORK/replay.jsonl"
: >"$RESULTS"
machine_info
echo "tcpreplay: $(tcpreplay --version 2>&1 | head -1)"

PFX=(taskset -c "$TX_CPU")
if [ -n "${RT_PRIO:-}" ]; then
    PFX=(chrt -f "$RT_PRIO" taskset -c "$TX_CPU")
    echo "senders run under SCHED_FIFO priority $RT_PRIO"
fi
PY="$WORK/rb.py"
cat >"$PY" <<'PYEOF'
import json, math, os, random, statistics, struct, sys, time

def write_pcap(path, frames_gaps_us):
    """frames_gaps_us: iterable of (frame bytes, gap before it in us). us-precision pcap."""
    with open(path, "wb") as f:
        f.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
        t = 1_700_000_000 * 1_000_000
        for fr, gap in frames_gaps_us:
            t += gap
            f.write(struct.pack("<IIII", t // 1_000_000, t % 1_000_000, len(fr), len(fr)))
            f.write(fr)

def frame(i, size):
    head = bytes([2, 0, 0, 0, 0, 0x5e, 2, 0, 0, 0, 0, 1, 0x88, 0xB5]) + struct.pack(">I", i)
    return head + bytes(size - len(head))

def gen(outdir):
    write_pcap(f"{outdir}/top64.pcap", ((frame(i, 64), 1) for i in range(1_000_000)))
    write_pcap(f"{outdir}/top1400.pcap", ((frame(i, 1400), 1) for i in range(100_000)))
    rnd = random.Random(4)
    write_pcap(f"{outdir}/exp100us.pcap",
               ((frame(i, 100), 0 if i == 0 else max(1, round(rnd.expovariate(1 / 100)))) for i in range(50_000)))
    for name, gap, n in (("cbr1ms", 1000, 5_000), ("cbr100us", 100, 50_000), ("cbr10us", 10, 200_000)):
        write_pcap(f"{outdir}/{name}.pcap", ((frame(i, 100), 0 if i == 0 else gap) for i in range(n)))

def read_pcap(path):
    with open(path, "rb") as f:
        hdr = f.read(24)
        magic = struct.unpack("<I", hdr[:4])[0]
        e = "<" if magic in (0xA1B2C3D4, 0xA1B23C4D) else ">"
        magic = struct.unpack(e + "I", hdr[:4])[0]
        mult = 1 if magic == 0xA1B23C4D else 1000
        while True:
            h = f.read(16)
            if len(h) < 16:
                return
            s, frac, cl, _ = struct.unpack(e + "IIII", h)
            d = f.read(cl)
            yield s * 1_000_000_000 + frac * mult, d

def seqs(path):
    out = {}
    for t, d in read_pcap(path):
        if len(d) >= 18 and d[12:14] == b"\x88\xb5":
            out.setdefault(struct.unpack(">I", d[14:18])[0], t)
    return out

def pct(v, q):
    if not v:
        return None
    v = sorted(v)
    return v[min(len(v) - 1, int(math.ceil(q * len(v))) - 1)]

def fidelity(trace, cap, tags):
    orig = seqs(trace)
    got = seqs(cap)
    n = len(orig)
    err = []
    for i in range(n - 1):
        if i in got and i + 1 in got:
            err.append(abs((got[i + 1] - got[i]) - (orig[i + 1] - orig[i])))
    first, last = min(got) if got else 0, max(got) if got else 0
    span_o = orig[last] - orig[first] if got else 0
    span_c = got[last] - got[first] if got else 0
    order_ok = [k for k, _ in sorted(got.items(), key=lambda kv: kv[1])] == sorted(got)
    r = dict(tags)
    r.update(packets=n, captured=len(got), missing=n - len(got), in_order=order_ok,
             ide_p50_ns=pct(err, .5), ide_p99_ns=pct(err, .99), ide_p999_ns=pct(err, .999),
             ide_max_ns=max(err) if err else None,
             ide_mean_signed_ns=(span_c - span_o) / max(1, len(got) - 1),
             duration_ns=span_c, trace_duration_ns=span_o,
             duration_error_ppm=(span_c - span_o) / span_o * 1e6 if span_o else None,
             pps=(len(got) - 1) / span_c * 1e9 if span_c else None)
    print(json.dumps(r))

def rxwatch(path, quiet_s, limit_s):
    """Polls an rx_packets file every 1 ms: prints delta and the rate between the first and last movement."""
    rd = lambda: int(open(path).read())
    base = rd()
    cur = base
    t_first = t_last = None
    start = time.monotonic()
    sys.stdout.write("ready\n"); sys.stdout.flush()
    while True:
        time.sleep(0.001)
        v = rd()
        now = time.monotonic()
        if v != cur:
            if t_first is None:
                t_first = now
            t_last = now
            cur = v
        if t_last is not None and now - t_last > quiet_s:
            break
        if now - start > limit_s:
            break
    d = cur - base
    span = (t_last - t_first) if t_first is not None and t_last > t_first else None
    print(json.dumps(dict(rx_packets=d, span_s=span, kpps=(d / span / 1e3) if span else None)))

WL_VARIANTS = ("wirelab", "wirelab-spin", "wirelab-sf8", "wirelab-h64", "wirelab-h256",
               "wirelab-mmsg", "wirelab-spin-mmsg", "wirelab-nophase", "wirelab-base")

def med(v):
    v = [x for x in v if x is not None]
    return statistics.median(v) if v else None

def fmt_us(ns):
    return "-" if ns is None else f"{ns / 1000:.2f}"

def tables(path):
    rows = [json.loads(l) for l in open(path) if l.strip()]
    top = [r for r in rows if r.get("part") == "top"]
    fid = [r for r in rows if r.get("part") == "fidelity"]
    if top:
        print("\n## top speed (kpps counted at the receiving veth, median of runs)")
        print(f"| frames | wirelab --topspeed | tcpreplay -t | tcpreplay -t -K | wirelab / -t | wirelab / -K | goal >= 1.2x -K |")
        print("|---|---|---|---|---|---|---|")
        for size in sorted({r["size"] for r in top}):
            m = {t: med([r["kpps"] for r in top if r["size"] == size and r["tool"] == t]) for t in ("wirelab", "tcpreplay-t", "tcpreplay-K")}
            lost = {t: med([r["sent"] - r["rx_packets"] for r in top if r["size"] == size and r["tool"] == t]) for t in m}
            ra = lambda a, b: f"{a / b:.2f}" if a and b else "-"
            ok = "met" if m["wirelab"] and m["tcpreplay-K"] and m["wirelab"] >= 1.2 * m["tcpreplay-K"] else "MISSED"
            f = lambda x: "-" if x is None else f"{x:.0f}"
            print(f"| {size} B | {f(m['wirelab'])} | {f(m['tcpreplay-t'])} | {f(m['tcpreplay-K'])} | {ra(m['wirelab'], m['tcpreplay-t'])} | {ra(m['wirelab'], m['tcpreplay-K'])} | {ok} |")
            if any(lost.values()):
                print(f"|  frames not counted (median) | {lost['wirelab']} | {lost['tcpreplay-t']} | {lost['tcpreplay-K']} | | | |")
        for size in sorted({r["size"] for r in top if r["tool"] == "wirelab-base"}):
            base = med([r["kpps"] for r in top if r["size"] == size and r["tool"] == "wirelab-base"])
            cur = med([r["kpps"] for r in top if r["size"] == size and r["tool"] == "wirelab"])
            print(f"wirelab-base ({size} B): {base:.0f} kpps; wirelab / base {cur / base:.2f}" if base and cur else f"wirelab-base ({size} B): -")
    if fid:
        print("\n## fidelity at original speed (tcpdump ns timestamps; |inter-departure error| in us, median of runs)")
        print("| trace | tool | p50 | p99 | p99.9 | max | duration error (ppm) | achieved pps | missing |")
        print("|---|---|---|---|---|---|---|---|---|")
        traces = []
        for r in fid:
            if r["trace"] not in traces:
                traces.append(r["trace"])
        summary = []
        for tr in traces:
            m = {}
            for tool in WL_VARIANTS + ("tcpreplay",):
                rs = [r for r in fid if r["trace"] == tr and r["tool"] == tool]
                if not rs:
                    continue
                m[tool] = {k: med([r[k] for r in rs]) for k in ("ide_p50_ns", "ide_p99_ns", "ide_p999_ns", "ide_max_ns", "duration_error_ppm", "pps", "missing")}
                x = m[tool]
                dur = "-" if x["duration_error_ppm"] is None else f"{x['duration_error_ppm']:+.1f}"
                print(f"| {tr} | {tool} | {fmt_us(x['ide_p50_ns'])} | {fmt_us(x['ide_p99_ns'])} | {fmt_us(x['ide_p999_ns'])} | {fmt_us(x['ide_max_ns'])} | {dur} | {x['pps']:.0f} | {x['missing']:.0f} |")
            for wl in WL_VARIANTS:
                if wl in m and "tcpreplay" in m:
                    summary.append((tr, wl, m[wl], m["tcpreplay"]))
        print("\n## ratios wirelab / tcpreplay (goal: p99 and p99.9 <= 0.33; |duration error| < 10 ppm)")
        print("| trace | variant | p50 | p99 | p99.9 | p99 goal | p99.9 goal | wirelab duration error goal |")
        print("|---|---|---|---|---|---|---|---|")
        for tr, wl, w, t in summary:
            ra = lambda k: (w[k] / t[k]) if w[k] is not None and t[k] else None
            f = lambda x: "-" if x is None else f"{x:.2f}"
            g = lambda x: "-" if x is None else ("met" if x <= 1 / 3 else "MISSED")
            d = w["duration_error_ppm"]
            dg = "-" if d is None else ("met" if abs(d) < 10 else "MISSED")
            print(f"| {tr} | {wl} | {f(ra('ide_p50_ns'))} | {f(ra('ide_p99_ns'))} | {f(ra('ide_p999_ns'))} | {g(ra('ide_p99_ns'))} | {g(ra('ide_p999_ns'))} | {dg} ({d:+.1f} ppm) |")

cmd = sys.argv[1]
if cmd == "gen":
    gen(sys.argv[2])
elif cmd == "fidelity":
    fidelity(sys.argv[2], sys.argv[3], dict(kv.split("=", 1) for kv in sys.argv[4:]))
elif cmd == "rxwatch":
    rxwatch(sys.argv[2], float(sys.argv[3]), float(sys.argv[4]))
elif cmd == "tables":
    tables(sys.argv[2])
PYEOF

log "generating traces in $WORK"
python3 "$PY" gen "$WORK"

RX_STAT="/sys/class/net/$IF_RX/statistics/rx_packets"

# top_one TOOL SIZE COUNT REP
top_one() {
    local tool="$1" size="$2" count="$3" rep="$4" trace="$WORK/top$2.pcap" rc=0
    bg "$NS_RX" "rxwatch-$tool-$size-$rep" taskset -c "$RX_CPU" python3 "$PY" rxwatch "$RX_STAT" 1.0 60
    local w=$BG_PID i
    for i in $(seq 1 50); do grep -q ready "$WORK/rxwatch-$tool-$size-$rep.out" 2>/dev/null && break; sleep 0.1; done
    case "$tool" in
        wirelab|wirelab-base) nstx timeout 60 "${PFX[@]}" "$(wirelab_bin "$tool")" replay -i "$IF_TX" --topspeed -q --json "$trace" \
            >"$WORK/tx-$tool-$size-$rep.out" 2>&1 || rc=$? ;;
        tcpreplay-t) nstx timeout 60 "${PFX[@]}" tcpreplay -q -i "$IF_TX" -t "$trace" \
            >"$WORK/tx-$tool-$size-$rep.out" 2>&1 || rc=$? ;;
        tcpreplay-K) nstx timeout 60 "${PFX[@]}" tcpreplay -q -i "$IF_TX" -t -K "$trace" \
            >"$WORK/tx-$tool-$size-$rep.out" 2>&1 || rc=$? ;;
    esac
    wait "$w" || true
    [ "$rc" = 0 ] || log "warning: $tool exit $rc: $(tail -2 "$WORK/tx-$tool-$size-$rep.out" | tr '\n' ' ')"
    python3 - "$WORK/rxwatch-$tool-$size-$rep.out" "$tool" "$size" "$count" "$rep" "$rc" <<'EOF' | tee -a "$RESULTS" >&2
import json, sys
r = json.loads(open(sys.argv[1]).read().splitlines()[-1])
r.update(part="top", tool=sys.argv[2], size=int(sys.argv[3]), sent=int(sys.argv[4]), rep=int(sys.argv[5]), rc=int(sys.argv[6]))
print(json.dumps(r))
EOF
}

# fid_one TOOL TRACE REP
fid_one() {
    local tool="$1" name="$2" rep="$3" trace="$WORK/$2.pcap" rc=0
    local cap="$WORK/cap-$tool-$name-$rep.pcap" tag="$tool-$name-$rep"
    bg "$NS_RX" "tcpdump-$tag" taskset -c "$RX_CPU" tcpdump -i "$IF_RX" -n -s 64 -B 131072 \
        --time-stamp-precision=nano -w "$cap" "ether proto 0x88b5"
    local td=$BG_PID i
    for i in $(seq 1 50); do grep -q "listening on" "$WORK/tcpdump-$tag.err" 2>/dev/null && break; sleep 0.1; done
    case "$tool" in
        wirelab*)
            local extra=()
            case "$tool" in
                wirelab-spin) extra=(--spin 10s) ;;
                wirelab-sf8) extra=(--spread-factor 0.8) ;;
                wirelab-h64) extra=(--spread-horizon 64) ;;
                wirelab-h256) extra=(--spread-horizon 256) ;;
                wirelab-mmsg) extra=(--tx sendmmsg) ;;
                wirelab-spin-mmsg) extra=(--spin 10s --tx sendmmsg) ;;
                wirelab-nophase) extra=(--phase off) ;;
            esac
            nstx timeout 60 "${PFX[@]}" "$(wirelab_bin "$tool")" replay -i "$IF_TX" -q --json "${extra[@]}" "$trace" \
                >"$WORK/tx-$tag.json" 2>"$WORK/tx-$tag.err" || rc=$? ;;
        tcpreplay) nstx timeout 60 "${PFX[@]}" tcpreplay -i "$IF_TX" "$trace" \
            >"$WORK/tx-$tag.json" 2>"$WORK/tx-$tag.err" || rc=$? ;;
    esac
    [ "$rc" = 0 ] || log "warning: $tag exit $rc: $(tail -2 "$WORK/tx-$tag.err" | tr '\n' ' ')"
    sleep "${CAPTURE_TAIL_WAIT:-1.5}"
    stop_pid "$td" TERM
    local dropped
    dropped=$(awk '/dropped by kernel/{print $1}' "$WORK/tcpdump-$tag.err")
    [ "${dropped:-0}" = 0 ] || log "warning: tcpdump dropped $dropped packets in $tag"
    python3 "$PY" fidelity "$trace" "$cap" part=fidelity "tool=$tool" "trace=$name" "rep=$rep" \
        "pcap_dropped=${dropped:-0}" "rc=$rc" | tee -a "$RESULTS" >&2
    [ "${KEEP_WORK:-0}" = 1 ] || rm -f "$cap"
}

if [ "$ONLY" != fidelity ]; then
    for sc in "64 1000000" "1400 100000"; do
        set -- $sc
        for rep in $(seq 1 "$REPS"); do
            for tool in ${TOP_TOOLS:-wirelab tcpreplay-t tcpreplay-K}; do
                log "top speed: $1-byte frames, rep $rep/$REPS, $tool"
                top_one "$tool" "$1" "$2" "$rep"
            done
        done
    done
fi
if [ "$ONLY" != top ]; then
    for name in $TRACES; do
        for rep in $(seq 1 "$FID_REPS"); do
            for tool in $FID_TOOLS; do
                log "fidelity: $name, rep $rep/$FID_REPS, $tool"
                fid_one "$tool" "$name" "$rep"
            done
        done
    done
fi

python3 "$PY" tables "$RESULTS"
[ -n "${RESULTS_OUT:-}" ] && cp "$RESULTS" "$RESULTS_OUT"
log "done"

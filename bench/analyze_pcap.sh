#!/bin/sh
# analyze on captures: `wirelab analyze` vs `tshark -z rtp,streams` on the same RTP capture.
#
# Writes a classic pcap (ns, Ethernet) of STREAMS RTP streams of PACKETS packets each (PCMU,
# 20 ms, arrival jitter, 1 % loss, a few reordered and duplicated packets), then per ROUND
# runs both tools on it, interleaved, and prints the median wall time of each, the ratio,
# and how many streams agree on packets, lost, max delta, mean and max jitter (3 decimals
# of a ms, tshark's precision). Peak RSS from /usr/bin/time when it is installed.
#
# Usage: bench/analyze_pcap.sh [PACKETS] [STREAMS] [ROUNDS]   (default 20000 20 3)
#   env: WIRELAB (binary), OUT (directory kept; default a temporary one, removed)
# Needs: python3, tshark; cargo build --release -p wirelab.
set -eu
PACKETS=${1:-20000}
STREAMS=${2:-20}
ROUNDS=${3:-3}
W=${WIRELAB:-$(cd "$(dirname "$0")/.." && pwd)/target/release/wirelab}
[ -x "$W" ] || { echo "no $W: run cargo build --release -p wirelab" >&2; exit 1; }
for t in python3 tshark; do
  command -v $t >/dev/null || { echo "missing $t: apt install python3 tshark" >&2; exit 1; }
done
if [ -n "${OUT:-}" ]; then mkdir -p "$OUT"; D=$OUT; else D=$(mktemp -d /tmp/wlbap.XXXXXX); trap 'rm -rf "$D"' EXIT INT TERM; fi
CAP=$D/rtp.pcap

python3 - "$CAP" "$PACKETS" "$STREAMS" <<'PY'
import heapq, random, struct, sys
path, n, streams = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
random.seed(1)
t0 = 1_700_000_000_000_000_000
def gen(k):
    ssrc = 0x10000 + k
    seq0, ts0 = random.randrange(65536), random.randrange(1 << 32)
    pend = []
    for i in range(n):
        if random.random() < 0.01:
            continue
        t = t0 + k * 1_000_000 + i * 20_000_000 + int(random.expovariate(1 / 1_500_000))
        if random.random() < 0.002:
            t += 45_000_000  # late by two packets: reordered
        body = struct.pack('!BBHII', 0x80, 0, (seq0 + i) & 0xffff, (ts0 + 160 * i) & 0xffffffff, ssrc) + b'\xd5' * 160
        ulen = 8 + len(body)
        ip = struct.pack('!BBHHHBBH4s4s', 0x45, 0, 20 + ulen, 0, 0x4000, 64, 17, 0,
                         bytes([10, 1, k >> 8, k & 255]), bytes([10, 2, 0, 1]))
        f = b'\x02\0\0\0\0\x02\x02\0\0\0\0\x01\x08\x00' + ip + struct.pack('!HHHH', 20000 + 2 * k, 30000, ulen, 0) + body
        pend.append((t, f))
        if random.random() < 0.002:
            pend.append((t + 100_000, f))  # duplicated
    pend.sort(key=lambda p: p[0])
    return pend
with open(path, 'wb') as out:
    out.write(struct.pack('<IHHiIII', 0xa1b23c4d, 2, 4, 0, 0, 65535, 1))
    for t, f in heapq.merge(*[gen(k) for k in range(streams)], key=lambda p: p[0]):
        s, ns = divmod(t, 1_000_000_000)
        out.write(struct.pack('<IIII', s, ns, len(f), len(f)) + f)
PY

frames=$(tshark -r "$CAP" -q -z io,stat,0 2>/dev/null | awk -F'|' '/<>/{gsub(/ /,"",$3); print $3}')
TIME=""
[ -x /usr/bin/time ] && TIME="/usr/bin/time -f %M -o"
now() { date +%s.%N; }
run_wl() { $W analyze --json "$CAP" > "$D/wl.json"; }
run_ts() { tshark -n -r "$CAP" -q -o rtp.heuristic_rtp:TRUE -z rtp,streams > "$D/ts.txt" 2>/dev/null; }
: > "$D/wl.t"; : > "$D/ts.t"
i=0
while [ $i -lt "$ROUNDS" ]; do
  a=$(now); if [ -n "$TIME" ]; then $TIME "$D/wl.rss" $W analyze --json "$CAP" > "$D/wl.json"; else run_wl; fi; b=$(now)
  echo "$b - $a" | bc >> "$D/wl.t"
  a=$(now); if [ -n "$TIME" ]; then $TIME "$D/ts.rss" tshark -n -r "$CAP" -q -o rtp.heuristic_rtp:TRUE -z rtp,streams > "$D/ts.txt" 2>/dev/null; else run_ts; fi; b=$(now)
  echo "$b - $a" | bc >> "$D/ts.t"
  i=$((i + 1))
done
med() { sort -n "$1" | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }
wl=$(med "$D/wl.t"); ts=$(med "$D/ts.t")

agree=$(python3 - "$D/wl.json" "$D/ts.txt" <<'PY'
import json, sys
w = {s["ssrc"]: s for i in json.load(open(sys.argv[1]))["rtp"] for s in i["streams"]}
same = total = 0
for line in open(sys.argv[2]):
    f = line.split()
    ids = [x for x in f if x.startswith("0x")]
    if not ids:
        continue
    if f[-1] == "X":
        f = f[:-1]
    total += 1
    s = w.get(int(ids[0], 16))
    if s is None:
        continue
    ours = [str(s["packets"]), str(s["lost"]), "%.3f" % s["max_delta_ms"],
            "%.3f" % s["mean_jitter_ms"], "%.3f" % s["max_jitter_ms"]]
    same += ours == [f[-9], f[-8], f[-4], f[-2], f[-1]]
print(f"{same}/{total}")
PY
)
echo "## pcap"
echo "capture: $frames frames, $STREAMS RTP streams, $(du -h "$CAP" | cut -f1); median of $ROUNDS rounds"
printf "%-40s %10s %12s\n" "tool" "wall s" "peak RSS MB"
rss() { [ -f "$1" ] && awk '{printf "%.0f", $1/1024}' "$1" || echo "-"; }
printf "%-40s %10.2f %12s\n" "wirelab analyze --json" "$wl" "$(rss "$D/wl.rss")"
printf "%-40s %10.2f %12s\n" "tshark -z rtp,streams" "$ts" "$(rss "$D/ts.rss")"
echo "ratio tshark/wirelab: $(echo "scale=1; $ts / $wl" | bc)x; streams equal (packets, lost, max delta, mean and max jitter): $agree"

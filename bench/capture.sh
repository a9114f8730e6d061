#!/bin/sh
# Capture benchmark: wirelab capture (block/poll/adaptive) vs tcpdump, netsniff-ng, tshark.
#
# Lab: a veth pair joins namespaces wlbc-s (sender, pinned to CPU 0) and wlbc-r (capture);
# GRO is off and RPS in wlbc-r steers receive processing to CPU 1 -- without
# it every tool looks lossless because the sender slows down instead. IPv6 is off so no
# stray frames appear. The generator is `wirelab send --size 24`: UDP probes of 66-byte
# frames (24 bytes is its smallest payload) to 198.19.77.3, an address with a static
# neighbour entry whose MAC is not the receiver's: the receiving stack drops every frame at
# once (PACKET_OTHERHOST), sends no ICMP back, and the capture tools (all promiscuous) see
# exactly the generated frames and nothing else.
#
# Every tool writes to disk with no filter for the whole run (started 2.5 s before the
# sender, stopped with SIGINT 1.5 s after it -- libpcap retires TPACKET_V3 blocks after
# up to 1 s). Per run:
#   sent  = rx_packets delta of the receiving veth (frames handed to the interface)
#   lost  = sent - frames in the file (capinfos)
#   cpu   = utime+stime of the tool's process tree from /proc/PID/stat (clock ticks,
#           10 ms) over the send window; run = sum_exec_runtime from /proc/PID/schedstat
#           (ns); both per captured frame
# Runs are interleaved (all tools, then again) for ROUNDS rounds; the summary prints
# medians and the ratios docs/performance.md states. wirelab's JSON summaries are kept
# in $OUT (ring drops vs interface drops).
#
# Usage: sudo bench/capture.sh [RATES] [ROUNDS]   e.g. bench/capture.sh "1000 200000" 2
#   RATES: pps values or "max"; default "1000 200000 max" (~8 min with 2 rounds)
#   env: SEND_S (default 5), TOOLS, OUT (results dir), WIRELAB (binary),
#        WIRELAB_BASE (the binary of the wl-base-adaptive variant)
# Needs: root, ip, ethtool, tcpdump, netsniff-ng, tshark, capinfos; cargo build --release.
set -eu
RATES=${1:-"1000 200000 max"}
ROUNDS=${2:-2}
SEND_S=${SEND_S:-5}
W=${WIRELAB:-$(cd "$(dirname "$0")/.." && pwd)/target/release/wirelab}
OUT=${OUT:-$(mktemp -d /tmp/wlbc-results.XXXXXX)}
D=$(mktemp -d /tmp/wlbc.XXXXXX)
S=wlbc-s; R=wlbc-r; IF=wlbcb
mkdir -p "$OUT"
cleanup() { ip netns del $S 2>/dev/null || true; ip netns del $R 2>/dev/null || true; rm -rf "$D"; }
trap cleanup EXIT INT TERM
for t in ip ethtool tcpdump netsniff-ng tshark capinfos; do
  command -v $t >/dev/null || { echo "missing $t: apt install iproute2 ethtool tcpdump netsniff-ng tshark" >&2; exit 1; }
done
[ -x "$W" ] || { echo "no $W: run cargo build --release -p wirelab" >&2; exit 1; }
ip netns add $S; ip netns add $R
for n in $S $R; do ip netns exec $n sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1; done
ip link add wlbca type veth peer name $IF
ip link set wlbca netns $S; ip link set $IF netns $R
ip -n $S addr add 198.19.77.1/24 dev wlbca; ip -n $R addr add 198.19.77.2/24 dev $IF
ip -n $S link set wlbca up; ip -n $R link set $IF up
ip netns exec $S ethtool -K wlbca gro off >/dev/null 2>&1 || true
ip netns exec $R ethtool -K $IF gro off >/dev/null 2>&1 || true
ip -n $S neigh add 198.19.77.3 lladdr 02:00:5e:77:77:03 dev wlbca
ip netns exec $R sh -c "echo 2 > /sys/class/net/$IF/queues/rx-0/rps_cpus"
sleep 0.5

cap() {
  case $1 in
    wl-block)    echo "$W capture -i $IF -q --json -w $D/out --wait block" ;;
    wl-poll)     echo "$W capture -i $IF -q --json -w $D/out --wait poll" ;;
    wl-adaptive) echo "$W capture -i $IF -q --json -w $D/out --wait adaptive" ;;
    # Another build (WIRELAB_BASE=path), for a before/after comparison in one run.
    wl-base-adaptive) echo "${WIRELAB_BASE:?wl-base-adaptive needs WIRELAB_BASE} capture -i $IF -q --json -w $D/out --wait adaptive" ;;
    wl-adaptive-cpu1) echo "$W capture -i $IF -q --json -w $D/out --wait adaptive --cpu 1" ;;
    tcpdump)     echo "tcpdump -i $IF -w $D/out" ;;
    tcpdump-B)   echo "tcpdump -i $IF -B 65536 -w $D/out" ;;
    # Pinned outside the RPS CPU, where wirelab places itself by default: the like-for-like row.
    tcpdump-cpu0) echo "taskset -c 0 tcpdump -i $IF -w $D/out" ;;
    netsniff-ng) echo "netsniff-ng --in $IF --out $D/out --silent" ;;
    tshark)      echo "tshark -i $IF -q -w $D/out" ;;
  esac
}
# The tool's process and its descendants (tshark captures in a dumpcap child).
tree() { echo "$1"; for c in $(pgrep -P "$1" 2>/dev/null); do tree "$c"; done; }
ticks() { s=0; for p in $1; do t=$(awk '{print $14 + $15}' /proc/$p/stat 2>/dev/null || echo 0); s=$((s + t)); done; echo $s; }
runns() { s=0; for p in $1; do for f in /proc/$p/task/*/schedstat; do t=$(awk "{print \$1}" $f 2>/dev/null || echo 0); s=$((s + ${t:-0})); done; done; echo $s; }
rxp() { ip netns exec $R cat /sys/class/net/$IF/statistics/rx_packets; }
HZ=$(getconf CLK_TCK)

TOOLS=${TOOLS:-"wl-adaptive wl-block wl-poll wl-adaptive-cpu1 tcpdump tcpdump-B tcpdump-cpu0 netsniff-ng tshark"}
RAW=$OUT/runs.txt
printf "%-16s %8s %5s %9s %9s %7s %9s %9s\n" tool rate round sent infile lost cpu_ns/p run_ns/p | tee "$RAW"
for round in $(seq 1 "$ROUNDS"); do
  for rate in $RATES; do
    for tool in $TOOLS; do
      rm -f "$D/out" "$D/json"
      ip netns exec $R sh -c "exec $(cap $tool)" >"$D/json" 2>"$D/err" &
      pid=$!
      sleep 2.5   # netsniff-ng needs ~2 s before its ring sees packets
      pids=$(tree $pid)
      t0=$(ticks "$pids"); r0=$(runns "$pids"); c0=$(rxp)
      if [ "$rate" = max ]; then rflag="--rate 5Mpps"; else rflag="--rate $rate"; fi
      ip netns exec $S taskset -c 0 "$W" send 198.19.77.3 --port 7000 $rflag --size 24 \
        --duration "${SEND_S}s" --quiet >/dev/null 2>&1 || true
      sleep 1.5
      c1=$(rxp); t1=$(ticks "$pids"); r1=$(runns "$pids")
      kill -INT $pid 2>/dev/null || true
      wait $pid 2>/dev/null || true
      got=$(capinfos -c -M "$D/out" 2>/dev/null | awk -F: '/Number of packets/ {gsub(/ /,"",$2); print $2}')
      got=${got:-0}
      sent=$((c1 - c0))
      case $tool in wl-*) cp "$D/json" "$OUT/$tool-$rate-$round.json" ;; esac
      if [ "$got" -gt 0 ]; then
        cpu=$(( (t1 - t0) * 1000000000 / HZ / got )); run=$(( (r1 - r0) / got ))
      else cpu=0; run=0; echo "  $tool wrote no readable file: $(head -c 300 "$D/err")" >&2; fi
      printf "%-16s %8s %5s %9s %9s %7s %9s %9s\n" $tool $rate $round $sent $got $((sent - got)) $cpu $run | tee -a "$RAW"
    done
  done
done

echo
echo "medians over $ROUNDS rounds (loss = frames in the interface minus frames in the file)"
awk -v rates="$RATES" '
NR == 1 { next }
{ k = $1 " " $2; n[k]++; sent[k, n[k]] = $4; lost[k, n[k]] = $6; cpu[k, n[k]] = $7; run[k, n[k]] = $8; tools[$1] = 1; order[$1] = order[$1] ? order[$1] : NR }
function med(a, k,   i, j, m, v, t) {
  m = n[k]; for (i = 1; i <= m; i++) v[i] = a[k, i]
  for (i = 1; i <= m; i++) for (j = i + 1; j <= m; j++) if (v[j] < v[i]) { t = v[i]; v[i] = v[j]; v[j] = t }
  return m % 2 ? v[(m + 1) / 2] : (v[m / 2] + v[m / 2 + 1]) / 2
}
function rng(a, k,   i, lo, hi) { lo = hi = a[k, 1]; for (i = 2; i <= n[k]; i++) { if (a[k, i] < lo) lo = a[k, i]; if (a[k, i] > hi) hi = a[k, i] }; return lo "-" hi }
END {
  split(rates, R, " ")
  printf "%-16s", "tool"; for (i = 1; i in R; i++) printf " %22s", R[i] " lost/sent"; printf " %16s %16s\n", "cpu@200k ns/p", "run@200k ns/p"
  PROCINFO["sorted_in"] = "@ind_str_asc"
  for (t in tools) {
    printf "%-16s", t
    for (i = 1; i in R; i++) { k = t " " R[i]; printf " %22s", (k in n) ? sprintf("%d/%d", med(lost, k), med(sent, k)) : "-" }
    k = t " 200000"
    if (k in n) { C[t] = med(cpu, k); U[t] = med(run, k); printf " %8d (%s) %8d (%s)\n", C[t], rng(cpu, k), U[t], rng(run, k) } else printf "\n"
    k = t " 1000"; if (k in n) { C1[t] = med(cpu, k); U1[t] = med(run, k) }
  }
  print ""
  split("wl-adaptive wl-block wl-poll wl-adaptive-cpu1", WL, " ")
  for (i = 1; i in WL; i++) { w = WL[i]; if (!(w in C)) continue
    for (p in C) if (p !~ /^wl-/ && C[p] > 0 && U[p] > 0)
      printf "ratio @200k %-16s / %-12s cpu %.2f  run %.2f\n", w, p, C[w] / C[p], U[w] / U[p] }
  if (("wl-adaptive" in U1) && ("wl-poll" in U1) && U1["wl-poll"] > 0)
    printf "ratio @1k   wl-adaptive / wl-poll  cpu %.2f  run %.2f\n", (C1["wl-poll"] ? C1["wl-adaptive"] / C1["wl-poll"] : 0), U1["wl-adaptive"] / U1["wl-poll"]
}' "$RAW" | tee "$OUT/summary.txt"
echo "raw runs, summary and wirelab JSON in $OUT"

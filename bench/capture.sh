#!/bin/sh
# Capture benchmark: wirelab capture (block/poll/adaptive) vs tcpdump, netsniff-ng, tshark.
#
# A veth pair joins namespaces wlbc-s (sender, pinned to CPU 0) and wlbc-r (capture). RPS in
# wlbc-r steers receive processing to CPU 1 (DESIGN.md §5), otherwise every tool looks
# lossless because the sender slows down instead. wirelab send emits UDP probes with a
# 24-byte payload (66-byte frames) at fixed rates for SEND_S seconds; each capture tool
# writes to disk for the whole run. Loss = probes sent − probes in the file; CPU = user +
# system of the capture process (GNU time). Runs are interleaved A B C ... per round.
#
# Usage: sudo bench/capture.sh [RATES] [ROUNDS]      e.g. bench/capture.sh "1000 200000" 2
# Needs: root, ip, tcpdump, netsniff-ng, tshark, /usr/bin/time; release build of wirelab.
set -eu
RATES=${1:-"1000 200000 300000"}
ROUNDS=${2:-2}
SEND_S=${SEND_S:-3}
W=${WIRELAB:-$(dirname "$0")/../target/release/wirelab}
D=$(mktemp -d /tmp/wlbc.XXXXXX)
S=wlbc-s; R=wlbc-r
cleanup() { ip netns del $S 2>/dev/null || true; ip netns del $R 2>/dev/null || true; rm -rf "$D"; }
trap cleanup EXIT
for t in ip tcpdump netsniff-ng tshark /usr/bin/time; do
  command -v $t >/dev/null || { echo "missing $t: apt install tcpdump netsniff-ng tshark time" >&2; exit 1; }
done
ip netns add $S; ip netns add $R
ip link add wlbca type veth peer name wlbcb
ip link set wlbca netns $S; ip link set wlbcb netns $R
ip -n $S addr add 198.19.77.1/24 dev wlbca; ip -n $R addr add 198.19.77.2/24 dev wlbcb
ip -n $S link set wlbca up; ip -n $R link set wlbcb up
ip netns exec $R sh -c 'echo 2 > /sys/class/net/wlbcb/queues/rx-0/rps_cpus'
sleep 1

# tool name -> command writing $D/out (capture runs in background; stopped with SIGINT)
cap() {
  case $1 in
    wl-block)    echo "$W capture -i wlbcb -q -w $D/out --wait block udp port 7000" ;;
    wl-poll)     echo "$W capture -i wlbcb -q -w $D/out --wait poll udp port 7000" ;;
    wl-adaptive) echo "$W capture -i wlbcb -q -w $D/out --wait adaptive udp port 7000" ;;
    tcpdump)     echo "tcpdump -i wlbcb -q -w $D/out udp port 7000" ;;
    tcpdump-B)   echo "tcpdump -i wlbcb -q -B 65536 -w $D/out udp port 7000" ;;
    netsniff-ng) echo "netsniff-ng -i wlbcb -o $D/out -q -f /dev/null" ;;
    tshark)      echo "tshark -i wlbcb -q -w $D/out -f 'udp port 7000'" ;;
  esac
}
TOOLS=${TOOLS:-"wl-adaptive wl-block wl-poll tcpdump tcpdump-B netsniff-ng tshark"}
printf "%-12s %8s %6s %9s %9s %10s\n" tool rate round sent lost cpu_ns/pkt
for rate in $RATES; do
  n=$((rate * SEND_S))
  for round in $(seq 1 "$ROUNDS"); do
    for tool in $TOOLS; do
      rm -f "$D/out" "$D/time"
      # netsniff-ng takes a BPF program file, not an expression: compile one with tcpdump -dd.
      if [ $tool = netsniff-ng ]; then
        tcpdump -i lo -dd udp port 7000 2>/dev/null > "$D/bpf"
        c="netsniff-ng -i wlbcb -o $D/out -q -s -f $D/bpf"
      else c=$(cap $tool); fi
      ip netns exec $R /usr/bin/time -o "$D/time" -f "%U %S" sh -c "exec $c" >/dev/null 2>&1 &
      pid=$!
      sleep 2
      ip netns exec $S taskset -c 0 "$W" send 198.19.77.2 --port 7000 --rate "$rate" \
        --size 24 --count "$n" --quiet >/dev/null
      sleep 1.5   # libpcap retires its blocks after up to 1 s
      kill -INT $(pgrep -P $pid) 2>/dev/null || true   # the tool is /usr/bin/time's child
      wait $pid || true
      got=$(capinfos -c -M "$D/out" 2>/dev/null | awk -F: '/Number of packets/ {gsub(/ /,"",$2); print $2}')
      got=${got:-0}
      sent=$((n + 3))
      cpu=$(awk '{print ($1 + $2) * 1e9}' "$D/time" 2>/dev/null || echo 0)
      printf "%-12s %8s %6s %9s %9s %10.0f\n" $tool $rate $round $sent $((sent - got)) \
        "$(echo "$cpu $got" | awk '{ if ($2 > 0) print $1 / $2; else print 0 }')"
    done
  done
done

#!/usr/bin/env bash
# Trace ingestion (target: >= 500 MB/s, memory flat on a 4 GiB trace),
# side by side with the page-cache read ceiling in one run.
#
# A nist-bin trace of SIZE GiB (default 4; delays of 0-10,000 us with a drop
# or a duplicate now and then, little-endian words) and a one-delay-per-line
# text trace of a quarter of that are written to a work directory, read once
# with `cat` to warm the page cache, then timed:
#   dd if=FILE of=/dev/null bs=1M         the read ceiling (reference; cat may splice)
#   wirelab trace stats FILE              a full streaming pass with statistics
#   wirelab emulate ... 'trace FILE'      the emulator's check of the whole
#                                         trace before it forwards a frame
#                                         (two veth ends in a private namespace;
#                                         -d 1s, the second not counted)
# Each is run REPS times (median); MB/s, the ratio to cat, and the peak RSS
# (/usr/bin/time -v) are printed.
#
# Usage: sudo bench/trace.sh [--size GiB] [--reps N] [--keep]
# Environment: SKIP_BUILD=1 uses an existing target/release/wirelab;
#              TRACE_DIR=DIR writes the traces there (default: the work dir
#              under /tmp; needs SIZE * 1.25 GiB free).
# Default run: a few minutes (writing the 4 GiB trace takes most of it).

source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

SIZE_GIB=4
REPS=3
while [ $# -gt 0 ]; do
    case "$1" in
        --size) SIZE_GIB="$2"; shift 2 ;;
        --reps) REPS="$2"; shift 2 ;;
        --keep) KEEP_WORK=1; shift ;;
        -h|--help) sed -n '2,24p' "$0"; exit 0 ;;
        *) die "unknown option $1 (see --help)" ;;
    esac
done

lab_init
install_tools time:time python3:python3
build_wirelab
freeze_wirelab
NS_EMU="wlb${LAB_ID}e"
trap 'ip netns del "$NS_EMU" 2>/dev/null; cleanup' EXIT
DIR="${TRACE_DIR:-$WORK}"
mkdir -p "$DIR"
BIN="$DIR/big.nist.bin"
TXT="$DIR/big.delays"

log "writing a ${SIZE_GIB} GiB nist-bin trace and a delays trace of a quarter of that in $DIR"
python3 - "$BIN" "$TXT" "$SIZE_GIB" <<'EOF'
import random, struct, sys
binf, txtf, gib = sys.argv[1], sys.argv[2], float(sys.argv[3])
rng = random.Random(7)
# One 16 MiB block of words, repeated: action in bits 31-30 (00 delay,
# 01 drop, 10 duplicate), sign bit 29, delay in us in bits 28-0.
words = []
for _ in range(4 << 20):
    r = rng.random()
    act = 1 if r < 0.01 else (2 if r < 0.015 else 0)
    words.append((act << 30) | (0 if act == 1 else rng.randrange(10_001)))
block = struct.pack("<%dI" % len(words), *words)
with open(binf, "wb") as f:
    for _ in range(int(gib * 1024 / 16)):
        f.write(block)
lines = "".join("drop\n" if (w >> 30) == 1 else "%d\n" % (w & 0x1FFFFFFF) for w in words[: 1 << 20])
with open(txtf, "w") as f:
    target = int(gib * 256 * (1 << 20))
    n = 0
    while n < target:
        f.write(lines)
        n += len(lines)
EOF

# Two veth pairs inside one namespace; the emulator bridges one end of
# each (no traffic flows: it only checks its trace and stops).
ip netns add "$NS_EMU"
ip netns exec "$NS_EMU" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1
for i in 0 1; do
    ip netns exec "$NS_EMU" ip link add "wlbd$i" type veth peer name "wlbp$i"
    ip netns exec "$NS_EMU" ip link set "wlbd$i" up
    ip netns exec "$NS_EMU" ip link set "wlbp$i" up
done

# timed NAME SUBTRACT_S CMD... — one run: "seconds max_rss_kib" on stdout.
timed() {
    local name="$1" sub="$2"; shift 2
    local t0 t1
    t0=$(date +%s.%N)
    /usr/bin/time -v -o "$WORK/$name.time" "$@" >"$WORK/$name.out" 2>"$WORK/$name.err" \
        || die "$name failed: $(tail -3 "$WORK/$name.err")"
    t1=$(date +%s.%N)
    echo "$(echo "$t1 - $t0 - $sub" | bc -l) $(awk -F': ' '/Maximum resident/{print $2}' "$WORK/$name.time")"
}

median() { sort -g | awk '{a[NR]=$1} END{print a[int((NR+1)/2)]}'; }

declare -A SECS RSS
run() {
    local key="$1" file="$2" sub="$3"; shift 3
    local r s=() m=()
    for r in $(seq 1 "$REPS"); do
        read -r secs rss < <(timed "$key-$r" "$sub" "$@")
        s+=("$secs"); m+=("$rss")
    done
    SECS[$key]=$(printf '%s\n' "${s[@]}" | median)
    RSS[$key]=$(printf '%s\n' "${m[@]}" | sort -g | tail -1)
    log "$key: ${SECS[$key]} s, peak RSS ${RSS[$key]} KiB"
}

cat "$BIN" "$TXT" >/dev/null
for f in BIN TXT; do
    file="${!f}"
    run "cat-$f" "$file" 0 dd if="$file" of=/dev/null bs=1M status=none
    run "stats-$f" "$file" 0 "$WIRELAB" trace stats "$file"
    run "emulate-$f" "$file" 1 ip netns exec "$NS_EMU" "$WIRELAB" emulate --a wlbd0 --b wlbd1 \
        --a2b "trace $file at-end stop" -d 1s
done

echo
machine_info 2>/dev/null | sed -n '1p;3p'
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg); $REPS runs each, medians; trace files in the page cache"
printf '%-10s %-28s %10s %10s %9s %12s\n' trace tool seconds MB/s "vs dd" "peak RSS"
for f in BIN TXT; do
    file="${!f}"
    bytes=$(stat -c %s "$file")
    name=$([ "$f" = BIN ] && echo "nist-bin" || echo "delays")
    for tool in cat stats emulate; do
        key="$tool-$f"
        label=$(case $tool in cat) echo "dd bs=1M (read ceiling)";; stats) echo "wirelab trace stats";; emulate) echo "wirelab emulate (check)";; esac)
        mbs=$(echo "$bytes / ${SECS[$key]} / 1000000" | bc -l)
        ratio=$(echo "${SECS[cat-$f]} / ${SECS[$key]}" | bc -l)
        printf '%-10s %-28s %10.2f %10.0f %9.2f %9d MiB\n' "$name" "$label" "${SECS[$key]}" "$mbs" "$ratio" $((RSS[$key] / 1024))
    done
    echo "  ($name: $((bytes / 1048576)) MiB)"
done

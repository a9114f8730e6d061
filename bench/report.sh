#!/usr/bin/env bash
# Report and export benchmarks over one large real dataset.
#
# Usage: sudo bench/report.sh [RECORDS]      (default 10000000)
#   env: RATE (pps, default 400000), SKIP_BUILD=1, KEEP_WORK=1
# Needs: root (namespaces), /usr/bin/time; cargo build --release.
#
# The dataset: a real `wirelab send` → `wirelab recv` run in the bench lab
# (two namespaces, veth, RPS) with --record on both sides: RECORDS probes at
# RATE, so two record files of 64 bytes per probe.

source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
RECORDS="${1:-10000000}"
RATE="${RATE:-400000}"
lab_init
install_tools ip:iproute2 ethtool:ethtool ss:iproute2 ping:iputils-ping taskset:util-linux
[ -x /usr/bin/time ] || install_tools time:time
build_wirelab
freeze_wirelab
lab_up
machine_info

log "dataset: $RECORDS probes at $RATE pps with --record"
bg "$NS_RX" recv taskset -c "$RX_CPU" "$WIRELAB" recv --port 5757 --quiet --timeout 600s \
    --record "$WORK/rx.wlr"
RECV_PID=$BG_PID
wait_port "$NS_RX" udp 5757
nstx taskset -c "$TX_CPU" "$WIRELAB" send "$IP_RX" --port 5757 --rate "$RATE" --size 64 \
    --count "$RECORDS" --quiet --record "$WORK/tx.wlr" >/dev/null
wait "$RECV_PID" || true
TX_N=$(( ($(stat -c %s "$WORK/tx.wlr") - 20) / 64 ))
RX_N=$(( ($(stat -c %s "$WORK/rx.wlr") - 20) / 64 ))
echo "dataset: tx.wlr ~$TX_N records, rx.wlr ~$RX_N records ($(du -sh "$WORK/tx.wlr" | cut -f1) + $(du -sh "$WORK/rx.wlr" | cut -f1))"

# measure NAME CMD... — wall time (s) and peak RSS (MB) of one command,
# files warm in the page cache (each command runs once before, untimed).
measure() {
    local name="$1"; shift
    "$@" >/dev/null 2>&1 || true
    /usr/bin/time -v -o "$WORK/$name.time" "$@" >"$WORK/$name.out" 2>"$WORK/$name.err" \
        || die "$name failed: $(tail -3 "$WORK/$name.err")"
    local wall rss
    wall=$(awk -F': ' '/Elapsed \(wall clock\)/{n=split($2,a,":"); s=0; for(i=1;i<=n;i++) s=s*60+a[i]; print s}' "$WORK/$name.time")
    rss=$(awk -F': ' '/Maximum resident set size/{printf "%.0f", $2/1024}' "$WORK/$name.time")
    eval "WALL_$name=$wall RSS_$name=$rss"
}

## report
# `wirelab report` on both files against two peers on the same files in the
# same run: `cat` (reading the files: the I/O floor) and `wirelab analyze`
# (the whole-run analysis, which holds every record in memory).
# (cat's output goes to /dev/null: measure keeps a command's stdout in a file,
# which for cat would time writing 1.2 GB rather than reading it.)
measure cat sh -c 'cat "$0" "$1" >/dev/null' "$WORK/tx.wlr" "$WORK/rx.wlr"
measure analyze "$WIRELAB" analyze "$WORK/tx.wlr" "$WORK/rx.wlr"
measure report "$WIRELAB" report "$WORK/tx.wlr" "$WORK/rx.wlr" -o "$WORK/report.html"
SIZE_MB=$(awk -v b="$(stat -c %s "$WORK/report.html")" 'BEGIN{printf "%.2f", b/1e6}')
echo
echo "## report ($TX_N + $RX_N records)"
printf '| %-26s | %8s | %12s | %9s |\n' job "wall s" "peak RSS MB" "file MB"
printf '|%s|%s|%s|%s|\n' "----------------------------" "----------" "--------------" "-----------"
printf '| %-26s | %8s | %12s | %9s |\n' "cat (read floor)" "$WALL_cat" "$RSS_cat" "-"
printf '| %-26s | %8s | %12s | %9s |\n' "wirelab analyze" "$WALL_analyze" "$RSS_analyze" "-"
printf '| %-26s | %8s | %12s | %9s |\n' "wirelab report" "$WALL_report" "$RSS_report" "$SIZE_MB"
awk -v r="$WALL_report" -v a="$WALL_analyze" -v c="$WALL_cat" -v rr="$RSS_report" -v ra="$RSS_analyze" 'BEGIN{
  printf "report/analyze wall %.2fx, report/cat wall %.1fx, report/analyze RSS %.2fx\n", r/a, r/(c>0?c:0.01), rr/ra }'
awk -v w="$WALL_report" -v m="$RSS_report" -v s="$SIZE_MB" 'BEGIN{
  printf "targets (10 M records): wall < 10 s %s, RSS < 500 MB %s, file < 5 MB %s\n",
    (w<10?"met":"MISSED"), (m<500?"met":"MISSED"), (s<5?"met":"MISSED") }'

## export
# `wirelab export` on the same dataset: the sender's file (its N records)
# to Parquet and to CSV, and the joined export of both files (one row per
# probe sent), against two peers turning wirelab's CSV of the same records
# into snappy Parquet in the same run: DuckDB's COPY ... TO (both CPUs) and
# pyarrow's CSV reader + Parquet writer. Every Parquet file is checked to
# hold every record.
python3 -c 'import pyarrow, duckdb' 2>/dev/null ||
    die "the export block needs python3 with pyarrow and duckdb: run scripts/install-deps.sh"
# Whole records of a record file: (size - 20 - metadata length) / 64.
records_in() {
    python3 -c 'import os, struct, sys; f = sys.argv[1]; m = struct.unpack("<I", open(f, "rb").read(20)[16:20])[0]; print((os.path.getsize(f) - 20 - m) // 64)' "$1"
}
TXR=$(records_in "$WORK/tx.wlr")
measure wl_parquet "$WIRELAB" export "$WORK/tx.wlr" --format parquet -o "$WORK/wl.parquet"
measure wl_csv "$WIRELAB" export "$WORK/tx.wlr" -o "$WORK/wl.csv"
measure wl_joined "$WIRELAB" export "$WORK/tx.wlr" "$WORK/rx.wlr" --format parquet \
    -o "$WORK/joined.parquet"
measure duckdb python3 -c "
import duckdb
duckdb.sql(\"COPY (SELECT * FROM read_csv('$WORK/wl.csv')) TO '$WORK/duckdb.parquet' (FORMAT parquet, COMPRESSION snappy)\")"
measure pyarrow python3 -c "
import pyarrow.csv as c, pyarrow.parquet as pq
pq.write_table(c.read_csv('$WORK/wl.csv'), '$WORK/pyarrow.parquet', compression='snappy')"
python3 - "$WORK" "$TXR" <<'PY'
import sys, pyarrow.parquet as pq
work, n = sys.argv[1], int(sys.argv[2])
for f in ["wl", "duckdb", "pyarrow"]:
    rows = pq.ParquetFile(f"{work}/{f}.parquet").metadata.num_rows
    assert rows == n, f"{f}.parquet has {rows} rows, not {n}"
PY
echo
echo "## export ($TXR tx records; rx.wlr $(records_in "$WORK/rx.wlr") records; duckdb $(python3 -c 'import duckdb; print(duckdb.__version__)'), pyarrow $(python3 -c 'import pyarrow; print(pyarrow.__version__)'))"
echo "| job | s | M records/s | peak RSS MB | output MB |"
echo "|---|---|---|---|---|"
for j in wl_parquet:wl.parquet wl_csv:wl.csv wl_joined:joined.parquet duckdb:duckdb.parquet pyarrow:pyarrow.parquet; do
    name=${j%%:*}; file=${j#*:}; w=WALL_$name; r=RSS_$name
    awk -v n="$name" -v s="${!w}" -v m="${!r}" -v b="$(stat -c %s "$WORK/$file")" -v k="$TXR" \
        'BEGIN { printf "| %s | %.2f | %.2f | %s | %.0f |\n", n, s, k / (s > 0 ? s : 0.01) / 1e6, m, b / 1e6 }'
done
awk -v k="$TXR" -v p="$WALL_wl_parquet" -v c="$WALL_wl_csv" -v d="$WALL_duckdb" -v a="$WALL_pyarrow" \
    -v mp="$RSS_wl_parquet" -v md="$RSS_duckdb" -v ma="$RSS_pyarrow" 'BEGIN {
    p = (p > 0 ? p : 0.01)
    printf "wirelab parquet: %.2f M records/s (goal >= 5 %s)\n", k / p / 1e6, (k / p >= 5e6 ? "met" : "MISSED")
    printf "time ratios (peer / wirelab parquet): duckdb %.2fx, pyarrow %.2fx; wirelab csv / parquet %.2fx\n", d / p, a / p, c / p
    printf "peak RSS ratios (peer / wirelab parquet): duckdb %.1fx, pyarrow %.1fx\n", md / mp, ma / mp }'

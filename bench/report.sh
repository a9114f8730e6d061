#!/usr/bin/env bash
# Benchmarks of wirelab's results tools on 10 million real records, each
# against a peer doing the same job in the same run.
#
# The records are made once: `wirelab recv --record` in one namespace of a
# private veth lab (bench/lib.sh: 198.18.0.1 -> 198.18.0.2, nothing else
# reached) and `wirelab send --record --count N --rate R --size 24` in the
# other; the sender's file holds N tx records (the receiver's whatever
# arrived at that rate). Then each job runs once under /usr/bin/time -v:
# wall time, records per second, peak RSS, output size.
#
# Usage: sudo bench/report.sh [--records N] [--rate PPS] [--keep]
#   defaults: 10,000,000 records at 300 kpps (about 35 s of sending)
#   env: WIRELAB_BIN (a built binary instead of target/release/wirelab),
#        SKIP_BUILD=1, KEEP_WORK=1
# Needs: root, ip, ethtool, python3 with pyarrow and duckdb
# (scripts/install-deps.sh).
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

RECORDS=10000000
RATE=300kpps
while [ $# -gt 0 ]; do
    case "$1" in
        --records) RECORDS="$2"; shift 2 ;;
        --rate) RATE="$2"; shift 2 ;;
        --keep) KEEP_WORK=1; shift ;;
        -h|--help) sed -n '2,18p' "$0"; exit 0 ;;
        *) die "unknown argument $1 (see --help)" ;;
    esac
done

lab_init
install_tools ethtool:ethtool ping:iputils-ping taskset:util-linux python3:python3 \
    ss:iproute2 ip:iproute2 /usr/bin/time:time
python3 -c 'import pyarrow, duckdb' 2>/dev/null ||
    die "python3 needs pyarrow and duckdb: run scripts/install-deps.sh"
if [ -n "${WIRELAB_BIN:-}" ]; then WIRELAB="$WIRELAB_BIN"; SKIP_BUILD=1; fi
build_wirelab
freeze_wirelab
lab_up

# timed NAME CMD... — runs CMD under /usr/bin/time -v; appends
# "NAME seconds max_rss_kib" to $WORK/times.
timed() {
    local name="$1"; shift
    /usr/bin/time -v -o "$WORK/$name.time" "$@" >"$WORK/$name.out" 2>"$WORK/$name.err" ||
        { cat "$WORK/$name.err" >&2; die "$name failed"; }
    awk -v n="$name" '
        /Elapsed \(wall clock\)/ { split($NF, t, ":"); s = (length(t) == 3) ? t[1]*3600 + t[2]*60 + t[3] : t[1]*60 + t[2] }
        /Maximum resident set size/ { r = $NF }
        END { printf "%s %.3f %d\n", n, s, r }' "$WORK/$name.time" >>"$WORK/times"
}

# --- the records ----------------------------------------------------------
log "making $RECORDS records at $RATE (send --record, recv --record)"
bg "$NS_RX" recv taskset -c "$RX_CPU" "$WIRELAB" recv --port 7400 --quiet --timeout 600s \
    --record "$WORK/rx.wlr"
RECV_PID=$BG_PID
wait_port "$NS_RX" udp 7400
nstx taskset -c "$TX_CPU" "$WIRELAB" send "$IP_RX" --port 7400 --count "$RECORDS" \
    --rate "$RATE" --size 24 --quiet --record "$WORK/tx.wlr" >"$WORK/send.out"
for _ in $(seq 1 100); do kill -0 "$RECV_PID" 2>/dev/null || break; sleep 0.1; done
stop_pid "$RECV_PID" INT
# Whole records of a record file: (size - 20 - metadata length) / 64.
records_in() {
    python3 -c 'import os, struct, sys; f = sys.argv[1]; m = struct.unpack("<I", open(f, "rb").read(20)[16:20])[0]; print((os.path.getsize(f) - 20 - m) // 64)' "$1"
}
TX_RECORDS=$(records_in "$WORK/tx.wlr")
log "tx.wlr $(du -h "$WORK/tx.wlr" | cut -f1), rx.wlr $(du -h "$WORK/rx.wlr" | cut -f1)"
: >"$WORK/times"
LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)

# ## export ------------------------------------------------------------------
# wirelab export of the sender's file (N records) to Parquet and to CSV, and
# the joined export of both files (one row per probe sent); the peers turn
# wirelab's CSV of the same records into Parquet (snappy as wirelab):
# DuckDB's COPY ... TO (all CPUs) and pyarrow's CSV reader + writer.
log "export: wirelab parquet, csv, joined parquet; duckdb and pyarrow csv -> parquet"
timed wl-parquet "$WIRELAB" export "$WORK/tx.wlr" --format parquet -o "$WORK/wl.parquet"
timed wl-csv "$WIRELAB" export "$WORK/tx.wlr" -o "$WORK/wl.csv"
timed wl-joined "$WIRELAB" export "$WORK/tx.wlr" "$WORK/rx.wlr" --format parquet \
    -o "$WORK/joined.parquet"
timed duckdb python3 -c "
import duckdb, sys
duckdb.sql(\"COPY (SELECT * FROM read_csv('$WORK/wl.csv')) TO '$WORK/duckdb.parquet' (FORMAT parquet, COMPRESSION snappy)\")"
timed pyarrow python3 -c "
import pyarrow.csv as c, pyarrow.parquet as pq
pq.write_table(c.read_csv('$WORK/wl.csv'), '$WORK/pyarrow.parquet', compression='snappy')"
# Every output holds every record.
python3 - "$WORK" "$TX_RECORDS" <<'EOF'
import sys, pyarrow.parquet as pq
work, n = sys.argv[1], int(sys.argv[2])
for f in ["wl", "duckdb", "pyarrow"]:
    rows = pq.ParquetFile(f"{work}/{f}.parquet").metadata.num_rows
    assert rows == n, f"{f}.parquet has {rows} rows, not {n}"
EOF

echo "machine: $(nproc) CPUs, kernel $(uname -r), load before the exports: $LOAD_BEFORE"
echo "wirelab binary: built ${WIRELAB_BUILT:-?}; duckdb $(python3 -c 'import duckdb; print(duckdb.__version__)'), pyarrow $(python3 -c 'import pyarrow; print(pyarrow.__version__)')"
echo "records: $TX_RECORDS tx records ($RATE, 24-byte probes); rx.wlr $(records_in "$WORK/rx.wlr") records"
echo
echo "| job | s | M records/s | peak RSS MiB | output MiB |"
echo "|---|---|---|---|---|"
size_of() { case "$1" in
    wl-parquet) echo wl.parquet ;; wl-csv) echo wl.csv ;; wl-joined) echo joined.parquet ;;
    duckdb) echo duckdb.parquet ;; pyarrow) echo pyarrow.parquet ;; esac; }
while read -r name secs rss; do
    f="$WORK/$(size_of "$name")"
    awk -v n="$name" -v s="$secs" -v r="$rss" -v b="$(stat -c %s "$f")" -v k="$TX_RECORDS" \
        'BEGIN { printf "| %s | %.2f | %.2f | %.0f | %.0f |\n", n, s, k / s / 1e6, r / 1024, b / 1048576 }'
done <"$WORK/times"
echo
awk -v k="$TX_RECORDS" '
    { t[$1] = $2; m[$1] = $3 }
    END {
        printf "wirelab parquet: %.2f M records/s (goal >= 5)\n", k / t["wl-parquet"] / 1e6
        printf "time ratios (peer / wirelab parquet): duckdb %.2fx, pyarrow %.2fx; wirelab csv / parquet %.2fx\n",
            t["duckdb"] / t["wl-parquet"], t["pyarrow"] / t["wl-parquet"], t["wl-csv"] / t["wl-parquet"]
        printf "peak RSS ratios (peer / wirelab parquet): duckdb %.1fx, pyarrow %.1fx\n",
            m["duckdb"] / m["wl-parquet"], m["pyarrow"] / m["wl-parquet"]
    }' "$WORK/times"

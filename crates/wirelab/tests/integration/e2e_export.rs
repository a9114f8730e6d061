//! `wirelab export` end to end: a real send/recv pair between namespaces
//! with exact loss from nftables, joined per probe into Parquet and read
//! back by pyarrow; a real campaign exported as a dataset and queried by
//! DuckDB. The independent readers' counts and sums must equal wirelab's
//! own analysis and the record files.

use crate::common::bundle::{on_tx_rx, run_campaign, summary_rows};
use crate::common::files::{scratch, text};
use crate::common::{exe, flow, json, netns_available, run, wait_ok, Lab};
use serde_json::Value;
use std::collections::HashSet;
use std::io::BufReader;
use std::path::Path;
use std::process::{Command, Stdio};
use wirelab_wire::record::{RecordKind, RecordReader};

/// Runs a python script with `args`; its stdout as JSON.
fn python(script: &str, args: &[&Path]) -> Value {
    let out = run(Command::new("python3").arg("-c").arg(script).args(args));
    json(&out)
}

const PYARROW_JOINED: &str = r#"
import json, sys
import pyarrow.parquet as pq, pyarrow.compute as pc, pyarrow.csv as pcsv
t = pq.read_table(sys.argv[1])
c = pcsv.read_csv(sys.argv[2])
got = t.filter(pc.invert(t["lost"]))
print(json.dumps({
    "rows": t.num_rows,
    "lost": pc.sum(pc.cast(t["lost"], "int64")).as_py(),
    "lost_seqs": t.filter(t["lost"])["seq"].to_pylist(),
    "owd_sum": pc.sum(got["owd_ns"]).as_py(),
    "owd_min": pc.min(got["owd_ns"]).as_py(),
    "owd_max": pc.max(got["owd_ns"]).as_py(),
    "owd_nulls": t["owd_ns"].null_count,
    "duplicates": pc.sum(t["duplicates"]).as_py(),
    "types": {f.name: str(f.type) for f in t.schema},
    "columns": t.column_names,
    "csv_rows": c.num_rows,
    "csv_columns": c.column_names,
    "csv_lost": pc.sum(pc.cast(c["lost"], "int64")).as_py(),
    "csv_owd_sum": pc.sum(c["owd_ns"]).as_py(),
}))
"#;

/// The receiver's first arrival of each sequence number: one-way delays
/// from the record file itself.
fn owd_from_records(rx: &Path) -> (i64, i64, i64, u64) {
    let f = std::fs::File::open(rx).unwrap();
    let r = RecordReader::new(BufReader::new(f)).unwrap();
    let mut seen = HashSet::new();
    let (mut sum, mut min, mut max, mut n) = (0i64, i64::MAX, i64::MIN, 0u64);
    for rec in r {
        let rec = rec.unwrap();
        if rec.kind != RecordKind::Rx || !seen.insert((rec.flow, rec.seq)) {
            continue;
        }
        let owd = rec.rx_ns as i64 - rec.tx_ns as i64;
        sum += owd;
        min = min.min(owd);
        max = max.max(owd);
        n += 1;
    }
    (sum, min, max, n)
}

#[test]
fn joined_parquet_read_by_pyarrow_equals_analyze_and_the_records() {
    if !netns_available(&["nft"]) || !wirelab_testkit::require_python_modules(&["pyarrow"]) {
        return;
    }
    let lab = Lab::new();
    let port = 6201u16;
    // Every 100th datagram to the port dropped (numgen counts from 0: the
    // priming datagram and probes 99, 199, ..., 999).
    lab.drop_every_100th(port);
    let (tx_file, rx_file) = (lab.file("tx.wlr"), lab.file("rx.wlr"));
    let rx = lab
        .wirelab(&lab.r)
        .args(["recv", "--port", &port.to_string(), "--json", "--quiet"])
        .args(["--timeout", "30s", "--record"])
        .arg(&rx_file)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    lab.wait_udp(&lab.r, port);
    run(lab
        .wirelab(&lab.s)
        .args(["send", "198.18.0.2", "--port", &port.to_string()])
        .args(["--rate", "20kpps", "--size", "100", "--count", "1050"])
        .args(["--json", "--quiet", "--record"])
        .arg(&tx_file));
    wait_ok(rx);

    let an = json(&run(Command::new(exe())
        .args(["analyze", "--json"])
        .arg(&tx_file)
        .arg(&rx_file)));
    let f = flow(&an, 1);
    let (sent, lost) = (f["sent"].as_u64().unwrap(), f["lost"].as_u64().unwrap());
    assert_eq!((sent, lost), (1050, 10), "{f}");

    let (pq, csv) = (lab.file("joined.parquet"), lab.file("joined.csv"));
    let o = run(Command::new(exe())
        .args(["export", "--format", "parquet", "-o"])
        .arg(&pq)
        .arg(&rx_file)
        .arg(&tx_file));
    assert!(
        text(&o).contains("1050 probes sent, 1040 received, 10 lost"),
        "{}",
        text(&o)
    );
    run(Command::new(exe())
        .args(["export", "-o"])
        .arg(&csv)
        .arg(&tx_file)
        .arg(&rx_file));

    let p = python(PYARROW_JOINED, &[&pq, &csv]);
    assert_eq!(p["rows"], sent, "{p}");
    assert_eq!(p["lost"], lost, "{p}");
    assert_eq!(
        p["lost_seqs"],
        serde_json::json!((99..=999).step_by(100).collect::<Vec<u64>>())
    );
    let (sum, min, max, n) = owd_from_records(&rx_file);
    assert_eq!(n, 1040);
    assert_eq!(p["owd_sum"], sum, "{p}");
    assert_eq!(
        (p["owd_min"].as_i64(), p["owd_max"].as_i64()),
        (Some(min), Some(max))
    );
    assert_eq!(p["owd_nulls"], 10);
    assert_eq!(p["duplicates"], 0);
    let types = &p["types"];
    for (col, ty) in [
        ("flow", "uint32"),
        ("seq", "int64"),
        ("tx_ns", "int64"),
        ("rx_ns", "int64"),
        ("owd_ns", "int64"),
        ("lost", "bool"),
        ("tos", "uint8"),
    ] {
        assert_eq!(types[col], ty, "{col}: {types}");
    }
    // CSV has the same columns and values.
    assert_eq!(p["csv_columns"], p["columns"]);
    assert_eq!(
        (&p["csv_rows"], &p["csv_lost"], &p["csv_owd_sum"]),
        (&p["rows"], &p["lost"], &p["owd_sum"])
    );

    // One file: its records, every field.
    let one = lab.file("tx.parquet");
    run(Command::new(exe())
        .args(["export", "--format", "parquet", "-o"])
        .arg(&one)
        .arg(&tx_file));
    let t = python(
        "import json, sys, pyarrow.parquet as pq; t = pq.read_table(sys.argv[1]); \
         print(json.dumps({'rows': t.num_rows, 'kinds': sorted(set(t['kind'].to_pylist()))}))",
        &[&one],
    );
    assert_eq!(t["rows"], 1050);
    assert_eq!(t["kinds"], serde_json::json!(["tx"]));

    // Two receiver files are not a pair.
    let o = Command::new(exe())
        .arg("export")
        .arg(&rx_file)
        .arg(&rx_file)
        .output()
        .unwrap();
    assert!(!o.status.success());
    assert!(
        text(&o).contains("not a sender file and a receiver file"),
        "{}",
        text(&o)
    );
}

fn campaign() -> String {
    on_tx_rx(
        41,
        r#"
[campaign]
name = "exportds"
pause = "100ms"

[[flow]]
name = "up"
from = "tx"
to = "rx"
count = 300
interval = "1ms"

[sweep]
size = [64, 200]
"#,
    )
}

const DUCKDB_DATASET: &str = r#"
import json, sys, duckdb
d = sys.argv[1]
per_point = duckdb.sql(f"""
    SELECT point, count(*) AS sent,
           count(*) FILTER (WHERE NOT lost AND NOT warmup) AS received,
           min(size) AS size, min(flow_name) AS flow_name, sum(owd_ns) FILTER (WHERE NOT lost AND NOT warmup) AS owd_sum
    FROM read_parquet('{d}/packets/**/*.parquet', hive_partitioning = true)
    GROUP BY point ORDER BY point""").fetchall()
points = duckdb.sql(f"SELECT point, size, sent, received, lost FROM '{d}/points.parquet' ORDER BY point").fetchall()
print(json.dumps({"per_point": per_point, "points": points}))
"#;

#[test]
fn a_campaign_dataset_queried_by_duckdb_equals_its_summary() {
    if !netns_available(&[]) || !wirelab_testkit::require_python_modules(&["duckdb"]) {
        return;
    }
    let dir = scratch("export", "campaign");
    let (o, bundle) = run_campaign(&dir, &campaign(), &["-q"]);
    assert!(o.status.success(), "{}", text(&o));
    let rows = summary_rows(&bundle);
    assert_eq!(rows.len(), 2);

    let ds = dir.join("dataset");
    let o = run(Command::new(exe())
        .args(["export", "--format", "parquet", "-o"])
        .arg(&ds)
        .arg(&bundle));
    assert!(
        text(&o).contains("600 packets of 2 point(s)"),
        "{}",
        text(&o)
    );
    let q = python(DUCKDB_DATASET, &[&ds]);
    let per_point = q["per_point"].as_array().unwrap();
    assert_eq!(per_point.len(), 2, "{q}");
    for r in &rows {
        let id = r["point"].as_str().unwrap();
        let got = per_point
            .iter()
            .find(|p| p[0] == id)
            .unwrap_or_else(|| panic!("no point {id} in {q}"));
        assert_eq!(got[1], r["sent"], "{got} vs {r}");
        assert_eq!(got[2], r["received"], "{got} vs {r}");
        assert_eq!(got[3], r["params"]["size"], "{got} vs {r}");
        assert_eq!(got[4], "up");
        // DuckDB's sum of the one-way delays over what the summary counts
        // is the receiver's record file's, read here (rx − tx of each first
        // arrival, uncorrected, as the dataset holds them).
        let rx = bundle.join(format!("points/{id}/flows/up/rx.wlr"));
        let (sum, _, _, n) = owd_from_records(&rx);
        assert_eq!(got[2], n, "{got}");
        assert_eq!(got[5], sum, "DuckDB's owd sum vs the records': {got}");
        let summary = q["points"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p[0] == id)
            .unwrap();
        assert_eq!(
            (&summary[1], &summary[2], &summary[3], &summary[4]),
            (&r["params"]["size"], &r["sent"], &r["received"], &r["lost"])
        );
    }

    // An existing output directory, a directory that is no bundle, a
    // sender and a receiver file of two points: errors that say so.
    let fails = |args: &[&Path]| {
        let o = Command::new(exe())
            .args(["export", "--format", "parquet", "-o"])
            .args(args)
            .output()
            .unwrap();
        assert!(!o.status.success());
        text(&o)
    };
    assert!(fails(&[&ds, &bundle]).contains("exists"));
    assert!(fails(&[&dir.join("other"), &dir]).contains("not a results directory"));
    let ids: Vec<&str> = rows.iter().map(|r| r["point"].as_str().unwrap()).collect();
    let f = |id: &str, which: &str| bundle.join(format!("points/{id}/flows/up/{which}.wlr"));
    let e = fails(&[&dir.join("x.parquet"), &f(ids[0], "tx"), &f(ids[1], "rx")]);
    assert!(e.contains("is not from the run of"), "{e}");
    std::fs::remove_dir_all(&dir).unwrap();
}

use super::*;
use crate::files;
use bytes::Bytes;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use wirelab_wire::record::Role;
use wirelab_wire::{Record, RecordKind};

fn write_records(path: &Path, role: Role, kind: RecordKind, seqs: impl Iterator<Item = u64>) {
    let base = 1_700_000_000_000_000_000u64;
    let recs: Vec<Record> = seqs.map(|seq| files::tests::rec(kind, seq, base)).collect();
    files::tests::write(path, role, &recs, &[]);
}

/// Rows and columns of a Parquet file.
fn table(path: &Path) -> (usize, Vec<String>) {
    let b = ParquetRecordBatchReaderBuilder::try_new(Bytes::from(std::fs::read(path).unwrap()))
        .unwrap();
    let cols = b
        .schema()
        .fields()
        .iter()
        .map(|f| f.name().clone())
        .collect();
    let rows = b.build().unwrap().map(|r| r.unwrap().num_rows()).sum();
    (rows, cols)
}

/// A bundle of two points: `p1` with one flow's records (200 sent, 20
/// lost), `p2` whose flow has no files.
fn bundle(dir: &Path, summary: bool) -> Vec<Point> {
    let p1 = dir.join("points/p1");
    std::fs::create_dir_all(&p1).unwrap();
    std::fs::create_dir_all(dir.join("points/p2")).unwrap();
    write_records(&p1.join("tx.wlr"), Role::Sender, RecordKind::Tx, 0..200);
    let rx = (0..200).filter(|s| s % 10 != 3);
    write_records(&p1.join("rx.wlr"), Role::Receiver, RecordKind::Rx, rx);
    if summary {
        let rows = r#"{"rows": [{"point": "p1", "flow": "f", "sent": 200, "params": {"loss": "1%", "rate": 10}},
                                {"point": "p2", "flow": "f", "sent": null, "params": {"loss": "2%", "rate": 20}}]}"#;
        std::fs::write(dir.join("summary.json"), rows).unwrap();
        std::fs::write(dir.join("summary.csv"), "point,flow,sent,loss,rate\n").unwrap();
    }
    let point = |id: &str, loss: &str, rate: i64, files: bool| Point {
        dir: dir.join("points").join(id),
        id: id.into(),
        status: "done".into(),
        params: [
            ("loss".into(), Value::from(loss)),
            ("rate".into(), Value::from(rate)),
        ]
        .into(),
        flows: vec![FlowFiles {
            name: "f".into(),
            tx: files.then(|| "tx.wlr".into()),
            rx: files.then(|| "rx.wlr".into()),
        }],
    };
    vec![point("p1", "1%", 10, true), point("p2", "2%", 20, false)]
}

fn tmpdir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("wl-export-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Nothing but `keep` in `dir`: no output, no hidden partial directory.
fn only(dir: &Path, keep: &[&str]) -> bool {
    std::fs::read_dir(dir)
        .unwrap()
        .all(|e| keep.contains(&e.unwrap().file_name().to_str().unwrap()))
}

fn no_summary() -> Result<(String, String), BundleError> {
    Err("no summary to derive".into())
}

#[test]
fn point_ids_and_parameter_names() {
    assert!(safe_id("92f4d4c36f5315c5") && safe_id("a-b_c.1"));
    for bad in ["", "..", ".x", "a/b", "a=b", "a b"] {
        assert!(!safe_id(bad), "{bad}");
    }
    assert_eq!(param_column("loss"), "loss");
    assert_eq!(param_column("tos"), "param_tos");
    assert_eq!(param_column("point"), "param_point");
}

#[test]
fn a_campaign_becomes_packet_partitions_and_a_points_table() {
    let d = tmpdir("campaign");
    let points = bundle(&d.join("bundle"), true);
    let out = d.join("ds");
    let mut notes = Vec::new();
    let w = export(
        &d.join("bundle"),
        &out,
        &points,
        no_summary,
        JoinConfig::default(),
        &mut |n| notes.extend(n.lines()),
    )
    .unwrap();
    assert_eq!((w.packets, w.parts, w.points), (200, 1, 2));
    assert_eq!(
        w.to_string(),
        format!(
            "{}: 200 packets of 1 point(s) in packets/point=<id>/part-0.parquet, 2 point(s) in points.parquet",
            out.display()
        )
    );
    assert_eq!(
        notes,
        [
            "point p2 flow f: no sender and receiver record files (status done): not in packets/, \
          still in points.parquet"
        ]
    );
    let (rows, cols) = table(&out.join("packets/point=p1/part-0.parquet"));
    assert_eq!(rows, 200);
    assert!(
        cols.ends_with(&["loss".into(), "rate".into(), "flow_name".into()]),
        "{cols:?}"
    );
    let (rows, cols) = table(&out.join("points.parquet"));
    assert_eq!(
        (rows, cols),
        (
            2,
            vec!["point", "flow", "sent", "loss", "rate"]
                .into_iter()
                .map(String::from)
                .collect()
        )
    );
    assert!(only(&d, &["bundle", "ds"]));
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn a_failed_campaign_export_leaves_no_output() {
    let d = tmpdir("campaign-fail");
    let mut points = bundle(&d.join("bundle"), false);
    let out = d.join("ds");
    let run = |points: &[Point]| {
        export(
            &d.join("bundle"),
            &out,
            points,
            no_summary,
            JoinConfig::default(),
            &mut |_| {},
        )
    };
    // No summary and none to derive: fails after the packets were written.
    let e = run(&points).unwrap_err();
    assert!(matches!(e, CampaignError::Summary(_)), "{e}");
    assert!(only(&d, &["bundle"]));
    // A point id that is not a plain name.
    points[1].id = "../x".into();
    let e = run(&points).unwrap_err();
    assert!(
        e.to_string()
            .contains("point id \"../x\" is not a plain name"),
        "{e}"
    );
    assert!(only(&d, &["bundle"]));
    // A receiver file of another run.
    points[1].id = "p2".into();
    let p1 = d.join("bundle/points/p1");
    std::fs::write(p1.join("rx.wlr"), b"hello").unwrap();
    assert!(run(&points).is_err());
    assert!(only(&d, &["bundle"]));
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn a_campaign_export_goes_to_a_new_parquet_directory() {
    let d = tmpdir("campaign-check");
    let e = check_request(&d, false, Some(&d.join("x"))).unwrap_err();
    assert!(e
        .to_string()
        .contains("is a directory: a campaign's results export as a Parquet dataset"));
    assert!(matches!(
        check_request(&d, true, None),
        Err(CampaignError::NoOutput)
    ));
    let e = check_request(&d, true, Some(&d)).unwrap_err();
    assert_eq!(
        e.to_string(),
        format!(
            "{} exists: give -o a new directory (the export does not mix with older files)",
            d.display()
        )
    );
    assert_eq!(
        check_request(&d, true, Some(&d.join("x"))).unwrap(),
        d.join("x")
    );
    std::fs::remove_dir_all(&d).unwrap();
}

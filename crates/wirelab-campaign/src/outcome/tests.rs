use super::*;
use crate::bundle::{PointFile, PointStatus};
use std::collections::BTreeMap;

fn point(id: &str, status: PointStatus) -> PointFile {
    let params = BTreeMap::from([("loss".to_string(), crate::expr::Value::Str("1%".into()))]);
    PointFile {
        status,
        reason: (status == PointStatus::Aborted).then(|| "lost > 10".to_string()),
        flows: vec![crate::bundle::tests::planned_flow("sut", 1000)],
        ..PointFile::begun(id.into(), 2, 0, params, 0)
    }
}

fn outcome(dir: &Path) -> Outcome {
    Outcome {
        dir: dir.to_path_buf(),
        done: 3,
        aborted: 1,
        failed: 0,
        skipped: 2,
        searched_out: 0,
        interrupted: false,
        failure: None,
    }
}

#[test]
fn a_flow_is_a_line_and_the_outcome_one_more() {
    let p = point("92f4d4c36f5315c5", PointStatus::Aborted);
    let mut rows = bundle::point_rows(Path::new("/nonexistent-wirelab"), &p);
    assert_eq!(rows.len(), 1);
    let r = &mut rows[0];
    (r.sent, r.received, r.lost, r.lost_by_sequence) = (Some(1000), Some(990), Some(10), Some(9));
    (r.owd_p99_ns, r.owd_max_ns, r.owd_uncertainty_ns) = (Some(71_300), Some(90_000), Some(1_500));
    let s = Summary {
        schema: "wirelab.run.summary/1".into(),
        points: 1,
        done: 0,
        aborted: 1,
        failed: 0,
        interrupted: 0,
        rows,
    };
    assert_eq!(
        summary_text(&s),
        "   3 92f4d4c36f5315c5 aborted     sut        sent     1000 recv      990 lost     10 \
         (by seq 9) owd p99 71.3us max 90.0us ±1.5us  loss=1%  [lost > 10]\n"
    );
    let o = outcome(Path::new("results/q"));
    assert_eq!(
        o.to_string(),
        "results: results/q (3 done, 1 aborted, 0 failed, 2 done before)"
    );
    let j = report_json(&o, &s);
    assert_eq!(j["schema"], SCHEMA);
    assert_eq!(
        (j["exit_code"].as_i64(), j["skipped"].as_u64()),
        (Some(3), Some(2))
    );
    assert_eq!(j["summary"]["rows"][0]["point"], "92f4d4c36f5315c5");
    let keys: Vec<&String> = j.as_object().unwrap().keys().collect();
    let mut sorted = keys.clone();
    sorted.sort();
    assert_eq!(keys, sorted);
}

#[test]
fn a_rederived_summary_is_compared_with_the_stored_one() {
    let d = std::env::temp_dir().join(format!("wirelab-outcome-{}", std::process::id()));
    let pdir = d.join("points/p1");
    std::fs::create_dir_all(&pdir).unwrap();
    let p = point("p1", PointStatus::Done);
    std::fs::write(pdir.join("point.json"), serde_json::to_vec(&p).unwrap()).unwrap();
    let r = rederive(&d).unwrap();
    assert_eq!((r.summary.points, r.summary.done), (1, 1));
    assert!(r.warning().is_none());
    std::fs::write(d.join("summary.json"), &r.json).unwrap();
    assert!(rederive(&d).unwrap().differs_from.is_none());
    std::fs::write(d.join("summary.json"), "{}").unwrap();
    assert_eq!(
        rederive(&d).unwrap().warning().unwrap(),
        format!(
            "the summary re-derived from the records differs from {}",
            d.join("summary.json").display()
        )
    );
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn progress_and_end_notes_name_the_point_and_what_to_do() {
    let p = crate::sweep::Point {
        id: "92f4d4c36f5315c5".into(),
        index: 0,
        repetition: 0,
        params: BTreeMap::from([
            ("loss".to_string(), crate::expr::Value::Str("1%".into())),
            ("size".to_string(), crate::expr::Value::Int(80)),
        ]),
    };
    assert_eq!(point_label(&p), "92f4d4c36f5315c5 loss=1% size=80");
    assert_eq!(
        ended_note(&p, PointStatus::Aborted, Some("lost > 10")),
        "92f4d4c36f5315c5 aborted: lost > 10"
    );
    assert_eq!(
        ended_note(&p, PointStatus::Done, None),
        "92f4d4c36f5315c5 done"
    );
    let dir = Path::new("results/q");
    assert_eq!(
        started_line(4, 0, dir),
        "wirelab run: 4 point(s) -> results/q"
    );
    assert_eq!(
        started_line(4, 1, dir),
        "wirelab run: 4 point(s) (1 done before) -> results/q"
    );
    let mut o = outcome(dir);
    assert!(o.end_notes().is_empty());
    (o.interrupted, o.failure) = (true, Some("agent rx lost".into()));
    assert_eq!(
        o.end_notes(),
        [
            "error: agent rx lost",
            "interrupted: continue with --resume results/q"
        ]
    );
}

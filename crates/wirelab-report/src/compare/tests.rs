use super::*;
use crate::inputs::{compare_page, InputError, PageKind};
use wirelab_analysis::compare::Settings;
use wirelab_analysis::schema::run::{PointStatus, SummaryRow, SUMMARY_SCHEMA};

const CONTROL: &str = r#"
[campaign]
name = "q"
[[flow]]
name = "probe"
count = 2000
[emulate]
stages = "delay 1ms loss {loss}"
[sweep]
loss = ["0%", "1%"]
socket = ["udp", "raw"]
"#;

/// A done row of flow `probe` at `loss` and `socket`.
fn row(loss: &str, socket: &str, rep: u32, loss_ratio: f64, owd: f64) -> SummaryRow {
    let mut r: SummaryRow = serde_json::from_value(serde_json::json!({
        "point": format!("{loss}{socket}{rep}"), "status": "done", "flow": "probe",
    }))
    .unwrap();
    r.repetition = rep;
    r.params.insert("loss".into(), ParamValue::Str(loss.into()));
    r.params
        .insert("socket".into(), ParamValue::Str(socket.into()));
    r.loss_ratio = Some(loss_ratio);
    r.owd_mean_ns = Some(owd);
    r.throughput_bps = Some(1.6e6 * (1.0 - loss_ratio));
    r
}

/// A bundle in `dir`: its summary.json (through the serde types), an
/// empty points/, and `control` as control.toml.
fn bundle(dir: &Path, rows: Vec<SummaryRow>, control: &str) {
    std::fs::create_dir_all(dir.join("points")).unwrap();
    let done = rows
        .iter()
        .filter(|r| r.status == PointStatus::Done)
        .count();
    let s = Summary {
        schema: SUMMARY_SCHEMA.into(),
        points: rows.len(),
        done,
        aborted: rows.len() - done,
        failed: 0,
        interrupted: 0,
        rows,
    };
    std::fs::write(dir.join("summary.json"), s.to_json()).unwrap();
    std::fs::write(dir.join("control.toml"), control).unwrap();
}

fn scratch(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("wl-compare-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[test]
fn two_bundles_give_typed_rows_and_a_page_with_them() {
    let d = scratch("two");
    let (a, b) = (d.join("a"), d.join("b"));
    let owd = [1000.0, 1012.0, 991.0];
    bundle(
        &a,
        (0..3)
            .map(|i| {
                row(
                    "1%",
                    "udp",
                    i,
                    0.010 + 0.001 * f64::from(i),
                    owd[i as usize],
                )
            })
            .chain([row("1%", "raw", 0, 0.01, 1000.0)])
            .collect(),
        CONTROL,
    );
    let mut aborted = row("3%", "udp", 3, 0.4, 5000.0);
    aborted.status = PointStatus::Aborted;
    bundle(
        &b,
        (0..3)
            .map(|i| {
                row(
                    "3%",
                    "udp",
                    i,
                    0.030 + 0.001 * f64::from(i),
                    owd[2 - i as usize] + 3.0,
                )
            })
            .chain([aborted])
            .collect(),
        &CONTROL.replace("count = 2000", "count = 1000"),
    );
    let out = d.join("c.html");
    let (page, report) =
        compare_page(&[a.clone(), b.clone()], &out, None, &Settings::default()).unwrap();
    // The JSON document: the loss significant, the OWD not.
    let json = serde_json::to_value(&report).unwrap();
    assert_eq!(json["schema"], "wirelab.report.compare/1");
    let rows = json["rows"].as_array().unwrap();
    let get = |m: &str| rows.iter().find(|r| r["metric"] == m).unwrap();
    assert_eq!(get("loss_ratio")["significant"], true);
    assert!(get("loss_ratio")["difference"].as_f64().unwrap() > 0.0);
    assert_eq!(get("loss_ratio")["params"]["socket"], "udp");
    assert_eq!(get("loss_ratio")["a"]["n"], 3);
    assert_eq!(get("owd_mean_ns")["significant"], false);
    assert_eq!(json["bundles"][1]["fixed"]["loss"], "3%");
    assert_eq!(json["only_in"][0]["bundles"][0], "A");
    assert_eq!(json["control_differences"][0], "flow.0.count");
    let back: CompareReport = serde_json::from_value(json).unwrap();
    assert_eq!(back, report);
    // The warnings name the differing key and the unmatched point.
    assert!(page.warnings.iter().any(|w| w.contains("flow.0.count")));
    assert!(page.warnings.iter().any(|w| w.contains("only some")));
    assert_eq!(
        page.kind,
        PageKind::Compare {
            rows: report.comparison.rows.len(),
            significant: report
                .comparison
                .rows
                .iter()
                .filter(|r| r.significant)
                .count()
        }
    );
    // The page: a row per point and metric, the mark, a figure per metric.
    let html = &page.html;
    assert_eq!(
        html.matches("<td class=\"l\">socket=udp probe</td>")
            .count(),
        report.comparison.rows.len()
    );
    assert!(html.contains("<td class=\"l\">loss</td>"));
    assert!(html.contains("<td class=\"l\">*</td>"));
    assert!(html.contains("<td class=\"l\">socket=raw probe</td><td class=\"l\">A</td>"));
    for m in [Metric::LossRatio, Metric::OwdMeanNs, Metric::ThroughputBps] {
        assert!(
            html.contains(&format!("<h3>{}</h3>", figure_title(m))),
            "{m:?}"
        );
    }
    assert!(html.contains("A loss=1%") && html.contains("B loss=3%"));
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn a_directory_that_is_not_a_bundle_is_named() {
    let d = scratch("notbundle");
    bundle(&d.join("a"), vec![row("1%", "udp", 0, 0.01, 1.0)], CONTROL);
    let e = compare_page(
        &[d.join("a"), d.clone()],
        &d.join("c.html"),
        None,
        &Settings::default(),
    )
    .unwrap_err();
    assert!(
        matches!(&e, InputError::NotABundle { path } if path == &d),
        "{e}"
    );
    assert!(e
        .to_string()
        .contains("needs a `wirelab run` results directory"));
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn control_files_differ_only_outside_the_sweep() {
    let a = flatten_control(CONTROL).unwrap();
    assert_eq!(a["flow.0.count"], "2000");
    assert_eq!(a["emulate.stages"], "\"delay 1ms loss {loss}\"");
    assert_eq!(a["sweep.loss.1"], "\"1%\"");
    let b = flatten_control(&CONTROL.replace("\"1%\"]", "\"3%\"]")).unwrap();
    assert!(differing_keys(&a, &b).is_empty());
    let c =
        flatten_control(&CONTROL.replace("name = \"q\"", "name = \"r\"\npause = \"1s\"")).unwrap();
    assert_eq!(
        differing_keys(&a, &c),
        vec!["campaign.name", "campaign.pause"]
    );
    assert!(flatten_control("[x").is_err());
}

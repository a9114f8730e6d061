//! `wirelab report --compare`: examples/run/quickstart.toml run twice, at
//! 1 % and 3 % emulated loss with three repetitions each; the comparison
//! finds the loss difference significant and none in one-way delay (the
//! emulator's delay is the same in both). The two campaigns run at the
//! same time, each in its own namespaces, so that the machine's load
//! weighs on both alike: run one after the other, a change of load between
//! them is a real difference in delay, and the comparison rightly says so.

use crate::common::bundle::the_bundle;
use crate::common::files::{scratch, text};
use crate::common::{exe, netns_available};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

/// quickstart at `loss`, UDP only, three repetitions, started: its
/// results directory and the process.
fn quickstart(dir: &Path, loss: &str) -> (PathBuf, Child) {
    let results = dir.join(format!("results-{}", loss.trim_end_matches('%')));
    let control = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/run/quickstart.toml");
    let loss = format!("loss={loss}");
    let child = Command::new(exe())
        .arg("run")
        .arg(&control)
        .arg("--results")
        .arg(&results)
        .args(["-q", "--set", &loss, "--set", "socket=udp"])
        .args(["--set", "campaign.repetitions=3"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    (results, child)
}

/// The bundle of a campaign [`quickstart`] started, once it ended well.
fn bundle_of((results, child): (PathBuf, Child)) -> PathBuf {
    let o = child.wait_with_output().unwrap();
    assert!(o.status.success(), "{}", text(&o));
    the_bundle(&results)
}

#[test]
fn one_and_three_percent_loss_differ_in_loss_not_in_delay() {
    if !netns_available(&[]) {
        return;
    }
    let dir = scratch("compare", "quickstart");
    let (a, b) = (quickstart(&dir, "1%"), quickstart(&dir, "3%"));
    let (a, b) = (bundle_of(a), bundle_of(b));
    let page = dir.join("compare.html");
    // At 99.9 %: the test must not fail the one time in twenty a 95 %
    // interval calls equal delays different (the interval is never narrower
    // than Welch's t interval, which keeps that level with 3 repetitions).
    let o = Command::new(exe())
        .args(["report", "--json", "--confidence", "0.999", "-o"])
        .arg(&page)
        .arg("--compare")
        .args([&a, &b])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let stderr = String::from_utf8_lossy(&o.stderr);
    // The same control file: nothing to warn about.
    assert!(!stderr.contains("warning"), "{}", text(&o));
    assert!(stderr.contains("report: "), "{}", text(&o));
    let report: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(report["schema"], "wirelab.report.compare/1");
    assert_eq!(report["confidence"], 0.999);
    assert_eq!(report["bundles"][0]["fixed"]["loss"], "1%");
    assert_eq!(report["bundles"][1]["fixed"]["loss"], "3%");
    let rows = report["rows"].as_array().unwrap();
    let get = |m: &str| {
        rows.iter()
            .find(|r| r["metric"] == m && r["flow"] == "probe")
            .unwrap_or_else(|| panic!("no {m} row: {report:#}"))
    };
    let loss = get("loss_ratio");
    assert_eq!(
        (loss["a"]["n"].as_u64(), loss["b"]["n"].as_u64()),
        (Some(3), Some(3))
    );
    assert_eq!(loss["significant"], true, "{loss:#}");
    // 3 % − 1 % emulated: about 0.02 more of the probes lost.
    let d = loss["difference"].as_f64().unwrap();
    assert!((0.01..0.03).contains(&d), "{loss:#}");
    let owd = get("owd_mean_ns");
    assert_eq!(owd["significant"], false, "{owd:#}");
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.contains("<td class=\"l\">*</td>"));
    assert!(html.contains("A loss=1%") && html.contains("B loss=3%"));
    std::fs::remove_dir_all(&dir).unwrap();
}

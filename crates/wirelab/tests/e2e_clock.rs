//! Clock offset between hosts, end to end (docs/run.md, "Clock offset
//! between hosts"): `wirelab run` through an emulator that delays every
//! packet 5 ms, without and with a 3 ms offset injected on one agent (its
//! test hook), in both directions at once. The bundle must carry the offset
//! within its uncertainty, the corrected one-way delays, a common start
//! once the offsets are taken out, and relative delays only when the
//! uncertainty is over the campaign's limit.

mod common;

use common::bundle::{derives_again, run_campaign, summary_rows};
use common::files::{json_file, schedule_start, scratch, text};
use common::{exe, netns_available};
use serde_json::Value;
use std::io::BufReader;
use std::path::Path;
use std::process::Command;

const MS: f64 = 1e6;

/// The summary rows by flow name.
fn rows(b: &Path) -> std::collections::BTreeMap<String, Value> {
    summary_rows(b)
        .into_iter()
        .map(|r| (r["flow"].as_str().unwrap().to_string(), r))
        .collect()
}

/// Two hosts across an emulator that delays 5 ms each way; a flow each
/// way from one T0; `extra_rx` goes into the rx host's table.
fn control(name: &str, extra_rx: &str, campaign_extra: &str) -> String {
    format!(
        r#"
[campaign]
name = "{name}"
{campaign_extra}

[lab]
namespaces = ["tx", "emu", "rx"]
links = [
  {{ a = "tx", b = "emu", a_addr = "198.18.41.1/24", ipv6 = false }},
  {{ a = "emu", b = "rx", b_addr = "198.18.41.2/24", ipv6 = false, a_if = "emu1", b_if = "rx0" }},
]

[hosts]
tx = {{ transport = "lab:tx" }}
emu = {{ transport = "lab:emu" }}
rx = {{ transport = "lab:rx"{extra_rx} }}

[[flow]]
name = "up"
from = "tx"
to = "rx"
count = 400
interval = "1ms"

[[flow]]
name = "down"
from = "rx"
to = "tx"
count = 400
interval = "1ms"

[emulate]
host = "emu"
ifaces = ["tx", "emu1"]
stages = "delay 5ms"
"#
    )
}

/// Checks one flow's row: every probe through, θ within `theta` ± U, the
/// corrected OWD on the path's 5 ms ± U; returns U.
fn check_flow(r: &Value, theta_ns: i64) -> u64 {
    for (k, v) in [("sent", 400), ("received", 400), ("lost", 0)] {
        assert_eq!(r[k], v, "{k}: {r}");
    }
    assert_eq!(r["owd_relative"], false, "{r}");
    let u = r["owd_uncertainty_ns"].as_u64().unwrap();
    // The performance target on one machine's namespaces is 50 µs; a
    // loaded 2-core machine gets a generous margin (the probes' round trip
    // through `ip netns exec` pipes is what U measures).
    assert!(u > 0 && u <= 1_000_000, "U {u} ns: {r}");
    let theta = r["owd_offset_ns"].as_i64().unwrap();
    assert!(
        (theta - theta_ns).unsigned_abs() <= u,
        "θ {theta} ns, want {theta_ns} ± {u}: {r}"
    );
    // Corrected by an estimate good to ± U, the fastest probe crossed the
    // emulator's 5 ms in at most 0.5 ms more (uncorrected, a 3 ms offset
    // puts it near 8 or 2 ms). The mean also carries the emulator's and
    // the senders' lateness under CPU contention (bench/run.sh measures it
    // on a quiet machine): here it is only bounded below.
    let (lo, hi) = (5.0 * MS - u as f64, 5.5 * MS + u as f64);
    let min = r["owd_min_ns"].as_i64().unwrap() as f64;
    assert!(
        (lo..=hi).contains(&min),
        "min OWD {min} ns not in [{lo}, {hi}] ns: {r}"
    );
    let mean = r["owd_mean_ns"].as_f64().unwrap();
    assert!(mean >= lo, "mean OWD {mean} ns below {lo} ns: {r}");
    u
}

/// The senders' starts, each moved onto the controller's clock with its
/// host's offset: within 1 ms of each other (uncorrected, or with T0 given
/// to every host unconverted, a 3 ms offset puts them 3 ms apart).
fn check_common_start(b: &Path) {
    let points = wirelab_campaign::bundle::read_points(b).unwrap();
    assert_eq!(points.len(), 1);
    let (pdir, p) = &points[0];
    let mut starts = vec![];
    for f in &p.flows {
        let c = f.clock.as_ref().unwrap();
        let file = json_file(&pdir.join(c.file.as_ref().unwrap()));
        assert_eq!(file["schema"], "wirelab.run.clock/1");
        assert_eq!(file["a"]["host"], f.from.as_str());
        // θ of the sender's host at T0 (its clock minus the controller's).
        let theta_a = file["a"]["line"]["offset_ns"].as_i64().unwrap();
        let first = schedule_start(&pdir.join(f.tx.as_ref().unwrap()), 1_000_000);
        starts.push(first as i64 - theta_a);
    }
    let gap = (starts[0] - starts[1]).unsigned_abs();
    assert!(gap <= 1_000_000, "starts {starts:?}: {gap} ns apart");
}

#[test]
fn owd_through_a_5ms_emulator_is_absolute_with_its_uncertainty() {
    if !netns_available(&[]) {
        return;
    }
    let dir = scratch("clock", "plain");
    let (o, b) = run_campaign(&dir, &control("clockplain", "", ""), &["-q"]);
    assert!(o.status.success(), "{}", text(&o));
    let rows = rows(&b);
    for f in ["up", "down"] {
        check_flow(&rows[f], 0);
    }
    check_common_start(&b);
    derives_again(&b);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn an_injected_3ms_offset_is_recovered_and_corrected_both_ways() {
    if !netns_available(&[]) {
        return;
    }
    let dir = scratch("clock", "offset");
    let extra = r#", test_clock_offset = "3ms""#;
    let (o, b) = run_campaign(&dir, &control("clockoffset", extra, ""), &["-q"]);
    assert!(o.status.success(), "{}", text(&o));
    let rows = rows(&b);
    // rx's clock is 3 ms ahead: +3 ms from tx to rx, −3 ms back.
    check_flow(&rows["up"], 3_000_000);
    check_flow(&rows["down"], -3_000_000);
    // The records themselves carry the offset: uncorrected, up would be
    // 8 ms and down 2 ms.
    let points = wirelab_campaign::bundle::read_points(&b).unwrap();
    let (pdir, p) = &points[0];
    let up = p.flows.iter().find(|f| f.name == "up").unwrap();
    let file = json_file(&pdir.join(up.clock.as_ref().unwrap().file.as_ref().unwrap()));
    let before_b = file["b"]["before"]["offset_ns"].as_i64().unwrap();
    assert!((before_b - 3_000_000).abs() < 1_000_000, "{file}");
    check_common_start(&b);
    derives_again(&b);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn over_the_uncertainty_limit_only_relative_owd_is_published() {
    if !netns_available(&[]) {
        return;
    }
    let dir = scratch("clock", "relative");
    let (o, b) = run_campaign(
        &dir,
        &control("clockrel", "", r#"owd_uncertainty_max = "1ns""#),
        &["-q"],
    );
    assert!(o.status.success(), "{}", text(&o));
    let rel = rows(&b);
    for (name, r) in &rel {
        assert_eq!(r["owd_relative"], true, "{name}: {r}");
        assert!(r["owd_uncertainty_ns"].as_u64().unwrap() > 1, "{r}");
        assert_eq!(r["owd_min_ns"], 0, "{r}");
    }
    derives_again(&b);
    // The same records with the limit lifted (point.json edited, summary
    // derived again): the relative figures are the absolute ones − min,
    // and the absolute minimum holds the path's 5 ms.
    let points = wirelab_campaign::bundle::read_points(&b).unwrap();
    let (pdir, mut p) = points.into_iter().next().unwrap();
    for f in p.flows.iter_mut() {
        f.clock.as_mut().unwrap().relative = false;
    }
    std::fs::write(
        pdir.join("point.json"),
        serde_json::to_vec_pretty(&p).unwrap(),
    )
    .unwrap();
    let o = Command::new(exe())
        .args(["analyze", b.to_str().unwrap(), "--json"])
        .output()
        .unwrap();
    let abs: Value = serde_json::from_slice(&o.stdout).unwrap();
    for a in abs["rows"].as_array().unwrap() {
        let r = &rel[a["flow"].as_str().unwrap()];
        assert_eq!(a["owd_relative"], false, "{a}");
        let min = a["owd_min_ns"].as_i64().unwrap();
        let u = r["owd_uncertainty_ns"].as_f64().unwrap();
        assert!(min as f64 >= 5.0 * MS - u, "{a}");
        let mean = a["owd_mean_ns"].as_f64().unwrap() - min as f64;
        assert!(
            (mean - r["owd_mean_ns"].as_f64().unwrap()).abs() < 1e-3,
            "{a}\n{r}"
        );
        for k in ["owd_max_ns", "owd_p99_ns", "owd_p999_ns"] {
            assert_eq!(a[k].as_i64().unwrap() - min, r[k].as_i64().unwrap(), "{k}");
        }
    }
    let csv = std::fs::read_to_string(b.join("summary.csv")).unwrap();
    assert!(csv
        .lines()
        .next()
        .unwrap()
        .contains(",owd_uncertainty_ns,owd_relative,"));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_agent_test_hook_shifts_its_realtime_answers() {
    use std::io::Write;
    let mut child = Command::new(exe())
        .args(["agent", "--stdio", "--test-clock-offset", "-3ms"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let before = wirelab_io::clock::real_ns();
    writeln!(stdin, r#"{{"id":1,"op":"time"}}"#).unwrap();
    let mut line = String::new();
    std::io::BufRead::read_line(&mut BufReader::new(child.stdout.take().unwrap()), &mut line)
        .unwrap();
    let after = wirelab_io::clock::real_ns();
    drop(stdin);
    assert!(child.wait().unwrap().success());
    let v: Value = serde_json::from_str(&line).unwrap();
    assert_eq!(v["kind"], "time", "{line}");
    let t = v["realtime_ns"].as_u64().unwrap() as i64 + 3_000_000;
    // Its clock, 3 ms back, was read between our two reads.
    assert!(
        t >= before as i64 && t <= after as i64,
        "{t} not in [{before}, {after}]"
    );
}

//! Clock offset between hosts, end to end (docs/run.md, "Clock offset
//! between hosts"): `wirelab run` through an emulator that delays every
//! packet 5 ms, without and with a 3 ms offset injected on one agent (its
//! test hook), in both directions at once. The bundle must carry the offset
//! within its uncertainty, the corrected one-way delays, a common start
//! once the offsets are taken out, and relative delays only when the
//! uncertainty is over the campaign's limit.

use crate::common::bundle::{check_common_start, derives_again, run_campaign, summary_rows};
use crate::common::files::{json_file, scratch, text};
use crate::common::{exe, netns_available};
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
/// corrected OWD never below the path's 5 ms − U; returns U. Nothing here
/// bounds a real timing from above: how small U comes out and how close
/// to 5 ms the fastest probe is depend on the machine's load, and are
/// checked on a virtual clock with injected delays and noise instead
/// (wirelab-campaign's clocks/tests_virtual.rs) and measured by bench/run.sh.
fn check_flow(r: &Value, theta_ns: i64) -> u64 {
    for (k, v) in [("sent", 400), ("received", 400), ("lost", 0)] {
        assert_eq!(r[k], v, "{k}: {r}");
    }
    assert_eq!(r["owd_relative"], false, "{r}");
    let u = r["owd_uncertainty_ns"].as_u64().unwrap();
    assert!(u > 0, "U {u} ns: {r}");
    // The true offset lies within θ ± U whatever the probes' delays (a
    // slow probe widens U, it cannot move θ outside it): no load flakes it.
    let theta = r["owd_offset_ns"].as_i64().unwrap();
    assert!(
        (theta - theta_ns).unsigned_abs() <= u,
        "θ {theta} ns, want {theta_ns} ± {u}: {r}"
    );
    // The emulator holds every probe at least 5 ms; corrected by an
    // estimate good to ± U, none can come out faster (uncorrected, a 3 ms
    // offset puts the down flow near 2 ms). Lateness only adds.
    let lo = 5.0 * MS - u as f64;
    let min = r["owd_min_ns"].as_i64().unwrap() as f64;
    assert!(min >= lo, "min OWD {min} ns below {lo} ns: {r}");
    let mean = r["owd_mean_ns"].as_f64().unwrap();
    assert!(mean >= min, "mean OWD {mean} ns below the min {min}: {r}");
    u
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
    check_common_start(&b, |_| 1_000_000);
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
    let u_b = file["b"]["before"]["uncertainty_ns"].as_i64().unwrap();
    assert!((before_b - 3_000_000).abs() <= u_b, "{file}");
    check_common_start(&b, |_| 1_000_000);
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

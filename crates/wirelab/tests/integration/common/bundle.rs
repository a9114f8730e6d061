//! A campaign in a scratch directory: its control file written, `wirelab
//! run` on it, the one results bundle it made, its points and summary rows.

use super::exe;
use super::files::{json_file, schedule_start, text};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// A campaign's control text on two namespaces, tx and rx, joined by a
/// veth pair (198.18.NET.1/24 and .2/24, no IPv6), each a host reached as
/// `lab:NAME`: the `[lab]` and `[hosts]` tables, then `body` (its
/// `[campaign]`, flows, …), so that text added after `body` stays in its
/// last table.
pub fn on_tx_rx(net: u8, body: &str) -> String {
    format!(
        r#"
[lab]
namespaces = ["tx", "rx"]
links = [{{ a = "tx", b = "rx", a_addr = "198.18.{net}.1/24", b_addr = "198.18.{net}.2/24", ipv6 = false }}]

[hosts]
tx = {{ transport = "lab:tx" }}
rx = {{ transport = "lab:rx" }}
{body}"#
    )
}

/// [`on_tx_rx`] with an emulator between: tx – emu – rx, tx at
/// 198.18.NET.1/24 towards emu, rx at .2/24 towards emu, each a host
/// reached as `lab:NAME`.
pub fn on_tx_emu_rx(net: u8, body: &str) -> String {
    format!(
        r#"
[lab]
namespaces = ["tx", "emu", "rx"]
links = [
  {{ a = "tx", b = "emu", a_addr = "198.18.{net}.1/24", ipv6 = false }},
  {{ a = "emu", b = "rx", b_addr = "198.18.{net}.2/24", ipv6 = false }},
]

[hosts]
tx = {{ transport = "lab:tx" }}
emu = {{ transport = "lab:emu" }}
rx = {{ transport = "lab:rx" }}
{body}"#
    )
}

/// `wirelab run DIR/c.toml --results DIR/results`, with `control` written
/// to `DIR/c.toml`; more arguments may follow.
pub fn run_command(dir: &Path, control: &str) -> Command {
    let file = dir.join("c.toml");
    std::fs::write(&file, control).unwrap();
    let mut c = Command::new(exe());
    c.arg("run")
        .arg(&file)
        .arg("--results")
        .arg(dir.join("results"));
    c
}

/// Runs the campaign `control` in `dir` with `extra` arguments: its output
/// and the one bundle it made.
pub fn run_campaign(dir: &Path, control: &str, extra: &[&str]) -> (Output, PathBuf) {
    let out = run_command(dir, control).args(extra).output().unwrap();
    let b = only_entry(&dir.join("results"), &text(&out));
    (out, b)
}

/// The one bundle under `results`.
pub fn the_bundle(results: &Path) -> PathBuf {
    only_entry(results, "")
}

/// The one point's directory of bundle `b` and its point.json.
pub fn the_point(b: &Path) -> (PathBuf, Value) {
    let p = only_entry(&b.join("points"), "");
    let v = json_file(&p.join("point.json"));
    (p, v)
}

/// The rows of bundle `b`'s summary.json.
pub fn summary_rows(b: &Path) -> Vec<Value> {
    json_file(&b.join("summary.json"))["rows"]
        .as_array()
        .unwrap()
        .clone()
}

/// `wirelab analyze --json` on bundle `b` derives its summary.json again,
/// byte for byte.
pub fn derives_again(b: &Path) {
    let stored = std::fs::read(b.join("summary.json")).unwrap();
    let o = Command::new(exe())
        .args(["analyze", "--json"])
        .arg(b)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&stored)
    );
}

/// The one entry of directory `d` (`context` goes into the failure).
fn only_entry(d: &Path, context: &str) -> PathBuf {
    let entries: Vec<PathBuf> = std::fs::read_dir(d)
        .map(|r| r.map(|e| e.unwrap().path()).collect())
        .unwrap_or_default();
    assert_eq!(entries.len(), 1, "{}: {entries:?}\n{context}", d.display());
    entries[0].clone()
}

/// The senders' starts (`interval_ns` gives each flow's interval by name):
/// every flow shares one T0 on the controller's clock;
/// each sender was given T0 moved onto its own clock by its host's
/// estimate before the point (`sender_t0_unix_ns`), and its schedule did
/// not start before that (a probe never leaves early; lateness only makes
/// it later, so no load flakes this). That the two start together within
/// their hosts' U is checked on a virtual clock (clocks/tests_virtual.rs).
pub fn check_common_start(b: &Path, interval_ns: impl Fn(&str) -> u64) {
    let points = wirelab_campaign::bundle::read_points(b).unwrap();
    assert_eq!(points.len(), 1);
    let (pdir, p) = &points[0];
    let mut t0s = vec![];
    for f in &p.flows {
        let c = f.clock.as_ref().unwrap();
        let file = json_file(&pdir.join(c.file.as_ref().unwrap()));
        assert_eq!(file["schema"], "wirelab.run.clock/1");
        assert_eq!(file["a"]["host"], f.from.as_str());
        let before_a = file["a"]["before"]["offset_ns"].as_i64().unwrap();
        assert_eq!(
            c.sender_t0_unix_ns,
            c.at_unix_ns.saturating_add_signed(before_a),
            "{}: T0 on the sender's clock",
            f.name
        );
        let first = schedule_start(&pdir.join(f.tx.as_ref().unwrap()), interval_ns(&f.name));
        assert!(
            first >= c.sender_t0_unix_ns,
            "{}: started {} ns before its start-at",
            f.name,
            c.sender_t0_unix_ns - first
        );
        t0s.push(c.at_unix_ns);
    }
    assert!(
        t0s.windows(2).all(|w| w[0] == w[1]),
        "one T0 for every flow: {t0s:?}"
    );
}

//! A campaign's results bundle (spec run.md "Results bundle"):
//!
//! ```text
//! <dir>/manifest.json  control.toml  summary.json  summary.csv
//!       points/<id>/point.json
//!       points/<id>/flows/<flow>/{tx,rx}.wlr {send,recv}.json
//!       points/<id>/emulate.json  points/<id>/pcap/<host>-<if>.pcapng
//!       points/<id>/counters/<host>.{before,after}.json
//!       points/<id>/samples/<host>.jsonl
//! ```
//!
//! `point.json` holds what only the run knows (parameters, status, abort
//! reason, planned counts, the reports the tools printed); the summary is
//! derived from the point files and the record files alone, so
//! [`summarize`] gives the same bytes during the run and any time after
//! (`wirelab analyze DIR`).

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io;
use std::path::{Path, PathBuf};
use thiserror::Error;
use wirelab_analysis::{analyze_run, FlowReport};
use wirelab_engine::job::records::read_run;

use crate::attribution::Attribution;
use crate::expr::Value;
use wirelab_host::samples::SampleSummary;

/// Schema of `point.json`.
pub const POINT_SCHEMA: &str = "wirelab.run.point/1";
/// Schema of `manifest.json`.
pub const MANIFEST_SCHEMA: &str = "wirelab.run.manifest/1";

/// Throughput window of the per-point analysis.
const WINDOW_NS: u64 = 1_000_000_000;

#[derive(Debug, Error)]
pub enum BundleError {
    #[error("{path}: {cause}", path = path.display())]
    Io { path: PathBuf, cause: io::Error },
    #[error("{path}: not a point file of this wirelab: {cause}", path = path.display())]
    Point {
        path: PathBuf,
        cause: serde_json::Error,
    },
    #[error("{}: not a results directory of `wirelab run` (no points/ in it)", .0.display())]
    NotABundle(PathBuf),
    #[error("{path}: {message}", path = path.display())]
    Records { path: PathBuf, message: String },
}

fn io_err(path: &Path) -> impl FnOnce(io::Error) -> BundleError + '_ {
    move |source| BundleError::Io {
        path: path.to_path_buf(),
        cause: source,
    }
}

pub use wirelab_analysis::schema::run::{PointStatus, Summary, SummaryRow, SUMMARY_SCHEMA};

/// One flow of a point as run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PointFlow {
    pub name: String,
    /// The flow id its probes carry.
    pub flow_id: u32,
    pub from: String,
    pub to: String,
    /// Probes the flow was to send (its `count`), when known.
    pub planned: Option<u64>,
    /// The receiver's record file, relative to the point directory.
    pub rx: Option<String>,
    /// The sender's record file, relative to the point directory.
    pub tx: Option<String>,
    /// The sender's and receiver's own reports (their `--json`), as printed.
    pub send_report: Option<serde_json::Value>,
    pub recv_report: Option<serde_json::Value>,
    /// The tools' exit codes (None: killed or never started).
    pub send_exit: Option<i32>,
    pub recv_exit: Option<i32>,
    /// The emulator direction the flow crosses (`a2b`, `b2a`), if any.
    #[serde(default)]
    pub emulate_direction: Option<String>,
    /// Its lost probes by cause ([`crate::attribution`]), from the point's
    /// counters.
    #[serde(default)]
    pub attribution: Option<Attribution>,
    /// The receiver's clock against the sender's (probes before and after
    /// the flows), which the summary's OWD figures are corrected by.
    pub clock: Option<crate::clocks::FlowClock>,
}

/// `points/<id>/point.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PointFile {
    pub schema: String,
    pub id: String,
    pub index: usize,
    pub repetition: u32,
    pub params: BTreeMap<String, Value>,
    pub status: PointStatus,
    /// Why it was aborted or failed.
    pub reason: Option<String>,
    /// When the point began (before its tools started) and ended (its
    /// files fetched), unix ns.
    pub began_unix_ns: u64,
    pub ended_unix_ns: u64,
    /// The senders' common start, unix ns.
    pub t0_unix_ns: Option<u64>,
    pub flows: Vec<PointFlow>,
    /// The emulator's report (`emulate --json`), when the point had one.
    pub emulate_report: Option<serde_json::Value>,
    /// Capture files, relative to the point directory.
    pub pcaps: Vec<String>,
    /// The criterion that aborted it: `lost_gt` or `max_duration`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub abort_criterion: Option<String>,
    /// The point's stressors as they ran (absent when it had none).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stressors: Vec<PointStressor>,
    /// Per host: its CPU and memory sampled while the point ran
    /// (`samples/<host>.jsonl`), in short.
    #[serde(default)]
    pub samples: BTreeMap<String, SampleSummary>,
}

impl PointFile {
    /// A point as it begins: `done` until something goes wrong, nothing run
    /// or fetched yet.
    pub fn begun(
        id: String,
        index: usize,
        repetition: u32,
        params: BTreeMap<String, Value>,
        began_unix_ns: u64,
    ) -> PointFile {
        PointFile {
            schema: POINT_SCHEMA.into(),
            id,
            index,
            repetition,
            params,
            status: PointStatus::Done,
            reason: None,
            began_unix_ns,
            ended_unix_ns: 0,
            t0_unix_ns: None,
            flows: vec![],
            emulate_report: None,
            pcaps: vec![],
            abort_criterion: None,
            stressors: vec![],
            samples: BTreeMap::new(),
        }
    }
}

/// One `[[stressor]]` of a point as run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PointStressor {
    pub host: String,
    /// Its kind or preset (`cpu`, `realistic`, …).
    pub kind: String,
    /// CPU seconds of all its processes (stress-ng and its workers), from
    /// its report; None when it gave none.
    pub user_s: Option<f64>,
    pub system_s: Option<f64>,
    /// `wirelab stress`'s exit code (None: killed).
    pub exit: Option<i32>,
    /// Its output (stress-ng's messages), relative to the point directory.
    pub log: Option<String>,
    /// `wirelab stress --json` as printed (`wirelab.stress/1`: each part,
    /// its command, exit and CPU time).
    pub report: Option<serde_json::Value>,
}

/// The summary of the bundle at `dir`, from its point and record files.
pub fn summarize(dir: &Path) -> Result<Summary, BundleError> {
    let points = read_points(dir)?;
    let mut s = Summary {
        schema: SUMMARY_SCHEMA.into(),
        points: points.len(),
        done: 0,
        aborted: 0,
        failed: 0,
        interrupted: 0,
        rows: vec![],
    };
    for (pdir, p) in &points {
        *match p.status {
            PointStatus::Done => &mut s.done,
            PointStatus::Aborted => &mut s.aborted,
            PointStatus::Failed => &mut s.failed,
            PointStatus::Interrupted => &mut s.interrupted,
        } += 1;
        s.rows.extend(point_rows(pdir, p));
    }
    Ok(s)
}

/// Every `points/*/point.json` under `dir`, in run order.
/// The schema of the campaign's `clock/<from>-<to>.json`.
pub const CLOCK_PAIR_SCHEMA: &str = "wirelab.run.clock-pair/1";

/// The campaign's clock offsets per host pair: for each pair of hosts a
/// cross-host flow ran between, `clock/<from>-<to>.json` with the offset,
/// drift and uncertainty of every point (its estimates are in the point's
/// own `clock/` directory). Derived from the points alone; written again
/// whole, so a resumed campaign's file covers all its points.
pub fn write_clock_pairs(dir: &Path) -> Result<usize, BundleError> {
    let mut pairs: BTreeMap<(String, String), Vec<serde_json::Value>> = BTreeMap::new();
    for (_, p) in read_points(dir)? {
        for f in &p.flows {
            let Some(c) = f.clock.as_ref().filter(|c| c.file.is_some()) else {
                continue;
            };
            let list = pairs.entry((f.from.clone(), f.to.clone())).or_default();
            // Two flows of one pair in a point share their estimates.
            if list.iter().any(|e| e["point"] == p.id.as_str()) {
                continue;
            }
            list.push(serde_json::json!({
                "point": p.id,
                "at_unix_ns": c.at_unix_ns,
                "offset_ns": c.offset_ns,
                "drift_ppb": c.drift_ppb,
                "uncertainty_ns": c.uncertainty_ns,
                "relative": c.relative,
                "estimates": format!("points/{}/{}", p.id, c.file.as_deref().unwrap_or_default()),
            }));
        }
    }
    for ((from, to), mut points) in pairs.iter_mut().map(|(k, v)| (k, std::mem::take(v))) {
        points.sort_by_key(|e| e["at_unix_ns"].as_u64());
        let doc = serde_json::json!({
            "schema": CLOCK_PAIR_SCHEMA,
            "from": from,
            "to": to,
            "points": points,
        });
        let mut text = serde_json::to_string_pretty(&doc).expect("JSON values serialize");
        text.push('\n');
        write_atomic(
            &dir.join(format!("clock/{from}-{to}.json")),
            text.as_bytes(),
        )?;
    }
    Ok(pairs.len())
}

pub fn read_points(dir: &Path) -> Result<Vec<(PathBuf, PointFile)>, BundleError> {
    let root = dir.join("points");
    if !root.is_dir() {
        return Err(BundleError::NotABundle(dir.to_path_buf()));
    }
    let mut out = vec![];
    for e in std::fs::read_dir(&root).map_err(io_err(&root))? {
        let pdir = e.map_err(io_err(&root))?.path();
        let file = pdir.join("point.json");
        if !file.is_file() {
            continue;
        }
        let text = std::fs::read(&file).map_err(io_err(&file))?;
        let p: PointFile = serde_json::from_slice(&text).map_err(|source| BundleError::Point {
            path: file,
            cause: source,
        })?;
        out.push((pdir, p));
    }
    out.sort_by(|a, b| (a.1.index, &a.1.id).cmp(&(b.1.index, &b.1.id)));
    Ok(out)
}

/// The summary rows of one point (in its directory `pdir`).
pub fn point_rows(pdir: &Path, p: &PointFile) -> Vec<SummaryRow> {
    let mut rows: Vec<SummaryRow> = p.flows.iter().map(|f| row(pdir, p, f)).collect();
    let lost: Vec<Option<u64>> = rows.iter().map(|r| r.lost).collect();
    for (r, a) in rows
        .iter_mut()
        .zip(crate::attribution::point_attribution(pdir, p, &lost))
    {
        if let Some(a) = a {
            r.lost_sender = Some(a.sender);
            r.lost_path = Some(a.path);
            r.lost_rx_nic = Some(a.receiver_nic);
            r.lost_rx_stack = Some(a.receiver_stack);
            r.lost_unexplained = Some(a.unexplained);
        }
    }
    rows
}

fn row(pdir: &Path, p: &PointFile, f: &PointFlow) -> SummaryRow {
    let mut r = SummaryRow {
        point: p.id.clone(),
        index: p.index,
        repetition: p.repetition,
        params: p
            .params
            .iter()
            .map(|(k, v)| (k.clone(), v.into()))
            .collect(),
        status: p.status,
        reason: p.reason.clone(),
        flow: f.name.clone(),
        flow_id: f.flow_id,
        sent: None,
        received: None,
        lost: None,
        lost_by_sequence: None,
        planned: f.planned,
        lost_by_plan: None,
        loss_ratio: None,
        throughput_bps: None,
        rate_pps: None,
        owd_mean_ns: None,
        owd_p99_ns: None,
        owd_p999_ns: None,
        owd_max_ns: None,
        owd_min_ns: None,
        owd_offset_ns: None,
        owd_uncertainty_ns: None,
        owd_relative: false,
        ipdv_p99_abs_ns: None,
        jitter_ns: None,
        reordered: None,
        duplicates: None,
        loss_bursts: None,
        max_loss_burst: None,
        lost_sender: None,
        lost_path: None,
        lost_rx_nic: None,
        lost_rx_stack: None,
        lost_unexplained: None,
        timer_misses: None,
        rtt_mean_ns: None,
        rtt_stdev_ns: None,
        rtt_p99_ns: None,
        rtt_max_ns: None,
        error: None,
    };
    match flow_report(pdir, f) {
        Ok(Some(fr)) => {
            fill(&mut r, &fr);
            fill_clock(&mut r, &fr, f.clock.as_ref());
        }
        Ok(None) => {}
        Err(e) => r.error = Some(e),
    }
    r
}

/// The analysis of one flow's record files (None: it has none).
fn flow_report(pdir: &Path, f: &PointFlow) -> Result<Option<FlowReport>, String> {
    let files: Vec<PathBuf> = [&f.tx, &f.rx]
        .into_iter()
        .flatten()
        .map(|n| pdir.join(n))
        .filter(|p| p.is_file())
        .collect();
    if files.is_empty() {
        return Ok(None);
    }
    let mut run = read_run(&files).map_err(|e| e.to_string())?;
    // Receive stamps onto the sender's clock: every delay figure corrected.
    if let Some(c) = &f.clock {
        c.correction().apply(&mut run.records.rx);
    }
    let summary =
        analyze_run(&run.records, &run.requested, WINDOW_NS, 16).map_err(|e| e.to_string())?;
    Ok(summary.flows.into_iter().find(|r| r.flow == f.flow_id))
}

fn fill(r: &mut SummaryRow, f: &FlowReport) {
    r.sent = f.sent;
    r.received = f.received;
    r.lost = f.lost;
    r.loss_ratio = f.loss_ratio;
    r.duplicates = f.duplicates;
    r.reordered = f.reordered;
    r.lost_by_plan = match (r.planned, f.received) {
        (Some(p), Some(n)) => Some(p.saturating_sub(n)),
        _ => None,
    };
    if let Some(l) = &f.latency {
        r.owd_mean_ns = Some(l.mean_ns);
        r.owd_p99_ns = Some(l.p99_ns);
        r.owd_p999_ns = Some(l.p999_ns);
        r.owd_max_ns = Some(l.max_ns);
        r.owd_min_ns = Some(l.min_ns);
    }
    if let Some(rx) = &f.receiver {
        r.lost_by_sequence = Some(rx.loss.lost_vs_highest);
        r.loss_bursts = Some(rx.loss.bursts.count);
        r.max_loss_burst = Some(rx.loss.bursts.max_len);
        r.ipdv_p99_abs_ns = rx.ipdv.as_ref().map(|i| i.p99_abs_ns);
        r.jitter_ns = rx.jitter_ns;
        if let Some(rate) = &rx.rate {
            r.throughput_bps = rate.payload_bps;
            r.rate_pps = rate.rate_pps;
        }
    }
    if let Some(tx) = &f.sender {
        r.timer_misses = tx.late;
    }
    if let Some(rtt) = f.rtt.as_ref().and_then(|x| x.rtt.as_ref()) {
        r.rtt_mean_ns = Some(rtt.mean_ns);
        r.rtt_stdev_ns = Some(rtt.stdev_ns);
        r.rtt_p99_ns = Some(rtt.p99_ns);
        r.rtt_max_ns = Some(rtt.max_ns);
    }
}

/// The clock columns; relative OWD (OWD − min) when U is over the limit.
fn fill_clock(r: &mut SummaryRow, f: &FlowReport, c: Option<&crate::clocks::FlowClock>) {
    let Some(c) = c else { return };
    r.owd_offset_ns = Some(c.offset_ns);
    r.owd_uncertainty_ns = Some(c.uncertainty_ns);
    if !c.relative {
        return;
    }
    r.owd_relative = true;
    if let Some(l) = &f.latency {
        r.owd_mean_ns = Some(l.mean_ns - l.min_ns as f64);
        r.owd_p99_ns = Some(l.p99_ns - l.min_ns);
        r.owd_p999_ns = Some(l.p999_ns - l.min_ns);
        r.owd_max_ns = Some(l.max_ns - l.min_ns);
        r.owd_min_ns = Some(0);
    }
}

/// One file of the manifest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ManifestFile {
    pub path: String,
    pub bytes: u64,
    pub sha256: String,
}

/// `manifest.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    pub schema: String,
    pub campaign: String,
    pub wirelab_version: String,
    /// Each host's agent version and host name, from its hello.
    pub agents: BTreeMap<String, serde_json::Value>,
    pub started_unix_ns: u64,
    pub ended_unix_ns: u64,
    /// The exit code `wirelab run` ended with.
    pub exit_code: i32,
    pub files: Vec<ManifestFile>,
}

/// Every file under `dir` but the manifest itself, sorted, with its
/// size and sha256.
pub fn hash_files(dir: &Path) -> Result<Vec<ManifestFile>, BundleError> {
    let mut files = vec![];
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).map_err(io_err(&d))? {
            let e = e.map_err(io_err(&d))?;
            let p = e.path();
            let t = e.file_type().map_err(io_err(&p))?;
            if t.is_dir() {
                stack.push(p);
            } else if t.is_file() && p != dir.join("manifest.json") {
                files.push(p);
            }
        }
    }
    files.sort();
    files
        .into_iter()
        .map(|p| {
            let (bytes, sha256) = sha256_file(&p)?;
            let rel = p.strip_prefix(dir).unwrap_or(&p);
            Ok(ManifestFile {
                path: rel.to_string_lossy().into_owned(),
                bytes,
                sha256,
            })
        })
        .collect()
}

/// Size and sha256 (lowercase hex) of a file, read in chunks.
pub fn sha256_file(p: &Path) -> Result<(u64, String), BundleError> {
    use std::io::Read;
    let mut f = std::fs::File::open(p).map_err(io_err(p))?;
    let mut h = Sha256::new();
    let mut buf = vec![0u8; 1 << 16];
    let mut n = 0u64;
    loop {
        let k = f.read(&mut buf).map_err(io_err(p))?;
        if k == 0 {
            break;
        }
        h.update(&buf[..k]);
        n += k as u64;
    }
    Ok((n, hex(&h.finalize())))
}

/// Lowercase hex of `bytes`.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().fold(String::new(), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    })
}

/// Checks every file the manifest at `dir` lists: the mismatches, by path
/// (empty: the bundle is intact).
pub fn verify(dir: &Path) -> Result<Vec<String>, BundleError> {
    let path = dir.join("manifest.json");
    let text = std::fs::read(&path).map_err(io_err(&path))?;
    let m: Manifest = serde_json::from_slice(&text).map_err(|source| BundleError::Point {
        path: path.clone(),
        cause: source,
    })?;
    let mut bad = vec![];
    for f in &m.files {
        match sha256_file(&dir.join(&f.path)) {
            Ok((n, h)) if n == f.bytes && h == f.sha256 => {}
            Ok(_) => bad.push(format!("{}: content differs", f.path)),
            Err(e) => bad.push(e.to_string()),
        }
    }
    Ok(bad)
}

/// Writes `bytes` to `path` whole ([`wirelab_io::atomic::write`]), making
/// its directory first.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), BundleError> {
    if let Some(d) = path.parent() {
        std::fs::create_dir_all(d).map_err(io_err(d))?;
    }
    wirelab_io::atomic::write(path, bytes).map_err(|e| io_err(path)(e.into()))
}

/// Fixtures for tests; `outcome`'s tests can build their points with them.
#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Flow `name` (id 1, from `a` to `b`) as planned, before anything ran.
    pub(crate) fn planned_flow(name: &str, planned: u64) -> PointFlow {
        PointFlow {
            name: name.into(),
            flow_id: 1,
            from: "a".into(),
            to: "b".into(),
            planned: Some(planned),
            rx: None,
            tx: None,
            send_report: None,
            recv_report: None,
            send_exit: None,
            recv_exit: None,
            emulate_direction: None,
            attribution: None,
            clock: None,
        }
    }

    #[test]
    fn sha256_of_known_bytes() {
        let d = std::env::temp_dir().join(format!("wirelab-bundle-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        let p = d.join("abc");
        std::fs::write(&p, b"abc").unwrap();
        let (n, h) = sha256_file(&p).unwrap();
        assert_eq!(n, 3);
        assert_eq!(
            h,
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        let files = hash_files(&d).unwrap();
        assert_eq!(files.len(), 1);
        assert_eq!(files[0].path, "abc");
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn loss_against_the_plan_and_the_highest_sequence() {
        // LUNA Table 8.2: 640,753 received of 1,666,667 planned. (Its
        // loss by sequence, 452,177 against the highest sequence 1,092,929
        // counted from 0, is the analysis's `lost_vs_highest`.)
        let mut fr = FlowReport::empty(1);
        fr.received = Some(640_753);
        let mut r = row(
            Path::new("/nonexistent"),
            &PointFile::begun("p".into(), 0, 0, BTreeMap::new(), 0),
            &planned_flow("f", 1_666_667),
        );
        fill(&mut r, &fr);
        assert_eq!(r.lost_by_plan, Some(1_025_914));
        assert_eq!(r.received, Some(640_753));
    }

    #[test]
    fn not_a_bundle_is_said() {
        let e = summarize(Path::new("/nonexistent-wirelab")).unwrap_err();
        assert!(e.to_string().contains("not a results directory"), "{e}");
    }
}

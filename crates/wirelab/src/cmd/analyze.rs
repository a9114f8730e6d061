//! `wirelab analyze`, and the summaries `send` and `recv` print.

use crate::cli::AnalyzeArgs;
use crate::values;
use anyhow::{Context, Result};
use std::collections::HashMap;
use std::io::Write;
use std::path::Path;
use wirelab_analysis::{
    analyze, departure_interval_samples, ks_distance, render_text, size_samples, AnalysisConfig,
    FlowConfig, FlowReport, FlowStats, RateModel, RecordSets, RttStats, SenderInfo, SenderStats,
    SentSource, Summary,
};
use wirelab_core::gen::{Bounds, GenSpec, SpecUnit};
use wirelab_engine::phase::PhaseReport;
use wirelab_engine::receiver::RxSink;
use wirelab_engine::recordlog::RecordMeta;
use wirelab_engine::sender::{FlowSendStats, RecordSink};
use wirelab_wire::record::{Record, RecordKind, RecordReader, Role};
use wirelab_wire::ProbeFlags;

pub use wirelab_analysis::OWD_CLOCK_NOTE as CLOCK_NOTE;

/// Most flows a live receiver tracks (about 1 MiB of histograms each);
/// probes of further flows are counted by the receiver but not analyzed.
const MAX_LIVE_FLOWS: usize = 4096;

/// Per-flow streaming statistics of a running receiver.
pub struct LiveFlows {
    cfg: FlowConfig,
    flows: HashMap<u32, FlowStats>,
}

impl LiveFlows {
    pub fn new(window_ns: u64) -> Self {
        LiveFlows {
            cfg: FlowConfig {
                window_ns,
                ..FlowConfig::default()
            },
            flows: HashMap::new(),
        }
    }

    pub fn finish(&self) -> Summary {
        let mut flows: Vec<FlowReport> = self.flows.values().map(|f| f.finish(None)).collect();
        flows.sort_by_key(|f| f.flow);
        Summary::new(flows)
    }
}

impl RxSink for LiveFlows {
    fn packet(&mut self, r: &Record) {
        let n = self.flows.len();
        let cfg = self.cfg;
        let f = match self.flows.get_mut(&r.flow) {
            Some(f) => f,
            None if n < MAX_LIVE_FLOWS => self
                .flows
                .entry(r.flow)
                .or_insert_with(|| FlowStats::new(r.flow, cfg)),
            None => return,
        };
        f.observe(r.seq, r.tx_ns, r.rx_ns, r.size, ProbeFlags(r.probe_flags));
    }
}

pub fn print_summary(s: &Summary) -> Result<()> {
    let mut out = std::io::stdout().lock();
    render_text(s, &mut out)?;
    out.flush()?;
    Ok(())
}

/// One record file, loaded whole.
pub struct Loaded {
    pub role: Role,
    pub meta: Option<RecordMeta>,
    pub records: Vec<Record>,
}

pub fn load(path: &Path) -> Result<Loaded> {
    let f = std::fs::File::open(path).with_context(|| format!("cannot open {}", path.display()))?;
    let mut r = RecordReader::new(std::io::BufReader::with_capacity(1 << 20, f))
        .with_context(|| format!("{}", path.display()))?;
    let role = r.header().role;
    let meta = serde_json::from_str::<RecordMeta>(&r.header().metadata).ok();
    let mut records = Vec::new();
    while let Some(rec) = r
        .next_record()
        .with_context(|| format!("reading {}", path.display()))?
    {
        records.push(rec);
    }
    if r.trailing_bytes > 0 {
        eprintln!(
            "wirelab: {}: ignored a partial record of {} bytes at the end (file cut short?)",
            path.display(),
            r.trailing_bytes
        );
    }
    Ok(Loaded {
        role,
        meta,
        records,
    })
}

/// The generator specs a sender recorded in its metadata.
pub struct Requested {
    interval: Option<GenSpec>,
    size: Option<GenSpec>,
}

impl Requested {
    pub fn from_config(cfg: &serde_json::Value) -> Requested {
        let get = |k: &str, u| {
            cfg.get(k)
                .and_then(|v| v.as_str())
                .and_then(|s| GenSpec::parse(s, u).ok())
        };
        Requested {
            interval: get("interval", SpecUnit::Time),
            size: get("size", SpecUnit::Bytes),
        }
    }

    pub fn mean_interval_ns(&self) -> Option<u64> {
        self.interval
            .as_ref()
            .and_then(values::mean_of)
            .map(|m| m.round() as u64)
    }
}

/// Fills the KS distances between requested and achieved intervals and
/// sizes, where the requested distribution has a continuous CDF (a
/// constant's step CDF makes any jitter look like a distance of ~1, which
/// says nothing; its accuracy is the lateness and departure error instead).
fn fill_ks_samples(
    report: &mut FlowReport,
    req: &Requested,
    intervals: &mut [f64],
    sizes: &mut [f64],
) {
    let Some(sender) = report.sender.as_mut() else {
        return;
    };
    let ks = |spec: &Option<GenSpec>, samples: &mut [f64]| -> Option<f64> {
        let spec = spec.as_ref()?;
        if spec.as_const().is_some() || samples.is_empty() {
            return None;
        }
        let g = spec
            .build(
                &|p| std::fs::read_to_string(p).map_err(|e| e.to_string()),
                0,
                Bounds::NON_NEGATIVE,
            )
            .ok()?;
        g.cdf(0.0)?;
        Some(ks_distance(samples, |x| g.cdf(x).unwrap_or(0.0)))
    };
    if let Some(dep) = sender.departure.as_mut() {
        dep.ks_distance = ks(&req.interval, intervals);
    }
    if let Some(sz) = sender.sizes.as_mut() {
        sz.ks_distance = ks(&req.size, sizes);
    }
}

fn fill_ks(report: &mut FlowReport, tx: &[Record], req: &Requested) {
    let mut ivals = departure_interval_samples(tx, report.flow);
    let mut sizes = size_samples(tx, report.flow, RecordKind::Tx);
    fill_ks_samples(report, req, &mut ivals, &mut sizes);
}

/// Runs the whole-run analysis over in-memory records.
fn analyze_sets(
    tx: &[Record],
    rx: &[Record],
    echo: &[Record],
    sender_meta: Option<&RecordMeta>,
    window_ns: u64,
) -> Result<Summary> {
    let req = sender_meta
        .map(|m| Requested::from_config(&m.config))
        .unwrap_or(Requested {
            interval: None,
            size: None,
        });
    let interval_ns = req.mean_interval_ns();
    let cfg = AnalysisConfig {
        flow: FlowConfig {
            window_ns,
            requested_interval_ns: interval_ns,
            ..FlowConfig::default()
        },
        sender: sender_meta.map(|m| SenderInfo {
            start_unix_ns: m.start_unix_ns,
            interval_ns,
            late_threshold_ns: None,
        }),
        ..AnalysisConfig::default()
    };
    let sets = RecordSets {
        tx: if sender_meta.is_some() || !tx.is_empty() {
            Some(tx)
        } else {
            None
        },
        rx: (!rx.is_empty()).then_some(rx),
        echo: (!echo.is_empty()).then_some(echo),
    };
    let mut summary = analyze(&sets, &cfg)?;
    for f in summary.flows.iter_mut() {
        fill_ks(f, tx, &req);
    }
    Ok(summary)
}

pub fn run(a: AnalyzeArgs) -> Result<()> {
    let window_ns = values::duration_ns("--window", &a.window)?.max(1_000_000);
    let (mut tx, mut rx, mut echo) = (Vec::new(), Vec::new(), Vec::new());
    let mut sender_meta = None;
    for p in &a.files {
        let l = load(p)?;
        if l.role == Role::Sender && sender_meta.is_none() {
            sender_meta = l.meta.clone();
        }
        for r in l.records {
            match (l.role, r.kind) {
                (Role::Sender, RecordKind::Tx) => tx.push(r),
                (Role::Sender, RecordKind::EchoReply) => echo.push(r),
                (Role::Receiver | Role::Reflector, RecordKind::Rx) => rx.push(r),
                _ => {}
            }
        }
    }
    let summary = analyze_sets(&tx, &rx, &echo, sender_meta.as_ref(), window_ns)?;
    if a.json {
        println!("{}", summary.to_json()?);
    } else {
        print_summary(&summary)?;
    }
    Ok(())
}

/// Most samples kept for a KS distance; beyond it a uniform reservoir
/// sample (Algorithm R) keeps memory bounded on long runs.
const KS_SAMPLES: usize = 200_000;

/// A bounded uniform sample of a stream of values.
pub struct Reservoir {
    seen: u64,
    state: u64,
    pub samples: Vec<f64>,
}

impl Reservoir {
    fn new(seed: u64) -> Self {
        Reservoir {
            seen: 0,
            state: seed | 1,
            // Allocated up front: growing it on the packet path would copy
            // up to a MiB at once and make probes late.
            samples: Vec::with_capacity(KS_SAMPLES),
        }
    }

    fn add(&mut self, v: f64) {
        self.seen += 1;
        if self.samples.len() < KS_SAMPLES {
            self.samples.push(v);
            return;
        }
        // xorshift64*: cheap, and good enough to pick reservoir slots.
        self.state ^= self.state >> 12;
        self.state ^= self.state << 25;
        self.state ^= self.state >> 27;
        let r = self.state.wrapping_mul(0x2545_f491_4f6c_dd1d) % self.seen;
        if (r as usize) < KS_SAMPLES {
            self.samples[r as usize] = v;
        }
    }
}

/// Streaming sender statistics of one flow, fed by the sending thread.
pub struct SendAccum {
    stats: SenderStats,
    intervals: Reservoir,
    sizes: Reservoir,
    prev_tx: Option<u64>,
}

impl SendAccum {
    pub fn new(info: SenderInfo) -> Self {
        SendAccum {
            stats: SenderStats::new(info, RateModel::default()),
            intervals: Reservoir::new(0x1234),
            sizes: Reservoir::new(0x5678),
            prev_tx: None,
        }
    }
}

impl RecordSink for SendAccum {
    fn record(&mut self, r: &Record) {
        self.stats.observe_record(r);
        if ProbeFlags(r.probe_flags).is_warmup() {
            return;
        }
        if let Some(p) = self.prev_tx {
            self.intervals.add(r.tx_ns.saturating_sub(p) as f64);
        }
        self.prev_tx = Some(r.tx_ns);
        self.sizes.add(r.size as f64);
    }
}

/// Streaming RTT statistics, fed by the echo reply thread.
#[derive(Default)]
pub struct RttAccum(RttStats);

impl RecordSink for RttAccum {
    fn record(&mut self, r: &Record) {
        self.0.observe_record(r);
    }
}

/// What one sending flow hands to the summary.
pub struct SentFlow {
    pub stats: FlowSendStats,
    pub tx: SendAccum,
    pub rtt: RttAccum,
    pub echo: bool,
    pub clamped_intervals: u64,
    pub clamped_sizes: u64,
}

/// Builds the sender's report of one flow from its streaming statistics.
fn sent_flow_report(f: &mut SentFlow, req: &Requested) -> FlowReport {
    let mut rep = FlowReport::empty(f.stats.flow);
    let sender = f.tx.stats.finish();
    rep.sent = Some(f.tx.stats.sent());
    rep.sent_source = Some(SentSource::SenderRecords);
    if f.echo {
        rep.rtt = Some(f.rtt.0.finish(Some(sender.echo_requests)));
    }
    rep.sender = Some(sender);
    fill_ks_samples(
        &mut rep,
        req,
        &mut f.tx.intervals.samples,
        &mut f.tx.sizes.samples,
    );
    rep
}

/// The sender's summary: its own counters plus the statistics of what it sent.
pub fn sender_summary(
    flows: &mut [SentFlow],
    config: &serde_json::Value,
    target: std::net::SocketAddr,
) -> Result<serde_json::Value> {
    let req = Requested::from_config(config);
    let mut out = Vec::new();
    let mut totals_sent = 0;
    for f in flows.iter_mut() {
        totals_sent += f.stats.sent;
        let rep = sent_flow_report(f, &req);
        let mut v = serde_json::to_value(&rep)?;
        v["echo_replies"] = serde_json::json!(f.stats.echo_replies);
        v["engine"] = serde_json::to_value(&f.stats)?;
        v["engine"]["clamped_intervals"] = serde_json::json!(f.clamped_intervals);
        v["engine"]["clamped_sizes"] = serde_json::json!(f.clamped_sizes);
        out.push(v);
    }
    Ok(serde_json::json!({
        "schema": "wirelab.send/1",
        "target": target.to_string(),
        "config": config,
        "flows": out,
        "totals": { "flows": flows.len(), "sent": totals_sent },
    }))
}

pub fn print_sender_summary(v: &serde_json::Value) -> Result<()> {
    let mut out = std::io::stdout().lock();
    writeln!(
        out,
        "sent to {}: interval {}, size {}",
        v["target"].as_str().unwrap_or("?"),
        v["config"]["interval"].as_str().unwrap_or("?"),
        v["config"]["size"].as_str().unwrap_or("?")
    )?;
    for f in v["flows"].as_array().into_iter().flatten() {
        let e = &f["engine"];
        let s = &f["sender"];
        let ns = |x: &serde_json::Value| {
            x.as_f64()
                .map(wirelab_core::units::format_ns)
                .unwrap_or_else(|| "-".into())
        };
        writeln!(
            out,
            "flow {}: {} probes ({} bytes) at {:.1} pps; lateness p50 {} p99 {} p99.9 {} max {}; missed deadlines {}; drift {} ppm",
            f["flow"],
            f["sent"],
            e["bytes"],
            s["rate"]["rate_pps"].as_f64().unwrap_or(0.0),
            ns(&s["lateness"]["p50_ns"]),
            ns(&s["lateness"]["p99_ns"]),
            ns(&s["lateness"]["p999_ns"]),
            ns(&s["lateness"]["max_ns"]),
            s["late"],
            s["drift"]["drift_ppm"]
                .as_f64()
                .map(|d| format!("{d:.2}"))
                .unwrap_or_else(|| "-".into()),
        )?;
        writeln!(
            out,
            "  {} send calls, {} batched (max {} per call), {} retries, {} errors; clamped: {} intervals, {} sizes; KS distance: intervals {}, sizes {}",
            e["send_calls"],
            e["batched_calls"],
            e["max_batch"],
            e["send_retries"],
            e["send_errors"],
            e["clamped_intervals"],
            e["clamped_sizes"],
            fmt_ks(&s["departure"]["ks_distance"]),
            fmt_ks(&s["sizes"]["ks_distance"]),
        )?;
        if let Ok(p) = serde_json::from_value::<PhaseReport>(e["phase"].clone()) {
            writeln!(out, "  {p}")?;
        }
        if !f["rtt"].is_null() {
            let r = &f["rtt"];
            writeln!(
                out,
                "  rtt: {} replies, lost {}; min {} p50 {} p99 {} max {}; reflector residence p50 {}; network rtt p50 {}",
                r["replies"],
                r["lost"],
                ns(&r["rtt"]["min_ns"]),
                ns(&r["rtt"]["p50_ns"]),
                ns(&r["rtt"]["p99_ns"]),
                ns(&r["rtt"]["max_ns"]),
                ns(&r["residence"]["p50_ns"]),
                ns(&r["net_rtt"]["p50_ns"]),
            )?;
            writeln!(
                out,
                "  one-way (needs synchronized clocks): forward p50 {}, return p50 {}",
                ns(&r["forward"]["p50_ns"]),
                ns(&r["return"]["p50_ns"]),
            )?;
        }
    }
    Ok(())
}

fn fmt_ks(v: &serde_json::Value) -> String {
    v.as_f64()
        .map(|d| format!("{d:.4}"))
        .unwrap_or_else(|| "n/a".into())
}

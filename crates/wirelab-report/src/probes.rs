//! Probe records in, the figures of a probe report out, in two streaming
//! passes over the sources:
//!
//! 1. the `wirelab.analysis/1` numbers, from wirelab-analysis's own
//!    streaming accumulators ([`FlowStats`], [`SendAccum`], [`RttStats`])
//!    joined per flow as `wirelab analyze` joins them, plus the time span;
//! 2. what the plots need and the summary does not hold, bucketed over
//!    ranges the first pass found: delay and lateness envelopes over time,
//!    sent and received counts per time bucket (loss by send time), and
//!    fixed-bin histograms of delay, inter-arrival time and IPDV.
//!
//! Memory: per flow, wirelab-analysis's staged accumulators (a few MiB
//! once a flow has more than a few thousand records) and a 1024-slot IPDV
//! ring; the plot summaries are sized by bucket and bin counts. Nothing
//! grows with the number of records.

use crate::bucket::{Envelope, LinearHist};
use crate::error::ReportError;
use crate::source::{PassEnd, ProbeSource, Side, SourceInfo};
use std::collections::{BTreeMap, HashMap};
use wirelab_analysis::buckets::LenBucket;
use wirelab_analysis::capture::{CaptureInput, RtpInput};
use wirelab_analysis::staged::Staged;
use wirelab_analysis::{
    DelayStats, FlowConfig, FlowReport, FlowStats, Requested, RttStats, SendAccum, SenderInfo,
    SignedHistogram, Summary,
};
use wirelab_wire::record::{Record, RecordKind};
use wirelab_wire::ProbeFlags;

/// What the caller chooses.
pub struct ProbeOptions {
    /// The sender's requested distributions (for KS distances), built by a
    /// caller that knows the generator specs.
    pub requested: Requested,
    /// Throughput window (ns).
    pub window_ns: u64,
    /// Most flows analyzed; more is an error.
    pub max_flows: usize,
    /// Time buckets of the envelopes.
    pub buckets: usize,
    /// Bins of the histograms.
    pub bins: usize,
}

impl Default for ProbeOptions {
    fn default() -> Self {
        ProbeOptions {
            requested: Requested::default(),
            window_ns: 1_000_000_000,
            max_flows: 64,
            buckets: 240,
            bins: 60,
        }
    }
}

/// One throughput window summed over flows.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RateWindow {
    pub t_ns: u64,
    pub packets: u64,
    pub rate_pps: f64,
    pub payload_bps: f64,
    pub wire_bps: f64,
}

/// Everything a probe report shows.
pub struct ProbeData {
    pub summary: Summary,
    pub sources: Vec<(SourceInfo, PassEnd)>,
    /// First and last send time seen (Unix ns): the time axis origin.
    pub span: Option<(u64, u64)>,
    /// One-way delay by send time, with lost packets as marks.
    pub owd: Option<Envelope>,
    /// Whether the loss marks are exact (sent − received per bucket, from
    /// sender records) or the first lost sequence numbers placed by
    /// interpolation (receiver records only).
    pub loss_exact: bool,
    pub owd_quantiles: Vec<(f64, i64)>,
    pub owd_hist: Option<LinearHist>,
    pub interarrival: Option<LinearHist>,
    pub requested_interval_ns: Option<u64>,
    pub ipdv: Option<LinearHist>,
    pub bursts: Vec<LenBucket>,
    pub extents: Vec<LenBucket>,
    pub windows: Vec<RateWindow>,
    pub lateness: Option<Envelope>,
    /// Captures among the sources: their frame counts and RTP streams.
    pub captures: Vec<(CaptureInput, RtpInput)>,
}

impl ProbeData {
    pub fn has_rx(&self) -> bool {
        self.summary.flows.iter().any(|f| f.receiver.is_some())
    }
    pub fn has_tx(&self) -> bool {
        self.summary.flows.iter().any(|f| f.sender.is_some())
    }
}

#[derive(Default)]
struct Flow {
    tx: Option<SendAccum>,
    rx: Option<Staged<FlowStats>>,
    echo: Option<RttStats>,
    /// First and last (seq, tx_ns) of measured arrivals: places lost
    /// sequence numbers in time when no sender records exist.
    rx_first: Option<(u64, u64)>,
    rx_last: Option<(u64, u64)>,
    /// The start the flow's lateness is measured from.
    start: Option<u64>,
    /// The highest sequence number in the sender's records and its send
    /// time: the end marker. Its LAST-flagged repeats carry send times of
    /// their own; the analysis counts the probe received when any copy
    /// arrives, so a repeat arriving alone is placed at the original's
    /// send time.
    final_tx: Option<(u64, u64)>,
}

fn start_of(meta: &Option<serde_json::Value>) -> Option<u64> {
    meta.as_ref()?.get("start_unix_ns")?.as_u64()
}

/// Builds the report's data from `sources`; see the module docs.
pub fn collect(
    sources: &[&dyn ProbeSource],
    opts: &ProbeOptions,
) -> Result<ProbeData, ReportError> {
    let interval = opts.requested.mean_interval_ns;
    let fcfg = FlowConfig {
        window_ns: opts.window_ns,
        requested_interval_ns: interval,
        ..FlowConfig::default()
    };
    let first = first_pass(sources, opts, fcfg)?;
    // A capture of RTP streams alone (a VoIP trace) is a page of its own.
    let rtp = || sources.iter().filter_map(|s| s.capture());
    if first.flows.is_empty() && !rtp().any(|(_, r)| !r.streams.is_empty()) {
        return Err(ReportError::NoRecords);
    }
    let (summary, owd_all) = summarize(&first, opts, fcfg);
    let has_tx = summary.flows.iter().any(|f| f.sender.is_some());

    let mut plots = Plots::new(&summary, first.span, opts);
    let mut state: HashMap<u32, Pass2> = HashMap::new();
    for s in sources {
        s.pass(&mut |r: &Record| {
            if let Some(f) = first.flows.get(&r.flow) {
                plots.observe(state.entry(r.flow).or_default(), f, r);
            }
        })?;
    }
    plots.count_final_repeats(&state, &first.flows);
    if has_tx {
        plots.mark_loss_by_send_time();
    } else {
        plots.mark_lost_sequences(&summary, &first.flows);
    }

    let owd_quantiles = if owd_all.is_empty() {
        Vec::new()
    } else {
        quantile_grid()
            .into_iter()
            .filter_map(|q| Some((q, owd_all.quantile(q)?)))
            .collect()
    };
    let (bursts, extents, windows) = receiver_totals(&summary);
    Ok(ProbeData {
        summary,
        captures: sources.iter().filter_map(|s| s.capture()).collect(),
        sources: first.ends,
        span: first.span,
        owd: plots.owd_env,
        loss_exact: has_tx,
        owd_quantiles,
        owd_hist: plots.owd_hist,
        interarrival: plots.ia_hist,
        requested_interval_ns: interval,
        ipdv: plots.ipdv_hist,
        bursts,
        extents,
        windows,
        lateness: plots.late_env,
    })
}

/// What the first pass gathers: each flow's accumulators, the send-time
/// span and how each source's pass ended.
struct FirstPass {
    flows: HashMap<u32, Flow>,
    span: Option<(u64, u64)>,
    ends: Vec<(SourceInfo, PassEnd)>,
}

fn first_pass(
    sources: &[&dyn ProbeSource],
    opts: &ProbeOptions,
    fcfg: FlowConfig,
) -> Result<FirstPass, ReportError> {
    // The run's start: the first sender file's metadata, else each flow's
    // first scheduled probe (its lateness is then 0).
    let start = sources
        .iter()
        .filter(|s| s.info().side == Side::Sender)
        .find_map(|s| start_of(&s.info().metadata));
    let interval = opts.requested.mean_interval_ns;
    let mut flows: HashMap<u32, Flow> = HashMap::new();
    let mut span: Option<(u64, u64)> = None;
    let mut ends = Vec::new();
    let mut too_many = false;
    let max_flows = opts.max_flows.max(1);
    for s in sources {
        let end = s.pass(&mut |r: &Record| {
            if !flows.contains_key(&r.flow) && flows.len() >= max_flows {
                too_many = true;
                return;
            }
            let warm = ProbeFlags(r.probe_flags).is_warmup();
            if !warm && r.tx_ns != 0 && r.kind != RecordKind::EchoReply {
                span = Some(match span {
                    None => (r.tx_ns, r.tx_ns),
                    Some((a, b)) => (a.min(r.tx_ns), b.max(r.tx_ns)),
                });
            }
            flows
                .entry(r.flow)
                .or_default()
                .observe(r, warm, start, interval, fcfg);
        })?;
        if too_many {
            return Err(ReportError::TooManyFlows { limit: max_flows });
        }
        ends.push((s.info().clone(), end));
    }
    Ok(FirstPass { flows, span, ends })
}

impl Flow {
    /// Pass 1 for one record of this flow; `start` is the run's start when
    /// a sender file names it.
    fn observe(
        &mut self,
        r: &Record,
        warm: bool,
        start: Option<u64>,
        interval: Option<u64>,
        fcfg: FlowConfig,
    ) {
        match r.kind {
            RecordKind::Tx => {
                let start_unix_ns = *self
                    .start
                    .get_or_insert_with(|| start.unwrap_or(r.tx_ns.saturating_sub(r.sched_ns)));
                let info = SenderInfo {
                    start_unix_ns,
                    interval_ns: interval,
                    late_threshold_ns: None,
                };
                self.tx
                    .get_or_insert_with(|| SendAccum::new(info, Some(0)))
                    .observe(r);
                if self.final_tx.is_none_or(|(seq, _)| r.seq >= seq) {
                    self.final_tx = Some((r.seq, r.tx_ns));
                }
            }
            RecordKind::Rx => {
                self.rx
                    .get_or_insert_with(Staged::new)
                    .observe(r, || FlowStats::new(r.flow, fcfg));
                if !warm && r.tx_ns != 0 {
                    self.rx_first.get_or_insert((r.seq, r.tx_ns));
                    self.rx_last = Some((r.seq, r.tx_ns));
                }
            }
            RecordKind::EchoReply => self
                .echo
                .get_or_insert_with(RttStats::new)
                .observe_record(r),
            RecordKind::Emulated => {}
        }
    }
}

/// The `analysis/1` summary, joined per flow as `analyze` does, and the
/// one-way delay histogram of every flow.
fn summarize(
    first: &FirstPass,
    opts: &ProbeOptions,
    fcfg: FlowConfig,
) -> (Summary, SignedHistogram) {
    let mut owd_all = SignedHistogram::new();
    let mut ids: Vec<u32> = first.flows.keys().copied().collect();
    ids.sort_unstable();
    let mut reports = Vec::with_capacity(ids.len());
    for id in &ids {
        let f = &first.flows[id];
        let tx = f.tx.as_ref().map(|t| t.report(*id, &opts.requested, None));
        let sent = tx.as_ref().and_then(|t| t.sent);
        let mut rep = match &f.rx {
            Some(rx) => rx.with(
                || FlowStats::new(*id, fcfg),
                |s| {
                    owd_all.merge(s.owd_histogram());
                    s.finish(sent)
                },
            ),
            None => FlowReport::empty(*id),
        };
        if let Some(t) = tx {
            rep.sent = t.sent;
            rep.sent_source = t.sent_source;
            rep.sender = t.sender;
        }
        if let Some(e) = &f.echo {
            rep.rtt = Some(e.finish(rep.sender.as_ref().map(|s| s.echo_requests)));
        }
        reports.push(rep);
    }
    let mut summary = Summary::new(reports);
    summary.totals.latency = owd_all.stats();
    for (_, e) in &first.ends {
        summary.totals.ignored_records += e.ignored;
        summary.totals.unknown_kind_records += e.unknown_kind;
    }
    (summary, owd_all)
}

/// Pass 2's state of one flow.
#[derive(Default)]
struct Pass2 {
    prev_rx: Option<u64>,
    /// (seq, owd, filled) by seq modulo [`RING`]: IPDV's pairs.
    ring: Vec<(u64, i64, bool)>,
    tx_last_seen: bool,
    rx_last_seen: bool,
    /// The end marker arrived as a plain copy / only as LAST repeats.
    final_plain: bool,
    final_repeat: bool,
}

const RING: usize = wirelab_analysis::flow::IPDV_RING;

/// What the figures need beyond the summary, over ranges the summary gave.
struct Plots {
    owd_env: Option<Envelope>,
    owd_hist: Option<LinearHist>,
    ia_hist: Option<LinearHist>,
    ipdv_hist: Option<LinearHist>,
    late_env: Option<Envelope>,
    /// Probes sent and received per send-time bucket.
    sent_per: Envelope,
    recv_per: Envelope,
}

impl Plots {
    fn new(summary: &Summary, span: Option<(u64, u64)>, opts: &ProbeOptions) -> Plots {
        let (t_lo, t_hi) = span.unwrap_or((0, 0));
        let lat: Option<DelayStats> = summary.totals.latency;
        let rxs = || summary.flows.iter().filter_map(|f| f.receiver.as_ref());
        let ia_hi = rxs()
            .filter_map(|r| r.interarrival.as_ref())
            .map(|i| i.dist.p999_ns)
            .max();
        let ipdv_r = rxs()
            .filter_map(|r| r.ipdv.as_ref())
            .map(|i| {
                i.p99_abs_ns
                    .saturating_mul(2)
                    .max(1)
                    .min(i.max_abs_ns.max(1))
            })
            .max();
        let late_min = summary
            .flows
            .iter()
            .filter_map(|f| f.sender.as_ref()?.lateness.as_ref())
            .map(|l| l.min_ns)
            .min();
        Plots {
            owd_env: lat.map(|l| Envelope::new(t_lo, t_hi, opts.buckets, l.min_ns)),
            owd_hist: lat.map(|l| {
                let hi = l.p999_ns.max(l.min_ns.saturating_add(1)).saturating_add(1);
                LinearHist::new(l.min_ns, hi, opts.bins)
            }),
            ia_hist: ia_hi.map(|hi| LinearHist::new(0, hi.max(1).saturating_add(1), opts.bins)),
            ipdv_hist: ipdv_r.map(|r| LinearHist::new(-r, r.saturating_add(1), opts.bins)),
            late_env: late_min.map(|m| Envelope::new(t_lo, t_hi, opts.buckets, m)),
            sent_per: Envelope::new(t_lo, t_hi, opts.buckets, 0),
            recv_per: Envelope::new(t_lo, t_hi, opts.buckets, 0),
        }
    }

    /// Pass 2 for one record of flow `f`.
    fn observe(&mut self, st: &mut Pass2, f: &Flow, r: &Record) {
        let flags = ProbeFlags(r.probe_flags);
        if flags.is_warmup() {
            return;
        }
        match r.kind {
            RecordKind::Tx => self.observe_tx(st, f, r, flags),
            RecordKind::Rx => self.observe_rx(st, f, r, flags),
            _ => {}
        }
    }

    fn observe_tx(&mut self, st: &mut Pass2, f: &Flow, r: &Record, flags: ProbeFlags) {
        // Repeats of the LAST probe count once.
        if flags.is_last() && std::mem::replace(&mut st.tx_last_seen, true) {
            return;
        }
        self.sent_per.mark(r.tx_ns, 1);
        if r.sched_ns != 0 {
            if let (Some(env), Some(start)) = (self.late_env.as_mut(), f.start) {
                let late = i128::from(r.tx_ns) - i128::from(start) - i128::from(r.sched_ns);
                env.record(r.tx_ns, clamp(late));
            }
        }
    }

    fn observe_rx(&mut self, st: &mut Pass2, f: &Flow, r: &Record, flags: ProbeFlags) {
        let final_seq = f.final_tx.map(|f| f.0);
        if flags.is_last() {
            match final_seq {
                // With sender records: counted after the pass, once, at the
                // original's send time.
                Some(fs) if fs == r.seq => st.final_repeat = true,
                Some(_) => {}
                None if !std::mem::replace(&mut st.rx_last_seen, true) => {
                    self.recv_per.mark(r.tx_ns, 1)
                }
                None => {}
            }
        } else {
            st.final_plain |= final_seq == Some(r.seq);
            self.recv_per.mark(r.tx_ns, 1);
        }
        if r.rx_ns == 0 {
            return;
        }
        if let (Some(prev), Some(h)) = (st.prev_rx, self.ia_hist.as_mut()) {
            h.record(clamp(i128::from(r.rx_ns) - i128::from(prev)));
        }
        st.prev_rx = Some(r.rx_ns);
        if r.tx_ns == 0 {
            return;
        }
        let owd = clamp(i128::from(r.rx_ns) - i128::from(r.tx_ns));
        if let Some(e) = self.owd_env.as_mut() {
            e.record(r.tx_ns, owd);
        }
        if let Some(h) = self.owd_hist.as_mut() {
            h.record(owd);
        }
        self.record_ipdv(st, r.seq, owd);
    }

    /// IPDV over sequence-consecutive pairs, whatever their arrival order
    /// (the analysis's pairing).
    fn record_ipdv(&mut self, st: &mut Pass2, seq: u64, owd: i64) {
        if st.ring.is_empty() {
            st.ring = vec![(0, 0, false); RING];
        }
        let at = |s: u64| (s % RING as u64) as usize;
        if let Some(h) = self.ipdv_hist.as_mut() {
            if let Some(p) = seq.checked_sub(1) {
                let (ps, po, ok) = st.ring[at(p)];
                if ok && ps == p {
                    h.record(owd.saturating_sub(po));
                }
            }
            if let Some(n) = seq.checked_add(1) {
                let (ns, no, ok) = st.ring[at(n)];
                if ok && ns == n {
                    h.record(no.saturating_sub(owd));
                }
            }
        }
        st.ring[at(seq)] = (seq, owd, true);
    }

    /// An end marker that arrived only as LAST repeats counts once, at the
    /// original's send time.
    fn count_final_repeats(&mut self, state: &HashMap<u32, Pass2>, flows: &HashMap<u32, Flow>) {
        for (id, st) in state {
            if let (true, false, Some((_, t))) =
                (st.final_repeat, st.final_plain, flows[id].final_tx)
            {
                self.recv_per.mark(t, 1);
            }
        }
    }

    /// Loss marks with sender records: sent − received per send-time bucket.
    fn mark_loss_by_send_time(&mut self) {
        let Some(env) = self.owd_env.as_mut() else {
            return;
        };
        let recv: HashMap<u64, u64> = self.recv_per.marks().into_iter().collect();
        for (t, n) in self.sent_per.marks() {
            let lost = n.saturating_sub(recv.get(&t).copied().unwrap_or(0));
            env.mark(t, lost);
        }
    }

    /// Loss marks from receiver records alone: the first lost sequence
    /// numbers placed between the flow's first and last arrival.
    fn mark_lost_sequences(&mut self, summary: &Summary, flows: &HashMap<u32, Flow>) {
        let Some(env) = self.owd_env.as_mut() else {
            return;
        };
        for f in &summary.flows {
            let Some(rx) = &f.receiver else { continue };
            let fl = &flows[&f.flow];
            let (Some((s0, t0)), Some((s1, t1))) = (fl.rx_first, fl.rx_last) else {
                continue;
            };
            for &seq in &rx.loss.lost_seqs {
                env.mark(interpolate(seq, (s0, t0), (s1, t1)), 1);
            }
        }
    }
}

/// Loss bursts and reordering extents summed over flows by length bucket,
/// and the throughput windows summed over flows.
fn receiver_totals(summary: &Summary) -> (Vec<LenBucket>, Vec<LenBucket>, Vec<RateWindow>) {
    let mut bursts = BTreeMap::new();
    let mut extents = BTreeMap::new();
    let mut windows: BTreeMap<u64, RateWindow> = BTreeMap::new();
    for r in summary.flows.iter().filter_map(|f| f.receiver.as_ref()) {
        for b in &r.loss.bursts.lengths {
            *bursts.entry((b.from, b.to)).or_insert(0u64) += b.count;
        }
        for b in &r.reordering.extents {
            *extents.entry((b.from, b.to)).or_insert(0u64) += b.count;
        }
        for w in &r.windows {
            let e = windows.entry(w.t_start_ns).or_insert(RateWindow {
                t_ns: w.t_start_ns,
                packets: 0,
                rate_pps: 0.0,
                payload_bps: 0.0,
                wire_bps: 0.0,
            });
            e.packets += w.packets;
            e.rate_pps += w.rate_pps;
            e.payload_bps += w.payload_bps;
            e.wire_bps += w.wire_bps;
        }
    }
    let lb = |m: BTreeMap<(u64, u64), u64>| {
        m.into_iter()
            .map(|((from, to), count)| LenBucket { from, to, count })
            .collect()
    };
    (lb(bursts), lb(extents), windows.into_values().collect())
}

fn clamp(v: i128) -> i64 {
    v.clamp(i64::MIN.into(), i64::MAX.into()) as i64
}

/// `seq`'s send time on the line through two (seq, time) points.
fn interpolate(seq: u64, (s0, t0): (u64, u64), (s1, t1): (u64, u64)) -> u64 {
    if s1 <= s0 {
        return t0;
    }
    let frac = (seq as f64 - s0 as f64) / (s1 as f64 - s0 as f64);
    let t = t0 as f64 + frac * (t1 as f64 - t0 as f64);
    t.clamp(0.0, u64::MAX as f64) as u64
}

/// Quantiles drawn on the CDF: every percent, then the tail.
fn quantile_grid() -> Vec<f64> {
    let mut q: Vec<f64> = (0..=99).map(|i| f64::from(i) / 100.0).collect();
    q.extend([0.995, 0.999, 0.9995, 0.9999, 1.0]);
    q
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::{MemorySource, RecordFile};
    use wirelab_analysis::{analyze_run, RunRecords};
    use wirelab_wire::record::{RecordFileHeader, Role};

    const T0: u64 = 1_700_000_000_000_000_000;
    const MS: u64 = 1_000_000;

    /// Flow 1: 20 probes 1 ms apart, seqs 5–7 and 12 lost (bursts of 3 and
    /// 1), 16 arrives before 15 (one reordered), OWD 100 µs + seq µs.
    /// Flow 2: 10 probes, OWD 50 µs; the last (seq 9) is lost and only a
    /// LAST-flagged repeat of it arrives (a send time of its own), which
    /// counts as receiving it.
    fn run() -> (Vec<Record>, Vec<Record>) {
        let tx = |flow, seq: u64| Record {
            flow,
            seq,
            size: 100,
            sched_ns: (seq + 1) * MS,
            tx_ns: T0 + (seq + 1) * MS + 2_000 + seq * 10,
            kind: RecordKind::Tx,
            ..Record::default()
        };
        let mut txs: Vec<Record> = (0..20).map(|s| tx(1, s)).collect();
        txs.extend((0..10).map(|s| tx(2, s)));
        let rx = |t: &Record| Record {
            kind: RecordKind::Rx,
            rx_ns: t.tx_ns
                + if t.flow == 1 {
                    100_000 + t.seq * 1_000
                } else {
                    50_000
                },
            ..*t
        };
        let mut order: Vec<u64> = (0..20).filter(|s| ![5, 6, 7, 12].contains(s)).collect();
        let i = order.iter().position(|&s| s == 15).unwrap();
        order.swap(i, i + 1);
        let mut rxs: Vec<Record> = order.iter().map(|&s| rx(&txs[s as usize])).collect();
        rxs.extend(txs[20..29].iter().map(rx));
        let repeat = Record {
            tx_ns: txs[29].tx_ns + 5_000,
            probe_flags: ProbeFlags::LAST,
            ..txs[29]
        };
        rxs.push(rx(&repeat));
        (txs, rxs)
    }

    fn write(path: &std::path::Path, role: Role, meta: &str, recs: &[Record], tail: &[u8]) {
        let mut b = RecordFileHeader {
            role,
            metadata: meta.into(),
        }
        .file_with(recs);
        b.extend_from_slice(tail);
        std::fs::write(path, b).unwrap();
    }

    #[test]
    fn golden_summary_numbers_equal_the_analysis_of_the_same_records() {
        let dir = std::env::temp_dir().join(format!("wl-report-golden-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let (txs, rxs) = run();
        let (s, r) = (dir.join("tx.wlr"), dir.join("rx.wlr"));
        let meta = format!(
            r#"{{"role":"sender","host":"h","start_unix_ns":{T0},"config":{{"interval":"const:1ms"}}}}"#
        );
        write(&s, Role::Sender, &meta, &txs, &[]);
        write(
            &r,
            Role::Receiver,
            r#"{"role":"receiver"}"#,
            &rxs,
            &[1, 2, 3],
        );
        let (fs, fr) = (RecordFile::open(&s).unwrap(), RecordFile::open(&r).unwrap());
        let opts = ProbeOptions {
            requested: Requested {
                mean_interval_ns: Some(MS),
                ..Requested::default()
            },
            ..ProbeOptions::default()
        };
        let d = collect(&[&fs, &fr], &opts).unwrap();
        let f1 = &d.summary.flows[0];
        assert_eq!(
            (f1.sent, f1.received, f1.lost),
            (Some(20), Some(16), Some(4))
        );
        assert_eq!((f1.duplicates, f1.reordered), (Some(0), Some(1)));
        let bursts = &f1.receiver.as_ref().unwrap().loss.bursts;
        assert_eq!((bursts.count, bursts.max_len), (2, 3));
        let l = f1.latency.unwrap();
        assert_eq!((l.min_ns, l.max_ns), (100_000, 119_000));
        let t = &d.summary.totals;
        assert_eq!((t.sent, t.received, t.lost), (Some(30), Some(26), Some(4)));
        assert_eq!(t.latency.unwrap().min_ns, 50_000);
        assert_eq!(d.sources[1].1.partial_bytes, 3);
        // Loss-burst and reordering figures' data.
        let b: Vec<(u64, u64)> = d.bursts.iter().map(|b| (b.from, b.count)).collect();
        assert_eq!(b, vec![(1, 1), (3, 1)]);
        assert_eq!(d.extents.iter().map(|b| b.count).sum::<u64>(), 1);
        // Loss marks by send time: exactly the 4 lost probes (a repeat of
        // the end marker received it).
        let marks = d.owd.as_ref().unwrap().marks();
        assert_eq!(marks.iter().map(|m| m.1).sum::<u64>(), 4);
        // Lateness 2 µs + 10 ns per seq.
        let lp = d.lateness.as_ref().unwrap().points();
        assert_eq!(lp.iter().map(|p| p.min).min(), Some(2_000));
        assert_eq!(lp.iter().map(|p| p.max).max(), Some(2_190));

        // The same numbers as `wirelab analyze` on the same records.
        let recs = RunRecords {
            tx: txs.clone(),
            rx: rxs.clone(),
            echo: Vec::new(),
            sender_start_unix_ns: Some(T0),
        };
        let a = analyze_run(&recs, &opts.requested, opts.window_ns, 64).unwrap();
        for (x, y) in a.flows.iter().zip(&d.summary.flows) {
            assert_eq!(
                (
                    x.sent,
                    x.received,
                    x.lost,
                    x.loss_ratio,
                    x.duplicates,
                    x.reordered
                ),
                (
                    y.sent,
                    y.received,
                    y.lost,
                    y.loss_ratio,
                    y.duplicates,
                    y.reordered
                )
            );
            assert_eq!(x.latency, y.latency);
            assert_eq!(x.sender, y.sender);
            let (rx, ry) = (x.receiver.as_ref().unwrap(), y.receiver.as_ref().unwrap());
            assert_eq!(
                (&rx.loss.bursts, &rx.reordering, &rx.ipdv),
                (&ry.loss.bursts, &ry.reordering, &ry.ipdv)
            );
        }
        assert_eq!(a.totals.latency, d.summary.totals.latency);

        // The page: every figure, the table's golden cells.
        let html = crate::probe_page::render(&d, "golden").unwrap();
        assert_eq!(html.matches("<svg").count(), 10);
        for t in crate::probe_page::RX_FIGURES
            .iter()
            .chain(&crate::probe_page::TX_FIGURES)
        {
            assert!(html.contains(&format!("<h3>{t}</h3>")), "{t}");
        }
        assert!(
            html.contains("<td data-v=\"0.2\">20.0000 %</td>"),
            "flow 1 loss"
        );
        assert!(html.contains("<td data-v=\"4\">4</td>"), "lost");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn receiver_records_alone_place_losses_and_leave_the_sender_out() {
        let (_, rxs) = run();
        let src = MemorySource {
            info: SourceInfo {
                name: "rx".into(),
                side: Side::Receiver,
                metadata: None,
            },
            records: rxs,
        };
        let d = collect(&[&src], &ProbeOptions::default()).unwrap();
        assert!(!d.has_tx() && d.has_rx() && !d.loss_exact);
        // Lost seqs 5-7 and 12 below the highest arrival: placed in time.
        let marks = d.owd.as_ref().unwrap().marks();
        assert_eq!(marks.iter().map(|m| m.1).sum::<u64>(), 4);
        let html = crate::probe_page::render(&d, "rx").unwrap();
        assert_eq!(html.matches("<svg").count(), 9);
    }

    #[test]
    fn hostile_inputs_give_errors_not_panics() {
        let dir = std::env::temp_dir().join(format!("wl-report-hostile-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let junk = dir.join("junk");
        std::fs::write(&junk, b"not a record file at all").unwrap();
        assert!(matches!(
            RecordFile::open(&junk),
            Err(ReportError::Input { .. })
        ));
        assert!(matches!(
            RecordFile::open(&dir.join("none")),
            Err(ReportError::Open { .. })
        ));
        // Extreme values everywhere.
        let wild: Vec<Record> = [0u64, 1, u64::MAX, u64::MAX / 2]
            .iter()
            .enumerate()
            .map(|(i, &v)| Record {
                flow: i as u32 % 2,
                seq: v,
                size: u32::MAX,
                sched_ns: v,
                tx_ns: v,
                rx_ns: v.rotate_left(7),
                kind: if i % 2 == 0 {
                    RecordKind::Rx
                } else {
                    RecordKind::Tx
                },
                probe_flags: !ProbeFlags::WARMUP,
                ..Record::default()
            })
            .collect();
        let w = dir.join("wild.wlr");
        write(&w, Role::Receiver, "{", &wild, &[]);
        let f = RecordFile::open(&w).unwrap();
        let d = collect(&[&f], &ProbeOptions::default()).unwrap();
        crate::probe_page::render(&d, "wild").unwrap();
        let s = dir.join("wild-s.wlr");
        write(&s, Role::Sender, r#"{"start_unix_ns":"x"}"#, &wild, &[]);
        let fs = RecordFile::open(&s).unwrap();
        let d = collect(&[&fs, &f], &ProbeOptions::default()).unwrap();
        crate::probe_page::render(&d, "wild").unwrap();
        // Too many flows, and nothing at all.
        let many: Vec<Record> = (0..5)
            .map(|flow| Record {
                flow,
                kind: RecordKind::Rx,
                ..Record::default()
            })
            .collect();
        write(&w, Role::Receiver, "{}", &many, &[]);
        let f = RecordFile::open(&w).unwrap();
        let opts = ProbeOptions {
            max_flows: 4,
            ..ProbeOptions::default()
        };
        assert!(matches!(
            collect(&[&f], &opts),
            Err(ReportError::TooManyFlows { limit: 4 })
        ));
        write(&w, Role::Receiver, "{}", &[], &[]);
        let f = RecordFile::open(&w).unwrap();
        assert!(matches!(collect(&[&f], &opts), Err(ReportError::NoRecords)));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

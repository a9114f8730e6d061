//! Streaming statistics fed by running jobs, one record at a time: the
//! receiver's per-flow metrics ([`LiveFlows`]) and a sending flow's pacing
//! and distribution samples ([`SendAccum`]).
//!
//! Memory grows with the packets seen, up to fixed caps per flow:
//! * a received flow: 64 bytes per probe for its first
//!   [`STAGE_RECORDS`](crate::staged::STAGE_RECORDS), then about 1.3 MiB
//!   ([`FlowStats`]: histograms, loss window, reordering history) plus
//!   32 bytes per throughput window; at most `max_flows` flows are
//!   tracked, probes of further flows are counted, not analyzed;
//! * a sending flow: the same staging when it will send at most
//!   [`STAGE_RECORDS`] probes, else about 0.9 MiB ([`SenderStats`]) built
//!   before it starts, plus 8 bytes per probe for each of the two KS
//!   samples up to [`KS_SAMPLES`] (3.2 MB in all); echo replies are staged
//!   like received probes, then take about 1.5 MiB ([`RttStats`]).

use crate::report::{FlowReport, SentSource, Summary};
use crate::requested::{fill_ks, Requested};
use crate::staged::{Staged, STAGE_RECORDS};
use crate::{FlowConfig, FlowStats, RateModel, RttStats, SenderInfo, SenderStats};
use std::collections::{HashMap, HashSet};
use wirelab_wire::record::Record;
use wirelab_wire::ProbeFlags;

/// Default of the most flows a live receiver tracks.
pub const DEFAULT_MAX_LIVE_FLOWS: usize = 4096;

/// Distinct untracked flow ids counted (4 bytes each); beyond, only their
/// packets are.
pub const MAX_UNTRACKED_IDS: usize = 65_536;

/// Per-flow streaming statistics of a running receiver.
pub struct LiveFlows {
    cfg: FlowConfig,
    max_flows: usize,
    flows: HashMap<u32, Staged<FlowStats>>,
    untracked_ids: HashSet<u32>,
    untracked_packets: u64,
}

impl LiveFlows {
    /// Tracks up to `max_flows` flows (at least 1).
    pub fn new(window_ns: u64, max_flows: usize) -> Self {
        LiveFlows {
            cfg: FlowConfig {
                window_ns,
                ..FlowConfig::default()
            },
            max_flows: max_flows.max(1),
            flows: HashMap::new(),
            untracked_ids: HashSet::new(),
            untracked_packets: 0,
        }
    }

    /// Feeds one received probe, in arrival order.
    pub fn observe(&mut self, r: &Record) {
        let n = self.flows.len();
        let cfg = self.cfg;
        let make = || FlowStats::new(r.flow, cfg);
        match self.flows.get_mut(&r.flow) {
            Some(f) => f.observe(r, make),
            None if n < self.max_flows => self.flows.entry(r.flow).or_default().observe(r, make),
            None => {
                self.untracked_packets = self.untracked_packets.saturating_add(1);
                if self.untracked_ids.len() < MAX_UNTRACKED_IDS {
                    self.untracked_ids.insert(r.flow);
                }
            }
        }
    }

    /// The report as of now: one flow's full statistics at a time are
    /// built for flows still staged.
    pub fn finish(&self) -> Summary {
        let cfg = self.cfg;
        let flows = self
            .flows
            .iter()
            .map(|(&id, f)| f.with(|| FlowStats::new(id, cfg), |s| s.finish(None)))
            .collect();
        let mut s = Summary::new(flows);
        s.totals.untracked_flows = self.untracked_ids.len() as u64;
        s.totals.untracked_packets = self.untracked_packets;
        s
    }
}

/// Most samples kept for a KS distance; beyond it a uniform reservoir
/// sample (Algorithm R) keeps memory bounded on long runs.
pub const KS_SAMPLES: usize = 200_000;

/// Samples are stored in chunks of this many: the reservoir grows with the
/// flow without ever copying what it holds (a copy of a large buffer on the
/// packet path would make probes late).
const CHUNK: usize = 4096;

/// A bounded uniform sample of a stream of values.
pub struct Reservoir {
    seen: u64,
    state: u64,
    chunks: Vec<Vec<f64>>,
}

impl Reservoir {
    pub fn new(seed: u64) -> Self {
        Reservoir {
            seen: 0,
            state: seed | 1,
            chunks: Vec::new(),
        }
    }

    pub fn add(&mut self, v: f64) {
        self.seen += 1;
        if self.seen <= KS_SAMPLES as u64 {
            match self.chunks.last_mut() {
                Some(c) if c.len() < CHUNK => c.push(v),
                _ => {
                    let mut c = Vec::with_capacity(CHUNK);
                    c.push(v);
                    self.chunks.push(c);
                }
            }
            return;
        }
        // xorshift64*: cheap, and good enough to pick reservoir slots.
        self.state ^= self.state >> 12;
        self.state ^= self.state << 25;
        self.state ^= self.state >> 27;
        let r = (self.state.wrapping_mul(0x2545_f491_4f6c_dd1d) % self.seen) as usize;
        if r < KS_SAMPLES {
            self.chunks[r / CHUNK][r % CHUNK] = v;
        }
    }

    /// The kept samples, in one buffer (off the packet path).
    pub fn samples(&self) -> Vec<f64> {
        self.chunks.concat()
    }
}

/// Streaming sender statistics of one flow, fed by its sending thread.
pub struct SendAccum {
    info: SenderInfo,
    stats: Staged<SenderStats>,
    intervals: Reservoir,
    sizes: Reservoir,
    prev_tx: Option<u64>,
}

impl SendAccum {
    /// `probes`: the Tx records the flow will feed, when known (a count).
    /// With more than [`STAGE_RECORDS`] or unknown, the full statistics are
    /// built now, before the flow starts: building them (zeroing their
    /// histograms) mid-run would stall the sending thread and make probes
    /// late.
    pub fn new(info: SenderInfo, probes: Option<u64>) -> Self {
        let mut stats = Staged::new();
        if probes.is_none_or(|n| n > STAGE_RECORDS as u64) {
            stats.build(|| SenderStats::new(info, RateModel::default()));
        }
        SendAccum {
            info,
            stats,
            intervals: Reservoir::new(0x1234),
            sizes: Reservoir::new(0x5678),
            prev_tx: None,
        }
    }

    /// Feeds one Tx record, in departure order.
    pub fn observe(&mut self, r: &Record) {
        let info = self.info;
        self.stats
            .observe(r, || SenderStats::new(info, RateModel::default()));
        if ProbeFlags(r.probe_flags).is_warmup() {
            return;
        }
        if let Some(p) = self.prev_tx {
            self.intervals.add(r.tx_ns.saturating_sub(p) as f64);
        }
        self.prev_tx = Some(r.tx_ns);
        self.sizes.add(r.size as f64);
    }

    /// The flow's report from the sender's side; `rtt` with echo requests.
    pub fn report(&self, flow: u32, req: &Requested, rtt: Option<&RttStats>) -> FlowReport {
        let mut rep = FlowReport::empty(flow);
        let info = self.info;
        let (sender, sent) = self.stats.with(
            || SenderStats::new(info, RateModel::default()),
            |s| (s.finish(), s.sent()),
        );
        rep.sent = Some(sent);
        rep.sent_source = Some(SentSource::SenderRecords);
        rep.rtt = rtt.map(|r| r.finish(Some(sender.echo_requests)));
        rep.sender = Some(sender);
        fill_ks(
            &mut rep,
            req,
            &mut self.intervals.samples(),
            &mut self.sizes.samples(),
        );
        rep
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wirelab_wire::RecordKind;

    const T0: u64 = 1_700_000_000_000_000_000;

    fn rx(flow: u32, seq: u64) -> Record {
        let tx_ns = T0 + seq * 1_000_000;
        Record {
            flow,
            seq,
            size: 100,
            tx_ns,
            // Varying delays, and one reordered pair per 100.
            rx_ns: tx_ns + 10_000 + (seq * 7919) % 5000,
            kind: RecordKind::Rx,
            probe_flags: if seq == 3000 { ProbeFlags::LAST } else { 0 },
            ..Record::default()
        }
    }

    #[test]
    fn live_flows_are_staged_capped_and_counted() {
        let mut live = LiveFlows::new(1_000_000_000, 3);
        for flow in 0..3 {
            live.observe(&rx(flow, 0));
        }
        // Flows past the cap: counted, ids and probes.
        for flow in 3..10 {
            live.observe(&rx(flow, 0));
            live.observe(&rx(flow, 1));
        }
        assert!(live.flows.values().all(|f| !f.is_built()));
        let s = live.finish();
        assert_eq!(s.flows.len(), 3);
        assert_eq!(
            (s.totals.untracked_flows, s.totals.untracked_packets),
            (7, 14)
        );
        assert_eq!(s.flows[0].received, Some(1));
    }

    #[test]
    fn staged_and_direct_statistics_agree() {
        for n in [1, 10, STAGE_RECORDS as u64, STAGE_RECORDS as u64 + 1, 3001] {
            let mut live = LiveFlows::new(1_000_000_000, 4);
            let mut direct = FlowStats::new(7, live.cfg);
            let mut order: Vec<u64> = (0..n).collect();
            for k in (0..order.len().saturating_sub(1)).step_by(100) {
                order.swap(k, k + 1);
            }
            for &seq in &order {
                live.observe(&rx(7, seq));
                direct.observe(
                    seq,
                    rx(7, seq).tx_ns,
                    rx(7, seq).rx_ns,
                    100,
                    ProbeFlags(rx(7, seq).probe_flags),
                );
            }
            let built = live.flows.get(&7).is_some_and(|f| f.is_built());
            assert_eq!(built, n > STAGE_RECORDS as u64, "{n}");
            assert_eq!(live.finish().flows[0], direct.finish(None), "{n}");
        }
    }

    #[test]
    fn send_accum_and_rtt_agree_with_direct_statistics() {
        let info = SenderInfo {
            start_unix_ns: T0,
            interval_ns: Some(1_000_000),
            late_threshold_ns: None,
        };
        let req = Requested::default();
        assert!(SendAccum::new(info, None).stats.is_built());
        assert!(!SendAccum::new(info, Some(STAGE_RECORDS as u64))
            .stats
            .is_built());
        for n in [2, STAGE_RECORDS as u64 + 5] {
            let mut acc = SendAccum::new(info, Some(n));
            let mut direct = SenderStats::new(info, RateModel::default());
            let mut rtt = RttStats::new();
            for seq in 0..n {
                let t = Record {
                    flow: 1,
                    seq,
                    size: 64,
                    sched_ns: (seq + 1) * 1_000_000,
                    tx_ns: T0 + (seq + 1) * 1_000_000 + (seq * 31) % 700,
                    kind: RecordKind::Tx,
                    probe_flags: ProbeFlags::ECHO_REQUEST,
                    ..Record::default()
                };
                acc.observe(&t);
                direct.observe_record(&t);
                let reply = Record {
                    kind: RecordKind::EchoReply,
                    refl_rx_ns: t.tx_ns + 400,
                    refl_tx_ns: t.tx_ns + 450 + seq % 13,
                    rx_ns: t.tx_ns + 900 + seq % 101,
                    ..t
                };
                rtt.observe_record(&reply);
            }
            // Built before the start when the flow will outgrow the stage.
            assert_eq!(acc.stats.is_built(), n > STAGE_RECORDS as u64);
            let rep = acc.report(1, &req, Some(&rtt));
            assert_eq!(rep.sent, Some(n));
            assert_eq!(rep.sender, Some(direct.finish()));
            let r = rep.rtt.unwrap();
            assert_eq!((r.replies, r.lost), (n, Some(0)));
            assert_eq!(r.rtt.unwrap().count, n);
        }
    }

    #[test]
    fn reservoir_grows_with_the_stream_and_stops_at_the_cap() {
        let mut r = Reservoir::new(7);
        for i in 0..10 {
            r.add(i as f64);
        }
        assert_eq!(r.samples(), (0..10).map(|i| i as f64).collect::<Vec<_>>());
        assert_eq!(r.chunks.len(), 1);
        for i in 10..(KS_SAMPLES as u64 + 50_000) {
            r.add(i as f64);
        }
        let s = r.samples();
        assert_eq!(s.len(), KS_SAMPLES);
        assert_eq!(r.chunks.len(), KS_SAMPLES.div_ceil(CHUNK));
        // Later values replaced some of the first ones.
        assert!(s.iter().any(|&v| v >= KS_SAMPLES as f64));
    }
}

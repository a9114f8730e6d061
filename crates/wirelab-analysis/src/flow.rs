//! [`FlowStats`]: the streaming per-flow accumulator of received probes.
//!
//! Used live by the receiver (up to ~1 Mpps) and by the offline analyzer.
//! Every [`FlowStats::observe`] is O(1) amortised and allocation free in the
//! steady state: the duplicate/loss bitmap, the IPDV ring and the HDR
//! histograms (about 1.2 MiB in all) are allocated at construction, the
//! reordering history grows to a bounded size (128 KiB), throughput windows
//! grow with time only. A live receiver builds it only once a flow has
//! sent enough to need it ([`crate::staged`]). [`FlowStats::finish`] takes
//! `&self`, so a live receiver can report and keep observing.
//!
//! Metric definitions:
//! * loss, bursts, duplicates: [`crate::seqwin`] (first expected seq is 0).
//! * reordering: RFC 4737 ([`crate::reorder`]).
//! * one-way delay `rx_ns - tx_ns` (signed, see
//!   [`crate::report::OWD_CLOCK_NOTE`]), PDV per RFC 5481 §4.2.
//! * IPDV per RFC 3393 over sequence-consecutive pairs (RFC 5481 §4.1).
//! * jitter per RFC 3550 §6.4.1: `J += (|D| - J) / 16` with `D` the OWD
//!   difference of consecutive arrivals (arrival order).
//! * inter-arrival: rx_ns deltas between consecutive measured arrivals.

use crate::latency::SignedHistogram;
use crate::reorder::Reorder;
use crate::report::{
    diff_ns, ratio, FlowReport, IntervalStats, IpdvStats, PdvStats, RateAcc, ReceiverReport,
    SentSource, SizeAcc,
};
use crate::seqwin::{SeqOutcome, SeqWindow};
use crate::staged::Accumulate;
use crate::window::{RateModel, Windows};
use wirelab_wire::{ProbeFlags, Record};

/// Sequence-number span of the IPDV pairing ring.
pub const IPDV_RING: usize = 1024;

/// Per-flow analysis parameters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FlowConfig {
    /// Throughput window length (0 means 1 s).
    pub window_ns: u64,
    pub rate_model: RateModel,
    /// The sender's requested (mean) interval, for inter-arrival error.
    pub requested_interval_ns: Option<u64>,
}

impl Default for FlowConfig {
    fn default() -> Self {
        FlowConfig {
            window_ns: 1_000_000_000,
            rate_model: RateModel::default(),
            requested_interval_ns: None,
        }
    }
}

/// How [`FlowStats::observe`] classified an arrival.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arrival {
    /// A measured first arrival.
    Measured,
    /// A warm-up probe: marks its seq received, excluded from metrics.
    Warmup,
    /// A second copy of a sequence number already received.
    Duplicate,
    /// A repeat of the LAST-flagged probe (not a duplicate).
    LastRepeat,
}

#[derive(Debug, Clone, Copy, Default)]
struct IpdvSlot {
    seq: u64,
    owd: i64,
    valid: bool,
}

/// Streaming per-flow accumulator; see the module docs.
#[derive(Debug, Clone)]
pub struct FlowStats {
    flow: u32,
    cfg: FlowConfig,
    seqs: SeqWindow,
    reorder: Reorder,
    received: u64,
    duplicates: u64,
    last_repeats: u64,
    warmup: u64,
    no_rx_ts: u64,
    last_flag_seq: Option<u64>,
    owd: SignedHistogram,
    ipdv: SignedHistogram,
    ipdv_abs: SignedHistogram,
    ipdv_ring: Box<[IpdvSlot]>,
    jitter: f64,
    prev_owd: Option<i64>,
    prev_rx: Option<u64>,
    iat: SignedHistogram,
    iat_abs_err: f64,
    rate: RateAcc,
    sizes: SizeAcc,
    windows: Windows,
}

impl FlowStats {
    pub fn new(flow: u32, cfg: FlowConfig) -> FlowStats {
        FlowStats {
            flow,
            cfg,
            seqs: SeqWindow::new(),
            reorder: Reorder::new(),
            received: 0,
            duplicates: 0,
            last_repeats: 0,
            warmup: 0,
            no_rx_ts: 0,
            last_flag_seq: None,
            owd: SignedHistogram::new(),
            ipdv: SignedHistogram::new(),
            ipdv_abs: SignedHistogram::new(),
            ipdv_ring: vec![IpdvSlot::default(); IPDV_RING].into_boxed_slice(),
            jitter: 0.0,
            prev_owd: None,
            prev_rx: None,
            iat: SignedHistogram::new(),
            iat_abs_err: 0.0,
            rate: RateAcc::default(),
            sizes: SizeAcc::default(),
            windows: Windows::new(cfg.window_ns, cfg.rate_model),
        }
    }

    pub fn flow(&self) -> u32 {
        self.flow
    }

    /// One-way delay histogram of measured probes (for merging totals).
    pub fn owd_histogram(&self) -> &SignedHistogram {
        &self.owd
    }

    /// Feeds one received probe, in arrival order. `tx_ns` is the sender's
    /// timestamp from the probe, `rx_ns` the local receive time (0 = none),
    /// `size` the UDP payload bytes.
    pub fn observe(
        &mut self,
        seq: u64,
        tx_ns: u64,
        rx_ns: u64,
        size: u32,
        flags: ProbeFlags,
    ) -> Arrival {
        if self.seqs.insert(seq) == SeqOutcome::Duplicate {
            if flags.is_last() {
                // The end marker may repeat a probe that arrived without
                // the flag: it still tells the sent count.
                self.last_flag_seq = Some(self.last_flag_seq.map_or(seq, |s| s.max(seq)));
                self.last_repeats = self.last_repeats.saturating_add(1);
                return Arrival::LastRepeat;
            }
            self.duplicates = self.duplicates.saturating_add(1);
            return Arrival::Duplicate;
        }
        if flags.is_last() {
            self.last_flag_seq = Some(self.last_flag_seq.map_or(seq, |s| s.max(seq)));
        }
        if flags.is_warmup() {
            self.warmup = self.warmup.saturating_add(1);
            return Arrival::Warmup;
        }
        self.received = self.received.saturating_add(1);
        self.reorder.observe(seq);
        self.sizes.add(size);
        if rx_ns == 0 {
            self.no_rx_ts = self.no_rx_ts.saturating_add(1);
            return Arrival::Measured;
        }
        self.rate.add(rx_ns, size, &self.cfg.rate_model);
        self.windows.add(rx_ns, size);
        if let Some(prev) = self.prev_rx {
            let d = diff_ns(rx_ns, prev);
            self.iat.record(d, seq);
            if let Some(r) = self.cfg.requested_interval_ns {
                self.iat_abs_err += (d as f64 - r as f64).abs();
            }
        }
        self.prev_rx = Some(rx_ns);
        if tx_ns != 0 {
            let owd = diff_ns(rx_ns, tx_ns);
            self.owd.record(owd, seq);
            if let Some(p) = self.prev_owd {
                let d = owd.saturating_sub(p).unsigned_abs() as f64;
                self.jitter += (d - self.jitter) / 16.0;
            }
            self.prev_owd = Some(owd);
            self.pair_ipdv(seq, owd);
        }
        Arrival::Measured
    }

    fn pair_ipdv(&mut self, seq: u64, owd: i64) {
        let at = |s: u64| (s % IPDV_RING as u64) as usize;
        if let Some(prev) = seq.checked_sub(1) {
            if let Some(p) = self.ipdv_ring.get(at(prev)).copied() {
                if p.valid && p.seq == prev {
                    self.record_ipdv(owd.saturating_sub(p.owd), seq);
                }
            }
        }
        if let Some(next) = seq.checked_add(1) {
            if let Some(n) = self.ipdv_ring.get(at(next)).copied() {
                if n.valid && n.seq == next {
                    self.record_ipdv(n.owd.saturating_sub(owd), next);
                }
            }
        }
        if let Some(slot) = self.ipdv_ring.get_mut(at(seq)) {
            *slot = IpdvSlot {
                seq,
                owd,
                valid: true,
            };
        }
    }

    fn record_ipdv(&mut self, v: i64, seq: u64) {
        self.ipdv.record(v, seq);
        self.ipdv_abs
            .record(i64::try_from(v.unsigned_abs()).unwrap_or(i64::MAX), seq);
    }

    /// The flow's report as of now. `sent` is the sender's probe count
    /// (incl. warm-up) when known from elsewhere; otherwise the LAST flag's
    /// sequence number + 1 is used when a LAST probe arrived.
    pub fn finish(&self, sent: Option<u64>) -> FlowReport {
        let (sent, source) = match (sent, self.last_flag_seq) {
            (Some(s), _) => (Some(s), Some(SentSource::Caller)),
            (None, Some(l)) => (Some(l.saturating_add(1)), Some(SentSource::LastFlag)),
            (None, None) => (None, None),
        };
        let loss = self.seqs.finish(sent);
        let pdv = self.owd.stats().map(|s| {
            let q = |x| self.owd.quantile(x).unwrap_or(0).saturating_sub(s.min_ns);
            PdvStats {
                p50_ns: q(0.5),
                p90_ns: q(0.9),
                p99_ns: q(0.99),
                p999_ns: q(0.999),
                max_ns: s.max_ns.saturating_sub(s.min_ns),
            }
        });
        let ipdv = match (self.ipdv.stats(), self.ipdv_abs.stats()) {
            (Some(s), Some(a)) => Some(IpdvStats {
                pairs: s.count,
                mean_ns: s.mean_ns,
                mean_abs_ns: a.mean_ns,
                p50_abs_ns: a.p50_ns,
                p99_abs_ns: a.p99_ns,
                max_abs_ns: a.max_ns,
                max_abs_seq: a.max_seq.unwrap_or(0),
                min_ns: s.min_ns,
                max_ns: s.max_ns,
            }),
            _ => None,
        };
        let receiver = ReceiverReport {
            warmup: self.warmup,
            last_repeats: self.last_repeats,
            too_old: self.seqs.too_old(),
            no_rx_timestamp: self.no_rx_ts,
            highest_seq: self.seqs.highest(),
            last_flag_seq: self.last_flag_seq,
            unexpected: None,
            pdv,
            ipdv,
            jitter_ns: (!self.owd.is_empty()).then_some(self.jitter),
            interarrival: IntervalStats::from_hist(
                &self.iat,
                self.cfg.requested_interval_ns,
                self.iat_abs_err,
            ),
            sizes: self.sizes.report(),
            rate: self.rate.report(&self.cfg.rate_model),
            window_ns: self.windows.window_ns(),
            windows: self.windows.report(),
            unwindowed_packets: self.windows.unwindowed(),
            reordering: self.reorder.report(),
            loss,
        };
        FlowReport {
            flow: self.flow,
            sent,
            sent_source: source,
            received: Some(self.received),
            lost: Some(receiver.loss.lost),
            loss_ratio: ratio(Some(receiver.loss.lost), Some(receiver.loss.expected)),
            duplicates: Some(self.duplicates),
            reordered: Some(self.reorder.reordered()),
            latency: self.owd.stats(),
            receiver: Some(receiver),
            sender: None,
            rtt: None,
        }
    }
}

impl Accumulate for FlowStats {
    /// Feeds one Rx record.
    fn feed(&mut self, r: &Record) {
        self.observe(r.seq, r.tx_ns, r.rx_ns, r.size, ProbeFlags(r.probe_flags));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const T0: u64 = 1_700_000_000_000_000_000;
    const NONE: ProbeFlags = ProbeFlags::empty();

    fn flags(bits: u8) -> ProbeFlags {
        ProbeFlags(bits)
    }

    /// Probes every 1 ms, OWD given per seq; arrival order as listed.
    fn feed(f: &mut FlowStats, seqs: &[u64], owd: impl Fn(u64) -> u64) {
        for &s in seqs {
            let tx = T0 + s * 1_000_000;
            f.observe(s, tx, tx + owd(s), 100, NONE);
        }
    }

    #[test]
    fn loss_with_tail_and_bursts_via_sender_count() {
        let mut f = FlowStats::new(1, FlowConfig::default());
        let seqs: Vec<u64> = (0..95).filter(|s| ![10, 11, 12, 50].contains(s)).collect();
        feed(&mut f, &seqs, |_| 1000);
        let r = f.finish(Some(100));
        assert_eq!(r.sent, Some(100));
        assert_eq!(r.received, Some(91));
        assert_eq!(r.lost, Some(9)); // 10-12, 50, tail 95-99
        assert!((r.loss_ratio.unwrap() - 0.09).abs() < 1e-12);
        let rx = r.receiver.unwrap();
        assert_eq!(rx.loss.lost_vs_highest, 4);
        assert_eq!(rx.loss.bursts.count, 3);
        assert_eq!(rx.loss.bursts.max_len, 5);
        assert_eq!(rx.loss.lost_seqs, vec![10, 11, 12, 50, 95, 96, 97, 98, 99]);
    }

    #[test]
    fn last_flag_gives_sent_and_repeats_are_not_duplicates() {
        let mut f = FlowStats::new(1, FlowConfig::default());
        feed(&mut f, &[0, 1, 2, 2, 4], |_| 1000);
        let last = flags(ProbeFlags::LAST);
        assert_eq!(f.observe(5, T0, T0 + 10, 100, last), Arrival::Measured);
        assert_eq!(f.observe(5, T0, T0 + 10, 100, last), Arrival::LastRepeat);
        assert_eq!(f.observe(5, T0, T0 + 10, 100, last), Arrival::LastRepeat);
        // A marker repeating a probe that came without the flag sets the count.
        let mut g = FlowStats::new(1, FlowConfig::default());
        g.observe(0, T0, T0 + 10, 100, NONE);
        g.observe(1, T0, T0 + 10, 100, NONE);
        assert_eq!(g.observe(1, T0, T0 + 10, 100, last), Arrival::LastRepeat);
        assert_eq!(g.finish(None).sent, Some(2));
        let r = f.finish(None);
        assert_eq!(
            (r.sent, r.sent_source),
            (Some(6), Some(SentSource::LastFlag))
        );
        assert_eq!(r.duplicates, Some(1));
        assert_eq!(r.received, Some(5));
        assert_eq!(r.lost, Some(1));
        assert_eq!(r.receiver.unwrap().last_repeats, 2);
    }

    #[test]
    fn warmup_excluded_but_not_lost() {
        let mut f = FlowStats::new(1, FlowConfig::default());
        let w = flags(ProbeFlags::WARMUP);
        for s in 0..3u64 {
            // Huge warm-up delays must not show up in the OWD stats.
            assert_eq!(f.observe(s, T0, T0 + 9_999_999, 100, w), Arrival::Warmup);
        }
        feed(&mut f, &[3, 4, 5], |_| 500);
        let r = f.finish(Some(6));
        assert_eq!(r.received, Some(3));
        assert_eq!(r.lost, Some(0));
        assert_eq!(r.latency.as_ref().unwrap().max_ns, 500);
        assert_eq!(r.reordered, Some(0));
        assert_eq!(r.receiver.unwrap().warmup, 3);
    }

    #[test]
    fn owd_percentiles_and_worst_seq() {
        let mut f = FlowStats::new(1, FlowConfig::default());
        // OWD of seq s = (s + 1) * 10 us, except seq 42: 5 ms.
        let seqs: Vec<u64> = (0..100).collect();
        feed(&mut f, &seqs, |s| {
            if s == 42 {
                5_000_000
            } else {
                (s + 1) * 10_000
            }
        });
        let l = f.finish(None).latency.unwrap();
        assert_eq!(l.count, 100);
        assert_eq!((l.min_ns, l.min_seq), (10_000, Some(0)));
        assert_eq!((l.max_ns, l.max_seq), (5_000_000, Some(42)));
        // Sorted values: 10..=1000 us without 430 us, plus 5000 us.
        let near = |a: i64, b: i64| (a - b).abs() <= b / 1000 + 1;
        assert!(near(l.p50_ns, 510_000), "{}", l.p50_ns);
        assert!(near(l.p90_ns, 910_000), "{}", l.p90_ns);
        assert!(near(l.p99_ns, 1_000_000), "{}", l.p99_ns);
    }

    #[test]
    fn negative_owd_with_unsynced_clocks() {
        let mut f = FlowStats::new(1, FlowConfig::default());
        for s in 0..4u64 {
            let tx = T0 + s * 1000;
            f.observe(s, tx, tx - 500 + s * 100, 64, NONE);
        }
        let r = f.finish(None);
        let l = r.latency.unwrap();
        assert_eq!((l.min_ns, l.max_ns), (-500, -200));
        let pdv = r.receiver.unwrap().pdv.unwrap();
        assert_eq!(pdv.max_ns, 300);
    }

    #[test]
    fn rfc3550_jitter_hand_computed() {
        let mut f = FlowStats::new(1, FlowConfig::default());
        let owds = [10_000u64, 14_000, 12_000, 20_000];
        for (s, o) in owds.iter().enumerate() {
            let tx = T0 + s as u64 * 1_000_000;
            f.observe(s as u64, tx, tx + o, 100, NONE);
        }
        // D = 4000, -2000, 8000.
        let mut j = 0.0f64;
        for d in [4000.0, 2000.0, 8000.0] {
            j += (d - j) / 16.0;
        }
        assert!((j - 836.9140625).abs() < 1e-9);
        let r = f.finish(None).receiver.unwrap();
        assert!((r.jitter_ns.unwrap() - j).abs() < 1e-9);
    }

    #[test]
    fn ipdv_seq_order_with_reordering_and_loss() {
        let mut f = FlowStats::new(1, FlowConfig::default());
        // OWDs by seq: 0:100 1:300 2:200 (arrives before 1) 4:500 (3 lost).
        let owd = |s: u64| [100u64, 300, 200, 0, 500][s as usize];
        feed(&mut f, &[0, 2, 1, 4], owd);
        let ip = f.finish(None).receiver.unwrap().ipdv.unwrap();
        // Pairs (0,1): +200, (1,2): -100. (3,4) missing.
        assert_eq!(ip.pairs, 2);
        assert_eq!((ip.min_ns, ip.max_ns), (-100, 200));
        assert!((ip.mean_ns - 50.0).abs() < 1e-9);
        assert!((ip.mean_abs_ns - 150.0).abs() < 1e-9);
        assert_eq!((ip.max_abs_ns, ip.max_abs_seq), (200, 1));
    }

    #[test]
    fn interarrival_vs_requested() {
        let cfg = FlowConfig {
            requested_interval_ns: Some(1_000_000),
            ..FlowConfig::default()
        };
        let mut f = FlowStats::new(1, cfg);
        let rx = [0u64, 1_000_000, 2_100_000, 2_900_000, 4_000_000];
        for (s, t) in rx.iter().enumerate() {
            f.observe(s as u64, T0, T0 + t, 1000, NONE);
        }
        let r = f.finish(None).receiver.unwrap();
        let ia = r.interarrival.unwrap();
        assert_eq!(ia.dist.count, 4);
        assert_eq!((ia.dist.min_ns, ia.dist.max_ns), (800_000, 1_100_000));
        assert!((ia.dist.mean_ns - 1_000_000.0).abs() < 1e-6);
        assert!(ia.mean_error_ns.unwrap().abs() < 1e-6);
        assert!((ia.mean_abs_error_ns.unwrap() - 100_000.0).abs() < 1e-6);
        let rate = r.rate.unwrap();
        assert_eq!(rate.duration_ns, 4_000_000);
        assert!((rate.rate_pps.unwrap() - 1000.0).abs() < 1e-9);
        assert!((rate.payload_bps.unwrap() - 8_000_000.0).abs() < 1e-6);
        assert!((rate.l2_bps.unwrap() - 1042.0 * 8000.0).abs() < 1e-6);
        assert!((rate.wire_bps.unwrap() - 1066.0 * 8000.0).abs() < 1e-6);
    }

    #[test]
    fn reordering_reported() {
        let mut f = FlowStats::new(1, FlowConfig::default());
        feed(&mut f, &[0, 1, 3, 4, 2, 5], |_| 1000);
        let r = f.finish(None);
        assert_eq!(r.reordered, Some(1));
        assert_eq!(r.lost, Some(0));
        assert_eq!(r.receiver.unwrap().reordering.extent_max, 2);
    }

    #[test]
    fn hostile_values_do_not_panic() {
        let mut f = FlowStats::new(u32::MAX, FlowConfig::default());
        let all = flags(0xff);
        for (s, tx, rx) in [
            (u64::MAX, 0, u64::MAX),
            (0, u64::MAX, 1),
            (u64::MAX - 1, 1, 0),
            (1, u64::MAX, u64::MAX),
            (u64::MAX, u64::MAX, 0),
        ] {
            f.observe(s, tx, rx, u32::MAX, NONE);
            f.observe(s, tx, rx, u32::MAX, all);
        }
        let r = f.finish(Some(u64::MAX));
        assert_eq!(r.received, Some(4));
        assert!(r.lost.unwrap() > u64::MAX - 10);
        let _ = serde_json::to_string(&r).unwrap();
        let _ = f.finish(Some(0));
    }
}

//! Whole-run analysis: joins sender Tx records, receiver Rx records and
//! sender EchoReply records per flow and by `(flow, seq)`.
//!
//! Any subset of the three inputs works. With sender records, `sent` is the
//! number of distinct sequence numbers the sender recorded (warm-up
//! included) and loss is exact: `lost` = sequence numbers sent but never
//! received (warm-up or not), bursts are runs of such numbers adjacent in
//! sequence space, `unexpected` counts received numbers the sender never
//! recorded (e.g. its file was cut short). Without sender records, loss
//! comes from the receiver's window ([`crate::seqwin`]) against the LAST
//! flag when present. Records must be in file order (send order for the
//! sender, arrival order for the receiver).
//!
//! Memory: the streaming accumulators per flow plus, with sender records,
//! two sorted sequence-number vectors (8 bytes per record). The number of
//! flows is capped by [`AnalysisConfig::max_flows`].

use crate::buckets::LenHistogram;
use crate::error::AnalysisError;
use crate::flow::{FlowConfig, FlowStats};
use crate::latency::SignedHistogram;
use crate::report::{ratio, FlowReport, SentSource, Summary};
use crate::rtt::RttStats;
use crate::sender::{SenderInfo, SenderStats};
use crate::seqwin::{BurstStats, MAX_LOST_SEQS};
use std::collections::BTreeMap;
use wirelab_wire::{ProbeFlags, Record, RecordKind};

/// Default cap on distinct flows.
pub const DEFAULT_MAX_FLOWS: usize = 4096;

/// The record sets of a run; each is optional.
#[derive(Debug, Clone, Copy, Default)]
pub struct RecordSets<'a> {
    /// The sender's Tx records.
    pub tx: Option<&'a [Record]>,
    /// The receiver's Rx records.
    pub rx: Option<&'a [Record]>,
    /// The sender's EchoReply records.
    pub echo: Option<&'a [Record]>,
}

impl<'a> RecordSets<'a> {
    /// Convenience: records of a sender file hold Tx and EchoReply records.
    /// Returns owned vectors split by kind: `(tx, rx, echo)`.
    pub fn split_by_kind(records: &[Record]) -> (Vec<Record>, Vec<Record>, Vec<Record>) {
        let mut out = (Vec::new(), Vec::new(), Vec::new());
        for r in records {
            match r.kind {
                RecordKind::Tx => out.0.push(*r),
                RecordKind::Rx => out.1.push(*r),
                RecordKind::EchoReply => out.2.push(*r),
            }
        }
        out
    }
}

/// Analysis parameters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AnalysisConfig {
    pub flow: FlowConfig,
    /// From the sender file's metadata; without it, lateness is measured
    /// against the first scheduled probe of each flow.
    pub sender: Option<SenderInfo>,
    pub max_flows: usize,
}

impl Default for AnalysisConfig {
    fn default() -> Self {
        AnalysisConfig {
            flow: FlowConfig::default(),
            sender: None,
            max_flows: DEFAULT_MAX_FLOWS,
        }
    }
}

#[derive(Default)]
struct FlowAcc {
    rx: Option<FlowStats>,
    tx: Option<SenderStats>,
    echo: Option<RttStats>,
    tx_seqs: Vec<u64>,
    rx_seqs: Vec<u64>,
}

struct Flows {
    map: BTreeMap<u32, FlowAcc>,
    max: usize,
}

impl Flows {
    fn get(&mut self, flow: u32) -> Result<&mut FlowAcc, AnalysisError> {
        if !self.map.contains_key(&flow) && self.map.len() >= self.max {
            return Err(AnalysisError::TooManyFlows { limit: self.max });
        }
        Ok(self.map.entry(flow).or_default())
    }
}

/// Analyses a run; see the module docs.
pub fn analyze(sets: &RecordSets<'_>, cfg: &AnalysisConfig) -> Result<Summary, AnalysisError> {
    if cfg.max_flows == 0 {
        return Err(AnalysisError::InvalidConfig("max_flows must be at least 1"));
    }
    let mut flows = Flows {
        map: BTreeMap::new(),
        max: cfg.max_flows,
    };
    let mut ignored = 0u64;
    let model = cfg.flow.rate_model;
    let interval = cfg
        .sender
        .and_then(|s| s.interval_ns)
        .or(cfg.flow.requested_interval_ns);

    for r in sets.tx.unwrap_or(&[]) {
        if r.kind != RecordKind::Tx {
            ignored += 1;
            continue;
        }
        let acc = flows.get(r.flow)?;
        let tx = acc.tx.get_or_insert_with(|| match cfg.sender {
            Some(info) => SenderStats::new(info, model),
            None => SenderStats::estimating_start(interval, model),
        });
        tx.observe_record(r);
        acc.tx_seqs.push(r.seq);
    }
    for r in sets.rx.unwrap_or(&[]) {
        if r.kind != RecordKind::Rx {
            ignored += 1;
            continue;
        }
        let acc = flows.get(r.flow)?;
        let fcfg = FlowConfig {
            requested_interval_ns: interval,
            ..cfg.flow
        };
        acc.rx
            .get_or_insert_with(|| FlowStats::new(r.flow, fcfg))
            .observe(r.seq, r.tx_ns, r.rx_ns, r.size, ProbeFlags(r.probe_flags));
        if sets.tx.is_some() {
            acc.rx_seqs.push(r.seq);
        }
    }
    for r in sets.echo.unwrap_or(&[]) {
        if r.kind != RecordKind::EchoReply {
            ignored += 1;
            continue;
        }
        flows
            .get(r.flow)?
            .echo
            .get_or_insert_with(RttStats::new)
            .observe_record(r);
    }

    let mut owd_all = SignedHistogram::new();
    let mut reports = Vec::with_capacity(flows.map.len());
    for (flow, mut acc) in flows.map {
        let sent = acc.tx.as_ref().map(SenderStats::sent);
        let mut rep = match &acc.rx {
            Some(rx) => {
                owd_all.merge(rx.owd_histogram());
                rx.finish(sent)
            }
            None => FlowReport::empty(flow),
        };
        if let Some(tx) = &acc.tx {
            rep.sent = Some(tx.sent());
            rep.sent_source = Some(SentSource::SenderRecords);
            rep.sender = Some(tx.finish());
            if acc.rx.is_some() {
                exact_loss(&mut rep, &mut acc.tx_seqs, &mut acc.rx_seqs);
            }
        }
        if let Some(e) = &acc.echo {
            let requests = acc.tx.as_ref().map(|t| t.finish().echo_requests);
            rep.rtt = Some(e.finish(requests));
        }
        reports.push(rep);
    }
    let mut summary = Summary::new(reports);
    summary.totals.ignored_records = ignored;
    summary.totals.latency = owd_all.stats();
    Ok(summary)
}

/// Replaces the window-based loss of `rep` with the exact set difference.
fn exact_loss(rep: &mut FlowReport, tx: &mut Vec<u64>, rx: &mut Vec<u64>) {
    tx.sort_unstable();
    tx.dedup();
    rx.sort_unstable();
    rx.dedup();
    let mut lost = 0u64;
    let mut lost_seqs = Vec::new();
    let mut hist = LenHistogram::default();
    let (mut count, mut max_len, mut run) = (0u64, 0u64, 0u64);
    let mut prev_lost: Option<u64> = None;
    let mut close = |run: &mut u64, count: &mut u64, max_len: &mut u64| {
        if *run > 0 {
            hist.record(*run);
            *count += 1;
            *max_len = (*max_len).max(*run);
            *run = 0;
        }
    };
    let mut j = 0usize;
    let mut matched = 0u64;
    for &s in tx.iter() {
        while j < rx.len() && rx[j] < s {
            j += 1;
        }
        if j < rx.len() && rx[j] == s {
            matched += 1;
            close(&mut run, &mut count, &mut max_len);
            continue;
        }
        lost += 1;
        if lost_seqs.len() < MAX_LOST_SEQS {
            lost_seqs.push(s);
        }
        if prev_lost.is_some_and(|p| p.checked_add(1) != Some(s)) {
            close(&mut run, &mut count, &mut max_len);
        }
        run += 1;
        prev_lost = Some(s);
    }
    close(&mut run, &mut count, &mut max_len);
    let sent = tx.len() as u64;
    rep.lost = Some(lost);
    rep.loss_ratio = ratio(Some(lost), Some(sent));
    if let Some(r) = rep.receiver.as_mut() {
        r.unexpected = Some(rx.len() as u64 - matched);
        r.loss.expected = sent;
        r.loss.lost = lost;
        r.loss.lost_seqs_truncated = lost > lost_seqs.len() as u64;
        r.loss.lost_seqs = lost_seqs;
        r.loss.bursts = BurstStats {
            count,
            max_len,
            lengths: hist.buckets(),
        };
    }
}

/// Inter-departure intervals (ns) of a flow's measured Tx records, in
/// record order: the samples to compare with the requested interval
/// distribution ([`crate::ks::ks_distance`]).
pub fn departure_interval_samples(records: &[Record], flow: u32) -> Vec<f64> {
    let mut prev: Option<u64> = None;
    let mut out = Vec::new();
    for r in records.iter().filter(|r| {
        r.kind == RecordKind::Tx && r.flow == flow && !ProbeFlags(r.probe_flags).is_warmup()
    }) {
        if let Some(p) = prev {
            out.push(crate::report::diff_ns(r.tx_ns, p) as f64);
        }
        prev = Some(r.tx_ns);
    }
    out
}

/// Payload sizes of a flow's measured records of `kind`.
pub fn size_samples(records: &[Record], flow: u32, kind: RecordKind) -> Vec<f64> {
    records
        .iter()
        .filter(|r| r.kind == kind && r.flow == flow && !ProbeFlags(r.probe_flags).is_warmup())
        .map(|r| r.size as f64)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::window::RateModel;

    const START: u64 = 1_700_000_000_000_000_000;
    const IV: u64 = 1_000_000;

    fn tx(flow: u32, seq: u64, flags: u8) -> Record {
        Record {
            flow,
            size: 100,
            seq,
            sched_ns: (seq + 1) * IV,
            tx_ns: START + (seq + 1) * IV + 1000,
            kind: RecordKind::Tx,
            probe_flags: flags,
            ..Record::default()
        }
    }

    fn rx(t: &Record, owd: u64) -> Record {
        Record {
            kind: RecordKind::Rx,
            rx_ns: t.tx_ns + owd,
            sched_ns: 0,
            ..*t
        }
    }

    fn flags_for(seq: u64) -> u8 {
        match seq {
            0 | 1 => ProbeFlags::WARMUP,
            19 => ProbeFlags::LAST,
            _ => 0,
        }
    }

    /// 20 probes (0, 1 warm-up, 19 LAST); 5, 6, 18, 19 lost; 3 duplicated;
    /// 8 arrives after 9.
    fn run() -> (Vec<Record>, Vec<Record>) {
        let txs: Vec<Record> = (0..20).map(|s| tx(1, s, flags_for(s))).collect();
        let mut order: Vec<u64> = (0..18).filter(|s| ![5, 6].contains(s)).collect();
        order.swap(5, 6); // ... 7, 9, 8, 10 ...
        order.insert(3, 3);
        let rxs = order
            .iter()
            .map(|&s| rx(&txs[s as usize], 50_000 + s * 1000))
            .collect();
        (txs, rxs)
    }

    fn cfg() -> AnalysisConfig {
        AnalysisConfig {
            sender: Some(SenderInfo {
                start_unix_ns: START,
                interval_ns: Some(IV),
                late_threshold_ns: None,
            }),
            ..AnalysisConfig::default()
        }
    }

    #[test]
    fn both_sides_exact_loss() {
        let (txs, rxs) = run();
        let s = analyze(
            &RecordSets {
                tx: Some(&txs),
                rx: Some(&rxs),
                echo: None,
            },
            &cfg(),
        )
        .unwrap();
        let f = &s.flows[0];
        assert_eq!(f.sent, Some(20));
        assert_eq!(f.sent_source, Some(SentSource::SenderRecords));
        assert_eq!(f.received, Some(14));
        assert_eq!(f.lost, Some(4));
        assert!((f.loss_ratio.unwrap() - 0.2).abs() < 1e-12);
        assert_eq!(f.duplicates, Some(1));
        assert_eq!(f.reordered, Some(1));
        let r = f.receiver.as_ref().unwrap();
        assert_eq!(r.warmup, 2);
        assert_eq!(r.unexpected, Some(0));
        assert_eq!(r.loss.lost_seqs, vec![5, 6, 18, 19]);
        assert_eq!((r.loss.bursts.count, r.loss.bursts.max_len), (2, 2));
        assert_eq!(r.loss.lost_vs_highest, 2);
        let l = f.latency.as_ref().unwrap();
        assert_eq!((l.min_ns, l.max_ns, l.max_seq), (52_000, 67_000, 17));
        let snd = f.sender.as_ref().unwrap();
        assert_eq!((snd.sent, snd.warmup), (20, 2));
        assert_eq!(snd.lateness.as_ref().unwrap().max_ns, 1000);
        assert_eq!(snd.late, Some(0));
        assert!(!snd.start_estimated);
        assert_eq!(s.totals.lost, Some(4));
        assert_eq!(s.totals.latency.as_ref().unwrap().count, 14);
    }

    #[test]
    fn receiver_only_uses_window_and_last_flag() {
        let (txs, mut rxs) = run();
        // Let the LAST probe arrive, twice.
        rxs.push(rx(&txs[19], 70_000));
        rxs.push(rx(&txs[19], 70_000));
        let s = analyze(
            &RecordSets {
                rx: Some(&rxs),
                ..RecordSets::default()
            },
            &AnalysisConfig::default(),
        )
        .unwrap();
        let f = &s.flows[0];
        assert_eq!(
            (f.sent, f.sent_source),
            (Some(20), Some(SentSource::LastFlag))
        );
        assert_eq!(f.lost, Some(3)); // 5, 6, 18
        assert_eq!(f.duplicates, Some(1));
        assert!(f.sender.is_none());
        let r = f.receiver.as_ref().unwrap();
        assert_eq!(r.last_repeats, 1);
        assert_eq!(r.unexpected, None);
        assert_eq!(r.loss.lost_seqs, vec![5, 6, 18]);
    }

    #[test]
    fn sender_only_has_null_receiver_fields() {
        let (txs, _) = run();
        let s = analyze(
            &RecordSets {
                tx: Some(&txs),
                ..RecordSets::default()
            },
            &AnalysisConfig::default(),
        )
        .unwrap();
        let v = serde_json::to_value(&s).unwrap();
        let f = &v["flows"][0];
        assert_eq!(f["sent"], 20);
        for k in [
            "received",
            "lost",
            "duplicates",
            "reordered",
            "latency",
            "rtt",
        ] {
            assert!(f.get(k).unwrap().is_null(), "{k}");
        }
        // Without the run start, lateness is relative to the first probe.
        assert_eq!(f["sender"]["start_estimated"], true);
        assert_eq!(f["sender"]["lateness"]["max_ns"], 0);
    }

    #[test]
    fn json_schema_shape() {
        let (txs, rxs) = run();
        let s = analyze(
            &RecordSets {
                tx: Some(&txs),
                rx: Some(&rxs),
                echo: None,
            },
            &cfg(),
        )
        .unwrap();
        let v: serde_json::Value = serde_json::from_str(&s.to_json().unwrap()).unwrap();
        assert_eq!(v["schema"], "wirelab.analysis/1");
        let f = &v["flows"][0];
        for k in [
            "flow",
            "sent",
            "received",
            "lost",
            "duplicates",
            "reordered",
        ] {
            assert!(f[k].is_u64(), "{k}");
        }
        for k in [
            "min_ns", "mean_ns", "p50_ns", "p90_ns", "p99_ns", "p999_ns", "p9999_ns", "max_ns",
            "max_seq",
        ] {
            assert!(f["latency"][k].is_number(), "{k}");
        }
        assert!(f["receiver"]["windows"].is_array());
        assert!(f["receiver"]["interarrival"]["ks_distance"].is_null());
        assert!(f["receiver"]["interarrival"]["p50_ns"].is_number());
        assert_eq!(v["totals"]["sent"], 20);
    }

    #[test]
    fn echo_replies_give_rtt() {
        let txs: Vec<Record> = (0..4).map(|s| tx(2, s, ProbeFlags::ECHO_REQUEST)).collect();
        let echo: Vec<Record> = txs[..3]
            .iter()
            .map(|t| Record {
                kind: RecordKind::EchoReply,
                refl_rx_ns: t.tx_ns + 400,
                refl_tx_ns: t.tx_ns + 500,
                rx_ns: t.tx_ns + 900,
                probe_flags: ProbeFlags::ECHO_REPLY,
                ..*t
            })
            .collect();
        let s = analyze(
            &RecordSets {
                tx: Some(&txs),
                rx: None,
                echo: Some(&echo),
            },
            &cfg(),
        )
        .unwrap();
        let r = s.flows[0].rtt.as_ref().unwrap();
        assert_eq!((r.replies, r.lost), (3, Some(1)));
        assert_eq!(r.rtt.as_ref().unwrap().p50_ns, 900);
        assert_eq!(r.net_rtt.as_ref().unwrap().max_ns, 800);
    }

    #[test]
    fn limits_and_wrong_kinds() {
        let many: Vec<Record> = (0..10).map(|f| tx(f, 0, 0)).collect();
        let sets = RecordSets {
            tx: Some(&many),
            ..RecordSets::default()
        };
        let small = AnalysisConfig {
            max_flows: 5,
            ..AnalysisConfig::default()
        };
        assert!(matches!(
            analyze(&sets, &small),
            Err(AnalysisError::TooManyFlows { limit: 5 })
        ));
        let zero = AnalysisConfig {
            max_flows: 0,
            ..AnalysisConfig::default()
        };
        assert!(matches!(
            analyze(&sets, &zero),
            Err(AnalysisError::InvalidConfig(_))
        ));
        // Tx records given as receiver records are ignored, not misread.
        let s = analyze(
            &RecordSets {
                rx: Some(&many),
                ..RecordSets::default()
            },
            &AnalysisConfig::default(),
        )
        .unwrap();
        assert_eq!(s.totals.ignored_records, 10);
        assert!(s.flows.is_empty());
        let (a, b, c) = RecordSets::split_by_kind(&many);
        assert_eq!((a.len(), b.len(), c.len()), (10, 0, 0));
    }

    #[test]
    fn samples_for_ks() {
        let (txs, _) = run();
        let iv = departure_interval_samples(&txs, 1);
        assert_eq!(iv.len(), 17);
        assert!(iv.iter().all(|&x| x == IV as f64));
        let step = |x: f64| if x >= IV as f64 { 1.0 } else { 0.0 };
        assert_eq!(crate::ks::ks_distance(&mut iv.clone(), step), 0.0);
        assert_eq!(size_samples(&txs, 1, RecordKind::Tx).len(), 18);
    }

    #[test]
    fn text_rendering() {
        let (txs, rxs) = run();
        let mut txs2 = txs.clone();
        txs2.iter_mut().for_each(|r| r.flow = 9);
        let all_tx: Vec<Record> = txs.iter().chain(&txs2).copied().collect();
        let s = analyze(
            &RecordSets {
                tx: Some(&all_tx),
                rx: Some(&rxs),
                echo: None,
            },
            &cfg(),
        )
        .unwrap();
        let mut out = Vec::new();
        crate::text::render_text(&s, &mut out).unwrap();
        let t = String::from_utf8(out).unwrap();
        let lines: Vec<&str> = t.lines().collect();
        assert!(lines[0].starts_with("flow"));
        assert!(lines[1].starts_with("1 "), "{t}");
        assert!(lines[1].contains("4 (20.00%)"), "{t}");
        assert!(lines[1].contains("52.0µs/"), "{t}");
        assert!(lines[2].starts_with("9 "), "{t}");
        assert!(lines[3].starts_with("total"), "{t}");
        assert!(t.contains("synchronised"), "{t}");
        assert!(t.contains("flow 1 send: lateness"), "{t}");
    }

    /// Deterministic pseudo-random hostile records: nothing may panic.
    #[test]
    fn hostile_records_never_panic() {
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let mut recs = Vec::new();
        for _ in 0..3000 {
            let pick = |v: u64, r: u64| match r % 4 {
                0 => v,
                1 => u64::MAX - (v % 3),
                2 => v % 5,
                _ => v % 100_000,
            };
            let r = next();
            recs.push(Record {
                flow: (next() % 3) as u32,
                size: next() as u32,
                seq: pick(next(), r),
                sched_ns: pick(next(), r >> 2),
                tx_ns: pick(next(), r >> 4),
                rx_ns: pick(next(), r >> 6),
                refl_rx_ns: pick(next(), r >> 8),
                refl_tx_ns: pick(next(), r >> 10),
                probe_flags: next() as u8,
                kind: RecordKind::from_u8((next() % 3) as u8).unwrap_or_default(),
                rec_flags: 0,
                tos: 0,
            });
        }
        for cfg in [
            AnalysisConfig::default(),
            AnalysisConfig {
                flow: FlowConfig {
                    window_ns: 1,
                    rate_model: RateModel {
                        l2_overhead_bytes: u32::MAX,
                        min_l2_frame_bytes: u32::MAX,
                        wire_extra_bytes: u32::MAX,
                    },
                    requested_interval_ns: Some(u64::MAX),
                },
                sender: Some(SenderInfo {
                    start_unix_ns: u64::MAX,
                    interval_ns: Some(0),
                    late_threshold_ns: Some(0),
                }),
                max_flows: 3,
            },
        ] {
            let s = analyze(
                &RecordSets {
                    tx: Some(&recs),
                    rx: Some(&recs),
                    echo: Some(&recs),
                },
                &cfg,
            )
            .unwrap();
            s.to_json().unwrap();
            crate::text::render_text(&s, &mut Vec::new()).unwrap();
        }
    }
}

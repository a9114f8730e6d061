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
//! Memory: the caller's records, 8 bytes per record to group them by flow,
//! the accumulators of one flow at a time (at most about 3.7 MiB, dropped
//! once its report is made) with, given sender records, its sorted sequence
//! numbers (8 bytes per record), and one report per flow. Flows are counted
//! before anything per flow is allocated, against
//! [`AnalysisConfig::max_flows`].

use crate::buckets::LenHistogram;
use crate::error::AnalysisError;
use crate::flow::{FlowConfig, FlowStats};
use crate::latency::SignedHistogram;
use crate::report::{ratio, FlowReport, SentSource, Summary, Warning};
use crate::rtt::RttStats;
use crate::sender::{SenderInfo, SenderStats};
use crate::seqwin::{BurstStats, MAX_LOST_SEQS};
use std::ops::Range;
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
                // The emulator's log: analysed apart (`emulog`).
                RecordKind::Emulated => {}
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

/// One input set's records of the expected kind, grouped by flow id
/// (ascending), in record order within a flow.
struct Groups<'a> {
    recs: &'a [Record],
    idx: Vec<usize>,
}

impl<'a> Groups<'a> {
    fn new(recs: Option<&'a [Record]>, kind: RecordKind, ignored: &mut u64) -> Groups<'a> {
        let recs = recs.unwrap_or(&[]);
        let mut idx = Vec::new();
        for (i, r) in recs.iter().enumerate() {
            if r.kind == kind {
                idx.push(i);
            } else {
                *ignored += 1;
            }
        }
        // Stable: record order is kept within a flow.
        idx.sort_by_key(|&i| recs.get(i).map_or(0, |r| r.flow));
        Groups { recs, idx }
    }

    fn flow_at(&self, k: usize) -> Option<u32> {
        let i = *self.idx.get(k)?;
        self.recs.get(i).map(|r| r.flow)
    }

    fn records(&self, range: Range<usize>) -> impl Iterator<Item = &'a Record> + '_ {
        let recs = self.recs;
        self.idx
            .get(range)
            .unwrap_or(&[])
            .iter()
            .filter_map(move |&i| recs.get(i))
    }
}

/// The next flow over the three groups from the cursors `at`, with each
/// group's range of it; advances the cursors past it.
fn next_flow(g: &[Groups; 3], at: &mut [usize; 3]) -> Option<(u32, [Range<usize>; 3])> {
    let flow = (0..3).filter_map(|k| g[k].flow_at(at[k])).min()?;
    let mut take = |k: usize| {
        let from = at[k];
        while g[k].flow_at(at[k]) == Some(flow) {
            at[k] += 1;
        }
        from..at[k]
    };
    Some((flow, [take(0), take(1), take(2)]))
}

/// Analyses a run; see the module docs.
pub fn analyze(sets: &RecordSets<'_>, cfg: &AnalysisConfig) -> Result<Summary, AnalysisError> {
    if cfg.max_flows == 0 {
        return Err(AnalysisError::InvalidConfig("max_flows must be at least 1"));
    }
    let mut ignored = 0u64;
    let g = [
        Groups::new(sets.tx, RecordKind::Tx, &mut ignored),
        Groups::new(sets.rx, RecordKind::Rx, &mut ignored),
        Groups::new(sets.echo, RecordKind::EchoReply, &mut ignored),
    ];
    let mut at = [0usize; 3];
    let mut found = 0u64;
    while next_flow(&g, &mut at).is_some() {
        found += 1;
    }
    if found > cfg.max_flows as u64 {
        return Err(AnalysisError::TooManyFlows {
            limit: cfg.max_flows,
            found,
        });
    }

    let interval = cfg
        .sender
        .and_then(|s| s.interval_ns)
        .or(cfg.flow.requested_interval_ns);
    let mut owd_all = SignedHistogram::new();
    let mut reports = Vec::with_capacity(found as usize);
    let mut warnings = Vec::new();
    let mut at = [0usize; 3];
    while let Some((flow, [tr, rr, er])) = next_flow(&g, &mut at) {
        let mut tx: Option<SenderStats> = None;
        let mut tx_seqs = Vec::new();
        for r in g[0].records(tr) {
            tx.get_or_insert_with(|| match cfg.sender {
                Some(info) => SenderStats::new(info, cfg.flow.rate_model),
                None => SenderStats::estimating_start(interval, cfg.flow.rate_model),
            })
            .observe_record(r);
            tx_seqs.push(r.seq);
        }
        let mut rx: Option<FlowStats> = None;
        let mut rx_seqs = Vec::new();
        let fcfg = FlowConfig {
            requested_interval_ns: interval,
            ..cfg.flow
        };
        for r in g[1].records(rr) {
            rx.get_or_insert_with(|| FlowStats::new(flow, fcfg))
                .observe(r.seq, r.tx_ns, r.rx_ns, r.size, ProbeFlags(r.probe_flags));
            if sets.tx.is_some() {
                rx_seqs.push(r.seq);
            }
        }
        let mut echo: Option<RttStats> = None;
        for r in g[2].records(er) {
            echo.get_or_insert_with(RttStats::new).observe_record(r);
        }

        let sent = tx.as_ref().map(SenderStats::sent);
        let mut rep = match &rx {
            Some(rx) => {
                owd_all.merge(rx.owd_histogram());
                rx.finish(sent)
            }
            None => FlowReport::empty(flow),
        };
        drop(rx);
        if let Some(tx) = &tx {
            rep.sent = Some(tx.sent());
            rep.sent_source = Some(SentSource::SenderRecords);
            rep.sender = Some(tx.finish());
            if rep.receiver.is_some() {
                exact_loss(&mut rep, &mut tx_seqs, &mut rx_seqs);
                warnings.extend(incomplete_sender(&rep, &tx_seqs, &rx_seqs));
            }
        }
        if let Some(e) = &echo {
            let requests = rep.sender.as_ref().map(|s| s.echo_requests);
            rep.rtt = Some(e.finish(requests));
        }
        reports.push(rep);
    }
    let mut summary = Summary::new(reports);
    summary.totals.ignored_records = ignored;
    summary.totals.latency = owd_all.stats();
    summary.warnings = warnings;
    Ok(summary)
}

/// A warning when a flow received sequence numbers its sender's records
/// lack: `sent` and `lost` then count only what the sender recorded
/// (sorted, deduplicated `tx` and `rx`).
fn incomplete_sender(rep: &FlowReport, tx: &[u64], rx: &[u64]) -> Option<Warning> {
    let unexpected = rep.receiver.as_ref()?.unexpected.filter(|&u| u > 0)?;
    let upto = |s: &[u64]| s.last().map_or("-".to_string(), |h| h.to_string());
    Some(Warning {
        code: "sender_records_incomplete",
        flow: Some(rep.flow),
        message: format!(
            "flow {}: {unexpected} of {} received sequence numbers are not in the sender's \
             records ({} recorded, up to seq {}; received up to seq {}): the sender file is \
             incomplete (cut short?) or from another run, and sent/lost count only what it \
             recorded",
            rep.flow,
            rx.len(),
            tx.len(),
            upto(tx),
            upto(rx),
        ),
    })
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

    /// The analysis of both sides' records with the sender's settings.
    fn both(tx: &[Record], rx: &[Record]) -> Summary {
        analyze(
            &RecordSets {
                tx: Some(tx),
                rx: Some(rx),
                echo: None,
            },
            &cfg(),
        )
        .unwrap()
    }

    #[test]
    fn both_sides_exact_loss() {
        let (txs, rxs) = run();
        let s = both(&txs, &rxs);
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
        assert_eq!((l.min_ns, l.max_ns, l.max_seq), (52_000, 67_000, Some(17)));
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
        let s = both(&txs, &rxs);
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
            Err(AnalysisError::TooManyFlows {
                limit: 5,
                found: 10
            })
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
    fn flows_are_counted_before_any_is_analysed() {
        // Flow ids interleaved over the three inputs: 4 distinct.
        let txs: Vec<Record> = [3, 1, 3].iter().map(|&f| tx(f, 0, 0)).collect();
        let rxs: Vec<Record> = [2, 1].iter().map(|&f| rx(&tx(f, 0, 0), 10)).collect();
        let echo = vec![Record {
            kind: RecordKind::EchoReply,
            ..tx(4, 0, 0)
        }];
        let sets = RecordSets {
            tx: Some(&txs),
            rx: Some(&rxs),
            echo: Some(&echo),
        };
        let cap = |max_flows| AnalysisConfig {
            max_flows,
            ..AnalysisConfig::default()
        };
        assert!(matches!(
            analyze(&sets, &cap(3)),
            Err(AnalysisError::TooManyFlows { limit: 3, found: 4 })
        ));
        let s = analyze(&sets, &cap(4)).unwrap();
        let ids: Vec<u32> = s.flows.iter().map(|f| f.flow).collect();
        assert_eq!(ids, vec![1, 2, 3, 4]);
        assert_eq!(s.flows[2].sender.as_ref().unwrap().repeats, 1);
        assert!(s.flows[3].rtt.is_some() && s.flows[1].receiver.is_some());
    }

    #[test]
    fn a_short_sender_file_is_warned_about() {
        // The sender's file holds seqs 0..38, the receiver got 0..100.
        let txs: Vec<Record> = (0..100).map(|s| tx(1, s, 0)).collect();
        let rxs: Vec<Record> = txs.iter().map(|t| rx(t, 50_000)).collect();
        let s = both(&txs[..38], &rxs);
        let f = &s.flows[0];
        assert_eq!((f.sent, f.received, f.lost), (Some(38), Some(100), Some(0)));
        assert_eq!(f.receiver.as_ref().unwrap().unexpected, Some(62));
        assert_eq!(s.warnings.len(), 1);
        let w = &s.warnings[0];
        assert_eq!((w.code, w.flow), ("sender_records_incomplete", Some(1)));
        assert!(
            w.message.contains("62 of 100 received")
                && w.message
                    .contains("38 recorded, up to seq 37; received up to seq 99"),
            "{}",
            w.message
        );
        let mut out = Vec::new();
        crate::text::render_text(&s, &mut out).unwrap();
        let t = String::from_utf8(out).unwrap();
        assert!(t.contains("warning: flow 1: 62 of 100"), "{t}");
        let v = serde_json::to_value(&s).unwrap();
        assert_eq!(v["warnings"][0]["code"], "sender_records_incomplete");
        // A consistent run has none.
        let s = both(&txs, &rxs);
        assert!(s.warnings.is_empty());
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
        let s = both(&all_tx, &rxs);
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

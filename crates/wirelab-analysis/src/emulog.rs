//! The link emulator's per-copy log (`wirelab emulate --log`, records of
//! kind `Emulated`) summarised per flow (rule × direction): frames and
//! copies, what was sent and what dropped by reason, the applied delay
//! (departure − kernel arrival stamp), the scheduled delay (deadline −
//! arrival), the release lateness (departure − deadline) and the copies
//! that left early (departure before deadline: the emulator promises 0).
//!
//! Streaming: one accumulator per flow (three HDR histograms, about 100
//! KiB), at most `max_flows` flows — the flow ids of a hostile file are
//! counted before any is kept beyond the limit. Any record content is
//! accepted: times out of order saturate at 0.

use crate::error::AnalysisError;
use crate::fates::FateCounts;
use crate::percentiles::histogram;
use crate::text::fmt_ns;
use crate::DelayStats;
use hdrhistogram::Histogram;
use serde::Serialize;
use std::collections::BTreeMap;
use std::io::Write;
use wirelab_wire::record::{EmuFate, EmuRecord, Record};

/// One flow (a rule in a direction) of the log.
#[derive(Debug, Clone, Serialize)]
pub struct EmuFlowReport {
    /// rule × 2 + direction.
    pub flow: u32,
    /// 0 = the direction's default stages.
    pub rule: u32,
    /// `a2b` or `b2a`.
    pub direction: &'static str,
    /// The rule's filter and stages, when the log's header names them.
    pub filter: Option<String>,
    pub stages: Option<String>,
    /// Frames (copy 0 records) and copies (all records).
    pub frames: u64,
    pub copies: u64,
    pub duplicates: u64,
    pub sent: u64,
    pub corrupted: u64,
    pub dropped: FateCounts,
    /// Departure − arrival of the sent copies.
    pub applied_delay: DelayStats,
    /// Deadline − arrival of the sent copies (what the stages asked).
    pub scheduled_delay: DelayStats,
    /// Departure − deadline of the sent copies.
    pub lateness: DelayStats,
    /// Sent copies that left before their deadline.
    pub early: u64,
}

/// `wirelab.emulate-log/1`.
#[derive(Debug, Clone, Serialize)]
pub struct EmuLogReport {
    pub schema: &'static str,
    pub flows: Vec<EmuFlowReport>,
    pub totals: EmuTotals,
}

/// Sums over the flows.
#[derive(Debug, Clone, Default, Serialize)]
pub struct EmuTotals {
    pub frames: u64,
    pub copies: u64,
    pub sent: u64,
    pub dropped: FateCounts,
    pub early: u64,
}

/// The totals as one clause, the same in `analyze` text and the HTML
/// report: `N frames, N copies, N sent, N dropped (by fate), early N`.
impl std::fmt::Display for EmuTotals {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} frames, {} copies, {} sent, {} dropped ({}), early {}",
            self.frames,
            self.copies,
            self.sent,
            self.dropped.total(),
            self.dropped.text(),
            self.early
        )
    }
}

struct Acc {
    frames: u64,
    copies: u64,
    sent: u64,
    corrupted: u64,
    dropped: FateCounts,
    applied: Histogram<u64>,
    scheduled: Histogram<u64>,
    late: Histogram<u64>,
    early: u64,
}

impl Acc {
    fn new() -> Acc {
        Acc {
            frames: 0,
            copies: 0,
            sent: 0,
            corrupted: 0,
            dropped: FateCounts::default(),
            applied: histogram(),
            scheduled: histogram(),
            late: histogram(),
            early: 0,
        }
    }
}

/// Streams an emulator log into per-flow summaries.
pub struct EmuLog {
    max_flows: usize,
    flows: BTreeMap<u32, Acc>,
    /// Flow ids seen beyond `max_flows` (counting stops at the first).
    too_many: Option<u32>,
}

/// Values the histograms hold: at least 1 ns (their floor).
fn rec(h: &mut Histogram<u64>, v: u64) {
    h.saturating_record(v.max(1));
}

impl EmuLog {
    /// Keeps at most `max_flows` flows (at least 1).
    pub fn new(max_flows: usize) -> EmuLog {
        EmuLog {
            max_flows: max_flows.max(1),
            flows: BTreeMap::new(),
            too_many: None,
        }
    }

    /// Feeds one record; records of other kinds are ignored.
    pub fn add(&mut self, r: &Record) {
        let Some(e) = EmuRecord::from_record(r) else {
            return;
        };
        let n = self.flows.len();
        let acc = match self.flows.get_mut(&r.flow) {
            Some(a) => a,
            None if n < self.max_flows => self.flows.entry(r.flow).or_insert_with(Acc::new),
            None => {
                self.too_many.get_or_insert(r.flow);
                return;
            }
        };
        acc.copies += 1;
        acc.frames += u64::from(e.copy == 0);
        if e.fate != EmuFate::Sent {
            acc.dropped.add(e.fate);
            return;
        }
        acc.sent += 1;
        acc.corrupted += u64::from(e.corrupted);
        rec(
            &mut acc.applied,
            e.departure_ns.saturating_sub(e.arrival_ns),
        );
        rec(
            &mut acc.scheduled,
            e.deadline_ns.saturating_sub(e.arrival_ns),
        );
        if e.departure_ns < e.deadline_ns {
            acc.early += 1;
        } else {
            rec(&mut acc.late, e.departure_ns - e.deadline_ns);
        }
    }

    /// Records held (all flows).
    pub fn records(&self) -> u64 {
        self.flows.values().map(|a| a.copies).sum()
    }

    /// The report; `label(rule, direction)` gives a rule's filter and
    /// stages when known. Errors: more flows than the limit.
    pub fn finish(
        &self,
        label: impl Fn(u32, u8) -> Option<(String, String)>,
    ) -> Result<EmuLogReport, AnalysisError> {
        if self.too_many.is_some() {
            return Err(AnalysisError::TooManyFlows {
                limit: self.max_flows,
                found: self.max_flows as u64 + 1,
            });
        }
        let mut totals = EmuTotals::default();
        let flows = self
            .flows
            .iter()
            .map(|(&flow, a)| {
                let (rule, dir) = (flow >> 1, (flow & 1) as u8);
                let (filter, stages) = label(rule, dir).unzip();
                totals.frames += a.frames;
                totals.copies += a.copies;
                totals.sent += a.sent;
                totals.dropped.merge(&a.dropped);
                totals.early += a.early;
                EmuFlowReport {
                    flow,
                    rule,
                    direction: if dir == 0 { "a2b" } else { "b2a" },
                    filter,
                    stages,
                    frames: a.frames,
                    copies: a.copies,
                    duplicates: a.copies.saturating_sub(a.frames),
                    sent: a.sent,
                    corrupted: a.corrupted,
                    dropped: a.dropped,
                    applied_delay: DelayStats::of_hist(&a.applied),
                    scheduled_delay: DelayStats::of_hist(&a.scheduled),
                    lateness: DelayStats::of_hist(&a.late),
                    early: a.early,
                }
            })
            .collect();
        Ok(EmuLogReport {
            schema: "wirelab.emulate-log/1",
            flows,
            totals,
        })
    }
}

fn pcts(p: &DelayStats) -> String {
    if p.count == 0 {
        return "-".into();
    }
    let f = |v: i64| fmt_ns(v as f64);
    format!(
        "min {} p50 {} p90 {} p99 {} p99.9 {} max {}",
        f(p.min_ns),
        f(p.p50_ns),
        f(p.p90_ns),
        f(p.p99_ns),
        f(p.p999_ns),
        f(p.max_ns)
    )
}

/// A rule's filter and stages, from the configuration an emulator log's
/// header holds (`rule` 0: the direction's own stages, no filter).
pub fn rule_label(cfg: Option<&serde_json::Value>, rule: u32, dir: u8) -> Option<(String, String)> {
    let cfg = cfg?;
    let d = if dir == 0 { "a2b" } else { "b2a" };
    if rule == 0 {
        return Some((String::new(), cfg.get(d)?.as_str()?.to_string()));
    }
    let r = cfg.get("rules")?.as_array()?.get(rule as usize - 1)?;
    Some((
        r.get("filter")?.as_str()?.to_string(),
        r.get("stages")?.as_str()?.to_string(),
    ))
}

impl EmuLogReport {
    /// The human summary: per flow a line of counts, then its delays.
    pub fn render_text(&self, w: &mut impl Write) -> Result<(), AnalysisError> {
        for f in &self.flows {
            let what = match (&f.filter, &f.stages) {
                (Some(filter), Some(stages)) if f.rule > 0 => {
                    format!(
                        " '{filter}' [{}]",
                        if stages.is_empty() { "pass" } else { stages }
                    )
                }
                (_, Some(stages)) => {
                    format!(" [{}]", if stages.is_empty() { "pass" } else { stages })
                }
                _ => String::new(),
            };
            let rule = if f.rule == 0 {
                "default".to_string()
            } else {
                format!("rule {}", f.rule)
            };
            writeln!(
                w,
                "{} {rule}{what}: {} frames, {} copies ({} duplicates), {} sent, {} corrupted, {} dropped ({})",
                f.direction,
                f.frames,
                f.copies,
                f.duplicates,
                f.sent,
                f.corrupted,
                f.dropped.total(),
                f.dropped.text()
            )?;
            writeln!(w, "  applied delay:   {}", pcts(&f.applied_delay))?;
            writeln!(w, "  scheduled delay: {}", pcts(&f.scheduled_delay))?;
            writeln!(
                w,
                "  lateness:        {}; early {}",
                pcts(&f.lateness),
                f.early
            )?;
        }
        writeln!(w, "total: {}", self.totals)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn totals_clause_names_each_count_and_the_drops_by_fate() {
        let t = EmuTotals {
            frames: 10,
            copies: 11,
            sent: 7,
            dropped: {
                let mut d = FateCounts::default();
                d.add_n(EmuFate::Loss, 3);
                d.add(EmuFate::Queue);
                d
            },
            early: 2,
        };
        assert_eq!(
            t.to_string(),
            "10 frames, 11 copies, 7 sent, 4 dropped (loss 3, queue 1), early 2"
        );
        assert_eq!(
            EmuTotals::default().to_string(),
            "0 frames, 0 copies, 0 sent, 0 dropped (none), early 0"
        );
    }

    fn e(rule: u32, dir: u8, seq: u64, copy: u8, fate: EmuFate, t: [u64; 3]) -> Record {
        EmuRecord {
            rule,
            direction: dir,
            seq,
            copy,
            len: 100,
            arrival_ns: t[0],
            deadline_ns: t[1],
            departure_ns: t[2],
            fate,
            corrupted: copy == 1,
            kernel_stamp: true,
        }
        .to_record()
    }

    #[test]
    fn counts_fates_and_delays_per_flow() {
        let mut log = EmuLog::new(8);
        let ms = 1_000_000;
        // a2b default: 3 frames, one duplicated, one lost.
        log.add(&e(0, 0, 0, 0, EmuFate::Sent, [ms, 6 * ms, 6 * ms + 2_000]));
        log.add(&e(0, 0, 1, 0, EmuFate::Loss, [2 * ms, 0, 0]));
        log.add(&e(
            0,
            0,
            2,
            0,
            EmuFate::Sent,
            [3 * ms, 8 * ms, 8 * ms + 1_000],
        ));
        log.add(&e(
            0,
            0,
            2,
            1,
            EmuFate::Sent,
            [3 * ms, 9 * ms, 9 * ms + 3_000],
        ));
        // b2a rule 1: one frame dropped by the limit, one by a code from the future.
        log.add(&e(1, 1, 0, 0, EmuFate::Limit, [ms, 0, 0]));
        log.add(&e(1, 1, 1, 0, EmuFate::Other(77), [ms, 0, 0]));
        // Other kinds are not the emulator's.
        log.add(&Record::default());
        let r = log
            .finish(|rule, dir| Some((format!("f{rule}"), format!("s{dir}"))))
            .unwrap();
        assert_eq!(r.flows.len(), 2);
        let a = &r.flows[0];
        assert_eq!((a.flow, a.direction, a.rule), (0, "a2b", 0));
        assert_eq!((a.frames, a.copies, a.duplicates, a.sent), (3, 4, 1, 3));
        assert_eq!(
            (a.dropped.get(EmuFate::Loss), a.dropped.total(), a.corrupted),
            (1, 1, 1)
        );
        // Within the histograms' 0.1 %.
        let near = |v: i64, want: i64| v.abs_diff(want) <= want as u64 / 1000;
        assert!(
            near(a.applied_delay.min_ns, 5_002_000),
            "{:?}",
            a.applied_delay
        );
        assert!(
            near(a.scheduled_delay.max_ns, 6_000_000),
            "{:?}",
            a.scheduled_delay
        );
        assert_eq!((a.lateness.count, a.early), (3, 0));
        assert!(a.lateness.max_ns >= 2_998 && a.lateness.max_ns <= 3_002);
        let b = &r.flows[1];
        assert_eq!((b.flow, b.direction, b.rule), (3, "b2a", 1));
        assert_eq!(
            (b.dropped.get(EmuFate::Limit), b.dropped.other(), b.sent),
            (1, 1, 0)
        );
        assert_eq!(b.stages.as_deref(), Some("s1"));
        assert_eq!(
            (r.totals.frames, r.totals.sent, r.totals.dropped.total()),
            (5, 3, 3)
        );
        let mut text = Vec::new();
        r.render_text(&mut text).unwrap();
        let text = String::from_utf8(text).unwrap();
        assert!(text.contains("a2b default [s0]: 3 frames, 4 copies (1 duplicates), 3 sent, 1 corrupted, 1 dropped (loss 1)"), "{text}");
        assert!(text.contains("b2a rule 1 'f1' [s1]"), "{text}");
        assert!(text.contains("early 0"), "{text}");
    }

    #[test]
    fn early_departures_are_counted_and_flows_are_bounded() {
        let mut log = EmuLog::new(2);
        log.add(&e(0, 0, 0, 0, EmuFate::Sent, [10, 100, 90]));
        // Hostile times: departure before arrival saturates at 0.
        log.add(&e(0, 0, 1, 0, EmuFate::Sent, [500, 0, 10]));
        let r = log.finish(|_, _| None).unwrap();
        assert_eq!(r.flows[0].early, 1);
        assert_eq!(r.flows[0].applied_delay.min_ns, 1);
        for flow in 0..3 {
            log.add(&e(flow, 0, 0, 0, EmuFate::Loss, [1, 0, 0]));
        }
        assert!(matches!(
            log.finish(|_, _| None),
            Err(AnalysisError::TooManyFlows { limit: 2, .. })
        ));
    }
}

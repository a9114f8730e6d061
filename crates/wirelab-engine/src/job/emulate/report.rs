//! The emulate job's typed report (`wirelab.emulate/1`) and its human
//! summary, rendered from the same values.

use super::{DirectionRun, FileOutcome};
use crate::emulate::forward::Bucket;
use crate::emulate::mmlog::MmLogged;
use crate::emulate::rules::fate_of;
use crate::emulate::{DirModel, Drops, RuleLink};
use wirelab_analysis::DelayStats;
use wirelab_io::bpf::BpfProgram;
use wirelab_link::DropReason;
use wirelab_wire::record::EmuFate;

/// `wirelab.emulate/1`.
#[derive(serde::Serialize)]
pub struct EmulateReport<'a> {
    pub schema: &'static str,
    pub a: &'a str,
    pub b: &'a str,
    pub duration_ns: u64,
    pub a2b: DirReport<'a>,
    pub b2a: DirReport<'a>,
    /// `--log`: records written.
    pub log: Option<&'a FileOutcome>,
    /// `--tap`: frames written.
    pub tap: Option<&'a FileOutcome>,
    /// `--mm-log`: per direction its path and event lines (empty without).
    pub mm_log: &'a [MmLogged],
    /// `--record-decisions`: one trace per rule and direction with stages.
    pub decisions: Vec<DecisionReport<'a>>,
}

/// One decision trace written.
#[derive(serde::Serialize)]
pub struct DecisionReport<'a> {
    pub direction: &'static str,
    pub rule: u32,
    pub path: &'a std::path::Path,
    pub records: u64,
    pub error: Option<&'a str>,
}

#[derive(serde::Serialize)]
pub struct DirReport<'a> {
    /// The default stages (frames no rule took).
    pub stages: &'a str,
    pub seed: u64,
    /// Frames read, copies sent.
    pub received: u64,
    pub sent: u64,
    /// Their bytes (L2 frame lengths).
    pub received_bytes: u64,
    pub sent_bytes: u64,
    /// Copies made beyond the original; copies sent with a bit flipped.
    pub duplicates: u64,
    pub corrupted: u64,
    /// Copies not sent, by reason (`ring`: frames the kernel dropped in
    /// front of the emulator). `received + duplicates = sent + dropped`
    /// (without `ring`).
    pub dropped: Drops,
    /// The same as `dropped.get(EmuFate::SendFailure)` and `dropped.ring`.
    pub send_failures: u64,
    pub ring_drops: u64,
    /// The default stages' link model counters.
    pub link: &'a wirelab_link::LinkCounters,
    /// Departure minus deadline.
    pub lateness: DelayStats,
    pub lateness_buckets: &'a [Bucket],
    pub early: u64,
    /// The rules of this direction, in matching order.
    pub rules: Vec<RuleReport<'a>>,
    /// Rules updated or removed at run time (`ctl`), with their counters
    /// until then.
    pub ended_rules: &'a [crate::emulate::ctl::RuleState],
}

/// One rule in one direction.
#[derive(serde::Serialize)]
pub struct RuleReport<'a> {
    pub rule: u32,
    pub filter: &'a str,
    pub stages: &'a str,
    pub seed: u64,
    /// Frames the rule took.
    pub frames: u64,
    /// Copies still queued when the run stopped.
    pub unsent: u64,
    /// Its link model's counters.
    pub link: &'a wirelab_link::LinkCounters,
}

pub(super) fn dir_report(r: &DirectionRun<DirModel>) -> DirReport<'_> {
    let f = &r.forward;
    let mut dropped = f.dropped;
    dropped.ring = r.ring.drops;
    let d = r.model.default_link();
    DirReport {
        stages: &d.stages,
        seed: d.seed,
        received: f.received,
        sent: f.sent,
        received_bytes: f.received_bytes,
        sent_bytes: f.sent_bytes,
        duplicates: f.duplicates,
        corrupted: f.corrupted,
        dropped,
        send_failures: dropped.get(EmuFate::SendFailure),
        ring_drops: dropped.ring,
        link: d.link.counters(),
        lateness: f.lateness,
        lateness_buckets: &f.lateness_buckets,
        early: f.early,
        rules: r.model.rules().iter().map(rule_report).collect(),
        ended_rules: r.model.ended_rules(),
    }
}

fn rule_report(l: &RuleLink) -> RuleReport<'_> {
    RuleReport {
        rule: l.rule,
        filter: l.filter.as_ref().map_or("", BpfProgram::expr),
        stages: &l.stages,
        seed: l.seed,
        frames: l.frames(),
        unsent: l.unsent,
        link: l.link.counters(),
    }
}

/// "dropped 53 (loss 50, limit 3)" or "dropped 0".
fn drops_text(d: &Drops) -> String {
    let why: Vec<String> = d
        .by_reason()
        .filter(|r| r.1 > 0)
        .map(|(n, v)| format!("{} {v}", n.replace('_', " ")))
        .collect();
    if why.is_empty() {
        "dropped 0".into()
    } else {
        format!("dropped {} ({})", d.total(), why.join(", "))
    }
}

/// The link model's drops as the copies' fates count them (`--json` has
/// the model's own split, e.g. AQM and DRD both count as `queue` here).
fn link_drops(c: &wirelab_link::LinkCounters) -> Drops {
    let mut d = Drops::default();
    for reason in DropReason::ALL {
        d.fates.add_n(fate_of(reason), c.dropped.get(reason));
    }
    d
}

fn stages_text(s: &str) -> &str {
    if s.is_empty() {
        "pass"
    } else {
        s
    }
}

impl EmulateReport<'_> {
    /// The human summary.
    pub fn text(&self) -> String {
        let r = self;
        let mut s = format!(
            "emulate: {} <-> {} for {:.2} s\n",
            r.a,
            r.b,
            r.duration_ns as f64 / 1e9
        );
        for (name, from, to, d) in [("a2b", r.a, r.b, &r.a2b), ("b2a", r.b, r.a, &r.b2a)] {
            s += &d.text(name, from, to);
        }
        s += &self.files_text();
        s
    }

    /// The files written beside forwarding: log, tap, mm-logs, decision
    /// traces, each with its count and the error it stopped on.
    fn files_text(&self) -> String {
        let r = self;
        let mut s = String::new();
        let stopped = |e: Option<&str>| e.map_or(String::new(), |e| format!("; stopped: {e}"));
        for (what, f) in [("log", r.log), ("tap", r.tap)] {
            if let Some(f) = f {
                s += &format!(
                    "  {what}: {} ({} {}){}\n",
                    f.path.display(),
                    f.count,
                    if what == "log" { "records" } else { "frames" },
                    stopped(f.error.as_deref()),
                );
            }
        }
        for m in r.mm_log {
            s += &format!(
                "  mm-log {}: {} ({} lines){}\n",
                m.direction,
                m.path.display(),
                m.lines,
                stopped(m.error.as_deref()),
            );
        }
        for d in &r.decisions {
            s += &format!(
                "  decisions {}{}: {} ({} records){}\n",
                d.direction,
                if d.rule == 0 {
                    String::new()
                } else {
                    format!(" rule {}", d.rule)
                },
                d.path.display(),
                d.records,
                stopped(d.error),
            );
        }
        s
    }
}

impl DirReport<'_> {
    /// One direction's lines: its totals, each rule (live, then ended), the
    /// default stages, the flows, the release lateness.
    fn text(&self, name: &str, from: &str, to: &str) -> String {
        let d = self;
        let mut s = format!(
            "  {name} ({from} -> {to}): {} received, {} sent, {} duplicated, {} corrupted; {}\n",
            d.received,
            d.sent,
            d.duplicates,
            d.corrupted,
            drops_text(&d.dropped),
        );
        for rule in &d.rules {
            let l = rule.link;
            s += &format!(
                "    rule {} '{}' [{}]: {} frames, {} duplicated; {}\n",
                rule.rule,
                rule.filter,
                stages_text(rule.stages),
                rule.frames,
                l.duplicates,
                drops_text(&link_drops(l)),
            );
        }
        for e in d.ended_rules {
            s += &format!(
                "    rule {} '{}' [{}] ({}): {} frames, {} duplicated; {}\n",
                e.rule,
                e.filter,
                stages_text(&e.stages),
                e.ended.unwrap_or("ended"),
                e.frames,
                e.link.duplicates,
                drops_text(&link_drops(&e.link)),
            );
        }
        let l = d.link;
        s += &format!(
            "    {}[{}]: {} frames, {} duplicated, {} reordered; {}; queue max {} packets {} bytes\n",
            if d.rules.is_empty() { "stages " } else { "default " },
            stages_text(d.stages),
            l.arrivals,
            l.duplicates,
            l.reordered,
            drops_text(&link_drops(l)),
            l.queue_packets_max,
            l.queue_bytes_max,
        );
        if l.flows > 0 {
            s += &format!(
                "    flows {} (past the flow bound: {} packets)\n",
                l.flows, l.flow_overflow
            );
        }
        if d.lateness.count > 0 {
            s += &d.lateness_text();
        }
        s
    }

    /// Release lateness: percentiles, early copies, the histogram.
    fn lateness_text(&self) -> String {
        let us = |ns: i64| ns as f64 / 1e3;
        let l = &self.lateness;
        let hist: Vec<String> = self
            .lateness_buckets
            .iter()
            .map(|b| match b.le_ns {
                Some(le) => format!("<={} {}", short_ns(le), b.count),
                None => format!(">10ms {}", b.count),
            })
            .collect();
        format!(
            "    release lateness: p50 {:.1} us, p90 {:.1} us, p99 {:.1} us, p99.9 {:.1} us, max {:.1} us; early {}\n    lateness histogram: {}\n",
            us(l.p50_ns),
            us(l.p90_ns),
            us(l.p99_ns),
            us(l.p999_ns),
            us(l.max_ns),
            self.early,
            hist.join(", "),
        )
    }
}

/// 1000 → "1us", 10_000_000 → "10ms".
fn short_ns(ns: u64) -> String {
    if ns >= 1_000_000 {
        format!("{}ms", ns / 1_000_000)
    } else {
        format!("{}us", ns / 1_000)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn drops_are_named_by_reason_and_buckets_by_their_bound() {
        let mut d = Drops::default();
        d.fates.add_n(EmuFate::Loss, 50);
        d.fates.add_n(EmuFate::Limit, 3);
        assert_eq!(drops_text(&d), "dropped 53 (loss 50, limit 3)");
        assert_eq!(drops_text(&Drops::default()), "dropped 0");
        assert_eq!(
            (short_ns(1_000), short_ns(10_000_000)),
            ("1us".into(), "10ms".into())
        );
        assert_eq!(stages_text(""), "pass");
    }
}

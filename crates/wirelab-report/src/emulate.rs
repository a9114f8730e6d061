//! The page of an emulator per-copy log (`wirelab emulate --log FILE`,
//! records of kind `Emulated`; docs/emulate.md "The per-copy log"): the
//! per-rule summary of [`EmuLog`] (the numbers `wirelab analyze` prints),
//! the applied delay over time beside the scheduled one, drops by reason
//! and the release-lateness histogram.
//!
//! Two streaming passes over the file: the first feeds [`EmuLog`] and
//! finds the arrival span; the second fills the delay envelopes and the
//! lateness histogram over the ranges the first found.

use crate::bucket::{Envelope, LinearHist};
use crate::error::ReportError;
use crate::html::{Cell, Page};
use crate::plot::{self, ns_unit};
use crate::source::open_record_reader;
use std::path::{Path, PathBuf};
use wirelab_analysis::emulog::{EmuFlowReport, EmuLog, EmuLogReport};
use wirelab_analysis::fates::FateCounts;
use wirelab_analysis::text::fmt_ns;
use wirelab_wire::record::{EmuFate, EmuRecord};

/// Figure titles, in page order.
pub const FIGURES: [&str; 3] = [
    "Applied delay over time",
    "Drops by reason",
    "Release lateness histogram",
];

const BUCKETS: usize = 240;
const BINS: usize = 60;

/// What the page shows.
pub struct EmuData {
    pub name: String,
    pub metadata: Option<serde_json::Value>,
    pub report: EmuLogReport,
    /// Applied and scheduled delay (ns) by arrival time.
    pub applied: Option<Envelope>,
    pub scheduled: Option<Envelope>,
    /// Release lateness (departure − deadline) of the sent copies, from 0
    /// to the largest p99.9 of the flows; early copies are `below`.
    pub lateness: LinearHist,
    /// Records of an unknown kind, bytes of a partial record at the end.
    pub unknown_kind: u64,
    pub partial_bytes: usize,
}

fn metadata(path: &Path) -> Result<Option<serde_json::Value>, ReportError> {
    Ok(serde_json::from_str(&open_record_reader(path)?.header().metadata).ok())
}

/// True for a record file whose metadata says `"role": "emulate"`.
pub fn is_emulator_log(path: &Path) -> bool {
    metadata(path).is_ok_and(|m| {
        m.as_ref()
            .and_then(|m| m.get("role"))
            .and_then(|r| r.as_str())
            == Some("emulate")
    })
}

/// One pass over the emulated records; returns (unknown kind, partial bytes).
fn pass(
    path: &Path,
    f: &mut dyn FnMut(&EmuRecord, &wirelab_wire::record::Record),
) -> Result<(u64, usize), ReportError> {
    let mut r = open_record_reader(path)?;
    let input = |e: wirelab_wire::record::RecordError| ReportError::Input {
        path: PathBuf::from(path),
        message: e.to_string(),
    };
    while let Some(rec) = r.next_record().map_err(input)? {
        if let Some(e) = EmuRecord::from_record(&rec) {
            f(&e, &rec);
        }
    }
    Ok((r.skipped, r.trailing_bytes))
}

/// Reads the log in two passes; see the module docs. `max_flows` bounds
/// the rule and direction pairs.
pub fn collect(path: &Path, max_flows: usize) -> Result<EmuData, ReportError> {
    let meta = metadata(path)?;
    let mut log = EmuLog::new(max_flows);
    let mut span: Option<(u64, u64)> = None;
    pass(path, &mut |e, r| {
        log.add(r);
        if e.fate == EmuFate::Sent {
            span = Some(span.map_or((e.arrival_ns, e.arrival_ns), |(a, b)| {
                (a.min(e.arrival_ns), b.max(e.arrival_ns))
            }));
        }
    })?;
    let cfg = meta.as_ref().and_then(|m| m.get("config"));
    let report = log
        .finish(|rule, dir| wirelab_analysis::emulog::rule_label(cfg, rule, dir))
        .map_err(|e| match e {
            wirelab_analysis::AnalysisError::TooManyFlows { limit, .. } => {
                ReportError::TooManyFlows { limit }
            }
            e => e.into(),
        })?;
    let late_hi = report
        .flows
        .iter()
        .map(|f| f.lateness.p999_ns)
        .max()
        .unwrap_or(0)
        .max(1);
    let mut applied = span.map(|(lo, hi)| Envelope::new(lo, hi, BUCKETS, 0));
    let mut scheduled = span.map(|(lo, hi)| Envelope::new(lo, hi, BUCKETS, 0));
    // One bin past p99.9 holds it; the rest are counted above.
    let mut lateness = LinearHist::new(0, late_hi + late_hi / BINS as i64 + 1, BINS);
    let (unknown_kind, partial_bytes) = pass(path, &mut |e, _| {
        if e.fate != EmuFate::Sent {
            return;
        }
        let d = |a: u64, b: u64| a.saturating_sub(b).min(i64::MAX as u64) as i64;
        if let (Some(a), Some(s)) = (applied.as_mut(), scheduled.as_mut()) {
            a.record(e.arrival_ns, d(e.departure_ns, e.arrival_ns));
            s.record(e.arrival_ns, d(e.deadline_ns, e.arrival_ns));
        }
        let late = i128::from(e.departure_ns) - i128::from(e.deadline_ns);
        lateness.record(late.clamp(i64::MIN.into(), i64::MAX.into()) as i64);
    })?;
    Ok(EmuData {
        name: path.display().to_string(),
        metadata: meta,
        report,
        applied,
        scheduled,
        lateness,
        unknown_kind,
        partial_bytes,
    })
}

/// Drop reasons by label, in the order of `wirelab.emulate-log/1`.
pub fn reasons(d: &FateCounts) -> Vec<(&'static str, u64)> {
    d.drops()
        .map(|(row, n)| (row.label, n))
        .chain([("other", d.other())])
        .collect()
}

/// Renders the page.
pub fn render(d: &EmuData, title: &str) -> Result<String, ReportError> {
    let mut p = Page::new(title);
    p.para(&format!(
        "wirelab {} — emulator per-copy log {}: {}.",
        env!("CARGO_PKG_VERSION"),
        d.name,
        d.report.totals,
    ));
    if d.partial_bytes > 0 {
        p.warning(&format!(
            "ignored a partial record of {} bytes at the end (file cut short?)",
            d.partial_bytes
        ));
    }
    if d.unknown_kind > 0 {
        p.warning(&format!(
            "skipped {} records of a kind this version does not know",
            d.unknown_kind
        ));
    }
    p.h2("Rules");
    rules_table(&mut p, &d.report);
    delay_figure(&mut p, d)?;
    drops_figure(&mut p, &d.report.totals.dropped)?;
    lateness_figure(&mut p, &d.lateness)?;
    p.metadata(d.metadata.as_ref());
    p.details(
        "wirelab.emulate-log/1 (the numbers above)",
        &serde_json::to_string_pretty(&d.report).map_err(|e| ReportError::Plot(e.to_string()))?,
    );
    Ok(p.finish())
}

/// The per-rule summary table: one row per rule and direction.
fn rules_table(p: &mut Page, report: &EmuLogReport) {
    let rows: Vec<Vec<Cell>> = report.flows.iter().map(rule_row).collect();
    p.table(
        &[
            "flow",
            "filter",
            "stages",
            "frames",
            "copies",
            "sent",
            "dropped",
            "scheduled p50",
            "applied p50",
            "applied p99",
            "applied max",
            "lateness p99",
            "lateness max",
            "early",
        ],
        &rows,
        true,
    );
}

/// One row of the rules table; a delay of a distribution with no samples
/// is shown as "-".
fn rule_row(f: &EmuFlowReport) -> Vec<Cell> {
    let ns = |v: i64, n: u64| {
        if n == 0 {
            Cell::text("-")
        } else {
            Cell::num(fmt_ns(v as f64), v as f64)
        }
    };
    let (a, s, l) = (&f.applied_delay, &f.scheduled_delay, &f.lateness);
    vec![
        Cell::text(format!(
            "{} {}",
            f.direction,
            if f.rule == 0 {
                "default".to_string()
            } else {
                format!("rule {}", f.rule)
            }
        )),
        Cell::text(f.filter.clone().unwrap_or_default()),
        Cell::text(f.stages.clone().unwrap_or_default()),
        Cell::count(Some(f.frames)),
        Cell::count(Some(f.copies)),
        Cell::count(Some(f.sent)),
        Cell::count(Some(f.dropped.total())),
        ns(s.p50_ns, s.count),
        ns(a.p50_ns, a.count),
        ns(a.p99_ns, a.count),
        ns(a.max_ns, a.count),
        ns(l.p99_ns, l.count),
        ns(l.max_ns, l.count),
        Cell::count(Some(f.early)),
    ]
}

/// Figure 1: applied delay over time, the scheduled delay beside it.
fn delay_figure(p: &mut Page, d: &EmuData) -> Result<(), ReportError> {
    let (ap, sp) = match (&d.applied, &d.scheduled) {
        (Some(a), Some(s)) => (a.points(), s.points()),
        _ => (Vec::new(), Vec::new()),
    };
    let t0 = ap.first().map_or(0, |p| p.t_ns);
    let max = ap.iter().chain(&sp).map(|p| p.max).max().unwrap_or(0);
    let u = ns_unit(max as f64);
    let x = |t: u64| t.saturating_sub(t0) as f64 / 1e9;
    let y = |v: i64| v as f64 / u.div;
    let series = vec![
        (
            "applied max".to_string(),
            ap.iter().map(|p| (x(p.t_ns), y(p.max))).collect(),
        ),
        (
            "applied p99".to_string(),
            ap.iter().map(|p| (x(p.t_ns), y(p.p99))).collect(),
        ),
        (
            "applied p50".to_string(),
            ap.iter().map(|p| (x(p.t_ns), y(p.p50))).collect(),
        ),
        (
            "scheduled p50".to_string(),
            sp.iter().map(|p| (x(p.t_ns), y(p.p50))).collect(),
        ),
        (
            "scheduled max".to_string(),
            sp.iter().map(|p| (x(p.t_ns), y(p.max))).collect(),
        ),
    ];
    let svg = plot::lines(
        &series,
        "time since the first arrival (s)",
        &format!("delay ({})", u.name),
        &[],
    )?;
    let width = d.applied.as_ref().map_or(0, Envelope::width);
    p.figure(
        FIGURES[0],
        &svg,
        &format!(
            "Per sent copy, by kernel arrival time in buckets of {}: applied delay (departure − \
             arrival) p50, p99 and max; scheduled delay (deadline − arrival: what the stages \
             asked) p50 and max. All rules and directions.",
            fmt_ns(width as f64)
        ),
    );
    Ok(())
}

/// Figure 2: drops by reason, the reasons with none left out.
fn drops_figure(p: &mut Page, dropped: &FateCounts) -> Result<(), ReportError> {
    let cats: Vec<(String, u64)> = reasons(dropped)
        .into_iter()
        .filter(|r| r.1 > 0)
        .map(|(n, v)| (n.to_string(), v))
        .collect();
    let svg = plot::category_bars(&cats, "dropped copies")?;
    let cap = if cats.is_empty() {
        "No copy was dropped.".to_string()
    } else {
        format!(
            "Copies dropped, by reason (all rules and directions): {}.",
            dropped.text()
        )
    };
    p.figure(FIGURES[1], &svg, &cap);
    Ok(())
}

/// Figure 3: the release-lateness histogram.
fn lateness_figure(p: &mut Page, lateness: &LinearHist) -> Result<(), ReportError> {
    let bins = lateness.bins();
    let lu = ns_unit(bins.last().map_or(0.0, |b| b.1 as f64));
    let bars: Vec<(f64, f64, f64)> = bins
        .iter()
        .map(|&(a, b, c)| (a as f64 / lu.div, b as f64 / lu.div, c as f64))
        .collect();
    let svg = plot::bars(
        &bars,
        &format!("departure − deadline ({})", lu.name),
        "sent copies",
        &[],
    )?;
    p.figure(
        FIGURES[2],
        &svg,
        &format!(
            "Release lateness of the sent copies, {} bins from 0 to the largest p99.9 of the \
             flows; {} later copies not drawn, {} early (departure before deadline).",
            BINS, lateness.above, lateness.below
        ),
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use wirelab_wire::record::{RecordFileHeader, Role};

    const T0: u64 = 1_700_000_000_000_000_000;
    const MS: u64 = 1_000_000;

    /// 1,000 frames a→b 1 ms apart under "delay 20ms": every 10th lost,
    /// frame 500 dropped by the limit, frame 7 duplicated; copies leave
    /// 1 µs after their deadline, frame 300 2 ms late.
    fn write_log(path: &Path) {
        let meta = serde_json::json!({
            "role": "emulate",
            "config": {"a2b": "delay 20ms loss 10%", "b2a": "", "rules": []},
        });
        let mut b = RecordFileHeader {
            role: Role::Sender,
            metadata: meta.to_string(),
        }
        .to_bytes();
        for i in 0..1000u64 {
            let arrival = T0 + i * MS;
            let fate = match i {
                _ if i % 10 == 9 => EmuFate::Loss,
                500 => EmuFate::Limit,
                _ => EmuFate::Sent,
            };
            let sent = fate == EmuFate::Sent;
            let late = if i == 300 { 2 * MS } else { 1_000 };
            let copies = if i == 7 { 2 } else { 1 };
            for copy in 0..copies {
                let r = EmuRecord {
                    rule: 0,
                    direction: 0,
                    seq: i,
                    copy,
                    len: 100,
                    arrival_ns: arrival,
                    deadline_ns: if sent { arrival + 20 * MS } else { 0 },
                    departure_ns: if sent { arrival + 20 * MS + late } else { 0 },
                    fate,
                    corrupted: false,
                    kernel_stamp: true,
                };
                b.extend_from_slice(&r.to_record().to_bytes());
            }
        }
        std::fs::write(path, b).unwrap();
    }

    #[test]
    fn delays_drops_and_lateness_of_a_log() {
        let path = std::env::temp_dir().join(format!("wl-report-emu-{}.wlr", std::process::id()));
        write_log(&path);
        assert!(is_emulator_log(&path));
        let d = collect(&path, 8).unwrap();
        let t = &d.report.totals;
        assert_eq!((t.frames, t.copies, t.sent), (1000, 1001, 900));
        assert_eq!(
            (
                t.dropped.get(EmuFate::Loss),
                t.dropped.get(EmuFate::Limit),
                t.early
            ),
            (100, 1, 0)
        );
        let f = &d.report.flows[0];
        assert_eq!(f.stages.as_deref(), Some("delay 20ms loss 10%"));
        // Envelopes: every sent copy, applied = scheduled + lateness.
        let ap = d.applied.as_ref().unwrap().points();
        let sp = d.scheduled.as_ref().unwrap().points();
        assert_eq!(ap.iter().map(|p| p.count).sum::<u64>(), 900);
        assert_eq!(sp.iter().map(|p| p.max).max(), Some(20 * MS as i64));
        let amax = ap.iter().map(|p| p.max).max().unwrap();
        assert_eq!(amax, (22 * MS) as i64);
        // Lateness: 899 copies at 1 µs, one at 2 ms beyond p99.9's bin.
        assert_eq!(d.lateness.total(), 900);
        assert_eq!(d.lateness.below, 0);
        assert_eq!(
            d.lateness.counts.iter().sum::<u64>() + d.lateness.above,
            900
        );
        let html = render(&d, "emu").unwrap();
        assert_eq!(html.matches("<svg").count(), 3);
        for t in FIGURES {
            assert!(html.contains(&format!("<h3>{t}</h3>")), "{t}");
        }
        assert!(html.contains("dropped, by reason (all rules and directions): loss 100, limit 1."));
        assert!(
            html.contains("\nloss\n</text>") && html.contains("\nlimit\n</text>"),
            "bar labels"
        );
        // A probe record file is not an emulator log.
        let other = path.with_extension("tx");
        std::fs::write(
            &other,
            RecordFileHeader {
                role: Role::Sender,
                metadata: r#"{"role":"sender"}"#.into(),
            }
            .to_bytes(),
        )
        .unwrap();
        assert!(!is_emulator_log(&other));
        std::fs::remove_file(&path).unwrap();
        std::fs::remove_file(&other).unwrap();
    }

    #[test]
    fn rule_rows_name_the_rule_and_dash_empty_delays() {
        let path =
            std::env::temp_dir().join(format!("wl-report-emu-row-{}.wlr", std::process::id()));
        write_log(&path);
        let mut f = collect(&path, 8).unwrap().report.flows[0].clone();
        std::fs::remove_file(&path).unwrap();
        let text = |row: &[Cell]| row.iter().map(|c| c.text.clone()).collect::<Vec<_>>();
        let row = text(&rule_row(&f));
        assert_eq!(row[0], "a2b default");
        assert_eq!(row[7..9], ["20.0ms", "20.0ms"], "scheduled and applied p50");
        f.rule = 3;
        f.applied_delay.count = 0;
        let row = text(&rule_row(&f));
        assert_eq!(row[0], "a2b rule 3");
        assert_eq!(row[7], "20.0ms", "scheduled delay still has samples");
        assert_eq!(row[8..11], ["-", "-", "-"], "applied delay has none");
    }
}

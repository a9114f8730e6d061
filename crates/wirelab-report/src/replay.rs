//! The page of a replay departure log (`wirelab replay --log FILE`): a
//! record file of role `sender` whose metadata says `"role": "replay"`,
//! one Tx record per frame sent — `seq` the frame's number, `flow` the
//! loop, `sched_ns` its ideal time and `tx_ns − start_unix_ns − sched_ns`
//! its departure error (docs/replay.md).
//!
//! Two streaming passes: the first feeds [`Fidelity`] (the numbers `replay
//! --json` prints) and a histogram of |gap error|, and finds the time span
//! and the number of gaps; the second fills the departure-error envelope
//! over that span and keeps every k-th gap pair for the scatter, so at most
//! [`MAX_SCATTER`] points whatever the log's size.

use crate::bucket::{Envelope, EnvelopePoint};
use crate::error::ReportError;
use crate::html::{Cell, Page};
use crate::plot::{self, ns_unit};
use crate::source::{ProbeSource, SourceInfo};
use hdrhistogram::Histogram;
use wirelab_analysis::text::fmt_ns;
use wirelab_analysis::{Fidelity, FidelityReport};
use wirelab_wire::record::Record;

/// Most points in the gap scatter.
pub const MAX_SCATTER: usize = 4000;
/// Buckets of the departure-error envelope.
const BUCKETS: usize = 240;

/// Figure titles, in page order.
pub const FIGURES: [&str; 3] = [
    "Departure error over time",
    "Inter-departure error CDF",
    "Original vs replayed gaps",
];

/// True for the metadata of a replay departure log.
pub fn is_replay_log(metadata: Option<&serde_json::Value>) -> bool {
    metadata
        .and_then(|m| m.get("role"))
        .and_then(|r| r.as_str())
        == Some("replay")
}

/// What the page shows.
pub struct ReplayData {
    pub info: SourceInfo,
    pub fidelity: FidelityReport,
    /// Loops (distinct `flow` values) seen, at most the first 2^16 counted.
    pub loops: u64,
    /// Departure error (ns, signed) by ideal time.
    pub departure: Option<Envelope>,
    /// `(quantile, |gap error| ns)` on a fixed grid.
    pub gap_quantiles: Vec<(f64, u64)>,
    /// `(original gap, replayed gap)` ns, every `stride`-th pair.
    pub scatter: Vec<(u64, u64)>,
    pub stride: u64,
    /// Pairs of consecutive frames of one loop.
    pub pairs: u64,
    /// Pairs left out of the log-log scatter: a gap of 0 has no place on it.
    pub zero_gaps: u64,
}

/// The departure offset of `r` from the schedule's origin: the log writes
/// `tx_ns` as `start_unix_ns` + lead + offset and `sched_ns` as lead +
/// ideal offset, so both are on one clock after subtracting the start.
fn actual(r: &Record, start: u64) -> u64 {
    r.tx_ns.saturating_sub(start)
}

fn error_ns(r: &Record, start: u64) -> i64 {
    (i128::from(actual(r, start)) - i128::from(r.sched_ns))
        .clamp(i128::from(i64::MIN), i128::from(i64::MAX)) as i64
}

/// Reads the log in two passes; see the module docs.
pub fn collect(src: &dyn ProbeSource) -> Result<ReplayData, ReportError> {
    let info = src.info().clone();
    let start = info
        .metadata
        .as_ref()
        .and_then(|m| m.get("start_unix_ns"))
        .and_then(|v| v.as_u64())
        .unwrap_or(0);
    // Lateness is not in the log (replay's --late-threshold): late counts
    // are left out of the page, so any threshold does.
    let mut fid = Fidelity::new(u64::MAX);
    let mut gap_err: Histogram<u64> = wirelab_analysis::percentiles::histogram();
    let mut span: Option<(u64, u64)> = None;
    let mut err_min = i64::MAX;
    let mut prev: Option<(u32, u64, u64)> = None;
    let mut pairs = 0u64;
    let mut loops = std::collections::HashSet::new();
    src.pass(&mut |r: &Record| {
        fid.record(r.sched_ns, actual(r, start), r.size);
        span = Some(span.map_or((r.sched_ns, r.sched_ns), |(a, b)| {
            (a.min(r.sched_ns), b.max(r.sched_ns))
        }));
        err_min = err_min.min(error_ns(r, start));
        if loops.len() < 1 << 16 {
            loops.insert(r.flow);
        }
        if let Some((flow, pi, pa)) = prev {
            if flow == r.flow {
                let orig = i128::from(r.sched_ns) - i128::from(pi);
                let got = i128::from(actual(r, start)) - i128::from(pa);
                let e = (got - orig).unsigned_abs().min(u128::from(u64::MAX)) as u64;
                gap_err.saturating_record(e);
                pairs += 1;
            }
        }
        prev = Some((r.flow, r.sched_ns, actual(r, start)));
    })?;
    let stride = pairs.div_ceil(MAX_SCATTER as u64).max(1);
    let mut departure = span.map(|(lo, hi)| Envelope::new(lo, hi, BUCKETS, err_min));
    let mut scatter = Vec::new();
    let (mut n, mut zero_gaps) = (0u64, 0u64);
    let mut prev: Option<(u32, u64, u64)> = None;
    src.pass(&mut |r: &Record| {
        if let Some(env) = departure.as_mut() {
            env.record(r.sched_ns, error_ns(r, start));
        }
        if let Some((flow, pi, pa)) = prev {
            if flow == r.flow {
                let orig = r.sched_ns.saturating_sub(pi);
                let got = actual(r, start).saturating_sub(pa);
                if orig == 0 || got == 0 {
                    zero_gaps += 1;
                } else if n % stride == 0 && scatter.len() < MAX_SCATTER {
                    scatter.push((orig, got));
                }
                n += 1;
            }
        }
        prev = Some((r.flow, r.sched_ns, actual(r, start)));
    })?;
    let gap_quantiles = if gap_err.is_empty() {
        Vec::new()
    } else {
        let mut q: Vec<f64> = (0..=99).map(|i| f64::from(i) / 100.0).collect();
        q.extend([0.995, 0.999, 0.9995, 0.9999, 1.0]);
        q.into_iter()
            .map(|q| (q, gap_err.value_at_quantile(q)))
            .collect()
    };
    Ok(ReplayData {
        info,
        fidelity: fid.report(),
        loops: loops.len() as u64,
        departure,
        gap_quantiles,
        scatter,
        stride,
        pairs,
        zero_gaps,
    })
}

/// Renders the page.
pub fn render(d: &ReplayData, title: &str) -> Result<String, ReportError> {
    let mut p = Page::new(title);
    let f = &d.fidelity;
    p.para(&format!(
        "wirelab {} — replay departure log {}: {} frames in {} loop(s). Departure error = \
         departure − ideal time on the replay's clock (CLOCK_MONOTONIC before the send()).",
        env!("CARGO_PKG_VERSION"),
        d.info.name,
        f.packets,
        d.loops
    ));
    fidelity(d, &mut p);
    figure_departure_error(d, &mut p)?;
    figure_gap_error_cdf(d, &mut p)?;
    figure_gap_scatter(d, &mut p)?;
    p.metadata(d.info.metadata.as_ref());
    p.details(
        "wirelab.replay/1 fidelity numbers (late counts: see replay --json)",
        &serde_json::to_string_pretty(f).map_err(|e| ReportError::Plot(e.to_string()))?,
    );
    Ok(p.finish())
}

/// The fidelity table and the run's totals.
fn fidelity(d: &ReplayData, p: &mut Page) {
    let f = &d.fidelity;
    p.h2("Fidelity");
    let ns = |v: i64| Cell::num(fmt_ns(v as f64), v as f64);
    let de = &f.departure_error;
    let ge = &f.interdeparture_error;
    let rows = vec![
        vec![
            Cell::text("departure error"),
            ns(de.p50_ns),
            ns(de.p99_ns),
            ns(de.p999_ns),
            ns(de.max_ns),
        ],
        vec![
            Cell::text("|inter-departure error|"),
            ns(ge.p50_ns),
            ns(ge.p99_ns),
            ns(ge.p999_ns),
            ns(ge.max_ns),
        ],
    ];
    p.table(&["", "p50", "p99", "p99.9", "max"], &rows, false);
    p.kv(&[
        ("frames".into(), f.packets.to_string()),
        ("L2 bytes".into(), f.bytes_l2.to_string()),
        ("duration".into(), fmt_ns(f.duration_ns as f64)),
        (
            "scheduled duration".into(),
            fmt_ns(f.scheduled_duration_ns as f64),
        ),
        ("duration error".into(), fmt_ns(f.duration_error_ns as f64)),
        ("drift".into(), format!("{:.1} ppm", f.drift_ppm)),
        (
            "mean signed gap error".into(),
            fmt_ns(f.interdeparture_error_mean_signed_ns),
        ),
        ("rate".into(), format!("{:.2} pps", f.pps)),
        ("L2 rate".into(), format!("{:.3} Mbit/s", f.mbps_l2)),
        ("wire rate".into(), format!("{:.3} Mbit/s", f.mbps_wire)),
    ]);
}

/// Departure error over the run.
fn figure_departure_error(d: &ReplayData, p: &mut Page) -> Result<(), ReportError> {
    let t0 = d
        .departure
        .as_ref()
        .map_or(0, |e| e.points().first().map_or(0, |p| p.t_ns));
    let (points, width): (Vec<EnvelopePoint>, u64) = d
        .departure
        .as_ref()
        .map_or((Vec::new(), 1), |e| (e.points(), e.width()));
    let svg = plot::envelope(&points, width, t0, &[], "", "departure error")?;
    p.figure(
        FIGURES[0],
        &svg,
        &format!(
            "Departure minus ideal time per frame, by ideal time, in buckets of {}: min–max \
             band, p50 and p99.",
            fmt_ns(width as f64)
        ),
    );

    Ok(())
}

/// The CDF of the inter-departure error.
fn figure_gap_error_cdf(d: &ReplayData, p: &mut Page) -> Result<(), ReportError> {
    let ge = &d.fidelity.interdeparture_error;
    let max = d.gap_quantiles.last().map_or(0, |q| q.1);
    let u = ns_unit(max as f64);
    let cdf: Vec<(f64, f64)> = d
        .gap_quantiles
        .iter()
        .map(|&(q, v)| (v as f64 / u.div, q))
        .collect();
    let marks: Vec<(f64, f64, String)> = if d.gap_quantiles.is_empty() {
        Vec::new()
    } else {
        [(0.5, ge.p50_ns, "p50"), (0.99, ge.p99_ns, "p99")]
            .into_iter()
            .map(|(q, v, l)| (v as f64 / u.div, q, format!("{l} {}", fmt_ns(v as f64))))
            .collect()
    };
    let svg = plot::lines(
        &[("CDF".into(), cdf)],
        &format!("|replayed gap − original gap| ({})", u.name),
        "fraction of gaps",
        &marks,
    )?;
    p.figure(
        FIGURES[1],
        &svg,
        &format!(
            "Cumulative distribution of the inter-departure error over {} gaps between \
             consecutive frames of a loop.",
            d.pairs
        ),
    );

    Ok(())
}

/// Original against replayed gap, pair by pair.
fn figure_gap_scatter(d: &ReplayData, p: &mut Page) -> Result<(), ReportError> {
    let svg = plot::scatter_loglog(&d.scatter, "original gap", "replayed gap")?;
    let mut cap = format!(
        "Each dot a pair of consecutive frames: the gap in the trace against the gap on the \
         wire; on the grey line a gap was kept exactly. {} of {} pairs",
        d.scatter.len(),
        d.pairs
    );
    if d.stride > 1 {
        cap.push_str(&format!(" (one in {})", d.stride));
    }
    if d.zero_gaps > 0 {
        cap.push_str(&format!(
            "; {} with a gap of 0 (no place on log axes) left out",
            d.zero_gaps
        ));
    }
    cap.push('.');
    p.figure(FIGURES[2], &svg, &cap);

    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::{MemorySource, Side};
    use wirelab_wire::record::RecordKind;

    const START: u64 = 1_700_000_000_000_000_000;
    const LEAD: u64 = 1_000_000;

    /// Two loops of 5,000 frames 10 µs apart in the trace; frame 100 of
    /// each loop leaves 50 µs late, the rest 1 µs late.
    fn log() -> MemorySource {
        let mut records = Vec::new();
        for l in 0..2u32 {
            for i in 0..5000u64 {
                let ideal = LEAD + (u64::from(l) * 5000 + i) * 10_000;
                let err = if i == 100 { 50_000 } else { 1_000 };
                records.push(Record {
                    flow: l,
                    seq: i + 1,
                    size: 100,
                    sched_ns: ideal,
                    tx_ns: START + ideal + err,
                    kind: RecordKind::Tx,
                    ..Default::default()
                });
            }
        }
        MemorySource {
            info: SourceInfo {
                name: "r.wlr".into(),
                side: Side::Sender,
                metadata: Some(serde_json::json!({"role": "replay", "start_unix_ns": START})),
            },
            records,
        }
    }

    #[test]
    fn departure_errors_gaps_and_a_bounded_scatter() {
        let src = log();
        assert!(is_replay_log(src.info.metadata.as_ref()));
        assert!(!is_replay_log(Some(&serde_json::json!({"role": "sender"}))));
        let d = collect(&src).unwrap();
        assert_eq!((d.fidelity.packets, d.loops), (10_000, 2));
        // HDR histograms: within 0.1 %.
        let near = |v: i64, want: i64| (v - want).abs() <= want / 1000;
        assert!(near(d.fidelity.departure_error.max_ns, 50_000));
        assert!(near(d.fidelity.departure_error.p50_ns, 1_000));
        // 4,999 pairs a loop; around each late frame two gaps are off by
        // 49 µs, the rest exact (0 error).
        assert_eq!(d.pairs, 9_998);
        let gmax = d.gap_quantiles.last().unwrap().1 as i64;
        assert!(near(gmax, 49_000), "{gmax}");
        assert_eq!(d.gap_quantiles[50].1, 0);
        // The scatter: every 3rd pair, at most MAX_SCATTER.
        assert_eq!(d.stride, 3);
        assert_eq!(d.scatter.len(), 3_333);
        assert!(d.scatter.iter().all(|&(o, _)| o == 10_000));
        // The envelope: the late frames are in its max.
        let pts = d.departure.as_ref().unwrap().points();
        assert_eq!(pts.iter().map(|p| p.count).sum::<u64>(), 10_000);
        assert_eq!(pts.iter().map(|p| p.max).max(), Some(50_000));
        assert_eq!(pts.iter().map(|p| p.min).min(), Some(1_000));
        let html = render(&d, "replay").unwrap();
        assert_eq!(html.matches("<svg").count(), 3);
        for t in FIGURES {
            assert!(html.contains(&format!("<h3>{t}</h3>")), "{t}");
        }
        assert!(html.contains("3333 of 9998 pairs (one in 3)"));
    }

    #[test]
    fn an_empty_log_still_renders() {
        let mut src = log();
        src.records.clear();
        let d = collect(&src).unwrap();
        assert_eq!((d.fidelity.packets, d.pairs, d.scatter.len()), (0, 0, 0));
        let html = render(&d, "replay").unwrap();
        assert_eq!(html.matches("<svg").count(), 3);
    }
}

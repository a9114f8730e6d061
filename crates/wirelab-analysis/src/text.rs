//! Compact human-readable summary (in the spirit of irtt's): one table row
//! per flow, then per-flow detail lines for loss bursts, sender pacing and
//! RTT, then the clock note for one-way delays. Unknown values print `-`.

use crate::error::AnalysisError;
use crate::latency::DelayStats;
use crate::report::{FlowReport, Summary};
use std::io::Write;

/// Human time: `850ns`, `12.3µs`, `1.50ms`, `2.35s` (sign kept).
pub fn fmt_ns(ns: f64) -> String {
    if !ns.is_finite() {
        return "-".into();
    }
    let a = ns.abs();
    let (v, unit) = if a < 1e3 {
        return format!("{}ns", ns.round() as i64);
    } else if a < 1e6 {
        (ns / 1e3, "µs")
    } else if a < 1e9 {
        (ns / 1e6, "ms")
    } else {
        (ns / 1e9, "s")
    };
    let prec = if v.abs() < 10.0 {
        2
    } else if v.abs() < 100.0 {
        1
    } else {
        0
    };
    format!("{v:.prec$}{unit}")
}

fn fmt_i(ns: i64) -> String {
    fmt_ns(ns as f64)
}

fn fmt_scaled(v: f64, unit: &str) -> String {
    if !v.is_finite() {
        return "-".into();
    }
    let (x, p) = if v >= 1e9 {
        (v / 1e9, "G")
    } else if v >= 1e6 {
        (v / 1e6, "M")
    } else if v >= 1e3 {
        (v / 1e3, "k")
    } else {
        (v, "")
    };
    format!("{x:.2} {p}{unit}")
}

/// Human packet rate: `1.00 kpps`.
pub fn fmt_pps(v: f64) -> String {
    fmt_scaled(v, "pps")
}

/// Human bit rate: `8.32 Mbit/s`.
pub fn fmt_bps(v: f64) -> String {
    fmt_scaled(v, "bit/s")
}

fn opt<T>(v: Option<T>, f: impl Fn(T) -> String) -> String {
    v.map_or_else(|| "-".into(), f)
}

fn quad(d: &DelayStats) -> String {
    format!(
        "{}/{}/{}/{}",
        fmt_i(d.min_ns),
        fmt_i(d.p50_ns),
        fmt_i(d.p99_ns),
        fmt_i(d.max_ns)
    )
}

fn row(f: &FlowReport, name: String) -> Vec<String> {
    let rx = f.receiver.as_ref();
    let lost = match (f.lost, f.loss_ratio) {
        (Some(l), Some(r)) => format!("{l} ({:.2}%)", r * 100.0),
        (Some(l), None) => l.to_string(),
        _ => "-".into(),
    };
    let rate = rx
        .and_then(|r| r.rate.as_ref())
        .or_else(|| f.sender.as_ref().and_then(|s| s.rate.as_ref()));
    vec![
        name,
        opt(f.sent, |v| v.to_string()),
        opt(f.received, |v| v.to_string()),
        lost,
        opt(f.duplicates, |v| v.to_string()),
        opt(f.reordered, |v| v.to_string()),
        opt(f.latency.as_ref(), quad),
        opt(rx.and_then(|r| r.ipdv.as_ref()), |i| fmt_i(i.p99_abs_ns)),
        opt(rx.and_then(|r| r.jitter_ns), fmt_ns),
        opt(rate.and_then(|r| r.rate_pps), fmt_pps),
        opt(rate.and_then(|r| r.payload_bps), fmt_bps),
    ]
}

const HEADER: [&str; 11] = [
    "flow",
    "sent",
    "received",
    "lost",
    "dup",
    "reord",
    "owd min/p50/p99/max",
    "ipdv p99",
    "jitter",
    "rate",
    "payload",
];

/// Writes the human summary.
pub fn render_text(summary: &Summary, w: &mut impl Write) -> Result<(), AnalysisError> {
    let mut rows: Vec<Vec<String>> = vec![HEADER.iter().map(|s| s.to_string()).collect()];
    for f in &summary.flows {
        rows.push(row(f, f.flow.to_string()));
    }
    if summary.flows.len() > 1 {
        let t = &summary.totals;
        let lost = match (t.lost, t.loss_ratio) {
            (Some(l), Some(r)) => format!("{l} ({:.2}%)", r * 100.0),
            (Some(l), None) => l.to_string(),
            _ => "-".into(),
        };
        let mut r = vec![
            "total".to_string(),
            opt(t.sent, |v| v.to_string()),
            opt(t.received, |v| v.to_string()),
            lost,
            opt(t.duplicates, |v| v.to_string()),
            opt(t.reordered, |v| v.to_string()),
            opt(t.latency.as_ref(), quad),
        ];
        r.resize(HEADER.len(), String::new());
        rows.push(r);
    }
    let cols = HEADER.len();
    let widths: Vec<usize> = (0..cols)
        .map(|c| {
            rows.iter()
                .map(|r| r.get(c).map_or(0, |s| s.chars().count()))
                .max()
                .unwrap_or(0)
        })
        .collect();
    for r in &rows {
        let mut line = String::new();
        for (c, cell) in r.iter().enumerate() {
            let wdt = widths.get(c).copied().unwrap_or(0);
            let pad = wdt.saturating_sub(cell.chars().count());
            if c > 0 {
                line.push_str("  ");
            }
            if c == 0 || c == 6 {
                line.push_str(cell);
                line.push_str(&" ".repeat(pad));
            } else {
                line.push_str(&" ".repeat(pad));
                line.push_str(cell);
            }
        }
        writeln!(w, "{}", line.trim_end())?;
    }
    for f in &summary.flows {
        details(f, w)?;
    }
    if summary.flows.iter().any(|f| f.latency.is_some()) {
        writeln!(w)?;
        writeln!(w, "note: {}", crate::report::OWD_CLOCK_NOTE)?;
    }
    let t = &summary.totals;
    if t.ignored_records > 0 {
        writeln!(
            w,
            "note: {} records of an unexpected kind were ignored",
            t.ignored_records
        )?;
    }
    if t.unknown_kind_records > 0 {
        writeln!(
            w,
            "note: {} records of an unknown kind were skipped (written by a newer wirelab, or damaged)",
            t.unknown_kind_records
        )?;
    }
    if t.untracked_packets > 0 {
        writeln!(
            w,
            "note: {} probes of {} flows past the --max-flows limit were counted but not analyzed",
            t.untracked_packets,
            if t.untracked_flows >= crate::live::MAX_UNTRACKED_IDS as u64 {
                format!("at least {}", t.untracked_flows)
            } else {
                t.untracked_flows.to_string()
            }
        )?;
    }
    for warn in &summary.warnings {
        writeln!(w, "warning: {}", warn.message)?;
    }
    Ok(())
}

fn details(f: &FlowReport, w: &mut impl Write) -> Result<(), AnalysisError> {
    let id = f.flow;
    if let Some(r) = &f.receiver {
        let b = &r.loss.bursts;
        let mut extra = Vec::new();
        if b.count > 0 {
            extra.push(format!("loss bursts {} (max {})", b.count, b.max_len));
        }
        if r.reordering.reordered > 0 {
            extra.push(format!(
                "reordered {:.3}% (max extent {})",
                r.reordering.ratio * 100.0,
                r.reordering.extent_max
            ));
        }
        if r.warmup > 0 {
            extra.push(format!("warm-up {}", r.warmup));
        }
        if r.last_repeats > 0 {
            extra.push(format!("last repeats {}", r.last_repeats));
        }
        if let Some(u) = r.unexpected.filter(|&u| u > 0) {
            extra.push(format!("unexpected seqs {u}"));
        }
        if let Some(l) = &f.latency {
            extra.push(format!("worst owd at seq {}", l.max_seq.unwrap_or(0)));
        }
        if let Some(ia) = &r.interarrival {
            extra.push(format!(
                "inter-arrival mean {} sd {}",
                fmt_ns(ia.dist.mean_ns),
                fmt_ns(ia.dist.stdev_ns)
            ));
        }
        if let Some(rate) = &r.rate {
            if let (Some(l2), Some(wire)) = (rate.l2_bps, rate.wire_bps) {
                extra.push(format!("L2 {} wire {}", fmt_bps(l2), fmt_bps(wire)));
            }
        }
        if !extra.is_empty() {
            writeln!(w, "flow {id} receive: {}", extra.join(", "))?;
        }
    }
    if let Some(s) = &f.sender {
        let mut parts = Vec::new();
        if let Some(l) = &s.lateness {
            parts.push(format!(
                "lateness p50 {} p99 {} p99.9 {} max {} (seq {}){}",
                fmt_i(l.p50_ns),
                fmt_i(l.p99_ns),
                fmt_i(l.p999_ns),
                fmt_i(l.max_ns),
                l.max_seq.unwrap_or(0),
                if s.start_estimated {
                    " vs first probe"
                } else {
                    ""
                }
            ));
        }
        if let (Some(late), Some(t)) = (s.late, s.late_threshold_ns) {
            parts.push(format!("missed deadline {late} (> {})", fmt_ns(t as f64)));
        }
        if let Some(d) = &s.drift {
            parts.push(opt(d.drift_ppm, |p| format!("drift {p:.1} ppm")));
        }
        if let Some(r) = s.rate.as_ref().and_then(|r| r.rate_pps) {
            parts.push(format!("sent at {}", fmt_pps(r)));
        }
        if !parts.is_empty() {
            writeln!(w, "flow {id} send: {}", parts.join(", "))?;
        }
    }
    if let Some(r) = &f.rtt {
        let mut parts = vec![format!("{} replies", r.replies)];
        if let Some(l) = r.lost {
            parts.push(format!("{l} unanswered"));
        }
        if let Some(d) = &r.rtt {
            parts.push(format!("rtt min/p50/p99/max {}", quad(d)));
        }
        if let Some(d) = &r.residence {
            parts.push(format!("reflector p50 {}", fmt_i(d.p50_ns)));
        }
        if let Some(o) = &r.clock_offset {
            parts.push(format!(
                "reflector clock offset {} ± {}",
                fmt_i(o.offset_ns),
                fmt_i(o.uncertainty_ns)
            ));
        }
        writeln!(w, "flow {id} rtt: {}", parts.join(", "))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn time_formatting() {
        assert_eq!(fmt_ns(850.0), "850ns");
        assert_eq!(fmt_ns(-850.0), "-850ns");
        assert_eq!(fmt_ns(12_345.0), "12.3µs");
        assert_eq!(fmt_ns(1_500_000.0), "1.50ms");
        assert_eq!(fmt_ns(2_350_000_000.0), "2.35s");
        assert_eq!(fmt_ns(f64::NAN), "-");
        assert_eq!(fmt_i(i64::MIN), "-9223372037s");
        assert_eq!(fmt_pps(1000.0), "1.00 kpps");
        assert_eq!(fmt_bps(8_320_000.0), "8.32 Mbit/s");
    }
}

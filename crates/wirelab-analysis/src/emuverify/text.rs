//! The human rendering of a [`VerifyReport`]: counts, then one row per
//! delay distribution in µs (the unit of the NIST Net trace-emulation
//! thesis), then the Table B.1 line.

use std::fmt::Write;

use super::VerifyReport;
use crate::latency::DelayStats;
use crate::text::fmt_ns;

fn us(ns: f64) -> String {
    format!("{:.2}", ns / 1e3)
}

fn row(out: &mut String, name: &str, s: &DelayStats) {
    let _ = writeln!(
        out,
        "{name:<11}{:>10}{:>10}{:>10}{:>10}{:>10}{:>10}{:>10}{:>10}",
        us(s.mean_ns),
        us(s.stdev_ns),
        us(s.min_ns as f64),
        us(s.p50_ns as f64),
        us(s.p90_ns as f64),
        us(s.p99_ns as f64),
        us(s.p999_ns as f64),
        us(s.max_ns as f64),
    );
}

impl VerifyReport {
    /// The report as text (ends with a newline).
    pub fn text(&self) -> String {
        let mut o = String::new();
        let configured = if self.configured.is_empty() {
            "no stages".to_string()
        } else {
            format!("'{}'", self.configured)
        };
        let seed = self
            .seed
            .map(|s| format!(" (seed {s})"))
            .unwrap_or_default();
        let skipped = match self.skipped_in {
            0 => String::new(),
            n => format!(" after {n} skipped"),
        };
        let _ = writeln!(
            o,
            "verify: IN {} ({} frames{skipped}), OUT {} ({} frames); against {configured}{seed}, window {}",
            self.in_file,
            self.in_frames,
            self.out_file,
            self.out_frames,
            fmt_ns(self.window_ns as f64)
        );
        let _ = writeln!(
            o,
            "copies: {} expected, {} matched; lost {} (missing copies {}), dropped as configured {}, \
             extra {} (duplicated {}, unknown {})",
            self.expected_copies,
            self.matched,
            self.lost,
            self.missing_copies,
            self.dropped_as_configured,
            self.extra,
            self.duplicated,
            self.unknown
        );
        let _ = writeln!(o, "early (applied < configured): {}", self.early);
        if self.applied.is_some() {
            let _ = writeln!(
                o,
                "{:<11}{:>10}{:>10}{:>10}{:>10}{:>10}{:>10}{:>10}{:>10}",
                "delay µs", "avg", "σ", "min", "p50", "p90", "p99", "p99.9", "max"
            );
        }
        for (name, s) in [
            ("applied", &self.applied),
            ("configured", &self.configured_delay),
            ("error", &self.error),
        ] {
            if let Some(s) = s {
                row(&mut o, name, s);
            }
        }
        if let Some(t) = &self.table_b1 {
            let _ = writeln!(
                o,
                "Table B.1 (error µs): avg {:.2}  σ {:.2}  min {:.2}  max {:.2}  ({} copies)",
                t.avg_us, t.sigma_us, t.min_us, t.max_us, t.count
            );
        }
        if let Some(k) = &self.ks {
            let _ = writeln!(
                o,
                "KS distance, applied vs configured delays: {:.4} ({} pairs)",
                k.distance, k.samples
            );
        }
        for (what, t) in [
            ("forwarded", &self.chi2.delivery),
            ("duplicated", &self.chi2.duplication),
        ] {
            if let Some(t) = t {
                let _ = writeln!(
                    o,
                    "χ² frames {what}: configured {} of {}, observed {} of {}: χ² {:.2}, p {:.3}",
                    t.configured[0],
                    t.configured[0] + t.configured[1],
                    t.observed[0],
                    t.observed[0] + t.observed[1],
                    t.statistic,
                    t.p_value
                );
            }
        }
        if !self.lost_first.is_empty() {
            let list: Vec<String> = self.lost_first.iter().map(u64::to_string).collect();
            let _ = writeln!(o, "lost IN frames (first): {}", list.join(", "));
        }
        if !self.early_first.is_empty() {
            let list: Vec<String> = self
                .early_first
                .iter()
                .map(|e| {
                    format!(
                        "#{} copy {} by {}",
                        e.index,
                        e.copy,
                        fmt_ns(e.error_ns as f64)
                    )
                })
                .collect();
            let _ = writeln!(o, "early copies (first): {}", list.join(", "));
        }
        for w in &self.warnings {
            let _ = writeln!(o, "warning: {w}");
        }
        o
    }
}

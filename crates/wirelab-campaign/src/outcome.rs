//! What `wirelab run` says, rendered from its typed values: as it runs
//! (the texts of its progress), and when a campaign ends, from its
//! [`Outcome`] and [`Summary`]: a line per flow of every point, the
//! results line, the `wirelab.run/1` document; and the summary
//! `wirelab analyze DIR` re-derives from a bundle.

use crate::bundle::{self, BundleError, PointStatus, Summary};
use crate::campaign::Outcome;
use crate::sweep::Point;
use std::fmt;
use std::path::{Path, PathBuf};

/// Schema of `wirelab run --json`'s document.
pub const SCHEMA: &str = "wirelab.run/1";

/// `wirelab.run/1`: the outcome's counts and exit code, and the summary.
/// (A JSON object: its keys, and the summary's, come out sorted.)
pub fn report_json(o: &Outcome, summary: &Summary) -> serde_json::Value {
    serde_json::json!({
        "schema": SCHEMA,
        "dir": o.dir,
        "exit_code": o.exit_code(),
        "done": o.done,
        "aborted": o.aborted,
        "failed": o.failed,
        "skipped": o.skipped,
        "searched_out": o.searched_out,
        "interrupted": o.interrupted,
        "failure": o.failure,
        "summary": summary,
    })
}

/// The results line: `results: DIR (D done, A aborted, F failed[, …])`.
impl fmt::Display for Outcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "results: {} ({} done, {} aborted, {} failed",
            self.dir.display(),
            self.done,
            self.aborted,
            self.failed
        )?;
        for (n, what) in [
            (self.skipped, "done before"),
            (self.searched_out, "left out by the search"),
        ] {
            if n > 0 {
                write!(f, ", {n} {what}")?;
            }
        }
        f.write_str(")")
    }
}

/// `wirelab run: N point(s) (S done before) -> DIR`.
pub fn started_line(points: usize, skipped: usize, dir: &Path) -> String {
    let before = match skipped {
        0 => String::new(),
        n => format!(" ({n} done before)"),
    };
    format!(
        "wirelab run: {points} point(s){before} -> {}",
        dir.display()
    )
}

/// A point as progress names it: `ID K=V …`.
pub fn point_label(point: &Point) -> String {
    let params: Vec<String> = point
        .params
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    format!("{} {}", point.id, params.join(" "))
}

/// A point's end: `ID STATUS[: REASON]`.
pub fn ended_note(point: &Point, status: PointStatus, reason: Option<&str>) -> String {
    let reason = reason.map(|r| format!(": {r}")).unwrap_or_default();
    format!("{} {}{reason}", point.id, status.as_str())
}

impl Outcome {
    /// What is left to say after the results: the failure, and how to go
    /// on after an interruption.
    pub fn end_notes(&self) -> Vec<String> {
        let mut notes: Vec<String> = self.failure.iter().map(|f| format!("error: {f}")).collect();
        if self.interrupted {
            notes.push(format!(
                "interrupted: continue with --resume {}",
                self.dir.display()
            ));
        }
        notes
    }
}

/// One line per flow of every point.
pub fn summary_text(s: &Summary) -> String {
    let mut t = String::new();
    for r in &s.rows {
        let params: Vec<String> = r.params.iter().map(|(k, v)| format!("{k}={v}")).collect();
        let n = |v: Option<u64>| v.map_or("-".into(), |x| x.to_string());
        let us = |v: Option<i64>| v.map_or("-".into(), |x| format!("{:.1}us", x as f64 / 1e3));
        let rtt = match (r.rtt_mean_ns, r.rtt_p99_ns) {
            (Some(m), p99) => format!(" rtt mean {:.1}us p99 {}", m / 1e3, us(p99)),
            _ => String::new(),
        };
        // A cross-host flow's OWD: corrected by the clock offset, ± U; or
        // only relative (OWD − min) when U is over the campaign's limit.
        let clock = match (r.owd_uncertainty_ns, r.owd_relative) {
            (Some(u), false) if u > 0 => format!(" ±{:.1}us", u as f64 / 1e3),
            (Some(u), true) => format!(" relative (±{:.1}us over the limit)", u as f64 / 1e3),
            _ => String::new(),
        };
        t.push_str(&format!(
            "{:>4} {} {:<11} {:<10} sent {:>8} recv {:>8} lost {:>6} (by seq {}) owd p99 {} max {}{clock}{rtt}  {}{}\n",
            r.index + 1,
            r.point,
            r.status.as_str(),
            r.flow,
            n(r.sent),
            n(r.received),
            n(r.lost),
            n(r.lost_by_sequence),
            us(r.owd_p99_ns),
            us(r.owd_max_ns),
            params.join(" "),
            r.reason
                .as_deref()
                .map(|x| format!("  [{x}]"))
                .unwrap_or_default()
        ));
    }
    t
}

/// A bundle's summary derived again from its points and records.
#[derive(Debug)]
pub struct Rederived {
    pub summary: Summary,
    /// As `summary.json` holds it.
    pub json: String,
    /// The stored `summary.json` when it differs from `json`.
    pub differs_from: Option<PathBuf>,
}

impl Rederived {
    /// The warning when the stored summary differs.
    pub fn warning(&self) -> Option<String> {
        self.differs_from.as_ref().map(|p| {
            format!(
                "the summary re-derived from the records differs from {}",
                p.display()
            )
        })
    }
}

/// The summary of the bundle `dir` derived from its points and records,
/// compared with its stored `summary.json` (none stored: no difference).
pub fn rederive(dir: &Path) -> Result<Rederived, BundleError> {
    let summary = bundle::summarize(dir)?;
    let json = summary.to_json();
    let stored = dir.join("summary.json");
    let differs = std::fs::read_to_string(&stored).is_ok_and(|s| s != json);
    Ok(Rederived {
        summary,
        json,
        differs_from: differs.then_some(stored),
    })
}

#[cfg(test)]
mod tests;

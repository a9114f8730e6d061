//! `wirelab run`'s `summary.json` (`wirelab.run.summary/1`): a row per
//! point and flow, written by the campaign runner and read back by
//! `wirelab report` and `wirelab export` through these same types.
//!
//! Reading is lenient where older bundles may lack a field (counts,
//! indices: 0; options: absent) and strict about the rest: a row whose
//! values have the wrong type is an error naming the file, not a guess.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt::{self, Write as _};

/// Schema of `summary.json`.
pub const SUMMARY_SCHEMA: &str = "wirelab.run.summary/1";

/// A swept parameter's value: a TOML scalar of the control file or of
/// `--set`. Serialized untagged (`80`, `2.5`, `"udp"`, `true`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum ParamValue {
    Int(i64),
    Float(f64),
    Str(String),
    Bool(bool),
}

impl fmt::Display for ParamValue {
    /// The value as written, strings without quotes.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ParamValue::Int(v) => write!(f, "{v}"),
            ParamValue::Float(v) => write!(f, "{v}"),
            ParamValue::Str(s) => f.write_str(s),
            ParamValue::Bool(b) => write!(f, "{b}"),
        }
    }
}

/// How a point ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PointStatus {
    /// Every flow ran to its end.
    Done,
    /// An abort criterion stopped it.
    Aborted,
    /// Infrastructure failed (an agent lost, a tool that would not start).
    Failed,
    /// Stopped by Ctrl-C.
    Interrupted,
}

impl PointStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            PointStatus::Done => "done",
            PointStatus::Aborted => "aborted",
            PointStatus::Failed => "failed",
            PointStatus::Interrupted => "interrupted",
        }
    }
}

/// One row of the summary: one flow of one point.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SummaryRow {
    pub point: String,
    #[serde(default)]
    pub index: usize,
    #[serde(default)]
    pub repetition: u32,
    #[serde(default)]
    pub params: BTreeMap<String, ParamValue>,
    pub status: PointStatus,
    pub reason: Option<String>,
    pub flow: String,
    #[serde(default)]
    pub flow_id: u32,
    pub sent: Option<u64>,
    pub received: Option<u64>,
    /// Against the sender's count.
    pub lost: Option<u64>,
    /// Against the highest sequence number received (blind to tail loss).
    pub lost_by_sequence: Option<u64>,
    /// Against the planned count.
    pub planned: Option<u64>,
    pub lost_by_plan: Option<u64>,
    pub loss_ratio: Option<f64>,
    pub throughput_bps: Option<f64>,
    pub rate_pps: Option<f64>,
    pub owd_mean_ns: Option<f64>,
    pub owd_p99_ns: Option<i64>,
    pub owd_p999_ns: Option<i64>,
    pub owd_max_ns: Option<i64>,
    /// The smallest one-way delay (a path's floor, robust to load).
    pub owd_min_ns: Option<i64>,
    /// The clock offset (receiver's minus sender's, at T0) the OWD figures
    /// are corrected by, and their uncertainty ± (U_AB).
    pub owd_offset_ns: Option<i64>,
    pub owd_uncertainty_ns: Option<u64>,
    /// U exceeded `campaign.owd_uncertainty_max`: the OWD figures are
    /// relative (OWD − min), not absolute.
    #[serde(default)]
    pub owd_relative: bool,
    pub ipdv_p99_abs_ns: Option<i64>,
    pub jitter_ns: Option<f64>,
    pub reordered: Option<u64>,
    pub duplicates: Option<u64>,
    pub loss_bursts: Option<u64>,
    pub max_loss_burst: Option<u64>,
    /// The loss by cause (the campaign's loss attribution).
    pub lost_sender: Option<u64>,
    pub lost_path: Option<u64>,
    pub lost_rx_nic: Option<u64>,
    pub lost_rx_stack: Option<u64>,
    pub lost_unexplained: Option<u64>,
    /// Probes the sender sent later than its lateness threshold.
    pub timer_misses: Option<u64>,
    /// Round-trip time of echo flows.
    pub rtt_mean_ns: Option<f64>,
    pub rtt_stdev_ns: Option<f64>,
    pub rtt_p99_ns: Option<i64>,
    pub rtt_max_ns: Option<i64>,
    /// Why the records could not be analyzed, if they could not.
    pub error: Option<String>,
}

/// `summary.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    pub schema: String,
    #[serde(default)]
    pub points: usize,
    #[serde(default)]
    pub done: usize,
    #[serde(default)]
    pub aborted: usize,
    #[serde(default)]
    pub failed: usize,
    #[serde(default)]
    pub interrupted: usize,
    pub rows: Vec<SummaryRow>,
}

impl Summary {
    /// The summary as written to `summary.json`: pretty JSON and a newline.
    pub fn to_json(&self) -> String {
        let mut s = serde_json::to_string_pretty(self).expect("a summary serializes");
        s.push('\n');
        s
    }

    /// `summary.csv`: a header, then one line per row; the sweep's
    /// parameters as columns (those of every point, sorted by name).
    pub fn to_csv(&self) -> String {
        let mut keys: Vec<&String> = self.rows.iter().flat_map(|r| r.params.keys()).collect();
        keys.sort();
        keys.dedup();
        let mut out = String::from("point,index,repetition");
        for k in &keys {
            out.push(',');
            out.push_str(&csv_field(k));
        }
        out.push_str(
            ",status,reason,flow,flow_id,sent,received,lost,lost_by_sequence,planned,\
             lost_by_plan,loss_ratio,throughput_bps,rate_pps,owd_mean_ns,owd_p99_ns,\
             owd_p999_ns,owd_max_ns,owd_min_ns,owd_offset_ns,owd_uncertainty_ns,owd_relative,\
             ipdv_p99_abs_ns,jitter_ns,reordered,duplicates,\
             loss_bursts,max_loss_burst,lost_sender,lost_path,lost_rx_nic,lost_rx_stack,\
             lost_unexplained,timer_misses,rtt_mean_ns,rtt_stdev_ns,rtt_p99_ns,\
             rtt_max_ns,error\n",
        );
        for r in &self.rows {
            let _ = write!(out, "{},{},{}", r.point, r.index, r.repetition);
            for k in &keys {
                out.push(',');
                if let Some(v) = r.params.get(*k) {
                    out.push_str(&csv_field(&v.to_string()));
                }
            }
            let o = |v: Option<String>| v.unwrap_or_default();
            let n = |v: Option<u64>| o(v.map(|x| x.to_string()));
            let i = |v: Option<i64>| o(v.map(|x| x.to_string()));
            let f = |v: Option<f64>| o(v.map(|x| format!("{x}")));
            let fields = [
                r.status.as_str().to_string(),
                csv_field(&o(r.reason.clone())),
                csv_field(&r.flow),
                r.flow_id.to_string(),
                n(r.sent),
                n(r.received),
                n(r.lost),
                n(r.lost_by_sequence),
                n(r.planned),
                n(r.lost_by_plan),
                f(r.loss_ratio),
                f(r.throughput_bps),
                f(r.rate_pps),
                f(r.owd_mean_ns),
                i(r.owd_p99_ns),
                i(r.owd_p999_ns),
                i(r.owd_max_ns),
                i(r.owd_min_ns),
                i(r.owd_offset_ns),
                n(r.owd_uncertainty_ns),
                r.owd_relative.to_string(),
                i(r.ipdv_p99_abs_ns),
                f(r.jitter_ns),
                n(r.reordered),
                n(r.duplicates),
                n(r.loss_bursts),
                n(r.max_loss_burst),
                n(r.lost_sender),
                n(r.lost_path),
                n(r.lost_rx_nic),
                n(r.lost_rx_stack),
                n(r.lost_unexplained),
                n(r.timer_misses),
                f(r.rtt_mean_ns),
                f(r.rtt_stdev_ns),
                i(r.rtt_p99_ns),
                i(r.rtt_max_ns),
                csv_field(&o(r.error.clone())),
            ];
            for v in fields {
                out.push(',');
                out.push_str(&v);
            }
            out.push('\n');
        }
        out
    }
}

/// A CSV field, quoted when it holds a comma, quote or line break.
fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_fields_are_quoted_only_when_needed() {
        assert_eq!(csv_field("udp"), "udp");
        assert_eq!(csv_field("a,b"), "\"a,b\"");
        assert_eq!(csv_field("say \"x\""), "\"say \"\"x\"\"\"");
    }
}

//! Report types and the versioned JSON schema `wirelab.analysis/1`.
//!
//! # JSON schema `wirelab.analysis/1`
//!
//! Times are integer or float nanoseconds (`_ns`), sizes bytes (`_bytes`),
//! rates packets or bits per second (`_pps`, `_bps`). A value that cannot
//! be known from the inputs is `null`, never left out, so consumers can rely
//! on every key below being present.
//!
//! ```text
//! {
//!   "schema": "wirelab.analysis/1",
//!   "owd_clock_note": "...",            // how to read one-way delays
//!   "flows": [FlowReport...],            // ascending flow id
//!   "totals": Totals,
//!   "warnings": [Warning...]             // inputs that make figures doubtful
//! }
//! FlowReport {
//!   "flow": u32,
//!   "sent": u64|null,                    // probes sent incl. warm-up; null = unknown
//!   "sent_source": "sender_records"|"caller"|"last_flag"|null,
//!   "received": u64|null,                // distinct measured probes (no dups, no warm-up)
//!   "lost": u64|null,                    // sequence numbers sent (or expected) never received
//!   "loss_ratio": f64|null,              // lost / sent-or-expected
//!   "duplicates": u64|null,
//!   "reordered": u64|null,               // RFC 4737 reordered singletons
//!   "latency": DelayStats|null,          // one-way delay rx_ns - tx_ns
//!   "receiver": ReceiverReport|null,     // all receiver-side detail
//!   "sender": SenderReport|null,         // pacing truth from Tx records
//!   "rtt": RttReport|null                // from echo replies
//! }
//! DelayStats { count, min_ns, mean_ns, stdev_ns, p50_ns, p90_ns, p99_ns,
//!              p999_ns, p9999_ns, max_ns, min_seq, max_seq }
//! ```
//! The nested objects are described on [`ReceiverReport`], [`SenderReport`]
//! and [`RttReport`]; field names are the Rust field names.

use crate::latency::DelayStats;
use crate::reorder::ReorderStats;
use crate::seqwin::LossStats;
use crate::window::{RateModel, WindowReport};
use serde::Serialize;

/// The schema identifier written at the top of every JSON summary.
pub const SCHEMA: &str = "wirelab.analysis/1";

/// How one-way delays must be read; printed in text output and JSON.
pub const OWD_CLOCK_NOTE: &str = "one-way delay = receive time minus send time, taken from two \
different clocks: it is exact only when the sender's and receiver's wall clocks are \
synchronised (e.g. PTP; on a single host both use CLOCK_REALTIME). Otherwise it includes the \
clock offset and can be negative; IPDV, PDV and jitter do not depend on the offset.";

/// Where a flow's `sent` count comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SentSource {
    /// Distinct sequence numbers in the sender's Tx records.
    SenderRecords,
    /// Given by the caller (e.g. the control channel's final count).
    Caller,
    /// Sequence number of the probe flagged LAST, plus one.
    LastFlag,
}

/// The whole analysis: `{schema, owd_clock_note, flows, totals, warnings}`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Summary {
    pub schema: &'static str,
    pub owd_clock_note: &'static str,
    pub flows: Vec<FlowReport>,
    pub totals: Totals,
    pub warnings: Vec<Warning>,
}

/// An inconsistency in the inputs that makes some figures doubtful (JSON
/// `{code, flow, message}`; `flow` is null for a whole-input matter).
/// Codes: `sender_records_incomplete` (received sequence numbers the
/// sender's records lack), `same_recording_twice` (an input file repeats
/// another; read once), `file_cut_short` (a partial record at a file's end).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Warning {
    pub code: &'static str,
    pub flow: Option<u32>,
    pub message: String,
}

impl Summary {
    /// Builds a summary over per-flow reports, computing totals. Flows are
    /// sorted by id.
    pub fn new(mut flows: Vec<FlowReport>) -> Summary {
        flows.sort_by_key(|f| f.flow);
        let totals = Totals::of(&flows);
        Summary {
            schema: SCHEMA,
            owd_clock_note: OWD_CLOCK_NOTE,
            flows,
            totals,
            warnings: Vec::new(),
        }
    }

    /// Pretty JSON of the summary.
    pub fn to_json(&self) -> Result<String, crate::AnalysisError> {
        Ok(serde_json::to_string_pretty(self)?)
    }
}

/// Sums over all flows. A count is `null` if it is unknown for any flow
/// that has the corresponding side (e.g. `sent` when one flow's sender
/// count is unknown).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Totals {
    pub flows: u64,
    pub sent: Option<u64>,
    pub received: Option<u64>,
    pub lost: Option<u64>,
    pub loss_ratio: Option<f64>,
    pub duplicates: Option<u64>,
    pub reordered: Option<u64>,
    /// One-way delay over all flows' measured probes (set by
    /// [`crate::analyze`]; null when no flow has delays).
    pub latency: Option<DelayStats>,
    /// Records skipped because their kind did not match the input slot
    /// (e.g. an Rx record among the sender's Tx records).
    pub ignored_records: u64,
    /// Records of a kind this wirelab does not know (a newer writer or a
    /// damaged file), skipped when reading.
    pub unknown_kind_records: u64,
    /// Live receiver: flows past its `--max-flows`, whose probes are
    /// counted but not analyzed (distinct ids counted up to 65 536).
    pub untracked_flows: u64,
    /// Live receiver: probes of those flows.
    pub untracked_packets: u64,
}

fn sum_opt(flows: &[FlowReport], f: impl Fn(&FlowReport) -> Option<u64>) -> Option<u64> {
    let mut acc: Option<u64> = None;
    for fl in flows {
        let v = f(fl)?;
        acc = Some(acc.unwrap_or(0).saturating_add(v));
    }
    acc
}

impl Totals {
    fn of(flows: &[FlowReport]) -> Totals {
        let lost = sum_opt(flows, |f| f.lost);
        let expected = sum_opt(flows, |f| f.receiver.as_ref().map(|r| r.loss.expected));
        let sent = sum_opt(flows, |f| f.sent);
        let denom = match (sent, expected) {
            (Some(s), Some(e)) => Some(s.max(e)),
            (a, b) => a.or(b),
        };
        Totals {
            flows: flows.len() as u64,
            sent,
            received: sum_opt(flows, |f| f.received),
            lost,
            loss_ratio: ratio(lost, denom),
            duplicates: sum_opt(flows, |f| f.duplicates),
            reordered: sum_opt(flows, |f| f.reordered),
            latency: None,
            ignored_records: 0,
            unknown_kind_records: 0,
            untracked_flows: 0,
            untracked_packets: 0,
        }
    }
}

pub(crate) fn ratio(n: Option<u64>, d: Option<u64>) -> Option<f64> {
    match (n, d) {
        (Some(n), Some(d)) if d > 0 => Some(n as f64 / d as f64),
        (Some(0), Some(0)) => Some(0.0),
        _ => None,
    }
}

/// One flow; see the module docs for the JSON shape.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FlowReport {
    pub flow: u32,
    pub sent: Option<u64>,
    pub sent_source: Option<SentSource>,
    pub received: Option<u64>,
    pub lost: Option<u64>,
    pub loss_ratio: Option<f64>,
    pub duplicates: Option<u64>,
    pub reordered: Option<u64>,
    /// One-way delay (receiver side); see [`OWD_CLOCK_NOTE`].
    pub latency: Option<DelayStats>,
    pub receiver: Option<ReceiverReport>,
    pub sender: Option<SenderReport>,
    pub rtt: Option<RttReport>,
}

impl FlowReport {
    /// A report with only the flow id set.
    pub fn empty(flow: u32) -> FlowReport {
        FlowReport {
            flow,
            sent: None,
            sent_source: None,
            received: None,
            lost: None,
            loss_ratio: None,
            duplicates: None,
            reordered: None,
            latency: None,
            receiver: None,
            sender: None,
            rtt: None,
        }
    }
}

/// Receiver-side detail of a flow.
///
/// Counting rules: `received` counts first arrivals of measured probes.
/// Warm-up probes (`warmup`) mark their sequence number as received for loss
/// accounting but are excluded from every other metric. Repeats of the
/// LAST-flagged probe (`last_repeats`) are neither duplicates nor measured.
/// `too_old` arrivals were more than 65 536 sequence numbers behind the
/// highest: counted as received, not checked for duplication.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ReceiverReport {
    pub warmup: u64,
    pub last_repeats: u64,
    pub too_old: u64,
    /// Measured probes without a receive timestamp (rx_ns = 0): excluded
    /// from time-based metrics.
    pub no_rx_timestamp: u64,
    pub highest_seq: Option<u64>,
    pub last_flag_seq: Option<u64>,
    /// Sequence numbers received that the sender's records do not contain
    /// (null without sender records).
    pub unexpected: Option<u64>,
    pub loss: LossStats,
    pub reordering: ReorderStats,
    /// RFC 5481 packet delay variation: OWD minus the minimum OWD.
    pub pdv: Option<PdvStats>,
    /// RFC 3393 / RFC 5481 §4.1 IPDV over sequence-consecutive pairs.
    pub ipdv: Option<IpdvStats>,
    /// RFC 3550 §6.4.1 interarrival jitter over arrival order, ns.
    pub jitter_ns: Option<f64>,
    /// Receive-time deltas between consecutive measured arrivals.
    pub interarrival: Option<IntervalStats>,
    pub sizes: Option<SizeStats>,
    /// Mean rates between the first and last arrival.
    pub rate: Option<RateStats>,
    pub window_ns: u64,
    pub windows: Vec<WindowReport>,
    pub unwindowed_packets: u64,
}

/// PDV per RFC 5481 §4.2: the OWD distribution shifted by its minimum.
/// Independent of a constant clock offset.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PdvStats {
    pub p50_ns: i64,
    pub p90_ns: i64,
    pub p99_ns: i64,
    pub p999_ns: i64,
    pub max_ns: i64,
}

/// IPDV per RFC 3393 with RFC 5481 §4.1 pair selection: for every pair of
/// sequence-consecutive probes (s-1, s) that both arrived, `ipdv(s) =
/// OWD(s) - OWD(s-1)`, whatever their arrival order (pairs reordered by up
/// to 1024 sequence numbers are found). Pairs with a lost member are skipped.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct IpdvStats {
    pub pairs: u64,
    pub mean_ns: f64,
    pub mean_abs_ns: f64,
    pub p50_abs_ns: i64,
    pub p99_abs_ns: i64,
    pub max_abs_ns: i64,
    /// Sequence number `s` of the pair with the largest |ipdv|.
    pub max_abs_seq: u64,
    pub min_ns: i64,
    pub max_ns: i64,
}

/// Distribution of intervals (inter-arrival or inter-departure) with the
/// requested interval when known. `mean_error_ns` = mean - requested,
/// `mean_abs_error_ns` = mean |interval - requested|. `ks_distance` is left
/// null by the analysis and filled by a caller that knows the requested
/// distribution (see [`crate::ks`]).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct IntervalStats {
    #[serde(flatten)]
    pub dist: DelayStats,
    pub requested_ns: Option<u64>,
    pub mean_error_ns: Option<f64>,
    pub mean_abs_error_ns: Option<f64>,
    pub ks_distance: Option<f64>,
}

/// UDP payload sizes; `ks_distance` filled by the caller like on
/// [`IntervalStats`].
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SizeStats {
    pub min_bytes: u32,
    pub mean_bytes: f64,
    pub max_bytes: u32,
    pub ks_distance: Option<f64>,
}

/// Mean rates between the first and last packet: `rate_pps = (packets - 1)
/// / duration` (the first packet opens the interval), bit rates likewise
/// exclude the first packet's bytes. `payload_bps` counts UDP payload, `l2_bps`
/// L2 frames (see [`RateModel`]), `wire_bps` adds preamble, FCS and gap.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RateStats {
    pub first_ns: u64,
    pub last_ns: u64,
    pub duration_ns: u64,
    pub packets: u64,
    pub payload_bytes: u64,
    pub rate_pps: Option<f64>,
    pub payload_bps: Option<f64>,
    pub l2_bps: Option<f64>,
    pub wire_bps: Option<f64>,
    pub model: RateModel,
}

/// Sender-side pacing truth from Tx records. Warm-up probes and repeats
/// count in `sent` / `warmup` / `repeats` only.
///
/// * `lateness` = (tx_ns - start_unix_ns) - sched_ns per scheduled probe
///   (records with sched_ns = 0 are unscheduled and counted in
///   `unscheduled`). `late` counts probes with lateness above
///   `late_threshold_ns` (a missed deadline); `early` those sent before
///   their schedule.
/// * `departure`: actual inter-departure intervals (tx_ns deltas in record
///   order) against the requested interval; `departure_error`: actual minus
///   scheduled interval per consecutive pair of scheduled probes.
/// * `drift`: actual first-to-last send span vs the scheduled span.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SenderReport {
    /// Distinct sequence numbers sent, warm-up included.
    pub sent: u64,
    pub warmup: u64,
    /// Records repeating an already sent sequence number (e.g. the LAST
    /// probe sent several times); excluded from pacing metrics.
    pub repeats: u64,
    pub unscheduled: u64,
    pub lateness: Option<DelayStats>,
    pub late_threshold_ns: Option<u64>,
    pub late: Option<u64>,
    pub early: u64,
    pub departure: Option<IntervalStats>,
    pub departure_error: Option<DelayStats>,
    pub drift: Option<DriftStats>,
    pub sizes: Option<SizeStats>,
    pub rate: Option<RateStats>,
    pub requested_rate_pps: Option<f64>,
    /// True when the run start was not given and lateness is measured
    /// against the first scheduled probe (which then has lateness 0).
    pub start_estimated: bool,
    /// Echo requests sent (probes with the ECHO_REQUEST flag).
    pub echo_requests: u64,
}

/// Actual vs scheduled span between the first and last scheduled probe.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DriftStats {
    pub actual_ns: i64,
    pub scheduled_ns: i64,
    /// actual - scheduled.
    pub drift_ns: i64,
    /// (actual - scheduled) / scheduled * 1e6; null when scheduled is 0.
    pub drift_ppm: Option<f64>,
}

/// Round-trip times from echo replies (all times of `rtt` on the sender's
/// clock, `residence` on the reflector's clock: both exact).
///
/// * `rtt` = rx_ns - tx_ns; `residence` = refl_tx_ns - refl_rx_ns;
///   `net_rtt` = rtt - residence (network round trip, clock independent).
/// * `forward` = refl_rx_ns - tx_ns, `return` = rx_ns - refl_tx_ns: one-way
///   delays across two clocks, meaningful only with synchronised clocks
///   (`one_way_assumes_synced_clocks` is always true to say so).
/// * `clock_offset`: NTP-style estimate of reflector clock minus sender
///   clock from the reply with the smallest net RTT, ± net_rtt / 2.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RttReport {
    pub replies: u64,
    pub duplicates: u64,
    /// Echo requests never answered (null when the request count is unknown).
    pub lost: Option<u64>,
    pub rtt: Option<DelayStats>,
    pub net_rtt: Option<DelayStats>,
    pub residence: Option<DelayStats>,
    pub forward: Option<DelayStats>,
    #[serde(rename = "return")]
    pub return_: Option<DelayStats>,
    pub one_way_assumes_synced_clocks: bool,
    pub clock_offset: Option<ClockOffset>,
}

/// Reflector clock minus sender clock, with its uncertainty bound.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ClockOffset {
    pub offset_ns: i64,
    pub uncertainty_ns: i64,
    pub seq: u64,
}

impl IntervalStats {
    /// Builds interval statistics from a histogram of intervals and the sum
    /// of |interval - requested| (ignored without a request).
    pub(crate) fn from_hist(
        h: &crate::latency::SignedHistogram,
        requested_ns: Option<u64>,
        abs_err_sum: f64,
    ) -> Option<IntervalStats> {
        let dist = h.stats()?;
        let n = dist.count as f64;
        Some(IntervalStats {
            requested_ns,
            mean_error_ns: requested_ns.map(|r| dist.mean_ns - r as f64),
            mean_abs_error_ns: requested_ns.map(|_| abs_err_sum / n),
            ks_distance: None,
            dist,
        })
    }
}

/// Running sums for [`RateStats`] over a stream of packets.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct RateAcc {
    first_ns: u64,
    last_ns: u64,
    packets: u64,
    bytes: u64,
    /// Sums excluding the first packet.
    bytes_after_first: u64,
    l2_after_first: u64,
}

impl RateAcc {
    pub(crate) fn add(&mut self, t_ns: u64, payload: u32, model: &RateModel) {
        if self.packets == 0 {
            self.first_ns = t_ns;
            self.last_ns = t_ns;
        } else {
            self.first_ns = self.first_ns.min(t_ns);
            self.last_ns = self.last_ns.max(t_ns);
            self.bytes_after_first = self.bytes_after_first.saturating_add(payload as u64);
            self.l2_after_first = self.l2_after_first.saturating_add(model.l2_bytes(payload));
        }
        self.packets = self.packets.saturating_add(1);
        self.bytes = self.bytes.saturating_add(payload as u64);
    }

    pub(crate) fn report(&self, model: &RateModel) -> Option<RateStats> {
        if self.packets == 0 {
            return None;
        }
        let d = self.last_ns - self.first_ns;
        let secs = d as f64 / 1e9;
        let per_s = |x: f64| (d > 0).then(|| x / secs);
        let n = (self.packets - 1) as f64;
        Some(RateStats {
            first_ns: self.first_ns,
            last_ns: self.last_ns,
            duration_ns: d,
            packets: self.packets,
            payload_bytes: self.bytes,
            rate_pps: per_s(n),
            payload_bps: per_s(self.bytes_after_first as f64 * 8.0),
            l2_bps: per_s(self.l2_after_first as f64 * 8.0),
            wire_bps: per_s((self.l2_after_first as f64 + n * model.wire_extra_bytes as f64) * 8.0),
            model: *model,
        })
    }
}

/// Running min/mean/max of payload sizes.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct SizeAcc {
    n: u64,
    sum: u128,
    min: u32,
    max: u32,
}

impl SizeAcc {
    pub(crate) fn add(&mut self, size: u32) {
        if self.n == 0 {
            self.min = size;
            self.max = size;
        }
        self.min = self.min.min(size);
        self.max = self.max.max(size);
        self.n = self.n.saturating_add(1);
        self.sum += size as u128;
    }
    pub(crate) fn report(&self) -> Option<SizeStats> {
        (self.n > 0).then(|| SizeStats {
            min_bytes: self.min,
            mean_bytes: self.sum as f64 / self.n as f64,
            max_bytes: self.max,
            ks_distance: None,
        })
    }
}

/// Signed difference `a - b` of two u64 timestamps, saturated to i64.
pub(crate) fn diff_ns(a: u64, b: u64) -> i64 {
    let d = a as i128 - b as i128;
    d.clamp(i64::MIN as i128, i64::MAX as i128) as i64
}

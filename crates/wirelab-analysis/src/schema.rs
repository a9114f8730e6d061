//! The JSON reports of `wirelab send` (`wirelab.send/1`), `wirelab recv`
//! (`wirelab.recv/1`), `wirelab capture` (`wirelab.capture/1`) and
//! `wirelab analyze` (`wirelab.analysis/1`, the [`Summary`]), as typed
//! structs.
//!
//! The parts a driver measures about itself (send calls, receive wake-ups,
//! record log counters, capture threads and their files) are type
//! parameters: they are the engine's types, serialized as they are.
//!
//! send/1 and recv/1 are printed with every object's keys in alphabetical
//! order at every level (their documented form, kept byte-compatible):
//! [`to_json_sorted`] goes through `serde_json::Value`, whose maps sort.
//! analysis/1 and capture/1 keep their fields' declaration order.

pub mod host;
pub mod run;

use crate::error::AnalysisError;
use crate::report::{FlowReport, Summary, Totals};
use crate::DelayStats;
use serde::{Deserialize, Serialize};

pub use crate::report::{OWD_CLOCK_NOTE, SCHEMA as ANALYSIS_SCHEMA};

pub const SEND_SCHEMA: &str = "wirelab.send/1";
pub const RECV_SCHEMA: &str = "wirelab.recv/1";
pub const CAPTURE_SCHEMA: &str = "wirelab.capture/1";

/// Pretty JSON with every object's keys sorted (send/1, recv/1).
pub fn to_json_sorted(v: &impl Serialize) -> Result<String, AnalysisError> {
    Ok(serde_json::to_string_pretty(&serde_json::to_value(v)?)?)
}

/// The sender's settings as given, echoed in send/1 (`config`) and in the
/// sender's record file metadata.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SendSettings {
    pub host: String,
    pub target: String,
    pub flow: u32,
    pub flows: u32,
    /// Generator specs of intervals (ns) and sizes (bytes), canonical form.
    pub interval: String,
    pub size: String,
    pub count: Option<u64>,
    pub duration_ns: Option<u64>,
    pub tos: Option<u8>,
    pub padding: String,
    pub warmup: u64,
    pub wait: String,
    pub echo: bool,
    pub seed: u64,
    pub batch: u16,
    pub rt_priority: Option<i32>,
    pub cpu: Option<usize>,
    pub format: String,
    pub late: String,
    /// Start-phase calibration length, when one runs.
    pub phase: Option<u64>,
    /// The socket type probes left through: "udp", "raw", "packet"
    /// (absent in files written before it was reported: udp).
    #[serde(default = "udp")]
    pub socket: String,
    /// `--start-at`: the first probe's deadline on the wall clock.
    #[serde(default)]
    pub start_at_unix_ns: Option<u64>,
}

fn udp() -> String {
    "udp".into()
}

/// `wirelab.send/1`. `E` is the engine's per-flow counters, `L` the record
/// log's.
#[derive(Debug, Clone, Serialize)]
pub struct SendReport<E, L> {
    pub schema: &'static str,
    pub target: String,
    pub config: SendSettings,
    pub flows: Vec<SentFlowReport<E>>,
    pub totals: SendTotals,
    pub record_log: Option<L>,
}

/// One flow of send/1: the analysis of what it sent, plus the engine's counters.
#[derive(Debug, Clone, Serialize)]
pub struct SentFlowReport<E> {
    #[serde(flatten)]
    pub report: FlowReport,
    pub echo_replies: u64,
    pub engine: SendEngine<E>,
}

/// The engine's counters of one flow, plus the values its generators clamped.
#[derive(Debug, Clone, Serialize)]
pub struct SendEngine<E> {
    #[serde(flatten)]
    pub stats: E,
    pub clamped_intervals: u64,
    pub clamped_sizes: u64,
}

/// What a campaign reads back from a `wirelab.send/1` report: each flow's
/// planned probe count (`flows[].engine.planned`, written by the engine's
/// per-flow counters).
#[derive(Debug, Clone, Default, Deserialize)]
pub struct SendPlans {
    #[serde(default)]
    pub flows: Vec<SendPlan>,
}

/// One flow of [`SendPlans`].
#[derive(Debug, Clone, Deserialize)]
pub struct SendPlan {
    pub flow: u32,
    #[serde(default)]
    pub engine: PlannedCount,
}

/// The engine's `planned` (null or absent: unbounded, or an older sender).
#[derive(Debug, Clone, Default, Deserialize)]
pub struct PlannedCount {
    #[serde(default)]
    pub planned: Option<u64>,
}

impl SendPlans {
    /// Flow `flow`'s planned count, when the report has one.
    pub fn planned(&self, flow: u32) -> Option<u64> {
        self.flows
            .iter()
            .find(|f| f.flow == flow)
            .and_then(|f| f.engine.planned)
    }
}

#[derive(Debug, Clone, Copy, Serialize)]
pub struct SendTotals {
    pub flows: usize,
    pub sent: u64,
}

/// `wirelab.recv/1`. `O` is the receiver's own outcome, `L` the record log's
/// counters.
#[derive(Debug, Clone, Serialize)]
pub struct RecvReport<O, L> {
    pub schema: &'static str,
    pub receiver: O,
    pub flows: Vec<FlowReport>,
    pub totals: Totals,
    pub clock_note: &'static str,
    pub record_log: Option<L>,
    pub hw_timestamps: Option<HwStampReport>,
    /// How receive times were taken.
    pub clock: String,
}

impl<O, L> RecvReport<O, L> {
    pub fn new(
        receiver: O,
        summary: Summary,
        record_log: Option<L>,
        hw_timestamps: Option<HwStampReport>,
        clock: String,
    ) -> Self {
        RecvReport {
            schema: RECV_SCHEMA,
            receiver,
            flows: summary.flows,
            totals: summary.totals,
            clock_note: OWD_CLOCK_NOTE,
            record_log,
            hw_timestamps,
            clock,
        }
    }

    /// The flows and totals as an analysis [`Summary`] (for its text).
    pub fn summary(&self) -> Summary {
        let mut s = Summary::new(self.flows.clone());
        s.totals = self.totals.clone();
        s
    }
}

/// NIC hardware receive stamping (`recv --hw-timestamps`).
#[derive(Debug, Clone, Serialize)]
pub struct HwStampReport {
    pub interface: String,
    pub phc_index: Option<u32>,
    pub rx_filter: i32,
    pub changed_config: bool,
    pub stamped_packets: u64,
}

/// `wirelab.capture/1` (docs/capture.md). `T` is the engine's per-thread
/// report, `M` the merge writer's summary.
#[derive(Debug, Clone, Serialize)]
pub struct CaptureReport<T, M> {
    /// Always [`CAPTURE_SCHEMA`].
    pub schema: &'static str,
    pub interface: String,
    /// Filter expression ("" = everything).
    pub filter: String,
    pub snaplen: u32,
    /// LINKTYPE_*.
    pub linktype: u16,
    /// "pcapng", "pcap-us" or "pcap-ns".
    pub format: &'static str,
    /// Wait policy: "block", "poll" or "adaptive".
    pub wait: &'static str,
    pub poll_period_ns: u64,
    pub ring: CaptureRing,
    /// Wall-clock start, ns since the epoch.
    pub start_unix_ns: u64,
    pub duration_s: f64,
    /// Packets written (all threads).
    pub packets: u64,
    /// Bytes captured (sum of captured lengths).
    pub bytes: u64,
    pub loss: CaptureLoss,
    pub interface_counters: CaptureIfCounters,
    /// Wake-ups per second (all threads).
    pub wakeups_per_s: f64,
    pub packets_per_wakeup: f64,
    pub wakeups: u64,
    /// Wait-mode switches (adaptive).
    pub mode_switches: u64,
    /// Fraction of cycles spent polling.
    pub poll_fraction: f64,
    pub cpu: CaptureCpu,
    /// Kernel timestamp → handled by the capture thread (sampled; `count` is the
    /// sample count).
    pub delivery_latency: DelayStats,
    /// Why the capture ended: "signal", "count" or "duration".
    pub stop_reason: String,
    /// Fallbacks taken.
    pub notes: Vec<String>,
    pub threads: Vec<T>,
    /// The merged output of several threads (absent otherwise).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub merge: Option<M>,
}

/// Ring geometry in capture/1.
#[derive(Debug, Clone, Serialize)]
pub struct CaptureRing {
    pub block_size: usize,
    /// Blocks per thread (after any shrink).
    pub block_count: usize,
    /// Retire timeout (ms; 0 = kernel default).
    pub retire_ms: u32,
    /// Fanout mode ("hash", "cpu", "lb") with several threads.
    pub fanout: Option<&'static str>,
}

/// Loss per stage in capture/1 (a key a reader does not find reads as 0).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct CaptureLoss {
    /// rx_dropped delta on the interface.
    pub if_rx_dropped: u64,
    /// rx_missed_errors delta.
    pub if_rx_missed_errors: u64,
    /// Ring drops (`tp_drops`).
    pub ring_drops: u64,
    /// Freeze-queue events (`tp_freeze_q_cnt`).
    pub ring_freeze_q_cnt: u64,
    /// Writer backlog drops: always 0 (writes are inline; a slow writer shows as ring drops).
    pub writer_drops: u64,
}

/// Interface counters before and after, in capture/1.
#[derive(Debug, Clone, Serialize)]
pub struct CaptureIfCounters {
    pub before: IfCountersJson,
    pub after: IfCountersJson,
}

/// One reading of an interface's sysfs counters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct IfCountersJson {
    pub rx_packets: u64,
    pub rx_bytes: u64,
    pub rx_dropped: u64,
    pub rx_missed_errors: u64,
    pub tx_packets: u64,
}

/// CPU time in capture/1.
#[derive(Debug, Clone, Serialize)]
pub struct CaptureCpu {
    /// Capture threads, user.
    pub threads_user_s: f64,
    /// Capture threads, system.
    pub threads_system_s: f64,
    /// Whole process, user.
    pub process_user_s: f64,
    /// Whole process, system.
    pub process_system_s: f64,
    /// Whole process CPU ns per packet written.
    pub ns_per_packet: f64,
    /// Whole process CPU as a fraction of one core.
    pub utilization: f64,
}

// ---- wirelab.replay/1 and wirelab.replay.cache/1 ----

pub const REPLAY_SCHEMA: &str = "wirelab.replay/1";
pub const REPLAY_CACHE_SCHEMA: &str = "wirelab.replay.cache/1";

/// The parts of `wirelab.replay/1` the replay driver measures about itself,
/// as its own types (serialized as they are).
pub trait ReplayParts {
    /// How the trace was held.
    type Load: Serialize + Clone + std::fmt::Debug;
    /// Reading and selection counters.
    type Read: Serialize + Clone + std::fmt::Debug;
    /// Rewrite counters.
    type Rewrite: Serialize + Clone + std::fmt::Debug;
    /// Send problems.
    type Send: Serialize + Clone + std::fmt::Debug;
    /// How the sender waited.
    type Wait: Serialize + Clone + std::fmt::Debug;
    /// The two-interface split.
    type Split: Serialize + Clone + std::fmt::Debug;
    /// The start-phase calibration.
    type Phase: Serialize + Clone + std::fmt::Debug;
}

/// `wirelab.replay/1`, printed with its keys in this declaration order (its
/// documented form).
#[derive(Debug, Clone, Serialize)]
#[serde(bound = "")]
pub struct ReplayReport<P: ReplayParts> {
    pub schema: &'static str,
    /// Output description.
    pub output: String,
    /// "ring", "sendmmsg" or "file".
    pub tx: &'static str,
    pub qdisc_bypass: bool,
    /// What departure time means.
    pub departure: &'static str,
    pub files: Vec<String>,
    pub load: P::Load,
    pub read: P::Read,
    pub rewrite: P::Rewrite,
    /// Timing mode, as text.
    pub timing: String,
    /// Late policy, as text.
    pub late_policy: String,
    /// Passes started.
    pub loops: u64,
    /// Why it stopped: "done", "limit", "duration", "signal".
    pub stopped_by: &'static str,
    pub fidelity: crate::FidelityReport,
    pub send: P::Send,
    pub wait: P::Wait,
    /// Null with one interface.
    pub split: Option<P::Split>,
    /// Null when no calibration ran.
    pub phase: Option<P::Phase>,
    /// Why no frame was sent (null when one was).
    pub nothing_sent: Option<NothingSent>,
}

/// A replay that sent (or wrote) no frame, and why.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct NothingSent {
    /// Why, with the counts and the flag that changes it.
    pub reason: String,
    /// The user asked for it (a selection that matches nothing, `--limit
    /// 0`, a `--duration` over before the first frame, a signal, a cache
    /// file's "don't send"); otherwise it is a failure.
    pub asked: bool,
}

/// `wirelab.replay.cache/1`: a run that only classified packets into
/// client and server and wrote the cache file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ReplayCacheReport {
    pub schema: &'static str,
    pub cachefile: String,
    /// How packets were classified: auto, cidr, port, or tcpprep.
    pub mode: String,
    /// A tcpprep cache's comment (its command line), else empty.
    pub comment: String,
    pub packets: u64,
    pub client_packets: u64,
    pub server_packets: u64,
    /// Packets a tcpprep cache marks "don't send".
    pub skipped_packets: u64,
}

impl ReplayCacheReport {
    /// One line, keys sorted (the documented form).
    pub fn to_json(&self) -> Result<String, AnalysisError> {
        Ok(serde_json::to_string(&serde_json::to_value(self)?)?)
    }
}

#[cfg(test)]
mod replay_tests {
    use super::*;

    #[test]
    fn replay_cache_report_is_one_line_with_sorted_keys() {
        let r = ReplayCacheReport {
            schema: REPLAY_CACHE_SCHEMA,
            cachefile: "c.txt".into(),
            mode: "auto".into(),
            comment: String::new(),
            packets: 179,
            client_packets: 99,
            server_packets: 80,
            skipped_packets: 0,
        };
        assert_eq!(
            r.to_json().unwrap(),
            r#"{"cachefile":"c.txt","client_packets":99,"comment":"","mode":"auto","packets":179,"schema":"wirelab.replay.cache/1","server_packets":80,"skipped_packets":0}"#
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capture_report_keeps_its_documented_key_order() {
        let cpu = CaptureCpu {
            threads_user_s: 0.0,
            threads_system_s: 0.0,
            process_user_s: 0.0,
            process_system_s: 0.0,
            ns_per_packet: 0.0,
            utilization: 0.0,
        };
        let mut r = CaptureReport::<u8, u8> {
            schema: CAPTURE_SCHEMA,
            interface: "eth0".into(),
            filter: String::new(),
            snaplen: 262_144,
            linktype: 1,
            format: "pcapng",
            wait: "adaptive",
            poll_period_ns: 100_000,
            ring: CaptureRing {
                block_size: 1 << 20,
                block_count: 64,
                retire_ms: 10,
                fanout: None,
            },
            start_unix_ns: 1,
            duration_s: 0.5,
            packets: 3,
            bytes: 180,
            loss: CaptureLoss {
                if_rx_dropped: 0,
                if_rx_missed_errors: 0,
                ring_drops: 2,
                ring_freeze_q_cnt: 1,
                writer_drops: 0,
            },
            interface_counters: CaptureIfCounters {
                before: IfCountersJson::default(),
                after: IfCountersJson::default(),
            },
            wakeups_per_s: 2.0,
            packets_per_wakeup: 3.0,
            wakeups: 1,
            mode_switches: 0,
            poll_fraction: 0.0,
            cpu,
            delivery_latency: DelayStats::default(),
            stop_reason: "count".into(),
            notes: vec![],
            threads: vec![7],
            merge: None,
        };
        let keys = |s: &str| -> Vec<String> {
            s.lines()
                .filter(|l| l.starts_with("  \"") && !l.starts_with("   "))
                .map(|l| l.trim().split('"').nth(1).unwrap().to_string())
                .collect()
        };
        let s = serde_json::to_string_pretty(&r).unwrap();
        let want = "schema interface filter snaplen linktype format wait poll_period_ns ring \
                    start_unix_ns duration_s packets bytes loss interface_counters \
                    wakeups_per_s packets_per_wakeup wakeups mode_switches poll_fraction cpu \
                    delivery_latency stop_reason notes threads";
        assert_eq!(keys(&s).join(" "), want);
        assert!(s.contains("\"wait\": \"adaptive\""), "{s}");
        assert!(s.contains("\"fanout\": null"), "{s}");
        r.merge = Some(9);
        let s = serde_json::to_string_pretty(&r).unwrap();
        assert_eq!(keys(&s).join(" "), format!("{want} merge"));
    }

    #[test]
    fn send_report_keys_are_sorted_and_engine_fields_flattened() {
        #[derive(Serialize)]
        struct Eng {
            sent: u64,
            bytes: u64,
        }
        let r = SendReport {
            schema: SEND_SCHEMA,
            target: "127.0.0.1:1".into(),
            config: SendSettings {
                host: "h".into(),
                target: "127.0.0.1:1".into(),
                flow: 1,
                flows: 1,
                interval: "const:1ms".into(),
                size: "const:64".into(),
                count: Some(1),
                duration_ns: None,
                tos: None,
                padding: "0".into(),
                warmup: 0,
                wait: "hybrid".into(),
                echo: false,
                seed: 1,
                batch: 64,
                rt_priority: None,
                cpu: None,
                format: "wirelab".into(),
                late: "Burst".into(),
                phase: None,
                socket: "udp".into(),
                start_at_unix_ns: None,
            },
            flows: vec![SentFlowReport {
                report: FlowReport::empty(1),
                echo_replies: 0,
                engine: SendEngine {
                    stats: Eng { sent: 1, bytes: 64 },
                    clamped_intervals: 0,
                    clamped_sizes: 2,
                },
            }],
            totals: SendTotals { flows: 1, sent: 1 },
            record_log: None::<()>,
        };
        let s = to_json_sorted(&r).unwrap();
        let top: Vec<&str> = s
            .lines()
            .filter(|l| l.starts_with("  \"") && !l.starts_with("   "))
            .map(|l| l.trim().split('"').nth(1).unwrap())
            .collect();
        assert_eq!(
            top,
            [
                "config",
                "flows",
                "record_log",
                "schema",
                "target",
                "totals"
            ]
        );
        let v: serde_json::Value = serde_json::from_str(&s).unwrap();
        assert_eq!(v["flows"][0]["engine"]["bytes"], 64);
        assert_eq!(v["flows"][0]["engine"]["clamped_sizes"], 2);
        assert_eq!(v["flows"][0]["flow"], 1);
        assert_eq!(v["schema"], "wirelab.send/1");
    }
}

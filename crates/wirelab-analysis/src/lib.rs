//! wirelab metrics over per-packet records (`wirelab_wire::record`).
//!
//! Pure functions and streaming accumulators: no I/O beyond `impl Write`,
//! no clock, no `unsafe`, no panics on any record content (records come
//! from files that may be hostile), memory per flow that grows with its
//! records up to a fixed cap ([`staged`]).
//!
//! * [`FlowStats`] — streaming per-flow receiver metrics (live receiver and
//!   offline): loss vs highest and vs the sender's count, loss bursts,
//!   duplicates, RFC 4737 reordering, one-way delay (HDR), RFC 5481 PDV,
//!   RFC 3393 IPDV, RFC 3550 jitter, inter-arrival times, windowed
//!   throughput, L2 and wire rates.
//! * [`SenderStats`] — pacing truth from Tx records: lateness, missed
//!   deadlines, inter-departure error, drift, achieved rate.
//! * [`RttStats`] — RTT from echo replies, its split and a clock offset
//!   estimate.
//! * [`analyze`] — joins sender and receiver record sets per flow and
//!   `(flow, seq)` into a [`Summary`] (JSON schema `wirelab.analysis/1`,
//!   see [`report`]).
//! * [`Fidelity`] — replay fidelity over departures: departure and
//!   inter-departure error, drift, late runs, achieved rates.
//! * [`emuverify`] — an emulator judged from captures of its input and
//!   output: per-copy applied delay and its error, Table B.1, KS
//!   (`wirelab.emulate.verify/1`).
//! * [`compare`] — result bundles of `wirelab run` side by side: per point
//!   and metric the difference, its bootstrap interval and effect size.
//! * [`ClockCorrection`] — receive stamps moved onto the sender's clock
//!   (the offset between hosts, `wirelab run`).
//! * [`DeliveryLatency`] — capture's kernel-stamp-to-handled latency.
//! * [`emulog`] — the link emulator's per-copy log (`emulate --log`).
//! * [`DelayStats`] — the one summary of a ns distribution (signed, with
//!   its worst packets, or from an unsigned histogram: [`percentiles`]).
//! * [`ks_distance`] / [`ks_two_sample`] — distribution accuracy;
//!   [`Requested`] and [`analyze_run`] join it to a run.
//! * [`LiveFlows`], [`SendAccum`] — streaming statistics of running jobs,
//!   per-flow state built as a flow's packets need it ([`staged`]).
//! * [`status`] — a running receiver's loss so far (`recv --status`).
//! * [`schema`] — the typed JSON reports `wirelab.send/1`, `wirelab.recv/1`.
//! * [`capture`] — pcap/pcapng captures as input: wirelab and LUNA probes
//!   as receive records ([`CaptureRecords`]), RTP streams measured as
//!   Wireshark measures them ([`capture::rtp`]).
//! * [`inputs`] — what `wirelab analyze` reads besides records' statistics:
//!   a set of captures and its report sections, file warnings, an emulator
//!   log's summary.
//! * [`PacketJoin`] — the streaming per-packet join of a sender's and a
//!   receiver's records (`wirelab export TX RX`), tables defined once in
//!   [`columns`] for every export format.
//! * [`Welford`] — running mean and variance, mergeable (latency σ, trace
//!   statistics).
//! * [`render_text`], [`export_csv`], [`export_jsonl`] — output.
#![forbid(unsafe_code)]

pub mod buckets;
pub mod capture;
pub mod clockfix;
pub mod columns;
pub mod compare;
pub mod delivery;
pub mod emulog;
pub mod emuverify;
pub mod error;
pub mod export;
pub mod fates;
pub mod fidelity;
pub mod flow;
pub mod inputs;
pub mod join;
pub mod ks;
pub mod latency;
pub mod live;
pub mod packets;
pub mod percentiles;
pub mod reorder;
pub mod report;
pub mod requested;
pub mod rtt;
pub mod schema;
pub mod sender;
pub mod seqwin;
pub mod staged;
pub mod status;
pub mod text;
pub mod welford;
pub mod window;

pub use capture::{is_capture, CaptureCounts, CaptureOptions, CaptureRecords};
pub use clockfix::ClockCorrection;
pub use delivery::DeliveryLatency;
pub use error::AnalysisError;
pub use export::{export_csv, export_jsonl};
pub use fidelity::{Fidelity, FidelityReport};
pub use flow::{Arrival, FlowConfig, FlowStats};
pub use join::{analyze, departure_interval_samples, size_samples, AnalysisConfig, RecordSets};
pub use ks::{ks_distance, ks_two_sample};
pub use latency::{DelayStats, SignedHistogram};
pub use live::{LiveFlows, Reservoir, SendAccum, DEFAULT_MAX_LIVE_FLOWS};
pub use packets::{JoinConfig, JoinStats, PacketJoin, PacketRow};
pub use report::{FlowReport, SentSource, Summary, Totals, Warning, OWD_CLOCK_NOTE, SCHEMA};
pub use requested::{analyze_run, fill_ks, Cdf, Requested, RunRecords};
pub use rtt::RttStats;
pub use sender::{SenderInfo, SenderStats};
pub use text::render_text;
pub use welford::Welford;
pub use window::RateModel;

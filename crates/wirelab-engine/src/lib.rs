//! Drivers that join the sans-IO core with real sockets and clocks.
//! No `unsafe` here: every OS call goes through `wirelab_io`, and the
//! drivers are generic over its traits so tests run them on
//! `wirelab_io::sim`.
//!
//! - [`sender`]: paces probes on absolute deadlines, batches when behind,
//!   measures its own lateness, and receives echo replies.
//! - [`txpath`]: the socket a flow sends through (UDP, raw IPv4, packet)
//!   and the headers wirelab builds for the last two.
//! - [`receiver`]: receives in batches with kernel timestamps, tracks every
//!   flow live, reflects echo requests, writes records.
//! - [`capture`]: TPACKET_V3 capture to pcapng/pcap with the adaptive wait of
//!   the DMA-ring capture thesis (the `wirelab-capture` crate, re-exported).
//! - [`emulate`]: the link emulator's forwarding loop: ring → link model →
//!   release on absolute deadlines, never early.
//! - [`emulate_setup`]: `wirelab emulate`'s job from its stage lists and rules.
//! - [`recordlog`]: buffered append-only record files.
//! - [`trace`]: the `wirelab trace` tools' jobs (files in, files out).
//! - [`job`]: what each subcommand runs, from configuration to report.
//! - [`phase`]: the start phase of a schedule, calibrated to miss periodic stalls.
//! - [`pace`]: waiting on a [`wirelab_core::pace::Pacer`] and the one send retry policy,
//!   shared by `sender` and `replay`.
#![forbid(unsafe_code)]

pub mod emulate;
pub mod emulate_setup;
pub mod job;
pub mod pace;
pub mod phase;
pub mod receiver;
pub mod recordlog;
pub mod replay;
pub mod sender;
pub mod trace;
pub mod txpath;
mod writer_thread;

/// The capture driver lives in its own crate (`wirelab-capture`); the
/// capture job's callers reach it here, beside the job.
pub use wirelab_io::stop::StopFlag;

/// The probe layout on the wire.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ProbeFormat {
    /// wirelab's own header (`wirelab_wire::probe`): flow id, 64-bit sequence, end marker.
    #[default]
    Wirelab,
    /// LUNA's 21-byte layout (`wirelab_wire::luna`), for LUNA peers: no flow
    /// id (flows are told apart by source address), no end marker.
    Luna,
}

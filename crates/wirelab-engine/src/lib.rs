//! Drivers that join the sans-IO core with real sockets and clocks.
//!
//! - [`sender`]: paces probes on absolute deadlines, batches when behind,
//!   measures its own lateness, and receives echo replies.
//! - [`receiver`]: receives in batches with kernel timestamps, tracks every
//!   flow live, reflects echo requests, writes records.
//! - [`capture`]: TPACKET_V3 capture to pcapng/pcap with the adaptive wait of seed 001.
//! - [`recordlog`]: buffered append-only record files.
//! - [`job`]: what each subcommand runs, from configuration to report.
//! - [`phase`]: the start phase of a schedule, calibrated to miss periodic stalls.

pub mod capture;
pub mod job;
pub mod phase;
pub mod receiver;
pub mod recordlog;
pub mod replay;
pub mod sender;
pub mod stop;

pub use stop::StopFlag;

/// The probe layout on the wire.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ProbeFormat {
    /// wirelab's own header (DESIGN.md §3.1): flow id, 64-bit sequence, end marker.
    #[default]
    Wirelab,
    /// LUNA's 21-byte layout (`wirelab_wire::luna`), for LUNA peers: no flow
    /// id (flows are told apart by source address), no end marker.
    Luna,
}

/// Whether a failed send is worth retrying at once: the queue or socket
/// buffer was momentarily full (ENOBUFS, EAGAIN) or a signal interrupted
/// the call (EINTR). Shared by the sender and replay retry loops.
pub(crate) fn transient_send_error(e: &std::io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(libc::ENOBUFS) | Some(libc::EAGAIN) | Some(libc::EINTR)
    )
}

//! Drivers that join the sans-IO core with real sockets and clocks.
//!
//! - [`sender`]: paces probes on absolute deadlines, batches when behind,
//!   measures its own lateness, and receives echo replies.
//! - [`receiver`]: receives in batches with kernel timestamps, tracks every
//!   flow live, reflects echo requests, writes records.
//! - [`capture`]: TPACKET_V3 capture to pcapng/pcap with the adaptive wait of seed 001.
//! - [`recordlog`]: buffered append-only record files.

pub mod capture;
pub mod receiver;
pub mod recordlog;
pub mod replay;
pub mod sender;
pub mod stop;

pub use stop::StopFlag;

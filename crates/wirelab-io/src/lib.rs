//! The only wirelab crate that talks to the kernel.
//!
//! - [`clock`]: CLOCK_MONOTONIC / CLOCK_REALTIME reads, absolute sleeps, spins.
//! - [`rt`]: SCHED_FIFO, CPU pinning, memory locking, with errors that name
//!   the missing capability.
//! - [`udp`]: UDP sockets with sendmmsg/recvmmsg batches, kernel receive
//!   timestamps (SO_TIMESTAMPING, falling back to SO_TIMESTAMPNS) and kernel
//!   drop counts (SO_RXQ_OVFL).
//!
//! Every `unsafe` block carries a `// SAFETY:` comment.

pub mod clock;
pub mod rt;
pub mod udp;

pub use udp::{RecvBatch, RecvMeta, RxTimestamp, UdpSock};

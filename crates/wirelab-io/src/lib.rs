//! The only wirelab crate that talks to the kernel.
//!
//! - [`clock`]: CLOCK_MONOTONIC / CLOCK_REALTIME reads, absolute sleeps, spins.
//! - [`rt`]: SCHED_FIFO, CPU pinning, memory locking, with errors that name
//!   the missing capability.
//! - [`udp`]: UDP sockets with sendmmsg/recvmmsg batches, kernel receive
//!   timestamps (SO_TIMESTAMPING, falling back to SO_TIMESTAMPNS) and kernel
//!   drop counts (SO_RXQ_OVFL).
//!
//! - [`bpf`]: tcpdump filter expressions compiled by libpcap; run in user space or
//!   attached to a socket.
//! - [`ring_rx`]: AF_PACKET TPACKET_V3 receive ring, read in place.
//! - [`ring_frames`]: AF_PACKET TPACKET_V2 receive ring, one slot per frame, for
//!   forwarding without the V3 block-retire wait.
//! - [`rawip`]: raw IPv4 sockets (IP_HDRINCL) for packets whose headers the
//!   caller builds; [`route`] (the kernel's route to an address, over
//!   rtnetlink) and [`neigh`] (the ARP table) find the egress interface and
//!   next hop a packet socket needs.
//! - [`ifstats`]: interface counters from sysfs, thread/process CPU time.
//! - [`process`]: children that die with their parent, signals by pid.
//! - [`supervise`]: stopping children: signal, grace time, SIGKILL, reap.
//! - [`atomic`]: files replaced whole (temp file, fsync, rename, fsync of the
//!   directory), so a crash leaves the old content or the new.
//! - [`direct`]: `O_DIRECT` files for capture output without the page-cache copy.
//! - [`tx`]: the [`tx::Transmit`] trait over every batch sender, and which send
//!   errors are transient.
//! - [`stop`]: the stop request drivers poll, set by signal handlers or the
//!   caller.
//! - [`sim`]: a simulated clock, transmit link, UDP socket, capture ring and
//!   forwarding ring for driver tests (no `unsafe`, no OS).
//!
//! Every `unsafe` block carries a `// SAFETY:` comment.

pub mod atomic;
pub mod bpf;
pub mod clock;
pub mod direct;
pub mod hwtstamp;
pub mod ifstats;
mod mmsg;
pub mod neigh;
pub mod packet_sock;
pub mod process;
pub mod rawip;
pub mod ring_frames;
pub mod ring_rx;
mod ring_setup;
pub mod ring_tx;
pub mod route;
pub mod rt;
pub mod sim;
mod sockopt;
pub mod stop;
pub mod supervise;
pub mod tx;
pub mod udp;

pub use clock::{Clock, MonoClock};
pub use tx::Transmit;
pub use udp::{Receive, RecvBatch, RecvMeta, RxTimestamp, UdpSock};

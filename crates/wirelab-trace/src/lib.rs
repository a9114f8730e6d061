//! Link traces: streaming readers and writers of the trace formats that
//! tell the emulator what to do to each packet, and the logic of the
//! `wirelab trace` tools over them.
//!
//! Packet-indexed traces follow NIST Net's trace reader (the NIST Net
//! trace-emulation thesis, §5.2/§5.6). Sans-IO like `wirelab-core`: no
//! files and no clock here; callers hand in readers and writers.
//!
//! Readers stream: they take a `BufRead`, keep one record (or one line of
//! at most a few KiB) at a time and never size anything by a number read
//! from the input, so a multi-GB trace reads in bounded memory. Errors
//! carry a position ([`TraceError`]); after a non-fatal one a reader goes
//! on with the next record. Formats and the nist-bin bit layout are
//! documented in docs/trace.md.
//!
//! - packet-indexed: [`nist`] (nist-bin, nist-txt), [`delays`], [`pktcsv`],
//!   all behind [`packet::PacketReader`] / [`packet::PacketWriter`] and
//!   [`packet::convert`];
//! - time-indexed: [`mahimahi`] (delivery opportunities), [`csv`] (link
//!   parameters per time step);
//! - [`dist`]: iproute2 `.dist` tables;
//! - [`end`]: the end-of-trace policy and the inputs that can start over;
//!   [`validate()`]: a full pre-scan.
//!
//! The `wirelab trace` tools: [`conv`] (any-to-any conversion, with
//! [`rate`] for kbit-ms, CSV rates and Mahimahi), [`dump`] (one entry per
//! record, nist words bit by bit), [`gen`] (synthetic traces, long-range
//! dependent through [`fgn`]), [`stats`], [`measured`] (a sender + receiver
//! record pair as a trace) and [`maketable`] (iproute2's `.dist` maker).
#![forbid(unsafe_code)]

pub mod conv;
pub mod csv;
pub mod delays;
pub mod dist;
pub mod dump;
pub mod end;
pub mod error;
pub mod fgn;
pub mod format;
pub mod gen;
mod lines;
pub mod mahimahi;
pub mod maketable;
pub mod measured;
pub mod nist;
pub mod packet;
pub mod pktcsv;
pub mod rate;
pub mod stats;
#[cfg(test)]
mod stream_tests;
pub mod validate;

pub use end::{AtEnd, Restart, UnknownAtEnd};
pub use error::{ErrorKind, FileError, Pos, TraceError, WriteError};
pub use format::{ByteOrder, Format, FormatError, Indexing, NegPolicy, TraceOptions};
pub use packet::{convert, ConvertError, PacketReader, PacketWriter};
pub use validate::{validate, Summary};

/// One record of a packet-indexed trace: what happens to the next packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// Forward after `delay_ns` (counted from the kernel receive time).
    Delay { delay_ns: u64 },
    /// Drop the packet.
    Drop,
    /// Forward after `delay_ns` and send a copy, whose own fate is the
    /// next record (so two duplicates in a row make three packets).
    Duplicate { delay_ns: u64 },
}

/// A source of trace actions in packet order; `None` at the end of the
/// trace (what happens then is the caller's end-of-trace policy).
pub trait ActionSource {
    fn next_action(&mut self) -> Option<Action>;
}

impl<I: Iterator<Item = Action>> ActionSource for I {
    fn next_action(&mut self) -> Option<Action> {
        self.next()
    }
}

/// A packet-trace record: the action and what only some formats carry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Record {
    pub action: Action,
    /// Flip one bit of the packet (pkt-csv's `corrupt`; always with
    /// [`Action::Delay`]).
    pub corrupt: bool,
}

impl From<Action> for Record {
    fn from(action: Action) -> Self {
        Record {
            action,
            corrupt: false,
        }
    }
}

//! Wire and file formats of wirelab.
//!
//! Everything here is pure: no I/O, no clock, no `unsafe`. Every parser
//! checks lengths before it reads and returns a typed error on any input;
//! none of them panics.
#![forbid(unsafe_code)]

pub mod ethernet;
pub mod headers;
pub mod luna;
pub mod probe;
pub mod record;
pub mod rewrite;
pub mod udp4;

pub use probe::{EchoTimes, ProbeFlags, ProbeRepr, WireError};
pub use record::{
    EmuFate, EmuRecord, FateInfo, Record, RecordError, RecordFileHeader, RecordKind, RecordReader,
    Role, FATES,
};

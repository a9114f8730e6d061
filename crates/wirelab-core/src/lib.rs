//! Sans-IO timing decisions of wirelab: when each packet is due and how to
//! wait for it, for senders, replay, receivers and captures.
//!
//! Time is always an argument; randomness is always seeded; there are no
//! OS calls here, so every decision is tested deterministically. The
//! emulator's link model is `wirelab-link`, the trace formats
//! `wirelab-trace`.
//!
//! - [`gen`]: value generators for intervals and sizes (`--interval SPEC`);
//! - [`schedule`]: deadlines of generated intervals;
//! - [`pace`]: the pacing core, when to send a packet and how to wait;
//! - [`phase`]: the start phase of a schedule, chosen to miss stalls;
//! - [`replay`]: when each packet of a replayed trace is due;
//! - [`forecast`]: the arrival-rate forecaster of the receive loop;
//! - [`capture`]: a capture thread's waits, drains and rotations;
//! - [`merge`]: the watermark merge of several capture streams;
//! - [`clocksync`]: clock offsets between hosts from probes;
//! - [`units`]: durations, sizes and rates with units.
#![forbid(unsafe_code)]

pub mod capture;
pub mod clocksync;
pub mod forecast;
pub mod gen;
pub mod merge;
pub mod pace;
pub mod phase;
pub mod replay;
pub mod schedule;
pub mod units;

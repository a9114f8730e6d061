//! The sans-IO heart of `wirelab replay`: when each packet is due
//! ([`Timing`], [`LoopClock`]); how well it did is measured in
//! `wirelab_analysis::fidelity`.
//!
//! All times are ns relative to the replay's start on the monotonic clock;
//! the driver adds its start instant. Nothing here reads a clock.
//!
//! # Schedule
//!
//! Packet *i* has an *ideal* departure: with original timing
//! `trace_offset / multiplier`, where the trace offset runs on across loops
//! ([`LoopClock`]); with `--pps` `⌊i / burst⌋ · burst / pps`; with `--mbps`
//! the bits of all earlier bursts over the rate; with `--topspeed` 0. The
//! ideal never depends on what happened at run time, so lateness cannot
//! accumulate into drift unless the policy asks for it (`rebase`).
//!
//! # Late policy
//!
//! What to do when the sender is late is the shared pacing core's
//! ([`crate::pace`]), re-exported here for replay's callers.

pub use crate::pace::{catch_up_deadline, LatePolicy, SPREAD_BURST_AFTER_NS};
use wirelab_wire::ethernet::wire_bytes;

/// How the ideal departure times are derived.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Timing {
    /// Trace timing divided by a multiplier (1.0 = original).
    Original {
        /// Speed-up factor (2.0 = twice as fast).
        multiplier: f64,
    },
    /// Fixed packet rate, `burst` packets per tick of `burst / pps`.
    Pps {
        /// Packets per second.
        pps: f64,
        /// Packets per tick (≥ 1).
        burst: u32,
    },
    /// Fixed bit rate, counted on L2 bytes or on the wire (preamble, FCS,
    /// inter-frame gap, minimum frame size).
    Rate {
        /// Bits per second.
        bps: f64,
        /// Count wire bytes instead of L2 bytes.
        wire: bool,
        /// Packets per tick (≥ 1).
        burst: u32,
    },
    /// As fast as possible: everything is due at once.
    Topspeed,
}

/// Trace time across loops: loop *k* starts `k · period` after loop 0.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LoopClock {
    /// From the first to the last packet of one pass.
    pub span_ns: u64,
    /// From the first packet of one pass to the first of the next.
    pub period_ns: u64,
}

impl LoopClock {
    /// A pass of `span_ns` with `count` packets. The next pass starts
    /// `loop_delay_ns` after the last packet, or, without a delay, one mean
    /// gap later (so timestamps stay continuous and the loop seam looks like
    /// any other gap); one packet alone repeats every 1 ms.
    pub fn new(span_ns: u64, count: u64, loop_delay_ns: Option<u64>) -> LoopClock {
        let gap = match loop_delay_ns {
            Some(d) => d,
            None if count > 1 => span_ns / (count - 1),
            None => 1_000_000,
        };
        LoopClock {
            span_ns,
            period_ns: span_ns.saturating_add(gap).max(1),
        }
    }

    /// Trace offset of a packet at `offset_ns` into pass `pass`.
    pub fn trace_ns(&self, pass: u64, offset_ns: u64) -> u64 {
        pass.saturating_mul(self.period_ns)
            .saturating_add(offset_ns)
    }
}

/// Turns packets, in sending order, into ideal departure times.
#[derive(Clone, Debug)]
pub struct Schedule {
    timing: Timing,
    index: u64,
    bits_at_tick: f64,
    bits: f64,
}

impl Schedule {
    /// A schedule for `timing`.
    pub fn new(timing: Timing) -> Schedule {
        Schedule {
            timing,
            index: 0,
            bits_at_tick: 0.0,
            bits: 0.0,
        }
    }

    /// The ideal departure (ns from start) of the next packet, which is
    /// `len` L2 bytes long and sits `trace_ns` into the (looped) trace.
    pub fn next(&mut self, trace_ns: u64, len: u32) -> u64 {
        let i = self.index;
        self.index += 1;
        match self.timing {
            Timing::Original { multiplier } => (trace_ns as f64 / multiplier).round() as u64,
            Timing::Pps { pps, burst } => {
                let b = u64::from(burst.max(1));
                ((i / b * b) as f64 * 1e9 / pps).round() as u64
            }
            Timing::Rate { bps, wire, burst } => {
                let b = u64::from(burst.max(1));
                if i.is_multiple_of(b) {
                    self.bits_at_tick = self.bits;
                }
                let bytes = if wire {
                    wire_bytes(len)
                } else {
                    u64::from(len)
                };
                self.bits += bytes as f64 * 8.0;
                (self.bits_at_tick * 1e9 / bps).round() as u64
            }
            Timing::Topspeed => 0,
        }
    }
}

#[cfg(test)]
mod tests;

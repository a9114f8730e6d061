//! The sans-IO heart of `wirelab replay`: when each packet is due
//! ([`Timing`], [`LoopClock`]), what to do when the sender is late
//! ([`LatePolicy`], [`Pacer`]); how well it did is measured in
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
//! - `burst`: send everything that is due now (tcpreplay's behaviour):
//!   absolute schedule kept, but after a late wake-up the backlog leaves
//!   back-to-back.
//! - `rebase`: when a packet leaves more than a threshold late, shift the
//!   rest of the schedule by that lateness: gaps kept, total duration grows.
//! - `spread` (default): a late packet leaves no earlier than the previous
//!   departure plus its original gap shortened, never below `factor` (0.5)
//!   of it. Lateness up to `horizon` (8) × `max_shrink_ns` (2 µs) is worked
//!   off gently, 2 µs per gap; larger lateness is taken off in one go, as
//!   far as the factor allows; beyond 1 ms of lateness
//!   ([`SPREAD_BURST_AFTER_NS`]) what is due leaves at once. Gaps are not
//!   collapsed to zero below that, and the schedule is rejoined, so there
//!   is no drift. Why both: the few-µs
//!   lateness of a stalled vCPU costs a few gaps off by 2 µs instead of one
//!   back-to-back departure; but working a larger lateness off over many
//!   gaps (an eighth of it per gap, as an earlier version did) made ten or
//!   more bad gaps out of one late wake-up where catching up at once makes
//!   one, which at 1 kpps put the p99 at 55 µs instead of 9.

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

/// What to do when the sender finds itself behind schedule.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum LatePolicy {
    /// Send everything due at once.
    Burst,
    /// Shift the remaining schedule by any lateness above `threshold_ns`.
    Rebase {
        /// Lateness tolerated before shifting.
        threshold_ns: u64,
    },
    /// Shorten the gaps between late packets by `max_shrink_ns` while the
    /// lateness is at most `horizon` × that, else by the whole lateness,
    /// keeping at least `factor` × the original gap; beyond
    /// [`SPREAD_BURST_AFTER_NS`] of lateness, as `Burst`.
    Spread {
        /// Fraction of the original gap kept at least while catching up (0..1).
        factor: f64,
        /// Shrink of a gap while catching up from small lateness.
        max_shrink_ns: u64,
        /// Most gaps a lateness is worked off over gently (≥ 1); a larger
        /// lateness is caught up as fast as `factor` allows.
        horizon: u32,
    },
}

impl LatePolicy {
    /// The documented default.
    pub const DEFAULT: LatePolicy = LatePolicy::Spread {
        factor: 0.5,
        max_shrink_ns: 2_000,
        horizon: 8,
    };
}

/// With `spread`, lateness beyond this is caught up at once, as with `burst`.
/// Two reasons. On a CPU shared with other work, where the sender gets half
/// the CPU in scheduler slices of milliseconds, catching up at half-gaps is
/// exactly as fast as the lateness grows, and it never caught up (measured:
/// p50 lateness 19.8 s at 10 kpps beside one busy loop). And after a stall
/// of milliseconds, catching up at half-gaps makes twice as many bad gaps as
/// sending what is due at once (an 18.95 ms stall at 10 kpps: 378 gaps
/// 50 µs short, 0.76 % of a 5 s run, enough to set its p99), and a
/// percentile counts bad gaps, not their size.
pub const SPREAD_BURST_AFTER_NS: u64 = 1_000_000;

/// Applies a [`LatePolicy`]: turns ideal times into targets, learns from
/// actual departures.
#[derive(Clone, Debug)]
pub struct Pacer {
    policy: LatePolicy,
    shift_ns: u64,
    prev: Option<(u64, u64)>,
}

impl Pacer {
    /// A pacer applying `policy`.
    pub fn new(policy: LatePolicy) -> Pacer {
        Pacer {
            policy,
            shift_ns: 0,
            prev: None,
        }
    }

    /// When to send a packet whose ideal time is `ideal_ns`.
    pub fn target(&self, ideal_ns: u64) -> u64 {
        match self.policy {
            LatePolicy::Burst => ideal_ns,
            LatePolicy::Rebase { .. } => ideal_ns + self.shift_ns,
            LatePolicy::Spread {
                factor,
                max_shrink_ns,
                horizon,
            } => match self.prev {
                Some((pi, pd)) => {
                    // Small lateness gently, max_shrink per gap; larger
                    // lateness at once; never below factor × the gap.
                    let orig = ideal_ns.saturating_sub(pi);
                    let late = pd.saturating_sub(pi);
                    let gentle = max_shrink_ns.saturating_mul(u64::from(horizon.max(1)));
                    let shrink = if late <= gentle { max_shrink_ns } else { late };
                    // Past SPREAD_BURST_AFTER_NS no floor: what is due leaves now.
                    let factor = if late > SPREAD_BURST_AFTER_NS {
                        0.0
                    } else {
                        factor
                    };
                    let floor = (orig as f64 * factor) as u64;
                    let gap = orig.saturating_sub(shrink).max(floor);
                    ideal_ns.max(pd + gap)
                }
                None => ideal_ns,
            },
        }
    }

    /// Reports that the packet with `ideal_ns`, targeted at `target_ns`,
    /// left at `actual_ns`.
    pub fn departed(&mut self, ideal_ns: u64, target_ns: u64, actual_ns: u64) {
        if let LatePolicy::Rebase { threshold_ns } = self.policy {
            let late = actual_ns.saturating_sub(target_ns);
            if late > threshold_ns {
                self.shift_ns += late;
            }
        }
        self.prev = Some((ideal_ns, actual_ns));
    }

    /// The schedule's origin moved `delta_ns` later (see
    /// `schedule::Pacer::delay_start`): the last departure is measured
    /// against its moved ideal time, so the move is not taken for lateness.
    pub fn origin_moved(&mut self, delta_ns: u64) {
        if let Some((ideal, _)) = self.prev.as_mut() {
            *ideal = ideal.saturating_add(delta_ns);
        }
    }

    /// Total shift applied by `rebase` so far.
    pub fn shift_ns(&self) -> u64 {
        self.shift_ns
    }
}

/// When a packet should leave, given its policy target: the target itself,
/// or `now_ns` when the packet is already late on its ideal time and the
/// target is nearer than one send call costs (`kick_cost_ns`). Such a packet
/// joins the batch being built instead of paying a send call of its own;
/// otherwise a sender whose send call costs more than the spread gap (e.g.
/// 10 µs CBR with a 12 µs kick) sends one packet per call, never catches up
/// and drifts.
pub fn catch_up_deadline(ideal_ns: u64, target_ns: u64, now_ns: u64, kick_cost_ns: u64) -> u64 {
    if target_ns > now_ns && ideal_ns <= now_ns && target_ns - now_ns < kick_cost_ns {
        now_ns
    } else {
        target_ns
    }
}

#[cfg(test)]
mod tests;

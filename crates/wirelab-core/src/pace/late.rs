//! Catching up after a late departure.
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
//!   far as the factor allows; beyond [`SPREAD_BURST_AFTER_NS`] of lateness
//!   what is due leaves at once. Gaps are not collapsed to zero below that,
//!   and the schedule is rejoined, so there is no drift. Small lateness (a
//!   stalled vCPU) costs a few gaps off by 2 µs instead of one back-to-back
//!   departure; working a large lateness off over many gaps would make many
//!   bad gaps out of one late wake-up where catching up at once makes one.

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
/// only as fast as the lateness grows, so it would never catch up. And after
/// a stall of milliseconds, catching up at half-gaps makes twice as many bad
/// gaps as sending what is due at once, and a percentile counts bad gaps,
/// not their size.
pub const SPREAD_BURST_AFTER_NS: u64 = 1_000_000;

/// Applies a [`LatePolicy`]: turns ideal times into targets, learns from
/// actual departures. Times are ns on any one axis (offsets from a
/// schedule's origin, or absolute), the same for every call.
#[derive(Clone, Debug)]
pub struct CatchUp {
    policy: LatePolicy,
    shift_ns: u64,
    prev: Option<(u64, u64)>,
}

impl CatchUp {
    /// A pacer applying `policy`.
    pub fn new(policy: LatePolicy) -> CatchUp {
        CatchUp {
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

    /// Starts afresh with `ideal_ns` as the last departure, on time: the
    /// schedule's origin was just moved to it (first-departure anchoring),
    /// and what happened before the move is not lateness to catch up on.
    pub fn restart_at(&mut self, ideal_ns: u64) {
        self.shift_ns = 0;
        self.prev = Some((ideal_ns, ideal_ns));
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

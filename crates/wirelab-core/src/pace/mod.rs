//! The pacing core shared by every job that sends on a schedule (`send`,
//! `replay`, and the emulator's release path): when to actually send a
//! packet whose ideal departure is known, and how to wait for it.
//!
//! A job's schedule (`crate::schedule` for generated intervals,
//! `crate::replay::Schedule` for traces) says when each packet *should*
//! leave, as an offset from the schedule's origin. The [`Pacer`] turns that
//! into a deadline on the monotonic clock and decides what to do at `now`:
//!
//! - **catch-up** ([`LatePolicy`]): after a late departure, later targets
//!   come from the policy (burst, rebase, spread), and a late packet whose
//!   target is nearer than one send call joins the batch being built
//!   ([`catch_up_deadline`], with the learned [`SendCost`]);
//! - **waiting** ([`WaitStrategy`]): sleep, spin, or sleep until a margin
//!   before the deadline and spin the rest; the hybrid margin is fixed or
//!   learned ([`SpinMargin`]) from how late sleeps wake up and from whether
//!   the CPU is shared ([`CpuWindow`]);
//! - **origin**: a calibrated start phase ([`Pacer::set_origin`]) and
//!   first-departure anchoring ([`Pacer::first_departure`]): the schedule
//!   runs from the first packet's actual departure, because the first send
//!   call on a cold path is slow and anchored to the planned start the
//!   next packets would leave late and the first gap would be short.
//!
//! Sans-IO: every time is passed in; the caller owns the clock and the
//! sockets (`wirelab_engine::pace` drives this over `wirelab_io`'s traits).

mod cost;
mod late;
mod margin;

pub use cost::SendCost;
pub use late::{catch_up_deadline, CatchUp, LatePolicy, SPREAD_BURST_AFTER_NS};
pub use margin::{CpuWindow, MarginBounds, SpinMargin};

/// How the sender waits for a deadline.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WaitStrategy {
    /// Sleep until the deadline (cheap, wakes up tens of µs late).
    Sleep,
    /// Busy-poll the clock until the deadline (precise, burns a core).
    Spin,
    /// Sleep until `spin_ns` before the deadline, then spin.
    Hybrid { spin_ns: u64 },
}

/// The knobs of a [`Pacer`], the same for every job.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PaceConfig {
    /// How to wait; with `Hybrid`, `spin_ns` is the fixed margin, or the
    /// starting one when `learn` is set.
    pub wait: WaitStrategy,
    /// Learn the hybrid margin within these bounds.
    pub learn: Option<MarginBounds>,
    /// How to catch up when late.
    pub late: LatePolicy,
    /// Move the origin to the first departure ([`Pacer::first_departure`]).
    pub anchor_first: bool,
}

/// What to do now for a packet with a given deadline.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// Send now.
    Go,
    /// Sleep until this absolute time, then ask again.
    Sleep(u64),
    /// Spin until this absolute time, then ask again.
    Spin(u64),
}

/// How the pacer waited, for reports.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PaceStats {
    /// Sleep calls.
    pub sleeps: u64,
    /// Sleeps that woke after the deadline itself (the margin was too small).
    pub sleeps_past_deadline: u64,
    /// Largest oversleep (wake-up minus the time asked for).
    pub oversleep_max_ns: u64,
    /// Largest hybrid margin used.
    pub margin_max_ns: u64,
    /// CPU windows found shared with other work.
    pub contended_windows: u64,
    /// How far the origin moved to the first departure (None: it did not).
    pub anchor_lag_ns: Option<u64>,
}

/// Deadlines, catch-up and waiting for one schedule (see the module docs).
/// Ideal times and targets are offsets from the origin; `now`, deadlines
/// and wake-ups are absolute.
#[derive(Debug, Clone)]
pub struct Pacer {
    origin_ns: u64,
    wait: WaitStrategy,
    margin: Option<SpinMargin>,
    catch_up: CatchUp,
    cost: SendCost,
    cpu: CpuWindow,
    anchor_pending: bool,
    anchor_max_lag_ns: Option<u64>,
    stats: PaceStats,
}

impl Pacer {
    /// A pacer whose offset 0 is the absolute time `origin_ns`.
    pub fn new(origin_ns: u64, cfg: PaceConfig) -> Pacer {
        let margin = match (cfg.wait, cfg.learn) {
            (WaitStrategy::Hybrid { spin_ns }, Some(b)) => Some(SpinMargin::within(MarginBounds {
                initial_ns: spin_ns,
                ..b
            })),
            _ => None,
        };
        let margin_max_ns = match cfg.wait {
            WaitStrategy::Hybrid { spin_ns } => margin.map_or(spin_ns, |m| m.margin_ns()),
            _ => 0,
        };
        Pacer {
            origin_ns,
            wait: cfg.wait,
            margin,
            catch_up: CatchUp::new(cfg.late),
            cost: SendCost::default(),
            cpu: CpuWindow::default(),
            anchor_pending: cfg.anchor_first,
            anchor_max_lag_ns: None,
            stats: PaceStats {
                margin_max_ns,
                ..PaceStats::default()
            },
        }
    }

    /// The absolute time of offset 0.
    pub fn origin_ns(&self) -> u64 {
        self.origin_ns
    }

    /// Places the origin (a calibrated start phase) before the first departure.
    pub fn set_origin(&mut self, origin_ns: u64) {
        self.origin_ns = origin_ns;
    }

    /// First-departure anchoring moves the origin only by less than
    /// `max_lag_ns` (after a phase calibration: half the run of good
    /// phases the choice sits in the middle of).
    pub fn limit_anchor(&mut self, max_lag_ns: u64) {
        self.anchor_max_lag_ns = Some(max_lag_ns);
    }

    /// The absolute time a packet with ideal offset `ideal_ns` should leave,
    /// seen at `now_ns`: the late policy's target, or now when the packet
    /// is late and the target nearer than one send call.
    pub fn deadline(&self, ideal_ns: u64, now_ns: u64) -> u64 {
        let now_off = now_ns.saturating_sub(self.origin_ns);
        let target = self.catch_up.target(ideal_ns);
        self.origin_ns + catch_up_deadline(ideal_ns, target, now_off, self.cost.ns())
    }

    /// How many of the packets with ideal offsets `ideals` (in order; the
    /// first is the one whose deadline has come) leave together at `now_ns`:
    /// those due on their ideal time and not held back by the late policy.
    pub fn batch(&self, ideals: impl IntoIterator<Item = u64>, now_ns: u64) -> usize {
        let now_off = now_ns.saturating_sub(self.origin_ns);
        let mut sim = self.catch_up.clone();
        let mut n = 0;
        for ideal in ideals {
            if n > 0 {
                if ideal > now_off {
                    break;
                }
                let t = catch_up_deadline(ideal, sim.target(ideal), now_off, self.cost.ns());
                if t > now_off {
                    break;
                }
            }
            sim.departed(ideal, sim.target(ideal).min(now_off.max(ideal)), now_off);
            n += 1;
        }
        n
    }

    /// What to do at `now_ns` for a packet due at `deadline_ns`.
    pub fn step(&self, deadline_ns: u64, now_ns: u64) -> Step {
        if deadline_ns <= now_ns {
            return Step::Go;
        }
        match self.wait {
            WaitStrategy::Sleep => Step::Sleep(deadline_ns),
            WaitStrategy::Spin => Step::Spin(deadline_ns),
            WaitStrategy::Hybrid { spin_ns } => {
                let margin = self.margin.map_or(spin_ns, |m| m.margin_ns());
                let wake = deadline_ns.saturating_sub(margin);
                if wake > now_ns {
                    Step::Sleep(wake)
                } else {
                    Step::Spin(deadline_ns)
                }
            }
        }
    }

    /// A sleep that began at `from_ns`, asked to end at `asked_ns` ahead of
    /// `deadline_ns`, ended at `woke_ns`.
    pub fn slept(&mut self, from_ns: u64, asked_ns: u64, woke_ns: u64, deadline_ns: u64) {
        self.stats.sleeps += 1;
        let over = woke_ns.saturating_sub(asked_ns);
        self.stats.oversleep_max_ns = self.stats.oversleep_max_ns.max(over);
        if woke_ns > deadline_ns {
            self.stats.sleeps_past_deadline += 1;
        }
        self.cpu.slept(woke_ns.saturating_sub(from_ns));
        if let Some(m) = self.margin.as_mut() {
            m.observe(asked_ns, woke_ns);
        }
        if let Some(m) = self.margin_ns() {
            self.stats.margin_max_ns = self.stats.margin_max_ns.max(m);
        }
    }

    /// Whether the contention check wants the thread's CPU time at `now_ns`
    /// (only when the margin is learned).
    pub fn cpu_due(&self, now_ns: u64) -> bool {
        self.margin.is_some() && self.cpu.due(now_ns)
    }

    /// The thread's CPU time `cpu_ns` at `now_ns` (see [`Pacer::cpu_due`]).
    pub fn cpu_sample(&mut self, now_ns: u64, cpu_ns: u64) {
        if let Some(m) = self.margin.as_mut() {
            if self.cpu.sample(now_ns, cpu_ns, m) && m.contended() {
                self.stats.contended_windows += 1;
                self.stats.margin_max_ns = self.stats.margin_max_ns.max(m.margin_ns());
            }
        }
    }

    /// A send call carrying `packets` took `cost_ns`.
    pub fn sent(&mut self, packets: usize, cost_ns: u64) {
        self.cost.observe(packets, cost_ns);
    }

    /// The packet with ideal offset `ideal_ns` left at `left_ns`.
    pub fn departed(&mut self, ideal_ns: u64, left_ns: u64) {
        let actual = left_ns.saturating_sub(self.origin_ns);
        let target = self.catch_up.target(ideal_ns).min(actual.max(ideal_ns));
        self.catch_up.departed(ideal_ns, target, actual);
    }

    /// The first packet (ideal offset `ideal_ns`) has left, its send call
    /// returning at `returned_ns`. With anchoring, moves the origin so that
    /// packet was on time, unless the move is beyond the limit. Returns the
    /// move. Later calls do nothing.
    pub fn first_departure(&mut self, ideal_ns: u64, returned_ns: u64) -> Option<u64> {
        if !std::mem::take(&mut self.anchor_pending) {
            return None;
        }
        let lag = returned_ns.saturating_sub(self.origin_ns + ideal_ns);
        if self.anchor_max_lag_ns.is_some_and(|m| lag >= m) {
            return None;
        }
        self.origin_ns += lag;
        self.catch_up.restart_at(ideal_ns);
        self.stats.anchor_lag_ns = Some(lag);
        Some(lag)
    }

    /// The hybrid margin in force (None for sleep or spin).
    pub fn margin_ns(&self) -> Option<u64> {
        match self.wait {
            WaitStrategy::Hybrid { spin_ns } => {
                Some(self.margin.map_or(spin_ns, |m| m.margin_ns()))
            }
            _ => None,
        }
    }

    /// Whether the last CPU windows showed a CPU shared with busy work.
    pub fn contended(&self) -> bool {
        self.margin.is_some_and(|m| m.contended())
    }

    /// Total shift applied by `rebase` so far.
    pub fn rebase_shift_ns(&self) -> u64 {
        self.catch_up.shift_ns()
    }

    /// How the pacer waited so far.
    pub fn stats(&self) -> PaceStats {
        self.stats
    }
}

#[cfg(test)]
mod tests;

//! Pacing on absolute deadlines.
//!
//! Packet `k` departs at `start + Σ interval[0..k]`, an offset kept as an
//! exact integer from the run's start, so a late wake-up never shifts later
//! packets (no accumulated drift). The [`Pacer`] decides, given the current
//! time, whether to wait (and how: sleep, spin, or sleep then spin) or to
//! send, and how many due packets to send in one batch when the sender is
//! behind — e.g. when one send call costs more than one interval.
//!
//! When the sender finds itself late (a stall, a late wake-up), a
//! [`LatePolicy`] decides how it catches up: `burst` sends everything due at
//! once (the default of [`Pacer::new`]); `spread` shortens the following gaps
//! a little at a time, so one stall does not also turn the next gaps into
//! back-to-back departures; packets that are late and whose target is nearer
//! than one send call still join the batch, so a sender whose send call
//! costs more than the interval batches instead of falling behind.
//!
//! All times are nanoseconds on one monotonic clock, passed in by the caller.

use crate::replay::{catch_up_deadline, LatePolicy, Pacer as LatePacer};

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

/// Learns how late this machine's sleeps wake up and sets the hybrid spin
/// margin from it, so a wake-up nearly always lands before the deadline
/// while the sender sleeps (instead of spinning) for as much of each gap as
/// the machine allows.
///
/// The estimate is a decaying peak of observed oversleep (wake time minus
/// the time asked for): `peak = max(oversleep, peak × 0.999)`, a half-life
/// of about 700 sleeps, and the margin is `1.5 × peak + 5 µs`, clamped to
/// `[floor, ceil]`. Oversleeps beyond the ceiling are preemptions that no
/// spin margin can hide (a spinning thread is preempted as well); they are
/// left to the lateness statistics.
///
/// On a VM a sleeping vCPU halts, and waking it is up to the host: measured
/// here, 0.1% of 1 ms sleeps woke more than 1.6 ms late (p99 83 µs, max
/// 3.6 ms), while a thread that keeps spinning never pays that. So the
/// learned margin starts at [`SpinMargin::DEFAULT_INITIAL_NS`] (2 ms, above
/// that p99.9) and may grow to 5 ms: at 500 pps and more the sender spins
/// through every gap, below that it sleeps for all but the margin, and
/// sleeps that wake early enough let the margin decay towards what this
/// machine needs.
#[derive(Debug, Clone, Copy)]
pub struct SpinMargin {
    peak_ns: f64,
    floor_ns: u64,
    ceil_ns: u64,
    /// The CPU is shared with busy work (see
    /// [`SpinMargin::observe_cpu_loss`]), for at least `hold` more windows.
    contended: bool,
    hold: u32,
}

impl SpinMargin {
    /// Below ~50 µs a single timer hiccup makes a packet late; the floor
    /// keeps the margin robust and lets learning only raise it.
    pub const DEFAULT_FLOOR_NS: u64 = 50_000;
    pub const DEFAULT_CEIL_NS: u64 = 5_000_000;
    /// Where a learned margin starts (see the type's docs).
    pub const DEFAULT_INITIAL_NS: u64 = 2_000_000;
    /// The margin while the CPU is contended.
    pub const CONTENDED_NS: u64 = 100_000;
    const DECAY: f64 = 0.999;

    /// Starts as if `initial_ns` were the margin already needed.
    pub fn new(initial_ns: u64, floor_ns: u64, ceil_ns: u64) -> Self {
        SpinMargin {
            peak_ns: (initial_ns.saturating_sub(5_000)) as f64 / 1.5,
            floor_ns,
            ceil_ns: ceil_ns.max(floor_ns),
            contended: false,
            hold: 0,
        }
    }

    /// A sleep asked to end at `target_ns` ended at `woke_ns`.
    pub fn observe(&mut self, target_ns: u64, woke_ns: u64) {
        let over = woke_ns.saturating_sub(target_ns);
        if over > self.ceil_ns {
            // A preemption, not timer latency: spinning would not have helped.
            return;
        }
        self.peak_ns = (over as f64).max(self.peak_ns * Self::DECAY);
    }

    /// Over the last `window_ns` the sender was neither running nor asleep
    /// for `lost_ns`: it was runnable and waiting for its CPU. A thread
    /// spinning on a CPU shared with busy work is preempted for whole
    /// scheduler slices (measured: at 10 kpps beside a busy loop the sender
    /// never caught up), while a thread that sleeps gets wake-up preference;
    /// but a light neighbour (a receiver waking a thousand times a second)
    /// takes a few µs each time and spinning still wins. So losing more
    /// than 10 % of a window makes the margin [`SpinMargin::CONTENDED_NS`]
    /// for at least five more windows, and then until a window loses less
    /// than 2 %.
    pub fn observe_cpu_loss(&mut self, lost_ns: u64, window_ns: u64) {
        if window_ns == 0 {
            return;
        }
        let f = lost_ns as f64 / window_ns as f64;
        if self.contended {
            if self.hold > 0 {
                self.hold -= 1;
            } else if f < 0.02 {
                self.contended = false;
            }
        } else if f > 0.10 {
            self.contended = true;
            self.hold = 5;
        }
    }

    /// Whether the last windows showed a CPU shared with other work.
    pub fn contended(&self) -> bool {
        self.contended
    }

    pub fn margin_ns(&self) -> u64 {
        if self.contended {
            return Self::CONTENDED_NS.max(self.floor_ns);
        }
        ((1.5 * self.peak_ns) as u64 + 5_000).clamp(self.floor_ns, self.ceil_ns)
    }
}

/// What the sender should do now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// Send this many due packets now (≥ 1), in one batch.
    Send { count: usize },
    /// Sleep until this absolute time, then ask again.
    SleepUntil(u64),
    /// Spin until this absolute time, then ask again.
    SpinUntil(u64),
    /// The schedule is finished (count or duration reached).
    Done,
}

/// Limits of a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Limits {
    /// Stop after this many packets.
    pub count: Option<u64>,
    /// Stop scheduling packets whose deadline is at or after this offset from the start.
    pub duration_ns: Option<u64>,
}

/// Deadline bookkeeping for one flow. Intervals come from the caller (a
/// value generator), one per packet, via [`Pacer::push_interval`].
#[derive(Debug, Clone)]
pub struct Pacer {
    start_ns: u64,
    strategy: WaitStrategy,
    limits: Limits,
    max_batch: usize,
    /// Offsets from `start_ns` of the scheduled packets not yet sent, in
    /// order; a small ring so `next_deadlines` can batch without allocating.
    pending: std::collections::VecDeque<u64>,
    /// Offset of the next packet to be scheduled, whole ns, plus the
    /// fraction of a ns carried over, so fractional intervals (1e9/3000 ns)
    /// accumulate without drift (a plain f64 sum drifts by tens of ns over
    /// millions of packets).
    next_offset: u64,
    next_frac: f64,
    scheduled: u64,
    sent: u64,
    exhausted: bool,
    /// The clock passed start + duration: schedule nothing more. This ends
    /// unpaced runs (interval 0), whose offsets never reach the duration.
    expired: bool,
    /// Catch-up when late: targets from ideal times and past departures.
    late: LatePacer,
    /// What one send call costs (a late packet whose target is nearer
    /// than this joins the batch).
    send_cost_ns: u64,
    /// The time of the poll that returned the batch being taken.
    batch_now_ns: u64,
}

impl Pacer {
    /// `start_ns` is the absolute time of the first departure.
    pub fn new(start_ns: u64, strategy: WaitStrategy, limits: Limits, max_batch: usize) -> Self {
        let max_batch = max_batch.max(1);
        Pacer {
            start_ns,
            strategy,
            limits,
            max_batch,
            pending: std::collections::VecDeque::with_capacity(max_batch + 1),
            next_offset: 0,
            next_frac: 0.0,
            scheduled: 0,
            sent: 0,
            exhausted: false,
            expired: false,
            late: LatePacer::new(LatePolicy::Burst),
            send_cost_ns: 0,
            batch_now_ns: 0,
        }
    }

    /// Catches up with `policy` when late (default: burst).
    pub fn with_late_policy(mut self, policy: LatePolicy) -> Self {
        self.late = LatePacer::new(policy);
        self
    }

    /// The measured cost of one send call (see the module docs).
    pub fn set_send_cost(&mut self, ns: u64) {
        self.send_cost_ns = ns;
    }

    pub fn start_ns(&self) -> u64 {
        self.start_ns
    }

    /// Moves the schedule's origin `delta_ns` later: every packet not yet sent keeps its
    /// offset from the new start (and the duration limit counts from it). The sender
    /// calls this once, when the first packet has left, so the schedule runs from the
    /// first departure: a cold first send call can take tens to hundreds of µs, and
    /// anchored to the planned start the second packet would leave that much late and the
    /// first gap would be short.
    pub fn delay_start(&mut self, delta_ns: u64) {
        self.start_ns = self.start_ns.saturating_add(delta_ns);
        self.late.origin_moved(delta_ns);
    }

    /// Changes the hybrid strategy's spin margin (see [`SpinMargin`]);
    /// no effect on the other strategies.
    pub fn set_spin_margin(&mut self, spin_ns: u64) {
        if let WaitStrategy::Hybrid { .. } = self.strategy {
            self.strategy = WaitStrategy::Hybrid { spin_ns };
        }
    }

    /// Packets handed out by [`Pacer::take`] so far.
    pub fn sent(&self) -> u64 {
        self.sent
    }

    /// Whether the pacer wants another interval: true while fewer than
    /// `max_batch` packets are scheduled ahead and the limits allow more.
    pub fn wants_interval(&self) -> bool {
        !self.exhausted && self.pending.len() < self.max_batch && self.within_limits()
    }

    fn within_limits(&self) -> bool {
        if self.expired {
            return false;
        }
        if let Some(c) = self.limits.count {
            if self.scheduled >= c {
                return false;
            }
        }
        if let Some(d) = self.limits.duration_ns {
            if self.next_offset >= d {
                return false;
            }
        }
        true
    }

    /// Schedules the next packet at the current offset, then moves the
    /// offset on by `interval_ns` (the gap to the packet after it).
    pub fn push_interval(&mut self, interval_ns: f64) {
        if !self.within_limits() {
            return;
        }
        let at = self.next_offset + (self.next_frac >= 0.5) as u64;
        self.pending.push_back(at);
        self.scheduled += 1;
        let iv = if interval_ns.is_finite() {
            interval_ns.max(0.0)
        } else {
            0.0
        };
        let whole = iv.trunc();
        self.next_frac += iv - whole;
        let carry = self.next_frac.trunc();
        self.next_frac -= carry;
        self.next_offset = self
            .next_offset
            .saturating_add(whole as u64)
            .saturating_add(carry as u64);
    }

    /// The value source has no more values: finish after what is scheduled.
    pub fn exhaust(&mut self) {
        self.exhausted = true;
    }

    /// Whether no further packet will be scheduled and none is pending.
    pub fn is_done(&self) -> bool {
        self.pending.is_empty() && (self.exhausted || !self.within_limits())
    }

    /// The absolute deadline of the next pending packet.
    pub fn next_deadline(&self) -> Option<u64> {
        self.pending.front().map(|o| self.start_ns + o)
    }

    /// Decides what to do at `now_ns`. Call [`Pacer::push_interval`] while
    /// [`Pacer::wants_interval`] first, so due packets can be batched.
    pub fn poll(&mut self, now_ns: u64) -> Action {
        if let Some(d) = self.limits.duration_ns {
            if now_ns >= self.start_ns.saturating_add(d) {
                self.expired = true;
            }
        }
        let Some(first) = self.next_deadline() else {
            return Action::Done;
        };
        let deadline = catch_up_deadline(first, self.late.target(first), now_ns, self.send_cost_ns);
        if deadline <= now_ns {
            // Batch the packets that would leave now too: due on their
            // ideal time and not held back by the catch-up policy.
            let mut sim = self.late.clone();
            sim.departed(first, deadline, now_ns);
            let mut due = 1;
            for &o in self.pending.iter().take(self.max_batch).skip(1) {
                let ideal = self.start_ns + o;
                if ideal > now_ns {
                    break;
                }
                let t = catch_up_deadline(ideal, sim.target(ideal), now_ns, self.send_cost_ns);
                if t > now_ns {
                    break;
                }
                sim.departed(ideal, t, now_ns);
                due += 1;
            }
            self.batch_now_ns = now_ns;
            return Action::Send { count: due };
        }
        match self.strategy {
            WaitStrategy::Sleep => Action::SleepUntil(deadline),
            WaitStrategy::Spin => Action::SpinUntil(deadline),
            WaitStrategy::Hybrid { spin_ns } => {
                let wake = deadline.saturating_sub(spin_ns);
                if wake > now_ns {
                    Action::SleepUntil(wake)
                } else {
                    Action::SpinUntil(deadline)
                }
            }
        }
    }

    /// Removes the next `count` packets from the schedule and returns their
    /// scheduled absolute times through `out` (cleared first).
    pub fn take(&mut self, count: usize, out: &mut Vec<u64>) {
        out.clear();
        for _ in 0..count {
            match self.pending.pop_front() {
                Some(o) => {
                    let ideal = self.start_ns + o;
                    let t = self.late.target(ideal).min(self.batch_now_ns.max(ideal));
                    self.late.departed(ideal, t, self.batch_now_ns.max(ideal));
                    out.push(ideal);
                }
                None => break,
            }
        }
        self.sent += out.len() as u64;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delayed_start_keeps_offsets_of_unsent_packets() {
        let lim = Limits {
            count: Some(3),
            duration_ns: None,
        };
        let mut p = Pacer::new(1_000, WaitStrategy::Spin, lim, 4);
        while p.wants_interval() {
            p.push_interval(100.0);
        }
        let mut out = Vec::new();
        assert_eq!(p.poll(1_000), Action::Send { count: 1 });
        p.take(1, &mut out);
        assert_eq!(out, [1_000]);
        // The first send returned 37 ns after its deadline.
        p.delay_start(37);
        assert_eq!(p.next_deadline(), Some(1_137));
        assert_eq!(p.poll(1_136), Action::SpinUntil(1_137));
        assert_eq!(p.poll(1_237), Action::Send { count: 2 });
        p.take(2, &mut out);
        assert_eq!(out, [1_137, 1_237]);
    }

    /// Runs a pacer against a virtual clock where each send call costs
    /// `base + per_pkt * n` ns and each wait lands `wake_late` ns after its
    /// target; returns (batch sizes, per-packet (scheduled, actual)).
    fn simulate(
        interval: u64,
        count: u64,
        strategy: WaitStrategy,
        base: u64,
        per_pkt: u64,
        wake_late: u64,
    ) -> (Vec<usize>, Vec<(u64, u64)>) {
        let start = 1_000_000;
        let mut p = Pacer::new(
            start,
            strategy,
            Limits {
                count: Some(count),
                duration_ns: None,
            },
            64,
        );
        let mut now = 0u64;
        let mut batches = vec![];
        let mut sent = vec![];
        let mut due = Vec::new();
        for _ in 0..10 * count + 100 {
            while p.wants_interval() {
                p.push_interval(interval as f64);
            }
            match p.poll(now) {
                Action::Done => break,
                Action::SleepUntil(t) => now = t + wake_late,
                Action::SpinUntil(t) => now = t,
                Action::Send { count } => {
                    p.take(count, &mut due);
                    batches.push(due.len());
                    for &d in &due {
                        sent.push((d, now));
                    }
                    now += base + per_pkt * count as u64;
                }
            }
        }
        (batches, sent)
    }

    #[test]
    fn deadlines_are_absolute_no_drift() {
        // Sleep wakes 30 µs late every time; deadlines must not shift.
        let (_, sent) = simulate(1_000_000, 100, WaitStrategy::Sleep, 2_000, 0, 30_000);
        assert_eq!(sent.len(), 100);
        for (k, (sched, actual)) in sent.iter().enumerate() {
            assert_eq!(*sched, 1_000_000 + k as u64 * 1_000_000);
            assert_eq!(actual - sched, 30_000);
        }
    }

    #[test]
    fn hybrid_spins_to_exact_deadline() {
        let (_, sent) = simulate(
            1_000_000,
            50,
            WaitStrategy::Hybrid { spin_ns: 100_000 },
            2_000,
            0,
            30_000,
        );
        assert!(sent.iter().all(|(s, a)| s == a));
    }

    #[test]
    fn batches_when_interval_shorter_than_send_cost() {
        // 1 µs interval, a send call costs 5 µs + 100 ns per packet.
        let (batches, sent) = simulate(1_000, 10_000, WaitStrategy::Spin, 5_000, 100, 0);
        assert_eq!(sent.len(), 10_000);
        assert!(batches.iter().any(|&b| b > 1), "{batches:?}");
        // Batching keeps up: lateness stays bounded by ~one batch cost.
        let max_late = sent.iter().map(|(s, a)| a - s).max().unwrap();
        assert!(max_late < 20_000, "max lateness {max_late}");
        // And the run ends close to its schedule.
        let (s, a) = sent.last().unwrap();
        assert!(a - s < 20_000);
        // Sequence order is preserved.
        assert!(sent.windows(2).all(|w| w[0].0 < w[1].0));
    }

    #[test]
    fn never_sends_before_deadline() {
        let (_, sent) = simulate(
            3_333,
            3_000,
            WaitStrategy::Hybrid { spin_ns: 10_000 },
            1_500,
            50,
            7_000,
        );
        assert!(sent.iter().all(|(s, a)| a >= s));
    }

    #[test]
    fn spin_margin_follows_oversleep_and_decays() {
        let mut m = SpinMargin::new(100_000, 5_000, 500_000);
        assert_eq!(m.margin_ns(), 100_000);
        // A quiet machine: wake-ups 2 µs late. The margin decays towards
        // 1.5 × 2 µs + 5 µs = 8 µs.
        for _ in 0..20_000 {
            m.observe(1_000, 3_000);
        }
        assert_eq!(m.margin_ns(), 8_000);
        // One 60 µs oversleep raises it at once ...
        m.observe(0, 60_000);
        assert_eq!(m.margin_ns(), 95_000);
        // ... a 10 ms preemption is not timer latency and is ignored ...
        m.observe(0, 10_000_000);
        assert_eq!(m.margin_ns(), 95_000);
        // ... one just under the ceiling counts, clamped ...
        m.observe(0, 400_000);
        assert_eq!(m.margin_ns(), 500_000);
        // ... and quiet sleeps bring it back down.
        for _ in 0..20_000 {
            m.observe(1_000, 3_000);
        }
        assert_eq!(m.margin_ns(), 8_000);
        let mut p = Pacer::new(
            0,
            WaitStrategy::Hybrid { spin_ns: 100 },
            Limits::default(),
            1,
        );
        p.set_spin_margin(7);
        p.push_interval(1000.0);
        p.push_interval(1000.0);
        let mut out = vec![];
        p.take(1, &mut out);
        assert_eq!(p.poll(0), Action::SleepUntil(993));
    }

    #[test]
    fn a_busy_neighbour_makes_the_margin_small_for_a_while() {
        let mut m = SpinMargin::new(2_000_000, 50_000, 5_000_000);
        let w = 200_000_000;
        assert_eq!(m.margin_ns(), 2_000_000);
        // A light neighbour: 2 % of the window lost; keep spinning.
        m.observe_cpu_loss(w / 50, w);
        assert!(!m.contended());
        assert_eq!(m.margin_ns(), 2_000_000);
        // A busy loop on the same CPU: half the window lost.
        m.observe_cpu_loss(w / 2, w);
        assert!(m.contended());
        assert_eq!(m.margin_ns(), SpinMargin::CONTENDED_NS);
        // Sleeping loses little, but the state holds for five windows ...
        for _ in 0..5 {
            m.observe_cpu_loss(0, w);
            assert!(m.contended());
        }
        // ... then needs a window under 2 % to end.
        m.observe_cpu_loss(w / 20, w);
        assert!(m.contended());
        m.observe_cpu_loss(w / 100, w);
        assert!(!m.contended());
        assert_eq!(m.margin_ns(), 2_000_000);
        m.observe_cpu_loss(5, 0);
        assert!(!m.contended());
    }

    #[test]
    fn unpaced_run_ends_by_the_clock() {
        let mut p = Pacer::new(
            0,
            WaitStrategy::Spin,
            Limits {
                count: None,
                duration_ns: Some(1_000),
            },
            64,
        );
        let mut out = vec![];
        let mut now = 0;
        let mut sent = 0;
        for _ in 0..1000 {
            while p.wants_interval() {
                p.push_interval(0.0);
            }
            match p.poll(now) {
                Action::Send { count } => {
                    assert_eq!(count, 64);
                    p.take(count, &mut out);
                    sent += out.len();
                    now += 100;
                }
                Action::Done => break,
                other => panic!("{other:?}"),
            }
        }
        assert!(p.is_done());
        // 10 batches before the clock passed 1 µs, then the pending batch drains.
        assert_eq!(sent, 11 * 64);
    }

    #[test]
    fn fractional_intervals_do_not_drift() {
        // 3 kpps: 333333.33 ns. Rounding each interval would lose 1 ns per
        // packet (3 ms per million); the schedule must not.
        let mut p = Pacer::new(0, WaitStrategy::Spin, Limits::default(), 1);
        let mut out = vec![];
        let mut last = 0;
        for _ in 0..=3_000_000u64 {
            p.push_interval(1e9 / 3000.0);
            p.take(1, &mut out);
            last = out[0];
        }
        assert_eq!(last, 1_000_000_000_000);
    }

    #[test]
    fn duration_limit_and_exhaustion() {
        let mut p = Pacer::new(
            0,
            WaitStrategy::Spin,
            Limits {
                count: None,
                duration_ns: Some(10_000),
            },
            8,
        );
        let mut n = 0;
        let mut out = vec![];
        while !p.is_done() {
            while p.wants_interval() {
                p.push_interval(1_000.0);
            }
            let now = p.next_deadline().unwrap_or(0);
            if let Action::Send { count } = p.poll(now) {
                p.take(count, &mut out);
                n += out.len();
            }
        }
        assert_eq!(n, 10); // offsets 0..9000
        let mut p = Pacer::new(0, WaitStrategy::Spin, Limits::default(), 8);
        p.push_interval(5.0);
        p.exhaust();
        assert!(!p.wants_interval());
        assert_eq!(p.poll(0), Action::Send { count: 1 });
        p.take(1, &mut out);
        assert!(p.is_done());
        assert_eq!(p.poll(0), Action::Done);
    }

    /// Runs a spinning pacer on a virtual clock: every send call costs
    /// `cost`, and the thread is preempted for `stall` while it waits for
    /// packet `stall_at`. Returns each packet's departure time.
    fn run_virtual(
        policy: LatePolicy,
        iv: f64,
        n: u64,
        cost: u64,
        stall_at: usize,
        stall: u64,
    ) -> Vec<u64> {
        let lim = Limits {
            count: Some(n),
            duration_ns: None,
        };
        let mut p = Pacer::new(0, WaitStrategy::Spin, lim, 64).with_late_policy(policy);
        p.set_send_cost(cost);
        let (mut now, mut out, mut dep) = (0u64, vec![], vec![]);
        let mut stalled = false;
        for _ in 0..10 * n {
            while p.wants_interval() {
                p.push_interval(iv);
            }
            match p.poll(now) {
                Action::Send { count } => {
                    p.take(count, &mut out);
                    dep.extend(std::iter::repeat_n(now, out.len()));
                    now += cost;
                }
                Action::SpinUntil(t) | Action::SleepUntil(t) => {
                    now = now.max(t);
                    if dep.len() == stall_at && !stalled {
                        stalled = true;
                        now += stall;
                    }
                }
                Action::Done => break,
            }
        }
        dep
    }

    const SPREAD: LatePolicy = LatePolicy::Spread {
        factor: 0.5,
        max_shrink_ns: 2_000,
        horizon: 8,
    };

    #[test]
    fn spread_catches_up_with_short_gaps_where_burst_sends_back_to_back() {
        // 10 µs interval, 2 µs send calls, an 8 µs stall before packet 10.
        let burst = run_virtual(LatePolicy::Burst, 10_000.0, 40, 2_000, 10, 8_000);
        let spread = run_virtual(SPREAD, 10_000.0, 40, 2_000, 10, 8_000);
        assert_eq!(burst[10] - burst[9], 18_000);
        assert_eq!(
            burst[11] - burst[10],
            2_000,
            "burst: the next probe follows at once"
        );
        assert_eq!(spread[10] - spread[9], 18_000);
        for k in 11..40 {
            let gap = spread[k] - spread[k - 1];
            assert!((8_000..=10_000).contains(&gap), "gap {k}: {gap}");
        }
        assert_eq!(spread[14], 140_000, "rejoined the schedule 4 gaps later");
        assert_eq!(spread[39], burst[39]);
    }

    #[test]
    fn spread_still_batches_when_a_send_call_costs_more_than_the_interval() {
        // 1 µs interval, 3 µs send calls: catch-up targets are nearer than
        // one call, so the late packets join the batch and the run keeps up.
        let dep = run_virtual(SPREAD, 1_000.0, 1_000, 3_000, usize::MAX, 0);
        assert_eq!(dep.len(), 1_000);
        let last = *dep.last().unwrap();
        assert!(
            last < 1_000 * 1_000 + 10_000,
            "fell behind: last departure {last}"
        );
    }

    #[test]
    fn a_delayed_start_is_not_taken_for_lateness() {
        let lim = Limits {
            count: Some(3),
            duration_ns: None,
        };
        let mut p = Pacer::new(0, WaitStrategy::Spin, lim, 4).with_late_policy(SPREAD);
        while p.wants_interval() {
            p.push_interval(10_000.0);
        }
        let mut out = vec![];
        assert_eq!(p.poll(0), Action::Send { count: 1 });
        p.take(1, &mut out);
        p.delay_start(50_000);
        // The second packet is due one interval after the moved origin.
        assert_eq!(p.poll(50_000), Action::SpinUntil(60_000));
    }
}

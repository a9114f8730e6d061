//! How long before a deadline to stop sleeping and spin, learned from
//! how late sleeps wake up and from whether the CPU is shared.

/// Bounds of a learned spin margin.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MarginBounds {
    /// Where learning starts.
    pub initial_ns: u64,
    /// Least margin.
    pub floor_ns: u64,
    /// Largest margin; larger oversleeps are preemptions, not timer latency.
    pub ceil_ns: u64,
}

impl MarginBounds {
    /// The sender's: from 2 ms, within 50 µs .. 5 ms.
    pub const SEND: MarginBounds = MarginBounds {
        initial_ns: SpinMargin::DEFAULT_INITIAL_NS,
        floor_ns: SpinMargin::DEFAULT_FLOOR_NS,
        ceil_ns: SpinMargin::DEFAULT_CEIL_NS,
    };
    /// Replay's: within 1 ms .. 2 ms, from 1 ms. Wider at the bottom than
    /// the sender's because a trace's gaps are irregular: gaps shorter than
    /// the floor are spun through, as tcpreplay spins through all of them.
    pub const REPLAY: MarginBounds = MarginBounds {
        initial_ns: 1_000_000,
        floor_ns: 1_000_000,
        ceil_ns: 2_000_000,
    };
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
/// On a VM a sleeping vCPU halts, and waking it is up to the host: a small
/// share of sleeps wake milliseconds late, while a thread that keeps
/// spinning never pays that. So the sender's learned margin starts at
/// [`SpinMargin::DEFAULT_INITIAL_NS`] and may grow to
/// [`SpinMargin::DEFAULT_CEIL_NS`]: dense schedules spin through every gap,
/// sparse ones sleep for all but the margin, and sleeps that wake early
/// enough let the margin decay towards what the machine needs.
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
    /// scheduler slices, while a thread that sleeps gets wake-up preference;
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

impl SpinMargin {
    /// A margin learning within `b`.
    pub fn within(b: MarginBounds) -> Self {
        SpinMargin::new(b.initial_ns, b.floor_ns, b.ceil_ns)
    }
}

/// CPU accounting for the contention check: every [`CpuWindow::WINDOW_NS`]
/// the time the thread neither ran nor slept (it was runnable, waiting for
/// its CPU) goes to [`SpinMargin::observe_cpu_loss`]. Sans-IO: the caller
/// passes the clock and the thread's CPU time.
#[derive(Debug, Clone, Copy, Default)]
pub struct CpuWindow {
    /// Window start (monotonic) and the thread's CPU time then; None until
    /// the first sample.
    start: Option<(u64, u64)>,
    slept_ns: u64,
}

impl CpuWindow {
    /// Length of one window.
    pub const WINDOW_NS: u64 = 200_000_000;

    /// Whether a CPU-time sample is due at `now_ns` (the first one, or a
    /// window has passed).
    pub fn due(&self, now_ns: u64) -> bool {
        self.start
            .is_none_or(|(s, _)| now_ns.saturating_sub(s) >= Self::WINDOW_NS)
    }

    /// The thread slept `ns` (sleep calls, from the poll's clock read to the wake-up).
    pub fn slept(&mut self, ns: u64) {
        self.slept_ns += ns;
    }

    /// A sample at `now_ns` with the thread's CPU time `cpu_ns`: closes the
    /// window into `m` when it is due. Returns whether a window closed.
    pub fn sample(&mut self, now_ns: u64, cpu_ns: u64, m: &mut SpinMargin) -> bool {
        let closed = match self.start {
            Some((s, c)) => {
                let window = now_ns.saturating_sub(s);
                if window < Self::WINDOW_NS {
                    return false;
                }
                let ran = cpu_ns.saturating_sub(c);
                m.observe_cpu_loss(window.saturating_sub(ran + self.slept_ns), window);
                true
            }
            None => false,
        };
        self.start = Some((now_ns, cpu_ns));
        self.slept_ns = 0;
        closed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
}

//! Arrival-rate forecaster of the hybrid blocking/polling receive loop.
//!
//! This is the forecaster of the DMA-ring capture thesis (§5.3.4, Fig. 5.9), kept
//! sans-IO: the caller passes the monotonic time of each processing cycle and the number of
//! packets that cycle handled, and gets back the wait mode to use until the next cycle.
//!
//! # The estimate (Eqn. 5.1–5.3 of the thesis)
//!
//! A cycle that handled `n > 0` packets is *active*. With `Δ` the time since the previous
//! active cycle, the current inter-packet period is `T_curr = Δ / n` (or `Δ` when `n = 0`),
//! and the forecast is the weighted average
//!
//! ```text
//! T_pred = α · T_curr + (1 − α) · T_prev
//! α = α1 when n < n1,  α2 when n1 ≤ n < n2,  1 when n ≥ n2
//! ```
//!
//! so a cycle that saw many packets is trusted on its own, while a few closely spaced
//! packets only nudge the estimate (a burst does not flip the mode). Idle cycles (`n = 0`)
//! feed the growing time since the last active cycle, so the estimate rises once traffic
//! stops.
//!
//! # Hysteresis
//!
//! The source switches at one threshold equal to the poll period. Here there are two: the
//! loop enters [`WaitMode::Poll`] when `T_pred < enter_poll_ns` and returns to
//! [`WaitMode::Block`] only when `T_pred > leave_poll_ns` (`leave ≥ enter`), so a rate near
//! the threshold does not thrash. Every change is counted in [`Forecaster::switches`].
//!
//! ```
//! use wirelab_core::forecast::{Forecaster, ForecastParams, WaitMode};
//! let mut f = Forecaster::new(ForecastParams::for_poll_period(1_000_000), 0);
//! // 100 packets per 1 ms cycle: 10 µs apart, well under the 1 ms poll period.
//! let mut t = 0;
//! for _ in 0..5 { t += 1_000_000; f.on_cycle(t, 100); }
//! assert_eq!(f.mode(), WaitMode::Poll);
//! ```
#![forbid(unsafe_code)]

/// How the receive loop waits until its next cycle.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WaitMode {
    /// Sleep until the kernel signals data (the interrupt-driven mode of the thesis).
    Block,
    /// Sleep for a fixed poll period, then look (the timer-paced mode of the thesis).
    Poll,
}

impl WaitMode {
    /// "block" or "poll".
    pub fn as_str(self) -> &'static str {
        match self {
            WaitMode::Block => "block",
            WaitMode::Poll => "poll",
        }
    }
}

/// Settable parameters of the forecaster (§5.3.5 of the DMA-ring capture thesis).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ForecastParams {
    /// Weight of the current period when fewer than `n1` packets were seen.
    pub alpha1: f64,
    /// Weight when `n1 ≤ n < n2` packets were seen.
    pub alpha2: f64,
    /// Below this many packets a cycle is a weak sample.
    pub n1: u64,
    /// From this many packets on a cycle alone is the forecast (α = 1).
    pub n2: u64,
    /// Enter polling when the forecast inter-packet period falls below this (ns).
    pub enter_poll_ns: f64,
    /// Leave polling when the forecast inter-packet period rises above this (ns).
    pub leave_poll_ns: f64,
}

impl ForecastParams {
    /// Defaults for a loop polling every `poll_period_ns`: poll when at least two packets
    /// are expected per period (`T_pred < P/2`), block again when fewer than one per two
    /// periods are (`T_pred > 2P`); α1 = 0.1, α2 = 0.5, n1 = 4, n2 = 32.
    pub fn for_poll_period(poll_period_ns: u64) -> Self {
        let p = poll_period_ns.max(1) as f64;
        ForecastParams {
            alpha1: 0.1,
            alpha2: 0.5,
            n1: 4,
            n2: 32,
            enter_poll_ns: p / 2.0,
            leave_poll_ns: p * 2.0,
        }
    }

    fn alpha(&self, n: u64) -> f64 {
        if n >= self.n2 {
            1.0
        } else if n >= self.n1 {
            self.alpha2
        } else {
            self.alpha1
        }
    }
}

/// The forecaster: feed it every cycle, read the mode it chose.
#[derive(Debug, Clone)]
pub struct Forecaster {
    p: ForecastParams,
    last_active_ns: u64,
    predicted_ns: f64,
    mode: WaitMode,
    switches: u64,
    cycles: u64,
    poll_cycles: u64,
}

impl Forecaster {
    /// Starts in [`WaitMode::Block`] at `now_ns` (monotonic), predicting a period of
    /// `leave_poll_ns` (that is, a quiet link).
    pub fn new(p: ForecastParams, now_ns: u64) -> Self {
        let leave = p.leave_poll_ns.max(p.enter_poll_ns);
        Forecaster {
            p: ForecastParams {
                leave_poll_ns: leave,
                ..p
            },
            last_active_ns: now_ns,
            predicted_ns: leave,
            mode: WaitMode::Block,
            switches: 0,
            cycles: 0,
            poll_cycles: 0,
        }
    }

    /// One processing cycle ended at `now_ns` after handling `packets` packets; returns the
    /// wait mode for the next wait (Fig. 5.9 of the thesis).
    pub fn on_cycle(&mut self, now_ns: u64, packets: u64) -> WaitMode {
        self.cycles += 1;
        if self.mode == WaitMode::Poll {
            self.poll_cycles += 1;
        }
        let elapsed = now_ns.saturating_sub(self.last_active_ns) as f64;
        let current = if packets > 0 {
            elapsed / packets as f64
        } else {
            elapsed
        };
        // An idle cycle soon after an active one says little: only let it raise the
        // estimate (the time since the last packet is a lower bound on the period).
        let alpha = self.p.alpha(packets);
        let pred = if packets == 0 && current < self.predicted_ns {
            self.predicted_ns
        } else {
            alpha * current + (1.0 - alpha) * self.predicted_ns
        };
        self.predicted_ns = pred;
        if packets > 0 {
            self.last_active_ns = now_ns;
        }
        let next = match self.mode {
            WaitMode::Block if pred < self.p.enter_poll_ns => WaitMode::Poll,
            WaitMode::Poll if pred > self.p.leave_poll_ns => WaitMode::Block,
            m => m,
        };
        if next != self.mode {
            self.switches += 1;
            self.mode = next;
        }
        next
    }

    /// The current mode.
    pub fn mode(&self) -> WaitMode {
        self.mode
    }

    /// The forecast inter-packet period (ns).
    pub fn predicted_period_ns(&self) -> f64 {
        self.predicted_ns
    }

    /// Mode changes so far.
    pub fn switches(&self) -> u64 {
        self.switches
    }

    /// Cycles seen so far, and how many of them ran in polling mode.
    pub fn cycles(&self) -> (u64, u64) {
        (self.cycles, self.poll_cycles)
    }

    /// The parameters in use.
    pub fn params(&self) -> &ForecastParams {
        &self.p
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    /// Drives a forecaster with a virtual clock: a cycle every `cycle_ns`, `per_cycle`
    /// packets in each, for `cycles` cycles. Returns the final time.
    fn drive(f: &mut Forecaster, mut t: u64, cycle_ns: u64, per_cycle: u64, cycles: u64) -> u64 {
        for _ in 0..cycles {
            t += cycle_ns;
            f.on_cycle(t, per_cycle);
        }
        t
    }

    #[test]
    fn starts_blocking_and_stays_blocking_at_low_rate() {
        let mut f = Forecaster::new(ForecastParams::for_poll_period(MS), 0);
        assert_eq!(f.mode(), WaitMode::Block);
        // 100 pps: one packet per 10 ms wake-up.
        drive(&mut f, 0, 10 * MS, 1, 1000);
        assert_eq!(f.mode(), WaitMode::Block);
        assert_eq!(f.switches(), 0);
    }

    #[test]
    fn switches_to_poll_at_high_rate_and_back_when_quiet() {
        let mut f = Forecaster::new(ForecastParams::for_poll_period(MS), 0);
        // 100 kpps seen as 100 packets per 1 ms cycle: α = 1 from n2 on, one cycle suffices.
        let t = drive(&mut f, 0, MS, 100, 1);
        assert_eq!(f.mode(), WaitMode::Poll);
        assert_eq!(f.switches(), 1);
        assert!((f.predicted_period_ns() - 10_000.0).abs() < 1.0);
        // Traffic stops: idle poll cycles every 1 ms raise the estimate past 2 ms.
        let t = drive(&mut f, t, MS, 0, 1);
        assert_eq!(f.mode(), WaitMode::Poll, "one idle cycle is not enough");
        drive(&mut f, t, MS, 0, 200);
        assert_eq!(f.mode(), WaitMode::Block);
        assert_eq!(f.switches(), 2);
    }

    #[test]
    fn a_short_burst_does_not_flip_the_mode() {
        let mut f = Forecaster::new(ForecastParams::for_poll_period(MS), 0);
        let mut t = drive(&mut f, 0, 20 * MS, 1, 50);
        // Three packets 10 µs apart, seen in one cycle: n < n1, α1 = 0.1.
        t += 30_000;
        f.on_cycle(t, 3);
        assert_eq!(f.mode(), WaitMode::Block);
        drive(&mut f, t, 20 * MS, 1, 50);
        assert_eq!(f.switches(), 0);
    }

    #[test]
    fn hysteresis_holds_the_mode_between_thresholds() {
        let p = ForecastParams::for_poll_period(MS); // enter < 0.5 ms, leave > 2 ms
        let mut f = Forecaster::new(p, 0);
        let t = drive(&mut f, 0, MS, 100, 3);
        assert_eq!(f.mode(), WaitMode::Poll);
        // 1 kpps: period 1 ms, between the thresholds: stays polling, whatever the sampling.
        let t = drive(&mut f, t, MS, 1, 500);
        assert_eq!(f.mode(), WaitMode::Poll);
        assert_eq!(f.switches(), 1);
        // The same rate, starting from blocking, stays blocking.
        let mut g = Forecaster::new(p, t);
        drive(&mut g, t, 10 * MS, 10, 500);
        assert_eq!(g.mode(), WaitMode::Block);
        assert_eq!(g.switches(), 0);
    }

    #[test]
    fn alternating_rate_switches_once_per_change() {
        let mut f = Forecaster::new(ForecastParams::for_poll_period(MS), 0);
        let mut t = 0;
        for round in 0..10 {
            // 1 s at 200 kpps, then 1 s of silence with blocking waits of 100 ms.
            t = drive(&mut f, t, MS, 200, 1000);
            assert_eq!(f.mode(), WaitMode::Poll, "round {round}");
            t = drive(&mut f, t, 100 * MS, 0, 10);
            assert_eq!(f.mode(), WaitMode::Block, "round {round}");
        }
        assert_eq!(f.switches(), 20);
        let (cycles, poll) = f.cycles();
        assert_eq!(cycles, 10 * 1010);
        // The first active cycle after a silence still spans the silence; the second switches.
        assert!(poll >= 10 * 998, "{poll}");
    }

    #[test]
    fn weights_follow_packet_count() {
        let p = ForecastParams::for_poll_period(MS);
        assert_eq!(p.alpha(0), p.alpha1);
        assert_eq!(p.alpha(3), p.alpha1);
        assert_eq!(p.alpha(4), p.alpha2);
        assert_eq!(p.alpha(31), p.alpha2);
        assert_eq!(p.alpha(32), 1.0);
        // One weak sample moves the estimate by α1 of the difference.
        let mut f = Forecaster::new(p, 0);
        let before = f.predicted_period_ns();
        f.on_cycle(1_000, 1);
        let want = 0.1 * 1_000.0 + 0.9 * before;
        assert!((f.predicted_period_ns() - want).abs() < 1e-6);
    }

    #[test]
    fn time_going_backwards_does_not_panic() {
        let mut f = Forecaster::new(ForecastParams::for_poll_period(MS), 10 * MS);
        f.on_cycle(0, 5);
        f.on_cycle(u64::MAX, 0);
        assert!(f.predicted_period_ns().is_finite());
    }
}

//! PIE (RFC 8033): a drop probability updated every T_UPDATE from the
//! queue delay, applied to arriving packets.
//!
//! The RFC's pseudocode (section 4 and its appendix), without the
//! optional parts (activation threshold, derandomization, ECN):
//! - every T_UPDATE, `p = alpha (qdelay - QDELAY_REF) + beta (qdelay -
//!   qdelay_old)` (alpha 1/8, beta 5/4, in seconds), scaled down while the
//!   drop probability is small, capped at +2 % once it is 10 % or more,
//!   decayed by 2 % per update while the queue stays empty, bounded to
//!   [0, 1]; the burst allowance (MAX_BURST, 150 ms) shrinks by T_UPDATE;
//! - an arriving packet is dropped with the drop probability once the
//!   burst allowance is used up, unless the queue is short (old delay
//!   below QDELAY_REF/2 with probability below 20 %, or at most two
//!   maximum-size packets queued).
//!
//! `qdelay` is how long the packet at the head has waited at the update
//! time (0 when the queue is empty): the RFC's timestamp method.

/// RFC 8033's MAX_BURST.
pub(crate) const MAX_BURST_NS: u64 = 150_000_000;
const ALPHA: f64 = 0.125;
const BETA: f64 = 1.25;

#[derive(Debug, Clone)]
pub(crate) struct Pie {
    target: u64,
    t_update: u64,
    drop_prob: f64,
    qdelay_old: u64,
    burst_allowance: u64,
    next_update: Option<u64>,
}

impl Pie {
    pub(crate) fn new(target: u64, t_update: u64) -> Pie {
        Pie {
            target,
            t_update: t_update.max(1),
            drop_prob: 0.0,
            qdelay_old: 0,
            burst_allowance: MAX_BURST_NS,
            next_update: None,
        }
    }

    /// Updates start one T_UPDATE after `t0`.
    pub(crate) fn start(&mut self, t0: u64) {
        self.next_update = t0.checked_add(self.t_update);
    }

    /// When the next update is due.
    pub(crate) fn next_update(&self) -> Option<u64> {
        self.next_update
    }

    #[cfg(test)]
    pub(crate) fn drop_prob(&self) -> f64 {
        self.drop_prob
    }

    /// Nothing changes at an update with an empty queue: updates up to
    /// `until` can be skipped.
    pub(crate) fn skip_idle(&mut self, until: u64) {
        let idle =
            self.drop_prob == 0.0 && self.qdelay_old == 0 && self.burst_allowance == MAX_BURST_NS;
        if let (true, Some(next)) = (idle, self.next_update) {
            if next <= until {
                let n = (until - next) / self.t_update + 1;
                // Past the end of time: no more updates.
                self.next_update = n
                    .checked_mul(self.t_update)
                    .and_then(|d| next.checked_add(d));
            }
        }
    }

    /// The update due now, with the queue delay then.
    pub(crate) fn update(&mut self, qdelay: u64) {
        let s = |ns: u64| ns as f64 / 1e9;
        let mut p = ALPHA * (s(qdelay) - s(self.target)) + BETA * (s(qdelay) - s(self.qdelay_old));
        let d = self.drop_prob;
        p /= if d < 0.000_001 {
            2048.0
        } else if d < 0.000_01 {
            512.0
        } else if d < 0.000_1 {
            128.0
        } else if d < 0.001 {
            32.0
        } else if d < 0.01 {
            8.0
        } else if d < 0.1 {
            2.0
        } else {
            1.0
        };
        if d >= 0.1 && p > 0.02 {
            p = 0.02;
        }
        self.drop_prob += p;
        if qdelay == 0 && self.qdelay_old == 0 {
            self.drop_prob *= 0.98;
        }
        self.drop_prob = self.drop_prob.clamp(0.0, 1.0);
        self.burst_allowance = self.burst_allowance.saturating_sub(self.t_update);
        let half = self.target / 2;
        if self.drop_prob == 0.0 && qdelay < half && self.qdelay_old < half {
            self.burst_allowance = MAX_BURST_NS;
        }
        self.qdelay_old = qdelay;
        self.next_update = self.next_update.and_then(|t| t.checked_add(self.t_update));
    }

    /// Whether a packet arriving to a queue of `bytes` is dropped; `u` a
    /// uniform draw in [0, 1).
    pub(crate) fn drop_early(&self, bytes: u64, maxpacket: u32, u: f64) -> bool {
        if self.burst_allowance > 0 {
            return false;
        }
        let short = (self.qdelay_old < self.target / 2 && self.drop_prob < 0.2)
            || bytes <= 2 * u64::from(maxpacket);
        !short && u < self.drop_prob
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    #[test]
    fn probability_rises_while_the_delay_is_above_target_and_decays_after() {
        let mut p = Pie::new(15 * MS, 15 * MS);
        p.start(0);
        assert!(!p.drop_early(1_000_000, 1500, 0.0), "burst allowance");
        for _ in 0..10 {
            p.update(100 * MS);
        }
        assert_eq!(p.burst_allowance, 0);
        let high = p.drop_prob();
        assert!(high > 0.0);
        assert!(p.drop_early(1_000_000, 1500, 0.0));
        assert!(!p.drop_early(3000, 1500, 0.0), "two packets queued");
        for _ in 0..400 {
            p.update(100 * MS);
        }
        assert!(p.drop_prob() > high && p.drop_prob() <= 1.0);
        // Empty queue: the probability goes to 0 and the allowance back.
        for _ in 0..2000 {
            p.update(0);
        }
        assert_eq!(p.drop_prob(), 0.0);
        assert_eq!(p.burst_allowance, MAX_BURST_NS);
        let next = p.next_update().unwrap();
        p.skip_idle(next + 100 * MS);
        assert_eq!(p.next_update(), Some(next + 105 * MS));
    }
}

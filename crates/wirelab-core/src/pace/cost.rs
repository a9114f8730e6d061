//! What one send call costs, learned from the calls made.

/// A moving average (weight 1/8) of the cost of send calls that carried
/// one packet; a call costing more than four times the estimate is taken
/// for a preemption and ignored, so one stall cannot make every later
/// packet batch. Starts at [`SendCost::INITIAL_NS`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SendCost {
    ns: u64,
}

impl SendCost {
    /// Where the estimate starts: a typical single send call.
    pub const INITIAL_NS: u64 = 5_000;

    /// The estimate.
    pub fn ns(&self) -> u64 {
        self.ns
    }

    /// A call carrying `packets` took `cost_ns`.
    pub fn observe(&mut self, packets: usize, cost_ns: u64) {
        if packets == 1 && cost_ns < self.ns.saturating_mul(4) {
            self.ns = (self.ns * 7 + cost_ns) / 8;
        }
    }
}

impl Default for SendCost {
    fn default() -> Self {
        SendCost {
            ns: Self::INITIAL_NS,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn learns_single_calls_and_ignores_stalls_and_batches() {
        let mut c = SendCost::default();
        for _ in 0..100 {
            c.observe(1, 2_000);
        }
        assert!((2_000..2_100).contains(&c.ns()), "{}", c.ns());
        let before = c.ns();
        c.observe(1, 500_000); // a preemption
        c.observe(64, 9_000); // a batch
        assert_eq!(c.ns(), before);
    }
}

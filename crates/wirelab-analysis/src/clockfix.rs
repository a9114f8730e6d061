//! Clock-offset correction of receive stamps: a flow whose receiver's
//! clock runs θ(t) ahead of its sender's has every one-way delay θ(t) too
//! long. [`ClockCorrection`] moves each receive stamp onto the sender's
//! clock before the analysis, so every delay figure (mean, percentiles,
//! PDV, the worst packets) comes out corrected alike.

use wirelab_wire::Record;

/// θ(t) = `offset_ns` + `drift_ppb`·(t − `at_ns`)/10⁹: the receiver's clock
/// minus the sender's, linear over the run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClockCorrection {
    pub at_ns: u64,
    pub offset_ns: i64,
    pub drift_ppb: i64,
}

impl ClockCorrection {
    /// θ at `t_ns`.
    pub fn offset_at(&self, t_ns: u64) -> i64 {
        let dt = i128::from(t_ns) - i128::from(self.at_ns);
        let th = i128::from(self.offset_ns) + i128::from(self.drift_ppb) * dt / 1_000_000_000;
        th.clamp(i64::MIN.into(), i64::MAX.into()) as i64
    }

    /// A receive stamp on the sender's clock: `rx − θ(rx)` (θ is taken at
    /// the stamp itself; evaluating it on the other clock would differ by
    /// θ·drift, far below a ns). 0 (no stamp) stays 0.
    pub fn to_sender_clock(&self, rx_ns: u64) -> u64 {
        if rx_ns == 0 {
            return 0;
        }
        rx_ns.saturating_add_signed(self.offset_at(rx_ns).saturating_neg())
    }

    /// Corrects the receive stamps of `records` in place.
    pub fn apply(&self, records: &mut [Record]) {
        for r in records {
            r.rx_ns = self.to_sender_clock(r.rx_ns);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wirelab_wire::RecordKind;

    fn rx(tx_ns: u64, rx_ns: u64) -> Record {
        Record {
            flow: 1,
            size: 64,
            seq: 0,
            sched_ns: 0,
            tx_ns,
            rx_ns,
            refl_rx_ns: 0,
            refl_tx_ns: 0,
            probe_flags: 0,
            kind: RecordKind::Rx,
            rec_flags: 0,
            tos: 0,
        }
    }

    #[test]
    fn a_constant_offset_is_removed_from_every_delay() {
        let c = ClockCorrection {
            at_ns: 1_000_000_000,
            offset_ns: 3_000_000,
            drift_ppb: 0,
        };
        let mut v = vec![rx(1_000_000_000, 1_008_000_000), rx(5, 0)];
        c.apply(&mut v);
        assert_eq!(v[0].rx_ns - v[0].tx_ns, 5_000_000);
        // A record without a receive stamp keeps none.
        assert_eq!(v[1].rx_ns, 0);
    }

    #[test]
    fn drift_is_applied_at_each_stamp() {
        // The receiver gains 10 µs per second (10,000 ppb).
        let c = ClockCorrection {
            at_ns: 10_000_000_000,
            offset_ns: -2_000,
            drift_ppb: 10_000,
        };
        assert_eq!(c.offset_at(10_000_000_000), -2_000);
        assert_eq!(c.offset_at(12_000_000_000), 18_000);
        assert_eq!(c.offset_at(9_000_000_000), -12_000);
        assert_eq!(c.to_sender_clock(12_000_000_000), 12_000_000_000 - 18_000);
        // Extreme values saturate, never panic.
        let far = ClockCorrection {
            at_ns: 0,
            offset_ns: i64::MIN,
            drift_ppb: i64::MAX,
        };
        let _ = far.to_sender_clock(u64::MAX);
        let _ = far.offset_at(u64::MAX);
    }
}

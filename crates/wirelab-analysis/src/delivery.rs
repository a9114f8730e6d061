//! Capture's delivery latency: from the kernel's receive timestamp of a
//! packet to the moment the capture thread handled it, both on the
//! real-time clock.
//!
//! Sampled to keep the per-packet cost at one branch: the first packet of
//! every ring block (its oldest, so the block's worst latency) and every
//! 16th after it ([`DeliveryLatency::sampled`]). `count` in the summary is
//! the sample count. One accumulator per capture thread, merged at the end.

use crate::percentiles::{histogram, merge};
use crate::DelayStats;
use hdrhistogram::Histogram;

/// Delivery latency samples of one or more capture threads.
#[derive(Clone, Debug)]
pub struct DeliveryLatency {
    hist: Histogram<u64>,
}

impl Default for DeliveryLatency {
    fn default() -> Self {
        DeliveryLatency::new()
    }
}

impl DeliveryLatency {
    /// No samples.
    pub fn new() -> DeliveryLatency {
        DeliveryLatency { hist: histogram() }
    }

    /// Whether the packet at `index_in_block` (0-based) of a ring block is
    /// sampled.
    pub fn sampled(index_in_block: u32) -> bool {
        index_in_block & 15 == 0
    }

    /// One sample: kernel timestamp `kernel_ts_ns`, handled at `handled_ns`.
    /// A handled time before the stamp (clock stepped) counts as 1 ns;
    /// latencies beyond an hour count as an hour.
    pub fn record(&mut self, kernel_ts_ns: u64, handled_ns: u64) {
        self.hist
            .saturating_record(handled_ns.saturating_sub(kernel_ts_ns).max(1));
    }

    /// Adds another thread's samples.
    pub fn merge(&mut self, other: &DeliveryLatency) {
        merge(&mut self.hist, &other.hist);
    }

    /// The summary (`delivery_latency` of `wirelab.capture/1`).
    pub fn summary(&self) -> DelayStats {
        DelayStats::of_hist(&self.hist)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn samples_first_and_every_sixteenth() {
        let picked: Vec<u32> = (0..40).filter(|&i| DeliveryLatency::sampled(i)).collect();
        assert_eq!(picked, [0, 16, 32]);
    }

    #[test]
    fn records_merges_and_clamps() {
        let mut a = DeliveryLatency::new();
        a.record(1_000, 1_500);
        a.record(2_000, 1_000); // clock stepped back
        let mut b = DeliveryLatency::new();
        b.record(0, 10_000);
        b.record(0, u64::MAX);
        a.merge(&b);
        let s = a.summary();
        assert_eq!((s.count, s.min_ns), (4, 1));
        assert!(s.max_ns >= crate::percentiles::HIST_MAX_NS as i64);
        assert_eq!(DeliveryLatency::default().summary(), DelayStats::default());
    }
}

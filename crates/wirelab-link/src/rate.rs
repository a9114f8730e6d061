//! Serialization at a link rate, netem's cost model, exact arithmetic,
//! with Dummynet's burst credit.
//!
//! A frame of `len` bytes costs `len + overhead` bytes, or with cells
//! `ceil((len + overhead) / cell) * (cell + cell_overhead)` bytes (never
//! below 0), sent at `rate` bit/s. Times are kept in ticks of `1/rate` ns
//! (u128), so no rounding error accumulates however many frames pass;
//! a frame's own finish time is rounded up to the next ns (never early).
//!
//! Burst credit (`burst B`): a token bucket `B` bytes deep, filled at the
//! rate while the link is idle and starting full. A frame leaves at the
//! first time at or after `max(arrival, previous departure)` when the
//! bucket holds its cost: with a full bucket, the first `B` bytes after an
//! idle time leave at once, unshaped; with an empty one, frames leave one
//! cost apart, as without a burst. The bucket is kept as the time it was
//! (or would have been) empty, so it needs no timer. Without a burst the
//! same formula gives `max(arrival, free) + cost`.
//!
//! The rate may change between frames (a time-indexed trace): the link's
//! state is converted to the new rate's ticks, rounded up to a ns.

use super::spec::RateSpec;

const NS_PER_S: i128 = 1_000_000_000;

#[derive(Debug, Clone)]
pub(crate) struct RateLink {
    bits_per_sec: u64,
    overhead: i64,
    cell: u64,
    cell_overhead: i64,
    /// Bucket depth in ticks (0 = no burst).
    depth: i128,
    burst_bytes: u64,
    /// When the last frame left (its end), in ticks (at most 2^104: u64
    /// ns times a rate below 2^40).
    free: i128,
    /// When the bucket was or would have been empty, in ticks (negative:
    /// it was full at time 0).
    empty: i128,
}

/// The link state after a frame, to commit if the frame is kept.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Sent {
    /// When the frame has left (rounded up to a ns).
    pub(crate) done_ns: u64,
    free: i128,
    empty: i128,
}

/// Ticks (never negative where used) to ns, rounded up.
fn ceil_ns(ticks: i128, rate: u64) -> u64 {
    let ticks = ticks.max(0) as u128;
    u64::try_from(ticks.div_ceil(u128::from(rate))).unwrap_or(u64::MAX)
}

/// Rates above this are taken as this: it keeps tick arithmetic in i128.
const MAX_RATE: u64 = 1 << 40;

impl RateLink {
    pub(crate) fn new(r: &RateSpec) -> RateLink {
        let mut l = RateLink {
            bits_per_sec: r.bits_per_sec.clamp(1, MAX_RATE),
            overhead: i64::from(r.packet_overhead),
            cell: u64::from(r.cell_size),
            cell_overhead: i64::from(r.cell_overhead),
            depth: 0,
            burst_bytes: r.burst_bytes,
            free: 0,
            empty: 0,
        };
        l.depth = l.bytes_ticks(r.burst_bytes);
        l.empty = -l.depth;
        l
    }

    /// The time `b` bytes take, in ticks (bits * 1e9).
    fn bytes_ticks(&self, b: u64) -> i128 {
        i128::from(b) * 8 * NS_PER_S
    }

    /// Bytes of link time a frame of `len` bytes costs.
    pub(crate) fn cost_bytes(&self, len: u32) -> u64 {
        let bytes = (i64::from(len) + self.overhead).max(0) as u64;
        if self.cell == 0 {
            return bytes;
        }
        let cells = bytes.div_ceil(self.cell);
        let per_cell = (self.cell as i64 + self.cell_overhead).max(0) as u64;
        cells.saturating_mul(per_cell)
    }

    /// Switches to `bits_per_sec` (at least 1); the link's times are
    /// rounded up to a ns.
    pub(crate) fn set_rate(&mut self, bits_per_sec: u64) {
        let new = bits_per_sec.clamp(1, MAX_RATE);
        if new == self.bits_per_sec {
            return;
        }
        let old = i128::from(self.bits_per_sec);
        let new_t = i128::from(new);
        // Rounded up to a ns (a negative `empty` rounds towards 0).
        let convert = |ticks: i128| -((-ticks).div_euclid(old)) * new_t;
        self.free = convert(self.free);
        self.bits_per_sec = new;
        self.depth = self.bytes_ticks(self.burst_bytes);
        self.empty = convert(self.empty).max(-self.depth);
    }

    /// Sends a frame that may start at `t` (ns), without changing the link.
    pub(crate) fn peek(&self, t: u64, len: u32) -> Sent {
        let rate = self.bits_per_sec;
        let start = (i128::from(t) * i128::from(rate)).max(self.free);
        let cost = self.bytes_ticks(self.cost_bytes(len));
        // The bucket holds (start - empty) worth of bytes, at most `depth`.
        let empty = self.empty.max(start - self.depth);
        let done = start.max(empty + cost);
        Sent {
            done_ns: ceil_ns(done, rate),
            free: done,
            empty: empty + cost,
        }
    }

    pub(crate) fn commit(&mut self, s: Sent) {
        self.free = s.free;
        self.empty = s.empty;
    }

    /// The frame of `s` was paused for `ns` (the link was off): it and
    /// the link's state move that much later.
    pub(crate) fn shift(&self, s: &mut Sent, ns: u64) {
        let ticks = i128::from(ns) * i128::from(self.bits_per_sec);
        s.free += ticks;
        s.empty += ticks;
        s.done_ns = ceil_ns(s.free, self.bits_per_sec);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn link(bits_per_sec: u64, packet_overhead: i32, cell: u32, cell_ovh: i32) -> RateLink {
        RateLink::new(&RateSpec {
            bits_per_sec,
            packet_overhead,
            cell_size: cell,
            cell_overhead: cell_ovh,
            burst_bytes: 0,
        })
    }

    fn send(l: &mut RateLink, t: u64, len: u32) -> u64 {
        let s = l.peek(t, len);
        l.commit(s);
        s.done_ns
    }

    #[test]
    fn cell_cost_of_netem_example() {
        // rate 1mbit 0 48 5: 50 bytes = 2 cells of 48 + 5 = 106 bytes.
        let l = link(1_000_000, 0, 48, 5);
        assert_eq!(l.cost_bytes(50), 106);
        assert_eq!(l.cost_bytes(48), 53);
        assert_eq!(l.cost_bytes(0), 0);
        assert_eq!(l.peek(1000, 50).done_ns, 1000 + 848_000);
    }

    #[test]
    fn overheads_may_be_negative_but_cost_is_not() {
        let l = link(8_000, -100, 0, 0);
        assert_eq!(l.cost_bytes(60), 0);
        assert_eq!(l.cost_bytes(150), 50);
    }

    #[test]
    fn no_drift_at_rates_that_do_not_divide_a_second() {
        // 3 bit/s: one byte = 8/3 s; 3 bytes = exactly 8 s.
        let mut l = link(3, 0, 0, 0);
        let done: Vec<u64> = (0..3).map(|_| send(&mut l, 0, 1)).collect();
        assert_eq!(done, [2_666_666_667, 5_333_333_334, 8_000_000_000]);
        // An arrival after the link went idle starts afresh.
        assert_eq!(l.peek(10_000_000_000, 3).done_ns, 18_000_000_000);
    }

    #[test]
    fn burst_credit_fills_while_idle_up_to_its_depth() {
        // 1 Mbit/s, burst 12500 bytes = 100 ms of credit.
        let mut l = RateLink::new(&RateSpec {
            bits_per_sec: 1_000_000,
            packet_overhead: 0,
            cell_size: 0,
            cell_overhead: 0,
            burst_bytes: 12_500,
        });
        // Full at start: ten 1250-byte frames leave at once, then 10 ms apart.
        let t: Vec<u64> = (0..12).map(|_| send(&mut l, 0, 1250)).collect();
        assert_eq!(t[..10], [0; 10]);
        assert_eq!(t[10..], [10_000_000, 20_000_000]);
        // 30 ms idle after the last departure: 3750 bytes of credit.
        let t: Vec<u64> = (0..5).map(|_| send(&mut l, 50_000_000, 1250)).collect();
        assert_eq!(
            t,
            [50_000_000, 50_000_000, 50_000_000, 60_000_000, 70_000_000]
        );
        // A long idle time fills it only up to the depth.
        let t: Vec<u64> = (0..11)
            .map(|_| send(&mut l, 10_000_000_000, 1250))
            .collect();
        assert_eq!(t[..10], [10_000_000_000; 10]);
        assert_eq!(t[10], 10_010_000_000);
    }

    #[test]
    fn rate_changes_and_pauses_keep_times_exact() {
        let mut l = link(8_000, 0, 0, 0); // 1 byte per ms
        assert_eq!(send(&mut l, 0, 10), 10_000_000);
        l.set_rate(16_000);
        // The link is free at 10 ms; 10 bytes at 2 bytes per ms.
        assert_eq!(send(&mut l, 0, 10), 15_000_000);
        let mut s = l.peek(0, 10);
        l.shift(&mut s, 7_000_000);
        l.commit(s);
        assert_eq!(s.done_ns, 27_000_000);
        assert_eq!(send(&mut l, 0, 2), 28_000_000);
    }
}

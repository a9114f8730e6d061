//! Serialization at a link rate, netem's cost model, exact arithmetic.
//!
//! A frame of `len` bytes costs `len + overhead` bytes, or with cells
//! `ceil((len + overhead) / cell) * (cell + cell_overhead)` bytes (never
//! below 0), sent at `rate` bit/s. The link is free again at
//! `max(arrival, free) + cost`. The free time is kept as a whole number
//! of ns plus a remainder in units of `1/rate` ns, so no rounding error
//! accumulates however many frames pass; the frame's own finish time is
//! rounded up to the next ns (never early).

use super::spec::RateSpec;

#[derive(Debug, Clone)]
pub(crate) struct RateLink {
    bits_per_sec: u64,
    overhead: i64,
    cell: u64,
    cell_overhead: i64,
    /// Time the link is free: `free_ns + free_rem / bits_per_sec` ns.
    free_ns: u64,
    free_rem: u64,
}

/// The link state after a frame, to commit if the frame is kept.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Sent {
    /// When the last bit has left (rounded up to a ns).
    pub(crate) done_ns: u64,
    free_ns: u64,
    free_rem: u64,
}

impl RateLink {
    pub(crate) fn new(r: &RateSpec) -> RateLink {
        RateLink {
            bits_per_sec: r.bits_per_sec.max(1),
            overhead: i64::from(r.packet_overhead),
            cell: u64::from(r.cell_size),
            cell_overhead: i64::from(r.cell_overhead),
            free_ns: 0,
            free_rem: 0,
        }
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

    /// Serializes a frame arriving at `t`, without changing the link.
    pub(crate) fn peek(&self, t: u64, len: u32) -> Sent {
        let (start_ns, start_rem) = if t > self.free_ns {
            (t, 0)
        } else {
            (self.free_ns, self.free_rem)
        };
        let bits = u128::from(self.cost_bytes(len)) * 8 * 1_000_000_000;
        let total = u128::from(start_rem) + bits;
        let rate = u128::from(self.bits_per_sec);
        let whole = u64::try_from(total / rate).unwrap_or(u64::MAX);
        let free_ns = start_ns.saturating_add(whole);
        let free_rem = (total % rate) as u64;
        Sent {
            done_ns: free_ns.saturating_add(u64::from(free_rem > 0)),
            free_ns,
            free_rem,
        }
    }

    pub(crate) fn commit(&mut self, s: Sent) {
        self.free_ns = s.free_ns;
        self.free_rem = s.free_rem;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn link(spec: RateSpec) -> RateLink {
        RateLink::new(&spec)
    }

    #[test]
    fn cell_cost_of_netem_example() {
        // rate 1mbit 0 48 5: 50 bytes = 2 cells of 48 + 5 = 106 bytes.
        let l = link(RateSpec {
            bits_per_sec: 1_000_000,
            packet_overhead: 0,
            cell_size: 48,
            cell_overhead: 5,
        });
        assert_eq!(l.cost_bytes(50), 106);
        assert_eq!(l.cost_bytes(48), 53);
        assert_eq!(l.cost_bytes(0), 0);
        assert_eq!(l.peek(1000, 50).done_ns, 1000 + 848_000);
    }

    #[test]
    fn overheads_may_be_negative_but_cost_is_not() {
        let l = link(RateSpec {
            bits_per_sec: 8_000,
            packet_overhead: -100,
            cell_size: 0,
            cell_overhead: 0,
        });
        assert_eq!(l.cost_bytes(60), 0);
        assert_eq!(l.cost_bytes(150), 50);
    }

    #[test]
    fn no_drift_at_rates_that_do_not_divide_a_second() {
        // 3 bit/s: one byte = 8/3 s; 3 bytes = exactly 8 s.
        let mut l = link(RateSpec {
            bits_per_sec: 3,
            packet_overhead: 0,
            cell_size: 0,
            cell_overhead: 0,
        });
        let mut done = Vec::new();
        for _ in 0..3 {
            let s = l.peek(0, 1);
            l.commit(s);
            done.push(s.done_ns);
        }
        assert_eq!(done, [2_666_666_667, 5_333_333_334, 8_000_000_000]);
        // An arrival after the link went idle starts afresh.
        assert_eq!(l.peek(10_000_000_000, 3).done_ns, 18_000_000_000);
    }
}

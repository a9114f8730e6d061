//! Counter-based randomness: every draw is a pure function of (seed, rule,
//! direction, domain, index, position), so a decision never depends on
//! when it is made or on how many draws other packets used.
//!
//! A stream is SplitMix64 started from a state derived from the key by a
//! bijective mixer: streams of different indices start at unrelated points
//! of the 2^64 cycle (an overlap within a packet's few draws has
//! probability ~2^-60), and SplitMix64 passes BigCrush, which is plenty for
//! emulation statistics. It costs a few ns per draw, where re-keying a
//! ChaCha stream per packet costs a block computation.

use rand::RngCore;

const GAMMA: u64 = 0x9E37_79B9_7F4A_7C15;

/// The SplitMix64 output function (a bijection of u64).
pub(crate) fn mix64(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// What a stream's index counts.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Domain {
    /// Packet index: every decision about one packet and its copies.
    Packet = 1,
    /// Slot index: slot lengths.
    Slot = 2,
    /// On/off cycle index: on and off lengths.
    OnOff = 3,
}

/// The key of one link direction.
pub(crate) fn link_key(seed: u64, rule: u32, direction: u8) -> u64 {
    let h = mix64(seed ^ GAMMA);
    let h = mix64(h ^ u64::from(rule));
    mix64(h ^ (u64::from(direction) << 32) ^ 0x6c69_6e6b) // "link"
}

/// One stream of draws.
#[derive(Debug, Clone)]
pub(crate) struct Stream {
    state: u64,
}

impl Stream {
    pub(crate) fn new(key: u64, domain: Domain, index: u64) -> Stream {
        let d = (domain as u64).wrapping_mul(GAMMA);
        Stream {
            state: mix64(mix64(key ^ d) ^ index),
        }
    }

    /// Uniform in `[0, 1)` with 53 bits.
    pub(crate) fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// Uniform in `[0, n)` (multiply-shift; bias below 2^-64 * n).
    pub(crate) fn below(&mut self, n: u64) -> u64 {
        ((u128::from(self.next_u64()) * u128::from(n)) >> 64) as u64
    }
}

impl RngCore for Stream {
    fn next_u32(&mut self) -> u32 {
        (self.next_u64() >> 32) as u32
    }

    fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(GAMMA);
        mix64(self.state)
    }

    fn fill_bytes(&mut self, dst: &mut [u8]) {
        for chunk in dst.chunks_mut(8) {
            let v = self.next_u64().to_le_bytes();
            chunk.copy_from_slice(&v[..chunk.len()]);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streams_are_keyed_and_repeatable() {
        let k = link_key(7, 0, 0);
        let draws = |i| {
            let mut s = Stream::new(k, Domain::Packet, i);
            [s.next_u64(), s.next_u64(), s.next_u64()]
        };
        assert_eq!(draws(3), draws(3));
        assert_ne!(draws(3)[1], draws(3)[2]);
        let first = |key, dom, i| Stream::new(key, dom, i).next_u64();
        assert_ne!(first(k, Domain::Packet, 3), first(k, Domain::Packet, 4));
        assert_ne!(first(k, Domain::Packet, 3), first(k, Domain::Slot, 3));
        assert_ne!(
            first(k, Domain::Packet, 3),
            first(link_key(8, 0, 0), Domain::Packet, 3)
        );
        assert_ne!(k, link_key(7, 1, 0));
        assert_ne!(k, link_key(7, 0, 1));
    }

    #[test]
    fn unit_and_below_are_in_range_and_fair() {
        let mut s = Stream::new(1, Domain::Packet, 0);
        let n = 100_000;
        let mut sum = 0.0;
        let mut counts = [0u32; 10];
        for _ in 0..n {
            let u = s.unit();
            assert!((0.0..1.0).contains(&u));
            sum += u;
            counts[s.below(10) as usize] += 1;
        }
        assert!((sum / n as f64 - 0.5).abs() < 0.005);
        for c in counts {
            // 4 sigma of a binomial(1e5, 0.1).
            assert!((f64::from(c) - 10_000.0).abs() < 380.0, "{counts:?}");
        }
    }
}

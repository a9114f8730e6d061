//! Internet checksums (RFC 1071) and incremental updates (RFC 1624).

/// Ones'-complement sum of `data` as 16-bit big-endian words, added to
/// `acc` (not folded). An odd trailing byte is padded with zero.
pub fn sum(data: &[u8], mut acc: u64) -> u64 {
    let mut chunks = data.chunks_exact(2);
    for c in &mut chunks {
        acc += u64::from(u16::from_be_bytes([c[0], c[1]]));
    }
    if let [last] = chunks.remainder() {
        acc += u64::from(*last) << 8;
    }
    acc
}

/// Folds a 64-bit accumulator to 16 bits and complements it.
pub fn finish(mut acc: u64) -> u16 {
    while acc > 0xffff {
        acc = (acc & 0xffff) + (acc >> 16);
    }
    !(acc as u16)
}

/// RFC 1624 eqn. 3: the checksum `hc` after the 16-bit-aligned bytes `old`
/// became `new` (same length, even). Works whether `hc` was right or not:
/// a wrong checksum stays wrong by the same amount.
pub fn update(hc: u16, old: &[u8], new: &[u8]) -> u16 {
    let mut acc = u64::from(!hc);
    let mut o = old.chunks_exact(2);
    let mut n = new.chunks_exact(2);
    for (a, b) in (&mut o).zip(&mut n) {
        acc += u64::from(!u16::from_be_bytes([a[0], a[1]]));
        acc += u64::from(u16::from_be_bytes([b[0], b[1]]));
    }
    if let ([a], [b]) = (o.remainder(), n.remainder()) {
        acc += u64::from(!(u16::from(*a) << 8));
        acc += u64::from(u16::from(*b) << 8);
    }
    finish(acc)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc1071_example_and_incremental_agree() {
        // RFC 1071 section 3 example words: 0001 f203 f4f5 f6f7 -> sum ddf2.
        let d = [0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7];
        assert_eq!(finish(sum(&d, 0)), !0xddf2);
        let mut e = d;
        e[2] = 0x12;
        e[3] = 0x34;
        assert_eq!(
            update(finish(sum(&d, 0)), &d[2..4], &e[2..4]),
            finish(sum(&e, 0))
        );
    }

    #[test]
    fn odd_length_pads_zero() {
        assert_eq!(sum(&[0xab], 0), 0xab00);
    }
}

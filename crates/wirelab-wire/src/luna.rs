//! The LUNA probe layout (figure 6.1 of the LUNA thesis), for talking to LUNA's
//! client and server (`wirelab send --format luna`, `wirelab recv --format luna`).
//!
//! ```text
//!  0                4                                   20     21
//!  +----------------+-----------------------------------+------+---------
//!  | sequence (u32) | send time: struct timespec        |flags | padding
//!  | network order  | tv_sec i64, tv_nsec i64 (LE)      |      |
//!  +----------------+-----------------------------------+------+---------
//! ```
//!
//! LUNA writes the sequence number in network byte order and copies the
//! `struct timespec` from memory, so the time is in the sender's native
//! order: little-endian on the x86-64 hosts LUNA ran on, which is what this
//! module reads and writes. Flag bit 0 requests an echo; a LUNA server
//! mirrors such a packet unchanged. The layout has no flow id, no end marker
//! and a 32-bit sequence: a receiver tells flows apart by source address and
//! cannot see loss at the tail of a flow.

use crate::probe::WireError;

/// Minimum LUNA payload: sequence, timespec, flags.
pub const LUNA_LEN: usize = 21;
/// Flag bit asking the server to echo the packet back.
pub const LUNA_ECHO: u8 = 0x01;

/// A parsed LUNA probe.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LunaProbe {
    pub seq: u32,
    /// Send time, ns since the Unix epoch.
    pub tx_ns: u64,
    pub flags: u8,
}

impl LunaProbe {
    /// Parses the first [`LUNA_LEN`] bytes of `buf`; a time that is not a
    /// valid non-negative `timespec` is an error.
    pub fn parse(buf: &[u8]) -> Result<LunaProbe, WireError> {
        let Some(b) = buf.get(..LUNA_LEN) else {
            return Err(WireError::Truncated {
                len: buf.len(),
                need: LUNA_LEN,
            });
        };
        let seq = u32::from_be_bytes([b[0], b[1], b[2], b[3]]);
        let sec = i64::from_le_bytes(b[4..12].try_into().unwrap_or_default());
        let nsec = i64::from_le_bytes(b[12..20].try_into().unwrap_or_default());
        let tx_ns = u64::try_from(sec)
            .ok()
            .filter(|_| (0..1_000_000_000).contains(&nsec))
            .and_then(|s| s.checked_mul(1_000_000_000))
            .and_then(|ns| ns.checked_add(nsec as u64))
            .ok_or(WireError::BadTimespec { sec, nsec })?;
        Ok(LunaProbe {
            seq,
            tx_ns,
            flags: b[20],
        })
    }

    /// Writes the probe into the start of `buf`; `None` when `buf` is
    /// shorter than [`LUNA_LEN`].
    pub fn emit(&self, buf: &mut [u8]) -> Option<usize> {
        let b = buf.get_mut(..LUNA_LEN)?;
        b[0..4].copy_from_slice(&self.seq.to_be_bytes());
        b[20] = self.flags;
        stamp_tx_ns(b, self.tx_ns);
        Some(LUNA_LEN)
    }

    pub fn is_echo_request(&self) -> bool {
        self.flags & LUNA_ECHO != 0
    }
}

/// Overwrites only the send time of an emitted LUNA probe.
pub fn stamp_tx_ns(buf: &mut [u8], tx_ns: u64) -> bool {
    let Some(t) = buf.get_mut(4..20) else {
        return false;
    };
    let sec = (tx_ns / 1_000_000_000) as i64;
    let nsec = (tx_ns % 1_000_000_000) as i64;
    t[0..8].copy_from_slice(&sec.to_le_bytes());
    t[8..16].copy_from_slice(&nsec.to_le_bytes());
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[rustfmt::skip]
    const PACKET: [u8; 24] = [
        0x00, 0x00, 0x01, 0x02,                          // seq 258, network order
        0x10, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,  // tv_sec 16, little-endian
        0x40, 0x42, 0x0f, 0x00, 0x00, 0x00, 0x00, 0x00,  // tv_nsec 1_000_000
        0x01,                                            // echo requested
        0xaa, 0xaa, 0xaa,                                // padding
    ];

    #[test]
    fn parses_the_thesis_layout() {
        let p = LunaProbe::parse(&PACKET).unwrap();
        assert_eq!(p.seq, 258);
        assert_eq!(p.tx_ns, 16_001_000_000);
        assert!(p.is_echo_request());
    }

    #[test]
    fn emits_the_same_bytes() {
        let mut b = [0xaau8; 24];
        let p = LunaProbe {
            seq: 258,
            tx_ns: 16_001_000_000,
            flags: LUNA_ECHO,
        };
        assert_eq!(p.emit(&mut b), Some(LUNA_LEN));
        assert_eq!(b, PACKET);
        assert_eq!(p.emit(&mut [0u8; 20]), None);
    }

    #[test]
    fn rejects_short_and_impossible_times() {
        assert_eq!(
            LunaProbe::parse(&PACKET[..20]),
            Err(WireError::Truncated { len: 20, need: 21 })
        );
        let mut b = PACKET;
        b[12..20].copy_from_slice(&1_000_000_000i64.to_le_bytes());
        assert!(matches!(
            LunaProbe::parse(&b),
            Err(WireError::BadTimespec { .. })
        ));
        let mut b = PACKET;
        b[4..12].copy_from_slice(&(-1i64).to_le_bytes());
        assert!(matches!(
            LunaProbe::parse(&b),
            Err(WireError::BadTimespec { .. })
        ));
    }

    proptest! {
        #[test]
        fn round_trip(seq in any::<u32>(), tx in 0u64..u64::MAX / 2, flags in any::<u8>()) {
            let p = LunaProbe { seq, tx_ns: tx, flags };
            let mut b = [0u8; LUNA_LEN];
            p.emit(&mut b).unwrap();
            prop_assert_eq!(LunaProbe::parse(&b).unwrap(), p);
        }

        #[test]
        fn never_panics(data in proptest::collection::vec(any::<u8>(), 0..64)) {
            let _ = LunaProbe::parse(&data);
        }
    }
}

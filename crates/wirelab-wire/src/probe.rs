//! The probe header carried in every generated packet.
//!
//! ```text
//!  0      2    3      4          8                 16                24
//!  +------+----+------+----------+-----------------+-----------------+
//!  |magic |ver |flags | flow id  | sequence (u64)  | tx time (u64 ns)|
//!  +------+----+------+----------+-----------------+-----------------+
//!  echo replies append: reflector rx time (u64 ns), reflector tx time (u64 ns)
//! ```
//! All fields are in network byte order.

use thiserror::Error;

/// "WL".
pub const MAGIC: u16 = 0x574C;
pub const VERSION: u8 = 1;
/// Length of the probe header without echo timestamps.
pub const HEADER_LEN: usize = 24;
/// Length of the probe header with the reflector's two timestamps.
pub const ECHO_LEN: usize = 40;

/// Errors from parsing a probe.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
pub enum WireError {
    #[error("packet of {len} bytes is shorter than the {need}-byte probe header")]
    Truncated { len: usize, need: usize },
    #[error("bad magic 0x{found:04x} (expected 0x{MAGIC:04x}): not a wirelab probe")]
    BadMagic { found: u16 },
    #[error("unsupported probe version {found} (this wirelab speaks version {VERSION})")]
    BadVersion { found: u8 },
    #[error("invalid send time ({sec} s, {nsec} ns) in a LUNA probe")]
    BadTimespec { sec: i64, nsec: i64 },
}

/// Probe flag bits (byte 3 of the header).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct ProbeFlags(pub u8);

impl ProbeFlags {
    pub const ECHO_REQUEST: u8 = 1 << 0;
    pub const ECHO_REPLY: u8 = 1 << 1;
    pub const LAST: u8 = 1 << 2;
    pub const WARMUP: u8 = 1 << 3;

    pub const fn empty() -> Self {
        ProbeFlags(0)
    }
    pub const fn bits(self) -> u8 {
        self.0
    }
    pub const fn contains(self, bit: u8) -> bool {
        self.0 & bit == bit
    }
    pub const fn with(self, bit: u8) -> Self {
        ProbeFlags(self.0 | bit)
    }
    pub const fn without(self, bit: u8) -> Self {
        ProbeFlags(self.0 & !bit)
    }
    pub const fn is_echo_request(self) -> bool {
        self.contains(Self::ECHO_REQUEST)
    }
    pub const fn is_echo_reply(self) -> bool {
        self.contains(Self::ECHO_REPLY)
    }
    pub const fn is_last(self) -> bool {
        self.contains(Self::LAST)
    }
    pub const fn is_warmup(self) -> bool {
        self.contains(Self::WARMUP)
    }
}

/// The reflector's timestamps appended to an echo reply.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct EchoTimes {
    /// When the reflector received the request (ns since the Unix epoch).
    pub rx_ns: u64,
    /// When the reflector sent the reply (ns since the Unix epoch).
    pub tx_ns: u64,
}

/// A parsed probe header.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ProbeRepr {
    pub flags: ProbeFlags,
    pub flow: u32,
    pub seq: u64,
    /// Sender wall clock, ns since the Unix epoch, taken just before the send call.
    pub tx_ns: u64,
    /// Present on echo replies only.
    pub echo: Option<EchoTimes>,
}

impl ProbeRepr {
    /// Bytes this probe occupies on the wire (24, or 40 with echo times).
    pub const fn header_len(&self) -> usize {
        if self.echo.is_some() {
            ECHO_LEN
        } else {
            HEADER_LEN
        }
    }

    /// Parses a probe from the start of `buf`. Echo times are read only when
    /// the echo-reply flag is set; a reply too short to hold them is an error.
    pub fn parse(buf: &[u8]) -> Result<ProbeRepr, WireError> {
        if buf.len() < HEADER_LEN {
            return Err(WireError::Truncated {
                len: buf.len(),
                need: HEADER_LEN,
            });
        }
        let magic = u16::from_be_bytes([buf[0], buf[1]]);
        if magic != MAGIC {
            return Err(WireError::BadMagic { found: magic });
        }
        if buf[2] != VERSION {
            return Err(WireError::BadVersion { found: buf[2] });
        }
        let flags = ProbeFlags(buf[3]);
        let flow = be_u32(&buf[4..8]);
        let seq = be_u64(&buf[8..16]);
        let tx_ns = be_u64(&buf[16..24]);
        let echo = if flags.is_echo_reply() {
            if buf.len() < ECHO_LEN {
                return Err(WireError::Truncated {
                    len: buf.len(),
                    need: ECHO_LEN,
                });
            }
            Some(EchoTimes {
                rx_ns: be_u64(&buf[24..32]),
                tx_ns: be_u64(&buf[32..40]),
            })
        } else {
            None
        };
        Ok(ProbeRepr {
            flags,
            flow,
            seq,
            tx_ns,
            echo,
        })
    }

    /// Writes the header into the start of `buf`; returns the bytes written.
    /// Returns `None` (writing nothing) when `buf` is too short.
    pub fn emit(&self, buf: &mut [u8]) -> Option<usize> {
        let len = self.header_len();
        if buf.len() < len {
            return None;
        }
        buf[0..2].copy_from_slice(&MAGIC.to_be_bytes());
        buf[2] = VERSION;
        buf[3] = self.flags.0;
        buf[4..8].copy_from_slice(&self.flow.to_be_bytes());
        buf[8..16].copy_from_slice(&self.seq.to_be_bytes());
        buf[16..24].copy_from_slice(&self.tx_ns.to_be_bytes());
        if let Some(e) = self.echo {
            buf[24..32].copy_from_slice(&e.rx_ns.to_be_bytes());
            buf[32..40].copy_from_slice(&e.tx_ns.to_be_bytes());
        }
        Some(len)
    }
}

/// Overwrites only the tx time of an already emitted probe: the sender's hot
/// path stamps the time immediately before the send call without re-emitting.
pub fn stamp_tx_ns(buf: &mut [u8], tx_ns: u64) -> bool {
    match buf.get_mut(16..24) {
        Some(s) => {
            s.copy_from_slice(&tx_ns.to_be_bytes());
            true
        }
        None => false,
    }
}

/// Turns a received echo request in place into a reply carrying the
/// reflector's times. The buffer must hold at least [`ECHO_LEN`] bytes of
/// which `len` are valid; returns the reply length (at least `ECHO_LEN`).
pub fn make_echo_reply(buf: &mut [u8], len: usize, times: EchoTimes) -> Option<usize> {
    if len < HEADER_LEN || buf.len() < ECHO_LEN.max(len) {
        return None;
    }
    buf[3] = ProbeFlags(buf[3])
        .without(ProbeFlags::ECHO_REQUEST)
        .with(ProbeFlags::ECHO_REPLY)
        .0;
    buf[24..32].copy_from_slice(&times.rx_ns.to_be_bytes());
    buf[32..40].copy_from_slice(&times.tx_ns.to_be_bytes());
    Some(len.max(ECHO_LEN))
}

fn be_u32(b: &[u8]) -> u32 {
    let mut a = [0u8; 4];
    a.copy_from_slice(&b[..4]);
    u32::from_be_bytes(a)
}

fn be_u64(b: &[u8]) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[..8]);
    u64::from_be_bytes(a)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const SAMPLE: [u8; 24] = [
        0x57, 0x4c, 0x01, 0x04, // magic, version, flags = last
        0x00, 0x00, 0x00, 0x07, // flow 7
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x02, // seq 258
        0x17, 0x9b, 0x6a, 0x6e, 0x2c, 0x1c, 0x4c, 0x00, // tx time
    ];

    #[test]
    fn parses_fixed_bytes() {
        let p = ProbeRepr::parse(&SAMPLE).unwrap();
        assert_eq!(p.flow, 7);
        assert_eq!(p.seq, 258);
        assert!(p.flags.is_last());
        assert!(!p.flags.is_echo_request());
        assert_eq!(p.tx_ns, 0x179b_6a6e_2c1c_4c00);
        assert_eq!(p.echo, None);
    }

    #[test]
    fn emits_fixed_bytes() {
        let p = ProbeRepr {
            flags: ProbeFlags::empty().with(ProbeFlags::LAST),
            flow: 7,
            seq: 258,
            tx_ns: 0x179b_6a6e_2c1c_4c00,
            echo: None,
        };
        let mut buf = [0u8; 32];
        assert_eq!(p.emit(&mut buf), Some(24));
        assert_eq!(&buf[..24], &SAMPLE);
        assert_eq!(&buf[24..], &[0u8; 8]);
    }

    #[test]
    fn rejects_short_bad_magic_bad_version() {
        assert_eq!(
            ProbeRepr::parse(&SAMPLE[..23]),
            Err(WireError::Truncated { len: 23, need: 24 })
        );
        let mut b = SAMPLE;
        b[0] = 0;
        assert_eq!(
            ProbeRepr::parse(&b),
            Err(WireError::BadMagic { found: 0x004c })
        );
        let mut b = SAMPLE;
        b[2] = 9;
        assert_eq!(
            ProbeRepr::parse(&b),
            Err(WireError::BadVersion { found: 9 })
        );
        let mut b = SAMPLE;
        b[3] = ProbeFlags::ECHO_REPLY;
        assert_eq!(
            ProbeRepr::parse(&b),
            Err(WireError::Truncated { len: 24, need: 40 })
        );
    }

    #[test]
    fn echo_reply_in_place() {
        let mut buf = [0u8; 64];
        buf[..24].copy_from_slice(&SAMPLE);
        buf[3] = ProbeFlags::ECHO_REQUEST;
        let n = make_echo_reply(&mut buf, 24, EchoTimes { rx_ns: 5, tx_ns: 6 }).unwrap();
        assert_eq!(n, 40);
        let p = ProbeRepr::parse(&buf[..n]).unwrap();
        assert!(p.flags.is_echo_reply());
        assert!(!p.flags.is_echo_request());
        assert_eq!(p.echo, Some(EchoTimes { rx_ns: 5, tx_ns: 6 }));
        // A padded request keeps its length.
        assert_eq!(
            make_echo_reply(&mut buf, 64, EchoTimes::default()),
            Some(64)
        );
        assert_eq!(
            make_echo_reply(&mut buf[..30], 24, EchoTimes::default()),
            None
        );
    }

    #[test]
    fn stamp_overwrites_tx_only() {
        let mut b = SAMPLE;
        assert!(stamp_tx_ns(&mut b, 42));
        let p = ProbeRepr::parse(&b).unwrap();
        assert_eq!((p.seq, p.tx_ns), (258, 42));
        assert!(!stamp_tx_ns(&mut b[..20], 1));
    }

    proptest! {
        #[test]
        fn parse_never_panics(data in proptest::collection::vec(any::<u8>(), 0..80)) {
            let _ = ProbeRepr::parse(&data);
        }

        #[test]
        fn round_trip(flags in any::<u8>(), flow in any::<u32>(), seq in any::<u64>(),
                      tx in any::<u64>(), rx in any::<u64>(), tx2 in any::<u64>()) {
            let echo = if flags & ProbeFlags::ECHO_REPLY != 0 { Some(EchoTimes { rx_ns: rx, tx_ns: tx2 }) } else { None };
            let p = ProbeRepr { flags: ProbeFlags(flags), flow, seq, tx_ns: tx, echo };
            let mut buf = [0u8; 40];
            let n = p.emit(&mut buf).unwrap();
            prop_assert_eq!(ProbeRepr::parse(&buf[..n]).unwrap(), p);
        }
    }
}

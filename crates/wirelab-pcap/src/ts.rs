//! Timestamp resolutions and conversions to/from nanoseconds.

/// Resolution of the timestamps of an interface (pcapng `if_tsresol`, or the pcap magic).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TsResolution {
    /// One unit is 10^-n seconds (6 = microseconds, the pcapng default; 9 = nanoseconds).
    Decimal(u8),
    /// One unit is 2^-n seconds (`if_tsresol` with the top bit set).
    Binary(u8),
}

impl Default for TsResolution {
    fn default() -> Self {
        TsResolution::MICRO
    }
}

impl TsResolution {
    /// Microseconds (10^-6 s).
    pub const MICRO: TsResolution = TsResolution::Decimal(6);
    /// Nanoseconds (10^-9 s).
    pub const NANO: TsResolution = TsResolution::Decimal(9);

    /// Decode the one-byte `if_tsresol` option value.
    pub fn from_option_byte(b: u8) -> Self {
        if b & 0x80 != 0 {
            TsResolution::Binary(b & 0x7f)
        } else {
            TsResolution::Decimal(b)
        }
    }

    /// Encode as the one-byte `if_tsresol` option value.
    pub fn to_option_byte(self) -> u8 {
        match self {
            TsResolution::Decimal(n) => n & 0x7f,
            TsResolution::Binary(n) => 0x80 | (n & 0x7f),
        }
    }

    /// Units per second, if it fits in u64.
    pub fn units_per_second(self) -> Option<u64> {
        match self {
            TsResolution::Decimal(n) => 10u64.checked_pow(u32::from(n)),
            TsResolution::Binary(n) => 1u64.checked_shl(u32::from(n)),
        }
    }

    /// Convert a timestamp in these units to nanoseconds (truncating finer resolutions).
    /// `None` if the result does not fit in u64.
    pub fn units_to_ns(self, units: u64) -> Option<u64> {
        match self {
            TsResolution::Decimal(n) if n <= 9 => units.checked_mul(10u64.pow(9 - u32::from(n))),
            TsResolution::Decimal(n) => {
                let e = u32::from(n) - 9;
                // units < 2^64 < 10^20, so any divisor of 10^20 or more gives 0.
                if e >= 20 {
                    Some(0)
                } else {
                    Some(units / 10u64.pow(e))
                }
            }
            TsResolution::Binary(n) => {
                // units * 1e9 < 2^94 fits in u128; n <= 127.
                let v = (u128::from(units) * 1_000_000_000u128) >> u32::from(n);
                u64::try_from(v).ok()
            }
        }
    }

    /// Convert nanoseconds to units of this resolution (truncating). `None` on overflow.
    pub fn ns_to_units(self, ns: u64) -> Option<u64> {
        match self {
            TsResolution::Decimal(n) if n <= 9 => Some(ns / 10u64.pow(9 - u32::from(n))),
            TsResolution::Decimal(n) => {
                let e = u32::from(n) - 9;
                10u64.checked_pow(e).and_then(|m| ns.checked_mul(m))
            }
            TsResolution::Binary(n) => {
                if n > 64 {
                    return None;
                }
                let v = (u128::from(ns) << u32::from(n)) / 1_000_000_000u128;
                u64::try_from(v).ok()
            }
        }
    }
}

/// What to do with a classic pcap record whose sub-second field is one second or more
/// (10^6 or more in a microsecond file, 10^9 or more in a nanosecond one), as written by tools
/// that put nanoseconds into a microsecond file. Such records are always counted
/// ([`PcapReader::bad_fractions`](crate::PcapReader::bad_fractions)) and flagged
/// ([`Packet::bad_fraction`](crate::Packet::bad_fraction)).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum FractionPolicy {
    /// The time the fields add up to: the excess carries into the seconds.
    #[default]
    Keep,
    /// The previous packet's time (the record's whole seconds for a file's first packet).
    Clamp,
    /// Read every sub-second field of a microsecond file as nanoseconds (the file's writer
    /// meant them so); a nanosecond file is unaffected, and a field still at or above 10^9
    /// is kept as read.
    Nanoseconds,
}

impl FractionPolicy {
    /// "keep", "clamp" or "ns".
    pub fn name(self) -> &'static str {
        match self {
            FractionPolicy::Keep => "keep",
            FractionPolicy::Clamp => "clamp",
            FractionPolicy::Nanoseconds => "ns",
        }
    }

    /// The time in ns of a classic pcap record with fields `sec` and `frac` in a file of
    /// microsecond (`nano` false) or nanosecond resolution; `prev_ns` is the time of the
    /// previous packet. Returns the time and whether the fraction was out of range.
    pub(crate) fn pcap_ts(
        self,
        sec: u32,
        frac: u32,
        nano: bool,
        prev_ns: Option<u64>,
    ) -> (u64, bool) {
        let (sec, frac) = (u64::from(sec), u64::from(frac));
        let bad = frac >= if nano { 1_000_000_000 } else { 1_000_000 };
        let frac_ns = match self {
            FractionPolicy::Nanoseconds => frac,
            _ if nano => frac,
            _ => frac * 1000,
        };
        // sec < 2^32 and frac_ns < 2^42: no overflow (max ~4.3e18 + 4.4e12 < 1.8e19).
        let whole = sec * 1_000_000_000;
        match self {
            FractionPolicy::Clamp if bad => (prev_ns.unwrap_or(whole), true),
            _ => (whole + frac_ns, bad),
        }
    }
}

/// Apply an `if_tsoffset` (seconds) to a nanosecond timestamp.
pub(crate) fn apply_offset(ns: u64, offset_s: i64) -> Option<u64> {
    if offset_s == 0 {
        return Some(ns);
    }
    let v = i128::from(ns) + i128::from(offset_s) * 1_000_000_000;
    u64::try_from(v).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decimal_and_binary() {
        assert_eq!(
            TsResolution::MICRO.units_to_ns(1_500_000),
            Some(1_500_000_000)
        );
        assert_eq!(TsResolution::NANO.units_to_ns(7), Some(7));
        assert_eq!(TsResolution::Decimal(0).units_to_ns(2), Some(2_000_000_000));
        assert_eq!(TsResolution::Decimal(12).units_to_ns(123_456), Some(123));
        assert_eq!(TsResolution::Decimal(127).units_to_ns(u64::MAX), Some(0));
        assert_eq!(
            TsResolution::Binary(10).units_to_ns(1024),
            Some(1_000_000_000)
        );
        assert_eq!(TsResolution::Binary(1).units_to_ns(3), Some(1_500_000_000));
        assert_eq!(TsResolution::Binary(0).units_to_ns(u64::MAX), None);
        assert_eq!(TsResolution::Binary(127).units_to_ns(u64::MAX), Some(0));
        assert_eq!(TsResolution::Decimal(3).units_to_ns(u64::MAX), None);
        assert_eq!(
            TsResolution::from_option_byte(0x8a),
            TsResolution::Binary(10)
        );
        assert_eq!(TsResolution::from_option_byte(9), TsResolution::NANO);
        assert_eq!(TsResolution::Binary(20).to_option_byte(), 0x94);
    }

    #[test]
    fn to_units() {
        assert_eq!(TsResolution::MICRO.ns_to_units(1_999_999), Some(1_999));
        assert_eq!(TsResolution::NANO.ns_to_units(5), Some(5));
        assert_eq!(
            TsResolution::Binary(10).ns_to_units(1_000_000_000),
            Some(1024)
        );
        assert_eq!(TsResolution::Decimal(12).ns_to_units(2), Some(2000));
        assert_eq!(TsResolution::Binary(100).ns_to_units(1), None);
    }

    #[test]
    fn fraction_policies() {
        use FractionPolicy::*;
        // A good microsecond record is the same under every policy but ns.
        for p in [Keep, Clamp] {
            assert_eq!(p.pcap_ts(7, 999_999, false, None), (7_999_999_000, false));
        }
        // 1_500_000 "us" (really ns): keep carries 1.5 s into the seconds.
        assert_eq!(
            Keep.pcap_ts(7, 1_500_000, false, Some(1)),
            (8_500_000_000, true)
        );
        assert_eq!(
            Clamp.pcap_ts(7, 1_500_000, false, Some(6_000_000_000)),
            (6_000_000_000, true)
        );
        assert_eq!(
            Clamp.pcap_ts(7, 1_500_000, false, None),
            (7_000_000_000, true)
        );
        assert_eq!(
            Nanoseconds.pcap_ts(7, 1_500_000, false, None),
            (7_001_500_000, true)
        );
        // Every field of a µs file is read as ns under ns, good or not.
        assert_eq!(
            Nanoseconds.pcap_ts(7, 5, false, None),
            (7_000_000_005, false)
        );
        // A nanosecond file: only >= 10^9 is bad; ns changes nothing.
        assert_eq!(
            Nanoseconds.pcap_ts(7, 5, true, None),
            (7_000_000_005, false)
        );
        assert_eq!(
            Keep.pcap_ts(7, 1_000_000_000, true, None),
            (8_000_000_000, true)
        );
        assert!(Nanoseconds.pcap_ts(7, u32::MAX, true, None).1);
        // The largest fields do not overflow.
        assert_eq!(
            Keep.pcap_ts(u32::MAX, u32::MAX, false, None).0,
            u64::from(u32::MAX) * 1_000_000_000 + u64::from(u32::MAX) * 1000
        );
    }

    #[test]
    fn offsets() {
        assert_eq!(apply_offset(5, 0), Some(5));
        assert_eq!(apply_offset(1_000_000_000, -1), Some(0));
        assert_eq!(apply_offset(0, -1), None);
        assert_eq!(apply_offset(0, 2), Some(2_000_000_000));
    }
}

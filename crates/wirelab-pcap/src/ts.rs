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
    fn offsets() {
        assert_eq!(apply_offset(5, 0), Some(5));
        assert_eq!(apply_offset(1_000_000_000, -1), Some(0));
        assert_eq!(apply_offset(0, -1), None);
        assert_eq!(apply_offset(0, 2), Some(2_000_000_000));
    }
}

//! Human input with units: durations, sizes, packet rates and bit rates.
//!
//! Contracts:
//! - Numbers are plain decimals (`10`, `2.5`, `.5`); no sign, no exponent,
//!   no `inf`/`nan`. Whitespace around the input and between number and unit
//!   is ignored (`"10 us"` is `"10us"`). Units are case-sensitive.
//! - Durations ([`parse_duration_ns`]): `ns`, `us` (also `µs`, `μs`), `ms`,
//!   `s`, `m` (also `min`), `h`. A number without a unit is rejected (is `10`
//!   seconds or microseconds?), except `0`. Results are rounded to the nearest
//!   nanosecond; [`parse_duration_ns_f64`] keeps fractions of a nanosecond.
//! - Sizes ([`parse_bytes`]): plain number or `B` = bytes; `k`/`K`/`kB`/`KB`,
//!   `M`/`MB`, `G`/`GB` are powers of 1000; `KiB`/`Ki`, `MiB`/`Mi`,
//!   `GiB`/`Gi` are powers of 1024. The result must be a whole number of
//!   bytes (`1.5k` is fine, `1.5B` is not).
//! - Packet rates ([`parse_rate_pps`]): `pps` (or `/s`), `kpps`/`Kpps`,
//!   `Mpps`, `Gpps`; a plain number means packets per second.
//! - Bit rates ([`parse_bitrate_bps`]), result in bits per second; all
//!   prefixes are powers of 1000 (`k` and `K` alike, `M`, `G`, `T`):
//!   bits as `bit`, `bits`, `b`, `bps`, `bit/s`, `b/s` (`100Mbit`, `100Mbps`,
//!   `100Mb/s` are all 10^8 bit/s); bytes per second as `B/s` (`12MB/s` is
//!   96 Mbit/s). A plain number means bit/s. `MB` without `/s` is rejected
//!   as ambiguous.
//! - Zero is accepted everywhere; what zero means (e.g. "unpaced") is the
//!   caller's decision.
//! - Parsing never panics; every error names the input and the accepted
//!   forms.

use thiserror::Error;

/// An input with a unit could not be parsed. The message names the input
/// and the accepted forms.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum UnitError {
    /// Not a number followed by a duration unit.
    #[error("invalid duration {0:?}: use a number with ns, us, ms, s, m or h (e.g. 2.5ms)")]
    Duration(String),
    /// A non-zero duration without a unit.
    #[error(
        "invalid duration {0:?}: a number needs a unit: ns, us, ms, s, m or h \
         (e.g. {0}us); only 0 may be written without one"
    )]
    DurationWithoutUnit(String),
    /// Not a number followed by a size unit.
    #[error(
        "invalid size {0:?}: use a number of bytes, optionally with B, k, M, G (x1000) \
         or KiB, MiB, GiB (x1024) (e.g. 1500, 64KiB)"
    )]
    Bytes(String),
    /// A size that is not a whole number of bytes.
    #[error("invalid size {0:?}: not a whole number of bytes")]
    FractionalBytes(String),
    /// Not a number followed by a packet-rate unit.
    #[error(
        "invalid packet rate {0:?}: use a number with pps, kpps, Mpps or Gpps \
         (e.g. 10kpps); a plain number means pps"
    )]
    Rate(String),
    /// Not a number followed by a bit-rate unit.
    #[error(
        "invalid bit rate {0:?}: use a number with bit, kbit, Mbit, Gbit, Tbit \
         (also written bps, b, bit/s) or B/s, kB/s, MB/s, GB/s for bytes per second \
         (e.g. 100Mbit, 12MB/s); a plain number means bit/s"
    )]
    Bitrate(String),
    /// A unitless number that is not a plain decimal.
    #[error("invalid number {0:?}: use a plain decimal number such as 1.5")]
    Number(String),
    /// The value does not fit the result type.
    #[error("{what} {input:?} is too large (at most {max})")]
    TooLarge {
        /// What was parsed ("duration", "size").
        what: &'static str,
        /// The input as given.
        input: String,
        /// The largest accepted value, human-readable.
        max: &'static str,
    },
}

/// Parses a duration such as `10us`, `2.5ms`, `1s`, `3m`, `1h` into whole
/// nanoseconds (rounded to the nearest). Plain `0` is accepted; any other
/// number needs a unit.
pub fn parse_duration_ns(s: &str) -> Result<u64, UnitError> {
    let bad = || UnitError::Duration(s.trim().to_string());
    let (num, unit) = split(s).ok_or_else(bad)?;
    let mult = duration_mult(s, &num, unit)?;
    let total = num
        .mant
        .checked_mul(mult)
        .ok_or_else(|| too_large_duration(s))?;
    let den = pow10(num.frac_digits);
    let ns = total
        .checked_add(den / 2)
        .ok_or_else(|| too_large_duration(s))?
        / den;
    u64::try_from(ns).map_err(|_| too_large_duration(s))
}

/// Like [`parse_duration_ns`] but keeps fractions of a nanosecond
/// (`1.5ns` is 1.5). The result is the nearest `f64` for all ordinary
/// inputs.
pub fn parse_duration_ns_f64(s: &str) -> Result<f64, UnitError> {
    let bad = || UnitError::Duration(s.trim().to_string());
    let (num, unit) = split(s).ok_or_else(bad)?;
    let mult = duration_mult(s, &num, unit)?;
    Ok(num.to_f64(mult))
}

/// Parses a size such as `1500`, `1500B`, `64k` (64000), `64KiB` (65536),
/// `1M`, `1MiB` into bytes. The result must be a whole number of bytes.
pub fn parse_bytes(s: &str) -> Result<u64, UnitError> {
    let (num, mult) = bytes_parts(s)?;
    let total = num
        .mant
        .checked_mul(mult)
        .ok_or_else(|| too_large_bytes(s))?;
    let den = pow10(num.frac_digits);
    if total % den != 0 || num.dropped {
        return Err(UnitError::FractionalBytes(s.trim().to_string()));
    }
    u64::try_from(total / den).map_err(|_| too_large_bytes(s))
}

/// Like [`parse_bytes`] but allows fractions (used for distribution
/// parameters such as a standard deviation of 10.5 bytes).
pub fn parse_bytes_f64(s: &str) -> Result<f64, UnitError> {
    let (num, mult) = bytes_parts(s)?;
    Ok(num.to_f64(mult))
}

/// Parses a packet rate such as `500pps`, `10kpps`, `1Mpps` or `1000`
/// (plain = packets per second) into packets per second.
pub fn parse_rate_pps(s: &str) -> Result<f64, UnitError> {
    let bad = || UnitError::Rate(s.trim().to_string());
    let (num, unit) = split(s).ok_or_else(bad)?;
    let mult: u128 = match unit {
        "" | "pps" | "/s" => 1,
        "kpps" | "Kpps" => 1_000,
        "Mpps" => 1_000_000,
        "Gpps" => 1_000_000_000,
        _ => return Err(bad()),
    };
    Ok(num.to_f64(mult))
}

/// Parses a bit rate into bits per second: `10kbit`, `50Mbit`, `1Gbit`,
/// `100Mbps`, `100Mb/s` (bits, powers of 1000) or `12MB/s` (bytes per
/// second, ×8). A plain number means bit/s.
pub fn parse_bitrate_bps(s: &str) -> Result<f64, UnitError> {
    let bad = || UnitError::Bitrate(s.trim().to_string());
    let (num, unit) = split(s).ok_or_else(bad)?;
    if unit.is_empty() {
        return Ok(num.to_f64(1));
    }
    let (prefix, rest) = match unit.as_bytes()[0] {
        b'k' | b'K' => (1_000u128, &unit[1..]),
        b'M' => (1_000_000, &unit[1..]),
        b'G' => (1_000_000_000, &unit[1..]),
        b'T' => (1_000_000_000_000, &unit[1..]),
        _ => (1, unit),
    };
    let per_unit: u128 = match rest {
        "bit" | "bits" | "b" | "bps" | "bit/s" | "bits/s" | "b/s" => 1,
        "B/s" => 8,
        _ => return Err(bad()),
    };
    Ok(num.to_f64(prefix * per_unit))
}

/// Formats nanoseconds for humans with three significant digits and an
/// ASCII unit: `850 ns`, `12.3 us`, `1.23 ms`, `2.50 s`. Whole nanosecond
/// values below 1000 print without decimals. Negative values keep their
/// sign (lateness can be negative); NaN and infinities print as such.
pub fn format_ns(ns: f64) -> String {
    if !ns.is_finite() {
        return format!("{ns} ns");
    }
    let a = ns.abs();
    let (v, unit) = if a < 999.5 {
        if ns.fract() == 0.0 {
            return format!("{ns:.0} ns");
        }
        (ns, "ns")
    } else if a < 999_500.0 {
        (ns / 1e3, "us")
    } else if a < 999_500_000.0 {
        (ns / 1e6, "ms")
    } else {
        (ns / 1e9, "s")
    };
    let av = v.abs();
    if av >= 99.95 {
        format!("{v:.0} {unit}")
    } else if av >= 9.995 {
        format!("{v:.1} {unit}")
    } else {
        format!("{v:.2} {unit}")
    }
}

/// Parses a plain unitless decimal (shape parameters, factors).
pub fn parse_number(s: &str) -> Result<f64, UnitError> {
    match split(s) {
        Some((num, "")) => Ok(num.to_f64(1)),
        _ => Err(UnitError::Number(s.trim().to_string())),
    }
}

/// An exact decimal: `mant / 10^frac_digits`.
struct Decimal<'a> {
    text: &'a str,
    mant: u128,
    frac_digits: u32,
    /// A non-zero digit beyond [`MAX_FRAC`] was dropped from `mant`.
    dropped: bool,
}

impl Decimal<'_> {
    /// `self * mult` as the nearest f64 (exact decimal arithmetic when it
    /// fits in 53 bits, otherwise the float parse times `mult`).
    fn to_f64(&self, mult: u128) -> f64 {
        const EXACT: u128 = 1 << 53;
        if let Some(total) = self.mant.checked_mul(mult) {
            let den = pow10(self.frac_digits);
            if total % den == 0 && !self.dropped {
                // A whole number (`555555.100502s`): u128 to f64 rounds correctly.
                return (total / den) as f64;
            }
            if total <= EXACT && self.frac_digits <= 22 {
                // Both operands are exact f64 values: one correctly rounded division.
                return total as f64 / pow10(self.frac_digits) as f64;
            }
        }
        self.text.parse::<f64>().unwrap_or(f64::NAN) * mult as f64
    }
}

/// Most fraction digits kept; digits beyond are below 1e-30 and dropped.
const MAX_FRAC: usize = 30;

fn pow10(n: u32) -> u128 {
    10u128.pow(n.min(MAX_FRAC as u32))
}

/// Splits `s` into a decimal number and the (trimmed) unit after it.
/// Returns `None` if there is no number or it has too many digits.
fn split(s: &str) -> Option<(Decimal<'_>, &str)> {
    let s = s.trim();
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() && b[i].is_ascii_digit() {
        i += 1;
    }
    let int_end = i;
    let mut frac_end = i;
    if i < b.len() && b[i] == b'.' {
        i += 1;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        frac_end = i;
    }
    let int_part = &s[..int_end];
    let frac_part = if frac_end > int_end {
        &s[int_end + 1..frac_end]
    } else {
        ""
    };
    if int_part.is_empty() && frac_part.is_empty() {
        return None;
    }
    let dropped = frac_part.bytes().skip(MAX_FRAC).any(|d| d != b'0');
    let frac_part = &frac_part[..frac_part.len().min(MAX_FRAC)];
    let mut mant: u128 = 0;
    for d in int_part.bytes().chain(frac_part.bytes()) {
        mant = mant.checked_mul(10)?.checked_add(u128::from(d - b'0'))?;
    }
    let num = Decimal {
        text: &s[..frac_end.max(int_end)],
        mant,
        frac_digits: frac_part.len() as u32,
        dropped,
    };
    Some((num, s[i..].trim_start()))
}

fn duration_mult(input: &str, num: &Decimal<'_>, unit: &str) -> Result<u128, UnitError> {
    Ok(match unit {
        "ns" => 1,
        "us" | "µs" | "μs" => 1_000,
        "ms" => 1_000_000,
        "s" => 1_000_000_000,
        "m" | "min" => 60_000_000_000,
        "h" => 3_600_000_000_000,
        "" if num.mant == 0 => 1,
        "" => return Err(UnitError::DurationWithoutUnit(input.trim().to_string())),
        _ => return Err(UnitError::Duration(input.trim().to_string())),
    })
}

fn bytes_parts(s: &str) -> Result<(Decimal<'_>, u128), UnitError> {
    let bad = || UnitError::Bytes(s.trim().to_string());
    let (num, unit) = split(s).ok_or_else(bad)?;
    let mult: u128 = match unit {
        "" | "B" => 1,
        "k" | "K" | "kB" | "KB" => 1_000,
        "M" | "MB" => 1_000_000,
        "G" | "GB" => 1_000_000_000,
        "Ki" | "KiB" => 1 << 10,
        "Mi" | "MiB" => 1 << 20,
        "Gi" | "GiB" => 1 << 30,
        _ => return Err(bad()),
    };
    Ok((num, mult))
}

fn too_large_duration(s: &str) -> UnitError {
    UnitError::TooLarge {
        what: "duration",
        input: s.trim().to_string(),
        max: "about 584 years",
    }
}

fn too_large_bytes(s: &str) -> UnitError {
    UnitError::TooLarge {
        what: "size",
        input: s.trim().to_string(),
        max: "2^64-1 bytes",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration_ns("10us"), Ok(10_000));
        assert_eq!(parse_duration_ns("2.5ms"), Ok(2_500_000));
        assert_eq!(parse_duration_ns("1s"), Ok(1_000_000_000));
        assert_eq!(parse_duration_ns("500ns"), Ok(500));
        assert_eq!(parse_duration_ns("3m"), Ok(180_000_000_000));
        assert_eq!(parse_duration_ns("1h"), Ok(3_600_000_000_000));
        assert_eq!(parse_duration_ns("1µs"), Ok(1_000));
        assert_eq!(parse_duration_ns("1μs"), Ok(1_000));
        assert_eq!(parse_duration_ns(" 10 us "), Ok(10_000));
        assert_eq!(parse_duration_ns(".5s"), Ok(500_000_000));
        assert_eq!(parse_duration_ns("1.5ns"), Ok(2));
        assert_eq!(parse_duration_ns("0"), Ok(0));
        assert_eq!(parse_duration_ns("0.0"), Ok(0));
        assert_eq!(parse_duration_ns_f64("1.5ns"), Ok(1.5));
        assert_eq!(parse_duration_ns_f64("0.1ms"), Ok(100_000.0));
    }

    #[test]
    fn duration_errors_say_what_is_accepted() {
        let e = parse_duration_ns("10xs").unwrap_err();
        assert_eq!(
            e.to_string(),
            "invalid duration \"10xs\": use a number with ns, us, ms, s, m or h (e.g. 2.5ms)"
        );
        let e = parse_duration_ns("10").unwrap_err();
        assert!(matches!(e, UnitError::DurationWithoutUnit(_)));
        assert!(e.to_string().contains("10us"), "{e}");
        for bad in ["", "ms", "-1ms", "1e3ns", "inf", "nan", "1..2ms", "1MS"] {
            assert!(parse_duration_ns(bad).is_err(), "{bad}");
        }
        assert!(matches!(
            parse_duration_ns("99999999999999h"),
            Err(UnitError::TooLarge { .. })
        ));
        assert!(parse_duration_ns(&"9".repeat(100)).is_err());
    }

    /// Found by fuzz_genspec: a whole number of ns written with a fraction of a larger
    /// unit came out 0.06 ns off (through the float parse), so a spec's canonical form
    /// did not parse back to it.
    #[test]
    fn whole_values_are_exact_in_any_unit() {
        assert_eq!(
            parse_duration_ns_f64("555555.100502s"),
            Ok(555_555_100_502_000.0)
        );
        assert_eq!(
            parse_duration_ns_f64("555555100502us"),
            parse_duration_ns_f64("555555.100502s")
        );
    }

    #[test]
    fn bytes() {
        assert_eq!(parse_bytes("100"), Ok(100));
        assert_eq!(parse_bytes("1500B"), Ok(1500));
        assert_eq!(parse_bytes("64k"), Ok(64_000));
        assert_eq!(parse_bytes("64KiB"), Ok(65_536));
        assert_eq!(parse_bytes("1M"), Ok(1_000_000));
        assert_eq!(parse_bytes("1MiB"), Ok(1 << 20));
        assert_eq!(parse_bytes("1.5k"), Ok(1500));
        assert_eq!(parse_bytes("0.3k"), Ok(300));
        assert!(matches!(
            parse_bytes("1.5B"),
            Err(UnitError::FractionalBytes(_))
        ));
        let e = parse_bytes("12xb").unwrap_err().to_string();
        assert!(e.contains("KiB"), "{e}");
        assert!(parse_bytes("99999999999999999999").is_err());
        assert_eq!(parse_bytes_f64("10.5"), Ok(10.5));
        // Found by fuzz_units: a fraction beyond the 30 digits kept was taken for 0.
        let tiny = format!("0.{}4", "0".repeat(38));
        assert!(matches!(
            parse_bytes(&tiny),
            Err(UnitError::FractionalBytes(_))
        ));
        assert_eq!(parse_bytes(&format!("1.{}", "0".repeat(40))), Ok(1));
    }

    #[test]
    fn rates() {
        assert_eq!(parse_rate_pps("10kpps"), Ok(10_000.0));
        assert_eq!(parse_rate_pps("1Mpps"), Ok(1_000_000.0));
        assert_eq!(parse_rate_pps("500pps"), Ok(500.0));
        assert_eq!(parse_rate_pps("1000"), Ok(1000.0));
        assert_eq!(parse_rate_pps("2.5kpps"), Ok(2500.0));
        assert!(parse_rate_pps("10kbit")
            .unwrap_err()
            .to_string()
            .contains("kpps"));
    }

    #[test]
    fn bitrates() {
        assert_eq!(parse_bitrate_bps("50Mbit"), Ok(50e6));
        assert_eq!(parse_bitrate_bps("1Gbit"), Ok(1e9));
        assert_eq!(parse_bitrate_bps("10kbit"), Ok(10e3));
        assert_eq!(parse_bitrate_bps("100Mbps"), Ok(100e6));
        assert_eq!(parse_bitrate_bps("100Mb/s"), Ok(100e6));
        assert_eq!(parse_bitrate_bps("12MB/s"), Ok(96e6));
        assert_eq!(parse_bitrate_bps("1000"), Ok(1000.0));
        assert_eq!(parse_bitrate_bps("1.5Gbit/s"), Ok(1.5e9));
        let e = parse_bitrate_bps("12MB").unwrap_err().to_string();
        assert!(e.contains("MB/s"), "{e}");
    }

    #[test]
    fn formatting() {
        assert_eq!(format_ns(850.0), "850 ns");
        assert_eq!(format_ns(0.0), "0 ns");
        assert_eq!(format_ns(1_234_567.0), "1.23 ms");
        assert_eq!(format_ns(12_345.0), "12.3 us");
        assert_eq!(format_ns(999.7), "1.00 us");
        assert_eq!(format_ns(2.5e9), "2.50 s");
        assert_eq!(format_ns(-1500.0), "-1.50 us");
        assert_eq!(format_ns(3.25), "3.25 ns");
        assert_eq!(format_ns(f64::NAN), "NaN ns");
    }

    proptest::proptest! {
        #[test]
        fn parsers_never_panic(s in "\\PC*") {
            let _ = parse_duration_ns(&s);
            let _ = parse_duration_ns_f64(&s);
            let _ = parse_bytes(&s);
            let _ = parse_bytes_f64(&s);
            let _ = parse_rate_pps(&s);
            let _ = parse_bitrate_bps(&s);
            let _ = parse_number(&s);
        }

        #[test]
        fn unit_like_input_never_panics(s in "[0-9.]{0,40}[ ]?(ns|us|µs|ms|s|m|h|k|KiB|MiB|B|kpps|Mbit|MB/s|x)?") {
            let _ = parse_duration_ns(&s);
            let _ = parse_bytes(&s);
            let _ = parse_rate_pps(&s);
            let _ = parse_bitrate_bps(&s);
        }

        #[test]
        fn format_never_panics(x in proptest::num::f64::ANY) {
            let _ = format_ns(x);
        }
    }

    #[test]
    fn numbers() {
        assert_eq!(parse_number("1.5"), Ok(1.5));
        assert!(parse_number("1.5x").is_err());
        assert!(parse_number("").is_err());
    }
}

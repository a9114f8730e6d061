//! iproute2 `.dist` tables: the delay distributions of netem
//! (`normal.dist`, `pareto.dist`, … made by iproute2's `maketable`).
//!
//! Format (as tc reads it): lines starting with `#` are comments; every
//! other line holds blank-separated integers read like C's `strtol` with
//! base 0 (`-123`, `0x1f`, and a leading `0` means octal). Each entry is an
//! inverse-CDF sample of the standardised distribution times
//! [`NETEM_DIST_SCALE`] (8192), in a signed 16-bit integer; the entries are
//! equally likely. tc takes at most [`NETEM_DIST_MAX`] entries. Unlike tc,
//! text that is not a number is an error, not the end of the line.
//!
//! Sampling: with `u` uniform in [0, 1), [`DistTable::sample`] gives the
//! standardised value `table[floor(u * len)] / 8192`, so a delay is
//! `mu + sigma * sample(u)`. iproute2's tables have mean ≈ 0; σ is 1.00 for
//! `normal.dist` and 0.82–0.88 for the Pareto and experimental ones, whose
//! tails the 16-bit entries clip.
//! [`DistTable::netem_delay`] reproduces the kernel's integer arithmetic
//! (`tabledist`) exactly for a 32-bit random number.

use std::io::{BufRead, Write};

use super::error::{ErrorKind, TraceError};
use super::lines::{Line, Lines};

/// netem's fixed-point scale of table entries.
pub const NETEM_DIST_SCALE: i64 = 8192;
/// The most entries netem takes.
pub const NETEM_DIST_MAX: usize = 16384;
/// Longest line: a whole table written on one line still fits.
const MAX_DIST_LINE: usize = NETEM_DIST_MAX * 8;

/// A loaded `.dist` table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DistTable {
    table: Vec<i16>,
}

impl DistTable {
    /// A table of entries (1 ..= [`NETEM_DIST_MAX`] of them).
    pub fn from_entries(table: Vec<i16>) -> Option<DistTable> {
        (!table.is_empty() && table.len() <= NETEM_DIST_MAX).then_some(DistTable { table })
    }

    /// Reads a `.dist` file.
    pub fn read<R: BufRead>(input: R) -> Result<DistTable, TraceError> {
        let mut lines = Lines::new(input, MAX_DIST_LINE);
        let mut table = Vec::new();
        while let Some(line) = lines.next_line() {
            let line = line?;
            parse_line(&line, &mut table)?;
        }
        if table.is_empty() {
            return Err(TraceError::new(lines.end_pos(), ErrorKind::Empty));
        }
        Ok(DistTable { table })
    }

    pub fn entries(&self) -> &[i16] {
        &self.table
    }

    pub fn len(&self) -> usize {
        self.table.len()
    }

    pub fn is_empty(&self) -> bool {
        self.table.is_empty()
    }

    /// The standardised value for `u` in [0, 1) (clamped into it):
    /// `table[floor(u * len)] / 8192`.
    pub fn sample(&self, u: f64) -> f64 {
        let n = self.table.len();
        let i = if u.is_nan() {
            0
        } else {
            ((u.clamp(0.0, 1.0) * n as f64) as usize).min(n - 1)
        };
        f64::from(self.table[i]) / NETEM_DIST_SCALE as f64
    }

    /// netem's `tabledist`: `mu + sigma * table[rnd % len] / 8192`, in its
    /// integer arithmetic (the product rounded half away from zero), in the
    /// caller's time unit. `sigma == 0` gives `mu`; the sum saturates.
    pub fn netem_delay(&self, mu: i64, sigma: i32, rnd: u32) -> i64 {
        if sigma == 0 {
            return mu;
        }
        let t = i64::from(self.table[rnd as usize % self.table.len()]);
        let sigma = i64::from(sigma);
        let mut x = (sigma % NETEM_DIST_SCALE) * t;
        if x >= 0 {
            x += NETEM_DIST_SCALE / 2;
        } else {
            x -= NETEM_DIST_SCALE / 2;
        }
        (x / NETEM_DIST_SCALE + (sigma / NETEM_DIST_SCALE) * t).saturating_add(mu)
    }

    /// Writes the table as `maketable` does: a comment, then eight entries
    /// per line.
    pub fn write<W: Write>(&self, mut out: W, comment: &str) -> std::io::Result<()> {
        for c in comment.lines() {
            writeln!(out, "# {c}")?;
        }
        for chunk in self.table.chunks(8) {
            for v in chunk {
                write!(out, " {v}")?;
            }
            writeln!(out)?;
        }
        out.flush()
    }
}

fn parse_line(line: &Line<'_>, table: &mut Vec<i16>) -> Result<(), TraceError> {
    for tok in line.text.split_whitespace() {
        let at = line.offset_of(tok);
        let v = strtol(tok).ok_or_else(|| {
            line.err(
                at,
                ErrorKind::NotNumber {
                    what: ".dist entry",
                    expected: "an integer",
                    found: tok.to_string(),
                },
            )
        })?;
        let v = i16::try_from(v).map_err(|_| line.err(at, ErrorKind::DistRange(v)))?;
        if table.len() == NETEM_DIST_MAX {
            return Err(line.err(at, ErrorKind::DistTooLong(NETEM_DIST_MAX)));
        }
        table.push(v);
    }
    Ok(())
}

/// C's `strtol(s, _, 0)` over a whole token: sign, then `0x` hex, `0`
/// octal or decimal. Out-of-range values saturate (reported by the caller).
fn strtol(s: &str) -> Option<i64> {
    let (neg, body) = match s.as_bytes().first()? {
        b'-' => (true, &s[1..]),
        b'+' => (false, &s[1..]),
        _ => (false, s),
    };
    let (radix, digits) =
        if let Some(h) = body.strip_prefix("0x").or_else(|| body.strip_prefix("0X")) {
            (16, h)
        } else if body.len() > 1 && body.starts_with('0') {
            (8, &body[1..])
        } else {
            (10, body)
        };
    if digits.is_empty() || !digits.chars().all(|c| c.is_digit(radix)) {
        return None;
    }
    let v = i64::from_str_radix(digits, radix).unwrap_or(i64::MAX);
    Some(if neg { -v } else { v })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The first lines of iproute2's normal.dist (maketable output).
    const NORMAL_HEAD: &str = "# This is the distribution table for the normal distribution.\n \
        -32768 -28307 -26871 -25967 -25298 -24765 -24320 -23937\n \
        -23600 -23298 -23025 -22776 -22546 -22333 -22133 -21946\n";

    #[test]
    fn reads_maketable_output() {
        let t = DistTable::read(NORMAL_HEAD.as_bytes()).unwrap();
        assert_eq!(t.len(), 16);
        assert_eq!(t.entries()[..3], [-32768, -28307, -26871]);
        assert_eq!(t.sample(0.0), -4.0);
        assert_eq!(t.sample(0.999), -21946.0 / 8192.0);
        let mut out = Vec::new();
        t.write(
            &mut out,
            "This is the distribution table for the normal distribution.",
        )
        .unwrap();
        assert_eq!(String::from_utf8(out).unwrap(), NORMAL_HEAD);
        assert_eq!(DistTable::read(NORMAL_HEAD.as_bytes()).unwrap(), t);
    }

    #[test]
    fn strtol_base_zero() {
        let t = DistTable::read(&b"0x10 -010 +7 0 -0x7fff\n"[..]).unwrap();
        assert_eq!(t.entries(), [16, -8, 7, 0, -32767]);
    }

    #[test]
    fn netem_integer_arithmetic() {
        let t = DistTable::from_entries(vec![8192, -8192, 4096, -3]).unwrap();
        // mu + sigma * t / 8192, rounded as the kernel does.
        assert_eq!(t.netem_delay(1000, 100, 0), 1100);
        assert_eq!(t.netem_delay(1000, 100, 1), 900);
        assert_eq!(t.netem_delay(1000, 100, 2), 1050);
        assert_eq!(t.netem_delay(1000, 10000, 3), 1000 - 4); // -3.66 rounds to -4
        assert_eq!(t.netem_delay(1000, 100, 4), 1100); // rnd % len
        assert_eq!(t.netem_delay(1000, 0, 1), 1000);
        assert_eq!(t.netem_delay(0, 20000, 0), 20000);
    }

    #[test]
    fn bad_input() {
        let e = |s: &str| {
            DistTable::read(s.as_bytes())
                .unwrap_err()
                .in_file("x.dist")
                .to_string()
        };
        assert_eq!(e("# c\n"), "x.dist:2:1: empty trace: no records");
        assert_eq!(
            e("1 2\n 3 4a\n"),
            "x.dist:2:4: .dist entry: expected an integer, found \"4a\""
        );
        assert_eq!(
            e("1 40000\n"),
            "x.dist:1:3: 40000 does not fit a .dist entry (-32768 ..= 32767)"
        );
        let long = "1 ".repeat(NETEM_DIST_MAX + 1);
        assert_eq!(
            e(&long),
            format!(
                "x.dist:1:{}: more than 16384 .dist entries (netem's maximum)",
                2 * NETEM_DIST_MAX + 1
            )
        );
        assert!(DistTable::from_entries(vec![]).is_none());
    }
}

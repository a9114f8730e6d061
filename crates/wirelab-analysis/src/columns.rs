//! The tables `wirelab export` writes, defined once for every format:
//! column names, value types, nullability and a line of documentation.
//! CSV and JSON lines (this crate) and Parquet (`wirelab-export`) take
//! their headers, keys and schemas from here, and docs/analyze.md lists
//! the same columns.

use std::io::{self, Write};

/// A column's values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ColType {
    /// 0..=255 (flag bytes, TOS).
    U8,
    /// 0..=2^32−1 (flow ids, sizes, counts).
    U32,
    /// A count, sequence number or time in ns. Parquet stores it as a
    /// signed 64-bit integer (what DuckDB, pandas and Spark read as an
    /// ordinary integer); a value above 2^63−1, which wirelab never
    /// writes, is refused with an error naming the column.
    U64,
    /// A signed ns difference.
    I64,
    Bool,
    /// A short name (a record kind).
    Str,
}

/// One column of an exported table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Column {
    pub name: &'static str,
    pub ty: ColType,
    /// The value may be absent (CSV: empty field; JSON: `null`).
    pub nullable: bool,
    pub doc: &'static str,
}

const fn col(name: &'static str, ty: ColType, nullable: bool, doc: &'static str) -> Column {
    Column {
        name,
        ty,
        nullable,
        doc,
    }
}

/// One record of a record file, every field as stored (0 = none for
/// times): `wirelab export FILE`.
pub const RECORD_COLUMNS: [Column; 12] = [
    col("flow", ColType::U32, false, "flow id"),
    col(
        "kind",
        ColType::Str,
        false,
        "tx, rx, echo_reply or emulated (the emulator's log)",
    ),
    col("seq", ColType::U64, false, "sequence number in the flow"),
    col("size_bytes", ColType::U32, false, "UDP payload bytes"),
    col(
        "sched_ns",
        ColType::U64,
        false,
        "scheduled send, ns since the sender's start (0 = none)",
    ),
    col(
        "tx_ns",
        ColType::U64,
        false,
        "send time, sender's wall clock, ns since the Unix epoch",
    ),
    col(
        "rx_ns",
        ColType::U64,
        false,
        "receive time, ns since the Unix epoch (0 = none)",
    ),
    col(
        "refl_rx_ns",
        ColType::U64,
        false,
        "reflector's receive time on echo replies (0 = none)",
    ),
    col(
        "refl_tx_ns",
        ColType::U64,
        false,
        "reflector's send time on echo replies (0 = none)",
    ),
    col("probe_flags", ColType::U8, false, "probe flag bits"),
    col("rec_flags", ColType::U8, false, "record flag bits"),
    col("tos", ColType::U8, false, "IP TOS byte"),
];

/// One probe sent, joined with its arrivals: `wirelab export TX RX`.
pub const PACKET_COLUMNS: [Column; 13] = [
    col("flow", ColType::U32, false, "flow id"),
    col("seq", ColType::U64, false, "sequence number in the flow"),
    col("size_bytes", ColType::U32, false, "UDP payload bytes sent"),
    col(
        "sched_ns",
        ColType::U64,
        false,
        "scheduled send, ns since the sender's start",
    ),
    col(
        "tx_ns",
        ColType::U64,
        false,
        "send time, sender's wall clock, ns since the Unix epoch",
    ),
    col(
        "rx_ns",
        ColType::U64,
        true,
        "first arrival, receiver's clock, ns since the Unix epoch; null when lost",
    ),
    col(
        "owd_ns",
        ColType::I64,
        true,
        "one-way delay rx_ns − the probe's send time, uncorrected for the offset between the hosts' clocks; null when lost or unstamped",
    ),
    col("lost", ColType::Bool, false, "never received"),
    col(
        "duplicates",
        ColType::U32,
        false,
        "arrivals after the first (end-marker repeats not counted)",
    ),
    col(
        "reordered",
        ColType::Bool,
        false,
        "its first arrival came after a higher sequence number (RFC 4737)",
    ),
    col(
        "warmup",
        ColType::Bool,
        false,
        "a warm-up probe (not in analyze's received or delay figures)",
    ),
    col("tos", ColType::U8, false, "IP TOS byte the sender set"),
    col(
        "rx_flags",
        ColType::U8,
        true,
        "receive record flag bits (1 kernel stamp, 2 NIC stamp); null when lost",
    ),
];

/// The CSV header line of a table (without the newline).
pub fn csv_header(cols: &[Column]) -> String {
    cols.iter().map(|c| c.name).collect::<Vec<_>>().join(",")
}

/// One value of a row, as the CSV and JSON lines exports write it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Value {
    U64(u64),
    I64(i64),
    Bool(bool),
    /// A name that needs no JSON escaping (a record kind).
    Name(&'static str),
    /// An absent value of a nullable column.
    Null,
}

impl Value {
    /// `v`, or [`Value::Null`] when absent.
    pub fn or_null<T: Into<Value>>(v: Option<T>) -> Value {
        v.map_or(Value::Null, Into::into)
    }

    // Millions of values a second: bytes written directly (itoa), not
    // through the formatting machinery.
    fn write_bare(self, w: &mut impl Write) -> io::Result<()> {
        match self {
            Value::U64(x) => w.write_all(itoa::Buffer::new().format(x).as_bytes()),
            Value::I64(x) => w.write_all(itoa::Buffer::new().format(x).as_bytes()),
            Value::Bool(b) => w.write_all(if b { b"true" } else { b"false" }),
            Value::Name(s) => w.write_all(s.as_bytes()),
            Value::Null => Ok(()),
        }
    }
}

impl From<u64> for Value {
    fn from(v: u64) -> Value {
        Value::U64(v)
    }
}

impl From<u32> for Value {
    fn from(v: u32) -> Value {
        Value::U64(v.into())
    }
}

impl From<u8> for Value {
    fn from(v: u8) -> Value {
        Value::U64(v.into())
    }
}

impl From<i64> for Value {
    fn from(v: i64) -> Value {
        Value::I64(v)
    }
}

impl From<bool> for Value {
    fn from(v: bool) -> Value {
        Value::Bool(v)
    }
}

/// Writes one CSV line of `values`: names as they are, nulls as empty
/// fields.
pub fn write_csv_line(w: &mut impl Write, values: &[Value]) -> io::Result<()> {
    for (i, v) in values.iter().enumerate() {
        if i > 0 {
            w.write_all(b",")?;
        }
        v.write_bare(w)?;
    }
    w.write_all(b"\n")
}

/// Writes one JSON object on a line, `values` keyed by the names of
/// `cols` (same order and length): names quoted, nulls `null`.
pub fn write_json_line(w: &mut impl Write, cols: &[Column], values: &[Value]) -> io::Result<()> {
    debug_assert_eq!(cols.len(), values.len());
    w.write_all(b"{")?;
    for (i, (c, v)) in cols.iter().zip(values).enumerate() {
        if i > 0 {
            w.write_all(b",")?;
        }
        w.write_all(b"\"")?;
        w.write_all(c.name.as_bytes())?;
        w.write_all(b"\":")?;
        match v {
            Value::Name(s) => {
                w.write_all(b"\"")?;
                w.write_all(s.as_bytes())?;
                w.write_all(b"\"")?;
            }
            Value::Null => w.write_all(b"null")?,
            v => v.write_bare(w)?,
        }
    }
    w.write_all(b"}\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn record_columns_are_the_csv_header() {
        assert_eq!(csv_header(&RECORD_COLUMNS), crate::export::CSV_HEADER);
    }

    #[test]
    fn names_are_unique_snake_case() {
        for cols in [&RECORD_COLUMNS[..], &PACKET_COLUMNS[..]] {
            let mut names: Vec<_> = cols.iter().map(|c| c.name).collect();
            assert!(names
                .iter()
                .all(|n| n.bytes().all(|b| b.is_ascii_lowercase() || b == b'_')));
            names.sort_unstable();
            names.dedup();
            assert_eq!(names.len(), cols.len());
        }
    }
}

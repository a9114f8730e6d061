//! Copies counted by fate: one count per row of the emulator's fate table
//! ([`wirelab_wire::FATES`]) and one for codes this version does not know.
//! Everything that names or lists the reasons reads the table, so a new
//! drop reason needs no change here, in the log reader or in the reports.

use serde::ser::{Serialize, SerializeMap, Serializer};
use wirelab_wire::record::{EmuFate, FateInfo, FATES};

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FateCounts {
    known: [u64; FATES.len()],
    other: u64,
}

impl FateCounts {
    pub fn add(&mut self, f: EmuFate) {
        self.add_n(f, 1);
    }

    pub fn add_n(&mut self, f: EmuFate, n: u64) {
        match f.info() {
            Some(_) => self.known[usize::from(f.code())] += n,
            None => self.other += n,
        }
    }

    /// The count of `f` (of every unknown code, for an `Other`).
    pub fn get(&self, f: EmuFate) -> u64 {
        match f.info() {
            Some(_) => self.known[usize::from(f.code())],
            None => self.other,
        }
    }

    pub fn merge(&mut self, o: &FateCounts) {
        for (a, b) in self.known.iter_mut().zip(o.known) {
            *a += b;
        }
        self.other += o.other;
    }

    /// Each drop reason (every known fate but `sent`) with its count, in
    /// code order.
    pub fn drops(&self) -> impl Iterator<Item = (&'static FateInfo, u64)> + '_ {
        FATES
            .iter()
            .zip(self.known)
            .filter(|(row, _)| row.fate != EmuFate::Sent)
    }

    /// Copies with a code this version does not know.
    pub fn other(&self) -> u64 {
        self.other
    }

    /// Every dropped copy, unknown codes included.
    pub fn total(&self) -> u64 {
        self.drops().map(|(_, n)| n).sum::<u64>() + self.other
    }

    /// "loss 3, limit 1" (nonzero reasons), or "none".
    pub fn text(&self) -> String {
        let v: Vec<String> = self
            .drops()
            .map(|(row, n)| (row.label, n))
            .chain([("other", self.other)])
            .filter(|(_, n)| *n > 0)
            .map(|(label, n)| format!("{label} {n}"))
            .collect();
        if v.is_empty() {
            "none".into()
        } else {
            v.join(", ")
        }
    }

    /// The drop reasons as `name: count` entries of a JSON object, in code
    /// order (unknown codes are not among them).
    pub fn serialize_drops<M: SerializeMap>(&self, map: &mut M) -> Result<(), M::Error> {
        for (row, n) in self.drops() {
            map.serialize_entry(row.name, &n)?;
        }
        Ok(())
    }
}

/// `{"loss": n, …, "link_down": n, "other": n}`.
impl Serialize for FateCounts {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(None)?;
        self.serialize_drops(&mut map)?;
        map.serialize_entry("other", &self.other)?;
        map.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_fate_counts_in_its_own_row_and_unknown_codes_in_other() {
        let mut c = FateCounts::default();
        for row in &FATES {
            c.add_n(row.fate, u64::from(row.fate.code()) + 1);
        }
        c.add(EmuFate::Other(77));
        c.add(EmuFate::Other(200));
        for row in &FATES {
            assert_eq!(
                c.get(row.fate),
                u64::from(row.fate.code()) + 1,
                "{}",
                row.name
            );
        }
        assert_eq!(c.get(EmuFate::Other(1)), 2);
        // 2 + … + 10 for the drop reasons (sent, code 0, is not a drop), 2 unknown.
        assert_eq!(c.total(), (2..=10).sum::<u64>() + 2);
        let mut twice = c;
        twice.merge(&c);
        assert_eq!(twice.total(), 2 * c.total());
    }

    #[test]
    fn json_has_one_key_per_drop_reason_in_code_order_then_other() {
        let mut c = FateCounts::default();
        c.add(EmuFate::Sent);
        c.add(EmuFate::TraceEnd);
        c.add_n(EmuFate::LinkDown, 4);
        assert_eq!(
            serde_json::to_string(&c).unwrap(),
            r#"{"loss":0,"trace":0,"trace_end":1,"limit":0,"horizon":0,"queue":0,"send_failure":0,"unsent":0,"link_down":4,"other":0}"#
        );
        assert_eq!(c.text(), "trace end 1, link down 4");
        assert_eq!(FateCounts::default().text(), "none");
    }
}

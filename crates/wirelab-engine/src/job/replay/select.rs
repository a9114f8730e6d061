//! `--include` / `--exclude` values: packet numbers or a BPF filter, in
//! tcpreplay's spellings. [`SelectSpec`] parses text without I/O (fuzzable);
//! [`SelectSpec::compile`] turns a filter into a program.

use crate::replay::{RangeError, Ranges, Selection};
use std::str::FromStr;
use thiserror::Error;
use wirelab_io::bpf::{BpfError, BpfProgram};

/// Which packets a selection names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SelectSpec {
    /// Packet numbers: `P:LIST`, or a plain list such as `7,11,20-23,174-`.
    Numbers(Ranges),
    /// A filter in tcpdump syntax: `F:EXPR`, or any text that is not a list.
    Filter(String),
}

#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum SelectError {
    #[error(transparent)]
    Numbers(RangeError),
    #[error(
        "{0:?}: tcpreplay's S:/D: address lists are not supported; use a BPF filter such as 'src net 10.0.0.0/8'"
    )]
    AddressList(String),
}

impl FromStr for SelectSpec {
    type Err = SelectError;

    fn from_str(s: &str) -> Result<SelectSpec, SelectError> {
        if let Some(r) = s.strip_prefix("P:") {
            return Ranges::parse(r)
                .map(SelectSpec::Numbers)
                .map_err(SelectError::Numbers);
        }
        if s.starts_with("S:") || s.starts_with("D:") {
            return Err(SelectError::AddressList(s.into()));
        }
        if let Some(f) = s.strip_prefix("F:") {
            return Ok(SelectSpec::Filter(f.into()));
        }
        match Ranges::parse(s) {
            Ok(r) if !r.0.is_empty() => Ok(SelectSpec::Numbers(r)),
            _ => Ok(SelectSpec::Filter(s.into())),
        }
    }
}

/// A selection ready to apply.
#[derive(Clone, Debug)]
pub enum Selector {
    Numbers(Ranges),
    Filter(BpfProgram),
}

impl SelectSpec {
    /// Compiles a filter for Ethernet frames.
    pub fn compile(self) -> Result<Selector, BpfError> {
        Ok(match self {
            SelectSpec::Numbers(r) => Selector::Numbers(r),
            SelectSpec::Filter(f) => Selector::Filter(BpfProgram::compile(&f, 1, 262_144)?),
        })
    }
}

/// The packets sent: those `include` and `packets` name (all when neither
/// is given), except those `exclude` names.
pub fn selection(
    include: Option<Selector>,
    exclude: Option<Selector>,
    packets: Option<Ranges>,
) -> Selection {
    let mut s = Selection::default();
    match include {
        Some(Selector::Numbers(r)) => s.include_ranges = r,
        Some(Selector::Filter(f)) => s.include_bpf = Some(f),
        None => {}
    }
    match exclude {
        Some(Selector::Numbers(r)) => s.exclude_ranges = r,
        Some(Selector::Filter(f)) => s.exclude_bpf = Some(f),
        None => {}
    }
    if let Some(p) = packets {
        s.include_ranges.0.extend(p.0);
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(s: &str) -> Result<SelectSpec, SelectError> {
        s.parse()
    }

    #[test]
    fn lists_and_filters_in_tcpreplay_spellings() {
        let nums = SelectSpec::Numbers(Ranges(vec![(7, Some(7)), (20, Some(23)), (174, None)]));
        assert_eq!(spec("7,20-23,174-"), Ok(nums.clone()));
        assert_eq!(spec("P:7,20-23,174-"), Ok(nums));
        assert_eq!(spec("F:udp"), Ok(SelectSpec::Filter("udp".into())));
        assert_eq!(spec("F:7"), Ok(SelectSpec::Filter("7".into())));
        assert_eq!(
            spec("src net 10.0.0.0/8"),
            Ok(SelectSpec::Filter("src net 10.0.0.0/8".into()))
        );
        assert_eq!(spec(""), Ok(SelectSpec::Filter(String::new())));
    }

    #[test]
    fn bad_lists_and_address_lists_are_refused_with_the_fix() {
        assert!(
            matches!(spec("P:0"), Err(SelectError::Numbers(m)) if m.to_string().contains("start at 1"))
        );
        assert!(matches!(spec("P:5-3"), Err(SelectError::Numbers(_))));
        let e = spec("S:10.0.0.0/8").unwrap_err();
        assert!(e.to_string().contains("src net"), "{e}");
        assert!(matches!(
            spec("D:1.2.3.4"),
            Err(SelectError::AddressList(_))
        ));
    }

    #[test]
    fn selection_joins_include_packets_and_exclude() {
        let r = |a, b| Ranges(vec![(a, Some(b))]);
        let s = selection(
            Some(Selector::Numbers(r(1, 10))),
            Some(Selector::Numbers(r(5, 6))),
            Some(r(20, 20)),
        );
        assert_eq!(
            s.include_ranges,
            Ranges(vec![(1, Some(10)), (20, Some(20))])
        );
        assert_eq!(s.exclude_ranges, r(5, 6));
        assert!(s.include_bpf.is_none() && s.exclude_bpf.is_none());
        let all = selection(None, None, None);
        assert!(all.include_ranges.0.is_empty() && all.exclude_ranges.0.is_empty());
    }

    #[test]
    fn filters_compile_or_say_why_not() {
        assert!(matches!(
            SelectSpec::Filter("udp port 53".into()).compile(),
            Ok(Selector::Filter(_))
        ));
        let e = SelectSpec::Filter("udp prt 53".into())
            .compile()
            .unwrap_err();
        assert!(e.to_string().contains("pcap-filter"), "{e}");
    }
}

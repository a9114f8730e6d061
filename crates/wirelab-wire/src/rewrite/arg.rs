//! Typed values of the rewrite options as users write them (tcprewrite's
//! spellings): parsed from text without I/O, each error naming the value
//! and what is accepted. Front ends use them as argument parsers.

use super::{parse_mac, SpecError, Vlan};
use std::str::FromStr;

/// A VLAN tag protocol identifier: 802.1Q (`802.1q`, `8100`, `0x8100`) or
/// 802.1ad (`802.1ad`, `88a8`, `0x88a8`), any case.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Tpid(pub u16);

impl FromStr for Tpid {
    type Err = SpecError;

    fn from_str(s: &str) -> Result<Tpid, SpecError> {
        match s.to_ascii_lowercase().as_str() {
            "802.1q" | "8100" | "0x8100" => Ok(Tpid(0x8100)),
            "802.1ad" | "88a8" | "0x88a8" => Ok(Tpid(0x88a8)),
            _ => Err(SpecError(format!(
                "{s:?}: expected 802.1q (0x8100) or 802.1ad (0x88a8)"
            ))),
        }
    }
}

/// A new source MAC: an address, or `if` for the sending interface's own,
/// which the caller looks up.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SourceMac {
    Addr([u8; 6]),
    Interface,
}

impl FromStr for SourceMac {
    type Err = SpecError;

    fn from_str(s: &str) -> Result<SourceMac, SpecError> {
        if s == "if" {
            return Ok(SourceMac::Interface);
        }
        parse_mac(s)
            .map(SourceMac::Addr)
            .map_err(|e| SpecError(format!("{e}, or `if` for the sending interface's MAC")))
    }
}

/// What to do with the outermost VLAN tag.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum VlanOp {
    Add,
    Del,
    Retag,
}

/// The fields given with a VLAN operation (tcprewrite's `--enet-vlan-tag`,
/// `-pri`, `-cfi`, `-proto`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct VlanFields {
    /// VLAN id, 0..=4095.
    pub vid: Option<u16>,
    /// Priority code point, 0..=7.
    pub pcp: Option<u8>,
    /// Drop eligible (CFI/DEI) bit, 0 or 1; used by `add`.
    pub dei: Option<u8>,
    pub tpid: Option<Tpid>,
}

impl Vlan {
    /// The operation `op` with `f`'s fields; `add` needs an id and defaults
    /// to 802.1Q, priority 0, DEI 0. Out-of-range fields are refused, never
    /// masked into other bits of the tag.
    pub fn from_fields(op: VlanOp, f: VlanFields) -> Result<Vlan, SpecError> {
        if let Some(v) = f.vid.filter(|&v| v > 4095) {
            return Err(SpecError(format!("VLAN id {v} is not in 0..=4095")));
        }
        if let Some(p) = f.pcp.filter(|&p| p > 7) {
            return Err(SpecError(format!("VLAN priority {p} is not in 0..=7")));
        }
        if let Some(d) = f.dei.filter(|&d| d > 1) {
            return Err(SpecError(format!("the CFI/DEI bit is 0 or 1, not {d}")));
        }
        Ok(match op {
            VlanOp::Add => {
                let vid = f
                    .vid
                    .ok_or_else(|| SpecError("adding a tag needs a VLAN id".into()))?;
                let tci = (u16::from(f.pcp.unwrap_or(0)) << 13)
                    | (u16::from(f.dei.unwrap_or(0)) << 12)
                    | vid;
                Vlan::Add {
                    tpid: f.tpid.map_or(0x8100, |t| t.0),
                    tci,
                }
            }
            VlanOp::Del => Vlan::Strip,
            VlanOp::Retag => Vlan::Retag {
                vid: f.vid,
                pcp: f.pcp,
                tpid: f.tpid.map(|t| t.0),
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tpids_in_every_spelling_and_nothing_else() {
        for s in ["802.1q", "802.1Q", "8100", "0x8100"] {
            assert_eq!(s.parse::<Tpid>(), Ok(Tpid(0x8100)), "{s}");
        }
        for s in ["802.1ad", "88A8", "0x88a8"] {
            assert_eq!(s.parse::<Tpid>(), Ok(Tpid(0x88a8)), "{s}");
        }
        for s in ["", "0x9100", "802.1", "qinq"] {
            let e = s.parse::<Tpid>().unwrap_err();
            assert!(e.0.contains("802.1q (0x8100)"), "{e}");
        }
    }

    #[test]
    fn source_mac_is_an_address_or_the_interface() {
        assert_eq!("if".parse(), Ok(SourceMac::Interface));
        assert_eq!(
            "02:00:00:00:00:0a".parse(),
            Ok(SourceMac::Addr([2, 0, 0, 0, 0, 10]))
        );
        let e = "iface".parse::<SourceMac>().unwrap_err();
        assert!(
            e.0.contains("not a MAC address") && e.0.contains("`if`"),
            "{e}"
        );
    }

    #[test]
    fn vlan_fields_build_the_tag_and_out_of_range_values_are_refused() {
        let f = VlanFields {
            vid: Some(100),
            pcp: Some(5),
            dei: Some(1),
            tpid: Some(Tpid(0x88a8)),
        };
        assert_eq!(
            Vlan::from_fields(VlanOp::Add, f),
            Ok(Vlan::Add {
                tpid: 0x88a8,
                tci: (5 << 13) | (1 << 12) | 100
            })
        );
        assert_eq!(
            Vlan::from_fields(VlanOp::Retag, VlanFields::default()),
            Ok(Vlan::Retag {
                vid: None,
                pcp: None,
                tpid: None
            })
        );
        assert_eq!(
            Vlan::from_fields(VlanOp::Del, VlanFields::default()),
            Ok(Vlan::Strip)
        );
        let err = |f| Vlan::from_fields(VlanOp::Add, f).unwrap_err().0;
        assert!(err(VlanFields::default()).contains("needs a VLAN id"));
        let bad = |vid, pcp, dei| VlanFields {
            vid: Some(vid),
            pcp: Some(pcp),
            dei: Some(dei),
            tpid: None,
        };
        assert!(err(bad(4096, 0, 0)).contains("0..=4095"));
        assert!(err(bad(1, 8, 0)).contains("0..=7"));
        assert!(err(bad(1, 0, 2)).contains("0 or 1"));
    }
}

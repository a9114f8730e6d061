//! Ethernet framing facts: how many bytes a frame occupies on the wire.
//!
//! The one wire-rate model of wirelab: replay's `--mbps` schedule with
//! `--rate-layer wire`, replay fidelity and the analysis rate model all
//! count with it. An L2 frame (destination MAC to payload, without FCS) is
//! padded to [`MIN_FRAME_BYTES`]; on the wire it also carries the FCS, the
//! preamble with SFD and the inter-frame gap ([`WIRE_EXTRA_BYTES`] in all).

/// Smallest L2 frame without FCS (64 with it); shorter frames are padded.
pub const MIN_FRAME_BYTES: u32 = 60;
/// Frame check sequence.
pub const FCS_BYTES: u32 = 4;
/// Preamble (7) and start frame delimiter (1).
pub const PREAMBLE_SFD_BYTES: u32 = 8;
/// Minimum inter-frame gap.
pub const IFG_BYTES: u32 = 12;
/// Bytes on the wire beyond the padded L2 frame: FCS, preamble and SFD, gap.
pub const WIRE_EXTRA_BYTES: u32 = FCS_BYTES + PREAMBLE_SFD_BYTES + IFG_BYTES;

/// How L2 frames map to wire bytes: the minimum frame and the per-frame
/// extra. [`Framing::ETHERNET`] is standard Ethernet; other values serve
/// what-if models (a link without padding, a different gap).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Framing {
    /// Smallest L2 frame (without FCS); shorter frames count as this long.
    pub min_frame_bytes: u32,
    /// Bytes per frame on the wire beyond the padded L2 frame.
    pub wire_extra_bytes: u32,
}

impl Framing {
    /// Standard Ethernet: frames padded to 60 bytes, 24 extra on the wire.
    pub const ETHERNET: Framing = Framing {
        min_frame_bytes: MIN_FRAME_BYTES,
        wire_extra_bytes: WIRE_EXTRA_BYTES,
    };

    /// The padded L2 frame for `l2_len` bytes (without FCS).
    pub fn frame_bytes(&self, l2_len: u64) -> u64 {
        l2_len.max(u64::from(self.min_frame_bytes))
    }

    /// Bytes a frame of `l2_len` L2 bytes (without FCS) occupies on the wire.
    pub fn wire_bytes(&self, l2_len: u64) -> u64 {
        self.frame_bytes(l2_len)
            .saturating_add(u64::from(self.wire_extra_bytes))
    }
}

use crate::headers::EthernetFrame;

/// Destination and source MAC and the EtherType.
pub const HEADER_BYTES: usize = 14;
/// One 802.1Q or 802.1ad tag.
pub const VLAN_TAG_BYTES: usize = 4;

/// Why a frame cannot leave through an Ethernet interface.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Misfit {
    /// Shorter than the Ethernet header.
    TooShort,
    /// Longer than the MTU plus the header (plus one tag, if tagged).
    TooLong,
}

/// Whether an L2 frame (without FCS) fits an Ethernet interface whose MTU
/// is `mtu`: at least the header, at most `mtu` + header, plus one tag's
/// bytes when the outer TPID is 802.1Q. This is the packet socket's own
/// rule (its extra-VLAN-length check reads only that TPID; 802.1ad and
/// 0x9100 frames, which every frame reader treats as tagged, get no
/// allowance): `sendmsg` refuses frames outside it (EINVAL, EMSGSIZE), and
/// a TX ring takes them and the kernel drops them without a word, so
/// senders check it before queuing.
pub fn egress_misfit(frame: &[u8], mtu: u32) -> Option<Misfit> {
    let Ok(eth) = EthernetFrame::new_checked(frame) else {
        return Some(Misfit::TooShort);
    };
    let allowance = if eth.ethertype() == KERNEL_VLAN_TPID {
        VLAN_TAG_BYTES
    } else {
        0
    };
    let max = mtu as usize + HEADER_BYTES + allowance;
    (frame.len() > max).then_some(Misfit::TooLong)
}

/// The one TPID the packet socket gives a tag's length beyond the MTU.
const KERNEL_VLAN_TPID: u16 = 0x8100;

/// Bytes a frame of `len` L2 bytes (without FCS) occupies on standard
/// Ethernet: padded to 60, plus FCS 4, preamble and SFD 8, inter-frame gap 12.
pub fn wire_bytes(len: u32) -> u64 {
    Framing::ETHERNET.wire_bytes(u64::from(len))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn egress_fit_is_header_to_mtu_plus_header_plus_one_tag() {
        let frame = |n: usize, ty: u16| {
            let mut f = vec![0u8; n];
            if n >= 14 {
                f[12..14].copy_from_slice(&ty.to_be_bytes());
            }
            f
        };
        for n in [0, 1, 13] {
            assert_eq!(egress_misfit(&frame(n, 0), 1500), Some(Misfit::TooShort));
        }
        for n in [14, 60, 1514] {
            assert_eq!(egress_misfit(&frame(n, 0x0800), 1500), None, "{n}");
        }
        for n in [1515, 1518] {
            assert_eq!(
                egress_misfit(&frame(n, 0x0800), 1500),
                Some(Misfit::TooLong)
            );
        }
        assert_eq!(egress_misfit(&frame(1518, 0x8100), 1500), None);
        assert_eq!(
            egress_misfit(&frame(1519, 0x8100), 1500),
            Some(Misfit::TooLong)
        );
        // Tagged to every frame reader, but the packet socket refuses
        // them past MTU + header.
        for ty in [0x88a8, 0x9100] {
            let f = frame(1518, ty);
            assert!(EthernetFrame::new_checked(&f[..]).unwrap().is_tagged());
            assert_eq!(egress_misfit(&frame(1514, ty), 1500), None);
            assert_eq!(egress_misfit(&f, 1500), Some(Misfit::TooLong), "{ty:x}");
        }
        assert_eq!(egress_misfit(&frame(9014, 0x0800), 9000), None);
    }

    #[test]
    fn ethernet_wire_bytes() {
        assert_eq!(WIRE_EXTRA_BYTES, 24);
        assert_eq!(wire_bytes(0), 84);
        assert_eq!(wire_bytes(60), 84);
        assert_eq!(wire_bytes(61), 85);
        assert_eq!(wire_bytes(1514), 1538);
        assert_eq!(wire_bytes(u32::MAX), u64::from(u32::MAX) + 24);
        let f = Framing {
            min_frame_bytes: 0,
            wire_extra_bytes: 0,
        };
        assert_eq!(f.wire_bytes(10), 10);
        assert_eq!(Framing::ETHERNET.frame_bytes(10), 60);
        assert_eq!(Framing::ETHERNET.wire_bytes(u64::MAX), u64::MAX);
    }
}

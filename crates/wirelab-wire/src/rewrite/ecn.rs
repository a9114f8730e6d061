//! The ECN field of an Ethernet frame's IP header (RFC 3168 §5): reading
//! it, and marking Congestion Experienced the way a router does, with the
//! IPv4 header checksum updated incrementally (RFC 1624).

use super::csum;
use super::layers::{parse_ethernet, L3Kind};

/// Not ECN-capable.
pub const NOT_ECT: u8 = 0b00;
/// Congestion Experienced.
pub const CE: u8 = 0b11;

/// The ECN codepoint of the frame's IP header (`None`: no IPv4 or IPv6
/// header in reach).
pub fn ecn_of(frame: &[u8]) -> Option<u8> {
    let (kind, p) = parse_ethernet(frame).l3?;
    match kind {
        L3Kind::V4 => frame.get(p + 1).map(|tos| tos & 0b11),
        L3Kind::V6 => frame.get(p + 1).map(|b| (b >> 4) & 0b11),
    }
}

/// Whether the frame says its transport reacts to CE (ECT(0), ECT(1) or
/// already CE).
pub fn is_ect(frame: &[u8]) -> bool {
    ecn_of(frame).is_some_and(|e| e != NOT_ECT)
}

/// Sets CE on an ECN-capable frame, as a congested router would instead
/// of dropping it; returns false (and leaves the frame alone) when it is
/// not ECN-capable. An IPv4 header checksum is updated for the change,
/// so a right one stays right.
pub fn mark_ce(frame: &mut [u8]) -> bool {
    if !is_ect(frame) {
        return false;
    }
    let Some((kind, p)) = parse_ethernet(frame).l3 else {
        return false;
    };
    match kind {
        L3Kind::V4 => {
            let old = [frame[p], frame[p + 1]];
            frame[p + 1] |= CE;
            let Some(c) = frame.get(p + 10..p + 12) else {
                return true;
            };
            let hc = u16::from_be_bytes([c[0], c[1]]);
            let new = csum::update(hc, &old, &[frame[p], frame[p + 1]]);
            frame[p + 10..p + 12].copy_from_slice(&new.to_be_bytes());
        }
        L3Kind::V6 => frame[p + 1] |= CE << 4,
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An Ethernet + IPv4 + 8-byte UDP frame with `tos`, right checksum.
    fn v4(tos: u8) -> Vec<u8> {
        let mut f = vec![0u8; 14 + 28];
        f[12..14].copy_from_slice(&0x0800u16.to_be_bytes());
        let ip = &mut f[14..34];
        ip[0] = 0x45;
        ip[1] = tos;
        ip[2..4].copy_from_slice(&28u16.to_be_bytes());
        ip[8] = 64;
        ip[9] = 17;
        ip[12..16].copy_from_slice(&[198, 18, 0, 1]);
        ip[16..20].copy_from_slice(&[198, 18, 0, 2]);
        let c = csum::finish(csum::sum(ip, 0));
        ip[10..12].copy_from_slice(&c.to_be_bytes());
        f
    }

    fn v4_checksum_ok(f: &[u8]) -> bool {
        csum::finish(csum::sum(&f[14..34], 0)) == 0
    }

    #[test]
    fn ipv4_ect_frames_get_ce_and_keep_a_right_checksum() {
        for (tos, ect) in [
            (0x00, false),
            (0x02, true),
            (0x01, true),
            (0xb8 | 0x02, true),
            (0x03, true),
        ] {
            let mut f = v4(tos);
            assert_eq!(ecn_of(&f), Some(tos & 3));
            assert_eq!(mark_ce(&mut f), ect, "tos {tos:#x}");
            let want = if ect { tos | CE } else { tos };
            assert_eq!(f[15], want, "DSCP kept, ECN set");
            assert!(v4_checksum_ok(&f), "tos {tos:#x}");
        }
    }

    #[test]
    fn ipv6_and_vlan_tagged_frames() {
        // VLAN tag, then IPv6 with traffic class 0x2e (DSCP 11, ECT(0)).
        let mut f = vec![0u8; 18 + 40];
        f[12..14].copy_from_slice(&0x8100u16.to_be_bytes());
        f[16..18].copy_from_slice(&0x86ddu16.to_be_bytes());
        f[18] = 0x60 | 0x02;
        f[19] = 0xe0;
        assert_eq!(ecn_of(&f), Some(0b10));
        assert!(mark_ce(&mut f));
        assert_eq!((f[18], f[19]), (0x62, 0xf0), "traffic class 0x2f");
        assert_eq!(ecn_of(&f), Some(CE));
    }

    #[test]
    fn frames_without_ip_are_not_ect() {
        let mut arp = vec![0u8; 42];
        arp[12..14].copy_from_slice(&0x0806u16.to_be_bytes());
        assert_eq!(ecn_of(&arp), None);
        assert!(!mark_ce(&mut arp));
        assert!(!mark_ce(&mut []));
    }
}

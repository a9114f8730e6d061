//! The rewriter's header parser as it was before the shared walk, kept
//! verbatim to compare the walk against.

use crate::rewrite::{L3Kind, Layers};

fn is_vlan_tpid(t: u16) -> bool {
    matches!(t, 0x8100 | 0x88a8 | 0x9100)
}

fn be16(b: &[u8], off: usize) -> Option<u16> {
    Some(u16::from_be_bytes([*b.get(off)?, *b.get(off + 1)?]))
}

/// Parses an Ethernet II / 802.3 frame.
pub fn parse_ethernet(b: &[u8]) -> Layers {
    let mut l = Layers::default();
    let Some(mut et) = be16(b, 12) else {
        return l;
    };
    let mut off = 12;
    while is_vlan_tpid(et) {
        off += 4;
        l.vlan_tags = l.vlan_tags.saturating_add(1);
        match be16(b, off) {
            Some(t) => et = t,
            None => return l,
        }
    }
    let mut p = off + 2;
    if et == 0x8847 || et == 0x8848 {
        // MPLS: walk to the bottom of the stack, then guess IP by version.
        for _ in 0..16 {
            let Some(&s) = b.get(p + 2) else { return l };
            p += 4;
            if s & 1 == 1 {
                break;
            }
        }
        et = match b.get(p).map(|v| v >> 4) {
            Some(4) => 0x0800,
            Some(6) => 0x86dd,
            _ => return l,
        };
    }
    match et {
        0x0800 => parse_ipv4(b, p, &mut l),
        0x86dd => parse_ipv6(b, p, &mut l),
        _ => {}
    }
    l
}

/// Parses a frame that starts with an IP header (LINKTYPE_RAW).
pub fn parse_raw_ip(b: &[u8]) -> Layers {
    let mut l = Layers::default();
    match b.first().map(|v| v >> 4) {
        Some(4) => parse_ipv4(b, 0, &mut l),
        Some(6) => parse_ipv6(b, 0, &mut l),
        _ => {}
    }
    l
}

fn parse_ipv4(b: &[u8], p: usize, l: &mut Layers) {
    let Some(&vihl) = b.get(p) else { return };
    let ihl = usize::from(vihl & 0x0f) * 4;
    if vihl >> 4 != 4 || ihl < 20 || b.len() < p + ihl {
        return;
    }
    let total = be16(b, p + 2).unwrap_or(0) as usize;
    let frag = be16(b, p + 6).unwrap_or(0);
    l.l3 = Some((L3Kind::V4, p));
    l.l3_hdr_len = ihl;
    l.ip_len = total;
    l.fragment = frag & 0x3fff != 0;
    if frag & 0x1fff == 0 {
        l.l4 = Some((b[p + 9], p + ihl));
    }
}

fn parse_ipv6(b: &[u8], p: usize, l: &mut Layers) {
    if b.len() < p + 40 || b[p] >> 4 != 6 {
        return;
    }
    l.l3 = Some((L3Kind::V6, p));
    l.ip_len = 40 + be16(b, p + 4).unwrap_or(0) as usize;
    let mut nh = b[p + 6];
    let mut q = p + 40;
    for _ in 0..8 {
        match nh {
            0 | 43 | 60 => {
                let (Some(&n), Some(&len)) = (b.get(q), b.get(q + 1)) else {
                    return;
                };
                nh = n;
                q += (usize::from(len) + 1) * 8;
            }
            51 => {
                let (Some(&n), Some(&len)) = (b.get(q), b.get(q + 1)) else {
                    return;
                };
                nh = n;
                q += (usize::from(len) + 2) * 4;
            }
            44 => {
                let (Some(&n), Some(fo)) = (b.get(q), be16(b, q + 2)) else {
                    return;
                };
                l.fragment = true;
                nh = n;
                q += 8;
                if fo >> 3 != 0 {
                    l.l3_hdr_len = q - p;
                    return;
                }
            }
            _ => break,
        }
    }
    l.l3_hdr_len = q - p;
    if q <= b.len() {
        l.l4 = Some((nh, q));
    }
}

//! Flows: what `per-flow MASK` and the schedulers (`sched drr`,
//! `sched fq_codel`) tell apart.
//!
//! The driver reads a frame's addresses, protocol and ports
//! ([`FlowTuple::from_frame`], wirelab-wire's frame walk) and hands
//! them to [`super::Link::arrive_flow`]; the link keeps the fields its
//! mask names ([`FlowMask::key`]). Frames that are not IP are one flow.

use std::fmt;
use std::net::IpAddr;

use wirelab_wire::headers::walk::walk_ethernet;

use super::rng::mix64;

/// The header fields a flow mask looks at, read from one frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct FlowTuple {
    /// Source address.
    pub src: IpAddr,
    /// Destination address.
    pub dst: IpAddr,
    /// IPv4 protocol or IPv6 next header (after extension headers).
    pub proto: u8,
    /// Source port (TCP, UDP, SCTP, DCCP, UDP-Lite); 0 for other
    /// protocols and fragments after the first.
    pub sport: u16,
    /// Destination port, as `sport`.
    pub dport: u16,
}

impl FlowTuple {
    /// The flow fields of an Ethernet frame (behind VLAN tags and MPLS);
    /// `None` if it carries no IPv4 or IPv6 header.
    pub fn from_frame(frame: &[u8]) -> Option<FlowTuple> {
        let t = walk_ethernet(frame).five_tuple()?;
        Some(FlowTuple {
            src: t.src,
            dst: t.dst,
            proto: t.proto,
            sport: t.sport,
            dport: t.dport,
        })
    }
}

/// Prefix lengths kept of an address: one for IPv4, one for IPv6.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AddrMask {
    /// Leading bits of an IPv4 address (0–32).
    pub v4: u8,
    /// Leading bits of an IPv6 address (0–128).
    pub v6: u8,
}

impl AddrMask {
    /// The whole address.
    pub const FULL: AddrMask = AddrMask { v4: 32, v6: 128 };

    fn apply(self, a: IpAddr) -> u128 {
        match a {
            IpAddr::V4(a) => {
                let bits = u32::from(a);
                let keep = if self.v4 == 0 {
                    0
                } else {
                    u32::MAX << (32 - u32::from(self.v4))
                };
                u128::from(bits & keep)
            }
            IpAddr::V6(a) => {
                let bits = u128::from(a);
                let keep = if self.v6 == 0 {
                    0
                } else {
                    u128::MAX << (128 - u32::from(self.v6))
                };
                bits & keep
            }
        }
    }
}

/// Which fields make a flow (`per-flow src/24,dport`): packets equal in
/// these fields are one flow.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct FlowMask {
    /// The source address, to these prefix lengths.
    pub src: Option<AddrMask>,
    /// The destination address, to these prefix lengths.
    pub dst: Option<AddrMask>,
    /// The protocol.
    pub proto: bool,
    /// The source port.
    pub sport: bool,
    /// The destination port.
    pub dport: bool,
}

/// A flow after masking: equal keys are one flow.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct FlowKey {
    /// 0: not IP; 4 or 6: the IP version.
    family: u8,
    proto: u8,
    sport: u16,
    dport: u16,
    src: u128,
    dst: u128,
}

impl FlowKey {
    /// A 64-bit hash of the key under `seed` (fq_codel's buckets).
    pub(crate) fn hash(&self, seed: u64) -> u64 {
        let mut h = mix64(seed ^ u64::from(self.family));
        for w in [
            (u64::from(self.proto) << 32) | (u64::from(self.sport) << 16) | u64::from(self.dport),
            self.src as u64,
            (self.src >> 64) as u64,
            self.dst as u64,
            (self.dst >> 64) as u64,
        ] {
            h = mix64(h ^ w);
        }
        h
    }
}

impl FlowMask {
    /// The 5-tuple: whole addresses, protocol, ports (fq_codel's default).
    pub const FIVE_TUPLE: FlowMask = FlowMask {
        src: Some(AddrMask::FULL),
        dst: Some(AddrMask::FULL),
        proto: true,
        sport: true,
        dport: true,
    };

    /// The key of a frame's flow; every frame without IP (`None`) has the
    /// same one.
    pub fn key(&self, t: Option<&FlowTuple>) -> FlowKey {
        let Some(t) = t else {
            return FlowKey::default();
        };
        let family = if t.src.is_ipv4() { 4 } else { 6 };
        FlowKey {
            family,
            proto: if self.proto { t.proto } else { 0 },
            sport: if self.sport { t.sport } else { 0 },
            dport: if self.dport { t.dport } else { 0 },
            src: self.src.map_or(0, |m| m.apply(t.src)),
            dst: self.dst.map_or(0, |m| m.apply(t.dst)),
        }
    }

    /// Parses `src/24,dport`: a comma-separated list of `src[/P[/P6]]`,
    /// `dst[/P[/P6]]`, `proto`, `sport`, `dport`. `/P` keeps the first P
    /// bits of IPv4 and IPv6 addresses alike (IPv4 at most 32);
    /// `/P4/P6` gives each family its own.
    pub fn parse(s: &str) -> Result<FlowMask, String> {
        let mut m = FlowMask::default();
        for item in s.split(',') {
            let mut parts = item.split('/');
            let name = parts.next().unwrap_or_default();
            let lens: Vec<&str> = parts.collect();
            let twice = || format!("{name} is given twice in the mask");
            match name {
                "src" | "dst" => {
                    let a = parse_prefix(name, &lens)?;
                    let slot = if name == "src" {
                        &mut m.src
                    } else {
                        &mut m.dst
                    };
                    if slot.replace(a).is_some() {
                        return Err(twice());
                    }
                }
                "proto" | "sport" | "dport" => {
                    if !lens.is_empty() {
                        return Err(format!(
                            "{name} takes no prefix length (only src and dst do)"
                        ));
                    }
                    let slot = match name {
                        "proto" => &mut m.proto,
                        "sport" => &mut m.sport,
                        _ => &mut m.dport,
                    };
                    if std::mem::replace(slot, true) {
                        return Err(twice());
                    }
                }
                "" => {
                    return Err(
                        "an empty field: write fields separated by commas, without spaces \
                         (e.g. src/24,dport)"
                            .to_string(),
                    )
                }
                _ => {
                    return Err(format!(
                        "unknown field {name:?}: expected src[/P], dst[/P], proto, sport or dport"
                    ))
                }
            }
        }
        Ok(m)
    }
}

fn parse_prefix(name: &str, lens: &[&str]) -> Result<AddrMask, String> {
    let num = |t: &str, max: u8, family: &str| -> Result<u8, String> {
        let n: u8 = t
            .parse()
            .map_err(|_| format!("{name}/{t}: the prefix length must be a whole number"))?;
        if n > max {
            return Err(format!("{name}/{t}: an {family} address has {max} bits"));
        }
        Ok(n)
    };
    match lens {
        [] => Ok(AddrMask::FULL),
        [p] => {
            let n = num(p, 128, "IPv6")?;
            Ok(AddrMask {
                v4: n.min(32),
                v6: n,
            })
        }
        [p4, p6] => Ok(AddrMask {
            v4: num(p4, 32, "IPv4")?,
            v6: num(p6, 128, "IPv6")?,
        }),
        _ => Err(format!(
            "{name}: at most two prefix lengths (IPv4, then IPv6: {name}/24/64)"
        )),
    }
}

fn fmt_addr(name: &str, a: AddrMask) -> String {
    if a == AddrMask::FULL {
        name.to_string()
    } else if a.v4 == a.v6.min(32) {
        format!("{name}/{}", a.v6)
    } else {
        format!("{name}/{}/{}", a.v4, a.v6)
    }
}

/// The canonical form, which parses back to the same mask.
impl fmt::Display for FlowMask {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut v = Vec::new();
        if let Some(a) = self.src {
            v.push(fmt_addr("src", a));
        }
        if let Some(a) = self.dst {
            v.push(fmt_addr("dst", a));
        }
        for (on, name) in [
            (self.proto, "proto"),
            (self.sport, "sport"),
            (self.dport, "dport"),
        ] {
            if on {
                v.push(name.to_string());
            }
        }
        f.write_str(&v.join(","))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Ethernet + IPv4 + UDP header.
    pub(crate) fn udp4(src: [u8; 4], dst: [u8; 4], sport: u16, dport: u16) -> Vec<u8> {
        let mut f = vec![0u8; 14 + 28];
        f[12..14].copy_from_slice(&0x0800u16.to_be_bytes());
        f[14] = 0x45;
        f[16..18].copy_from_slice(&28u16.to_be_bytes());
        f[22] = 64;
        f[23] = 17;
        f[26..30].copy_from_slice(&src);
        f[30..34].copy_from_slice(&dst);
        f[34..36].copy_from_slice(&sport.to_be_bytes());
        f[36..38].copy_from_slice(&dport.to_be_bytes());
        f
    }

    #[test]
    fn masks_parse_print_and_refuse() {
        let m = FlowMask::parse("src/24,dport").unwrap();
        assert_eq!(m.src, Some(AddrMask { v4: 24, v6: 24 }));
        assert!(m.dport && !m.sport && !m.proto && m.dst.is_none());
        assert_eq!(m.to_string(), "src/24,dport");
        for s in ["src", "dst/64", "src/24/64,dst,proto,sport,dport", "src/0"] {
            let m = FlowMask::parse(s).unwrap();
            assert_eq!(FlowMask::parse(&m.to_string()).unwrap(), m, "{s}");
        }
        assert_eq!(
            FlowMask::parse("src/64").unwrap().src,
            Some(AddrMask { v4: 32, v6: 64 })
        );
        let bad = [
            ("src/24,", "an empty field: write fields separated by commas, without spaces (e.g. src/24,dport)"),
            ("port", "unknown field \"port\": expected src[/P], dst[/P], proto, sport or dport"),
            ("src,src/8", "src is given twice in the mask"),
            ("dport/8", "dport takes no prefix length (only src and dst do)"),
            ("src/129", "src/129: an IPv6 address has 128 bits"),
            ("src/33/64", "src/33: an IPv4 address has 32 bits"),
            ("dst/x", "dst/x: the prefix length must be a whole number"),
            ("src/8/8/8", "src: at most two prefix lengths (IPv4, then IPv6: src/24/64)"),
        ];
        for (s, msg) in bad {
            assert_eq!(FlowMask::parse(s).unwrap_err(), msg, "{s}");
        }
    }

    #[test]
    fn keys_from_frames() {
        let a = FlowTuple::from_frame(&udp4([10, 0, 1, 5], [10, 0, 2, 1], 4000, 5004)).unwrap();
        assert_eq!(a.proto, 17);
        assert_eq!((a.sport, a.dport), (4000, 5004));
        let b = FlowTuple::from_frame(&udp4([10, 0, 1, 99], [10, 0, 2, 1], 4001, 5004)).unwrap();
        let c = FlowTuple::from_frame(&udp4([10, 0, 7, 5], [10, 0, 2, 1], 4000, 5004)).unwrap();
        let m = FlowMask::parse("src/24,dport").unwrap();
        assert_eq!(m.key(Some(&a)), m.key(Some(&b)));
        assert_ne!(m.key(Some(&a)), m.key(Some(&c)));
        let five = FlowMask::FIVE_TUPLE;
        assert_ne!(five.key(Some(&a)), five.key(Some(&b)));
        // Not IP: one flow, apart from every IP flow.
        let arp = [0u8; 42];
        assert_eq!(FlowTuple::from_frame(&arp), None);
        assert_eq!(m.key(None), FlowMask::default().key(None));
        assert_ne!(
            FlowMask::default().key(None),
            FlowMask::default().key(Some(&a))
        );
        // IPv6: ports behind the header, prefix of the v6 length.
        let mut f = vec![0u8; 14 + 40 + 8];
        f[12..14].copy_from_slice(&0x86ddu16.to_be_bytes());
        f[14] = 0x60;
        f[14 + 4..14 + 6].copy_from_slice(&8u16.to_be_bytes());
        f[14 + 6] = 17;
        f[14 + 8] = 0x20;
        f[14 + 8 + 15] = 1;
        f[14 + 24] = 0x20;
        f[54..58].copy_from_slice(&[0x13, 0x88, 0x13, 0x8c]);
        let t = FlowTuple::from_frame(&f).unwrap();
        assert_eq!((t.proto, t.sport, t.dport), (17, 5000, 5004));
        let m = FlowMask::parse("src/24/64").unwrap();
        let mut g = f.clone();
        g[14 + 8 + 15] = 2; // another host of the same /64
        assert_eq!(
            m.key(Some(&t)),
            m.key(Some(&FlowTuple::from_frame(&g).unwrap()))
        );
    }

    #[test]
    fn a_0x9100_tag_is_stepped_over_like_any_tag() {
        let plain = udp4([10, 0, 1, 5], [10, 0, 2, 1], 4000, 5004);
        let want = FlowTuple::from_frame(&plain).unwrap();
        for tags in [&[0x9100u16][..], &[0x88a8, 0x9100, 0x8100]] {
            let mut f = plain[..12].to_vec();
            for t in tags {
                f.extend_from_slice(&t.to_be_bytes());
                f.extend_from_slice(&[0, 9]);
            }
            f.extend_from_slice(&plain[12..]);
            assert_eq!(FlowTuple::from_frame(&f), Some(want), "{tags:x?}");
        }
    }
}

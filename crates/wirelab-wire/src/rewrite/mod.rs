//! Packet rewriting for replay (the tcprewrite subset users rely on), pure
//! and panic-free: MAC addresses, VLAN add/strip/retag, IPv4/IPv6 address
//! maps by CIDR, seeded address randomisation, tcpreplay's per-loop
//! `--unique-ip`, port maps, TTL/hop limit, FCS removal, truncation to an
//! MTU, `--fixlen`.
//!
//! # Checksums
//!
//! Field changes (addresses, ports, TTL) update the IPv4 header and the
//! TCP/UDP/ICMPv6 checksums incrementally (RFC 1624), so a checksum that was
//! right stays right and one that was deliberately wrong stays wrong by the
//! same amount — the capture's intent is kept. Changes of length (MTU
//! truncation, `--fixlen`) and `--fixcsum` recompute the checksums in full
//! when the whole datagram is in the frame (not for fragments or frames cut
//! short by the capture's snaplen; those are counted in
//! [`RewriteStats::csum_unfixable`]). An IPv4 UDP checksum of 0 ("none")
//! stays 0; a computed 0 is sent as 0xffff.

pub mod arg;
pub mod csum;
pub mod ecn;
pub mod layers;
pub mod split;

pub use layers::{parse_ethernet, parse_raw_ip, L3Kind, Layers, ICMP, ICMPV6, TCP, UDP};

use layers::be16;
use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// An error in a rewrite specification (from the command line).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct SpecError(pub String);

fn err<T>(s: impl Into<String>) -> Result<T, SpecError> {
    Err(SpecError(s.into()))
}

/// An address prefix, `10.0.0.0/8` or `fd00::/64` (a bare address is /32 or /128).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cidr {
    /// The network address (host bits cleared).
    pub addr: IpAddr,
    /// Prefix length.
    pub prefix: u8,
}

fn to_u128(a: IpAddr) -> (u128, u8) {
    match a {
        IpAddr::V4(v) => (u128::from(u32::from(v)), 32),
        IpAddr::V6(v) => (u128::from(v), 128),
    }
}

fn mask(prefix: u8, bits: u8) -> u128 {
    let all = if bits == 128 {
        u128::MAX
    } else {
        (1u128 << bits) - 1
    };
    if prefix == 0 {
        0
    } else {
        (all >> (bits - prefix)) << (bits - prefix) & all
    }
}

impl Cidr {
    /// Parses `ADDR[/PREFIX]`.
    pub fn parse(s: &str) -> Result<Cidr, SpecError> {
        let s = s.trim_matches(|c| c == '[' || c == ']');
        let (a, p) = s.split_once('/').unwrap_or((s, ""));
        let addr: IpAddr = a
            .trim_matches(|c| c == '[' || c == ']')
            .parse()
            .map_err(|_| SpecError(format!("{a:?} is not an IPv4 or IPv6 address")))?;
        let bits = to_u128(addr).1;
        let prefix = if p.is_empty() {
            bits
        } else {
            p.parse::<u8>()
                .ok()
                .filter(|&n| n <= bits)
                .ok_or_else(|| SpecError(format!("prefix /{p} is not in 0..={bits}")))?
        };
        let (v, _) = to_u128(addr);
        let net = v & mask(prefix, bits);
        let addr = match addr {
            IpAddr::V4(_) => IpAddr::V4(Ipv4Addr::from(net as u32)),
            IpAddr::V6(_) => IpAddr::V6(Ipv6Addr::from(net)),
        };
        Ok(Cidr { addr, prefix })
    }

    /// Whether `a` lies in this prefix (same family).
    pub fn contains(&self, a: IpAddr) -> bool {
        let (n, bits) = to_u128(self.addr);
        let (v, vb) = to_u128(a);
        bits == vb && v & mask(self.prefix, bits) == n
    }
}

impl fmt::Display for Cidr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.addr, self.prefix)
    }
}

/// `FROM:TO` — addresses in FROM move into TO, keeping their host bits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IpMap {
    /// Matched prefix.
    pub from: Cidr,
    /// Target prefix.
    pub to: Cidr,
}

impl IpMap {
    /// Parses `FROM:TO` (IPv6 prefixes in brackets: `[fd00::/64]:[fd01::/64]`,
    /// or separated by `,` instead of `:`).
    pub fn parse(s: &str) -> Result<IpMap, SpecError> {
        let (a, b) = if let Some((a, b)) = s.split_once(',') {
            (a, b)
        } else if s.starts_with('[') {
            let end = s
                .find(']')
                .ok_or_else(|| SpecError(format!("{s:?}: missing ']'")))?;
            let rest = &s[end + 1..];
            let (pre, rest) = rest.split_once(':').unwrap_or((rest, ""));
            let a_end = end + 1 + pre.len();
            (&s[..a_end], rest)
        } else {
            s.split_once(':').ok_or_else(|| {
                SpecError(format!(
                    "{s:?}: expected FROM:TO, e.g. 10.0.0.0/8:192.168.0.0/16"
                ))
            })?
        };
        let (from, to) = (Cidr::parse(a)?, Cidr::parse(b)?);
        if to_u128(from.addr).1 != to_u128(to.addr).1 {
            return err(format!("{s:?}: both sides must be IPv4 or both IPv6"));
        }
        Ok(IpMap { from, to })
    }

    /// The mapped address, when `a` matches.
    pub fn map(&self, a: IpAddr) -> Option<IpAddr> {
        if !self.from.contains(a) {
            return None;
        }
        let (v, bits) = to_u128(a);
        let (n, _) = to_u128(self.to.addr);
        let m = mask(self.to.prefix, bits);
        let r = n | (v & !m & mask(bits, bits));
        Some(match a {
            IpAddr::V4(_) => IpAddr::V4(Ipv4Addr::from(r as u32)),
            IpAddr::V6(_) => IpAddr::V6(Ipv6Addr::from(r)),
        })
    }
}

/// `PORT[-PORT]:NEW` for TCP and UDP, source and destination.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PortMap {
    /// First matched port.
    pub lo: u16,
    /// Last matched port.
    pub hi: u16,
    /// New port (a range maps onto one port, as tcprewrite does).
    pub to: u16,
}

impl PortMap {
    /// Parses `80:8080` or `1000-2000:3000`.
    pub fn parse(s: &str) -> Result<PortMap, SpecError> {
        let bad = || SpecError(format!("{s:?}: expected PORT:NEW or LOW-HIGH:NEW"));
        let (a, b) = s.split_once(':').ok_or_else(bad)?;
        let (lo, hi) = match a.split_once('-') {
            Some((l, h)) => (l.parse().map_err(|_| bad())?, h.parse().map_err(|_| bad())?),
            None => {
                let p = a.parse().map_err(|_| bad())?;
                (p, p)
            }
        };
        if lo > hi {
            return Err(bad());
        }
        Ok(PortMap {
            lo,
            hi,
            to: b.parse().map_err(|_| bad())?,
        })
    }
}

/// TTL / hop limit change.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ttl {
    /// Set to this value.
    Set(u8),
    /// Add (saturating at 255).
    Add(u8),
    /// Subtract (saturating at 1, so packets stay alive).
    Sub(u8),
}

impl Ttl {
    /// Parses `64`, `+3`, `-3` (tcprewrite `--ttl`).
    pub fn parse(s: &str) -> Result<Ttl, SpecError> {
        let bad = || SpecError(format!("{s:?}: expected N, +N or -N with N in 0..=255"));
        if let Some(n) = s.strip_prefix('+') {
            Ok(Ttl::Add(n.parse().map_err(|_| bad())?))
        } else if let Some(n) = s.strip_prefix('-') {
            Ok(Ttl::Sub(n.parse().map_err(|_| bad())?))
        } else {
            Ok(Ttl::Set(s.parse().map_err(|_| bad())?))
        }
    }

    fn apply(self, v: u8) -> u8 {
        match self {
            Ttl::Set(n) => n,
            Ttl::Add(n) => v.saturating_add(n),
            Ttl::Sub(n) => v.saturating_sub(n).max(1),
        }
    }
}

/// VLAN operation on the outermost tag.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Vlan {
    /// Insert a new outermost tag.
    Add {
        /// 0x8100 (802.1Q) or 0x88a8 (802.1ad).
        tpid: u16,
        /// Tag control information (PCP << 13 | DEI << 12 | VID).
        tci: u16,
    },
    /// Remove the outermost tag (frames without one are unchanged).
    Strip,
    /// Change fields of the outermost tag (frames without one are unchanged).
    Retag {
        /// New VID.
        vid: Option<u16>,
        /// New priority.
        pcp: Option<u8>,
        /// New TPID.
        tpid: Option<u16>,
    },
}

/// tcprewrite `--fixlen`: what to do with frames the capture cut short
/// (captured length below the original length).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FixLen {
    /// Pad with zero bytes to the original length, fix checksums; a frame
    /// whose original length exceeds [`RewriteSpec::pad_limit`] is not padded
    /// but [`Verdict::Oversize`] (the original length is a number from the
    /// file, so it never sizes an allocation beyond the limit).
    Pad,
    /// Shrink the IP length fields to what was captured, fix checksums.
    Trunc,
    /// Drop such frames.
    Del,
}

/// Everything that can be changed in one frame. [`Default`] changes nothing.
#[derive(Clone, Debug, Default)]
pub struct RewriteSpec {
    /// Remove the last 4 bytes (an Ethernet FCS) of every frame.
    pub efcs: bool,
    /// New destination MAC.
    pub dmac: Option<[u8; 6]>,
    /// New source MAC.
    pub smac: Option<[u8; 6]>,
    /// VLAN operation.
    pub vlan: Option<Vlan>,
    /// Source address maps (first match wins).
    pub src_map: Vec<IpMap>,
    /// Destination address maps (first match wins).
    pub dst_map: Vec<IpMap>,
    /// Port maps (first match wins; source and destination ports).
    pub ports: Vec<PortMap>,
    /// TTL / hop limit.
    pub ttl: Option<Ttl>,
    /// Truncate frames whose L3 part exceeds this MTU.
    pub mtu_trunc: Option<usize>,
    /// Short-capture handling.
    pub fixlen: Option<FixLen>,
    /// Longest frame `--fixlen pad` makes (the output's largest frame);
    /// `None`: [`PAD_LIMIT`].
    pub pad_limit: Option<usize>,
    /// Recompute every checksum in full.
    pub fixcsum: bool,
    /// Seeded pseudo-random, consistent address remapping (tcprewrite `--seed`).
    pub seed: Option<u64>,
}

/// Default [`RewriteSpec::pad_limit`]: libpcap's largest snapshot length.
pub const PAD_LIMIT: usize = 262_144;

/// What happened to frames, summed over a run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RewriteStats {
    /// Frames changed in any way.
    pub changed: u64,
    /// Frames dropped by `--fixlen del`.
    pub dropped: u64,
    /// Frames `--fixlen pad` refused: their original length exceeds the pad
    /// limit ([`Verdict::Oversize`]).
    pub pad_oversize: u64,
    /// Frames truncated to the MTU.
    pub truncated: u64,
    /// Frames whose checksums were recomputed in full.
    pub csum_recomputed: u64,
    /// Frames that needed a full recompute but could not have one
    /// (fragment, or the capture cut the datagram short).
    pub csum_unfixable: u64,
}

/// Result of rewriting one frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Send it.
    Keep,
    /// Do not send it (`--fixlen del`).
    Drop,
    /// Padded to its original length it would exceed
    /// [`RewriteSpec::pad_limit`]: not sent (the caller counts it as too
    /// large for the output).
    Oversize,
}

fn addr_at(b: &[u8], off: usize, kind: L3Kind) -> Option<IpAddr> {
    match kind {
        L3Kind::V4 => {
            let s: [u8; 4] = b.get(off..off + 4)?.try_into().ok()?;
            Some(IpAddr::V4(Ipv4Addr::from(s)))
        }
        L3Kind::V6 => {
            let s: [u8; 16] = b.get(off..off + 16)?.try_into().ok()?;
            Some(IpAddr::V6(Ipv6Addr::from(s)))
        }
    }
}

fn addr_bytes(a: IpAddr) -> ([u8; 16], usize) {
    let mut o = [0u8; 16];
    match a {
        IpAddr::V4(v) => {
            o[..4].copy_from_slice(&v.octets());
            (o, 4)
        }
        IpAddr::V6(v) => (v.octets(), 16),
    }
}

/// Offset of the checksum covering the pseudo-header, for the L4 protocol.
fn l4_csum_off(proto: u8, kind: L3Kind) -> Option<usize> {
    match (proto, kind) {
        (TCP, _) => Some(16),
        (UDP, _) => Some(6),
        (ICMPV6, L3Kind::V6) => Some(2),
        _ => None,
    }
}

fn get16(b: &[u8], off: usize) -> Option<u16> {
    be16(b, off)
}

fn put16(b: &mut [u8], off: usize, v: u16) {
    if let Some(s) = b.get_mut(off..off + 2) {
        s.copy_from_slice(&v.to_be_bytes());
    }
}

/// Replaces the bytes at `off` with `new`, updating the IPv4 header checksum
/// (when `in_ip_hdr`) and the transport checksum incrementally.
fn replace_field(
    b: &mut [u8],
    l: &Layers,
    off: usize,
    new: &[u8],
    in_ip_hdr: bool,
    in_pseudo: bool,
) {
    let Some(old) = b.get(off..off + new.len()) else {
        return;
    };
    if old == new {
        return;
    }
    let mut oldv = [0u8; 16];
    oldv[..new.len()].copy_from_slice(old);
    let oldv = &oldv[..new.len()];
    if let Some((kind, p)) = l.l3 {
        if in_ip_hdr && kind == L3Kind::V4 {
            if let Some(c) = get16(b, p + 10) {
                put16(b, p + 10, csum::update(c, oldv, new));
            }
        }
        if let Some((proto, q)) = l.l4 {
            let covered = in_pseudo || (off >= q);
            let csum_off = if proto == ICMP && kind == L3Kind::V4 && off >= q {
                Some(2)
            } else {
                l4_csum_off(proto, kind)
            };
            if let (true, Some(co)) = (covered, csum_off) {
                if let Some(c) = get16(b, q + co) {
                    let udp_none = proto == UDP && kind == L3Kind::V4 && c == 0;
                    if !udp_none {
                        let mut n = csum::update(c, oldv, new);
                        if proto == UDP && n == 0 {
                            n = 0xffff;
                        }
                        put16(b, q + co, n);
                    }
                }
            }
        }
    }
    if let Some(s) = b.get_mut(off..off + new.len()) {
        s.copy_from_slice(new);
    }
}

/// Recomputes the IPv4 header checksum and the transport checksum in full.
/// Returns false when the transport checksum could not be computed (fragment
/// or datagram not wholly in the frame).
pub fn fix_checksums(b: &mut [u8], l: &Layers, keep_udp_zero: bool) -> bool {
    let Some((kind, p)) = l.l3 else { return true };
    if kind == L3Kind::V4 {
        let h = l.l3_hdr_len;
        if b.len() >= p + h {
            put16(b, p + 10, 0);
            let c = csum::finish(csum::sum(&b[p..p + h], 0));
            put16(b, p + 10, c);
        }
    }
    let Some((proto, q)) = l.l4 else { return true };
    let end = p + l.ip_len;
    if l.fragment || end > b.len() || q > end {
        return !matches!(proto, TCP | UDP | ICMP | ICMPV6);
    }
    let co = match (proto, kind) {
        (ICMP, L3Kind::V4) => 2,
        _ => match l4_csum_off(proto, kind) {
            Some(c) => c,
            None => return true,
        },
    };
    if b.len() < q + co + 2 || q + co + 2 > end {
        return false;
    }
    if proto == UDP && kind == L3Kind::V4 && keep_udp_zero && get16(b, q + co) == Some(0) {
        return true;
    }
    put16(b, q + co, 0);
    let seg_len = end - q;
    let mut acc = 0u64;
    if !(proto == ICMP && kind == L3Kind::V4) {
        let (src, dst, alen) = match kind {
            L3Kind::V4 => (p + 12, p + 16, 4),
            L3Kind::V6 => (p + 8, p + 24, 16),
        };
        acc = csum::sum(&b[src..src + alen], acc);
        acc = csum::sum(&b[dst..dst + alen], acc);
        acc += u64::from(proto) + seg_len as u64;
    }
    acc = csum::sum(&b[q..end], acc);
    let mut c = csum::finish(acc);
    if proto == UDP && c == 0 {
        c = 0xffff;
    }
    put16(b, q + co, c);
    true
}

fn splitmix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Seeded address randomisation: a bijection per family (XOR with a key),
/// so one original address always maps to the same new one. Unspecified,
/// broadcast and multicast addresses are kept.
pub fn randomize_addr(a: IpAddr, seed: u64) -> IpAddr {
    let k = splitmix(seed);
    match a {
        IpAddr::V4(v) if !(v.is_unspecified() || v.is_broadcast() || v.is_multicast()) => {
            let x = u32::from(v) ^ (k as u32 & 0x0fff_ffff);
            let x = if x >> 28 >= 0xe { x ^ 0x8000_0000 } else { x };
            IpAddr::V4(Ipv4Addr::from(x))
        }
        IpAddr::V6(v) if !(v.is_unspecified() || v.is_multicast()) => {
            let key = (u128::from(splitmix(k)) << 64 | u128::from(k)) >> 8;
            IpAddr::V6(Ipv6Addr::from(u128::from(v) ^ key))
        }
        other => other,
    }
}

impl RewriteSpec {
    /// Whether nothing would change.
    pub fn is_noop(&self) -> bool {
        !self.efcs
            && self.dmac.is_none()
            && self.smac.is_none()
            && self.vlan.is_none()
            && self.src_map.is_empty()
            && self.dst_map.is_empty()
            && self.ports.is_empty()
            && self.ttl.is_none()
            && self.mtu_trunc.is_none()
            && self.fixlen.is_none()
            && !self.fixcsum
            && self.seed.is_none()
    }

    /// Rewrites one Ethernet frame in place. `orig_len` is the frame's
    /// original (wire) length and is kept consistent with the changes.
    pub fn apply(&self, b: &mut Vec<u8>, orig_len: &mut u32, st: &mut RewriteStats) -> Verdict {
        let before = b.clone();
        let v = self.apply_inner(b, orig_len, st);
        if v == Verdict::Keep && *b != before {
            st.changed += 1;
        }
        v
    }

    fn apply_inner(&self, b: &mut Vec<u8>, orig_len: &mut u32, st: &mut RewriteStats) -> Verdict {
        let mut full_fix = self.fixcsum;
        let short = (b.len() as u32) < *orig_len;
        if self.efcs && b.len() >= 4 {
            b.truncate(b.len() - 4);
            *orig_len = orig_len.saturating_sub(4);
        }
        if let (Some(f), true) = (self.fixlen, short) {
            match self.fix_length(f, b, orig_len, st) {
                Ok(()) => full_fix = true,
                Err(v) => return v,
            }
        }
        if let Some(mtu) = self.mtu_trunc {
            if truncate_to_mtu(b, orig_len, mtu) {
                st.truncated += 1;
                full_fix = true;
            }
        }
        // Layer 2.
        if let Some(m) = self.dmac {
            if b.len() >= 6 {
                b[..6].copy_from_slice(&m);
            }
        }
        if let Some(m) = self.smac {
            if b.len() >= 12 {
                b[6..12].copy_from_slice(&m);
            }
        }
        if let Some(v) = self.vlan {
            apply_vlan(v, b, orig_len);
        }
        // Layers 3 and 4.
        let l = parse_ethernet(b);
        if let Some((kind, p)) = l.l3 {
            self.map_addrs(b, &l, kind, p);
            if let Some(t) = self.ttl {
                apply_ttl(t, b, &l, kind, p);
            }
            self.map_ports(b, &l);
            if full_fix {
                let l = parse_ethernet(b);
                if fix_checksums(b, &l, !self.fixcsum) {
                    st.csum_recomputed += 1;
                } else {
                    st.csum_unfixable += 1;
                }
            }
        }
        Verdict::Keep
    }

    /// `--fixlen` on a frame captured shorter than it was on the wire: the
    /// verdict when the frame is not sent, else it now matches its length
    /// (padded, or its IP length cut to what was captured).
    fn fix_length(
        &self,
        f: FixLen,
        b: &mut Vec<u8>,
        orig_len: &mut u32,
        st: &mut RewriteStats,
    ) -> Result<(), Verdict> {
        match f {
            FixLen::Del => {
                st.dropped += 1;
                Err(Verdict::Drop)
            }
            FixLen::Pad => {
                let limit = self.pad_limit.unwrap_or(PAD_LIMIT);
                if *orig_len as usize > limit {
                    st.pad_oversize += 1;
                    return Err(Verdict::Oversize);
                }
                b.resize(*orig_len as usize, 0);
                Ok(())
            }
            FixLen::Trunc => {
                let l = parse_ethernet(b);
                if let Some((_, p)) = l.l3 {
                    let n = b.len().saturating_sub(p);
                    set_ip_len(b, &l, n);
                }
                *orig_len = b.len() as u32;
                Ok(())
            }
        }
    }

    /// Maps the source and destination addresses (`--srcipmap`,
    /// `--dstipmap`, then `--seed` randomisation), fixing checksums
    /// incrementally.
    fn map_addrs(&self, b: &mut [u8], l: &Layers, kind: L3Kind, p: usize) {
        let (so, dso, alen) = match kind {
            L3Kind::V4 => (p + 12, p + 16, 4),
            L3Kind::V6 => (p + 8, p + 24, 16),
        };
        for (off, maps) in [(so, &self.src_map), (dso, &self.dst_map)] {
            let Some(a) = addr_at(b, off, kind) else {
                continue;
            };
            let mut n = maps.iter().find_map(|m| m.map(a)).unwrap_or(a);
            if let Some(seed) = self.seed {
                n = randomize_addr(n, seed);
            }
            if n != a {
                let (bytes, len) = addr_bytes(n);
                debug_assert_eq!(len, alen);
                replace_field(b, l, off, &bytes[..len], true, true);
            }
        }
    }

    /// `--portmap` on TCP and UDP: the first range holding a port maps it.
    fn map_ports(&self, b: &mut [u8], l: &Layers) {
        let (false, Some((proto, q))) = (self.ports.is_empty(), l.l4) else {
            return;
        };
        if proto != TCP && proto != UDP {
            return;
        }
        for off in [q, q + 2] {
            let Some(port) = be16(b, off) else { continue };
            if let Some(m) = self.ports.iter().find(|m| (m.lo..=m.hi).contains(&port)) {
                replace_field(b, l, off, &m.to.to_be_bytes(), false, false);
            }
        }
    }
}

/// Cuts the frame to `mtu` bytes past its L2 header (and its IP length
/// with it); returns whether it was longer.
fn truncate_to_mtu(b: &mut Vec<u8>, orig_len: &mut u32, mtu: usize) -> bool {
    let l = parse_ethernet(b);
    let l3_off =
        l.l3.map(|(_, p)| p)
            .unwrap_or(14 + 4 * usize::from(l.vlan_tags));
    if b.len() <= l3_off + mtu {
        return false;
    }
    b.truncate(l3_off + mtu);
    if l.l3.is_some() {
        set_ip_len(b, &l, mtu);
    }
    *orig_len = b.len() as u32;
    true
}

/// Adds, strips or retags the outermost VLAN tag; a frame without the tag
/// to strip or retag, or too short, is left as it is.
fn apply_vlan(v: Vlan, b: &mut Vec<u8>, orig_len: &mut u32) {
    match v {
        Vlan::Add { tpid, tci } if b.len() >= 14 => {
            let mut tag = [0u8; 4];
            tag[..2].copy_from_slice(&tpid.to_be_bytes());
            tag[2..].copy_from_slice(&tci.to_be_bytes());
            b.splice(12..12, tag);
            *orig_len = orig_len.saturating_add(4);
        }
        Vlan::Strip if be16(b, 12).is_some_and(layers::is_vlan_tpid) && b.len() >= 18 => {
            b.drain(12..16);
            *orig_len = orig_len.saturating_sub(4);
        }
        Vlan::Retag { vid, pcp, tpid } => {
            if let (true, Some(tci)) = (be16(b, 12).is_some_and(layers::is_vlan_tpid), be16(b, 14))
            {
                let mut t = tci;
                if let Some(v) = vid {
                    t = (t & 0xf000) | (v & 0x0fff);
                }
                if let Some(p) = pcp {
                    t = (t & 0x1fff) | (u16::from(p & 7) << 13);
                }
                put16(b, 14, t);
                if let Some(tp) = tpid {
                    put16(b, 12, tp);
                }
            }
        }
        _ => {}
    }
}

/// `--ttl` on the IPv4 TTL (its checksum fixed incrementally) or the IPv6
/// hop limit (no header checksum).
fn apply_ttl(t: Ttl, b: &mut [u8], l: &Layers, kind: L3Kind, p: usize) {
    match kind {
        L3Kind::V4 => {
            if let (Some(&ttl), Some(&proto)) = (b.get(p + 8), b.get(p + 9)) {
                replace_field(b, l, p + 8, &[t.apply(ttl), proto], true, false);
            }
        }
        L3Kind::V6 => {
            if let Some(h) = b.get_mut(p + 7) {
                *h = t.apply(*h);
            }
        }
    }
}

fn set_ip_len(b: &mut [u8], l: &Layers, l3_len: usize) {
    match l.l3 {
        Some((L3Kind::V4, p)) => put16(b, p + 2, l3_len.min(0xffff) as u16),
        Some((L3Kind::V6, p)) => put16(b, p + 4, l3_len.saturating_sub(40).min(0xffff) as u16),
        None => {}
    }
}

/// tcpreplay's `--unique-ip`: in loop `iteration` (0 = first, unchanged),
/// moves the IPv4 source and destination (for IPv6 their last 32 bits)
/// apart by `iteration`, in the direction that keeps their sum — so the
/// checksums stay valid; they are still updated incrementally here, which
/// leaves them bit-identical in that case. Returns false for frames
/// without IP (tcpreplay drops those in later loops; wirelab sends them
/// unchanged).
pub fn unique_ip(b: &mut [u8], iteration: u32) -> bool {
    let l = parse_ethernet(b);
    let Some((kind, p)) = l.l3 else { return false };
    if iteration == 0 {
        return true;
    }
    let (so, dso) = match kind {
        L3Kind::V4 => (p + 12, p + 16),
        L3Kind::V6 => (p + 8 + 12, p + 24 + 12),
    };
    let rd = |b: &[u8], o: usize| -> Option<u32> {
        Some(u32::from_be_bytes(b.get(o..o + 4)?.try_into().ok()?))
    };
    let (Some(src), Some(dst)) = (rd(b, so), rd(b, dso)) else {
        return false;
    };
    let (ns, nd) = if dst > src {
        (src.wrapping_sub(iteration), dst.wrapping_add(iteration))
    } else {
        (src.wrapping_add(iteration), dst.wrapping_sub(iteration))
    };
    let in_hdr = kind == L3Kind::V4;
    replace_field(b, &l, so, &ns.to_be_bytes(), in_hdr, true);
    replace_field(b, &l, dso, &nd.to_be_bytes(), in_hdr, true);
    true
}

/// Parses `aa:bb:cc:dd:ee:ff`.
pub fn parse_mac(s: &str) -> Result<[u8; 6], SpecError> {
    let parts: Vec<&str> = s.split([':', '-']).collect();
    let bad = || {
        SpecError(format!(
            "{s:?} is not a MAC address (expected aa:bb:cc:dd:ee:ff)"
        ))
    };
    if parts.len() != 6 {
        return Err(bad());
    }
    let mut m = [0u8; 6];
    for (o, p) in m.iter_mut().zip(parts) {
        *o = u8::from_str_radix(p, 16).map_err(|_| bad())?;
    }
    Ok(m)
}

#[cfg(test)]
mod tests;

//! The rewrite option parsers and the rewriter itself over arbitrary input:
//! the first line is parsed by every spec parser (MAC, CIDR, IP map, port
//! map, TTL, port set, cache file, TPID, source MAC), the rest is a frame rewritten with a
//! spec built from whatever parsed, then classified for two-interface
//! replay. Nothing may panic.

use wirelab_wire::rewrite::arg::{SourceMac, Tpid, VlanFields, VlanOp};
use wirelab_wire::rewrite::split::{self, AutoSplit, PortSet, SideMap, SplitMode};
use wirelab_wire::rewrite::{
    parse_mac, unique_ip, Cidr, FixLen, IpMap, PortMap, RewriteSpec, RewriteStats, Ttl, Vlan,
};

/// The target's body: panics when a promise above is broken.
pub fn run(data: &[u8]) {
    let cut = data.iter().position(|&b| b == b'\n').unwrap_or(data.len());
    let spec_text = String::from_utf8_lossy(&data[..cut]);
    let frame = data.get(cut + 1..).unwrap_or(&[]);
    let s = spec_text.as_ref();
    let _ = parse_mac(s);
    let _ = Cidr::parse(s);
    let _ = split::parse_cidrs(s);
    let ports = PortSet::parse(s).ok();
    let _ = SideMap::from_text(s);
    let _ = s.parse::<SourceMac>();
    let tpid = s.parse::<Tpid>().ok();
    let mut r = RewriteSpec::default();
    if let Ok(m) = IpMap::parse(s) {
        r.src_map.push(m);
        r.dst_map.push(m);
    }
    if let Ok(p) = PortMap::parse(s) {
        r.ports.push(p);
    }
    if let Ok(t) = Ttl::parse(s) {
        r.ttl = Some(t);
    }
    let k = frame.first().copied().unwrap_or(0);
    r.fixcsum = k & 1 != 0;
    r.efcs = k & 2 != 0;
    r.seed = (k & 4 != 0).then_some(u64::from(k));
    r.mtu_trunc = (k & 8 != 0).then_some(64 + usize::from(k));
    r.fixlen = match k >> 6 {
        1 => Some(FixLen::Pad),
        2 => Some(FixLen::Trunc),
        3 => Some(FixLen::Del),
        _ => None,
    };
    // VLAN fields from the frame's next bytes, in range or not.
    let f = |i: usize| frame.get(i).copied().unwrap_or(0);
    let fields = VlanFields {
        vid: (f(1) & 1 != 0).then(|| u16::from_be_bytes([f(2), f(3)])),
        pcp: (f(1) & 2 != 0).then(|| f(4)),
        dei: (f(1) & 4 != 0).then(|| f(5)),
        tpid,
    };
    let op = [
        None,
        Some(VlanOp::Add),
        Some(VlanOp::Del),
        Some(VlanOp::Retag),
    ][usize::from((k >> 4) & 3)];
    r.vlan = op.and_then(|op| Vlan::from_fields(op, fields).ok());
    let mut b = frame.to_vec();
    let mut orig = (b.len() as u32).saturating_add(u32::from(k));
    let mut st = RewriteStats::default();
    let _ = r.apply(&mut b, &mut orig, &mut st);
    unique_ip(&mut b, u32::from(k));
    let _ = split::direct_side(&SplitMode::Port(ports.unwrap_or_default()), &b);
    let mut a = AutoSplit::default();
    a.learn(&b);
    let _ = a.side(frame);
}

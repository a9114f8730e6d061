//! Two-interface replay: which side each packet leaves on (tcpprep's idea).
//!
//! Every packet is either a *client* packet (sent on the primary interface,
//! `-i`) or a *server* packet (secondary interface, `-I`), as in tcpprep /
//! tcpreplay. Three classifiers, all pure:
//!
//! - [`SplitMode::Cidr`] (tcpprep `--cidr`): a packet whose source address
//!   is in one of the networks is a server packet, every other packet a
//!   client packet.
//! - [`SplitMode::Port`] (tcpprep `--port`): TCP/UDP with a source port in
//!   the server port set (default 0-1023) and a destination port outside it
//!   is a server packet; a destination port in the set makes it a client
//!   packet; when both or neither are in the set, the lower port is the
//!   server's.
//! - [`SplitMode::Auto`] (tcpprep `--auto`, per connection rather than per
//!   host): a first pass over the trace learns, for each conversation
//!   (unordered address/port pair and protocol), which endpoint is the client:
//!   the sender of a TCP SYN (without ACK), or the receiver of a SYN+ACK;
//!   without a handshake in the trace (UDP, ICMP, TCP picked up mid-stream)
//!   the endpoint on a port below 1024 is the server when exactly one is,
//!   and otherwise the sender of the conversation's first packet is the
//!   client.
//!
//! Packets without IP (ARP, LLC, ...) are client packets in every mode.
//! A [`SideMap`] holds the result per packet number and is saved to and
//! loaded from a small text cache file ([`SideMap::to_text`]).

use super::layers::{parse_ethernet, L3Kind, TCP, UDP};
use super::{addr_at, Cidr, SpecError};
use std::collections::HashMap;
use std::net::IpAddr;

/// The side of a packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Side {
    /// Sent on the primary interface (`-i`).
    Client,
    /// Sent on the secondary interface (`-I`).
    Server,
}

/// Addresses, protocol and ports of a frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Endpoints {
    /// Source address.
    pub src: IpAddr,
    /// Destination address.
    pub dst: IpAddr,
    /// IP protocol (next header).
    pub proto: u8,
    /// Source and destination port (TCP/UDP with the header present).
    pub ports: Option<(u16, u16)>,
    /// TCP flags byte (0 when not TCP).
    pub tcp_flags: u8,
}

/// Reads the endpoints of an Ethernet frame (None: no IP header).
pub fn endpoints(b: &[u8]) -> Option<Endpoints> {
    let l = parse_ethernet(b);
    let (kind, off) = l.l3?;
    let (src, dst) = match kind {
        L3Kind::V4 => (addr_at(b, off + 12, kind)?, addr_at(b, off + 16, kind)?),
        L3Kind::V6 => (addr_at(b, off + 8, kind)?, addr_at(b, off + 24, kind)?),
    };
    let (proto, ports, flags) = match l.l4 {
        Some((p, o)) if p == TCP || p == UDP => {
            let sp = super::get16(b, o);
            let dp = super::get16(b, o + 2);
            let fl = if p == TCP {
                b.get(o + 13).copied().unwrap_or(0)
            } else {
                0
            };
            (p, sp.zip(dp), fl)
        }
        Some((p, _)) => (p, None, 0),
        None => (0, None, 0),
    };
    Some(Endpoints {
        src,
        dst,
        proto,
        ports,
        tcp_flags: flags,
    })
}

/// A set of port ranges (`80,443,1000-2000`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PortSet(pub Vec<(u16, u16)>);

impl Default for PortSet {
    /// The well-known ports, 0-1023.
    fn default() -> Self {
        PortSet(vec![(0, 1023)])
    }
}

impl PortSet {
    /// Parses `80,443,1000-2000`.
    pub fn parse(s: &str) -> Result<PortSet, SpecError> {
        let mut v = vec![];
        for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let num = |t: &str| {
                t.trim().parse::<u16>().map_err(|_| {
                    SpecError(format!(
                        "{part:?}: expected a port 0-65535 or a range like 1000-2000"
                    ))
                })
            };
            let r = match part.split_once('-') {
                Some((a, b)) => (num(a)?, num(b)?),
                None => (num(part)?, num(part)?),
            };
            if r.1 < r.0 {
                return Err(SpecError(format!(
                    "{part:?}: the range ends before it starts"
                )));
            }
            v.push(r);
        }
        if v.is_empty() {
            return Err(SpecError(
                "empty port list: give ports like 80,443,8000-8100".into(),
            ));
        }
        Ok(PortSet(v))
    }

    /// Whether `p` is in the set.
    pub fn contains(&self, p: u16) -> bool {
        self.0.iter().any(|&(a, b)| (a..=b).contains(&p))
    }
}

/// Parses a comma-separated CIDR list (`10.0.0.0/8,[fd00::/8]`).
pub fn parse_cidrs(s: &str) -> Result<Vec<Cidr>, SpecError> {
    let v = s
        .split(',')
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .map(|p| Cidr::parse(p.trim_start_matches('[').trim_end_matches(']')))
        .collect::<Result<Vec<_>, _>>()?;
    if v.is_empty() {
        return Err(SpecError(
            "empty CIDR list: give networks like 10.0.0.0/8,192.168.0.0/16".into(),
        ));
    }
    Ok(v)
}

/// How packets are split.
#[derive(Clone, Debug)]
pub enum SplitMode {
    /// Source address in one of these networks = server.
    Cidr(Vec<Cidr>),
    /// By port, with this set of server ports.
    Port(PortSet),
    /// Learned from who opens each conversation (needs a first pass).
    Auto,
}

impl SplitMode {
    /// Short name for reports and the cache file.
    pub fn name(&self) -> &'static str {
        match self {
            SplitMode::Cidr(_) => "cidr",
            SplitMode::Port(_) => "port",
            SplitMode::Auto => "auto",
        }
    }
}

/// Classifies by port.
pub fn port_side(e: &Endpoints, servers: &PortSet) -> Side {
    let Some((sp, dp)) = e.ports else {
        return Side::Client;
    };
    match (servers.contains(sp), servers.contains(dp)) {
        (true, false) => Side::Server,
        (false, true) => Side::Client,
        _ if sp < dp => Side::Server,
        _ => Side::Client,
    }
}

type Ep = (IpAddr, u16);

fn conv_key(e: &Endpoints) -> (Ep, Ep, u8) {
    let (sp, dp) = e.ports.unwrap_or((0, 0));
    let a = (e.src, sp);
    let b = (e.dst, dp);
    if a <= b {
        (a, b, e.proto)
    } else {
        (b, a, e.proto)
    }
}

/// The first pass of [`SplitMode::Auto`]: learns the client of each
/// conversation.
#[derive(Clone, Debug, Default)]
pub struct AutoSplit {
    /// Conversation → (client endpoint, learned from a handshake).
    conv: HashMap<(Ep, Ep, u8), (Ep, bool)>,
}

impl AutoSplit {
    /// Learns from one frame (in trace order).
    pub fn learn(&mut self, frame: &[u8]) {
        let Some(e) = endpoints(frame) else { return };
        let (sp, dp) = e.ports.unwrap_or((0, 0));
        let src = (e.src, sp);
        let dst = (e.dst, dp);
        let key = conv_key(&e);
        if e.proto == TCP && e.ports.is_some() {
            let syn = e.tcp_flags & 0x02 != 0;
            let ack = e.tcp_flags & 0x10 != 0;
            if syn {
                let client = if ack { dst } else { src };
                let strong = self.conv.get(&key).is_some_and(|&(_, s)| s);
                // A SYN beats a SYN+ACK; a SYN+ACK does not override a
                // handshake already seen.
                if !(strong && ack) {
                    self.conv.insert(key, (client, true));
                }
                return;
            }
        }
        self.conv.entry(key).or_insert_with(|| {
            let low = |p: u16| p < 1024;
            let client = match e.ports {
                Some((s, d)) if low(s) && !low(d) => dst,
                Some((s, d)) if low(d) && !low(s) => src,
                _ => src,
            };
            (client, false)
        });
    }

    /// The side of a frame after learning (unknown conversations: the
    /// sender is the client).
    pub fn side(&self, frame: &[u8]) -> Side {
        let Some(e) = endpoints(frame) else {
            return Side::Client;
        };
        let (sp, _) = e.ports.unwrap_or((0, 0));
        match self.conv.get(&conv_key(&e)) {
            Some(&(client, _)) if client != (e.src, sp) => Side::Server,
            _ => Side::Client,
        }
    }
}

/// The side of a frame under a mode that needs no first pass (None for
/// [`SplitMode::Auto`]).
pub fn direct_side(mode: &SplitMode, frame: &[u8]) -> Option<Side> {
    let e = endpoints(frame);
    Some(match (mode, e) {
        (SplitMode::Auto, _) => return None,
        (_, None) => Side::Client,
        (SplitMode::Cidr(nets), Some(e)) => {
            if nets.iter().any(|n| n.contains(e.src)) {
                Side::Server
            } else {
                Side::Client
            }
        }
        (SplitMode::Port(ps), Some(e)) => port_side(&e, ps),
    })
}

/// One side per packet number (1-based, across all input files in order,
/// before any selection): what a cache file holds.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SideMap {
    /// `true` = server, index = packet number - 1.
    pub server: Vec<bool>,
    /// How it was made (cidr, port, auto, or what a loaded file said).
    pub mode: String,
}

/// First line of a cache file.
pub const CACHE_MAGIC: &str = "wirelab.replay.cache/1";

impl SideMap {
    /// The side of packet `number` (1-based); packets beyond the map are
    /// client packets.
    pub fn side(&self, number: u64) -> Side {
        match number
            .checked_sub(1)
            .and_then(|i| self.server.get(i as usize))
        {
            Some(true) => Side::Server,
            _ => Side::Client,
        }
    }

    /// Client and server packet counts.
    pub fn counts(&self) -> (u64, u64) {
        let s = self.server.iter().filter(|&&b| b).count() as u64;
        (self.server.len() as u64 - s, s)
    }

    /// The cache file text: the magic line, `packets N`, `mode M`, then one
    /// character per packet (`c` client, `s` server), 64 per line.
    pub fn to_text(&self) -> String {
        let mut t = format!(
            "{CACHE_MAGIC}\npackets {}\nmode {}\n",
            self.server.len(),
            self.mode
        );
        for chunk in self.server.chunks(64) {
            t.extend(chunk.iter().map(|&s| if s { 's' } else { 'c' }));
            t.push('\n');
        }
        t
    }

    /// Parses a cache file's text.
    pub fn from_text(t: &str) -> Result<SideMap, SpecError> {
        let mut lines = t.lines();
        if lines.next().map(str::trim) != Some(CACHE_MAGIC) {
            return Err(SpecError(format!(
                "not a wirelab cache file (first line must be {CACHE_MAGIC}); make one with `wirelab replay --save-cache FILE --auto|--cidr|--port-split TRACE` (tcpprep's binary cache files are not read)"
            )));
        }
        let mut n: Option<usize> = None;
        let mut mode = String::from("cache");
        let mut server = vec![];
        for (i, line) in lines.enumerate() {
            let line = line.trim();
            if let Some(v) = line.strip_prefix("packets ") {
                n = Some(v.trim().parse().map_err(|_| {
                    SpecError(format!("cache line {}: bad packet count {v:?}", i + 2))
                })?);
            } else if let Some(v) = line.strip_prefix("mode ") {
                mode = v.trim().to_string();
            } else if line.is_empty() || line.starts_with('#') {
            } else {
                for c in line.chars() {
                    server.push(match c {
                        'c' => false,
                        's' => true,
                        o => {
                            return Err(SpecError(format!(
                                "cache line {}: {o:?} is neither c (client) nor s (server)",
                                i + 2
                            )))
                        }
                    });
                }
            }
        }
        if let Some(n) = n {
            if n != server.len() {
                return Err(SpecError(format!(
                    "cache file says {n} packets but holds {}; it is cut short or edited — write it again with --save-cache",
                    server.len()
                )));
            }
        }
        Ok(SideMap { server, mode })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(src: [u8; 4], dst: [u8; 4], proto: u8, sp: u16, dp: u16, flags: u8) -> Vec<u8> {
        let mut f = vec![2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x08, 0x00];
        let l4len = if proto == TCP { 20 } else { 8 };
        let tot = (20 + l4len) as u16;
        f.extend_from_slice(&[
            0x45,
            0,
            (tot >> 8) as u8,
            tot as u8,
            0,
            0,
            0,
            0,
            64,
            proto,
            0,
            0,
        ]);
        f.extend_from_slice(&src);
        f.extend_from_slice(&dst);
        f.extend_from_slice(&sp.to_be_bytes());
        f.extend_from_slice(&dp.to_be_bytes());
        if proto == TCP {
            f.extend_from_slice(&[0, 0, 0, 1, 0, 0, 0, 0, 0x50, flags, 0xff, 0xff, 0, 0, 0, 0]);
        } else {
            f.extend_from_slice(&[0, 8, 0, 0]);
        }
        f
    }

    const A: [u8; 4] = [10, 0, 0, 1];
    const B: [u8; 4] = [10, 0, 0, 2];
    const S: [u8; 4] = [192, 0, 2, 1];

    #[test]
    fn auto_learns_from_handshakes_and_first_senders() {
        // Server at S:8080 (not well known), seen from the SYN; UDP where the
        // "server" speaks first on port 53; UDP between high ports.
        let trace = [
            frame(S, A, TCP, 8080, 40000, 0x18), // mid-stream data first
            frame(A, S, TCP, 40000, 8080, 0x02), // SYN: A is the client
            frame(S, A, TCP, 8080, 40000, 0x12), // SYN+ACK
            frame(S, B, TCP, 22, 5000, 0x12),    // only a SYN+ACK seen: B client
            frame(B, S, TCP, 5000, 22, 0x10),
            frame(S, B, UDP, 53, 33000, 0), // reply first: port 53 is the server
            frame(B, S, UDP, 33000, 53, 0),
            frame(A, B, UDP, 5000, 6000, 0), // first sender A = client
            frame(B, A, UDP, 6000, 5000, 0),
            vec![0xff; 60], // not IP
        ];
        let mut a = AutoSplit::default();
        for f in &trace {
            a.learn(f);
        }
        let got: Vec<Side> = trace.iter().map(|f| a.side(f)).collect();
        use Side::*;
        assert_eq!(
            got,
            [Server, Client, Server, Server, Client, Server, Client, Client, Server, Client]
        );
    }

    #[test]
    fn cidr_and_port_modes() {
        let nets = parse_cidrs("192.0.2.0/24, [2001:db8::/32]").unwrap();
        let m = SplitMode::Cidr(nets);
        assert_eq!(
            direct_side(&m, &frame(S, A, UDP, 1, 2, 0)),
            Some(Side::Server)
        );
        assert_eq!(
            direct_side(&m, &frame(A, S, UDP, 1, 2, 0)),
            Some(Side::Client)
        );
        let m = SplitMode::Port(PortSet::default());
        assert_eq!(
            direct_side(&m, &frame(A, S, TCP, 40000, 80, 0)),
            Some(Side::Client)
        );
        assert_eq!(
            direct_side(&m, &frame(S, A, TCP, 80, 40000, 0)),
            Some(Side::Server)
        );
        // Neither in the set: the lower port is the server's.
        assert_eq!(
            direct_side(&m, &frame(S, A, UDP, 5000, 6000, 0)),
            Some(Side::Server)
        );
        let m = SplitMode::Port(PortSet::parse("5000-5001,9").unwrap());
        assert_eq!(
            direct_side(&m, &frame(A, S, UDP, 6000, 5001, 0)),
            Some(Side::Client)
        );
        assert_eq!(direct_side(&m, &[0u8; 20]), Some(Side::Client));
        assert_eq!(direct_side(&SplitMode::Auto, &[0u8; 20]), None);
        assert!(PortSet::parse("9-1").is_err());
        assert!(PortSet::parse("").is_err());
        assert!(parse_cidrs("banana").is_err());
    }

    #[test]
    fn cache_round_trip_and_errors() {
        let m = SideMap {
            server: (0..150).map(|i| i % 3 == 0).collect(),
            mode: "auto".into(),
        };
        let t = m.to_text();
        assert_eq!(SideMap::from_text(&t).unwrap(), m);
        assert_eq!(m.side(1), Side::Server);
        assert_eq!(m.side(2), Side::Client);
        assert_eq!(m.side(0), Side::Client);
        assert_eq!(m.side(1000), Side::Client);
        assert_eq!(m.counts(), (100, 50));
        assert!(SideMap::from_text("hello").is_err());
        let cut = t.replace("packets 150", "packets 151");
        assert!(SideMap::from_text(&cut)
            .unwrap_err()
            .0
            .contains("cut short"));
        let bad = format!("{CACHE_MAGIC}\ncsx\n");
        assert!(SideMap::from_text(&bad).is_err());
    }
}

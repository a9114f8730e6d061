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
//! loaded from a small text cache file ([`SideMap::to_text`]). tcpprep's
//! own binary cache files are read too ([`SideMap::from_tcpprep`]; the
//! format is told by its first bytes, [`SideMap::load`]): tcpprep's primary
//! interface is the client side, its secondary the server side, and its
//! "don't send" packets are not sent.

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

/// What to do with each packet number (1-based, across all input files in
/// order, before any selection): what a cache file holds.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SideMap {
    /// Index = packet number - 1: the side the packet is sent on, or `None`
    /// for a packet not to send at all (tcpprep's "don't send": packets its
    /// `--include`/`--exclude` left out).
    pub sides: Vec<Option<Side>>,
    /// How it was made (cidr, port, auto, tcpprep, or what a loaded text
    /// file said).
    pub mode: String,
    /// A tcpprep cache's embedded comment (tcpprep puts its command line
    /// there); empty otherwise.
    pub comment: String,
}

/// Packets per side in a [`SideMap`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SideCounts {
    /// Client packets (primary interface, `-i`).
    pub client: u64,
    /// Server packets (secondary interface, `-I`).
    pub server: u64,
    /// Packets not to send (tcpprep's "don't send").
    pub skipped: u64,
}

impl SideCounts {
    /// All packets of the map.
    pub fn total(&self) -> u64 {
        self.client + self.server + self.skipped
    }
}

/// First line of a cache file.
pub const CACHE_MAGIC: &str = "wirelab.replay.cache/1";

/// The first 8 bytes of a tcpprep cache file (`tcpprep -o FILE`).
pub const TCPPREP_MAGIC: &[u8; 8] = b"tcpprep\0";

/// The only tcpprep cache version read: "04" (64-bit packet count, all
/// integers in network byte order), what tcpprep 4.x writes.
pub const TCPPREP_VERSION: u32 = 4;

/// Size of tcpprep's packed cache file header: magic\[8\], version\[4\],
/// u64 packet count, u16 packets per byte, u16 comment length.
pub const TCPPREP_HEADER_LEN: usize = 24;

impl SideMap {
    /// Packets in the map.
    pub fn len(&self) -> u64 {
        self.sides.len() as u64
    }

    /// Whether the map holds no packet.
    pub fn is_empty(&self) -> bool {
        self.sides.is_empty()
    }

    /// What to do with packet `number` (1-based): `Some(side)` = send it on
    /// that side, `None` = do not send it. Packets beyond the map are
    /// client packets.
    pub fn side(&self, number: u64) -> Option<Side> {
        match number
            .checked_sub(1)
            .and_then(|i| usize::try_from(i).ok())
            .and_then(|i| self.sides.get(i))
        {
            Some(&s) => s,
            None => Some(Side::Client),
        }
    }

    /// Client, server and not-sent packet counts.
    pub fn counts(&self) -> SideCounts {
        let mut c = SideCounts::default();
        for s in &self.sides {
            match s {
                Some(Side::Client) => c.client += 1,
                Some(Side::Server) => c.server += 1,
                None => c.skipped += 1,
            }
        }
        c
    }

    /// Checks that the map was made for a trace of `trace_packets` packets
    /// (cache files are per packet number: a cache for another trace would
    /// silently send packets on the wrong side).
    pub fn check_trace(&self, trace_packets: u64) -> Result<(), SpecError> {
        if self.len() == trace_packets {
            return Ok(());
        }
        let how = if self.mode == "tcpprep" {
            "tcpprep -i TRACE -o FILE ... (tcpprep reads one file: give wirelab that same single file)"
        } else {
            "wirelab replay --save-cache FILE --auto|--cidr|--port-split TRACE"
        };
        Err(SpecError(format!(
            "the cache file classifies {} packet(s) but the trace has {trace_packets}: it was made for another trace (packets are numbered across all input files in order). Use the trace the cache was made from, or write the cache again for this trace: {how}",
            self.len()
        )))
    }

    /// The cache file text: the magic line, `packets N`, `mode M`, then one
    /// character per packet (`c` client, `s` server, `-` not sent), 64 per
    /// line.
    pub fn to_text(&self) -> String {
        let mode: String = self
            .mode
            .chars()
            .map(|c| if c.is_control() { ' ' } else { c })
            .collect();
        let mode = match mode.trim() {
            "" => "cache",
            m => m,
        };
        let mut t = format!("{CACHE_MAGIC}\npackets {}\nmode {mode}\n", self.sides.len());
        for chunk in self.sides.chunks(64) {
            t.extend(chunk.iter().map(|s| match s {
                Some(Side::Client) => 'c',
                Some(Side::Server) => 's',
                None => '-',
            }));
            t.push('\n');
        }
        t
    }

    /// Reads a cache file of either format, told apart by its first bytes:
    /// tcpprep's binary cache ([`SideMap::from_tcpprep`]) or wirelab's text
    /// cache ([`SideMap::from_text`]).
    pub fn load(bytes: &[u8]) -> Result<SideMap, SpecError> {
        if bytes.starts_with(TCPPREP_MAGIC) {
            return SideMap::from_tcpprep(bytes);
        }
        match std::str::from_utf8(bytes) {
            Ok(t) => SideMap::from_text(t),
            Err(e) => {
                // A text cache damaged further on is not "not a cache": name
                // the line and byte that are not text.
                let good = &bytes[..e.valid_up_to()];
                let first = good.split(|&c| c == b'\n').next().unwrap_or(&[]);
                if good.contains(&b'\n') && first.trim_ascii() == CACHE_MAGIC.as_bytes() {
                    let line = 1 + good.iter().filter(|&&c| c == b'\n').count();
                    Err(SpecError(format!(
                        "cache line {line}: byte {} is not UTF-8 text; the file is damaged — write it again with --save-cache",
                        e.valid_up_to()
                    )))
                } else {
                    Err(SpecError(not_a_cache()))
                }
            }
        }
    }

    /// Parses a tcpprep cache file (`tcpprep -o FILE`, version 04).
    ///
    /// Layout (tcpreplay's `src/common/cache.[ch]`): a packed 24-byte header
    /// — magic `tcpprep\0`, version `04\0\0`, packet count (u64), packets per
    /// byte (u16, always 4) and comment length (u16), all big-endian — then
    /// the comment, then 2 bits per packet, packet 1 in the two lowest bits
    /// of the first byte: the higher bit of each pair is "send", the lower
    /// one "primary interface". tcpprep's primary (`-i`, client-to-server)
    /// is wirelab's client side, secondary (`-I`) the server side; a packet
    /// whose send bit is clear is not sent (`None`).
    pub fn from_tcpprep(b: &[u8]) -> Result<SideMap, SpecError> {
        const AGAIN: &str = "write it again with `tcpprep -i TRACE -o FILE ...`";
        if !b.starts_with(TCPPREP_MAGIC) {
            return Err(SpecError(not_a_cache()));
        }
        if b.len() < TCPPREP_HEADER_LEN {
            return Err(SpecError(format!(
                "tcpprep cache file cut short: {} bytes, less than its {TCPPREP_HEADER_LEN}-byte header; {AGAIN}",
                b.len()
            )));
        }
        let version = &b[8..12];
        let digits: String = version
            .iter()
            .take_while(|c| c.is_ascii_digit())
            .map(|&c| char::from(c))
            .collect();
        if digits.parse::<u32>().ok() != Some(TCPPREP_VERSION) {
            let shown: String = version
                .iter()
                .take_while(|&&c| c != 0)
                .map(|&c| char::from(c))
                .collect();
            return Err(SpecError(format!(
                "tcpprep cache version {shown:?} is not supported: wirelab reads version \"04\" (64-bit packet count in network byte order, written by tcpprep 4.x); {AGAIN} using a current tcpprep"
            )));
        }
        let n = u64::from_be_bytes(b[12..20].try_into().expect("8 bytes"));
        let per_byte = u16::from_be_bytes([b[20], b[21]]);
        let comment_len = usize::from(u16::from_be_bytes([b[22], b[23]]));
        if per_byte != 4 {
            return Err(SpecError(format!(
                "tcpprep cache header says {per_byte} packets per byte, but the format has 4 (2 bits per packet): the file is damaged, or it comes from an old tcpprep with an unpacked header; {AGAIN}"
            )));
        }
        let body = &b[TCPPREP_HEADER_LEN..];
        if body.len() < comment_len {
            return Err(SpecError(format!(
                "tcpprep cache file cut short: the header announces a {comment_len}-byte comment but only {} byte(s) follow; {AGAIN}",
                body.len()
            )));
        }
        let (comment, data) = body.split_at(comment_len);
        let need = n.div_ceil(4);
        if (data.len() as u64) < need {
            return Err(SpecError(format!(
                "tcpprep cache file cut short: the header says {n} packet(s), which take {need} byte(s) of data (4 packets per byte), but only {} byte(s) follow the comment; {AGAIN}",
                data.len()
            )));
        }
        if (data.len() as u64) > need {
            // tcpprep 4.x's --auto runs over the trace twice and keeps the
            // "don't send" entries its --include/--exclude added in the
            // first pass: every later entry is shifted. tcpreplay reads the
            // first `need` bytes anyway and sends packets on the wrong side.
            return Err(SpecError(format!(
                "tcpprep cache file too long: the header says {n} packet(s), which take {need} byte(s) of data (4 packets per byte), but {} byte(s) follow the comment, so the entries do not line up with the packets. tcpprep writes such files when --auto is combined with --include/--exclude (-x/-X): its first pass leaves entries behind (tcpreplay would send packets on the wrong side or not at all). Make the cache without -x/-X and select packets with wirelab's --include/--exclude instead",
                data.len()
            )));
        }
        let sides = (0..n as usize)
            .map(|i| {
                let bits = data[i / 4] >> ((i % 4) * 2);
                match (bits & 0b10 != 0, bits & 0b01 != 0) {
                    (false, _) => None,
                    (true, true) => Some(Side::Client),
                    (true, false) => Some(Side::Server),
                }
            })
            .collect();
        Ok(SideMap {
            sides,
            mode: "tcpprep".into(),
            comment: String::from_utf8_lossy(comment)
                .trim_end_matches('\0')
                .to_string(),
        })
    }

    /// Parses a wirelab text cache file.
    pub fn from_text(t: &str) -> Result<SideMap, SpecError> {
        let mut lines = t.lines();
        if lines.next().map(str::trim) != Some(CACHE_MAGIC) {
            return Err(SpecError(not_a_cache()));
        }
        let mut n: Option<usize> = None;
        let mut mode = String::from("cache");
        let mut sides = vec![];
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
                    sides.push(match c {
                        'c' => Some(Side::Client),
                        's' => Some(Side::Server),
                        '-' => None,
                        o => {
                            return Err(SpecError(format!(
                                "cache line {}: {o:?} is neither c (client), s (server) nor - (not sent)",
                                i + 2
                            )))
                        }
                    });
                }
            }
        }
        if let Some(n) = n {
            if n != sides.len() {
                return Err(SpecError(format!(
                    "cache file says {n} packets but holds {}; it is cut short or edited — write it again with --save-cache",
                    sides.len()
                )));
            }
        }
        Ok(SideMap {
            sides,
            mode,
            comment: String::new(),
        })
    }
}

fn not_a_cache() -> String {
    format!(
        "not a cache file: expected wirelab's text cache (first line {CACHE_MAGIC}) or tcpprep's binary cache (starts with \"tcpprep\\0\"); make one with `wirelab replay --save-cache FILE --auto|--cidr|--port-split TRACE` or `tcpprep -i TRACE -o FILE --auto|--cidr|--port ...`"
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

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
            sides: (0..150)
                .map(|i| match i % 3 {
                    0 => Some(Side::Server),
                    1 => Some(Side::Client),
                    _ if i % 5 == 0 => None,
                    _ => Some(Side::Client),
                })
                .collect(),
            mode: "auto".into(),
            comment: String::new(),
        };
        let t = m.to_text();
        assert_eq!(SideMap::from_text(&t).unwrap(), m);
        assert_eq!(SideMap::load(t.as_bytes()).unwrap(), m);
        assert_eq!(m.side(1), Some(Side::Server));
        assert_eq!(m.side(2), Some(Side::Client));
        assert_eq!(m.side(0), Some(Side::Client));
        assert_eq!(m.side(1000), Some(Side::Client));
        assert_eq!(m.side(6), None);
        assert_eq!(
            m.counts(),
            SideCounts {
                client: 90,
                server: 50,
                skipped: 10
            }
        );
        assert_eq!(m.counts().total(), 150);
        assert!(SideMap::from_text("hello").is_err());
        let e = SideMap::load(b"hello").unwrap_err().0;
        assert!(e.contains("tcpprep") && e.contains(CACHE_MAGIC), "{e}");
        assert!(SideMap::load(&[0xff, 0xfe, 0]).is_err());
        // A valid first line and bad UTF-8 further on: the damage is named,
        // not the first line.
        let mut damaged = t.clone().into_bytes();
        let at = t.find("mode").unwrap();
        damaged[at] = 0xff;
        assert_eq!(
            SideMap::load(&damaged).unwrap_err().0,
            format!("cache line 3: byte {at} is not UTF-8 text; the file is damaged — write it again with --save-cache")
        );
        let e = SideMap::load(&[b"hello\n".as_slice(), &[0xff]].concat())
            .unwrap_err()
            .0;
        assert!(e.starts_with("not a cache file"), "{e}");
        let cut = t.replace("packets 150", "packets 151");
        assert!(SideMap::from_text(&cut)
            .unwrap_err()
            .0
            .contains("cut short"));
        let bad = format!("{CACHE_MAGIC}\ncsx\n");
        assert!(SideMap::from_text(&bad).is_err());
        // A control character in the mode cannot break the line structure.
        let odd = SideMap {
            mode: "tcpprep\nc".into(),
            ..m.clone()
        };
        assert_eq!(SideMap::from_text(&odd.to_text()).unwrap().sides, m.sides);
    }

    /// A tcpprep cache file as tcpprep 4.x writes it: packed big-endian
    /// header, comment, 2 bits per packet from the low bits up.
    fn tcpprep_file(
        version: &[u8; 4],
        n: u64,
        per_byte: u16,
        comment: &[u8],
        data: &[u8],
    ) -> Vec<u8> {
        let mut f = TCPPREP_MAGIC.to_vec();
        f.extend_from_slice(version);
        f.extend_from_slice(&n.to_be_bytes());
        f.extend_from_slice(&per_byte.to_be_bytes());
        f.extend_from_slice(&(comment.len() as u16).to_be_bytes());
        f.extend_from_slice(comment);
        f.extend_from_slice(data);
        f
    }

    #[test]
    fn tcpprep_cache_bits_and_sides() {
        use Side::*;
        // Pairs from the low bits: 11 = send primary (client), 10 = send
        // secondary (server), 00 and 01 = don't send.
        // Byte 0: p1=11, p2=10, p3=00, p4=01 -> 0b01_00_10_11.
        // Byte 1: p5=10, p6=11 (p7/p8 unused, set to junk).
        let data = [0b0100_1011, 0b1111_1110];
        let f = tcpprep_file(b"04\0\0", 6, 4, b"-c 10.0.0.0/8 -i x.pcap", &data);
        let m = SideMap::load(&f).unwrap();
        assert_eq!(
            m.sides,
            [
                Some(Client),
                Some(Server),
                None,
                None,
                Some(Server),
                Some(Client)
            ]
        );
        assert_eq!(m.mode, "tcpprep");
        assert_eq!(m.comment, "-c 10.0.0.0/8 -i x.pcap");
        assert_eq!(
            m.counts(),
            SideCounts {
                client: 2,
                server: 2,
                skipped: 2
            }
        );
        assert_eq!(m.side(3), None);
        assert!(m.check_trace(6).is_ok());
        // The text cache keeps the "don't send" packets.
        assert_eq!(
            SideMap::load(m.to_text().as_bytes()).unwrap().sides,
            m.sides
        );
        // Exactly a multiple of 4 packets, no comment.
        let f = tcpprep_file(b"04\0\0", 4, 4, b"", &[0xff]);
        assert_eq!(SideMap::load(&f).unwrap().sides, vec![Some(Client); 4]);
        // tcpprep's writer copies strlen("tcpprep") bytes of "04": the
        // version field may hold more NULs; atoi() reads "4" too.
        let f = tcpprep_file(b"4\0\0\0", 1, 4, b"", &[0b10]);
        assert_eq!(SideMap::load(&f).unwrap().sides, vec![Some(Server)]);
        // An empty trace.
        let f = tcpprep_file(b"04\0\0", 0, 4, b"c", &[]);
        assert!(SideMap::load(&f).unwrap().is_empty());
    }

    #[test]
    fn tcpprep_cache_errors_name_the_problem() {
        let err = |b: &[u8]| SideMap::load(b).unwrap_err().0;
        let ok = tcpprep_file(b"04\0\0", 5, 4, b"hi", &[0xff, 0x03]);
        assert!(SideMap::load(&ok).is_ok());
        // Every cut of a valid file is an error, never a panic.
        for l in 0..ok.len() {
            let e = err(&ok[..l]);
            assert!(
                e.contains("cut short") || e.contains("not a cache file"),
                "{l}: {e}"
            );
        }
        let e = err(&ok[..10]);
        assert!(e.contains("24-byte header"), "{e}");
        let e = err(&ok[..ok.len() - 1]);
        assert!(e.contains("5 packet(s)") && e.contains("2 byte(s)"), "{e}");
        let mut long = ok.clone();
        long.push(0);
        let e = err(&long);
        assert!(e.contains("too long") && e.contains("--auto"), "{e}");
        let e = err(&tcpprep_file(b"03\0\0", 5, 4, b"", &[0xff, 0x03]));
        assert!(e.contains("\"03\"") && e.contains("not supported"), "{e}");
        let e = err(&tcpprep_file(b"xx\0\0", 5, 4, b"", &[0xff, 0x03]));
        assert!(e.contains("not supported"), "{e}");
        let e = err(&tcpprep_file(b"04\0\0", 5, 8, b"", &[0xff, 0x03]));
        assert!(e.contains("8 packets per byte"), "{e}");
        let e = err(&tcpprep_file(b"04\0\0", 5, 4, b"", &[]));
        assert!(e.contains("cut short"), "{e}");
        // A huge count with no data: an error, not an allocation.
        let e = err(&tcpprep_file(b"04\0\0", u64::MAX, 4, b"", &[0]));
        assert!(e.contains("cut short"), "{e}");
        // The comment runs past the end.
        let mut f = tcpprep_file(b"04\0\0", 1, 4, b"", &[]);
        f[22..24].copy_from_slice(&100u16.to_be_bytes());
        assert!(err(&f).contains("100-byte comment"));
        // A cache for another trace.
        let m = SideMap::load(&ok).unwrap();
        let e = m.check_trace(179).unwrap_err().0;
        assert!(
            e.contains("5 packet(s)") && e.contains("179") && e.contains("tcpprep -i"),
            "{e}"
        );
        let text = SideMap {
            mode: "auto".into(),
            ..m
        };
        assert!(text.check_trace(4).unwrap_err().0.contains("--save-cache"));
    }

    proptest! {
        /// Any header values, any cut: an error or a map that survives the
        /// text round trip, never a panic.
        #[test]
        fn tcpprep_loader_never_panics(
            version in prop_oneof![Just(*b"04\0\0"), any::<[u8; 4]>()],
            n in prop_oneof![0u64..40, any::<u64>()],
            per_byte in prop_oneof![Just(4u16), any::<u16>()],
            comment in proptest::collection::vec(any::<u8>(), 0..12),
            data in proptest::collection::vec(any::<u8>(), 0..12),
            cut in any::<usize>(),
        ) {
            let mut f = tcpprep_file(&version, n, per_byte, &comment, &data);
            f.truncate(cut % (f.len() + 1));
            if let Ok(m) = SideMap::load(&f) {
                prop_assert_eq!(m.counts().total(), m.len());
                let back = SideMap::load(m.to_text().as_bytes()).unwrap();
                prop_assert_eq!(back.sides, m.sides);
            }
        }

        #[test]
        fn text_loader_never_panics(data in proptest::collection::vec(any::<u8>(), 0..200)) {
            let _ = SideMap::load(&data);
            let mut t = format!("{CACHE_MAGIC}\n").into_bytes();
            t.extend(data.iter().map(|b| b"cs-\n#m"[usize::from(*b) % 6]));
            if let Ok(m) = SideMap::load(&t) {
                let back = SideMap::load(m.to_text().as_bytes()).unwrap();
                prop_assert_eq!(back.sides, m.sides);
            }
        }
    }
}

//! How a sending flow's probes reach the wire (`wirelab send --socket`):
//!
//! - `udp`: a connected UDP socket; the kernel builds every header.
//! - `raw`: a raw IPv4 socket with IP_HDRINCL; wirelab builds the IPv4 and
//!   UDP headers ([`wirelab_wire::udp4`]), the kernel routes and resolves.
//! - `packet`: an AF_PACKET socket on the route's egress interface;
//!   wirelab also builds the Ethernet header, with the next hop's MAC from
//!   the neighbour table.
//!
//! Every flow also holds a UDP socket connected to the target: its port is
//! the source port of raw and packet probes, so the kernel takes echo
//! replies on it (and answers no probe reply with a port unreachable), and
//! it sends the datagram that makes the kernel resolve the next hop.

use std::io;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::time::Duration;
use thiserror::Error;
use wirelab_io::neigh::{self, NeighError};
use wirelab_io::packet_sock::{self, IfInfo, PacketError, PacketSocket};
use wirelab_io::rawip::RawIpSocket;
use wirelab_io::route::{self, Route, RouteError};
use wirelab_io::{Transmit, UdpSock};
use wirelab_wire::udp4::{self, EthAddrs, Udp4Frame, Udp4Header};

/// How long a packet socket's flow waits for the next hop to answer ARP.
pub const NEIGH_TIMEOUT: Duration = Duration::from_secs(3);
/// Send buffer asked for on every sending socket.
const SEND_BUFFER: usize = 4 << 20;

/// The socket type probes leave through.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SocketKind {
    #[default]
    Udp,
    Raw,
    Packet,
}

impl SocketKind {
    pub fn as_str(self) -> &'static str {
        match self {
            SocketKind::Udp => "udp",
            SocketKind::Raw => "raw",
            SocketKind::Packet => "packet",
        }
    }

    /// The kind named `udp`, `raw` or `packet`.
    pub fn parse(s: &str) -> Option<SocketKind> {
        match s {
            "udp" => Some(SocketKind::Udp),
            "raw" => Some(SocketKind::Raw),
            "packet" => Some(SocketKind::Packet),
            _ => None,
        }
    }
}

impl std::fmt::Display for SocketKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why a flow's sending path cannot be set up.
#[derive(Debug, Error)]
pub enum PathError {
    #[error("--socket {} builds IPv4 headers: give an IPv4 target (IPv6 needs --socket udp)", .0.as_str())]
    NotIpv4(SocketKind),
    #[error("opening the flow's UDP socket: {0}")]
    Udp(io::Error),
    #[error(transparent)]
    Route(RouteError),
    #[error("--socket packet: {0}")]
    Interface(PacketError),
    #[error("--socket packet sends frames out of an interface, but {0} is this host's own address (its route goes through lo): use --socket raw or udp")]
    LocalTarget(Ipv4Addr),
    #[error("--socket packet needs an Ethernet interface; {dev} is not (hardware type {arp_type}): use --socket raw")]
    NotEthernet { dev: String, arp_type: u16 },
    #[error("--socket packet: {0}")]
    Neigh(NeighError),
    #[error(transparent)]
    Socket(PacketError),
}

impl PathError {
    /// Whether the error is a refused privilege (CAP_NET_RAW).
    pub fn is_permission(&self) -> bool {
        matches!(
            self,
            PathError::Socket(PacketError::Permission { .. })
                | PathError::Interface(PacketError::Permission { .. })
        )
    }
}

/// Where raw and packet probes leave: the route to the target from the
/// flow's source address, and the egress interface.
#[derive(Debug, Clone)]
pub struct Egress {
    pub route: Route,
    pub iface: IfInfo,
    /// The smaller of the interface's MTU and the route's.
    pub mtu: u32,
}

impl Egress {
    /// Finds the path to `target` from `src` (a connected UDP socket's
    /// local address: the source the kernel picked, or `--bind`).
    pub fn find(target: Ipv4Addr, src: Ipv4Addr) -> Result<Egress, PathError> {
        let route = route::route_get(target, Some(src)).map_err(PathError::Route)?;
        let iface = packet_sock::if_info(&route.ifname).map_err(PathError::Interface)?;
        let mtu = route.mtu.map_or(iface.mtu, |m| m.min(iface.mtu));
        Ok(Egress { route, iface, mtu })
    }

    /// Largest UDP payload raw and packet sockets carry on this path.
    pub fn max_payload(&self) -> usize {
        udp4::max_payload(self.mtu)
    }

    /// Whether a packet socket can send on this path: frames to one of
    /// this host's own addresses would loop back through lo, where the
    /// kernel drops what did not come from its own stack.
    pub fn check_packet(&self, dst: Ipv4Addr) -> Result<(), PathError> {
        if self.route.kind == route::RTN_LOCAL
            || self.iface.arp_type == packet_sock::ARPHRD_LOOPBACK
        {
            return Err(PathError::LocalTarget(dst));
        }
        if self.iface.arp_type != packet_sock::ARPHRD_ETHER {
            return Err(PathError::NotEthernet {
                dev: self.route.ifname.clone(),
                arp_type: self.iface.arp_type,
            });
        }
        Ok(())
    }
}

/// One of the three sending sockets.
pub enum Transmitter {
    Udp(UdpSock),
    Raw(RawIpSocket),
    Packet(PacketSocket),
}

impl Transmit for Transmitter {
    fn transmit(&mut self, packets: &[&[u8]]) -> io::Result<usize> {
        match self {
            Transmitter::Udp(s) => s.transmit(packets),
            Transmitter::Raw(s) => s.transmit(packets),
            Transmitter::Packet(s) => s.transmit(packets),
        }
    }
}

/// A flow's open sending path.
pub struct TxPath {
    pub kind: SocketKind,
    pub tx: Transmitter,
    /// The flow's UDP socket: echo replies arrive on it.
    pub udp: UdpSock,
    /// Headers in front of each payload (raw and packet sockets).
    pub frame: Option<Udp4Frame>,
}

/// The settings a path is opened with.
#[derive(Debug, Clone, Copy)]
pub struct PathConfig {
    pub kind: SocketKind,
    pub target: SocketAddr,
    pub bind: Option<SocketAddr>,
    /// The TOS byte: IP_TOS on a UDP socket, written into raw and packet
    /// headers.
    pub tos: Option<u8>,
    /// How long to wait for the next hop's MAC (packet sockets).
    pub neigh_timeout: Duration,
}

impl TxPath {
    /// Opens the path: the UDP socket, and for raw and packet the socket
    /// that sends and the header template (resolving the next hop's MAC,
    /// bounded by `neigh_timeout`).
    pub fn open(c: &PathConfig) -> Result<TxPath, PathError> {
        let udp = UdpSock::connect(c.target, c.bind).map_err(PathError::Udp)?;
        if let Some(tos) = c.tos {
            udp.set_tos(tos).map_err(PathError::Udp)?;
        }
        if c.kind == SocketKind::Udp {
            let _ = udp.set_send_buffer(SEND_BUFFER);
            let tx = udp.try_clone().map_err(PathError::Udp)?;
            return Ok(TxPath {
                kind: c.kind,
                tx: Transmitter::Udp(tx),
                udp,
                frame: None,
            });
        }
        let (SocketAddr::V4(dst), SocketAddr::V4(src)) =
            (c.target, udp.local_addr().map_err(PathError::Udp)?)
        else {
            return Err(PathError::NotIpv4(c.kind));
        };
        let ip = Udp4Header {
            src,
            dst,
            tos: c.tos.unwrap_or(0),
            ttl: udp4::DEFAULT_TTL,
            dont_fragment: true,
        };
        let (tx, eth) = match c.kind {
            SocketKind::Raw => {
                let s = RawIpSocket::connect(*dst.ip()).map_err(PathError::Socket)?;
                let _ = s.set_send_buffer(SEND_BUFFER);
                (Transmitter::Raw(s), None)
            }
            _ => {
                let e = Egress::find(*dst.ip(), *src.ip())?;
                e.check_packet(*dst.ip())?;
                let dst_mac = next_hop_mac(&e, *dst.ip(), &udp, c.neigh_timeout)?;
                let s = PacketSocket::open(&e.route.ifname, false).map_err(PathError::Socket)?;
                s.set_send_buffer(SEND_BUFFER);
                let eth = EthAddrs {
                    dst: dst_mac,
                    src: e.iface.mac,
                };
                (Transmitter::Packet(s), Some(eth))
            }
        };
        Ok(TxPath {
            kind: c.kind,
            tx,
            udp,
            frame: Some(Udp4Frame { eth, ip }),
        })
    }
}

/// The MAC frames to `dst` go to on `e`: the next hop's from the neighbour
/// table, asked for with an empty datagram when missing (receivers ignore
/// it).
fn next_hop_mac(
    e: &Egress,
    dst: Ipv4Addr,
    udp: &UdpSock,
    timeout: Duration,
) -> Result<[u8; 6], PathError> {
    let hop = e.route.next_hop(dst);
    neigh::resolve(hop, &e.route.ifname, timeout, &mut || {
        udp.send(&[]).map(|_| ())
    })
    .map_err(PathError::Neigh)
}

/// The egress of `target` from `bind` (or the source the kernel picks),
/// for checking sizes before any flow opens; IPv4 only.
pub fn egress_of(
    kind: SocketKind,
    target: SocketAddr,
    bind: Option<SocketAddr>,
) -> Result<Egress, PathError> {
    let IpAddr::V4(dst) = target.ip() else {
        return Err(PathError::NotIpv4(kind));
    };
    let probe = UdpSock::connect(target, bind.map(|b| SocketAddr::new(b.ip(), 0)))
        .map_err(PathError::Udp)?;
    let SocketAddr::V4(src) = probe.local_addr().map_err(PathError::Udp)? else {
        return Err(PathError::NotIpv4(kind));
    };
    let e = Egress::find(dst, *src.ip())?;
    if kind == SocketKind::Packet {
        e.check_packet(dst)?;
    }
    Ok(e)
}

#[cfg(test)]
mod tests {
    use super::*;
    use wirelab_io::udp::RecvBatch;
    use wirelab_wire::rewrite::{fix_checksums, parse_raw_ip};

    fn framed(frame: &Udp4Frame, payload: &[u8], ident: u16) -> Vec<u8> {
        let mut b = vec![0u8; frame.prefix_len()];
        b.extend_from_slice(payload);
        frame.write(&mut b, ident).unwrap();
        b
    }

    /// Raw probes on loopback reach a UDP socket with their payload
    /// intact, and replies to their source port reach the flow's socket.
    /// (Packet sockets: the namespace tests of `wirelab send --socket`.)
    #[test]
    fn raw_probes_arrive_on_loopback_and_replies_come_back() {
        let kind = SocketKind::Raw;
        let rx = UdpSock::bind("127.0.0.1:0".parse().unwrap(), true).unwrap();
        rx.set_read_timeout(Duration::from_secs(2)).unwrap();
        let mut p = match TxPath::open(&PathConfig {
            kind,
            target: rx.local_addr().unwrap(),
            bind: None,
            tos: Some(0xb8),
            neigh_timeout: NEIGH_TIMEOUT,
        }) {
            Ok(p) => p,
            // Unprivileged, the kernel refuses the raw socket with EPERM: that refusal,
            // and no other error, skips the test.
            Err(PathError::Socket(PacketError::Permission { cause: source, .. }))
                if !wirelab_testkit::is_root() =>
            {
                assert_eq!(source.raw_os_error(), Some(libc::EPERM), "{source}");
                wirelab_testkit::skip(format!("needs CAP_NET_RAW (refused: {source})"));
                return;
            }
            Err(e) => panic!("{e}"),
        };
        let f = p.frame.unwrap();
        assert_eq!(f.eth, None);
        let src = p.udp.local_addr().unwrap();
        assert_eq!(SocketAddr::V4(f.ip.src), src);
        let frame = framed(&f, b"hello", 7);
        let mut fixed = frame.clone();
        assert!(fix_checksums(&mut fixed, &parse_raw_ip(&frame), false));
        assert_eq!(fixed, frame);
        assert_eq!(p.tx.transmit(&[&frame]).unwrap(), 1);
        let mut b = RecvBatch::new(4, 2048);
        assert_eq!(rx.recv_batch(&mut b).unwrap(), 1);
        assert_eq!(b.get(0).0, b"hello", "{kind:?}");
        assert_eq!(b.source(0), Some(src));
        rx.send_to(b"back", &src.into()).unwrap();
        p.udp.set_read_timeout(Duration::from_secs(2)).unwrap();
        assert_eq!(p.udp.recv_batch(&mut b).unwrap(), 1);
        assert_eq!(b.get(0).0, b"back");
    }

    #[test]
    fn ipv6_targets_are_refused_for_raw_and_packet() {
        for kind in [SocketKind::Raw, SocketKind::Packet] {
            let e = egress_of(kind, "[::1]:9".parse().unwrap(), None).unwrap_err();
            assert_eq!(
                e.to_string(),
                format!(
                    "--socket {} builds IPv4 headers: give an IPv4 target (IPv6 needs --socket udp)",
                    kind.as_str()
                )
            );
        }
    }

    #[test]
    fn loopback_egress_is_lo_with_its_mtu_and_no_place_for_packet_sockets() {
        let e = egress_of(SocketKind::Raw, "127.0.0.1:9".parse().unwrap(), None).unwrap();
        assert_eq!(e.route.ifname, "lo");
        assert_eq!(e.max_payload(), e.mtu as usize - 28);
        let e = egress_of(SocketKind::Packet, "127.0.0.1:9".parse().unwrap(), None);
        assert!(matches!(e, Err(PathError::LocalTarget(a)) if a == Ipv4Addr::LOCALHOST));
    }
}

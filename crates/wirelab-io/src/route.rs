//! Which way the kernel sends to an IPv4 address, as `ip route get` shows
//! it: egress interface, gateway, preferred source and the route's MTU,
//! asked over rtnetlink (RTM_GETROUTE), so policy routing and every table
//! count exactly as they do for the kernel's own packets.

use socket2::{Domain, Protocol, Socket, Type};
use std::io::{self, Read};
use std::net::Ipv4Addr;
use std::time::Duration;
use thiserror::Error;

const RTM_NEWROUTE: u16 = 24;
const RTM_GETROUTE: u16 = 26;
const NLMSG_ERROR: u16 = 2;
const NLM_F_REQUEST: u16 = 1;
const NLMSG_HDR: usize = 16;
const RTMSG_LEN: usize = 12;
const RTA_DST: u16 = 1;
const RTA_SRC: u16 = 2;
const RTA_OIF: u16 = 4;
const RTA_GATEWAY: u16 = 5;
const RTA_PREFSRC: u16 = 7;
const RTA_METRICS: u16 = 8;
const RTAX_MTU: u16 = 2;
/// `rtm_type` of a route to a local address (the packet loops back).
pub const RTN_LOCAL: u8 = 2;
/// `rtm_type` of an ordinary route.
pub const RTN_UNICAST: u8 = 1;

/// The kernel's route to one address.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Route {
    /// `RTN_UNICAST`, `RTN_LOCAL`, ...
    pub kind: u8,
    /// Egress interface index and name.
    pub ifindex: u32,
    pub ifname: String,
    /// The gateway, when the destination is not on a local link.
    pub gateway: Option<Ipv4Addr>,
    /// The source address the kernel would pick.
    pub prefsrc: Option<Ipv4Addr>,
    /// An MTU set on the route (`ip route ... mtu N`), below the interface's.
    pub mtu: Option<u32>,
}

impl Route {
    /// The address whose MAC frames to `dst` carry: the gateway, else
    /// `dst` itself.
    pub fn next_hop(&self, dst: Ipv4Addr) -> Ipv4Addr {
        self.gateway.unwrap_or(dst)
    }
}

/// Why there is no route.
#[derive(Debug, Error)]
pub enum RouteError {
    /// The kernel has no route (ENETUNREACH, EHOSTUNREACH, ...).
    #[error("no route to {dst} ({cause}): check `ip route get {dst}`")]
    NoRoute { dst: Ipv4Addr, cause: io::Error },
    #[error("asking the kernel for the route to {dst}: {what}: {cause}")]
    Os {
        dst: Ipv4Addr,
        what: &'static str,
        cause: io::Error,
    },
    #[error("the kernel's answer for the route to {dst} is malformed ({why})")]
    Malformed { dst: Ipv4Addr, why: &'static str },
}

/// Looks up the output route to `dst`, from `src` when given (a local
/// address, as with `ip route get DST from SRC`).
pub fn route_get(dst: Ipv4Addr, src: Option<Ipv4Addr>) -> Result<Route, RouteError> {
    let os = |what| {
        move |source| RouteError::Os {
            dst,
            what,
            cause: source,
        }
    };
    let sock = Socket::new(
        Domain::from(libc::AF_NETLINK),
        Type::RAW,
        Some(Protocol::from(libc::NETLINK_ROUTE)),
    )
    .map_err(os("socket(AF_NETLINK)"))?;
    sock.set_read_timeout(Some(Duration::from_secs(2)))
        .map_err(os("setting a read timeout"))?;
    // Unaddressed netlink messages go to the kernel.
    sock.send(&request(dst, src, 1))
        .map_err(os("sending RTM_GETROUTE"))?;
    let mut buf = [0u8; 8192];
    let n = (&sock).read(&mut buf).map_err(os("reading the answer"))?;
    let a = parse_reply(&buf[..n]).map_err(|e| match e {
        Reply::Errno(code) => RouteError::NoRoute {
            dst,
            cause: io::Error::from_raw_os_error(code),
        },
        Reply::Malformed(why) => RouteError::Malformed { dst, why },
    })?;
    let ifname = if_name(a.oif).map_err(os("naming the egress interface"))?;
    Ok(Route {
        kind: a.kind,
        ifindex: a.oif,
        ifname,
        gateway: a.gateway,
        prefsrc: a.prefsrc,
        mtu: a.mtu,
    })
}

fn if_name(index: u32) -> io::Result<String> {
    let mut buf = [0 as libc::c_char; libc::IF_NAMESIZE];
    // SAFETY: `buf` holds IF_NAMESIZE bytes, which if_indextoname fills
    // with a NUL-terminated name at most.
    let p = unsafe { libc::if_indextoname(index, buf.as_mut_ptr()) };
    if p.is_null() {
        return Err(io::Error::last_os_error());
    }
    let bytes: Vec<u8> = buf
        .iter()
        .take_while(|&&c| c != 0)
        .map(|&c| c as u8)
        .collect();
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

/// An RTM_GETROUTE request for `dst` (from `src`).
fn request(dst: Ipv4Addr, src: Option<Ipv4Addr>, seq: u32) -> Vec<u8> {
    let attrs = 8 * (1 + usize::from(src.is_some()));
    let len = NLMSG_HDR + RTMSG_LEN + attrs;
    let mut m = Vec::with_capacity(len);
    m.extend_from_slice(&(len as u32).to_ne_bytes());
    m.extend_from_slice(&RTM_GETROUTE.to_ne_bytes());
    m.extend_from_slice(&NLM_F_REQUEST.to_ne_bytes());
    m.extend_from_slice(&seq.to_ne_bytes());
    m.extend_from_slice(&0u32.to_ne_bytes());
    // rtmsg: family, dst_len, src_len, tos, table, protocol, scope, type, flags.
    let src_len = if src.is_some() { 32 } else { 0 };
    m.extend_from_slice(&[libc::AF_INET as u8, 32, src_len, 0, 0, 0, 0, 0]);
    m.extend_from_slice(&0u32.to_ne_bytes());
    for (kind, a) in [(RTA_DST, Some(dst)), (RTA_SRC, src)] {
        if let Some(a) = a {
            m.extend_from_slice(&8u16.to_ne_bytes());
            m.extend_from_slice(&kind.to_ne_bytes());
            m.extend_from_slice(&a.octets());
        }
    }
    m
}

/// What a route answer says.
#[derive(Debug, Default, PartialEq, Eq)]
struct Attrs {
    kind: u8,
    oif: u32,
    gateway: Option<Ipv4Addr>,
    prefsrc: Option<Ipv4Addr>,
    mtu: Option<u32>,
}

#[derive(Debug, PartialEq, Eq)]
enum Reply {
    /// NLMSG_ERROR with this errno.
    Errno(i32),
    Malformed(&'static str),
}

fn ne16(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_ne_bytes(b.get(at..at + 2)?.try_into().ok()?))
}

fn ne32(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_ne_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

fn v4(b: &[u8]) -> Option<Ipv4Addr> {
    Some(Ipv4Addr::from(<[u8; 4]>::try_from(b).ok()?))
}

/// Route attributes: (type, payload) pairs, each padded to 4 bytes.
fn rtattrs(mut b: &[u8]) -> impl Iterator<Item = (u16, &[u8])> {
    std::iter::from_fn(move || {
        let len = usize::from(ne16(b, 0)?);
        let kind = ne16(b, 2)?;
        if len < 4 || len > b.len() {
            return None;
        }
        let data = &b[4..len];
        b = &b[((len + 3) & !3).min(b.len())..];
        Some((kind & 0x3fff, data))
    })
}

/// Parses the kernel's first message of an RTM_GETROUTE answer.
fn parse_reply(b: &[u8]) -> Result<Attrs, Reply> {
    let len = ne32(b, 0).ok_or(Reply::Malformed("short header"))? as usize;
    let kind = ne16(b, 4).ok_or(Reply::Malformed("short header"))?;
    if len < NLMSG_HDR || len > b.len() {
        return Err(Reply::Malformed("bad message length"));
    }
    let body = &b[NLMSG_HDR..len];
    match kind {
        NLMSG_ERROR => {
            let code = ne32(body, 0).ok_or(Reply::Malformed("short error"))? as i32;
            Err(Reply::Errno(code.checked_neg().unwrap_or(libc::EINVAL)))
        }
        RTM_NEWROUTE => {
            if body.len() < RTMSG_LEN {
                return Err(Reply::Malformed("short rtmsg"));
            }
            let mut a = Attrs {
                kind: body[7],
                ..Attrs::default()
            };
            let mut oif = None;
            for (t, d) in rtattrs(&body[RTMSG_LEN..]) {
                match t {
                    RTA_OIF => oif = ne32(d, 0),
                    RTA_GATEWAY => a.gateway = v4(d),
                    RTA_PREFSRC => a.prefsrc = v4(d),
                    RTA_METRICS => {
                        for (m, v) in rtattrs(d) {
                            if m == RTAX_MTU {
                                a.mtu = ne32(v, 0).filter(|&x| x > 0);
                            }
                        }
                    }
                    _ => {}
                }
            }
            a.oif = oif.ok_or(Reply::Malformed("no output interface"))?;
            Ok(a)
        }
        _ => Err(Reply::Malformed("unexpected message type")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn attr(kind: u16, data: &[u8]) -> Vec<u8> {
        let mut v = ((4 + data.len()) as u16).to_ne_bytes().to_vec();
        v.extend_from_slice(&kind.to_ne_bytes());
        v.extend_from_slice(data);
        while !v.len().is_multiple_of(4) {
            v.push(0);
        }
        v
    }

    fn message(kind: u16, body: &[u8]) -> Vec<u8> {
        let mut m = ((NLMSG_HDR + body.len()) as u32).to_ne_bytes().to_vec();
        m.extend_from_slice(&kind.to_ne_bytes());
        m.extend_from_slice(&[0; 10]);
        m.extend_from_slice(body);
        m
    }

    #[test]
    fn a_gateway_route_with_an_mtu_metric() {
        let mut body = vec![2, 32, 0, 0, 254, 0, 0, RTN_UNICAST, 0, 0, 0, 0];
        body.extend(attr(15, &254u32.to_ne_bytes()));
        body.extend(attr(RTA_DST, &[198, 18, 7, 9]));
        body.extend(attr(RTA_OIF, &3u32.to_ne_bytes()));
        body.extend(attr(RTA_PREFSRC, &[198, 18, 0, 1]));
        body.extend(attr(RTA_GATEWAY, &[198, 18, 0, 254]));
        let mut metrics = attr(1, &[0; 4]);
        metrics.extend(attr(RTAX_MTU, &1400u32.to_ne_bytes()));
        body.extend(attr(RTA_METRICS, &metrics));
        let a = parse_reply(&message(RTM_NEWROUTE, &body)).unwrap();
        assert_eq!(
            a,
            Attrs {
                kind: RTN_UNICAST,
                oif: 3,
                gateway: Some(Ipv4Addr::new(198, 18, 0, 254)),
                prefsrc: Some(Ipv4Addr::new(198, 18, 0, 1)),
                mtu: Some(1400),
            }
        );
    }

    #[test]
    fn errors_and_garbage_are_told_apart_never_a_panic() {
        let e = message(NLMSG_ERROR, &(-libc::ENETUNREACH).to_ne_bytes());
        assert_eq!(parse_reply(&e), Err(Reply::Errno(libc::ENETUNREACH)));
        let no_oif = message(RTM_NEWROUTE, &[2, 32, 0, 0, 254, 0, 0, 1, 0, 0, 0, 0]);
        assert_eq!(
            parse_reply(&no_oif),
            Err(Reply::Malformed("no output interface"))
        );
        let good = message(RTM_NEWROUTE, &{
            let mut b = vec![2, 32, 0, 0, 254, 0, 0, 1, 0, 0, 0, 0];
            b.extend(attr(RTA_OIF, &1u32.to_ne_bytes()));
            b
        });
        // Every prefix, and every attribute length byte set to anything.
        for cut in 0..good.len() {
            let _ = parse_reply(&good[..cut]);
        }
        for v in 0..=255u8 {
            let mut g = good.clone();
            g[NLMSG_HDR + RTMSG_LEN] = v;
            let _ = parse_reply(&g);
        }
    }

    #[test]
    fn the_request_is_what_ip_route_get_sends() {
        let r = request(
            Ipv4Addr::new(10, 1, 2, 3),
            Some(Ipv4Addr::new(10, 1, 2, 4)),
            7,
        );
        assert_eq!(r.len(), 44);
        assert_eq!(ne32(&r, 0), Some(44));
        assert_eq!(ne16(&r, 4), Some(RTM_GETROUTE));
        assert_eq!(&r[16..20], &[2, 32, 32, 0]);
        assert_eq!((ne16(&r, 28), ne16(&r, 30)), (Some(8), Some(RTA_DST)));
        assert_eq!(&r[32..36], &[10, 1, 2, 3]);
        assert_eq!((ne16(&r, 36), ne16(&r, 38)), (Some(8), Some(RTA_SRC)));
        assert_eq!(&r[40..44], &[10, 1, 2, 4]);
    }

    #[test]
    fn loopback_routes_through_lo() {
        let r = route_get(Ipv4Addr::LOCALHOST, None).unwrap();
        assert_eq!((r.kind, r.ifname.as_str()), (RTN_LOCAL, "lo"));
        assert_eq!(r.next_hop(Ipv4Addr::LOCALHOST), Ipv4Addr::LOCALHOST);
    }
}

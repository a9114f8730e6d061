//! Addresses as users give them: a host to resolve, an address to bind.

use std::io;
use std::net::{IpAddr, Ipv6Addr, SocketAddr, ToSocketAddrs};
use std::str::FromStr;
use thiserror::Error;

/// Which IP version an address must have.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Family {
    #[default]
    Any,
    V4,
    V6,
}

impl Family {
    fn admits(self, a: &SocketAddr) -> bool {
        match self {
            Family::Any => true,
            Family::V4 => a.is_ipv4(),
            Family::V6 => a.is_ipv6(),
        }
    }
}

#[derive(Debug, Error)]
pub enum ResolveError {
    #[error("cannot resolve host {host:?}: {cause}")]
    Lookup { host: String, cause: io::Error },
    #[error("{host} has no {} address", if *.family == Family::V4 { "IPv4" } else { "IPv6" })]
    NoAddress { host: String, family: Family },
}

/// The first address of `host` (a name, an address, or `[v6]`) of `family`.
pub fn resolve(host: &str, port: u16, family: Family) -> Result<SocketAddr, ResolveError> {
    let host = host.trim_start_matches('[').trim_end_matches(']');
    let mut addrs = (host, port)
        .to_socket_addrs()
        .map_err(|source| ResolveError::Lookup {
            host: host.into(),
            cause: source,
        })?;
    addrs
        .find(|a| family.admits(a))
        .ok_or_else(|| ResolveError::NoAddress {
            host: host.into(),
            family,
        })
}

/// A local address to bind: an IP address with or without a port
/// (`10.0.0.1`, `[::1]:9000`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BindAddr {
    pub ip: IpAddr,
    pub port: Option<u16>,
}

#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("{0:?} is not an IP address (with an optional port: 10.0.0.1, [::1]:9000)")]
pub struct BindAddrError(String);

impl FromStr for BindAddr {
    type Err = BindAddrError;

    fn from_str(s: &str) -> Result<BindAddr, BindAddrError> {
        if let Ok(a) = s.parse::<SocketAddr>() {
            return Ok(BindAddr {
                ip: a.ip(),
                port: Some(a.port()),
            });
        }
        let ip = s.trim_start_matches('[').trim_end_matches(']');
        ip.parse()
            .map(|ip| BindAddr { ip, port: None })
            .map_err(|_| BindAddrError(s.into()))
    }
}

impl BindAddr {
    /// The socket address, `port` filling in a missing port; without an
    /// address: all IPv4 addresses for [`Family::V4`], else the IPv6
    /// wildcard (which takes IPv4 too unless the socket is IPv6-only).
    pub fn or_any(bind: Option<BindAddr>, port: u16, family: Family) -> SocketAddr {
        match bind {
            Some(b) => SocketAddr::new(b.ip, b.port.unwrap_or(port)),
            None if family == Family::V4 => SocketAddr::from(([0, 0, 0, 0], port)),
            None => SocketAddr::from((Ipv6Addr::UNSPECIFIED, port)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bind_addresses_with_and_without_ports() {
        let b: BindAddr = "127.0.0.1".parse().unwrap();
        assert_eq!(
            BindAddr::or_any(Some(b), 5757, Family::Any),
            "127.0.0.1:5757".parse().unwrap()
        );
        let b: BindAddr = "[::1]:9000".parse().unwrap();
        assert_eq!(
            BindAddr::or_any(Some(b), 5757, Family::Any),
            "[::1]:9000".parse().unwrap()
        );
        assert_eq!("[fe80::1]".parse::<BindAddr>().unwrap().port, None);
        assert!("host.example".parse::<BindAddr>().is_err());
        assert_eq!(
            BindAddr::or_any(None, 1, Family::V4),
            "0.0.0.0:1".parse().unwrap()
        );
        assert_eq!(
            BindAddr::or_any(None, 1, Family::Any),
            "[::]:1".parse().unwrap()
        );
    }

    #[test]
    fn resolving_honours_the_family() {
        assert_eq!(
            resolve("127.0.0.1", 9, Family::V4).unwrap(),
            "127.0.0.1:9".parse().unwrap()
        );
        assert_eq!(
            resolve("[::1]", 9, Family::Any).unwrap(),
            "[::1]:9".parse().unwrap()
        );
        let e = resolve("127.0.0.1", 9, Family::V6).unwrap_err();
        assert!(matches!(e, ResolveError::NoAddress { .. }));
        assert_eq!(e.to_string(), "127.0.0.1 has no IPv6 address");
    }
}

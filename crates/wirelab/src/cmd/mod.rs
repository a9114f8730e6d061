//! One module per subcommand.

pub mod analyze;
pub mod capture;
pub mod demo;
pub mod emulate;
pub mod export;
pub mod recv;
pub mod replay;
pub mod send;

use anyhow::{Context, Result};
use std::net::{SocketAddr, ToSocketAddrs};

/// Resolves `host:port`, honouring -4/-6.
pub fn resolve(host: &str, port: u16, v4: bool, v6: bool) -> Result<SocketAddr> {
    let host = host.trim_start_matches('[').trim_end_matches(']');
    let addrs: Vec<SocketAddr> = (host, port)
        .to_socket_addrs()
        .with_context(|| format!("cannot resolve host {host:?}"))?
        .collect();
    addrs
        .iter()
        .copied()
        .find(|a| (!v4 || a.is_ipv4()) && (!v6 || a.is_ipv6()))
        .ok_or_else(|| {
            crate::error::usage(format!(
                "{host} has no {} address",
                if v4 { "IPv4" } else { "IPv6" }
            ))
        })
}

/// Parses a bind address with an optional port (the port flag fills in);
/// without one: all IPv4 addresses with -4, else the IPv6 wildcard (which
/// also takes IPv4 unless -6).
pub fn bind_addr(bind: Option<&str>, port: u16, v4: bool) -> Result<SocketAddr> {
    match bind {
        Some(b) => {
            if let Ok(a) = b.parse::<SocketAddr>() {
                return Ok(a);
            }
            let ip: std::net::IpAddr = b
                .trim_start_matches('[')
                .trim_end_matches(']')
                .parse()
                .map_err(|_| crate::error::usage(format!("--bind {b:?} is not an IP address")))?;
            Ok(SocketAddr::new(ip, port))
        }
        None if v4 => Ok(SocketAddr::from(([0, 0, 0, 0], port))),
        None => Ok(SocketAddr::from((std::net::Ipv6Addr::UNSPECIFIED, port))),
    }
}

//! The IPv4 neighbour table (`/proc/net/arp`, the calling thread's
//! network namespace): the MAC address a next hop answered ARP with, and
//! a bounded wait for one that has not answered yet.

use std::io;
use std::net::Ipv4Addr;
use std::time::{Duration, Instant};
use thiserror::Error;

/// `ATF_COM`: the entry holds a hardware address.
const ATF_COM: u32 = 0x2;
/// How often the table is read while waiting.
const POLL: Duration = Duration::from_millis(10);
/// How often the trigger is sent again while waiting (the kernel gives up
/// on an entry after its own few solicitations, about one a second).
const RETRIGGER: Duration = Duration::from_secs(1);

/// Why a neighbour has no MAC address.
#[derive(Debug, Error)]
pub enum NeighError {
    #[error("no ARP answer from {addr} on {dev} within {} s (`ip neigh show dev {dev}`): is {addr} up and on that link?", .waited.as_secs_f64())]
    Unresolved {
        addr: Ipv4Addr,
        dev: String,
        waited: Duration,
    },
    #[error("reading /proc/net/arp: {0}")]
    Read(io::Error),
    #[error("sending the datagram that resolves {addr}: {cause}")]
    Trigger { addr: Ipv4Addr, cause: io::Error },
}

/// The hardware address `table` (the text of `/proc/net/arp`) holds for
/// `addr` on `dev`, when it is complete.
pub fn parse_arp(table: &str, addr: Ipv4Addr, dev: &str) -> Option<[u8; 6]> {
    table.lines().skip(1).find_map(|line| {
        let f: Vec<&str> = line.split_whitespace().collect();
        let [ip, _hw, flags, mac, _mask, d] = f.as_slice() else {
            return None;
        };
        if ip.parse::<Ipv4Addr>().ok()? != addr || *d != dev {
            return None;
        }
        let flags = u32::from_str_radix(flags.trim_start_matches("0x"), 16).ok()?;
        if flags & ATF_COM == 0 {
            return None;
        }
        parse_mac(mac)
    })
}

fn parse_mac(s: &str) -> Option<[u8; 6]> {
    let mut out = [0u8; 6];
    let mut parts = s.split(':');
    for b in out.iter_mut() {
        let p = parts.next()?;
        if p.len() != 2 {
            return None;
        }
        *b = u8::from_str_radix(p, 16).ok()?;
    }
    parts.next().is_none().then_some(out)
}

/// The complete entry for `addr` on `dev`, if there is one now.
pub fn lookup(addr: Ipv4Addr, dev: &str) -> Result<Option<[u8; 6]>, NeighError> {
    let t = std::fs::read_to_string("/proc/net/arp").map_err(NeighError::Read)?;
    Ok(parse_arp(&t, addr, dev))
}

/// The MAC of `addr` on `dev`. When the table has none, `trigger` sends
/// something that makes the kernel ask (a datagram routed to `addr`), then
/// the table is polled for up to `timeout`, triggering again every second.
pub fn resolve(
    addr: Ipv4Addr,
    dev: &str,
    timeout: Duration,
    trigger: &mut dyn FnMut() -> io::Result<()>,
) -> Result<[u8; 6], NeighError> {
    let t0 = Instant::now();
    let mut last_trigger: Option<Instant> = None;
    loop {
        if let Some(mac) = lookup(addr, dev)? {
            return Ok(mac);
        }
        let waited = t0.elapsed();
        if waited >= timeout {
            return Err(NeighError::Unresolved {
                addr,
                dev: dev.into(),
                waited: timeout,
            });
        }
        if last_trigger.is_none_or(|t| t.elapsed() >= RETRIGGER) {
            trigger().map_err(|source| NeighError::Trigger {
                addr,
                cause: source,
            })?;
            last_trigger = Some(Instant::now());
        }
        std::thread::sleep(POLL.min(timeout - waited));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TABLE: &str = "\
IP address       HW type     Flags       HW address            Mask     Device
198.18.0.2       0x1         0x2         de:94:56:fe:f7:79     *        veth-s
198.18.0.3       0x1         0x0         00:00:00:00:00:00     *        veth-s
198.18.0.2       0x1         0x2         11:22:33:44:55:66     *        other
10.0.0.1 0x1 0x6 aa:bb:cc:dd:ee:0f * eth0
bad line
198.18.0.4       0x1         0x2         de:94:56:fe:f7     *        veth-s
";

    #[test]
    fn complete_entries_on_the_right_device_only() {
        let ip = |s: &str| s.parse::<Ipv4Addr>().unwrap();
        assert_eq!(
            parse_arp(TABLE, ip("198.18.0.2"), "veth-s"),
            Some([0xde, 0x94, 0x56, 0xfe, 0xf7, 0x79])
        );
        assert_eq!(
            parse_arp(TABLE, ip("198.18.0.2"), "other"),
            Some([0x11, 0x22, 0x33, 0x44, 0x55, 0x66])
        );
        // Incomplete, absent, malformed MAC.
        assert_eq!(parse_arp(TABLE, ip("198.18.0.3"), "veth-s"), None);
        assert_eq!(parse_arp(TABLE, ip("198.18.0.9"), "veth-s"), None);
        assert_eq!(parse_arp(TABLE, ip("198.18.0.4"), "veth-s"), None);
        // Permanent entries (0x6) are complete too.
        assert_eq!(
            parse_arp(TABLE, ip("10.0.0.1"), "eth0"),
            Some([0xaa, 0xbb, 0xcc, 0xdd, 0xee, 0x0f])
        );
        assert_eq!(parse_arp("", ip("10.0.0.1"), "eth0"), None);
    }

    #[test]
    fn an_unanswered_address_gives_up_after_the_timeout() {
        // Nobody answers for an address the table cannot hold on "lo".
        let mut triggers = 0;
        let e = resolve(
            Ipv4Addr::new(127, 0, 0, 1),
            "no-such-dev",
            Duration::from_millis(50),
            &mut || {
                triggers += 1;
                Ok(())
            },
        )
        .unwrap_err();
        assert_eq!(triggers, 1);
        assert!(
            e.to_string()
                .starts_with("no ARP answer from 127.0.0.1 on no-such-dev within 0.05 s"),
            "{e}"
        );
    }
}

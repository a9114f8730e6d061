//! Interface counters from sysfs and CPU time from `getrusage`.
//!
//! [`IfCounters::read`] samples `/sys/class/net/IF/statistics/*` (as the kernel keeps them
//! for every driver; a counter the driver does not report reads 0). Taken before and after a
//! capture, [`IfCounters::delta`] gives the packets the interface saw and the drops below
//! the packet socket (`rx_dropped`: no buffer or backlog full; `rx_missed_errors`: the NIC
//! ran out of descriptors).
//!
//! [`cpu_time`] reads the user and system CPU time of the calling thread or the process.

use std::io;
use std::path::PathBuf;

/// A sample of an interface's counters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct IfCounters {
    /// `rx_packets`.
    pub rx_packets: u64,
    /// `rx_bytes`.
    pub rx_bytes: u64,
    /// `rx_dropped`.
    pub rx_dropped: u64,
    /// `rx_missed_errors`.
    pub rx_missed_errors: u64,
    /// `rx_fifo_errors`.
    pub rx_fifo_errors: u64,
    /// `tx_packets`.
    pub tx_packets: u64,
    /// `tx_dropped`.
    pub tx_dropped: u64,
}

fn sys(ifname: &str, rest: &str) -> PathBuf {
    PathBuf::from(format!("/sys/class/net/{ifname}/{rest}"))
}

fn read_u64(ifname: &str, rest: &str) -> io::Result<u64> {
    let p = sys(ifname, rest);
    let s = std::fs::read_to_string(&p)?;
    s.trim().parse().map_err(|_| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!("{}: not a number: {:?}", p.display(), s.trim()),
        )
    })
}

impl IfCounters {
    /// Reads the counters of `ifname` in the current network namespace (one sample; use
    /// [`IfCountersReader`] to sample repeatedly).
    pub fn read(ifname: &str) -> io::Result<IfCounters> {
        IfCountersReader::open(ifname)?.read()
    }

    /// `after - self`, counter by counter (wrapping, as the kernel's counters may).
    pub fn delta(&self, after: &IfCounters) -> IfCounters {
        IfCounters {
            rx_packets: after.rx_packets.wrapping_sub(self.rx_packets),
            rx_bytes: after.rx_bytes.wrapping_sub(self.rx_bytes),
            rx_dropped: after.rx_dropped.wrapping_sub(self.rx_dropped),
            rx_missed_errors: after.rx_missed_errors.wrapping_sub(self.rx_missed_errors),
            rx_fifo_errors: after.rx_fifo_errors.wrapping_sub(self.rx_fifo_errors),
            tx_packets: after.tx_packets.wrapping_sub(self.tx_packets),
            tx_dropped: after.tx_dropped.wrapping_sub(self.tx_dropped),
        }
    }
}

/// The counter files of [`IfCounters`], in field order.
const COUNTER_FILES: [&str; 7] = [
    "rx_packets",
    "rx_bytes",
    "rx_dropped",
    "rx_missed_errors",
    "rx_fifo_errors",
    "tx_packets",
    "tx_dropped",
];

/// [`IfCounters`] sampled through files kept open: one `pread` at offset 0 per counter
/// (sysfs renders the value afresh on every read from the start), no path walk and no
/// `open(2)` per sample — for threads that sample every few milliseconds.
#[derive(Debug)]
pub struct IfCountersReader {
    /// `None`: the driver does not have the counter (reads 0).
    files: Vec<Option<std::fs::File>>,
    path: PathBuf,
}

impl IfCountersReader {
    /// Opens the counters of `ifname` in the current network namespace; `rx_packets` and
    /// `rx_bytes` must exist.
    pub fn open(ifname: &str) -> io::Result<IfCountersReader> {
        let dir = sys(ifname, "statistics");
        let mut files = Vec::with_capacity(COUNTER_FILES.len());
        for (i, n) in COUNTER_FILES.iter().enumerate() {
            match std::fs::File::open(dir.join(n)) {
                Ok(f) => files.push(Some(f)),
                Err(e) if i < 2 => {
                    return Err(io::Error::new(
                        e.kind(),
                        format!("{}: {e}", dir.join(n).display()),
                    ))
                }
                Err(_) => files.push(None),
            }
        }
        Ok(IfCountersReader { files, path: dir })
    }

    /// Reads every counter now.
    pub fn read(&self) -> io::Result<IfCounters> {
        use std::os::unix::fs::FileExt;
        let mut v = [0u64; 7];
        let mut buf = [0u8; 32];
        for (i, f) in self.files.iter().enumerate() {
            let Some(f) = f else { continue };
            let n = f.read_at(&mut buf, 0)?;
            let s = std::str::from_utf8(&buf[..n]).unwrap_or("").trim();
            v[i] = s.parse().map_err(|_| {
                io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!(
                        "{}: not a number: {s:?}",
                        self.path.join(COUNTER_FILES[i]).display()
                    ),
                )
            })?;
        }
        Ok(IfCounters {
            rx_packets: v[0],
            rx_bytes: v[1],
            rx_dropped: v[2],
            rx_missed_errors: v[3],
            rx_fifo_errors: v[4],
            tx_packets: v[5],
            tx_dropped: v[6],
        })
    }
}

/// An interface's identity as the kernel reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IfInfo {
    /// Name.
    pub name: String,
    /// `ifindex`.
    pub index: u32,
    /// ARPHRD_* hardware type (`/sys/class/net/IF/type`).
    pub arphrd: u16,
    /// MTU.
    pub mtu: u32,
}

impl IfInfo {
    /// Looks `ifname` up in the current network namespace; the error lists the interfaces
    /// that do exist.
    pub fn lookup(ifname: &str) -> io::Result<IfInfo> {
        if ifname.is_empty() || ifname.contains('/') || ifname == "." || ifname == ".." {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{ifname:?} is not an interface name"),
            ));
        }
        let index = read_u64(ifname, "ifindex").map_err(|e| {
            if e.kind() == io::ErrorKind::NotFound {
                io::Error::new(
                    io::ErrorKind::NotFound,
                    format!(
                        "no interface {ifname:?} in this network namespace (have: {}); \
                         check `ip link`",
                        list_interfaces().join(", ")
                    ),
                )
            } else {
                e
            }
        })?;
        Ok(IfInfo {
            name: ifname.to_string(),
            index: index as u32,
            arphrd: read_u64(ifname, "type").unwrap_or(1) as u16,
            mtu: read_u64(ifname, "mtu").unwrap_or(1500) as u32,
        })
    }
}

/// Names of the interfaces in the current network namespace, sorted.
pub fn list_interfaces() -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir("/sys/class/net")
        .map(|d| {
            d.filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

/// CPU time used, in ns.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CpuTime {
    /// User time.
    pub user_ns: u64,
    /// System time.
    pub system_ns: u64,
}

impl CpuTime {
    /// User plus system.
    pub fn total_ns(&self) -> u64 {
        self.user_ns + self.system_ns
    }

    /// `after - self`.
    pub fn delta(&self, after: &CpuTime) -> CpuTime {
        CpuTime {
            user_ns: after.user_ns.saturating_sub(self.user_ns),
            system_ns: after.system_ns.saturating_sub(self.system_ns),
        }
    }
}

/// Whose CPU time to read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CpuScope {
    /// The calling thread (`RUSAGE_THREAD`).
    Thread,
    /// The whole process (`RUSAGE_SELF`).
    Process,
}

/// User and system CPU time of the calling thread or the process.
pub fn cpu_time(scope: CpuScope) -> io::Result<CpuTime> {
    let who = match scope {
        CpuScope::Thread => libc::RUSAGE_THREAD,
        CpuScope::Process => libc::RUSAGE_SELF,
    };
    // SAFETY: an all-zero rusage is a valid value of this plain C struct.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `ru` is a valid, writable rusage for the duration of the call.
    let rc = unsafe { libc::getrusage(who, &mut ru) };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    let ns = |tv: libc::timeval| tv.tv_sec as u64 * 1_000_000_000 + tv.tv_usec as u64 * 1000;
    Ok(CpuTime {
        user_ns: ns(ru.ru_utime),
        system_ns: ns(ru.ru_stime),
    })
}

/// Parses a sysfs CPU mask (`"3"`, `"00000000,00000002"`) into CPU numbers.
pub fn parse_cpu_mask(s: &str) -> Vec<usize> {
    let mut cpus = Vec::new();
    let mut base = 0usize;
    for word in s.trim().rsplit(',') {
        if let Ok(v) = u64::from_str_radix(word.trim(), 16) {
            for b in 0..64 {
                if v >> b & 1 == 1 {
                    cpus.push(base + b);
                }
            }
        }
        base += 32;
    }
    cpus.sort_unstable();
    cpus
}

/// The CPUs that do `ifname`'s receive processing by RPS (union of
/// `/sys/class/net/IF/queues/rx-*/rps_cpus`); empty when RPS is off or unreadable.
pub fn rps_cpus(ifname: &str) -> Vec<usize> {
    let mut all = Vec::new();
    let dir = format!("/sys/class/net/{ifname}/queues");
    if let Ok(rd) = std::fs::read_dir(dir) {
        for e in rd.flatten() {
            if !e.file_name().to_string_lossy().starts_with("rx-") {
                continue;
            }
            if let Ok(m) = std::fs::read_to_string(e.path().join("rps_cpus")) {
                all.extend(parse_cpu_mask(&m));
            }
        }
    }
    all.sort_unstable();
    all.dedup();
    all
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_masks() {
        assert_eq!(parse_cpu_mask("2\n"), [1]);
        assert_eq!(parse_cpu_mask("0"), Vec::<usize>::new());
        assert_eq!(parse_cpu_mask("00000001,00000005"), [0, 2, 32]);
    }

    #[test]
    fn loopback_counters_and_info() {
        let lo = IfInfo::lookup("lo").unwrap();
        assert_eq!(lo.arphrd, 772);
        assert!(lo.index >= 1);
        let a = IfCounters::read("lo").unwrap();
        let b = IfCounters::read("lo").unwrap();
        assert!(a.delta(&b).rx_packets < 1 << 40);
    }

    #[test]
    fn open_reader_sees_fresh_values() {
        let r = IfCountersReader::open("lo").unwrap();
        let a = r.read().unwrap();
        // Loopback traffic moves lo's counters; the kept-open files must show it.
        let s = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        let to = s.local_addr().unwrap();
        for _ in 0..5 {
            s.send_to(b"x", to).unwrap();
        }
        let b = r.read().unwrap();
        assert!(a.delta(&b).rx_packets >= 5, "{a:?} -> {b:?}");
        let c = IfCounters::read("lo").unwrap();
        assert!(c.rx_packets >= b.rx_packets);
        assert!(IfCountersReader::open("wl-no-such0").is_err());
    }

    #[test]
    fn missing_interface_names_the_fix() {
        let e = IfInfo::lookup("wl-no-such0").unwrap_err().to_string();
        assert!(e.contains("ip link") && e.contains("lo"), "{e}");
        assert!(IfInfo::lookup("../x").is_err());
    }

    #[test]
    fn thread_cpu_time_grows() {
        let a = cpu_time(CpuScope::Thread).unwrap();
        let t = std::time::Instant::now();
        let mut x = 0u64;
        while t.elapsed().as_millis() < 30 {
            x = x.wrapping_add(std::hint::black_box(1));
        }
        let b = cpu_time(CpuScope::Thread).unwrap();
        assert!(a.delta(&b).total_ns() > 0, "{x}");
        assert!(cpu_time(CpuScope::Process).unwrap().total_ns() >= b.total_ns());
    }
}

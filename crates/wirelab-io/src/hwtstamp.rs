//! NIC hardware timestamping: what an interface can do (`ETHTOOL_GET_TS_INFO`,
//! the query behind `ethtool -T`) and turning receive stamping on
//! (`SIOCSHWTSTAMP`).
//!
//! A socket asking for `SOF_TIMESTAMPING_RX_HARDWARE` gets hardware stamps
//! only once the driver has been told to stamp (`SIOCSHWTSTAMP`). That
//! setting belongs to the whole NIC, and a PTP daemon may rely on it, so
//! [`RxHwStamping::enable`] leaves a configuration that already stamps every
//! packet alone and puts back whatever it changed when dropped.

use std::io;
use std::mem::zeroed;
use std::os::fd::{AsRawFd, OwnedFd};

/// `ETHTOOL_GET_TS_INFO` from `linux/ethtool.h` (not in the libc crate).
const ETHTOOL_GET_TS_INFO: u32 = 0x0000_0041;

/// `struct ethtool_ts_info` from `linux/ethtool.h`.
#[repr(C)]
#[derive(Default)]
struct EthtoolTsInfo {
    cmd: u32,
    so_timestamping: u32,
    phc_index: i32,
    tx_types: u32,
    tx_reserved: [u32; 3],
    rx_filters: u32,
    rx_reserved: [u32; 3],
}

/// An interface's timestamping capabilities, as `ethtool -T` shows them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TsInfo {
    /// `SOF_TIMESTAMPING_*` bits the driver supports.
    pub so_timestamping: u32,
    /// Index of the NIC's PTP hardware clock (`/dev/ptpN`), if it has one.
    pub phc_index: Option<u32>,
    /// Bitmask of supported `HWTSTAMP_TX_*` types.
    pub tx_types: u32,
    /// Bitmask of supported `HWTSTAMP_FILTER_*` receive filters.
    pub rx_filters: u32,
}

impl TsInfo {
    /// The NIC can stamp received packets in hardware.
    pub fn rx_hardware(&self) -> bool {
        self.so_timestamping & libc::SOF_TIMESTAMPING_RX_HARDWARE != 0
            && self.so_timestamping & libc::SOF_TIMESTAMPING_RAW_HARDWARE != 0
    }

    /// The NIC can stamp every received packet (not only PTP frames).
    pub fn rx_filter_all(&self) -> bool {
        self.rx_filters & (1 << libc::HWTSTAMP_FILTER_ALL) != 0
    }

    /// Names of the supported capabilities, as `ethtool -T` spells them.
    pub fn capability_names(&self) -> Vec<&'static str> {
        const NAMES: [(u32, &str); 6] = [
            (libc::SOF_TIMESTAMPING_TX_HARDWARE, "hardware-transmit"),
            (libc::SOF_TIMESTAMPING_TX_SOFTWARE, "software-transmit"),
            (libc::SOF_TIMESTAMPING_RX_HARDWARE, "hardware-receive"),
            (libc::SOF_TIMESTAMPING_RX_SOFTWARE, "software-receive"),
            (libc::SOF_TIMESTAMPING_SOFTWARE, "software-system-clock"),
            (libc::SOF_TIMESTAMPING_RAW_HARDWARE, "hardware-raw-clock"),
        ];
        NAMES
            .iter()
            .filter(|(bit, _)| self.so_timestamping & bit != 0)
            .map(|&(_, n)| n)
            .collect()
    }
}

/// Why hardware receive stamping could not be turned on.
#[derive(Debug, thiserror::Error)]
pub enum HwTsError {
    #[error("no network interface named {0:?} in this namespace (ip link lists them)")]
    NoDevice(String),
    #[error(
        "{0} cannot stamp received packets in hardware (its driver offers {1}; \
         `ethtool -T {0}` shows the same): use a NIC with hardware timestamping, \
         or leave the option off for kernel software stamps"
    )]
    NotSupported(String, String),
    #[error(
        "turning on hardware timestamps of {0} needs CAP_NET_ADMIN: run as root \
         or add the capability (setcap cap_net_admin+ep wirelab)"
    )]
    Permission(String),
    #[error("invalid interface name {0:?}")]
    BadName(String),
    #[error("{op} on {ifname}: {cause}")]
    Io {
        op: &'static str,
        ifname: String,
        cause: io::Error,
    },
}

/// The `hwtstamp_config` a driver holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HwConfig {
    pub tx_type: i32,
    pub rx_filter: i32,
}

/// Hardware receive stamping turned on for one interface; dropping it
/// restores the configuration found before (when this changed it).
#[derive(Debug)]
pub struct RxHwStamping {
    ifname: String,
    /// The filter the driver applied (it may widen what was asked for).
    pub applied: HwConfig,
    /// Set when we changed the NIC's configuration and must put it back.
    previous: Option<HwConfig>,
    pub info: TsInfo,
}

impl RxHwStamping {
    /// Asks `ifname` to stamp every received packet (`HWTSTAMP_FILTER_ALL`),
    /// keeping its transmit setting. Needs CAP_NET_ADMIN unless it already
    /// stamps everything.
    pub fn enable(ifname: &str) -> Result<Self, HwTsError> {
        let info = ts_info(ifname)?;
        if !info.rx_hardware() || !info.rx_filter_all() {
            let caps = info.capability_names();
            let caps = if caps.is_empty() {
                "no timestamping at all".to_string()
            } else {
                caps.join(", ")
            };
            let caps = if info.rx_hardware() {
                format!("{caps}, but only PTP receive filters")
            } else {
                caps
            };
            return Err(HwTsError::NotSupported(ifname.into(), caps));
        }
        let current = hwtstamp_ioctl(ifname, libc::SIOCGHWTSTAMP, None).ok();
        if let Some(c) = current {
            if c.rx_filter == libc::HWTSTAMP_FILTER_ALL as i32 {
                return Ok(RxHwStamping {
                    ifname: ifname.into(),
                    applied: c,
                    previous: None,
                    info,
                });
            }
        }
        let want = HwConfig {
            tx_type: current.map_or(libc::HWTSTAMP_TX_OFF as i32, |c| c.tx_type),
            rx_filter: libc::HWTSTAMP_FILTER_ALL as i32,
        };
        let applied = hwtstamp_ioctl(ifname, libc::SIOCSHWTSTAMP, Some(want))?;
        Ok(RxHwStamping {
            ifname: ifname.into(),
            applied,
            // Without SIOCGHWTSTAMP (old drivers) assume stamping was off.
            previous: Some(current.unwrap_or(HwConfig {
                tx_type: want.tx_type,
                rx_filter: libc::HWTSTAMP_FILTER_NONE as i32,
            })),
            info,
        })
    }

    pub fn interface(&self) -> &str {
        &self.ifname
    }

    /// Whether dropping this will put back an earlier configuration.
    pub fn changed_config(&self) -> bool {
        self.previous.is_some()
    }
}

impl Drop for RxHwStamping {
    fn drop(&mut self) {
        if let Some(prev) = self.previous {
            let _ = hwtstamp_ioctl(&self.ifname, libc::SIOCSHWTSTAMP, Some(prev));
        }
    }
}

/// `ethtool -T IF`: the interface's timestamping capabilities.
pub fn ts_info(ifname: &str) -> Result<TsInfo, HwTsError> {
    let mut data = EthtoolTsInfo {
        cmd: ETHTOOL_GET_TS_INFO,
        ..Default::default()
    };
    let sock = control_socket(ifname)?;
    let mut ifr = ifreq(ifname)?;
    ifr.ifr_ifru.ifru_data = (&mut data as *mut EthtoolTsInfo).cast();
    // SAFETY: `ifr` names the interface and points at `data`, a live
    // `ethtool_ts_info` of the kernel's layout that outlives the call; the
    // kernel writes at most `size_of::<EthtoolTsInfo>()` bytes into it.
    let rc = unsafe { libc::ioctl(sock.as_raw_fd(), libc::SIOCETHTOOL, &mut ifr) };
    if rc < 0 {
        return Err(map_err(
            "ETHTOOL_GET_TS_INFO",
            ifname,
            io::Error::last_os_error(),
        ));
    }
    Ok(TsInfo {
        so_timestamping: data.so_timestamping,
        phc_index: u32::try_from(data.phc_index).ok(),
        tx_types: data.tx_types,
        rx_filters: data.rx_filters,
    })
}

/// SIOCGHWTSTAMP (`set` = None) or SIOCSHWTSTAMP; returns the configuration
/// the driver reports back.
fn hwtstamp_ioctl(
    ifname: &str,
    req: libc::c_ulong,
    set: Option<HwConfig>,
) -> Result<HwConfig, HwTsError> {
    let mut cfg: libc::hwtstamp_config =
        // SAFETY: hwtstamp_config is three integers; all-zero is valid.
        unsafe { zeroed() };
    if let Some(s) = set {
        cfg.tx_type = s.tx_type;
        cfg.rx_filter = s.rx_filter;
    }
    let sock = control_socket(ifname)?;
    let mut ifr = ifreq(ifname)?;
    ifr.ifr_ifru.ifru_data = (&mut cfg as *mut libc::hwtstamp_config).cast();
    // SAFETY: `ifr` points at `cfg`, a live `hwtstamp_config` that outlives
    // the call; the kernel reads and writes exactly that struct.
    let rc = unsafe { libc::ioctl(sock.as_raw_fd(), req, &mut ifr) };
    let op = if set.is_some() {
        "SIOCSHWTSTAMP"
    } else {
        "SIOCGHWTSTAMP"
    };
    if rc < 0 {
        return Err(map_err(op, ifname, io::Error::last_os_error()));
    }
    Ok(HwConfig {
        tx_type: cfg.tx_type,
        rx_filter: cfg.rx_filter,
    })
}

fn map_err(op: &'static str, ifname: &str, e: io::Error) -> HwTsError {
    match e.raw_os_error() {
        Some(libc::ENODEV) => HwTsError::NoDevice(ifname.into()),
        Some(libc::EPERM) | Some(libc::EACCES) => HwTsError::Permission(ifname.into()),
        Some(libc::EOPNOTSUPP) | Some(libc::ERANGE) | Some(libc::EINVAL) => {
            HwTsError::NotSupported(ifname.into(), format!("no {op}"))
        }
        _ => HwTsError::Io {
            op,
            ifname: ifname.into(),
            cause: e,
        },
    }
}

fn control_socket(ifname: &str) -> Result<OwnedFd, HwTsError> {
    let s = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::DGRAM, None).map_err(
        |source| HwTsError::Io {
            op: "socket",
            ifname: ifname.into(),
            cause: source,
        },
    )?;
    Ok(s.into())
}

fn ifreq(ifname: &str) -> Result<libc::ifreq, HwTsError> {
    let bytes = ifname.as_bytes();
    if bytes.is_empty() || bytes.len() >= libc::IFNAMSIZ || bytes.contains(&0) {
        return Err(HwTsError::BadName(ifname.into()));
    }
    // SAFETY: ifreq is plain old data (a name and a union of integers and
    // pointers); all-zero is a valid value.
    let mut ifr: libc::ifreq = unsafe { zeroed() };
    for (d, &s) in ifr.ifr_name.iter_mut().zip(bytes) {
        *d = s as libc::c_char;
    }
    Ok(ifr)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_offers_software_stamps_only() {
        let info = ts_info("lo").expect("lo answers ETHTOOL_GET_TS_INFO");
        assert!(info.so_timestamping & libc::SOF_TIMESTAMPING_RX_SOFTWARE != 0);
        assert!(!info.rx_hardware());
        assert_eq!(info.phc_index, None);
        assert!(info.capability_names().contains(&"software-receive"));
    }

    #[test]
    fn enabling_on_a_software_only_interface_says_why_not() {
        let e = RxHwStamping::enable("lo").unwrap_err();
        assert!(matches!(e, HwTsError::NotSupported(..)), "{e:?}");
        let msg = e.to_string();
        assert!(msg.contains("ethtool -T lo"), "{msg}");
        assert!(msg.contains("software-receive"), "{msg}");
    }

    #[test]
    fn unknown_and_invalid_names_are_reported() {
        assert!(matches!(
            ts_info("wlnosuchif0"),
            Err(HwTsError::NoDevice(_))
        ));
        assert!(matches!(
            ts_info("a-name-far-too-long-for-ifnamsiz"),
            Err(HwTsError::BadName(_))
        ));
        assert!(matches!(ts_info(""), Err(HwTsError::BadName(_))));
    }

    #[test]
    fn capability_names_follow_the_bits() {
        let info = TsInfo {
            so_timestamping: libc::SOF_TIMESTAMPING_RX_HARDWARE
                | libc::SOF_TIMESTAMPING_RAW_HARDWARE,
            phc_index: Some(0),
            tx_types: 0,
            rx_filters: 1 << libc::HWTSTAMP_FILTER_ALL,
        };
        assert!(info.rx_hardware() && info.rx_filter_all());
        assert_eq!(
            info.capability_names(),
            ["hardware-receive", "hardware-raw-clock"]
        );
        let ptp_only = TsInfo {
            rx_filters: 1 << libc::HWTSTAMP_FILTER_PTP_V2_EVENT,
            ..info
        };
        assert!(!ptp_only.rx_filter_all());
    }
}

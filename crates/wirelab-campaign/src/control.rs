//! The control file of `wirelab run`: one TOML file describing a campaign's
//! hosts, flows, sweep, emulator and captures, read into typed values.
//!
//! Contracts:
//! - Every key is known or refused; every value is checked where it is read.
//!   Errors read `FILE:LINE:COL: KEY: what is wrong and what to write`
//!   ([`ControlError`]), with `KEY` the dotted path (`flow.sut.duration`,
//!   `hosts.tx.transport`; a flow is named by its `name`, or `flow[N]`,
//!   1-based, before its name is known).
//! - Durations are strings with a unit (`"5s"`, `"100us"`, `"2h"`) or `0`,
//!   parsed by [`wirelab_core::units::parse_duration_ns`]; sizes and
//!   intervals are `wirelab send` specs (`80`, `"uniform:64,1400"`,
//!   `"100us"`, `0`) checked by the same parser `send` uses.
//! - A flow with neither `duration` nor `count` runs for
//!   [`DEFAULT_DURATION_NS`] (10 s, like `wirelab send`); the default is
//!   filled in when a point is resolved, so a swept `count` is not cut short.
//! - Names: hosts and flows `[A-Za-z0-9_-]`, the campaign also `.`; they
//!   become file names in the results bundle.
//! - Sweep keys ([`Sweep`]): a flow key ([`FlowKey`]) sets that field of
//!   every flow (all but `port`); `flow.NAME.KEY` one flow's, and wins
//!   over the unprefixed key; any other key is a parameter used as `{KEY}`
//!   in the emulator's stages and arguments, the capture's filter and
//!   arguments, a flow's `send_args`/`recv_args`, or in a flow's `when`.
//!   A key that changes nothing is refused (a typo).
//! - A flow's `when` (an [`Expr`](crate::expr::Expr)) selects the points it runs in, e.g. one
//!   direction per point with a `direction` axis.
//! - `[lab]` hosts (`transport = "lab:NS"`) name their interfaces by the
//!   namespace at the other end of the link (`test_if = "rx"`, emulator
//!   `ifaces = ["tx", "rx"]`): the lab makes the real names.
//! - `[[stressor]]`, `[env]` and `[metrics]` are carried out by `wirelab run`;
//!   `[env]` settings are checked as `wirelab env --apply` checks them.
//!
//! The sections and their keys are the tables of [`schema`], which the
//! reader checks keys against and docs/run.md shows.
//!
//! No I/O except reading the file in [`load`].

mod keys;
mod read;
mod reader;
mod schema;

use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::expr::Value;
pub(crate) use keys::{check_axis_value, check_pacing, substitute, FlowKey, Target};
pub use keys::{KeyError, ValueError};
use reader::Src;
use wirelab_host::stress::StressorSpec;

/// How long a flow with neither `duration` nor `count` runs (as `send`).
pub const DEFAULT_DURATION_NS: u64 = 10_000_000_000;
/// Packets between two loss queries unless `query.every_packets` says.
pub const DEFAULT_QUERY_EVERY: u64 = 100_000;
/// Bytes of IPv4 and UDP headers: a raw or packet socket cannot send a
/// payload larger than the MTU less these (it cannot fragment).
pub const IPV4_UDP_HEADERS: u32 = 28;
/// The MTU of a veth link made without one.
pub const DEFAULT_LINK_MTU: u32 = 1500;

/// A control file that could not be read or is not valid.
#[derive(Debug, thiserror::Error)]
pub enum ControlError {
    #[error("cannot read control file {path}: {cause}")]
    Read { path: String, cause: std::io::Error },
    /// `key` is the dotted path of the offending key; empty for a TOML
    /// syntax error.
    #[error("{file}:{line}:{col}: {}{message}", if key.is_empty() { String::new() } else { format!("{key}: ") })]
    Invalid {
        file: String,
        line: usize,
        col: usize,
        key: String,
        message: String,
    },
}

/// A whole control file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Control {
    pub campaign: Campaign,
    pub hosts: BTreeMap<String, HostSpec>,
    pub lab: Option<LabSpec>,
    pub flows: Vec<FlowSpec>,
    pub sweep: Sweep,
    pub emulate: Option<EmulateSpec>,
    pub capture: Option<CaptureSpec>,
    pub stressors: Vec<StressorSpec>,
    pub env: Option<EnvSpec>,
    pub metrics: Option<MetricsSpec>,
}

/// `[campaign]`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Campaign {
    pub name: String,
    pub description: Option<String>,
    /// Default sequential.
    pub order: Order,
    /// Seed of the shuffled order. Default 1.
    pub seed: u64,
    /// Rounds over the whole sweep; at least 1 (the default).
    pub repetitions: u32,
    /// Wait after starting stressors, before the receivers (key `settle`).
    /// Default 0.
    pub settle_ns: u64,
    /// Wait between two points (key `pause`). Default 0.
    pub pause_ns: u64,
    /// Above this clock-offset uncertainty a cross-host flow's OWD is
    /// published only relative to its minimum (key `owd_uncertainty_max`).
    /// Default [`OWD_UNCERTAINTY_MAX_NS`].
    pub owd_uncertainty_max_ns: u64,
}

/// Default of `campaign.owd_uncertainty_max`: 1 ms, well above what probes
/// over a LAN or between namespaces give (tens of µs), below what a
/// congested control path gives.
pub const OWD_UNCERTAINTY_MAX_NS: u64 = 1_000_000;

/// The run order of the points.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Order {
    Sequential,
    Shuffled,
}

impl Order {
    pub fn as_str(self) -> &'static str {
        match self {
            Order::Sequential => "sequential",
            Order::Shuffled => "shuffled",
        }
    }

    pub(crate) fn parse(s: &str) -> Option<Order> {
        match s {
            "sequential" => Some(Order::Sequential),
            "shuffled" => Some(Order::Shuffled),
            _ => None,
        }
    }
}

impl fmt::Display for Order {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One host of `[hosts]`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HostSpec {
    /// `local`, `netns:NAME`, `lab:NS` (a namespace of `[lab]`) or
    /// `ssh://[user@]host[:port][?netns=NAME]`; parsed by the transport.
    pub transport: String,
    /// The interface test traffic uses (for a lab host: the peer namespace).
    pub test_if: Option<String>,
    /// The interface the control channel uses.
    pub control_if: Option<String>,
    /// The wirelab binary on that host. Default `wirelab`.
    pub wirelab: String,
    /// The test interface's MTU when known.
    pub mtu: Option<u32>,
    /// The address flows to this host are sent to.
    pub addr: Option<String>,
    /// Test hook (key `test_clock_offset`): the agent adds this to every
    /// realtime stamp it and its children report (`agent
    /// --test-clock-offset`), so clock-offset correction can be checked on
    /// one machine.
    pub test_clock_offset_ns: Option<i64>,
}

/// `[lab]`: namespaces and veth links built on this machine for the run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LabSpec {
    /// 1 to 6 lowercase letters or digits each.
    pub namespaces: Vec<String>,
    pub links: Vec<LabLink>,
    pub routes: Vec<LabRoute>,
    pub sysctls: Vec<LabSysctl>,
}

/// A veth pair between namespaces `a` and `b`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LabLink {
    pub a: String,
    pub b: String,
    /// `ADDRESS/PREFIX` of a's end, if any.
    pub a_addr: Option<String>,
    pub b_addr: Option<String>,
    /// The interfaces' names in their namespaces (both or neither); by
    /// default the lab names them.
    pub a_if: Option<String>,
    pub b_if: Option<String>,
    pub mtu: Option<u32>,
    /// IPv6 on the link (default true); off keeps router solicitations
    /// and neighbour discovery off the wire.
    pub ipv6: bool,
}

/// A route in namespace `ns`: `to` (`ADDRESS/PREFIX` or `default`) via
/// the gateway `via`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LabRoute {
    pub ns: String,
    pub to: String,
    pub via: String,
}

/// A sysctl set in namespace `ns` (e.g. `net.ipv4.ip_forward = 1` in a
/// router namespace).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LabSysctl {
    pub ns: String,
    pub key: String,
    pub value: String,
}

/// The socket a flow sends with (`wirelab send --socket`).
pub use wirelab_engine::txpath::SocketKind;

/// One `[[flow]]`: a sender on `from` and a receiver (or reflector, with
/// `echo`) on `to`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FlowSpec {
    pub name: String,
    pub from: String,
    pub to: String,
    /// ns; see [`DEFAULT_DURATION_NS`].
    #[serde(rename = "duration_ns")]
    pub duration: Option<u64>,
    pub count: Option<u64>,
    /// `send --interval` spec; `"0"` sends as fast as possible.
    pub interval: Option<String>,
    /// `send --rate`.
    pub rate: Option<String>,
    /// `send --size` spec.
    pub size: Option<String>,
    pub socket: SocketKind,
    pub dscp: Option<u8>,
    pub echo: bool,
    /// The receiver's port; chosen by the runner when absent.
    pub port: Option<u16>,
    pub warmup_packets: u64,
    pub query: Query,
    pub abort: Abort,
    /// The points this flow runs in (an [`Expr`](crate::expr::Expr) over their parameters);
    /// all when absent.
    pub when: Option<String>,
    /// Other `wirelab send` options, verbatim.
    pub send_args: Vec<String>,
    /// Other `wirelab recv` options, verbatim.
    pub recv_args: Vec<String>,
}

/// When and how the runner asks a flow's receiver for its loss count.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Query {
    pub every_packets: u64,
    pub mode: QueryMode,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum QueryMode {
    /// Over the control channel, not blocking the sender (default).
    Control,
    /// In band, between probes.
    Inband,
}

/// When the runner stops a flow early.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Abort {
    /// Stop once more than this many packets are lost.
    pub lost_gt: Option<u64>,
    /// Stop after this long (ns).
    #[serde(rename = "max_duration_ns")]
    pub max_duration: Option<u64>,
}

/// `[sweep]`: axes in file order, and exclusions.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Sweep {
    pub axes: Vec<Axis>,
    /// Expressions; a combination any of them holds for is not run.
    pub exclude: Vec<String>,
    /// Search along one axis for the loss-free limit.
    pub search: Option<Search>,
}

/// `search = { axis, lossfree }`: along `axis` (its values in the file's
/// order), once `lossfree` points in a row of one combination of the other
/// parameters lose nothing, the rest of that axis is not run (DTSS
/// §4.1.2.2: the cycle time raised until the link is loss-free).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Search {
    pub axis: String,
    pub lossfree: u32,
}

/// One sweep key and its values (at least one, no two alike).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Axis {
    pub key: String,
    pub values: Vec<Value>,
}

/// `[emulate]`: `wirelab emulate` on `host` between `ifaces`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EmulateSpec {
    pub host: String,
    /// `--a` and `--b`.
    pub ifaces: [String; 2],
    /// Stages for both directions (`--both`).
    pub stages: Option<String>,
    pub a2b: Option<String>,
    pub b2a: Option<String>,
    /// Other `wirelab emulate` options, verbatim.
    pub args: Vec<String>,
}

/// `[capture]`: `wirelab capture` on each of `hosts`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CaptureSpec {
    pub hosts: Vec<String>,
    /// Interfaces; empty: each host's `test_if`, or on the emulator's host
    /// without one the emulator's two ([`Control::capture_ifaces`]).
    pub ifaces: Vec<String>,
    pub snaplen: Option<u32>,
    /// A tcpdump-syntax filter.
    pub filter: Option<String>,
    pub args: Vec<String>,
}

/// `[env]`: settings applied per host for the run, reverted after.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EnvSpec {
    /// host → setting → value.
    pub apply: BTreeMap<String, BTreeMap<String, Value>>,
}

/// `[metrics]`: the Prometheus endpoint served during the run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MetricsSpec {
    pub listen: String,
    /// How long the endpoint stays up after the campaign ends, so that a
    /// scraper reads the final values. Default 0.
    pub linger_ns: u64,
}

impl Control {
    /// The MTU a flow from `host` meets when known: the host's `mtu`, or
    /// for a lab host the smallest MTU of its links.
    pub fn host_mtu(&self, host: &str) -> Option<u32> {
        let h = self.hosts.get(host)?;
        if h.mtu.is_some() {
            return h.mtu;
        }
        let ns = h.transport.strip_prefix("lab:")?;
        self.lab
            .as_ref()?
            .links
            .iter()
            .filter(|l| l.a == ns || l.b == ns)
            .map(|l| l.mtu.unwrap_or(DEFAULT_LINK_MTU))
            .min()
    }

    /// The address flows to `host` use: its `addr`, or for a lab host the
    /// one address its links give it (none when several or none).
    pub fn test_addr(&self, host: &str) -> Option<String> {
        let h = self.hosts.get(host)?;
        if h.addr.is_some() {
            return h.addr.clone();
        }
        let ns = h.transport.strip_prefix("lab:")?;
        let mut addrs = self.lab.as_ref()?.links.iter().filter_map(|l| {
            let a = if l.a == ns {
                l.a_addr.as_ref()
            } else if l.b == ns {
                l.b_addr.as_ref()
            } else {
                None
            }?;
            Some(a.split('/').next().unwrap_or(a).to_string())
        });
        let first = addrs.next()?;
        addrs.next().is_none().then_some(first)
    }

    /// The interfaces `[capture]` records on `host`: `capture.ifaces`, else
    /// the host's `test_if`, else (the emulator's host) the emulator's two.
    /// Empty when `host` is not a capture host.
    pub fn capture_ifaces(&self, host: &str) -> Vec<String> {
        let Some(cap) = self
            .capture
            .as_ref()
            .filter(|c| c.hosts.iter().any(|h| h == host))
        else {
            return Vec::new();
        };
        if !cap.ifaces.is_empty() {
            return cap.ifaces.clone();
        }
        if let Some(t) = self.hosts.get(host).and_then(|h| h.test_if.clone()) {
            return vec![t];
        }
        match &self.emulate {
            Some(e) if e.host == host => e.ifaces.to_vec(),
            _ => Vec::new(),
        }
    }
}

/// Reads and parses the control file at `path`; returns it with the text as
/// read (for the results bundle).
pub fn load(path: &Path) -> Result<(Control, String), ControlError> {
    let text = std::fs::read_to_string(path).map_err(|source| ControlError::Read {
        path: path.display().to_string(),
        cause: source,
    })?;
    let c = parse(&path.display().to_string(), &text)?;
    Ok((c, text))
}

/// Parses and checks a control file; `file_name` is used in messages only.
pub fn parse(file_name: &str, text: &str) -> Result<Control, ControlError> {
    read::document(&Src {
        file: file_name,
        text,
    })
}

#[cfg(test)]
mod tests;

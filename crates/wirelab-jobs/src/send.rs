//! `wirelab send`.

use crate::{ns, Argv};
use serde::{Deserialize, Serialize};

/// The flags of `wirelab send` a spec sets.
pub mod flag {
    pub const PORT: &str = "--port";
    pub const PORT_SHORT: &str = "-p";
    pub const FLOW: &str = "--flow";
    pub const START_AT: &str = "--start-at";
    pub const RECORD: &str = "--record";
    pub const RECORD_SHORT: &str = "-o";
    pub const JSON: &str = "--json";
    pub const QUIET: &str = "--quiet";
    pub const SEED: &str = "--seed";
    pub const IPV4: &str = "--ipv4";
    pub const COUNT: &str = "--count";
    pub const COUNT_SHORT: &str = "-n";
    pub const DURATION: &str = "--duration";
    pub const DURATION_SHORT: &str = "-d";
    pub const INTERVAL: &str = "--interval";
    pub const INTERVAL_SHORT: &str = "-i";
    pub const RATE: &str = "--rate";
    pub const RATE_SHORT: &str = "-r";
    pub const BITRATE: &str = "--bitrate";
    pub const SIZE: &str = "--size";
    pub const SIZE_SHORT: &str = "-s";
    pub const DSCP: &str = "--dscp";
    pub const WARMUP: &str = "--warmup";
    pub const SOCKET: &str = "--socket";
    pub const ECHO: &str = "--echo";
    pub const RT_PRIORITY: &str = "--rt-priority";
}

/// `send --socket`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SendSocket {
    Udp,
    Raw,
    Packet,
}

impl SendSocket {
    pub fn as_str(self) -> &'static str {
        match self {
            SendSocket::Udp => "udp",
            SendSocket::Raw => "raw",
            SendSocket::Packet => "packet",
        }
    }
}

/// A sender. Interval, rate, bit rate and size are specs in the CLI's own
/// syntax (`exp:1ms`, `10kpps`, `1Gbit`, `uniform:64,1400`), passed as given.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SendJob {
    /// The receiver's host name or address.
    pub target: String,
    pub port: u16,
    /// The flow id (the CLI's default when None).
    pub flow: Option<u32>,
    /// The first probe's deadline, unix ns on the sender's clock.
    pub start_at_unix_ns: Option<u64>,
    /// The record file.
    pub record: Option<String>,
    pub json: bool,
    pub quiet: bool,
    pub seed: Option<u64>,
    /// IPv4 only.
    pub ipv4: bool,
    pub count: Option<u64>,
    pub duration_ns: Option<u64>,
    pub interval: Option<String>,
    pub rate: Option<String>,
    pub bitrate: Option<String>,
    pub size: Option<String>,
    pub dscp: Option<u8>,
    pub warmup: Option<u64>,
    /// The socket (the CLI's default, udp, when None).
    pub socket: Option<SendSocket>,
    pub echo: bool,
    /// SCHED_FIFO priority of the sending thread.
    pub rt_priority: Option<u8>,
    /// Arguments as the user gave them, after the spec's.
    pub extra: Vec<String>,
}

impl SendJob {
    pub fn argv(&self) -> Vec<String> {
        let mut a = Argv::new("send");
        a.arg(&self.target);
        a.val(flag::PORT, self.port);
        a.opt(flag::FLOW, self.flow);
        a.opt(flag::START_AT, self.start_at_unix_ns);
        a.opt(flag::RECORD, self.record.as_ref());
        a.switch(flag::JSON, self.json);
        a.switch(flag::QUIET, self.quiet);
        a.opt(flag::SEED, self.seed);
        a.switch(flag::IPV4, self.ipv4);
        a.opt(flag::COUNT, self.count);
        a.opt(flag::DURATION, self.duration_ns.map(ns));
        a.opt(flag::INTERVAL, self.interval.as_ref());
        a.opt(flag::RATE, self.rate.as_ref());
        a.opt(flag::BITRATE, self.bitrate.as_ref());
        a.opt(flag::SIZE, self.size.as_ref());
        a.opt(flag::DSCP, self.dscp);
        a.opt(flag::WARMUP, self.warmup);
        a.opt(flag::SOCKET, self.socket.map(SendSocket::as_str));
        a.switch(flag::ECHO, self.echo);
        a.opt(flag::RT_PRIORITY, self.rt_priority);
        a.extend(&self.extra);
        a.done()
    }
}

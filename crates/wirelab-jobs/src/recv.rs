//! `wirelab recv`.

use crate::{ns, Argv};
use serde::{Deserialize, Serialize};

/// The flags of `wirelab recv` a spec sets.
pub mod flag {
    pub const PORT: &str = "--port";
    pub const PORT_SHORT: &str = "-p";
    pub const RECORD: &str = "--record";
    pub const RECORD_SHORT: &str = "-o";
    pub const STATUS: &str = "--status";
    pub const JSON: &str = "--json";
    pub const QUIET: &str = "--quiet";
    pub const IPV4: &str = "--ipv4";
    pub const IDLE_TIMEOUT: &str = "--idle-timeout";
    pub const TIMEOUT: &str = "--timeout";
    pub const ECHO: &str = "--echo";
}

/// A receiver.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RecvJob {
    pub port: u16,
    /// The record file.
    pub record: Option<String>,
    /// The status file (the loss so far, rewritten as it runs).
    pub status: Option<String>,
    pub json: bool,
    pub quiet: bool,
    /// IPv4 only.
    pub ipv4: bool,
    pub idle_timeout_ns: Option<u64>,
    pub timeout_ns: Option<u64>,
    pub echo: bool,
    /// Arguments as the user gave them, after the spec's.
    pub extra: Vec<String>,
}

impl RecvJob {
    pub fn argv(&self) -> Vec<String> {
        let mut a = Argv::new("recv");
        a.val(flag::PORT, self.port);
        a.opt(flag::RECORD, self.record.as_ref());
        a.opt(flag::STATUS, self.status.as_ref());
        a.switch(flag::JSON, self.json);
        a.switch(flag::QUIET, self.quiet);
        a.switch(flag::IPV4, self.ipv4);
        a.opt(flag::IDLE_TIMEOUT, self.idle_timeout_ns.map(ns));
        a.opt(flag::TIMEOUT, self.timeout_ns.map(ns));
        a.switch(flag::ECHO, self.echo);
        a.extend(&self.extra);
        a.done()
    }
}

//! `wirelab stress`.

use crate::{ns, Argv};
use serde::{Deserialize, Serialize};

/// The flags of `wirelab stress` a spec sets.
pub mod flag {
    pub const WORKERS: &str = "--workers";
    pub const LOAD: &str = "--load";
    pub const RT_PRIORITY: &str = "--rt-priority";
    pub const TIMER_FREQ: &str = "--timer-freq";
    pub const BITRATE: &str = "--bitrate";
    pub const TO: &str = "--to";
    pub const PORT: &str = "--port";
    pub const SIZE: &str = "--size";
    pub const IO_CAP: &str = "--io-cap";
    pub const DURATION: &str = "--duration";
    pub const READY: &str = "--ready";
    pub const JSON: &str = "--json";
    /// Ends the stressor's flags: what follows goes to stress-ng.
    pub const STRESS_NG: &str = "--";
}

/// A stressor. Frequencies and bit rates in the CLI's syntax (`100kHz`,
/// `1Gbit`), as given.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StressJob {
    /// The load's name (`cpu`, `timer`, `realistic`, ...).
    pub kind: String,
    pub workers: Option<u32>,
    pub load: Option<u8>,
    pub rt_priority: Option<u8>,
    pub timer_freq: Option<String>,
    pub bitrate: Option<String>,
    /// Network load: the address sent to.
    pub to: Option<String>,
    pub port: Option<u16>,
    pub size: Option<u32>,
    pub io_cap: Option<String>,
    pub duration_ns: Option<u64>,
    /// The file written once every part is up.
    pub ready: Option<String>,
    pub json: bool,
    /// Arguments for every stress-ng part.
    pub stress_ng_args: Vec<String>,
}

impl StressJob {
    pub fn argv(&self) -> Vec<String> {
        let mut a = Argv::new("stress");
        a.arg(&self.kind);
        a.opt(flag::WORKERS, self.workers);
        a.opt(flag::LOAD, self.load);
        a.opt(flag::RT_PRIORITY, self.rt_priority);
        a.opt(flag::TIMER_FREQ, self.timer_freq.as_ref());
        a.opt(flag::BITRATE, self.bitrate.as_ref());
        a.opt(flag::TO, self.to.as_ref());
        a.opt(flag::PORT, self.port);
        a.opt(flag::SIZE, self.size);
        a.opt(flag::IO_CAP, self.io_cap.as_ref());
        a.opt(flag::DURATION, self.duration_ns.map(ns));
        a.opt(flag::READY, self.ready.as_ref());
        a.switch(flag::JSON, self.json);
        if !self.stress_ng_args.is_empty() {
            a.arg(flag::STRESS_NG);
            a.extend(&self.stress_ng_args);
        }
        a.done()
    }
}

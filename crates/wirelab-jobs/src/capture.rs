//! `wirelab capture`.

use crate::Argv;
use serde::{Deserialize, Serialize};

/// The flags of `wirelab capture` a spec sets.
pub mod flag {
    pub const INTERFACE: &str = "--interface";
    pub const WRITE: &str = "--write";
    pub const JSON: &str = "--json";
    pub const QUIET: &str = "--quiet";
    pub const SNAPLEN: &str = "--snaplen";
}

/// A capture on one interface into one file.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CaptureJob {
    pub interface: String,
    pub write: String,
    pub json: bool,
    pub quiet: bool,
    pub snaplen: Option<u32>,
    /// A filter in tcpdump syntax, one argument.
    pub filter: Option<String>,
    /// Arguments as the user gave them, after the spec's.
    pub extra: Vec<String>,
}

impl CaptureJob {
    pub fn argv(&self) -> Vec<String> {
        let mut a = Argv::new("capture");
        a.val(flag::INTERFACE, &self.interface);
        a.val(flag::WRITE, &self.write);
        a.switch(flag::JSON, self.json);
        a.switch(flag::QUIET, self.quiet);
        a.opt(flag::SNAPLEN, self.snaplen);
        if let Some(f) = &self.filter {
            a.arg(f);
        }
        a.extend(&self.extra);
        a.done()
    }
}

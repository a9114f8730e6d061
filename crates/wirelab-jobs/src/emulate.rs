//! `wirelab emulate`.

use crate::Argv;
use serde::{Deserialize, Serialize};

/// The flags of `wirelab emulate` a spec sets.
pub mod flag {
    pub const A: &str = "--a";
    pub const B: &str = "--b";
    pub const JSON: &str = "--json";
    pub const QUIET: &str = "--quiet";
    pub const BOTH: &str = "--both";
    pub const A2B: &str = "--a2b";
    pub const B2A: &str = "--b2a";
}

/// An emulator bridging interfaces `a` and `b`; stages in the emulator's
/// (netem's) syntax.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct EmulateJob {
    pub a: String,
    pub b: String,
    pub json: bool,
    pub quiet: bool,
    pub both: Option<String>,
    pub a2b: Option<String>,
    pub b2a: Option<String>,
    /// Arguments as the user gave them, after the spec's.
    pub extra: Vec<String>,
}

impl EmulateJob {
    pub fn argv(&self) -> Vec<String> {
        let mut a = Argv::new("emulate");
        a.val(flag::A, &self.a);
        a.val(flag::B, &self.b);
        a.switch(flag::JSON, self.json);
        a.switch(flag::QUIET, self.quiet);
        a.opt(flag::BOTH, self.both.as_ref());
        a.opt(flag::A2B, self.a2b.as_ref());
        a.opt(flag::B2A, self.b2a.as_ref());
        a.extend(&self.extra);
        a.done()
    }
}

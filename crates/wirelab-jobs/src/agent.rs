//! `wirelab agent`.

use crate::Argv;
use serde::{Deserialize, Serialize};

/// The flags of `wirelab agent` a spec sets.
pub mod flag {
    pub const STDIO: &str = "--stdio";
    pub const WORKDIR: &str = "--workdir";
    pub const TEST_CLOCK_OFFSET: &str = "--test-clock-offset";
}

/// An agent serving its controller on stdin/stdout.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AgentJob {
    /// Its work directory (default: a new one, removed at exit).
    pub workdir: Option<String>,
    /// Test hook: the offset added to every realtime stamp it reports.
    pub test_clock_offset_ns: Option<i64>,
}

impl AgentJob {
    pub fn argv(&self) -> Vec<String> {
        let mut a = Argv::new("agent");
        a.switch(flag::STDIO, true);
        a.opt(flag::WORKDIR, self.workdir.as_ref());
        a.opt(
            flag::TEST_CLOCK_OFFSET,
            self.test_clock_offset_ns.map(|v| format!("{v}ns")),
        );
        a.done()
    }
}

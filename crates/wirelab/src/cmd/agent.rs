//! `wirelab agent --stdio`: the agent `wirelab run` starts on each host
//! (through ssh, `ip netns exec` or as a child), serving the JSON-lines
//! protocol of [`wirelab_agent::proto`] on stdin/stdout.

use anyhow::{Context, Result};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use wirelab_agent::agent::{self, AgentConfig};
use wirelab_cli::agent::AgentArgs;

pub fn run(a: AgentArgs) -> Result<()> {
    if let Some(o) = &a.test_clock_offset {
        let ns = wirelab_core::clocksync::parse_offset_ns(o).context("--test-clock-offset")?;
        // Before any thread starts: this process and its children (which
        // inherit the environment) read it once, at their first stamp.
        std::env::set_var(wirelab_io::clock::TEST_OFFSET_ENV, ns.to_string());
    }
    let mut cfg =
        AgentConfig::new(std::env::current_exe().context("cannot find the wirelab executable")?);
    cfg.workdir = a.workdir;
    use signal_hook::consts::{SIGHUP, SIGINT, SIGPIPE, SIGTERM};
    for sig in [SIGINT, SIGTERM, SIGHUP] {
        signal_hook::flag::register(sig, cfg.stop.clone()).context("cannot watch signals")?;
    }
    // A controller gone mid-answer is an error on write (the agent then
    // stops its children), not a silent death by SIGPIPE.
    signal_hook::flag::register(SIGPIPE, Arc::new(AtomicBool::new(false)))
        .context("cannot watch signals")?;
    agent::serve(std::io::stdin(), std::io::stdout().lock(), cfg)?;
    Ok(())
}

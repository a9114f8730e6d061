//! `wirelab stress KIND`: one stressor (§3.4 of the Airbus DTSS test
//! report) for as long as it is wanted, then nothing left of it
//! ([`wirelab_host::stress::supervise`]).

use anyhow::{bail, Context, Result};
use std::io::Write;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;
use wirelab_cli::stress::StressArgs;
use wirelab_host::stress::{self, supervise};

pub fn run(a: StressArgs) -> Result<()> {
    let o = a.options();
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get() as u32);
    let duration_s = a.duration.map(|ns| ns.div_ceil(1_000_000_000));
    let (parts, notes) = stress::plan(a.kind, &o, cpus, duration_s)
        .map_err(|e| crate::error::usage(e.to_string()))?;
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(sig, stop.clone()).context("cannot watch signals")?;
    }
    let out = supervise::run(supervise::Supervise {
        load: a.kind,
        parts,
        notes,
        wirelab: std::env::current_exe().context("cannot find the wirelab executable")?,
        duration: a.duration.map(Duration::from_nanos),
        ready: a.ready,
        stop: &stop,
    })?;
    let mut w = std::io::stdout().lock();
    if a.json {
        writeln!(w, "{}", serde_json::to_string_pretty(&out.report)?)?;
    } else {
        write!(w, "{}", stress::render_text(&out.report))?;
    }
    w.flush()?;
    if let Some(why) = out.failed {
        bail!("{why}");
    }
    Ok(())
}

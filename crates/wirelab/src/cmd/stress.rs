//! `wirelab stress KIND`: one stressor (seed 003 §3.4) for as long as it
//! is wanted, then nothing left of it ([`wirelab_ctl::stress::supervise`]).

use anyhow::{bail, Context, Result};
use std::io::Write;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;
use wirelab_cli::stress::StressArgs;
use wirelab_ctl::stress::{self, supervise, Options};

pub fn run(a: StressArgs) -> Result<()> {
    let o = Options {
        workers: a.workers,
        load: a.load,
        rt_priority: a.rt_priority,
        timer_hz: a.timer_freq,
        to: a.to.clone(),
        port: a.port,
        bitrate: a.bitrate.map(|b| format!("{b}")),
        size: a.size,
        io_cap_bytes_per_s: a.io_cap.map(|b| (b / 8.0).round().max(1.0) as u64),
        args: a.args.clone(),
    };
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

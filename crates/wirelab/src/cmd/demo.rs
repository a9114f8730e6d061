//! `wirelab demo`: the lab run of [`wirelab_ctl::demo`], then the analysis
//! of its record files.

use crate::cli::DemoArgs;
use anyhow::{Context, Result};
use std::time::Duration;
use wirelab_ctl::demo::{self, DemoConfig};

pub fn run(a: DemoArgs) -> Result<()> {
    let cfg = DemoConfig {
        exe: std::env::current_exe().context("cannot find the wirelab executable")?,
        interval: a.interval,
        size: a.size,
        duration: Duration::from_nanos(a.duration),
        loopback: a.loopback,
        keep: a.keep.clone(),
        emulate: a.emulate.clone(),
    };
    let run = demo::run(&cfg, &mut |line| eprintln!("{line}"))?;
    if run.interrupted {
        eprintln!("interrupted: analyzing what was recorded");
    }
    super::analyze::run(crate::cli::AnalyzeArgs {
        files: vec![run.tx.clone(), run.rx.clone()],
        window: 1_000_000_000,
        max_flows: wirelab_analysis::join::DEFAULT_MAX_FLOWS as u32,
        json: a.json,
        capture: Default::default(),
    })?;
    if let Some(report) = &run.emulator {
        eprint!("emulator:\n{report}");
    }
    if let Some(d) = &a.keep {
        eprintln!("record files kept in {}", d.display());
    }
    Ok(())
}

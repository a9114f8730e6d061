//! `wirelab demo`: the lab run of [`wirelab_lab::demo`], then the analysis
//! of its record files.

use anyhow::{Context, Result};
use std::time::Duration;
use wirelab_cli::analyze::AnalyzeArgs;
use wirelab_cli::demo::DemoArgs;
use wirelab_cli::report::ReportArgs;
use wirelab_lab::demo::{self, DemoConfig};

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
    super::analyze::run(AnalyzeArgs {
        files: vec![run.tx.clone(), run.rx.clone()],
        window: 1_000_000_000,
        max_flows: wirelab_analysis::join::DEFAULT_MAX_FLOWS as u32,
        json: a.json,
        capture: Default::default(),
    })?;
    if let Some(report) = &run.emulator {
        eprint!("emulator:\n{report}");
    }
    // The page next to the kept records, else in the temporary directory
    // (the records themselves are gone after the demo).
    let page = match &a.keep {
        Some(d) => d.join("report.html"),
        None => std::env::temp_dir().join(format!("wirelab-demo-{}.html", std::process::id())),
    };
    let report = ReportArgs {
        inputs: vec![run.tx.clone(), run.rx.clone()],
        compare: None,
        json: false,
        seed: None,
        confidence: None,
        output: page,
        title: Some("wirelab demo".into()),
        window: 1_000_000_000,
        max_flows: 64,
        capture: Default::default(),
    };
    match super::report::records(&report) {
        // stdout holds the JSON document with --json.
        Ok(line) if a.json => eprintln!("{line}"),
        Ok(line) => println!("{line}"),
        Err(e) => eprintln!("wirelab: warning: no report: {e:#}"),
    }
    if let Some(d) = &a.keep {
        eprintln!("record files kept in {}", d.display());
    }
    Ok(())
}

//! `wirelab run`: a campaign from a control file (wirelab_campaign::campaign).

use crate::error::{usage, Infra};
use anyhow::{Context, Result};
use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::collections::BTreeMap;
use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use wirelab_campaign::bundle::PointStatus;
use wirelab_campaign::campaign::{self, Event, RunConfig, RunError};
use wirelab_campaign::control;
use wirelab_campaign::expr::Expr;
use wirelab_campaign::metrics::{self, Metrics};
use wirelab_campaign::outcome::{
    ended_note, point_label, rederive, report_json, started_line, summary_text,
};
use wirelab_campaign::sweep;
use wirelab_cli::run::RunArgs;

pub fn run(a: RunArgs) -> Result<()> {
    let (control, text) = control::load(&a.control).map_err(|e| usage(e.to_string()))?;
    // A resumed campaign's manifest hashes every file in its directory:
    // the old page would be listed and then replaced; it is made again.
    if let Some(dir) = &a.resume {
        let _ = std::fs::remove_file(dir.join("report.html"));
    }
    let only = match &a.only {
        Some(s) => Some(Expr::parse(s).map_err(|e| usage(format!("--only: {e}")))?),
        None => None,
    };
    let mut sets = vec![];
    for s in &a.sets {
        let (k, v) = s
            .split_once('=')
            .ok_or_else(|| usage(format!("--set {s}: give KEY=VALUE")))?;
        sets.push((k.trim().to_string(), v.trim().to_string()));
    }
    let plan = sweep::plan(&control, only.as_ref(), &sets).map_err(|e| usage(e.to_string()))?;
    if a.dry_run {
        if a.json {
            let report = sweep::PlanReport::new(&control, &plan);
            println!("{}", serde_json::to_string_pretty(&report)?);
        } else {
            print!("{}", sweep::plan_text(&control, &plan));
        }
        return Ok(());
    }
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(sig, stop.clone()).context("installing signal handlers")?;
    }
    let cfg = RunConfig {
        control_path: a.control.clone(),
        control_text: text,
        results: a.results.clone(),
        resume: a.resume.clone(),
        quick: a.quick,
        wirelab: std::env::current_exe().context("finding this wirelab binary")?,
        ssh_options: a.ssh_options.clone(),
    };
    let listen = match (a.metrics_listen, &control.metrics) {
        (Some(addr), _) => Some(addr),
        (None, Some(m)) => Some(m.listen.parse().map_err(|_| {
            usage(format!(
                "[metrics] listen = {:?}: write ADDRESS:PORT",
                m.listen
            ))
        })?),
        (None, None) => None,
    };
    let linger = a
        .metrics_linger
        .or(control.metrics.as_ref().map(|m| m.linger_ns))
        .unwrap_or(0);
    let metrics = Arc::new(Metrics::new());
    let server = match listen {
        Some(addr) => {
            let s =
                metrics::Server::start(addr, metrics.clone()).map_err(|e| usage(e.to_string()))?;
            if !a.quiet {
                eprintln!("wirelab run: metrics on http://{}/metrics", s.addr());
            }
            Some(s)
        }
        None => None,
    };
    let mut view = View::new(a.quiet);
    let outcome = campaign::run(&control, &plan, &cfg, &stop, &mut |e| {
        if server.is_some() {
            metrics.event(&e);
        }
        view.event(e)
    })
    .map_err(|e| match e {
        RunError::Unsupported(_) | RunError::Plan(_) | RunError::Setup(_) => usage(e.to_string()),
        // Not 3 (missing privilege elsewhere): for `run`, 3 is an abort.
        RunError::Lab(_) => anyhow::Error::new(Infra(format!("[lab]: {e}"))),
        RunError::Agent { .. } => anyhow::Error::new(Infra(e.to_string())),
        RunError::Bundle(_) => e.into(),
    })?;
    drop(view);
    if let Some(s) = &server {
        if linger > 0 && !stop.load(Ordering::Relaxed) {
            if !a.quiet {
                eprintln!(
                    "wirelab run: serving the final metrics on http://{}/metrics for {} (Ctrl-C ends it)",
                    s.addr(),
                    humantime::format_duration(std::time::Duration::from_nanos(linger))
                );
            }
            let end = std::time::Instant::now() + std::time::Duration::from_nanos(linger);
            while std::time::Instant::now() < end && !stop.load(Ordering::Relaxed) {
                std::thread::sleep(std::time::Duration::from_millis(50));
            }
        }
    }
    drop(server);
    let summary = wirelab_campaign::bundle::summarize(&outcome.dir)?;
    if a.json {
        let j = report_json(&outcome, &summary);
        println!("{}", serde_json::to_string_pretty(&j)?);
    } else {
        print!("{}", summary_text(&summary));
        println!("{outcome}");
    }
    // The page of the results (never fails the campaign: its results stand).
    match super::report::campaign(&outcome.dir) {
        Ok(page) if a.json => eprintln!("report: {}", page.display()),
        Ok(page) => println!("report: {}", page.display()),
        Err(e) => eprintln!("wirelab: warning: no report.html: {e:#}"),
    }
    for note in outcome.end_notes() {
        eprintln!("wirelab: {note}");
    }
    match outcome.exit_code() {
        0 => Ok(()),
        code => std::process::exit(code),
    }
}

/// Live progress: a bar over the campaign's points and a line per flow on
/// a terminal; one line per point otherwise.
struct View {
    quiet: bool,
    tty: bool,
    multi: MultiProgress,
    bar: Option<ProgressBar>,
    flows: BTreeMap<String, ProgressBar>,
}

impl View {
    fn new(quiet: bool) -> View {
        let tty = std::io::stderr().is_terminal();
        View {
            quiet,
            tty,
            multi: MultiProgress::with_draw_target(ProgressDrawTarget::stderr_with_hz(4)),
            bar: None,
            flows: BTreeMap::new(),
        }
    }

    fn event(&mut self, e: Event<'_>) {
        if let Event::Warning(w) = &e {
            match &self.bar {
                Some(_) => {
                    let _ = self.multi.println(format!("warning: {w}"));
                }
                None => eprintln!("warning: {w}"),
            }
            return;
        }
        if self.quiet {
            return;
        }
        match e {
            Event::Started {
                dir,
                points,
                skipped,
            } => {
                eprintln!("{}", started_line(points, skipped, dir));
                if self.tty {
                    let b = self.multi.add(ProgressBar::new(points as u64));
                    b.set_style(
                        ProgressStyle::with_template(
                            "{bar:30} {pos}/{len} points {elapsed_precise} (eta {eta}) {msg}",
                        )
                        .unwrap_or_else(|_| ProgressStyle::default_bar()),
                    );
                    self.bar = Some(b);
                }
            }
            Event::Point { n, total, point } => match &self.bar {
                Some(b) => b.set_message(point_label(point)),
                None => eprintln!("[{n}/{total}] {}", point_label(point)),
            },
            Event::Flow {
                name,
                received,
                lost,
            } => {
                if self.bar.is_some() {
                    let line = self.flows.entry(name.to_string()).or_insert_with(|| {
                        let l = self.multi.add(ProgressBar::new_spinner());
                        l.set_style(
                            ProgressStyle::with_template("  {msg}")
                                .unwrap_or_else(|_| ProgressStyle::default_spinner()),
                        );
                        l
                    });
                    line.set_message(format!("{name}: {received} received, {lost} lost"));
                }
            }
            Event::PointEnded {
                point,
                status,
                reason,
                ..
            } => {
                let note = ended_note(point, status, reason);
                match &self.bar {
                    Some(b) => {
                        b.inc(1);
                        if status != PointStatus::Done {
                            let _ = self.multi.println(note);
                        }
                    }
                    None => eprintln!("  {note}"),
                }
            }
            Event::Tick { .. } | Event::Stressors(_) => {}
            Event::Note(n) => match &self.bar {
                Some(_) => {
                    let _ = self.multi.println(n);
                }
                None => eprintln!("{n}"),
            },
            Event::Warning(_) => {}
        }
    }
}

impl Drop for View {
    fn drop(&mut self) {
        for l in self.flows.values() {
            l.finish_and_clear();
        }
        if let Some(b) = &self.bar {
            b.finish_and_clear();
        }
    }
}

/// `wirelab analyze DIR`: the summary re-derived from a results bundle.
pub fn analyze_bundle(dir: &std::path::Path, json: bool) -> Result<()> {
    let r = rederive(dir)?;
    if let Some(w) = r.warning() {
        eprintln!("wirelab: warning: {w}");
    }
    if json {
        print!("{}", r.json);
    } else {
        print!("{}", summary_text(&r.summary));
    }
    Ok(())
}

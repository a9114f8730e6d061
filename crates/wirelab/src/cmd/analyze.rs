//! `wirelab analyze`: record files and captures in, the
//! `wirelab.analysis/1` report out.

use crate::cli::AnalyzeArgs;
use anyhow::{Context, Result};
use std::io::{Read, Write};
use std::path::PathBuf;
use wirelab_analysis::inputs::{self, CaptureSet};
use wirelab_analysis::{analyze_run, is_capture, render_text, AnalysisError, Warning};
use wirelab_engine::job::records::{read_run, ReadError, Run};

/// `--rtp-clock PT=HZ`: a payload type (0–127) and its clock rate (at
/// least 1000 Hz: the jitter is computed per ms of clock, as Wireshark's).
pub fn parse_rtp_clock(s: &str) -> Result<(u8, u32), String> {
    let (pt, hz) = s
        .split_once('=')
        .ok_or_else(|| format!("'{s}': expected PT=HZ, e.g. 96=48000"))?;
    let pt: u8 = pt
        .trim()
        .parse()
        .ok()
        .filter(|p| *p < 128)
        .ok_or_else(|| format!("payload type '{pt}': expected 0 to 127"))?;
    let hz: u32 = hz
        .trim()
        .parse()
        .ok()
        .filter(|h| *h >= 1000)
        .ok_or_else(|| {
            format!("clock rate '{hz}': expected a whole number of Hz, at least 1000")
        })?;
    Ok((pt, hz))
}

/// Whether `path` starts with a pcap or pcapng magic (unreadable files are
/// left to the record reader, which names the error).
fn sniff_capture(path: &PathBuf) -> bool {
    let mut head = [0u8; 4];
    std::fs::File::open(path)
        .and_then(|mut f| f.read_exact(&mut head))
        .is_ok_and(|_| is_capture(&head))
}

/// `--max-flows` exceeded, said with the flag (`say` of the limit and the
/// flows found).
fn too_many(e: AnalysisError, say: impl FnOnce(usize, u64) -> String) -> anyhow::Error {
    match e {
        AnalysisError::TooManyFlows { limit, found } => anyhow::anyhow!(say(limit, found)),
        e => e.into(),
    }
}

pub fn run(a: AnalyzeArgs) -> Result<()> {
    if let [dir] = a.files.as_slice() {
        if dir.is_dir() && dir.join("points").is_dir() {
            return super::run::analyze_bundle(dir, a.json);
        }
    }
    let (capture_files, record_files): (Vec<PathBuf>, Vec<PathBuf>) =
        a.files.iter().cloned().partition(sniff_capture);
    let mut run = read_run(&record_files).map_err(|e| match e {
        ReadError::Header { .. } => anyhow::anyhow!(
            "{e} (analyze reads wirelab record files, pcap/pcapng captures, or one results \
             directory of wirelab run)"
        ),
        e => e.into(),
    })?;
    let mut warnings = Vec::new();
    let mut captures = CaptureSet::default();
    for p in &capture_files {
        let opts = a.capture.options(a.max_flows as usize);
        let f = std::fs::File::open(p).with_context(|| format!("cannot open {}", p.display()))?;
        let f = std::io::BufReader::with_capacity(1 << 20, f);
        let name = p.display().to_string();
        captures.read(&name, f, opts, &mut run.records.rx, &mut warnings)?;
    }
    warnings.extend(
        run.partial
            .iter()
            .map(|(p, n)| inputs::file_cut_short(p, *n)),
    );
    warnings.extend(
        run.repeated
            .iter()
            .map(|(p, e)| inputs::same_recording_twice(p, e)),
    );
    if !run.emulated.is_empty() {
        if !(run.records.tx.is_empty() && run.records.rx.is_empty() && run.records.echo.is_empty())
        {
            anyhow::bail!(
                "the files hold an emulator log and send/recv records: analyze the emulator log \
                 (emulate --log) on its own"
            );
        }
        return emulator_log(&run, &warnings, &a);
    }
    let mut summary = analyze_run(&run.records, &run.requested, a.window, a.max_flows as usize)
        .map_err(|e| {
            too_many(e, |limit, found| {
                format!(
                    "the records hold {found} flows, more than --max-flows {limit}: raise \
                     --max-flows to analyze them (each flow's report is kept until the end)"
                )
            })
        })?;
    summary.totals.ignored_records += run.ignored;
    summary.totals.unknown_kind_records = run.unknown_kind;
    warnings.append(&mut summary.warnings);
    summary.warnings = warnings;
    if a.json {
        // The warnings are in the JSON; say them on stderr too.
        for w in &summary.warnings {
            eprintln!("wirelab: warning: {}", w.message);
        }
        println!("{}", captures.report_json(&summary)?);
    } else {
        let mut out = std::io::stdout().lock();
        if captures.shows_flow_table(&summary) {
            render_text(&summary, &mut out)?;
        }
        captures.render_text(&mut out)?;
        out.flush()?;
    }
    Ok(())
}

/// An emulator log (`emulate --log`): per rule and direction, fates and
/// delays (`wirelab.emulate-log/1`).
fn emulator_log(run: &Run, warnings: &[Warning], a: &AnalyzeArgs) -> Result<()> {
    let cfg = run.emulate_config.as_ref();
    let report = inputs::emulator_log(&run.emulated, cfg, a.max_flows as usize).map_err(|e| {
        too_many(e, |limit, _| {
            format!(
                "the emulator log holds more than --max-flows {limit} flows (rule and \
                 direction pairs): raise --max-flows to analyze it"
            )
        })
    })?;
    for w in warnings {
        eprintln!("wirelab: warning: {}", w.message);
    }
    if run.unknown_kind > 0 {
        eprintln!(
            "wirelab: note: skipped {} records of an unknown kind",
            run.unknown_kind
        );
    }
    if a.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        let mut out = std::io::stdout().lock();
        report.render_text(&mut out)?;
        out.flush()?;
    }
    Ok(())
}

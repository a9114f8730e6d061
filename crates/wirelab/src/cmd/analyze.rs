//! `wirelab analyze`: record files in, the `wirelab.analysis/1` report out.

use crate::cli::AnalyzeArgs;
use anyhow::Result;
use std::io::Write;
use wirelab_analysis::{analyze_run, render_text, AnalysisError, Warning};
use wirelab_engine::job::records::read_run;

pub fn run(a: AnalyzeArgs) -> Result<()> {
    if let [dir] = a.files.as_slice() {
        if dir.is_dir() && dir.join("points").is_dir() {
            return super::run::analyze_bundle(dir, a.json);
        }
    }
    let run = read_run(&a.files)?;
    let mut warnings = Vec::new();
    for (path, bytes) in &run.partial {
        warnings.push(Warning {
            code: "file_cut_short",
            flow: None,
            message: format!(
                "{}: ignored a partial record of {bytes} bytes at the end (file cut short?)",
                path.display()
            ),
        });
    }
    for (path, earlier) in &run.repeated {
        warnings.push(Warning {
            code: "same_recording_twice",
            flow: None,
            message: format!(
                "{} is the same recording as {} (same header and first record): read once",
                path.display(),
                earlier.display()
            ),
        });
    }
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
        .map_err(|e| match e {
            AnalysisError::TooManyFlows { limit, found } => anyhow::anyhow!(
                "the records hold {found} flows, more than --max-flows {limit}: raise --max-flows \
             to analyze them (each flow's report is kept until the end)"
            ),
            e => e.into(),
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
        println!("{}", summary.to_json()?);
    } else {
        let mut out = std::io::stdout().lock();
        render_text(&summary, &mut out)?;
        out.flush()?;
    }
    Ok(())
}

/// An emulator log (`emulate --log`): per rule and direction, fates and
/// delays (`wirelab.emulate-log/1`).
fn emulator_log(
    run: &wirelab_engine::job::records::Run,
    warnings: &[Warning],
    a: &AnalyzeArgs,
) -> Result<()> {
    let mut log = wirelab_analysis::emulog::EmuLog::new(a.max_flows as usize);
    for r in &run.emulated {
        log.add(r);
    }
    let cfg = run.emulate_config.as_ref();
    let label = |rule: u32, dir: u8| -> Option<(String, String)> {
        let cfg = cfg?;
        let d = if dir == 0 { "a2b" } else { "b2a" };
        if rule == 0 {
            return Some((String::new(), cfg.get(d)?.as_str()?.to_string()));
        }
        let r = cfg.get("rules")?.as_array()?.get(rule as usize - 1)?;
        Some((
            r.get("filter")?.as_str()?.to_string(),
            r.get("stages")?.as_str()?.to_string(),
        ))
    };
    let report = log.finish(label).map_err(|e| match e {
        AnalysisError::TooManyFlows { limit, .. } => anyhow::anyhow!(
            "the emulator log holds more than --max-flows {limit} flows (rule and direction \
             pairs): raise --max-flows to analyze it"
        ),
        e => e.into(),
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

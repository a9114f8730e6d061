//! `wirelab analyze`: record files and captures in, the
//! `wirelab.analysis/1` report out.

use anyhow::Result;
use std::io::Write;
use wirelab_analysis::{render_text, Warning};
use wirelab_cli::analyze::AnalyzeArgs;
use wirelab_engine::job::analyze::{Analysis, AnalyzeError, AnalyzeJob};
use wirelab_engine::job::records::ReadError;
use wirelab_wire::record::RecordFileError;

/// `--max-flows` exceeded, said with the flag.
fn job_error(e: AnalyzeError) -> anyhow::Error {
    match e {
        AnalyzeError::Read(e @ ReadError::File(RecordFileError::Header { .. })) => anyhow::anyhow!(
            "{e} (analyze reads wirelab record files, pcap/pcapng captures, or one results \
             directory of wirelab run)"
        ),
        AnalyzeError::TooManyFlows {
            limit,
            emulator: true,
            ..
        } => anyhow::anyhow!(
            "the emulator log holds more than --max-flows {limit} flows (rule and direction \
             pairs): raise --max-flows to analyze it"
        ),
        AnalyzeError::TooManyFlows { limit, found, .. } => anyhow::anyhow!(
            "the records hold {found} flows, more than --max-flows {limit}: raise --max-flows \
             to analyze them (each flow's report is kept until the end)"
        ),
        e => e.into(),
    }
}

pub fn run(a: AnalyzeArgs) -> Result<()> {
    if let [dir] = a.files.as_slice() {
        if dir.is_dir() && dir.join("points").is_dir() {
            return super::run::analyze_bundle(dir, a.json);
        }
    }
    let job = AnalyzeJob {
        files: a.files.clone(),
        capture: a.capture.options(a.max_flows as usize),
        window_ns: a.window,
        max_flows: a.max_flows as usize,
    };
    let mut out = std::io::stdout().lock();
    match job.run().map_err(job_error)? {
        Analysis::Probes { summary, captures } if a.json => {
            // The warnings are in the JSON; say them on stderr too.
            warn(&summary.warnings);
            writeln!(out, "{}", captures.report_json(&summary)?)?;
        }
        Analysis::Probes { summary, captures } => {
            if captures.shows_flow_table(&summary) {
                render_text(&summary, &mut out)?;
            }
            captures.render_text(&mut out)?;
        }
        // An emulator log (`emulate --log`): per rule and direction, fates
        // and delays (`wirelab.emulate-log/1`).
        Analysis::EmulatorLog {
            report,
            warnings,
            unknown_kind,
        } => {
            warn(&warnings);
            if unknown_kind > 0 {
                eprintln!("wirelab: note: skipped {unknown_kind} records of an unknown kind");
            }
            match a.json {
                true => writeln!(out, "{}", serde_json::to_string_pretty(&report)?)?,
                false => report.render_text(&mut out)?,
            }
        }
    }
    out.flush()?;
    Ok(())
}

fn warn(warnings: &[Warning]) {
    for w in warnings {
        eprintln!("wirelab: warning: {}", w.message);
    }
}

//! `wirelab analyze`: record files in, the `wirelab.analysis/1` report out.

use crate::cli::AnalyzeArgs;
use anyhow::Result;
use std::io::Write;
use wirelab_analysis::{analyze_run, render_text, AnalysisError, Warning};
use wirelab_engine::job::records::read_run;

pub fn run(a: AnalyzeArgs) -> Result<()> {
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

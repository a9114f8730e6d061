//! `wirelab analyze`: record files in, the `wirelab.analysis/1` report out.

use crate::cli::AnalyzeArgs;
use anyhow::Result;
use std::io::Write;
use wirelab_analysis::{analyze_run, render_text};
use wirelab_engine::job::records::read_run;

pub fn run(a: AnalyzeArgs) -> Result<()> {
    let run = read_run(&a.files)?;
    for (path, bytes) in &run.partial {
        eprintln!(
            "wirelab: {}: ignored a partial record of {bytes} bytes at the end (file cut short?)",
            path.display()
        );
    }
    let summary = analyze_run(&run.records, &run.requested, a.window)?;
    if a.json {
        println!("{}", summary.to_json()?);
    } else {
        let mut out = std::io::stdout().lock();
        render_text(&summary, &mut out)?;
        out.flush()?;
    }
    Ok(())
}

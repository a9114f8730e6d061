//! `wirelab report`: record files in, one self-contained HTML page out
//! (wirelab_report::inputs makes the page).

use anyhow::Result;
use std::path::{Path, PathBuf};
use wirelab_cli::report::ReportArgs;
use wirelab_engine::job::records::requested_from_config;
use wirelab_report::inputs::{self, Page, Request};

fn request(a: &ReportArgs) -> Request<'_> {
    Request {
        inputs: &a.inputs,
        output: &a.output,
        title: a.title.as_deref(),
        window_ns: a.window,
        max_flows: a.max_flows as usize,
        capture: a.capture.options(a.max_flows as usize),
        requested: &requested_from_config,
    }
}

/// Says what the inputs lacked, writes the page; returns its line.
fn write(page: &Page) -> Result<String> {
    for w in &page.warnings {
        eprintln!("wirelab: warning: {w}");
    }
    page.write()?;
    Ok(page.to_string())
}

pub fn run(a: ReportArgs) -> Result<()> {
    if let Some(dirs) = &a.compare {
        return compare(&a, dirs);
    }
    println!("{}", write(&inputs::page(&request(&a))?)?);
    Ok(())
}

/// `--compare`: the page, and with `--json` the comparison on stdout
/// (the page's line then on stderr).
fn compare(a: &ReportArgs, dirs: &[PathBuf]) -> Result<()> {
    let defaults = wirelab_analysis::compare::Settings::default();
    let settings = wirelab_analysis::compare::Settings {
        seed: a.seed.unwrap_or(defaults.seed),
        confidence: a.confidence.unwrap_or(defaults.confidence),
        ..defaults
    };
    let (page, report) = inputs::compare_page(dirs, &a.output, a.title.as_deref(), &settings)?;
    let line = write(&page)?;
    if a.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
        eprintln!("{line}");
    } else {
        println!("{line}");
    }
    Ok(())
}

/// The page of record files; returns the line that says where it is.
pub fn records(a: &ReportArgs) -> Result<String> {
    write(&inputs::records_page(&request(a))?)
}

/// Writes `DIR/report.html` for the results directory of `wirelab run`
/// and returns its path (`wirelab run` calls this when a campaign ends).
pub fn campaign(dir: &Path) -> Result<PathBuf> {
    let page = inputs::campaign_page(dir, None, None)?;
    page.write()?;
    Ok(page.output)
}

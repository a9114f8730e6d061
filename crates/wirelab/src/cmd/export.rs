//! `wirelab export`: one record file, a sender/receiver pair joined per
//! probe, or a campaign's results directory as a Parquet dataset
//! (wirelab_export; CSV and JSON lines of one file: the engine's records).

use anyhow::{bail, Result};
use std::path::Path;
use wirelab_analysis::JoinConfig;
use wirelab_cli::export::{ExportArgs, ExportFormat};
use wirelab_engine::job::records;
use wirelab_export::campaign::{self, FlowFiles, Point};
use wirelab_export::files::{export_pair, PairFormat, ReadNotes};
use wirelab_export::output;

pub fn run(a: ExportArgs) -> Result<()> {
    let cfg = JoinConfig {
        window_ns: a.join_window,
        ..JoinConfig::default()
    };
    if a.header && a.inputs.len() != 1 {
        bail!("--header prints one record file's metadata: give one file");
    }
    let out = a.output.as_deref();
    match a.inputs.as_slice() {
        [dir] if dir.is_dir() => campaign(dir, &a, cfg),
        [file] => one_file(file, &a),
        [x, y] => {
            let format = match a.format {
                ExportFormat::Csv => PairFormat::Csv,
                ExportFormat::Jsonl => PairFormat::Jsonl,
                ExportFormat::Parquet => PairFormat::Parquet,
            };
            say(export_pair(x, y, out, format, cfg)?.lines(&cfg));
            Ok(())
        }
        _ => bail!("give one record file, a sender and a receiver file, or a results directory"),
    }
}

/// Lines for stderr.
fn say(lines: Vec<String>) {
    lines.iter().for_each(|l| eprintln!("wirelab: {l}"));
}

fn one_file(file: &Path, a: &ExportArgs) -> Result<()> {
    output::check_not_input(a.output.as_deref(), &[file])?;
    let notes = if a.format == ExportFormat::Parquet && !a.header {
        let out = output::open(a.output.as_deref(), true)?;
        wirelab_export::files::records_to_parquet(file, out)?
    } else {
        let format = match (a.header, a.format) {
            (true, _) => records::ExportFormat::Header,
            (false, ExportFormat::Jsonl) => records::ExportFormat::Jsonl,
            (false, _) => records::ExportFormat::Csv,
        };
        let s = records::export(file, format, a.output.as_deref())?;
        ReadNotes {
            path: file.to_path_buf(),
            records: s.records,
            partial_bytes: s.partial_bytes,
            unknown_kind: s.unknown_kind,
        }
    };
    say(notes.lines());
    Ok(())
}

fn campaign(dir: &Path, a: &ExportArgs, cfg: JoinConfig) -> Result<()> {
    let parquet = a.format == ExportFormat::Parquet;
    let out = campaign::check_request(dir, parquet, a.output.as_deref())?;
    let mut points = vec![];
    for (dir, p) in wirelab_campaign::bundle::read_points(dir)? {
        let params = (p.params.iter())
            .map(|(k, v)| Ok((k.clone(), serde_json::to_value(v)?)))
            .collect::<Result<_, serde_json::Error>>()?;
        let flows = (p.flows.into_iter())
            .map(|f| FlowFiles {
                name: f.name,
                tx: f.tx,
                rx: f.rx,
            })
            .collect();
        let status = p.status.as_str().to_string();
        points.push(Point {
            dir,
            id: p.id,
            status,
            params,
            flows,
        });
    }
    let summary = || -> Result<_, campaign::BundleError> {
        let s = wirelab_campaign::bundle::summarize(dir)?;
        Ok((s.to_json(), s.to_csv()))
    };
    let w = campaign::export(dir, out, &points, summary, cfg, &mut |n| say(n.lines()))?;
    eprintln!("wirelab: {w}");
    Ok(())
}

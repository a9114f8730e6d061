//! `wirelab export`: one record file, a sender/receiver pair joined per
//! probe, or a campaign's results directory as a Parquet dataset.

use crate::cli::{ExportArgs, ExportFormat};
use anyhow::{anyhow, bail, Context, Result};
use std::collections::BTreeMap;
use std::fs::File;
use std::io::{self, BufWriter, IsTerminal, Write};
use std::path::{Path, PathBuf};
use wirelab_analysis::{JoinConfig, JoinStats};
use wirelab_engine::job::records;
use wirelab_export::arrow_schema::{DataType, Field};
use wirelab_export::files::{Pair, ReadNotes};
use wirelab_export::points::{column_type, constant};
use wirelab_export::{json_rows_to_parquet, Constant, PacketSink};

pub fn run(a: ExportArgs) -> Result<()> {
    let cfg = JoinConfig {
        window_ns: a.join_window,
        ..JoinConfig::default()
    };
    if a.header && a.inputs.len() != 1 {
        bail!("--header prints one record file's metadata: give one file");
    }
    match a.inputs.as_slice() {
        [dir] if dir.is_dir() => campaign(dir, &a, cfg),
        [file] => one_file(file, &a),
        [x, y] => pair(x, y, &a, cfg),
        _ => bail!("give one record file, a sender and a receiver file, or a results directory"),
    }
}

/// The output file, or stdout (refused for Parquet on a terminal).
fn output(path: Option<&Path>, format: ExportFormat) -> Result<Box<dyn Write + Send>> {
    Ok(match path {
        Some(p) => Box::new(BufWriter::with_capacity(
            1 << 20,
            File::create(p).with_context(|| format!("cannot create {}", p.display()))?,
        )),
        None if format == ExportFormat::Parquet && io::stdout().is_terminal() => {
            bail!("Parquet is binary: write it to a file with -o FILE (or redirect stdout)")
        }
        None => Box::new(BufWriter::with_capacity(1 << 20, io::stdout())),
    })
}

fn one_file(file: &Path, a: &ExportArgs) -> Result<()> {
    if a.output.as_deref().is_some_and(|o| same_file(file, o)) {
        bail!("-o is the input file: give another output file");
    }
    let notes = if a.format == ExportFormat::Parquet && !a.header {
        wirelab_export::files::records_to_parquet(file, output(a.output.as_deref(), a.format)?)?
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
    print_notes(&notes);
    Ok(())
}

/// The stderr notes of today's export: unknown kinds and a cut tail.
fn print_notes(n: &ReadNotes) {
    if n.unknown_kind > 0 {
        eprintln!(
            "wirelab: {}: skipped {} records of an unknown kind (written by a newer wirelab, or damaged)",
            n.path.display(),
            n.unknown_kind
        );
    }
    if n.partial_bytes > 0 {
        eprintln!(
            "wirelab: {}: read {} whole record(s); ignored a partial record of {} bytes \
             at the end (file cut short?)",
            n.path.display(),
            n.records,
            n.partial_bytes
        );
    }
}

fn print_join(what: &str, s: &JoinStats, cfg: &JoinConfig) {
    eprintln!(
        "wirelab: {what}: {} probes sent, {} received, {} lost",
        s.sent, s.received, s.lost
    );
    if s.unmatched > 0 {
        eprintln!(
            "wirelab: {what}: {} arrival(s) not joined: probes the sender did not record, or \
             that came more than --join-window ({} ms) out of send order",
            s.unmatched,
            cfg.window_ns / 1_000_000
        );
    }
    if s.ignored > 0 || s.repeated_tx > 0 {
        eprintln!(
            "wirelab: {what}: skipped {} record(s) of a kind the file's role does not write and \
             {} repeated sender record(s)",
            s.ignored, s.repeated_tx
        );
    }
}

fn pair(x: &Path, y: &Path, a: &ExportArgs, cfg: JoinConfig) -> Result<()> {
    let p = Pair::open(x, y, cfg.window_ns)?;
    let what = format!("{} + {}", p.tx.path().display(), p.rx.path().display());
    if let Some(o) = &a.output {
        if [x, y].iter().any(|i| same_file(i, o)) {
            bail!(
                "-o {} is one of the inputs: give another output file",
                o.display()
            );
        }
    }
    let mut out = output(a.output.as_deref(), a.format)?;
    let joined = match a.format {
        ExportFormat::Parquet => PacketSink::new(out, &[])
            .map_err(anyhow::Error::from)
            .and_then(|mut sink| {
                let r = p.join_parquet(cfg, &mut sink)?;
                sink.finish()?.1.flush()?;
                Ok(r)
            }),
        f => p
            .join_text(cfg, f == ExportFormat::Jsonl, &mut out)
            .map_err(anyhow::Error::from),
    };
    let (stats, notes) = joined.inspect_err(|_| {
        // No half-written table left under the name asked for.
        if let Some(o) = &a.output {
            let _ = std::fs::remove_file(o);
        }
    })?;
    notes.iter().for_each(print_notes);
    print_join(&what, &stats, &cfg);
    Ok(())
}

fn same_file(a: &Path, b: &Path) -> bool {
    matches!((a.canonicalize(), b.canonicalize()), (Ok(x), Ok(y)) if x == y)
}

/// A point id safe as one path component (`point=<id>`).
fn safe_id(id: &str) -> bool {
    !id.is_empty()
        && !id.starts_with('.')
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
}

/// Names a packet file's table columns take; a parameter of one of these
/// names (or `point`, the partition) becomes `param_<name>`.
fn param_column(name: &str) -> String {
    let taken = wirelab_analysis::columns::PACKET_COLUMNS
        .iter()
        .any(|c| c.name == name)
        || matches!(name, "point" | "flow_name");
    if taken {
        format!("param_{name}")
    } else {
        name.to_string()
    }
}

fn campaign(dir: &Path, a: &ExportArgs, cfg: JoinConfig) -> Result<()> {
    if a.format != ExportFormat::Parquet {
        bail!(
            "{} is a directory: a campaign's results export as a Parquet dataset \
             (--format parquet -o NEWDIR); give record files for CSV or JSON lines",
            dir.display()
        );
    }
    let out = a
        .output
        .as_deref()
        .ok_or_else(|| anyhow!("a campaign exports into a new directory: give it with -o DIR"))?;
    if out.exists() {
        bail!(
            "{} exists: give -o a new directory (the export does not mix with older files)",
            out.display()
        );
    }
    let points = wirelab_ctl::bundle::read_points(dir)?;
    // Parameter columns: one type per parameter over every point.
    let mut params: BTreeMap<String, Vec<serde_json::Value>> = BTreeMap::new();
    for (_, p) in &points {
        for k in p.params.keys() {
            params.entry(k.clone()).or_default();
        }
    }
    for (_, p) in &points {
        for (k, vals) in params.iter_mut() {
            let v = p.params.get(k).map(serde_json::to_value).transpose()?;
            vals.push(v.unwrap_or(serde_json::Value::Null));
        }
    }
    let types: Vec<(String, DataType)> = params
        .iter()
        .map(|(k, vals)| (k.clone(), column_type(vals)))
        .collect();
    let mut fields: Vec<Field> = types
        .iter()
        .map(|(k, t)| Field::new(param_column(k), t.clone(), true))
        .collect();
    fields.push(Field::new("flow_name", DataType::Utf8, true));

    let name = out
        .file_name()
        .ok_or_else(|| anyhow!("-o {}: give a directory name", out.display()))?;
    let tmp = out.with_file_name(format!(
        ".{}.partial-{}",
        name.to_string_lossy(),
        std::process::id()
    ));
    let result = write_dataset(dir, &tmp, &points, &types, &fields, cfg);
    match result {
        Ok((packets, parts)) => {
            std::fs::rename(&tmp, out)
                .with_context(|| format!("cannot rename {} to {}", tmp.display(), out.display()))?;
            eprintln!(
                "wirelab: {}: {packets} packets of {parts} point(s) in packets/point=<id>/part-0.parquet, \
                 {} point(s) in points.parquet",
                out.display(),
                points.len()
            );
            Ok(())
        }
        Err(e) => {
            let _ = std::fs::remove_dir_all(&tmp);
            Err(e)
        }
    }
}

type Points = [(PathBuf, wirelab_ctl::bundle::PointFile)];

fn write_dataset(
    dir: &Path,
    tmp: &Path,
    points: &Points,
    types: &[(String, DataType)],
    fields: &[Field],
    cfg: JoinConfig,
) -> Result<(u64, usize)> {
    std::fs::create_dir_all(tmp).with_context(|| format!("cannot create {}", tmp.display()))?;
    let (mut packets, mut parts) = (0u64, 0usize);
    for (pdir, p) in points {
        if !safe_id(&p.id) {
            bail!(
                "{}: point id {:?} is not a plain name (letters, digits, - _ .): not a bundle of this wirelab?",
                pdir.join("point.json").display(),
                p.id
            );
        }
        let flows: Vec<_> = p
            .flows
            .iter()
            .filter_map(|f| {
                let (tx, rx) = (pdir.join(f.tx.as_ref()?), pdir.join(f.rx.as_ref()?));
                (tx.is_file() && rx.is_file()).then_some((f, tx, rx))
            })
            .collect();
        for f in p
            .flows
            .iter()
            .filter(|f| !flows.iter().any(|(g, ..)| g.name == f.name))
        {
            eprintln!(
                "wirelab: point {} flow {}: no sender and receiver record files (status {}): \
                 not in packets/, still in points.parquet",
                p.id,
                f.name,
                p.status.as_str()
            );
        }
        if flows.is_empty() {
            continue;
        }
        let part = tmp.join("packets").join(format!("point={}", p.id));
        std::fs::create_dir_all(&part)
            .with_context(|| format!("cannot create {}", part.display()))?;
        let file = part.join("part-0.parquet");
        let w = BufWriter::with_capacity(
            1 << 20,
            File::create(&file).with_context(|| format!("cannot create {}", file.display()))?,
        );
        let mut sink = PacketSink::new(w, fields)?;
        for (f, tx, rx) in flows {
            let mut values: Vec<Constant> = types
                .iter()
                .map(|(k, t)| {
                    p.params
                        .get(k)
                        .and_then(|v| serde_json::to_value(v).ok())
                        .map_or(Constant::Null, |v| constant(&v, t))
                })
                .collect();
            values.push(Constant::Str(f.name.clone()));
            sink.set_constants(values)?;
            let (stats, notes) =
                Pair::open(&tx, &rx, cfg.window_ns)?.join_parquet(cfg, &mut sink)?;
            notes.iter().for_each(print_notes);
            if stats.unmatched > 0 || stats.ignored > 0 {
                print_join(&format!("point {} flow {}", p.id, f.name), &stats, &cfg);
            }
            packets += stats.sent;
        }
        sink.finish()?.1.flush()?;
        parts += 1;
    }
    points_table(dir, &tmp.join("points.parquet"))?;
    Ok((packets, parts))
}

/// `points.parquet`: the rows and columns of `summary.csv` (typed, from
/// `summary.json`), or derived from the points and records when the
/// bundle has no summary yet (an interrupted campaign).
fn points_table(dir: &Path, path: &Path) -> Result<()> {
    let (json, csv) = match (
        std::fs::read_to_string(dir.join("summary.json")),
        std::fs::read_to_string(dir.join("summary.csv")),
    ) {
        (Ok(j), Ok(c)) => (j, c),
        _ => {
            let s = wirelab_ctl::bundle::summarize(dir)?;
            (s.to_json(), s.to_csv())
        }
    };
    let summary: serde_json::Value = serde_json::from_str(&json)
        .with_context(|| format!("{}: not JSON", dir.join("summary.json").display()))?;
    let names: Vec<String> = csv
        .lines()
        .next()
        .unwrap_or_default()
        .split(',')
        .map(|s| s.trim_matches('"').to_string())
        .collect();
    let empty = Vec::new();
    let rows: Vec<Vec<serde_json::Value>> = summary
        .get("rows")
        .and_then(|r| r.as_array())
        .unwrap_or(&empty)
        .iter()
        .map(|row| {
            names
                .iter()
                .map(|n| {
                    row.get(n)
                        .or_else(|| row.get("params").and_then(|p| p.get(n)))
                        .cloned()
                        .unwrap_or(serde_json::Value::Null)
                })
                .collect()
        })
        .collect();
    let w = BufWriter::new(
        File::create(path).with_context(|| format!("cannot create {}", path.display()))?,
    );
    json_rows_to_parquet(w, &names, &rows)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn point_ids_and_parameter_names() {
        assert!(safe_id("92f4d4c36f5315c5") && safe_id("a-b_c.1"));
        for bad in ["", "..", ".x", "a/b", "a=b", "a b"] {
            assert!(!safe_id(bad), "{bad}");
        }
        assert_eq!(param_column("loss"), "loss");
        assert_eq!(param_column("tos"), "param_tos");
        assert_eq!(param_column("point"), "param_point");
    }
}

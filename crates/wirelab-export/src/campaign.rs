//! A campaign's results directory (docs/run.md) as a Parquet dataset:
//! `packets/point=<id>/part-0.parquet` (Hive partitions: every point's
//! joined packets, its parameters and the flow's name as constant
//! columns) and `points.parquet` (the rows of `summary.csv`, typed).
//!
//! The dataset is written into a hidden directory beside the output and
//! renamed to it when whole, so a failed export leaves no output. This
//! crate does not read bundles itself (wirelab-campaign does): the caller
//! gives the points ([`Point`]) and a way to derive the summary.

use crate::files::{join_lines, FileError, Pair, ReadNotes};
use crate::output::{self, OutputError};
use crate::points::{column_type, constant};
use crate::{json_rows_to_parquet, Constant, ExportError, PacketSink};
use arrow_schema::{DataType, Field};
use serde_json::Value;
use std::collections::BTreeMap;
use std::fmt;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use thiserror::Error;
use wirelab_analysis::{JoinConfig, JoinStats};

/// An error of the code that reads the bundle (the caller's).
pub type BundleError = Box<dyn std::error::Error + Send + Sync + 'static>;

#[derive(Debug, Error)]
pub enum CampaignError {
    #[error(
        "{dir} is a directory: a campaign's results export as a Parquet dataset \
         (--format parquet -o NEWDIR); give record files for CSV or JSON lines",
        dir = dir.display()
    )]
    NotParquet { dir: PathBuf },
    #[error("a campaign exports into a new directory: give it with -o DIR")]
    NoOutput,
    #[error(
        "{out} exists: give -o a new directory (the export does not mix with older files)",
        out = out.display()
    )]
    Exists { out: PathBuf },
    #[error("-o {out}: give a directory name", out = out.display())]
    NoName { out: PathBuf },
    #[error("cannot create {path}", path = path.display())]
    CreateDir {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("cannot rename {from} to {to}", from = from.display(), to = to.display())]
    Rename {
        from: PathBuf,
        to: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error(
        "{path}: point id {id:?} is not a plain name (letters, digits, - _ .): not a bundle of this wirelab?",
        path = path.display()
    )]
    PointId { path: PathBuf, id: String },
    #[error("{path}: not JSON", path = path.display())]
    SummaryJson {
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },
    /// Deriving the summary of a bundle without one.
    #[error(transparent)]
    Summary(BundleError),
    #[error(transparent)]
    Output(#[from] OutputError),
    #[error(transparent)]
    File(#[from] FileError),
    #[error(transparent)]
    Export(#[from] ExportError),
    /// Flushing a finished table.
    #[error(transparent)]
    Flush(io::Error),
}

/// One point of the bundle (`points/<id>/point.json`), what the export
/// reads of it.
#[derive(Debug, Clone, PartialEq)]
pub struct Point {
    /// The point's directory; flows' files are relative to it.
    pub dir: PathBuf,
    pub id: String,
    /// How it ended (`done`, `aborted`, …).
    pub status: String,
    pub params: BTreeMap<String, Value>,
    pub flows: Vec<FlowFiles>,
}

/// A flow of a point and its record files, relative to the point's
/// directory (absent: not recorded or not fetched).
#[derive(Debug, Clone, PartialEq)]
pub struct FlowFiles {
    pub name: String,
    pub tx: Option<String>,
    pub rx: Option<String>,
}

/// Something the export says on the way (on stderr, a line each).
#[derive(Debug)]
pub enum Note {
    /// What reading a record file skipped.
    Read(ReadNotes),
    /// A flow whose join left arrivals unjoined or records skipped.
    Join {
        point: String,
        flow: String,
        stats: JoinStats,
        cfg: JoinConfig,
    },
    /// A flow without both record files: in `points.parquet` only.
    NoFiles {
        point: String,
        flow: String,
        status: String,
    },
}

impl Note {
    pub fn lines(&self) -> Vec<String> {
        match self {
            Note::Read(n) => n.lines(),
            Note::Join {
                point,
                flow,
                stats,
                cfg,
            } => join_lines(&format!("point {point} flow {flow}"), stats, cfg),
            Note::NoFiles {
                point,
                flow,
                status,
            } => vec![format!(
                "point {point} flow {flow}: no sender and receiver record files (status \
                 {status}): not in packets/, still in points.parquet"
            )],
        }
    }
}

/// A dataset written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Written {
    pub out: PathBuf,
    /// Probes sent by the flows joined.
    pub packets: u64,
    /// Points with a packet partition.
    pub parts: usize,
    /// Rows of `points.parquet`'s points.
    pub points: usize,
}

impl fmt::Display for Written {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}: {} packets of {} point(s) in packets/point=<id>/part-0.parquet, \
             {} point(s) in points.parquet",
            self.out.display(),
            self.packets,
            self.parts,
            self.points
        )
    }
}

/// Checks a campaign export's request before the bundle is read: Parquet,
/// into a new directory; returns that directory.
pub fn check_request<'a>(
    dir: &Path,
    parquet: bool,
    out: Option<&'a Path>,
) -> Result<&'a Path, CampaignError> {
    if !parquet {
        return Err(CampaignError::NotParquet {
            dir: dir.to_path_buf(),
        });
    }
    let out = out.ok_or(CampaignError::NoOutput)?;
    if out.exists() {
        return Err(CampaignError::Exists {
            out: out.to_path_buf(),
        });
    }
    Ok(out)
}

/// Writes the dataset of the bundle `dir` (its `points`) into the new
/// directory `out`. `summary` derives `summary.json` and `summary.csv`'s
/// texts when the bundle has none (an interrupted campaign); `note`
/// hears what is skipped as it happens.
pub fn export(
    dir: &Path,
    out: &Path,
    points: &[Point],
    summary: impl FnOnce() -> Result<(String, String), BundleError>,
    cfg: JoinConfig,
    note: &mut dyn FnMut(Note),
) -> Result<Written, CampaignError> {
    let types = param_types(points);
    let mut fields: Vec<Field> = types
        .iter()
        .map(|(k, t)| Field::new(param_column(k), t.clone(), true))
        .collect();
    fields.push(Field::new("flow_name", DataType::Utf8, true));
    let name = out.file_name().ok_or_else(|| CampaignError::NoName {
        out: out.to_path_buf(),
    })?;
    let tmp = out.with_file_name(format!(
        ".{}.partial-{}",
        name.to_string_lossy(),
        std::process::id()
    ));
    let written = write_dataset(&tmp, points, &types, &fields, cfg, note).and_then(|w| {
        points_table(dir, &tmp.join("points.parquet"), summary)?;
        Ok(w)
    });
    let result = written.and_then(|(packets, parts)| {
        wirelab_io::atomic::publish_dir(&tmp, out).map_err(|e| CampaignError::Rename {
            from: tmp.clone(),
            to: out.to_path_buf(),
            source: e.into(),
        })?;
        Ok(Written {
            out: out.to_path_buf(),
            packets,
            parts,
            points: points.len(),
        })
    });
    if result.is_err() {
        let _ = std::fs::remove_dir_all(&tmp);
    }
    result
}

/// One Arrow type per parameter over every point (a parameter a point
/// lacks is null there).
fn param_types(points: &[Point]) -> Vec<(String, DataType)> {
    let mut params: BTreeMap<&str, Vec<&Value>> = BTreeMap::new();
    for p in points {
        for k in p.params.keys() {
            params.entry(k).or_default();
        }
    }
    for p in points {
        for (k, vals) in params.iter_mut() {
            vals.push(p.params.get(*k).unwrap_or(&Value::Null));
        }
    }
    params
        .into_iter()
        .map(|(k, vals)| (k.to_string(), column_type(vals)))
        .collect()
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

fn create_dir(path: &Path) -> Result<(), CampaignError> {
    std::fs::create_dir_all(path).map_err(|source| CampaignError::CreateDir {
        path: path.to_path_buf(),
        source,
    })
}

/// The packet partitions; returns the packets and partitions written.
fn write_dataset(
    tmp: &Path,
    points: &[Point],
    types: &[(String, DataType)],
    fields: &[Field],
    cfg: JoinConfig,
    note: &mut dyn FnMut(Note),
) -> Result<(u64, usize), CampaignError> {
    create_dir(tmp)?;
    let (mut packets, mut parts) = (0u64, 0usize);
    for p in points {
        if !safe_id(&p.id) {
            return Err(CampaignError::PointId {
                path: p.dir.join("point.json"),
                id: p.id.clone(),
            });
        }
        let mut flows = Vec::new();
        for f in &p.flows {
            let files = f.tx.as_ref().zip(f.rx.as_ref());
            let files = files.map(|(tx, rx)| (p.dir.join(tx), p.dir.join(rx)));
            match files {
                Some((tx, rx)) if tx.is_file() && rx.is_file() => flows.push((f, tx, rx)),
                _ => {}
            }
        }
        for f in p
            .flows
            .iter()
            .filter(|f| !flows.iter().any(|(g, ..)| g.name == f.name))
        {
            note(Note::NoFiles {
                point: p.id.clone(),
                flow: f.name.clone(),
                status: p.status.clone(),
            });
        }
        if flows.is_empty() {
            continue;
        }
        let part = tmp.join("packets").join(format!("point={}", p.id));
        create_dir(&part)?;
        let file = output::create(&part.join("part-0.parquet"))?;
        let mut sink = PacketSink::new(BufWriter::with_capacity(1 << 20, file), fields)?;
        for (f, tx, rx) in flows {
            let mut values: Vec<Constant> = types
                .iter()
                .map(|(k, t)| p.params.get(k).map_or(Constant::Null, |v| constant(v, t)))
                .collect();
            values.push(Constant::Str(f.name.clone()));
            sink.set_constants(values)?;
            let (stats, notes) =
                Pair::open(&tx, &rx, cfg.window_ns)?.join_parquet(cfg, &mut sink)?;
            notes.into_iter().for_each(|n| note(Note::Read(n)));
            if stats.unmatched > 0 || stats.ignored > 0 {
                note(Note::Join {
                    point: p.id.clone(),
                    flow: f.name.clone(),
                    stats,
                    cfg,
                });
            }
            packets += stats.sent;
        }
        sink.finish()?.1.flush().map_err(CampaignError::Flush)?;
        parts += 1;
    }
    Ok((packets, parts))
}

/// `points.parquet`: the rows and columns of `summary.csv` (typed, from
/// `summary.json`), or derived from the points and records when the
/// bundle has no summary yet (an interrupted campaign).
fn points_table(
    dir: &Path,
    path: &Path,
    summary: impl FnOnce() -> Result<(String, String), BundleError>,
) -> Result<(), CampaignError> {
    let (json, csv) = match (
        std::fs::read_to_string(dir.join("summary.json")),
        std::fs::read_to_string(dir.join("summary.csv")),
    ) {
        (Ok(j), Ok(c)) => (j, c),
        _ => summary().map_err(CampaignError::Summary)?,
    };
    let summary: Value =
        serde_json::from_str(&json).map_err(|source| CampaignError::SummaryJson {
            path: dir.join("summary.json"),
            source,
        })?;
    let names: Vec<String> = csv
        .lines()
        .next()
        .unwrap_or_default()
        .split(',')
        .map(|s| s.trim_matches('"').to_string())
        .collect();
    let empty = Vec::new();
    let rows: Vec<Vec<Value>> = summary
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
                        .unwrap_or(Value::Null)
                })
                .collect()
        })
        .collect();
    let w = BufWriter::new(output::create(path)?);
    json_rows_to_parquet(w, &names, &rows)?;
    Ok(())
}

#[cfg(test)]
mod tests;

//! `wirelab report`'s inputs: given paths, which page they make and the
//! page itself. An input's kind comes from its first bytes (a record
//! file's magic, a capture's) or, for `--json` reports, its `schema`; a
//! record file's role from its metadata (an emulator log, a replay
//! departure log); a directory must be a results directory of
//! `wirelab run`. The output is checked before any input is read, and
//! written through a temporary file so that a reader never sees half a
//! page.

use crate::source::{CaptureFile, ProbeSource, RecordFile, Side};
use crate::{ProbeOptions, ReportError};
use serde_json::Value;
use std::fmt;
use std::io::Read;
use std::path::{Path, PathBuf};
use thiserror::Error;
use wirelab_analysis::compare::CompareReport;
use wirelab_analysis::{is_capture, CaptureOptions, Requested};

/// `--json` reports above this size are not reports.
const MAX_JSON_REPORT: u64 = 64 << 20;

#[derive(Debug, Error)]
pub enum InputError {
    #[error(
        "{path}: a directory but not a results directory of `wirelab run` (no summary.json and \
         points/); `wirelab report` reads record files (send/recv --record) or one results \
         directory",
        path = path.display()
    )]
    NotResultsDir { path: PathBuf },
    #[error(
        "{path}: not a results directory of `wirelab run` (no summary.json and points/): \
         --compare needs a `wirelab run` results directory per argument",
        path = path.display()
    )]
    NotABundle { path: PathBuf },
    #[error("cannot read {path}", path = path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "{path}: {what}; `wirelab report` reads record files written by `send --record` and \
         `recv --record`, and captures",
        path = path.display()
    )]
    Unknown { path: PathBuf, what: &'static str },
    #[error(
        "the directory of -o {out} does not exist: create it first or choose another path",
        out = out.display()
    )]
    NoOutputDir { out: PathBuf },
    #[error("-o {out} is a directory: give a file name such as report.html", out = out.display())]
    OutputIsDir { out: PathBuf },
    #[error("cannot write {path}", path = path.display())]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("give `--json` reports alone, or record files alone: the inputs mix them")]
    Mixed,
    #[error(
        "{path}: an emulator log (emulate --log): give it alone, it has a page of its own",
        path = path.display()
    )]
    EmulatorLogNotAlone { path: PathBuf },
    #[error(
        "{name}: a replay departure log (replay --log): give it alone, it has a page of its own"
    )]
    ReplayLogNotAlone { name: String },
    #[error(transparent)]
    Report(#[from] ReportError),
}

/// What to make a page of.
pub struct Request<'a> {
    pub inputs: &'a [PathBuf],
    pub output: &'a Path,
    /// The page's title (default: from the inputs).
    pub title: Option<&'a str>,
    /// Throughput window (ns).
    pub window_ns: u64,
    /// Most flows reported.
    pub max_flows: usize,
    /// What to look for in pcap/pcapng inputs (as `analyze`'s capture
    /// options; its `max_rtp_streams` bounds the RTP streams kept).
    pub capture: CaptureOptions,
    /// A sender's requested distributions from the `config` it recorded
    /// (the caller knows the generator specs).
    pub requested: &'a dyn Fn(&Value) -> Requested,
}

/// Which page the inputs made, with what its line says of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PageKind {
    Campaign,
    Compare { rows: usize, significant: usize },
    Json { reports: usize },
    EmulatorLog { copies: u64 },
    ReplayLog { frames: u64 },
    Probes { flows: usize },
}

/// A page made, not yet written.
#[derive(Debug)]
pub struct Page {
    pub output: PathBuf,
    pub html: String,
    pub kind: PageKind,
    /// What the inputs lacked (a file cut short, a damaged capture), a line
    /// each.
    pub warnings: Vec<String>,
}

impl Page {
    /// Writes the page through a temporary file beside it.
    pub fn write(&self) -> Result<(), InputError> {
        write_page(&self.output, &self.html)
    }

    fn figures(&self) -> usize {
        self.html.matches("<figure>").count()
    }
}

/// The line that says where the page is and what it holds.
impl fmt::Display for Page {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (out, figures, bytes) = (self.output.display(), self.figures(), self.html.len());
        match self.kind {
            PageKind::Campaign => write!(f, "report: {out}"),
            PageKind::Compare { rows, significant } => write!(
                f,
                "report: {out} ({rows} rows, {significant} significant, {figures} figures)"
            ),
            PageKind::Json { reports } => write!(f, "report: {out} ({reports} JSON reports)"),
            PageKind::EmulatorLog { copies } => write!(
                f,
                "report: {out} (emulator log, {copies} copies, {figures} figures, {bytes} bytes)"
            ),
            PageKind::ReplayLog { frames } => write!(
                f,
                "report: {out} (replay log, {frames} frames, {figures} figures, {bytes} bytes)"
            ),
            PageKind::Probes { flows } => write!(
                f,
                "report: {out} ({flows} flows, {figures} figures, {bytes} bytes)"
            ),
        }
    }
}

/// A probe input's kind, from its first bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Records,
    Capture,
}

/// A `--json` report among the inputs: its parsed document, or `None`
/// for anything else.
fn json_report(path: &Path) -> Option<Value> {
    let f = std::fs::File::open(path).ok()?;
    // Reports are small; a large file is not one of them.
    if f.metadata().ok()?.len() > MAX_JSON_REPORT {
        return None;
    }
    let v: Value = serde_json::from_reader(std::io::BufReader::new(f)).ok()?;
    crate::json_page::schema_of(&v).map(|_| v)
}

/// What an input is, from its first bytes.
fn kind_of(path: &Path) -> Result<Kind, InputError> {
    if path.is_dir() {
        return Err(InputError::NotResultsDir {
            path: path.to_path_buf(),
        });
    }
    let mut head = [0u8; 8];
    let n = std::fs::File::open(path)
        .and_then(|mut f| f.read(&mut head))
        .map_err(|source| InputError::Read {
            path: path.to_path_buf(),
            source,
        })?;
    if head[..n] == wirelab_wire::record::MAGIC[..] {
        return Ok(Kind::Records);
    }
    if is_capture(&head[..n]) {
        return Ok(Kind::Capture);
    }
    let what = if head[..n].first() == Some(&b'{') {
        "a JSON file but not a report of wirelab (schema send/1, recv/1, analysis/1, capture/1, \
         replay/1 or emulate/1)"
    } else {
        "not a wirelab record file nor a pcap/pcapng capture"
    };
    Err(InputError::Unknown {
        path: path.to_path_buf(),
        what,
    })
}

fn file_name(p: &Path) -> String {
    p.file_name()
        .unwrap_or(p.as_os_str())
        .to_string_lossy()
        .into_owned()
}

/// Checks that `out` can be made before any input is read.
pub fn check_output(out: &Path) -> Result<(), InputError> {
    let dir = match out.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    if !dir.is_dir() {
        return Err(InputError::NoOutputDir {
            out: out.to_path_buf(),
        });
    }
    if out.is_dir() {
        return Err(InputError::OutputIsDir {
            out: out.to_path_buf(),
        });
    }
    Ok(())
}

/// Writes `html` to `out` whole ([`wirelab_io::atomic::write`]).
pub fn write_page(out: &Path, html: &str) -> Result<(), InputError> {
    wirelab_io::atomic::write(out, html.as_bytes()).map_err(|e| InputError::Write {
        path: out.to_path_buf(),
        source: e.into(),
    })
}

/// The campaign page of a results directory of `wirelab run` (default
/// output `DIR/report.html`).
pub fn campaign_page(
    dir: &Path,
    out: Option<&Path>,
    title: Option<&str>,
) -> Result<Page, InputError> {
    let output = out.map_or_else(|| dir.join("report.html"), Path::to_path_buf);
    let name = dir.file_name().unwrap_or(dir.as_os_str()).to_string_lossy();
    let title = title.map_or_else(|| format!("wirelab campaign: {name}"), str::to_string);
    Ok(Page {
        output,
        html: crate::campaign::render(dir, &title)?,
        kind: PageKind::Campaign,
        warnings: Vec::new(),
    })
}

/// The page of results directories side by side (`--compare`), each
/// after the first against the first, and the comparison's document.
pub fn compare_page(
    dirs: &[PathBuf],
    out: &Path,
    title: Option<&str>,
    settings: &wirelab_analysis::compare::Settings,
) -> Result<(Page, CompareReport), InputError> {
    check_output(out)?;
    if let Some(d) = dirs.iter().find(|d| !crate::campaign::is_results_dir(d)) {
        return Err(InputError::NotABundle { path: d.clone() });
    }
    let c = crate::compare::compare_bundles(dirs, settings)?;
    let names: Vec<String> = dirs.iter().map(|d| file_name(d)).collect();
    let title = title.map_or_else(
        || format!("wirelab compare: {}", names.join(" vs ")),
        str::to_string,
    );
    let rows = &c.report.comparison.rows;
    let page = Page {
        output: out.to_path_buf(),
        html: crate::compare::render(&c.report, &title)?,
        kind: PageKind::Compare {
            rows: rows.len(),
            significant: rows.iter().filter(|r| r.significant).count(),
        },
        warnings: c.warnings,
    };
    Ok((page, c.report))
}

/// The page the inputs make: a campaign's, `--json` reports' tables, an
/// emulator log's, a replay log's, or the probe report of record files
/// and captures.
pub fn page(r: &Request) -> Result<Page, InputError> {
    check_output(r.output)?;
    if let [dir] = r.inputs {
        if crate::campaign::is_results_dir(dir) {
            return campaign_page(dir, Some(r.output), r.title);
        }
    }
    let json: Vec<Option<Value>> = r.inputs.iter().map(|p| json_report(p)).collect();
    if json.iter().any(Option::is_some) {
        if json.iter().any(Option::is_none) {
            return Err(InputError::Mixed);
        }
        let reports: Vec<(String, Value)> = (r.inputs.iter().zip(json))
            .filter_map(|(p, v)| Some((p.display().to_string(), v?)))
            .collect();
        let title = r.title.unwrap_or("wirelab reports");
        return Ok(Page {
            output: r.output.to_path_buf(),
            html: crate::json_page::render(&reports, title)?,
            kind: PageKind::Json {
                reports: reports.len(),
            },
            warnings: Vec::new(),
        });
    }
    records_page(r)
}

/// The page of record files and captures (an emulator log, a replay
/// log, or the probe report).
pub fn records_page(r: &Request) -> Result<Page, InputError> {
    check_output(r.output)?;
    let made = |html, kind, warnings| Page {
        output: r.output.to_path_buf(),
        html,
        kind,
        warnings,
    };
    let title = |default: String| r.title.map_or(default, str::to_string);
    if let Some(log) = r
        .inputs
        .iter()
        .find(|p| kind_of(p).ok() == Some(Kind::Records) && crate::emulate::is_emulator_log(p))
    {
        if r.inputs.len() > 1 {
            return Err(InputError::EmulatorLogNotAlone { path: log.clone() });
        }
        let d = crate::emulate::collect(log, r.max_flows)?;
        let html =
            crate::emulate::render(&d, &title(format!("wirelab emulate: {}", file_name(log))))?;
        let copies = d.report.totals.copies;
        return Ok(made(html, PageKind::EmulatorLog { copies }, Vec::new()));
    }
    let mut files: Vec<Box<dyn ProbeSource>> = Vec::new();
    for p in r.inputs {
        files.push(match kind_of(p)? {
            Kind::Records => Box::new(RecordFile::open(p)?),
            Kind::Capture => Box::new(CaptureFile::open(p, r.capture.clone())?),
        });
    }
    if let Some(log) = files
        .iter()
        .find(|f| crate::replay::is_replay_log(f.info().metadata.as_ref()))
    {
        if files.len() > 1 {
            return Err(InputError::ReplayLogNotAlone {
                name: log.info().name.clone(),
            });
        }
        let d = crate::replay::collect(log.as_ref())?;
        let default = format!("wirelab replay: {}", file_name(&r.inputs[0]));
        let html = crate::replay::render(&d, &title(default))?;
        let frames = d.fidelity.packets;
        return Ok(made(html, PageKind::ReplayLog { frames }, Vec::new()));
    }
    let requested = files
        .iter()
        .filter(|f| f.info().side == Side::Sender)
        .find_map(|f| f.info().metadata.as_ref()?.get("config").map(r.requested))
        .unwrap_or_default();
    let sources: Vec<&dyn ProbeSource> = files.iter().map(|f| f.as_ref()).collect();
    let names: Vec<String> = r.inputs.iter().map(|p| file_name(p)).collect();
    let title = title(format!("wirelab report: {}", names.join(" + ")));
    let opts = ProbeOptions {
        requested,
        window_ns: r.window_ns,
        max_flows: r.max_flows,
        ..ProbeOptions::default()
    };
    let data = crate::collect(&sources, &opts)?;
    let mut warnings = Vec::new();
    for (info, end) in &data.sources {
        if end.partial_bytes > 0 {
            warnings.push(format!(
                "{}: ignored a partial record of {} bytes at the end (file cut short?)",
                info.name, end.partial_bytes
            ));
        }
    }
    for (c, _) in &data.captures {
        if let Some(e) = &c.error {
            warnings.push(format!(
                "{}: {e}: reported the {} frames before it (the rest is unreadable)",
                c.file, c.counts.frames
            ));
        }
    }
    let html = crate::probe_page::render(&data, &title)?;
    let flows = data.summary.flows.len();
    Ok(made(html, PageKind::Probes { flows }, warnings))
}

#[cfg(test)]
mod tests;

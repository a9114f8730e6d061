//! `wirelab report`: record files in, one self-contained HTML page out.

use crate::values::WINDOW;
use anyhow::{bail, Context, Result};
use clap::Args;
use std::io::Read;
use std::path::{Path, PathBuf};
use wirelab_analysis::{is_capture, CaptureOptions};
use wirelab_engine::job::records::requested_from_config;
use wirelab_report::{CaptureFile, ProbeOptions, ProbeSource, RecordFile, Side};

#[derive(Args, Debug)]
#[command(after_long_help = "EXAMPLES:\n  \
wirelab report tx.wlr rx.wlr -o run.html   # sender and receiver joined by flow and sequence\n  \
wirelab report rx.wlr -o rx.html           # receiver records alone\n  \
wirelab report cap.pcapng tx.wlr -o c.html # a capture's probes as receiver records, its RTP streams\n  \
wirelab report r.wlr -o replay.html        # a replay departure log (replay --log): fidelity\n  \
wirelab report e.wlr -o emulate.html       # an emulator per-copy log (emulate --log)\n  \
wirelab report results/quickstart-*/ -o q.html   # a campaign: a row per point, plots per swept parameter\n\n\
The page holds everything inline (SVG plots, CSS, a few lines of script to sort tables) and \
fetches nothing: it opens offline and can be attached to a ticket. Large runs are summarised \
(time-bucketed min/p50/p99/max envelopes, histograms), so the file stays small whatever the \
number of packets, and the records are streamed, never all held.")]
pub struct ReportArgs {
    /// Record files written by `send --record` and `recv --record` (roles are
    /// read from their headers) and pcap/pcapng captures (their probes are
    /// receiver records, as `analyze` reads them), a replay departure log
    /// (`replay --log`, alone), an emulator per-copy log (`emulate --log`,
    /// alone), one results directory of `wirelab run`, or
    /// `--json` reports (send/1, recv/1, analysis/1, capture/1, replay/1,
    /// emulate/1: tables)
    #[arg(required = true, value_name = "INPUT")]
    pub inputs: Vec<PathBuf>,
    /// The HTML file to write
    #[arg(short, long, value_name = "FILE", default_value = "report.html")]
    pub output: PathBuf,
    /// Page title (default: from the inputs)
    #[arg(long)]
    pub title: Option<String>,
    /// Window for throughput over time (at least 1ms)
    #[arg(long, default_value = "1s", value_name = "DURATION", value_parser = WINDOW)]
    pub window: u64,
    /// Most flows reported; inputs with more are refused
    #[arg(long, default_value_t = 64, value_name = "N",
          value_parser = clap::value_parser!(u32).range(1..=4096))]
    pub max_flows: u32,
}

/// A probe input's kind, from its first bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Records,
    Capture,
}

/// A `--json` report among the inputs: its parsed document, or `None`
/// for anything else.
fn json_report(path: &Path) -> Option<serde_json::Value> {
    let f = std::fs::File::open(path).ok()?;
    // Reports are small; a large file is not one of them.
    if f.metadata().ok()?.len() > 64 << 20 {
        return None;
    }
    let v: serde_json::Value = serde_json::from_reader(std::io::BufReader::new(f)).ok()?;
    wirelab_report::json_page::schema_of(&v).map(|_| v)
}

/// What an input is, from its first bytes.
fn kind_of(path: &Path) -> Result<Kind> {
    if path.is_dir() {
        bail!(
            "{}: a directory but not a results directory of `wirelab run` (no summary.json and \
             points/); `wirelab report` reads record files (send/recv --record) or one results \
             directory",
            path.display()
        );
    }
    let mut head = [0u8; 8];
    let n = std::fs::File::open(path)
        .and_then(|mut f| f.read(&mut head))
        .with_context(|| format!("cannot read {}", path.display()))?;
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
    bail!(
        "{}: {what}; `wirelab report` reads record files written by `send --record` and \
         `recv --record`, and captures",
        path.display()
    )
}

fn file_name(p: &Path) -> String {
    p.file_name()
        .unwrap_or(p.as_os_str())
        .to_string_lossy()
        .into_owned()
}

/// Checks that `-o FILE` can be made before any input is read.
fn check_output(out: &Path) -> Result<()> {
    let dir = match out.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    if !dir.is_dir() {
        bail!(
            "the directory of -o {} does not exist: create it first or choose another path",
            out.display()
        );
    }
    if out.is_dir() {
        bail!(
            "-o {} is a directory: give a file name such as report.html",
            out.display()
        );
    }
    Ok(())
}

/// Writes the page through a temporary file beside it, so a reader never
/// sees half a page.
pub fn write_page(out: &Path, html: &str) -> Result<()> {
    let tmp = out.with_extension("html.tmp");
    std::fs::write(&tmp, html).with_context(|| format!("cannot write {}", tmp.display()))?;
    std::fs::rename(&tmp, out).with_context(|| format!("cannot write {}", out.display()))
}

/// Writes `DIR/report.html` for the results directory of `wirelab run`
/// and returns its path (`wirelab run` calls this when a campaign ends).
pub fn campaign(dir: &Path, out: Option<&Path>, title: Option<&str>) -> Result<PathBuf> {
    let out = out.map_or_else(|| dir.join("report.html"), Path::to_path_buf);
    let name = dir.file_name().unwrap_or(dir.as_os_str()).to_string_lossy();
    let title = title.map_or_else(|| format!("wirelab campaign: {name}"), str::to_string);
    let html = wirelab_report::campaign::render(dir, &title)?;
    write_page(&out, &html)?;
    Ok(out)
}

pub fn run(a: ReportArgs) -> Result<()> {
    check_output(&a.output)?;
    if let [dir] = a.inputs.as_slice() {
        if wirelab_report::campaign::is_results_dir(dir) {
            let out = campaign(dir, Some(&a.output), a.title.as_deref())?;
            println!("report: {}", out.display());
            return Ok(());
        }
    }
    let json: Vec<Option<serde_json::Value>> = a.inputs.iter().map(|p| json_report(p)).collect();
    if json.iter().any(Option::is_some) {
        if json.iter().any(Option::is_none) {
            bail!("give `--json` reports alone, or record files alone: the inputs mix them");
        }
        let reports: Vec<(String, serde_json::Value)> = a
            .inputs
            .iter()
            .zip(json)
            .filter_map(|(p, v)| Some((p.display().to_string(), v?)))
            .collect();
        let title = a.title.clone().unwrap_or_else(|| "wirelab reports".into());
        let html = wirelab_report::json_page::render(&reports, &title)?;
        write_page(&a.output, &html)?;
        println!(
            "report: {} ({} JSON reports)",
            a.output.display(),
            reports.len()
        );
        return Ok(());
    }
    println!("{}", records(&a)?);
    Ok(())
}

/// The page of record files; returns the line that says where it is.
pub fn records(a: &ReportArgs) -> Result<String> {
    check_output(&a.output)?;
    // As `analyze` reads a capture without capture options: wirelab probes,
    // and RTP by Wireshark's heuristic.
    let copts = CaptureOptions {
        rtp: true,
        max_rtp_streams: a.max_flows as usize,
        ..CaptureOptions::default()
    };
    if let Some(log) = a.inputs.iter().find(|p| {
        kind_of(p).ok() == Some(Kind::Records) && wirelab_report::emulate::is_emulator_log(p)
    }) {
        if a.inputs.len() > 1 {
            bail!(
                "{}: an emulator log (emulate --log): give it alone, it has a page of its own",
                log.display()
            );
        }
        let d = wirelab_report::emulate::collect(log, a.max_flows as usize)?;
        let title = a
            .title
            .clone()
            .unwrap_or_else(|| format!("wirelab emulate: {}", file_name(log)));
        let html = wirelab_report::emulate::render(&d, &title)?;
        write_page(&a.output, &html)?;
        return Ok(format!(
            "report: {} (emulator log, {} copies, {} figures, {} bytes)",
            a.output.display(),
            d.report.totals.copies,
            html.matches("<figure>").count(),
            html.len()
        ));
    }
    let mut files: Vec<Box<dyn ProbeSource>> = Vec::new();
    for p in &a.inputs {
        files.push(match kind_of(p)? {
            Kind::Records => Box::new(RecordFile::open(p)?),
            Kind::Capture => Box::new(CaptureFile::open(p, copts.clone())?),
        });
    }
    if let Some(log) = files
        .iter()
        .find(|f| wirelab_report::replay::is_replay_log(f.info().metadata.as_ref()))
    {
        if files.len() > 1 {
            bail!(
                "{}: a replay departure log (replay --log): give it alone, it has a page of its own",
                log.info().name
            );
        }
        let d = wirelab_report::replay::collect(log.as_ref())?;
        let title = a
            .title
            .clone()
            .unwrap_or_else(|| format!("wirelab replay: {}", file_name(&a.inputs[0])));
        let html = wirelab_report::replay::render(&d, &title)?;
        write_page(&a.output, &html)?;
        return Ok(format!(
            "report: {} (replay log, {} frames, {} figures, {} bytes)",
            a.output.display(),
            d.fidelity.packets,
            html.matches("<figure>").count(),
            html.len()
        ));
    }
    let requested = files
        .iter()
        .filter(|f| f.info().side == Side::Sender)
        .find_map(|f| {
            f.info()
                .metadata
                .as_ref()?
                .get("config")
                .map(requested_from_config)
        })
        .unwrap_or_default();
    let sources: Vec<&dyn ProbeSource> = files.iter().map(|f| f.as_ref()).collect();
    let title = a.title.clone().unwrap_or_else(|| {
        let names: Vec<String> = a.inputs.iter().map(|p| file_name(p)).collect();
        format!("wirelab report: {}", names.join(" + "))
    });
    let opts = ProbeOptions {
        requested,
        window_ns: a.window,
        max_flows: a.max_flows as usize,
        ..ProbeOptions::default()
    };
    let data = wirelab_report::collect(&sources, &opts)?;
    for (info, end) in &data.sources {
        if end.partial_bytes > 0 {
            eprintln!(
                "wirelab: warning: {}: ignored a partial record of {} bytes at the end (file cut short?)",
                info.name, end.partial_bytes
            );
        }
    }
    for (c, _) in &data.captures {
        if let Some(e) = &c.error {
            eprintln!(
                "wirelab: warning: {}: {e}: reported the {} frames before it (the rest is unreadable)",
                c.file, c.counts.frames
            );
        }
    }
    let html = wirelab_report::probe_page::render(&data, &title)?;
    write_page(&a.output, &html)?;
    Ok(format!(
        "report: {} ({} flows, {} figures, {} bytes)",
        a.output.display(),
        data.summary.flows.len(),
        html.matches("<figure>").count(),
        html.len()
    ))
}

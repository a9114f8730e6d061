//! `wirelab analyze`: record files and captures in, the
//! `wirelab.analysis/1` report out.

use crate::cli::AnalyzeArgs;
use anyhow::{Context, Result};
use std::io::{Read, Write};
use std::path::PathBuf;
use wirelab_analysis::capture::{rtp, CaptureInput, RtpInput, WithCaptures};
use wirelab_analysis::{
    analyze_run, is_capture, render_text, AnalysisError, CaptureOptions, CaptureRecords, Warning,
};
use wirelab_engine::job::records::{read_run, ReadError};
use wirelab_wire::record::Record;

/// `--rtp-clock PT=HZ`: a payload type (0–127) and its clock rate (at
/// least 1000 Hz: the jitter is computed per ms of clock, as Wireshark's).
pub fn parse_rtp_clock(s: &str) -> Result<(u8, u32), String> {
    let (pt, hz) = s
        .split_once('=')
        .ok_or_else(|| format!("'{s}': expected PT=HZ, e.g. 96=48000"))?;
    let pt: u8 = pt
        .trim()
        .parse()
        .ok()
        .filter(|p| *p < 128)
        .ok_or_else(|| format!("payload type '{pt}': expected 0 to 127"))?;
    let hz: u32 = hz
        .trim()
        .parse()
        .ok()
        .filter(|h| *h >= 1000)
        .ok_or_else(|| {
            format!("clock rate '{hz}': expected a whole number of Hz, at least 1000")
        })?;
    Ok((pt, hz))
}

/// Whether `path` starts with a pcap or pcapng magic (unreadable files are
/// left to the record reader, which names the error).
fn sniff_capture(path: &PathBuf) -> bool {
    let mut head = [0u8; 4];
    std::fs::File::open(path)
        .and_then(|mut f| f.read_exact(&mut head))
        .is_ok_and(|_| is_capture(&head))
}

/// What the captures gave: their receive records go into the run.
struct Captures {
    inputs: Vec<CaptureInput>,
    rtp: Vec<RtpInput>,
}

fn read_captures(
    paths: &[PathBuf],
    a: &AnalyzeArgs,
    rx: &mut Vec<Record>,
    warnings: &mut Vec<Warning>,
) -> Result<Captures> {
    let mut out = Captures {
        inputs: Vec::new(),
        rtp: Vec::new(),
    };
    for p in paths {
        let opts = CaptureOptions {
            luna_ports: a.capture.luna_port.clone(),
            rtp: !a.capture.no_rtp,
            rtp_ports: a.capture.rtp_port.clone(),
            rtp_clocks: a.capture.rtp_clock.iter().copied().collect(),
            max_rtp_streams: a.max_flows as usize,
        };
        let f = std::fs::File::open(p).with_context(|| format!("cannot open {}", p.display()))?;
        let mut c = CaptureRecords::new(std::io::BufReader::with_capacity(1 << 20, f), opts)
            .with_context(|| format!("{}: not a readable pcap/pcapng capture", p.display()))?;
        let mut error = None;
        for r in c.by_ref() {
            match r {
                Ok(rec) => rx.push(rec),
                Err(e) => error = Some(e.to_string()),
            }
        }
        let name = p.display().to_string();
        if let Some(e) = &error {
            warnings.push(Warning {
                code: "capture_damaged",
                flow: None,
                message: format!(
                    "{name}: {e}: analysed the {} frames before it (the rest of the file is \
                     unreadable; a capture cut short by a crash ends like this)",
                    c.counts().frames
                ),
            });
        }
        let n = c.counts();
        if !n.unknown_linktypes.is_empty() {
            warnings.push(Warning {
                code: "capture_link_type",
                flow: None,
                message: format!(
                    "{name}: skipped frames of link types this wirelab does not read \
                     (type, frames): {:?}; capture on an Ethernet interface or with -i any \
                     (Linux cooked) instead",
                    n.unknown_linktypes
                ),
            });
        }
        out.inputs.push(c.input(&name, error));
        out.rtp.push(c.rtp_input(&name));
    }
    Ok(out)
}

fn capture_lines(c: &Captures, w: &mut impl Write) -> std::io::Result<()> {
    for i in &c.inputs {
        let n = &i.counts;
        writeln!(
            w,
            "\ncapture {}: {} frames, {} UDP: {} wirelab probes, {} LUNA probes, {} echo replies, \
             {} RTP packets, {} other UDP; {} not IP, {} other IP, {} later fragments, {} cut short",
            i.file,
            n.frames,
            n.udp,
            n.probes,
            n.luna_probes,
            n.echo_replies,
            n.rtp_packets,
            n.other_udp,
            n.not_ip,
            n.other_ip,
            n.later_fragments,
            n.truncated
        )?;
        for l in &i.luna_sources {
            writeln!(w, "  LUNA flow {} = {}", l.flow, l.source)?;
        }
    }
    rtp::render_text(&c.rtp, w)
}

pub fn run(a: AnalyzeArgs) -> Result<()> {
    if let [dir] = a.files.as_slice() {
        if dir.is_dir() && dir.join("points").is_dir() {
            return super::run::analyze_bundle(dir, a.json);
        }
    }
    let (capture_files, record_files): (Vec<PathBuf>, Vec<PathBuf>) =
        a.files.iter().cloned().partition(sniff_capture);
    let mut run = read_run(&record_files).map_err(|e| match e {
        ReadError::Header { .. } => anyhow::anyhow!(
            "{e} (analyze reads wirelab record files, pcap/pcapng captures, or one results \
             directory of wirelab run)"
        ),
        e => e.into(),
    })?;
    let mut warnings = Vec::new();
    let captures = read_captures(&capture_files, &a, &mut run.records.rx, &mut warnings)?;
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
        if capture_files.is_empty() {
            println!("{}", summary.to_json()?);
        } else {
            // Captures add two sections (docs/analyze.md, "Captures and RTP").
            let v = WithCaptures {
                summary: &summary,
                captures: &captures.inputs,
                rtp: &captures.rtp,
            };
            println!("{}", serde_json::to_string_pretty(&v)?);
        }
    } else {
        let mut out = std::io::stdout().lock();
        // A capture without probes (RTP only) has no flow table to show.
        if !summary.flows.is_empty() || capture_files.is_empty() || !summary.warnings.is_empty() {
            render_text(&summary, &mut out)?;
        }
        capture_lines(&captures, &mut out)?;
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
    let report = log
        .finish(|rule, dir| wirelab_analysis::emulog::rule_label(cfg, rule, dir))
        .map_err(|e| match e {
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

//! What `wirelab analyze` reads besides the record files' statistics:
//! captures ([`CaptureSet`]: their probes as receive records, their
//! sections of the report and its text), the warnings its input files
//! give (cut short, given twice, a damaged capture), and an emulator
//! log's summary ([`emulator_log`]). Readers are arguments; no file is
//! opened here.

use crate::capture::{rtp, CaptureInput, RtpInput, WithCaptures};
use crate::emulog::{rule_label, EmuLog, EmuLogReport};
use crate::{AnalysisError, CaptureOptions, CaptureRecords, Summary, Warning};
use std::io::{Read, Write};
use std::path::Path;
use thiserror::Error;
use wirelab_pcap::PcapError;
use wirelab_wire::record::Record;

/// A capture whose first bytes are not a pcap or pcapng header.
#[derive(Debug, Error)]
#[error("{name}: not a readable pcap/pcapng capture")]
pub struct Unreadable {
    pub name: String,
    #[source]
    pub source: PcapError,
}

/// A record file that ended in a partial record of `bytes`.
pub fn file_cut_short(path: &Path, bytes: usize) -> Warning {
    Warning {
        code: "file_cut_short",
        flow: None,
        message: format!(
            "{}: ignored a partial record of {bytes} bytes at the end (file cut short?)",
            path.display()
        ),
    }
}

/// A record file read once because it repeats `earlier`.
pub fn same_recording_twice(path: &Path, earlier: &Path) -> Warning {
    Warning {
        code: "same_recording_twice",
        flow: None,
        message: format!(
            "{} is the same recording as {} (same header and first record): read once",
            path.display(),
            earlier.display()
        ),
    }
}

/// The captures of one analysis, in the order read.
#[derive(Debug, Default)]
pub struct CaptureSet {
    pub inputs: Vec<CaptureInput>,
    pub rtp: Vec<RtpInput>,
}

impl CaptureSet {
    /// Reads the capture `name` to its end (or its first damage): its
    /// probes' receive records go into `rx`, what it could not read into
    /// `warnings`.
    pub fn read<R: Read>(
        &mut self,
        name: &str,
        input: R,
        opts: CaptureOptions,
        rx: &mut Vec<Record>,
        warnings: &mut Vec<Warning>,
    ) -> Result<(), Unreadable> {
        let mut c = CaptureRecords::new(input, opts).map_err(|source| Unreadable {
            name: name.to_string(),
            source,
        })?;
        let mut error = None;
        for r in c.by_ref() {
            match r {
                Ok(rec) => rx.push(rec),
                Err(e) => error = Some(e.to_string()),
            }
        }
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
        self.inputs.push(c.input(name, error));
        self.rtp.push(c.rtp_input(name));
        Ok(())
    }

    pub fn is_empty(&self) -> bool {
        self.inputs.is_empty()
    }

    /// The analysis report as JSON: `summary`, and with captures read
    /// their two sections (docs/analyze.md, "Captures and RTP").
    pub fn report_json(&self, summary: &Summary) -> Result<String, AnalysisError> {
        if self.is_empty() {
            return summary.to_json();
        }
        let v = WithCaptures {
            summary,
            captures: &self.inputs,
            rtp: &self.rtp,
        };
        Ok(serde_json::to_string_pretty(&v)?)
    }

    /// Whether the text report shows `summary`'s flow table before the
    /// captures' lines: not for captures without probes (it would be
    /// empty).
    pub fn shows_flow_table(&self, summary: &Summary) -> bool {
        !summary.flows.is_empty() || self.is_empty() || !summary.warnings.is_empty()
    }

    /// Each capture's counts and LUNA sources, then the RTP streams.
    pub fn render_text(&self, w: &mut impl Write) -> std::io::Result<()> {
        for i in &self.inputs {
            let n = &i.counts;
            writeln!(
                w,
                "\ncapture {}: {} frames, {} UDP: {} wirelab probes, {} LUNA probes, {} echo \
                 replies, {} RTP packets, {} other UDP; {} not IP, {} other IP, {} later \
                 fragments, {} cut short",
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
        rtp::render_text(&self.rtp, w)
    }
}

/// An emulator log's records summarised per rule and direction
/// (`wirelab.emulate-log/1`), rules labelled from the log's configuration.
pub fn emulator_log(
    records: &[Record],
    config: Option<&serde_json::Value>,
    max_flows: usize,
) -> Result<EmuLogReport, AnalysisError> {
    let mut log = EmuLog::new(max_flows);
    for r in records {
        log.add(r);
    }
    log.finish(|rule, dir| rule_label(config, rule, dir))
}

#[cfg(test)]
mod tests;

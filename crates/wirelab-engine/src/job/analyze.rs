//! `wirelab analyze`: record files and captures in, one report out — the
//! `analysis/1` summary of the probes (with the captures' counts and RTP
//! streams), or the `emulate-log/1` report of an emulator log.

use super::records::{read_run, ReadError};
use std::io::Read;
use std::path::{Path, PathBuf};
use thiserror::Error;
use wirelab_analysis::emulog::EmuLogReport;
use wirelab_analysis::inputs::{self, CaptureSet, Unreadable};
use wirelab_analysis::{analyze_run, is_capture, AnalysisError, CaptureOptions, Summary, Warning};

/// What to analyze.
#[derive(Debug, Clone)]
pub struct AnalyzeJob {
    /// Record files and pcap/pcapng captures, told apart by their magic.
    pub files: Vec<PathBuf>,
    /// What to look for in the captures.
    pub capture: CaptureOptions,
    /// Throughput window (ns).
    pub window_ns: u64,
    /// Most flows analyzed (for an emulator log: rule and direction pairs).
    pub max_flows: usize,
}

/// What the files held.
#[derive(Debug)]
pub enum Analysis {
    /// Probes: the summary (its warnings include the inputs'), and the
    /// captures read (their counts and RTP streams).
    Probes {
        summary: Box<Summary>,
        captures: CaptureSet,
    },
    /// An emulator log alone (`emulate --log`).
    EmulatorLog {
        report: Box<EmuLogReport>,
        /// What the inputs lacked (files cut short, given twice).
        warnings: Vec<Warning>,
        /// Records of a kind this wirelab does not know, skipped.
        unknown_kind: u64,
    },
}

#[derive(Debug, Error)]
pub enum AnalyzeError {
    #[error(transparent)]
    Read(#[from] ReadError),
    #[error("cannot open {path}: {cause}", path = path.display())]
    Open {
        path: PathBuf,
        cause: std::io::Error,
    },
    #[error(transparent)]
    Capture(#[from] Unreadable),
    #[error(
        "the files hold an emulator log and send/recv records: analyze the emulator log \
         (emulate --log) on its own"
    )]
    EmulatorLogNotAlone,
    /// More flows than `max_flows` (`emulator`: rule and direction pairs
    /// of an emulator log).
    #[error("the inputs hold {found} flows, more than the {limit} asked for")]
    TooManyFlows {
        limit: usize,
        found: u64,
        emulator: bool,
    },
    #[error(transparent)]
    Analysis(AnalysisError),
}

impl AnalyzeError {
    fn from_analysis(e: AnalysisError, emulator: bool) -> AnalyzeError {
        match e {
            AnalysisError::TooManyFlows { limit, found } => AnalyzeError::TooManyFlows {
                limit,
                found,
                emulator,
            },
            e => AnalyzeError::Analysis(e),
        }
    }
}

/// Whether `path` starts with a pcap or pcapng magic (unreadable files are
/// left to the record reader, which names the error).
fn sniff_capture(path: &Path) -> bool {
    let mut head = [0u8; 4];
    std::fs::File::open(path)
        .and_then(|mut f| f.read_exact(&mut head))
        .is_ok_and(|_| is_capture(&head))
}

impl AnalyzeJob {
    /// Reads every file whole and analyzes what it held.
    pub fn run(&self) -> Result<Analysis, AnalyzeError> {
        let (capture_files, record_files): (Vec<PathBuf>, Vec<PathBuf>) =
            self.files.iter().cloned().partition(|p| sniff_capture(p));
        let mut run = read_run(&record_files)?;
        let mut warnings = Vec::new();
        let mut captures = CaptureSet::default();
        for path in &capture_files {
            let f = std::fs::File::open(path).map_err(|source| AnalyzeError::Open {
                path: path.clone(),
                cause: source,
            })?;
            let f = std::io::BufReader::with_capacity(1 << 20, f);
            let name = path.display().to_string();
            let opts = self.capture.clone();
            captures.read(&name, f, opts, &mut run.records.rx, &mut warnings)?;
        }
        let partial = run
            .partial
            .iter()
            .map(|(p, n)| inputs::file_cut_short(p, *n));
        warnings.extend(partial);
        let repeated = run.repeated.iter();
        warnings.extend(repeated.map(|(p, e)| inputs::same_recording_twice(p, e)));
        if !run.emulated.is_empty() {
            let r = &run.records;
            if !(r.tx.is_empty() && r.rx.is_empty() && r.echo.is_empty()) {
                return Err(AnalyzeError::EmulatorLogNotAlone);
            }
            let cfg = run.emulate_config.as_ref();
            let report = inputs::emulator_log(&run.emulated, cfg, self.max_flows)
                .map_err(|e| AnalyzeError::from_analysis(e, true))?;
            return Ok(Analysis::EmulatorLog {
                report: Box::new(report),
                warnings,
                unknown_kind: run.unknown_kind,
            });
        }
        let mut summary = analyze_run(&run.records, &run.requested, self.window_ns, self.max_flows)
            .map_err(|e| AnalyzeError::from_analysis(e, false))?;
        summary.totals.ignored_records += run.ignored;
        summary.totals.unknown_kind_records = run.unknown_kind;
        warnings.append(&mut summary.warnings);
        summary.warnings = warnings;
        Ok(Analysis::Probes {
            summary: Box::new(summary),
            captures,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wirelab_wire::record::{RecordFileHeader, Role};
    use wirelab_wire::{Record, RecordKind};

    fn job(files: Vec<PathBuf>) -> AnalyzeJob {
        AnalyzeJob {
            files,
            capture: CaptureOptions {
                rtp: true,
                max_rtp_streams: 8,
                ..CaptureOptions::default()
            },
            window_ns: 1_000_000_000,
            max_flows: 8,
        }
    }

    fn records(path: &Path, role: Role, kind: RecordKind, flows: u32) {
        let header = RecordFileHeader {
            role,
            metadata: "{}".into(),
        };
        let mut all = Vec::new();
        for flow in 0..flows {
            for seq in 0..10u64 {
                let tx_ns = 1_000 + seq * 1_000_000;
                all.push(Record {
                    flow,
                    seq,
                    size: 100,
                    tx_ns,
                    rx_ns: if kind == RecordKind::Rx {
                        tx_ns + 50_000
                    } else {
                        0
                    },
                    kind,
                    ..Record::default()
                });
            }
        }
        std::fs::write(path, header.file_with(&all)).unwrap();
    }

    fn tmpdir(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("wl-analyze-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn sender_and_receiver_files_join_by_flow() {
        let d = tmpdir("join");
        let (tx, rx) = (d.join("tx.wlr"), d.join("rx.wlr"));
        records(&tx, Role::Sender, RecordKind::Tx, 2);
        records(&rx, Role::Receiver, RecordKind::Rx, 2);
        let Analysis::Probes { summary, captures } = job(vec![tx, rx]).run().unwrap() else {
            panic!("not probes");
        };
        assert_eq!(summary.flows.len(), 2);
        assert_eq!(
            (summary.totals.sent, summary.totals.received),
            (Some(20), Some(20))
        );
        assert!(captures.inputs.is_empty() && summary.warnings.is_empty());
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn too_many_flows_and_unreadable_inputs_are_errors() {
        let d = tmpdir("errors");
        let rx = d.join("rx.wlr");
        records(&rx, Role::Receiver, RecordKind::Rx, 9);
        let e = job(vec![rx.clone()]).run().unwrap_err();
        assert!(
            matches!(
                e,
                AnalyzeError::TooManyFlows {
                    limit: 8,
                    found: 9,
                    emulator: false
                }
            ),
            "{e:?}"
        );
        // A pcap magic and nothing after it: the capture is named.
        let cap = d.join("c.pcap");
        std::fs::write(&cap, 0xa1b2_c3d4u32.to_le_bytes()).unwrap();
        let e = job(vec![cap]).run().unwrap_err();
        assert!(e.to_string().contains("c.pcap: not a readable"), "{e}");
        let e = job(vec![d.join("none.wlr")]).run().unwrap_err();
        assert!(matches!(e, AnalyzeError::Read(_)), "{e:?}");
        std::fs::remove_dir_all(&d).unwrap();
    }
}

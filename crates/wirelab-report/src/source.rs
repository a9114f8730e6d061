//! Where per-packet records come from. The report reads its inputs in
//! passes, streaming, so a source is something that can be read again
//! from its start: a record file ([`RecordFile`]) or a pcap/pcapng capture
//! whose wirelab probes become Rx records ([`CaptureFile`]).

use crate::error::ReportError;
use std::cell::RefCell;
use std::io::BufReader;
use std::path::{Path, PathBuf};
use wirelab_analysis::capture::{CaptureInput, RtpInput};
use wirelab_analysis::{CaptureOptions, CaptureRecords};
use wirelab_wire::record::{Record, RecordKind, RecordReader, Role};

/// Which side of a path a source saw.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// Tx records (and echo replies) of a sender.
    Sender,
    /// Rx records of a receiver or reflector.
    Receiver,
}

/// What a source says about itself.
#[derive(Debug, Clone)]
pub struct SourceInfo {
    /// A name for the page (a file path).
    pub name: String,
    pub side: Side,
    /// The run configuration and environment the writer recorded (record
    /// file metadata), when it is JSON.
    pub metadata: Option<serde_json::Value>,
}

/// What one pass skipped.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PassEnd {
    /// Records handed to the callback.
    pub records: u64,
    /// Records of a kind the side does not write (e.g. Rx in a sender file).
    pub ignored: u64,
    /// Records of a kind this version does not know.
    pub unknown_kind: u64,
    /// Bytes of a partial last record (a file cut short).
    pub partial_bytes: usize,
}

/// A restartable stream of per-packet records.
pub trait ProbeSource {
    fn info(&self) -> &SourceInfo;
    /// One pass in the source's order (send order for a sender, arrival
    /// order for a receiver): Tx and EchoReply records of a sender, Rx
    /// records of a receiver; anything else is counted in
    /// [`PassEnd::ignored`], not passed on.
    fn pass(&self, f: &mut dyn FnMut(&Record)) -> Result<PassEnd, ReportError>;
    /// For a capture: what its last pass counted and its RTP streams.
    fn capture(&self) -> Option<(CaptureInput, RtpInput)> {
        None
    }
}

/// Opens a record file (probe record or emulator log) buffered and reads
/// its header; errors name the path.
pub(crate) fn open_record_reader(
    path: &Path,
) -> Result<RecordReader<BufReader<std::fs::File>>, ReportError> {
    use wirelab_wire::record::RecordFileError as E;
    wirelab_wire::record::open_file(path).map_err(|e| match e {
        E::Open {
            path,
            cause: source,
        } => ReportError::Open {
            path,
            cause: source,
        },
        E::Header {
            path,
            cause: source,
        }
        | E::Read {
            path,
            cause: source,
        } => ReportError::Input {
            path,
            message: source.to_string(),
        },
    })
}

/// A wirelab record file (`send --record`, `recv --record`).
pub struct RecordFile {
    path: PathBuf,
    info: SourceInfo,
}

impl RecordFile {
    /// Opens `path` and reads its header. An emulator log (`emulate
    /// --log`) is refused: it is not a probe record file.
    pub fn open(path: &Path) -> Result<RecordFile, ReportError> {
        let r = open_record_reader(path)?;
        let h = r.header();
        let metadata: Option<serde_json::Value> = serde_json::from_str(&h.metadata).ok();
        if metadata
            .as_ref()
            .and_then(|m| m.get("role"))
            .and_then(|r| r.as_str())
            == Some("emulate")
        {
            return Err(ReportError::Input {
                path: path.to_path_buf(),
                message: "an emulator log (emulate --log), not probe records: give it alone to \
                          `wirelab report` (its own page) or `wirelab analyze`"
                    .into(),
            });
        }
        let side = match h.role {
            Role::Sender => Side::Sender,
            Role::Receiver | Role::Reflector => Side::Receiver,
        };
        Ok(RecordFile {
            path: path.to_path_buf(),
            info: SourceInfo {
                name: path.display().to_string(),
                side,
                metadata,
            },
        })
    }
}

impl ProbeSource for RecordFile {
    fn info(&self) -> &SourceInfo {
        &self.info
    }

    fn pass(&self, f: &mut dyn FnMut(&Record)) -> Result<PassEnd, ReportError> {
        let mut r = open_record_reader(&self.path)?;
        let mut end = PassEnd::default();
        loop {
            let rec = r.next_record().map_err(|e| ReportError::Input {
                path: self.path.clone(),
                message: e.to_string(),
            })?;
            let Some(rec) = rec else { break };
            let wanted = match self.info.side {
                Side::Sender => matches!(rec.kind, RecordKind::Tx | RecordKind::EchoReply),
                Side::Receiver => rec.kind == RecordKind::Rx,
            };
            if wanted {
                end.records += 1;
                f(&rec);
            } else {
                end.ignored += 1;
            }
        }
        end.unknown_kind = r.skipped;
        end.partial_bytes = r.trailing_bytes;
        Ok(end)
    }
}

/// A pcap or pcapng capture read through [`CaptureRecords`]: its wirelab
/// (and LUNA) probes are receive records, exactly as `wirelab analyze`
/// reads them; its frame counts and RTP streams are kept from the last pass.
pub struct CaptureFile {
    path: PathBuf,
    opts: CaptureOptions,
    info: SourceInfo,
    last: RefCell<Option<(CaptureInput, RtpInput)>>,
}

impl CaptureFile {
    /// Opens `path` and reads the capture's header.
    pub fn open(path: &Path, opts: CaptureOptions) -> Result<CaptureFile, ReportError> {
        Self::reader(path, opts.clone())?;
        Ok(CaptureFile {
            path: path.to_path_buf(),
            opts,
            info: SourceInfo {
                name: path.display().to_string(),
                side: Side::Receiver,
                metadata: None,
            },
            last: RefCell::new(None),
        })
    }

    fn reader(
        path: &Path,
        opts: CaptureOptions,
    ) -> Result<CaptureRecords<BufReader<std::fs::File>>, ReportError> {
        let f = std::fs::File::open(path).map_err(|source| ReportError::Open {
            path: path.to_path_buf(),
            cause: source,
        })?;
        CaptureRecords::new(BufReader::with_capacity(1 << 20, f), opts).map_err(|e| {
            ReportError::Input {
                path: path.to_path_buf(),
                message: format!("not a readable pcap/pcapng capture: {e}"),
            }
        })
    }
}

impl ProbeSource for CaptureFile {
    fn info(&self) -> &SourceInfo {
        &self.info
    }

    /// A read error ends the pass without failing it (what came before it
    /// stands, as in `analyze`); it is in [`CaptureInput::error`].
    fn pass(&self, f: &mut dyn FnMut(&Record)) -> Result<PassEnd, ReportError> {
        let mut c = Self::reader(&self.path, self.opts.clone())?;
        let mut end = PassEnd::default();
        let mut error = None;
        for r in c.by_ref() {
            match r {
                Ok(rec) => {
                    end.records += 1;
                    f(&rec);
                }
                Err(e) => error = Some(e.to_string()),
            }
        }
        // Echo replies and other frames are not records (as in `analyze`,
        // whose `ignored_records` they do not join): the capture's counts
        // say what they were.
        *self.last.borrow_mut() = Some((
            c.input(&self.info.name, error),
            c.rtp_input(&self.info.name),
        ));
        Ok(end)
    }

    fn capture(&self) -> Option<(CaptureInput, RtpInput)> {
        self.last.borrow().clone()
    }
}

/// Records held in memory (tests, and small inputs built by a caller).
pub struct MemorySource {
    pub info: SourceInfo,
    pub records: Vec<Record>,
}

impl ProbeSource for MemorySource {
    fn info(&self) -> &SourceInfo {
        &self.info
    }

    fn pass(&self, f: &mut dyn FnMut(&Record)) -> Result<PassEnd, ReportError> {
        let mut end = PassEnd::default();
        for r in &self.records {
            let wanted = match self.info.side {
                Side::Sender => matches!(r.kind, RecordKind::Tx | RecordKind::EchoReply),
                Side::Receiver => r.kind == RecordKind::Rx,
            };
            if wanted {
                end.records += 1;
                f(r);
            } else {
                end.ignored += 1;
            }
        }
        Ok(end)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::probes::{collect, ProbeOptions};
    use wirelab_analysis::capture::frame::build::{ethernet, ipv4_udp};
    use wirelab_pcap::{PcapngWriter, LINKTYPE_ETHERNET};
    use wirelab_wire::probe::{ProbeFlags, ProbeRepr};

    const T0: u64 = 1_700_000_000_000_000_000;

    fn probe(seq: u64, flags: u8) -> Vec<u8> {
        let mut b = vec![0u8; 64];
        ProbeRepr {
            flags: ProbeFlags(flags),
            flow: 3,
            seq,
            tx_ns: T0 + seq * 1_000_000,
            echo: None,
        }
        .emit(&mut b)
        .unwrap();
        b
    }

    fn rtp(seq: u16) -> Vec<u8> {
        let mut b = vec![0x80, 0];
        b.extend_from_slice(&seq.to_be_bytes());
        b.extend_from_slice(&(u32::from(seq) * 160).to_be_bytes());
        b.extend_from_slice(&0x1234_5678u32.to_be_bytes());
        b.extend_from_slice(&[0xd5; 160]);
        b
    }

    /// Probes 0..10 of flow 3 without 5, one echo reply, and an RTP stream
    /// (PCMU) of 20 packets without sequence number 7.
    fn capture() -> Vec<u8> {
        let mut frames = Vec::new();
        for s in (0..10).filter(|&s| s != 5) {
            frames.push(ipv4_udp(
                [10, 0, 0, 1],
                [10, 0, 0, 2],
                40000,
                9000,
                &probe(s, 0),
            ));
        }
        frames.push(ipv4_udp(
            [10, 0, 0, 2],
            [10, 0, 0, 1],
            9000,
            40000,
            &probe(2, ProbeFlags::ECHO_REPLY),
        ));
        for s in (0..20).filter(|&s| s != 7) {
            frames.push(ipv4_udp([10, 0, 0, 5], [10, 0, 0, 6], 5004, 5006, &rtp(s)));
        }
        let mut w = PcapngWriter::new(Vec::new()).unwrap();
        let i = w.add_interface("veth0", LINKTYPE_ETHERNET, 65535).unwrap();
        for (n, f) in frames.iter().enumerate() {
            let f = ethernet(f);
            let ts = T0 + 500_000 + n as u64 * 1_000_000;
            w.write_packet(i, ts, f.len() as u32, &f).unwrap();
        }
        w.into_inner().unwrap()
    }

    #[test]
    fn a_capture_reads_as_analyze_reads_it_with_its_rtp_streams() {
        let path =
            std::env::temp_dir().join(format!("wl-report-cap-{}.pcapng", std::process::id()));
        std::fs::write(&path, capture()).unwrap();
        let cap = CaptureFile::open(
            &path,
            CaptureOptions {
                rtp: true,
                max_rtp_streams: 8,
                ..CaptureOptions::default()
            },
        )
        .unwrap();
        assert_eq!(cap.info().side, Side::Receiver);
        assert!(cap.capture().is_none(), "nothing before a pass");
        let d = collect(&[&cap], &ProbeOptions::default()).unwrap();
        // The same records through analysis directly give the same summary.
        let f = std::fs::File::open(&path).unwrap();
        let recs: Vec<Record> = CaptureRecords::new(f, CaptureOptions::default())
            .unwrap()
            .map(Result::unwrap)
            .collect();
        let mem = MemorySource {
            info: cap.info().clone(),
            records: recs,
        };
        let m = collect(&[&mem], &ProbeOptions::default()).unwrap();
        assert_eq!(d.summary.to_json().unwrap(), m.summary.to_json().unwrap());
        let fl = &d.summary.flows[0];
        assert_eq!((fl.flow, fl.received, fl.lost), (3, Some(9), Some(1)));
        assert_eq!(d.sources[0].1.records, 9);
        assert_eq!(d.sources[0].1.ignored, 0, "echo replies are counted apart");
        let (c, r) = &d.captures[0];
        assert_eq!(
            (
                c.counts.frames,
                c.counts.probes,
                c.counts.echo_replies,
                c.counts.rtp_packets
            ),
            (29, 9, 1, 19)
        );
        assert_eq!(c.error, None);
        assert_eq!(r.streams.len(), 1);
        let s = &r.streams[0];
        assert_eq!(
            (s.ssrc, s.packets, s.lost, s.expected),
            (0x1234_5678, 19, 1, 20)
        );
        let html = crate::probe_page::render(&d, "cap").unwrap();
        assert!(html.contains(">Captures</h2>"));
        assert!(html.contains(&format!(">RTP streams in {}</h2>", path.display())));
        assert!(html.contains(">10.0.0.5:5004</td>"));
        assert!(html.contains(">0x12345678</td><td data-v=\"0\">0</td><td data-v=\"19\">19</td><td data-v=\"1\">1</td>"));
        // A cut capture: what came before the damage is reported.
        let full = capture();
        std::fs::write(&path, &full[..full.len() - 100]).unwrap();
        let d = collect(&[&cap], &ProbeOptions::default()).unwrap();
        assert!(d.captures[0].0.error.is_some());
        assert_eq!(d.captures[0].0.counts.probes, 9);
        // Not a capture: an error naming the file.
        std::fs::write(&path, b"not a capture").unwrap();
        let e = CaptureFile::open(&path, CaptureOptions::default())
            .err()
            .unwrap();
        assert!(
            e.to_string().contains("not a readable pcap/pcapng capture"),
            "{e}"
        );
        std::fs::remove_file(&path).unwrap();
    }
}

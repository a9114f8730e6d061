//! The judge over two capture files (pcap or pcapng, any resolution):
//! both read as streams, merged by stamp into one [`Verifier`].

use std::io::Read;

use thiserror::Error;
use wirelab_pcap::{PcapError, PcapReader};

use super::{digest, Configuration, Verifier, VerifyConfig, VerifyReport, FRAME_HEAD};

/// Which capture.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    In,
    Out,
}

impl std::fmt::Display for Side {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Side::In => "IN",
            Side::Out => "OUT",
        })
    }
}

/// Why two captures cannot be verified.
#[derive(Debug, Error)]
pub enum VerifyError {
    #[error("{side} capture: {cause}")]
    Pcap { side: Side, cause: PcapError },
    #[error(
        "{side} capture, offset {offset}: a packet without a timestamp (pcapng simple packet \
         block); capture with timestamps (tcpdump -w)"
    )]
    NoTimestamp { side: Side, offset: u64 },
    #[error(
        "{side} capture, offset {offset}: link type {found}, but the first frame's is {first}; \
         capture both sides the same way (tcpdump -i IF, not -i any)"
    )]
    LinkType {
        side: Side,
        offset: u64,
        found: u16,
        first: u16,
    },
}

/// The next frame of one capture, reduced to what matching needs.
#[derive(Debug, Clone, Copy)]
struct Head {
    t_ns: u64,
    digest: u64,
    len: u32,
    /// The frame's first bytes, for a configuration that tells flows apart.
    head: [u8; FRAME_HEAD],
    head_len: usize,
}

struct Stream<R> {
    side: Side,
    reader: PcapReader<R>,
    truncated: Option<u64>,
    backwards: u64,
    last_t: u64,
}

impl<R: Read> Stream<R> {
    fn open(side: Side, input: R) -> Result<Self, VerifyError> {
        let reader = PcapReader::new(input).map_err(|source| VerifyError::Pcap {
            side,
            cause: source,
        })?;
        Ok(Stream {
            side,
            reader,
            truncated: None,
            backwards: 0,
            last_t: 0,
        })
    }

    fn next(&mut self, linktype: &mut Option<u16>) -> Result<Option<Head>, VerifyError> {
        let side = self.side;
        let p = match self.reader.next_packet() {
            Ok(Some(p)) => p,
            Ok(None) => return Ok(None),
            // A capture cut short (tcpdump killed): what came before holds.
            Err(e) if e.is_truncation() => {
                self.truncated = Some(e.offset);
                return Ok(None);
            }
            Err(source) => {
                return Err(VerifyError::Pcap {
                    side,
                    cause: source,
                })
            }
        };
        if !p.has_ts {
            return Err(VerifyError::NoTimestamp {
                side,
                offset: p.offset,
            });
        }
        match *linktype {
            None => *linktype = Some(p.linktype),
            Some(first) if first != p.linktype => {
                return Err(VerifyError::LinkType {
                    side,
                    offset: p.offset,
                    found: p.linktype,
                    first,
                })
            }
            Some(_) => {}
        }
        if p.ts_ns < self.last_t {
            self.backwards += 1;
        }
        self.last_t = self.last_t.max(p.ts_ns);
        let (frame, len) = p.without_fcs();
        let head_len = frame.len().min(FRAME_HEAD);
        let mut head = [0; FRAME_HEAD];
        head[..head_len].copy_from_slice(&frame[..head_len]);
        Ok(Some(Head {
            t_ns: p.ts_ns,
            digest: digest(p.linktype, frame, len),
            len,
            head,
            head_len,
        }))
    }

    fn warnings(&self, out: &mut Vec<String>) {
        if let Some(off) = self.truncated {
            out.push(format!(
                "{} capture ends inside a record at offset {off} (cut short); read up to there",
                self.side
            ));
        }
        if self.backwards > 0 {
            out.push(format!(
                "{} capture: {} stamps earlier than one before them; matched as they come",
                self.side, self.backwards
            ));
        }
    }
}

/// Verifies the frames of `output` (what left the emulator) against those
/// of `input` (what entered it) and `model`. The report's file names and
/// configuration are left for the caller to fill in.
pub fn verify_captures<A: Read, B: Read>(
    input: A,
    output: B,
    cfg: &VerifyConfig,
    model: &mut (impl Configuration + ?Sized),
) -> Result<VerifyReport, VerifyError> {
    let mut a = Stream::open(Side::In, input)?;
    let mut b = Stream::open(Side::Out, output)?;
    let mut linktype = None;
    let mut v = Verifier::new(*cfg);
    let mut skipped = 0;
    let mut ha = a.next(&mut linktype)?;
    while ha.is_some() && skipped < cfg.skip_in {
        skipped += 1;
        ha = a.next(&mut linktype)?;
    }
    let mut hb = b.next(&mut linktype)?;
    loop {
        match (ha, hb) {
            (Some(x), y) if y.is_none_or(|y| x.t_ns <= y.t_ns) => {
                v.ingress_frame(x.t_ns, x.digest, x.len, &x.head[..x.head_len], model);
                ha = a.next(&mut linktype)?;
            }
            (_, Some(y)) => {
                v.egress(y.t_ns, y.digest);
                hb = b.next(&mut linktype)?;
            }
            _ => break,
        }
    }
    let mut r = v.finish();
    r.skipped_in = skipped;
    a.warnings(&mut r.warnings);
    b.warnings(&mut r.warnings);
    Ok(r)
}

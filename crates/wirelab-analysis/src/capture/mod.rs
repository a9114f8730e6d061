//! pcap and pcapng captures read as analysis input: wirelab probes become
//! receive records, RTP streams are measured ([`rtp`]).
//!
//! [`CaptureRecords`] streams a capture (any [`std::io::Read`]) through
//! `wirelab-pcap`'s reader, takes each frame down to UDP ([`frame`]) and
//! yields one [`Record`] of kind `Rx` per probe, exactly as `recv --record`
//! would have written it: `rx_ns` the capture's timestamp, `tx_ns`, `seq`,
//! `flow` and flags from the probe, `size` the UDP payload length. So the
//! per-flow statistics, the report and the export take captures and
//! record files alike.
//!
//! * wirelab probes are recognised by their magic and version anywhere;
//!   echo replies (the way back) are counted, not yielded.
//! * LUNA's 21-byte layout carries no magic: it is read only on the UDP
//!   destination ports given ([`CaptureOptions::luna_ports`]); flows are
//!   numbered by source address and port in order of appearance, as
//!   `recv --format luna` numbers them.
//! * Other UDP datagrams go to the RTP analysis when it is on: every one
//!   that parses as RTP (Wireshark's heuristic: version 2, not an RTCP
//!   payload type) between ports ≥ 1024, or only those on
//!   [`CaptureOptions::rtp_ports`] when ports are given (Wireshark's
//!   "Decode As").
//!
//! A read error ends the stream: the iterator yields it once and then
//! `None`; what came before it stands.

pub mod frame;
pub mod rtp;

use crate::capture::frame::{udp_in, NotUdp};
use crate::capture::rtp::{RtpHeader, RtpStreamReport, RtpStreams, StreamKey};
use serde::Serialize;
use std::collections::HashMap;
use std::io::Read;
use std::net::SocketAddr;
use wirelab_pcap::{PcapError, PcapReader};
use wirelab_wire::luna::LunaProbe;
use wirelab_wire::probe::{ProbeFlags, ProbeRepr};
use wirelab_wire::record::{Record, RecordKind};

/// True when `head` starts like a pcap or pcapng file (any byte order and
/// resolution).
pub fn is_capture(head: &[u8]) -> bool {
    const MAGICS: [[u8; 4]; 5] = [
        [0xd4, 0xc3, 0xb2, 0xa1],
        [0xa1, 0xb2, 0xc3, 0xd4],
        [0x4d, 0x3c, 0xb2, 0xa1],
        [0xa1, 0xb2, 0x3c, 0x4d],
        [0x0a, 0x0d, 0x0d, 0x0a],
    ];
    head.get(..4).is_some_and(|m| MAGICS.iter().any(|x| x == m))
}

/// What to look for in a capture.
#[derive(Debug, Clone, Default)]
pub struct CaptureOptions {
    /// UDP destination ports whose datagrams are LUNA probes.
    pub luna_ports: Vec<u16>,
    /// Measure RTP streams.
    pub rtp: bool,
    /// When not empty, only UDP datagrams from or to these ports are RTP.
    pub rtp_ports: Vec<u16>,
    /// Clock rates by payload type, over RFC 3551's static ones.
    pub rtp_clocks: HashMap<u8, u32>,
    /// Most RTP streams kept; packets of further streams are counted.
    pub max_rtp_streams: usize,
}

/// What a capture held, beyond the probes yielded.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct CaptureCounts {
    pub frames: u64,
    /// Frames without a timestamp (pcapng simple packet blocks): skipped.
    pub no_timestamp: u64,
    pub udp: u64,
    pub probes: u64,
    pub luna_probes: u64,
    /// wirelab echo replies (the way back to the sender): not receive records.
    pub echo_replies: u64,
    /// UDP datagrams on a LUNA port that do not parse as one.
    pub malformed_luna: u64,
    pub rtp_packets: u64,
    pub other_udp: u64,
    pub not_ip: u64,
    pub other_ip: u64,
    pub later_fragments: u64,
    pub truncated: u64,
    /// Frames of a link type this version does not read, by link type.
    pub unknown_linktypes: Vec<(u16, u64)>,
}

/// Probes of a capture as receive records, streamed.
pub struct CaptureRecords<R: Read> {
    reader: PcapReader<R>,
    scan: Scan,
    done: bool,
}

/// The per-frame decisions and what they counted.
struct Scan {
    opts: CaptureOptions,
    counts: CaptureCounts,
    luna_flows: HashMap<SocketAddr, u32>,
    rtp: RtpStreams,
}

/// Most LUNA sources numbered as flows (as `recv`'s table).
const MAX_LUNA_FLOWS: usize = 1 << 16;

impl<R: Read> CaptureRecords<R> {
    /// Reads the capture's header (pcap or pcapng, by its magic).
    pub fn new(input: R, opts: CaptureOptions) -> Result<Self, PcapError> {
        let rtp = RtpStreams::new(opts.rtp_clocks.clone(), opts.max_rtp_streams);
        Ok(CaptureRecords {
            reader: PcapReader::new(input)?,
            scan: Scan {
                opts,
                counts: CaptureCounts::default(),
                luna_flows: HashMap::new(),
                rtp,
            },
            done: false,
        })
    }

    /// Counts so far.
    pub fn counts(&self) -> &CaptureCounts {
        &self.scan.counts
    }

    /// LUNA flow ids and the source each stands for.
    pub fn luna_sources(&self) -> Vec<(u32, SocketAddr)> {
        let mut v: Vec<_> = self.scan.luna_flows.iter().map(|(a, f)| (*f, *a)).collect();
        v.sort();
        v
    }

    /// The RTP streams measured so far.
    pub fn rtp(&self) -> &RtpStreams {
        &self.scan.rtp
    }

    /// The RTP streams' reports.
    pub fn rtp_reports(&self) -> Vec<RtpStreamReport> {
        self.scan.rtp.reports()
    }

    /// Byte offset reached in the input.
    pub fn position(&self) -> u64 {
        self.reader.position()
    }
}

impl Scan {
    fn unknown_link(&mut self, lt: u16) {
        match self
            .counts
            .unknown_linktypes
            .iter_mut()
            .find(|(l, _)| *l == lt)
        {
            Some((_, n)) => *n += 1,
            None => self.counts.unknown_linktypes.push((lt, 1)),
        }
    }

    /// One frame; a record when it carries a probe.
    fn frame(&mut self, ts_ns: u64, linktype: u16, data: &[u8]) -> Option<Record> {
        self.counts.frames += 1;
        self.rtp.frame(ts_ns);
        let u = match udp_in(linktype, data) {
            Ok(u) => u,
            Err(e) => {
                match e {
                    NotUdp::LinkType(lt) => self.unknown_link(lt),
                    NotUdp::NotIp => self.counts.not_ip += 1,
                    NotUdp::OtherProtocol => self.counts.other_ip += 1,
                    NotUdp::LaterFragment => self.counts.later_fragments += 1,
                    NotUdp::Truncated => self.counts.truncated += 1,
                }
                return None;
            }
        };
        self.counts.udp += 1;
        let rec = |flow, seq, tx_ns, flags: u8| Record {
            flow,
            size: u.len,
            seq,
            tx_ns,
            rx_ns: ts_ns,
            probe_flags: flags,
            kind: RecordKind::Rx,
            rec_flags: Record::RX_KERNEL_TS,
            tos: u.tos,
            ..Default::default()
        };
        if self.opts.luna_ports.contains(&u.dport) {
            let src = SocketAddr::new(u.src, u.sport);
            let next = self.luna_flows.len() as u32 + 1;
            let flow = match self.luna_flows.get(&src) {
                Some(&f) => Some(f),
                None if self.luna_flows.len() < MAX_LUNA_FLOWS => Some(next),
                None => None,
            };
            return match (LunaProbe::parse(u.payload), flow) {
                (Ok(l), Some(flow)) => {
                    self.luna_flows.insert(src, flow);
                    self.counts.luna_probes += 1;
                    let flags = if l.is_echo_request() {
                        ProbeFlags::ECHO_REQUEST
                    } else {
                        0
                    };
                    Some(rec(flow, u64::from(l.seq), l.tx_ns, flags))
                }
                _ => {
                    self.counts.malformed_luna += 1;
                    None
                }
            };
        }
        if let Ok(p) = ProbeRepr::parse(u.payload) {
            if p.flags.is_echo_reply() {
                self.counts.echo_replies += 1;
                return None;
            }
            self.counts.probes += 1;
            return Some(rec(p.flow, p.seq, p.tx_ns, p.flags.bits()));
        }
        let ports = &self.opts.rtp_ports;
        // The heuristic leaves well-known ports (DNS, NTP, ...) alone, as
        // Wireshark's port dissectors take them before its heuristic runs.
        let rtp_port = if ports.is_empty() {
            u.sport >= 1024 && u.dport >= 1024
        } else {
            ports.contains(&u.sport) || ports.contains(&u.dport)
        };
        if self.opts.rtp && rtp_port && !u.first_fragment {
            let whole = u.payload.len() as u32 == u.len;
            if let Ok(h) = RtpHeader::parse(u.payload, whole) {
                self.counts.rtp_packets += 1;
                let key = StreamKey {
                    src: u.src,
                    sport: u.sport,
                    dst: u.dst,
                    dport: u.dport,
                    ssrc: h.ssrc,
                };
                self.rtp.packet(key, ts_ns, &h);
                return None;
            }
        }
        self.counts.other_udp += 1;
        None
    }
}

impl<R: Read> Iterator for CaptureRecords<R> {
    type Item = Result<Record, PcapError>;

    fn next(&mut self) -> Option<Self::Item> {
        while !self.done {
            let p = match self.reader.next_packet() {
                Ok(Some(p)) => p,
                Ok(None) => {
                    self.done = true;
                    return None;
                }
                Err(e) => {
                    self.done = true;
                    return Some(Err(e));
                }
            };
            if !p.has_ts {
                self.scan.counts.frames += 1;
                self.scan.counts.no_timestamp += 1;
                continue;
            }
            let (data, _) = p.without_fcs();
            if let Some(r) = self.scan.frame(p.ts_ns, p.linktype, data) {
                return Some(Ok(r));
            }
        }
        None
    }
}

/// `ip:port`, IPv6 in brackets; the address alone when it does not parse.
pub fn source_name(ip: &str, port: u16) -> String {
    match ip.parse::<std::net::IpAddr>() {
        Ok(a) => SocketAddr::new(a, port).to_string(),
        Err(_) => ip.to_string(),
    }
}

/// One capture file in `wirelab.analysis/1`'s `captures` section.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CaptureInput {
    pub file: String,
    pub counts: CaptureCounts,
    /// LUNA flow ids and the source address each stands for.
    pub luna_sources: Vec<LunaSource>,
    /// The read error that ended the file early (what came before it is
    /// analysed), null when it was read to its end.
    pub error: Option<String>,
}

/// `wirelab.analysis/1` with captures among its inputs: the summary's keys,
/// then `captures` and `rtp` (one entry per capture file each).
#[derive(Debug, Serialize)]
pub struct WithCaptures<'a> {
    #[serde(flatten)]
    pub summary: &'a crate::Summary,
    pub captures: &'a [CaptureInput],
    pub rtp: &'a [RtpInput],
}

/// A LUNA flow and its source.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LunaSource {
    pub flow: u32,
    pub source: String,
}

/// The RTP streams of one capture file (`rtp` section).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RtpInput {
    pub file: String,
    pub streams: Vec<RtpStreamReport>,
    /// Packets of streams beyond `--max-flows`, not analysed.
    pub packets_over_cap: u64,
}

impl<R: Read> CaptureRecords<R> {
    /// The file's entry in the report.
    pub fn input(&self, file: &str, error: Option<String>) -> CaptureInput {
        CaptureInput {
            file: file.to_string(),
            counts: self.scan.counts.clone(),
            luna_sources: self
                .luna_sources()
                .into_iter()
                .map(|(flow, a)| LunaSource {
                    flow,
                    source: a.to_string(),
                })
                .collect(),
            error,
        }
    }

    /// The file's RTP streams.
    pub fn rtp_input(&self, file: &str) -> RtpInput {
        RtpInput {
            file: file.to_string(),
            streams: self.scan.rtp.reports(),
            packets_over_cap: self.scan.rtp.over_cap,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::frame::build::*;
    use super::*;
    use wirelab_pcap::{PcapngWriter, LINKTYPE_ETHERNET};

    fn probe(flow: u32, seq: u64, flags: u8) -> Vec<u8> {
        let mut b = vec![0u8; 64];
        let p = ProbeRepr {
            flags: ProbeFlags(flags),
            flow,
            seq,
            tx_ns: 1_700_000_000_000_000_000 + seq,
            echo: None,
        };
        p.emit(&mut b).unwrap();
        b
    }

    fn capture(frames: &[Vec<u8>]) -> Vec<u8> {
        let mut w = PcapngWriter::new(Vec::new()).unwrap();
        let i = w.add_interface("veth0", LINKTYPE_ETHERNET, 65535).unwrap();
        for (n, f) in frames.iter().enumerate() {
            let ts = 1_700_000_000_100_000_000 + n as u64 * 1000;
            w.write_packet(i, ts, f.len() as u32, f).unwrap();
        }
        w.into_inner().unwrap()
    }

    fn eth_udp(dport: u16, payload: &[u8]) -> Vec<u8> {
        ethernet(&ipv4_udp(
            [10, 0, 0, 1],
            [10, 0, 0, 2],
            40000,
            dport,
            payload,
        ))
    }

    #[test]
    fn probes_become_rx_records_and_the_rest_is_counted() {
        let mut echo = probe(1, 9, ProbeFlags::ECHO_REPLY);
        echo.resize(64, 0);
        let luna = {
            let mut b = vec![0u8; 32];
            LunaProbe {
                seq: 5,
                tx_ns: 1_700_000_000_000_000_005,
                flags: 0,
            }
            .emit(&mut b)
            .unwrap();
            b
        };
        let v6 = ethernet(&ipv6_udp([0xfd; 16], [0xfe; 16], 1, 9000, &probe(3, 1, 0)));
        let bytes = capture(&[
            eth_udp(9000, &probe(7, 0, 0)),
            eth_udp(9000, &probe(7, 1, ProbeFlags::LAST)),
            eth_udp(9000, &echo),
            eth_udp(7777, &luna),
            eth_udp(7777, b"short"),
            eth_udp(53, &[0x80, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 1, 0]),
            v6,
            vec![0u8; 10],
        ]);
        let opts = CaptureOptions {
            luna_ports: vec![7777],
            rtp: true,
            max_rtp_streams: 10,
            ..Default::default()
        };
        let mut c = CaptureRecords::new(&bytes[..], opts).unwrap();
        let recs: Vec<Record> = c.by_ref().map(Result::unwrap).collect();
        let got: Vec<_> = recs
            .iter()
            .map(|r| (r.flow, r.seq, r.probe_flags, r.size))
            .collect();
        assert_eq!(
            got,
            [
                (7, 0, 0, 64),
                (7, 1, ProbeFlags::LAST, 64),
                (1, 5, 0, 32),
                (3, 1, 0, 64)
            ]
        );
        assert!(recs.iter().all(|r| r.kind == RecordKind::Rx));
        assert_eq!(recs[0].rx_ns, 1_700_000_000_100_000_000);
        assert_eq!(recs[1].tx_ns, 1_700_000_000_000_000_001);
        let n = c.counts();
        assert_eq!((n.frames, n.udp, n.probes, n.luna_probes), (8, 7, 3, 1));
        assert_eq!(
            (n.echo_replies, n.malformed_luna, n.other_udp, n.truncated),
            (1, 1, 1, 1)
        );
        assert_eq!(c.luna_sources()[0].1.to_string(), "10.0.0.1:40000");
    }

    #[test]
    fn a_damaged_capture_keeps_what_came_before() {
        let mut bytes = capture(&[
            eth_udp(9000, &probe(1, 0, 0)),
            eth_udp(9000, &probe(1, 1, 0)),
        ]);
        let n = bytes.len();
        // The last block's leading length: not a multiple of 4.
        let last = u32::from_le_bytes(bytes[n - 4..].try_into().unwrap()) as usize;
        bytes[n - last + 4..n - last + 8].copy_from_slice(&6u32.to_le_bytes());
        let mut c = CaptureRecords::new(&bytes[..], CaptureOptions::default()).unwrap();
        assert_eq!(c.next().unwrap().unwrap().seq, 0);
        assert!(c.next().unwrap().is_err());
        assert!(c.next().is_none());
        assert!(is_capture(&bytes) && !is_capture(b"WLRECORD"));
    }

    proptest::proptest! {
        /// Any bytes as a capture, and any frames inside a valid one, of
        /// any link type: no panic, every record an Rx record, never more
        /// records than frames.
        #[test]
        fn hostile_captures_and_frames_never_panic(
            raw in proptest::collection::vec(proptest::num::u8::ANY, 0..600),
            frames in proptest::collection::vec(
                proptest::collection::vec(proptest::num::u8::ANY, 0..120), 0..12),
            lt in proptest::sample::select(vec![0u16, 1, 101, 113, 228, 229, 276, 147]),
        ) {
            let opts = || CaptureOptions {
                luna_ports: vec![7777],
                rtp: true,
                max_rtp_streams: 8,
                ..Default::default()
            };
            if let Ok(c) = CaptureRecords::new(&raw[..], opts()) {
                for r in c.flatten() {
                    proptest::prop_assert_eq!(r.kind, RecordKind::Rx);
                }
            }
            let mut w = PcapngWriter::new(Vec::new()).unwrap();
            let i = w.add_interface("x", lt, 65535).unwrap();
            for (n, f) in frames.iter().enumerate() {
                // Half the frames get a plausible IPv4/UDP start.
                let mut f = f.clone();
                if n % 2 == 0 {
                    let mut ip = ipv4_udp([10, 0, 0, 1], [10, 0, 0, 2], 5004, 7777, &f);
                    if lt == 1 {
                        ip = ethernet(&ip);
                    }
                    f = ip;
                }
                w.write_packet(i, 1_700_000_000_000_000_000 + n as u64, f.len() as u32, &f).unwrap();
            }
            let bytes = w.into_inner().unwrap();
            let mut c = CaptureRecords::new(&bytes[..], opts()).unwrap();
            let n = c.by_ref().filter(Result::is_ok).count() as u64;
            proptest::prop_assert!(n <= c.counts().frames);
            proptest::prop_assert_eq!(c.counts().frames, frames.len() as u64);
        }
    }
}

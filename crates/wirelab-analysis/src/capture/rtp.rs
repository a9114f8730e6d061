//! RTP streams (RFC 3550) found in captures: per (source, destination,
//! ports, SSRC), packets, loss, sequence errors, duplicates and the §6.4.1
//! interarrival jitter, computed as Wireshark's RTP stream analysis does
//! (`ui/tap-rtp-analysis.c`, `rtppacket_analyse`), so the numbers equal
//! `tshark -z rtp,streams` on the same capture:
//!
//! * Times are milliseconds (f64) since the capture's first frame.
//! * The first packet of a stream only sets the state. A packet is "in time
//!   sequence" when its RTP timestamp is at most 2^31 ahead of the stream's
//!   first timestamp; others are flagged and do not move the reference.
//! * For each later in-sequence packet with a known clock rate,
//!   `D = |t − (t_ref + (ts − ts_ref) / (rate / 1000))|` with the division
//!   `rate / 1000` in integers (Wireshark's: 44.1 kHz counts as 44 kHz),
//!   and `J += (D − J) / 16` (RFC 3550 §6.4.1, in ms).
//! * Max and mean jitter and max delta take only "regular" packets: not the
//!   first, no marker bit, not comfort noise (PT 13 or 19) nor just after
//!   it, not out of time sequence. The mean is Wireshark's running mean
//!   over the packets counted so far (all of them, as its code divides).
//! * Lost = expected − received, expected = last sequence number (with the
//!   wraps counted) − first + 1: duplicates make it negative, as there.
//!
//! Pure: packets come in as arguments; memory is one fixed-size state per
//! stream (an 8 KiB duplicate bitmap), streams capped by the caller.

use serde::Serialize;
use std::collections::HashMap;
use std::net::IpAddr;

/// RTP version 2.
const VERSION: u8 = 2;
/// Payload types 72–76 collide with RTCP packet types (RFC 5761 §4).
const RTCP_RANGE: std::ops::RangeInclusive<u8> = 72..=76;
/// Comfort noise (RFC 3389) and its old number.
const PT_CN: u8 = 13;
const PT_CN_OLD: u8 = 19;

/// A parsed fixed RTP header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RtpHeader {
    pub marker: bool,
    pub pt: u8,
    pub seq: u16,
    pub timestamp: u32,
    pub ssrc: u32,
    /// Bytes of header (fixed part, CSRCs, extension).
    pub header_len: usize,
}

/// Why a datagram is not taken for RTP.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NotRtp {
    /// Shorter than the fixed header, its CSRC list or its extension.
    Short,
    /// Version is not 2.
    Version(u8),
    /// Payload type 72–76: RTCP.
    Rtcp,
    /// The padding count exceeds the payload.
    Padding,
}

impl RtpHeader {
    /// Parses the RTP header at the start of a UDP payload. `whole` says the
    /// payload was captured whole (the padding count is checked only then).
    pub fn parse(b: &[u8], whole: bool) -> Result<RtpHeader, NotRtp> {
        let h = b.get(..12).ok_or(NotRtp::Short)?;
        let version = h[0] >> 6;
        if version != VERSION {
            return Err(NotRtp::Version(version));
        }
        let pt = h[1] & 0x7f;
        if RTCP_RANGE.contains(&pt) {
            return Err(NotRtp::Rtcp);
        }
        let mut len = 12 + usize::from(h[0] & 0x0f) * 4;
        if h[0] & 0x10 != 0 {
            let ext = b.get(len + 2..len + 4).ok_or(NotRtp::Short)?;
            len += 4 + usize::from(u16::from_be_bytes([ext[0], ext[1]])) * 4;
        }
        if len > b.len() {
            return Err(NotRtp::Short);
        }
        if whole && h[0] & 0x20 != 0 {
            let pad = usize::from(b[b.len() - 1]);
            if pad == 0 || len + pad > b.len() {
                return Err(NotRtp::Padding);
            }
        }
        Ok(RtpHeader {
            marker: h[1] & 0x80 != 0,
            pt,
            seq: u16::from_be_bytes([h[2], h[3]]),
            timestamp: u32::from_be_bytes([h[4], h[5], h[6], h[7]]),
            ssrc: u32::from_be_bytes([h[8], h[9], h[10], h[11]]),
            header_len: len,
        })
    }
}

/// The clock rate of a static payload type (RFC 3551 tables 4 and 5, as
/// Wireshark's table has them); `None` for dynamic and unassigned ones.
pub fn static_clock_rate(pt: u8) -> Option<u32> {
    Some(match pt {
        0 | 1 | 2 | 3 | 4 | 5 | 7 | 8 | 9 | 12 | 13 | 15 | 18 | 19 => 8000,
        6 => 16000,
        10 | 11 => 44100,
        16 => 11025,
        17 => 22050,
        14 | 25 | 26 | 28 | 31 | 32 | 33 | 34 => 90000,
        _ => return None,
    })
}

/// Which stream a packet belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct StreamKey {
    pub src: IpAddr,
    pub sport: u16,
    pub dst: IpAddr,
    pub dport: u16,
    pub ssrc: u32,
}

/// One stream's running state (Wireshark's `tap_rtp_stat_t`, the fields
/// its stream table prints).
#[derive(Debug, Clone)]
pub struct RtpStream {
    first_ns: u64,
    last_ns: u64,
    packets: u64,
    start_seq: u16,
    stop_seq: u16,
    seq_num: u16,
    under: bool,
    cycles: u64,
    seq_errors: u64,
    jumps: u64,
    late: u64,
    duplicates: u64,
    wrong_timestamp: u64,
    first_ts: u32,
    pt: u8,
    clock_rate: Option<u32>,
    time_ms: f64,
    last_nominal_ms: f64,
    delta_ms: f64,
    jitter_ms: f64,
    max_delta_ms: f64,
    mean_delta_ms: f64,
    max_jitter_ms: f64,
    mean_jitter_ms: f64,
    /// A regular packet had a clock rate: max and mean jitter are known.
    jitter_counted: bool,
    /// Sequence numbers seen within half a cycle (duplicate detection).
    seen: Box<[u64; 1024]>,
}

impl RtpStream {
    fn new(at_ms: f64, ts_ns: u64, h: &RtpHeader) -> RtpStream {
        let mut seen = Box::new([0u64; 1024]);
        seen[usize::from(h.seq >> 6)] |= 1 << (h.seq & 63);
        RtpStream {
            first_ns: ts_ns,
            last_ns: ts_ns,
            packets: 1,
            start_seq: h.seq,
            stop_seq: h.seq,
            seq_num: h.seq,
            under: false,
            cycles: 0,
            seq_errors: 0,
            jumps: 0,
            late: 0,
            duplicates: 0,
            wrong_timestamp: 0,
            first_ts: h.timestamp,
            pt: h.pt,
            clock_rate: None,
            time_ms: at_ms,
            last_nominal_ms: 0.0,
            delta_ms: 0.0,
            jitter_ms: 0.0,
            max_delta_ms: 0.0,
            mean_delta_ms: 0.0,
            max_jitter_ms: 0.0,
            mean_jitter_ms: 0.0,
            jitter_counted: false,
            seen,
        }
    }

    /// Marks `seq` seen and forgets the one half a cycle away; true when it
    /// was seen already (a duplicate).
    fn seen_before(&mut self, seq: u16) -> bool {
        let bit = |s: u16| (usize::from(s >> 6), 1u64 << (s & 63));
        let (w, m) = bit(seq);
        let dup = self.seen[w] & m != 0;
        self.seen[w] |= m;
        let (fw, fm) = bit(seq.wrapping_add(0x8000));
        self.seen[fw] &= !fm;
        dup
    }

    /// One more packet of the stream (not its first).
    fn add(&mut self, at_ms: f64, ts_ns: u64, h: &RtpHeader, rate: Option<u32>) {
        self.last_ns = ts_ns;
        if self.seen_before(h.seq) {
            self.duplicates += 1;
        }
        let ahead = h.timestamp.wrapping_sub(self.first_ts);
        let in_time = ahead < 0x8000_0000;
        if !in_time {
            self.wrong_timestamp += 1;
        }
        let (seq, start, stop) = (h.seq, self.start_seq, self.stop_seq);
        // Below the first number: a new cycle; 0 after 65535 as well (a
        // stream that started at 0 never goes below it).
        if (seq < start || (seq == 0 && stop == 65535)) && in_time && !self.under {
            self.cycles += 1;
            self.under = true;
        } else if seq > start && in_time && self.under {
            self.under = false;
        }
        let last = i32::from(self.seq_num);
        let cur = i32::from(seq);
        if in_time && (last + 1 == cur || (last == 65535 && cur == 0)) {
            self.seq_num = seq;
        } else if in_time && (last + 1 < cur || last - cur > 0xff00) {
            self.seq_num = seq;
            self.seq_errors += 1;
            self.jumps += 1;
        } else if last + 1 > cur {
            self.seq_errors += 1;
            self.late += 1;
        }
        let cn = h.pt == PT_CN || h.pt == PT_CN_OLD;
        let follows_cn = self.pt == PT_CN || self.pt == PT_CN_OLD;
        self.pt = h.pt;
        let rate = rate.filter(|&r| r / 1000 > 0);
        let mut jitter = 0.0;
        if in_time {
            if let Some(r) = rate {
                self.clock_rate = Some(r);
                let nominal = f64::from(ahead) / f64::from(r / 1000);
                let expected = self.time_ms + (nominal - self.last_nominal_ms);
                let diff = (at_ms - expected).abs();
                jitter = (15.0 * self.jitter_ms + diff) / 16.0;
                self.delta_ms = at_ms - self.time_ms;
                self.jitter_ms = jitter;
                self.last_nominal_ms = nominal;
            } else {
                self.delta_ms = at_ms - self.time_ms;
            }
        }
        let regular = !h.marker && !cn && in_time && !follows_cn;
        if regular {
            // `packets` counts this stream's packets before this one.
            let n = self.packets as f64;
            self.max_delta_ms = self.max_delta_ms.max(self.delta_ms);
            self.mean_delta_ms = (self.mean_delta_ms * (n - 1.0) + self.delta_ms) / n;
            if rate.is_some() {
                self.jitter_counted = true;
                self.max_jitter_ms = self.max_jitter_ms.max(self.jitter_ms);
                self.mean_jitter_ms = (self.mean_jitter_ms * (n - 1.0) + jitter) / n;
            }
        }
        if in_time {
            self.time_ms = at_ms;
        }
        self.stop_seq = seq;
        self.packets += 1;
    }

    fn report(&self, key: &StreamKey) -> RtpStreamReport {
        let expected =
            i64::from(self.stop_seq) + self.cycles as i64 * 65536 - i64::from(self.start_seq) + 1;
        let lost = expected - self.packets as i64;
        let rate = self.clock_rate;
        RtpStreamReport {
            src: key.src.to_string(),
            src_port: key.sport,
            dst: key.dst.to_string(),
            dst_port: key.dport,
            ssrc: key.ssrc,
            payload_type: self.pt,
            clock_rate_hz: rate,
            first_ns: self.first_ns,
            last_ns: self.last_ns,
            packets: self.packets,
            expected,
            lost,
            lost_pct: if expected > 0 {
                lost as f64 * 100.0 / expected as f64
            } else {
                0.0
            },
            sequence_errors: self.seq_errors,
            jumps: self.jumps,
            late: self.late,
            duplicates: self.duplicates,
            wraps: self.cycles,
            wrong_timestamps: self.wrong_timestamp,
            max_delta_ms: self.max_delta_ms,
            mean_delta_ms: self.mean_delta_ms,
            jitter_ms: rate.map(|_| self.jitter_ms),
            mean_jitter_ms: self.jitter_counted.then_some(self.mean_jitter_ms),
            max_jitter_ms: self.jitter_counted.then_some(self.max_jitter_ms),
        }
    }
}

/// One stream in the `rtp` section of `wirelab.analysis/1`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RtpStreamReport {
    pub src: String,
    pub src_port: u16,
    pub dst: String,
    pub dst_port: u16,
    pub ssrc: u32,
    /// The last packet's payload type.
    pub payload_type: u8,
    /// The clock rate jitter was computed with; null when unknown (a
    /// dynamic payload type without `--rtp-clock`): no jitter then.
    pub clock_rate_hz: Option<u32>,
    /// Capture time of the first and last packet, ns since the Unix epoch.
    pub first_ns: u64,
    pub last_ns: u64,
    pub packets: u64,
    /// Last sequence number (wraps counted) − first + 1.
    pub expected: i64,
    /// expected − packets (negative with duplicates).
    pub lost: i64,
    pub lost_pct: f64,
    /// Packets whose sequence number was not the next one (Wireshark's
    /// "Wrong sequence number"): `jumps` + `late`.
    pub sequence_errors: u64,
    /// Forward jumps (a gap: packets lost or reordered).
    pub jumps: u64,
    /// Sequence numbers behind the highest one (late or duplicate).
    pub late: u64,
    /// Sequence numbers seen before (within half a cycle).
    pub duplicates: u64,
    /// Sequence-number wraps (65535 → 0).
    pub wraps: u64,
    /// Packets with an RTP timestamp behind the stream's first.
    pub wrong_timestamps: u64,
    pub max_delta_ms: f64,
    pub mean_delta_ms: f64,
    /// The RFC 3550 interarrival jitter at the end of the stream (null
    /// without a clock rate).
    pub jitter_ms: Option<f64>,
    /// Over regular packets (null when none had a clock rate).
    pub mean_jitter_ms: Option<f64>,
    pub max_jitter_ms: Option<f64>,
}

/// Streams of a capture, in order of first appearance.
#[derive(Debug)]
pub struct RtpStreams {
    base_ns: Option<u64>,
    clocks: HashMap<u8, u32>,
    index: HashMap<StreamKey, usize>,
    streams: Vec<(StreamKey, RtpStream)>,
    max_streams: usize,
    /// Packets of streams beyond the cap, not analysed.
    pub over_cap: u64,
}

impl RtpStreams {
    /// `clocks` maps payload types to clock rates (over the static table);
    /// at most `max_streams` streams are kept.
    pub fn new(clocks: HashMap<u8, u32>, max_streams: usize) -> RtpStreams {
        RtpStreams {
            base_ns: None,
            clocks,
            index: HashMap::new(),
            streams: Vec::new(),
            max_streams,
            over_cap: 0,
        }
    }

    /// Every frame of the capture passes here first, RTP or not: times are
    /// measured from the first frame, as Wireshark's are.
    pub fn frame(&mut self, ts_ns: u64) {
        self.base_ns.get_or_insert(ts_ns);
    }

    fn rel_ms(&self, ts_ns: u64) -> f64 {
        let base = self.base_ns.unwrap_or(ts_ns);
        let d = i128::from(ts_ns) - i128::from(base);
        // Wireshark's nstime_to_msec: seconds * 1000 + ns / 1e6.
        let (s, ns) = (d.div_euclid(1_000_000_000), d.rem_euclid(1_000_000_000));
        s as f64 * 1000.0 + ns as f64 / 1_000_000.0
    }

    /// One RTP packet captured at `ts_ns`.
    pub fn packet(&mut self, key: StreamKey, ts_ns: u64, h: &RtpHeader) {
        self.frame(ts_ns);
        let at = self.rel_ms(ts_ns);
        let rate = self
            .clocks
            .get(&h.pt)
            .copied()
            .or_else(|| static_clock_rate(h.pt));
        match self.index.get(&key) {
            Some(&i) => self.streams[i].1.add(at, ts_ns, h, rate),
            None if self.streams.len() < self.max_streams => {
                self.index.insert(key, self.streams.len());
                self.streams.push((key, RtpStream::new(at, ts_ns, h)));
            }
            None => self.over_cap += 1,
        }
    }

    pub fn len(&self) -> usize {
        self.streams.len()
    }

    pub fn is_empty(&self) -> bool {
        self.streams.is_empty()
    }

    /// The reports, in order of first appearance.
    pub fn reports(&self) -> Vec<RtpStreamReport> {
        self.streams.iter().map(|(k, s)| s.report(k)).collect()
    }
}

/// The RTP table's column heads, as `analyze` prints them and the report
/// shows them.
pub const RTP_HEADS: [&str; 13] = [
    "source",
    "destination",
    "ssrc",
    "pt",
    "packets",
    "lost",
    "seq_err",
    "dups",
    "wrap",
    "late",
    "max_delta",
    "mean_jit",
    "max_jit",
];

/// Widths of the text table's columns (the two addresses left-aligned,
/// the numbers right-aligned), those of each row's format below.
const RTP_WIDTHS: [usize; 13] = [22, 22, 10, 3, 7, 7, 7, 5, 4, 4, 10, 10, 10];

/// The RTP table: one row per stream, times in ms as Wireshark prints them.
pub fn render_text(inputs: &[super::RtpInput], w: &mut impl std::io::Write) -> std::io::Result<()> {
    for input in inputs.iter().filter(|i| !i.streams.is_empty()) {
        writeln!(w, "\nRTP streams in {}:", input.file)?;
        let heads: Vec<String> = RTP_HEADS
            .iter()
            .zip(RTP_WIDTHS)
            .enumerate()
            .map(|(i, (h, width))| match i {
                0 | 1 => format!("{h:<width$}"),
                _ => format!("{h:>width$}"),
            })
            .collect();
        writeln!(w, "{}", heads.join(" "))?;
        for s in &input.streams {
            let ms = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.3}ms"));
            writeln!(
                w,
                "{:<22} {:<22} 0x{:08x} {:>3} {:>7} {:>7} {:>7} {:>5} {:>4} {:>4} {:>10} {:>10} {:>10}",
                super::source_name(&s.src, s.src_port),
                super::source_name(&s.dst, s.dst_port),
                s.ssrc,
                s.payload_type,
                s.packets,
                s.lost,
                s.sequence_errors,
                s.duplicates,
                s.wraps,
                s.late,
                ms(Some(s.max_delta_ms)),
                ms(s.mean_jitter_ms),
                ms(s.max_jitter_ms)
            )?;
        }
        if input.streams.iter().any(|s| s.max_jitter_ms.is_none()) {
            writeln!(
                w,
                "  jitter '-': a dynamic payload type without a clock rate; give it with --rtp-clock PT=HZ"
            )?;
        }
        if input.packets_over_cap > 0 {
            writeln!(
                w,
                "  {} packets of streams beyond --max-flows were not analysed",
                input.packets_over_cap
            )?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    pub fn rtp(pt: u8, marker: bool, seq: u16, ts: u32, ssrc: u32) -> Vec<u8> {
        let mut b = vec![0x80, pt | if marker { 0x80 } else { 0 }];
        b.extend_from_slice(&seq.to_be_bytes());
        b.extend_from_slice(&ts.to_be_bytes());
        b.extend_from_slice(&ssrc.to_be_bytes());
        b.extend_from_slice(&[0xd5; 160]);
        b
    }

    fn key() -> StreamKey {
        StreamKey {
            src: "10.0.0.1".parse().unwrap(),
            sport: 4000,
            dst: "10.0.0.2".parse().unwrap(),
            dport: 5000,
            ssrc: 7,
        }
    }

    /// (arrival ns, seq, timestamp) through one PCMU stream.
    fn run(pkts: &[(u64, u16, u32)]) -> RtpStreamReport {
        let mut s = RtpStreams::new(HashMap::new(), 4);
        for &(t, seq, ts) in pkts {
            let h = RtpHeader::parse(&rtp(0, false, seq, ts, 7), true).unwrap();
            s.packet(key(), t, &h);
        }
        s.reports().remove(0)
    }

    #[test]
    fn header_fields_csrc_extension_padding_and_rejects() {
        let mut b = rtp(8, true, 513, 0x01020304, 0xdeadbeef);
        let h = RtpHeader::parse(&b, true).unwrap();
        assert_eq!(
            (h.marker, h.pt, h.seq, h.timestamp, h.ssrc, h.header_len),
            (true, 8, 513, 0x01020304, 0xdeadbeef, 12)
        );
        b[0] = 0x92; // extension + 2 CSRCs
        b[20..24].copy_from_slice(&[0xbe, 0xde, 0, 1]);
        assert_eq!(
            RtpHeader::parse(&b, true).unwrap().header_len,
            12 + 8 + 4 + 4
        );
        let mut v1 = rtp(0, false, 1, 1, 1);
        v1[0] = 0x40;
        assert_eq!(RtpHeader::parse(&v1, true), Err(NotRtp::Version(1)));
        assert_eq!(
            RtpHeader::parse(&rtp(72, false, 1, 1, 1), true),
            Err(NotRtp::Rtcp)
        );
        let mut pad = rtp(0, false, 1, 1, 1);
        pad[0] |= 0x20;
        *pad.last_mut().unwrap() = 200;
        assert_eq!(RtpHeader::parse(&pad, true), Err(NotRtp::Padding));
        assert!(
            RtpHeader::parse(&pad, false).is_ok(),
            "cut payload: padding unknown"
        );
        for cut in 0..12 {
            assert_eq!(RtpHeader::parse(&b[..cut], false), Err(NotRtp::Short));
        }
    }

    #[test]
    fn perfect_stream_has_no_jitter_and_a_constant_delta() {
        let pkts: Vec<_> = (0..50u16)
            .map(|i| {
                (
                    1_000_000_000 + u64::from(i) * 20_000_000,
                    100 + i,
                    160 * u32::from(i),
                )
            })
            .collect();
        let r = run(&pkts);
        assert_eq!(
            (r.packets, r.expected, r.lost, r.sequence_errors),
            (50, 50, 0, 0)
        );
        assert_eq!(r.max_jitter_ms, Some(0.0));
        assert!((r.max_delta_ms - 20.0).abs() < 1e-9);
        assert_eq!(r.clock_rate_hz, Some(8000));
    }

    #[test]
    fn jitter_follows_rfc3550_on_a_hand_made_series() {
        // 20 ms packets; the third arrives 4 ms late, the rest on time.
        let t = |i: u64, late: u64| i * 20_000_000 + late;
        let r = run(&[
            (t(0, 0), 0, 0),
            (t(1, 0), 1, 160),
            (t(2, 4_000_000), 2, 320),
            (t(3, 0), 3, 480),
        ]);
        // D2 = 4 → J = 4/16 = 0.25; D3 = |60 − (44 + 20)| = 4 → J = (15·0.25 + 4)/16.
        let j3 = (15.0 * 0.25 + 4.0) / 16.0;
        assert!((r.jitter_ms.unwrap() - j3).abs() < 1e-12);
        assert!((r.max_jitter_ms.unwrap() - j3).abs() < 1e-12);
        // Mean over packets 2..4 of J, divided as Wireshark divides.
        let m2 = 0.0;
        let m3 = (m2 * 1.0 + 0.25) / 2.0;
        let m4 = (m3 * 2.0 + j3) / 3.0;
        assert!((r.mean_jitter_ms.unwrap() - m4).abs() < 1e-12);
        assert!((r.max_delta_ms - 24.0).abs() < 1e-9);
    }

    #[test]
    fn wrap_loss_reordering_and_duplicates() {
        let p = |i: u64, seq: u16| (i * 20_000_000, seq, 160 * i as u32);
        // 65534, 65535, 0, (1 lost), 2, 4, 3 (reordered), 3 again (duplicate), 5
        let r = run(&[
            p(0, 65534),
            p(1, 65535),
            p(2, 0),
            p(4, 2),
            p(6, 4),
            p(5, 3),
            p(5, 3),
            p(7, 5),
        ]);
        assert_eq!(r.wraps, 1);
        assert_eq!(r.packets, 8);
        assert_eq!(r.expected, 65536 + 5 - 65534 + 1);
        assert_eq!(
            r.lost, 0,
            "one lost, one duplicate: Wireshark's count nets them"
        );
        assert_eq!(r.duplicates, 1);
        assert_eq!((r.jumps, r.late), (2, 2));
        assert_eq!(r.sequence_errors, 4);
    }

    #[test]
    fn dynamic_payload_types_need_a_clock() {
        let mut s = RtpStreams::new(HashMap::new(), 4);
        let mut with = RtpStreams::new(HashMap::from([(96, 48000)]), 4);
        for i in 0..10u16 {
            let h = RtpHeader::parse(&rtp(96, false, i, 960 * u32::from(i), 7), true).unwrap();
            s.packet(key(), u64::from(i) * 21_000_000, &h);
            with.packet(key(), u64::from(i) * 21_000_000, &h);
        }
        assert_eq!(s.reports()[0].max_jitter_ms, None);
        assert!(with.reports()[0].max_jitter_ms.unwrap() > 0.3);
    }

    #[test]
    fn streams_beyond_the_cap_are_counted_not_kept() {
        let mut s = RtpStreams::new(HashMap::new(), 1);
        let h = RtpHeader::parse(&rtp(0, false, 1, 1, 1), true).unwrap();
        s.packet(key(), 1, &h);
        s.packet(StreamKey { ssrc: 9, ..key() }, 2, &h);
        assert_eq!((s.len(), s.over_cap), (1, 1));
    }

    #[test]
    fn text_table_heads_line_up_with_the_rows() {
        let pkts: Vec<_> = (0..3u16)
            .map(|i| (u64::from(i) * 20_000_000, i, 160 * u32::from(i)))
            .collect();
        let input = crate::capture::RtpInput {
            file: "a.pcap".into(),
            streams: vec![run(&pkts)],
            packets_over_cap: 0,
        };
        let mut out = Vec::new();
        render_text(&[input], &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[1], "RTP streams in a.pcap:");
        assert_eq!(
            lines[2],
            "source                 destination                  ssrc  pt packets    lost \
             seq_err  dups wrap late  max_delta   mean_jit    max_jit"
        );
        assert_eq!(
            lines[3],
            concat!(
                "10.0.0.1:4000          10.0.0.2:5000          0x00000007   0       3       0",
                "       0     0    0    0   20.000ms    0.000ms    0.000ms"
            )
        );
    }
}

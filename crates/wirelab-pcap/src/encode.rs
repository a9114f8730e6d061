//! Packet records encoded into a caller's buffer: classic pcap records and pcapng
//! enhanced packet blocks, one at a time or many at once.
//!
//! [`RecordEncoder`] is for writers that batch: a capture appends each packet to one
//! buffer it owns and hands the buffer to the file in large writes. Nothing is allocated
//! per packet (the buffer only grows when the caller lets it run full), and the bytes are
//! exactly what [`PcapWriter`](crate::PcapWriter) and [`PcapngWriter`](crate::PcapngWriter)
//! write for the same packet (EPBs without options), little-endian.

use std::io;

use crate::read::{pad4, BT_EPB};
use crate::ts::TsResolution;
use crate::write::{invalid, PcapPrecision};

/// One packet to encode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecordRef<'a> {
    /// ns since the Unix epoch.
    pub ts_ns: u64,
    /// Length on the wire; raised to the captured length if smaller.
    pub orig_len: u32,
    /// The captured bytes; cut to the encoder's snap length.
    pub data: &'a [u8],
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Pcap(PcapPrecision),
    Pcapng { iface: u32, tsresol: TsResolution },
}

/// Encodes the packet records of one pcap file or of one pcapng interface.
///
/// Get one from the writer that wrote the file header
/// ([`PcapWriter::record_encoder`](crate::PcapWriter::record_encoder),
/// [`PcapngWriter::record_encoder`](crate::PcapngWriter::record_encoder)) or build it from
/// the header's parameters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecordEncoder {
    kind: Kind,
    snaplen: u32,
}

impl RecordEncoder {
    /// Records of a classic pcap file with `precision` and `snaplen` (0: no cut).
    pub fn pcap(precision: PcapPrecision, snaplen: u32) -> RecordEncoder {
        RecordEncoder {
            kind: Kind::Pcap(precision),
            snaplen,
        }
    }

    /// Enhanced packet blocks of pcapng interface `iface` (its `if_tsresol` and snap
    /// length, 0: no cut). Fails on a resolution finer than a timestamp can hold.
    pub fn pcapng(iface: u32, tsresol: TsResolution, snaplen: u32) -> io::Result<RecordEncoder> {
        if tsresol.units_per_second().is_none() {
            return Err(invalid("timestamp resolution finer than 2^-63 or 10^-19 s"));
        }
        Ok(RecordEncoder {
            kind: Kind::Pcapng { iface, tsresol },
            snaplen,
        })
    }

    /// Appends one record to `buf`; returns the bytes appended. On an error (a timestamp
    /// the format cannot hold, a packet over 4 GiB) nothing is appended.
    pub fn encode(
        &self,
        buf: &mut Vec<u8>,
        ts_ns: u64,
        orig_len: u32,
        data: &[u8],
    ) -> io::Result<usize> {
        let data = if self.snaplen != 0 && data.len() > self.snaplen as usize {
            &data[..self.snaplen as usize]
        } else {
            data
        };
        let caplen = u32::try_from(data.len()).map_err(|_| invalid("packet longer than 4 GiB"))?;
        let orig_len = orig_len.max(caplen);
        match self.kind {
            Kind::Pcap(precision) => {
                let h = pcap_record_header(precision, ts_ns, caplen, orig_len)?;
                buf.reserve(h.len() + data.len());
                buf.extend_from_slice(&h);
                buf.extend_from_slice(data);
                Ok(h.len() + data.len())
            }
            Kind::Pcapng { iface, tsresol } => {
                let units = tsresol
                    .ns_to_units(ts_ns)
                    .ok_or_else(|| invalid("timestamp overflows the interface resolution"))?;
                let pad = pad4(data.len()) - data.len();
                let total = EPB_HEADER_BYTES + data.len() + pad + 4;
                let total32 =
                    u32::try_from(total).map_err(|_| invalid("block longer than 4 GiB"))?;
                buf.reserve(total);
                buf.extend_from_slice(&epb_header(total32, iface, units, caplen, orig_len));
                buf.extend_from_slice(data);
                buf.extend_from_slice(&[0u8; 3][..pad]);
                buf.extend_from_slice(&total32.to_le_bytes());
                Ok(total)
            }
        }
    }

    /// Appends the records of `packets`, in order; returns the bytes appended. Reserves
    /// for the whole batch once when the iterator knows its length. On an error the
    /// records before the failing one stay in `buf`.
    pub fn encode_batch<'a, I>(&self, buf: &mut Vec<u8>, packets: I) -> io::Result<usize>
    where
        I: IntoIterator<Item = RecordRef<'a>>,
        I::IntoIter: Clone,
    {
        let it = packets.into_iter();
        let (lo, hi) = it.size_hint();
        if hi == Some(lo) {
            let need: usize = it.clone().map(|p| self.max_record_len(p.data.len())).sum();
            buf.reserve(need);
        }
        let mut n = 0;
        for p in it {
            n += self.encode(buf, p.ts_ns, p.orig_len, p.data)?;
        }
        Ok(n)
    }

    /// The most bytes a record of `len` captured bytes takes (before the snap length cut).
    pub fn max_record_len(&self, len: usize) -> usize {
        let len = if self.snaplen != 0 {
            len.min(self.snaplen as usize)
        } else {
            len
        };
        match self.kind {
            Kind::Pcap(_) => PCAP_RECORD_HEADER_BYTES + len,
            Kind::Pcapng { .. } => EPB_HEADER_BYTES + pad4(len) + 4,
        }
    }
}

/// Bytes of a classic pcap record header.
pub(crate) const PCAP_RECORD_HEADER_BYTES: usize = 16;
/// Bytes of an EPB before the packet data.
pub(crate) const EPB_HEADER_BYTES: usize = 28;

/// A classic pcap record header; fails after 2106 (32-bit seconds).
pub(crate) fn pcap_record_header(
    precision: PcapPrecision,
    ts_ns: u64,
    caplen: u32,
    orig_len: u32,
) -> io::Result<[u8; PCAP_RECORD_HEADER_BYTES]> {
    let sec = u32::try_from(ts_ns / 1_000_000_000)
        .map_err(|_| invalid("timestamp after 2106 does not fit classic pcap"))?;
    let ns = (ts_ns % 1_000_000_000) as u32;
    let frac = match precision {
        PcapPrecision::Micro => ns / 1000,
        PcapPrecision::Nano => ns,
    };
    let mut h = [0u8; PCAP_RECORD_HEADER_BYTES];
    h[..4].copy_from_slice(&sec.to_le_bytes());
    h[4..8].copy_from_slice(&frac.to_le_bytes());
    h[8..12].copy_from_slice(&caplen.to_le_bytes());
    h[12..].copy_from_slice(&orig_len.to_le_bytes());
    Ok(h)
}

/// The fixed part of an enhanced packet block of `total` bytes.
pub(crate) fn epb_header(
    total: u32,
    iface: u32,
    units: u64,
    caplen: u32,
    orig_len: u32,
) -> [u8; EPB_HEADER_BYTES] {
    let mut h = [0u8; EPB_HEADER_BYTES];
    h[..4].copy_from_slice(&BT_EPB.to_le_bytes());
    h[4..8].copy_from_slice(&total.to_le_bytes());
    h[8..12].copy_from_slice(&iface.to_le_bytes());
    h[12..16].copy_from_slice(&((units >> 32) as u32).to_le_bytes());
    h[16..20].copy_from_slice(&(units as u32).to_le_bytes());
    h[20..24].copy_from_slice(&caplen.to_le_bytes());
    h[24..28].copy_from_slice(&orig_len.to_le_bytes());
    h
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{PcapReader, PcapWriter, PcapngWriter, LINKTYPE_ETHERNET};

    const TS: u64 = 1_700_000_000_123_456_789;
    const DATA: [u8; 5] = [0xde, 0xad, 0xbe, 0xef, 0x01];

    fn one(e: &RecordEncoder) -> Vec<u8> {
        let mut b = Vec::new();
        let n = e.encode(&mut b, TS, 60, &DATA).unwrap();
        assert_eq!(n, b.len());
        assert_eq!(n, e.max_record_len(DATA.len()));
        b
    }

    #[test]
    fn pcap_record_bytes_ns_and_us() {
        #[rustfmt::skip]
        let want: Vec<u8> = vec![
            0x00, 0xf1, 0x53, 0x65, 0x15, 0xcd, 0x5b, 0x07, 5, 0, 0, 0, 60, 0, 0, 0,
            0xde, 0xad, 0xbe, 0xef, 0x01,
        ];
        assert_eq!(one(&RecordEncoder::pcap(PcapPrecision::Nano, 0)), want);
        #[rustfmt::skip]
        let want: Vec<u8> = vec![
            0x00, 0xf1, 0x53, 0x65, 0x40, 0xe2, 0x01, 0x00, 5, 0, 0, 0, 60, 0, 0, 0,
            0xde, 0xad, 0xbe, 0xef, 0x01,
        ];
        assert_eq!(one(&RecordEncoder::pcap(PcapPrecision::Micro, 0)), want);
    }

    #[test]
    fn epb_bytes_ns_and_us() {
        let e = RecordEncoder::pcapng(0, TsResolution::NANO, 0).unwrap();
        #[rustfmt::skip]
        let want: Vec<u8> = vec![
            6, 0, 0, 0, 40, 0, 0, 0, 0, 0, 0, 0,
            0xfe, 0x9c, 0x97, 0x17, 0x15, 0xcd, 0x85, 0x3d, 5, 0, 0, 0, 60, 0, 0, 0,
            0xde, 0xad, 0xbe, 0xef, 0x01, 0, 0, 0, 40, 0, 0, 0,
        ];
        assert_eq!(one(&e), want);
        let e = RecordEncoder::pcapng(1, TsResolution::MICRO, 0).unwrap();
        #[rustfmt::skip]
        let want: Vec<u8> = vec![
            6, 0, 0, 0, 40, 0, 0, 0, 1, 0, 0, 0,
            0x24, 0x0a, 0x06, 0x00, 0x40, 0x22, 0x20, 0x18, 5, 0, 0, 0, 60, 0, 0, 0,
            0xde, 0xad, 0xbe, 0xef, 0x01, 0, 0, 0, 40, 0, 0, 0,
        ];
        assert_eq!(one(&e), want);
    }

    #[test]
    fn snaplen_cut_and_orig_len_raised() {
        let mut b = Vec::new();
        let e = RecordEncoder::pcap(PcapPrecision::Nano, 4);
        e.encode(&mut b, 0, 0, &DATA).unwrap();
        assert_eq!(b[8..16], [4, 0, 0, 0, 4, 0, 0, 0]);
        assert_eq!(b[16..], DATA[..4]);
        let e = RecordEncoder::pcapng(0, TsResolution::NANO, 4).unwrap();
        b.clear();
        e.encode(&mut b, 0, 60, &DATA).unwrap();
        assert_eq!(b.len(), 28 + 4 + 4);
        assert_eq!(b[20..28], [4, 0, 0, 0, 60, 0, 0, 0]);
    }

    #[test]
    fn errors_append_nothing() {
        let mut b = vec![1u8];
        let e = RecordEncoder::pcap(PcapPrecision::Micro, 0);
        assert!(e.encode(&mut b, u64::MAX, 0, &DATA).is_err(), "past 2106");
        let e = RecordEncoder::pcapng(0, TsResolution::Decimal(12), 0).unwrap();
        assert!(
            e.encode(&mut b, u64::MAX, 0, &DATA).is_err(),
            "past 2^64 ps"
        );
        assert_eq!(b, [1]);
        assert!(RecordEncoder::pcapng(0, TsResolution::Decimal(20), 0).is_err());
    }

    fn packets() -> Vec<(u64, u32, Vec<u8>)> {
        (0..40u64)
            .map(|i| {
                let len = (i * 53 % 1515) as usize;
                let data = (0..len).map(|j| ((j as u64 * 7) ^ i) as u8).collect();
                (TS + i * 1_001_003, len as u32 + (i % 2) as u32, data)
            })
            .collect()
    }

    fn refs(p: &[(u64, u32, Vec<u8>)]) -> impl Iterator<Item = RecordRef<'_>> + Clone {
        p.iter().map(|(ts_ns, orig_len, data)| RecordRef {
            ts_ns: *ts_ns,
            orig_len: *orig_len,
            data,
        })
    }

    /// A batch after the writer's header blocks: the same bytes the writer writes,
    /// encoded without growing a buffer sized by `max_record_len`, and read back exactly.
    #[test]
    fn batches_match_the_writers_and_read_back() {
        let pk = packets();
        for prec in [PcapPrecision::Nano, PcapPrecision::Micro] {
            let mut w = PcapWriter::new(Vec::new(), 1, 1000, prec).unwrap();
            let e = w.record_encoder();
            let mut file = w.get_ref().clone();
            for (ts, orig, data) in &pk {
                w.write_packet(*ts, *orig, data).unwrap();
            }
            let need: usize = pk.iter().map(|p| e.max_record_len(p.2.len())).sum();
            let mut batch = Vec::with_capacity(need);
            let n = e.encode_batch(&mut batch, refs(&pk)).unwrap();
            assert_eq!((n, batch.len(), batch.capacity()), (need, need, need));
            file.extend_from_slice(&batch);
            assert_eq!(file, w.into_inner().unwrap());
            read_back(&file, &pk, 1000, prec == PcapPrecision::Micro);
        }
        for tsresol in [TsResolution::NANO, TsResolution::MICRO] {
            let mut w = PcapngWriter::new(Vec::new()).unwrap();
            let mut o = crate::InterfaceOptions::new("eth0", LINKTYPE_ETHERNET, 1000);
            o.tsresol = tsresol;
            let id = w.add_interface_with(&o).unwrap();
            let e = w.record_encoder(id).unwrap();
            let mut file = w.get_ref().clone();
            for (ts, orig, data) in &pk {
                w.write_packet(id, *ts, *orig, data).unwrap();
            }
            let head = file.len();
            let n = e.encode_batch(&mut file, refs(&pk)).unwrap();
            assert_eq!(n, file.len() - head);
            assert_eq!(file, w.into_inner().unwrap());
            read_back(&file, &pk, 1000, tsresol == TsResolution::MICRO);
        }
    }

    fn read_back(file: &[u8], pk: &[(u64, u32, Vec<u8>)], snap: usize, micro: bool) {
        let mut r = PcapReader::new(file).unwrap();
        for (ts, orig, data) in pk {
            let p = r.next_packet().unwrap().unwrap();
            let want_ts = if micro { ts / 1000 * 1000 } else { *ts };
            let cut = &data[..data.len().min(snap)];
            assert_eq!((p.ts_ns, p.data), (want_ts, cut));
            assert_eq!(p.orig_len, (*orig).max(cut.len() as u32));
        }
        assert!(r.next_packet().unwrap().is_none());
    }
}

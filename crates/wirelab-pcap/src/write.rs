//! Writers: pcapng (enhanced packet blocks, interface statistics) and classic pcap.
//!
//! Both write little-endian. Wrap the sink in a `BufWriter`: each packet is two or three
//! `write_all` calls, and nothing is allocated per packet after warm-up.

use std::io::{self, Write};

use crate::encode::{epb_header, pcap_record_header, RecordEncoder, EPB_HEADER_BYTES};
use crate::read::StatsCounters;
use crate::read::{
    pad4, BT_IDB, BT_ISB, BT_SHB, BYTE_ORDER_MAGIC, PCAP_MAGIC_MICRO, PCAP_MAGIC_NANO,
};
use crate::ts::TsResolution;

/// `shb_userappl` written by default: `"wirelab <crate version>"`.
pub const DEFAULT_USERAPPL: &str = concat!("wirelab ", env!("CARGO_PKG_VERSION"));

/// Options of the section header block.
#[derive(Debug, Clone, Copy)]
pub struct SectionOptions<'a> {
    /// `opt_comment`.
    pub comment: Option<&'a str>,
    /// `shb_hardware`.
    pub hardware: Option<&'a str>,
    /// `shb_os`.
    pub os: Option<&'a str>,
    /// `shb_userappl` (default [`DEFAULT_USERAPPL`]).
    pub userappl: Option<&'a str>,
}

impl Default for SectionOptions<'_> {
    fn default() -> Self {
        SectionOptions {
            comment: None,
            hardware: None,
            os: None,
            userappl: Some(DEFAULT_USERAPPL),
        }
    }
}

/// An interface to describe with an interface description block.
#[derive(Debug, Clone, Copy)]
pub struct InterfaceOptions<'a> {
    /// `if_name`.
    pub name: Option<&'a str>,
    /// `if_description`.
    pub description: Option<&'a str>,
    /// `if_os`.
    pub os: Option<&'a str>,
    /// `opt_comment`.
    pub comment: Option<&'a str>,
    /// LINKTYPE_* value.
    pub linktype: u16,
    /// Snapshot length; 0 = unlimited. Longer packets are truncated to it when written.
    pub snaplen: u32,
    /// Timestamp resolution (default nanoseconds, `if_tsresol` 9).
    pub tsresol: TsResolution,
}

impl<'a> InterfaceOptions<'a> {
    /// A named interface with nanosecond timestamps.
    pub fn new(name: &'a str, linktype: u16, snaplen: u32) -> Self {
        InterfaceOptions {
            name: Some(name),
            description: None,
            os: None,
            comment: None,
            linktype,
            snaplen,
            tsresol: TsResolution::NANO,
        }
    }
}

/// Options of one enhanced packet block.
#[derive(Debug, Clone, Copy, Default)]
pub struct PacketOptions<'a> {
    /// `opt_comment`.
    pub comment: Option<&'a str>,
    /// `epb_flags` (direction, reception type, FCS length, errors).
    pub flags: Option<u32>,
    /// `epb_dropcount`: packets lost between this packet and the previous one.
    pub dropcount: Option<u64>,
}

#[derive(Debug, Clone, Copy)]
struct WIface {
    tsresol: TsResolution,
    snaplen: u32,
}

/// Writes one pcapng section: a section header block, then interface description blocks,
/// enhanced packet blocks and interface statistics blocks, all little-endian.
#[derive(Debug)]
pub struct PcapngWriter<W: Write> {
    w: W,
    head: Vec<u8>,
    tail: Vec<u8>,
    ifaces: Vec<WIface>,
}

impl<W: Write> PcapngWriter<W> {
    /// Start a file with a section header naming wirelab as the writing application.
    pub fn new(w: W) -> io::Result<Self> {
        Self::with_section(w, &SectionOptions::default())
    }

    /// Start a file with the given section header options.
    pub fn with_section(w: W, opts: &SectionOptions<'_>) -> io::Result<Self> {
        let mut s = PcapngWriter {
            w,
            head: Vec::with_capacity(64),
            tail: Vec::with_capacity(64),
            ifaces: Vec::new(),
        };
        let b = &mut s.head;
        b.clear();
        begin(b, BT_SHB);
        put32(b, BYTE_ORDER_MAGIC);
        put16(b, 1);
        put16(b, 0);
        put64(b, u64::MAX); // section length -1: not given
        let mut any = false;
        any |= opt_str(b, 1, opts.comment)?;
        any |= opt_str(b, 2, opts.hardware)?;
        any |= opt_str(b, 3, opts.os)?;
        any |= opt_str(b, 4, opts.userappl)?;
        finish(b, any)?;
        s.w.write_all(&s.head)?;
        Ok(s)
    }

    /// Describe a named interface with nanosecond timestamps; returns its id.
    pub fn add_interface(&mut self, name: &str, linktype: u16, snaplen: u32) -> io::Result<u32> {
        self.add_interface_with(&InterfaceOptions::new(name, linktype, snaplen))
    }

    /// Describe an interface; returns its id for [`write_packet`](Self::write_packet).
    pub fn add_interface_with(&mut self, o: &InterfaceOptions<'_>) -> io::Result<u32> {
        if o.tsresol.units_per_second().is_none() {
            return Err(invalid("timestamp resolution finer than 2^-63 or 10^-19 s"));
        }
        let id = u32::try_from(self.ifaces.len()).map_err(|_| invalid("too many interfaces"))?;
        let b = &mut self.head;
        b.clear();
        begin(b, BT_IDB);
        put16(b, o.linktype);
        put16(b, 0);
        put32(b, o.snaplen);
        let mut any = false;
        any |= opt_str(b, 1, o.comment)?;
        any |= opt_str(b, 2, o.name)?;
        any |= opt_str(b, 3, o.description)?;
        if o.tsresol != TsResolution::MICRO {
            opt_bytes(b, 9, &[o.tsresol.to_option_byte()])?;
            any = true;
        }
        any |= opt_str(b, 12, o.os)?;
        finish(b, any)?;
        self.w.write_all(&self.head)?;
        self.ifaces.push(WIface {
            tsresol: o.tsresol,
            snaplen: o.snaplen,
        });
        Ok(id)
    }

    /// Write one packet as an enhanced packet block. `ts_ns` is ns since the Unix epoch;
    /// `data` longer than the interface's snaplen is truncated; `orig_len` is raised to
    /// `data.len()` if smaller.
    pub fn write_packet(
        &mut self,
        iface: u32,
        ts_ns: u64,
        orig_len: u32,
        data: &[u8],
    ) -> io::Result<()> {
        self.write_packet_with(iface, ts_ns, orig_len, data, &PacketOptions::default())
    }

    /// [`write_packet`](Self::write_packet) with a comment, flags or drop count.
    pub fn write_packet_with(
        &mut self,
        iface: u32,
        ts_ns: u64,
        orig_len: u32,
        data: &[u8],
        o: &PacketOptions<'_>,
    ) -> io::Result<()> {
        let ifc = self.iface(iface)?;
        let units = ifc
            .tsresol
            .ns_to_units(ts_ns)
            .ok_or_else(|| invalid("timestamp overflows the interface resolution"))?;
        let mut data = data;
        if ifc.snaplen != 0 && data.len() > ifc.snaplen as usize {
            data = &data[..ifc.snaplen as usize];
        }
        let caplen = u32::try_from(data.len()).map_err(|_| invalid("packet longer than 4 GiB"))?;
        let orig_len = orig_len.max(caplen);

        let t = &mut self.tail;
        t.clear();
        t.resize(pad4(data.len()) - data.len(), 0);
        let mut any = false;
        any |= opt_str(t, 1, o.comment)?;
        if let Some(f) = o.flags {
            opt_bytes(t, 2, &f.to_le_bytes())?;
            any = true;
        }
        if let Some(d) = o.dropcount {
            opt_bytes(t, 4, &d.to_le_bytes())?;
            any = true;
        }
        if any {
            put32(t, 0);
        }
        let total = EPB_HEADER_BYTES + data.len() + t.len() + 4;
        let total = u32::try_from(total).map_err(|_| invalid("block longer than 4 GiB"))?;
        put32(t, total);

        self.w
            .write_all(&epb_header(total, iface, units, caplen, orig_len))?;
        self.w.write_all(data)?;
        self.w.write_all(&self.tail)
    }

    /// An encoder of enhanced packet blocks (without options) for interface `iface`, for
    /// writers that batch records into their own buffer after this writer's header blocks.
    pub fn record_encoder(&self, iface: u32) -> io::Result<RecordEncoder> {
        let ifc = self.iface(iface)?;
        RecordEncoder::pcapng(iface, ifc.tsresol, ifc.snaplen)
    }

    /// Write an interface statistics block for `iface` at `ts_ns` with the given counters
    /// (those set to `None` are left out).
    pub fn write_interface_stats(
        &mut self,
        iface: u32,
        ts_ns: u64,
        c: &StatsCounters,
    ) -> io::Result<()> {
        let ifc = self.iface(iface)?;
        let conv = |ns: u64| {
            ifc.tsresol
                .ns_to_units(ns)
                .ok_or_else(|| invalid("timestamp overflows the interface resolution"))
        };
        let units = conv(ts_ns)?;
        let b = &mut self.head;
        b.clear();
        begin(b, BT_ISB);
        put32(b, iface);
        put32(b, (units >> 32) as u32);
        put32(b, units as u32);
        let mut any = false;
        for (code, ts) in [(2u16, c.start_ns), (3, c.end_ns)] {
            if let Some(ns) = ts {
                let u = conv(ns)?;
                let mut v = [0u8; 8];
                v[..4].copy_from_slice(&((u >> 32) as u32).to_le_bytes());
                v[4..].copy_from_slice(&(u as u32).to_le_bytes());
                opt_bytes(b, code, &v)?;
                any = true;
            }
        }
        for (code, val) in [
            (4u16, c.ifrecv),
            (5, c.ifdrop),
            (6, c.filter_accept),
            (7, c.osdrop),
            (8, c.usrdeliv),
        ] {
            if let Some(v) = val {
                opt_bytes(b, code, &v.to_le_bytes())?;
                any = true;
            }
        }
        finish(b, any)?;
        self.w.write_all(&self.head)
    }

    /// Flush the sink.
    pub fn flush(&mut self) -> io::Result<()> {
        self.w.flush()
    }

    /// The sink.
    pub fn get_ref(&self) -> &W {
        &self.w
    }

    /// The sink, mutably (writing to it directly corrupts the file).
    pub fn get_mut(&mut self) -> &mut W {
        &mut self.w
    }

    /// Flush and give back the sink.
    pub fn into_inner(mut self) -> io::Result<W> {
        self.w.flush()?;
        Ok(self.w)
    }

    fn iface(&self, id: u32) -> io::Result<WIface> {
        self.ifaces
            .get(id as usize)
            .copied()
            .ok_or_else(|| invalid("unknown interface id"))
    }
}

/// Timestamp precision of a classic pcap file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PcapPrecision {
    /// Microseconds (magic 0xa1b2c3d4); nanoseconds are truncated.
    Micro,
    /// Nanoseconds (magic 0xa1b23c4d).
    Nano,
}

/// Writes classic pcap (version 2.4, little-endian).
#[derive(Debug)]
pub struct PcapWriter<W: Write> {
    w: W,
    snaplen: u32,
    precision: PcapPrecision,
}

impl<W: Write> PcapWriter<W> {
    /// Write the file header. `linktype` is the LINKTYPE_* value (the full 32-bit field).
    pub fn new(
        mut w: W,
        linktype: u32,
        snaplen: u32,
        precision: PcapPrecision,
    ) -> io::Result<Self> {
        let magic = match precision {
            PcapPrecision::Micro => PCAP_MAGIC_MICRO,
            PcapPrecision::Nano => PCAP_MAGIC_NANO,
        };
        let mut h = Vec::with_capacity(24);
        put32(&mut h, magic);
        put16(&mut h, 2);
        put16(&mut h, 4);
        put32(&mut h, 0);
        put32(&mut h, 0);
        put32(&mut h, snaplen);
        put32(&mut h, linktype);
        w.write_all(&h)?;
        Ok(PcapWriter {
            w,
            snaplen,
            precision,
        })
    }

    /// Write one record. `ts_ns` is ns since the Unix epoch and must be before 2106
    /// (32-bit seconds); `data` longer than the snaplen is truncated (snaplen 0: never);
    /// `orig_len` is raised to `data.len()` if smaller.
    pub fn write_packet(&mut self, ts_ns: u64, orig_len: u32, data: &[u8]) -> io::Result<()> {
        let mut data = data;
        if self.snaplen != 0 && data.len() > self.snaplen as usize {
            data = &data[..self.snaplen as usize];
        }
        let caplen = u32::try_from(data.len()).map_err(|_| invalid("packet longer than 4 GiB"))?;
        let h = pcap_record_header(self.precision, ts_ns, caplen, orig_len.max(caplen))?;
        self.w.write_all(&h)?;
        self.w.write_all(data)
    }

    /// An encoder of this file's records, for writers that batch records into their own
    /// buffer after this writer's file header.
    pub fn record_encoder(&self) -> RecordEncoder {
        RecordEncoder::pcap(self.precision, self.snaplen)
    }

    /// Flush the sink.
    pub fn flush(&mut self) -> io::Result<()> {
        self.w.flush()
    }

    /// The sink.
    pub fn get_ref(&self) -> &W {
        &self.w
    }

    /// Flush and give back the sink.
    pub fn into_inner(mut self) -> io::Result<W> {
        self.w.flush()?;
        Ok(self.w)
    }
}

pub(crate) fn invalid(msg: &'static str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, msg)
}

fn put16(b: &mut Vec<u8>, v: u16) {
    b.extend_from_slice(&v.to_le_bytes());
}

fn put32(b: &mut Vec<u8>, v: u32) {
    b.extend_from_slice(&v.to_le_bytes());
}

fn put64(b: &mut Vec<u8>, v: u64) {
    b.extend_from_slice(&v.to_le_bytes());
}

/// Block type and a length placeholder.
fn begin(b: &mut Vec<u8>, btype: u32) {
    put32(b, btype);
    put32(b, 0);
}

/// End of options (if any), then patch the length and append the trailer.
fn finish(b: &mut Vec<u8>, any_options: bool) -> io::Result<()> {
    if any_options {
        put32(b, 0);
    }
    let total = u32::try_from(b.len() + 4).map_err(|_| invalid("block longer than 4 GiB"))?;
    b[4..8].copy_from_slice(&total.to_le_bytes());
    put32(b, total);
    Ok(())
}

fn opt_bytes(b: &mut Vec<u8>, code: u16, v: &[u8]) -> io::Result<()> {
    let len = u16::try_from(v.len()).map_err(|_| invalid("option longer than 65535 bytes"))?;
    put16(b, code);
    put16(b, len);
    b.extend_from_slice(v);
    b.resize(b.len() + pad4(v.len()) - v.len(), 0);
    Ok(())
}

fn opt_str(b: &mut Vec<u8>, code: u16, s: Option<&str>) -> io::Result<bool> {
    match s {
        Some(s) => opt_bytes(b, code, s.as_bytes()).map(|()| true),
        None => Ok(false),
    }
}

//! The record-file reader over arbitrary bytes, read whole and through a
//! reader that returns a few bytes per call (as a pipe or a slow disk does):
//! both give the same header, records and counts; every byte after the
//! header is a whole record, a skipped one (unknown kind) or the counted
//! partial tail. Nothing may panic or over-allocate.

use std::io::Read;
use wirelab_wire::record::{Record, RecordFileHeader, RecordReader, RECORD_LEN};

/// Returns at most `step` bytes per read call.
struct Trickle<'a> {
    data: &'a [u8],
    step: usize,
}

impl Read for Trickle<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = buf.len().min(self.step).min(self.data.len());
        buf[..n].copy_from_slice(&self.data[..n]);
        self.data = &self.data[n..];
        Ok(n)
    }
}

fn read_all<R: Read>(r: R) -> Option<(RecordFileHeader, Vec<Record>, u64, usize)> {
    let mut r = RecordReader::new(r).ok()?;
    let recs: Vec<Record> = r
        .by_ref()
        .map(|x| x.expect("reading from memory"))
        .collect();
    assert!(r.next().is_none(), "reader not fused");
    Some((r.header().clone(), recs, r.skipped, r.trailing_bytes))
}

/// The target's body: panics when a promise above is broken.
pub fn run(data: &[u8]) {
    let whole = read_all(data);
    let step = 1 + data.first().map_or(0, |&k| usize::from(k % 13));
    let trickled = read_all(Trickle { data, step });
    assert_eq!(whole, trickled);
    let parsed = RecordFileHeader::parse(data).ok();
    assert_eq!(parsed.as_ref().map(|p| &p.0), whole.as_ref().map(|w| &w.0));
    if let (Some((_, hlen)), Some((h, recs, skipped, trailing))) = (parsed, whole) {
        let body = data.len() - hlen;
        assert_eq!(trailing, body % RECORD_LEN);
        assert_eq!(recs.len() as u64 + skipped, (body / RECORD_LEN) as u64);
        for r in &recs {
            assert_eq!(Record::from_bytes(&r.to_bytes()), Some(*r));
        }
        assert_eq!(RecordFileHeader::parse(&h.to_bytes()).unwrap().0, h);
    }
}

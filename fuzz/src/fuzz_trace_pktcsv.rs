//! The pkt-csv reader over arbitrary bytes, alone and behind the format
//! converter: it ends within one item per input byte, and what it reads
//! survives a write/read round trip. Nothing may panic.

use wirelab_trace::pktcsv::{PktCsvReader, PktCsvWriter};
use wirelab_trace::{convert, Format, NegPolicy, Record, TraceOptions};

/// The target's body: panics when a promise above is broken.
pub fn run(data: &[u8]) {
    let items: Vec<_> = PktCsvReader::new(data, NegPolicy::Error)
        .take(data.len() + 2)
        .collect();
    assert!(items.len() <= data.len() + 1);
    let ok: Vec<Record> = items.into_iter().filter_map(Result::ok).collect();
    if !ok.is_empty() {
        let mut w = PktCsvWriter::new(Vec::new()).expect("Vec output");
        for r in &ok {
            w.write(r).expect("a read record is writable");
        }
        let text = w.finish().expect("Vec output");
        let back: Vec<Record> = PktCsvReader::new(&text[..], NegPolicy::Error)
            .map(|r| r.expect("written rows read back"))
            .collect();
        assert_eq!(back, ok);
    }
    let o = TraceOptions::default();
    for to in [
        Format::NistBin,
        Format::NistTxt,
        Format::Delays,
        Format::PktCsv,
    ] {
        let _ = convert(Format::PktCsv, &o, data, to, &o, std::io::sink());
    }
}

//! nist-bin (both byte orders) and nist-txt readers over arbitrary bytes.
//! nist-bin yields one item per 4-byte word plus one for a short tail or
//! an empty input; every action read survives a write/read round trip in
//! both formats. Nothing may panic.

use wirelab_trace::nist::{NistBinReader, NistBinWriter, NistTxtReader, NistTxtWriter};
use wirelab_trace::{Action, ByteOrder, NegPolicy};

fn round_trip(actions: &[Action]) {
    for order in [ByteOrder::Little, ByteOrder::Big] {
        let mut w = NistBinWriter::new(Vec::new(), order);
        for a in actions {
            w.write(a).expect("a read action is writable");
        }
        let bytes = w.finish().expect("Vec output");
        let back: Vec<Action> = NistBinReader::new(&bytes[..], order, NegPolicy::Error)
            .map(|r| r.expect("written words read back"))
            .collect();
        assert_eq!(back, actions);
    }
    let mut w = NistTxtWriter::new(Vec::new());
    for a in actions {
        w.write(a).expect("a read action is writable");
    }
    let text = w.finish().expect("Vec output");
    let back: Vec<Action> = NistTxtReader::new(&text[..], NegPolicy::Error)
        .map(|r| r.expect("written lines read back"))
        .collect();
    assert_eq!(back, actions);
}

/// The target's body: panics when a promise above is broken.
pub fn run(data: &[u8]) {
    for (order, neg) in [
        (ByteOrder::Little, NegPolicy::Error),
        (ByteOrder::Big, NegPolicy::Zero),
    ] {
        let items: Vec<_> = NistBinReader::new(data, order, neg)
            .take(data.len() + 2)
            .collect();
        // `%`, not is_multiple_of: the workspace's MSRV is 1.82.
        #[allow(clippy::manual_is_multiple_of)]
        let want = data.len() / 4 + usize::from(data.len() % 4 != 0 || data.is_empty());
        assert_eq!(items.len(), want);
        let ok: Vec<Action> = items.into_iter().filter_map(Result::ok).collect();
        if !ok.is_empty() {
            round_trip(&ok);
        }
    }
    for neg in [NegPolicy::Error, NegPolicy::Zero] {
        // Each item consumes at least one byte (a line), plus the end check.
        let items: Vec<_> = NistTxtReader::new(data, neg).take(data.len() + 2).collect();
        assert!(items.len() <= data.len() + 1);
        let ok: Vec<Action> = items.into_iter().filter_map(Result::ok).collect();
        if !ok.is_empty() {
            round_trip(&ok);
        }
    }
}

//! The delays reader over arbitrary bytes: it ends within one item per
//! input byte, and what it reads survives a write/read round trip (the
//! writer keeps every nanosecond). Nothing may panic.

use wirelab_trace::delays::{DelaysReader, DelaysWriter};
use wirelab_trace::{Action, NegPolicy};

/// The target's body: panics when a promise above is broken.
pub fn run(data: &[u8]) {
    for neg in [NegPolicy::Error, NegPolicy::Zero] {
        let items: Vec<_> = DelaysReader::new(data, neg).take(data.len() + 2).collect();
        assert!(items.len() <= data.len() + 1);
        let ok: Vec<Action> = items.into_iter().filter_map(Result::ok).collect();
        if ok.is_empty() {
            continue;
        }
        let mut w = DelaysWriter::new(Vec::new());
        for a in &ok {
            w.write(a).expect("the delays reader yields no duplicates");
        }
        let text = w.finish().expect("Vec output");
        let back: Vec<Action> = DelaysReader::new(&text[..], NegPolicy::Error)
            .map(|r| r.expect("written lines read back"))
            .collect();
        assert_eq!(back, ok);
    }
}

//! The wirelab probe header parser over arbitrary bytes: never panics; a
//! probe that parses emits back to a header that parses to the same value;
//! stamping and echo replies stay inside the buffer.

use wirelab_wire::probe::{make_echo_reply, stamp_tx_ns};
use wirelab_wire::{EchoTimes, ProbeRepr};

/// The target's body: panics when a promise above is broken.
pub fn run(data: &[u8]) {
    if let Ok(p) = ProbeRepr::parse(data) {
        let mut b = [0u8; 64];
        let n = p.emit(&mut b).expect("a parsed probe fits 64 bytes");
        assert_eq!(n, p.header_len());
        assert_eq!(
            ProbeRepr::parse(&b[..n]).expect("an emitted probe parses"),
            p
        );
    }
    let mut b = data.to_vec();
    let _ = stamp_tx_ns(&mut b, 7);
    let len = data.first().map_or(0, |&k| usize::from(k));
    if let Some(n) = make_echo_reply(&mut b, len, EchoTimes::default()) {
        assert!(n <= b.len());
    }
}

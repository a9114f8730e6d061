//! The LUNA probe parser (the 21-byte layout of the LUNA thesis) over arbitrary
//! bytes: never panics, and a probe that parses re-emits to the same bytes.

use wirelab_wire::luna::{stamp_tx_ns, LunaProbe, LUNA_LEN};

/// The target's body: panics when a promise above is broken.
pub fn run(data: &[u8]) {
    if let Ok(l) = LunaProbe::parse(data) {
        let mut b = [0u8; LUNA_LEN];
        assert_eq!(l.emit(&mut b), Some(LUNA_LEN));
        assert_eq!(&b[..], &data[..LUNA_LEN]);
        let _ = l.is_echo_request();
    }
    // Stamping rewrites the 16 time bytes only, and a stamped probe parses to that time.
    let mut b = data.to_vec();
    if stamp_tx_ns(&mut b, 1_700_000_000_123_456_789) {
        assert_eq!((&b[..4], &b[20..]), (&data[..4], &data[20..]));
        if let Ok(l) = LunaProbe::parse(&b) {
            assert_eq!(l.tx_ns, 1_700_000_000_123_456_789);
        }
    } else {
        assert!(data.len() < 20);
    }
}

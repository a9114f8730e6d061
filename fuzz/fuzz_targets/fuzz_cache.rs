//! The two-interface cache file reader over arbitrary bytes: wirelab's text
//! cache or tcpprep's binary one, told apart by the first bytes. Whatever
//! loads must survive a round trip through the text cache with the same
//! sides and counts. Nothing may panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use wirelab_wire::rewrite::split::SideMap;

fuzz_target!(|data: &[u8]| {
    let Ok(m) = SideMap::load(data) else { return };
    let n = m.counts();
    assert_eq!(n.total(), m.len());
    let _ = m.check_trace(m.len());
    let _ = m.side(m.len() + 1);
    let back = SideMap::load(m.to_text().as_bytes()).expect("a written text cache loads");
    assert_eq!(back.sides, m.sides);
    assert_eq!(back.counts(), n);
});

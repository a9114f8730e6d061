//! The two-interface cache file reader over arbitrary bytes: wirelab's text
//! cache or tcpprep's binary one, told apart by the first bytes. Whatever
//! loads must survive a round trip through the text cache with the same
//! sides and counts. Nothing may panic.

use wirelab_wire::rewrite::split::SideMap;

/// The target's body: panics when a promise above is broken.
pub fn run(data: &[u8]) {
    let Ok(m) = SideMap::load(data) else { return };
    let n = m.counts();
    assert_eq!(n.total(), m.len());
    let _ = m.check_trace(m.len());
    let _ = m.side(m.len() + 1);
    let back = SideMap::load(m.to_text().as_bytes()).expect("a written text cache loads");
    assert_eq!(back.sides, m.sides);
    assert_eq!(back.counts(), n);
}

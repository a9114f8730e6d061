//! The pcap/pcapng reader over arbitrary bytes (the format chosen by the
//! magic, as `replay` and `analyze` do): never panics, loops or
//! over-allocates, and reading whole or a few bytes per call agrees.
//! `fuzz_pcapng` starts every input with a valid section header to reach
//! deeper into pcapng.

/// The target's body: panics when a promise above is broken.
pub fn run(data: &[u8]) {
    super::pcap_read::check(data, data.len() as u8);
}

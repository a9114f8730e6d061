//! The pcap/pcapng reader over arbitrary bytes (the format chosen by the
//! magic, as `replay` and `analyze` do): never panics, loops or
//! over-allocates, and reading whole or a few bytes per call agrees.
//! `fuzz_pcapng` starts every input with a valid section header to reach
//! deeper into pcapng.
#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "common/pcap_read.rs"]
mod pcap_read;

fuzz_target!(|data: &[u8]| {
    pcap_read::check(data, data.len() as u8);
});

//! The fuzz targets' bodies, one module per target (`fuzz_targets/NAME.rs` calls
//! `NAME::run`), so that a stable `cargo test` can replay the corpora through the same
//! code: crates/wirelab/tests/integration/fuzz_corpus.rs includes this file and runs every file of
//! `fuzz/corpus/NAME` through [`TARGETS`]' `NAME` entry. A module's doc states the
//! promises its `run` checks; `run` panics when one is broken.
//!
//! Modules refer to each other through `super::`, never `crate::`: the corpus test
//! mounts this file as a module of its own crate.

mod pcap_read;

pub mod fuzz_agent_proto;
pub mod fuzz_analyze;
pub mod fuzz_cache;
pub mod fuzz_capture;
pub mod fuzz_control;
pub mod fuzz_genfile;
pub mod fuzz_genspec;
pub mod fuzz_headers;
pub mod fuzz_link;
pub mod fuzz_luna;
pub mod fuzz_pcap;
pub mod fuzz_pcapng;
pub mod fuzz_probe;
pub mod fuzz_record;
pub mod fuzz_rewrite;
pub mod fuzz_trace_csv;
pub mod fuzz_trace_delays;
pub mod fuzz_trace_dist;
pub mod fuzz_trace_mahimahi;
pub mod fuzz_trace_nist;
pub mod fuzz_trace_pktcsv;
pub mod fuzz_units;

/// A target's name (its fuzz_targets/ file and corpus directory) and body.
pub type Entry = (&'static str, fn(&[u8]));

/// Every target.
pub const TARGETS: &[Entry] = &[
    ("fuzz_agent_proto", fuzz_agent_proto::run),
    ("fuzz_analyze", fuzz_analyze::run),
    ("fuzz_cache", fuzz_cache::run),
    ("fuzz_capture", fuzz_capture::run),
    ("fuzz_control", fuzz_control::run),
    ("fuzz_genfile", fuzz_genfile::run),
    ("fuzz_genspec", fuzz_genspec::run),
    ("fuzz_headers", fuzz_headers::run),
    ("fuzz_link", fuzz_link::run),
    ("fuzz_luna", fuzz_luna::run),
    ("fuzz_pcap", fuzz_pcap::run),
    ("fuzz_pcapng", fuzz_pcapng::run),
    ("fuzz_probe", fuzz_probe::run),
    ("fuzz_record", fuzz_record::run),
    ("fuzz_rewrite", fuzz_rewrite::run),
    ("fuzz_trace_csv", fuzz_trace_csv::run),
    ("fuzz_trace_delays", fuzz_trace_delays::run),
    ("fuzz_trace_dist", fuzz_trace_dist::run),
    ("fuzz_trace_mahimahi", fuzz_trace_mahimahi::run),
    ("fuzz_trace_nist", fuzz_trace_nist::run),
    ("fuzz_trace_pktcsv", fuzz_trace_pktcsv::run),
    ("fuzz_units", fuzz_units::run),
];

//! The body is `wirelab_fuzz::fuzz_cache::run` (fuzz/src/fuzz_cache.rs), which the
//! workspace's corpus test (crates/wirelab/tests/integration/fuzz_corpus.rs) also runs
//! over every file of fuzz/corpus/fuzz_cache.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| wirelab_fuzz::fuzz_cache::run(data));

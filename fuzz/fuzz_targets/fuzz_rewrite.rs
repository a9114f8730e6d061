//! The body is `wirelab_fuzz::fuzz_rewrite::run` (fuzz/src/fuzz_rewrite.rs), which the
//! workspace's corpus test (crates/wirelab/tests/integration/fuzz_corpus.rs) also runs
//! over every file of fuzz/corpus/fuzz_rewrite.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| wirelab_fuzz::fuzz_rewrite::run(data));

//! The fuzz corpora as regression tests, on the stable toolchain: every file
//! of every `fuzz/corpus/NAME` goes through the body of fuzz target NAME, the
//! same function its libFuzzer binary calls (fuzz/src/NAME.rs, mounted here
//! from fuzz/src/lib.rs). A body panics when a promise it checks is broken,
//! and so this test fails. `scripts/fuzz.sh` stays the way to fuzz for long.

#[path = "../../../../fuzz/src/lib.rs"]
#[allow(dead_code)]
mod fuzz_entries;

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};

fn fuzz_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz")
}

/// The names of the entries of `dir` (files or directories), sorted.
fn names(dir: &Path, suffix: &str) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter_map(|n| n.strip_suffix(suffix).map(str::to_string))
        .collect();
    v.sort();
    v
}

/// Every target binary has an entry and a corpus, and every corpus a
/// target: a target added without its entry (or a corpus without its
/// target) is not silently left out of the replay below.
#[test]
fn every_fuzz_target_has_an_entry_and_a_corpus() {
    let mut entries: Vec<String> = fuzz_entries::TARGETS
        .iter()
        .map(|(n, _)| n.to_string())
        .collect();
    entries.sort();
    let targets: Vec<String> = names(&fuzz_dir().join("fuzz_targets"), ".rs");
    let corpora = names(&fuzz_dir().join("corpus"), "");
    assert_eq!(
        entries, targets,
        "fuzz/src/lib.rs TARGETS vs fuzz/fuzz_targets/*.rs"
    );
    assert_eq!(entries, corpora, "fuzz/src/lib.rs TARGETS vs fuzz/corpus/*");
}

/// Runs every corpus file through its target; collects every failure (the
/// target, the file and the panic's message) before failing.
#[test]
fn every_corpus_file_passes_its_fuzz_target() {
    let corpus = fuzz_dir().join("corpus");
    let mut failures = Vec::new();
    let mut files = 0usize;
    for (name, run) in fuzz_entries::TARGETS {
        let dir = corpus.join(name);
        let inputs = names(&dir, "");
        assert!(!inputs.is_empty(), "{}: an empty corpus", dir.display());
        for input in inputs {
            let path = dir.join(&input);
            let data = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            files += 1;
            if let Err(p) = catch_unwind(AssertUnwindSafe(|| run(&data))) {
                let msg = p
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                    .unwrap_or_default();
                failures.push(format!("{name} {}: {msg}", path.display()));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {files} corpus files fail:\n{}",
        failures.len(),
        failures.join("\n")
    );
    eprintln!("{files} corpus files replayed");
}

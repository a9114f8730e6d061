//! Scratch directories, command output in failure messages, JSON files,
//! a sender's schedule from its record file.

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Output;

/// A new empty directory for one test: `wl-e2e-<suite>-<name>-<pid>` in
/// the temporary directory.
pub fn scratch(suite: &str, name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("wl-e2e-{suite}-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// A command's exit and output, for an assertion's message.
pub fn text(o: &Output) -> String {
    format!(
        "exit {:?}\nstdout:\n{}\nstderr:\n{}",
        o.status.code(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// A JSON file, read whole.
pub fn json_file(p: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(p).unwrap()).unwrap()
}

/// When a sender's schedule of one probe per `interval` ns started, on its
/// clock, from its first 100 probes in its record file: min(tx − seq ·
/// interval). A probe never leaves early, so this is the start plus the
/// smallest lateness among them — one late first probe on a loaded
/// machine does not move it.
pub fn schedule_start(p: &Path, interval: u64) -> u64 {
    use wirelab_wire::record::{RecordKind, RecordReader};
    let f = std::fs::File::open(p).unwrap();
    let mut r = RecordReader::new(std::io::BufReader::new(f)).unwrap();
    let mut start = u64::MAX;
    while let Some(rec) = r.next_record().unwrap() {
        if rec.kind == RecordKind::Tx && rec.seq < 100 {
            start = start.min(rec.tx_ns - rec.seq * interval);
        }
    }
    assert!(start < u64::MAX, "no Tx record in {}", p.display());
    start
}

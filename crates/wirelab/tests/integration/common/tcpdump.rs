//! tcpdump beside a test: started once it captures, its frames counted
//! while it writes, stopped with SIGINT. Each test names its own tcpdump
//! arguments (interface, direction, snap length, buffer, filter).

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Spawns `cmd`, a tcpdump writing to `cap` (its output discarded), after
/// removing an old `cap`; returns once it captures: tcpdump creates its
/// file after it has opened the interface.
pub fn start(cmd: &mut Command, cap: &Path) -> Child {
    let _ = std::fs::remove_file(cap);
    let child = cmd
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    super::wait_for_file(cap, "tcpdump did not start", Duration::from_secs(30));
    child
}

/// Frames in the classic pcap `p` that tcpdump is still writing, in either
/// byte order (a record cut short at the end is not counted).
pub fn frames_so_far(p: &Path) -> usize {
    let b = std::fs::read(p).unwrap_or_default();
    if b.len() < 24 {
        return 0;
    }
    let le = matches!(&b[..4], [0xd4, 0xc3, 0xb2, 0xa1] | [0x4d, 0x3c, 0xb2, 0xa1]);
    let (mut off, mut n) = (24, 0);
    while off + 16 <= b.len() {
        let a: [u8; 4] = b[off + 8..off + 12].try_into().unwrap();
        let cl = if le {
            u32::from_le_bytes(a)
        } else {
            u32::from_be_bytes(a)
        } as usize;
        if off + 16 + cl > b.len() {
            break;
        }
        off += 16 + cl;
        n += 1;
    }
    n
}

/// Waits until `cap` holds at least `n` frames, at most `limit`: a missing
/// frame shows as a count that differs, not as a hang.
pub fn wait_frames(cap: &Path, n: usize, limit: Duration) {
    let t0 = Instant::now();
    while frames_so_far(cap) < n && t0.elapsed() < limit {
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Stops tcpdump `td` (SIGINT: it flushes its file) and waits for it.
pub fn stop(mut td: Child) {
    let _ = Command::new("kill")
        .args(["-INT", &td.id().to_string()])
        .status();
    let _ = td.wait();
}

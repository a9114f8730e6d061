//! `wirelab analyze` over hostile records: the input is cut into 64-byte
//! records (what a record file holds after its header), sorted by kind into
//! sender, receiver and echo records, and analysed with a window picked by
//! the first byte; emulator log records (kind `Emulated`) go through the
//! emulator log summary. The analysis crate promises no panic on any record
//! content and memory bounded per flow; the reports render as text and JSON.

use wirelab_analysis::emulog::EmuLog;
use wirelab_analysis::{analyze_run, render_text, Requested, RunRecords};
use wirelab_wire::record::{Record, RecordKind, RECORD_LEN};

/// The target's body: panics when a promise above is broken.
pub fn run(data: &[u8]) {
    let Some((&sel, rest)) = data.split_first() else {
        return;
    };
    let mut run = RunRecords::default();
    let mut emu = EmuLog::new(64);
    for c in rest.chunks_exact(RECORD_LEN) {
        let Some(r) = Record::from_bytes(c.try_into().expect("64 bytes")) else {
            continue;
        };
        match r.kind {
            RecordKind::Tx => run.tx.push(r),
            RecordKind::Rx => run.rx.push(r),
            RecordKind::EchoReply => run.echo.push(r),
            RecordKind::Emulated => emu.add(&r),
        }
    }
    run.sender_start_unix_ns = run.tx.first().map(|r| r.tx_ns.wrapping_sub(r.sched_ns));
    let window_ns = 1_000_000u64 << (sel % 11);
    if let Ok(rep) = emu.finish(|_, _| None) {
        let mut text = Vec::new();
        let _ = rep.render_text(&mut text);
        let _ = serde_json::to_string(&rep);
    }
    let Ok(summary) = analyze_run(&run, &Requested::default(), window_ns, 4096) else {
        return;
    };
    let mut text = Vec::new();
    let _ = render_text(&summary, &mut text);
    let _ = serde_json::to_string(&summary);
}

//! The probe parser and the record-file reader must never panic on any input.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = wirelab_wire::ProbeRepr::parse(data);
    if let Ok(r) = wirelab_wire::RecordReader::new(data) {
        for rec in r.take(data.len() + 1) {
            if rec.is_err() {
                break;
            }
        }
    }
});

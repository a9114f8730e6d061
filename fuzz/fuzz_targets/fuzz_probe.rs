//! The probe parsers (wirelab and LUNA) and the record-file reader must never
//! panic on any input; a LUNA probe that parses re-emits to the same bytes.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = wirelab_wire::ProbeRepr::parse(data);
    if let Ok(l) = wirelab_wire::luna::LunaProbe::parse(data) {
        let mut b = [0u8; wirelab_wire::luna::LUNA_LEN];
        l.emit(&mut b);
        assert_eq!(&b[..], &data[..wirelab_wire::luna::LUNA_LEN]);
    }
    if let Ok(r) = wirelab_wire::RecordReader::new(data) {
        for rec in r.take(data.len() + 1) {
            if rec.is_err() {
                break;
            }
        }
    }
});

//! The pcap/pcapng reader must never panic, loop or over-allocate on any input.
//! Seed corpus: `mkdir -p corpus/fuzz_pcap && find ../../shared/testdata -name '*.pcap*' ! -name '*.gz' -exec cp {} corpus/fuzz_pcap/ \;`
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(mut r) = wirelab_pcap::PcapReader::new(data) else {
        return;
    };
    let mut n = 0usize;
    loop {
        match r.next_packet() {
            Ok(Some(p)) => {
                assert!(p.data.len() <= data.len());
                let _ = p.options.iter().count();
                let _ = p.options.comment();
                let _ = p.options.flags();
                n += 1;
                assert!(n <= data.len(), "more packets than input bytes");
            }
            Ok(None) => break,
            Err(e) => {
                assert!(
                    e.offset <= data.len() as u64,
                    "error offset past the input: {e}"
                );
                let _ = e.to_string();
                break;
            }
        }
    }
    assert!(matches!(r.next_packet(), Ok(None)), "reader not fused");
    let _ = (
        r.interfaces().len(),
        r.interface_stats().len(),
        r.sections().len(),
    );
});

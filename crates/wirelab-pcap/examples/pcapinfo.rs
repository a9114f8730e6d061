//! Print packet count, first/last timestamp and any error for each file given.
//! `cargo run -p wirelab-pcap --example pcapinfo -- FILE...`

use std::fs::File;
use std::io::BufReader;

fn main() {
    for path in std::env::args().skip(1) {
        let f = match File::open(&path) {
            Ok(f) => f,
            Err(e) => {
                println!("{path}\terror: {e}");
                continue;
            }
        };
        let mut r = match wirelab_pcap::PcapReader::new(BufReader::new(f)) {
            Ok(r) => r,
            Err(e) => {
                println!("{path}\t0\t-\t-\terror: {e}");
                continue;
            }
        };
        let (mut n, mut first, mut last, mut bytes) = (0u64, None, 0u64, 0u64);
        let res = loop {
            match r.next_packet() {
                Ok(Some(p)) => {
                    n += 1;
                    first.get_or_insert(p.ts_ns);
                    last = p.ts_ns;
                    bytes += p.data.len() as u64;
                }
                Ok(None) => break Ok(()),
                Err(e) => break Err(e),
            }
        };
        let fmt = |ns: u64| format!("{}.{:09}", ns / 1_000_000_000, ns % 1_000_000_000);
        let first = first.map_or("-".to_string(), fmt);
        let status = match res {
            Ok(()) => "ok".to_string(),
            Err(e) => format!("error: {e}"),
        };
        println!(
            "{path}\t{n}\t{first}\t{}\t{bytes}B\tifaces={} sections={} isb={}\t{status}",
            fmt(last),
            r.interfaces().len(),
            r.sections().len(),
            r.interface_stats().len()
        );
    }
}

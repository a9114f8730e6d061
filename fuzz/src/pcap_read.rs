//! Shared by the pcap and pcapng targets: reads an input whole and through a
//! reader that returns a few bytes per call; both must give the same
//! packets and the same error, and the error's offset lies inside the input.

use std::io::Read;
use wirelab_pcap::{OwnedPacket, PcapReader};

/// Returns at most `step` bytes per read call.
pub struct Trickle<'a> {
    pub data: &'a [u8],
    pub step: usize,
}

impl Read for Trickle<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = buf.len().min(self.step).min(self.data.len());
        buf[..n].copy_from_slice(&self.data[..n]);
        self.data = &self.data[n..];
        Ok(n)
    }
}

/// Packets, then the error text (if any), then the side tables' sizes.
pub type Outcome = (Vec<OwnedPacket>, Option<String>, [usize; 3], u64);

pub fn read_all<R: Read>(input: R, len: usize) -> Result<Outcome, String> {
    let mut r = PcapReader::new(input).map_err(|e| e.to_string())?;
    let mut pkts = Vec::new();
    let mut err = None;
    loop {
        match r.next_packet() {
            Ok(Some(p)) => {
                assert!(p.data.len() <= len);
                let _ = (p.options.iter().count(), p.options.comments().count());
                let _ = (p.options.flags(), p.caplen());
                pkts.push(p.to_owned_packet());
                assert!(pkts.len() <= len, "more packets than input bytes");
            }
            Ok(None) => break,
            Err(e) => {
                assert!(e.offset <= len as u64, "error offset past the input: {e}");
                let _ = e.is_truncation();
                err = Some(e.to_string());
                break;
            }
        }
    }
    assert!(matches!(r.next_packet(), Ok(None)), "reader not fused");
    let sizes = [
        r.interfaces().len(),
        r.interface_stats().len(),
        r.sections().len(),
    ];
    Ok((pkts, err, sizes, r.skipped_blocks()))
}

/// Reads `data` both ways and checks they agree.
pub fn check(data: &[u8], step_seed: u8) {
    let whole = read_all(data, data.len());
    let step = 1 + usize::from(step_seed % 11);
    let trickled = read_all(Trickle { data, step }, data.len());
    assert_eq!(whole, trickled, "whole and trickled reads differ");
}

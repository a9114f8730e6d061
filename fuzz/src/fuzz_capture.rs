//! `wirelab analyze` over hostile captures: the frame decoder (link type
//! from the first two bytes), the RTP header and the whole capture path
//! (pcap/pcapng reader → UDP → probes and RTP streams) over the rest.
//! Promises: no panic; a decoded payload lies inside the frame and is never
//! longer than the UDP length; a parsed RTP header fits its datagram; every
//! record yielded is a receive record stamped with a frame's time; frames
//! counted never fall short of records yielded; the reports serialise.

use wirelab_analysis::capture::frame::udp_in;
use wirelab_analysis::capture::rtp::{render_text, RtpHeader};
use wirelab_analysis::{CaptureOptions, CaptureRecords};
use wirelab_wire::record::RecordKind;

/// The target's body: panics when a promise above is broken.
pub fn run(data: &[u8]) {
    if data.len() < 2 {
        return;
    }
    let linktype = u16::from_le_bytes([data[0], data[1]]);
    let frame = &data[2..];
    for lt in [linktype, 1, 101, 113, 276] {
        if let Ok(u) = udp_in(lt, frame) {
            assert!(u.payload.len() as u32 <= u.len);
            let inside = frame.as_ptr_range();
            assert!(u.payload.is_empty() || inside.contains(&u.payload.as_ptr()));
        }
    }
    for whole in [false, true] {
        if let Ok(h) = RtpHeader::parse(frame, whole) {
            assert!(h.header_len <= frame.len() && h.header_len >= 12);
        }
    }
    let opts = CaptureOptions {
        luna_ports: vec![u16::from(data[0]) | 0x100],
        rtp: true,
        rtp_ports: if data[1] & 1 == 0 { vec![] } else { vec![5004] },
        rtp_clocks: [(96, 48_000)].into_iter().collect(),
        max_rtp_streams: 16,
    };
    let Ok(mut c) = CaptureRecords::new(data, opts) else {
        return;
    };
    let mut n = 0u64;
    for r in c.by_ref() {
        let Ok(r) = r else { break };
        assert_eq!(r.kind, RecordKind::Rx);
        n += 1;
    }
    assert!(c.counts().frames >= n);
    let input = c.input("fuzz", None);
    let _ = serde_json::to_string(&input);
    let rtp = c.rtp_input("fuzz");
    assert!(rtp.streams.len() <= 16);
    let mut text = Vec::new();
    let _ = render_text(&[rtp], &mut text);
}

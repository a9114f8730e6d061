//! Link stage lists (`wirelab emulate --a2b STAGES`) over arbitrary text,
//! then packets through the model in virtual time. The input is the stage
//! text, a NUL, and 4 bytes per packet (µs since the last one, frame
//! length). Parsing never panics; a list that parses prints in a form that
//! parses back and prints the same; a link without a trace file takes up
//! to 512 packets, every release is due when popped and never before its
//! packet arrived, and no more copies leave than were queued.

use wirelab_link::{Direction, Link, LinkConfig, LinkKey};

/// The target's body: panics when a promise above is broken.
pub fn run(data: &[u8]) {
    let split = data.iter().position(|&b| b == 0).unwrap_or(data.len());
    let Ok(text) = std::str::from_utf8(&data[..split]) else {
        return;
    };
    let Ok(c) = LinkConfig::parse(text) else {
        return;
    };
    let printed = c.to_string();
    let again = LinkConfig::parse(&printed)
        .unwrap_or_else(|e| panic!("{text:?} printed as {printed:?}, which fails: {e}"));
    assert_eq!(again.to_string(), printed, "{text:?}");
    if c.trace.is_some() {
        return;
    }
    let key = LinkKey {
        seed: 7,
        rule: 0,
        direction: Direction::AToB,
    };
    let Ok(mut link) = Link::new(&c, key) else {
        return;
    };
    let packets = data.get(split + 1..).unwrap_or(&[]);
    let mut now = 1_000_000_000u64;
    let mut arrivals = Vec::new();
    let mut out = Vec::new();
    for (i, p) in packets.chunks_exact(4).take(512).enumerate() {
        now += u64::from(u16::from_le_bytes([p[0], p[1]])) * 1_000;
        let len = u32::from(u16::from_le_bytes([p[2], p[3]])).max(14);
        let a = link.arrive(now, len, i as u64, false);
        arrivals.push(a.arrival_ns);
        link.pop_due(now, &mut out);
    }
    // Drain: every deadline the link names, a bounded number of times.
    for _ in 0..4096 {
        let Some(t) = link.next_deadline() else { break };
        now = now.max(t);
        link.pop_due(now, &mut out);
    }
    for r in &out {
        assert!(r.deadline_ns <= now);
        assert!(
            r.deadline_ns >= arrivals[r.packet_index as usize],
            "{printed}: packet {} released at {} before its arrival {}",
            r.packet_index,
            r.deadline_ns,
            arrivals[r.packet_index as usize]
        );
    }
    let n = link.counters();
    assert!(out.len() as u64 <= n.queued, "{printed}");
}

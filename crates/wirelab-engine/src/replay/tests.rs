//! The replay driver on the simulated backend: a trace written to a temp
//! file, sent through a scripted link on a virtual clock.

use super::*;
use std::sync::{Arc, Mutex};
use wirelab_io::sim::{Departure, SimClock, SimResult, SimTx};
use wirelab_wire::record::RecordReader;

/// A [`SimTx`] the test keeps a handle on after the driver took it.
#[derive(Clone)]
struct Link(Arc<Mutex<SimTx>>);

impl Transmit for Link {
    fn transmit(&mut self, packets: &[&[u8]]) -> io::Result<usize> {
        self.0.lock().unwrap().transmit(packets)
    }
}

impl Link {
    fn sent(&self) -> Vec<Departure> {
        self.0.lock().unwrap().sent.clone()
    }
}

fn tmp(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("wirelab-replay-sim-{}-{name}", std::process::id()))
}

/// `n` 100-byte frames `gap_ns` apart, numbered in their first bytes.
fn trace(name: &str, n: u32, gap_ns: u64) -> PathBuf {
    let p = tmp(name);
    let f = std::fs::File::create(&p).unwrap();
    let mut w =
        wirelab_pcap::PcapWriter::new(f, 1, 65_535, wirelab_pcap::PcapPrecision::Nano).unwrap();
    for i in 0..n {
        let mut frame = vec![0u8; 100];
        frame[..4].copy_from_slice(&i.to_be_bytes());
        w.write_packet(1_000_000_000 + u64::from(i) * gap_ns, 100, &frame)
            .unwrap();
    }
    w.flush().unwrap();
    p
}

fn config(file: PathBuf) -> ReplayConfig {
    ReplayConfig {
        read: ReadSpec {
            files: vec![file],
            select: Selection::default(),
            rewrite: Default::default(),
            max_frame: None,
            egress_mtu: None,
            bad_ts: Default::default(),
        },
        timing: Timing::Original { multiplier: 1.0 },
        late: LatePolicy::DEFAULT,
        late_threshold_ns: 10_000,
        loops: 1,
        loop_delay_ns: None,
        duration_ns: None,
        limit: None,
        unique_ip: false,
        max_preload: 1 << 30,
        batch: 64,
        spin: Spin::Auto,
        log: None,
        output: Output::Sendmmsg {
            ifname: "sim0".into(),
            qdisc_bypass: false,
        },
        split: None,
        progress: None,
        phase: None,
    }
}

/// Replays `cfg` on `clock` through `link`.
fn replay(cfg: &ReplayConfig, clock: SimClock, link: &Link) -> ReplayReport {
    let bufs = (0..cfg.batch).map(|_| Vec::with_capacity(1514)).collect();
    let tx = Tx::Frames {
        link: Box::new(link.clone()),
        bufs,
        n: 0,
    };
    let out = (tx, "sim0".to_string(), "sendmmsg", false, Some(1500));
    run_on(cfg, &StopFlag::new(), clock, vec![out]).unwrap()
}

fn number(d: &Departure) -> u32 {
    u32::from_be_bytes(d.bytes[..4].try_into().unwrap())
}

#[test]
fn every_frame_leaves_on_its_deadline_and_the_log_says_so() {
    let file = trace("cbr.pcap", 50, 1_000_000);
    let log = tmp("cbr.wlr");
    let mut cfg = config(file.clone());
    cfg.log = Some(log.clone());
    let clock = SimClock::new(1_000_000_000).oversleep(30_000);
    let link = Link(Arc::new(Mutex::new(SimTx::new(&clock, 5_000, 100))));
    let rep = replay(&cfg, clock, &link);
    let sent = link.sent();
    assert_eq!(sent.len(), 50);
    assert!(sent.iter().enumerate().all(|(i, d)| number(d) == i as u32));
    // The origin moved to where the first kick returned (5.1 µs of link
    // cost plus clock reads later); from there every frame leaves exactly
    // on its deadline, 1 ms apart, though every sleep wakes 30 µs late.
    let first_kick = sent[1].at_ns - sent[0].at_ns - 1_000_000;
    assert!((5_100..5_200).contains(&first_kick), "{first_kick}");
    for (i, d) in sent.iter().enumerate().skip(1) {
        assert_eq!(
            d.at_ns,
            sent[1].at_ns + (i as u64 - 1) * 1_000_000,
            "frame {i}"
        );
    }
    assert_eq!(rep.fidelity.packets, 50);
    assert_eq!(rep.fidelity.late_packets, 0);
    assert_eq!((rep.send.failures, rep.send.frames_lost), (0, 0));
    assert_eq!(rep.wait.sleeps_past_deadline, 0);
    assert!(rep.wait.sleeps > 0);
    // The departure log: one Tx record per frame, ideal and actual times.
    let mut r = RecordReader::new(std::fs::File::open(&log).unwrap()).unwrap();
    let mut recs = vec![];
    while let Some(rec) = r.next_record().unwrap() {
        recs.push(rec);
    }
    assert_eq!(recs.len(), 50);
    let meta: serde_json::Value = serde_json::from_str(&r.header().metadata).unwrap();
    let start = meta["start_unix_ns"].as_u64().unwrap();
    for (i, rec) in recs.iter().enumerate() {
        // Frames are numbered from 1, as tcpreplay and tshark number them.
        assert_eq!((rec.seq, rec.flow, rec.size), (i as u64 + 1, 0, 100));
        assert_eq!(rec.sched_ns, DepartureLog::LEAD_NS + i as u64 * 1_000_000);
        let err = rec.tx_ns - start - rec.sched_ns;
        assert!(err < 1_000, "frame {i}: departure error {err}");
    }
    let _ = std::fs::remove_file(file);
    let _ = std::fs::remove_file(log);
}

#[test]
fn after_a_2ms_stall_no_gap_is_below_half_until_the_schedule_is_rejoined() {
    let file = trace("stall.pcap", 200, 100_000);
    let cfg = config(file.clone());
    let clock = SimClock::new(1_000_000_000);
    let link = Link(Arc::new(Mutex::new(SimTx::new(&clock, 3_000, 100))));
    // 2 ms off the CPU about 5 ms into the replay.
    clock.stall_at(1_025_000_000, 2_000_000);
    let rep = replay(&cfg, clock, &link);
    let sent = link.sent();
    assert_eq!(sent.len(), 200);
    let mut calls: Vec<(u64, usize)> = vec![];
    for d in &sent {
        match calls.last_mut() {
            Some((t, n)) if *t == d.at_ns => *n += 1,
            _ => calls.push((d.at_ns, 1)),
        }
    }
    let batch = calls
        .iter()
        .position(|&(_, n)| n > 1)
        .expect("a catch-up batch");
    // What was more than 1 ms late left at once, in one kick ...
    assert!(calls[batch].1 >= 5, "{:?}", &calls[batch..batch + 2]);
    assert_eq!(calls.iter().filter(|&&(_, n)| n > 1).count(), 1);
    // ... then gaps of at least half the original until the schedule is rejoined.
    for w in calls[batch..].windows(2) {
        assert!(w[1].0 - w[0].0 >= 50_000, "{w:?}");
    }
    assert!(rep.fidelity.late_packets > 0);
    assert_eq!(rep.fidelity.late_runs, 1);
    let last = sent.last().unwrap().at_ns - sent[0].at_ns;
    assert!(last.abs_diff(199 * 100_000) < 10_000, "rejoined: {last}");
    let _ = std::fs::remove_file(file);
}

#[test]
fn transient_errors_are_retried_and_a_failing_frame_is_skipped() {
    let file = trace("err.pcap", 10, 1_000_000);
    let cfg = config(file.clone());
    let clock = SimClock::new(1_000_000_000);
    let tx = SimTx::new(&clock, 3_000, 100).script([
        SimResult::Fail(libc::ENOBUFS),
        SimResult::Fail(libc::EAGAIN),
        SimResult::Take(1),
        SimResult::Fail(libc::EMSGSIZE),
    ]);
    let link = Link(Arc::new(Mutex::new(tx)));
    let rep = replay(&cfg, clock, &link);
    let sent: Vec<u32> = link.sent().iter().map(number).collect();
    assert_eq!(sent, [0, 2, 3, 4, 5, 6, 7, 8, 9], "frame 1 was refused");
    assert_eq!(rep.send.retries, 2);
    assert_eq!((rep.send.failures, rep.send.frames_lost), (1, 1));
    assert_eq!(rep.fidelity.packets, 9);
    let _ = std::fs::remove_file(file);
}

/// A µs pcap of `frames` (length, timestamp in µs), written raw.
fn raw_trace(name: &str, frames: &[(usize, u64)]) -> PathBuf {
    let p = tmp(name);
    let mut b = vec![0xd4, 0xc3, 0xb2, 0xa1, 2, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0];
    b.extend_from_slice(&262_144u32.to_le_bytes());
    b.extend_from_slice(&1u32.to_le_bytes());
    for (i, &(len, us)) in frames.iter().enumerate() {
        let mut frame = vec![0u8; len];
        frame[..4].copy_from_slice(&(i as u32).to_be_bytes());
        for v in [
            (us / 1_000_000) as u32,
            (us % 1_000_000) as u32,
            len as u32,
            len as u32,
        ] {
            b.extend_from_slice(&v.to_le_bytes());
        }
        b.extend_from_slice(&frame);
    }
    std::fs::write(&p, b).unwrap();
    p
}

#[test]
fn preloaded_and_streamed_replays_count_the_same() {
    // One frame the 1514-byte link takes, one it does not.
    let file = raw_trace("mixed.pcap", &[(100, 1_000_000), (65_535, 1_000_100)]);
    let mut reports = vec![];
    for budget in [1 << 30, 1] {
        let mut cfg = config(file.clone());
        cfg.max_preload = budget;
        let clock = SimClock::new(1_000_000_000);
        let link = Link(Arc::new(Mutex::new(SimTx::new(&clock, 3_000, 100))));
        let rep = replay(&cfg, clock, &link);
        assert_eq!(link.sent().len(), 1);
        reports.push(rep);
    }
    assert_eq!(reports[0].load.mode, "memory");
    assert_eq!(reports[1].load.mode, "stream");
    for r in &reports {
        let rd = &r.read;
        assert_eq!(
            (rd.read, rd.selected, rd.filtered, rd.oversize),
            (2, 1, 0, 1),
            "{}",
            r.load.mode
        );
        assert_eq!(rd.max_frame_bytes, Some(1518));
        assert!(r.nothing_sent.is_none());
    }
    let _ = std::fs::remove_file(file);
}

#[test]
fn a_replay_that_sends_nothing_says_why_both_ways() {
    let file = raw_trace("big.pcap", &[(65_535, 1_000_000)]);
    for budget in [1 << 30, 1] {
        let mut cfg = config(file.clone());
        cfg.max_preload = budget;
        let clock = SimClock::new(1_000_000_000);
        let link = Link(Arc::new(Mutex::new(SimTx::new(&clock, 3_000, 100))));
        let rep = replay(&cfg, clock, &link);
        assert_eq!((rep.read.read, rep.read.oversize), (1, 1), "{budget}");
        let n = rep.nothing_sent.expect("nothing sent");
        assert!(!n.asked);
        assert_eq!(
            n.reason,
            "all 1 packet(s) read were left out: 1 as larger than sim0 takes (1518 bytes: its MTU + 14 bytes of Ethernet header + a VLAN tag if tagged); --mtu-trunc cuts frames to --mtu, or raise the MTU"
        );
    }
    // Left out by the user's own selection, or a zero limit: asked for.
    let small = raw_trace("small.pcap", &[(100, 1_000_000)]);
    let mut cfg = config(small.clone());
    cfg.read.select.include_ranges = Ranges::parse("5").unwrap();
    let clock = SimClock::new(1_000_000_000);
    let link = Link(Arc::new(Mutex::new(SimTx::new(&clock, 3_000, 100))));
    let n = replay(&cfg, clock, &link).nothing_sent.unwrap();
    assert!(n.asked);
    assert_eq!(
        n.reason,
        "all 1 packet(s) read were left out: 1 by the selection (--include/--exclude/--packets)"
    );
    let mut cfg = config(small.clone());
    cfg.limit = Some(0);
    let clock = SimClock::new(1_000_000_000);
    let link = Link(Arc::new(Mutex::new(SimTx::new(&clock, 3_000, 100))));
    let n = replay(&cfg, clock, &link).nothing_sent.unwrap();
    assert!(n.asked && n.reason.contains("--limit"));
    // An empty input is not.
    let empty = raw_trace("empty.pcap", &[]);
    let clock = SimClock::new(1_000_000_000);
    let link = Link(Arc::new(Mutex::new(SimTx::new(&clock, 3_000, 100))));
    let n = replay(&config(empty.clone()), clock, &link)
        .nothing_sent
        .unwrap();
    assert_eq!(
        (n.asked, n.reason.as_str()),
        (false, "the input holds no packets")
    );
    for f in [file, small, empty] {
        let _ = std::fs::remove_file(f);
    }
}

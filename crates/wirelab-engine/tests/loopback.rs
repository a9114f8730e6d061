//! Sender and receiver drivers against each other over loopback.

use std::time::Duration;
use wirelab_core::schedule::{Limits, WaitStrategy};
use wirelab_engine::phase::PhaseConfig;
use wirelab_engine::receiver::{Receiver, RecvConfig, RecvOutcome};
use wirelab_engine::sender::{run_flow, FlowConfig, FlowSendStats, Padding};
use wirelab_engine::{ProbeFormat, StopFlag};
use wirelab_wire::record::{Record, RecordKind};

fn flow_cfg(target: std::net::SocketAddr, echo: bool) -> FlowConfig {
    FlowConfig {
        target,
        bind: None,
        flow: 7,
        limits: Limits {
            count: Some(200),
            duration_ns: None,
        },
        tos: None,
        warmup: 5,
        padding: Padding::Const(0xab),
        wait: WaitStrategy::Hybrid { spin_ns: 50_000 },
        adaptive_spin: true,
        prime: true,
        anchor_first: true,
        echo,
        echo_wait: Duration::from_secs(1),
        last_repeats: 3,
        last_gap: Duration::from_millis(1),
        max_batch: 16,
        lead: Duration::from_millis(5),
        seed: 1,
        epoch_mono_ns: None,
        start_mono_ns: None,
        mono_to_real: wirelab_io::clock::mono_to_real_offset(),
        format: ProbeFormat::Wirelab,
        late: wirelab_core::replay::LatePolicy::DEFAULT,
        phase: None,
    }
}

/// Runs `rx` on a thread until it ends: its outcome and the records it made.
fn receive(rx: Receiver) -> std::thread::JoinHandle<(RecvOutcome, Vec<Record>)> {
    std::thread::spawn(move || {
        let mut got: Vec<Record> = Vec::new();
        let mut sink = |r: &Record| got.push(*r);
        let out = rx
            .run(
                &mut sink,
                None,
                &StopFlag::new(),
                &mut |_| {},
                Duration::from_secs(1),
            )
            .unwrap();
        (out, got)
    })
}

/// Sends `cfg`'s flow of `size`-byte probes 100 µs apart: the sender's
/// records, its stats and the echo replies.
fn send(cfg: &FlowConfig, size: f64) -> (Vec<Record>, FlowSendStats, Vec<Record>) {
    let mut sizes = || Some(size);
    let mut ivals = || Some(100_000.0);
    let mut tx: Vec<Record> = Vec::new();
    let (stats, replies) = run_flow(
        cfg,
        &mut ivals,
        &mut sizes,
        None,
        None,
        &mut tx,
        Vec::<Record>::new(),
        &StopFlag::new(),
    )
    .unwrap();
    (tx, stats, replies)
}

fn run_pair(echo: bool) -> (Vec<Record>, Vec<Record>, Vec<Record>) {
    let (tx, rx, replies, _) = run_pair_with(echo, |_| {});
    (tx, rx, replies)
}

fn run_pair_with(
    echo: bool,
    edit: impl FnOnce(&mut FlowConfig),
) -> (Vec<Record>, Vec<Record>, Vec<Record>, FlowSendStats) {
    let rx = Receiver::bind(RecvConfig {
        bind: "127.0.0.1:0".parse().unwrap(),
        echo,
        max_duration: Some(Duration::from_secs(10)),
        ..RecvConfig::default()
    })
    .unwrap();
    let target = rx.local_addr().unwrap();
    let rx_thread = receive(rx);
    let mut cfg = flow_cfg(target, echo);
    edit(&mut cfg);
    let (tx, stats, replies) = send(&cfg, 100.0);
    assert_eq!(stats.sent, 200);
    assert_eq!(stats.last_repeats, 3);
    let (out, got) = rx_thread.join().unwrap();
    assert_eq!(out.end_reason, "flows-ended");
    (tx, got, replies, stats)
}

#[test]
fn every_probe_arrives_with_its_schedule_and_flags() {
    let (tx, rx, replies, stats) = run_pair_with(false, |_| {});
    assert!(replies.is_empty());
    assert_eq!(tx.len(), 200);
    // The schedule's origin moved by the first send call's lag (anchor_first).
    let first_gap = tx[1].sched_ns - tx[0].sched_ns;
    assert_eq!(first_gap, 100_000 + stats.anchor_lag_ns.unwrap_or(0));
    for (k, r) in tx.iter().enumerate() {
        assert_eq!(r.kind, RecordKind::Tx);
        assert_eq!(r.seq, k as u64);
        assert_eq!(r.size, 100);
        assert!(r.sched_ns > 0);
        // 100 µs apart on the schedule, exactly, from the first departure on: the
        // schedule's origin moves by the first send call's duration (anchor_first).
        if k >= 1 {
            assert_eq!(r.sched_ns - tx[1].sched_ns, (k as u64 - 1) * 100_000);
        }
        assert_eq!(r.probe_flags & 0x08 != 0, k < 5, "warm-up flag on seq {k}");
    }
    // 200 probes and 3 end markers, all with kernel timestamps.
    assert_eq!(rx.len(), 203);
    assert!(rx.iter().all(|r| r.rec_flags & Record::RX_KERNEL_TS != 0));
    assert!(rx[200..]
        .iter()
        .all(|r| r.seq == 199 && r.probe_flags & 0x04 != 0));
    for (k, r) in rx[..200].iter().enumerate() {
        assert_eq!(r.seq, k as u64);
        assert!(r.rx_ns >= r.tx_ns, "rx before tx on one host");
    }
}

/// With a start-phase calibration the schedule starts after it, and every
/// probe still arrives. What the calibration chooses is tested against
/// scripted stalls (`sender` and `phase` unit tests), not this machine's.
#[test]
fn a_calibrated_start_keeps_its_phase() {
    let t0 = wirelab_io::clock::mono_ns();
    let (tx, rx, _, stats) = run_pair_with(false, |c| {
        c.epoch_mono_ns = Some(t0);
        c.phase = Some((
            PhaseConfig {
                calibrate: Duration::from_millis(60),
            },
            100_000.0,
        ));
    });
    let p = stats.phase.expect("phase report");
    assert_eq!(p.calibration_ns, 60_000_000);
    // Origin = t0 + lead (5 ms) pushed past the calibration, plus the shift.
    let origin = tx[0].sched_ns;
    assert!(origin >= 60_000_000 + p.shift_ns, "origin {origin}");
    let lag = stats.anchor_lag_ns.unwrap_or(0);
    for (k, r) in tx.iter().enumerate().skip(1) {
        assert_eq!(r.sched_ns - origin, lag + k as u64 * 100_000, "seq {k}");
    }
    assert_eq!(rx.len(), 203);
}

#[test]
fn echo_replies_carry_reflector_times() {
    let (_, rx, replies) = run_pair(true);
    assert_eq!(replies.len(), 200);
    for r in &replies {
        assert_eq!(r.kind, RecordKind::EchoReply);
        assert!(r.refl_rx_ns <= r.refl_tx_ns);
        assert!(r.tx_ns <= r.refl_rx_ns && r.refl_tx_ns <= r.rx_ns);
    }
    assert!(rx[..200]
        .iter()
        .all(|r| r.refl_tx_ns >= r.refl_rx_ns && r.refl_rx_ns == r.rx_ns));
}

/// LUNA probes: 21-byte layout, flows numbered by source address, the
/// receiver ends on silence (no end marker), echoes come back unchanged.
#[test]
fn luna_probes_are_received_and_mirrored() {
    let rx = Receiver::bind(RecvConfig {
        bind: "127.0.0.1:0".parse().unwrap(),
        echo: true,
        format: ProbeFormat::Luna,
        idle_timeout: Some(Duration::from_millis(300)),
        max_duration: Some(Duration::from_secs(10)),
        ..RecvConfig::default()
    })
    .unwrap();
    let target = rx.local_addr().unwrap();
    let rx_thread = receive(rx);
    let mut cfg = flow_cfg(target, true);
    cfg.format = ProbeFormat::Luna;
    cfg.warmup = 0;
    let (tx, stats, replies) = send(&cfg, 21.0);
    assert_eq!((stats.sent, stats.last_repeats), (200, 0));
    let (out, got) = rx_thread.join().unwrap();
    assert_eq!(out.end_reason, "idle-timeout");
    assert_eq!(
        out.counters.packets, 200,
        "no end markers, no priming datagram"
    );
    assert_eq!(out.counters.empty, 0);
    assert_eq!(out.flow_sources.len(), 1);
    assert_eq!(out.flow_sources[0].flow, 1);
    for (k, r) in got.iter().enumerate() {
        assert_eq!((r.flow, r.seq, r.size), (1, k as u64, 21));
        assert_eq!(
            r.tx_ns, tx[k].tx_ns,
            "send time read back from the timespec"
        );
    }
    assert_eq!(replies.len(), 200);
    for r in &replies {
        assert_eq!(r.kind, RecordKind::EchoReply);
        assert_eq!(
            (r.refl_rx_ns, r.refl_tx_ns),
            (0, 0),
            "LUNA mirrors: RTT only"
        );
        assert!(r.rx_ns > r.tx_ns);
    }
}

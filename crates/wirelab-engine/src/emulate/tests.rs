//! The forwarding driver on the simulated backend: a scripted ring, clock
//! and link, and a small scripted model.

use super::*;
use crate::StopFlag;
use std::collections::VecDeque;
use wirelab_io::sim::{SimClock, SimFrames, SimTx};
use wirelab_wire::record::EmuFate;

const WALL: i128 = SimClock::WALL_OFFSET_NS as i128;

/// Every packet delayed by `delay_ns`; every `dup_every`-th duplicated
/// (the copy `dup_gap_ns` later, with bit `flip` flipped); every
/// `drop_every`-th dropped. Stops the run once `stop_after` releases left.
struct Scripted {
    delay_ns: u64,
    dup_every: u64,
    dup_gap_ns: u64,
    flip: Option<u32>,
    drop_every: u64,
    queue: VecDeque<Release>,
    released: u64,
    stop_after: u64,
    stop: StopFlag,
}

impl Scripted {
    fn new(delay_ns: u64, stop_after: u64, stop: &StopFlag) -> Scripted {
        Scripted {
            delay_ns,
            dup_every: 0,
            dup_gap_ns: 0,
            flip: None,
            drop_every: 0,
            queue: VecDeque::new(),
            released: 0,
            stop_after,
            stop: stop.clone(),
        }
    }
}

fn rel(index: u64, t_ns: u64, deadline_ns: u64, copy: u8, flip_bit: Option<u32>) -> Release {
    Release {
        index,
        rule: 0,
        seq: index,
        copy,
        arrival_ns: t_ns,
        deadline_ns,
        flip_bit,
        dropped: None,
        ce: false,
    }
}

impl LinkModel for Scripted {
    fn arrive(&mut self, t_ns: u64, _frame: &[u8], index: u64, out: &mut Admission) {
        out.seq = index;
        let k = index + 1;
        if self.drop_every > 0 && k.is_multiple_of(self.drop_every) {
            out.dropped.push((0, EmuFate::Loss));
            return;
        }
        let d = t_ns + self.delay_ns;
        self.queue.push_back(rel(index, t_ns, d, 0, None));
        out.queued = 1;
        if self.dup_every > 0 && k.is_multiple_of(self.dup_every) {
            self.queue
                .push_back(rel(index, t_ns, d + self.dup_gap_ns, 1, self.flip));
            out.queued = 2;
        }
    }

    fn next_deadline(&self) -> Option<u64> {
        self.queue.front().map(|r| r.deadline_ns)
    }

    fn pop_due(&mut self, now_ns: u64, out: &mut Vec<Release>) {
        while self.queue.front().is_some_and(|r| r.deadline_ns <= now_ns) {
            out.push(self.queue.pop_front().unwrap());
            self.released += 1;
        }
        if self.released >= self.stop_after {
            self.stop.stop();
        }
    }
}

fn frame(i: u64, len: usize) -> Vec<u8> {
    let mut f = vec![0u8; len];
    f[..8].copy_from_slice(&i.to_be_bytes());
    f
}

fn cfg() -> ForwardConfig {
    ForwardConfig {
        real_to_mono: -WALL,
        ..ForwardConfig::default()
    }
}

/// `forward` on the clock `c` with the tests' config and no outputs; the
/// model or `stop` ends the run.
fn forward_plain<M: LinkModel>(
    c: &SimClock,
    rx: &mut SimFrames,
    tx: &mut SimTx,
    m: &mut M,
    stop: &StopFlag,
) -> ForwardStats {
    let mut clock = c.clone();
    forward(&cfg(), &mut clock, rx, tx, m, stop, Outputs::default()).unwrap()
}

/// [`forward_plain`] for a model that never stops the run: a thread stops
/// it once the simulated clock reaches `until_ns`.
fn forward_until<M: LinkModel>(
    c: &SimClock,
    until_ns: u64,
    rx: &mut SimFrames,
    tx: &mut SimTx,
    m: &mut M,
) -> ForwardStats {
    let stop = StopFlag::new();
    let s2 = stop.clone();
    let c2 = c.clone();
    let t = std::thread::spawn(move || {
        while c2.peek_ns() < until_ns {
            std::thread::yield_now();
        }
        s2.stop();
    });
    let st = forward_plain(c, rx, tx, m, &stop);
    t.join().unwrap();
    st
}

#[test]
fn frames_leave_after_their_deadline_from_the_kernel_stamp_never_before() {
    // Wake-ups 40 µs late; frames every 100 µs, delayed 1 ms. The user-space
    // read of each frame is late too (the clock runs on while the driver
    // sleeps), but the deadline counts from the kernel stamp.
    let c = SimClock::new(1_000_000).oversleep(40_000);
    let mut rx = SimFrames::new(&c);
    let n = 2_000u64;
    for i in 0..n {
        rx.arrive(2_000_000 + i * 100_000, &frame(i, 64));
    }
    let mut tx = SimTx::new(&c, 2_000, 100);
    let stop = StopFlag::new();
    let mut m = Scripted::new(1_000_000, n, &stop);
    let st = forward_plain(&c, &mut rx, &mut tx, &mut m, &stop);
    assert_eq!((st.received, st.sent, st.early), (n, n, 0));
    assert_eq!(tx.sent.len() as u64, n);
    for (i, d) in tx.sent.iter().enumerate() {
        let deadline = 2_000_000 + i as u64 * 100_000 + 1_000_000;
        assert_eq!(d.bytes, frame(i as u64, 64), "order and content");
        assert!(d.at_ns >= deadline, "frame {i} left early");
    }
    // Once the margin has learned the 40 µs oversleep, releases are
    // within a few µs of their deadlines.
    let worst_after_warmup = tx.sent[200..]
        .iter()
        .enumerate()
        .map(|(i, d)| d.at_ns - (2_000_000 + (i as u64 + 200) * 100_000 + 1_000_000))
        .max()
        .unwrap();
    assert!(worst_after_warmup < 5_000, "{worst_after_warmup}");
    assert!(st.lateness.p99_ns < 5_000, "{:?}", st.lateness);
}

#[test]
fn copies_drops_and_corruption_as_the_model_says() {
    let c = SimClock::new(0);
    let mut rx = SimFrames::new(&c);
    for i in 0..30u64 {
        rx.arrive(10_000 + i * 50_000, &frame(i, 100));
    }
    let mut tx = SimTx::new(&c, 1_000, 0);
    let stop = StopFlag::new();
    let mut m = Scripted::new(200_000, 0, &stop);
    m.dup_every = 5;
    m.dup_gap_ns = 7_000;
    m.flip = Some(8 * 20 + 3);
    m.drop_every = 7;
    // 30 frames, 4 dropped (7, 14, 21, 28), 6 duplicated (5, …, 30).
    m.stop_after = 26 + 6;
    let st = forward_plain(&c, &mut rx, &mut tx, &mut m, &stop);
    assert_eq!(
        (st.received, st.sent, st.corrupted, st.early),
        (30, 32, 6, 0)
    );
    assert_eq!(
        (
            st.duplicates,
            st.dropped.get(EmuFate::Loss),
            st.dropped.copies()
        ),
        (6, 4, 4)
    );
    assert_eq!(st.received + st.duplicates, st.sent + st.dropped.copies());
    let mut seen = std::collections::HashMap::<u64, Vec<&Vec<u8>>>::new();
    for d in &tx.sent {
        let i = u64::from_be_bytes(d.bytes[..8].try_into().unwrap());
        seen.entry(i).or_default().push(&d.bytes);
    }
    for i in 0..30u64 {
        let k = i + 1;
        let copies = seen.get(&i).map_or(0, |v| v.len());
        match (k % 7 == 0, k % 5 == 0) {
            (true, _) => assert_eq!(copies, 0, "{i} was to be dropped"),
            (false, true) => {
                let v = &seen[&i];
                assert_eq!(*v[0], frame(i, 100));
                // The copy differs in exactly bit 3 of byte 20.
                let diff: Vec<usize> = (0..100).filter(|&b| v[0][b] != v[1][b]).collect();
                assert_eq!(diff, [20]);
                assert_eq!(v[0][20] ^ v[1][20], 0x10);
            }
            (false, false) => assert_eq!(copies, 1, "{i}"),
        }
    }
}

#[test]
fn a_tag_the_driver_took_off_goes_back_on_and_counts_in_the_length() {
    struct Len(Vec<u32>, VecDeque<Release>, StopFlag);
    impl LinkModel for Len {
        fn arrive(&mut self, t: u64, frame: &[u8], index: u64, out: &mut Admission) {
            self.0.push(frame.len() as u32);
            self.1.push_back(rel(index, t, t, 0, None));
            out.queued = 1;
        }
        fn next_deadline(&self) -> Option<u64> {
            self.1.front().map(|r| r.deadline_ns)
        }
        fn pop_due(&mut self, now: u64, out: &mut Vec<Release>) {
            while self.1.front().is_some_and(|r| r.deadline_ns <= now) {
                out.push(self.1.pop_front().unwrap());
            }
            if !out.is_empty() {
                self.2.stop();
            }
        }
    }
    let c = SimClock::new(0);
    let mut rx = SimFrames::new(&c);
    rx.arrive_tagged(1_000, &frame(1, 60), (0x0005, 0x8100));
    let mut tx = SimTx::new(&c, 1_000, 0);
    let stop = StopFlag::new();
    let mut m = Len(vec![], VecDeque::new(), stop.clone());
    forward_plain(&c, &mut rx, &mut tx, &mut m, &stop);
    assert_eq!(m.0, [64]);
    let b = &tx.sent[0].bytes;
    assert_eq!(b.len(), 64);
    assert_eq!(&b[12..16], &[0x81, 0x00, 0x00, 0x05]);
}

/// What a test's files go in; removed at the end of the test.
struct TmpDir(std::path::PathBuf);

impl TmpDir {
    fn new(tag: &str) -> TmpDir {
        let d = std::env::temp_dir().join(format!("wl-emu-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        TmpDir(d)
    }
}

impl Drop for TmpDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn read_log(p: &std::path::Path) -> Vec<wirelab_wire::record::EmuRecord> {
    let r = wirelab_wire::RecordReader::new(std::fs::File::open(p).unwrap()).unwrap();
    r.map(|x| wirelab_wire::record::EmuRecord::from_record(&x.unwrap()).unwrap())
        .collect()
}

fn log_meta() -> crate::recordlog::RecordMeta {
    crate::recordlog::RecordMeta {
        wirelab_version: "t".into(),
        role: "emulate".into(),
        host: "h".into(),
        clock: "c".into(),
        start_unix_ns: 0,
        config: serde_json::Value::Null,
    }
}

#[test]
fn every_copy_has_one_fate_in_the_counters_the_log_and_the_tap() {
    let dir = TmpDir::new("fates");
    let c = SimClock::new(0);
    let mut rx = SimFrames::new(&c);
    for i in 0..40u64 {
        rx.arrive(10_000 + i * 50_000, &frame(i, 100));
    }
    // The third send call fails with EMSGSIZE: one copy refused.
    let mut tx = SimTx::new(&c, 1_000, 0).script([
        wirelab_io::sim::SimResult::Take(64),
        wirelab_io::sim::SimResult::Take(64),
        wirelab_io::sim::SimResult::Fail(libc::EMSGSIZE),
    ]);
    let stop = StopFlag::new();
    let mut m = Scripted::new(200_000, 0, &stop);
    m.dup_every = 5;
    m.dup_gap_ns = 7_000;
    m.flip = Some(8 * 20 + 3);
    m.drop_every = 7;
    // Stop while frames still wait: the last ones are unsent.
    m.stop_after = 20;
    let log_path = dir.0.join("e.wlr");
    let log =
        crate::recordlog::RecordLog::create(&log_path, wirelab_wire::Role::Sender, &log_meta())
            .unwrap();
    let tap_path = dir.0.join("t.pcapng");
    let tap = Tap::create(&tap_path, "ea", "eb").unwrap();
    let mut lw = log.writer();
    let mut tw = tap.writer(0);
    let live = LiveDir::default();
    let mut clock = c.clone();
    let st = forward(
        &cfg(),
        &mut clock,
        &mut rx,
        &mut tx,
        &mut m,
        &stop,
        Outputs {
            live: Some(&live),
            log: Some(&mut lw),
            tap: Some(&mut tw),
            mm: None,
        },
    )
    .unwrap();
    drop(lw);
    assert_eq!(tw.close().unwrap(), st.sent);
    log.finish().unwrap();
    tap.finish().unwrap();
    let d = st.dropped;
    assert_eq!(
        (d.get(EmuFate::SendFailure), d.get(EmuFate::Queue), d.ring),
        (1, 0, 0)
    );
    assert!(
        d.get(EmuFate::Loss) > 0 && d.get(EmuFate::Unsent) > 0,
        "{st:?}"
    );
    assert_eq!(st.received + st.duplicates, st.sent + d.copies(), "{st:?}");
    assert_eq!(st.sent, tx.sent.len() as u64);
    // Live counters end as the returned ones.
    let snap = live.snapshot();
    assert_eq!(
        (snap.received, snap.sent, snap.dropped),
        (st.received, st.sent, d)
    );

    // The log: one record per copy, fates as counted; sent copies with the
    // departures the link saw, in order; every deadline met.
    let recs = read_log(&log_path);
    assert_eq!(recs.len() as u64, st.received + st.duplicates);
    let count = |f: EmuFate| recs.iter().filter(|r| r.fate == f).count() as u64;
    assert_eq!(count(EmuFate::Sent), st.sent);
    assert_eq!(count(EmuFate::Loss), d.get(EmuFate::Loss));
    assert_eq!(count(EmuFate::Unsent), d.get(EmuFate::Unsent));
    assert_eq!(count(EmuFate::SendFailure), 1);
    let sent: Vec<_> = recs.iter().filter(|r| r.fate == EmuFate::Sent).collect();
    for (r, dep) in sent.iter().zip(&tx.sent) {
        assert_eq!(r.departure_ns, dep.at_ns + SimClock::WALL_OFFSET_NS);
        assert_eq!(
            r.seq,
            u64::from_be_bytes(dep.bytes[..8].try_into().unwrap())
        );
        assert_eq!(r.corrupted, r.copy == 1);
        assert!(r.departure_ns >= r.deadline_ns && r.deadline_ns >= r.arrival_ns);
        assert_eq!(
            r.arrival_ns,
            SimClock::WALL_OFFSET_NS + 10_000 + r.seq * 50_000
        );
    }
    for r in recs.iter().filter(|r| r.fate == EmuFate::Loss) {
        assert_eq!((r.seq + 1) % 7, 0);
        assert_eq!((r.deadline_ns, r.departure_ns), (0, 0));
    }

    // The tap: exactly the frames that left, as they left, with their
    // departure stamps, on interface 0.
    let mut p = wirelab_pcap::PcapReader::new(std::fs::File::open(&tap_path).unwrap()).unwrap();
    let mut n = 0;
    while let Some(pkt) = p.next_packet().unwrap() {
        let dep = &tx.sent[n];
        assert_eq!(pkt.data, &dep.bytes[..]);
        assert_eq!(pkt.ts_ns, dep.at_ns + SimClock::WALL_OFFSET_NS);
        assert_eq!(pkt.interface, 0);
        n += 1;
    }
    assert_eq!(n, tx.sent.len());
    assert_eq!(p.interfaces()[0].name.as_deref(), Some("eb"));
}

/// An Ethernet/IPv4/UDP frame to `dport`, its number in the payload.
fn udp(i: u64, dport: u16) -> Vec<u8> {
    let mut f = vec![0u8; 14 + 20 + 8 + 16];
    f[12..14].copy_from_slice(&[0x08, 0x00]);
    f[14] = 0x45;
    f[16..18].copy_from_slice(&(20u16 + 8 + 16).to_be_bytes());
    f[22] = 64;
    f[23] = 17;
    f[26..30].copy_from_slice(&[198, 18, 0, 1]);
    f[30..34].copy_from_slice(&[198, 18, 0, 2]);
    f[34..36].copy_from_slice(&4000u16.to_be_bytes());
    f[36..38].copy_from_slice(&dport.to_be_bytes());
    f[38..40].copy_from_slice(&24u16.to_be_bytes());
    f[42..50].copy_from_slice(&i.to_be_bytes());
    f
}

fn frame_no(b: &[u8]) -> u64 {
    u64::from_be_bytes(b[42..50].try_into().unwrap())
}

fn link(stages: &str, rule: u32, dir: wirelab_link::Direction) -> wirelab_link::Link {
    let c = wirelab_link::LinkConfig::parse(stages).unwrap();
    let key = wirelab_link::LinkKey {
        seed: c.seed.unwrap_or(1),
        rule,
        direction: dir,
    };
    open_link(&c, key).unwrap()
}

fn rule(n: u32, filter: &str, stages: &str) -> RuleLink {
    let f = wirelab_io::bpf::BpfProgram::compile(filter, 1, 65_535).unwrap();
    let l = link(stages, n, wirelab_link::Direction::AToB);
    RuleLink::new(n, Some(f), stages, 1, l)
}

fn default_rule(stages: &str) -> RuleLink {
    let l = link(stages, 0, wirelab_link::Direction::AToB);
    RuleLink::new(0, None, stages, 1, l)
}

#[test]
fn the_first_matching_rule_takes_a_frame_and_rules_merge_by_deadline() {
    // Rule 1 drops port 5004, rule 2 delays port 6000 by 3 ms (rule 1 is
    // first, so 5004 never reaches it); everything else 1 ms.
    let c = SimClock::new(0);
    let mut rx = SimFrames::new(&c);
    let ports = [5004u16, 6000, 7000, 6000];
    for i in 0..200u64 {
        rx.arrive(1_000_000 + i * 1_000_000, &udp(i, ports[(i % 4) as usize]));
    }
    // ARP passes the default stages.
    let mut arp = vec![0u8; 60];
    arp[12..14].copy_from_slice(&[0x08, 0x06]);
    rx.arrive(300_000_000, &arp);
    let mut tx = SimTx::new(&c, 1_000, 0);
    let mut m = DirModel::new(
        vec![
            rule(1, "udp dst port 5004", "loss random 100%"),
            rule(2, "udp dst port 5004 or udp dst port 6000", "delay 3ms"),
        ],
        default_rule("delay 1ms"),
    );
    // Stops once the clock is past every deadline.
    let st = forward_until(&c, 400_000_000, &mut rx, &mut tx, &mut m);
    assert_eq!(st.received, 201);
    assert_eq!(st.dropped.get(EmuFate::Loss), 50);
    assert_eq!(st.sent, 151);
    let r = m.rules();
    assert_eq!(
        (r[0].frames(), r[1].frames(), m.default_link().frames()),
        (50, 100, 51)
    );
    assert_eq!(r[0].link.counters().dropped.loss, 50);
    // Departures in deadline order across the rules, none early; each
    // frame's delay its rule's.
    let mut last = 0;
    for d in &tx.sent {
        let (arrived, delay) = if d.bytes.len() == 60 {
            (300_000_000, 1_000_000)
        } else {
            let i = frame_no(&d.bytes);
            let delay = if i % 2 == 1 { 3_000_000 } else { 1_000_000 };
            assert_ne!(i % 4, 0, "port 5004 is dropped");
            (1_000_000 + i * 1_000_000, delay)
        };
        let deadline = arrived + delay;
        assert!(d.at_ns >= deadline && deadline >= last);
        last = deadline;
    }
}

#[test]
fn recorded_decisions_replay_the_same_releases() {
    let dir = TmpDir::new("replay");
    let arrivals: Vec<(u64, Vec<u8>)> = (0..3_000u64)
        .map(|i| (i * 300_000 + (i * 7919) % 100_000, udp(i, 5004)))
        .collect();
    let run = |m: &mut DirModel| {
        let mut out = Vec::new();
        let mut adm = Admission::default();
        let mut fates = Vec::new();
        for (i, (t, f)) in arrivals.iter().enumerate() {
            adm.dropped.clear();
            adm.queued = 0;
            m.arrive(*t, f, i as u64, &mut adm);
            fates.push(adm.queued);
            m.pop_due(*t, &mut out);
        }
        m.drain(&mut out);
        let mut rel: Vec<(u64, u64)> = out
            .iter()
            .map(|r| (r.index, r.deadline_ns - r.arrival_ns))
            .collect();
        rel.sort_unstable();
        (fates, rel)
    };
    for name in ["d.pkt.csv", "d.nist.bin"] {
        let p = dir.0.join(name);
        let rec = Recorder::create(&p).unwrap();
        let mut a = DirModel::new(
            vec![],
            default_rule("delay 5ms 2ms loss random 10% duplicate 5% seed 3").record_to(rec),
        );
        let (fates, rel) = run(&mut a);
        let done = a.finish_recording();
        assert_eq!(done.len(), 1);
        assert_eq!(done[0].error, None);
        assert!(fates.contains(&0) && fates.contains(&2));
        let mut b = DirModel::new(
            vec![],
            default_rule(&format!("trace {} at-end stop", p.display())),
        );
        let (fates2, rel2) = run(&mut b);
        // The same copies released per frame (a duplicate of which one copy
        // was lost replays as one copy: copies are identical); the same
        // delays, to the ns in pkt-csv and to the µs in nist-bin.
        let differ = fates.iter().zip(&fates2).filter(|(x, y)| x != y).count();
        assert_eq!((differ, fates.len()), (0, fates2.len()), "{name}");
        assert_eq!(rel.len(), rel2.len());
        for (x, y) in rel.iter().zip(&rel2) {
            let tol = if name.ends_with("csv") { 0 } else { 500 };
            assert!(
                x.0 == y.0 && x.1.abs_diff(y.1) <= tol,
                "{name}: {x:?} {y:?}"
            );
        }
    }
    assert!(Recorder::create(&dir.0.join("d.delays")).is_err());
}

#[test]
fn rules_match_by_mac_and_by_the_vlan_tag_the_ring_took_off() {
    let c = SimClock::new(0);
    let mut rx = SimFrames::new(&c);
    let mut from_m = udp(0, 7000);
    from_m[6..12].copy_from_slice(&[2, 0, 0, 0, 0, 1]);
    rx.arrive(1_000, &from_m);
    rx.arrive_tagged(2_000, &udp(1, 7000), (5, 0x8100));
    rx.arrive_tagged(3_000, &udp(2, 7000), (6, 0x8100));
    rx.arrive(4_000, &udp(3, 7000));
    let mut tx = SimTx::new(&c, 1_000, 0);
    let mut m = DirModel::new(
        vec![
            rule(1, "ether src 02:00:00:00:00:01", "loss random 100%"),
            rule(2, "vlan 5", "loss random 100%"),
        ],
        default_rule(""),
    );
    let st = forward_until(&c, 10_000_000, &mut rx, &mut tx, &mut m);
    assert_eq!(
        (st.received, st.sent, st.dropped.get(EmuFate::Loss)),
        (4, 2, 2)
    );
    let r = m.rules();
    assert_eq!((r[0].frames(), r[1].frames()), (1, 1));
    // The VLAN 6 frame left with its tag, the untagged one without.
    assert_eq!(&tx.sent[0].bytes[12..16], &[0x81, 0x00, 0x00, 0x06]);
    assert_eq!(frame_no(&tx.sent[1].bytes), 3);
}

#[test]
fn runtime_changes_keep_what_is_in_flight_and_name_rules_uniquely() {
    use super::ctl::Cmd;
    let (tx, rx) = std::sync::mpsc::channel();
    let mut m = DirModel::new(vec![], default_rule("delay 1ms"));
    m.set_control(rx);
    let mut out = Vec::new();
    let mut adm = Admission::default();
    let mut t = 0u64;
    let mut index = 0u64;
    let mut arrive = |m: &mut DirModel, out: &mut Vec<Release>, n: u64| {
        for _ in 0..n {
            t += 100_000;
            adm.dropped.clear();
            adm.queued = 0;
            m.arrive(t, &udp(index, 5004), index, &mut adm);
            assert_eq!((adm.queued, adm.dropped.len()), (1, 0));
            index += 1;
            m.pop_due(t, out);
        }
    };
    let ack = || std::sync::mpsc::channel::<()>();
    arrive(&mut m, &mut out, 5);
    let (a, ack_rx) = ack();
    tx.send(Cmd::Add(rule(1, "udp dst port 5004", "delay 50ms"), a))
        .unwrap();
    m.control();
    ack_rx.try_recv().unwrap();
    arrive(&mut m, &mut out, 5);
    // Updated while 5 copies wait 50 ms: they leave at their deadlines from
    // the retired link; new frames take the new stages and go on counting.
    let (a, ack_rx) = ack();
    tx.send(Cmd::Replace(
        1,
        rule(1, "udp dst port 5004", "delay 2ms"),
        a,
    ))
    .unwrap();
    m.control();
    ack_rx.try_recv().unwrap();
    arrive(&mut m, &mut out, 5);
    let (a, ack_rx) = ack();
    tx.send(Cmd::Remove(1, a)).unwrap();
    m.control();
    ack_rx.try_recv().unwrap();
    arrive(&mut m, &mut out, 5);
    m.pop_due(u64::MAX, &mut out);
    // Every frame released once, at its stages' delay.
    let mut seen: Vec<(u64, u32, u64, u64)> = out
        .iter()
        .map(|r| (r.index, r.rule, r.seq, r.deadline_ns - r.arrival_ns))
        .collect();
    seen.sort_unstable();
    let want: Vec<(u64, u32, u64, u64)> = (0..20u64)
        .map(|i| match i {
            0..5 => (i, 0, i, 1_000_000),
            5..10 => (i, 1, i - 5, 50_000_000),
            10..15 => (i, 1, i - 5, 2_000_000),
            _ => (i, 0, i - 10, 1_000_000),
        })
        .collect();
    assert_eq!(seen, want);
    assert_eq!(m.rules().len(), 0);
    let ended: Vec<(u32, u64, Option<&str>)> = m
        .ended_rules()
        .iter()
        .map(|e| (e.rule, e.frames, e.ended))
        .collect();
    assert_eq!(ended, [(1, 5, Some("updated")), (1, 5, Some("removed"))]);
    assert_eq!(m.next_deadline(), None);
}

#[test]
fn every_fate_but_sent_is_a_dropped_copy_and_ring_drops_are_not_copies() {
    let mut d = super::forward::Drops::default();
    for row in &wirelab_wire::FATES {
        d.add(row.fate);
    }
    d.ring = 5;
    assert_eq!(d.copies(), wirelab_wire::FATES.len() as u64 - 1);
    assert_eq!(d.total(), d.copies() + 5);
}

#[test]
fn ecn_capable_frames_are_marked_ce_instead_of_dropped() {
    use wirelab_wire::rewrite::{csum, ecn};
    let c = SimClock::new(0);
    let mut rx = SimFrames::new(&c);
    for i in 0..20u64 {
        let mut f = udp(i, 7000);
        if i % 2 == 0 {
            f[15] = 0xb8 | 0b10; // DSCP EF, ECT(0)
        }
        let ck = csum::finish(csum::sum(&f[14..34], 0));
        f[24..26].copy_from_slice(&ck.to_be_bytes());
        rx.arrive(1_000_000 + i * 1_000_000, &f);
    }
    let mut tx = SimTx::new(&c, 1_000, 0);
    let mut m = DirModel::new(vec![], default_rule("delay 1ms loss random 100% ecn"));
    let st = forward_until(&c, 100_000_000, &mut rx, &mut tx, &mut m);
    // Not-ECT frames are lost; ECT ones leave marked, DSCP kept, with a
    // right IPv4 header checksum.
    assert_eq!(
        (st.received, st.sent, st.dropped.get(EmuFate::Loss)),
        (20, 10, 10)
    );
    assert_eq!(m.default_link().link.counters().ecn_marked, 10);
    for d in &tx.sent {
        assert_eq!(frame_no(&d.bytes) % 2, 0);
        assert_eq!(d.bytes[15], 0xb8 | ecn::CE);
        assert_eq!(csum::finish(csum::sum(&d.bytes[14..34], 0)), 0);
    }
}

#[test]
fn the_direction_model_passes_each_frames_flow_to_the_link() {
    // 58-byte frames to two ports, 1 ms apart each, into 2 Mbit/s pipes
    // per port (232 µs per frame: no queue) — each frame leaves 232 µs
    // after it came, which one shared pipe could not do for both ports at
    // once — and the link counts two flows; a non-IP frame is a third.
    let mut m = DirModel::new(vec![], default_rule("rate 2mbit per-flow dport"));
    let mut adm = Admission::default();
    let mut out = Vec::new();
    for i in 0..100u64 {
        let t = 1_000_000 + i * 1_000_000;
        m.arrive(t, &udp(2 * i, 5001), 2 * i, &mut adm);
        m.arrive(t, &udp(2 * i + 1, 5002), 2 * i + 1, &mut adm);
    }
    m.arrive(200_000_000, &[0u8; 60], 200, &mut adm);
    m.drain(&mut out);
    assert_eq!(out.len(), 201);
    for r in &out {
        let cost = if r.index == 200 { 240_000 } else { 232_000 };
        assert_eq!(r.deadline_ns - r.arrival_ns, cost, "{r:?}");
    }
    let c = m.default_link().link.counters();
    assert_eq!((c.flows, c.flow_overflow, c.arrivals), (3, 0, 201));
}

#[test]
fn decisions_of_a_bottleneck_are_recorded_in_frame_order_across_an_update() {
    // Rule 1 serializes 58-byte frames at 1 Mbit/s (464 µs each) behind a
    // queue, frames every 100 µs: they wait. It is updated to `delay 1ms`
    // while 15 of them are still queued, then removed. Its decision trace
    // holds every frame of the rule in order with the delay it got — the
    // queued ones' once they left, then the new stages' — and replays
    // the bottleneck's releases exactly.
    use super::ctl::Cmd;
    let dir = TmpDir::new("bottleneck-rec");
    let p = dir.0.join("r.pkt.csv");
    let rec = Recorder::create(&p).unwrap();
    let stages = "rate 1mbit queue droptail packets=50";
    let (tx, rx) = std::sync::mpsc::channel();
    let mut m = DirModel::new(
        vec![rule(1, "udp dst port 5004", stages).record_to(rec)],
        default_rule("delay 1ms"),
    );
    m.set_control(rx);
    let mut out = Vec::new();
    let mut adm = Admission::default();
    let mut arrive = |m: &mut DirModel, out: &mut Vec<Release>, from: u64, n: u64| {
        for i in from..from + n {
            let t = 1_000_000 + i * 100_000;
            m.arrive(t, &udp(i, 5004), i, &mut adm);
            m.pop_due(t, out);
        }
    };
    arrive(&mut m, &mut out, 0, 20);
    let (a, ack) = std::sync::mpsc::channel();
    tx.send(Cmd::Replace(
        1,
        rule(1, "udp dst port 5004", "delay 1ms"),
        a,
    ))
    .unwrap();
    m.control();
    ack.try_recv().unwrap();
    arrive(&mut m, &mut out, 20, 10);
    let (a, ack) = std::sync::mpsc::channel();
    tx.send(Cmd::Remove(1, a)).unwrap();
    m.control();
    ack.try_recv().unwrap();
    arrive(&mut m, &mut out, 30, 5);
    m.drain(&mut out);
    let done = m.finish_recording();
    assert_eq!(done.len(), 1);
    assert_eq!(
        (done[0].rule, done[0].records, &done[0].error),
        (1, 30, &None)
    );
    let mut rule1: Vec<(u64, u64)> = out
        .iter()
        .filter(|r| r.rule == 1)
        .map(|r| (r.seq, r.deadline_ns - r.arrival_ns))
        .collect();
    rule1.sort_unstable();
    assert_eq!(rule1.len(), 30);
    assert!(rule1[19].1 > 5_000_000, "the queue held them: {rule1:?}");
    let text = std::fs::read_to_string(&p).unwrap();
    let recorded: Vec<u64> = text
        .lines()
        .skip(1)
        .map(|l| {
            let (act, us) = l.split_once(',').unwrap();
            assert_eq!(act, "pass");
            (us.parse::<f64>().unwrap() * 1000.0).round() as u64
        })
        .collect();
    let want: Vec<u64> = rule1.iter().map(|x| x.1).collect();
    assert_eq!(recorded, want);
    // Replayed as a trace, the bottleneck's first 20 frames leave at the
    // same times.
    let replay = format!("trace {} at-end stop", p.display());
    let mut b = DirModel::new(vec![], default_rule(&replay));
    let mut out2 = Vec::new();
    let mut adm = Admission::default();
    for i in 0..20u64 {
        let t = 1_000_000 + i * 100_000;
        b.arrive(t, &udp(i, 5004), i, &mut adm);
    }
    b.drain(&mut out2);
    let got: Vec<u64> = out2.iter().map(|r| r.deadline_ns - r.arrival_ns).collect();
    assert_eq!(got, want[..20]);
}

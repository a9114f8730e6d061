//! The forwarding driver on the simulated backend: a scripted ring, clock
//! and link, and a small scripted model.

use super::*;
use crate::StopFlag;
use std::collections::VecDeque;
use wirelab_io::sim::{SimClock, SimFrames, SimTx};

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

impl LinkModel for Scripted {
    fn arrive(&mut self, t_ns: u64, _len: u32, index: u64) -> u32 {
        let k = index + 1;
        if self.drop_every > 0 && k.is_multiple_of(self.drop_every) {
            return 0;
        }
        let d = t_ns + self.delay_ns;
        self.queue.push_back(Release {
            index,
            deadline_ns: d,
            flip_bit: None,
            send: true,
        });
        if self.dup_every > 0 && k.is_multiple_of(self.dup_every) {
            self.queue.push_back(Release {
                index,
                deadline_ns: d + self.dup_gap_ns,
                flip_bit: self.flip,
                send: true,
            });
            return 2;
        }
        1
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
    let mut clock = c.clone();
    let st = forward(&cfg(), &mut clock, &mut rx, &mut tx, &mut m, &stop).unwrap();
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
    let mut clock = c.clone();
    let st = forward(&cfg(), &mut clock, &mut rx, &mut tx, &mut m, &stop).unwrap();
    assert_eq!(
        (st.received, st.sent, st.corrupted, st.early),
        (30, 32, 6, 0)
    );
    assert_eq!(st.held_at_end, 0);
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
        fn arrive(&mut self, t: u64, len: u32, index: u64) -> u32 {
            self.0.push(len);
            self.1.push_back(Release {
                index,
                deadline_ns: t,
                flip_bit: None,
                send: true,
            });
            1
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
    let mut clock = c.clone();
    forward(&cfg(), &mut clock, &mut rx, &mut tx, &mut m, &stop).unwrap();
    assert_eq!(m.0, [64]);
    let b = &tx.sent[0].bytes;
    assert_eq!(b.len(), 64);
    assert_eq!(&b[12..16], &[0x81, 0x00, 0x00, 0x05]);
}

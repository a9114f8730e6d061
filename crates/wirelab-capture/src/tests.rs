//! The capture driver on the simulated backend: `SimRing`s on a `SimClock`, so every
//! frame, drop and stop is scripted and the results are exact on any machine. Files go
//! to a scratch directory and are read back with `wirelab-pcap`.

use super::*;
use std::fs::File;
use std::io::BufReader;
use std::path::Path;
use wirelab_io::ring_rx::RingStats;
use wirelab_io::sim::{SimClock, SimRing};
use wirelab_pcap::PcapReader;

const MS: u64 = 1_000_000;
/// Where the simulated monotonic clock starts.
const T0: u64 = 1_000 * MS;
/// What the script claims as the ring's retire timeout: the drain after a stop and the
/// merge's idle bound are 2 × 10 ms + 20 ms = 40 ms.
const RETIRE_MS: u32 = 10;

/// A scratch directory, removed on drop.
struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str) -> Scratch {
        let d =
            std::env::temp_dir().join(format!("wirelab-capture-sim-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        Scratch(d)
    }

    fn file(&self) -> PathBuf {
        self.0.join("out.pcapng")
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn config(path: PathBuf, threads: usize) -> CaptureConfig {
    CaptureConfig {
        ifname: "sim0".into(),
        filter: String::new(),
        snaplen: 262_144,
        ring: RingConfig::default(),
        wait: WaitPolicy::Block,
        poll_period_ns: MS,
        count: None,
        duration_ns: Some(200 * MS),
        threads,
        fanout: FanoutMode::Hash,
        path: Some(path),
        merge: true,
        format: FileFormat::Pcapng,
        rotation: Rotation::default(),
        cpus: Vec::new(),
        avoid_rps_cpus: false,
        direct_io: false,
    }
}

/// Frame `k`: its number, then bytes that depend on it, `len` bytes in all.
fn frame(k: u32, len: usize) -> Vec<u8> {
    let mut d = k.to_be_bytes().to_vec();
    d.extend((0..len.saturating_sub(4)).map(|i| (k as usize + i) as u8));
    d
}

/// A frame as the file holds it: arrival on the simulated clock, length on the wire,
/// captured bytes.
type Written = (u64, u32, Vec<u8>);

/// The frames of a file, and its last statistics block.
fn read(path: &Path) -> (Vec<Written>, wirelab_pcap::StatsCounters) {
    let mut r = PcapReader::new(BufReader::new(File::open(path).unwrap())).unwrap();
    let mut v = Vec::new();
    while let Some(p) = r.next_packet().unwrap() {
        v.push((
            p.ts_ns - SimClock::WALL_OFFSET_NS,
            p.orig_len,
            p.data.to_vec(),
        ));
    }
    let stats = r.interface_stats().last().unwrap().counters;
    (v, stats)
}

fn run(cfg: CaptureConfig, rings: Vec<SimRing>, clock: &SimClock) -> CaptureReport {
    run_on(cfg, rings, clock, &StopFlag::new())
}

fn run_on<R: BlockSource + Send + 'static>(
    cfg: CaptureConfig,
    rings: Vec<R>,
    clock: &SimClock,
    stop: &StopFlag,
) -> CaptureReport {
    Capture::with_rings(cfg, rings, 1, clock.clone())
        .unwrap()
        .run(stop, None, |_| {})
        .unwrap()
}

/// 30 frames of growing size every 0.7 ms from T0 + 1 ms, blocks of 10 retired 3 ms after
/// their last frame, then an empty block (a retire timeout on an idle link).
fn thirty_frames(ring: &mut SimRing) -> Vec<Written> {
    let mut want = Vec::new();
    for k in 0..30u32 {
        let at = T0 + MS + u64::from(k) * 700_000;
        let data = frame(k, 60 + k as usize);
        ring.frame(at, &data);
        want.push((at, data.len() as u32, data));
        if k % 10 == 9 {
            ring.retire(at + 3 * MS);
        }
    }
    ring.retire(T0 + 50 * MS);
    want
}

#[test]
fn every_frame_is_written_in_order_with_its_content_and_stamp() {
    for wait in [WaitPolicy::Block, WaitPolicy::Poll, WaitPolicy::Adaptive] {
        let dir = Scratch::new(&format!("order-{}", wait.name()));
        let clock = SimClock::new(T0);
        let mut ring = SimRing::new(&clock, RETIRE_MS);
        let want = thirty_frames(&mut ring);
        let mut cfg = config(dir.file(), 1);
        cfg.wait = wait;
        let r = run(cfg, vec![ring], &clock);

        let (got, stats) = read(&dir.file());
        assert_eq!(got, want, "{}", wait.name());
        let bytes: u64 = want.iter().map(|w| w.2.len() as u64).sum();
        assert_eq!((r.packets, r.bytes), (30, bytes));
        assert_eq!(r.stop_reason, "duration");
        assert_eq!(r.wait, wait.name());
        let t = &r.threads[0];
        assert_eq!(
            (t.blocks, t.ring_packets, t.ring_drops, t.after_stop),
            (4, 30, 0, 0)
        );
        assert_eq!(
            (stats.ifrecv, stats.ifdrop, stats.usrdeliv),
            (Some(30), Some(0), Some(30))
        );
        // No interface behind a simulated ring: no OS drop count.
        assert_eq!(stats.osdrop, None);
        match wait {
            WaitPolicy::Block => {
                assert_eq!(t.poll_cycles, 0);
                // The first frame of a block waits 9 × 0.7 + 3 ms for its block to retire,
                // and a blocking wait wakes the thread at the retirement (to the
                // histogram's three significant digits).
                let d = &r.delivery_latency;
                assert_eq!(d.count, 3, "one sample per block of 10");
                assert!(d.min_ns >= 9_290_000 && d.max_ns < 9_400_000, "{d:?}");
            }
            // Every cycle before the stop slept on the poll grid.
            WaitPolicy::Poll => assert_eq!(t.poll_cycles, t.wakeups),
            WaitPolicy::Adaptive => {}
        }
    }
}

#[test]
fn kernel_drops_are_counted_and_captured_plus_dropped_is_offered() {
    let dir = Scratch::new("drops");
    let clock = SimClock::new(T0);
    let mut ring = SimRing::new(&clock, RETIRE_MS);
    for k in 0..20u32 {
        let at = T0 + MS + u64::from(k) * MS;
        ring.frame(at, &frame(k, 64));
        if k == 4 {
            ring.kernel_drops(at + 100_000, 7);
        }
        if k % 10 == 9 {
            ring.retire(at + MS);
        }
    }
    ring.kernel_drops(T0 + 60 * MS, 5);
    let r = run(config(dir.file(), 1), vec![ring], &clock);

    assert_eq!(r.packets, 20);
    assert_eq!((r.loss.ring_drops, r.loss.ring_freeze_q_cnt), (12, 2));
    assert_eq!(r.threads[0].ring_packets, r.packets + r.loss.ring_drops);
    let (got, stats) = read(&dir.file());
    assert_eq!(got.len(), 20);
    assert_eq!((stats.ifrecv, stats.ifdrop), (Some(32), Some(12)));
}

#[test]
fn count_stops_at_exactly_that_many_frames() {
    let dir = Scratch::new("count");
    let clock = SimClock::new(T0);
    let mut ring = SimRing::new(&clock, RETIRE_MS);
    let want = thirty_frames(&mut ring);
    let mut cfg = config(dir.file(), 1);
    cfg.count = Some(7);
    cfg.duration_ns = None;
    let stop = StopFlag::new();
    let r = run_on(cfg, vec![ring], &clock, &stop);

    assert_eq!((r.packets, r.stop_reason.as_str()), (7, "count"));
    assert!(stop.is_stopped(), "the count stops every thread");
    assert_eq!(read(&dir.file()).0, want[..7]);
    // The count ends the run at once, in the first block: no drain.
    assert_eq!(r.threads[0].blocks, 1);
}

/// A signal at a simulated time: it cuts the ring's wait short, as SIGINT ends `ppoll`.
struct SignalAt<R> {
    ring: R,
    clock: SimClock,
    at_ns: u64,
    stop: StopFlag,
}

impl<R: BlockSource> BlockSource for SignalAt<R> {
    type Block<'a>
        = R::Block<'a>
    where
        Self: 'a;

    fn next_block(&mut self) -> Option<R::Block<'_>> {
        self.ring.next_block()
    }

    fn wait(&mut self, timeout: Duration) -> io::Result<bool> {
        let left = Duration::from_nanos(self.at_ns.saturating_sub(self.clock.peek_ns()));
        let ready = if left.is_zero() {
            self.ring.wait(timeout)?
        } else {
            self.ring.wait(timeout.min(left))?
        };
        if self.clock.peek_ns() >= self.at_ns {
            self.stop.stop();
        }
        Ok(ready)
    }

    fn stats(&mut self) -> io::Result<RingStats> {
        self.ring.stats()
    }

    fn geometry(&self) -> (usize, usize) {
        self.ring.geometry()
    }

    fn retire_ms(&self) -> u32 {
        self.ring.retire_ms()
    }
}

#[test]
fn a_signal_writes_what_was_stamped_before_it_including_blocks_retired_in_the_drain() {
    let dir = Scratch::new("signal");
    let clock = SimClock::new(T0);
    let mut ring = SimRing::new(&clock, RETIRE_MS);
    // Frames every ms from T0 + 1 ms to T0 + 60 ms, blocks of 10 retired 5 ms after their
    // last frame; one more at T0 + 100 ms, long after the drain.
    let mut want = Vec::new();
    for k in 0..60u32 {
        let at = T0 + MS + u64::from(k) * MS;
        let data = frame(k, 80);
        ring.frame(at, &data);
        want.push((at, 80, data));
        if k % 10 == 9 {
            ring.retire(at + 5 * MS);
        }
    }
    ring.frame(T0 + 100 * MS, &frame(99, 80));
    ring.retire(T0 + 105 * MS);
    let stop = StopFlag::new();
    let ring = SignalAt {
        ring,
        clock: clock.clone(),
        at_ns: T0 + 33 * MS + 500_000,
        stop: stop.clone(),
    };
    let mut cfg = config(dir.file(), 1);
    cfg.duration_ns = None;
    let r = run_on(cfg, vec![ring], &clock, &stop);

    assert_eq!(r.stop_reason, "signal");
    // Stamped up to T0 + 33 ms: written, though frames 30..32 sat in a block that only
    // retired (at T0 + 45 ms) during the drain.
    assert_eq!(read(&dir.file()).0, want[..33]);
    let t = &r.threads[0];
    // Stamped after the signal and retired within the 40 ms drain: seen, not written.
    assert_eq!((t.packets, t.after_stop), (33, 27));
    // The frame at T0 + 100 ms had not arrived when the drain ended.
    assert_eq!(t.ring_packets, 60);
}

#[test]
fn snaplen_cuts_frames_and_keeps_their_length_on_the_wire() {
    let dir = Scratch::new("snaplen");
    let clock = SimClock::new(T0);
    let mut ring = SimRing::new(&clock, RETIRE_MS).snaplen(64);
    let lens = [40usize, 64, 65, 1500];
    for (k, &len) in lens.iter().enumerate() {
        ring.frame(T0 + MS * (k as u64 + 1), &frame(k as u32, len));
    }
    ring.retire(T0 + 10 * MS);
    let mut cfg = config(dir.file(), 1);
    cfg.snaplen = 64;
    let r = run(cfg, vec![ring], &clock);

    let (got, _) = read(&dir.file());
    let cut: Vec<(u32, Vec<u8>)> = got.into_iter().map(|(_, o, d)| (o, d)).collect();
    let want: Vec<(u32, Vec<u8>)> = lens
        .iter()
        .enumerate()
        .map(|(k, &len)| (len as u32, frame(k as u32, len)[..len.min(64)].to_vec()))
        .collect();
    assert_eq!(cut, want);
    assert_eq!((r.packets, r.bytes, r.snaplen), (4, 40 + 3 * 64, 64));
    let mut f = PcapReader::new(BufReader::new(File::open(dir.file()).unwrap())).unwrap();
    while f.next_packet().unwrap().is_some() {}
    assert_eq!(f.interfaces()[0].snaplen, 64);
}

/// Three rings whose frames interleave, one every 0.75 ms each, 40 per ring; one frame of
/// ring 2 is stamped before the one it follows (several CPUs feed one ring). Blocks of 8;
/// ring i's retire 1 + 4i ms after their last frame (within the 10 ms the rings claim), so
/// a thread that finds its ring empty has not yet seen everything stamped before then.
/// Returns the frames sorted by stamp.
fn three_interleaved_rings(clocks: &[SimClock]) -> (Vec<SimRing>, Vec<Written>) {
    let mut want = Vec::new();
    let mut rings = Vec::new();
    for (i, clock) in (0..3u32).zip(clocks) {
        let mut ring = SimRing::new(clock, RETIRE_MS);
        for k in 0..40u32 {
            let n = 3 * k + i;
            let at = T0 + MS + u64::from(n) * 250_000;
            let stamp = if i == 2 && k == 21 { at - 800_000 } else { at };
            let data = frame(n, 60);
            ring.frame_stamped(at, SimClock::WALL_OFFSET_NS + stamp, &data);
            want.push((stamp, 60, data));
            if k % 8 == 7 {
                ring.retire(at + MS + 4 * MS * u64::from(i));
            }
        }
        rings.push(ring);
    }
    want.sort();
    (rings, want)
}

#[test]
fn merged_fanout_threads_write_one_sorted_complete_file() {
    let dir = Scratch::new("merge");
    let clock = SimClock::new(T0);
    let (rings, want) = three_interleaved_rings(&[clock.clone(), clock.clone(), clock.clone()]);
    let r = run(config(dir.file(), 3), rings, &clock);

    let (got, stats) = read(&dir.file());
    assert_eq!(got, want, "one stream, sorted by stamp, nothing missing");
    let m = r.merge.as_ref().unwrap();
    assert_eq!((r.packets, m.packets, m.late), (120, 120, 0));
    assert!(r
        .threads
        .iter()
        .all(|t| t.packets == 40 && t.files.is_empty()));
    assert_eq!(r.ring.fanout, Some("hash"));
    assert_eq!((stats.ifrecv, stats.usrdeliv), (Some(120), Some(120)));
}

/// A capture thread with its own clock, stop flag and counters.
fn lone_worker(
    idx: usize,
    ring: SimRing,
    clock: SimClock,
    sink: Sink,
) -> Worker<SimRing, SimClock> {
    let mut c = clock.clone();
    Worker {
        idx,
        ring,
        deadline: Some(c.now_ns() + 200 * MS),
        clock,
        sink,
        live: Arc::new(Live::default()),
        stop: StopFlag::new(),
        stop_at: Arc::new(AtomicU64::new(0)),
        wait: WaitPolicy::Block,
        poll_period_ns: MS,
        count: None,
        drain_ns: capture::in_flight_bound_ns(RETIRE_MS),
        iface: None,
    }
}

#[test]
fn the_merge_stays_sorted_when_one_thread_lags_far_behind() {
    // A lopsided schedule: threads 0 and 1 run to their end before thread 2, the one with
    // the slowest blocks, starts. Each thread has its own timeline; the merge may only
    // trust what each one promises about its own ring. (Whether a broken promise shows
    // here depends on the writer releasing between thread 2's cycles; the watermark
    // itself is pinned in `merge`'s tests.)
    let dir = Scratch::new("merge-lag");
    let clocks = [SimClock::new(T0), SimClock::new(T0), SimClock::new(T0)];
    let (rings, want) = three_interleaved_rings(&clocks);
    let cfg = config(dir.file(), 3);
    let out = OutputConfig {
        path: cfg.path.clone(),
        format: cfg.format,
        rotation: cfg.rotation,
        ifname: cfg.ifname.clone(),
        description: None,
        linktype: 1,
        snaplen: cfg.snaplen,
        flush_each_cycle: false,
        direct_io: false,
    };
    let out = Output::create(out, SimClock::WALL_OFFSET_NS + T0).unwrap();
    let (txs, writer) =
        merge::start(3, out, RETIRE_MS, StopFlag::new(), SimClock::new(T0)).unwrap();
    let mut threads = Vec::new();
    for (i, ((ring, clock), tx)) in rings.into_iter().zip(clocks).zip(txs).enumerate() {
        threads.push(lone_worker(i, ring, clock, Sink::Merge(tx)).run().unwrap());
    }
    let m = writer.join().unwrap();

    let (got, _) = read(&dir.file());
    assert_eq!(got, want);
    assert_eq!((m.packets, m.late), (120, 0));
    assert!(threads.iter().all(|t| t.packets == 40));
}

#[test]
fn a_wrong_number_of_rings_is_refused() {
    let clock = SimClock::new(T0);
    let ring = SimRing::new(&clock, RETIRE_MS);
    let e = Capture::with_rings(config(PathBuf::from("unused"), 2), vec![ring], 1, clock)
        .err()
        .unwrap();
    assert!(
        e.to_string()
            .contains("2 capture threads need 2 rings, got 1"),
        "{e}"
    );
}

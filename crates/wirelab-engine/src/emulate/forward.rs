//! One direction of the link emulator: frames from a receive ring, through
//! a link model, out of a transmit link on their deadlines.
//!
//! Every frame's time is its kernel receive stamp, so the time user space
//! took to see it is not added to its delay. A frame leaves only once the
//! clock has passed its deadline (never early); the wait for the next
//! deadline is the pacer's hybrid one (sleep, then spin), except that the
//! sleep is a wait on the ring, so an arrival ends it.

use crate::pace::{send_batch, SEND_RETRIES};
use crate::StopFlag;
use std::collections::HashMap;
use std::io;
use std::time::Duration;
use wirelab_analysis::percentiles::{histogram, Percentiles};
use wirelab_core::pace::{LatePolicy, MarginBounds, PaceConfig, Pacer, Step, WaitStrategy};
use wirelab_io::ring_frames::{with_vlan, FrameSource};
use wirelab_io::{Clock, Transmit};
use wirelab_wire::rewrite::{fix_checksums, parse_ethernet};

/// One copy of a packet leaving the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Release {
    /// The packet's index in its direction (0 = the first frame received).
    pub index: u64,
    /// When it may leave (monotonic ns).
    pub deadline_ns: u64,
    /// A bit of the frame to flip first (corruption), counted from the
    /// first byte's most significant bit.
    pub flip_bit: Option<u32>,
    /// False: the copy was dropped where it was queued (an AQM's decision).
    pub send: bool,
}

/// What the driver needs of a direction's link model.
pub trait LinkModel {
    /// Packet `index` of `len` bytes (L2, without FCS) arrived at `t_ns`;
    /// returns how many releases it will give (0: dropped now, counted by
    /// the model).
    fn arrive(&mut self, t_ns: u64, len: u32, index: u64) -> u32;
    /// The earliest deadline of what is queued.
    fn next_deadline(&self) -> Option<u64>;
    /// Appends every release whose deadline is at or before `now_ns`, in
    /// the order they leave.
    fn pop_due(&mut self, now_ns: u64, out: &mut Vec<Release>);
}

/// Knobs of [`forward`].
#[derive(Debug, Clone, Copy)]
pub struct ForwardConfig {
    /// Monotonic minus wall-clock time (kernel stamps are wall clock).
    pub real_to_mono: i128,
    /// Spin margin before a deadline (learned from the sleeps when
    /// `learn`).
    pub spin_ns: u64,
    pub learn: bool,
    /// Frames read per turn before due releases are served.
    pub burst: usize,
    /// Longest idle wait (how often the stop flag is seen).
    pub idle: Duration,
}

impl Default for ForwardConfig {
    fn default() -> Self {
        ForwardConfig {
            real_to_mono: 0,
            spin_ns: 200_000,
            learn: true,
            burst: 64,
            idle: Duration::from_millis(50),
        }
    }
}

/// What one direction did.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct ForwardStats {
    /// Frames read from the ring.
    pub received: u64,
    /// Frames handed to the kernel (copies included).
    pub sent: u64,
    /// Copies the model dropped at dequeue.
    pub dropped_in_queue: u64,
    /// Frames the transmit link refused.
    pub send_failures: u64,
    /// Transient send errors retried.
    pub send_retries: u64,
    /// Frames flipped a bit of.
    pub corrupted: u64,
    /// Frames that left before their deadline: always 0, counted to show it.
    pub early: u64,
    /// Release lateness: departure minus deadline.
    pub lateness: Percentiles,
    /// Frames held at the end (not sent when stopped).
    pub held_at_end: u64,
}

struct Held {
    buf: Vec<u8>,
    copies: u32,
}

/// Forwards until `stop`, returning what it did. Errors: a receive or a
/// hard send error (the interface went away).
pub fn forward<C: Clock, R: FrameSource, T: Transmit, M: LinkModel>(
    cfg: &ForwardConfig,
    clock: &mut C,
    rx: &mut R,
    tx: &mut T,
    model: &mut M,
    stop: &StopFlag,
) -> io::Result<ForwardStats> {
    let mut st = ForwardStats::default();
    let mut pacer = Pacer::new(
        0,
        PaceConfig {
            wait: WaitStrategy::Hybrid {
                spin_ns: cfg.spin_ns,
            },
            learn: cfg.learn.then_some(MarginBounds::SEND),
            late: LatePolicy::Burst,
            anchor_first: false,
        },
    );
    let mut held: HashMap<u64, Held> = HashMap::new();
    let mut pool: Vec<Vec<u8>> = Vec::new();
    let mut due: Vec<Release> = Vec::new();
    let mut flipped: Vec<Vec<u8>> = Vec::new();
    let mut late = histogram();
    let mut index = 0u64;
    while !stop.is_stopped() {
        // Arrivals: what the ring holds, a bounded burst at a time.
        let mut n = 0;
        while n < cfg.burst {
            let Some(f) = rx.peek() else { break };
            let t = (i128::from(f.ts_ns) + cfg.real_to_mono).max(0) as u64;
            let len = f.data.len() as u32 + if f.vlan.is_some() { 4 } else { 0 };
            let copies = model.arrive(t, len, index);
            if copies > 0 {
                let mut buf = pool.pop().unwrap_or_default();
                with_vlan(f.data, f.vlan, &mut buf);
                if f.csum_partial {
                    // What the sender's NIC would have done on a wire.
                    let l = parse_ethernet(&buf);
                    fix_checksums(&mut buf, &l, false);
                }
                held.insert(index, Held { buf, copies });
            }
            rx.release();
            st.received += 1;
            index += 1;
            n += 1;
        }
        // Releases: everything due, in one send call.
        let now = clock.now_ns();
        due.clear();
        model.pop_due(now, &mut due);
        if !due.is_empty() {
            release(&due, now, tx, &mut held, &mut flipped, &mut st, &mut late)?;
            for r in &due {
                if let Some(h) = held.get_mut(&r.index) {
                    h.copies -= 1;
                    if h.copies == 0 {
                        if let Some(h) = held.remove(&r.index) {
                            pool.push(h.buf);
                        }
                    }
                }
            }
            continue;
        }
        if n == cfg.burst {
            continue;
        }
        // Wait for the next deadline or arrival.
        let Some(deadline) = model.next_deadline() else {
            rx.wait(cfg.idle)?;
            continue;
        };
        match pacer.step(deadline, now) {
            Step::Go => {}
            Step::Sleep(t) => {
                let arrived = rx.wait(Duration::from_nanos(t - now))?;
                let woke = clock.now_ns();
                // Only a sleep that ran its course says how late wake-ups are.
                if !arrived && woke >= t {
                    pacer.slept(now, t, woke, deadline);
                }
            }
            Step::Spin(t) => {
                while rx.peek().is_none() && clock.now_ns() < t {
                    std::hint::spin_loop();
                }
            }
        }
        if pacer.cpu_due(now) {
            pacer.cpu_sample(now, clock.thread_cpu_ns());
        }
    }
    st.lateness = Percentiles::of(&late);
    st.held_at_end = held.len() as u64;
    Ok(st)
}

/// Sends the copies in `due` that are to be sent, as one batch.
fn release<T: Transmit>(
    due: &[Release],
    now: u64,
    tx: &mut T,
    held: &mut HashMap<u64, Held>,
    flipped: &mut Vec<Vec<u8>>,
    st: &mut ForwardStats,
    late: &mut hdrhistogram::Histogram<u64>,
) -> io::Result<()> {
    // Corrupted copies get their own buffer: the other copies stay intact.
    flipped.clear();
    for r in due.iter().filter(|r| r.send) {
        if let (Some(bit), Some(h)) = (r.flip_bit, held.get(&r.index)) {
            let mut b = h.buf.clone();
            if let Some(byte) = b.get_mut((bit / 8) as usize) {
                *byte ^= 0x80 >> (bit % 8);
            }
            flipped.push(b);
        }
    }
    let mut frames: Vec<&[u8]> = Vec::with_capacity(due.len());
    let mut k = 0;
    for r in due {
        if !r.send {
            st.dropped_in_queue += 1;
            continue;
        }
        let Some(h) = held.get(&r.index) else {
            continue;
        };
        if r.flip_bit.is_some() {
            frames.push(&flipped[k]);
            k += 1;
            st.corrupted += 1;
        } else {
            frames.push(&h.buf);
        }
        if now < r.deadline_ns {
            st.early += 1;
        }
        let _ = late.record((now - r.deadline_ns.min(now)).max(1));
    }
    let mut off = 0;
    while off < frames.len() {
        let d = send_batch(tx, &frames[off..], SEND_RETRIES);
        st.sent += d.sent as u64;
        st.send_retries += d.retries;
        off += d.sent;
        if let Some(e) = d.error {
            if e.raw_os_error() == Some(libc::ENXIO) || e.raw_os_error() == Some(libc::ENODEV) {
                return Err(e);
            }
            // The kernel refused this frame (too long for the egress MTU,
            // say): count it and go on with the rest.
            st.send_failures += 1;
            off += 1;
        }
    }
    Ok(())
}

//! One direction of the link emulator: frames from a receive ring, through
//! a link model, out of a transmit link on their deadlines.
//!
//! Every frame's time is its kernel receive stamp, so the time user space
//! took to see it is not added to its delay. A frame leaves only once the
//! clock has passed its deadline (never early); the wait for the next
//! deadline is the pacer's hybrid one (sleep, then spin), except that the
//! sleep is a wait on the ring, so an arrival ends it.
//!
//! Every copy of every frame ends in exactly one fate ([`EmuFate`]): sent,
//! or dropped for a reason — by the model at arrival (loss, trace, limit,
//! …) or at dequeue (queue), refused by the kernel (send failure), or still
//! waiting when the run stops (unsent). So `received + duplicates = sent +
//! dropped` holds at the end, per direction. The counters are published
//! live ([`LiveDir`]) and each fate can be logged ([`Outputs::log`]).

use super::live::LiveDir;
use super::mmlog::{self, MmLogHandle};
use super::tap::TapWriter;
use crate::pace::{send_batch, SEND_RETRIES};
use crate::recordlog::RecordWriter;
use crate::StopFlag;
use serde::Serialize;
use std::collections::HashMap;
use std::io;
use std::time::Duration;
use wirelab_analysis::fates::FateCounts;
use wirelab_analysis::percentiles::histogram;
use wirelab_analysis::DelayStats;
use wirelab_core::pace::{LatePolicy, MarginBounds, PaceConfig, Pacer, Step, WaitStrategy};
use wirelab_io::ring_frames::{with_vlan, FrameSource};
use wirelab_io::{Clock, Transmit};
use wirelab_link::OpportunityLog;
use wirelab_wire::record::{EmuFate, EmuRecord};
use wirelab_wire::rewrite::{fix_checksums, parse_ethernet};

/// One copy of a packet leaving the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Release {
    /// The frame's index in its direction (0 = the first frame received):
    /// which held frame this is a copy of.
    pub index: u64,
    /// The rule that took the frame (0: the direction's default stages).
    pub rule: u32,
    /// The frame's index among its rule's frames.
    pub seq: u64,
    /// 0 for the original, 1.. for duplicates.
    pub copy: u8,
    /// Its arrival time (monotonic ns), as the model used it.
    pub arrival_ns: u64,
    /// When it may leave (monotonic ns).
    pub deadline_ns: u64,
    /// A bit of the frame to flip first (corruption), counted from the
    /// first byte's most significant bit.
    pub flip_bit: Option<u32>,
    /// `Some`: the copy was dropped where it waited (an AQM, drophead, a
    /// link that went down), with that fate; it is not sent.
    pub dropped: Option<EmuFate>,
    /// Set ECN Congestion Experienced on the copy (it is ECN-capable).
    pub ce: bool,
}

/// What the model decided about a frame when it arrived.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Admission {
    /// The rule that took it (0: the direction's default stages).
    pub rule: u32,
    /// Its index among that rule's frames (what keys its randomness).
    pub seq: u64,
    /// Copies it will release.
    pub queued: u32,
    /// Copies dropped at once: (copy number, why).
    pub dropped: Vec<(u8, EmuFate)>,
}

/// What the driver needs of a direction's link model.
pub trait LinkModel {
    /// Frame `index` (the direction's count, from 0) arrived at `t_ns`
    /// (its kernel stamp, monotonic); `frame` is its bytes as they will
    /// leave (L2, VLAN tag included, no FCS). The model fills `out`, which
    /// the caller has cleared.
    fn arrive(&mut self, t_ns: u64, frame: &[u8], index: u64, out: &mut Admission);
    /// The earliest deadline of what is queued.
    fn next_deadline(&self) -> Option<u64>;
    /// Appends every release whose deadline is at or before `now_ns`, in
    /// the order they leave.
    fn pop_due(&mut self, now_ns: u64, out: &mut Vec<Release>);
    /// Appends every copy still queued (the run is over); by default the
    /// releases due at the end of time.
    fn drain(&mut self, out: &mut Vec<Release>) {
        self.pop_due(u64::MAX, out);
    }
    /// Applies pending runtime changes (called between frames).
    fn control(&mut self) {}
    /// Logs the delivery opportunities of the model's `link` stages, now
    /// and in links added later, to a closure `make` returns (`--mm-log`).
    fn set_opportunity_log(&mut self, make: Box<dyn Fn() -> OpportunityLog + Send>) {
        let _ = make;
    }
    /// The run stops at `now_ns` (after the last `pop_due`): ends the
    /// opportunity logs (what `drain` runs after is not logged).
    fn end_opportunity_log(&mut self, now_ns: u64) {
        let _ = now_ns;
    }
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
    /// Longest wait (how often the stop flag and runtime changes are
    /// seen).
    pub idle: Duration,
    /// 0 a→b, 1 b→a (in log records).
    pub direction: u8,
}

impl Default for ForwardConfig {
    fn default() -> Self {
        ForwardConfig {
            real_to_mono: 0,
            spin_ns: 200_000,
            learn: true,
            burst: 64,
            idle: Duration::from_millis(10),
            direction: 0,
        }
    }
}

/// Copies not sent, by reason. `ring` counts frames the kernel dropped in
/// front of the emulator (its receive ring was full); they were never
/// received, so they are not copies and not in [`Drops::copies`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Drops {
    /// By fate; `sent` is never counted here.
    pub fates: FateCounts,
    pub ring: u64,
}

impl Drops {
    /// Counts one copy with this fate (`Sent` counts nowhere).
    pub fn add(&mut self, f: EmuFate) {
        if f != EmuFate::Sent {
            self.fates.add(f);
        }
    }

    pub fn get(&self, f: EmuFate) -> u64 {
        self.fates.get(f)
    }

    /// Every reason with its count (names as in JSON), `ring` last.
    pub fn by_reason(&self) -> impl Iterator<Item = (&'static str, u64)> + '_ {
        self.fates
            .drops()
            .map(|(row, n)| (row.name, n))
            .chain([("ring", self.ring)])
    }

    /// Copies dropped (every reason but `ring`).
    pub fn copies(&self) -> u64 {
        self.fates.total()
    }

    /// Everything not forwarded, `ring` included.
    pub fn total(&self) -> u64 {
        self.copies() + self.ring
    }
}

/// `{"loss": n, …, "link_down": n, "ring": n}`.
impl Serialize for Drops {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = s.serialize_map(None)?;
        self.fates.serialize_drops(&mut map)?;
        map.serialize_entry("ring", &self.ring)?;
        map.end()
    }
}

/// Upper bounds (ns) of the release-lateness buckets; the last bucket is
/// everything above the last bound.
pub const LATENESS_BOUNDS_NS: [u64; 5] = [1_000, 10_000, 100_000, 1_000_000, 10_000_000];

/// One bucket of the release-lateness histogram.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Bucket {
    /// Upper bound, inclusive (`None`: above the previous bound).
    pub le_ns: Option<u64>,
    pub count: u64,
}

/// What one direction did.
#[derive(Debug, Clone, Default, Serialize)]
pub struct ForwardStats {
    /// Frames read from the ring.
    pub received: u64,
    /// Copies handed to the kernel.
    pub sent: u64,
    /// Their bytes (L2 frame lengths, VLAN tag included).
    pub received_bytes: u64,
    pub sent_bytes: u64,
    /// Copies made beyond the original.
    pub duplicates: u64,
    /// Copies sent with a bit flipped.
    pub corrupted: u64,
    /// Copies not sent, by reason.
    pub dropped: Drops,
    /// Transient send errors retried.
    pub send_retries: u64,
    /// Copies that left before their deadline: always 0, counted to show it.
    pub early: u64,
    /// Release lateness: departure minus deadline.
    pub lateness: DelayStats,
    /// The same as a coarse histogram ([`LATENESS_BOUNDS_NS`]).
    pub lateness_buckets: Vec<Bucket>,
    /// The log stopped on this write error (the run went on).
    #[serde(skip)]
    pub log_error: Option<String>,
}

/// Where a direction reports beyond its return value; all optional.
#[derive(Default)]
pub struct Outputs<'a> {
    /// Counters for a live display.
    pub live: Option<&'a LiveDir>,
    /// The per-copy log (`--log`): one record per fate.
    pub log: Option<&'a mut RecordWriter>,
    /// The frames sent, with their departure stamps (`--tap`).
    pub tap: Option<&'a mut TapWriter>,
    /// The Mahimahi-compatible log (`--mm-log`): arrivals and departures.
    pub mm: Option<MmLogHandle>,
}

struct Held {
    buf: Vec<u8>,
    copies: u32,
    len: u32,
    /// Its kernel receive stamp (monotonic).
    arrival: u64,
}

/// The log and what it needs: wall-clock times and the direction.
struct Log<'a, 'b> {
    w: Option<&'a mut RecordWriter>,
    tap: Option<&'b mut TapWriter>,
    mm: Option<MmLogHandle>,
    real_to_mono: i128,
    direction: u8,
    error: Option<String>,
}

impl Log<'_, '_> {
    fn wall(&self, mono: u64) -> u64 {
        (i128::from(mono) - self.real_to_mono).max(0) as u64
    }

    /// One copy's fate; times monotonic (0: none).
    #[allow(clippy::too_many_arguments)]
    fn fate(
        &mut self,
        rule: u32,
        seq: u64,
        copy: u8,
        len: u32,
        arrival: u64,
        deadline: u64,
        departure: u64,
        fate: EmuFate,
        corrupted: bool,
    ) {
        if self.error.is_some() || self.w.is_none() {
            return;
        }
        let some = |t: u64| if t == 0 { 0 } else { self.wall(t) };
        let e = EmuRecord {
            rule,
            direction: self.direction,
            seq,
            copy,
            len,
            arrival_ns: self.wall(arrival),
            deadline_ns: some(deadline),
            departure_ns: some(departure),
            fate,
            corrupted,
            kernel_stamp: true,
        };
        let Some(w) = self.w.as_mut() else { return };
        if let Err(e) = w.write(&e.to_record()) {
            self.error = Some(e.to_string());
        }
    }
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
    out: Outputs<'_>,
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
    let live = out.live;
    let mut log = Log {
        w: out.log,
        tap: out.tap,
        mm: out.mm,
        real_to_mono: cfg.real_to_mono,
        direction: cfg.direction,
        error: None,
    };
    let mut frames = Holding::default();
    let mut due: Vec<Release> = Vec::new();
    let mut scratch: Vec<Vec<u8>> = Vec::new();
    let mut late = histogram();
    while !stop.is_stopped() {
        model.control();
        // Arrivals: what the ring holds, a bounded burst at a time.
        let n = frames.admit_burst(cfg, rx, model, &mut st, &mut log);
        // Releases: everything due, in one send call.
        let now = clock.now_ns();
        due.clear();
        model.pop_due(now, &mut due);
        if !due.is_empty() {
            release(
                &due,
                clock,
                tx,
                &frames.held,
                &mut scratch,
                &mut st,
                &mut late,
                &mut log,
            )?;
            frames.retire(&due);
            if let Some(l) = live {
                l.publish(&st, frames.held.len());
            }
            continue;
        }
        if let Some(l) = live {
            l.publish(&st, frames.held.len());
        }
        if n == cfg.burst {
            continue;
        }
        // Wait for the next deadline or arrival.
        wait_next(cfg, clock, rx, model, &mut pacer, &mut log, now)?;
    }
    // What still waits for its deadline is not sent: each copy's fate.
    if log.mm.is_some() {
        model.end_opportunity_log(clock.now_ns());
    }
    due.clear();
    model.drain(&mut due);
    for r in &due {
        st.dropped.add(EmuFate::Unsent);
        let len = frames.held.get(&r.index).map_or(0, |h| h.len);
        log.fate(
            r.rule,
            r.seq,
            r.copy,
            len,
            r.arrival_ns,
            r.deadline_ns,
            0,
            EmuFate::Unsent,
            false,
        );
    }
    st.lateness = DelayStats::of_hist(&late);
    st.lateness_buckets = buckets(&late);
    st.log_error = log.error;
    if let Some(l) = live {
        l.publish(&st, 0);
    }
    Ok(st)
}

/// The frames a direction holds until their copies leave, by index, and
/// the buffers of those gone, reused for the next arrivals.
#[derive(Default)]
struct Holding {
    held: HashMap<u64, Held>,
    pool: Vec<Vec<u8>>,
    /// The model's answer for the frame being admitted (reused).
    adm: Admission,
    /// The next frame's index in this direction.
    index: u64,
}

impl Holding {
    /// Reads up to `cfg.burst` frames from the ring and hands each to the
    /// model; returns how many were read.
    #[inline]
    fn admit_burst<R: FrameSource, M: LinkModel>(
        &mut self,
        cfg: &ForwardConfig,
        rx: &mut R,
        model: &mut M,
        st: &mut ForwardStats,
        log: &mut Log<'_, '_>,
    ) -> usize {
        let mut n = 0;
        while n < cfg.burst {
            let Some(f) = rx.peek() else { break };
            let t = (i128::from(f.ts_ns) + cfg.real_to_mono).max(0) as u64;
            let mut buf = self.pool.pop().unwrap_or_default();
            with_vlan(f.data, f.vlan, &mut buf);
            if f.csum_partial {
                // What the sender's NIC would have done on a wire.
                let l = parse_ethernet(&buf);
                fix_checksums(&mut buf, &l, false);
            }
            rx.release();
            self.admit(t, buf, model, st, log);
            n += 1;
        }
        n
    }

    /// Frame `buf`, stamped `t`, through the model: copies dropped at once
    /// get their fate; a frame with copies queued is held, else its buffer
    /// goes back to the pool.
    #[inline]
    fn admit<M: LinkModel>(
        &mut self,
        t: u64,
        buf: Vec<u8>,
        model: &mut M,
        st: &mut ForwardStats,
        log: &mut Log<'_, '_>,
    ) {
        let adm = &mut self.adm;
        let len = buf.len() as u32;
        adm.dropped.clear();
        adm.queued = 0;
        model.arrive(t, &buf, self.index, adm);
        st.received += 1;
        st.received_bytes += u64::from(len);
        if let Some(m) = &log.mm {
            mmlog::with(m, |w| w.arrival(t, len));
        }
        st.duplicates += (u64::from(adm.queued) + adm.dropped.len() as u64).saturating_sub(1);
        for &(copy, why) in &adm.dropped {
            st.dropped.add(why);
            log.fate(adm.rule, adm.seq, copy, len, t, 0, 0, why, false);
        }
        if adm.queued > 0 {
            let h = Held {
                buf,
                copies: adm.queued,
                len,
                arrival: t,
            };
            self.held.insert(self.index, h);
        } else {
            self.pool.push(buf);
        }
        self.index += 1;
    }

    /// Counts the released copies off their frames; a frame whose last
    /// copy left gives its buffer back to the pool.
    #[inline]
    fn retire(&mut self, due: &[Release]) {
        for r in due {
            if let Some(h) = self.held.get_mut(&r.index) {
                h.copies -= 1;
                if h.copies == 0 {
                    if let Some(h) = self.held.remove(&r.index) {
                        self.pool.push(h.buf);
                    }
                }
            }
        }
    }
}

/// Waits for the next deadline (the pacer's hybrid wait, the sleep a wait
/// on the ring so an arrival ends it) or, with nothing queued, for an
/// arrival; never longer than `cfg.idle`.
fn wait_next<C: Clock, R: FrameSource, M: LinkModel>(
    cfg: &ForwardConfig,
    clock: &mut C,
    rx: &mut R,
    model: &M,
    pacer: &mut Pacer,
    log: &mut Log<'_, '_>,
    now: u64,
) -> io::Result<()> {
    let Some(deadline) = model.next_deadline() else {
        if let Some(t) = log.tap.as_mut() {
            t.idle();
        }
        rx.wait(cfg.idle)?;
        return Ok(());
    };
    match pacer.step(deadline, now) {
        Step::Go => {}
        Step::Sleep(t) => {
            // At most the idle wait: the stop flag and runtime changes
            // are seen that often however far the next deadline is.
            let arrived = rx.wait(Duration::from_nanos(t - now).min(cfg.idle))?;
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
    Ok(())
}

fn buckets(h: &hdrhistogram::Histogram<u64>) -> Vec<Bucket> {
    let mut out = Vec::with_capacity(LATENESS_BOUNDS_NS.len() + 1);
    let mut below = 0;
    for b in LATENESS_BOUNDS_NS {
        let n = h.count_between(0, b);
        out.push(Bucket {
            le_ns: Some(b),
            count: n - below,
        });
        below = n;
    }
    out.push(Bucket {
        le_ns: None,
        count: h.len() - below,
    });
    out
}

/// Copies sent per send call at most (stack arrays: nothing is allocated
/// per batch).
const BATCH: usize = 64;

/// Sends the copies in `due` that are to be sent, in order, and gives
/// every copy its fate. `scratch` holds corrupted copies' buffers (reused).
#[allow(clippy::too_many_arguments)]
fn release<C: Clock, T: Transmit>(
    due: &[Release],
    clock: &mut C,
    tx: &mut T,
    held: &HashMap<u64, Held>,
    scratch: &mut Vec<Vec<u8>>,
    st: &mut ForwardStats,
    late: &mut hdrhistogram::Histogram<u64>,
    log: &mut Log<'_, '_>,
) -> io::Result<()> {
    let mut i = 0;
    while i < due.len() {
        // The next copies to send (at most a batch); a copy dropped at
        // dequeue gets its fate on the way.
        let mut pick = [0usize; BATCH];
        let (mut k, mut flips) = (0, 0);
        while i < due.len() && k < BATCH {
            let r = &due[i];
            i += 1;
            let Some(h) = held.get(&r.index) else {
                continue;
            };
            if let Some(fate) = r.dropped {
                st.dropped.add(fate);
                log.fate(
                    r.rule,
                    r.seq,
                    r.copy,
                    h.len,
                    r.arrival_ns,
                    r.deadline_ns,
                    0,
                    fate,
                    false,
                );
                continue;
            }
            if r.flip_bit.is_some() || r.ce {
                // A marked or corrupted copy gets its own buffer: the
                // others stay intact.
                if scratch.len() == flips {
                    scratch.push(Vec::new());
                }
                let b = &mut scratch[flips];
                b.clear();
                b.extend_from_slice(&h.buf);
                if r.ce {
                    wirelab_wire::rewrite::ecn::mark_ce(b);
                }
                if let Some(bit) = r.flip_bit {
                    if let Some(byte) = b.get_mut((bit / 8) as usize) {
                        *byte ^= 0x80 >> (bit % 8);
                    }
                }
                flips += 1;
            }
            pick[k] = i - 1;
            k += 1;
        }
        let mut frames: [&[u8]; BATCH] = [&[]; BATCH];
        let mut f = 0;
        for (slot, &j) in frames.iter_mut().zip(&pick[..k]) {
            let r = &due[j];
            *slot = if r.flip_bit.is_some() || r.ce {
                f += 1;
                &scratch[f - 1]
            } else {
                held.get(&r.index).map_or(&[][..], |h| &h.buf)
            };
        }
        send(
            due,
            &pick[..k],
            &frames[..k],
            held,
            clock,
            tx,
            st,
            late,
            log,
        )?;
    }
    Ok(())
}

/// Sends `frames` (copies `due[pick[..]]`), each send call stamped with
/// the clock just before it.
#[allow(clippy::too_many_arguments)]
fn send<C: Clock, T: Transmit>(
    due: &[Release],
    pick: &[usize],
    frames: &[&[u8]],
    held: &HashMap<u64, Held>,
    clock: &mut C,
    tx: &mut T,
    st: &mut ForwardStats,
    late: &mut hdrhistogram::Histogram<u64>,
    log: &mut Log<'_, '_>,
) -> io::Result<()> {
    let mut off = 0;
    while off < frames.len() {
        let t = clock.now_ns();
        let d = send_batch(tx, &frames[off..], SEND_RETRIES);
        st.send_retries += d.retries;
        for (&j, f) in pick[off..off + d.sent].iter().zip(&frames[off..]) {
            let r = &due[j];
            st.sent += 1;
            st.sent_bytes += f.len() as u64;
            if let Some(m) = &log.mm {
                let arrival = held.get(&r.index).map_or(r.arrival_ns, |h| h.arrival);
                mmlog::with(m, |w| w.departure(t, f.len() as u32, arrival));
            }
            let corrupted = r.flip_bit.is_some();
            st.corrupted += u64::from(corrupted);
            if t < r.deadline_ns {
                st.early += 1;
            }
            let _ = late.record((t - r.deadline_ns.min(t)).max(1));
            log.fate(
                r.rule,
                r.seq,
                r.copy,
                f.len() as u32,
                r.arrival_ns,
                r.deadline_ns,
                t,
                EmuFate::Sent,
                corrupted,
            );
            let wall = log.wall(t);
            if let Some(tap) = log.tap.as_mut() {
                tap.frame(wall, f);
            }
        }
        off += d.sent;
        if let Some(e) = d.error {
            if e.raw_os_error() == Some(libc::ENXIO) || e.raw_os_error() == Some(libc::ENODEV) {
                return Err(e);
            }
            // The kernel refused this frame (too long for the egress MTU,
            // say): count it and go on with the rest.
            if let Some(&j) = pick.get(off) {
                let r = &due[j];
                st.dropped.add(EmuFate::SendFailure);
                log.fate(
                    r.rule,
                    r.seq,
                    r.copy,
                    frames[off].len() as u32,
                    r.arrival_ns,
                    r.deadline_ns,
                    0,
                    EmuFate::SendFailure,
                    r.flip_bit.is_some(),
                );
            }
            off += 1;
        }
    }
    Ok(())
}

//! One direction of an emulated link: decisions at arrival, releases in
//! deadline order.

use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;
use std::fmt;

use rand::RngCore;
use serde::Serialize;
use thiserror::Error;

use crate::trace::{Action, ActionSource};

use super::process::{Correlated, DelaySampler, LossProcess};
use super::rate::RateLink;
use super::rng::{link_key, Domain, Stream};
use super::slot::Slots;
use super::spec::{LinkConfig, Order};
use super::trace_stage::{Step, TraceCursor};

/// Packets a link holds when the stage list sets no `limit` (netem's 1000
/// drops at 10 kpps with 100 ms of delay; this holds 1 s at 10 kpps).
pub const DEFAULT_LIMIT_PACKETS: u64 = 10_000;

/// Longest time from arrival to release; a copy that would wait longer
/// is dropped (reason `horizon`). Above NIST Net's largest delay (2^29 µs).
pub const HORIZON_NS: u64 = 600_000_000_000;

/// Most copies of one packet (a trace with more duplicates in a row has
/// the excess applied as delays, counted in `dup_capped`).
pub const MAX_COPIES: usize = 8;

/// Which way through the bridge.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    /// From interface A to interface B.
    AToB,
    /// From interface B to interface A.
    BToA,
}

/// What keys a link's randomness besides the packet index.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LinkKey {
    /// The stage list's `seed`, or one the caller picked and reports.
    pub seed: u64,
    /// The rule's number (0 for the default rule).
    pub rule: u32,
    /// The direction.
    pub direction: Direction,
}

/// Why a copy was not forwarded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum DropReason {
    /// The loss model.
    Loss,
    /// A `DROP` record of the trace.
    Trace,
    /// Past the end of the trace under `at-end drop` or `stop`.
    TraceEnd,
    /// The queue limit (packets or bytes).
    Limit,
    /// It would wait longer than [`HORIZON_NS`].
    Horizon,
}

/// Which bit to flip: a uniform draw the driver maps onto the part of the
/// frame it corrupts (whole frame, L3, L4 or payload).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Corrupt(pub u64);

impl Corrupt {
    /// A bit index in `[0, 8 * len_bytes)`, uniform; `None` if empty.
    pub fn bit_in(self, len_bytes: usize) -> Option<usize> {
        let bits = (len_bytes as u128) * 8;
        (bits > 0).then(|| ((u128::from(self.0) * bits) >> 64) as usize)
    }

    /// Flips exactly one bit of `bytes` (bit 0 = the first byte's most
    /// significant bit); `false` if `bytes` is empty.
    pub fn apply(self, bytes: &mut [u8]) -> bool {
        match self.bit_in(bytes.len()) {
            Some(bit) => {
                bytes[bit / 8] ^= 0x80 >> (bit % 8);
                true
            }
            None => false,
        }
    }
}

/// A copy that will be released.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Queued {
    /// Absolute release time (ns, the arrival stamps' clock).
    pub deadline_ns: u64,
    /// Flip one bit.
    pub corrupt: Option<Corrupt>,
    /// The loss model chose it and `ecn` marks it CE instead.
    pub ce: bool,
    /// `reorder` let it skip the delay.
    pub reordered: bool,
}

/// What happens to one copy of a packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fate {
    /// Not forwarded.
    Dropped(DropReason),
    /// Forwarded at its deadline.
    Queued(Queued),
}

/// Every decision about one arriving packet: one fate per copy (the
/// original first, then its duplicates).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Arrival {
    /// The caller's packet index.
    pub packet_index: u64,
    /// The arrival time used (the stamp, or the previous arrival's if the
    /// stamp went backwards).
    pub arrival_ns: u64,
    /// The trace ended under `at-end stop`: the caller stops.
    pub trace_ended: bool,
    copies: [Fate; MAX_COPIES],
    n: u8,
}

impl Arrival {
    fn new(packet_index: u64, arrival_ns: u64) -> Arrival {
        Arrival {
            packet_index,
            arrival_ns,
            trace_ended: false,
            copies: [Fate::Dropped(DropReason::Loss); MAX_COPIES],
            n: 0,
        }
    }

    fn push(&mut self, f: Fate) {
        self.copies[usize::from(self.n)] = f;
        self.n += 1;
    }

    /// One fate per copy, the original first.
    pub fn copies(&self) -> &[Fate] {
        &self.copies[..usize::from(self.n)]
    }

    /// The copies that will be released.
    pub fn queued(&self) -> impl Iterator<Item = &Queued> {
        self.copies().iter().filter_map(|f| match f {
            Fate::Queued(q) => Some(q),
            Fate::Dropped(_) => None,
        })
    }

    /// Appends this packet's decisions as trace records that replay them
    /// (`--record-decisions`): the released copies in copy order, each but
    /// the last as a duplicate, with its delay from arrival to release; a
    /// packet with no released copy is one `Drop`. Copies are identical,
    /// so which copy was dropped does not matter. CE marks and corruption
    /// have no trace record and are not replayed.
    pub fn record(&self, out: &mut Vec<Action>) {
        let mut delays = self
            .queued()
            .map(|q| q.deadline_ns - self.arrival_ns)
            .peekable();
        if delays.peek().is_none() {
            out.push(Action::Drop);
        }
        while let Some(delay_ns) = delays.next() {
            out.push(if delays.peek().is_some() {
                Action::Duplicate { delay_ns }
            } else {
                Action::Delay { delay_ns }
            });
        }
    }
}

/// A copy to send now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Release {
    /// When it was due.
    pub deadline_ns: u64,
    /// The caller's packet index.
    pub packet_index: u64,
    /// Its arrival time (as in [`Arrival::arrival_ns`]).
    pub arrival_ns: u64,
    /// 0 for the original, 1.. for duplicates.
    pub copy: u8,
    /// Frame length given at arrival.
    pub frame_len: u32,
    /// Flip one bit.
    pub corrupt: Option<Corrupt>,
    /// Set ECN CE.
    pub ce: bool,
    /// No later release of this packet follows (its buffer may go).
    pub last: bool,
}

/// Copies dropped, by reason.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct DropCounts {
    /// By the loss model.
    pub loss: u64,
    /// By `DROP` records of the trace.
    pub trace: u64,
    /// Past the end of the trace.
    pub trace_end: u64,
    /// By the queue limit.
    pub limit: u64,
    /// Would have waited longer than [`HORIZON_NS`].
    pub horizon: u64,
}

impl DropCounts {
    /// All drops.
    pub fn total(&self) -> u64 {
        self.loss + self.trace + self.trace_end + self.limit + self.horizon
    }

    fn add(&mut self, r: DropReason) {
        *match r {
            DropReason::Loss => &mut self.loss,
            DropReason::Trace => &mut self.trace,
            DropReason::TraceEnd => &mut self.trace_end,
            DropReason::Limit => &mut self.limit,
            DropReason::Horizon => &mut self.horizon,
        } += 1;
    }
}

/// What a link did. `arrivals + duplicates = queued + dropped.total()`;
/// `queued - released` copies are waiting.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct LinkCounters {
    /// Packets that arrived.
    pub arrivals: u64,
    /// Copies made beyond the original.
    pub duplicates: u64,
    /// Copies accepted for release.
    pub queued: u64,
    /// Copies handed out by `pop_due`.
    pub released: u64,
    /// Copies dropped, by reason.
    pub dropped: DropCounts,
    /// Queued copies with a flipped bit.
    pub corrupted: u64,
    /// Queued copies marked CE.
    pub ecn_marked: u64,
    /// Queued copies that skipped the delay (`reorder`).
    pub reordered: u64,
    /// Trace duplicates beyond [`MAX_COPIES`], applied as delays.
    pub dup_capped: u64,
    /// Copies in the link at the last arrival (what `limit` counts).
    pub queue_packets: u64,
    /// Their bytes.
    pub queue_bytes: u64,
    /// Most copies in the link at once.
    pub queue_packets_max: u64,
    /// Most bytes in the link at once.
    pub queue_bytes_max: u64,
}

/// A link cannot be built this way.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum LinkError {
    /// The stage list has `trace FILE`: build it with [`Link::with_trace`].
    #[error("the stage list has a trace stage: open its file and give the link its actions")]
    TraceSourceMissing,
    /// A trace source for a stage list without `trace`.
    #[error("the stage list has no trace stage to read these actions")]
    NotATraceLink,
}

struct Entry(Release, u64);

impl Entry {
    fn key(&self) -> (u64, u64) {
        (self.0.deadline_ns, self.1)
    }
}

impl PartialEq for Entry {
    fn eq(&self, other: &Self) -> bool {
        self.key() == other.key()
    }
}

impl Eq for Entry {}

impl PartialOrd for Entry {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Entry {
    fn cmp(&self, other: &Self) -> Ordering {
        self.key().cmp(&other.key())
    }
}

struct ReorderState {
    chance: Correlated,
    gap: u64,
    counter: u64,
}

/// One direction of an emulated link. See the module documentation.
pub struct Link {
    config: LinkConfig,
    key: u64,
    last_arrival: Option<u64>,
    loss: Option<LossProcess>,
    duplicate: Option<Correlated>,
    corrupt: Option<Correlated>,
    reorder: Option<ReorderState>,
    delay: Option<DelaySampler>,
    rate: Option<RateLink>,
    slots: Option<Slots>,
    trace: Option<TraceCursor>,
    limit_packets: u64,
    limit_bytes: u64,
    last_release: u64,
    seq: u64,
    releases: BinaryHeap<Reverse<Entry>>,
    /// (deadline, bytes) of every copy still in the link in model time.
    in_flight: BinaryHeap<Reverse<(u64, u32)>>,
    counters: LinkCounters,
    trace_ended: bool,
}

impl fmt::Debug for Link {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Link")
            .field("config", &self.config.to_string())
            .field("counters", &self.counters)
            .field("waiting", &self.releases.len())
            .finish_non_exhaustive()
    }
}

impl Link {
    /// A link for a stage list without `trace`.
    pub fn new(config: &LinkConfig, key: LinkKey) -> Result<Link, LinkError> {
        if config.trace.is_some() {
            return Err(LinkError::TraceSourceMissing);
        }
        Ok(Link::build(config, key, None))
    }

    /// A link whose `trace` stage reads `source` (the caller opened the
    /// stage's file).
    pub fn with_trace(
        config: &LinkConfig,
        key: LinkKey,
        source: Box<dyn ActionSource + Send>,
    ) -> Result<Link, LinkError> {
        let spec = config.trace.as_ref().ok_or(LinkError::NotATraceLink)?;
        let cursor = TraceCursor::new(spec, source);
        Ok(Link::build(config, key, Some(cursor)))
    }

    /// Swaps the trace: the next copy reads the new source's first record.
    pub fn set_trace(&mut self, source: Box<dyn ActionSource + Send>) -> Result<(), LinkError> {
        let cursor = self.trace.as_mut().ok_or(LinkError::NotATraceLink)?;
        cursor.replace(source);
        self.trace_ended = false;
        Ok(())
    }

    fn build(config: &LinkConfig, key: LinkKey, trace: Option<TraceCursor>) -> Link {
        let dir = match key.direction {
            Direction::AToB => 0,
            Direction::BToA => 1,
        };
        let key = link_key(key.seed, key.rule, dir);
        Link {
            config: config.clone(),
            key,
            last_arrival: None,
            loss: config.loss.as_ref().map(LossProcess::new),
            duplicate: config.duplicate.map(Correlated::new),
            corrupt: config.corrupt.map(Correlated::new),
            reorder: config.reorder.map(|r| ReorderState {
                chance: Correlated::new(r.chance),
                gap: r.gap.max(1),
                counter: 0,
            }),
            delay: config.delay.as_ref().map(DelaySampler::new),
            rate: config.rate.as_ref().map(RateLink::new),
            slots: config.slot.as_ref().map(|s| Slots::new(s, key, HORIZON_NS)),
            trace,
            limit_packets: config.limit.packets.unwrap_or(DEFAULT_LIMIT_PACKETS),
            limit_bytes: config.limit.bytes.unwrap_or(u64::MAX),
            last_release: 0,
            seq: 0,
            releases: BinaryHeap::new(),
            in_flight: BinaryHeap::new(),
            counters: LinkCounters::default(),
            trace_ended: false,
        }
    }

    /// The stage list.
    pub fn config(&self) -> &LinkConfig {
        &self.config
    }

    /// What the link did so far.
    pub fn counters(&self) -> &LinkCounters {
        &self.counters
    }

    /// The trace ended under `at-end stop`.
    pub fn trace_ended(&self) -> bool {
        self.trace_ended
    }

    /// Decides everything about a packet that arrived at `now_ns` (its
    /// kernel receive stamp): drops, copies, and each copy's deadline.
    /// `packet_index` keys the randomness (the caller counts packets per
    /// rule and direction); `ect`: the frame is IP with ECT(0) or ECT(1)
    /// (only used with `ecn`).
    pub fn arrive(&mut self, now_ns: u64, frame_len: u32, packet_index: u64, ect: bool) -> Arrival {
        let t = self.last_arrival.map_or(now_ns, |last| now_ns.max(last));
        self.last_arrival = Some(t);
        while let Some(&Reverse((deadline, bytes))) = self.in_flight.peek() {
            if deadline > t {
                break;
            }
            self.in_flight.pop();
            self.counters.queue_packets -= 1;
            self.counters.queue_bytes -= u64::from(bytes);
        }
        if let Some(s) = &mut self.slots {
            s.advance(t);
        }
        self.counters.arrivals += 1;
        let mut arrival = Arrival::new(packet_index, t);
        let mut rng = Stream::new(self.key, Domain::Packet, packet_index);
        let first_seq = self.seq;
        if self.trace.is_some() {
            self.trace_copies(&mut arrival, frame_len, &mut rng);
        } else {
            let dup = match &mut self.duplicate {
                Some(d) => d.next(rng.unit()),
                None => false,
            };
            let copies = 1 + usize::from(dup);
            self.counters.duplicates += u64::from(dup);
            for _ in 0..copies {
                let fate = self.random_copy(t, frame_len, ect, &mut rng);
                arrival.push(fate);
            }
        }
        self.push_releases(&arrival, frame_len, first_seq);
        arrival
    }

    fn trace_copies(&mut self, arrival: &mut Arrival, len: u32, rng: &mut Stream) {
        let t = arrival.arrival_ns;
        for copy in 0..MAX_COPIES {
            let Some(step) = self.trace.as_mut().map(TraceCursor::next) else {
                return;
            };
            match step {
                Step::Forward { delay_ns, dup } => {
                    let corrupt = self.corrupt_draw(rng);
                    let fate = if self.admits(len) {
                        self.enqueue(t, len, delay_ns as f64, corrupt, false, false)
                    } else {
                        Fate::Dropped(DropReason::Limit)
                    };
                    arrival.push(fate);
                    if !dup {
                        return;
                    }
                    if copy + 1 == MAX_COPIES {
                        self.counters.dup_capped += 1;
                        return;
                    }
                    self.counters.duplicates += 1;
                }
                Step::Drop => {
                    arrival.push(Fate::Dropped(DropReason::Trace));
                    return;
                }
                Step::End { stop } => {
                    if stop {
                        arrival.trace_ended = true;
                        self.trace_ended = true;
                    }
                    arrival.push(Fate::Dropped(DropReason::TraceEnd));
                    return;
                }
            }
        }
    }

    /// One copy through loss, corrupt, limit, reorder and delay.
    fn random_copy(&mut self, t: u64, len: u32, ect: bool, rng: &mut Stream) -> Fate {
        let mut ce = false;
        if let Some(loss) = &mut self.loss {
            if loss.next(rng) {
                if self.config.ecn && ect {
                    ce = true;
                } else {
                    return Fate::Dropped(DropReason::Loss);
                }
            }
        }
        let corrupt = self.corrupt_draw(rng);
        if !self.admits(len) {
            return Fate::Dropped(DropReason::Limit);
        }
        // netem: `counter` packets since the last reordered one are
        // delayed; from the gap-th on, each is reordered with the chance.
        let reordered = match &mut self.reorder {
            Some(r) => {
                let u = rng.unit();
                if r.counter + 1 >= r.gap && r.chance.next(u) {
                    r.counter = 0;
                    true
                } else {
                    r.counter += 1;
                    false
                }
            }
            None => false,
        };
        let delay = match (&mut self.delay, reordered) {
            (Some(d), false) => d.next(rng),
            _ => 0.0,
        };
        self.enqueue(t, len, delay, corrupt, ce, reordered)
    }

    fn corrupt_draw(&mut self, rng: &mut Stream) -> Option<Corrupt> {
        let c = self.corrupt.as_mut()?;
        let hit = c.next(rng.unit());
        let bits = rng.next_u64();
        hit.then_some(Corrupt(bits))
    }

    fn admits(&self, len: u32) -> bool {
        self.counters.queue_packets < self.limit_packets
            && self.counters.queue_bytes + u64::from(len) <= self.limit_bytes
    }

    /// Rate, order and slot for an admitted copy with propagation delay
    /// `delay` (ns, may be negative or huge before clamping).
    fn enqueue(
        &mut self,
        t: u64,
        len: u32,
        delay: f64,
        corrupt: Option<Corrupt>,
        ce: bool,
        reordered: bool,
    ) -> Fate {
        let horizon = Fate::Dropped(DropReason::Horizon);
        if delay.is_nan() || delay > HORIZON_NS as f64 {
            return horizon;
        }
        let delay = delay.max(0.0).round() as u64;
        let latest = t.saturating_add(HORIZON_NS);
        let sent = self.rate.as_ref().map(|r| r.peek(t, len));
        let mut ready = sent.map_or(t, |s| s.done_ns).saturating_add(delay);
        if self.config.order == Order::Fifo && !reordered {
            ready = ready.max(self.last_release);
        }
        if ready > latest {
            return horizon;
        }
        if let Some(slots) = &mut self.slots {
            match slots.assign(ready, len, latest) {
                Some(edge) => ready = edge,
                None => return horizon,
            }
        }
        if let (Some(r), Some(s)) = (&mut self.rate, sent) {
            r.commit(s);
        }
        if self.config.order == Order::Fifo {
            self.last_release = self.last_release.max(ready);
        }
        self.in_flight.push(Reverse((ready, len)));
        let c = &mut self.counters;
        c.queue_packets += 1;
        c.queue_bytes += u64::from(len);
        c.queue_packets_max = c.queue_packets_max.max(c.queue_packets);
        c.queue_bytes_max = c.queue_bytes_max.max(c.queue_bytes);
        Fate::Queued(Queued {
            deadline_ns: ready,
            corrupt,
            ce,
            reordered,
        })
    }

    fn push_releases(&mut self, arrival: &Arrival, frame_len: u32, first_seq: u64) {
        let last_copy = arrival
            .copies()
            .iter()
            .enumerate()
            .filter_map(|(i, f)| match f {
                Fate::Queued(q) => Some((q.deadline_ns, i)),
                Fate::Dropped(_) => None,
            })
            .max()
            .map(|(_, i)| i);
        let mut seq = first_seq;
        for (i, fate) in arrival.copies().iter().enumerate() {
            match *fate {
                Fate::Dropped(r) => self.counters.dropped.add(r),
                Fate::Queued(q) => {
                    let c = &mut self.counters;
                    c.queued += 1;
                    c.corrupted += u64::from(q.corrupt.is_some());
                    c.ecn_marked += u64::from(q.ce);
                    c.reordered += u64::from(q.reordered);
                    let release = Release {
                        deadline_ns: q.deadline_ns,
                        packet_index: arrival.packet_index,
                        arrival_ns: arrival.arrival_ns,
                        copy: i as u8,
                        frame_len,
                        corrupt: q.corrupt,
                        ce: q.ce,
                        last: Some(i) == last_copy,
                    };
                    self.releases.push(Reverse(Entry(release, seq)));
                    seq += 1;
                }
            }
        }
        self.seq = seq;
    }

    /// Every slot edge from the first up to `until` (tests).
    #[cfg(test)]
    pub(super) fn slot_edges_until(&self, until: u64) -> Vec<u64> {
        self.slots
            .as_ref()
            .map_or_else(Vec::new, |s| s.edges_until(until))
    }

    /// The earliest deadline waiting, if any.
    pub fn next_deadline(&self) -> Option<u64> {
        self.releases.peek().map(|Reverse(e)| e.0.deadline_ns)
    }

    /// Appends every copy due at `now_ns` to `out`, in release order
    /// (deadline, then arrival and copy order); returns how many. Never
    /// hands out a copy before its deadline.
    pub fn pop_due(&mut self, now_ns: u64, out: &mut Vec<Release>) -> usize {
        let before = out.len();
        while self
            .releases
            .peek()
            .is_some_and(|Reverse(e)| e.0.deadline_ns <= now_ns)
        {
            if let Some(Reverse(e)) = self.releases.pop() {
                out.push(e.0);
            }
        }
        let n = out.len() - before;
        self.counters.released += n as u64;
        n
    }
}

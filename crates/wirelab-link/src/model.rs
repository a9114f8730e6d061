//! One direction of an emulated link: decisions at arrival, releases in
//! deadline order.

use std::cmp::{Ordering, Reverse};
use std::collections::{BinaryHeap, HashMap};
use std::fmt;

use rand::RngCore;
use serde::Serialize;
use thiserror::Error;

use wirelab_trace::{Action, ActionSource, AtEnd};

use super::bottleneck::{Bottleneck, Item, Out};
use super::decisions::{push_actions, Recording};
use super::flow::{FlowKey, FlowTuple};
use super::mmlink::OpportunitySource;
use super::perflow::Pipes;
use super::process::{Correlated, DelaySampler, LossProcess};
use super::rate::RateLink;
use super::rng::{link_key, Domain, Stream};
use super::slot::Slots;
use super::spec::{DelayDist, DelaySpec, LinkConfig, Order, QueueKind, RateSpec};
use super::timecsv::{Params, RowAt, RowSource};
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
    /// An active queue manager (CoDel, PIE) dropped it.
    Aqm,
    /// Derivative random drop (`drd`).
    Drd,
    /// The link was off (`onoff ... drop`) or dead (`link ... once` after
    /// its trace).
    LinkDead,
}

impl DropReason {
    /// Every reason, in [`DropCounts`]' order.
    pub const ALL: [DropReason; 8] = [
        DropReason::Loss,
        DropReason::Trace,
        DropReason::TraceEnd,
        DropReason::Limit,
        DropReason::Horizon,
        DropReason::Aqm,
        DropReason::Drd,
        DropReason::LinkDead,
    ];

    /// Its name in counters and reports (as serialized).
    pub fn name(self) -> &'static str {
        match self {
            DropReason::Loss => "loss",
            DropReason::Trace => "trace",
            DropReason::TraceEnd => "trace_end",
            DropReason::Limit => "limit",
            DropReason::Horizon => "horizon",
            DropReason::Aqm => "aqm",
            DropReason::Drd => "drd",
            DropReason::LinkDead => "link_dead",
        }
    }
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

/// A copy waiting in the bottleneck (`queue`, `link`, `onoff`): its
/// release time, or its drop in the queue, comes out of
/// [`Link::pop_due`] as model time passes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Waiting {
    /// Flip one bit.
    pub corrupt: Option<Corrupt>,
    /// Marked CE instead of dropped.
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
    /// In the bottleneck's queue: released or dropped later.
    Waiting(Waiting),
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

    /// The copies that will be released, with their deadlines.
    pub fn queued(&self) -> impl Iterator<Item = &Queued> {
        self.copies().iter().filter_map(|f| match f {
            Fate::Queued(q) => Some(q),
            _ => None,
        })
    }

    /// How many [`Release`]s [`Link::pop_due`] will hand out for this
    /// packet: its queued and waiting copies (a waiting copy dropped in
    /// the queue comes out as a release with `dropped` set).
    pub fn pending(&self) -> usize {
        self.copies()
            .iter()
            .filter(|f| !matches!(f, Fate::Dropped(_)))
            .count()
    }

    /// Appends this packet's decisions as trace records that replay them
    /// (`--record-decisions`): the released copies in copy order, each but
    /// the last as a duplicate, with its delay from arrival to release; a
    /// packet with no released copy is one `Drop`. Copies are identical,
    /// so which copy was dropped does not matter. CE marks and corruption
    /// have no trace record and are not replayed. Only complete for links
    /// without a bottleneck ([`LinkConfig::has_bottleneck`]): with one,
    /// release times are decided after the arrival (its waiting copies
    /// record as drops here) — [`Link::record_decisions`] covers every link.
    pub fn record(&self, out: &mut Vec<Action>) {
        push_actions(self.queued().map(|q| q.deadline_ns - self.arrival_ns), out);
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
    /// `Some`: the copy was dropped in the bottleneck's queue at
    /// `deadline_ns` (an AQM, drophead, a dead link) and is not sent.
    pub dropped: Option<DropReason>,
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
    /// By CoDel or PIE.
    pub aqm: u64,
    /// By derivative random drop.
    pub drd: u64,
    /// The link was off or dead.
    pub link_dead: u64,
}

impl DropCounts {
    /// All drops.
    pub fn total(&self) -> u64 {
        DropReason::ALL.iter().map(|&r| self.get(r)).sum()
    }

    pub fn get(&self, r: DropReason) -> u64 {
        match r {
            DropReason::Loss => self.loss,
            DropReason::Trace => self.trace,
            DropReason::TraceEnd => self.trace_end,
            DropReason::Limit => self.limit,
            DropReason::Horizon => self.horizon,
            DropReason::Aqm => self.aqm,
            DropReason::Drd => self.drd,
            DropReason::LinkDead => self.link_dead,
        }
    }

    fn add(&mut self, r: DropReason) {
        *match r {
            DropReason::Loss => &mut self.loss,
            DropReason::Trace => &mut self.trace,
            DropReason::TraceEnd => &mut self.trace_end,
            DropReason::Limit => &mut self.limit,
            DropReason::Horizon => &mut self.horizon,
            DropReason::Aqm => &mut self.aqm,
            DropReason::Drd => &mut self.drd,
            DropReason::LinkDead => &mut self.link_dead,
        } += 1;
    }
}

/// What a link did. `arrivals + duplicates = queued + dropped.total()`;
/// `queued - released` copies are waiting (a copy dropped in the
/// bottleneck's queue moves from `queued` to `dropped`).
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
    /// Flows told apart (`per-flow`: pipes made; `sched drr`: flow
    /// queues made; `sched fq_codel`: buckets used); 0 without either.
    pub flows: u64,
    /// Packets of flows past the bound, in the shared overflow pipe or
    /// queue.
    pub flow_overflow: u64,
}

impl LinkCounters {
    /// Adds what a pipe did between `before` and `after` (queue
    /// occupancy: summed over the pipes, each as of its last arrival).
    pub(crate) fn absorb(&mut self, before: &LinkCounters, after: &LinkCounters) {
        fn add(x: &mut u64, b: u64, a: u64) {
            *x = x.wrapping_add(a.wrapping_sub(b));
        }
        add(&mut self.arrivals, before.arrivals, after.arrivals);
        add(&mut self.duplicates, before.duplicates, after.duplicates);
        add(&mut self.queued, before.queued, after.queued);
        add(&mut self.released, before.released, after.released);
        let (d, b, a) = (&mut self.dropped, &before.dropped, &after.dropped);
        add(&mut d.loss, b.loss, a.loss);
        add(&mut d.trace, b.trace, a.trace);
        add(&mut d.trace_end, b.trace_end, a.trace_end);
        add(&mut d.limit, b.limit, a.limit);
        add(&mut d.horizon, b.horizon, a.horizon);
        add(&mut d.aqm, b.aqm, a.aqm);
        add(&mut d.drd, b.drd, a.drd);
        add(&mut d.link_dead, b.link_dead, a.link_dead);
        add(&mut self.corrupted, before.corrupted, after.corrupted);
        add(&mut self.ecn_marked, before.ecn_marked, after.ecn_marked);
        add(&mut self.reordered, before.reordered, after.reordered);
        add(&mut self.dup_capped, before.dup_capped, after.dup_capped);
        add(
            &mut self.queue_packets,
            before.queue_packets,
            after.queue_packets,
        );
        add(&mut self.queue_bytes, before.queue_bytes, after.queue_bytes);
        self.queue_packets_max = self.queue_packets_max.max(self.queue_packets);
        self.queue_bytes_max = self.queue_bytes_max.max(self.queue_bytes);
    }
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
    /// The stage list has a stage that reads a file (`link`, `timeline`):
    /// build it with [`Link::with_sources`].
    #[error("the stage list has a {0} stage: open its file and give the link its source")]
    SourceMissing(&'static str),
    /// A source for a stage the stage list does not have.
    #[error("the stage list has no {0} stage for this source")]
    NoSuchStage(&'static str),
    /// A profile's airtime occupies a link of some speed.
    #[error("profile: the airtime is link time at a speed: add a `bw` line to the profile or a rate stage (e.g. profile f rate 10mbit)")]
    ProfileNeedsRate,
    #[error("profile: the profile's bw ({0} bit/s) and the rate stage both set the link's speed: remove one")]
    ProfileRate(u64),
}

/// What the stages that read files read (the caller opens the files).
#[derive(Default)]
pub struct Sources {
    /// The `trace` stage's actions.
    pub trace: Option<Box<dyn ActionSource + Send>>,
    /// The `link` stage's delivery opportunities (ms from the trace's
    /// start; looping or not is the source's business).
    pub opportunities: Option<OpportunitySource>,
    /// The `timeline` stage's rows.
    pub timeline: Option<Box<dyn RowSource + Send>>,
    /// The `profile` stage's loaded file.
    pub profile: Option<super::profile::Profile>,
}

/// A release and its place: (deadline, push order); `tracked`: its packet
/// went through the bottleneck (its `last` is decided when popped).
struct Entry(Release, u64, bool);

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

/// The `timeline` stage's state.
struct TimelineState {
    source: Box<dyn RowSource + Send>,
    at_end: AtEnd,
}

/// One direction of an emulated link. See the module documentation.
pub struct Link {
    config: LinkConfig,
    key: u64,
    first_arrival: Option<u64>,
    last_arrival: Option<u64>,
    loss: Option<LossProcess>,
    duplicate: Option<Correlated>,
    corrupt: Option<Correlated>,
    reorder: Option<ReorderState>,
    delay: Option<DelaySampler>,
    rate: Option<RateLink>,
    slots: Option<Slots>,
    trace: Option<TraceCursor>,
    timeline: Option<TimelineState>,
    bottleneck: Option<Bottleneck>,
    /// Release copies the bottleneck still holds or that wait in
    /// `releases`, per packet (only for packets through the bottleneck).
    outstanding: HashMap<u64, u8>,
    outs: Vec<Out>,
    limit_packets: u64,
    limit_bytes: u64,
    last_release: u64,
    seq: u64,
    releases: BinaryHeap<Reverse<Entry>>,
    /// (deadline, bytes) of every copy past the bottleneck still in the
    /// link in model time.
    in_flight: BinaryHeap<Reverse<(u64, u32)>>,
    counters: LinkCounters,
    trace_ended: bool,
    profile: Option<super::profile::Profile>,
    /// `per-flow` without a scheduler: the pipes that do the work (this
    /// link only counts).
    pipes: Option<Box<Pipes>>,
    /// `--record-decisions`: packets whose records wait for releases.
    recording: Option<Box<Recording>>,
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

/// What a copy carries through the pipeline.
#[derive(Clone, Copy)]
struct CopyState {
    t: u64,
    index: u64,
    copy: u8,
    len: u32,
    delay: f64,
    corrupt: Option<Corrupt>,
    ce: bool,
    reordered: bool,
    rate: Option<u64>,
    flow: FlowKey,
}

impl Link {
    /// A link for a stage list without stages that read files (`trace`,
    /// `link`, `timeline`).
    pub fn new(config: &LinkConfig, key: LinkKey) -> Result<Link, LinkError> {
        Link::with_sources(config, key, Sources::default())
    }

    /// A link whose `trace` stage reads `source` (the caller opened the
    /// stage's file).
    pub fn with_trace(
        config: &LinkConfig,
        key: LinkKey,
        source: Box<dyn ActionSource + Send>,
    ) -> Result<Link, LinkError> {
        Link::with_sources(
            config,
            key,
            Sources {
                trace: Some(source),
                ..Sources::default()
            },
        )
    }

    /// A link whose stages that read files read `sources`: one for each
    /// such stage of the stage list, none for others.
    pub fn with_sources(
        config: &LinkConfig,
        key: LinkKey,
        sources: Sources,
    ) -> Result<Link, LinkError> {
        let Sources {
            trace,
            opportunities,
            timeline,
            profile,
        } = sources;
        let mut config = config.clone();
        match (&config.profile, &profile) {
            (Some(_), None) => return Err(LinkError::SourceMissing("profile")),
            (None, Some(_)) => return Err(LinkError::NoSuchStage("profile")),
            (Some(_), Some(p)) => match (p.bw_bps, &config.rate) {
                (Some(bw), Some(_)) => return Err(LinkError::ProfileRate(bw)),
                (None, None) => return Err(LinkError::ProfileNeedsRate),
                (Some(bw), None) => {
                    config.rate = Some(RateSpec {
                        bits_per_sec: bw,
                        packet_overhead: 0,
                        cell_size: 0,
                        cell_overhead: 0,
                        burst_bytes: 0,
                    })
                }
                _ => {}
            },
            (None, None) => {}
        }
        let config = &config;
        let trace = match (&config.trace, trace) {
            (Some(spec), Some(src)) => Some(TraceCursor::new(spec, src)),
            (Some(_), None) => return Err(LinkError::TraceSourceMissing),
            (None, Some(_)) => return Err(LinkError::NotATraceLink),
            (None, None) => None,
        };
        match (config.link.is_some(), opportunities.is_some()) {
            (true, false) => return Err(LinkError::SourceMissing("link")),
            (false, true) => return Err(LinkError::NoSuchStage("link")),
            _ => {}
        }
        let timeline = match (&config.timeline, timeline) {
            (Some(spec), Some(source)) => Some(TimelineState {
                source,
                at_end: spec.at_end,
            }),
            (Some(_), None) => return Err(LinkError::SourceMissing("timeline")),
            (None, Some(_)) => return Err(LinkError::NoSuchStage("timeline")),
            (None, None) => None,
        };
        let dir = match key.direction {
            Direction::AToB => 0,
            Direction::BToA => 1,
        };
        let key = link_key(key.seed, key.rule, dir);
        if let Some(pf) = config.per_flow.filter(|_| config.flow_pipes()) {
            let mut pipe = config.clone();
            pipe.per_flow = None;
            let mut link = Link::build_keyed(&pipe, key, None, None, None);
            let max = pf.max_flows.unwrap_or(super::spec::DEFAULT_MAX_FLOWS);
            link.pipes = Some(Box::new(Pipes::new(pipe, key, profile, pf.mask, max)));
            link.config = config.clone();
            return Ok(link);
        }
        let mut link = Link::build_keyed(config, key, trace, opportunities, timeline);
        link.profile = profile;
        Ok(link)
    }

    /// Swaps the trace: the next copy reads the new source's first record.
    pub fn set_trace(&mut self, source: Box<dyn ActionSource + Send>) -> Result<(), LinkError> {
        let cursor = self.trace.as_mut().ok_or(LinkError::NotATraceLink)?;
        cursor.replace(source);
        self.trace_ended = false;
        Ok(())
    }

    /// A pipe of `per-flow`: a link without sources under `key`.
    pub(crate) fn pipe(config: &LinkConfig, key: u64) -> Link {
        Link::build_keyed(config, key, None, None, None)
    }

    /// A link under `key` (the mixed key of its random streams).
    fn build_keyed(
        config: &LinkConfig,
        key: u64,
        trace: Option<TraceCursor>,
        opportunities: Option<OpportunitySource>,
        timeline: Option<TimelineState>,
    ) -> Link {
        let bottleneck = config
            .has_bottleneck()
            .then(|| Bottleneck::new(config, key, opportunities));
        Link {
            config: config.clone(),
            key,
            first_arrival: None,
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
            timeline,
            bottleneck,
            outstanding: HashMap::new(),
            outs: Vec::new(),
            limit_packets: config.limit.packets.unwrap_or(DEFAULT_LIMIT_PACKETS),
            limit_bytes: config.limit.bytes.unwrap_or(u64::MAX),
            last_release: 0,
            seq: 0,
            releases: BinaryHeap::new(),
            in_flight: BinaryHeap::new(),
            counters: LinkCounters::default(),
            trace_ended: false,
            profile: None,
            pipes: None,
            recording: None,
        }
    }

    /// Records every later packet's decisions, for
    /// [`Link::take_decisions`]: what [`Arrival::record`] gives, for any
    /// link — with a bottleneck, a packet's records are complete once
    /// each of its copies has left it or was dropped.
    pub fn record_decisions(&mut self) {
        self.recording.get_or_insert_with(Box::default);
    }

    /// Appends the records of the packets whose copies have all been
    /// decided, in arrival order (each packet once; see
    /// [`Arrival::record`]); returns how many records. After the last
    /// `pop_due(u64::MAX)` every packet is complete.
    pub fn take_decisions(&mut self, out: &mut Vec<Action>) -> usize {
        self.recording.as_mut().map_or(0, |r| r.take(out))
    }

    /// [`Link::record_decisions`] was called.
    pub fn records_decisions(&self) -> bool {
        self.recording.is_some()
    }

    /// A recorded packet still waits for one of its copies to leave.
    pub fn decisions_waiting(&self) -> bool {
        self.recording.as_ref().is_some_and(|r| r.waiting())
    }

    /// A pipe's copy of the link's profile.
    pub(crate) fn set_profile(&mut self, profile: Option<super::profile::Profile>) {
        self.profile = profile;
    }

    /// Decisions depend on the frame's flow (`per-flow`, `sched drr`,
    /// `sched fq_codel`): pass it with [`Link::arrive_flow`].
    pub fn uses_flows(&self) -> bool {
        self.config.uses_flows()
    }

    /// The stage list.
    pub fn config(&self) -> &LinkConfig {
        &self.config
    }

    /// What the link did so far.
    pub fn counters(&self) -> &LinkCounters {
        &self.counters
    }

    /// Whether `arrive`'s `ect` can change a decision (`ecn`, `drd ...
    /// congest`): without either the caller need not look for it.
    pub fn uses_ect(&self) -> bool {
        self.config.ecn || self.config.drd.is_some_and(|d| d.congest.is_some())
    }

    /// A trace (or timeline) ended under `at-end stop`.
    pub fn trace_ended(&self) -> bool {
        self.trace_ended
    }

    /// Tells `log` the time of every delivery opportunity of the `link`
    /// stage as it is used or wasted, in time order (mm-link's `T # 1500`
    /// lines). Returns false (and drops `log`) without a `link` stage:
    /// other stages have no delivery opportunities.
    pub fn log_opportunities(&mut self, log: super::OpportunityLog) -> bool {
        self.bottleneck
            .as_mut()
            .is_some_and(|b| b.log_opportunities(log))
    }

    /// Ends the opportunity log when the run stops at `now_ns` (after the
    /// last `pop_due`): an idle link's opportunities up to then are
    /// wasted and logged, as mm-link logs them until it exits; later ones
    /// (draining what is still queued) are not logged.
    pub fn end_opportunity_log(&mut self, now_ns: u64) {
        if let Some(b) = &mut self.bottleneck {
            b.end_opportunity_log(now_ns);
        }
    }

    /// Copies in the bottleneck's queue and server.
    pub fn bottleneck_held(&self) -> usize {
        if let Some(p) = &self.pipes {
            return p.bottleneck_held();
        }
        self.bottleneck.as_ref().map_or(0, Bottleneck::held)
    }

    /// Decides everything about a packet that arrived at `now_ns` (its
    /// kernel receive stamp): drops, copies, and each copy's deadline (or,
    /// through a bottleneck, its place in the queue). `packet_index` keys
    /// the randomness (the caller counts packets per rule and direction);
    /// `ect`: the frame is IP with ECT(0) or ECT(1) (only used with `ecn`
    /// and `drd ... congest`). Every frame is of one flow: for links whose
    /// decisions depend on flows, use [`Link::arrive_flow`].
    pub fn arrive(&mut self, now_ns: u64, frame_len: u32, packet_index: u64, ect: bool) -> Arrival {
        self.arrive_flow(now_ns, frame_len, packet_index, ect, None)
    }

    /// [`Link::arrive`] for a frame of flow `flow` (its header fields,
    /// [`FlowTuple::from_frame`]; `None` for a frame that is not IP: all
    /// of those are one flow). The link keeps the fields its mask names
    /// (`per-flow`, else the 5-tuple) to pick the frame's pipe or queue.
    pub fn arrive_flow(
        &mut self,
        now_ns: u64,
        frame_len: u32,
        packet_index: u64,
        ect: bool,
        flow: Option<&FlowTuple>,
    ) -> Arrival {
        let a = self.arrive_inner(now_ns, frame_len, packet_index, ect, flow);
        if let Some(r) = &mut self.recording {
            r.arrived(&a);
        }
        a
    }

    fn arrive_inner(
        &mut self,
        now_ns: u64,
        frame_len: u32,
        packet_index: u64,
        ect: bool,
        flow: Option<&FlowTuple>,
    ) -> Arrival {
        let first = self.last_arrival.is_none();
        let t = self.last_arrival.map_or(now_ns, |last| now_ns.max(last));
        self.last_arrival = Some(t);
        if let Some(p) = &mut self.pipes {
            return p.arrive(&mut self.counters, t, frame_len, packet_index, ect, flow);
        }
        let flow = if self.config.flow_queues() {
            self.config.flow_mask().key(flow)
        } else {
            FlowKey::default()
        };
        self.first_arrival.get_or_insert(t);
        if let Some(b) = &mut self.bottleneck {
            if first {
                b.start(t);
            }
            b.advance(t, &mut self.outs);
            b.waste_idle(t);
            self.take_outs();
        }
        let origin = self.origin();
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
        let params = match self.timeline_at(t - origin) {
            Ok(p) => p,
            Err(stop) => {
                if stop {
                    arrival.trace_ended = true;
                    self.trace_ended = true;
                }
                arrival.push(Fate::Dropped(DropReason::TraceEnd));
                self.push_releases(&arrival, frame_len);
                return arrival;
            }
        };
        let base = CopyState {
            t,
            index: packet_index,
            copy: 0,
            len: frame_len,
            delay: 0.0,
            corrupt: None,
            ce: false,
            reordered: false,
            rate: params.rate_bps,
            flow,
        };
        if self.trace.is_some() {
            self.trace_copies(&mut arrival, base, &params, ect, &mut rng);
        } else {
            let dup = match (params.dup, &mut self.duplicate) {
                (Some(p), _) => rng.unit() < p,
                (None, Some(d)) => d.next(rng.unit()),
                (None, None) => false,
            };
            let copies = 1 + u8::from(dup);
            self.counters.duplicates += u64::from(dup);
            for copy in 0..copies {
                let c = CopyState { copy, ..base };
                let fate = self.random_copy(c, &params, ect, &mut rng);
                arrival.push(fate);
            }
        }
        self.push_releases(&arrival, frame_len);
        arrival
    }

    /// The time the link's time-indexed stages count from (its first
    /// arrival).
    fn origin(&self) -> u64 {
        self.first_arrival.unwrap_or(0)
    }

    /// The timeline row's parameters at `rel` ns from the origin;
    /// `Err(stop)`: past the end, the copy is dropped (and with `stop`
    /// the caller stops).
    fn timeline_at(&mut self, rel: u64) -> Result<Params, bool> {
        let Some(tl) = &mut self.timeline else {
            return Ok(Params::default());
        };
        match tl.source.row_at(rel) {
            RowAt::Before => Ok(Params::default()),
            RowAt::Row(r) => Ok(Params::from(&r)),
            RowAt::End => match tl.at_end {
                AtEnd::Pass => Ok(Params::default()),
                AtEnd::Drop => Err(false),
                // Hold never ends; a loop that cannot start over stops.
                AtEnd::Stop | AtEnd::Loop | AtEnd::Hold => Err(true),
            },
        }
    }

    fn trace_copies(
        &mut self,
        arrival: &mut Arrival,
        base: CopyState,
        params: &Params,
        ect: bool,
        rng: &mut Stream,
    ) {
        for copy in 0..MAX_COPIES {
            let Some(step) = self.trace.as_mut().map(TraceCursor::next) else {
                return;
            };
            match step {
                Step::Forward { delay_ns, dup } => {
                    let mut c = CopyState {
                        copy: copy as u8,
                        delay: delay_ns as f64,
                        ..base
                    };
                    let fate = match self.early_drops(&mut c, params, ect, rng) {
                        Some(r) => Fate::Dropped(r),
                        None => self.admit(c, params, rng),
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

    /// Time-indexed loss (a trace copy), DRD and corrupt for one copy;
    /// the drop reason if it is dropped.
    fn early_drops(
        &mut self,
        c: &mut CopyState,
        params: &Params,
        ect: bool,
        rng: &mut Stream,
    ) -> Option<DropReason> {
        if let Some(p) = params.loss.filter(|_| self.trace.is_some()) {
            if rng.unit() < p {
                return Some(DropReason::Loss);
            }
        }
        if let Some(d) = self.config.drd {
            let q = self.counters.queue_packets;
            if rng.unit() < d.probability(q) {
                if ect && d.congest.is_some_and(|cg| q >= cg) {
                    c.ce = true;
                } else {
                    return Some(DropReason::Drd);
                }
            }
        }
        c.corrupt = self.corrupt_draw(params.corrupt, rng);
        None
    }

    /// One copy through loss, DRD, corrupt, limit, reorder and delay.
    fn random_copy(
        &mut self,
        mut c: CopyState,
        params: &Params,
        ect: bool,
        rng: &mut Stream,
    ) -> Fate {
        let lost = match (params.loss, &mut self.loss) {
            (Some(p), _) => rng.unit() < p,
            (None, Some(loss)) => loss.next(rng),
            (None, None) => false,
        };
        if lost {
            if self.config.ecn && ect {
                c.ce = true;
            } else {
                return Fate::Dropped(DropReason::Loss);
            }
        }
        if let Some(r) = self.early_drops(&mut c, params, ect, rng) {
            return Fate::Dropped(r);
        }
        if !self.admits(c.len, params) {
            return Fate::Dropped(DropReason::Limit);
        }
        // netem: `counter` packets since the last reordered one are
        // delayed; from the gap-th on, each is reordered with the chance.
        c.reordered = match &mut self.reorder {
            Some(r) => {
                let u = rng.unit();
                let hit = match params.reorder {
                    Some(p) => u < p,
                    None => r.chance.next(u),
                };
                if r.counter + 1 >= r.gap && hit {
                    r.counter = 0;
                    true
                } else {
                    r.counter += 1;
                    false
                }
            }
            None => params.reorder.is_some_and(|p| rng.unit() < p),
        };
        if !c.reordered {
            c.delay = self.delay_draw(params, rng);
        }
        self.place(c, rng)
    }

    /// The copy's propagation delay: the stage's, with a timeline row's
    /// delay and jitter in place of the stage's where the row has them.
    fn delay_draw(&mut self, params: &Params, rng: &mut Stream) -> f64 {
        if params.delay_ns.is_none() && params.jitter_ns.is_none() {
            return self.delay.as_mut().map_or(0.0, |d| d.next(rng));
        }
        let spec = self.config.delay.unwrap_or(DelaySpec {
            delay_ns: 0,
            jitter_ns: 0,
            corr: 0.0,
            dist: DelayDist::Uniform,
        });
        let sampler = self.delay.get_or_insert_with(|| DelaySampler::new(&spec));
        let base = params.delay_ns.unwrap_or(spec.delay_ns);
        let jitter = params.jitter_ns.unwrap_or(spec.jitter_ns);
        sampler.next_with(rng, base as f64, jitter as f64)
    }

    fn corrupt_draw(&mut self, row: Option<f64>, rng: &mut Stream) -> Option<Corrupt> {
        let hit = match (row, &mut self.corrupt) {
            (Some(p), _) => rng.unit() < p,
            (None, Some(c)) => c.next(rng.unit()),
            (None, None) => return None,
        };
        let bits = rng.next_u64();
        hit.then_some(Corrupt(bits))
    }

    fn admits(&self, len: u32, params: &Params) -> bool {
        if self.config.flow_queues() {
            // The scheduler's queues hold the limit, and make room.
            return true;
        }
        let limit = params.limit.unwrap_or(self.limit_packets);
        self.counters.queue_packets < limit
            && self.counters.queue_bytes + u64::from(len) <= self.limit_bytes
    }

    /// A trace copy past its early drops: the limit, then placed.
    fn admit(&mut self, c: CopyState, params: &Params, rng: &mut Stream) -> Fate {
        if self.admits(c.len, params) {
            self.place(c, rng)
        } else {
            Fate::Dropped(DropReason::Limit)
        }
    }

    /// An admitted copy into the bottleneck, or through the rate to its
    /// deadline.
    fn place(&mut self, c: CopyState, rng: &mut Stream) -> Fate {
        if c.delay.is_nan() || c.delay > HORIZON_NS as f64 {
            return Fate::Dropped(DropReason::Horizon);
        }
        let delay = c.delay.max(0.0).round() as u64;
        if let Some(b) = &mut self.bottleneck {
            let item = Item {
                index: c.index,
                copy: c.copy,
                arrival: c.t,
                enq: c.t,
                len: c.len,
                delay,
                corrupt: c.corrupt,
                ce: c.ce,
                reordered: c.reordered,
                rate: c.rate,
            };
            let u = if self.config.queue.is_some_and(|q| q.kind == QueueKind::Pie) {
                rng.unit()
            } else {
                1.0
            };
            let res = b.enqueue(item, &c.flow, c.t, u, &mut self.outs);
            (self.counters.flows, self.counters.flow_overflow) = b.flow_counts();
            self.take_outs();
            return match res {
                Err(r) => Fate::Dropped(r),
                Ok(()) => {
                    self.hold(c.len);
                    *self.outstanding.entry(c.index).or_insert(0) += 1;
                    // Counted now: a later copy of this packet may push it
                    // out of the queue (drophead) before the arrival ends.
                    let n = &mut self.counters;
                    n.queued += 1;
                    n.corrupted += u64::from(c.corrupt.is_some());
                    n.ecn_marked += u64::from(c.ce);
                    n.reordered += u64::from(c.reordered);
                    Fate::Waiting(Waiting {
                        corrupt: c.corrupt,
                        ce: c.ce,
                        reordered: c.reordered,
                    })
                }
            };
        }
        let rate = c.rate.or(self.config.rate.map(|r| r.bits_per_sec));
        let sent = rate.map(|bps| {
            let spec = self.config.rate.unwrap_or(RateSpec {
                bits_per_sec: bps,
                packet_overhead: 0,
                cell_size: 0,
                cell_overhead: 0,
                burst_bytes: 0,
            });
            let l = self.rate.get_or_insert_with(|| RateLink::new(&spec));
            l.set_rate(bps);
            l.peek(c.t, c.len)
        });
        // Dummynet's profile: the link is busy for the copy's airtime
        // too, and a copy past the loss level is lost after it.
        let (mut sent, mut lost) = (sent, false);
        if let Some(p) = &self.profile {
            let d = p.draw(rng.unit());
            if let (Some(l), Some(s)) = (&self.rate, sent.as_mut()) {
                l.shift(s, d.airtime_ns);
            }
            lost = d.lost;
        }
        if lost {
            if let (Some(r), Some(s)) = (&mut self.rate, sent) {
                r.commit(s);
            }
            return Fate::Dropped(DropReason::Loss);
        }
        let base = sent.map_or(c.t, |s| s.done_ns);
        match self.schedule(c.t, base, delay, c.len, c.reordered) {
            None => Fate::Dropped(DropReason::Horizon),
            Some(deadline_ns) => {
                if let (Some(r), Some(s)) = (&mut self.rate, sent) {
                    r.commit(s);
                }
                self.hold(c.len);
                self.in_flight.push(Reverse((deadline_ns, c.len)));
                Fate::Queued(Queued {
                    deadline_ns,
                    corrupt: c.corrupt,
                    ce: c.ce,
                    reordered: c.reordered,
                })
            }
        }
    }

    /// Counts a copy into the link.
    fn hold(&mut self, len: u32) {
        let c = &mut self.counters;
        c.queue_packets += 1;
        c.queue_bytes += u64::from(len);
        c.queue_packets_max = c.queue_packets_max.max(c.queue_packets);
        c.queue_bytes_max = c.queue_bytes_max.max(c.queue_bytes);
    }

    /// Counts a copy out of the link.
    fn unhold(&mut self, len: u32) {
        self.counters.queue_packets -= 1;
        self.counters.queue_bytes -= u64::from(len);
    }

    /// Delay, order and slot after the rate or bottleneck: the release
    /// time of a copy of packet arriving at `t` that leaves the
    /// bottleneck at `base`; `None` past the horizon.
    fn schedule(
        &mut self,
        t: u64,
        base: u64,
        delay: u64,
        len: u32,
        reordered: bool,
    ) -> Option<u64> {
        let latest = t.saturating_add(HORIZON_NS);
        let mut ready = base.saturating_add(delay);
        if self.config.order == Order::Fifo && !reordered {
            ready = ready.max(self.last_release);
        }
        if ready > latest {
            return None;
        }
        if let Some(slots) = &mut self.slots {
            ready = slots.assign(ready, len, latest)?;
        }
        if self.config.order == Order::Fifo {
            self.last_release = self.last_release.max(ready);
        }
        Some(ready)
    }

    /// What the bottleneck let out: releases at their deadlines, drops in
    /// the queue as releases that are not sent.
    fn take_outs(&mut self) {
        let mut outs = std::mem::take(&mut self.outs);
        for o in outs.drain(..) {
            let (it, release) = match o {
                Out::Sent(it, at) => {
                    match self.schedule(it.arrival, at, it.delay, it.len, it.reordered) {
                        Some(deadline) => {
                            self.in_flight.push(Reverse((deadline, it.len)));
                            (it, (deadline, None))
                        }
                        None => (it, (at, Some(DropReason::Horizon))),
                    }
                }
                Out::Dropped(it, at, reason) => (it, (at, Some(reason))),
            };
            let (deadline_ns, dropped) = release;
            if let Some(r) = dropped {
                self.unhold(it.len);
                self.counters.queued -= 1;
                self.counters.dropped.add(r);
            }
            let r = Release {
                deadline_ns,
                packet_index: it.index,
                arrival_ns: it.arrival,
                copy: it.copy,
                frame_len: it.len,
                corrupt: it.corrupt,
                ce: it.ce,
                last: false,
                dropped,
            };
            self.releases.push(Reverse(Entry(r, self.seq, true)));
            self.seq += 1;
        }
        self.outs = outs;
    }

    fn push_releases(&mut self, arrival: &Arrival, frame_len: u32) {
        let last_copy = arrival
            .copies()
            .iter()
            .enumerate()
            .filter_map(|(i, f)| match f {
                Fate::Queued(q) => Some((q.deadline_ns, i)),
                _ => None,
            })
            .max()
            .map(|(_, i)| i);
        let mut seq = self.seq;
        for (i, fate) in arrival.copies().iter().enumerate() {
            match *fate {
                Fate::Dropped(r) => self.counters.dropped.add(r),
                // Counted when it entered the queue.
                Fate::Waiting(_) => {}
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
                        dropped: None,
                    };
                    self.releases.push(Reverse(Entry(release, seq, false)));
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

    /// When the link next needs `pop_due`: the earliest deadline waiting,
    /// or the bottleneck's next event (a dequeue, a departure, a delivery
    /// opportunity), whichever is first.
    pub fn next_deadline(&self) -> Option<u64> {
        if let Some(p) = &self.pipes {
            return p.next_deadline();
        }
        let release = self.releases.peek().map(|Reverse(e)| e.0.deadline_ns);
        let event = self.bottleneck.as_ref().and_then(Bottleneck::next_event);
        match (release, event) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Runs the bottleneck up to `now_ns`, then appends every copy due at
    /// `now_ns` to `out`, in release order (deadline, then the order they
    /// were decided in); returns how many. Never hands out a copy before
    /// its deadline. A release with `dropped` set was dropped in the queue
    /// at its deadline and is not to be sent.
    pub fn pop_due(&mut self, now_ns: u64, out: &mut Vec<Release>) -> usize {
        let start = out.len();
        let n = self.pop_inner(now_ns, out);
        if let Some(r) = &mut self.recording {
            r.released(&out[start..]);
        }
        n
    }

    fn pop_inner(&mut self, now_ns: u64, out: &mut Vec<Release>) -> usize {
        if let Some(p) = &mut self.pipes {
            return p.pop_due(&mut self.counters, now_ns, out);
        }
        if let Some(b) = &mut self.bottleneck {
            if self.last_arrival.is_some() {
                b.advance(now_ns, &mut self.outs);
                self.take_outs();
            }
        }
        let before = out.len();
        while self
            .releases
            .peek()
            .is_some_and(|Reverse(e)| e.0.deadline_ns <= now_ns)
        {
            let Some(Reverse(Entry(mut r, _, tracked))) = self.releases.pop() else {
                break;
            };
            if tracked {
                if let Some(n) = self.outstanding.get_mut(&r.packet_index) {
                    *n -= 1;
                    r.last = *n == 0;
                    if r.last {
                        self.outstanding.remove(&r.packet_index);
                    }
                }
            }
            if r.dropped.is_none() {
                self.counters.released += 1;
            }
            out.push(r);
        }
        out.len() - before
    }
}

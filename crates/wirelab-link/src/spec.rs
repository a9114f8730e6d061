//! The stage list of one link direction in netem's syntax: what it parses
//! to, the reading loop, the value readers and printers. Which keywords
//! exist, and each one's checks and printed form, is the registry
//! ([`super::stages::STAGES`]); the grammar is in docs/emulate-model.md.
//!
//! Contracts:
//! - Options may come in any order; each at most once (`limit` may be
//!   split into `limit N` and `limit bytes B`).
//! - Probabilities need a `%` sign (`1%`, `0.5%`): tc reads a bare `0.3`
//!   as 0.3 % while its own comments call it a fraction, so a bare number
//!   is refused rather than guessed.
//! - Durations need a unit (`us`, `ms`, `s`, `ns`; tc's `usec`, `msec`,
//!   `sec` too): tc reads a bare `100` as 100 µs while netem's man page says
//!   milliseconds, so only `0` may go without one.
//! - Rates are in bits (`bit`, `kbit`, `mbit`, `gbit`, `tbit`, any case;
//!   `kibit` etc. are powers of 1024). tc reads `mbps` as megabytes per
//!   second where the rest of wirelab reads megabits, so `*bps` is refused.
//! - Sizes follow wirelab's units (`64k` = 64000, `64KiB` = 65536).
//! - Errors say what is wrong, which token (1-based) and which column.
//!   Parsing never panics.

use std::fmt;

use thiserror::Error;

use super::flow::FlowMask;
use super::stages::{stage_named, Draft, STAGES};

use wirelab_core::units::{parse_bytes, parse_duration_ns, parse_number, UnitError};
use wirelab_trace::AtEnd;

/// A probability with the lag-1 correlation of its events.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Chance {
    /// Probability of the event, in `[0, 1]`.
    pub p: f64,
    /// Lag-1 correlation of successive outcomes, in `[0, 1]`.
    pub corr: f64,
}

/// The shape of the delay variation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DelayDist {
    /// `[D - J, D + J]` (what netem does when no table is loaded).
    #[default]
    Uniform,
    /// Mean `D`, standard deviation `J`.
    Normal,
    /// `D + J * 4/3 * (X - 1.5)`, `X` Pareto with minimum 1 and shape 3
    /// (iproute2's pareto table, unclamped): mean `D`.
    Pareto,
    /// `D + J * (Z/4 + X - 1.5)` with `Z` and `X` at the same quantile
    /// (iproute2's paretonormal table, unclamped): mean `D`.
    ParetoNormal,
}

impl DelayDist {
    pub(super) fn name(self) -> &'static str {
        match self {
            DelayDist::Uniform => "uniform",
            DelayDist::Normal => "normal",
            DelayDist::Pareto => "pareto",
            DelayDist::ParetoNormal => "paretonormal",
        }
    }
}

/// `delay T [J [C%]] [dist NAME]`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DelaySpec {
    /// Base delay `T`.
    pub delay_ns: u64,
    /// Jitter `J` (its meaning depends on `dist`).
    pub jitter_ns: u64,
    /// Lag-1 correlation of successive delays, `[0, 1]`.
    pub corr: f64,
    /// Shape of the variation.
    pub dist: DelayDist,
}

/// Which packets the loss stage drops.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum LossModel {
    /// `loss random P [C]`: Bernoulli with lag-1 correlation.
    Random(Chance),
    /// `loss state p13 [p31 [p32 [p23 [p14]]]]`: netem's 4-state Markov
    /// chain (1 gap reception, 2 burst reception, 3 burst loss, 4 isolated
    /// loss). Defaults: `p31 = 1 - p13`, `p32 = 0`, `p23 = 1`, `p14 = 0`.
    State {
        /// 1 → 3.
        p13: f64,
        /// 3 → 1.
        p31: f64,
        /// 3 → 2.
        p32: f64,
        /// 2 → 3.
        p23: f64,
        /// 1 → 4.
        p14: f64,
    },
    /// `loss gemodel p [r [1-h [1-k]]]`: Gilbert-Elliott. Defaults:
    /// `r = 1 - p`, `1-h = 1`, `1-k = 0` (Bernoulli with probability `p`).
    GilbertElliott {
        /// Good → bad.
        p: f64,
        /// Bad → good.
        r: f64,
        /// Loss probability in the bad state (`1-h`).
        loss_bad: f64,
        /// Loss probability in the good state (`1-k`).
        loss_good: f64,
    },
}

/// `reorder P [C] [gap N]`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Reorder {
    /// Probability that an eligible packet skips the delay.
    pub chance: Chance,
    /// Only every `gap`-th packet is eligible (1 = every packet).
    pub gap: u64,
}

/// `rate R [OVH [CELL [CELLOVH]]]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RateSpec {
    /// Link rate in bit/s (at least 1).
    pub bits_per_sec: u64,
    /// Bytes added to every frame (may be negative).
    pub packet_overhead: i32,
    /// Cell size in bytes; 0 = no cells.
    pub cell_size: u32,
    /// Bytes added to every cell (may be negative).
    pub cell_overhead: i32,
    /// `burst B`: bytes that may leave unshaped after the link was idle
    /// (Dummynet's burst: a token bucket of this depth filled at the rate
    /// while idle); 0 = none.
    pub burst_bytes: u64,
}

/// The queue in front of a bottleneck (`queue KIND ...`, mm-link's forms).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QueueKind {
    /// Drop the arriving packet when full.
    DropTail,
    /// Drop from the head when full, to make room for the arriving one.
    DropHead,
    /// CoDel (RFC 8289): drops at dequeue.
    Codel,
    /// PIE (RFC 8033): drops at enqueue.
    Pie,
}

impl QueueKind {
    pub(super) fn name(self) -> &'static str {
        match self {
            QueueKind::DropTail => "droptail",
            QueueKind::DropHead => "drophead",
            QueueKind::Codel => "codel",
            QueueKind::Pie => "pie",
        }
    }
}

/// `queue KIND [packets=N] [bytes=B] [target=T] [interval=I]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QueueSpec {
    /// The discipline.
    pub kind: QueueKind,
    /// Most packets in the queue (not counting the one being sent).
    pub packets: Option<u64>,
    /// Most bytes in the queue.
    pub bytes: Option<u64>,
    /// CoDel's TARGET, PIE's QDELAY_REF.
    pub target_ns: Option<u64>,
    /// CoDel's INTERVAL, PIE's T_UPDATE.
    pub interval_ns: Option<u64>,
}

/// RFC 8289's defaults: TARGET 5 ms, INTERVAL 100 ms.
pub const CODEL_TARGET_NS: u64 = 5_000_000;
/// See [`CODEL_TARGET_NS`].
pub const CODEL_INTERVAL_NS: u64 = 100_000_000;
/// RFC 8033's defaults: QDELAY_REF 15 ms, T_UPDATE 15 ms.
pub const PIE_TARGET_NS: u64 = 15_000_000;
/// See [`PIE_TARGET_NS`].
pub const PIE_INTERVAL_NS: u64 = 15_000_000;

impl QueueSpec {
    /// The target delay (the discipline's default if not given).
    pub fn target(&self) -> u64 {
        self.target_ns.unwrap_or(match self.kind {
            QueueKind::Pie => PIE_TARGET_NS,
            _ => CODEL_TARGET_NS,
        })
    }

    /// The interval (the discipline's default if not given).
    pub fn interval(&self) -> u64 {
        self.interval_ns.unwrap_or(match self.kind {
            QueueKind::Pie => PIE_INTERVAL_NS,
            _ => CODEL_INTERVAL_NS,
        })
    }
}

/// `link FILE [once]`: Mahimahi delivery opportunities.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MmLinkSpec {
    /// The trace file as written (the caller opens it).
    pub file: String,
    /// After the trace's last opportunity the link is dead (else it loops).
    pub once: bool,
}

/// How on and off periods are drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnOffKind {
    /// Exponential lengths with these means (mm-onoff).
    Exp,
    /// Fixed lengths.
    Periodic,
}

/// `onoff exp|periodic ON OFF [drop]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OnOffSpec {
    /// How lengths are drawn.
    pub kind: OnOffKind,
    /// (Mean) on time.
    pub on_ns: u64,
    /// (Mean) off time.
    pub off_ns: u64,
    /// Packets arriving while off are dropped (reason `link_dead`)
    /// instead of held until the link is on again.
    pub drop: bool,
}

/// Shortest (mean) on or off time: bounds the work of finding the period
/// a time falls in.
pub const MIN_ONOFF_NS: u64 = 1_000_000;

/// `drd MIN MAX [congest C]`: NIST Net's derivative random drop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DrdSpec {
    /// Queue length (packets) where drops start.
    pub min: u64,
    /// Queue length where the drop probability reaches its top, 95 %.
    pub max: u64,
    /// From this queue length, ECN-capable copies DRD picks are marked CE
    /// instead of dropped.
    pub congest: Option<u64>,
}

/// NIST Net's top DRD drop probability (at and above `max`).
pub const DRD_TOP: f64 = 0.95;

impl DrdSpec {
    /// The drop probability at queue length `q`: 0 below `min`, rising
    /// linearly to [`DRD_TOP`] at `max`, [`DRD_TOP`] above.
    pub fn probability(&self, q: u64) -> f64 {
        if q < self.min {
            0.0
        } else if q >= self.max {
            DRD_TOP
        } else {
            DRD_TOP * (q - self.min) as f64 / (self.max - self.min) as f64
        }
    }
}

/// `timeline FILE [period T] [at-end loop|hold|stop|pass|drop]`: a
/// time-indexed CSV trace; each packet uses the row active at its arrival.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TimelineSpec {
    /// The file as written (the caller opens it).
    pub file: String,
    /// Length of a `t_us`/`t_ms` trace (its last row lasts until then).
    pub period_ns: Option<u64>,
    /// After the trace's end.
    pub at_end: AtEnd,
}

/// `slot MIN [MAX] [packets N] [bytes B]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SlotSpec {
    /// Shortest slot.
    pub min_ns: u64,
    /// Longest slot (slot lengths are uniform in `[min, max]`).
    pub max_ns: u64,
    /// Most packets released at one slot edge.
    pub packets: Option<u32>,
    /// Most bytes released at one slot edge.
    pub bytes: Option<u64>,
}

/// `limit N`, `limit bytes B`: what the link holds at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Limit {
    /// Packets; `None` = [`super::DEFAULT_LIMIT_PACKETS`].
    pub packets: Option<u64>,
    /// Bytes; `None` = no byte limit.
    pub bytes: Option<u64>,
}

/// What to do when delays would reorder packets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Order {
    /// Every packet leaves at its own deadline (netem, NIST Net).
    #[default]
    Free,
    /// No packet leaves before one that arrived earlier.
    Fifo,
}

/// `trace FILE [scale X] [offset T] [at-end POLICY]`.
#[derive(Debug, Clone, PartialEq)]
pub struct TraceSpec {
    /// The file as written (the caller opens it).
    pub file: String,
    /// Every delay is multiplied by this.
    pub scale: f64,
    /// Then this is added (may be negative; results below 0 become 0).
    pub offset_ns: i64,
    /// After the last record (`loop`: the source starts over, see
    /// [`super::Looping`]; `stop`: the link reports the end,
    /// [`super::Arrival::trace_ended`]).
    pub at_end: AtEnd,
}

/// Everything one direction of a link does, as parsed from a stage list.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct LinkConfig {
    /// Propagation delay and its variation.
    pub delay: Option<DelaySpec>,
    /// Random loss.
    pub loss: Option<LossModel>,
    /// Mark ECN-capable packets CE instead of dropping them for `loss`.
    pub ecn: bool,
    /// Duplication (a copy is never duplicated again).
    pub duplicate: Option<Chance>,
    /// One flipped bit.
    pub corrupt: Option<Chance>,
    /// Some packets skip the delay.
    pub reorder: Option<Reorder>,
    /// Serialization at a link rate, before the delay.
    pub rate: Option<RateSpec>,
    /// Releases only at slot edges.
    pub slot: Option<SlotSpec>,
    /// Queue limit.
    pub limit: Limit,
    /// Reordering policy.
    pub order: Order,
    /// Seed of every random decision (`None`: the caller picks one).
    pub seed: Option<u64>,
    /// Per-packet actions from a trace instead of `delay`/`loss`/`duplicate`.
    pub trace: Option<TraceSpec>,
    /// The queue in front of the bottleneck.
    pub queue: Option<QueueSpec>,
    /// Mahimahi delivery opportunities as the bottleneck.
    pub link: Option<MmLinkSpec>,
    /// The bottleneck goes on and off.
    pub onoff: Option<OnOffSpec>,
    /// Derivative random drop by queue length.
    pub drd: Option<DrdSpec>,
    /// Link parameters by time from a CSV trace.
    pub timeline: Option<TimelineSpec>,
    /// Dummynet's empirical airtime and loss profile (`profile FILE`).
    pub profile: Option<ProfileSpec>,
    /// A pipe per flow, or the flows of a scheduler's queues.
    pub per_flow: Option<PerFlowSpec>,
    /// How the bottleneck serves its queues.
    pub sched: Option<SchedSpec>,
}

/// `per-flow MASK [flows N]`: Dummynet's dynamic pipes (or, with
/// `sched drr|fq_codel`, how flows are told apart for their queues).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PerFlowSpec {
    /// The fields that make a flow.
    pub mask: FlowMask,
    /// Most flows with a pipe (or a DRR queue) of their own; later flows
    /// share one overflow pipe (queue). `None`: [`DEFAULT_MAX_FLOWS`].
    pub max_flows: Option<u64>,
}

/// Flows with a pipe of their own when `per-flow` sets no bound (as many
/// as fq_codel's default buckets).
pub const DEFAULT_MAX_FLOWS: u64 = 1024;
/// The largest bound `per-flow ... flows N` and `fq_codel flows N` take.
pub const MAX_FLOWS: u64 = 65_536;

/// `sched fifo|drr ...|fq_codel ...`: how the bottleneck serves its
/// queues.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SchedSpec {
    /// One queue (the bottleneck as without `sched`).
    Fifo,
    /// Deficit round robin over flow queues.
    Drr {
        /// Flow `k` (in order of first appearance) gets `weights[k]`,
        /// later flows 1.
        weights: Vec<u32>,
        /// Bytes per round per unit of weight (`None`: 1514).
        quantum: Option<u64>,
    },
    /// fq_codel (RFC 8290).
    FqCodel {
        /// CoDel's target (`None`: 5 ms).
        target_ns: Option<u64>,
        /// CoDel's interval (`None`: 100 ms).
        interval_ns: Option<u64>,
        /// Deficit refill in bytes (`None`: 1514).
        quantum: Option<u64>,
        /// Hash buckets (`None`: 1024).
        flows: Option<u64>,
    },
}

/// The smallest quantum (bounds a scheduler's rounds per packet).
pub const MIN_QUANTUM: u64 = 64;

/// `profile FILE`: a Dummynet pipe profile (the caller opens the file).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProfileSpec {
    pub file: String,
}

impl LinkConfig {
    /// The link has a bottleneck simulated in time (`queue`, `link` or
    /// `onoff`): release times are decided as model time passes, not at
    /// arrival.
    pub fn has_bottleneck(&self) -> bool {
        self.queue.is_some() || self.link.is_some() || self.onoff.is_some() || self.sched.is_some()
    }

    /// A scheduler with a queue per flow (`sched drr` or `fq_codel`).
    pub fn flow_queues(&self) -> bool {
        matches!(
            self.sched,
            Some(SchedSpec::Drr { .. } | SchedSpec::FqCodel { .. })
        )
    }

    /// Each flow gets a pipe of its own (`per-flow` without a scheduler).
    pub fn flow_pipes(&self) -> bool {
        self.per_flow.is_some() && !self.flow_queues()
    }

    /// Decisions depend on the frame's flow: the driver should pass it
    /// ([`super::Link::arrive_flow`]).
    pub fn uses_flows(&self) -> bool {
        self.per_flow.is_some() || self.flow_queues()
    }

    /// The fields that make a flow: `per-flow`'s mask, else the 5-tuple.
    pub fn flow_mask(&self) -> FlowMask {
        self.per_flow.map_or(FlowMask::FIVE_TUPLE, |p| p.mask)
    }
}

/// A stage list that cannot be used: what, and where.
#[derive(Debug, Clone, PartialEq, Error)]
#[error("{}: {kind}", where_(*.token, *.column, .text))]
pub struct SpecError {
    /// 1-based token index (one past the last token at the end).
    pub token: usize,
    /// 1-based character column in the input.
    pub column: usize,
    /// The offending token, empty at the end of the input.
    pub text: String,
    /// What is wrong.
    pub kind: SpecErrorKind,
}

fn where_(token: usize, column: usize, text: &str) -> String {
    if text.is_empty() {
        format!("at the end (column {column})")
    } else {
        format!("token {token} {text:?} (column {column})")
    }
}

/// What is wrong with a stage list.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum SpecErrorKind {
    /// Not a keyword of the stage language.
    #[error("unknown option; expected one of {}", super::stages::keyword_list())]
    Unknown,
    /// The input ended inside an option.
    #[error("{option} needs {expected}")]
    Missing {
        /// The option being parsed.
        option: &'static str,
        /// What was expected next.
        expected: &'static str,
    },
    /// A value could not be read.
    #[error("{what}: {reason}")]
    Value {
        /// Which value ("delay", "loss probability").
        what: &'static str,
        /// Why, and what is accepted.
        reason: String,
    },
    /// An option given twice.
    #[error("{0} is given twice")]
    Repeated(&'static str),
    /// Options that cannot be combined, or a missing prerequisite.
    #[error("{0}")]
    Conflict(String),
}

/// Shortest slot accepted (bounds the work of finding slot edges).
pub const MIN_SLOT_NS: u64 = 1_000;

struct Tok<'a> {
    text: &'a str,
    column: usize,
}

/// The tokens of a stage list and the next one to read.
pub(super) struct Parser<'a> {
    toks: Vec<Tok<'a>>,
    pub(super) pos: usize,
    end_column: usize,
}

fn tokens(s: &str) -> (Vec<Tok<'_>>, usize) {
    let mut toks = Vec::new();
    let mut start: Option<(usize, usize)> = None;
    let mut column = 0;
    for (i, c) in s.char_indices() {
        column += 1;
        if c.is_whitespace() {
            if let Some((b, col)) = start.take() {
                toks.push(Tok {
                    text: &s[b..i],
                    column: col,
                });
            }
        } else if start.is_none() {
            start = Some((i, column));
        }
    }
    if let Some((b, col)) = start {
        toks.push(Tok {
            text: &s[b..],
            column: col,
        });
    }
    (toks, column + 1)
}

impl<'a> Parser<'a> {
    pub(super) fn err_at(&self, idx: usize, kind: SpecErrorKind) -> SpecError {
        match self.toks.get(idx) {
            Some(t) => SpecError {
                token: idx + 1,
                column: t.column,
                text: t.text.to_string(),
                kind,
            },
            None => SpecError {
                token: self.toks.len() + 1,
                column: self.end_column,
                text: String::new(),
                kind,
            },
        }
    }

    /// An error about the token just consumed.
    pub(super) fn err_prev(&self, kind: SpecErrorKind) -> SpecError {
        self.err_at(self.pos - 1, kind)
    }

    pub(super) fn peek(&self) -> Option<&'a str> {
        self.toks.get(self.pos).map(|t| t.text)
    }

    /// The next token, required.
    pub(super) fn need(
        &mut self,
        option: &'static str,
        expected: &'static str,
    ) -> Result<&'a str, SpecError> {
        match self.peek() {
            Some(t) => {
                self.pos += 1;
                Ok(t)
            }
            None => Err(self.err_at(self.pos, SpecErrorKind::Missing { option, expected })),
        }
    }

    /// The next token if it starts like a number (netem's optional
    /// positional arguments).
    fn optional_number(&mut self, signed: bool) -> Option<&'a str> {
        let t = self.peek()?;
        let body = if signed {
            t.strip_prefix('-').unwrap_or(t)
        } else {
            t
        };
        if body.starts_with(|c: char| c.is_ascii_digit() || c == '.') {
            self.pos += 1;
            Some(t)
        } else {
            None
        }
    }

    fn value<T>(&self, what: &'static str, r: Result<T, String>) -> Result<T, SpecError> {
        r.map_err(|reason| self.err_prev(SpecErrorKind::Value { what, reason }))
    }

    fn percent(&mut self, option: &'static str, what: &'static str) -> Result<f64, SpecError> {
        let t = self.need(option, "a percentage such as 1%")?;
        self.value(what, percent(t))
    }

    fn optional_percent(&mut self, what: &'static str) -> Result<Option<f64>, SpecError> {
        match self.optional_number(false) {
            Some(t) => self.value(what, percent(t)).map(Some),
            None => Ok(None),
        }
    }

    fn duration(&mut self, option: &'static str, what: &'static str) -> Result<u64, SpecError> {
        let t = self.need(option, "a duration such as 10ms")?;
        self.value(what, duration(t))
    }

    pub(super) fn count(
        &mut self,
        option: &'static str,
        what: &'static str,
    ) -> Result<u64, SpecError> {
        let t = self.need(option, "a whole number")?;
        self.value(what, count(t))
    }
}

/// Which option set each field, for conflict messages (token indices).
#[derive(Default)]
pub(super) struct Seen {
    pub(super) delay: Option<usize>,
    pub(super) dist: Option<(usize, DelayDist)>,
    pub(super) loss: Option<usize>,
    pub(super) ecn: Option<usize>,
    pub(super) duplicate: Option<usize>,
    pub(super) corrupt: Option<usize>,
    pub(super) reorder: Option<usize>,
    pub(super) rate: Option<usize>,
    pub(super) slot: Option<usize>,
    pub(super) limit_packets: Option<usize>,
    pub(super) limit_bytes: Option<usize>,
    pub(super) order: Option<usize>,
    pub(super) seed: Option<usize>,
    pub(super) trace: Option<usize>,
    pub(super) burst: Option<usize>,
    pub(super) queue: Option<usize>,
    pub(super) link: Option<usize>,
    pub(super) onoff: Option<usize>,
    pub(super) drd: Option<usize>,
    pub(super) timeline: Option<usize>,
    pub(super) profile: Option<usize>,
    pub(super) per_flow: Option<usize>,
    pub(super) sched: Option<usize>,
}

impl LinkConfig {
    /// Parses a stage list such as `delay 10ms 2ms 25% dist normal loss 1%`.
    /// An empty list is a link that forwards every packet at once.
    pub fn parse(s: &str) -> Result<LinkConfig, SpecError> {
        let (toks, end_column) = tokens(s);
        let mut p = Parser {
            toks,
            pos: 0,
            end_column,
        };
        let mut d = Draft::default();
        while let Some(kw) = p.peek() {
            let at = p.pos;
            p.pos += 1;
            match stage_named(kw) {
                Some(stage) => (stage.parse)(&mut p, &mut d, at)?,
                None if kw == "gap" => {
                    return Err(p.err_at(
                        at,
                        SpecErrorKind::Conflict(
                            "gap belongs to reorder: reorder P% [C%] gap N".to_string(),
                        ),
                    ))
                }
                None => return Err(p.err_at(at, SpecErrorKind::Unknown)),
            }
        }
        for stage in STAGES {
            (stage.check)(&mut d, &p)?;
        }
        Ok(d.config)
    }
}

pub(super) fn parse_delay(p: &mut Parser, seen: &mut Seen) -> Result<DelaySpec, SpecError> {
    let delay_ns = p.duration("delay", "delay")?;
    let mut d = DelaySpec {
        delay_ns,
        jitter_ns: 0,
        corr: 0.0,
        dist: DelayDist::Uniform,
    };
    if let Some(t) = p.optional_number(false) {
        d.jitter_ns = p.value("jitter", duration(t))?;
        if let Some(c) = p.optional_percent("delay correlation")? {
            d.corr = c;
        }
    }
    if matches!(p.peek(), Some("dist" | "distribution")) {
        let at = p.pos;
        p.pos += 1;
        seen.dist = Some((at, parse_dist(p)?));
    }
    Ok(d)
}

pub(super) fn parse_dist(p: &mut Parser) -> Result<DelayDist, SpecError> {
    let t = p.need("dist", "uniform, normal, pareto or paretonormal")?;
    Ok(match t {
        "uniform" => DelayDist::Uniform,
        "normal" => DelayDist::Normal,
        "pareto" => DelayDist::Pareto,
        "paretonormal" => DelayDist::ParetoNormal,
        _ => {
            return Err(p.err_prev(SpecErrorKind::Value {
                what: "dist",
                reason: "expected uniform, normal, pareto or paretonormal".to_string(),
            }))
        }
    })
}

pub(super) fn parse_chance(p: &mut Parser, option: &'static str) -> Result<Chance, SpecError> {
    let prob = p.percent(option, "probability")?;
    let corr = p.optional_percent("correlation")?.unwrap_or(0.0);
    Ok(Chance { p: prob, corr })
}

pub(super) fn parse_loss(p: &mut Parser) -> Result<LossModel, SpecError> {
    const EXPECTED: &str = "random P%, state P13%... or gemodel P%...";
    match p.peek() {
        Some("random") => {
            p.pos += 1;
            Ok(LossModel::Random(parse_chance(p, "loss random")?))
        }
        Some("state") => {
            p.pos += 1;
            let p13 = p.percent("loss state", "p13")?;
            let mut v = [p13, clean(1.0 - p13), 0.0, 1.0, 0.0];
            let names = ["p31", "p32", "p23", "p14"];
            for (i, name) in names.iter().enumerate() {
                match p.optional_percent(name)? {
                    Some(x) => v[i + 1] = x,
                    None => break,
                }
            }
            let [p13, p31, p32, p23, p14] = v;
            if p13 + p14 > 1.0 + 1e-12 || p31 + p32 > 1.0 + 1e-12 {
                return Err(p.err_prev(SpecErrorKind::Value {
                    what: "loss state",
                    reason: "p13 + p14 and p31 + p32 must each be at most 100%".to_string(),
                }));
            }
            Ok(LossModel::State {
                p13,
                p31,
                p32,
                p23,
                p14,
            })
        }
        Some("gemodel") => {
            p.pos += 1;
            let gp = p.percent("loss gemodel", "p")?;
            let mut v = [gp, clean(1.0 - gp), 1.0, 0.0];
            let names = ["r", "1-h", "1-k"];
            for (i, name) in names.iter().enumerate() {
                match p.optional_percent(name)? {
                    Some(x) => v[i + 1] = x,
                    None => break,
                }
            }
            let [gp, r, loss_bad, loss_good] = v;
            Ok(LossModel::GilbertElliott {
                p: gp,
                r,
                loss_bad,
                loss_good,
            })
        }
        // netem's older form `loss P% [C%]`.
        Some(t) if t.starts_with(|c: char| c.is_ascii_digit() || c == '.') => {
            Ok(LossModel::Random(parse_chance(p, "loss")?))
        }
        Some(_) => {
            p.pos += 1;
            Err(p.err_prev(SpecErrorKind::Value {
                what: "loss",
                reason: format!("expected {EXPECTED}"),
            }))
        }
        None => Err(p.err_at(
            p.pos,
            SpecErrorKind::Missing {
                option: "loss",
                expected: EXPECTED,
            },
        )),
    }
}

pub(super) fn parse_reorder(p: &mut Parser) -> Result<Reorder, SpecError> {
    let chance = parse_chance(p, "reorder")?;
    let mut gap = 1;
    if p.peek() == Some("gap") {
        p.pos += 1;
        gap = p.count("reorder gap", "gap")?;
        if gap == 0 {
            return Err(p.err_prev(SpecErrorKind::Value {
                what: "gap",
                reason: "must be at least 1".to_string(),
            }));
        }
    }
    Ok(Reorder { chance, gap })
}

pub(super) fn parse_rate_clause(p: &mut Parser) -> Result<RateSpec, SpecError> {
    let t = p.need("rate", "a rate such as 10mbit")?;
    let bits_per_sec = p.value("rate", rate_bits(t))?;
    let mut r = RateSpec {
        bits_per_sec,
        packet_overhead: 0,
        cell_size: 0,
        cell_overhead: 0,
        burst_bytes: 0,
    };
    if let Some(t) = p.optional_number(true) {
        r.packet_overhead = p.value("packet overhead", signed_bytes(t))?;
        if let Some(t) = p.optional_number(false) {
            let cell = p.value("cell size", count(t))?;
            r.cell_size = p.value(
                "cell size",
                u32::try_from(cell).map_err(|_| "at most 4294967295 bytes".to_string()),
            )?;
            if let Some(t) = p.optional_number(true) {
                r.cell_overhead = p.value("cell overhead", signed_bytes(t))?;
            }
        }
    }
    Ok(r)
}

pub(super) fn parse_slot(p: &mut Parser) -> Result<SlotSpec, SpecError> {
    let min_ns = p.duration("slot", "slot length")?;
    if min_ns < MIN_SLOT_NS {
        return Err(p.err_prev(SpecErrorKind::Value {
            what: "slot length",
            reason: "must be at least 1us".to_string(),
        }));
    }
    let mut s = SlotSpec {
        min_ns,
        max_ns: min_ns,
        packets: None,
        bytes: None,
    };
    if let Some(t) = p.optional_number(false) {
        s.max_ns = p.value("longest slot", duration(t))?;
        if s.max_ns < s.min_ns {
            return Err(p.err_prev(SpecErrorKind::Value {
                what: "longest slot",
                reason: "must not be shorter than the shortest (slot MIN MAX)".to_string(),
            }));
        }
    }
    loop {
        match p.peek() {
            Some("packets") if s.packets.is_none() => {
                p.pos += 1;
                let n = p.count("slot packets", "packets per slot")?;
                s.packets = Some(p.value("packets per slot", positive_u32(n))?);
            }
            Some("bytes") if s.bytes.is_none() => {
                p.pos += 1;
                let t = p.need("slot bytes", "a size such as 64k")?;
                let b = p.value("bytes per slot", size(t))?;
                if b == 0 {
                    return Err(p.err_prev(SpecErrorKind::Value {
                        what: "bytes per slot",
                        reason: "must be at least 1".to_string(),
                    }));
                }
                s.bytes = Some(b);
            }
            _ => return Ok(s),
        }
    }
}

pub(super) fn parse_limit(
    p: &mut Parser,
    limit: &mut Limit,
    seen: &mut Seen,
    at: usize,
) -> Result<(), SpecError> {
    let mut any = false;
    loop {
        let which = match p.peek() {
            Some("packets") => {
                p.pos += 1;
                Some(true)
            }
            Some("bytes") => {
                p.pos += 1;
                Some(false)
            }
            Some(t) if t.starts_with(|c: char| c.is_ascii_digit()) => Some(true),
            _ => None,
        };
        let Some(packets) = which else { break };
        any = true;
        if packets {
            if seen.limit_packets.is_some() {
                return Err(p.err_at(at, SpecErrorKind::Repeated("limit (packets)")));
            }
            seen.limit_packets = Some(at);
            let n = p.count("limit", "packets")?;
            if n == 0 {
                return Err(p.err_prev(SpecErrorKind::Value {
                    what: "limit",
                    reason: "must be at least 1 (limit 0 would drop every packet)".to_string(),
                }));
            }
            limit.packets = Some(n);
        } else {
            if seen.limit_bytes.is_some() {
                return Err(p.err_at(at, SpecErrorKind::Repeated("limit bytes")));
            }
            seen.limit_bytes = Some(at);
            let t = p.need("limit bytes", "a size such as 1M")?;
            let b = p.value("limit bytes", size(t))?;
            if b == 0 {
                return Err(p.err_prev(SpecErrorKind::Value {
                    what: "limit bytes",
                    reason: "must be at least 1".to_string(),
                }));
            }
            limit.bytes = Some(b);
        }
    }
    if !any {
        return Err(p.err_at(
            p.pos,
            SpecErrorKind::Missing {
                option: "limit",
                expected: "N (packets), packets N or bytes B",
            },
        ));
    }
    Ok(())
}

pub(super) fn parse_trace(p: &mut Parser) -> Result<TraceSpec, SpecError> {
    let file = p.need("trace", "a file name")?.to_string();
    let mut t = TraceSpec {
        file,
        scale: 1.0,
        offset_ns: 0,
        at_end: AtEnd::default(),
    };
    let (mut scale, mut offset, mut end) = (false, false, false);
    loop {
        match p.peek() {
            Some("scale") if !scale => {
                p.pos += 1;
                scale = true;
                let v = p.need("trace scale", "a factor such as 10")?;
                t.scale = p.value("trace scale", factor(v))?;
            }
            Some("offset") if !offset => {
                p.pos += 1;
                offset = true;
                let v = p.need("trace offset", "a duration such as -1ms")?;
                t.offset_ns = p.value("trace offset", signed_duration(v))?;
            }
            Some("at-end") if !end => {
                p.pos += 1;
                end = true;
                t.at_end = parse_at_end(p, "trace at-end")?;
            }
            _ => return Ok(t),
        }
    }
}

pub(super) fn parse_burst(p: &mut Parser) -> Result<u64, SpecError> {
    let t = p.need("burst", "a size such as 125k")?;
    let b = p.value("burst", size(t))?;
    if b == 0 {
        return Err(p.err_prev(SpecErrorKind::Value {
            what: "burst",
            reason: "must be at least 1 byte (leave burst out for none)".to_string(),
        }));
    }
    Ok(b)
}

pub(super) fn parse_queue(p: &mut Parser) -> Result<QueueSpec, SpecError> {
    const KINDS: &str = "droptail, drophead, codel or pie";
    let kind = match p.need("queue", KINDS)? {
        "droptail" => QueueKind::DropTail,
        "drophead" => QueueKind::DropHead,
        "codel" => QueueKind::Codel,
        "pie" => QueueKind::Pie,
        _ => {
            return Err(p.err_prev(SpecErrorKind::Value {
                what: "queue",
                reason: format!("expected {KINDS}"),
            }))
        }
    };
    let mut q = QueueSpec {
        kind,
        packets: None,
        bytes: None,
        target_ns: None,
        interval_ns: None,
    };
    while let Some(t) = p.peek() {
        let Some((key, value)) = t.split_once('=') else {
            if matches!(t, "packets" | "bytes" | "target" | "interval") {
                p.pos += 1;
                return Err(p.err_prev(SpecErrorKind::Value {
                    what: "queue",
                    reason: format!("write {t}=VALUE (mm-link's form, e.g. packets=1000)"),
                }));
            }
            break;
        };
        p.pos += 1;
        let repeated = |set: bool, p: &Parser| {
            if set {
                Err(p.err_prev(SpecErrorKind::Repeated("a queue argument")))
            } else {
                Ok(())
            }
        };
        match key {
            "packets" => {
                repeated(q.packets.is_some(), p)?;
                let n = p.value("queue packets", count(value))?;
                q.packets = Some(p.value("queue packets", at_least_one(n))?);
            }
            "bytes" => {
                repeated(q.bytes.is_some(), p)?;
                let b = p.value("queue bytes", size(value))?;
                q.bytes = Some(p.value("queue bytes", at_least_one(b))?);
            }
            "target" => {
                repeated(q.target_ns.is_some(), p)?;
                let d = p.value("queue target", duration(value))?;
                q.target_ns = Some(p.value("queue target", at_least_one(d))?);
            }
            "interval" => {
                repeated(q.interval_ns.is_some(), p)?;
                let d = p.value("queue interval", duration(value))?;
                q.interval_ns = Some(p.value("queue interval", at_least_one(d))?);
            }
            _ => {
                return Err(p.err_prev(SpecErrorKind::Value {
                    what: "queue",
                    reason: "expected packets=N, bytes=B, target=T or interval=T".to_string(),
                }))
            }
        }
    }
    if matches!(kind, QueueKind::DropTail | QueueKind::DropHead)
        && (q.target_ns.is_some() || q.interval_ns.is_some())
    {
        return Err(p.err_prev(SpecErrorKind::Value {
            what: "queue",
            reason: format!(
                "{} has no target or interval (they are codel's and pie's)",
                kind.name()
            ),
        }));
    }
    Ok(q)
}

pub(super) fn parse_per_flow(p: &mut Parser) -> Result<PerFlowSpec, SpecError> {
    let t = p.need("per-flow", "a mask such as src/24,dport")?;
    let mask = p.value("per-flow", FlowMask::parse(t))?;
    let mut max_flows = None;
    if p.peek() == Some("flows") {
        p.pos += 1;
        let n = p.count("per-flow flows", "per-flow flows")?;
        max_flows = Some(p.value("per-flow flows", flow_bound(n))?);
    }
    Ok(PerFlowSpec { mask, max_flows })
}

fn flow_bound(n: u64) -> Result<u64, String> {
    if (1..=MAX_FLOWS).contains(&n) {
        Ok(n)
    } else {
        Err(format!("must be 1 to {MAX_FLOWS}"))
    }
}

fn quantum(t: &str) -> Result<u64, String> {
    let q = size(t)?;
    if q < MIN_QUANTUM {
        return Err(format!("at least {MIN_QUANTUM} bytes"));
    }
    Ok(q)
}

pub(super) fn parse_sched(p: &mut Parser) -> Result<SchedSpec, SpecError> {
    const KINDS: &str = "fifo, drr or fq_codel";
    let once = |set: bool, p: &Parser| {
        if set {
            Err(p.err_prev(SpecErrorKind::Repeated("a sched argument")))
        } else {
            Ok(())
        }
    };
    match p.need("sched", KINDS)? {
        "fifo" => Ok(SchedSpec::Fifo),
        "drr" => {
            let (mut weights, mut q) = (None, None);
            loop {
                match p.peek() {
                    Some("weights") => {
                        p.pos += 1;
                        once(weights.is_some(), p)?;
                        let t = p.need("sched drr weights", "weights such as 1,3")?;
                        let w = t
                            .split(',')
                            .map(|w| match w.parse::<u32>() {
                                Ok(n) if (1..=65_535).contains(&n) => Ok(n),
                                _ => Err(format!(
                                    "{w:?}: a weight is a whole number from 1 to 65535 (weights separated by commas, no spaces: 1,3)"
                                )),
                            })
                            .collect::<Result<Vec<u32>, String>>();
                        weights = Some(p.value("sched drr weights", w)?);
                    }
                    Some("quantum") => {
                        p.pos += 1;
                        once(q.is_some(), p)?;
                        let t = p.need("sched drr quantum", "a size such as 1514")?;
                        q = Some(p.value("sched drr quantum", quantum(t))?);
                    }
                    _ => break,
                }
            }
            Ok(SchedSpec::Drr {
                weights: weights.unwrap_or_default(),
                quantum: q,
            })
        }
        "fq_codel" => {
            let (mut target_ns, mut interval_ns, mut q, mut flows) = (None, None, None, None);
            loop {
                match p.peek() {
                    Some("target") => {
                        p.pos += 1;
                        once(target_ns.is_some(), p)?;
                        let d = p.duration("sched fq_codel target", "fq_codel target")?;
                        target_ns = Some(p.value("fq_codel target", at_least_one(d))?);
                    }
                    Some("interval") => {
                        p.pos += 1;
                        once(interval_ns.is_some(), p)?;
                        let d = p.duration("sched fq_codel interval", "fq_codel interval")?;
                        interval_ns = Some(p.value("fq_codel interval", at_least_one(d))?);
                    }
                    Some("quantum") => {
                        p.pos += 1;
                        once(q.is_some(), p)?;
                        let t = p.need("sched fq_codel quantum", "a size such as 1514")?;
                        q = Some(p.value("fq_codel quantum", quantum(t))?);
                    }
                    Some("flows") => {
                        p.pos += 1;
                        once(flows.is_some(), p)?;
                        let n = p.count("sched fq_codel flows", "fq_codel flows")?;
                        flows = Some(p.value("fq_codel flows", flow_bound(n))?);
                    }
                    _ => break,
                }
            }
            Ok(SchedSpec::FqCodel {
                target_ns,
                interval_ns,
                quantum: q,
                flows,
            })
        }
        _ => Err(p.err_prev(SpecErrorKind::Value {
            what: "sched",
            reason: format!("expected {KINDS}"),
        })),
    }
}

fn at_least_one(v: u64) -> Result<u64, String> {
    if v == 0 {
        Err("must be more than 0".to_string())
    } else {
        Ok(v)
    }
}

pub(super) fn parse_onoff(p: &mut Parser) -> Result<OnOffSpec, SpecError> {
    let kind = match p.need("onoff", "exp or periodic")? {
        "exp" => OnOffKind::Exp,
        "periodic" => OnOffKind::Periodic,
        _ => {
            return Err(p.err_prev(SpecErrorKind::Value {
                what: "onoff",
                reason: "expected exp or periodic".to_string(),
            }))
        }
    };
    let mut times = [0u64; 2];
    for (i, what) in ["on time", "off time"].into_iter().enumerate() {
        times[i] = p.duration("onoff", what)?;
        if times[i] < MIN_ONOFF_NS {
            return Err(p.err_prev(SpecErrorKind::Value {
                what,
                reason: "must be at least 1ms".to_string(),
            }));
        }
    }
    let drop = p.peek() == Some("drop");
    p.pos += usize::from(drop);
    Ok(OnOffSpec {
        kind,
        on_ns: times[0],
        off_ns: times[1],
        drop,
    })
}

pub(super) fn parse_drd(p: &mut Parser) -> Result<DrdSpec, SpecError> {
    let min = p.count("drd", "DRD min (packets)")?;
    let max = p.count("drd", "DRD max (packets)")?;
    if max <= min {
        return Err(p.err_prev(SpecErrorKind::Value {
            what: "DRD max",
            reason: format!("must be above DRD min ({min})"),
        }));
    }
    let mut congest = None;
    if p.peek() == Some("congest") {
        p.pos += 1;
        congest = Some(p.count("drd congest", "DRD congest (packets)")?);
    }
    Ok(DrdSpec { min, max, congest })
}

pub(super) fn parse_timeline(p: &mut Parser) -> Result<TimelineSpec, SpecError> {
    let file = p.need("timeline", "a time-indexed CSV file")?.to_string();
    let mut t = TimelineSpec {
        file,
        period_ns: None,
        at_end: AtEnd::default(),
    };
    let (mut period, mut end) = (false, false);
    loop {
        match p.peek() {
            Some("period") if !period => {
                p.pos += 1;
                period = true;
                let d = p.duration("timeline period", "timeline period")?;
                t.period_ns = Some(p.value("timeline period", at_least_one(d))?);
            }
            Some("at-end") if !end => {
                p.pos += 1;
                end = true;
                t.at_end = parse_at_end(p, "timeline at-end")?;
            }
            _ => return Ok(t),
        }
    }
}

fn parse_at_end(p: &mut Parser, option: &'static str) -> Result<AtEnd, SpecError> {
    p.need(option, AtEnd::CHOICES)?.parse().map_err(|_| {
        p.err_prev(SpecErrorKind::Value {
            what: option,
            reason: format!("expected {}", AtEnd::CHOICES),
        })
    })
}

fn percent(t: &str) -> Result<f64, String> {
    let Some(num) = t.strip_suffix('%') else {
        return Err(format!(
            "write a percentage with % (e.g. {t}%); a bare number is ambiguous \
             (tc reads 0.3 as 0.3 %, its comments as 30 %)"
        ));
    };
    let v = parse_number(num).map_err(|e| e.to_string())?;
    if v > 100.0 {
        return Err("must be at most 100%".to_string());
    }
    Ok(clean(v / 100.0))
}

/// Probabilities are kept to 1e-12 so that defaults such as `1 - p` and
/// their printed form parse back to the same value.
fn clean(p: f64) -> f64 {
    (p * 1e12).round() / 1e12
}

/// tc's time unit spellings mapped onto wirelab's.
fn normalize_time_unit(t: &str) -> String {
    for (long, short) in [
        ("usecs", "us"),
        ("usec", "us"),
        ("msecs", "ms"),
        ("msec", "ms"),
        ("nsecs", "ns"),
        ("nsec", "ns"),
        ("secs", "s"),
        ("sec", "s"),
    ] {
        if let Some(num) = t.strip_suffix(long) {
            return format!("{num}{short}");
        }
    }
    t.to_string()
}

fn duration(t: &str) -> Result<u64, String> {
    parse_duration_ns(&normalize_time_unit(t)).map_err(|e| match e {
        UnitError::DurationWithoutUnit(_) => format!(
            "{t:?} needs a unit: write {t}us or {t}ms (tc reads a bare number as \
             microseconds, netem's man page says milliseconds)"
        ),
        e => e.to_string(),
    })
}

fn signed_duration(t: &str) -> Result<i64, String> {
    let (neg, body) = match t.strip_prefix('-') {
        Some(b) => (true, b),
        None => (false, t),
    };
    let v = duration(body)?;
    let v = i64::try_from(v).map_err(|_| "too large".to_string())?;
    Ok(if neg { -v } else { v })
}

fn count(t: &str) -> Result<u64, String> {
    t.parse::<u64>()
        .map_err(|_| format!("{t:?} is not a whole number"))
}

fn positive_u32(n: u64) -> Result<u32, String> {
    match u32::try_from(n) {
        Ok(0) => Err("must be at least 1".to_string()),
        Ok(v) => Ok(v),
        Err(_) => Err("at most 4294967295".to_string()),
    }
}

fn signed_bytes(t: &str) -> Result<i32, String> {
    t.parse::<i32>()
        .map_err(|_| format!("{t:?} is not a whole number of bytes (may be negative)"))
}

fn size(t: &str) -> Result<u64, String> {
    parse_bytes(t).map_err(|e| e.to_string())
}

fn factor(t: &str) -> Result<f64, String> {
    let v = parse_number(t).map_err(|e| e.to_string())?;
    if v.is_finite() {
        Ok(v)
    } else {
        Err("must be a finite number".to_string())
    }
}

/// A link rate in bit/s, tc's bit units only (see the module doc).
fn rate_bits(t: &str) -> Result<u64, String> {
    let split = t
        .find(|c: char| c.is_ascii_alphabetic() || c == '%')
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let lower = unit.to_ascii_lowercase();
    let mult: f64 = match lower.as_str() {
        "bit" => 1.0,
        "kbit" => 1e3,
        "mbit" => 1e6,
        "gbit" => 1e9,
        "tbit" => 1e12,
        "kibit" => 1024.0,
        "mibit" => 1024.0 * 1024.0,
        "gibit" => 1024.0 * 1024.0 * 1024.0,
        "tibit" => 1024.0 * 1024.0 * 1024.0 * 1024.0,
        "" => {
            return Err(format!(
                "{t:?} needs a unit: write {t}kbit or {t}mbit (tc reads a bare number as bytes per second)"
            ))
        }
        u if u.ends_with("bps") => {
            return Err(format!(
                "{t:?} is ambiguous: tc reads {unit} as bytes per second, elsewhere it means bits; \
                 write the rate in bit, kbit, mbit or gbit"
            ))
        }
        _ => return Err(format!("unknown rate unit {unit:?}: use bit, kbit, mbit, gbit or tbit")),
    };
    let v = parse_number(num).map_err(|e| e.to_string())? * mult;
    if v.is_nan() || v < 1.0 {
        return Err("must be at least 1bit".to_string());
    }
    if v >= u64::MAX as f64 {
        return Err("too large".to_string());
    }
    Ok(v.round() as u64)
}

/// A duration with the largest unit that shows it exactly.
pub(super) fn fmt_duration(ns: u64) -> String {
    if ns == 0 {
        "0".to_string()
    } else if ns % 1_000_000_000 == 0 {
        format!("{}s", ns / 1_000_000_000)
    } else if ns % 1_000_000 == 0 {
        format!("{}ms", ns / 1_000_000)
    } else if ns % 1_000 == 0 {
        format!("{}us", ns / 1_000)
    } else {
        format!("{ns}ns")
    }
}

pub(super) fn fmt_percent(p: f64) -> String {
    let v = (p * 100.0 * 1e10).round() / 1e10;
    format!("{v}%")
}

pub(super) fn fmt_rate(bps: u64) -> String {
    for (div, unit) in [
        (1_000_000_000, "gbit"),
        (1_000_000, "mbit"),
        (1_000, "kbit"),
    ] {
        if bps % div == 0 {
            return format!("{}{unit}", bps / div);
        }
    }
    format!("{bps}bit")
}

/// The canonical form, which parses back to an equal config.
impl fmt::Display for LinkConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let parts: Vec<String> = STAGES.iter().filter_map(|s| (s.print)(self)).collect();
        f.write_str(&parts.join(" "))
    }
}

pub(super) fn fmt_chance(c: Chance) -> String {
    if c.corr > 0.0 {
        format!("{} {}", fmt_percent(c.p), fmt_percent(c.corr))
    } else {
        fmt_percent(c.p)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(s: &str) -> LinkConfig {
        LinkConfig::parse(s).unwrap_or_else(|e| panic!("{s}: {e}"))
    }

    fn err(s: &str) -> SpecError {
        LinkConfig::parse(s).expect_err(s)
    }

    #[test]
    fn empty_is_a_plain_link() {
        assert_eq!(parse(""), LinkConfig::default());
        assert_eq!(parse("   "), LinkConfig::default());
    }

    #[test]
    fn delay_forms() {
        let c = parse("delay 10ms 2ms 25% dist normal");
        assert_eq!(
            c.delay,
            Some(DelaySpec {
                delay_ns: 10_000_000,
                jitter_ns: 2_000_000,
                corr: 0.25,
                dist: DelayDist::Normal
            })
        );
        let c = parse("latency 100msec 10usec distribution pareto");
        let d = c.delay.unwrap();
        assert_eq!(
            (d.delay_ns, d.jitter_ns, d.dist),
            (100_000_000, 10_000, DelayDist::Pareto)
        );
        // dist may come anywhere, as in netem.
        let c = parse("delay 1s 1ms loss 1% dist paretonormal");
        assert_eq!(c.delay.unwrap().dist, DelayDist::ParetoNormal);
        assert_eq!(parse("delay 0").delay.unwrap().delay_ns, 0);
        assert_eq!(
            parse("delay 5ms 1ms").delay.unwrap().dist,
            DelayDist::Uniform
        );
    }

    #[test]
    fn loss_models_and_netem_defaults() {
        assert_eq!(
            parse("loss random 1% 25%").loss,
            Some(LossModel::Random(Chance {
                p: 0.01,
                corr: 0.25
            }))
        );
        assert_eq!(
            parse("loss 0.5%").loss,
            Some(LossModel::Random(Chance {
                p: 0.005,
                corr: 0.0
            }))
        );
        assert_eq!(
            parse("loss gemodel 1% 10% 100% 0%").loss,
            Some(LossModel::GilbertElliott {
                p: 0.01,
                r: 0.1,
                loss_bad: 1.0,
                loss_good: 0.0
            })
        );
        assert_eq!(
            parse("loss gemodel 2%").loss,
            Some(LossModel::GilbertElliott {
                p: 0.02,
                r: 0.98,
                loss_bad: 1.0,
                loss_good: 0.0
            })
        );
        assert_eq!(
            parse("loss state 1%").loss,
            Some(LossModel::State {
                p13: 0.01,
                p31: 0.99,
                p32: 0.0,
                p23: 1.0,
                p14: 0.0
            })
        );
        assert_eq!(
            parse("loss state 1% 30% 20% 50% 2%").loss,
            Some(LossModel::State {
                p13: 0.01,
                p31: 0.3,
                p32: 0.2,
                p23: 0.5,
                p14: 0.02
            })
        );
        assert!(parse("loss 1% ecn").ecn);
    }

    #[test]
    fn the_other_stages() {
        let c = parse(
            "duplicate 1% corrupt 0.1% 5% rate 1mbit 0 48 5 slot 800us 10ms packets 42 bytes 64k \
             limit 50000 limit bytes 1M order fifo seed 7",
        );
        assert_eq!(c.duplicate, Some(Chance { p: 0.01, corr: 0.0 }));
        assert_eq!(
            c.corrupt,
            Some(Chance {
                p: 0.001,
                corr: 0.05
            })
        );
        assert_eq!(
            c.rate,
            Some(RateSpec {
                bits_per_sec: 1_000_000,
                packet_overhead: 0,
                cell_size: 48,
                cell_overhead: 5,
                burst_bytes: 0,
            })
        );
        assert_eq!(
            c.slot,
            Some(SlotSpec {
                min_ns: 800_000,
                max_ns: 10_000_000,
                packets: Some(42),
                bytes: Some(64_000)
            })
        );
        assert_eq!(
            c.limit,
            Limit {
                packets: Some(50_000),
                bytes: Some(1_000_000)
            }
        );
        assert_eq!(c.order, Order::Fifo);
        assert_eq!(c.seed, Some(7));
        let c = parse("delay 10ms reorder 100% gap 5");
        assert_eq!(
            c.reorder,
            Some(Reorder {
                chance: Chance { p: 1.0, corr: 0.0 },
                gap: 5
            })
        );
        assert_eq!(parse("delay 10ms reorder 25%").reorder.unwrap().gap, 1);
        assert_eq!(parse("rate 12Mbit -4").rate.unwrap().packet_overhead, -4);
        assert_eq!(parse("rate 1kibit").rate.unwrap().bits_per_sec, 1024);
        assert_eq!(parse("limit 10 bytes 5k").limit.bytes, Some(5000));
        assert_eq!(parse("limit packets 3").limit.packets, Some(3));
    }

    #[test]
    fn trace_clause() {
        let c = parse("trace f.bin scale 10 offset -1ms at-end hold rate 10mbit");
        assert_eq!(
            c.trace,
            Some(TraceSpec {
                file: "f.bin".to_string(),
                scale: 10.0,
                offset_ns: -1_000_000,
                at_end: AtEnd::Hold
            })
        );
        assert!(c.rate.is_some());
        assert_eq!(parse("trace x").trace.unwrap().at_end, AtEnd::Loop);
    }

    #[test]
    fn bottleneck_and_nist_stages() {
        let c = parse("rate 1mbit burst 125k queue codel packets=1000 target=5ms interval=100ms");
        assert_eq!(c.rate.unwrap().burst_bytes, 125_000);
        assert_eq!(
            c.queue,
            Some(QueueSpec {
                kind: QueueKind::Codel,
                packets: Some(1000),
                bytes: None,
                target_ns: Some(5_000_000),
                interval_ns: Some(100_000_000),
            })
        );
        assert!(c.has_bottleneck());
        let q = parse("queue pie bytes=30k rate 10mbit").queue.unwrap();
        assert_eq!(
            (q.kind, q.bytes, q.target(), q.interval()),
            (QueueKind::Pie, Some(30_000), PIE_TARGET_NS, PIE_INTERVAL_NS)
        );
        let c = parse("link up.trace once queue drophead packets=10");
        assert_eq!(
            c.link,
            Some(MmLinkSpec {
                file: "up.trace".to_string(),
                once: true
            })
        );
        assert_eq!(c.queue.unwrap().kind, QueueKind::DropHead);
        assert!(!parse("link x.up").link.unwrap().once);
        assert_eq!(
            parse("onoff exp 1s 0.5s").onoff,
            Some(OnOffSpec {
                kind: OnOffKind::Exp,
                on_ns: 1_000_000_000,
                off_ns: 500_000_000,
                drop: false
            })
        );
        assert!(
            parse("onoff periodic 10ms 5ms drop rate 1mbit")
                .onoff
                .unwrap()
                .drop
        );
        assert_eq!(
            parse("drd 20 50 congest 30").drd,
            Some(DrdSpec {
                min: 20,
                max: 50,
                congest: Some(30)
            })
        );
        assert_eq!(
            parse("timeline net.csv period 10s at-end hold delay 1ms").timeline,
            Some(TimelineSpec {
                file: "net.csv".to_string(),
                period_ns: Some(10_000_000_000),
                at_end: AtEnd::Hold
            })
        );
        // A timeline composes with a packet trace.
        assert!(parse("trace f.bin timeline n.csv").timeline.is_some());
        let d = DrdSpec {
            min: 20,
            max: 50,
            congest: None,
        };
        assert_eq!(
            [0, 19, 20, 35, 50, 500].map(|q| d.probability(q)),
            [0.0, 0.0, 0.0, 0.475, 0.95, 0.95]
        );
    }

    #[test]
    fn bottleneck_errors() {
        let e = err("queue codel packets=10");
        assert!(
            e.to_string().contains("add rate R, link FILE or onoff"),
            "{e}"
        );
        assert!(err("queue fifo rate 1mbit")
            .to_string()
            .contains("droptail, drophead"));
        let e = err("rate 1mbit queue codel packets 10");
        assert!(e.to_string().contains("write packets=VALUE"), "{e}");
        assert!(err("rate 1mbit queue droptail target=5ms")
            .to_string()
            .contains("no target"));
        assert!(err("rate 1mbit queue codel packets=0")
            .to_string()
            .contains("more than 0"));
        assert!(err("rate 1mbit queue codel packets=1 packets=2")
            .to_string()
            .contains("twice"));
        assert!(err("rate 1mbit queue pie speed=3")
            .to_string()
            .contains("packets=N"));
        let e = err("link a.up rate 1mbit");
        assert_eq!(e.token, 3);
        assert!(e.to_string().contains("use one of them"), "{e}");
        assert!(err("burst 10k").to_string().contains("credit of a rate"));
        assert!(err("rate 1mbit burst 0")
            .to_string()
            .contains("at least 1 byte"));
        assert!(err("onoff exp 1s").to_string().contains("duration"));
        assert!(err("onoff exp 1s 100us")
            .to_string()
            .contains("at least 1ms"));
        assert!(err("onoff sometimes 1s 1s")
            .to_string()
            .contains("exp or periodic"));
        assert!(err("drd 50 20").to_string().contains("above DRD min"));
        assert!(err("drd 5 5").to_string().contains("above DRD min"));
        assert!(err("drd 5").to_string().contains("drd needs"));
        assert!(err("timeline").to_string().contains("time-indexed CSV"));
        assert!(err("timeline n.csv period 0")
            .to_string()
            .contains("more than 0"));
        assert!(err("link").to_string().contains("Mahimahi"));
    }

    /// The stages' at-end keywords are the end policy's own names: each
    /// parses to its policy and prints back, the syntax lists them all,
    /// and an unknown word is refused with the list.
    #[test]
    fn at_end_keywords_are_the_policy_names() {
        let names: Vec<&str> = AtEnd::ALL.iter().map(|a| a.name()).collect();
        for stage in ["trace", "timeline"] {
            let syntax = stage_named(stage).unwrap().syntax;
            assert!(
                syntax.ends_with(&format!("[at-end {}]", names.join("|"))),
                "{syntax}"
            );
        }
        for a in AtEnd::ALL {
            let spec = format!("trace f.bin at-end {a}");
            let c = parse(&spec);
            assert_eq!(c.trace.as_ref().unwrap().at_end, a);
            assert_eq!(c.to_string(), spec);
            let spec = format!("timeline n.csv at-end {a}");
            let c = parse(&spec);
            assert_eq!(c.timeline.as_ref().unwrap().at_end, a);
            assert_eq!(c.to_string(), spec);
        }
        assert_eq!(
            parse("trace f.bin").to_string(),
            format!("trace f.bin at-end {}", AtEnd::default())
        );
        assert_eq!(
            err("timeline n.csv at-end never").to_string(),
            "token 4 \"never\" (column 23): timeline at-end: expected loop, hold, stop, pass or drop"
        );
        assert!(err("trace f.bin at-end")
            .to_string()
            .contains("trace at-end needs loop, hold, stop, pass or drop"));
    }

    #[test]
    fn display_parses_back() {
        for s in [
            "delay 10ms 2ms 25% dist normal loss gemodel 1% 10% 100% 0%",
            "delay 100ms 75ms order fifo",
            "delay 10ms reorder 100% gap 5 duplicate 1% corrupt 0.1% 5%",
            "loss state 1% 30% 20% 50% 2% ecn rate 1mbit 0 48 5",
            "rate 12mbit delay 10ms slot 800us 10ms packets 42 bytes 64k limit 50000 seed 7",
            "trace f.bin scale 10 offset -250us at-end stop limit bytes 1500",
            "loss random 0.3% 25% rate 1500bit -4",
            "rate 1mbit burst 125k queue codel packets=1000 target=5ms interval=100ms",
            "link up.trace once onoff exp 1s 500ms drop queue pie bytes=30000 drd 20 50 congest 30",
            "trace f.bin timeline net.csv period 10s at-end drop rate 10mbit 0 48 5 burst 1500",
            "onoff periodic 10ms 5ms queue drophead packets=5 timeline n.csv",
        ] {
            let c = parse(s);
            let printed = c.to_string();
            assert_eq!(parse(&printed), c, "{s} -> {printed}");
        }
        assert_eq!(
            parse("delay 10ms 2ms 25% dist normal").to_string(),
            "delay 10ms 2ms 25% dist normal"
        );
    }

    #[test]
    fn errors_say_what_and_where() {
        let e = err("delay 10ms loss 1% bogus");
        assert_eq!(
            (e.token, e.column, e.kind.clone()),
            (5, 20, SpecErrorKind::Unknown)
        );
        assert!(
            e.to_string()
                .starts_with("token 5 \"bogus\" (column 20): unknown option"),
            "{e}"
        );

        let e = err("delay 10");
        assert_eq!((e.token, e.column), (2, 7));
        assert!(e.to_string().contains("10us or 10ms"), "{e}");

        let e = err("loss 1");
        assert!(e.to_string().contains("1%"), "{e}");

        let e = err("loss gemodel");
        assert_eq!(e.token, 3);
        assert!(
            e.to_string()
                .starts_with("at the end (column 13): loss gemodel needs"),
            "{e}"
        );

        let e = err("rate 10mbps");
        assert!(e.to_string().contains("bytes per second"), "{e}");
        let e = err("rate 100");
        assert!(e.to_string().contains("kbit"), "{e}");

        let e = err("delay 1ms delay 2ms");
        assert_eq!((e.token, e.kind), (3, SpecErrorKind::Repeated("delay")));
        assert!(err("loss 101%").to_string().contains("at most 100%"));
        assert!(err("loss state 60% 50% 60%")
            .to_string()
            .contains("p31 + p32"));
        assert!(err("slot 10ms 1ms").to_string().contains("shorter"));
        assert!(err("slot 100ns").to_string().contains("1us"));
        assert!(err("limit 0").to_string().contains("at least 1"));
        assert!(err("limit").to_string().contains("limit needs"));
        assert!(err("order lifo").to_string().contains("fifo or free"));
        assert!(err("seed -1").to_string().contains("whole number"));
        assert!(err("trace").to_string().contains("file name"));
        assert!(err("trace f at-end never").to_string().contains("hold"));
    }

    #[test]
    fn conflicts_are_refused() {
        let e = err("reorder 25% gap 5");
        assert!(e.to_string().contains("needs a delay"), "{e}");
        assert!(err("delay 10ms reorder 5% order fifo")
            .to_string()
            .contains("contradict"));
        let e = err("delay 10ms dist normal");
        assert!(e.to_string().contains("jitter"), "{e}");
        assert_eq!(e.token, 3);
        assert!(err("ecn").to_string().contains("add loss"));
        let e = err("trace t.bin delay 1ms");
        assert_eq!(e.token, 3);
        assert!(e.to_string().contains("remove delay"), "{e}");
        assert!(err("trace t.bin duplicate 1%")
            .to_string()
            .contains("duplicate"));
        assert!(err("delay 1ms gap 5").to_string().contains("reorder"));
    }

    proptest::proptest! {
        #[test]
        fn parse_never_panics(s in "\\PC*") {
            let _ = LinkConfig::parse(&s);
        }

        #[test]
        fn keyword_soup_never_panics(words in proptest::collection::vec(
            "(delay|loss|gemodel|state|random|ecn|duplicate|corrupt|reorder|gap|rate|slot|packets|bytes|limit|order|fifo|seed|trace|scale|offset|at-end|dist|normal|1%|100%|-5|10ms|0|1mbit|64k|x|burst|queue|codel|pie|droptail|drophead|packets=5|bytes=3k|target=5ms|interval=1s|link|once|onoff|exp|periodic|drop|drd|congest|timeline|period|1s|7|per-flow|src/24,dport|dst/64|sched|drr|fq_codel|weights|1,3|quantum|flows|interval|target|3000)",
            0..12,
        )) {
            let s = words.join(" ");
            if let Ok(c) = LinkConfig::parse(&s) {
                let printed = c.to_string();
                proptest::prop_assert_eq!(LinkConfig::parse(&printed), Ok(c), "{}", printed);
            }
        }
    }
}

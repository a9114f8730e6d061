//! The emulator's link model, sans-IO: what happens to each packet of one
//! rule and direction, decided when it arrives, released in deadline order.
//!
//! Stages are parsed from netem-style text ([`LinkConfig::parse`]); trace
//! stages read their records through `wirelab-trace`.
//!
//! The driver calls [`Link::arrive`] with each frame's kernel receive
//! stamp and gets every decision at once ([`Arrival`]: per copy, dropped
//! with a [`DropReason`] or queued with an absolute deadline, a bit to
//! flip, a CE mark), then waits for [`Link::next_deadline`] and takes the
//! due copies with [`Link::pop_due`] ([`Release`], in release order).
//!
//! Contracts:
//! - **Time** is an argument, in ns on the arrival stamps' clock
//!   (CLOCK_MONOTONIC for the emulator). A stamp earlier than the previous
//!   arrival counts as equal to it, so time never runs backwards.
//! - **Deadlines are final at arrival** and depend only on the stage
//!   list, the seed, the arrival times, lengths and packet indices —
//!   never on when `pop_due` is called. So the same input gives the same
//!   decisions, and `pop_due` may be called late without changing them.
//!   Except with a **bottleneck** (`queue`, `link`, `onoff`): copies wait
//!   in a queue ([`Fate::Waiting`]) and `pop_due` runs the bottleneck in
//!   model time up to its `now` first; a copy dropped in the queue comes
//!   out as a [`Release`] with `dropped` set. A frame read after the model
//!   ran past its stamp joins the queue at the model's time.
//! - **Randomness** is counter-based: packet `i`'s draws come from a
//!   stream keyed by (seed, rule, direction, i) ([`LinkKey`]).
//! - **Pipeline** for each copy, in this order: (timeline row) → trace or
//!   loss (with `ecn`: CE mark) → drd → corrupt → limit → reorder/delay →
//!   rate or bottleneck (serialize, then the delay propagates) → order →
//!   slot. `duplicate` decides once
//!   per packet; a copy goes through the pipeline like the original and is
//!   never duplicated again. With a trace, each copy reads the next record.
//! - **Limit** counts copies whose deadline is after the current arrival
//!   (netem's: waiting for the rate and the delay alike), default
//!   [`DEFAULT_LIMIT_PACKETS`]; nothing waits longer than [`HORIZON_NS`].
//! - **Flows** (`per-flow MASK`, `sched drr|fq_codel`): the driver passes
//!   each frame's header fields ([`FlowTuple::from_frame`]) to
//!   [`Link::arrive_flow`]; `per-flow` alone gives each flow a pipe of its
//!   own (a link of the same stages), a scheduler a queue of its own on
//!   the one bottleneck. Flows past the bound share an overflow pipe or
//!   queue (counted); fq_codel hashes into its buckets. Each pipe holds
//!   up to its own limit, so memory is the limit times the flow bound.
//! - **Memory** is bounded by the limit: the release queue, the in-flight
//!   set, the bottleneck's queue and the slot state hold at most what the
//!   limit admits (plus 65536 slot checkpoints).
//!
//! docs/emulate-model.md gives the stage syntax and every semantic choice;
//! the stages themselves are one table, [`STAGES`].
//!
//! ```
//! use wirelab_link::{Direction, Link, LinkConfig, LinkKey};
//!
//! let cfg = LinkConfig::parse("rate 12mbit delay 10ms").unwrap();
//! let key = LinkKey { seed: 1, rule: 0, direction: Direction::AToB };
//! let mut link = Link::new(&cfg, key).unwrap();
//! link.arrive(0, 1500, 0, false); // two 1500-byte frames back to back
//! link.arrive(0, 1500, 1, false);
//! assert_eq!(link.next_deadline(), Some(11_000_000));
//! let mut out = Vec::new();
//! link.pop_due(12_000_000, &mut out);
//! let times: Vec<u64> = out.iter().map(|r| r.deadline_ns).collect();
//! assert_eq!(times, [11_000_000, 12_000_000]);
//! ```
#![forbid(unsafe_code)]

mod bottleneck;
mod codel;
mod decisions;
mod flow;
mod mmlink;
pub mod mmlog;
mod model;
mod onoff;
mod perflow;
mod pie;
mod process;
pub mod profile;
mod rate;
mod rng;
mod sched;
mod slot;
mod spec;
mod stages;
mod timecsv;
mod trace_stage;

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_flows;
#[cfg(test)]
mod tests_spec_examples;
#[cfg(test)]
mod tests_stages;

pub use flow::{AddrMask, FlowKey, FlowMask, FlowTuple};
pub use mmlink::{OpportunityLog, OpportunitySource, OPPORTUNITY_BYTES};
pub use model::{
    Arrival, Corrupt, Direction, DropCounts, DropReason, Fate, Link, LinkCounters, LinkError,
    LinkKey, Queued, Release, Sources, Waiting, DEFAULT_LIMIT_PACKETS, HORIZON_NS, MAX_COPIES,
};
pub use sched::{DEFAULT_QUANTUM, FQ_CODEL_FLOWS};
pub use spec::{
    Chance, DelayDist, DelaySpec, DrdSpec, Limit, LinkConfig, LossModel, MmLinkSpec, OnOffKind,
    OnOffSpec, Order, PerFlowSpec, ProfileSpec, QueueKind, QueueSpec, RateSpec, Reorder, SchedSpec,
    SlotSpec, SpecError, SpecErrorKind, TimelineSpec, TraceSpec, CODEL_INTERVAL_NS,
    CODEL_TARGET_NS, DEFAULT_MAX_FLOWS, DRD_TOP, MAX_FLOWS, MIN_ONOFF_NS, MIN_QUANTUM, MIN_SLOT_NS,
    PIE_INTERVAL_NS, PIE_TARGET_NS,
};
pub use stages::{docs_table, help_text, Stage, STAGES};
pub use timecsv::{RowAt, RowSource};
pub use trace_stage::Looping;

//! `--record-decisions` for any link, bottleneck included: a packet's
//! records are known once each of its copies has left (or was dropped),
//! which through a bottleneck is after its arrival; they are handed out in
//! arrival order, so the trace reads as a packet-indexed trace.
//!
//! Memory: one entry per packet from its arrival until every packet
//! before it is complete — the packets in the link (bounded by its
//! limit), plus those complete behind an older one still waiting.

use std::collections::{HashMap, VecDeque};

use wirelab_trace::Action;

use super::model::{Arrival, Release, MAX_COPIES};

struct Pending {
    arrival_ns: u64,
    left: usize,
    /// Per copy: its delay once released (`None`: dropped or waiting).
    delays: [Option<u64>; MAX_COPIES],
}

#[derive(Default)]
pub(crate) struct Recording {
    order: VecDeque<u64>,
    packets: HashMap<u64, Pending>,
}

/// A packet's records: its released copies in copy order, each but the
/// last a duplicate, with its delay; one drop if none was released.
pub(crate) fn push_actions(delays: impl Iterator<Item = u64>, out: &mut Vec<Action>) {
    let mut delays = delays.peekable();
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

impl Recording {
    pub(crate) fn arrived(&mut self, a: &Arrival) {
        self.order.push_back(a.packet_index);
        self.packets.insert(
            a.packet_index,
            Pending {
                arrival_ns: a.arrival_ns,
                left: a.pending(),
                delays: [None; MAX_COPIES],
            },
        );
    }

    pub(crate) fn released(&mut self, rs: &[Release]) {
        for r in rs {
            if let Some(p) = self.packets.get_mut(&r.packet_index) {
                if r.dropped.is_none() {
                    p.delays[usize::from(r.copy)] = Some(r.deadline_ns - p.arrival_ns);
                }
                p.left = p.left.saturating_sub(1);
            }
        }
    }

    /// Whether a packet still waits for a copy.
    pub(crate) fn waiting(&self) -> bool {
        self.packets.values().any(|p| p.left > 0)
    }

    /// Appends the records of the complete packets at the front.
    pub(crate) fn take(&mut self, out: &mut Vec<Action>) -> usize {
        let before = out.len();
        while let Some(&i) = self.order.front() {
            if self.packets.get(&i).is_some_and(|p| p.left > 0) {
                break;
            }
            self.order.pop_front();
            if let Some(p) = self.packets.remove(&i) {
                push_actions(p.delays.iter().flatten().copied(), out);
            }
        }
        out.len() - before
    }
}

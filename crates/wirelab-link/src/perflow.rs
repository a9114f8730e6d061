//! `per-flow MASK`: Dummynet's dynamic pipes. Each flow (packets equal
//! under the mask) gets a pipe of its own — a [`Link`] of the same stage
//! list with its own queue, rate, limit and random state — made at the
//! flow's first packet, up to a bound; later flows share one overflow
//! pipe, and their packets are counted (`flow_overflow`).
//!
//! Pipe `k` (in order of first appearance) draws from the link's key
//! mixed with `k`, so pipes do not share slot or on/off sequences; a
//! packet's draws stay keyed by its index among the link's packets.
//! Releases of all pipes leave in deadline order, ties by pipe number.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};

use super::flow::{FlowKey, FlowMask, FlowTuple};
use super::model::{Arrival, Link, LinkCounters, Release};
use super::rng::mix64;
use super::spec::LinkConfig;

pub(crate) struct Pipes {
    config: LinkConfig,
    key: u64,
    profile: Option<super::profile::Profile>,
    mask: FlowMask,
    max: usize,
    index: HashMap<FlowKey, usize>,
    pipes: Vec<Link>,
    overflow: Option<usize>,
    /// (time, pipe): each pipe with a deadline has an entry at or before
    /// it (stale later ones are harmless: popping them does nothing).
    wake: BinaryHeap<Reverse<(u64, usize)>>,
    /// The earliest entry of each pipe in `wake`.
    scheduled: Vec<Option<u64>>,
    touched: Vec<usize>,
    overflowed: u64,
}

impl Pipes {
    /// `config` is the link's without `per-flow`.
    pub(crate) fn new(
        config: LinkConfig,
        key: u64,
        profile: Option<super::profile::Profile>,
        mask: FlowMask,
        max: u64,
    ) -> Pipes {
        Pipes {
            config,
            key,
            profile,
            mask,
            max: max as usize,
            index: HashMap::new(),
            pipes: Vec::new(),
            overflow: None,
            wake: BinaryHeap::new(),
            scheduled: Vec::new(),
            touched: Vec::new(),
            overflowed: 0,
        }
    }

    fn make(&mut self) -> usize {
        let k = self.pipes.len() as u64;
        let key = mix64(self.key ^ mix64(k.wrapping_add(1)));
        let mut l = Link::pipe(&self.config, key);
        l.set_profile(self.profile.clone());
        self.pipes.push(l);
        self.scheduled.push(None);
        self.pipes.len() - 1
    }

    fn pipe_of(&mut self, flow: Option<&FlowTuple>) -> usize {
        let key = self.mask.key(flow);
        if let Some(&i) = self.index.get(&key) {
            return i;
        }
        if self.index.len() >= self.max {
            self.overflowed += 1;
            if let Some(i) = self.overflow {
                return i;
            }
            let i = self.make();
            self.overflow = Some(i);
            return i;
        }
        let i = self.make();
        self.index.insert(key, i);
        i
    }

    fn reschedule(&mut self, i: usize) {
        if let Some(d) = self.pipes[i].next_deadline() {
            if self.scheduled[i].is_none_or(|s| d < s) {
                self.scheduled[i] = Some(d);
                self.wake.push(Reverse((d, i)));
            }
        }
    }

    /// One packet into its flow's pipe; the link's counters take the
    /// pipe's changes.
    pub(crate) fn arrive(
        &mut self,
        counters: &mut LinkCounters,
        t: u64,
        frame_len: u32,
        packet_index: u64,
        ect: bool,
        flow: Option<&FlowTuple>,
    ) -> Arrival {
        let i = self.pipe_of(flow);
        let before = self.pipes[i].counters().clone();
        let a = self.pipes[i].arrive(t, frame_len, packet_index, ect);
        counters.absorb(&before, self.pipes[i].counters());
        counters.flows = self.index.len() as u64;
        counters.flow_overflow = self.overflowed;
        self.reschedule(i);
        a
    }

    pub(crate) fn next_deadline(&self) -> Option<u64> {
        self.wake.peek().map(|Reverse((t, _))| *t)
    }

    pub(crate) fn pop_due(
        &mut self,
        counters: &mut LinkCounters,
        now_ns: u64,
        out: &mut Vec<Release>,
    ) -> usize {
        let start = out.len();
        self.touched.clear();
        while let Some(&Reverse((t, i))) = self.wake.peek() {
            if t > now_ns {
                break;
            }
            self.wake.pop();
            if self.scheduled[i] == Some(t) {
                self.scheduled[i] = None;
            }
            self.touched.push(i);
        }
        self.touched.sort_unstable();
        self.touched.dedup();
        let touched = std::mem::take(&mut self.touched);
        for &i in &touched {
            let before = self.pipes[i].counters().clone();
            self.pipes[i].pop_due(now_ns, out);
            counters.absorb(&before, self.pipes[i].counters());
            self.reschedule(i);
        }
        self.touched = touched;
        // Pipe by pipe, each in its own order: a stable sort by deadline
        // makes the order (deadline, pipe, the pipe's order).
        if self.touched.len() > 1 {
            out[start..].sort_by_key(|r| r.deadline_ns);
        }
        out.len() - start
    }

    pub(crate) fn bottleneck_held(&self) -> usize {
        self.pipes.iter().map(Link::bottleneck_held).sum()
    }
}

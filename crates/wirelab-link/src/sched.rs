//! The bottleneck's queues: one FIFO (droptail, drophead, CoDel, PIE act
//! on it), or a queue per flow served by a scheduler (`sched drr`,
//! `sched fq_codel`).
//!
//! - **DRR** (Shreedhar and Varghese, as Linux's `sch_drr`): flow queues
//!   in a round-robin list of active ones; a queue that becomes active
//!   joins the tail with a deficit of its quantum (`quantum × weight`);
//!   the head queue sends while its head fits its deficit, else its
//!   deficit grows by its quantum and it moves to the tail. Flow `k` (in
//!   order of first appearance) gets weight `weights[k]`, later ones 1.
//!   Past `flows` queues, further flows share one overflow queue (weight
//!   1), counted per packet.
//! - **fq_codel** (RFC 8290, as Linux's `sch_fq_codel`): flows hashed into
//!   `flows` buckets, each with its own CoDel; new and old lists, a byte
//!   deficit refilled by `quantum`; a queue that empties while new moves
//!   to the old list (if that is not empty), else leaves the lists.
//!
//! Both bound the packets and bytes of all their queues together by the
//! link's `limit`; an arrival that does not fit drops the head of the
//! longest queue in bytes (RFC 8290 §4.1), so one bulk flow cannot lock
//! the others out — or is refused itself when its own empty queue would
//! be the longest.

use std::collections::{HashMap, VecDeque};

use super::bottleneck::{Item, Out};
use super::codel::{Codel, Fifo};
use super::flow::FlowKey;
use super::model::DropReason;

/// Linux's quantum: an Ethernet MTU and header.
pub const DEFAULT_QUANTUM: u64 = 1514;
/// fq_codel's buckets by default (Linux's).
pub const FQ_CODEL_FLOWS: u64 = 1024;

#[derive(Default)]
pub(crate) struct Queue {
    pub(crate) items: VecDeque<Item>,
    pub(crate) bytes: u64,
}

impl Queue {
    pub(crate) fn pop(&mut self) -> Option<Item> {
        let it = self.items.pop_front()?;
        self.bytes -= u64::from(it.len);
        Some(it)
    }

    fn push(&mut self, it: Item) {
        self.bytes += u64::from(it.len);
        self.items.push_back(it);
    }
}

/// The queue as CoDel sees it: a head it drops goes to `out`.
pub(crate) struct Guarded<'a> {
    pub(crate) q: &'a mut Queue,
    pub(crate) out: &'a mut Vec<Out>,
    pub(crate) now: u64,
}

impl Fifo for Guarded<'_> {
    fn head(&self) -> Option<(u64, u32)> {
        self.q.items.front().map(|i| (i.enq, i.len))
    }

    fn pop_head(&mut self) {
        if let Some(it) = self.q.pop() {
            self.out.push(Out::Dropped(it, self.now, DropReason::Aqm));
        }
    }

    fn bytes(&self) -> u64 {
        self.q.bytes
    }
}

/// Flow queues' shared state: totals and limits.
struct Totals {
    len: u64,
    bytes: u64,
    limit_packets: u64,
    limit_bytes: u64,
}

impl Totals {
    fn fits(&self, len: u32) -> bool {
        self.len < self.limit_packets && self.bytes + u64::from(len) <= self.limit_bytes
    }
}

/// A scheduler's flow: its queue.
trait Queued {
    fn queue(&mut self) -> &mut Queue;
}

/// Makes room for an arrival of `len` bytes to the queue of flow `mine` by
/// dropping heads of the longest queues; `Err` if the arrival itself would
/// go. Scans in place: nothing is allocated.
fn make_room<F: Queued>(
    flows: &mut [F],
    mine: usize,
    len: u32,
    totals: &mut Totals,
    now: u64,
    out: &mut Vec<Out>,
) -> Result<(), DropReason> {
    // Each turn drops a queued packet: bounded by the queues.
    while !totals.fits(len) {
        let fattest = flows
            .iter_mut()
            .enumerate()
            .map(|(i, f)| {
                let extra = if i == mine { u64::from(len) } else { 0 };
                // Ties: the earliest queue.
                (f.queue().bytes + extra, std::cmp::Reverse(i), i)
            })
            .max()
            .map_or(mine, |(_, _, i)| i);
        let Some(head) = flows.get_mut(fattest).and_then(|f| f.queue().pop()) else {
            return Err(DropReason::Limit);
        };
        totals.len -= 1;
        totals.bytes -= u64::from(head.len);
        out.push(Out::Dropped(head, now, DropReason::Limit));
    }
    Ok(())
}

struct DrrFlow {
    q: Queue,
    quantum: u64,
    deficit: u64,
    active: bool,
}

impl Queued for DrrFlow {
    fn queue(&mut self) -> &mut Queue {
        &mut self.q
    }
}

pub(crate) struct Drr {
    quantum: u64,
    weights: Vec<u32>,
    max_flows: usize,
    index: HashMap<FlowKey, usize>,
    flows: Vec<DrrFlow>,
    overflow: Option<usize>,
    active: VecDeque<usize>,
    totals: Totals,
    overflowed: u64,
}

impl Drr {
    fn flow(&mut self, key: &FlowKey) -> usize {
        if let Some(&i) = self.index.get(key) {
            return i;
        }
        let new = |quantum| DrrFlow {
            q: Queue::default(),
            quantum,
            deficit: 0,
            active: false,
        };
        if self.index.len() >= self.max_flows {
            self.overflowed += 1;
            return *self.overflow.get_or_insert_with(|| {
                self.flows.push(new(self.quantum));
                self.flows.len() - 1
            });
        }
        let k = self.index.len();
        let w = self.weights.get(k).copied().unwrap_or(1);
        self.flows.push(new(self.quantum * u64::from(w)));
        let i = self.flows.len() - 1;
        self.index.insert(*key, i);
        i
    }

    fn enqueue(
        &mut self,
        it: Item,
        key: &FlowKey,
        now: u64,
        out: &mut Vec<Out>,
    ) -> Result<(), DropReason> {
        let i = self.flow(key);
        if !self.totals.fits(it.len) {
            make_room(&mut self.flows, i, it.len, &mut self.totals, now, out)?;
            // Queues emptied by the drops leave the active list.
            let flows = &mut self.flows;
            self.active.retain(|&j| !flows[j].q.items.is_empty());
            for f in flows.iter_mut().filter(|f| f.q.items.is_empty()) {
                f.active = false;
            }
        }
        let f = &mut self.flows[i];
        f.q.push(it);
        self.totals.len += 1;
        self.totals.bytes += u64::from(it.len);
        if !f.active {
            f.active = true;
            f.deficit = f.quantum;
            self.active.push_back(i);
        }
        Ok(())
    }

    fn dequeue(&mut self) -> Option<Item> {
        let mut unserved = 0;
        loop {
            let &i = self.active.front()?;
            let f = &mut self.flows[i];
            let len = u64::from(f.q.items.front()?.len);
            if len <= f.deficit {
                f.deficit -= len;
                let it = f.q.pop()?;
                if f.q.items.is_empty() {
                    f.active = false;
                    self.active.pop_front();
                }
                self.totals.len -= 1;
                self.totals.bytes -= len;
                return Some(it);
            }
            f.deficit += f.quantum;
            self.active.rotate_left(1);
            unserved += 1;
            if unserved == self.active.len() {
                // A whole round served nothing: skip the rounds that would
                // serve nothing either (each queue's deficit grows by its
                // quantum per round), so a small quantum costs no work.
                let rounds = self
                    .active
                    .iter()
                    .map(|&j| {
                        let f = &self.flows[j];
                        let len = f.q.items.front().map_or(0, |h| u64::from(h.len));
                        len.saturating_sub(f.deficit).div_ceil(f.quantum)
                    })
                    .min()
                    .unwrap_or(0);
                for &j in &self.active {
                    let f = &mut self.flows[j];
                    f.deficit += rounds * f.quantum;
                }
                unserved = 0;
            }
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum List {
    None,
    New,
    Old,
}

struct FqFlow {
    q: Queue,
    codel: Codel,
    deficit: i64,
    list: List,
    used: bool,
}

impl Queued for FqFlow {
    fn queue(&mut self) -> &mut Queue {
        &mut self.q
    }
}

pub(crate) struct FqCodel {
    quantum: i64,
    seed: u64,
    flows: Vec<FqFlow>,
    new_flows: VecDeque<usize>,
    old_flows: VecDeque<usize>,
    totals: Totals,
    used: u64,
}

impl FqCodel {
    fn enqueue(
        &mut self,
        it: Item,
        key: &FlowKey,
        now: u64,
        out: &mut Vec<Out>,
    ) -> Result<(), DropReason> {
        let i = (key.hash(self.seed) % self.flows.len() as u64) as usize;
        if !self.totals.fits(it.len) {
            // Emptied queues stay on their lists until dequeue finds them
            // empty, as after CoDel's drops.
            make_room(&mut self.flows, i, it.len, &mut self.totals, now, out)?;
        }
        let f = &mut self.flows[i];
        if !f.used {
            f.used = true;
            self.used += 1;
        }
        f.q.push(it);
        self.totals.len += 1;
        self.totals.bytes += u64::from(it.len);
        if f.list == List::None {
            f.list = List::New;
            f.deficit = self.quantum;
            self.new_flows.push_back(i);
        }
        Ok(())
    }

    fn dequeue(&mut self, now: u64, maxpacket: u32, out: &mut Vec<Out>) -> Option<Item> {
        // Each turn serves, refills a deficit (at most quantum-many turns
        // per byte of the head) or removes an empty queue from a list.
        loop {
            let (i, new) = match (self.new_flows.front(), self.old_flows.front()) {
                (Some(&i), _) => (i, true),
                (None, Some(&i)) => (i, false),
                (None, None) => return None,
            };
            let list = if new {
                &mut self.new_flows
            } else {
                &mut self.old_flows
            };
            let f = &mut self.flows[i];
            if f.deficit <= 0 {
                f.deficit += self.quantum;
                list.pop_front();
                f.list = List::Old;
                self.old_flows.push_back(i);
                continue;
            }
            let (len0, bytes0) = (f.q.items.len(), f.q.bytes);
            let d = f.codel.dequeue(
                &mut Guarded {
                    q: &mut f.q,
                    out: &mut *out,
                    now,
                },
                now,
                maxpacket,
            );
            self.totals.len -= (len0 - f.q.items.len()) as u64;
            self.totals.bytes -= bytes0 - f.q.bytes;
            if !d.got {
                list.pop_front();
                if new && !self.old_flows.is_empty() {
                    f.list = List::Old;
                    self.old_flows.push_back(i);
                } else {
                    f.list = List::None;
                }
                continue;
            }
            let it = f.q.pop()?;
            f.deficit -= i64::from(it.len);
            self.totals.len -= 1;
            self.totals.bytes -= u64::from(it.len);
            return Some(it);
        }
    }
}

/// What the bottleneck's queue is.
pub(crate) enum Queues {
    /// One FIFO, with CoDel at dequeue if set.
    Fifo { q: Queue, codel: Option<Codel> },
    /// A queue per flow, DRR.
    Drr(Box<Drr>),
    /// fq_codel.
    FqCodel(Box<FqCodel>),
}

/// How to build the per-flow queues.
pub(crate) enum SchedParams {
    Drr {
        weights: Vec<u32>,
        quantum: u64,
        max_flows: u64,
    },
    FqCodel {
        target: u64,
        interval: u64,
        quantum: u64,
        flows: u64,
        seed: u64,
    },
}

impl Queues {
    pub(crate) fn sched(p: SchedParams, limit_packets: u64, limit_bytes: u64) -> Queues {
        let totals = Totals {
            len: 0,
            bytes: 0,
            limit_packets,
            limit_bytes,
        };
        match p {
            SchedParams::Drr {
                weights,
                quantum,
                max_flows,
            } => Queues::Drr(Box::new(Drr {
                quantum,
                weights,
                max_flows: max_flows as usize,
                index: HashMap::new(),
                flows: Vec::new(),
                overflow: None,
                active: VecDeque::new(),
                totals,
                overflowed: 0,
            })),
            SchedParams::FqCodel {
                target,
                interval,
                quantum,
                flows,
                seed,
            } => Queues::FqCodel(Box::new(FqCodel {
                quantum: quantum as i64,
                seed,
                flows: (0..flows)
                    .map(|_| FqFlow {
                        q: Queue::default(),
                        codel: Codel::new(target, interval),
                        deficit: 0,
                        list: List::None,
                        used: false,
                    })
                    .collect(),
                new_flows: VecDeque::new(),
                old_flows: VecDeque::new(),
                totals,
                used: 0,
            })),
        }
    }

    pub(crate) fn len(&self) -> usize {
        match self {
            Queues::Fifo { q, .. } => q.items.len(),
            Queues::Drr(d) => d.totals.len as usize,
            Queues::FqCodel(f) => f.totals.len as usize,
        }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The single FIFO (PIE and the mm-link queues act on it).
    pub(crate) fn fifo(&mut self) -> Option<&mut Queue> {
        match self {
            Queues::Fifo { q, .. } => Some(q),
            _ => None,
        }
    }

    /// When the FIFO's head was enqueued (PIE's queue delay).
    pub(crate) fn head_enq(&self) -> Option<u64> {
        match self {
            Queues::Fifo { q, .. } => q.items.front().map(|i| i.enq),
            _ => None,
        }
    }

    /// (flow queues made, packets that went to the overflow queue).
    pub(crate) fn flow_counts(&self) -> (u64, u64) {
        match self {
            Queues::Fifo { .. } => (0, 0),
            Queues::Drr(d) => (d.index.len() as u64, d.overflowed),
            Queues::FqCodel(f) => (f.used, 0),
        }
    }

    /// A per-flow scheduler's enqueue (after the gate and limit checks of
    /// a FIFO, which do not apply): room made by dropping from the
    /// longest queue.
    pub(crate) fn enqueue_flow(
        &mut self,
        it: Item,
        key: &FlowKey,
        now: u64,
        out: &mut Vec<Out>,
    ) -> Result<(), DropReason> {
        match self {
            Queues::Fifo { q, .. } => {
                q.push(it);
                Ok(())
            }
            Queues::Drr(d) => d.enqueue(it, key, now, out),
            Queues::FqCodel(f) => f.enqueue(it, key, now, out),
        }
    }

    /// The next copy to serve at `now` (CoDel's drops go to `out`).
    pub(crate) fn dequeue(&mut self, now: u64, maxpacket: u32, out: &mut Vec<Out>) -> Option<Item> {
        match self {
            Queues::Fifo { q, codel } => match codel {
                Some(c) => {
                    let d = c.dequeue(&mut Guarded { q, out, now }, now, maxpacket);
                    if d.got {
                        q.pop()
                    } else {
                        None
                    }
                }
                None => q.pop(),
            },
            Queues::Drr(d) => d.dequeue(),
            Queues::FqCodel(f) => f.dequeue(now, maxpacket, out),
        }
    }

    /// Empties every queue, in service order of nothing in particular
    /// (queue by queue), into `out` as drops for `reason` at `now`.
    pub(crate) fn drain(&mut self, now: u64, reason: DropReason, out: &mut Vec<Out>) {
        let mut take = |q: &mut Queue| {
            out.extend(q.items.drain(..).map(|it| Out::Dropped(it, now, reason)));
            q.bytes = 0;
        };
        match self {
            Queues::Fifo { q, .. } => take(q),
            Queues::Drr(d) => {
                d.flows.iter_mut().for_each(|f| {
                    take(&mut f.q);
                    f.active = false;
                });
                d.active.clear();
                d.totals.len = 0;
                d.totals.bytes = 0;
            }
            Queues::FqCodel(f) => {
                f.flows.iter_mut().for_each(|fl| {
                    take(&mut fl.q);
                    fl.list = List::None;
                });
                f.new_flows.clear();
                f.old_flows.clear();
                f.totals.len = 0;
                f.totals.bytes = 0;
            }
        }
    }
}

//! The bottleneck: a queue in front of a server, simulated in model time.
//!
//! With `queue`, `link` or `onoff`, copies do not get their release time
//! at arrival: they wait in a queue (droptail, drophead, CoDel, PIE) in
//! front of a server — the `rate` (serialization, burst credit; a
//! timeline row's rate), Mahimahi delivery opportunities (`link`), or
//! none (a frame leaves as soon as it is dequeued) — that `onoff` turns
//! on and off. [`Bottleneck::advance`] runs the server's events (dequeue,
//! departure, opportunity, PIE update) up to a time in time order; what
//! leaves or is dropped in the queue comes out as [`Out`].
//!
//! Model time is the time of the last event run or packet enqueued. A
//! copy is enqueued at `max(arrival, model time)`: the driver reads frames
//! after their kernel stamp, so a frame it reads after the model has run
//! past its stamp joins the queue as if it arrived then (the same as a
//! qdisc seeing it when user space hands it over). Events at a time run
//! before a copy arriving at that time is enqueued (mm-link's order).
//!
//! While the link is off, nothing is dequeued; a frame whose serialization
//! would run into an off period pauses and resumes when the link is on
//! again; opportunities during an off period are wasted.

use super::codel::Codel;
use super::flow::FlowKey;
use super::mmlink::{Opportunities, OpportunityLog, OpportunitySource, OPPORTUNITY_BYTES};
use super::model::{Corrupt, DropReason, HORIZON_NS};
use super::onoff::OnOff;
use super::pie::Pie;
use super::rate::RateLink;
use super::sched::{Queue, Queues, SchedParams, DEFAULT_QUANTUM, FQ_CODEL_FLOWS};
use super::spec::{LinkConfig, QueueKind, RateSpec, SchedSpec};

/// One copy in the bottleneck.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Item {
    pub(crate) index: u64,
    pub(crate) copy: u8,
    /// The packet's arrival time.
    pub(crate) arrival: u64,
    /// When it joined the queue (set by `enqueue`).
    pub(crate) enq: u64,
    pub(crate) len: u32,
    /// Propagation delay after the bottleneck (ns).
    pub(crate) delay: u64,
    pub(crate) corrupt: Option<Corrupt>,
    pub(crate) ce: bool,
    pub(crate) reordered: bool,
    /// The rate for this copy (a timeline row's), else the stage's.
    pub(crate) rate: Option<u64>,
}

/// What left the bottleneck.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Out {
    /// Left the server at this time.
    Sent(Item, u64),
    /// Dropped in the queue at this time.
    Dropped(Item, u64, DropReason),
}

enum Server {
    /// Serialization at the rate (none: a frame leaves when dequeued).
    Serial {
        spec: Option<RateSpec>,
        link: Option<RateLink>,
        busy: Option<(Item, u64)>,
    },
    /// Mahimahi delivery opportunities; the packet in transit and the
    /// bytes it has left.
    Opportunities {
        opps: Opportunities,
        transit: Option<(Item, u32)>,
        dead: bool,
    },
}

pub(crate) struct Bottleneck {
    queues: Queues,
    kind: QueueKind,
    limit_packets: u64,
    limit_bytes: u64,
    pie: Option<Pie>,
    server: Server,
    gate: Option<OnOff>,
    gate_drops: bool,
    now: u64,
    maxpacket: u32,
}

impl Bottleneck {
    /// `opps`: the `link` stage's source (required with one).
    pub(crate) fn new(
        config: &LinkConfig,
        key: u64,
        opps: Option<OpportunitySource>,
    ) -> Bottleneck {
        let q = config.queue;
        let kind = q.map_or(QueueKind::DropTail, |q| q.kind);
        let server = match opps {
            Some(src) => Server::Opportunities {
                opps: Opportunities::new(src),
                transit: None,
                dead: false,
            },
            None => Server::Serial {
                spec: config.rate,
                link: config.rate.as_ref().map(RateLink::new),
                busy: None,
            },
        };
        let codel = q
            .filter(|q| q.kind == QueueKind::Codel)
            .map(|q| Codel::new(q.target(), q.interval()));
        let limit_packets = config
            .limit
            .packets
            .unwrap_or(super::model::DEFAULT_LIMIT_PACKETS);
        let limit_bytes = config.limit.bytes.unwrap_or(u64::MAX);
        let max_flows = config
            .per_flow
            .and_then(|p| p.max_flows)
            .unwrap_or(super::spec::DEFAULT_MAX_FLOWS);
        let queues = match &config.sched {
            None | Some(SchedSpec::Fifo) => Queues::Fifo {
                q: Queue::default(),
                codel,
            },
            Some(SchedSpec::Drr { weights, quantum }) => Queues::sched(
                SchedParams::Drr {
                    weights: weights.clone(),
                    quantum: quantum.unwrap_or(DEFAULT_QUANTUM),
                    max_flows,
                },
                limit_packets,
                limit_bytes,
            ),
            Some(SchedSpec::FqCodel {
                target_ns,
                interval_ns,
                quantum,
                flows,
            }) => Queues::sched(
                SchedParams::FqCodel {
                    target: target_ns.unwrap_or(super::spec::CODEL_TARGET_NS),
                    interval: interval_ns.unwrap_or(super::spec::CODEL_INTERVAL_NS),
                    quantum: quantum.unwrap_or(DEFAULT_QUANTUM),
                    flows: flows.unwrap_or(FQ_CODEL_FLOWS),
                    seed: key,
                },
                limit_packets,
                limit_bytes,
            ),
        };
        Bottleneck {
            queues,
            kind,
            limit_packets: q.and_then(|q| q.packets).unwrap_or(u64::MAX),
            limit_bytes: q.and_then(|q| q.bytes).unwrap_or(u64::MAX),
            pie: q
                .filter(|q| q.kind == QueueKind::Pie)
                .map(|q| Pie::new(q.target(), q.interval())),
            server,
            gate: config.onoff.as_ref().map(|o| OnOff::new(o, key)),
            gate_drops: config.onoff.is_some_and(|o| o.drop),
            now: 0,
            maxpacket: 0,
        }
    }

    /// The link's first arrival: the start of the trace and the cycles.
    pub(crate) fn start(&mut self, t0: u64) {
        self.now = t0;
        if let Some(g) = &mut self.gate {
            g.start(t0);
        }
        if let Some(p) = &mut self.pie {
            p.start(t0);
        }
        if let Server::Opportunities { opps, .. } = &mut self.server {
            opps.start(t0);
        }
    }

    /// Logs every delivery opportunity (a `link` stage's; false without
    /// one: `log` is dropped).
    pub(crate) fn log_opportunities(&mut self, log: OpportunityLog) -> bool {
        match &mut self.server {
            Server::Opportunities { opps, .. } => {
                opps.set_log(Some(log));
                true
            }
            Server::Serial { .. } => false,
        }
    }

    /// Ends the opportunity log at `t` (after `advance(t)`): if the link
    /// is idle, the opportunities up to `t` are wasted first (and logged).
    pub(crate) fn end_opportunity_log(&mut self, t: u64) {
        self.waste_idle(t);
        if let Server::Opportunities { opps, .. } = &mut self.server {
            opps.set_log(None);
        }
    }

    /// Copies in the queue and in the server.
    pub(crate) fn held(&self) -> usize {
        let serving = match &self.server {
            Server::Serial { busy, .. } => busy.is_some(),
            Server::Opportunities { transit, .. } => transit.is_some(),
        };
        self.queues.len() + usize::from(serving)
    }

    fn gate_on(&self, t: u64) -> u64 {
        self.gate.as_ref().map_or(t, |g| g.on_from(t))
    }

    /// When the server next does something (a lower bound for
    /// opportunities during an off period).
    pub(crate) fn next_event(&self) -> Option<u64> {
        let waiting = !self.queues.is_empty();
        match &self.server {
            Server::Serial {
                busy: Some((_, done)),
                ..
            } => Some(*done),
            Server::Serial { busy: None, .. } => waiting.then(|| self.gate_on(self.now)),
            Server::Opportunities { opps, transit, .. } => (waiting || transit.is_some())
                .then(|| opps.peek().map_or(self.now, |o| o.max(self.now))),
        }
    }

    /// Runs every event up to `until`, in time order.
    pub(crate) fn advance(&mut self, until: u64, out: &mut Vec<Out>) {
        loop {
            if self.queues.is_empty() {
                if let Some(p) = &mut self.pie {
                    p.skip_idle(until);
                }
            }
            let server = self.next_event().filter(|&t| t <= until);
            let tick = self
                .pie
                .as_ref()
                .and_then(Pie::next_update)
                .filter(|&t| t <= until);
            let t = match (server, tick) {
                (Some(s), Some(u)) if u < s => {
                    self.pie_update(u);
                    continue;
                }
                (None, Some(u)) => {
                    self.pie_update(u);
                    continue;
                }
                (Some(s), _) => s,
                (None, None) => break,
            };
            self.set_now(t);
            self.server_step(out);
        }
    }

    /// Model time moves to `t` (never back); the on/off cycle with it, so
    /// the current cycle always holds `now`.
    fn set_now(&mut self, t: u64) {
        self.now = self.now.max(t);
        if let Some(g) = &mut self.gate {
            g.advance(self.now);
        }
    }

    fn pie_update(&mut self, t: u64) {
        self.set_now(t);
        let qdelay = self
            .queues
            .head_enq()
            .map_or(0, |enq| t.saturating_sub(enq));
        if let Some(p) = &mut self.pie {
            p.update(qdelay);
        }
    }

    /// Runs the server's event at `self.now`.
    fn server_step(&mut self, out: &mut Vec<Out>) {
        let now = self.now;
        match &mut self.server {
            Server::Serial { busy, .. } if busy.is_some_and(|(_, done)| done <= now) => {
                if let Some((it, done)) = busy.take() {
                    out.push(Out::Sent(it, done));
                }
            }
            Server::Serial { spec, link, busy } => {
                let Some(it) = self.queues.dequeue(now, self.maxpacket, out) else {
                    return;
                };
                let Some(bps) = it.rate.or(spec.map(|s| s.bits_per_sec)) else {
                    *busy = Some((it, now));
                    return;
                };
                let l = link.get_or_insert_with(|| {
                    RateLink::new(&spec.unwrap_or(RateSpec {
                        bits_per_sec: bps,
                        packet_overhead: 0,
                        cell_size: 0,
                        cell_overhead: 0,
                        burst_bytes: 0,
                    }))
                });
                l.set_rate(bps);
                let mut sent = l.peek(now, it.len);
                if let Some(g) = &self.gate {
                    // Pause over every off period the frame runs into
                    // (bounded by the horizon, past which it is dropped).
                    let latest = now.saturating_add(HORIZON_NS);
                    let mut c = g.current();
                    let mut later = g.following();
                    while sent.done_ns > c.off && c.off < latest {
                        l.shift(&mut sent, c.next - c.off);
                        match later.next() {
                            Some(n) => c = n,
                            None => break,
                        }
                    }
                }
                l.commit(sent);
                *busy = Some((it, sent.done_ns));
            }
            Server::Opportunities {
                opps,
                transit,
                dead,
            } => {
                if *dead || opps.peek().is_none() {
                    *dead = true;
                    if let Some((it, _)) = transit.take() {
                        out.push(Out::Dropped(it, now, DropReason::LinkDead));
                    }
                    self.queues.drain(now, DropReason::LinkDead, out);
                    return;
                }
                opps.take();
                if self.gate.as_ref().is_some_and(|g| !g.is_on(now)) {
                    return;
                }
                let mut left = OPPORTUNITY_BYTES;
                // Each turn completes a packet or uses the opportunity up:
                // bounded by the queue.
                while left > 0 {
                    if transit.is_none() {
                        match self.queues.dequeue(now, self.maxpacket, out) {
                            Some(it) => *transit = Some((it, it.len)),
                            None => break,
                        }
                    }
                    if let Some((it, rem)) = transit {
                        let n = left.min(*rem);
                        *rem -= n;
                        left -= n;
                        if *rem == 0 {
                            out.push(Out::Sent(*it, now));
                            *transit = None;
                        }
                    }
                }
            }
        }
    }

    /// Before an arrival at `t` (after `advance(t)`): opportunities up to
    /// `t` that found the link idle are wasted.
    pub(crate) fn waste_idle(&mut self, t: u64) {
        if let Server::Opportunities {
            opps,
            transit: None,
            dead,
        } = &mut self.server
        {
            if self.queues.is_empty() {
                // One opportunity per turn, up to the arrival: bounded by
                // the trace's rate times the idle time.
                while opps.peek().is_some_and(|o| o <= t) {
                    opps.take();
                }
                if opps.peek().is_none() {
                    *dead = true;
                }
            }
        }
    }

    /// (Flow queues made, packets in the overflow queue) of a per-flow
    /// scheduler.
    pub(crate) fn flow_counts(&self) -> (u64, u64) {
        self.queues.flow_counts()
    }

    /// Puts a copy of flow `flow` arriving at `t` in the queue (after
    /// `advance(t)`), or says why not. Drophead's and the schedulers'
    /// drops go to `out`. `u`: a uniform draw for PIE.
    pub(crate) fn enqueue(
        &mut self,
        mut it: Item,
        flow: &FlowKey,
        t: u64,
        u: f64,
        out: &mut Vec<Out>,
    ) -> Result<(), DropReason> {
        let x = t.max(self.now);
        self.set_now(x);
        if matches!(self.server, Server::Opportunities { dead: true, .. }) {
            return Err(DropReason::LinkDead);
        }
        if self.gate_drops && self.gate.as_ref().is_some_and(|g| !g.is_on(x)) {
            return Err(DropReason::LinkDead);
        }
        it.enq = x;
        self.maxpacket = self.maxpacket.max(it.len);
        let len = u64::from(it.len);
        let Some(q) = self.queues.fifo() else {
            return self.queues.enqueue_flow(it, flow, x, out);
        };
        let fits = |q: &Queue| {
            (q.items.len() as u64) < self.limit_packets && q.bytes + len <= self.limit_bytes
        };
        if self.kind == QueueKind::DropHead {
            if len > self.limit_bytes {
                return Err(DropReason::Limit);
            }
            // Bounded by the queue.
            while !fits(q) {
                match q.pop() {
                    Some(head) => out.push(Out::Dropped(head, x, DropReason::Limit)),
                    None => break,
                }
            }
        } else if !fits(q) {
            return Err(DropReason::Limit);
        }
        if let Some(p) = &self.pie {
            if p.drop_early(q.bytes, self.maxpacket, u) {
                return Err(DropReason::Aqm);
            }
        }
        q.bytes += len;
        q.items.push_back(it);
        Ok(())
    }
}

//! A direction's link model: its rules in order, then its default stages.
//!
//! A frame goes to the first rule whose filter matches its bytes (tcpdump
//! syntax, run in user space on the frame as it will leave, VLAN tag
//! inline), else to the default. Each rule is a [`Link`] of its own: own
//! state, own trace cursor, own packet count (`seq`), and randomness keyed
//! by (seed, rule, direction, seq) — so what one rule decides does not
//! depend on the traffic of another. Releases of different rules are merged
//! by deadline (a stable sort: each rule's own order is kept on ties).

use super::ctl::{Cmd, CmdReceiver, RuleState};
use super::forward::{Admission, LinkModel, Release};
use super::recorder::{Recorded, Recorder};
use std::collections::HashMap;
use wirelab_io::bpf::BpfProgram;
use wirelab_link::{self as link, DropReason, Fate, Link};
use wirelab_trace::Action;
use wirelab_wire::record::EmuFate;

/// The fate code of a copy the link model dropped.
pub fn fate_of(r: DropReason) -> EmuFate {
    match r {
        DropReason::Loss => EmuFate::Loss,
        DropReason::Trace => EmuFate::Trace,
        DropReason::TraceEnd => EmuFate::TraceEnd,
        DropReason::Limit => EmuFate::Limit,
        DropReason::Horizon => EmuFate::Horizon,
        // Queue management: CoDel and PIE at dequeue, DRD at arrival (the
        // link's counters say which).
        DropReason::Aqm | DropReason::Drd => EmuFate::Queue,
        DropReason::LinkDead => EmuFate::LinkDown,
    }
}

/// One rule of a direction (or its default stages: rule 0, no filter).
pub struct RuleLink {
    /// 0 for the default stages; 1.. in the order the rules were given.
    pub rule: u32,
    /// `None` for the default: every frame no rule took.
    pub filter: Option<BpfProgram>,
    /// The stage list as given.
    pub stages: String,
    /// The seed its randomness is keyed by.
    pub seed: u64,
    pub link: Link,
    /// Copies still queued when the run stopped (the link counts them as
    /// released).
    pub unsent: u64,
    next_seq: u64,
    /// The seq of its first frame (an updated rule goes on counting).
    first_seq: u64,
    /// seq → the direction's frame index, while copies wait; frames below
    /// `identity_below` are not in it: their index is their seq (the
    /// default stages while no rule exists take every frame in order).
    frames: HashMap<u64, u64>,
    identity_below: u64,
    recorder: Option<Recorder>,
    /// It gave its rule's decision trace on to a newer link.
    handed_on: bool,
}

impl RuleLink {
    pub fn new(
        rule: u32,
        filter: Option<BpfProgram>,
        stages: &str,
        seed: u64,
        link: Link,
    ) -> RuleLink {
        RuleLink {
            rule,
            filter,
            stages: stages.to_string(),
            seed,
            link,
            unsent: 0,
            next_seq: 0,
            first_seq: 0,
            frames: HashMap::new(),
            identity_below: 0,
            recorder: None,
            handed_on: false,
        }
    }

    /// Records this rule's decisions as a packet trace.
    pub fn record_to(mut self, r: Recorder) -> RuleLink {
        self.link.record_decisions();
        self.recorder = Some(r);
        self
    }

    /// Writes the decisions its link has completed (in arrival order).
    fn write_decisions(&mut self, buf: &mut Vec<Action>) {
        if let Some(r) = &mut self.recorder {
            buf.clear();
            if self.link.take_decisions(buf) > 0 {
                r.record_actions(buf);
            }
        }
    }

    fn takes(&self, frame: &[u8]) -> bool {
        self.filter
            .as_ref()
            .is_none_or(|f| f.matches(frame, frame.len() as u32))
    }

    /// Frames this rule's link took.
    pub fn frames(&self) -> u64 {
        self.next_seq - self.first_seq
    }

    fn state(&self) -> RuleState {
        RuleState {
            rule: self.rule,
            filter: self
                .filter
                .as_ref()
                .map_or_else(String::new, |f| f.expr().to_string()),
            stages: self.stages.clone(),
            seed: self.seed,
            frames: self.next_seq - self.first_seq,
            link: self.link.counters().clone(),
            ended: None,
        }
    }
}

/// A direction's rules and default stages, as one [`LinkModel`].
pub struct DirModel {
    /// The rules in order, the default last.
    links: Vec<RuleLink>,
    /// Rules updated or removed at run time whose copies still wait: they
    /// take no frame and leave once empty.
    retired: Vec<RuleLink>,
    /// Decision traces of removed rules, finished at the end (not on the
    /// forwarding path: finishing waits for the disk).
    ended: Vec<(u32, Recorder)>,
    /// What updated and removed rules did until then.
    ended_rules: Vec<RuleState>,
    ctl: Option<CmdReceiver>,
    due: Vec<link::Release>,
    /// Decision records on their way to a recorder.
    actions: Vec<Action>,
    /// Makes the opportunity log of each link (`--mm-log`).
    opp_log: Option<Box<dyn Fn() -> link::OpportunityLog + Send>>,
}

impl DirModel {
    /// `rules` in matching order (each with a filter) and the default
    /// stages (rule 0, no filter).
    pub fn new(rules: Vec<RuleLink>, default: RuleLink) -> DirModel {
        let mut links = rules;
        links.push(default);
        DirModel {
            links,
            retired: Vec::new(),
            ended: Vec::new(),
            ended_rules: Vec::new(),
            ctl: None,
            due: Vec::new(),
            actions: Vec::new(),
            opp_log: None,
        }
    }

    /// Rules updated or removed at run time, with their counters then.
    pub fn ended_rules(&self) -> &[RuleState] {
        &self.ended_rules
    }

    /// Takes runtime changes from `rx` (`wirelab emulate ctl`).
    pub fn set_control(&mut self, rx: CmdReceiver) {
        self.ctl = Some(rx);
    }

    fn apply(&mut self, cmd: Cmd) {
        let last = self.links.len() - 1;
        let log_opps =
            |l: &mut RuleLink, make: &Option<Box<dyn Fn() -> link::OpportunityLog + Send>>| {
                if let Some(m) = make {
                    l.link.log_opportunities(m());
                }
            };
        let at = |links: &[RuleLink], rule: u32| links[..last].iter().position(|l| l.rule == rule);
        match cmd {
            Cmd::Add(mut l, ack) => {
                log_opps(&mut l, &self.opp_log);
                self.links.insert(last, l);
                let _ = ack.send(());
            }
            Cmd::Replace(rule, mut l, ack) => {
                log_opps(&mut l, &self.opp_log);
                if let Some(i) = at(&self.links, rule) {
                    let old = &mut self.links[i];
                    // The rule's trace goes on in the new link once the
                    // old one's frames are all decided (their records
                    // come first); until then the new link's wait.
                    if old.recorder.is_some() || old.link.decisions_waiting() {
                        l.link.record_decisions();
                    }
                    if l.recorder.is_none() && !old.link.decisions_waiting() {
                        l.recorder = old.recorder.take();
                        old.handed_on = true;
                    }
                    // Its frames go on counting: (rule, seq) stays unique.
                    l.next_seq = old.next_seq;
                    l.first_seq = old.next_seq;
                    l.identity_below = 0;
                    let old = std::mem::replace(&mut self.links[i], l);
                    self.retire(old, "updated");
                }
                let _ = ack.send(());
            }
            Cmd::Remove(rule, ack) => {
                if let Some(i) = at(&self.links, rule) {
                    let old = self.links.remove(i);
                    self.retire(old, "removed");
                }
                let _ = ack.send(());
            }
            Cmd::State(tx) => {
                let _ = tx.send(self.links.iter().map(RuleLink::state).collect());
            }
        }
    }

    /// Keeps `old` while copies wait in it.
    fn retire(&mut self, mut old: RuleLink, why: &'static str) {
        self.ended_rules.push(RuleState {
            ended: Some(why),
            ..old.state()
        });
        // A trace whose frames are not all decided stays with its link.
        if !old.link.decisions_waiting() {
            old.write_decisions(&mut self.actions);
            if let Some(r) = old.recorder.take() {
                old.handed_on = true;
                self.hand_over(old.rule, r);
            }
        }
        if old.link.next_deadline().is_some() {
            self.retired.push(old);
        }
    }

    /// Gives a rule's decision trace to its next link that records
    /// without one (an updated rule's newer link, retired or not), which
    /// writes what it has decided; else the trace has ended.
    fn hand_over(&mut self, rule: u32, r: Recorder) {
        let next = self
            .retired
            .iter_mut()
            .chain(self.links.iter_mut())
            .find(|l| {
                l.rule == rule && l.recorder.is_none() && !l.handed_on && l.link.records_decisions()
            });
        match next {
            Some(l) => {
                l.recorder = Some(r);
                l.write_decisions(&mut self.actions);
            }
            None => self.ended.push((rule, r)),
        }
    }

    /// The default stages.
    pub fn default_link(&self) -> &RuleLink {
        &self.links[self.links.len() - 1]
    }

    /// The rules in order, without the default.
    pub fn rules(&self) -> &[RuleLink] {
        &self.links[..self.links.len() - 1]
    }

    /// Ends every decision trace: waits until each is in its file.
    pub fn finish_recording(&mut self) -> Vec<Recorded> {
        for l in self.links.iter_mut().chain(self.retired.iter_mut()) {
            l.write_decisions(&mut self.actions);
        }
        let mut v: Vec<Recorded> = self
            .ended
            .drain(..)
            .map(|(rule, r)| r.finish(rule))
            .collect();
        v.extend(
            self.retired
                .iter_mut()
                .chain(self.links.iter_mut())
                .filter_map(|l| l.recorder.take().map(|r| r.finish(l.rule))),
        );
        v
    }
}

impl LinkModel for DirModel {
    fn arrive(&mut self, t_ns: u64, frame: &[u8], index: u64, out: &mut Admission) {
        let last = self.links.len() - 1;
        let i = (0..last)
            .find(|&i| self.links[i].takes(frame))
            .unwrap_or(last);
        let l = &mut self.links[i];
        let seq = l.next_seq;
        l.next_seq += 1;
        // ECN-capable frames may be marked CE instead of dropped (`ecn`,
        // `drd ... congest`); the mark is set when the copy leaves. Only
        // such links parse the headers.
        let ect = l.link.uses_ect() && wirelab_wire::rewrite::ecn::is_ect(frame);
        // Links that tell flows apart (`per-flow`, `sched drr|fq_codel`)
        // get the frame's addresses, protocol and ports; only they parse.
        let flow = if l.link.uses_flows() {
            link::FlowTuple::from_frame(frame)
        } else {
            None
        };
        let a = l
            .link
            .arrive_flow(t_ns, frame.len() as u32, seq, ect, flow.as_ref());
        out.rule = l.rule;
        out.seq = seq;
        for (copy, f) in a.copies().iter().enumerate() {
            match f {
                // A waiting copy leaves or is dropped in the queue later:
                // a release either way.
                Fate::Queued(_) | Fate::Waiting(_) => out.queued += 1,
                Fate::Dropped(r) => out.dropped.push((copy as u8, fate_of(*r))),
            }
        }
        if last == 0 && l.identity_below == seq && seq == index {
            l.identity_below += 1;
        } else if out.queued > 0 {
            l.frames.insert(seq, index);
        }
        l.write_decisions(&mut self.actions);
    }

    fn next_deadline(&self) -> Option<u64> {
        self.links
            .iter()
            .chain(&self.retired)
            .filter_map(|l| l.link.next_deadline())
            .min()
    }

    fn pop_due(&mut self, now_ns: u64, out: &mut Vec<Release>) {
        let start = out.len();
        let mut rules_due = 0;
        for l in self.links.iter_mut().chain(self.retired.iter_mut()) {
            self.due.clear();
            if l.link.pop_due(now_ns, &mut self.due) == 0 {
                continue;
            }
            l.write_decisions(&mut self.actions);
            rules_due += 1;
            for r in &self.due {
                let index = if r.packet_index < l.identity_below {
                    Some(r.packet_index)
                } else if r.last {
                    l.frames.remove(&r.packet_index)
                } else {
                    l.frames.get(&r.packet_index).copied()
                };
                // Every queued copy's frame was noted at arrival.
                let Some(index) = index else { continue };
                out.push(Release {
                    index,
                    rule: l.rule,
                    seq: r.packet_index,
                    copy: r.copy,
                    arrival_ns: r.arrival_ns,
                    deadline_ns: r.deadline_ns,
                    flip_bit: r
                        .corrupt
                        .and_then(|c| c.bit_in(r.frame_len as usize))
                        .map(|b| b as u32),
                    dropped: r.dropped.map(fate_of),
                    ce: r.ce,
                });
            }
        }
        if rules_due > 1 {
            out[start..].sort_by_key(|r| r.deadline_ns);
        }
        // Retired links leave once empty, handing their decision trace on.
        // Each turn removes one or steps past one: bounded by the list.
        let mut k = 0;
        while k < self.retired.len() {
            let l = &self.retired[k];
            // One waiting for its rule's trace keeps its records until then.
            let awaits = l.recorder.is_none() && !l.handed_on && l.link.records_decisions();
            if l.link.next_deadline().is_some() || awaits {
                k += 1;
                continue;
            }
            let mut gone = self.retired.remove(k);
            gone.write_decisions(&mut self.actions);
            if let Some(r) = gone.recorder.take() {
                self.hand_over(gone.rule, r);
            }
        }
    }

    fn drain(&mut self, out: &mut Vec<Release>) {
        let start = out.len();
        self.pop_due(u64::MAX, out);
        for r in &out[start..] {
            if let Some(l) = self.links.iter_mut().find(|l| l.rule == r.rule) {
                l.unsent += 1;
            }
        }
    }

    fn control(&mut self) {
        while let Some(cmd) = self.ctl.as_ref().and_then(|rx| rx.try_recv().ok()) {
            self.apply(cmd);
        }
    }

    fn set_opportunity_log(&mut self, make: Box<dyn Fn() -> link::OpportunityLog + Send>) {
        for l in self.links.iter_mut().chain(self.retired.iter_mut()) {
            l.link.log_opportunities(make());
        }
        self.opp_log = Some(make);
    }

    fn end_opportunity_log(&mut self, now_ns: u64) {
        self.opp_log = None;
        for l in self.links.iter_mut().chain(self.retired.iter_mut()) {
            l.link.end_opportunity_log(now_ns);
        }
    }
}

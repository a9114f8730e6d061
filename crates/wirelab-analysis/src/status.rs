//! A running receiver's loss so far, per flow: what a controller reads
//! while a run goes on (`wirelab recv --status FILE`, schema
//! `wirelab.recv.status/1`) to check abort criteria such as "more than 50
//! lost" without touching the data path.
//!
//! Per flow it keeps only the probes received and the highest sequence
//! number seen, so `lost = highest + 1 − received`: the loss against the
//! highest sequence, blind to tail loss, and an under-count while
//! duplicates arrive (each counts as received). The final figures come
//! from the analysis of the record files; these are for deciding early.

use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use wirelab_wire::probe::ProbeFlags;
use wirelab_wire::Record;

/// The schema name of [`RecvStatus`].
pub const STATUS_SCHEMA: &str = "wirelab.recv.status/1";

/// Per-flow received count and highest sequence, for up to a fixed
/// number of flows (probes of further flows are counted in total only).
#[derive(Debug, Clone)]
pub struct LiveLoss {
    max_flows: usize,
    flows: HashMap<u32, FlowCount>,
    packets: u64,
}

#[derive(Debug, Clone, Copy)]
struct FlowCount {
    received: u64,
    highest: u64,
}

/// One flow's loss so far.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct FlowStatus {
    pub flow: u32,
    pub received: u64,
    pub highest_seq: u64,
    /// `highest_seq + 1 − received`, at least 0.
    pub lost: u64,
}

/// What `--status` writes: totals and each tracked flow, by flow id.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RecvStatus {
    pub schema: String,
    /// Probes received, in all flows.
    pub packets: u64,
    /// Whether the receiver has ended (the last status it writes).
    pub done: bool,
    pub flows: Vec<FlowStatus>,
}

impl RecvStatus {
    /// The sum of the flows' losses.
    pub fn lost(&self) -> u64 {
        self.flows.iter().map(|f| f.lost).sum()
    }
}

impl LiveLoss {
    /// Tracks up to `max_flows` flows (at least 1).
    pub fn new(max_flows: usize) -> LiveLoss {
        LiveLoss {
            max_flows: max_flows.max(1),
            flows: HashMap::new(),
            packets: 0,
        }
    }

    /// Counts one received probe. A sender's end markers (repeats of its
    /// final probe with the LAST flag) are not counted as received: they
    /// only raise the highest sequence, so a lost final probe is counted
    /// as lost.
    pub fn observe(&mut self, r: &Record) {
        let got = u64::from(r.probe_flags & ProbeFlags::LAST == 0);
        let n = self.flows.len();
        match self.flows.get_mut(&r.flow) {
            Some(f) => {
                f.received += got;
                f.highest = f.highest.max(r.seq);
            }
            None if n < self.max_flows => {
                self.flows.insert(
                    r.flow,
                    FlowCount {
                        received: got,
                        highest: r.seq,
                    },
                );
            }
            None => {}
        }
        self.packets += got;
    }

    /// The status as of now.
    pub fn status(&self, done: bool) -> RecvStatus {
        let mut flows: Vec<FlowStatus> = self
            .flows
            .iter()
            .map(|(&flow, c)| FlowStatus {
                flow,
                received: c.received,
                highest_seq: c.highest,
                lost: c.highest.saturating_add(1).saturating_sub(c.received),
            })
            .collect();
        flows.sort_by_key(|f| f.flow);
        RecvStatus {
            schema: STATUS_SCHEMA.into(),
            packets: self.packets,
            done,
            flows,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(flow: u32, seq: u64) -> Record {
        Record {
            flow,
            seq,
            ..Record::default()
        }
    }

    #[test]
    fn loss_is_counted_against_the_highest_sequence_per_flow() {
        let mut l = LiveLoss::new(2);
        for s in [0, 1, 3, 2, 7] {
            l.observe(&rec(5, s));
        }
        l.observe(&rec(9, 0));
        l.observe(&rec(9, 0)); // a duplicate counts as received
        l.observe(&rec(11, 4)); // a third flow: counted in total only
        let mut end = rec(9, 2);
        end.probe_flags = ProbeFlags::LAST;
        l.observe(&end); // seq 2 lost, then its end markers
        l.observe(&end);
        let s = l.status(false);
        assert_eq!(s.packets, 8);
        assert_eq!(
            s.flows,
            vec![
                FlowStatus {
                    flow: 5,
                    received: 5,
                    highest_seq: 7,
                    lost: 3
                },
                FlowStatus {
                    flow: 9,
                    received: 2,
                    highest_seq: 2,
                    lost: 1
                },
            ]
        );
        assert_eq!(s.lost(), 4);
        let j = serde_json::to_string(&s).unwrap();
        assert!(j.starts_with(r#"{"schema":"wirelab.recv.status/1","packets":8,"done":false,"flows":[{"flow":5,"received":5,"highest_seq":7,"lost":3}"#), "{j}");
        assert_eq!(serde_json::from_str::<RecvStatus>(&j).unwrap(), s);
    }
}

//! Streaming statistics fed by running jobs, one record at a time: the
//! receiver's per-flow metrics ([`LiveFlows`]) and a sending flow's pacing
//! and distribution samples ([`SendAccum`]). Memory grows with the packets
//! seen, up to fixed caps.

use crate::report::{FlowReport, SentSource, Summary};
use crate::requested::{fill_ks, Requested};
use crate::{FlowConfig, FlowStats, RateModel, RttStats, SenderInfo, SenderStats};
use std::collections::HashMap;
use wirelab_wire::record::Record;
use wirelab_wire::ProbeFlags;

/// Most flows a live receiver tracks (about 1 MiB of histograms each);
/// probes of further flows are counted by the receiver but not analyzed.
pub const MAX_LIVE_FLOWS: usize = 4096;

/// Per-flow streaming statistics of a running receiver.
pub struct LiveFlows {
    cfg: FlowConfig,
    flows: HashMap<u32, FlowStats>,
}

impl LiveFlows {
    pub fn new(window_ns: u64) -> Self {
        LiveFlows {
            cfg: FlowConfig {
                window_ns,
                ..FlowConfig::default()
            },
            flows: HashMap::new(),
        }
    }

    /// Feeds one received probe, in arrival order.
    pub fn observe(&mut self, r: &Record) {
        let n = self.flows.len();
        let cfg = self.cfg;
        let f = match self.flows.get_mut(&r.flow) {
            Some(f) => f,
            None if n < MAX_LIVE_FLOWS => self
                .flows
                .entry(r.flow)
                .or_insert_with(|| FlowStats::new(r.flow, cfg)),
            None => return,
        };
        f.observe(r.seq, r.tx_ns, r.rx_ns, r.size, ProbeFlags(r.probe_flags));
    }

    pub fn finish(&self) -> Summary {
        Summary::new(self.flows.values().map(|f| f.finish(None)).collect())
    }
}

/// Most samples kept for a KS distance; beyond it a uniform reservoir
/// sample (Algorithm R) keeps memory bounded on long runs.
pub const KS_SAMPLES: usize = 200_000;

/// Samples are stored in chunks of this many: the reservoir grows with the
/// flow without ever copying what it holds (a copy of a large buffer on the
/// packet path would make probes late).
const CHUNK: usize = 4096;

/// A bounded uniform sample of a stream of values.
pub struct Reservoir {
    seen: u64,
    state: u64,
    chunks: Vec<Vec<f64>>,
}

impl Reservoir {
    pub fn new(seed: u64) -> Self {
        Reservoir {
            seen: 0,
            state: seed | 1,
            chunks: Vec::new(),
        }
    }

    pub fn add(&mut self, v: f64) {
        self.seen += 1;
        if self.seen <= KS_SAMPLES as u64 {
            match self.chunks.last_mut() {
                Some(c) if c.len() < CHUNK => c.push(v),
                _ => {
                    let mut c = Vec::with_capacity(CHUNK);
                    c.push(v);
                    self.chunks.push(c);
                }
            }
            return;
        }
        // xorshift64*: cheap, and good enough to pick reservoir slots.
        self.state ^= self.state >> 12;
        self.state ^= self.state << 25;
        self.state ^= self.state >> 27;
        let r = (self.state.wrapping_mul(0x2545_f491_4f6c_dd1d) % self.seen) as usize;
        if r < KS_SAMPLES {
            self.chunks[r / CHUNK][r % CHUNK] = v;
        }
    }

    /// The kept samples, in one buffer (off the packet path).
    pub fn samples(&self) -> Vec<f64> {
        self.chunks.concat()
    }
}

/// Streaming sender statistics of one flow, fed by its sending thread.
pub struct SendAccum {
    stats: SenderStats,
    intervals: Reservoir,
    sizes: Reservoir,
    prev_tx: Option<u64>,
}

impl SendAccum {
    pub fn new(info: SenderInfo) -> Self {
        SendAccum {
            stats: SenderStats::new(info, RateModel::default()),
            intervals: Reservoir::new(0x1234),
            sizes: Reservoir::new(0x5678),
            prev_tx: None,
        }
    }

    /// Feeds one Tx record, in departure order.
    pub fn observe(&mut self, r: &Record) {
        self.stats.observe_record(r);
        if ProbeFlags(r.probe_flags).is_warmup() {
            return;
        }
        if let Some(p) = self.prev_tx {
            self.intervals.add(r.tx_ns.saturating_sub(p) as f64);
        }
        self.prev_tx = Some(r.tx_ns);
        self.sizes.add(r.size as f64);
    }

    /// The flow's report from the sender's side; `rtt` with echo requests.
    pub fn report(&self, flow: u32, req: &Requested, rtt: Option<&RttStats>) -> FlowReport {
        let mut rep = FlowReport::empty(flow);
        let sender = self.stats.finish();
        rep.sent = Some(self.stats.sent());
        rep.sent_source = Some(SentSource::SenderRecords);
        rep.rtt = rtt.map(|r| r.finish(Some(sender.echo_requests)));
        rep.sender = Some(sender);
        fill_ks(
            &mut rep,
            req,
            &mut self.intervals.samples(),
            &mut self.sizes.samples(),
        );
        rep
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reservoir_grows_with_the_stream_and_stops_at_the_cap() {
        let mut r = Reservoir::new(7);
        for i in 0..10 {
            r.add(i as f64);
        }
        assert_eq!(r.samples(), (0..10).map(|i| i as f64).collect::<Vec<_>>());
        assert_eq!(r.chunks.len(), 1);
        for i in 10..(KS_SAMPLES as u64 + 50_000) {
            r.add(i as f64);
        }
        let s = r.samples();
        assert_eq!(s.len(), KS_SAMPLES);
        assert_eq!(r.chunks.len(), KS_SAMPLES.div_ceil(CHUNK));
        // Later values replaced some of the first ones.
        assert!(s.iter().any(|&v| v >= KS_SAMPLES as f64));
    }
}

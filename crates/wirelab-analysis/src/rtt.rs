//! Round-trip times from echo replies recorded at the sender.
//!
//! Per reply (times per [`wirelab_wire::RecordKind::EchoReply`]): `t1 =
//! tx_ns` (sender clock), `t2 = refl_rx_ns`, `t3 = refl_tx_ns` (reflector
//! clock), `t4 = rx_ns` (sender clock).
//! * rtt = t4 - t1 and residence = t3 - t2 are each on one clock: exact.
//! * net_rtt = rtt - residence: the network's round trip, clock independent.
//! * forward = t2 - t1 and return = t4 - t3 cross clocks: they are only
//!   meaningful with synchronised clocks, which the report states.
//! * clock offset (reflector - sender) = ((t2 - t1) + (t3 - t4)) / 2, from
//!   the reply with the smallest net RTT, uncertain by ± net_rtt / 2.
//!
//! The reflector times are used only when both are non-zero. Duplicate
//! replies and warm-up replies are excluded.
//!
//! Memory: replies are kept as records until a flow has more than
//! [`crate::staged::STAGE_RECORDS`] (64 bytes each), then the histograms
//! (about 1.5 MiB) are built; a sender without echo replies holds nothing.

use crate::latency::SignedHistogram;
use crate::report::{diff_ns, ClockOffset, RttReport};
use crate::seqwin::{SeqOutcome, SeqWindow};
use crate::staged::{Accumulate, Staged};
use wirelab_wire::{ProbeFlags, Record, RecordKind};

/// Streaming RTT accumulator for one flow; see the module docs.
#[derive(Debug, Clone, Default)]
pub struct RttStats {
    acc: Staged<RttAcc>,
}

impl RttStats {
    pub fn new() -> Self {
        Self::default()
    }

    /// Feeds one echo reply.
    pub fn observe(
        &mut self,
        seq: u64,
        tx_ns: u64,
        rx_ns: u64,
        refl_rx_ns: u64,
        refl_tx_ns: u64,
        flags: ProbeFlags,
    ) {
        self.observe_record(&Record {
            seq,
            tx_ns,
            rx_ns,
            refl_rx_ns,
            refl_tx_ns,
            probe_flags: flags.bits(),
            kind: RecordKind::EchoReply,
            ..Record::default()
        });
    }

    /// Feeds one EchoReply record.
    pub fn observe_record(&mut self, r: &Record) {
        self.acc.observe(r, RttAcc::default);
    }

    /// `requests`: echo requests sent (without warm-up), when known.
    pub fn finish(&self, requests: Option<u64>) -> RttReport {
        self.acc.with(RttAcc::default, |a| a.finish(requests))
    }
}

/// The full accumulator, histograms allocated.
#[derive(Debug, Clone, Default)]
struct RttAcc {
    seqs: SeqWindow,
    replies: u64,
    duplicates: u64,
    rtt: SignedHistogram,
    net: SignedHistogram,
    residence: SignedHistogram,
    forward: SignedHistogram,
    ret: SignedHistogram,
    best: Option<(i64, ClockOffset)>,
}

impl RttAcc {
    fn observe(
        &mut self,
        seq: u64,
        tx_ns: u64,
        rx_ns: u64,
        refl_rx_ns: u64,
        refl_tx_ns: u64,
        flags: ProbeFlags,
    ) {
        if self.seqs.insert(seq) == SeqOutcome::Duplicate {
            self.duplicates = self.duplicates.saturating_add(1);
            return;
        }
        if flags.is_warmup() {
            return;
        }
        self.replies = self.replies.saturating_add(1);
        if tx_ns == 0 || rx_ns == 0 {
            return;
        }
        let rtt = diff_ns(rx_ns, tx_ns);
        self.rtt.record(rtt, seq);
        if refl_rx_ns == 0 || refl_tx_ns == 0 {
            return;
        }
        let residence = diff_ns(refl_tx_ns, refl_rx_ns);
        let forward = diff_ns(refl_rx_ns, tx_ns);
        let ret = diff_ns(rx_ns, refl_tx_ns);
        let net = rtt.saturating_sub(residence);
        self.residence.record(residence, seq);
        self.net.record(net, seq);
        self.forward.record(forward, seq);
        self.ret.record(ret, seq);
        let better = match &self.best {
            Some((b, _)) => net < *b,
            None => true,
        };
        if better {
            let offset = ((forward as i128 - ret as i128) / 2) as i64;
            self.best = Some((
                net,
                ClockOffset {
                    offset_ns: offset,
                    uncertainty_ns: (net / 2).saturating_abs(),
                    seq,
                },
            ));
        }
    }

    fn finish(&self, requests: Option<u64>) -> RttReport {
        RttReport {
            replies: self.replies,
            duplicates: self.duplicates,
            lost: requests.map(|r| r.saturating_sub(self.replies)),
            rtt: self.rtt.stats(),
            net_rtt: self.net.stats(),
            residence: self.residence.stats(),
            forward: self.forward.stats(),
            return_: self.ret.stats(),
            one_way_assumes_synced_clocks: true,
            clock_offset: self.best.as_ref().map(|(_, o)| o.clone()),
        }
    }
}

impl Accumulate for RttAcc {
    fn feed(&mut self, r: &Record) {
        self.observe(
            r.seq,
            r.tx_ns,
            r.rx_ns,
            r.refl_rx_ns,
            r.refl_tx_ns,
            ProbeFlags(r.probe_flags),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_and_offset() {
        let mut r = RttStats::new();
        // Reflector clock 100 ns ahead; true forward 500, return 500, residence 100.
        r.observe(0, 1000, 2100, 1600, 1700, ProbeFlags::empty());
        // A slower reply: return 900.
        r.observe(1, 3000, 4500, 3600, 3700, ProbeFlags::empty());
        r.observe(1, 3000, 4500, 3600, 3700, ProbeFlags::empty());
        // No reflector times: RTT only.
        r.observe(2, 5000, 6000, 0, 0, ProbeFlags::empty());
        let rep = r.finish(Some(4));
        assert_eq!((rep.replies, rep.duplicates, rep.lost), (3, 1, Some(1)));
        let rtt = rep.rtt.unwrap();
        assert_eq!(
            (rtt.count, rtt.min_ns, rtt.max_ns, rtt.max_seq),
            (3, 1000, 1500, Some(1))
        );
        let res = rep.residence.unwrap();
        assert_eq!((res.count, res.min_ns, res.max_ns), (2, 100, 100));
        assert_eq!(rep.net_rtt.as_ref().unwrap().min_ns, 1000);
        assert_eq!(rep.forward.as_ref().unwrap().max_ns, 600);
        let ret = rep.return_.unwrap();
        assert_eq!((ret.min_ns, ret.max_ns), (400, 800));
        assert!(rep.one_way_assumes_synced_clocks);
        let off = rep.clock_offset.clone().unwrap();
        assert_eq!((off.offset_ns, off.uncertainty_ns, off.seq), (100, 500, 0));
        let j = serde_json::to_value(r.finish(None)).unwrap();
        assert!(j.get("return").is_some());
    }

    #[test]
    fn staged_replies_give_the_figures_of_a_full_accumulator() {
        for n in [3u64, crate::staged::STAGE_RECORDS as u64 + 2] {
            let mut staged = RttStats::new();
            let mut full = RttAcc::default();
            for seq in 0..n {
                let t = 1_000_000 * seq;
                let args = (seq, t, t + 900 + seq % 37, t + 400, t + 450 + seq % 5);
                staged.observe(args.0, args.1, args.2, args.3, args.4, ProbeFlags::empty());
                full.observe(args.0, args.1, args.2, args.3, args.4, ProbeFlags::empty());
            }
            assert_eq!(
                staged.acc.is_built(),
                n > crate::staged::STAGE_RECORDS as u64
            );
            assert_eq!(staged.finish(Some(n + 1)), full.finish(Some(n + 1)));
        }
    }

    #[test]
    fn hostile_times() {
        let mut r = RttStats::new();
        r.observe(5, 1, u64::MAX, u64::MAX, 1, ProbeFlags::empty());
        r.observe(6, u64::MAX, 1, 1, u64::MAX, ProbeFlags::empty());
        assert_eq!(r.finish(None).replies, 2);
    }
}

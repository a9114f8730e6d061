//! A measured path as a packet trace: the per-packet one-way delay, loss
//! and duplication of a wirelab sender + receiver record pair
//! (`wirelab send --record`, `wirelab recv --record`), in the sender's
//! order, so the emulator can replay the path packet by packet.
//!
//! Records are joined by `(flow, seq)`, as `wirelab analyze` joins them,
//! and the send time: a copy is a received packet carrying the send time
//! of the sender's record; one carrying another time under the same
//! sequence number was sent again (the end marker is repeated so that the
//! receiver learns the count) and is left out, counted as a repeat. For
//! every probe the sender recorded (its Tx records, in file order):
//!
//! - never received: a drop record;
//! - received once: a delay record, its one-way delay;
//! - received `k` times: `k − 1` duplicate records then a delay record,
//!   the copies' delays in increasing order (the emulator's duplicate
//!   semantics: a copy's fate is the next record).
//!
//! The one-way delay of a received copy is its receive time minus the send
//! time the probe carries (`rx_ns − tx_ns` of the receiver's record). Two
//! hosts' clocks differ by an unknown offset, so by default the smallest
//! delay is subtracted from all ([`OwdBase::Relative`]: the trace holds the
//! variation, and the emulator's own base delay or the trace's `offset`
//! adds the rest); [`OwdBase::Absolute`] keeps them as measured and
//! refuses a negative one.
//!
//! Memory: 32 bytes per receiver record (they are indexed, then the
//! sender's records stream through).

use serde::Serialize;
use thiserror::Error;
use wirelab_wire::record::{Record as WireRecord, RecordKind};

use super::{Action, Record};

/// What the delays are measured from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OwdBase {
    /// The smallest one-way delay of the run becomes 0.
    #[default]
    Relative,
    /// As measured (the two clocks must agree).
    Absolute,
}

#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum MeasuredError {
    #[error(
        "flow {flow} seq {seq}: one-way delay {owd_ns} ns is negative: the sender's and the \
         receiver's clocks differ (use relative delays)"
    )]
    Negative { flow: u32, seq: u64, owd_ns: i64 },
}

#[derive(Debug, Clone, Copy)]
struct Rx {
    owd_ns: i64,
    seq: u64,
    tx_ns: u64,
    flow: u32,
    /// A copy of a sender record's probe, in the trace.
    used: bool,
    /// The sender recorded this sequence number.
    sent: bool,
}

/// The receiver's records, indexed by `(flow, seq)`.
#[derive(Debug, Default)]
pub struct RxIndex {
    rx: Vec<Rx>,
    flow: Option<u32>,
    ignored: u64,
    no_time: u64,
}

impl RxIndex {
    /// `flow`: keep only this flow's records.
    pub fn new(flow: Option<u32>) -> RxIndex {
        RxIndex {
            flow,
            ..RxIndex::default()
        }
    }

    /// Adds a receiver record (other kinds and flows are counted, not
    /// kept; a record without both times is counted as unusable).
    pub fn push(&mut self, r: &WireRecord) {
        if r.kind != RecordKind::Rx || self.flow.is_some_and(|f| f != r.flow) {
            self.ignored += 1;
            return;
        }
        if r.tx_ns == 0 || r.rx_ns == 0 {
            self.no_time += 1;
            return;
        }
        let owd = i128::from(r.rx_ns) - i128::from(r.tx_ns);
        self.rx.push(Rx {
            owd_ns: owd.clamp(i128::from(i64::MIN), i128::from(i64::MAX)) as i64,
            seq: r.seq,
            tx_ns: r.tx_ns,
            flow: r.flow,
            used: false,
            sent: false,
        });
    }

    /// Ready to join: sorted by `(flow, seq, delay)`.
    pub fn finish(mut self, base: OwdBase) -> Join {
        self.rx.sort_unstable_by_key(|r| (r.flow, r.seq, r.owd_ns));
        let sub = match base {
            OwdBase::Relative => self.rx.iter().map(|r| r.owd_ns).min().unwrap_or(0),
            OwdBase::Absolute => 0,
        };
        Join {
            summary: MeasuredSummary {
                received: self.rx.len() as u64,
                subtracted_ns: sub,
                receiver_ignored: self.ignored,
                receiver_no_time: self.no_time,
                ..MeasuredSummary::default()
            },
            rx: self.rx,
            flow: self.flow,
            base,
        }
    }
}

/// What a join found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct MeasuredSummary {
    /// Probes of the sender's records (the chosen flow).
    pub sent: u64,
    /// Receiver records of the chosen flow with both times.
    pub received: u64,
    /// Sent probes never received (drop records).
    pub lost: u64,
    /// Extra copies received (duplicate records).
    pub duplicates: u64,
    /// Received probes the sender's records lack (not in the trace).
    pub unexpected: u64,
    /// Received packets with a recorded sequence number but another send
    /// time: the sender sent them again (end markers); not in the trace.
    pub repeats: u64,
    /// Trace records written.
    pub records: u64,
    /// Subtracted from every one-way delay (relative delays), ns.
    pub subtracted_ns: i64,
    /// Sender records that are not Tx or of another flow.
    pub sender_ignored: u64,
    /// Receiver records that are not Rx or of another flow.
    pub receiver_ignored: u64,
    /// Receiver records without a send or receive time.
    pub receiver_no_time: u64,
}

/// The join: feed it the sender's records in file order.
#[derive(Debug)]
pub struct Join {
    rx: Vec<Rx>,
    flow: Option<u32>,
    base: OwdBase,
    summary: MeasuredSummary,
}

impl Join {
    /// The trace records of one sender record (none for a record that is
    /// not a Tx of the chosen flow), passed to `out` in order.
    pub fn packet<E>(
        &mut self,
        tx: &WireRecord,
        mut out: impl FnMut(Record) -> Result<(), E>,
    ) -> Result<(), JoinFail<E>> {
        if tx.kind != RecordKind::Tx || self.flow.is_some_and(|f| f != tx.flow) {
            self.summary.sender_ignored += 1;
            return Ok(());
        }
        self.summary.sent += 1;
        let key = (tx.flow, tx.seq);
        let lo = self.rx.partition_point(|r| (r.flow, r.seq) < key);
        let hi = lo + self.rx[lo..].partition_point(|r| (r.flow, r.seq) == key);
        let sent_ns = tx.tx_ns;
        let is_copy = |r: &Rx| !r.used && (sent_ns == 0 || r.tx_ns == sent_ns);
        let same = &mut self.rx[lo..hi];
        same.iter_mut().for_each(|r| r.sent = true);
        let n = same.iter().filter(|r| is_copy(r)).count();
        if n == 0 {
            self.summary.lost += 1;
            self.summary.records += 1;
            return out(Record::from(Action::Drop)).map_err(JoinFail::Out);
        }
        for (i, c) in same.iter_mut().filter(|r| is_copy(r)).enumerate() {
            c.used = true;
            let d = c.owd_ns.saturating_sub(self.summary.subtracted_ns);
            if d < 0 {
                return Err(JoinFail::Measured(MeasuredError::Negative {
                    flow: c.flow,
                    seq: c.seq,
                    owd_ns: c.owd_ns,
                }));
            }
            let delay_ns = d as u64;
            let action = if i + 1 < n {
                self.summary.duplicates += 1;
                Action::Duplicate { delay_ns }
            } else {
                Action::Delay { delay_ns }
            };
            self.summary.records += 1;
            out(Record::from(action)).map_err(JoinFail::Out)?;
        }
        Ok(())
    }

    /// The totals; call after the last sender record.
    pub fn summary(&self) -> MeasuredSummary {
        let unused =
            |sent: bool| self.rx.iter().filter(|r| !r.used && r.sent == sent).count() as u64;
        MeasuredSummary {
            unexpected: unused(false),
            repeats: unused(true),
            ..self.summary
        }
    }

    pub fn base(&self) -> OwdBase {
        self.base
    }
}

/// Why a join stopped: the data, or the output.
#[derive(Debug)]
pub enum JoinFail<E> {
    Measured(MeasuredError),
    Out(E),
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tx(flow: u32, seq: u64) -> WireRecord {
        WireRecord {
            flow,
            seq,
            tx_ns: 1_000_000 + seq * 1000,
            kind: RecordKind::Tx,
            ..WireRecord::default()
        }
    }

    fn rx(flow: u32, seq: u64, owd_us: u64) -> WireRecord {
        let t = 1_000_000 + seq * 1000;
        WireRecord {
            flow,
            seq,
            tx_ns: t,
            rx_ns: t + owd_us * 1000,
            kind: RecordKind::Rx,
            ..WireRecord::default()
        }
    }

    fn join(
        sent: &[WireRecord],
        got: &[WireRecord],
        base: OwdBase,
        flow: Option<u32>,
    ) -> (Result<Vec<Record>, MeasuredError>, MeasuredSummary) {
        let mut idx = RxIndex::new(flow);
        got.iter().for_each(|r| idx.push(r));
        let mut j = idx.finish(base);
        let mut out = Vec::new();
        for t in sent {
            match j.packet(t, |r| -> Result<(), ()> {
                out.push(r);
                Ok(())
            }) {
                Ok(()) => {}
                Err(JoinFail::Measured(e)) => return (Err(e), j.summary()),
                Err(JoinFail::Out(())) => unreachable!(),
            }
        }
        (Ok(out), j.summary())
    }

    fn d(us: u64) -> Record {
        Record::from(Action::Delay {
            delay_ns: us * 1000,
        })
    }

    fn dup(us: u64) -> Record {
        Record::from(Action::Duplicate {
            delay_ns: us * 1000,
        })
    }

    #[test]
    fn loss_duplicates_and_reordering_become_records() {
        let sent: Vec<_> = (0..5).map(|s| tx(1, s)).collect();
        // seq 1 lost; seq 3 received three times (out of order); the
        // receiver saw seq 9, which the sender never recorded.
        let got = [
            rx(1, 0, 500),
            rx(1, 2, 700),
            rx(1, 3, 900),
            rx(1, 3, 650),
            rx(1, 4, 520),
            rx(1, 3, 800),
            rx(1, 9, 100),
        ];
        let (recs, s) = join(&sent, &got, OwdBase::Relative, None);
        // Relative to the smallest, 100 µs (seq 9's).
        assert_eq!(
            recs.unwrap(),
            [
                d(400),
                Record::from(Action::Drop),
                d(600),
                dup(550),
                dup(700),
                d(800),
                d(420)
            ]
        );
        assert_eq!(
            (
                s.sent,
                s.received,
                s.lost,
                s.duplicates,
                s.unexpected,
                s.records
            ),
            (5, 7, 1, 2, 1, 7)
        );
        assert_eq!(s.subtracted_ns, 100_000);
        let (recs, _) = join(&sent, &got, OwdBase::Absolute, None);
        assert_eq!(recs.unwrap()[0], d(500));
    }

    #[test]
    fn repeated_end_markers_are_not_duplicates() {
        // seq 1 arrives, then its end-marker repeats, sent later.
        let mut again = rx(1, 1, 40);
        again.tx_ns += 5_000_000;
        again.rx_ns += 5_000_000;
        let (recs, s) = join(
            &[tx(1, 0), tx(1, 1)],
            &[rx(1, 0, 10), rx(1, 1, 30), again, again],
            OwdBase::Absolute,
            None,
        );
        assert_eq!(recs.unwrap(), [d(10), d(30)]);
        assert_eq!((s.duplicates, s.repeats, s.unexpected), (0, 2, 0));
        // Only the repeats arrived: the probe itself was lost.
        let (recs, s) = join(&[tx(1, 1)], &[again], OwdBase::Absolute, None);
        assert_eq!(recs.unwrap(), [Record::from(Action::Drop)]);
        assert_eq!((s.lost, s.repeats), (1, 1));
    }

    #[test]
    fn flows_kinds_and_negative_delays() {
        let sent = [tx(1, 0), tx(2, 0), tx(1, 1)];
        let mut echo = tx(1, 5);
        echo.kind = RecordKind::EchoReply;
        let got = [rx(2, 0, 10), rx(1, 0, 30), rx(1, 1, 20)];
        let (recs, s) = join(&sent, &got, OwdBase::Relative, Some(1));
        assert_eq!(recs.unwrap(), [d(10), d(0)]);
        assert_eq!((s.sent, s.sender_ignored, s.receiver_ignored), (2, 1, 1));
        let (_, s) = join(&[echo], &got, OwdBase::Relative, None);
        assert_eq!((s.sent, s.sender_ignored, s.unexpected), (0, 1, 3));
        // A receive time before the send time: the clocks disagree.
        let mut early = rx(1, 0, 0);
        early.rx_ns = early.tx_ns - 2000;
        let (e, _) = join(&[tx(1, 0)], &[early], OwdBase::Absolute, None);
        assert_eq!(
            e.unwrap_err().to_string(),
            "flow 1 seq 0: one-way delay -2000 ns is negative: the sender's and the receiver's \
             clocks differ (use relative delays)"
        );
        let (ok, _) = join(&[tx(1, 0)], &[early], OwdBase::Relative, None);
        assert_eq!(ok.unwrap(), [d(0)]);
        // No usable times.
        let mut blank = rx(1, 0, 5);
        blank.tx_ns = 0;
        let (recs, s) = join(&[tx(1, 0)], &[blank], OwdBase::Relative, None);
        assert_eq!(recs.unwrap(), [Record::from(Action::Drop)]);
        assert_eq!(s.receiver_no_time, 1);
    }
}

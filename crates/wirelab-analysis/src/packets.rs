//! The per-packet join of a sender's and a receiver's records: one
//! [`PacketRow`] per `(flow, seq)` the sender recorded, in send order, with
//! its first arrival, one-way delay, loss, duplicate and reordering flags
//! ([`crate::columns::PACKET_COLUMNS`]). It agrees with [`crate::analyze`]:
//! lost rows are the sequence numbers its exact loss counts, unlost
//! non-warm-up rows its `received`, duplicates and reordering as
//! [`crate::FlowStats`] counts them (end-marker repeats are not
//! duplicates; reordering is RFC 4737's next-expected test over first
//! arrivals that are not warm-up).
//!
//! Streaming with bounded memory: both inputs are read once, in file order
//! (send order and arrival order), kept in step on the sender's clock (a
//! receive record carries its probe's send time). A sent probe is written
//! once the receiver's records have reached probes sent
//! [`JoinConfig::window_ns`] after it, or when more than
//! [`JoinConfig::max_pending`] probes wait; an arrival is dropped from the
//! table once the sender's records are that far past its send time. So
//! memory is about `max_pending` probes and the arrivals of one window,
//! whatever the input's length. An arrival whose probe was already written
//! (reordered or delayed by more than the window) or that the sender never
//! recorded is counted in [`JoinStats::unmatched`], not joined.

use crate::columns::{csv_header, write_csv_line, write_json_line, Value, PACKET_COLUMNS};
use crate::error::AnalysisError;
use crate::report::diff_ns;
use std::collections::{HashMap, VecDeque};
use std::io::Write;
use std::iter::Peekable;
use wirelab_wire::{ProbeFlags, Record, RecordKind};

/// Default [`JoinConfig::window_ns`]: 2 s of delay variation.
pub const DEFAULT_WINDOW_NS: u64 = 2_000_000_000;
/// Default [`JoinConfig::max_pending`]: about 64 MiB of waiting probes.
pub const DEFAULT_MAX_PENDING: usize = 1 << 20;
/// Default cap on distinct flows (reordering state per flow).
pub const DEFAULT_MAX_FLOWS: usize = crate::join::DEFAULT_MAX_FLOWS;

/// Bounds of the join.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct JoinConfig {
    /// How far (ns of the sender's clock) arrivals may come out of send
    /// order and still be joined.
    pub window_ns: u64,
    /// Probes held waiting for arrivals before the oldest is written anyway.
    pub max_pending: usize,
    /// Distinct flows in the receiver's records.
    pub max_flows: usize,
}

impl Default for JoinConfig {
    fn default() -> Self {
        JoinConfig {
            window_ns: DEFAULT_WINDOW_NS,
            max_pending: DEFAULT_MAX_PENDING,
            max_flows: DEFAULT_MAX_FLOWS,
        }
    }
}

/// One probe sent and what became of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PacketRow {
    pub flow: u32,
    pub seq: u64,
    pub size: u32,
    pub sched_ns: u64,
    pub tx_ns: u64,
    /// First arrival; `None` when lost.
    pub rx_ns: Option<u64>,
    /// `rx_ns` − the probe's send time; `None` when lost or either time is 0.
    pub owd_ns: Option<i64>,
    pub duplicates: u32,
    pub reordered: bool,
    pub warmup: bool,
    pub tos: u8,
    /// The first arrival's record flags; `None` when lost.
    pub rx_flags: Option<u8>,
}

impl PacketRow {
    pub fn lost(&self) -> bool {
        self.rx_ns.is_none()
    }
}

/// What the join counted besides its rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct JoinStats {
    /// Rows written (distinct `(flow, seq)` sent).
    pub sent: u64,
    /// Rows with an arrival, warm-up excluded (analyze's `received`).
    pub received: u64,
    /// Rows without an arrival (analyze's exact `lost`).
    pub lost: u64,
    /// Sender records repeating a `(flow, seq)` still waiting (merged).
    pub repeated_tx: u64,
    /// Arrivals not joined: their probe was never recorded by the sender
    /// or was written before they came (outside the window).
    pub unmatched: u64,
    /// Records of a kind the side does not write (e.g. an echo reply in
    /// the sender's records), skipped.
    pub ignored: u64,
    /// Rows whose first arrival carries another send time than the
    /// sender's record (an end-marker repeat of a lost probe, or mostly:
    /// files of different runs with the same flows and sequence numbers).
    pub tx_ns_mismatch: u64,
}

/// What is known of one `(flow, seq)`: a probe waiting to be written,
/// its first arrival, or both.
#[derive(Debug, Clone, Copy, Default)]
struct Slot {
    waiting: bool,
    arrival: Option<Arrival>,
}

#[derive(Debug, Clone, Copy)]
struct Arrival {
    rx_ns: u64,
    probe_tx_ns: u64,
    duplicates: u32,
    reordered: bool,
    rx_flags: u8,
}

/// The streaming join: an iterator of [`PacketRow`] over two record
/// iterators (see the module docs). Records of other kinds are skipped and
/// counted; the inputs' own read errors are the caller's to carry (end
/// the iterator and keep the error, as `export` does).
pub struct PacketJoin<T: Iterator<Item = Record>, R: Iterator<Item = Record>> {
    tx: Peekable<T>,
    rx: Peekable<R>,
    cfg: JoinConfig,
    pending: VecDeque<Record>,
    slots: HashMap<(u32, u64), Slot>,
    next_exp: HashMap<u32, u128>,
    /// Highest probe send time read from the receiver's records.
    rx_frontier: u64,
    /// Highest send time read from the sender's records.
    tx_frontier: u64,
    /// Slots count at which stale arrivals are next swept out.
    sweep_at: usize,
    stats: JoinStats,
}

impl<T: Iterator<Item = Record>, R: Iterator<Item = Record>> PacketJoin<T, R> {
    /// Fails when the configuration bounds nothing.
    pub fn new(tx: T, rx: R, cfg: JoinConfig) -> Result<Self, AnalysisError> {
        if cfg.max_pending == 0 || cfg.max_flows == 0 {
            return Err(AnalysisError::InvalidConfig(
                "max_pending and max_flows must be at least 1",
            ));
        }
        Ok(PacketJoin {
            tx: tx.peekable(),
            rx: rx.peekable(),
            cfg,
            pending: VecDeque::new(),
            slots: HashMap::new(),
            next_exp: HashMap::new(),
            rx_frontier: 0,
            tx_frontier: 0,
            sweep_at: 1 << 16,
            stats: JoinStats::default(),
        })
    }

    pub fn stats(&self) -> JoinStats {
        self.stats
    }

    /// The next row, or an error when the receiver's records name more
    /// flows than [`JoinConfig::max_flows`]; `Ok(None)` at the end.
    pub fn next_row(&mut self) -> Result<Option<PacketRow>, AnalysisError> {
        loop {
            if let Some(front) = self.pending.front() {
                let rx_done = self.rx.peek().is_none();
                let ready = rx_done
                    || self.rx_frontier >= front.tx_ns.saturating_add(self.cfg.window_ns)
                    || self.pending.len() > self.cfg.max_pending;
                if ready {
                    return Ok(self.emit());
                }
            }
            let tx_next = self.tx.peek().map(|r| r.tx_ns);
            let rx_next = self.rx.peek().map(|r| r.tx_ns);
            match (tx_next, rx_next) {
                (Some(t), Some(r)) if t <= r => self.read_tx(),
                (Some(_), None) => self.read_tx(),
                (_, Some(_)) => self.read_rx()?,
                (None, None) => {
                    if self.pending.is_empty() {
                        let left = self.slots.values().filter(|s| s.arrival.is_some());
                        self.stats.unmatched += left.count() as u64;
                        self.slots.clear();
                        return Ok(None);
                    }
                    return Ok(self.emit());
                }
            }
        }
    }

    fn read_tx(&mut self) {
        let Some(r) = self.tx.next() else { return };
        if r.kind != RecordKind::Tx {
            self.stats.ignored += 1;
            return;
        }
        self.tx_frontier = self.tx_frontier.max(r.tx_ns);
        let slot = self.slots.entry((r.flow, r.seq)).or_default();
        if slot.waiting {
            self.stats.repeated_tx += 1;
            return;
        }
        slot.waiting = true;
        self.pending.push_back(r);
    }

    fn read_rx(&mut self) -> Result<(), AnalysisError> {
        let Some(r) = self.rx.next() else {
            return Ok(());
        };
        if r.kind != RecordKind::Rx {
            self.stats.ignored += 1;
            return Ok(());
        }
        self.rx_frontier = self.rx_frontier.max(r.tx_ns);
        let flags = ProbeFlags(r.probe_flags);
        let slot = self.slots.entry((r.flow, r.seq)).or_default();
        if let Some(a) = slot.arrival.as_mut() {
            // The end marker repeats the final probe: not a duplicate.
            if !flags.is_last() {
                a.duplicates = a.duplicates.saturating_add(1);
            }
            return Ok(());
        }
        let reordered = if flags.is_warmup() {
            false
        } else {
            let flows = self.next_exp.len();
            let next = match self.next_exp.get_mut(&r.flow) {
                Some(n) => n,
                None if flows >= self.cfg.max_flows => {
                    return Err(AnalysisError::TooManyFlows {
                        limit: self.cfg.max_flows,
                        found: flows as u64 + 1,
                    })
                }
                None => self.next_exp.entry(r.flow).or_insert(0),
            };
            let seq = u128::from(r.seq);
            if seq >= *next {
                *next = seq + 1;
                false
            } else {
                true
            }
        };
        slot.arrival = Some(Arrival {
            rx_ns: r.rx_ns,
            probe_tx_ns: r.tx_ns,
            duplicates: 0,
            reordered,
            rx_flags: r.rec_flags,
        });
        if self.slots.len() >= self.sweep_at {
            self.sweep();
        }
        Ok(())
    }

    /// Drops arrivals whose probe the sender's records are a window past
    /// and that no waiting probe claims: they can no longer be joined.
    fn sweep(&mut self) {
        let horizon = self.tx_frontier.saturating_sub(self.cfg.window_ns);
        let before = self.slots.len();
        self.slots
            .retain(|_, s| s.waiting || s.arrival.is_some_and(|a| a.probe_tx_ns >= horizon));
        self.stats.unmatched += (before - self.slots.len()) as u64;
        self.sweep_at = (self.slots.len() * 2).max(1 << 16);
    }

    fn emit(&mut self) -> Option<PacketRow> {
        let t = self.pending.pop_front()?;
        let key = (t.flow, t.seq);
        let arrival = self.slots.remove(&key).and_then(|s| s.arrival);
        let warmup = ProbeFlags(t.probe_flags).is_warmup();
        self.stats.sent += 1;
        match arrival {
            None => self.stats.lost += 1,
            Some(_) if warmup => {}
            Some(_) => self.stats.received += 1,
        }
        if arrival.is_some_and(|a| a.probe_tx_ns != t.tx_ns) {
            self.stats.tx_ns_mismatch += 1;
        }
        Some(PacketRow {
            flow: t.flow,
            seq: t.seq,
            size: t.size,
            sched_ns: t.sched_ns,
            tx_ns: t.tx_ns,
            rx_ns: arrival.map(|a| a.rx_ns),
            owd_ns: arrival
                .filter(|a| a.rx_ns != 0 && a.probe_tx_ns != 0)
                .map(|a| diff_ns(a.rx_ns, a.probe_tx_ns)),
            duplicates: arrival.map_or(0, |a| a.duplicates),
            reordered: arrival.is_some_and(|a| a.reordered),
            warmup,
            tos: t.tos,
            rx_flags: arrival.map(|a| a.rx_flags),
        })
    }
}

impl<T: Iterator<Item = Record>, R: Iterator<Item = Record>> Iterator for PacketJoin<T, R> {
    type Item = Result<PacketRow, AnalysisError>;
    fn next(&mut self) -> Option<Self::Item> {
        self.next_row().transpose()
    }
}

/// A row's values in [`PACKET_COLUMNS`] order.
fn row_values(r: &PacketRow) -> [Value; 13] {
    [
        r.flow.into(),
        r.seq.into(),
        r.size.into(),
        r.sched_ns.into(),
        r.tx_ns.into(),
        Value::or_null(r.rx_ns),
        Value::or_null(r.owd_ns),
        r.lost().into(),
        r.duplicates.into(),
        r.reordered.into(),
        r.warmup.into(),
        r.tos.into(),
        Value::or_null(r.rx_flags),
    ]
}

/// Writes a CSV header and one line per row (empty fields for nulls);
/// returns the rows written.
pub fn packets_csv<I>(rows: I, w: &mut impl Write) -> Result<u64, AnalysisError>
where
    I: IntoIterator<Item = Result<PacketRow, AnalysisError>>,
{
    writeln!(w, "{}", csv_header(&PACKET_COLUMNS))?;
    let mut n = 0u64;
    for r in rows {
        write_csv_line(w, &row_values(&r?))?;
        n += 1;
    }
    Ok(n)
}

/// Writes one JSON object per row and line (`null` for nulls); returns the
/// rows written.
pub fn packets_jsonl<I>(rows: I, w: &mut impl Write) -> Result<u64, AnalysisError>
where
    I: IntoIterator<Item = Result<PacketRow, AnalysisError>>,
{
    let mut n = 0u64;
    for r in rows {
        write_json_line(w, &PACKET_COLUMNS, &row_values(&r?))?;
        n += 1;
    }
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::join::{analyze, AnalysisConfig, RecordSets};

    const MS: u64 = 1_000_000;
    const T0: u64 = 1_700_000_000_000_000_000;

    fn tx(flow: u32, seq: u64) -> Record {
        Record {
            flow,
            size: 100,
            seq,
            // Wrapping: hostile_times_never_panic builds seq u64::MAX.
            sched_ns: seq.wrapping_mul(MS),
            tx_ns: T0.wrapping_add(seq.wrapping_mul(MS)),
            tos: 0xb8,
            kind: RecordKind::Tx,
            ..Record::default()
        }
    }

    /// The arrival of `flow`/`seq` `delay` ms after its send.
    fn rx(flow: u32, seq: u64, delay: u64) -> Record {
        Record {
            rx_ns: T0
                .wrapping_add(seq.wrapping_mul(MS))
                .wrapping_add(delay * MS),
            rec_flags: Record::RX_KERNEL_TS,
            kind: RecordKind::Rx,
            ..tx(flow, seq)
        }
    }

    fn join(t: &[Record], r: &[Record], cfg: JoinConfig) -> (Vec<PacketRow>, JoinStats) {
        let mut j = PacketJoin::new(t.iter().copied(), r.iter().copied(), cfg).unwrap();
        let rows: Vec<PacketRow> = j.by_ref().map(|x| x.unwrap()).collect();
        (rows, j.stats())
    }

    /// Sorted by arrival time, as a receiver writes them.
    fn arrival_order(mut r: Vec<Record>) -> Vec<Record> {
        r.sort_by_key(|x| x.rx_ns);
        r
    }

    #[test]
    fn loss_duplicates_and_reordering_per_packet() {
        let t: Vec<Record> = (0..10).map(|s| tx(1, s)).collect();
        // 3 and 7 lost; 5 arrives 2.5 probes late (after 6 and 7's slot);
        // 8 arrives twice; 9's end marker repeats it.
        let mut r: Vec<Record> = [0, 1, 2, 4, 6, 8, 9].iter().map(|&s| rx(1, s, 1)).collect();
        r.push(rx(1, 5, 3));
        r.push(Record {
            rx_ns: T0 + 8 * MS + 2 * MS,
            ..rx(1, 8, 1)
        });
        let mut last = rx(1, 9, 2);
        last.probe_flags = ProbeFlags::LAST;
        r.push(last);
        let r = arrival_order(r);
        let (rows, st) = join(&t, &r, JoinConfig::default());
        assert_eq!(rows.len(), 10);
        assert_eq!(
            rows.iter().map(|x| x.seq).collect::<Vec<_>>(),
            (0..10).collect::<Vec<_>>()
        );
        let lost: Vec<u64> = rows.iter().filter(|x| x.lost()).map(|x| x.seq).collect();
        assert_eq!(lost, vec![3, 7]);
        assert_eq!(rows[8].duplicates, 1);
        assert_eq!(
            rows[9].duplicates, 0,
            "end-marker repeats are not duplicates"
        );
        let reordered: Vec<u64> = rows.iter().filter(|x| x.reordered).map(|x| x.seq).collect();
        assert_eq!(reordered, vec![5]);
        assert_eq!(rows[5].owd_ns, Some(3 * MS as i64));
        assert_eq!(rows[0].owd_ns, Some(MS as i64));
        assert_eq!(rows[3].owd_ns, None);
        assert_eq!(rows[3].rx_flags, None);
        assert_eq!(rows[0].rx_flags, Some(Record::RX_KERNEL_TS));
        assert_eq!(
            st,
            JoinStats {
                sent: 10,
                received: 8,
                lost: 2,
                ..JoinStats::default()
            }
        );

        // The same counts as the whole-run analysis.
        let s = analyze(
            &RecordSets {
                tx: Some(&t),
                rx: Some(&r),
                echo: None,
            },
            &AnalysisConfig::default(),
        )
        .unwrap();
        let f = &s.flows[0];
        assert_eq!(f.lost, Some(st.lost));
        assert_eq!(f.received, Some(st.received));
        assert_eq!(f.duplicates, Some(1));
        assert_eq!(f.reordered, Some(1));
    }

    #[test]
    fn flows_interleave_and_warmup_is_joined_but_not_received() {
        let mut t = Vec::new();
        let mut r = Vec::new();
        for s in 0..50 {
            for f in [1, 2] {
                let mut x = tx(f, s);
                let mut y = rx(f, s, 5);
                if s < 3 {
                    x.probe_flags = ProbeFlags::WARMUP;
                    y.probe_flags = ProbeFlags::WARMUP;
                }
                t.push(x);
                if !(f == 2 && s % 10 == 0) {
                    r.push(y);
                }
            }
        }
        let (rows, st) = join(&t, &arrival_order(r), JoinConfig::default());
        assert_eq!(rows.len(), 100);
        assert_eq!(st.lost, 5);
        assert_eq!(st.received, 100 - 5 - 6 + 1, "warm-up 0 of flow 2 is lost");
        assert!(rows.iter().filter(|x| x.seq < 3).all(|x| x.warmup));
        assert!(rows.iter().all(|x| !x.reordered));
    }

    #[test]
    fn memory_bounds_do_not_change_a_result_inside_them() {
        let t: Vec<Record> = (0..5000).map(|s| tx(1, s)).collect();
        let r: Vec<Record> = (0..5000)
            .filter(|s| s % 7 != 0)
            .map(|s| rx(1, s, 4))
            .collect();
        let (a, sa) = join(&t, &r, JoinConfig::default());
        let small = JoinConfig {
            window_ns: 10 * MS,
            max_pending: 16,
            ..JoinConfig::default()
        };
        let (b, sb) = join(&t, &r, small);
        assert_eq!(a, b);
        assert_eq!(sa, sb);
        assert_eq!(sa.lost, 715);
    }

    #[test]
    fn arrivals_outside_the_window_and_unknown_probes_are_counted_apart() {
        let t: Vec<Record> = (0..100).map(|s| tx(1, s)).collect();
        // 10 is delayed by 50 probes' time; 500 was never recorded as sent.
        let mut r: Vec<Record> = (0..100).filter(|&s| s != 10).map(|s| rx(1, s, 1)).collect();
        r.push(rx(1, 10, 50));
        r.push(rx(1, 500, 1));
        let r = arrival_order(r);
        let inside = join(&t, &r, JoinConfig::default());
        assert_eq!((inside.1.lost, inside.1.unmatched), (0, 1));
        assert!(inside.0[10].reordered);
        let narrow = JoinConfig {
            window_ns: 5 * MS,
            max_pending: 8,
            ..JoinConfig::default()
        };
        let outside = join(&t, &r, narrow);
        assert_eq!((outside.1.lost, outside.1.unmatched), (1, 2));
        assert!(outside.0[10].lost());
    }

    #[test]
    fn arrivals_of_another_run_show_as_send_time_mismatches() {
        let t: Vec<Record> = (0..20).map(|s| tx(1, s)).collect();
        let r: Vec<Record> = (0..20)
            .map(|s| Record {
                tx_ns: T0 + s * MS + 300 * MS,
                rx_ns: T0 + s * MS + 301 * MS,
                ..rx(1, s, 0)
            })
            .collect();
        let (_, st) = join(&t, &r, JoinConfig::default());
        assert_eq!((st.received, st.tx_ns_mismatch), (20, 20));
        let (_, st) = join(
            &t,
            &(0..20).map(|s| rx(1, s, 1)).collect::<Vec<_>>(),
            JoinConfig::default(),
        );
        assert_eq!(st.tx_ns_mismatch, 0);
    }

    #[test]
    fn repeated_sender_records_and_misplaced_kinds() {
        let mut t: Vec<Record> = (0..4).map(|s| tx(1, s)).collect();
        t.insert(2, tx(1, 1));
        t.push(rx(1, 3, 1));
        let r = vec![rx(1, 0, 1), tx(1, 1)];
        let (rows, st) = join(&t, &r, JoinConfig::default());
        assert_eq!(rows.len(), 4);
        assert_eq!((st.repeated_tx, st.ignored, st.lost), (1, 2, 3));
    }

    #[test]
    fn too_many_flows_is_an_error_not_growth() {
        let r: Vec<Record> = (0..10).map(|f| rx(f, 0, 1)).collect();
        let cfg = JoinConfig {
            max_flows: 4,
            ..JoinConfig::default()
        };
        let mut j = PacketJoin::new(std::iter::empty(), r.into_iter(), cfg).unwrap();
        assert!(matches!(
            j.next_row(),
            Err(AnalysisError::TooManyFlows { limit: 4, .. })
        ));
        assert!(PacketJoin::new(
            std::iter::empty(),
            std::iter::empty(),
            JoinConfig {
                max_pending: 0,
                ..cfg
            }
        )
        .is_err());
    }

    #[test]
    fn hostile_times_never_panic() {
        let mut a = tx(u32::MAX, u64::MAX);
        a.tx_ns = u64::MAX;
        let mut b = rx(u32::MAX, u64::MAX, 0);
        b.tx_ns = u64::MAX;
        b.rx_ns = 0;
        let (rows, _) = join(&[a, tx(0, 0)], &[b, rx(0, 0, 1)], JoinConfig::default());
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[1].owd_ns, None, "rx_ns 0 is unstamped");
    }

    #[test]
    fn csv_and_jsonl_follow_the_column_list() {
        let t = [tx(1, 0), tx(1, 1)];
        let r = [rx(1, 0, 1)];
        let rows = || {
            PacketJoin::new(t.iter().copied(), r.iter().copied(), JoinConfig::default()).unwrap()
        };
        let mut csv = Vec::new();
        assert_eq!(packets_csv(rows(), &mut csv).unwrap(), 2);
        let sent = T0;
        let got = String::from_utf8(csv).unwrap();
        assert_eq!(
            got,
            format!(
                "flow,seq,size_bytes,sched_ns,tx_ns,rx_ns,owd_ns,lost,duplicates,reordered,warmup,tos,rx_flags\n\
                 1,0,100,0,{sent},{},1000000,false,0,false,false,184,1\n\
                 1,1,100,1000000,{},,,true,0,false,false,184,\n",
                sent + MS,
                sent + MS
            )
        );
        let mut js = Vec::new();
        packets_jsonl(rows(), &mut js).unwrap();
        let js = String::from_utf8(js).unwrap();
        assert_eq!(
            js.lines().nth(1).unwrap(),
            format!(
                "{{\"flow\":1,\"seq\":1,\"size_bytes\":100,\"sched_ns\":1000000,\"tx_ns\":{},\
                 \"rx_ns\":null,\"owd_ns\":null,\"lost\":true,\"duplicates\":0,\"reordered\":false,\
                 \"warmup\":false,\"tos\":184,\"rx_flags\":null}}",
                sent + MS
            )
        );
        let lines: Vec<serde_json::Value> = js
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        let keys: Vec<&str> = lines[1]
            .as_object()
            .unwrap()
            .keys()
            .map(|k| k.as_str())
            .collect();
        let mut names: Vec<&str> = PACKET_COLUMNS.iter().map(|c| c.name).collect();
        let mut sorted = keys.clone();
        sorted.sort_unstable();
        names.sort_unstable();
        assert_eq!(sorted, names);
        assert!(lines[1]["rx_ns"].is_null() && lines[1]["lost"] == true);
        assert_eq!(lines[0]["owd_ns"], 1_000_000);
    }
}

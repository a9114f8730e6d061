//! End-of-trace and bad-record policies over a packet trace.
//!
//! [`TraceCursor`] turns a [`PacketSource`] into an endless (or cleanly
//! ending) sequence of records: at the end it loops, holds the last
//! record, stops, or passes/drops every further packet ([`AtEnd`]); a bad
//! record read lazily stops the trace or becomes a pass or a drop
//! ([`OnError`]). It is an [`super::ActionSource`], so the link model can
//! consume it directly.

use std::fmt;
use std::io::{self, BufReader, Cursor, Read, Seek, SeekFrom};
use std::str::FromStr;

use super::error::{ErrorKind, Pos, TraceError};
use super::packet::PacketSource;
use super::{Action, Record};

/// An input that can start over at its first byte, which looping needs.
/// Seekable readers do by seeking to 0; a caller with a path can
/// implement it by reopening the file.
pub trait Restart {
    fn restart(&mut self) -> io::Result<()>;
}

impl<R: Read + Seek> Restart for BufReader<R> {
    fn restart(&mut self) -> io::Result<()> {
        self.seek(SeekFrom::Start(0)).map(|_| ())
    }
}

impl<T: AsRef<[u8]>> Restart for Cursor<T> {
    fn restart(&mut self) -> io::Result<()> {
        self.set_position(0);
        Ok(())
    }
}

/// What happens after the last record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AtEnd {
    /// Start over at the first record.
    Loop,
    /// Repeat the last record (a duplicate is held as a plain delay, or
    /// one packet would be copied forever).
    Hold,
    /// No more records: the caller's trace stage ends.
    Stop,
    /// Every further packet passes undelayed.
    Pass,
    /// Every further packet is dropped.
    Drop,
}

/// What a bad record read mid-run becomes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnError {
    /// The trace ends there (no more records, whatever [`AtEnd`] says).
    Stop,
    /// The packet passes undelayed.
    Pass,
    /// The packet is dropped.
    Drop,
}

const PASS: Record = Record {
    action: Action::Delay { delay_ns: 0 },
    corrupt: false,
};
const DROP: Record = Record {
    action: Action::Drop,
    corrupt: false,
};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Reading,
    /// Past the end: apply `AtEnd` (not `Loop`).
    Ended,
    /// The source cannot go on: this record for every packet.
    Fill(Record),
    Stopped,
}

/// A packet trace with its end and error policies applied.
pub struct TraceCursor<S> {
    src: S,
    at_end: AtEnd,
    on_error: OnError,
    state: State,
    last: Option<Record>,
    /// The current pass produced something / something not a duplicate.
    pass_any: bool,
    pass_nondup: bool,
    loops: u64,
    errors: u64,
    first_error: Option<TraceError>,
}

impl<S: PacketSource> TraceCursor<S> {
    pub fn new(src: S, at_end: AtEnd, on_error: OnError) -> Self {
        TraceCursor {
            src,
            at_end,
            on_error,
            state: State::Reading,
            last: None,
            pass_any: false,
            pass_nondup: false,
            loops: 0,
            errors: 0,
            first_error: None,
        }
    }

    /// Bad records and failures seen.
    pub fn errors(&self) -> u64 {
        self.errors
    }

    /// The first of them, for the report.
    pub fn first_error(&self) -> Option<&TraceError> {
        self.first_error.as_ref()
    }

    /// Times the trace started over.
    pub fn loops(&self) -> u64 {
        self.loops
    }

    pub fn into_inner(self) -> S {
        self.src
    }

    fn note(&mut self, e: TraceError) {
        self.errors += 1;
        if self.first_error.is_none() {
            self.first_error = Some(e);
        }
    }

    fn error_record(&self) -> Option<Record> {
        match self.on_error {
            OnError::Stop => None,
            OnError::Pass => Some(PASS),
            OnError::Drop => Some(DROP),
        }
    }

    fn after_end(&self) -> Option<Record> {
        match self.at_end {
            AtEnd::Hold => self.last.map(|r| match r.action {
                Action::Duplicate { delay_ns } => Record {
                    action: Action::Delay { delay_ns },
                    ..r
                },
                _ => r,
            }),
            AtEnd::Pass => Some(PASS),
            AtEnd::Drop => Some(DROP),
            AtEnd::Stop | AtEnd::Loop => None,
        }
    }

    /// The record for the next packet; `None` once the trace has ended
    /// and the policy gives no more.
    pub fn next_record(&mut self) -> Option<Record> {
        // At most one restart per call: a pass that yields nothing ends.
        for _ in 0..2 {
            match self.state {
                State::Reading => {}
                State::Ended => return self.after_end(),
                State::Fill(r) => return Some(r),
                State::Stopped => return None,
            }
            match self.src.next_record() {
                Some(Ok(r)) => {
                    self.last = Some(r);
                    self.pass_any = true;
                    if !matches!(r.action, Action::Duplicate { .. }) {
                        self.pass_nondup = true;
                    }
                    return Some(r);
                }
                Some(Err(e)) => {
                    let empty = e.kind == ErrorKind::Empty;
                    self.note(e);
                    let sub = self.error_record();
                    if empty || sub.is_none() {
                        self.state = State::Stopped;
                        return None;
                    }
                    self.pass_any = true;
                    self.pass_nondup = true;
                    return sub;
                }
                None if self.at_end == AtEnd::Loop => {
                    if !self.pass_any {
                        break;
                    }
                    if !self.pass_nondup {
                        self.note(TraceError::new(
                            Pos::Record { record: 1, byte: 0 },
                            ErrorKind::AllDuplicates,
                        ));
                        break;
                    }
                    if let Err(e) = self.src.restart() {
                        self.note(e);
                        self.state = match self.error_record() {
                            Some(r) => State::Fill(r),
                            None => State::Stopped,
                        };
                        continue;
                    }
                    self.loops += 1;
                    self.pass_any = false;
                    self.pass_nondup = false;
                }
                None => {
                    self.state = State::Ended;
                    return self.after_end();
                }
            }
        }
        self.state = State::Stopped;
        None
    }
}

impl<S: PacketSource> Iterator for TraceCursor<S> {
    type Item = Action;

    /// The next record's action (a corrupt flag needs
    /// [`TraceCursor::next_record`]).
    fn next(&mut self) -> Option<Action> {
        self.next_record().map(|r| r.action)
    }
}

impl AtEnd {
    pub fn name(self) -> &'static str {
        match self {
            AtEnd::Loop => "loop",
            AtEnd::Hold => "hold",
            AtEnd::Stop => "stop",
            AtEnd::Pass => "pass",
            AtEnd::Drop => "drop",
        }
    }
}

impl fmt::Display for AtEnd {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for AtEnd {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        [
            AtEnd::Loop,
            AtEnd::Hold,
            AtEnd::Stop,
            AtEnd::Pass,
            AtEnd::Drop,
        ]
        .into_iter()
        .find(|a| a.name() == s)
        .ok_or_else(|| {
            format!("unknown end-of-trace policy {s:?}: use loop, hold, stop, pass or drop")
        })
    }
}

impl OnError {
    pub fn name(self) -> &'static str {
        match self {
            OnError::Stop => "stop",
            OnError::Pass => "pass",
            OnError::Drop => "drop",
        }
    }
}

impl fmt::Display for OnError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for OnError {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        [OnError::Stop, OnError::Pass, OnError::Drop]
            .into_iter()
            .find(|a| a.name() == s)
            .ok_or_else(|| format!("unknown trace-error policy {s:?}: use stop, pass or drop"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{ActionSource, Format, PacketReader, TraceOptions};

    fn cursor(
        text: &str,
        at_end: AtEnd,
        on_error: OnError,
    ) -> TraceCursor<PacketReader<Cursor<Vec<u8>>>> {
        let r = PacketReader::new(
            Format::Delays,
            &TraceOptions::default(),
            Cursor::new(text.as_bytes().to_vec()),
        )
        .unwrap();
        TraceCursor::new(r, at_end, on_error)
    }

    fn d(us: u64) -> Action {
        Action::Delay {
            delay_ns: us * 1000,
        }
    }

    fn take(c: &mut impl ActionSource, n: usize) -> Vec<Option<Action>> {
        (0..n).map(|_| c.next_action()).collect()
    }

    #[test]
    fn end_policies() {
        let t = "1\n2\n";
        let mut c = cursor(t, AtEnd::Loop, OnError::Stop);
        assert_eq!(
            take(&mut c, 5),
            [Some(d(1)), Some(d(2)), Some(d(1)), Some(d(2)), Some(d(1))]
        );
        assert_eq!(c.loops(), 2);
        let mut c = cursor(t, AtEnd::Hold, OnError::Stop);
        assert_eq!(
            take(&mut c, 4),
            [Some(d(1)), Some(d(2)), Some(d(2)), Some(d(2))]
        );
        let mut c = cursor(t, AtEnd::Stop, OnError::Stop);
        assert_eq!(take(&mut c, 4), [Some(d(1)), Some(d(2)), None, None]);
        let mut c = cursor(t, AtEnd::Pass, OnError::Stop);
        assert_eq!(take(&mut c, 3), [Some(d(1)), Some(d(2)), Some(d(0))]);
        let mut c = cursor(t, AtEnd::Drop, OnError::Stop);
        assert_eq!(
            take(&mut c, 3),
            [Some(d(1)), Some(d(2)), Some(Action::Drop)]
        );
    }

    #[test]
    fn error_policies() {
        let t = "1\nbad\n3\n";
        let mut c = cursor(t, AtEnd::Stop, OnError::Pass);
        assert_eq!(take(&mut c, 4), [Some(d(1)), Some(d(0)), Some(d(3)), None]);
        assert_eq!(c.errors(), 1);
        assert_eq!(
            c.first_error().unwrap().to_string(),
            "2:1: delay: expected a number such as 1500 or 1.5ms, found \"bad\""
        );
        let mut c = cursor(t, AtEnd::Stop, OnError::Drop);
        assert_eq!(
            take(&mut c, 3),
            [Some(d(1)), Some(Action::Drop), Some(d(3))]
        );
        let mut c = cursor(t, AtEnd::Loop, OnError::Stop);
        assert_eq!(take(&mut c, 3), [Some(d(1)), None, None]);
    }

    #[test]
    fn hold_turns_a_final_duplicate_into_a_delay() {
        let r = PacketReader::new(
            Format::PktCsv,
            &TraceOptions::default(),
            Cursor::new(b"pass,1\ndup,5\n".to_vec()),
        )
        .unwrap();
        let mut c = TraceCursor::new(r, AtEnd::Hold, OnError::Stop);
        assert_eq!(
            take(&mut c, 4),
            [
                Some(d(1)),
                Some(Action::Duplicate { delay_ns: 5000 }),
                Some(d(5)),
                Some(d(5))
            ]
        );
    }

    #[test]
    fn looping_an_all_duplicate_trace_stops() {
        let r = PacketReader::new(
            Format::PktCsv,
            &TraceOptions::default(),
            Cursor::new(b"dup,1\ndup,2\n".to_vec()),
        )
        .unwrap();
        let mut c = TraceCursor::new(r, AtEnd::Loop, OnError::Pass);
        assert_eq!(c.by_ref().take(10).count(), 2);
        assert_eq!(c.first_error().unwrap().kind, ErrorKind::AllDuplicates);
    }

    #[test]
    fn empty_trace_ends_whatever_the_policy() {
        let mut c = cursor("# none\n", AtEnd::Loop, OnError::Pass);
        assert_eq!(take(&mut c, 2), [None, None]);
        assert_eq!(c.first_error().unwrap().kind, ErrorKind::Empty);
    }

    #[test]
    fn example_records_drive_four_packets() {
        // docs/trace.md's example S1: [D1000, DROP, DUP2000, D3000, DUP500,
        // DUP600, D700] over four packets; each copy consumes the next record.
        let r = PacketReader::new(
            Format::NistTxt,
            &TraceOptions::default(),
            Cursor::new(
                b"1000\n1073741824\n-2147481648\n3000\n-2147483148\n-2147483048\n700\n".to_vec(),
            ),
        )
        .unwrap();
        let mut c = TraceCursor::new(r, AtEnd::Stop, OnError::Stop);
        let mut out: Vec<Vec<u64>> = Vec::new();
        for _ in 0..4 {
            let mut deliveries = Vec::new();
            // One packet plus its copies; bounded by the trace length.
            for _ in 0..8 {
                match c.next_action() {
                    Some(Action::Delay { delay_ns }) => {
                        deliveries.push(delay_ns / 1000);
                        break;
                    }
                    Some(Action::Duplicate { delay_ns }) => deliveries.push(delay_ns / 1000),
                    Some(Action::Drop) | None => break,
                }
            }
            out.push(deliveries);
        }
        assert_eq!(
            out,
            vec![vec![1000], vec![], vec![2000, 3000], vec![500, 600, 700]]
        );
    }

    #[test]
    fn restart_on_a_seekable_file_reader() {
        let mut r = BufReader::new(Cursor::new(b"abc".to_vec()));
        let mut s = String::new();
        r.read_to_string(&mut s).unwrap();
        Restart::restart(&mut r).unwrap();
        s.clear();
        r.read_to_string(&mut s).unwrap();
        assert_eq!(s, "abc");
        assert_eq!("hold".parse::<AtEnd>(), Ok(AtEnd::Hold));
        assert!("again".parse::<AtEnd>().is_err());
        assert_eq!("drop".parse::<OnError>(), Ok(OnError::Drop));
    }
}

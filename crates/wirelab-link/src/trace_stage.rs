//! The trace stage's cursor: one record per packet copy, scaled and
//! offset, with the end-of-trace policy.

use wirelab_trace::{Action, ActionSource, AtEnd};

use super::spec::TraceSpec;

/// What the trace says about one copy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Step {
    /// Forward after this delay; `dup`: the next copy follows.
    Forward { delay_ns: u64, dup: bool },
    /// A `DROP` record.
    Drop,
    /// Past the end under `drop` or `stop`.
    End { stop: bool },
}

pub(crate) struct TraceCursor {
    source: Box<dyn ActionSource + Send>,
    scale: f64,
    offset_ns: i64,
    at_end: AtEnd,
    last: Option<Action>,
    ended: bool,
}

impl TraceCursor {
    pub(crate) fn new(spec: &TraceSpec, source: Box<dyn ActionSource + Send>) -> TraceCursor {
        TraceCursor {
            source,
            scale: spec.scale,
            offset_ns: spec.offset_ns,
            at_end: spec.at_end,
            last: None,
            ended: false,
        }
    }

    /// A new source, read from its first record (runtime trace swaps).
    pub(crate) fn replace(&mut self, source: Box<dyn ActionSource + Send>) {
        self.source = source;
        self.last = None;
        self.ended = false;
    }

    fn scaled(&self, delay_ns: u64) -> u64 {
        let v = (delay_ns as f64 * self.scale).round() + self.offset_ns as f64;
        if v <= 0.0 {
            0
        } else {
            // Saturates at u64::MAX; the link's horizon refuses such delays.
            v as u64
        }
    }

    fn step_of(&self, a: Action, hold: bool) -> Step {
        match a {
            Action::Delay { delay_ns } => Step::Forward {
                delay_ns: self.scaled(delay_ns),
                dup: false,
            },
            // A held duplicate acts as a delay: repeating it would
            // multiply every later packet without end.
            Action::Duplicate { delay_ns } => Step::Forward {
                delay_ns: self.scaled(delay_ns),
                dup: !hold,
            },
            Action::Drop => Step::Drop,
        }
    }

    pub(crate) fn next(&mut self) -> Step {
        if !self.ended {
            let mut a = self.source.next_action();
            if a.is_none() && self.at_end == AtEnd::Loop {
                // A looping source starts over after its end; a second
                // `None` means it cannot (or the trace is empty).
                a = self.source.next_action();
            }
            match a {
                Some(a) => {
                    self.last = Some(a);
                    return self.step_of(a, false);
                }
                None => self.ended = true,
            }
        }
        match self.at_end {
            AtEnd::Hold => match self.last {
                Some(a) => self.step_of(a, true),
                None => Step::Forward {
                    delay_ns: 0,
                    dup: false,
                },
            },
            AtEnd::Pass => Step::Forward {
                delay_ns: 0,
                dup: false,
            },
            AtEnd::Drop => Step::End { stop: false },
            AtEnd::Stop | AtEnd::Loop => Step::End { stop: true },
        }
    }
}

/// Makes a trace loop: when the current source ends, `reopen` makes a
/// new one (the caller's closure re-reads the file or rewinds a buffer).
/// Use it as the source of a trace stage with `at-end loop`.
pub struct Looping<F, S> {
    reopen: F,
    current: S,
}

impl<F: FnMut() -> S, S: ActionSource> Looping<F, S> {
    /// Starts with a fresh source from `reopen`.
    pub fn new(mut reopen: F) -> Looping<F, S> {
        let current = reopen();
        Looping { reopen, current }
    }
}

/// An iterator of actions, so an [`ActionSource`] by the blanket impl.
impl<F: FnMut() -> S, S: ActionSource> Iterator for Looping<F, S> {
    type Item = Action;

    fn next(&mut self) -> Option<Action> {
        if let Some(a) = self.current.next_action() {
            return Some(a);
        }
        self.current = (self.reopen)();
        self.current.next_action()
    }
}

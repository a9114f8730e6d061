//! [`Staged`]: per-flow state that grows with the flow's packets.
//!
//! A full accumulator ([`crate::FlowStats`], [`crate::SenderStats`],
//! [`crate::RttStats`]) holds HDR histograms sized up front so that
//! recording on a packet path never reallocates: about 0.3 MiB each, 0.9
//! to 1.4 MiB per accumulator. Allocated for every flow id seen, a few hostile
//! records or spoofed probes per flow would cost gigabytes. A `Staged`
//! accumulator instead keeps a flow's first [`STAGE_RECORDS`] records as
//! they are (64 bytes each) and builds the full accumulator only when the
//! next one arrives, feeding it the kept records in order; a report on a
//! flow still staged is taken from a temporary accumulator fed the same
//! way. Both paths see the same records in the same order, so the figures
//! are the same as those of an accumulator built at the first record.
//!
//! Memory per staged accumulator: at most `STAGE_RECORDS` × 64 bytes, then
//! the full accumulator's fixed size (the pending records are freed).

use wirelab_wire::Record;

/// Records kept as they are before the full accumulator is built (64 KiB).
pub const STAGE_RECORDS: usize = 1024;

/// An accumulator fed one record at a time.
pub trait Accumulate {
    fn feed(&mut self, r: &Record);
}

/// A flow's accumulator, built once the flow has more than
/// [`STAGE_RECORDS`] records; see the module docs.
#[derive(Debug, Clone)]
pub struct Staged<A> {
    pending: Vec<Record>,
    full: Option<Box<A>>,
}

impl<A> Default for Staged<A> {
    fn default() -> Self {
        Staged {
            pending: Vec::new(),
            full: None,
        }
    }
}

impl<A: Accumulate> Staged<A> {
    pub fn new() -> Self {
        Self::default()
    }

    /// Feeds `r`; `make` builds the full accumulator when it is needed.
    pub fn observe(&mut self, r: &Record, make: impl FnOnce() -> A) {
        if let Some(a) = self.full.as_mut() {
            a.feed(r);
            return;
        }
        if self.pending.len() < STAGE_RECORDS {
            self.pending.push(*r);
            return;
        }
        self.build(make);
        if let Some(a) = self.full.as_mut() {
            a.feed(r);
        }
    }

    /// Builds the full accumulator now, fed the pending records (nothing
    /// changes when it is built already).
    pub fn build(&mut self, make: impl FnOnce() -> A) {
        if self.full.is_none() {
            let mut a = Box::new(make());
            for p in &self.pending {
                a.feed(p);
            }
            self.full = Some(a);
            self.pending = Vec::new();
        }
    }

    /// Whether the full accumulator has been built.
    pub fn is_built(&self) -> bool {
        self.full.is_some()
    }

    /// Records fed so far while staged (0 once built).
    pub fn pending(&self) -> usize {
        self.pending.len()
    }

    /// Calls `f` with the accumulator as of now: the full one, or a
    /// temporary one built by `make` and fed the pending records.
    pub fn with<T>(&self, make: impl FnOnce() -> A, f: impl FnOnce(&A) -> T) -> T {
        match &self.full {
            Some(a) => f(a),
            None => {
                let mut a = make();
                for p in &self.pending {
                    a.feed(p);
                }
                f(&a)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Default)]
    struct Seqs(Vec<u64>);
    impl Accumulate for Seqs {
        fn feed(&mut self, r: &Record) {
            self.0.push(r.seq);
        }
    }

    fn rec(seq: u64) -> Record {
        Record {
            seq,
            ..Record::default()
        }
    }

    #[test]
    fn builds_after_the_stage_and_keeps_the_order() {
        let mut s: Staged<Seqs> = Staged::new();
        let mut built = 0;
        for i in 0..STAGE_RECORDS as u64 {
            s.observe(&rec(i), || {
                built += 1;
                Seqs::default()
            });
        }
        assert_eq!(
            (built, s.is_built(), s.pending()),
            (0, false, STAGE_RECORDS)
        );
        let want: Vec<u64> = (0..STAGE_RECORDS as u64).collect();
        assert_eq!(s.with(Seqs::default, |a| a.0.clone()), want);
        for i in STAGE_RECORDS as u64..STAGE_RECORDS as u64 + 3 {
            s.observe(&rec(i), || {
                built += 1;
                Seqs::default()
            });
        }
        assert_eq!((built, s.is_built(), s.pending()), (1, true, 0));
        let want: Vec<u64> = (0..STAGE_RECORDS as u64 + 3).collect();
        assert_eq!(s.with(|| unreachable!(), |a| a.0.clone()), want);
    }
}

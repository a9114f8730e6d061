//! On/off periods of a link (mm-onoff, mm-intermittent): cycle `k` is an
//! on period then an off period, from the link's first arrival on.
//!
//! `periodic ON OFF`: fixed lengths. `exp ON OFF`: exponential lengths
//! with these means, drawn from a stream keyed by `k` (rounded to a ns,
//! at least 1 ns), so the periods are a fixed function of the seed,
//! whoever asks when.

use super::rng::{Domain, Stream};
use super::spec::{OnOffKind, OnOffSpec};

/// One cycle: on in `[on, off)`, off in `[off, next)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Cycle {
    pub(crate) on: u64,
    pub(crate) off: u64,
    pub(crate) next: u64,
}

#[derive(Debug, Clone)]
pub(crate) struct OnOff {
    spec: OnOffSpec,
    key: u64,
    k: u64,
    cur: Cycle,
}

impl OnOff {
    pub(crate) fn new(spec: &OnOffSpec, key: u64) -> OnOff {
        let mut o = OnOff {
            spec: *spec,
            key,
            k: 0,
            cur: Cycle {
                on: 0,
                off: 0,
                next: 0,
            },
        };
        o.cur = o.cycle_at(0, 0);
        o
    }

    fn cycle_at(&self, k: u64, on: u64) -> Cycle {
        let (on_len, off_len) = match self.spec.kind {
            OnOffKind::Periodic => (self.spec.on_ns, self.spec.off_ns),
            OnOffKind::Exp => {
                let mut s = Stream::new(self.key, Domain::OnOff, k);
                let mut draw = |mean: u64| {
                    let x = -(mean as f64) * (1.0 - s.unit()).ln();
                    (x.round() as u64).max(1)
                };
                let a = draw(self.spec.on_ns);
                (a, draw(self.spec.off_ns))
            }
        };
        let off = on.saturating_add(on_len);
        Cycle {
            on,
            off,
            next: off.saturating_add(off_len),
        }
    }

    /// The first cycle starts at `t0`.
    pub(crate) fn start(&mut self, t0: u64) {
        self.k = 0;
        self.cur = self.cycle_at(0, t0);
    }

    /// The cycle holding `t` becomes the current one (`t` not before it).
    pub(crate) fn advance(&mut self, t: u64) {
        // At most (t - now) / (shortest mean) turns on average: bounded by
        // the time asked about.
        while self.cur.next <= t && self.cur.next < u64::MAX {
            self.k += 1;
            self.cur = self.cycle_at(self.k, self.cur.next);
        }
    }

    /// The current cycle.
    pub(crate) fn current(&self) -> Cycle {
        self.cur
    }

    /// Whether the link is on at `t` (in the current cycle).
    pub(crate) fn is_on(&self, t: u64) -> bool {
        t < self.cur.off
    }

    /// The first time at or after `t` (in the current cycle) the link is on.
    pub(crate) fn on_from(&self, t: u64) -> u64 {
        if t < self.cur.off {
            t.max(self.cur.on)
        } else {
            self.cur.next
        }
    }

    /// The cycles after the current one, for looking ahead.
    pub(crate) fn following(&self) -> impl Iterator<Item = Cycle> + '_ {
        let mut k = self.k;
        let mut c = self.cur;
        std::iter::from_fn(move || {
            k += 1;
            c = self.cycle_at(k, c.next);
            Some(c)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    fn spec(kind: OnOffKind) -> OnOffSpec {
        OnOffSpec {
            kind,
            on_ns: 100 * MS,
            off_ns: 50 * MS,
            drop: false,
        }
    }

    #[test]
    fn periodic_cycles_from_the_start() {
        let mut o = OnOff::new(&spec(OnOffKind::Periodic), 1);
        o.start(10);
        assert!(o.is_on(10));
        assert_eq!(o.on_from(10 + 120 * MS), 10 + 150 * MS);
        o.advance(10 + 400 * MS);
        assert_eq!(
            o.current(),
            Cycle {
                on: 10 + 300 * MS,
                off: 10 + 400 * MS,
                next: 10 + 450 * MS
            }
        );
        assert!(!o.is_on(10 + 400 * MS));
        assert_eq!(o.following().next().unwrap().on, 10 + 450 * MS);
    }

    #[test]
    fn exponential_cycles_have_the_means_and_do_not_depend_on_queries() {
        let mut a = OnOff::new(&spec(OnOffKind::Exp), 7);
        a.start(0);
        let cycles: Vec<Cycle> = std::iter::once(a.current())
            .chain(a.following().take(19_999))
            .collect();
        let n = cycles.len() as f64;
        let on = cycles.iter().map(|c| (c.off - c.on) as f64).sum::<f64>() / n;
        let off = cycles.iter().map(|c| (c.next - c.off) as f64).sum::<f64>() / n;
        // 4 sigma of a mean of 20000 exponentials: 4 * mean / sqrt(20000).
        assert!((on - 100e6).abs() < 4.0 * 100e6 / n.sqrt(), "{on}");
        assert!((off - 50e6).abs() < 4.0 * 50e6 / n.sqrt(), "{off}");
        let mut b = OnOff::new(&spec(OnOffKind::Exp), 7);
        b.start(0);
        b.advance(cycles[500].on + 1);
        assert_eq!(b.current(), cycles[500]);
    }
}

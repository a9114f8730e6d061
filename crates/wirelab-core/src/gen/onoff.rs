//! The `onoff:ON/OFF/INNER` burst process (semantics in the module doc of
//! [`super`]).

use rand_chacha::ChaCha8Rng;

use super::generator::Node;
use super::Bounds;

/// Most on periods one interval may span before the rest is dropped.
const MAX_CROSSINGS: u32 = 1024;

#[derive(Debug, Clone)]
pub(crate) struct OnOff {
    pub(crate) on: Node,
    pub(crate) off: Node,
    pub(crate) inner: Node,
    /// On time left in the current on period (ns).
    left: f64,
    started: bool,
}

impl OnOff {
    pub(crate) fn new(on: Node, off: Node, inner: Node) -> OnOff {
        OnOff {
            on,
            off,
            inner,
            left: 0.0,
            started: false,
        }
    }

    pub(crate) fn draw(
        &mut self,
        rng: &mut ChaCha8Rng,
        bounds: &Bounds,
        clamped: &mut u64,
    ) -> Option<f64> {
        let nn = Bounds::NON_NEGATIVE;
        if !self.started {
            self.left = self.on.draw(rng, &nn, clamped)?;
            self.started = true;
        }
        let v = self.inner.draw(rng, bounds, clamped)?;
        if v < self.left {
            self.left -= v;
            return Some(v);
        }
        // The on period ends inside this interval: add the off period and
        // take the rest of the interval from the following on period(s).
        let mut rest = v - self.left;
        let mut out = v;
        for _ in 0..MAX_CROSSINGS {
            out += self.off.draw(rng, &nn, clamped)?;
            let on = self.on.draw(rng, &nn, clamped)?;
            if rest < on {
                self.left = on - rest;
                return Some(out);
            }
            rest -= on;
        }
        self.left = 0.0;
        Some(out)
    }
}

/// Long-run mean interval of `onoff` from the means of its parts.
pub(crate) fn long_run_mean(on: f64, off: f64, inner: f64) -> Option<f64> {
    (on > 0.0).then(|| inner * (on + off) / on)
}

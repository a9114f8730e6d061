//! Clock offset between hosts from NTP-style probes (spec run.md "Clock
//! offset between hosts").
//!
//! A probe is four realtime stamps: T1 the controller sends, T2 the agent
//! receives, T3 the agent replies, T4 the controller receives. Its offset
//! θ = ((T2−T1)+(T3−T4))/2 (the agent's clock minus the controller's) and
//! round-trip delay δ = (T4−T1)−(T3−T2). Whatever the asymmetry of the two
//! directions, the true offset lies within θ ± δ/2: the estimate keeps the
//! probe with the smallest δ and states U = δmin/2 + the stamps'
//! resolution. Two estimates (before and after a point) give the drift and
//! θ(t) by linear interpolation; a flow from host A to host B is corrected
//! by θ_AB = θ_B − θ_A with U_AB = U_A + U_B.

use serde::{Deserialize, Serialize};
use thiserror::Error;

#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ClockError {
    #[error("no clock probes")]
    NoProbes,
    #[error("clock probe {index}: it came back before it left (T4 {t4} < T1 {t1})")]
    Backwards { index: usize, t1: u64, t4: u64 },
    #[error("clock probe {index}: the agent replied before it received (T3 {t3} < T2 {t2})")]
    AgentBackwards { index: usize, t2: u64, t3: u64 },
    #[error(
        "clock estimates out of order: the second ({after} ns) is not after the first ({before} ns)"
    )]
    Order { before: u64, after: u64 },
    #[error("{0:?} is not a clock offset: use a duration such as \"3ms\" or \"-250us\"")]
    BadOffset(String),
}

/// One NTP-style exchange, realtime ns on each side's clock.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Probe {
    /// Controller sends.
    pub t1: u64,
    /// Agent receives.
    pub t2: u64,
    /// Agent replies.
    pub t3: u64,
    /// Controller receives.
    pub t4: u64,
}

impl Probe {
    /// θ = ((T2−T1)+(T3−T4))/2: the agent's clock minus the controller's.
    pub fn offset_ns(&self) -> i64 {
        let s = (i128::from(self.t2) - i128::from(self.t1))
            + (i128::from(self.t3) - i128::from(self.t4));
        (s / 2).clamp(i64::MIN.into(), i64::MAX.into()) as i64
    }

    /// δ = (T4−T1)−(T3−T2), checked: a probe whose stamps go backwards is
    /// an error (`index` names it).
    pub fn delay_ns(&self, index: usize) -> Result<u64, ClockError> {
        if self.t4 < self.t1 {
            return Err(ClockError::Backwards {
                index,
                t1: self.t1,
                t4: self.t4,
            });
        }
        if self.t3 < self.t2 {
            return Err(ClockError::AgentBackwards {
                index,
                t2: self.t2,
                t3: self.t3,
            });
        }
        // The agent's hold time can exceed the round trip only when the
        // stamps lie; δ is then 0 (the probe bounds θ exactly), never negative.
        Ok((self.t4 - self.t1).saturating_sub(self.t3 - self.t2))
    }

    /// The controller's time of the exchange: the midpoint of T1 and T4.
    pub fn at_ns(&self) -> u64 {
        self.t1 + (self.t4 - self.t1) / 2
    }
}

/// One host's offset from probes taken together.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Estimate {
    /// The controller's time of the chosen probe (unix ns).
    pub at_unix_ns: u64,
    /// θ: the host's clock minus the controller's.
    pub offset_ns: i64,
    /// δmin: the chosen probe's round-trip delay.
    pub delay_ns: u64,
    /// U = δmin/2 + resolution.
    pub uncertainty_ns: u64,
    /// Probes taken.
    pub probes: usize,
}

/// The estimate from `probes`: the smallest-δ probe (the first of equals),
/// with U = δ/2 + `resolution_ns`. Every probe is checked.
pub fn estimate(probes: &[Probe], resolution_ns: u64) -> Result<Estimate, ClockError> {
    let mut best: Option<(u64, &Probe)> = None;
    for (i, p) in probes.iter().enumerate() {
        let d = p.delay_ns(i)?;
        if best.is_none_or(|(bd, _)| d < bd) {
            best = Some((d, p));
        }
    }
    let (d, p) = best.ok_or(ClockError::NoProbes)?;
    Ok(Estimate {
        at_unix_ns: p.at_ns(),
        offset_ns: p.offset_ns(),
        delay_ns: d,
        uncertainty_ns: d.div_ceil(2) + resolution_ns,
        probes: probes.len(),
    })
}

/// A linear clock offset over an interval: θ(t) = offset + drift·(t − at).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Linear {
    /// The reference time (unix ns, controller's clock).
    pub at_unix_ns: u64,
    /// θ at `at_unix_ns`.
    pub offset_ns: i64,
    /// dθ/dt in parts per billion (ns per s).
    pub drift_ppb: i64,
    /// U over the interval: the larger of the two estimates' (nothing is
    /// added for the interpolation itself).
    pub uncertainty_ns: u64,
}

impl Linear {
    /// From one estimate: no drift known.
    pub fn constant(e: &Estimate) -> Linear {
        Linear {
            at_unix_ns: e.at_unix_ns,
            offset_ns: e.offset_ns,
            drift_ppb: 0,
            uncertainty_ns: e.uncertainty_ns,
        }
    }

    /// From estimates before and after an interval: drift = Δθ/Δt.
    pub fn between(before: &Estimate, after: &Estimate) -> Result<Linear, ClockError> {
        if after.at_unix_ns <= before.at_unix_ns {
            return Err(ClockError::Order {
                before: before.at_unix_ns,
                after: after.at_unix_ns,
            });
        }
        let dt = i128::from(after.at_unix_ns - before.at_unix_ns);
        let dth = i128::from(after.offset_ns) - i128::from(before.offset_ns);
        let drift = (dth * 1_000_000_000 / dt).clamp(i64::MIN.into(), i64::MAX.into()) as i64;
        Ok(Linear {
            at_unix_ns: before.at_unix_ns,
            offset_ns: before.offset_ns,
            drift_ppb: drift,
            uncertainty_ns: before.uncertainty_ns.max(after.uncertainty_ns),
        })
    }

    /// θ(t).
    pub fn offset_at(&self, t_unix_ns: u64) -> i64 {
        let dt = i128::from(t_unix_ns) - i128::from(self.at_unix_ns);
        let d = i128::from(self.drift_ppb) * dt / 1_000_000_000;
        (i128::from(self.offset_ns) + d).clamp(i64::MIN.into(), i64::MAX.into()) as i64
    }

    /// The same line referred to another time (θ and U unchanged in meaning).
    pub fn at(&self, t_unix_ns: u64) -> Linear {
        Linear {
            at_unix_ns: t_unix_ns,
            offset_ns: self.offset_at(t_unix_ns),
            ..*self
        }
    }

    /// The offset of host B's clock from host A's for a flow A → B, given
    /// each one's offset from the controller: θ_AB = θ_B − θ_A, U_AB =
    /// U_A + U_B (both lines referred to `a`'s reference time).
    pub fn pair(a: &Linear, b: &Linear) -> Linear {
        let b = b.at(a.at_unix_ns);
        Linear {
            at_unix_ns: a.at_unix_ns,
            offset_ns: b.offset_ns.saturating_sub(a.offset_ns),
            drift_ppb: b.drift_ppb.saturating_sub(a.drift_ppb),
            uncertainty_ns: a.uncertainty_ns.saturating_add(b.uncertainty_ns),
        }
    }
}

/// `[-]DURATION` ("3ms", "-250us") in ns: the test hook's offset.
pub fn parse_offset_ns(s: &str) -> Result<i64, ClockError> {
    let t = s.trim();
    let (neg, d) = match t.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, t.strip_prefix('+').unwrap_or(t)),
    };
    let ns = crate::units::parse_duration_ns(d)
        .ok()
        .and_then(|n| i64::try_from(n).ok())
        .ok_or_else(|| ClockError::BadOffset(s.into()))?;
    Ok(if neg { -ns } else { ns })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A probe over a path of `up` ns out and `down` ns back, to an agent
    /// whose clock is `theta` ahead, holding it `hold` ns.
    fn probe(t1: u64, theta: i64, up: u64, hold: u64, down: u64) -> Probe {
        let t2 = ((t1 + up) as i64 + theta) as u64;
        Probe {
            t1,
            t2,
            t3: t2 + hold,
            t4: t1 + up + hold + down,
        }
    }

    #[test]
    fn symmetric_path_gives_the_offset_exactly() {
        let p = probe(1_000_000, 3_000_000, 20_000, 500, 20_000);
        assert_eq!(p.offset_ns(), 3_000_000);
        assert_eq!(p.delay_ns(0).unwrap(), 40_000);
    }

    #[test]
    fn the_true_offset_is_within_half_the_delay_whatever_the_asymmetry() {
        for theta in [-5_000_000i64, -1, 0, 7, 3_000_000] {
            for (up, down) in [(1, 90_000), (90_000, 1), (30_000, 45_000), (0, 0)] {
                let p = probe(1_700_000_000_000_000_000, theta, up, 1_234, down);
                let d = p.delay_ns(0).unwrap() as i64;
                let err = (p.offset_ns() - theta).abs();
                // Halving an odd sum rounds toward zero: 1 ns of slack.
                assert!(
                    err <= d / 2 + 1,
                    "θ {theta} up {up} down {down}: err {err} δ {d}"
                );
            }
        }
    }

    #[test]
    fn the_smallest_delay_probe_is_kept() {
        let ps = [
            probe(1_000, 3_000, 50_000, 100, 10_000),
            probe(200_000, 3_000, 4_000, 100, 6_000),
            probe(400_000, 3_000, 70_000, 100, 70_000),
            probe(600_000, 3_000, 5_000, 100, 5_000),
        ];
        let e = estimate(&ps, 1).unwrap();
        assert_eq!(e.delay_ns, 10_000);
        assert_eq!(e.uncertainty_ns, 5_001);
        // The first of the two 10 µs probes.
        assert_eq!(e.at_unix_ns, ps[1].at_ns());
        assert_eq!(e.offset_ns, 3_000 - 1_000);
        assert_eq!(e.probes, 4);
        assert!((e.offset_ns - 3_000).unsigned_abs() <= e.uncertainty_ns);
    }

    #[test]
    fn drift_is_recovered_and_interpolated() {
        // 20 ppm: the host's clock gains 20 µs per second.
        let t0 = 1_700_000_000_000_000_000u64;
        let th = |t: u64| 3_000_000 + ((t - t0) as i64) / 50_000;
        let b = estimate(&[probe(t0, th(t0), 10_000, 0, 10_000)], 0).unwrap();
        let t1 = t0 + 10_000_000_000;
        let a = estimate(&[probe(t1, th(t1), 10_000, 0, 10_000)], 0).unwrap();
        let l = Linear::between(&b, &a).unwrap();
        assert_eq!(l.drift_ppb, 20_000);
        assert_eq!(l.uncertainty_ns, 10_000);
        let mid = t0 + 5_000_000_000;
        assert!((l.offset_at(mid) - th(mid)).abs() <= 1);
        // Extrapolation follows the same line.
        assert!((l.offset_at(t0 + 20_000_000_000) - th(t0 + 20_000_000_000)).abs() <= 1);
        assert_eq!(l.at(mid).offset_ns, l.offset_at(mid));
        assert!(matches!(
            Linear::between(&a, &b),
            Err(ClockError::Order { .. })
        ));
    }

    #[test]
    fn a_pair_is_the_difference_with_summed_uncertainty() {
        let a = Linear {
            at_unix_ns: 1_000_000_000,
            offset_ns: 1_000,
            drift_ppb: 100,
            uncertainty_ns: 30,
        };
        let b = Linear {
            at_unix_ns: 2_000_000_000,
            offset_ns: 3_001_000,
            drift_ppb: -50,
            uncertainty_ns: 20,
        };
        let p = Linear::pair(&a, &b);
        // b at a's reference: 3_001_000 + 50 (one second earlier at −50 ppb).
        assert_eq!(p.offset_ns, 3_000_050);
        assert_eq!(p.drift_ppb, -150);
        assert_eq!(p.uncertainty_ns, 50);
        assert_eq!(p.at_unix_ns, 1_000_000_000);
        let t = 11_000_000_000;
        assert_eq!(p.offset_at(t), b.offset_at(t) - a.offset_at(t));
    }

    #[test]
    fn degenerate_inputs_are_errors() {
        assert_eq!(estimate(&[], 1), Err(ClockError::NoProbes));
        let good = probe(1_000, 0, 10, 0, 10);
        let back = Probe {
            t1: 5_000,
            t2: 5_000,
            t3: 5_000,
            t4: 4_000,
        };
        let e = estimate(&[good, back], 1).unwrap_err();
        assert!(matches!(e, ClockError::Backwards { index: 1, .. }), "{e}");
        let agent_back = Probe {
            t1: 1,
            t2: 9,
            t3: 8,
            t4: 20,
        };
        assert!(matches!(
            estimate(&[agent_back], 1),
            Err(ClockError::AgentBackwards { index: 0, .. })
        ));
        // A hold longer than the round trip (lying stamps): δ is 0, no panic.
        let odd = Probe {
            t1: 100,
            t2: 0,
            t3: 1_000,
            t4: 200,
        };
        assert_eq!(odd.delay_ns(0), Ok(0));
        // Extreme stamps do not overflow.
        let far = Probe {
            t1: 0,
            t2: u64::MAX,
            t3: u64::MAX,
            t4: 0,
        };
        assert_eq!(far.offset_ns(), i64::MAX);
    }

    #[test]
    fn offsets_parse_signed() {
        assert_eq!(parse_offset_ns("3ms"), Ok(3_000_000));
        assert_eq!(parse_offset_ns("-250us"), Ok(-250_000));
        assert_eq!(parse_offset_ns("+1s"), Ok(1_000_000_000));
        assert!(parse_offset_ns("x").is_err());
        assert!(parse_offset_ns("--3ms").is_err());
    }
}

//! Clock offsets of a point's hosts (spec run.md "Clock offset between
//! hosts"): NTP-style probes from the controller to each agent before the
//! receivers start and after the flows stop, the estimate of
//! [`wirelab_core::clocksync`], and per flow the offset of its receiver's
//! clock from its sender's, θ_AB(t) ± U. The senders' common start T0 is
//! given to each agent on its own clock (T0 + θ_host). Stored as
//! `points/<id>/clock/<a>-<b>.json` and the flow's `clock` in `point.json`,
//! from which the summary corrects the flow's one-way delays.

use crate::campaign::RunError;
use crate::control::HostSpec;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;
use wirelab_agent::proto::AgentTime;
use wirelab_analysis::ClockCorrection;
use wirelab_core::clocksync::{self, Estimate, Linear, Probe};

/// Probes per host and side of a point: the smallest round trip of 24 is
/// close to the path's floor without slowing a point down (each is one
/// `time` request, well under a millisecond on a LAN).
pub const PROBES: usize = 24;
/// Schema of `points/<id>/clock/<a>-<b>.json`.
pub const CLOCK_SCHEMA: &str = "wirelab.run.clock/1";

/// The agent a host's spec asks for: the test hook's offset.
pub fn agent_job(spec: &HostSpec) -> wirelab_jobs::AgentJob {
    wirelab_jobs::AgentJob {
        test_clock_offset_ns: spec.test_clock_offset_ns,
        ..Default::default()
    }
}

/// A flow's clock correction, as `point.json` holds it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FlowClock {
    /// The estimates behind it (`clock/<a>-<b>.json`, relative to the
    /// point directory); none for a flow within one host.
    pub file: Option<String>,
    /// The reference time: T0 (unix ns, the controller's clock).
    pub at_unix_ns: u64,
    /// T0 on the sender's clock: the `--start-at` its sender was given.
    pub sender_t0_unix_ns: u64,
    /// θ_AB at `at_unix_ns`: the receiver's clock minus the sender's.
    pub offset_ns: i64,
    /// dθ_AB/dt from the probes before and after the flows.
    pub drift_ppb: i64,
    /// U_AB = U_A + U_B: the corrected OWD is within ± this.
    pub uncertainty_ns: u64,
    /// `campaign.owd_uncertainty_max` when the point ran.
    pub uncertainty_max_ns: u64,
    /// U above the limit: only OWD − min is published.
    pub relative: bool,
}

impl FlowClock {
    /// The correction of the flow's receive stamps.
    pub fn correction(&self) -> ClockCorrection {
        ClockCorrection {
            at_ns: self.at_unix_ns,
            offset_ns: self.offset_ns,
            drift_ppb: self.drift_ppb,
        }
    }
}

/// One host's side of `clock/<a>-<b>.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HostClock {
    pub host: String,
    /// Its clock minus the controller's, before the receivers started.
    pub before: Estimate,
    /// The same after the flows stopped (none if it could not be taken).
    pub after: Option<Estimate>,
    /// θ(t) from the two, referred to T0.
    pub line: Linear,
}

/// `points/<id>/clock/<a>-<b>.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PairFile {
    pub schema: String,
    /// Sender's host, then receiver's.
    pub a: HostClock,
    pub b: HostClock,
    /// θ_AB = θ_B − θ_A at T0 with U_AB = U_A + U_B.
    pub pair: FlowClock,
}

/// The probes of one point.
#[derive(Debug, Default)]
pub struct PointClocks {
    before: BTreeMap<String, Estimate>,
    after: BTreeMap<String, Estimate>,
}

impl PointClocks {
    /// Probes each of `hosts` ([`PROBES`] `time` requests through `time`).
    pub fn before<'h>(
        hosts: impl IntoIterator<Item = &'h str>,
        time: impl FnMut(&str) -> Result<AgentTime, RunError>,
    ) -> Result<PointClocks, RunError> {
        Ok(PointClocks {
            before: probe_all(hosts, time)?,
            after: BTreeMap::new(),
        })
    }

    /// Probes the same hosts again, after the flows.
    pub fn after(
        &mut self,
        time: impl FnMut(&str) -> Result<AgentTime, RunError>,
    ) -> Result<(), RunError> {
        let hosts: Vec<String> = self.before.keys().cloned().collect();
        self.after = probe_all(hosts.iter().map(String::as_str), time)?;
        Ok(())
    }

    /// `t0` (the controller's clock) on `host`'s clock: what its sender's
    /// `--start-at` means.
    pub fn local_t0(&self, host: &str, t0: u64) -> u64 {
        match self.before.get(host) {
            Some(e) => t0.saturating_add_signed(e.offset_ns),
            None => t0,
        }
    }

    fn line(&self, host: &str) -> Result<Option<(Linear, HostClock)>, RunError> {
        let Some(b) = self.before.get(host) else {
            return Ok(None);
        };
        let a = self.after.get(host);
        let line = match a {
            Some(a) => Linear::between(b, a).map_err(|e| clock_err(host, e))?,
            None => Linear::constant(b),
        };
        Ok(Some((
            line,
            HostClock {
                host: host.into(),
                before: *b,
                after: a.copied(),
                line,
            },
        )))
    }

    /// The clock of a flow from `from` to `to` with its start `t0`;
    /// writes `clock/<from>-<to>.json` under `pdir`. None if the hosts
    /// were not probed.
    pub fn flow(
        &self,
        pdir: &Path,
        from: &str,
        to: &str,
        t0: Option<u64>,
        uncertainty_max_ns: u64,
    ) -> Result<Option<FlowClock>, RunError> {
        let (Some((la, ha)), Some((lb, hb))) = (self.line(from)?, self.line(to)?) else {
            return Ok(None);
        };
        let at = t0.unwrap_or(la.at_unix_ns);
        let sender_t0_unix_ns = self.local_t0(from, at);
        if from == to {
            // One clock stamps both ends: no offset, nothing uncertain.
            return Ok(Some(FlowClock {
                file: None,
                at_unix_ns: at,
                sender_t0_unix_ns,
                offset_ns: 0,
                drift_ppb: 0,
                uncertainty_ns: 0,
                uncertainty_max_ns,
                relative: false,
            }));
        }
        let p = Linear::pair(&la, &lb).at(at);
        let rel = format!("clock/{from}-{to}.json");
        let fc = FlowClock {
            file: Some(rel.clone()),
            at_unix_ns: at,
            sender_t0_unix_ns,
            offset_ns: p.offset_ns,
            drift_ppb: p.drift_ppb,
            uncertainty_ns: p.uncertainty_ns,
            uncertainty_max_ns,
            relative: p.uncertainty_ns > uncertainty_max_ns,
        };
        let file = PairFile {
            schema: CLOCK_SCHEMA.into(),
            a: HostClock {
                line: la.at(at),
                ..ha
            },
            b: HostClock {
                line: lb.at(at),
                ..hb
            },
            pair: fc.clone(),
        };
        let mut text = serde_json::to_string_pretty(&file).expect("a clock file serializes");
        text.push('\n');
        crate::bundle::write_atomic(&pdir.join(&rel), text.as_bytes())?;
        Ok(Some(fc))
    }
}

fn clock_err(host: &str, e: clocksync::ClockError) -> RunError {
    RunError::Setup(format!(
        "host {host}: clock probes: {e} (did its clock or the controller's step?)"
    ))
}

fn probe_all<'h>(
    hosts: impl IntoIterator<Item = &'h str>,
    time: impl FnMut(&str) -> Result<AgentTime, RunError>,
) -> Result<BTreeMap<String, Estimate>, RunError> {
    // Both ends' stamps are quantized; the agent's clock is taken to
    // resolve like the controller's.
    let resolution = 2 * wirelab_io::clock::real_resolution_ns();
    probe_all_on(hosts, time, wirelab_io::clock::real_ns, resolution)
}

/// [`probe_all`] with the controller's clock `now` and the stamps'
/// `resolution_ns` given: the virtual-clock tests inject the path's delays
/// through `now` and `time`.
fn probe_all_on<'h>(
    hosts: impl IntoIterator<Item = &'h str>,
    mut time: impl FnMut(&str) -> Result<AgentTime, RunError>,
    mut now: impl FnMut() -> u64,
    resolution_ns: u64,
) -> Result<BTreeMap<String, Estimate>, RunError> {
    let mut out = BTreeMap::new();
    for h in hosts {
        if out.contains_key(h) {
            continue;
        }
        let mut probes = Vec::with_capacity(PROBES);
        for _ in 0..PROBES {
            let t1 = now();
            let t = time(h)?;
            let t4 = now();
            // The agent reads its clock once: T2 = T3, its hold time is
            // part of δ.
            probes.push(Probe {
                t1,
                t2: t.realtime_ns,
                t3: t.realtime_ns,
                t4,
            });
        }
        let e = clocksync::estimate(&probes, resolution_ns).map_err(|e| clock_err(h, e))?;
        out.insert(h.to_string(), e);
    }
    Ok(out)
}

#[cfg(test)]
mod tests_virtual;

#[cfg(test)]
mod tests {
    use super::*;

    /// An agent `theta` ns ahead that reads its clock as the request
    /// arrives and answers 20 µs later (an asymmetric path: the estimate is
    /// off by δ/2, within U).
    fn fake(theta: i64) -> impl FnMut(&str) -> Result<AgentTime, RunError> {
        move |_| {
            let r = wirelab_io::clock::real_ns();
            std::thread::sleep(std::time::Duration::from_micros(20));
            Ok(AgentTime {
                realtime_ns: r.saturating_add_signed(theta),
                monotonic_ns: 0,
            })
        }
    }

    #[test]
    fn a_flow_between_two_hosts_gets_the_difference_and_a_file() {
        let d = std::env::temp_dir().join(format!("wirelab-clocks-{}", std::process::id()));
        let mut c = PointClocks::before(["a", "b", "a"], |h| {
            fake(if h == "b" { 3_000_000 } else { -1_000_000 })(h)
        })
        .unwrap();
        assert_eq!(c.before.len(), 2);
        assert!(c.local_t0("b", 10_000_000_000).abs_diff(10_003_000_000) < 1_000_000);
        c.after(|h| fake(if h == "b" { 3_000_000 } else { -1_000_000 })(h))
            .unwrap();
        let t0 = wirelab_io::clock::real_ns();
        let f = c.flow(&d, "a", "b", Some(t0), 1_000_000).unwrap().unwrap();
        assert!(
            (f.offset_ns - 4_000_000).unsigned_abs() <= f.uncertainty_ns,
            "{f:?}"
        );
        assert!(f.uncertainty_ns > 0 && !f.relative);
        assert_eq!(f.file.as_deref(), Some("clock/a-b.json"));
        let text = std::fs::read_to_string(d.join("clock/a-b.json")).unwrap();
        let back: PairFile = serde_json::from_str(&text).unwrap();
        assert_eq!(back.pair, f);
        assert_eq!(back.a.host, "a");
        // Within one host: exact, no file.
        let same = c.flow(&d, "b", "b", Some(t0), 1).unwrap().unwrap();
        assert_eq!(
            (same.offset_ns, same.uncertainty_ns, same.file),
            (0, 0, None)
        );
        // Over the limit: relative only.
        let strict = c.flow(&d, "a", "b", Some(t0), 0).unwrap().unwrap();
        assert!(strict.relative);
        // A host never probed: nothing.
        assert_eq!(c.flow(&d, "a", "x", None, 1).unwrap(), None);
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn the_test_offset_becomes_an_agent_argument() {
        let mut h: HostSpec = crate::control::parse(
            "c.toml",
            "[campaign]\nname = \"q\"\n[hosts]\na = { transport = \"local\", \
             test_clock_offset = \"-3ms\" }\n[[flow]]\nname = \"f\"\nfrom = \"a\"\nto = \"a\"\n\
             count = 5\n",
        )
        .unwrap()
        .hosts
        .remove("a")
        .unwrap();
        assert_eq!(
            agent_job(&h).argv(),
            ["agent", "--stdio", "--test-clock-offset", "-3000000ns"]
        );
        h.test_clock_offset_ns = None;
        assert_eq!(agent_job(&h).argv(), ["agent", "--stdio"]);
    }
}

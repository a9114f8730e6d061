//! `wirelab emulate verify`: the emulator judged from captures of its
//! input and output against its configuration, replayed through the same
//! link model (so a trace's or a seed's per-packet decisions are the
//! configured values). The statistics are `wirelab_analysis::emuverify`'s.

use super::model::{open_link, LinkSetupError};
use std::fs::File;
use std::io::{self, BufReader};
use std::path::PathBuf;
use thiserror::Error;
use wirelab_analysis::emuverify::{
    verify_captures, Configuration, Side, VerifyConfig, VerifyError, VerifyReport,
};
use wirelab_link::{
    DelaySpec, Direction, FlowTuple, Link, LinkConfig, LinkKey, Release, SpecError, TraceSpec,
};
use wirelab_trace::AtEnd;

/// What the emulator was configured with.
#[derive(Debug, Clone)]
pub enum Configured {
    /// A constant delay, ns.
    Delay(u64),
    /// A delay per packet from a trace file (as the stage `trace FILE`).
    Trace(PathBuf),
    /// The whole stage list, as given to the emulator.
    Stages(String),
}

impl Configured {
    /// The option that gives this configuration (named in errors).
    fn flag(&self) -> &'static str {
        match self {
            Configured::Delay(_) => "--delay",
            Configured::Trace(_) => "--trace",
            Configured::Stages(_) => "--stages",
        }
    }

    /// The link configuration and how the report names it.
    fn link_config(&self) -> Result<(LinkConfig, String), VerifyJobError> {
        Ok(match self {
            Configured::Delay(d) => {
                let delay = DelaySpec {
                    delay_ns: *d,
                    jitter_ns: 0,
                    corr: 0.0,
                    dist: Default::default(),
                };
                let c = LinkConfig {
                    delay: Some(delay),
                    ..LinkConfig::default()
                };
                (c, format!("delay {}", human(*d)))
            }
            Configured::Trace(t) => {
                let file = t.to_string_lossy().into_owned();
                let trace = TraceSpec {
                    file: file.clone(),
                    scale: 1.0,
                    offset_ns: 0,
                    at_end: AtEnd::default(),
                };
                let c = LinkConfig {
                    trace: Some(trace),
                    ..LinkConfig::default()
                };
                (c, format!("trace {file}"))
            }
            Configured::Stages(s) => {
                let c = LinkConfig::parse(s).map_err(|error| VerifyJobError::Stages {
                    stages: s.clone(),
                    error: Box::new(error),
                })?;
                (c, s.clone())
            }
        })
    }
}

/// The job: two captures of one direction and the configuration.
#[derive(Debug, Clone)]
pub struct Verify {
    pub input: PathBuf,
    pub output: PathBuf,
    pub configured: Configured,
    /// The emulator's `--seed` (a `seed N` stage wins).
    pub seed: u64,
    pub direction: Direction,
    pub config: VerifyConfig,
}

/// Why verification could not run. Every case is the user's input.
#[derive(Debug, Error)]
pub enum VerifyJobError {
    #[error("--stages '{stages}': {error}")]
    Stages {
        stages: String,
        error: Box<SpecError>,
    },
    #[error("{flag}: {error}")]
    Link {
        flag: &'static str,
        error: Box<LinkSetupError>,
    },
    #[error("{side} {path}: {error}", path = path.display())]
    Open {
        side: Side,
        path: PathBuf,
        error: io::Error,
    },
    #[error("{path}: {error}", path = path.display())]
    Capture {
        path: PathBuf,
        error: Box<VerifyError>,
    },
}

/// The configuration as the emulator's link model sees each IN frame.
struct Model {
    link: Link,
    due: Vec<Release>,
    /// The largest configured delay so far.
    max: u64,
}

impl Configuration for Model {
    fn decide(&mut self, index: u64, t_ns: u64, len: u32, delays: &mut Vec<u64>) {
        self.decide_frame(index, t_ns, len, &[], delays)
    }

    fn decide_frame(
        &mut self,
        index: u64,
        t_ns: u64,
        len: u32,
        head: &[u8],
        delays: &mut Vec<u64>,
    ) {
        // Frames are not inspected for ECN capability, as in the forwarder;
        // their flow is, where the stages tell flows apart (`per-flow`, `sched`).
        let a = if self.link.uses_flows() {
            let flow = FlowTuple::from_frame(head);
            self.link
                .arrive_flow(t_ns, len, index, false, flow.as_ref())
        } else {
            self.link.arrive(t_ns, len, index, false)
        };
        let from = delays.len();
        delays.extend(a.queued().map(|q| q.deadline_ns.saturating_sub(t_ns)));
        self.max = delays[from..].iter().fold(self.max, |m, &d| m.max(d));
        // Only the decisions matter: let the release queue drain.
        self.due.clear();
        self.link.pop_due(a.arrival_ns, &mut self.due);
    }
}

/// `d` ns in the largest unit that keeps it whole.
pub fn human(d: u64) -> String {
    match d {
        0 => "0".into(),
        d if d % 1_000_000_000 == 0 => format!("{}s", d / 1_000_000_000),
        d if d % 1_000_000 == 0 => format!("{}ms", d / 1_000_000),
        d if d % 1_000 == 0 => format!("{}us", d / 1_000),
        d => format!("{d}ns"),
    }
}

impl Verify {
    pub fn run(self) -> Result<VerifyReport, VerifyJobError> {
        let (cfg, configured) = self.configured.link_config()?;
        let seed = cfg.seed.unwrap_or(self.seed);
        let key = LinkKey {
            seed,
            rule: 0,
            direction: self.direction,
        };
        let link = open_link(&cfg, key).map_err(|error| VerifyJobError::Link {
            flag: self.configured.flag(),
            error: Box::new(error),
        })?;
        let mut model = Model {
            link,
            due: Vec::new(),
            max: 0,
        };
        let open = |side, path: &PathBuf| {
            File::open(path)
                .map(|f| BufReader::with_capacity(1 << 20, f))
                .map_err(|error| VerifyJobError::Open {
                    side,
                    path: path.clone(),
                    error,
                })
        };
        let input = open(Side::In, &self.input)?;
        let output = open(Side::Out, &self.output)?;
        let mut r = verify_captures(input, output, &self.config, &mut model).map_err(|error| {
            let side = match &error {
                VerifyError::Pcap { side, .. }
                | VerifyError::NoTimestamp { side, .. }
                | VerifyError::LinkType { side, .. } => *side,
            };
            let path = match side {
                Side::In => self.input.clone(),
                Side::Out => self.output.clone(),
            };
            VerifyJobError::Capture {
                path,
                error: Box::new(error),
            }
        })?;
        r.in_file = self.input.display().to_string();
        r.out_file = self.output.display().to_string();
        r.configured = configured;
        r.seed = Some(seed);
        let window = self.config.window_ns;
        if model.max > window {
            r.warnings.push(format!(
                "configured delays reach {}, above --window {}: copies that late count as lost \
                 and unknown; raise --window",
                human(model.max),
                human(window)
            ));
        }
        Ok(r)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_in_the_largest_whole_unit() {
        assert_eq!(human(0), "0");
        assert_eq!(human(2_000_000_000), "2s");
        assert_eq!(human(1_500_000_000), "1500ms");
        assert_eq!(human(7_000), "7us");
        assert_eq!(human(7_001), "7001ns");
    }

    #[test]
    fn bad_input_names_its_option_or_file() {
        let job = |configured| Verify {
            input: "/nonexistent/in.pcap".into(),
            output: "/nonexistent/out.pcap".into(),
            configured,
            seed: 1,
            direction: Direction::AToB,
            config: VerifyConfig {
                window_ns: 2_000_000_000,
                max_pending: 1 << 10,
                ks_samples: 1 << 10,
                skip_in: 0,
            },
        };
        let e = job(Configured::Stages("dely 1ms".into()))
            .run()
            .unwrap_err();
        assert!(e.to_string().starts_with("--stages 'dely 1ms': "), "{e}");
        let e = job(Configured::Trace("/nonexistent/t.delays".into()))
            .run()
            .unwrap_err();
        assert!(
            e.to_string().starts_with("--trace: cannot read trace "),
            "{e}"
        );
        let e = job(Configured::Delay(1_000_000)).run().unwrap_err();
        assert!(
            e.to_string().starts_with("IN /nonexistent/in.pcap: "),
            "{e}"
        );
    }

    /// Ethernet + IPv4 + UDP headers of a frame to `dport`.
    fn udp_head(dport: u16) -> Vec<u8> {
        let mut f = vec![0u8; 42];
        f[12..14].copy_from_slice(&[0x08, 0x00]);
        f[14] = 0x45;
        f[23] = 17;
        f[26..30].copy_from_slice(&[10, 0, 0, 1]);
        f[30..34].copy_from_slice(&[10, 0, 0, 2]);
        f[34..36].copy_from_slice(&5000u16.to_be_bytes());
        f[36..38].copy_from_slice(&dport.to_be_bytes());
        f
    }

    #[test]
    fn flows_are_told_apart_from_the_frame_head() {
        // Two 1500-byte frames at once into a 1 Mbit/s pipe (12 ms each):
        // per destination port each has a pipe of its own; without the
        // frame (or without `per-flow`) the second waits for the first.
        let delays = |stages: &str, heads: [&[u8]; 2]| {
            let (cfg, _) = Configured::Stages(stages.into()).link_config().unwrap();
            let key = LinkKey {
                seed: 1,
                rule: 0,
                direction: Direction::AToB,
            };
            let mut m = Model {
                link: open_link(&cfg, key).unwrap(),
                due: Vec::new(),
                max: 0,
            };
            let mut d = Vec::new();
            for (i, h) in heads.into_iter().enumerate() {
                m.decide_frame(i as u64, 0, 1500, h, &mut d);
            }
            d
        };
        let (a, b) = (udp_head(9000), udp_head(9001));
        assert_eq!(
            delays("rate 1mbit per-flow dport", [&a, &b]),
            [12_000_000; 2]
        );
        assert_eq!(
            delays("rate 1mbit per-flow dport", [&a, &a]),
            [12_000_000, 24_000_000]
        );
        assert_eq!(delays("rate 1mbit", [&a, &b]), [12_000_000, 24_000_000]);
    }
}

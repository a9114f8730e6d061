//! `wirelab emulate verify IN OUT`: the emulator judged from captures of
//! its input and output against its configuration, replayed through the
//! same link model (so a trace's or a seed's per-packet decisions are the
//! configured values), rendered from `wirelab.emulate.verify/1`.

use crate::error::usage;
use anyhow::Result;
use clap::{Args, ValueEnum};
use std::fs::File;
use std::io::BufReader;
use std::path::PathBuf;
use wirelab_analysis::emuverify::{verify_captures, Configuration, VerifyConfig, VerifyError};
use wirelab_core::link::{
    DelaySpec, Direction, Link, LinkConfig, LinkKey, Release, TraceEnd, TraceSpec,
};
use wirelab_engine::emulate::open_link;

/// The direction the captures show (its decisions have their own random
/// stream).
#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum Dir {
    A2b,
    B2a,
}

#[derive(Args, Debug)]
#[command(
    after_help = "Capture one direction on the emulator's host, with ns stamps, e.g. for A→B:\n  \
tcpdump -i E_A -Q in  --time-stamp-precision=nano -w in.pcap\n  \
tcpdump -i B   -Q in  --time-stamp-precision=nano -w out.pcap   (in B, the far end of E_B)\n\
The emulator sends past the qdisc, where E_B's own taps do not see it: take OUT at the far end.\n\
Per-packet decisions (a trace, a seeded random stage) line up when IN's k-th frame is the\n\
emulator's packet k: --skip the frames IN holds from before the emulator started.\n\n\
Example: wirelab emulate verify in.pcap out.pcap --delay 1ms"
)]
pub struct VerifyArgs {
    /// Capture of the frames entering the emulator (pcap or pcapng, one direction)
    #[arg(value_name = "IN")]
    pub input: PathBuf,
    /// Capture of the frames leaving it, on the same host's clock
    #[arg(value_name = "OUT")]
    pub output: PathBuf,
    /// The configured delay: a constant
    #[arg(long, value_name = "T", value_parser = crate::values::duration(0, 600_000_000_000, "0 to 600s"), group = "config")]
    pub delay: Option<u64>,
    /// The configured delay: per packet from a trace (nist-bin, nist-txt, delays, pkt-csv; as `trace FILE`)
    #[arg(long, value_name = "FILE", group = "config")]
    pub trace: Option<PathBuf>,
    /// The configured delay: the emulator's whole stage list, as given to --a2b/--b2a/--both
    #[arg(
        long,
        value_name = "STAGES",
        allow_hyphen_values = true,
        group = "config"
    )]
    pub stages: Option<String>,
    /// Seed of the configuration's random decisions, as the emulator's --seed (a `seed N` stage wins)
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Direction the captures show (a2b: --a to --b)
    #[arg(long, value_enum, default_value = "a2b")]
    pub direction: Dir,
    /// Leave out the first N IN frames (captured before the emulator started)
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub skip: u64,
    /// Look for a frame's copies this long after it entered (above the largest delay)
    #[arg(long, value_name = "T", default_value = "2s", value_parser = crate::values::NONZERO_DURATION)]
    pub window: u64,
    /// IN frames held at most while their copies are looked for (about 100 bytes each)
    #[arg(long, value_name = "N", default_value_t = 1 << 20, value_parser = clap::value_parser!(u64).range(1..=100_000_000))]
    pub max_pending: u64,
    /// (applied, configured) pairs kept for the KS distance
    #[arg(long, value_name = "N", default_value_t = 1_000_000, value_parser = clap::value_parser!(u64).range(1..=100_000_000))]
    pub ks_samples: u64,
    /// Print the report as JSON (schema wirelab.emulate.verify/1)
    #[arg(long)]
    pub json: bool,
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
        // Frames are not inspected for ECN capability, as in the forwarder.
        let a = self.link.arrive(t_ns, len, index, false);
        let from = delays.len();
        delays.extend(a.queued().map(|q| q.deadline_ns.saturating_sub(t_ns)));
        self.max = delays[from..].iter().fold(self.max, |m, &d| m.max(d));
        // Only the decisions matter: let the release queue drain.
        self.due.clear();
        self.link.pop_due(a.arrival_ns, &mut self.due);
    }
}

/// `d` ns in the largest unit that keeps it whole.
fn human(d: u64) -> String {
    match d {
        0 => "0".into(),
        d if d % 1_000_000_000 == 0 => format!("{}s", d / 1_000_000_000),
        d if d % 1_000_000 == 0 => format!("{}ms", d / 1_000_000),
        d if d % 1_000 == 0 => format!("{}us", d / 1_000),
        d => format!("{d}ns"),
    }
}

/// The configuration and how the report names it.
fn config(a: &VerifyArgs) -> Result<(LinkConfig, String)> {
    if let Some(d) = a.delay {
        let c = LinkConfig {
            delay: Some(DelaySpec {
                delay_ns: d,
                jitter_ns: 0,
                corr: 0.0,
                dist: Default::default(),
            }),
            ..LinkConfig::default()
        };
        return Ok((c, format!("delay {}", human(d))));
    }
    if let Some(t) = &a.trace {
        let file = t.to_string_lossy().into_owned();
        let c = LinkConfig {
            trace: Some(TraceSpec {
                file: file.clone(),
                scale: 1.0,
                offset_ns: 0,
                at_end: TraceEnd::default(),
            }),
            ..LinkConfig::default()
        };
        return Ok((c, format!("trace {file}")));
    }
    let s = a.stages.clone().unwrap_or_default();
    let c = LinkConfig::parse(&s).map_err(|e| usage(format!("--stages '{s}': {e}")))?;
    Ok((c, s))
}

fn open(path: &PathBuf, what: &str) -> Result<BufReader<File>> {
    File::open(path)
        .map(|f| BufReader::with_capacity(1 << 20, f))
        .map_err(|e| usage(format!("{what} {}: {e}", path.display())))
}

pub fn run_verify(a: VerifyArgs) -> Result<()> {
    let (cfg, configured) = config(&a)?;
    let direction = match a.direction {
        Dir::A2b => Direction::AToB,
        Dir::B2a => Direction::BToA,
    };
    let seed = cfg.seed.unwrap_or(a.seed);
    let key = LinkKey {
        seed,
        rule: 0,
        direction,
    };
    let flag = match (&a.trace, &a.stages) {
        (Some(_), _) => "--trace",
        (_, Some(_)) => "--stages",
        _ => "--delay",
    };
    let link = open_link(&cfg, key).map_err(|e| usage(format!("{flag}: {e}")))?;
    let mut model = Model {
        link,
        due: Vec::new(),
        max: 0,
    };
    let vcfg = VerifyConfig {
        window_ns: a.window,
        max_pending: usize::try_from(a.max_pending).unwrap_or(usize::MAX),
        ks_samples: usize::try_from(a.ks_samples).unwrap_or(usize::MAX),
        skip_in: a.skip,
    };
    let input = open(&a.input, "IN")?;
    let output = open(&a.output, "OUT")?;
    let mut r = verify_captures(input, output, &vcfg, &mut model).map_err(|e| {
        let path = match &e {
            VerifyError::Pcap { side, .. }
            | VerifyError::NoTimestamp { side, .. }
            | VerifyError::LinkType { side, .. } => match side {
                wirelab_analysis::emuverify::Side::In => &a.input,
                wirelab_analysis::emuverify::Side::Out => &a.output,
            },
        };
        usage(format!("{}: {e}", path.display()))
    })?;
    r.in_file = a.input.display().to_string();
    r.out_file = a.output.display().to_string();
    r.configured = configured;
    r.seed = Some(seed);
    if model.max > a.window {
        r.warnings.push(format!(
            "configured delays reach {}, above --window {}: copies that late count as lost and \
             unknown; raise --window",
            human(model.max),
            human(a.window)
        ));
    }
    if a.json {
        for w in &r.warnings {
            eprintln!("wirelab: warning: {w}");
        }
        println!("{}", serde_json::to_string_pretty(&r)?);
    } else {
        print!("{}", r.text());
    }
    Ok(())
}

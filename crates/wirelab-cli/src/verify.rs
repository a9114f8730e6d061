//! Flags of `wirelab emulate verify IN OUT`.

use clap::{Args, ValueEnum};
use std::path::PathBuf;
use wirelab_analysis::emuverify::VerifyConfig;
use wirelab_engine::emulate::verify::{Configured, Verify};
use wirelab_link::Direction;

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

impl VerifyArgs {
    /// The check these flags ask for.
    pub fn job(self) -> Verify {
        let configured = match (self.delay, self.trace, self.stages) {
            (Some(d), _, _) => Configured::Delay(d),
            (_, Some(t), _) => Configured::Trace(t),
            (_, _, s) => Configured::Stages(s.unwrap_or_default()),
        };
        Verify {
            input: self.input,
            output: self.output,
            configured,
            seed: self.seed,
            direction: match self.direction {
                Dir::A2b => Direction::AToB,
                Dir::B2a => Direction::BToA,
            },
            config: VerifyConfig {
                window_ns: self.window,
                max_pending: usize::try_from(self.max_pending).unwrap_or(usize::MAX),
                ks_samples: usize::try_from(self.ks_samples).unwrap_or(usize::MAX),
                skip_in: self.skip,
            },
        }
    }
}

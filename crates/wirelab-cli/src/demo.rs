//! Flags of `wirelab demo`.

use crate::values::{self, NONZERO_DURATION};
use clap::Args;
use std::path::PathBuf;

#[derive(Args, Debug)]
#[command(
    after_long_help = "As root, the lab is two network namespaces joined by a veth pair (198.18.0.1 and \
198.18.0.2, the benchmarking range), removed again at the end. Without root it says so and runs the same over loopback."
)]
pub struct DemoArgs {
    /// How long the sender runs
    #[arg(short, long, default_value = "3s", value_name = "DURATION", value_parser = NONZERO_DURATION)]
    pub duration: u64,
    /// Interval spec of the sender
    #[arg(short, long, default_value = "exp:500us", value_name = "SPEC",
          value_parser = |s: &str| values::INTERVAL(s).map(|_| s.to_string()))]
    pub interval: String,
    /// Size spec of the sender
    #[arg(short, long, default_value = "uniform:64,512", value_name = "SPEC",
          value_parser = |s: &str| values::SIZE(s).map(|_| s.to_string()))]
    pub size: String,
    /// Run over loopback even as root
    #[arg(long)]
    pub loopback: bool,
    /// Keep the record files in this directory (default: a temporary one, removed)
    #[arg(long, value_name = "DIR")]
    pub keep: Option<PathBuf>,
    /// Put an emulated link between sender and receiver: a third namespace
    /// runs `wirelab emulate --both STAGES` (e.g. 'delay 20ms 2ms loss 1%')
    #[arg(long, value_name = "STAGES", allow_hyphen_values = true, conflicts_with = "loopback",
          value_parser = values::STAGES)]
    pub emulate: Option<String>,
    /// Print the analysis as JSON
    #[arg(long)]
    pub json: bool,
}

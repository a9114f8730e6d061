//! Flags of `wirelab export`.

use crate::values::NONZERO_DURATION;
use clap::{Args, ValueEnum};
use std::path::PathBuf;

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExportFormat {
    /// Comma-separated values with a header line
    Csv,
    /// One JSON object per line
    Jsonl,
    /// Apache Parquet (snappy): a file, or a dataset directory for a campaign
    Parquet,
}

#[derive(Args, Debug)]
#[command(after_long_help = "INPUTS:\n  \
one record file (send, recv, reflect --record; replay's departure log): its records, every field\n  \
a sender file and a receiver file of one run: one row per probe sent, joined with its arrival\n    \
(rx_ns, owd_ns, lost, duplicates, reordered; null rx_ns and owd_ns when lost)\n  \
a `wirelab run` results directory: a Parquet dataset directory (-o, new), packets partitioned by\n    \
point (packets/point=<id>/part-0.parquet, the point's parameters and flow name as columns) and\n    \
points.parquet (the rows of summary.csv)\n\n\
The columns, their types and units are in docs/analyze.md (\"Export\").\n\n\
EXAMPLES:\n  wirelab export rx.wlr > rx.csv\n  wirelab export tx.wlr --format jsonl -o tx.jsonl\n  \
wirelab export tx.wlr rx.wlr --format parquet -o packets.parquet\n  \
wirelab export results/quickstart-20261126T144315Z-7c98c828 --format parquet -o dataset")]
pub struct ExportArgs {
    /// A record file, a sender and a receiver file of one run, or a campaign results directory
    #[arg(required = true, num_args = 1..=2, value_name = "INPUT")]
    pub inputs: Vec<PathBuf>,
    /// Output format
    #[arg(short, long, value_enum, default_value_t = ExportFormat::Csv)]
    pub format: ExportFormat,
    /// Output file (default: stdout); for a campaign, a new directory
    #[arg(short, long, value_name = "PATH")]
    pub output: Option<PathBuf>,
    /// Print the file's header metadata (JSON) instead of the records (one record file)
    #[arg(long)]
    pub header: bool,
    /// How far arrivals may come out of send order (sender's clock) and still be joined
    /// to their probe; later ones are counted as not joined
    #[arg(long, default_value = "2s", value_name = "DURATION", value_parser = NONZERO_DURATION)]
    pub join_window: u64,
}

//! Flags of `wirelab report`: record files in, one self-contained HTML page out.

use crate::values::WINDOW;
use clap::Args;
use std::path::PathBuf;

#[derive(Args, Debug)]
#[command(after_long_help = "EXAMPLES:\n  \
wirelab report tx.wlr rx.wlr -o run.html   # sender and receiver joined by flow and sequence\n  \
wirelab report rx.wlr -o rx.html           # receiver records alone\n  \
wirelab report cap.pcapng tx.wlr -o c.html # a capture's probes as receiver records, its RTP streams\n  \
wirelab report r.wlr -o replay.html        # a replay departure log (replay --log): fidelity\n  \
wirelab report e.wlr -o emulate.html       # an emulator per-copy log (emulate --log)\n  \
wirelab report results/quickstart-*/ -o q.html   # a campaign: a row per point, plots per swept parameter\n\n\
The page holds everything inline (SVG plots, CSS, a few lines of script to sort tables) and \
fetches nothing: it opens offline and can be attached to a ticket. Large runs are summarised \
(time-bucketed min/p50/p99/max envelopes, histograms), so the file stays small whatever the \
number of packets, and the records are streamed, never all held.")]
pub struct ReportArgs {
    /// Record files written by `send --record` and `recv --record` (roles are
    /// read from their headers) and pcap/pcapng captures (their probes are
    /// receiver records, as `analyze` reads them), a replay departure log
    /// (`replay --log`, alone), an emulator per-copy log (`emulate --log`,
    /// alone), one results directory of `wirelab run`, or
    /// `--json` reports (send/1, recv/1, analysis/1, capture/1, replay/1,
    /// emulate/1: tables)
    #[arg(required = true, value_name = "INPUT")]
    pub inputs: Vec<PathBuf>,
    /// The HTML file to write
    #[arg(short, long, value_name = "FILE", default_value = "report.html")]
    pub output: PathBuf,
    /// Page title (default: from the inputs)
    #[arg(long)]
    pub title: Option<String>,
    /// Window for throughput over time (at least 1ms)
    #[arg(long, default_value = "1s", value_name = "DURATION", value_parser = WINDOW)]
    pub window: u64,
    /// Most flows reported; inputs with more are refused
    #[arg(long, default_value_t = 64, value_name = "N",
          value_parser = clap::value_parser!(u32).range(1..=4096))]
    pub max_flows: u32,
    /// What to look for in captures (as `analyze`)
    #[command(flatten)]
    pub capture: crate::analyze::AnalyzeCaptureArgs,
}

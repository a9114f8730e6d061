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
wirelab report results/quickstart-*/ -o q.html   # a campaign: a row per point, plots per swept parameter\n  \
wirelab report --compare results/before results/after -o cmp.html   # bundles side by side\n\n\
The page holds everything inline (SVG plots, CSS, a few lines of script to sort tables) and \
fetches nothing: it opens offline and can be attached to a ticket. Large runs are summarised \
(time-bucketed min/p50/p99/max envelopes, histograms), so the file stays small whatever the \
number of packets, and the records are streamed, never all held.\n\n\
--compare A B [C...] sets result bundles of `wirelab run` side by side (the same control file run \
twice: two kernels, two NIC settings, before and after a change; --set loss=3% against \
--set loss=1%). Each bundle after the first is compared with the first (A): per point, flow and \
metric (loss ratio, throughput, packet rate, OWD mean and p99, jitter, IPDV p99, RTT mean and \
p99) the mean of the repetitions on each side, the difference B - A, its bootstrap interval \
(95 % or --confidence, 10000 resamples, --seed; the percentile interval expanded for small \
samples, as few repetitions hide how much the mean varies, and never narrower than Welch's t \
interval, which keeps the level where 3 repetitions a side leave the bootstrap too few \
resamples) and Cohen's d; significant when the interval excludes 0. An interval needs two repetitions or more on each side (--set \
campaign.repetitions=3). Points are matched by their parameters less those each bundle holds at \
one value (what tells the bundles apart), and their flow; only points that ran to their end \
count; a point that only some bundles hold is listed, not compared. Control files that differ \
outside [sweep] are compared anyway, with a warning naming the keys. The page has the table \
(sorted by |d|, largest first) and per metric a figure with one line per bundle.")]
pub struct ReportArgs {
    /// Record files written by `send --record` and `recv --record` (roles are
    /// read from their headers) and pcap/pcapng captures (their probes are
    /// receiver records, as `analyze` reads them), a replay departure log
    /// (`replay --log`, alone), an emulator per-copy log (`emulate --log`,
    /// alone), one results directory of `wirelab run`, or
    /// `--json` reports (send/1, recv/1, analysis/1, capture/1, replay/1,
    /// emulate/1: tables)
    #[arg(required_unless_present = "compare", value_name = "INPUT")]
    pub inputs: Vec<PathBuf>,
    /// Compare results directories of `wirelab run`: each after the first against
    /// the first (instead of INPUT)
    #[arg(long, num_args = 2.., value_name = "DIR", conflicts_with = "inputs")]
    pub compare: Option<Vec<PathBuf>>,
    /// With --compare: also print the comparison as JSON (wirelab.report.compare/1)
    /// on stdout
    #[arg(long, conflicts_with = "inputs")]
    pub json: bool,
    /// With --compare: the seed of the bootstrap's resampling (the same seed gives
    /// the same intervals) [default: 1]
    #[arg(long, value_name = "N", conflicts_with = "inputs")]
    pub seed: Option<u64>,
    /// With --compare: the confidence of the intervals, above 0 and below 1 [default: 0.95]
    #[arg(long, value_name = "LEVEL", conflicts_with = "inputs", value_parser = confidence)]
    pub confidence: Option<f64>,
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

/// `--confidence`: a level strictly between 0 and 1 (0.95, 0.999).
fn confidence(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(c) if c > 0.0 && c < 1.0 => Ok(c),
        _ => Err(format!(
            "{s:?} is not a confidence level: give one above 0 and below 1, e.g. 0.95 or 0.999"
        )),
    }
}

#[cfg(test)]
mod tests {
    use crate::{test_parse, Cli, Command};
    use clap::Parser;

    fn refused(args: &str) -> String {
        let argv = std::iter::once("wirelab").chain(args.split_whitespace());
        Cli::try_parse_from(argv).unwrap_err().to_string()
    }

    #[test]
    fn compare_takes_two_bundles_or_more_instead_of_inputs() {
        let Command::Report(a) =
            test_parse("report --compare a b c --json --seed 7 --confidence 0.999")
        else {
            panic!("not report");
        };
        assert_eq!(a.compare.unwrap().len(), 3);
        assert!(a.json && a.inputs.is_empty());
        assert_eq!((a.seed, a.confidence), (Some(7), Some(0.999)));
        for bad in ["95", "1", "0", "x"] {
            let e = refused(&format!("report --compare a b --confidence {bad}"));
            assert!(e.contains("above 0 and below 1"), "{bad}: {e}");
        }
        assert!(refused("report --compare a").contains("2 values required"));
        assert!(refused("report x.wlr --compare a b").contains("cannot be used with"));
        for flag in ["--json", "--seed 3", "--confidence 0.9"] {
            let e = refused(&format!("report x.wlr {flag}"));
            assert!(e.contains("cannot be used with"), "{flag}: {e}");
        }
    }
}

//! Flags of `wirelab run`: a campaign from a control file.

use clap::Args;
use std::path::PathBuf;

#[derive(Args, Debug)]
#[command(after_long_help = "EXIT CODES:
  0    every point done
  2    the control file (or --only / --set) is invalid
  3    some point was aborted on a criterion (abort.lost_gt, abort.max_duration)
  4    infrastructure failure: an agent lost, a tool that would not start or failed
  130  interrupted (Ctrl-C): the points done so far are in the bundle; --resume DIR goes on

See docs/run.md for the control file.")]
pub struct RunArgs {
    /// The control file (TOML): hosts, flows, sweep, emulator, captures, lab
    #[arg(value_name = "CONTROL.toml")]
    pub control: PathBuf,
    /// List the points (and the excluded ones with reasons) without contacting any host
    #[arg(long)]
    pub dry_run: bool,
    /// Print JSON: the plan with --dry-run (wirelab.run.plan/1), else the outcome
    /// (wirelab.run/1) with the summary
    #[arg(long)]
    pub json: bool,
    /// Continue the campaign in this results directory: points with a result are skipped
    #[arg(long, value_name = "DIR")]
    pub resume: Option<PathBuf>,
    /// Run only the points for which EXPR holds, e.g. 'socket == "udp" && size < 1000'
    #[arg(long, value_name = "EXPR")]
    pub only: Option<String>,
    /// Override a sweep axis with one value or set a scalar, e.g. size=80,
    /// campaign.repetitions=3, flow.sut.duration=2s (repeatable)
    #[arg(long = "set", value_name = "K=V")]
    pub sets: Vec<String>,
    /// Directory the results bundle is made in (a new <name>-<UTC>-<hash> directory)
    #[arg(long, value_name = "DIR", default_value = "results")]
    pub results: PathBuf,
    /// A smoke run: every flow's duration and count divided by 10 (durations 1 s to 10 s,
    /// counts at least 100 probes)
    #[arg(long)]
    pub quick: bool,
    /// An option for every ssh connection, e.g. --ssh-option=-i --ssh-option=KEY
    /// (repeatable; given before wirelab's BatchMode, ControlMaster and ControlPersist,
    /// so `-o ControlPath=...` and the like override them)
    #[arg(long = "ssh-option", value_name = "OPT", allow_hyphen_values = true)]
    pub ssh_options: Vec<String>,
    /// Serve Prometheus metrics on ADDRESS:PORT while the campaign runs
    /// (GET /metrics; overrides [metrics] listen; port 0 picks a free one)
    #[arg(long, value_name = "ADDR")]
    pub metrics_listen: Option<std::net::SocketAddr>,
    /// Keep serving /metrics this long after the campaign ends, so that a scraper
    /// reads the final values (overrides [metrics] linger; Ctrl-C ends it early)
    #[arg(long, value_name = "DUR",
          value_parser = crate::values::duration(0, 24 * 3_600_000_000_000, "between 0 and 24h"))]
    pub metrics_linger: Option<u64>,
    /// No progress on stderr
    #[arg(short, long)]
    pub quiet: bool,
}

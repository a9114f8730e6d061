//! Flags of `wirelab env`: a host's environment, its differences, settings applied and reverted.

use clap::Args;

#[derive(Args, Debug)]
#[command(after_long_help = "EXAMPLES:
  wirelab env                                  this host's snapshot, key = value
  wirelab env netns:rx --json > before.json    a namespace's snapshot as JSON
  wirelab env --diff before.json netns:rx      what changed since (empty: nothing)
  wirelab env --diff ssh://lab@h1 ssh://lab@h2 two hosts side by side
  wirelab env netns:rx --apply mtu=9000 net.core.rmem_max=26214400 --if eth1
                                               prints a TOKEN
  wirelab env netns:rx --revert TOKEN          puts back exactly what TOKEN changed

SETTINGS (--apply): mtu, rings (rx and tx), rings_rx, rings_tx, coalesce_rx_usecs,
coalesce_tx_usecs, coalesce_rx_frames, coalesce_tx_frames, coalesce_adaptive_rx,
coalesce_adaptive_tx, eee (on/off), offload.FEATURE (on/off, e.g. offload.gro), and any
sysctl by its dotted name (e.g. net.core.rmem_max). Interface settings need --if.

Before changing anything, --apply reads the current values and writes them to
/run/wirelab/env/TOKEN.json; a failure part-way puts back what it had set. --revert
restores those values and removes the file. Values that cannot be read (a missing tool,
a device without the feature) appear as `unavailable: WHY`.

See docs/env.md.")]
pub struct EnvArgs {
    /// Hosts: local (default), netns:NAME, ssh://[USER@]HOST[:PORT][?netns=NAME]
    #[arg(value_name = "HOST")]
    pub hosts: Vec<String>,
    /// Print JSON (a snapshot: wirelab.env/1, an array for several hosts; a diff:
    /// wirelab.env.diff/1)
    #[arg(long)]
    pub json: bool,
    /// Compare two snapshots; each is a host or a file saved with --json
    #[arg(long, num_args = 2, value_names = ["A", "B"], conflicts_with_all = ["hosts", "apply", "revert"])]
    pub diff: Vec<String>,
    /// Apply settings KEY=VALUE (see SETTINGS below); prints the token to revert them with
    #[arg(long, value_name = "K=V", num_args = 1.., conflicts_with = "revert")]
    pub apply: Vec<String>,
    /// The interface that interface settings (mtu, rings, coalesce_*, eee, offload.*) change
    #[arg(long = "if", value_name = "IF", requires = "apply")]
    pub iface: Option<String>,
    /// Put back what --apply changed under TOKEN (on the same host)
    #[arg(long, value_name = "TOKEN")]
    pub revert: Option<String>,
    /// The wirelab binary on ssh hosts
    #[arg(long, value_name = "PATH", default_value = "wirelab")]
    pub wirelab: String,
    /// An option for every ssh connection, e.g. --ssh-option=-i --ssh-option=KEY (repeatable)
    #[arg(long = "ssh-option", value_name = "OPT", allow_hyphen_values = true)]
    pub ssh_options: Vec<String>,
}

//! Flags of `wirelab agent --stdio`, the agent `wirelab run` starts on each host.

use clap::Args;
use std::path::PathBuf;

#[derive(Args, Debug)]
#[command(
    after_long_help = "The controller (`wirelab run`) starts the agent itself:\n  \
local        wirelab agent --stdio\n  \
netns:NAME   ip netns exec NAME wirelab agent --stdio\n  \
ssh://HOST   ssh -o BatchMode=yes -o ControlMaster=auto ... HOST -- exec wirelab agent --stdio\n\n\
It reads one JSON request per line on stdin and answers one JSON line per request on stdout \
(protocol in docs/agent.md); messages go to stderr. Children are this same wirelab binary, run in \
the work directory with stdout and stderr in TAG.out and TAG.err there.\n\n\
When stdin closes (the controller or its connection died), on `bye`, or on SIGINT/SIGTERM/SIGHUP, \
the agent sends SIGTERM to its children, SIGKILL 2 s later to those still running, removes a work \
directory it created, and exits 0. Children also die if the agent is killed (PR_SET_PDEATHSIG).\n\n\
Try it by hand:\n  \
printf '%s\\n' '{\"id\":1,\"op\":\"hello\",\"protocol\":1,\"controller\":\"x\"}' | wirelab agent --stdio"
)]
pub struct AgentArgs {
    /// Serve the protocol on stdin/stdout (the only mode)
    #[arg(long, required = true)]
    pub stdio: bool,
    /// Work directory for children and fetched files (created if missing, kept at exit;
    /// default: a new directory under $TMPDIR, removed at exit)
    #[arg(long, value_name = "DIR")]
    pub workdir: Option<PathBuf>,
    /// Test hook: add OFFSET (e.g. 3ms, -250us) to every realtime stamp this agent and its
    /// children report (`time` answers, send and receive stamps), as if this host's clock were
    /// that far off; `test_clock_offset` in a control file's [hosts] sets it
    #[arg(long, value_name = "OFFSET", hide = true, allow_hyphen_values = true)]
    pub test_clock_offset: Option<String>,
}

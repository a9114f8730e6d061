//! Flags of `wirelab emulate` and of `emulate ctl`, which asks a running emulator.

use crate::{usage, Usage};
use clap::{Args, Subcommand};
use std::path::PathBuf;
use std::time::Duration;
use wirelab_engine::emulate_setup::{EmulateSpec, Stages};
use wirelab_engine::job::rt::RtSetup;
use wirelab_link as link;

#[derive(Args, Debug)]
#[command(after_help = stages_help())]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
pub struct EmulateArgs {
    #[command(subcommand)]
    pub cmd: Option<EmulateCmd>,
    /// First interface of the bridge
    #[arg(long = "a", value_name = "IF", required = true)]
    pub a: Option<String>,
    /// Second interface of the bridge
    #[arg(long = "b", value_name = "IF", required = true)]
    pub b: Option<String>,
    /// Stages for frames from A to B
    #[arg(long, value_name = "STAGES", allow_hyphen_values = true)]
    pub a2b: Option<String>,
    /// Stages for frames from B to A
    #[arg(long, value_name = "STAGES", allow_hyphen_values = true)]
    pub b2a: Option<String>,
    /// Stages for both directions (each its own state and random stream)
    #[arg(long, value_name = "STAGES", conflicts_with_all = ["a2b", "b2a"], allow_hyphen_values = true)]
    pub both: Option<String>,
    /// Frames matching FILTER (tcpdump syntax; `a2b:` or `b2a:` in front for one direction)
    /// get STAGES instead of the direction's; the first matching rule wins; repeatable
    #[arg(long, num_args = 2, value_names = ["FILTER", "STAGES"], allow_hyphen_values = true)]
    pub rule: Vec<String>,
    /// Stop after this long (default: until Ctrl-C / SIGTERM)
    #[arg(short = 'd', long, value_name = "DURATION", value_parser = crate::values::NONZERO_DURATION)]
    pub duration: Option<u64>,
    /// Seed of every random decision when the stages give none
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Receive ring slots per direction
    #[arg(long, default_value_t = 4096, value_parser = clap::value_parser!(u32).range(16..=1_048_576))]
    pub ring_frames: u32,
    /// Spin before each deadline for this long (learned from the sleeps unless --fixed-spin)
    #[arg(long, value_name = "DURATION", default_value = "200us", value_parser = crate::values::duration(0, 100_000_000, "0 to 100ms"))]
    pub spin: u64,
    /// Keep the --spin margin fixed instead of learning it
    #[arg(long)]
    pub fixed_spin: bool,
    /// Pin the a→b thread to this CPU and b→a to the next
    #[arg(long, value_name = "N")]
    pub cpu: Option<usize>,
    /// SCHED_FIFO priority of both threads (1-99), and locked memory
    #[arg(long, value_name = "PRIO", value_parser = clap::value_parser!(i32).range(1..=99))]
    pub rt_priority: Option<i32>,
    /// Log every copy of every frame (arrival, deadline, departure or drop reason) to this
    /// record file; `wirelab analyze FILE` summarises it
    #[arg(long, value_name = "FILE")]
    pub log: Option<PathBuf>,
    /// Write the frames each direction sends, with their departure times, to this pcapng file
    #[arg(long, value_name = "FILE")]
    pub tap: Option<PathBuf>,
    /// Write every decision as a packet trace that replays the run (`trace FILE`): one file per
    /// direction and rule with stages, named FILE with `.a2b`/`.b2a` (and `.ruleN`) before
    /// the extension (.pkt.csv exact; .bin/.nist.txt µs)
    #[arg(long, value_name = "FILE")]
    pub record_decisions: Option<PathBuf>,
    /// Write Mahimahi-compatible logs (mm-link's format, read by mm-throughput-graph and
    /// mm-delay-graph) to DIR/a2b.log and DIR/b2a.log: a line per frame received, per copy
    /// sent and per delivery opportunity of a `link` stage (DIR is created)
    #[arg(long, value_name = "DIR")]
    pub mm_log: Option<PathBuf>,
    /// Accept rule changes (`wirelab emulate ctl`) on this unix socket
    #[arg(long, value_name = "PATH", num_args = 0..=1, default_missing_value = DEFAULT_CTL)]
    pub ctl: Option<PathBuf>,
    /// Print the report as JSON (schema wirelab.emulate/1)
    #[arg(long)]
    pub json: bool,
    /// No live counters on stderr
    #[arg(short, long)]
    pub quiet: bool,
}

/// The stage list after the flags: made from the link model's stage
/// registry, so every stage the parser takes is listed.
fn stages_help() -> String {
    format!(
        "Stages (netem's syntax, in any order; see docs/emulate-model.md):\n{}\n\
         Example: wirelab emulate --a veth1 --b veth2 --both 'delay 20ms 2ms loss 1%' -d 60s",
        link::help_text()
    )
}

/// The control socket when `--ctl` and `ctl --socket` give none.
pub const DEFAULT_CTL: &str = "/run/wirelab-emulate.sock";

#[derive(Subcommand, Debug)]
pub enum EmulateCmd {
    /// Change a running emulator's rules over its --ctl socket
    Ctl(CtlArgs),
    /// Judge an emulator from captures of its input and output: applied
    /// delay per frame, its error against the configuration, loss, extra
    /// copies, early copies, Table B.1 of the NIST Net trace-emulation thesis,
    /// KS and χ² tests
    Verify(crate::verify::VerifyArgs),
}

#[derive(Args, Debug)]
#[command(
    after_help = "Rules are named by their number (`ctl list`) or their filter. A change applies \
between two frames; an updated or removed rule keeps what it holds until each copy left at its \
deadline.\n\nExample:\n  wirelab emulate --a eA --b eB --ctl /run/emu.sock &\n  \
wirelab emulate ctl --socket /run/emu.sock add 'udp dst port 5004' 'delay 20ms loss random 1%'"
)]
pub struct CtlArgs {
    /// The emulator's control socket (its --ctl)
    #[arg(long, value_name = "PATH", default_value = DEFAULT_CTL)]
    pub socket: PathBuf,
    /// Print the emulator's answer as JSON
    #[arg(long)]
    pub json: bool,
    #[command(subcommand)]
    pub op: CtlOp,
}

#[derive(Subcommand, Debug)]
pub enum CtlOp {
    /// Add a rule after the others: frames matching FILTER (`a2b:`/`b2a:` in front for one
    /// direction) get STAGES; fails "exists" if FILTER has a rule
    Add {
        filter: String,
        #[arg(allow_hyphen_values = true)]
        stages: String,
    },
    /// Give rule RULE (its number or filter) new stages
    Update {
        rule: String,
        #[arg(allow_hyphen_values = true)]
        stages: String,
    },
    /// Remove rule RULE (its number or filter)
    Del { rule: String },
    /// The rules
    List,
    /// The rules with their counters, and both directions' counters
    Stats,
}

impl EmulateArgs {
    /// The emulator these flags ask for; `command_line` (as typed) is kept
    /// in its report.
    pub fn spec(&self, command_line: String) -> Result<EmulateSpec, Usage> {
        let (if_a, if_b) = match (&self.a, &self.b) {
            (Some(x), Some(y)) => (x.clone(), y.clone()),
            _ => return Err(usage("emulate needs --a IF and --b IF")),
        };
        let stages = |flag, s: &Option<String>| Stages {
            flag,
            stages: s.clone().unwrap_or_default(),
        };
        let (a2b, b2a) = match &self.both {
            Some(_) => (stages("--both", &self.both), stages("--both", &self.both)),
            None => (stages("--a2b", &self.a2b), stages("--b2a", &self.b2a)),
        };
        let spec_rt = RtSetup {
            cpu: self.cpu,
            fifo_priority: self.rt_priority,
            mlock: self.rt_priority.is_some(),
        };
        Ok(EmulateSpec {
            a: if_a.clone(),
            b: if_b.clone(),
            a2b,
            b2a,
            rules: self.rule.clone(),
            seed: self.seed,
            ring_frames: self.ring_frames,
            duration: self.duration.map(Duration::from_nanos),
            spin_ns: self.spin,
            learn: !self.fixed_spin,
            rt: spec_rt,
            log: self.log.clone(),
            tap: self.tap.clone(),
            record_decisions: self.record_decisions.clone(),
            mm_log: self.mm_log.clone(),
            ctl: self.ctl.clone(),
            command_line,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{test_parse, Command};

    fn spec(args: &str) -> Result<EmulateSpec, Usage> {
        match test_parse(&format!("emulate {args}")) {
            Command::Emulate(a) => a.spec(args.into()),
            c => panic!("{c:?}"),
        }
    }

    #[test]
    fn both_gives_each_direction_the_stages_and_names_itself() {
        let s = spec("--a x --b y --both delay=1ms").unwrap();
        assert_eq!((s.a2b.flag, s.b2a.flag), ("--both", "--both"));
        assert_eq!(s.a2b.stages, "delay=1ms");
        let s = spec("--a x --b y --a2b loss=1% --rt-priority 5").unwrap();
        assert_eq!(
            (s.a2b.flag, s.b2a.flag, s.b2a.stages.as_str()),
            ("--a2b", "--b2a", "")
        );
        assert!(s.rt.mlock, "an RT emulator locks its memory");
        assert_eq!(s.command_line, "--a x --b y --a2b loss=1% --rt-priority 5");
    }

    #[test]
    fn help_lists_every_stage_the_parser_takes() {
        use clap::CommandFactory;
        let mut cmd = crate::Cli::command();
        let emulate = cmd.find_subcommand_mut("emulate").expect("emulate");
        // Unwrapped (wrapping depends on the terminal).
        let help = emulate.clone().term_width(0).render_long_help().to_string();
        assert!(help.contains(&link::help_text()), "{help}");
        let starts: Vec<&str> = help.lines().filter_map(|l| l.strip_prefix("  ")).collect();
        for stage in link::STAGES {
            let listed = starts
                .iter()
                .any(|l| l.split(' ').next() == Some(stage.keyword));
            assert!(listed, "{} missing:\n{help}", stage.keyword);
            assert!(
                link::LinkConfig::parse(stage.example).is_ok(),
                "{}",
                stage.example
            );
        }
        assert!(
            help.contains("per-flow MASK") && help.contains("sched fifo"),
            "{help}"
        );
    }
}

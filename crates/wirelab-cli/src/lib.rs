//! wirelab's command line: its subcommands and their flags (clap derive),
//! the value parsers behind them (`values`), and each subcommand's flags
//! turned into the typed config of its job (`SendArgs::job`,
//! `ReplayArgs::config`, `CaptureArgs::config`, ...), refusing combinations
//! that cannot work with a [`Usage`] error that names the flag.
//!
//! No I/O: where a config needs some (a host name looked up, an interface's
//! MAC) the caller passes it in as a closure. The `wirelab` binary parses
//! [`Cli`], gets the config from here, runs the job and renders its report.
//! Kept apart so that the whole interface (help texts, defaults, ranges,
//! conflicts, the configs they make) is one crate that tests check from
//! parsed command lines (`Cli::try_parse_from`), without a process.

#![forbid(unsafe_code)]

pub mod agent;
pub mod analyze;
pub mod capture;
pub mod common;
pub mod demo;
pub mod emulate;
pub mod env;
pub mod export;
pub mod recv;
pub mod replay;
pub mod report;
pub mod run;
pub mod send;
pub mod stress;
pub mod trace;
pub mod values;
pub mod verify;

use crate::analyze::AnalyzeArgs;
use crate::capture::CaptureArgs;
use crate::demo::DemoArgs;
use crate::export::ExportArgs;
use crate::recv::RecvArgs;
use crate::replay::ReplayArgs;
use crate::send::SendArgs;
use clap::{Parser, Subcommand};
use std::fmt;

/// A flag value, or a combination of flags, that cannot work; the message
/// names the flag and what to give instead. The binary exits with 2.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Usage(pub String);

impl fmt::Display for Usage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}
impl std::error::Error for Usage {}

/// A [`Usage`] error.
pub fn usage(msg: impl Into<String>) -> Usage {
    Usage(msg.into())
}

#[derive(Parser, Debug)]
#[command(
    name = "wirelab",
    version,
    about = "A precise network test lab in one binary: generate, receive, reflect and measure traffic per packet",
    long_about = "wirelab generates UDP probes with exact per-packet timing, receives or reflects them with kernel \
timestamps, and turns per-packet records into loss, reordering, delay, jitter and pacing statistics.\n\n\
Quick start:\n  wirelab demo                      # a self-contained lab in two network namespaces\n  \
wirelab recv                      # on host B\n  wirelab send B --rate 10kpps -d 5s  # on host A\n\n\
Exit codes: 0 success, 1 runtime failure, 2 usage error, 3 missing privilege \
(`wirelab run`: 3 a point aborted, 4 infrastructure failure, 130 interrupted).\n\
Set WIRELAB_LOG=debug for diagnostics on stderr.",
    propagate_version = true
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Send paced probes to a receiver (or reflector, with --echo)
    Send(SendArgs),
    /// Receive probes, measure them live, optionally reflect them (--echo)
    Recv(RecvArgs),
    /// Join sender and receiver record files and report every metric
    Analyze(AnalyzeArgs),
    /// Export records, probes joined with their arrivals, or a campaign: CSV, JSON lines, Parquet
    Export(ExportArgs),
    /// Make one self-contained HTML page with plots from record files
    Report(crate::report::ReportArgs),
    /// Run a complete lab: two network namespaces, a receiver, a sender, an analysis
    Demo(DemoArgs),
    /// Capture packets to pcapng/pcap through an mmap'd TPACKET_V3 ring, losslessly
    Capture(CaptureArgs),
    /// Replay pcap/pcapng files onto an interface with measured timing fidelity
    Replay(ReplayArgs),
    /// Bridge two interfaces through an emulated link: delay, loss, rate, traces; never early
    Emulate(crate::emulate::EmulateArgs),
    /// Trace tools: convert, dump, encode, gen, stats, from-records, maketable
    Trace(crate::trace::TraceArgs),
    /// Run a campaign from a control file: hosts, flows, sweep, emulator, captures
    Run(crate::run::RunArgs),
    /// Serve `wirelab run`'s controller on stdin/stdout (started by it over ssh or ip netns)
    Agent(crate::agent::AgentArgs),
    /// Run a stressor (stress-ng CPU, kernel, RT, memory, I/O, timer load; network load) until stopped
    Stress(crate::stress::StressArgs),
    /// A host's environment: snapshot, diff, apply settings and revert them (local, netns:, ssh://)
    Env(crate::env::EnvArgs),
}

/// The subcommand `args` (a command line after `wirelab`) parse to.
#[cfg(test)]
pub(crate) fn test_parse(args: &str) -> Command {
    let argv = std::iter::once("wirelab").chain(args.split_whitespace());
    match Cli::try_parse_from(argv) {
        Ok(cli) => cli.command,
        Err(e) => panic!("{args}: {e}"),
    }
}

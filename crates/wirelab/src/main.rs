//! The `wirelab` binary: a thin clap front end over the engine.
//!
//! Exit codes: 0 success; 1 runtime failure (I/O, socket, files);
//! 2 usage error (bad flag or value; clap's own errors use 2 as well);
//! 3 missing privilege or capability.

mod cli;
mod cmd;
mod error;
mod progress;
mod values;

use clap::Parser;
use cli::{Cli, Command};

fn main() {
    wirelab_io::rt::default_sigpipe();
    let cli = Cli::parse();
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("WIRELAB_LOG")
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .with_target(false)
        .init();
    let res = match cli.command {
        Command::Send(a) => cmd::send::run(a),
        Command::Recv(a) => cmd::recv::run(a),
        Command::Analyze(a) => cmd::analyze::run(a),
        Command::Export(a) => cmd::export::run(a),
        Command::Demo(a) => cmd::demo::run(a),
        Command::Capture(a) => cmd::capture::run(a),
        Command::Replay(a) => cmd::replay::run(a),
        Command::Emulate(a) => cmd::emulate::run(a),
    };
    if let Err(e) = res {
        eprintln!("wirelab: error: {e:#}");
        std::process::exit(error::exit_code(&e));
    }
}

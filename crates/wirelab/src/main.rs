//! The `wirelab` binary: a thin clap front end over the engine.
//!
//! Exit codes: 0 success; 1 runtime failure (I/O, socket, files);
//! 2 usage error (bad flag or value; clap's own errors use 2 as well);
//! 3 missing privilege or capability; `wirelab run` also: 3 a point aborted
//! on a criterion, 4 infrastructure failure, 130 interrupted.

#![forbid(unsafe_code)]

mod cmd;
mod error;
mod progress;

use clap::Parser;
use std::ffi::OsString;
use std::io::IsTerminal;
use wirelab_cli::{Cli, Command};

/// Whether log lines on stderr carry ANSI colours: only on a terminal, and
/// never when `NO_COLOR` is set to anything but the empty string
/// (<https://no-color.org>). A redirected stderr gets plain text.
fn log_colour(stderr_is_terminal: bool, no_color: Option<OsString>) -> bool {
    stderr_is_terminal && no_color.is_none_or(|v| v.is_empty())
}

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
        .with_ansi(log_colour(
            std::io::stderr().is_terminal(),
            std::env::var_os("NO_COLOR"),
        ))
        .init();
    tracing::debug!(
        "wirelab {} {}",
        env!("CARGO_PKG_VERSION"),
        std::env::args().skip(1).collect::<Vec<_>>().join(" ")
    );
    let res = match cli.command {
        Command::Send(a) => cmd::send::run(a),
        Command::Recv(a) => cmd::recv::run(a),
        Command::Analyze(a) => cmd::analyze::run(a),
        Command::Export(a) => cmd::export::run(a),
        Command::Report(a) => cmd::report::run(a),
        Command::Demo(a) => cmd::demo::run(a),
        Command::Capture(a) => cmd::capture::run(a),
        Command::Replay(a) => cmd::replay::run(a),
        Command::Emulate(a) => cmd::emulate::run(a),
        Command::Trace(a) => cmd::trace::run(a),
        Command::Run(a) => cmd::run::run(a),
        Command::Agent(a) => cmd::agent::run(a),
        Command::Stress(a) => cmd::stress::run(a),
        Command::Env(a) => cmd::env::run(a),
    };
    if let Err(e) = res {
        eprintln!("wirelab: error: {}", error::message(&e));
        std::process::exit(error::exit_code(&e));
    }
}

#[cfg(test)]
mod tests {
    use super::log_colour;

    #[test]
    fn colour_only_on_a_terminal_without_no_color() {
        assert!(log_colour(true, None));
        assert!(log_colour(true, Some("".into())));
        assert!(!log_colour(true, Some("1".into())));
        assert!(!log_colour(false, None));
        assert!(!log_colour(false, Some("".into())));
    }
}

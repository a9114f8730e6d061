//! One module per subcommand.

pub mod agent;
pub mod analyze;
pub mod capture;
pub mod demo;
pub mod emulate;
pub mod emulate_verify;
pub mod env;
pub mod export;
pub mod recv;
pub mod replay;
pub mod report;
pub mod run;
pub mod send;
pub mod stress;
pub mod trace;

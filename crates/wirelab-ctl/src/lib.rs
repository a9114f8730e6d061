//! Orchestration above the engine: [`lab`], network namespaces joined by
//! veth pairs on one host, used by `wirelab demo` ([`demo`]), `wirelab run`
//! and the end-to-end tests; `wirelab run` itself: its control file
//! ([`control`]), the expression language of exclusions and `--only`
//! ([`expr`]), its points ([`sweep`]), the agent ([`agent`], speaking
//! [`proto`]) and the controller's way to reach it ([`transport`]), the
//! campaign runner ([`campaign`]), its stressors ([`stress`]), the clock
//! offsets between its hosts ([`clocks`]) and its results bundle
//! ([`bundle`]) and what is said of it at the end ([`outcome`]), with each host's [`counters`], [`samples`] taken while a
//! point runs and the [`attribution`] of loss; `wirelab env`: a host's
//! environment, its differences and its settings applied and reverted
//! ([`env`]).
#![forbid(unsafe_code)]

pub mod agent;
pub mod attribution;
pub mod bundle;
pub mod campaign;
pub mod clocks;
pub mod control;
pub mod counters;
pub mod demo;
pub mod env;
pub mod expr;
pub mod lab;
pub mod metrics;
pub mod outcome;
pub mod proto;
pub mod samples;
pub mod stress;
pub mod sweep;
pub mod transport;

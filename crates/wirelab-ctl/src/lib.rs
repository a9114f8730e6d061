//! Orchestration above the engine. Today: [`lab`], network namespaces joined
//! by veth pairs on one host, used by `wirelab demo` ([`demo`]) and the
//! end-to-end tests, and the single-host transport of `wirelab run` to come.
#![forbid(unsafe_code)]

pub mod demo;
pub mod lab;

//! Orchestration above the engine. Today: [`lab`], network namespaces joined
//! by veth pairs on one host, used by `wirelab demo` ([`demo`]) and the
//! end-to-end tests; the agent of `wirelab run` ([`agent`], speaking
//! [`proto`]) and the controller's way to reach it ([`transport`]).
#![forbid(unsafe_code)]

pub mod agent;
pub mod demo;
pub mod lab;
pub mod proto;
pub mod transport;

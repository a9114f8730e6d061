//! Orchestration above the engine: [`lab`], network namespaces joined by
//! veth pairs on one host, used by `wirelab demo` ([`demo`]) and the
//! end-to-end tests; the control file of `wirelab run` ([`control`]), the
//! expression language of its exclusions and `--only` ([`expr`]), and its
//! points ([`sweep`]).
#![forbid(unsafe_code)]

pub mod control;
pub mod demo;
pub mod expr;
pub mod lab;
pub mod sweep;

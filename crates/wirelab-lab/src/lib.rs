//! Network namespace labs on one host ([`lab`]), used by `wirelab run`'s
//! `[lab]` and the end-to-end tests, and the lab run of `wirelab demo`
//! ([`demo`]).
#![forbid(unsafe_code)]

pub mod demo;
pub mod lab;

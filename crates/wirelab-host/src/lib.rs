//! A host's conditions, read and changed by the process that runs on it:
//! its environment, its differences and its settings applied and reverted
//! ([`env`]), its [`counters`], the [`samples`] taken of them while a point
//! runs, and the stressors of `wirelab stress` ([`stress`]).
#![forbid(unsafe_code)]

pub mod counters;
pub mod env;
pub mod samples;
pub mod stress;

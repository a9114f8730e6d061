//! Sans-IO core of wirelab: everything that decides, nothing that waits.
//!
//! Time is always an argument; randomness is always seeded; there are no
//! OS calls here, so every decision is tested deterministically.
#![forbid(unsafe_code)]

pub mod capture;
pub mod clocksync;
pub mod forecast;
pub mod gen;
pub mod link;
pub mod merge;
pub mod pace;
pub mod phase;
pub mod replay;
pub mod schedule;
pub mod trace;
pub mod units;

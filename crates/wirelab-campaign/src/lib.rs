//! `wirelab run`: its control file ([`control`]), the expression language
//! of exclusions and `--only` ([`expr`]), its points ([`sweep`]), the
//! campaign runner ([`campaign`]), the clock offsets between its hosts
//! ([`clocks`]), its results bundle ([`bundle`]) with the [`attribution`]
//! of loss, what is said of it at the end ([`outcome`]) and its live
//! Prometheus [`metrics`].
#![forbid(unsafe_code)]

pub mod attribution;
pub mod bundle;
pub mod campaign;
pub mod clocks;
pub mod control;
pub mod expr;
pub mod metrics;
pub mod outcome;
pub mod sweep;

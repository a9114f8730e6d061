//! The agent that runs `wirelab` on a campaign's hosts ([`agent`]), the
//! protocol it speaks ([`proto`]), the controller's way to reach it
//! ([`transport`]), and `wirelab env`'s hosts, local or an agent's
//! ([`hosts`]).
#![forbid(unsafe_code)]

pub mod agent;
pub mod hosts;
pub mod proto;
pub mod transport;

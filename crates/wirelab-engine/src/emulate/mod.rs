//! The link emulator's driver: per direction, frames from a TPACKET_V2
//! ring through a link model to a packet socket on the other interface.

pub mod forward;

pub use forward::{forward, ForwardConfig, ForwardStats, LinkModel, Release};

#[cfg(test)]
mod tests;

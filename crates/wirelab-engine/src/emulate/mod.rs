//! The link emulator's driver: per direction, frames from a TPACKET_V2
//! ring through a link model to a packet socket on the other interface.

pub mod forward;
pub mod model;

pub use forward::{forward, ForwardConfig, ForwardStats, LinkModel, Release};
pub use model::{open_link, CoreLink, LinkSetupError};

#[cfg(test)]
mod tests;

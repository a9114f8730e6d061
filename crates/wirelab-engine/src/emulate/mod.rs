//! The link emulator's driver: per direction, frames from a TPACKET_V2
//! ring through a link model (rules, then default stages) to a packet
//! socket on the other interface, with what it did counted, logged and
//! tapped on request.

pub mod client;
pub mod ctl;
pub mod forward;
pub mod live;
pub mod mmlog;
pub mod model;
pub mod recorder;
pub mod rules;
pub mod sink;
pub mod tap;
pub mod verify;

pub use forward::{
    forward, Admission, Drops, ForwardConfig, ForwardStats, LinkModel, Outputs, Release,
};
pub use live::{LiveDir, LiveSnapshot};
pub use model::{open_link, LinkSetupError};
pub use recorder::{Recorded, Recorder, RecorderError};
pub use rules::{DirModel, RuleLink};
pub use tap::{Tap, TapWriter};

#[cfg(test)]
mod tests;

//! Per-packet link traces: what the emulator does to each packet, read
//! from a file (NIST Net's trace reader, seed 004 §5.2/§5.6).

/// One record of a packet-indexed trace: what happens to the next packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// Forward after `delay_ns` (counted from the kernel receive time).
    Delay { delay_ns: u64 },
    /// Drop the packet.
    Drop,
    /// Forward after `delay_ns` and send a copy, whose own fate is the
    /// next record (so two duplicates in a row make three packets).
    Duplicate { delay_ns: u64 },
}

/// A source of trace actions in packet order; `None` at the end of the
/// trace (what happens then is the caller's end-of-trace policy).
pub trait ActionSource {
    fn next_action(&mut self) -> Option<Action>;
}

impl<I: Iterator<Item = Action>> ActionSource for I {
    fn next_action(&mut self) -> Option<Action> {
        self.next()
    }
}

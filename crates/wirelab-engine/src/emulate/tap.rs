//! The monitor tap (`--tap FILE.pcapng`): every frame the emulator sends,
//! as sent (corrupted copies with their flipped bit), stamped with its
//! departure (wall clock, ns: the clock read just before the send call).
//! One interface block per direction, named after the interface the
//! direction sends on: 0 = a→b (sent on b), 1 = b→a (sent on a). Each
//! direction's frames are in departure order; the two directions' blocks
//! interleave by chunks, not by time.

use super::sink::{ChunkFile, ChunkWriter, SinkStats};
use std::io;
use std::path::Path;
use wirelab_pcap::{InterfaceOptions, PcapngWriter, RecordEncoder};

/// A chunk waits at most this long (in departure time) before it is handed
/// to the file.
const MAX_AGE_NS: u64 = 200_000_000;

/// The tap file.
pub struct Tap {
    file: ChunkFile,
    enc: [RecordEncoder; 2],
}

impl Tap {
    /// Creates the file with its section and the two interface blocks.
    /// `a`, `b`: the bridge's interfaces.
    pub fn create(path: &Path, a: &str, b: &str) -> io::Result<Tap> {
        let mut w = PcapngWriter::new(Vec::new())?;
        let (da, db) = (
            format!("a2b: frames the emulator sent on {b}"),
            format!("b2a: frames the emulator sent on {a}"),
        );
        let mut enc = Vec::new();
        for (name, desc) in [(b, &da), (a, &db)] {
            let id = w.add_interface_with(&InterfaceOptions {
                description: Some(desc),
                ..InterfaceOptions::new(name, 1, 0)
            })?;
            enc.push(w.record_encoder(id)?);
        }
        let head = w.into_inner()?;
        Ok(Tap {
            file: ChunkFile::create(path, &head)?,
            enc: [enc[0], enc[1]],
        })
    }

    /// The writer of direction `d` (0 a→b, 1 b→a).
    pub fn writer(&self, d: u8) -> TapWriter {
        TapWriter {
            enc: self.enc[usize::from(d & 1)],
            w: self.file.writer(),
            first_ns: None,
            frames: 0,
            error: None,
        }
    }

    /// Waits until the writers' frames are in the file (drop the writers
    /// first).
    pub fn finish(self) -> io::Result<SinkStats> {
        self.file.finish()
    }
}

/// One direction's handle on the tap.
pub struct TapWriter {
    enc: RecordEncoder,
    w: ChunkWriter,
    /// Departure of the oldest frame in the chunk.
    first_ns: Option<u64>,
    frames: u64,
    error: Option<io::Error>,
}

impl TapWriter {
    /// A frame left at `wall_ns`.
    pub fn frame(&mut self, wall_ns: u64, data: &[u8]) {
        if self.error.is_some() {
            return;
        }
        if let Err(e) = self
            .enc
            .encode(self.w.buf(), wall_ns, data.len() as u32, data)
        {
            self.error = Some(e);
            return;
        }
        self.frames += 1;
        let first = *self.first_ns.get_or_insert(wall_ns);
        let r = if wall_ns.saturating_sub(first) >= MAX_AGE_NS {
            self.first_ns = None;
            self.w.hand_on()
        } else {
            self.w.maybe_flush()
        };
        if self.w.pending() == 0 {
            self.first_ns = None;
        }
        if let Err(e) = r {
            self.error = Some(e);
        }
    }

    /// The direction has nothing waiting: hand on what the chunk holds.
    pub fn idle(&mut self) {
        if self.w.pending() > 0 && self.error.is_none() {
            self.first_ns = None;
            if let Err(e) = self.w.hand_on() {
                self.error = Some(e);
            }
        }
    }

    /// Frames written.
    pub fn frames(&self) -> u64 {
        self.frames
    }

    /// Hands on the rest; the first write error, if any.
    pub fn close(mut self) -> io::Result<u64> {
        if let Some(e) = self.error.take() {
            return Err(e);
        }
        self.w.hand_on()?;
        Ok(self.frames)
    }
}

//! `--mm-log DIR`: one Mahimahi-compatible log per direction
//! (`DIR/a2b.log`, `DIR/b2a.log`; the format is the core's
//! [`wirelab_link::mmlog`]): a `+` line per frame received, a `-`
//! line per copy sent (its departure, delay from the frame's arrival), a
//! `#` line per delivery opportunity of the direction's `link` stages.
//!
//! The forwarding thread writes arrivals and departures; opportunities
//! come from inside its link model (an [`OpportunityLog`] closure), so
//! both share one writer behind a mutex only that thread takes (never
//! contended). Lines go to the file in chunks by a writer thread
//! ([`ChunkFile`]): no system call on the forwarding path.

use super::sink::{ChunkFile, ChunkWriter};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use wirelab_link::mmlog::{self, MmClock};
use wirelab_link::OpportunityLog;

/// A direction's writer, shared by the forwarding loop and its links.
pub type MmLogHandle = Arc<Mutex<MmLogWriter>>;

/// Appends lines; stops (keeping the error) if the file fails.
pub struct MmLogWriter {
    w: Option<ChunkWriter>,
    clock: MmClock,
    lines: u64,
    error: Option<String>,
}

impl MmLogWriter {
    fn line(&mut self, f: impl FnOnce(&mut Vec<u8>)) {
        let Some(w) = self.w.as_mut() else { return };
        f(w.buf());
        self.lines += 1;
        if let Err(e) = w.maybe_flush() {
            self.error = Some(e.to_string());
            self.w = None;
        }
    }

    /// A frame of `bytes` received at `t_ns` (monotonic).
    pub fn arrival(&mut self, t_ns: u64, bytes: u32) {
        let ms = self.clock.ms(t_ns);
        self.line(|b| mmlog::arrival(b, ms, bytes));
    }

    /// A copy of `bytes` sent at `t_ns`, of a frame received at
    /// `arrival_ns`.
    pub fn departure(&mut self, t_ns: u64, bytes: u32, arrival_ns: u64) {
        let (ms, arr) = (self.clock.ms(t_ns), self.clock.ms(arrival_ns));
        self.line(|b| mmlog::departure(b, ms, bytes, arr));
    }

    /// A delivery opportunity at `t_ns`.
    pub fn opportunity(&mut self, t_ns: u64) {
        let ms = self.clock.ms(t_ns);
        self.line(|b| mmlog::opportunity(b, ms));
    }
}

/// Locks `h` (a panic elsewhere leaves the writer usable).
pub fn with<R>(h: &MmLogHandle, f: impl FnOnce(&mut MmLogWriter) -> R) -> R {
    f(&mut h.lock().unwrap_or_else(PoisonError::into_inner))
}

/// One direction's log file.
pub struct MmLogFile {
    path: PathBuf,
    file: ChunkFile,
    handle: MmLogHandle,
}

/// A finished log.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct MmLogged {
    pub direction: &'static str,
    pub path: PathBuf,
    /// Event lines written (the header not counted).
    pub lines: u64,
    /// It stopped on this error (the run went on).
    pub error: Option<String>,
}

impl MmLogFile {
    /// Creates `path` with mm-link's header; event times count in ms from
    /// `origin_mono_ns`, whose wall-clock time is `init_unix_ms`.
    pub fn create(
        path: &Path,
        title: &str,
        command: &str,
        origin_mono_ns: u64,
        init_unix_ms: u64,
    ) -> std::io::Result<MmLogFile> {
        let mut head = Vec::new();
        mmlog::header(&mut head, title, command, init_unix_ms);
        let file = ChunkFile::create(path, &head)?;
        let handle = Arc::new(Mutex::new(MmLogWriter {
            w: Some(file.writer()),
            clock: MmClock {
                origin_ns: origin_mono_ns,
            },
            lines: 0,
            error: None,
        }));
        Ok(MmLogFile {
            path: path.to_path_buf(),
            file,
            handle,
        })
    }

    pub fn handle(&self) -> MmLogHandle {
        self.handle.clone()
    }

    /// Makes the closures a link logs its opportunities to.
    pub fn opportunity_logs(&self) -> Box<dyn Fn() -> OpportunityLog + Send> {
        let h = self.handle.clone();
        Box::new(move || {
            let h = h.clone();
            Box::new(move |t| with(&h, |w| w.opportunity(t)))
        })
    }

    /// Ends the log (later lines are ignored) and waits until it is in
    /// the file.
    pub fn finish(self, direction: &'static str) -> MmLogged {
        let (w, lines, mut error) = with(&self.handle, |m| (m.w.take(), m.lines, m.error.take()));
        if let Some(mut w) = w {
            if let Err(e) = w.hand_on() {
                error.get_or_insert(e.to_string());
            }
        }
        if let Err(e) = self.file.finish() {
            error.get_or_insert(e.to_string());
        }
        MmLogged {
            direction,
            path: self.path,
            lines,
            error,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_from_both_writers_reach_the_file_and_parse() {
        let dir = std::env::temp_dir().join(format!("wl-mmlog-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("a2b.log");
        let origin = 1_000_000_000;
        let f =
            MmLogFile::create(&p, "a2b (x -> y) [link t]", "wirelab emulate", origin, 42).unwrap();
        let h = f.handle();
        let mut opp = (f.opportunity_logs())();
        for i in 0..10_000u64 {
            let t = origin + i * 1_000_000;
            with(&h, |w| w.arrival(t, 1000));
            opp(t + 500_000);
            with(&h, |w| w.departure(t + 2_000_000, 1000, t));
        }
        let done = f.finish("a2b");
        opp(0); // after the end: ignored
        assert_eq!(done.lines, 30_000);
        assert_eq!(done.error, None);
        let s = mmlog::parse(&std::fs::read_to_string(&p).unwrap()).unwrap();
        assert_eq!(s.init_ms, Some(42));
        assert_eq!((s.arrivals, s.arrival_bytes), (10_000, 10_000_000));
        assert_eq!(
            (s.departures, s.departure_bytes, s.max_delay_ms),
            (10_000, 10_000_000, 2)
        );
        assert_eq!((s.opportunities, s.capacity_bytes), (10_000, 15_000_000));
        assert_eq!((s.first_ms, s.last_ms), (Some(0), 10_001));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

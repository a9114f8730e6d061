//! A shared stop request, set by signal handlers or by the caller; every
//! driver loop polls it (no OS call: one relaxed atomic load).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// Cheap to clone; all clones see the same flag.
#[derive(Clone, Default, Debug)]
pub struct StopFlag(Arc<AtomicBool>);

impl StopFlag {
    pub fn new() -> Self {
        Self::default()
    }
    pub fn stop(&self) {
        self.0.store(true, Ordering::Relaxed);
    }
    pub fn is_stopped(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }
    /// The inner flag, for `signal_hook::flag::register`.
    pub fn as_arc(&self) -> Arc<AtomicBool> {
        self.0.clone()
    }
}

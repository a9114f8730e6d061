//! Live progress on stderr, only when stderr is a terminal.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// A spinner line on stderr, or nothing when stderr is not a terminal or
/// the user asked for quiet.
pub fn spinner(quiet: bool) -> Option<ProgressBar> {
    if quiet || !std::io::stderr().is_terminal() {
        return None;
    }
    let pb = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr_with_hz(4));
    pb.set_style(
        ProgressStyle::with_template("{spinner} {elapsed_precise} {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_spinner()),
    );
    pb.enable_steady_tick(Duration::from_millis(250));
    Some(pb)
}

/// A spinner whose message a helper thread refreshes from a job's progress
/// counters every 250 ms (`message` gets the seconds since the start); it
/// is cleared when dropped.
pub struct Ticker {
    done: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
    pb: ProgressBar,
}

pub fn ticker(quiet: bool, message: impl Fn(f64) -> String + Send + 'static) -> Option<Ticker> {
    let pb = spinner(quiet)?;
    let done = Arc::new(AtomicBool::new(false));
    let (d, p) = (done.clone(), pb.clone());
    let thread = std::thread::spawn(move || {
        let t0 = Instant::now();
        while !d.load(Ordering::Relaxed) {
            p.set_message(message(t0.elapsed().as_secs_f64().max(1e-3)));
            std::thread::sleep(Duration::from_millis(250));
        }
    });
    Some(Ticker {
        done,
        thread: Some(thread),
        pb,
    })
}

impl Drop for Ticker {
    fn drop(&mut self) {
        self.done.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        self.pb.finish_and_clear();
    }
}

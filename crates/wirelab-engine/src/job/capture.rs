//! The capture job: [`wirelab_capture::Capture`] opened and run until its
//! count or duration or SIGINT/SIGTERM, with its start line and live
//! statistics lines as text.

use crate::StopFlag;
use std::time::Duration;
use thiserror::Error;
use wirelab_capture::{
    Capture, CaptureConfig, CaptureError, CaptureReport, LiveSnapshot, WaitPolicy,
};
use wirelab_io::rt::{pin_to_cpu, RtError};

#[derive(Debug, Error)]
pub enum CaptureJobError {
    #[error(transparent)]
    Capture(#[from] CaptureError),
    /// A CPU to pin to that this process cannot run on.
    #[error(transparent)]
    Cpu(RtError),
}

/// An open capture, its ring set up and its signals handled.
pub struct CaptureJob {
    cap: Capture,
    cfg: CaptureConfig,
    stop: StopFlag,
}

impl CaptureJob {
    /// Checks the CPUs to pin to (each by pinning a short-lived thread: the
    /// capture threads pin themselves only once running), installs the
    /// signal handlers and sets up the rings.
    pub fn open(cfg: CaptureConfig) -> Result<CaptureJob, CaptureJobError> {
        for &c in &cfg.cpus {
            std::thread::spawn(move || pin_to_cpu(c))
                .join()
                .unwrap_or(Ok(()))
                .map_err(CaptureJobError::Cpu)?;
        }
        let stop = super::stop_on_signals().map_err(CaptureError::from)?;
        let cap = Capture::open(cfg.clone())?;
        Ok(CaptureJob { cap, cfg, stop })
    }

    /// What the setup chose or fell back to.
    pub fn notes(&self) -> &[String] {
        self.cap.notes()
    }

    /// What runs: interface, filter, ring, wait, output, how it ends.
    pub fn banner(&self) -> String {
        let c = &self.cfg;
        let (bs, bc) = self.cap.geometry();
        let us = c.poll_period_ns / 1_000;
        format!(
            "wirelab capture: listening on {}{}, ring {bc} × {} KiB, wait {}, writing {}{}",
            c.ifname,
            if c.filter.is_empty() {
                String::new()
            } else {
                format!(" ({})", c.filter)
            },
            bs / 1024,
            match c.wait {
                WaitPolicy::Block => "block".into(),
                WaitPolicy::Poll => format!("poll every {us} µs"),
                WaitPolicy::Adaptive => format!("adaptive (poll every {us} µs)"),
            },
            c.path
                .as_ref()
                .map_or("-".into(), |p| p.display().to_string()),
            if c.count.is_none() && c.duration_ns.is_none() {
                "; Ctrl-C to stop"
            } else {
                ""
            }
        )
    }

    /// Captures until done; `line` gets a statistics line every `stats_every`.
    pub fn run(
        self,
        stats_every: Option<Duration>,
        mut line: impl FnMut(String),
    ) -> Result<CaptureReport, CaptureError> {
        let mut last = None;
        self.cap.run(&self.stop, stats_every, |s: &LiveSnapshot| {
            line(live_line(last.as_ref(), s));
            last = Some(*s);
        })
    }
}

/// One statistics line; rates over the time since `last`.
fn live_line(last: Option<&LiveSnapshot>, s: &LiveSnapshot) -> String {
    let (t0, p0, w0) = last.map_or((0.0, 0, 0), |l| (l.elapsed_s, l.packets, l.wakeups));
    let dt = (s.elapsed_s - t0).max(1e-6);
    format!(
        "{:8.1}s {:>12} pkts {:>10.0} pps {:>8.1} MB  ring drops {}  wake-ups {:.0}/s  mode {} ({} switches)",
        s.elapsed_s,
        s.packets,
        (s.packets - p0) as f64 / dt,
        s.bytes as f64 / 1e6,
        s.ring_drops,
        (s.wakeups - w0) as f64 / dt,
        s.mode.as_str(),
        s.switches
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use wirelab_core::forecast::WaitMode;

    #[test]
    fn live_lines_give_rates_since_the_last_line() {
        let s = |elapsed_s, packets, wakeups| LiveSnapshot {
            elapsed_s,
            packets,
            bytes: 3_000_000,
            wakeups,
            ring_drops: 2,
            switches: 1,
            mode: WaitMode::Poll,
        };
        let first = s(1.0, 1000, 10);
        let l = live_line(None, &first);
        assert!(l.contains("1000 pkts       1000 pps"), "{l}");
        let l = live_line(Some(&first), &s(3.0, 5000, 30));
        assert!(l.contains("5000 pkts       2000 pps"), "{l}");
        assert!(
            l.contains("3.0 MB  ring drops 2  wake-ups 10/s  mode poll (1 switches)"),
            "{l}"
        );
    }
}

#[cfg(test)]
mod open_tests {
    use super::*;
    use wirelab_capture::{FileFormat, Rotation};
    use wirelab_io::ring_rx::{FanoutMode, RingConfig};

    #[test]
    fn a_cpu_this_process_cannot_run_on_is_refused_before_the_ring() {
        let cfg = CaptureConfig {
            ifname: "wlnosuch0".into(),
            filter: String::new(),
            snaplen: 262_144,
            ring: RingConfig::default(),
            wait: WaitPolicy::Block,
            poll_period_ns: 1_000_000,
            count: Some(1),
            duration_ns: None,
            threads: 1,
            fanout: FanoutMode::Hash,
            path: None,
            merge: true,
            format: FileFormat::Pcapng,
            rotation: Rotation::default(),
            cpus: vec![100_000],
            avoid_rps_cpus: false,
            direct_io: false,
        };
        let e = CaptureJob::open(cfg)
            .err()
            .expect("CPU 100000 does not exist");
        assert!(
            matches!(e, CaptureJobError::Cpu(RtError::Pin { cpu: 100_000, .. })),
            "{e}"
        );
    }
}

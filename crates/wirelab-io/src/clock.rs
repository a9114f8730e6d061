//! Clocks and waits. Monotonic time drives schedules; wall-clock time is
//! what goes into probes and records (comparable across hosts when their
//! clocks are synchronized).

use std::io;

fn now(clock: libc::clockid_t) -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; clock ids used here
    // (MONOTONIC, REALTIME, THREAD_CPUTIME_ID of the calling thread) are
    // constants the kernel always supports, so the call cannot fail.
    unsafe { libc::clock_gettime(clock, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// CLOCK_MONOTONIC in ns.
pub fn mono_ns() -> u64 {
    now(libc::CLOCK_MONOTONIC)
}

/// CPU time the calling thread has used (user and system), in ns.
pub fn thread_cpu_ns() -> u64 {
    now(libc::CLOCK_THREAD_CPUTIME_ID)
}

/// CLOCK_REALTIME in ns since the Unix epoch (plus the test offset, see
/// [`TEST_OFFSET_ENV`]).
pub fn real_ns() -> u64 {
    shift_real(now(libc::CLOCK_REALTIME))
}

/// The resolution of CLOCK_REALTIME in ns (clock_getres; 1 ns on
/// high-resolution timers).
pub fn real_resolution_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec and CLOCK_REALTIME always
    // exists; on the impossible failure `ts` stays zero and 1 ns is used.
    unsafe { libc::clock_getres(libc::CLOCK_REALTIME, &mut ts) };
    (ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64).max(1)
}

/// Test hook (`wirelab agent --test-clock-offset`): this environment
/// variable, a signed number of ns, is added to every realtime stamp this
/// process reports — [`real_ns`], and through it the monotonic-to-realtime
/// offset, and the kernel's receive stamps — so that a process on one
/// machine behaves as if its clock were that far off. Read once; unset,
/// stamps are the clock's own.
pub const TEST_OFFSET_ENV: &str = "WIRELAB_TEST_CLOCK_OFFSET_NS";

/// The test offset of [`TEST_OFFSET_ENV`] (0 when unset or unreadable).
pub fn test_offset_ns() -> i64 {
    static OFFSET: std::sync::OnceLock<i64> = std::sync::OnceLock::new();
    *OFFSET.get_or_init(|| {
        std::env::var(TEST_OFFSET_ENV)
            .ok()
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(0)
    })
}

/// A realtime stamp read from the system (a clock read, a kernel receive
/// stamp) as this process reports it: shifted by the test offset.
pub fn shift_real(ns: u64) -> u64 {
    ns.saturating_add_signed(test_offset_ns())
}

/// Offset to turn a monotonic reading into wall-clock time, sampled once
/// (the two reads bracket each other within a few tens of ns).
pub fn mono_to_real_offset() -> i128 {
    let m1 = mono_ns();
    let r = real_ns();
    let m2 = mono_ns();
    offset_between(m1, r, m2)
}

/// The offset from monotonic to wall-clock time given a wall-clock read `r`
/// bracketed by monotonic reads `m1` and `m2`: `r` is taken to be the
/// midpoint, an error of at most `(m2 - m1) / 2`.
fn offset_between(m1: u64, r: u64, m2: u64) -> i128 {
    r as i128 - ((m1 as i128 + m2 as i128) / 2)
}

/// The clock and waits a paced driver needs: [`MonoClock`] is this
/// machine's CLOCK_MONOTONIC, `crate::sim::SimClock` a virtual one with
/// scripted stalls for tests.
pub trait Clock {
    /// Monotonic ns.
    fn now_ns(&mut self) -> u64;
    /// Sleeps until the absolute `t_ns`; may return early (a signal).
    fn sleep_until(&mut self, t_ns: u64);
    /// Busy-polls until `t_ns`; returns the time read.
    fn spin_until(&mut self, t_ns: u64) -> u64;
    /// CPU time the calling thread has used.
    fn thread_cpu_ns(&mut self) -> u64;
    /// Wall-clock ns since the Unix epoch (what goes into probes and records).
    fn wall_ns(&mut self) -> u64;
    /// Spins until `until_ns`, recording when the thread lost the CPU
    /// (see [`record_stalls`]).
    fn record_stalls(
        &mut self,
        until_ns: u64,
        threshold_ns: u64,
        max: usize,
        out: &mut Vec<(u64, u64)>,
    ) -> usize;
}

/// The machine's clocks: CLOCK_MONOTONIC, absolute sleeps, spins.
#[derive(Debug, Clone, Copy, Default)]
pub struct MonoClock;

impl Clock for MonoClock {
    fn now_ns(&mut self) -> u64 {
        mono_ns()
    }

    fn sleep_until(&mut self, t_ns: u64) {
        // EINTR returns early, as the trait allows.
        let _ = sleep_until_mono(t_ns);
    }

    fn spin_until(&mut self, t_ns: u64) -> u64 {
        spin_until_mono(t_ns)
    }

    fn thread_cpu_ns(&mut self) -> u64 {
        thread_cpu_ns()
    }

    fn wall_ns(&mut self) -> u64 {
        real_ns()
    }

    fn record_stalls(
        &mut self,
        until_ns: u64,
        threshold_ns: u64,
        max: usize,
        out: &mut Vec<(u64, u64)>,
    ) -> usize {
        record_stalls(until_ns, threshold_ns, max, out)
    }
}

/// Sleeps until the absolute CLOCK_MONOTONIC time `deadline_ns`
/// (clock_nanosleep with TIMER_ABSTIME: no drift from computing durations).
/// Returns early with `Interrupted` when a signal arrives.
pub fn sleep_until_mono(deadline_ns: u64) -> io::Result<()> {
    let ts = libc::timespec {
        tv_sec: (deadline_ns / 1_000_000_000) as libc::time_t,
        tv_nsec: (deadline_ns % 1_000_000_000) as libc::c_long,
    };
    // SAFETY: `ts` is a valid timespec; the remainder pointer may be null
    // with TIMER_ABSTIME.
    let rc = unsafe {
        libc::clock_nanosleep(
            libc::CLOCK_MONOTONIC,
            libc::TIMER_ABSTIME,
            &ts,
            std::ptr::null_mut(),
        )
    };
    match rc {
        0 => Ok(()),
        e => Err(io::Error::from_raw_os_error(e)),
    }
}

/// Busy-polls CLOCK_MONOTONIC until `deadline_ns`; returns the time read.
pub fn spin_until_mono(deadline_ns: u64) -> u64 {
    loop {
        let t = mono_ns();
        if t >= deadline_ns {
            return t;
        }
        std::hint::spin_loop();
    }
}

/// Spins on CLOCK_MONOTONIC until `until_ns` and records every gap longer
/// than `threshold_ns` between two reads, as `(start, end)`: the moments
/// this thread lost the CPU (the tick, interrupts, a host preempting the
/// vCPU). Keeps at most `max` of them; returns how many there were in all.
/// `out` is cleared first.
pub fn record_stalls(
    until_ns: u64,
    threshold_ns: u64,
    max: usize,
    out: &mut Vec<(u64, u64)>,
) -> usize {
    out.clear();
    let mut seen = 0;
    let mut prev = mono_ns();
    while prev < until_ns {
        let t = mono_ns();
        if t - prev > threshold_ns {
            seen += 1;
            if out.len() < max {
                out.push((prev, t));
            }
        }
        prev = t;
    }
    seen
}

/// Sets this thread's timer slack (ns); 1 ns makes sleeps wake as close to
/// their deadline as the kernel allows. Best effort.
pub fn set_timer_slack(ns: u64) {
    // SAFETY: PR_SET_TIMERSLACK takes an integer argument; no memory is passed.
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, ns as libc::c_ulong, 0, 0, 0) };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn monotonic_advances_and_sleep_is_absolute() {
        let a = mono_ns();
        sleep_until_mono(a + 2_000_000).unwrap();
        let b = mono_ns();
        assert!(b >= a + 2_000_000);
        let c = spin_until_mono(b + 10_000);
        assert!(c >= b + 10_000);
        // A deadline in the past returns at once.
        sleep_until_mono(a).unwrap();
    }

    #[test]
    fn stalls_are_recorded_in_order_within_the_window() {
        // Whatever stalls this machine shows: in order, inside the window,
        // above the threshold.
        let start = mono_ns();
        let mut out = Vec::new();
        let n = record_stalls(start + 20_000_000, 1_000, 10_000, &mut out);
        assert_eq!(n.min(10_000), out.len());
        for w in out.windows(2) {
            assert!(w[0].1 <= w[1].0);
        }
        for &(a, b) in &out {
            assert!(b - a > 1_000 && a >= start);
        }
        // Nothing recorded when the window is already over.
        assert_eq!(record_stalls(start, 1_000, 10, &mut out), 0);
        assert!(out.is_empty());
    }

    #[test]
    fn realtime_is_after_2020_and_the_offset_is_the_midpoint() {
        assert!(real_ns() > 1_577_836_800_000_000_000);
        assert_eq!(offset_between(100, 1_000_150, 200), 1_000_000);
        assert_eq!(offset_between(300, 50, 301), -250);
    }
}

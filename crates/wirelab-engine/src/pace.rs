//! The paced driver's shared parts, over `wirelab_io`'s traits: waiting
//! for a deadline as the [`Pacer`] says, and sending a batch with the one
//! retry policy for transient errors. `sender` and `replay` (and the
//! emulator's release path) run their loops on these.

use std::io;
use wirelab_core::pace::{Pacer, Step};
use wirelab_io::tx::is_transient;
use wirelab_io::{Clock, Transmit};

/// Retries of a transient send error (ENOBUFS, EAGAIN, EINTR,
/// ECONNREFUSED) before the packet is given up on; the thread yields
/// between tries.
pub const SEND_RETRIES: u32 = 1_000;

/// Waits for `deadline_ns`, seen first at `now_ns`, sleeping and spinning
/// as `pacer` says and teaching it from every sleep and CPU window.
/// Returns the clock when it is time to send, or `None` when a sleep ended
/// before its target (a signal): the caller checks its stop flag and asks
/// again.
pub fn wait_for<C: Clock>(
    clock: &mut C,
    pacer: &mut Pacer,
    deadline_ns: u64,
    mut now_ns: u64,
) -> Option<u64> {
    loop {
        match pacer.step(deadline_ns, now_ns) {
            Step::Go => return Some(now_ns),
            Step::Sleep(t) => {
                clock.sleep_until(t);
                let woke = clock.now_ns();
                pacer.slept(now_ns, t, woke, deadline_ns);
                now_ns = woke;
                if woke < t {
                    return None;
                }
            }
            Step::Spin(t) => now_ns = clock.spin_until(t),
        }
        if pacer.cpu_due(now_ns) {
            pacer.cpu_sample(now_ns, clock.thread_cpu_ns());
        }
    }
}

/// What [`send_batch`] did.
#[derive(Debug, Default)]
pub struct Delivery {
    /// Packets taken by the kernel: a prefix of those offered.
    pub sent: usize,
    /// Transient errors retried.
    pub retries: u64,
    /// Why the rest was not sent: a hard error, or the last transient one
    /// once the retries ran out.
    pub error: Option<io::Error>,
}

/// Sends `packets` in as few calls as the kernel allows, retrying after a
/// partial send or a transient error (no packet is skipped), stopping at a
/// hard error or after `max_retries` transient ones.
pub fn send_batch<T: Transmit + ?Sized>(
    tx: &mut T,
    packets: &[&[u8]],
    max_retries: u32,
) -> Delivery {
    let mut d = Delivery::default();
    let mut tries = 0u32;
    while d.sent < packets.len() {
        match tx.transmit(&packets[d.sent..]) {
            Ok(0) => {
                tries += 1;
                if tries > max_retries {
                    d.error = Some(io::Error::from(io::ErrorKind::WriteZero));
                    break;
                }
            }
            Ok(k) => d.sent += k,
            Err(e) if is_transient(&e) && tries < max_retries => {
                tries += 1;
                d.retries += 1;
                std::thread::yield_now();
            }
            Err(e) => {
                d.error = Some(e);
                break;
            }
        }
    }
    d
}

/// Runs `op` (a ring kick, say) until it succeeds, retrying transient
/// errors as [`send_batch`] does; returns its result and the retries.
pub fn with_retries<R>(
    max_retries: u32,
    mut op: impl FnMut() -> io::Result<R>,
) -> (io::Result<R>, u64) {
    let mut retries = 0;
    loop {
        match op() {
            Err(e) if is_transient(&e) && retries < u64::from(max_retries) => {
                retries += 1;
                std::thread::yield_now();
            }
            r => return (r, retries),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wirelab_core::pace::{LatePolicy, MarginBounds, PaceConfig, WaitStrategy};
    use wirelab_io::sim::{SimClock, SimResult, SimTx};

    #[test]
    fn transient_errors_are_retried_and_hard_ones_stop_the_batch() {
        let c = SimClock::new(0);
        let mut tx = SimTx::new(&c, 1_000, 0).script([
            SimResult::Fail(libc::ENOBUFS),
            SimResult::Take(1),
            SimResult::Fail(libc::ECONNREFUSED),
        ]);
        let p: [&[u8]; 3] = [b"a", b"b", b"c"];
        let d = send_batch(&mut tx, &p, 10);
        assert_eq!((d.sent, d.retries), (3, 2));
        assert!(d.error.is_none());
        let mut tx =
            SimTx::new(&c, 1_000, 0).script([SimResult::Take(1), SimResult::Fail(libc::EMSGSIZE)]);
        let d = send_batch(&mut tx, &p, 10);
        assert_eq!(d.sent, 1);
        assert_eq!(d.error.unwrap().raw_os_error(), Some(libc::EMSGSIZE));
        // Retries run out.
        let mut tx = SimTx::new(&c, 1_000, 0).script((0..5).map(|_| SimResult::Fail(libc::EAGAIN)));
        let d = send_batch(&mut tx, &p, 3);
        assert_eq!((d.sent, d.retries), (0, 3));
        assert!(d.error.is_some());
        let (r, n) = with_retries(5, {
            let mut k = 0;
            move || {
                k += 1;
                if k < 3 {
                    Err(io::Error::from_raw_os_error(libc::EINTR))
                } else {
                    Ok(k)
                }
            }
        });
        assert_eq!((r.unwrap(), n), (3, 2));
    }

    #[test]
    fn a_hybrid_wait_sleeps_then_spins_to_the_deadline_and_learns() {
        let mut clock = SimClock::new(0).oversleep(40_000);
        let mut p = Pacer::new(
            0,
            PaceConfig {
                wait: WaitStrategy::Hybrid { spin_ns: 2_000_000 },
                learn: Some(MarginBounds::SEND),
                late: LatePolicy::DEFAULT,
                anchor_first: false,
            },
        );
        let mut deadline = 0;
        for _ in 0..10_000 {
            deadline += 10_000_000;
            let now = clock.now_ns();
            assert_eq!(wait_for(&mut clock, &mut p, deadline, now), Some(deadline));
        }
        // 40 µs oversleeps, seen by a clock read costing 20 ns: the margin
        // settles at 1.5 × 40.02 µs + 5 µs.
        assert_eq!(p.margin_ns(), Some(65_030));
        assert_eq!(p.stats().sleeps, 10_000);
        assert_eq!(p.stats().sleeps_past_deadline, 0);
    }
}

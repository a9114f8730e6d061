//! Sans-IO decisions of a capture thread: how long a blocking wait may sleep, where the
//! next poll slot lies, how long a packet can still be on its way to the ring (the drain
//! after a stop and the merge watermark), when a rotating file is cut, which CPUs the
//! threads run on. Times are ns, passed in; nothing here reads a clock.

/// Longest a blocking wait sleeps, so a stop or the progress line is seen within it.
pub const MAX_BLOCK_WAIT_NS: u64 = 50_000_000;
/// Shortest blocking wait before the capture's deadline (no busy loop near the end).
pub const MIN_BLOCK_WAIT_NS: u64 = 1_000_000;
/// Retire timeout assumed when the ring reports less (0: the kernel's default, which it
/// derives from the link speed and does not report).
pub const MIN_RETIRE_MS: u32 = 8;
/// Slack for a packet between its stamp and the ring beyond the retire timeouts.
pub const IN_FLIGHT_SLACK_NS: u64 = 20_000_000;

/// How long after time `t` a packet stamped before `t` can still be unread: a partly
/// filled block is retired within one retire timeout (`retire_ms`), counted twice, plus
/// [`IN_FLIGHT_SLACK_NS`]. The drain after a stop lasts this long, and a thread that found
/// its ring empty at `t` promises the merge nothing older than `t` minus this.
pub fn in_flight_bound_ns(retire_ms: u32) -> u64 {
    (u64::from(retire_ms.max(MIN_RETIRE_MS)) * 2) * 1_000_000 + IN_FLIGHT_SLACK_NS
}

/// The merge watermark of a thread that found its ring empty at `scan_start_ns`.
pub fn idle_watermark_ns(scan_start_ns: u64, bound_ns: u64) -> u64 {
    scan_start_ns.saturating_sub(bound_ns)
}

/// How long a blocking wait at `now_ns` may sleep: [`MAX_BLOCK_WAIT_NS`], or until the
/// `deadline_ns` (but at least [`MIN_BLOCK_WAIT_NS`]).
pub fn block_wait_ns(now_ns: u64, deadline_ns: Option<u64>) -> u64 {
    match deadline_ns {
        Some(d) => d
            .saturating_sub(now_ns)
            .clamp(MIN_BLOCK_WAIT_NS, MAX_BLOCK_WAIT_NS),
        None => MAX_BLOCK_WAIT_NS,
    }
}

/// The poll slot after `slot_ns` on an absolute grid of `period_ns`; if processing ran
/// past it (`now_ns` at or after it), the missed slots are skipped and the next one is a
/// full period from now.
pub fn next_poll_ns(slot_ns: u64, now_ns: u64, period_ns: u64) -> u64 {
    let next = slot_ns.saturating_add(period_ns);
    if next <= now_ns {
        now_ns.saturating_add(period_ns)
    } else {
        next
    }
}

/// When a file opened at `now_ns` (wall clock) is cut with time rotation every
/// `every_ns` (0 counts as 1): `every_ns` later, or with `align` at the next multiple of
/// `every_ns` since the Unix epoch.
pub fn next_rotation_ns(now_ns: u64, every_ns: u64, align: bool) -> u64 {
    let every = every_ns.max(1);
    if align {
        (now_ns / every).saturating_add(1).saturating_mul(every)
    } else {
        now_ns.saturating_add(every)
    }
}

/// The CPUs capture threads run on to stay off the CPUs that do the interface's receive
/// processing (`rps`, from its RPS masks), out of `online` CPUs; `None` (leave the
/// scheduler's choice) when no RPS CPUs are set or every CPU does RPS.
pub fn cpus_off_rps(online: usize, rps: &[usize]) -> Option<Vec<usize>> {
    let free: Vec<usize> = (0..online).filter(|c| !rps.contains(c)).collect();
    (!rps.is_empty() && !free.is_empty()).then_some(free)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn in_flight_bound_and_watermark() {
        assert_eq!(
            in_flight_bound_ns(0),
            36_000_000,
            "kernel default counts as 8 ms"
        );
        assert_eq!(in_flight_bound_ns(8), 36_000_000);
        assert_eq!(in_flight_bound_ns(100), 220_000_000);
        assert_eq!(
            in_flight_bound_ns(u32::MAX),
            u64::from(u32::MAX) * 2_000_000 + 20_000_000
        );
        assert_eq!(idle_watermark_ns(1_000_000_000, 36_000_000), 964_000_000);
        assert_eq!(idle_watermark_ns(5, 36_000_000), 0);
    }

    #[test]
    fn block_wait_stops_at_the_deadline_but_never_spins() {
        assert_eq!(block_wait_ns(0, None), MAX_BLOCK_WAIT_NS);
        assert_eq!(block_wait_ns(0, Some(1_000_000_000)), MAX_BLOCK_WAIT_NS);
        assert_eq!(block_wait_ns(990_000_000, Some(1_000_000_000)), 10_000_000);
        assert_eq!(
            block_wait_ns(999_900_000, Some(1_000_000_000)),
            MIN_BLOCK_WAIT_NS
        );
        assert_eq!(
            block_wait_ns(2_000_000_000, Some(1_000_000_000)),
            MIN_BLOCK_WAIT_NS
        );
    }

    #[test]
    fn poll_grid_is_absolute_and_skips_missed_slots() {
        assert_eq!(next_poll_ns(1_000, 1_500, 1_000), 2_000, "on the grid");
        assert_eq!(
            next_poll_ns(1_000, 2_000, 1_000),
            3_000,
            "slot reached: skip it"
        );
        assert_eq!(
            next_poll_ns(1_000, 5_300, 1_000),
            6_300,
            "late: a period from now"
        );
        assert_eq!(next_poll_ns(u64::MAX - 1, 0, 10), u64::MAX);
    }

    #[test]
    fn rotation_boundaries() {
        let s = 1_000_000_000u64;
        assert_eq!(next_rotation_ns(1_234 * s + 5, 10 * s, true), 1_240 * s);
        assert_eq!(next_rotation_ns(1_240 * s, 10 * s, true), 1_250 * s);
        assert_eq!(
            next_rotation_ns(1_234 * s + 5, 10 * s, false),
            1_244 * s + 5
        );
        assert_eq!(next_rotation_ns(7, 0, true), 8);
        assert_eq!(next_rotation_ns(u64::MAX, 10, true), u64::MAX);
    }

    #[test]
    fn rps_cpus_are_avoided_when_some_are_left() {
        assert_eq!(cpus_off_rps(4, &[0, 2]), Some(vec![1, 3]));
        assert_eq!(cpus_off_rps(4, &[]), None, "no RPS configured");
        assert_eq!(cpus_off_rps(2, &[0, 1]), None, "every CPU does RPS");
        assert_eq!(cpus_off_rps(2, &[5]), Some(vec![0, 1]));
    }
}

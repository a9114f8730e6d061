//! Virtual-clock tests of the schedule and the late policies.
use super::*;
use crate::pace::CatchUp;

/// Simulates a sender: packets with ideal times `ideal`; the sender wakes
/// exactly on target except once, when it sleeps until `stall_until`; each
/// send costs `cost` ns. Returns actual departures.
fn simulate(
    policy: LatePolicy,
    ideal: &[u64],
    stall_at: usize,
    stall_until: u64,
    cost: u64,
) -> Vec<u64> {
    let mut p = CatchUp::new(policy);
    let mut now = 0u64;
    let mut out = vec![];
    for (i, &id) in ideal.iter().enumerate() {
        let t = p.target(id);
        now = now.max(t);
        if i == stall_at {
            now = now.max(stall_until);
        }
        p.departed(id, t, now);
        out.push(now);
        now += cost;
    }
    out
}

fn cbr(n: u64, gap: u64) -> Vec<u64> {
    let mut s = Schedule::new(Timing::Original { multiplier: 1.0 });
    (0..n).map(|i| s.next(i * gap, 100)).collect()
}

#[test]
fn burst_collapses_gaps_but_keeps_schedule() {
    let ideal = cbr(100, 100_000);
    let act = simulate(LatePolicy::Burst, &ideal, 10, 1_500_000, 1_000);
    // After the stall, 5 packets leave 1 µs apart, then the schedule holds.
    assert_eq!(act[11] - act[10], 1_000);
    assert_eq!(act[99], ideal[99]);
}

#[test]
fn spread_shrinks_gaps_by_at_most_2us_and_rejoins() {
    let ideal = cbr(100, 100_000);
    // A 12 µs stall at packet 10: caught up 2 µs per gap, 6 gaps later.
    let act = simulate(LatePolicy::DEFAULT, &ideal, 10, 1_012_000, 1_000);
    for i in 11..100 {
        assert!(
            act[i] - act[i - 1] >= 98_000,
            "gap {i} shrunk by more than 2 µs"
        );
    }
    assert_eq!(act[17] - act[16], 100_000, "caught up by packet 17");
    // A 0.8 ms stall: gaps shrink at once but keep half the gap.
    let act = simulate(LatePolicy::DEFAULT, &ideal, 10, 1_800_000, 1_000);
    for i in 11..100 {
        assert!(act[i] - act[i - 1] >= 50_000, "gap {i} collapsed");
    }
    assert_eq!(act[99], ideal[99], "no drift after catching up");
    assert_eq!(act[99] - act[0], ideal[99] - ideal[0], "no duration error");
    let late: Vec<bool> = ideal
        .iter()
        .zip(&act)
        .map(|(i, a)| a - i > 10_000)
        .collect();
    let runs = late.windows(2).filter(|w| w[1] && !w[0]).count() + usize::from(late[0]);
    assert_eq!(runs, 1, "one run of late packets");
    assert!(late.iter().filter(|&&l| l).count() >= 5);
}

#[test]
fn spread_bursts_past_a_millisecond_of_lateness() {
    let ideal = cbr(100, 100_000);
    // 1.5 ms late at packet 10 (1 µs send cost).
    let act = simulate(LatePolicy::DEFAULT, &ideal, 10, 2_500_000, 1_000);
    // Back to back while the previous packet left more than 1 ms late
    // (packets 11-16), then half-gaps until the schedule is rejoined.
    for i in 11..=16 {
        assert_eq!(act[i] - act[i - 1], 1_000, "gap {i}");
    }
    assert!((17..100).all(|i| act[i] - act[i - 1] >= 50_000));
    assert_eq!(act[99], ideal[99]);
    // Just under the limit the floor still holds.
    let act = simulate(LatePolicy::DEFAULT, &ideal, 10, 1_990_000, 1_000);
    assert!((11..100).all(|i| act[i] - act[i - 1] >= 50_000));
}

#[test]
fn spread_works_small_lateness_off_gently_and_larger_lateness_at_once() {
    let ideal = cbr(100, 100_000);
    // 12 µs late (within 8 × 2 µs): six gaps 2 µs short.
    let act = simulate(LatePolicy::DEFAULT, &ideal, 10, 1_012_000, 1_000);
    let short: Vec<u64> = (11..20).map(|i| 100_000 - (act[i] - act[i - 1])).collect();
    assert_eq!(short, [2_000, 2_000, 2_000, 2_000, 2_000, 2_000, 0, 0, 0]);
    // 30 µs late: one gap 30 µs short, then on schedule again (one bad
    // gap instead of the ten an eighth-per-gap catch-up made).
    let act = simulate(LatePolicy::DEFAULT, &ideal, 10, 1_030_000, 1_000);
    assert_eq!(act[11] - act[10], 70_000);
    assert!((12..100).all(|i| act[i] == ideal[i]));
    // A wider horizon keeps that gentle too.
    let wide = LatePolicy::Spread {
        factor: 0.5,
        max_shrink_ns: 2_000,
        horizon: 16,
    };
    let act = simulate(wide, &ideal, 10, 1_030_000, 1_000);
    assert!((11..26).all(|i| act[i] - act[i - 1] == 98_000));
    assert_eq!(act[26], ideal[26]);
}

#[test]
fn rebase_keeps_gaps_and_drifts() {
    let ideal = cbr(100, 100_000);
    let act = simulate(
        LatePolicy::Rebase {
            threshold_ns: 10_000,
        },
        &ideal,
        10,
        1_500_000,
        1_000,
    );
    for i in 11..100 {
        assert_eq!(act[i] - act[i - 1], 100_000);
    }
    assert_eq!(act[99] - ideal[99], 500_000);
}

#[test]
fn rates_and_bursts() {
    let mut s = Schedule::new(Timing::Pps {
        pps: 1000.0,
        burst: 4,
    });
    let t: Vec<u64> = (0..9).map(|_| s.next(0, 60)).collect();
    assert_eq!(
        t,
        [0, 0, 0, 0, 4_000_000, 4_000_000, 4_000_000, 4_000_000, 8_000_000]
    );
    // 1000-byte frames at 8 Mbit/s L2: 1 ms each.
    let mut s = Schedule::new(Timing::Rate {
        bps: 8e6,
        wire: false,
        burst: 1,
    });
    let t: Vec<u64> = (0..3).map(|_| s.next(0, 1000)).collect();
    assert_eq!(t, [0, 1_000_000, 2_000_000]);
    // Wire rate counts 24 bytes more (and pads to 60).
    let mut s = Schedule::new(Timing::Rate {
        bps: 8e6,
        wire: true,
        burst: 1,
    });
    let t: Vec<u64> = (0..2).map(|_| s.next(0, 976)).collect();
    assert_eq!(t, [0, 1_000_000]);
    let mut s = Schedule::new(Timing::Original { multiplier: 2.0 });
    assert_eq!(s.next(3_000, 1), 1_500);
    let mut s = Schedule::new(Timing::Topspeed);
    assert_eq!(s.next(3_000, 1), 0);
}

#[test]
fn loops_are_continuous() {
    let c = LoopClock::new(900, 10, None);
    assert_eq!(c.period_ns, 1000);
    assert_eq!(c.trace_ns(2, 5), 2005);
    assert_eq!(LoopClock::new(900, 10, Some(50)).period_ns, 950);
    assert_eq!(LoopClock::new(0, 1, None).period_ns, 1_000_000);
}

/// A sender on a virtual clock whose send call costs `kick` ns however
/// many frames it carries; frames due at the same decision leave together.
/// Returns the departures.
fn simulate_batched(ideal: &[u64], kick: u64, stall_at: usize, stall: u64, rule: bool) -> Vec<u64> {
    let mut p = CatchUp::new(LatePolicy::DEFAULT);
    let mut now = 0u64;
    let mut out = vec![0u64; ideal.len()];
    let mut batch: Vec<usize> = vec![];
    for (i, &id) in ideal.iter().enumerate() {
        let t = p.target(id);
        let d = if rule {
            catch_up_deadline(id, t, now, kick)
        } else {
            t
        };
        if d > now && !batch.is_empty() {
            for &b in &batch {
                out[b] = now;
            }
            batch.clear();
            now += kick;
        }
        now = now.max(d);
        if i == stall_at {
            now += stall;
        }
        p.departed(id, t, now);
        batch.push(i);
    }
    for &b in &batch {
        out[b] = now;
    }
    out
}

#[test]
fn late_packets_join_the_batch_when_a_kick_costs_more_than_the_gap() {
    // 10 µs CBR, a kick costs 12 µs: one packet per kick falls behind by
    // 2 µs per packet until the spread policy gives up at 1 ms of lateness
    // and stays that late; with the catch-up rule the sender batches and
    // ends on schedule.
    let ideal = cbr(10_000, 10_000);
    let without = simulate_batched(&ideal, 12_000, usize::MAX, 0, false);
    let with = simulate_batched(&ideal, 12_000, usize::MAX, 0, true);
    let late = |a: &[u64]| a[a.len() - 1] - ideal[ideal.len() - 1];
    assert!(late(&without) > 900_000, "{}", late(&without));
    assert!(late(&with) < 30_000, "{}", late(&with));
    // A cheap kick never batches an on-time packet, and after a stall the
    // rule rejoins the schedule with no drift.
    let with = simulate_batched(&ideal, 2_000, 100, 500_000, true);
    assert_eq!(with[9_999], ideal[9_999]);
    assert!(with[..100].iter().zip(&ideal).all(|(a, i)| a == i));
    // The rule itself.
    assert_eq!(catch_up_deadline(100, 105, 100, 10), 100);
    assert_eq!(catch_up_deadline(101, 105, 100, 10), 105, "not late yet");
    assert_eq!(catch_up_deadline(100, 120, 100, 10), 120, "target too far");
}

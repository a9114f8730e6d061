//! The pacer driven over a generated schedule on a virtual clock, the way
//! `wirelab_engine::pace` drives it over a real one.
use super::*;
use crate::schedule::{Intervals, Limits};

const SPREAD: LatePolicy = LatePolicy::Spread {
    factor: 0.5,
    max_shrink_ns: 2_000,
    horizon: 8,
};

fn cfg(wait: WaitStrategy, late: LatePolicy) -> PaceConfig {
    PaceConfig {
        wait,
        learn: None,
        late,
        anchor_first: false,
    }
}

/// A virtual machine for one flow: each send call costs `base + per_pkt ×
/// n`, each sleep wakes `wake_late` after its target, and the thread is
/// preempted for `stall` at the end of its wait for packet `stall_at`.
struct Sim {
    base: u64,
    per_pkt: u64,
    wake_late: u64,
    stall_at: usize,
    stall: u64,
}

impl Sim {
    fn new(base: u64, per_pkt: u64, wake_late: u64) -> Sim {
        Sim {
            base,
            per_pkt,
            wake_late,
            stall_at: usize::MAX,
            stall: 0,
        }
    }

    /// Runs `n` packets `iv` apart from origin 1 ms; returns the batch
    /// sizes and per packet (scheduled, actual) departure, absolute.
    fn run(&self, mut p: Pacer, iv: f64, n: u64) -> (Vec<usize>, Vec<(u64, u64)>) {
        let lim = Limits {
            count: Some(n),
            duration_ns: None,
        };
        let mut s = Intervals::new(lim, 64);
        let (mut now, mut batches, mut sent, mut due) = (0u64, vec![], vec![], vec![]);
        let mut stalled = false;
        for _ in 0..10 * n + 100 {
            while s.wants_interval() {
                s.push_interval(iv);
            }
            let Some(first) = s.next() else { break };
            let deadline = p.deadline(first, now);
            match p.step(deadline, now) {
                Step::Go => {
                    let k = p.batch(s.pending().take(64), now);
                    s.take(k, &mut due);
                    let cost = self.base + self.per_pkt * k as u64;
                    for &d in &due {
                        p.departed(d, now);
                        sent.push((p.origin_ns() + d, now));
                    }
                    p.sent(k, cost);
                    if let Some(lag) = p.first_departure(due[0], now + cost) {
                        assert!(lag <= cost);
                    }
                    batches.push(k);
                    now += cost;
                }
                Step::Sleep(t) => {
                    let woke = t + self.wake_late;
                    p.slept(now, t, woke, deadline);
                    now = woke;
                }
                Step::Spin(t) => {
                    now = now.max(t);
                    if sent.len() == self.stall_at && !stalled {
                        stalled = true;
                        now += self.stall;
                    }
                }
            }
        }
        (batches, sent)
    }
}

#[test]
fn deadlines_are_absolute_no_drift() {
    // Sleeps wake 30 µs late every time; deadlines must not shift.
    let p = Pacer::new(1_000_000, cfg(WaitStrategy::Sleep, LatePolicy::Burst));
    let (_, sent) = Sim::new(2_000, 0, 30_000).run(p, 1e6, 100);
    assert_eq!(sent.len(), 100);
    for (k, (sched, actual)) in sent.iter().enumerate() {
        assert_eq!(*sched, 1_000_000 + k as u64 * 1_000_000);
        assert_eq!(actual - sched, 30_000);
    }
}

#[test]
fn hybrid_spins_to_the_exact_deadline() {
    let p = Pacer::new(
        1_000_000,
        cfg(WaitStrategy::Hybrid { spin_ns: 100_000 }, LatePolicy::Burst),
    );
    let (_, sent) = Sim::new(2_000, 0, 30_000).run(p, 1e6, 50);
    assert!(sent.iter().all(|(s, a)| s == a));
    let p = Pacer::new(0, cfg(WaitStrategy::Hybrid { spin_ns: 7 }, SPREAD));
    assert_eq!(p.step(1_000, 0), Step::Sleep(993));
    assert_eq!(p.step(1_000, 995), Step::Spin(1_000));
    assert_eq!(p.step(1_000, 1_000), Step::Go);
}

#[test]
fn batches_when_the_interval_is_shorter_than_a_send_call() {
    // 1 µs interval, a send call costs 5 µs + 100 ns per packet.
    let p = Pacer::new(1_000_000, cfg(WaitStrategy::Spin, LatePolicy::Burst));
    let (batches, sent) = Sim::new(5_000, 100, 0).run(p, 1_000.0, 10_000);
    assert_eq!(sent.len(), 10_000);
    assert!(batches.iter().any(|&b| b > 1), "{batches:?}");
    // Batching keeps up: lateness stays bounded by about one batch's cost.
    let max_late = sent.iter().map(|(s, a)| a - s).max().unwrap();
    assert!(max_late < 20_000, "max lateness {max_late}");
    assert!(sent.windows(2).all(|w| w[0].0 < w[1].0));
}

#[test]
fn never_sends_before_the_deadline() {
    let p = Pacer::new(
        1_000_000,
        cfg(WaitStrategy::Hybrid { spin_ns: 10_000 }, SPREAD),
    );
    let (_, sent) = Sim::new(1_500, 50, 7_000).run(p, 3_333.0, 3_000);
    assert_eq!(sent.len(), 3_000);
    assert!(sent.iter().all(|(s, a)| a >= s));
}

#[test]
fn spread_catches_up_with_short_gaps_where_burst_sends_back_to_back() {
    // 10 µs interval, 2 µs send calls, an 8 µs stall before packet 10.
    let sim = Sim {
        stall_at: 10,
        stall: 8_000,
        ..Sim::new(2_000, 0, 0)
    };
    let dep = |policy| {
        let mut p = Pacer::new(0, cfg(WaitStrategy::Spin, policy));
        // The cost the engine would have learned.
        for _ in 0..64 {
            p.sent(1, 2_000);
        }
        let (_, sent) = sim.run(p, 10_000.0, 40);
        sent.into_iter().map(|(_, a)| a).collect::<Vec<_>>()
    };
    let (burst, spread) = (dep(LatePolicy::Burst), dep(SPREAD));
    assert_eq!(burst[10] - burst[9], 18_000);
    assert_eq!(
        burst[11] - burst[10],
        2_000,
        "burst: the next follows at once"
    );
    assert_eq!(spread[10] - spread[9], 18_000);
    for k in 11..40 {
        let gap = spread[k] - spread[k - 1];
        assert!((8_000..=10_000).contains(&gap), "gap {k}: {gap}");
    }
    assert_eq!(spread[14], 140_000, "rejoined the schedule 4 gaps later");
    assert_eq!(spread[39], burst[39]);
}

#[test]
fn after_a_2ms_stall_spread_shrinks_no_gap_below_half_before_it_bursts() {
    // 100 µs CBR; a 2 ms stall is beyond SPREAD_BURST_AFTER_NS: what is due
    // leaves at once (one batch), then every gap is whole again.
    let sim = Sim {
        stall_at: 20,
        stall: 2_000_000,
        ..Sim::new(2_000, 0, 0)
    };
    let p = Pacer::new(0, cfg(WaitStrategy::Spin, SPREAD));
    let (batches, sent) = sim.run(p, 100_000.0, 100);
    assert_eq!(sent.len(), 100);
    let dep: Vec<u64> = sent.iter().map(|&(_, a)| a).collect();
    assert!(
        batches.iter().any(|&b| b > 1),
        "the backlog left in a batch"
    );
    let last = sent.last().unwrap();
    assert_eq!(last.0, last.1, "back on schedule, no drift");
    // After the batch, no gap is shorter than half the interval.
    let after = batches.iter().position(|&b| b > 1).unwrap();
    let first_after: usize = batches[..=after].iter().sum();
    for k in first_after + 1..100 {
        assert!(
            dep[k] - dep[k - 1] >= 50_000,
            "gap {k}: {}",
            dep[k] - dep[k - 1]
        );
    }
}

#[test]
fn spread_still_batches_when_a_send_call_costs_more_than_the_interval() {
    // 1 µs interval, 3 µs send calls: catch-up targets are nearer than one
    // call, so late packets join the batch and the run keeps up.
    let mut p = Pacer::new(0, cfg(WaitStrategy::Spin, SPREAD));
    for _ in 0..64 {
        p.sent(1, 3_000);
    }
    let (_, sent) = Sim::new(3_000, 0, 0).run(p, 1_000.0, 1_000);
    assert_eq!(sent.len(), 1_000);
    let last = sent.last().unwrap().1;
    assert!(last < 1_000 * 1_000 + 10_000, "fell behind: {last}");
}

#[test]
fn the_first_departure_moves_the_origin_and_is_not_lateness() {
    let mut c = cfg(WaitStrategy::Spin, SPREAD);
    c.anchor_first = true;
    let mut p = Pacer::new(1_000, c);
    assert_eq!(p.step(p.deadline(0, 1_000), 1_000), Step::Go);
    p.departed(0, 1_000);
    // The first send call returned 37 ns after its deadline.
    assert_eq!(p.first_departure(0, 1_037), Some(37));
    assert_eq!(p.origin_ns(), 1_037);
    assert_eq!(p.deadline(100, 1_100), 1_137, "no catch-up for the move");
    assert_eq!(p.first_departure(100, 5_000), None, "only the first");
    assert_eq!(p.stats().anchor_lag_ns, Some(37));
    // Limited (a calibrated phase): a lag beyond the limit keeps the origin.
    let mut p = Pacer::new(1_000, c);
    p.limit_anchor(30);
    assert_eq!(p.first_departure(0, 1_037), None);
    assert_eq!(p.origin_ns(), 1_000);
}

#[test]
fn a_learned_margin_follows_sleeps_and_a_busy_cpu() {
    let mut c = cfg(WaitStrategy::Hybrid { spin_ns: 2_000_000 }, SPREAD);
    c.learn = Some(MarginBounds::SEND);
    let mut p = Pacer::new(0, c);
    assert_eq!(p.margin_ns(), Some(2_000_000));
    // Quiet wake-ups (2 µs late) let the margin decay.
    let mut now = 0;
    for _ in 0..20_000 {
        p.slept(now, now + 1_000, now + 3_000, now + 10_000);
        now += 10_000;
    }
    assert_eq!(p.margin_ns(), Some(MarginBounds::SEND.floor_ns));
    assert_eq!(p.stats().sleeps, 20_000);
    assert_eq!(p.stats().sleeps_past_deadline, 0);
    // A window in which the thread neither ran nor slept half the time.
    assert!(p.cpu_due(now));
    p.cpu_sample(now, 0);
    let w = CpuWindow::WINDOW_NS;
    assert!(!p.cpu_due(now + w / 2));
    p.cpu_sample(now + w, w / 2);
    assert!(p.contended());
    assert_eq!(p.margin_ns(), Some(SpinMargin::CONTENDED_NS));
    assert_eq!(p.stats().contended_windows, 1);
    // A fixed margin learns nothing and asks for no CPU samples.
    let p = Pacer::new(0, cfg(WaitStrategy::Hybrid { spin_ns: 5 }, SPREAD));
    assert!(!p.cpu_due(0));
    assert_eq!(p.margin_ns(), Some(5));
}

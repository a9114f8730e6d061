//! The clock-offset estimate and the common start on a virtual clock: the
//! controller's clock is a counter, each host's clock runs a known offset
//! (and drift) from it, and every probe crosses a path whose delays are
//! injected — an asymmetric floor plus noise with a heavy tail, as a loaded
//! machine gives. What the end-to-end tests (e2e_clock.rs, e2e_run_ssh.rs)
//! could only check against real timings holds here exactly: the true
//! offset lies within θ ± U, U is what the fastest probe allows, corrected
//! one-way delays are the path's within U, and the senders, each started at
//! T0 on its own clock, start together within their hosts' U.

use super::*;
use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;

/// The controller's clock when the probes start (unix ns).
const START: u64 = 1_700_000_000_000_000_000;
/// The stamps' resolution the estimate adds to U.
const RES: u64 = 2;

/// A deterministic noise source (xorshift64*).
struct Noise(u64);

impl Noise {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// Extra delay: up to 200 µs, and one probe in eight up to 20 ms (a
    /// descheduled agent or controller).
    fn delay(&mut self) -> u64 {
        let r = self.next();
        if r % 8 == 0 {
            self.next() % 20_000_000
        } else {
            self.next() % 200_000
        }
    }
}

/// One host's clock: `offset_ns` ahead of the controller's at [`START`],
/// gaining `drift_ppb` ns per second.
#[derive(Clone, Copy)]
struct HostClock0 {
    offset_ns: i64,
    drift_ppb: i64,
}

impl HostClock0 {
    fn theta(&self, t: u64) -> i64 {
        self.offset_ns + (i128::from(self.drift_ppb) * i128::from(t - START) / 1_000_000_000) as i64
    }

    /// Its clock's reading at controller time `t`.
    fn read(&self, t: u64) -> u64 {
        t.saturating_add_signed(self.theta(t))
    }

    /// The controller time at which its clock reads `local` (the drift
    /// moves θ by far less than a ns over θ itself: one fixed-point step
    /// is exact to a ns).
    fn when_reads(&self, local: u64) -> u64 {
        let t = local.saturating_add_signed(-self.theta(local));
        local.saturating_add_signed(-self.theta(t))
    }
}

/// The lab: a virtual controller clock, two hosts and a noisy path with an
/// asymmetric floor (30 µs out, 90 µs back, so the smallest-δ probe is off
/// by 30 µs — inside its U of 60 µs).
struct Lab {
    now: Cell<u64>,
    noise: RefCell<Noise>,
    hosts: BTreeMap<&'static str, HostClock0>,
    /// The smallest round trip each host's probes took, per probing round.
    min_rtt: RefCell<BTreeMap<&'static str, u64>>,
}

const UP_FLOOR: u64 = 30_000;
const DOWN_FLOOR: u64 = 90_000;

impl Lab {
    fn new(seed: u64) -> Lab {
        Lab {
            now: Cell::new(START),
            noise: RefCell::new(Noise(seed | 1)),
            hosts: [
                (
                    "tx",
                    HostClock0 {
                        offset_ns: -1_000_000,
                        drift_ppb: -5_000,
                    },
                ),
                (
                    "rx",
                    HostClock0 {
                        offset_ns: 3_000_000,
                        drift_ppb: 20_000,
                    },
                ),
            ]
            .into_iter()
            .collect(),
            min_rtt: RefCell::new(BTreeMap::new()),
        }
    }

    fn advance(&self, ns: u64) {
        self.now.set(self.now.get() + ns);
    }

    /// One `time` request to `host` over the path: the agent reads its
    /// clock when the request arrives, then answers after a hold.
    fn time(&self, host: &str) -> Result<AgentTime, RunError> {
        let (name, clock) = self.hosts.get_key_value(host).expect("a lab host");
        let (up, hold, down) = {
            let mut n = self.noise.borrow_mut();
            let hold = n.next() % 50_000;
            (UP_FLOOR + n.delay(), hold, DOWN_FLOOR + n.delay())
        };
        let start = self.now.get();
        self.advance(up);
        let realtime_ns = clock.read(self.now.get());
        self.advance(hold + down);
        let rtt = self.now.get() - start;
        let mut m = self.min_rtt.borrow_mut();
        let e = m.entry(name).or_insert(u64::MAX);
        *e = (*e).min(rtt);
        Ok(AgentTime {
            realtime_ns,
            monotonic_ns: 0,
        })
    }

    /// Probes every host once ([`PROBES`] each); returns the estimates and
    /// the smallest round trip each host's probes took.
    fn probe(&self) -> (BTreeMap<String, Estimate>, BTreeMap<&'static str, u64>) {
        self.min_rtt.borrow_mut().clear();
        let e = probe_all_on(["tx", "rx"], |h| self.time(h), || self.now.get(), RES).unwrap();
        (e, self.min_rtt.take())
    }
}

/// What a probe's θ can be off by besides δ/2: the host's drift over the
/// probe's round trip (rounded up), as θ is read at the agent, not at the
/// probe's midpoint.
fn drift_slack(h: HostClock0, rtt: u64) -> u64 {
    (h.drift_ppb.unsigned_abs() * rtt).div_ceil(1_000_000_000) + 1
}

#[test]
fn each_hosts_offset_is_within_its_uncertainty_and_u_is_the_fastest_probes() {
    for seed in 1..=50u64 {
        let lab = Lab::new(seed);
        let (est, min_rtt) = lab.probe();
        for (name, clock) in &lab.hosts {
            let e = est[*name];
            // The agent reads once (T2 = T3): δ is the whole round trip,
            // hold included; U is half the smallest one plus the resolution.
            assert_eq!(e.delay_ns, min_rtt[name], "seed {seed} {name}");
            assert_eq!(e.uncertainty_ns, min_rtt[name].div_ceil(2) + RES);
            assert_eq!(e.probes, PROBES);
            let err = (e.offset_ns - clock.theta(e.at_unix_ns)).unsigned_abs();
            assert!(
                err <= e.uncertainty_ns + drift_slack(*clock, e.delay_ns),
                "seed {seed} {name}: θ {} off by {err} ns, U {}",
                e.offset_ns,
                e.uncertainty_ns
            );
            // The asymmetric floor alone puts θ 30 µs off: the estimate is
            // not exact, only within U, and U is never below the floor's half.
            assert!(e.uncertainty_ns >= (UP_FLOOR + DOWN_FLOOR) / 2);
        }
        // The 3 ms injected on rx is recovered within U.
        let rx = est["rx"];
        assert!((rx.offset_ns - 3_000_000).unsigned_abs() <= rx.uncertainty_ns + 1);
    }
}

#[test]
fn corrected_one_way_delays_are_the_paths_within_the_pairs_uncertainty() {
    const PATH: u64 = 5_000_000;
    for seed in 1..=20u64 {
        let lab = Lab::new(seed);
        let (before, _) = lab.probe();
        lab.advance(100_000_000);
        let t0 = lab.now.get();
        // Ten seconds of flows, then the probes after them.
        lab.advance(10_000_000_000);
        let end = lab.now.get();
        let (after, _) = lab.probe();
        let clocks = PointClocks { before, after };
        let dir = std::env::temp_dir().join(format!(
            "wirelab-clocks-virtual-{}-{seed}",
            std::process::id()
        ));
        let f = clocks
            .flow(&dir, "tx", "rx", Some(t0), u64::MAX)
            .unwrap()
            .unwrap();
        let (tx, rx) = (lab.hosts["tx"], lab.hosts["rx"]);
        let slack = drift_slack(tx, 25_000_000) + drift_slack(rx, 25_000_000);
        let u = f.uncertainty_ns + slack;
        let truth = rx.theta(t0) - tx.theta(t0);
        assert!(
            (f.offset_ns - truth).unsigned_abs() <= u,
            "seed {seed}: θ_AB {} vs {truth}, U {}",
            f.offset_ns,
            f.uncertainty_ns
        );
        // A probe every 100 ms across the flows: sent on tx's clock,
        // received 5 ms later on rx's, corrected onto tx's clock.
        let c = f.correction();
        let mut t = t0;
        while t + PATH <= end {
            let sent = tx.read(t);
            let received = c.to_sender_clock(rx.read(t + PATH));
            let owd = received as i64 - sent as i64;
            assert!(
                (owd - PATH as i64).unsigned_abs() <= u,
                "seed {seed} at +{} ns: OWD {owd} ns, U {}",
                t - t0,
                f.uncertainty_ns
            );
            // Uncorrected, the 4 ms between the clocks shows.
            let raw = rx.read(t + PATH) as i64 - sent as i64;
            assert!((raw - PATH as i64).abs() > 3_900_000);
            t += 100_000_000;
        }
        // The limit decides relative exactly at U.
        let at_limit = clocks
            .flow(&dir, "tx", "rx", Some(t0), f.uncertainty_ns)
            .unwrap();
        assert!(!at_limit.unwrap().relative);
        let below = clocks
            .flow(&dir, "tx", "rx", Some(t0), f.uncertainty_ns - 1)
            .unwrap();
        assert!(below.unwrap().relative);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

#[test]
fn senders_started_at_t0_on_their_own_clocks_start_together() {
    for seed in 1..=50u64 {
        let lab = Lab::new(seed);
        let (before, _) = lab.probe();
        let clocks = PointClocks {
            before,
            after: BTreeMap::new(),
        };
        // T0 a little after the probes, as the controller chooses it.
        let t0 = lab.now.get() + 200_000_000;
        let mut starts = vec![];
        for name in ["tx", "rx"] {
            let h = lab.hosts[name];
            // The sender's `--start-at`, on its host's clock, and the
            // controller time at which that clock reads it.
            let local = clocks.local_t0(name, t0);
            let true_start = h.when_reads(local);
            let e = clocks.before[name];
            // Off by the host's estimate error and its drift since the
            // probes (the start uses the offset before, not the line).
            let bound = e.uncertainty_ns + drift_slack(h, t0 - e.at_unix_ns) + 1;
            assert!(
                true_start.abs_diff(t0) <= bound,
                "seed {seed} {name}: starts {} ns from T0, bound {bound}",
                true_start as i64 - t0 as i64
            );
            starts.push((true_start, bound));
        }
        let gap = starts[0].0.abs_diff(starts[1].0);
        assert!(
            gap <= starts[0].1 + starts[1].1,
            "seed {seed}: {gap} ns apart"
        );
        // T0 given unconverted: the starts would be the clocks' 4 ms apart.
        let raw = lab.hosts["tx"]
            .when_reads(t0)
            .abs_diff(lab.hosts["rx"].when_reads(t0));
        assert!(raw > 3_900_000, "{raw}");
    }
}

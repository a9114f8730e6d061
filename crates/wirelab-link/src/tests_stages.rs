//! The bottleneck stages and the other stages added to the link model
//! (onoff, link, queues, burst, DRD, timeline), on a virtual clock with
//! fixed seeds.

use super::tests::{evenly, key, link, run, MS, US};
use super::*;

fn median(mut v: Vec<u64>) -> u64 {
    v.sort_unstable();
    v.get(v.len() / 2).copied().unwrap_or(0)
}

fn with_sources(spec: &str, seed: u64, sources: Sources) -> Link {
    let c = LinkConfig::parse(spec).unwrap_or_else(|e| panic!("{spec}: {e}"));
    Link::with_sources(&c, key(seed), sources).unwrap()
}

/// A `link` stage reading `trace` (Mahimahi text) with the real reader.
fn mm_link(spec: &str, trace: &str) -> Link {
    use wirelab_trace::mahimahi::Opportunities;
    let once = spec.contains(" once");
    let opps = Opportunities::new(std::io::Cursor::new(trace.as_bytes().to_vec()), !once)
        .map_while(Result::ok);
    with_sources(
        spec,
        1,
        Sources {
            opportunities: Some(Box::new(opps)),
            ..Sources::default()
        },
    )
}

fn sent(rel: &[Release]) -> Vec<&Release> {
    rel.iter().filter(|r| r.dropped.is_none()).collect()
}

/// Counters balance: every copy is released, dropped, or still held.
fn balanced(l: &Link, rel: &[Release]) {
    let c = l.counters();
    assert_eq!(c.arrivals + c.duplicates, c.queued + c.dropped.total());
    assert_eq!(c.released, sent(rel).len() as u64);
    assert_eq!(c.queued, c.released + l.bottleneck_held() as u64);
    for r in rel {
        assert!(r.deadline_ns >= r.arrival_ns, "{r:?}");
    }
    for w in rel.windows(2) {
        assert!(w[0].deadline_ns <= w[1].deadline_ns);
    }
}

/// A trace of one "1" (one opportunity per ms) under 20 Mbit/s of
/// 1500-byte frames delivers exactly one frame per ms: 12.00 Mbit/s.
#[test]
fn link_trace_of_ones_delivers_12_mbit() {
    let mut l = mm_link("link ones.up", "1\n");
    // 20 Mbit/s: a 1500-byte frame every 600 us, for 10 s.
    let (_, rel) = run(&mut l, evenly(16_667, 600 * US, 1500));
    let out = sent(&rel);
    let in_10s: Vec<u64> = out
        .iter()
        .map(|r| r.deadline_ns)
        .filter(|&d| d <= 10_000 * MS)
        .collect();
    let expect: Vec<u64> = (1..=10_000).map(|k| k * MS).collect();
    assert_eq!(in_10s, expect);
    let mbit = in_10s.len() as f64 * 1500.0 * 8.0 / 10.0 / 1e6;
    assert!((mbit - 12.0).abs() <= 0.12, "{mbit}");
    // Everything is delivered in the end, in order, one per ms.
    assert_eq!(out.len(), 16_667);
    assert!(out
        .windows(2)
        .all(|w| w[1].deadline_ns == w[0].deadline_ns + MS));
    balanced(&l, &rel);
}

/// Delivery exact to the byte over each period: frames larger or
/// smaller than an opportunity carry their rest over; repeated times are
/// several opportunities in that ms.
#[test]
fn link_partial_carry_over_is_exact_to_the_byte() {
    // 1000-byte frames on "1": 1500 bytes per ms, 3 frames per 2 ms.
    let mut l = mm_link("link ones.up", "1\n");
    let (_, rel) = run(&mut l, evenly(3000, 100 * US, 1000));
    let mut per_ms = std::collections::BTreeMap::<u64, u64>::new();
    for r in sent(&rel) {
        *per_ms.entry(r.deadline_ns / MS).or_default() += 1;
    }
    for k in 1..=2000u64 {
        let done = |k: u64| 1500 * k / 1000;
        assert_eq!(
            per_ms.get(&k).copied().unwrap_or(0),
            done(k) - done(k - 1),
            "ms {k}"
        );
    }
    // A trace with repeated times (period 8 ms: 7 opportunities) and
    // 700-byte frames arriving at its start: by each opportunity, the
    // frames delivered are floor(1500 * opportunities used / 700). The
    // two at 0 ms come before the first frame (the trace starts with
    // it) and are wasted, as in mm-link.
    let trace = "0\n0\n3\n5\n5\n5\n8\n";
    let opps: Vec<u64> = (0..3)
        .flat_map(|pass| [0u64, 0, 3, 5, 5, 5, 8].map(|o| pass * 8 + o))
        .collect();
    let mut l = mm_link("link t.up", trace);
    let (_, rel) = run(&mut l, evenly(40, 0, 700));
    let out = sent(&rel);
    for (n, &ms) in opps.iter().enumerate().filter(|&(_, &o)| 0 < o && o <= 16) {
        let by = out.iter().filter(|r| r.deadline_ns <= ms * MS).count() as u64;
        let used = opps.iter().filter(|&&o| 0 < o && o <= ms).count() as u64;
        assert_eq!(by, 1500 * used / 700, "opportunity {n} at {ms} ms");
    }
    balanced(&l, &rel);
}

/// Opportunities that find the link idle are wasted; `once`: after
/// the trace the link is dead, what it holds and what comes is dropped.
#[test]
fn link_idle_opportunities_are_wasted_and_once_ends_the_link() {
    let mut l = mm_link("link ones.up", "1\n");
    let arrivals = [
        (0, 1500),
        (10_200 * US, 1500),
        (10_200 * US, 1500),
        (10_200 * US, 1500),
    ];
    let (_, rel) = run(&mut l, arrivals);
    let times: Vec<u64> = sent(&rel).iter().map(|r| r.deadline_ns / MS).collect();
    assert_eq!(times, [1, 11, 12, 13]);

    let mut l = mm_link("link two.up once", "1\n3\n");
    let (arr, rel) = run(&mut l, evenly(5, 0, 1500).chain([(5 * MS, 1500)]));
    let times: Vec<u64> = sent(&rel).iter().map(|r| r.deadline_ns / MS).collect();
    assert_eq!(times, [1, 3]);
    let dead: Vec<(u64, u64)> = rel
        .iter()
        .filter(|r| r.dropped == Some(DropReason::LinkDead))
        .map(|r| (r.packet_index, r.deadline_ns))
        .collect();
    assert_eq!(dead, [(2, 3 * MS), (3, 3 * MS), (4, 3 * MS)]);
    assert_eq!(arr[5].copies(), [Fate::Dropped(DropReason::LinkDead)]);
    assert_eq!(l.counters().dropped.link_dead, 4);
    balanced(&l, &rel);
}

/// Droptail and drophead by packets and bytes, drops counted as
/// `limit`; the frame being sent is not in the queue.
#[test]
fn queue_droptail_and_drophead_limits() {
    let delivered = |spec: &str, len: u32| {
        let mut l = link(spec, 1);
        let (_, rel) = run(&mut l, evenly(10, 0, len));
        balanced(&l, &rel);
        let idx: Vec<u64> = sent(&rel).iter().map(|r| r.packet_index).collect();
        (idx, l.counters().dropped.limit)
    };
    assert_eq!(
        delivered("rate 1mbit queue droptail packets=3", 1000),
        (vec![0, 1, 2, 3], 6)
    );
    assert_eq!(
        delivered("rate 1mbit queue drophead packets=3", 1000),
        (vec![0, 7, 8, 9], 6)
    );
    assert_eq!(
        delivered("rate 1mbit queue droptail bytes=2500", 1000),
        (vec![0, 1, 2], 7)
    );
    assert_eq!(
        delivered("rate 1mbit queue drophead bytes=2500", 1000),
        (vec![0, 8, 9], 7)
    );
    // Drophead drops come out as releases, at the arrival that pushed
    // them out.
    let mut l = link("rate 1mbit queue drophead packets=1", 1);
    let (_, rel) = run(
        &mut l,
        [(0, 1000), (MS, 1000), (2 * MS, 1000), (3 * MS, 1000)],
    );
    let drops: Vec<(u64, u64)> = rel
        .iter()
        .filter(|r| r.dropped.is_some())
        .map(|r| (r.packet_index, r.deadline_ns))
        .collect();
    assert_eq!(drops, [(1, 2 * MS), (2, 3 * MS)]);
    // The link's own limit still counts everything in it.
    assert_eq!(
        delivered("rate 1mbit queue droptail limit 2", 1000),
        (vec![0, 1], 8)
    );
}

/// `flows` window-based Reno senders (ack-clocked; window +1 packet per
/// RTT, halved at most once per RTT on a loss, which they learn one base
/// RTT after the drop) through `spec`, their windows starting at twice the
/// path's bandwidth-delay product between them: the sojourn of every
/// delivered packet that arrived after `warmup` s.
fn reno(
    spec: &str,
    capacity: f64,
    flows: usize,
    rtt: u64,
    secs: u64,
    warmup: u64,
) -> (Vec<u64>, LinkCounters) {
    use std::cmp::Reverse;
    use std::collections::BinaryHeap;
    const LEN: u32 = 1000;
    let bits = f64::from(LEN) * 8.0;
    let service = (bits / capacity * 1e9) as u64;
    let bdp = capacity * rtt as f64 / 1e9 / bits;
    let mut l = link(spec, 1);
    let mut cwnd = vec![2.0 * bdp / flows as f64; flows];
    let mut inflight = vec![0u64; flows];
    let mut last_cut = vec![0u64; flows];
    let mut owner: Vec<usize> = Vec::new();
    // (time, flow, lost); every flow starts at 0.
    let mut events: BinaryHeap<Reverse<(u64, usize, Option<bool>)>> = (0..flows)
        .map(|f| Reverse((f as u64 * 37 * US, f, None)))
        .collect();
    let mut rel = Vec::new();
    let mut soj = Vec::new();
    let end = secs * 1000 * MS;
    while let Some(Reverse((t, f, what))) = events.pop() {
        if t > end {
            break;
        }
        rel.clear();
        l.pop_due(t, &mut rel);
        for r in &rel {
            let fl = owner[r.packet_index as usize];
            events.push(Reverse((
                r.deadline_ns + rtt,
                fl,
                Some(r.dropped.is_some()),
            )));
            if r.dropped.is_none() && r.arrival_ns >= warmup * 1000 * MS {
                soj.push(r.deadline_ns - service - r.arrival_ns);
            }
        }
        match what {
            Some(true) => {
                inflight[f] -= 1;
                if t >= last_cut[f] + rtt {
                    cwnd[f] = (cwnd[f] / 2.0).max(1.0);
                    last_cut[f] = t;
                }
            }
            Some(false) => {
                inflight[f] -= 1;
                cwnd[f] += 1.0 / cwnd[f];
            }
            None => {}
        }
        while f < flows && (inflight[f] as f64) < cwnd[f].floor() {
            let idx = owner.len() as u64;
            owner.push(f);
            inflight[f] += 1;
            if l.arrive(t, LEN, idx, false).pending() == 0 {
                events.push(Reverse((t + rtt, f, Some(true))));
            }
        }
        // The link may hold releases due before the next event.
        if let Some(d) = l.next_deadline() {
            if events.peek().is_none_or(|Reverse(e)| d < e.0) {
                events.push(Reverse((d, usize::MAX, None)));
            }
        }
    }
    (soj, l.counters().clone())
}

/// CoDel keeps the median sojourn at its target. The flows are
/// responsive (Reno's window dynamics), as CoDel assumes: their windows
/// start at twice the path's bandwidth-delay product (2x overload) and
/// the base RTT is CoDel's INTERVAL (100 ms). Against the same flows a
/// droptail queue of the same size holds its whole buffer.
#[test]
fn codel_holds_the_median_sojourn_at_target() {
    for flows in [1, 4, 8] {
        let (soj, c) = reno(
            "rate 10mbit queue codel packets=1000",
            10e6,
            flows,
            100 * MS,
            120,
            20,
        );
        let m = median(soj);
        assert!(m <= 6 * MS, "{flows} flows: median sojourn {m} ns");
        assert!(c.dropped.aqm > 0 && c.dropped.limit == 0, "{:?}", c.dropped);
    }
    let (soj, _) = reno(
        "rate 10mbit queue droptail packets=1000",
        10e6,
        4,
        100 * MS,
        120,
        20,
    );
    assert!(median(soj) > 100 * MS);
}

/// Unresponsive 2x overload. PIE holds the delay at QDELAY_REF by
/// dropping half the packets on arrival; CoDel (RFC 8289, faithfully)
/// drops at interval/sqrt(count) and needs count ~ (rate * interval)^2
/// to match an unresponsive flow, so the queue limit takes the excess
/// while it ramps. Every drop is counted and comes out.
#[test]
fn pie_and_codel_under_unresponsive_overload() {
    // 1000-byte frames every 400 us at 10 Mbit/s (800 us each), 120 s.
    let input = || evenly(300_000, 400 * US, 1000);
    let mut l = link("rate 10mbit queue pie packets=1000", 1);
    let (_, rel) = run(&mut l, input());
    let soj: Vec<u64> = sent(&rel)
        .iter()
        .filter(|r| r.arrival_ns >= 10_000 * MS)
        .map(|r| r.deadline_ns - 800 * US - r.arrival_ns)
        .collect();
    let m = median(soj);
    assert!((10 * MS..=20 * MS).contains(&m), "PIE median sojourn {m}");
    let c = l.counters().clone();
    // Half the offered load is dropped, by PIE.
    assert!(
        c.dropped.aqm > 140_000 && c.dropped.limit == 0,
        "{:?}",
        c.dropped
    );
    balanced(&l, &rel);

    let mut l = link("rate 10mbit queue codel packets=1000", 1);
    let (_, rel) = run(&mut l, input());
    let c = l.counters().clone();
    assert!(c.dropped.aqm > 0 && c.dropped.limit > 0, "{:?}", c.dropped);
    let aqm = rel
        .iter()
        .filter(|r| r.dropped == Some(DropReason::Aqm))
        .count() as u64;
    assert_eq!(aqm, c.dropped.aqm);
    balanced(&l, &rel);
}

/// While off, packets are held (hold is the default) and leave when
/// the link is on again; with `drop`, packets arriving while off are
/// dropped (`link_dead`).
#[test]
fn onoff_periodic_holds_or_drops() {
    // On [0, 100), off [100, 150), on [150, 250), ... ms from the first
    // arrival at 7 ms.
    let t0 = 7 * MS;
    let input: Vec<(u64, u32)> = (0..600).map(|i| (t0 + i * MS, 100)).collect();
    let mut l = link("onoff periodic 100ms 50ms", 1);
    let (_, rel) = run(&mut l, input.clone());
    for r in &rel {
        let rel_t = r.arrival_ns - t0;
        let phase = rel_t % (150 * MS);
        let expect = if phase < 100 * MS {
            r.arrival_ns
        } else {
            r.arrival_ns - phase + 150 * MS
        };
        assert_eq!(r.deadline_ns, expect, "{r:?}");
    }
    assert_eq!(sent(&rel).len(), 600);

    let mut l = link("onoff periodic 100ms 50ms drop", 1);
    let (arr, rel) = run(&mut l, input);
    assert_eq!(sent(&rel).len(), 400);
    for (i, a) in arr.iter().enumerate() {
        let off = (i as u64 * MS) % (150 * MS) >= 100 * MS;
        assert_eq!(a.pending() == 0, off, "packet {i}");
    }
    assert_eq!(l.counters().dropped.link_dead, 200);
    balanced(&l, &rel);
}

/// `onoff exp 100ms 50ms`: the delivered fraction is on/(on+off) =
/// 2/3 +- 2 % (4 sigma over 600 s: the on-time fraction of N cycles of
/// exponential lengths has sd ~ sqrt(0.0988 / N), N ~ 4000).
#[test]
fn onoff_exp_delivered_fraction() {
    let n = 600_000;
    let mut l = link("onoff exp 100ms 50ms drop", 3);
    let (_, rel) = run(&mut l, evenly(n, MS, 100));
    let frac = sent(&rel).len() as f64 / n as f64;
    assert!((frac - 2.0 / 3.0).abs() < 0.02, "{frac}");
    balanced(&l, &rel);
    // Held, behind a 1 Mbit/s rate at 2x overload: the link delivers
    // its rate for 2/3 of the time (a frame paused by an off period
    // resumes when the link is on again).
    let mut l = link(
        "rate 1mbit onoff exp 100ms 50ms queue droptail packets=100",
        5,
    );
    let (_, rel) = run(&mut l, evenly(120_000, 5 * MS, 1250));
    let end = 600_000 * MS;
    let bytes: u64 = sent(&rel)
        .iter()
        .filter(|r| r.deadline_ns <= end)
        .map(|r| u64::from(r.frame_len))
        .sum();
    let frac = bytes as f64 * 8.0 / 1e6 / 600.0;
    assert!((frac - 2.0 / 3.0).abs() < 0.02, "{frac}");
    balanced(&l, &rel);
}

/// After 1 s idle at 1 Mbit/s with `burst 125k`, the first 125 kB
/// leave unshaped, the rest at the rate.
#[test]
fn burst_credit_after_idle() {
    let mut l = link("rate 1mbit burst 125k", 1);
    // Saturate first: 400 frames of 1250 bytes at once use the credit up
    // and leave the link busy until 3 s.
    let busy: Vec<(u64, u32)> = evenly(400, 0, 1250).collect();
    let mut rel = Vec::new();
    for (i, &(t, len)) in busy.iter().enumerate() {
        l.arrive(t, len, i as u64, false);
    }
    l.pop_due(u64::MAX, &mut rel);
    let last = rel.last().unwrap().deadline_ns;
    assert_eq!(last, 3_000 * MS);
    // 1 s idle, then 200 frames back to back.
    let t = last + 1_000 * MS;
    let deadlines: Vec<u64> = (0..200)
        .map(|i| {
            let a = l.arrive(t, 1250, 400 + i, false);
            let d = a.queued().next().unwrap().deadline_ns;
            d - t
        })
        .collect();
    assert_eq!(deadlines[..100], [0; 100]);
    let shaped: Vec<u64> = (1..=100).map(|k| k * 10 * MS).collect();
    assert_eq!(deadlines[100..], shaped);
    // Without burst: shaped from the first.
    let mut l = link("rate 1mbit", 1);
    let a = l.arrive(0, 1250, 0, false);
    assert_eq!(a.queued().next().unwrap().deadline_ns, 10 * MS);
}

/// DRD's drops per queue-length bin fall inside a 99 % confidence
/// interval of the linear law (0 below 20, rising to 95 % at 50).
#[test]
fn drd_drops_by_queue_length() {
    let input = poisson(200_000, 2_500_000.0, 11);
    let mut l = link("delay 100ms drd 20 50", 4);
    let spec = DrdSpec {
        min: 20,
        max: 50,
        congest: None,
    };
    let mut held: std::collections::VecDeque<u64> = Default::default();
    // bin (5 packets wide) -> (arrivals, drops, expected drops, variance)
    let mut bins = std::collections::BTreeMap::<u64, (u64, u64, f64, f64)>::new();
    for (i, &(t, len)) in input.iter().enumerate() {
        while held.front().is_some_and(|&d| d <= t) {
            held.pop_front();
        }
        let q = held.len() as u64;
        let a = l.arrive(t, len, i as u64, false);
        let p = spec.probability(q);
        let b = bins.entry(q / 5).or_default();
        b.0 += 1;
        b.2 += p;
        b.3 += p * (1.0 - p);
        match a.copies() {
            [Fate::Dropped(DropReason::Drd)] => b.1 += 1,
            [Fate::Queued(x)] => held.push_back(x.deadline_ns),
            other => panic!("{other:?}"),
        }
    }
    let mut checked = 0;
    for (&bin, &(n, drops, expect, var)) in &bins {
        if bin < 4 {
            assert_eq!(drops, 0, "below DRD min");
        } else if n >= 200 {
            let z = (drops as f64 - expect) / var.sqrt().max(1e-9);
            assert!(
                z.abs() < 2.576,
                "bin {bin}: {drops} of {n}, expected {expect:.1}"
            );
            checked += 1;
        }
    }
    assert!(checked >= 5, "{bins:?}");
    assert_eq!(l.counters().dropped.drd, l.counters().dropped.total());
}

fn poisson(n: u64, mean_gap: f64, seed: u64) -> Vec<(u64, u32)> {
    use rand::{Rng, SeedableRng};
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let mut t = 0.0;
    (0..n)
        .map(|_| {
            t += -mean_gap * (1.0 - rng.random::<f64>()).ln();
            (t as u64, 100)
        })
        .collect()
}

/// With `congest`, ECN-capable copies DRD picks are marked instead.
#[test]
fn drd_congest_marks_ect() {
    let mut l = link("delay 1s drd 2 3 congest 2", 1);
    let mut fates = Vec::new();
    for i in 0..40 {
        fates.push(l.arrive(i * MS, 100, i, true));
    }
    let c = l.counters();
    assert_eq!(c.dropped.drd, 0);
    assert!(c.ecn_marked > 20, "{c:?}");
}

/// A `timeline` reading `csv` with the real reader.
fn timeline_link(spec: &str, csv: &str, period: Option<u64>) -> Link {
    use wirelab_trace::csv::{CsvReader, Timeline};
    use wirelab_trace::TraceOptions;
    let c = LinkConfig::parse(spec).unwrap();
    let tl = c.timeline.clone().unwrap();
    let opts = TraceOptions {
        period_ns: period,
        ..TraceOptions::default()
    };
    let reader = CsvReader::new(std::io::Cursor::new(csv.as_bytes().to_vec()), &opts);
    let source = Timeline::new(reader, tl.at_end);
    Link::with_sources(
        &c,
        key(1),
        Sources {
            timeline: Some(Box::new(source)),
            ..Sources::default()
        },
    )
    .unwrap()
}

/// Each packet uses the row active at its arrival, counted from the
/// link's first arrival; empty cells leave the stage list's values; the
/// trace loops by its period.
#[test]
fn timeline_rows_by_arrival_time() {
    let csv = "t_ms,delay_us,loss,rate_bps\n0,1000,,\n10,5000,,\n20,,1,\n30,2000,0,8000000\n";
    let mut l = timeline_link("timeline net.csv delay 3ms", csv, Some(40 * MS));
    let t0 = 1_234;
    let input: Vec<(u64, u32)> = (0..100).map(|i| (t0 + i * MS, 1000)).collect();
    let (arr, _) = run(&mut l, input);
    for (i, a) in arr.iter().enumerate() {
        let phase = (i as u64 * MS) % (40 * MS);
        let expect = match phase / (10 * MS) {
            0 => Some(MS),
            1 => Some(5 * MS),
            2 => None,
            // 1000 bytes at 8 Mbit/s = 1 ms, then 2 ms.
            _ => Some(3 * MS),
        };
        let got = a.queued().next().map(|q| q.deadline_ns - a.arrival_ns);
        assert_eq!(got, expect, "packet {i}");
    }
    assert_eq!(l.counters().dropped.loss, 20);

    // Past the end (no loop): pass, drop, stop.
    let csv = "dur_ms,delay_us\n5,1000\n";
    for (end, expect) in [("pass", 0), ("drop", 3), ("stop", 3)] {
        let mut l = timeline_link(&format!("timeline n.csv at-end {end}"), csv, None);
        let (arr, _) = run(&mut l, evenly(8, MS, 100));
        let dropped = arr.iter().filter(|a| a.pending() == 0).count();
        assert_eq!(dropped, expect, "{end}");
        assert_eq!(l.trace_ended(), end == "stop");
        assert_eq!(l.counters().dropped.trace_end, expect as u64);
    }
}

/// The links with a bottleneck keep the model's contracts: never early,
/// releases in order, counters balance, the same input gives the same
/// decisions whenever `pop_due` is called between arrivals.
#[test]
fn bottleneck_links_are_deterministic_and_balanced() {
    let input = poisson(20_000, 300_000.0, 2);
    for spec in [
        "rate 10mbit queue codel packets=50 delay 5ms 2ms duplicate 5% corrupt 1%",
        "rate 10mbit burst 20k queue pie bytes=60k onoff exp 50ms 20ms loss 1%",
        "onoff periodic 10ms 5ms queue drophead packets=20 slot 1ms",
        "rate 5mbit onoff exp 20ms 20ms drop drd 5 30 order fifo delay 1ms 1ms",
    ] {
        let mut a = link(spec, 9);
        let (arr1, rel1) = run(&mut a, input.clone());
        balanced(&a, &rel1);
        assert_eq!(a.bottleneck_held(), 0, "{spec}");
        let mut b = link(spec, 9);
        let arr2: Vec<Arrival> = input
            .iter()
            .enumerate()
            .map(|(i, &(t, len))| b.arrive(t, len, i as u64, false))
            .collect();
        let mut rel2 = Vec::new();
        b.pop_due(u64::MAX, &mut rel2);
        assert_eq!(arr1, arr2, "{spec}");
        assert_eq!(rel1, rel2, "{spec}");
        // Every packet's last release says so, once.
        let lasts = rel1.iter().filter(|r| r.last).count();
        let packets: std::collections::BTreeSet<u64> =
            rel1.iter().map(|r| r.packet_index).collect();
        assert_eq!(lasts, packets.len(), "{spec}");
    }
}

#[test]
fn stages_that_read_files_need_their_source() {
    let c = LinkConfig::parse("link x.up").unwrap();
    assert_eq!(
        Link::new(&c, key(1)).unwrap_err(),
        LinkError::SourceMissing("link")
    );
    let c = LinkConfig::parse("timeline x.csv").unwrap();
    assert_eq!(
        Link::new(&c, key(1)).unwrap_err(),
        LinkError::SourceMissing("timeline")
    );
    let c = LinkConfig::parse("").unwrap();
    let extra = Sources {
        opportunities: Some(Box::new(std::iter::empty())),
        ..Sources::default()
    };
    assert_eq!(
        Link::with_sources(&c, key(1), extra).unwrap_err(),
        LinkError::NoSuchStage("link")
    );
}

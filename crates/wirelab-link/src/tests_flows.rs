//! `per-flow MASK` (a pipe per flow) and `sched fifo|drr|fq_codel` (flow
//! queues on one bottleneck), on a virtual clock with fixed seeds.

use std::net::{IpAddr, Ipv4Addr};

use super::*;

const MS: u64 = 1_000_000;
const S: u64 = 1_000_000_000;

fn key(seed: u64) -> LinkKey {
    LinkKey {
        seed,
        rule: 0,
        direction: Direction::AToB,
    }
}

fn link(spec: &str) -> Link {
    let c = LinkConfig::parse(spec).unwrap_or_else(|e| panic!("{spec}: {e}"));
    Link::new(&c, key(7)).unwrap()
}

/// A UDP flow from 10.0.0.`host`:`sport` to 10.0.1.1:`dport`.
fn udp(host: u8, sport: u16, dport: u16) -> FlowTuple {
    FlowTuple {
        src: IpAddr::V4(Ipv4Addr::new(10, 0, 0, host)),
        dst: IpAddr::V4(Ipv4Addr::new(10, 0, 1, 1)),
        proto: 17,
        sport,
        dport,
    }
}

/// One arrival: time, length, flow number.
type Arr = (u64, u32, usize);

/// `n` frames of `len` bytes every `gap` ns from `start`, of flow `flow`.
fn stream(flow: usize, start: u64, gap: u64, len: u32, n: u64) -> Vec<Arr> {
    (0..n).map(|i| (start + i * gap, len, flow)).collect()
}

/// Merges streams in time order (ties by flow) and runs them through
/// `l`, popping due releases before each arrival (or only at the end).
/// Returns the releases and each packet's flow.
fn run(
    l: &mut Link,
    flows: &[FlowTuple],
    streams: Vec<Vec<Arr>>,
    pop_between: bool,
) -> (Vec<Release>, Vec<usize>) {
    let mut all: Vec<Arr> = streams.into_iter().flatten().collect();
    all.sort_by_key(|&(t, _, f)| (t, f));
    let mut rel = Vec::new();
    let mut flow_of = Vec::with_capacity(all.len());
    for (i, &(t, len, f)) in all.iter().enumerate() {
        if pop_between {
            l.pop_due(t, &mut rel);
        }
        l.arrive_flow(t, len, i as u64, false, Some(&flows[f]));
        flow_of.push(f);
    }
    while l.next_deadline().is_some() {
        l.pop_due(u64::MAX, &mut rel);
    }
    (rel, flow_of)
}

/// Bytes sent per flow with a release time in `[from, to)`.
fn bytes_in(rel: &[Release], flow_of: &[usize], nflows: usize, from: u64, to: u64) -> Vec<u64> {
    let mut b = vec![0; nflows];
    for r in rel {
        if r.dropped.is_none() && (from..to).contains(&r.deadline_ns) {
            b[flow_of[r.packet_index as usize]] += u64::from(r.frame_len);
        }
    }
    b
}

fn balanced(l: &Link) {
    let c = l.counters();
    assert_eq!(
        c.arrivals + c.duplicates,
        c.queued + c.dropped.total(),
        "{c:?}"
    );
    assert_eq!(c.released, c.queued, "{c:?}");
}

fn mbit(bytes: u64, ns: u64) -> f64 {
    bytes as f64 * 8.0 / ns as f64 * 1e3
}

#[test]
fn per_flow_two_masked_flows_each_get_the_full_rate() {
    // Two flows of 15 Mbit/s each (1250-byte frames every 2/3 ms) into
    // 10 Mbit/s: with a pipe per destination port each gets 10 Mbit/s;
    // sharing one pipe they get 5 each.
    let flows = [udp(1, 4000, 5001), udp(2, 4000, 5002)];
    let streams = || {
        vec![
            stream(0, 0, 666_667, 1250, 3000),
            stream(1, 333_333, 666_667, 1250, 3000),
        ]
    };
    for spec in [
        "rate 10mbit per-flow dport",
        "rate 10mbit queue droptail packets=100 per-flow src/24,dport",
        "rate 10mbit delay 5ms per-flow src,dport flows 8",
    ] {
        let mut l = link(spec);
        let (rel, flow_of) = run(&mut l, &flows, streams(), true);
        let b = bytes_in(&rel, &flow_of, 2, S / 2, 3 * S / 2);
        for (f, &bytes) in b.iter().enumerate() {
            let rate = mbit(bytes, S);
            eprintln!("{spec}: flow {f} {rate:.4} Mbit/s");
            assert!((rate - 10.0).abs() <= 0.2, "{spec}: flow {f} {rate} Mbit/s");
        }
        assert_eq!(l.counters().flows, 2, "{spec}");
        assert_eq!(l.counters().flow_overflow, 0);
        balanced(&l);
    }
    let mut shared = link("rate 10mbit");
    let (rel, flow_of) = run(&mut shared, &flows, streams(), true);
    let b = bytes_in(&rel, &flow_of, 2, S / 2, 3 * S / 2);
    for bytes in b {
        assert!((mbit(bytes, S) - 5.0).abs() <= 0.2, "{}", mbit(bytes, S));
    }
    assert_eq!(shared.counters().flows, 0);
}

#[test]
fn per_flow_mask_decides_what_a_flow_is() {
    // Same /24 and port: one pipe; the mask without ports: one pipe for
    // both ports.
    let flows = [udp(1, 4000, 5001), udp(2, 4001, 5001), udp(1, 4000, 5002)];
    let streams = || {
        (0..3)
            .map(|f| stream(f, f as u64 * 1000, 10 * MS, 100, 10))
            .collect::<Vec<_>>()
    };
    for (spec, n) in [
        ("rate 1mbit per-flow src/24,dport", 2),
        ("rate 1mbit per-flow src", 2),
        ("rate 1mbit per-flow src/24", 1),
        ("rate 1mbit per-flow sport,dport", 3),
        ("rate 1mbit per-flow proto", 1),
    ] {
        let mut l = link(spec);
        run(&mut l, &flows, streams(), true);
        assert_eq!(l.counters().flows, n, "{spec}");
    }
    // Frames that are not IP are one flow of their own.
    let mut l = link("rate 1mbit per-flow dport");
    l.arrive_flow(0, 60, 0, false, None);
    l.arrive_flow(0, 60, 1, false, None);
    l.arrive_flow(0, 60, 2, false, Some(&flows[0]));
    assert_eq!(l.counters().flows, 2);
}

#[test]
fn per_flow_flows_past_the_bound_share_one_overflow_pipe() {
    // Five flows of 2 Mbit/s into `rate 1mbit` pipes, at most 2 pipes:
    // flows 0 and 1 get 1 Mbit/s each; flows 2–4 share the third pipe's
    // 1 Mbit/s; every packet of theirs is counted.
    let flows: Vec<FlowTuple> = (0..5).map(|f| udp(1, 4000 + f, 5000)).collect();
    let streams: Vec<Vec<Arr>> = (0..5)
        .map(|f| stream(f, f as u64 * 1000, 4 * MS, 1000, 500))
        .collect();
    let mut l = link("rate 1mbit per-flow sport flows 2");
    let (rel, flow_of) = run(&mut l, &flows, streams, true);
    let c = l.counters();
    assert_eq!(c.flows, 2);
    assert_eq!(c.flow_overflow, 3 * 500);
    let b = bytes_in(&rel, &flow_of, 5, S / 2, 3 * S / 2);
    for (f, &bytes) in b[..2].iter().enumerate() {
        let rate = mbit(bytes, S);
        assert!((rate - 1.0).abs() <= 0.02, "flow {f}: {rate}");
    }
    let overflow: u64 = b[2..].iter().sum();
    assert!(
        (mbit(overflow, S) - 1.0).abs() <= 0.02,
        "{}",
        mbit(overflow, S)
    );
    balanced(&l);
}

#[test]
fn sched_drr_weights_split_the_rate() {
    // Two saturating flows (10 Mbit/s each) into 10 Mbit/s: weights 1,3
    // split it 1:3 (flow 0 came first); without weights 1:1 — in bytes,
    // whatever the frame sizes.
    let flows = [udp(1, 4000, 5001), udp(2, 4000, 5002)];
    for (spec, lens, want) in [
        ("rate 10mbit sched drr weights 1,3", (1250, 1250), 3.0),
        (
            "rate 10mbit sched drr weights 1,3 quantum 500",
            (1500, 300),
            3.0,
        ),
        ("rate 10mbit sched drr", (1500, 300), 1.0),
        (
            "rate 10mbit sched drr weights 2,1 per-flow dport",
            (1250, 1250),
            0.5,
        ),
    ] {
        let gap = |len: u32| u64::from(len) * 800; // 10 Mbit/s
        let mut l = link(spec);
        let streams = vec![
            stream(0, 0, gap(lens.0), lens.0, 3 * S / gap(lens.0)),
            stream(1, 1000, gap(lens.1), lens.1, 3 * S / gap(lens.1)),
        ];
        let (rel, flow_of) = run(&mut l, &flows, streams, true);
        let b = bytes_in(&rel, &flow_of, 2, S / 2, 5 * S / 2);
        let ratio = b[1] as f64 / b[0] as f64;
        eprintln!("{spec}: {ratio:.4} ({b:?})");
        assert!(
            (ratio / want - 1.0).abs() <= 0.05,
            "{spec}: {ratio} ({b:?})"
        );
        let total = mbit(b[0] + b[1], 2 * S);
        assert!((total - 10.0).abs() <= 0.1, "{spec}: {total} Mbit/s");
        assert_eq!(l.counters().flows, 2);
        balanced(&l);
    }
}

#[test]
fn sched_full_scheduler_drops_from_the_longest_queue() {
    // limit 20 shared by two flows, flow 0 offering 4x what flow 1 does:
    // the drops come from flow 0's queue; flow 1 loses nothing.
    let flows = [udp(1, 4000, 5001), udp(2, 4000, 5002)];
    for spec in [
        "rate 10mbit sched drr limit 20",
        "rate 10mbit sched fq_codel limit 20",
    ] {
        let mut l = link(spec);
        let streams = vec![
            stream(0, 0, 250_000, 1000, 8000),
            stream(1, 1000, 2_000_000, 1000, 1000),
        ];
        let (rel, flow_of) = run(&mut l, &flows, streams, true);
        let mut lost = [0u64; 2];
        for r in &rel {
            if r.dropped.is_some() {
                lost[flow_of[r.packet_index as usize]] += 1;
            }
        }
        let c = l.counters();
        assert!(lost[0] > 1000, "{spec}: {lost:?}");
        assert_eq!(lost[1], 0, "{spec}");
        assert_eq!(c.dropped.limit + c.dropped.aqm, lost[0], "{spec}: {c:?}");
        assert!(c.queue_packets_max <= 21 + 1, "{spec}: {c:?}");
        balanced(&l);
    }
}

/// Sojourns (release − arrival) of flow `f`'s sent copies.
fn sojourns(rel: &[Release], flow_of: &[usize], f: usize) -> Vec<u64> {
    rel.iter()
        .filter(|r| r.dropped.is_none() && flow_of[r.packet_index as usize] == f)
        .map(|r| r.deadline_ns - r.arrival_ns)
        .collect()
}

#[test]
fn sched_fq_codel_keeps_a_sparse_flow_fast_next_to_a_bulk_flow() {
    // The check: a bulk flow of 20 Mbit/s (1500-byte frames) into
    // 10 Mbit/s, a sparse flow of 100-byte frames every 20 ms. Under
    // fq_codel, once the bulk flow has left the new list (it does at its
    // second frame), every sparse frame waits at most for the frame being
    // sent (1.2 ms) plus its own 80 µs; the first one, behind the bulk
    // flow in the new list, for two. The bulk flow still fills the link.
    // In one CoDel queue the sparse frames wait behind the bulk flow's
    // standing queue.
    let flows = [udp(1, 4000, 5001), udp(2, 4000, 5002)];
    let streams = || {
        vec![
            stream(0, 0, 600_000, 1500, 10_000),
            stream(1, 10_000, 20 * MS, 100, 300),
        ]
    };
    let mut fq = link("rate 10mbit sched fq_codel");
    let (rel, flow_of) = run(&mut fq, &flows, streams(), true);
    let sparse = sojourns(&rel, &flow_of, 1);
    assert_eq!(sparse.len(), 300, "no sparse frame dropped");
    let frame = 1_200_000;
    assert!(
        sparse[0] <= 2 * frame + 80_000,
        "first sparse sojourn {}",
        sparse[0]
    );
    let worst = *sparse[1..].iter().max().unwrap();
    assert!(worst <= frame + 80_000, "worst sparse sojourn {worst} ns");
    let bulk = bytes_in(&rel, &flow_of, 2, S, 5 * S)[0];
    assert!(
        mbit(bulk, 4 * S) >= 9.8,
        "bulk {} Mbit/s",
        mbit(bulk, 4 * S)
    );
    assert!(fq.counters().dropped.aqm > 0);
    balanced(&fq);

    let mut one = link("rate 10mbit queue codel");
    let (rel, flow_of) = run(&mut one, &flows, streams(), true);
    let mut sparse = sojourns(&rel, &flow_of, 1);
    sparse.sort_unstable();
    assert!(
        sparse[sparse.len() / 2] > 5 * MS,
        "one queue: p50 {}",
        sparse[sparse.len() / 2]
    );
}

#[test]
fn flows_and_schedulers_decide_the_same_whenever_pop_due_runs() {
    let flows: Vec<FlowTuple> = (0..4).map(|f| udp(f as u8, 4000 + f, 5000)).collect();
    for spec in [
        "rate 5mbit delay 2ms 1ms loss random 5% duplicate 5% per-flow sport",
        "rate 5mbit queue codel per-flow src flows 2",
        "rate 5mbit onoff exp 20ms 10ms per-flow sport",
        "rate 5mbit sched drr weights 1,2,3 delay 1ms",
        "rate 5mbit sched fq_codel target 2ms interval 20ms flows 2 limit 50",
        "rate 5mbit sched drr per-flow sport flows 2 limit 30",
    ] {
        let streams = || -> Vec<Vec<Arr>> {
            (0..4)
                .map(|f| {
                    stream(
                        f,
                        f as u64 * 7_000,
                        1_000_000 + f as u64 * 300_000,
                        1000 + 100 * f as u32,
                        1500,
                    )
                })
                .collect()
        };
        let mut a = link(spec);
        let (ra, _) = run(&mut a, &flows, streams(), true);
        let mut b = link(spec);
        let (rb, _) = run(&mut b, &flows, streams(), false);
        let mut c = link(spec);
        let (rc, _) = run(&mut c, &flows, streams(), true);
        assert_eq!(ra, rc, "{spec}: same input, same decisions");
        assert_eq!(ra, rb, "{spec}: pop timing changes nothing");
        assert_eq!(a.counters(), c.counters());
        for l in [&a, &b] {
            balanced(l);
            assert_eq!(l.bottleneck_held(), 0);
        }
        // Releases in order, never before the arrival.
        assert!(
            ra.windows(2).all(|w| w[0].deadline_ns <= w[1].deadline_ns),
            "{spec}"
        );
        assert!(ra.iter().all(|r| r.deadline_ns >= r.arrival_ns));
        // One `last` per packet with a release.
        let mut lasts = std::collections::HashMap::new();
        for r in &ra {
            *lasts.entry(r.packet_index).or_insert(0) += u32::from(r.last);
        }
        assert!(lasts.values().all(|&n| n == 1), "{spec}");
    }
}

#[test]
fn stage_lists_with_flows_parse_print_and_refuse() {
    for s in [
        "rate 10mbit per-flow src/24,dport",
        "rate 10mbit per-flow src/24/64,dst,proto,sport,dport flows 100",
        "rate 10mbit sched fifo",
        "rate 10mbit sched drr weights 1,3 quantum 3000",
        "rate 10mbit sched drr per-flow dport flows 16",
        "link x.up sched fq_codel target 2ms interval 50ms quantum 300 flows 64",
        "rate 10mbit onoff periodic 1s 1s sched fq_codel per-flow src/24",
        "rate 10mbit sched fifo queue codel",
    ] {
        let c = LinkConfig::parse(s).unwrap_or_else(|e| panic!("{s}: {e}"));
        let printed = c.to_string();
        assert_eq!(LinkConfig::parse(&printed).unwrap(), c, "{s} -> {printed}");
        assert!(c.has_bottleneck() || c.flow_pipes(), "{s}");
    }
    let c = LinkConfig::parse("rate 1mbit per-flow src/24,dport flows 9").unwrap();
    assert_eq!(c.to_string(), "rate 1mbit per-flow src/24,dport flows 9");
    assert!(c.flow_pipes() && !c.has_bottleneck());
    let bad = [
        ("rate 1mbit per-flow", "at the end (column 20): per-flow needs a mask such as src/24,dport"),
        ("per-flow src/24, dport rate 1mbit", "token 2 \"src/24,\" (column 10): per-flow: an empty field: write fields separated by commas, without spaces (e.g. src/24,dport)"),
        ("per-flow port rate 1mbit", "token 2 \"port\" (column 10): per-flow: unknown field \"port\": expected src[/P], dst[/P], proto, sport or dport"),
        ("per-flow src/33/64", "token 2 \"src/33/64\" (column 10): per-flow: src/33: an IPv4 address has 32 bits"),
        ("per-flow dport flows 0", "token 4 \"0\" (column 22): per-flow flows: must be 1 to 65536"),
        ("rate 1mbit sched wfq", "token 4 \"wfq\" (column 18): sched: expected fifo, drr or fq_codel"),
        ("rate 1mbit sched drr weights 1,0", "token 6 \"1,0\" (column 30): sched drr weights: \"0\": a weight is a whole number from 1 to 65535 (weights separated by commas, no spaces: 1,3)"),
        ("rate 1mbit sched drr quantum 10", "token 6 \"10\" (column 30): sched drr quantum: at least 64 bytes"),
        ("rate 1mbit sched drr weights 1 weights 2", "token 7 \"weights\" (column 32): a sched argument is given twice"),
        ("sched drr", "token 1 \"sched\" (column 1): a scheduler serves a bottleneck: add rate R, link FILE or onoff (e.g. sched drr weights 1,3 rate 10mbit)"),
        ("rate 1mbit sched fq_codel queue codel", "token 5 \"queue\" (column 27): sched drr and fq_codel keep a queue per flow, bounded together by limit (fq_codel runs CoDel on each): remove queue"),
        ("rate 1mbit sched fifo per-flow dport", "token 5 \"per-flow\" (column 23): sched fifo serves one queue: use per-flow alone for a pipe per flow, or sched drr|fq_codel for a queue per flow on one link"),
        ("rate 1mbit sched fq_codel per-flow dport flows 4", "token 5 \"per-flow\" (column 27): fq_codel hashes flows into its buckets: give their number to it (sched fq_codel flows N), not to per-flow"),
        ("trace f.bin per-flow dport", "token 3 \"per-flow\" (column 13): per-flow gives each flow a pipe of its own, but the trace file has one cursor: use a rule per flow (--rule FILTER 'trace ...') instead"),
        ("rate 1mbit sched fq_codel flows 100000", "token 6 \"100000\" (column 33): fq_codel flows: must be 1 to 65536"),
        ("per-flow dport per-flow sport", "token 3 \"per-flow\" (column 16): per-flow is given twice"),
    ];
    for (s, msg) in bad {
        let e = LinkConfig::parse(s).expect_err(s);
        assert_eq!(e.to_string(), msg, "{s}");
    }
}

#[test]
fn recorded_decisions_of_bottleneck_links_replay_exactly() {
    // `--record-decisions` with a bottleneck: each packet's records are
    // complete once its copies have left; fed back as `trace ... at-end
    // stop`, the same arrivals get the same copies at the same times.
    let flows: Vec<FlowTuple> = (0..3).map(|f| udp(f as u8, 4000 + f, 5000)).collect();
    let streams = || -> Vec<Vec<Arr>> {
        (0..3)
            .map(|f| {
                let gap = 700_000 + f as u64 * 250_000;
                stream(f, f as u64 * 3_000, gap, 600 + 400 * f as u32, 2_000)
            })
            .collect()
    };
    for spec in [
        "rate 5mbit queue codel packets=40 delay 2ms 1ms loss random 2% duplicate 3%",
        "rate 5mbit queue drophead packets=20",
        "rate 5mbit onoff periodic 20ms 10ms queue droptail packets=30 delay 1ms",
        "rate 5mbit queue pie packets=60",
        "rate 5mbit sched drr weights 1,2 limit 40",
        "rate 5mbit sched fq_codel target 2ms interval 20ms limit 60",
        "rate 5mbit per-flow sport queue droptail packets=10 duplicate 5%",
        "rate 5mbit delay 3ms 2ms duplicate 5% loss random 5%",
    ] {
        let mut l = link(spec);
        l.record_decisions();
        let (rel, _) = run(&mut l, &flows, streams(), true);
        assert!(!l.decisions_waiting(), "{spec}");
        let mut actions = Vec::new();
        let n = l.take_decisions(&mut actions);
        assert_eq!(n, actions.len());
        let c = l.counters();
        let released_frames = {
            let mut s: Vec<u64> = rel
                .iter()
                .filter(|r| r.dropped.is_none())
                .map(|r| r.packet_index)
                .collect();
            s.sort_unstable();
            s.dedup();
            s.len() as u64
        };
        // One record per sent copy, one drop per frame without one.
        assert_eq!(
            n as u64,
            c.released + (c.arrivals - released_frames),
            "{spec}: {c:?}"
        );
        let trace = LinkConfig::parse("trace decisions at-end stop").unwrap();
        let mut r = Link::with_trace(&trace, key(7), Box::new(actions.into_iter())).unwrap();
        let (rel2, _) = run(&mut r, &flows, streams(), true);
        let sent = |rel: &[Release]| {
            let mut v: Vec<(u64, u64)> = rel
                .iter()
                .filter(|r| r.dropped.is_none())
                .map(|r| (r.packet_index, r.deadline_ns))
                .collect();
            v.sort_unstable();
            v
        };
        let (a, b) = (sent(&rel), sent(&rel2));
        assert_eq!(a.len(), b.len(), "{spec}");
        assert!(a == b, "{spec}: the replay differs");
        assert!(c.dropped.total() > 0, "{spec}: {c:?}");
        assert_eq!(r.counters().dropped.trace, c.arrivals - released_frames);
    }
}

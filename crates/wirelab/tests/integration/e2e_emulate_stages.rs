//! `wirelab emulate` with a bottleneck (a Mahimahi `link` trace, a `queue`)
//! between two namespaces: A – E – B with the emulator in E, probes from
//! A to B. Exact counts only: what B's interface receives is what the
//! emulator sent, which is what it received less its drops by reason. No
//! timing is asserted.

use crate::common::{count as n, exe, netns_available, run, stop_json, tcpdump, EmuLab};
use std::process::{Child, Command};
use std::time::Duration;
use wirelab_lab::lab::exec_in;

/// This file's lab: A – E – B on 198.18.7.0/24.
fn emu_lab() -> EmuLab {
    EmuLab::new("wls", 7)
}

impl EmuLab {
    /// Sends `n` probes (64-byte payloads, 106-byte frames) from A to B
    /// at 1 kpps with no receiver (B's interface counts them; B's ICMP
    /// replies go b2a, which has no stages); returns
    /// (frames A sent, frames B received) during the call.
    fn frames(&self, n: u64, settle: Duration) -> (u64, u64) {
        self.frames_with(n, settle, &[])
    }

    /// [`EmuLab::frames`] with more `wirelab send` flags.
    fn frames_with(&self, n: u64, settle: Duration, extra: &[&str]) -> (u64, u64) {
        let (a_dev, b_dev) = (
            self.lab.end("a", "e").dev.clone(),
            self.lab.end("b", "e").dev.clone(),
        );
        let (a0, b0) = (
            self.counter("a", &a_dev, "tx_packets"),
            self.counter("b", &b_dev, "rx_packets"),
        );
        self.send_probes(n, extra);
        // What the bottleneck still holds drains before counting.
        std::thread::sleep(settle);
        (
            self.counter("a", &a_dev, "tx_packets") - a0,
            self.counter("b", &b_dev, "rx_packets") - b0,
        )
    }
}

/// The emulator's books for a2b balance and match both interfaces:
/// received = A's frames, sent = B's frames = received − drops − held.
fn books(r: &serde_json::Value, a_tx: u64, b_rx: u64) -> &serde_json::Value {
    let a2b = &r["a2b"];
    let link = &a2b["link"];
    let dropped: u64 = link["dropped"].as_object().unwrap().values().map(n).sum();
    let held = n(&link["queued"]) - n(&link["released"]);
    assert_eq!(n(&a2b["received"]), a_tx, "{r}");
    assert_eq!(n(&link["arrivals"]), a_tx, "{r}");
    assert_eq!(held, 0, "{r}");
    assert_eq!(n(&a2b["sent"]), a_tx - dropped, "{r}");
    assert_eq!(n(&a2b["send_failures"]), 0, "{r}");
    assert_eq!(b_rx, n(&a2b["sent"]), "{r}");
    assert_eq!(a2b["early"], 0, "{r}");
    &link["dropped"]
}

/// A Mahimahi trace with two delivery opportunities, `once`: 100 ms and
/// 200 ms after the first probe each carry 1500 bytes, enough for the 10
/// probes a droptail queue of 10 holds; then the link is dead. Exactly 20
/// probes reach B; every other frame is dropped by the queue limit or as
/// `link_dead`.
#[test]
fn mahimahi_link_once_delivers_its_opportunities_and_then_nothing() {
    if !netns_available(&[]) {
        return;
    }
    let emu = emu_lab();
    let trace = emu.dir.join("two.up");
    std::fs::write(&trace, "100\n200\n").unwrap();
    let stages = format!("link {} once queue droptail packets=10", trace.display());
    let em = emu.emulate(&["--a2b", &stages]);
    std::thread::sleep(Duration::from_millis(300));
    let (a_tx, b_rx) = emu.frames(400, Duration::from_millis(300));
    let r = stop_json(em);
    let dropped = books(&r, a_tx, b_rx);
    assert_eq!(b_rx, 20, "{r}");
    assert!(
        n(&dropped["limit"]) > 0 && n(&dropped["link_dead"]) > 0,
        "{r}"
    );
    assert_eq!(
        n(&dropped["limit"]) + n(&dropped["link_dead"]),
        a_tx - 20,
        "{r}"
    );
}

/// CoDel in front of a 200 kbit/s rate (236 probes/s) under 1 kpps: the
/// queue of 50 fills (limit drops) and its sojourn stays far above the
/// 5 ms target for more than the 100 ms interval, so CoDel drops too. The
/// books balance exactly once the queue has drained.
#[test]
fn codel_queue_drops_are_counted_by_reason() {
    if !netns_available(&[]) {
        return;
    }
    let emu = emu_lab();
    let em = emu.emulate(&["--a2b", "rate 200kbit queue codel packets=50"]);
    std::thread::sleep(Duration::from_millis(300));
    let (a_tx, b_rx) = emu.frames(1_000, Duration::from_millis(1_000));
    let r = stop_json(em);
    let dropped = books(&r, a_tx, b_rx);
    assert!(n(&dropped["aqm"]) > 0 && n(&dropped["limit"]) > 0, "{r}");
    assert_eq!(
        n(&dropped["aqm"]) + n(&dropped["limit"]),
        a_tx - b_rx,
        "{r}"
    );
}

/// A bad `link` trace is refused before anything is forwarded, naming the
/// file and line.
#[test]
fn bad_stage_files_are_refused() {
    if !netns_available(&[]) {
        return;
    }
    let emu = emu_lab();
    let bad = emu.dir.join("bad.up");
    std::fs::write(&bad, "5\n3\n").unwrap();
    let stages = format!("link {} rate 1mbit", bad.display());
    let out = emu
        .spawn_emulate(&["--a2b", &stages])
        .wait_with_output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("use one of them"), "{err}");
    let stages = format!("link {}", bad.display());
    let out = emu
        .spawn_emulate(&["--a2b", &stages])
        .wait_with_output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("bad.up:2:1: time 3ms goes backwards"), "{err}");
}

/// `loss random 100% ecn`: ECN-capable probes leave marked CE instead of
/// being lost (tcpdump reads TOS 0x3 and a right IPv4 checksum on every
/// frame of the tap), the others are all lost, and the link counts the
/// marks.
#[test]
fn ecn_capable_probes_are_marked_ce_instead_of_lost() {
    if !netns_available(&["tcpdump"]) {
        return;
    }
    let emu = emu_lab();
    let tap = emu.dir.join("tap.pcapng");
    let tap_arg = tap.display().to_string();
    let em = emu.emulate(&["--a2b", "loss random 100% ecn", "--tap", &tap_arg]);
    let (sent, got) = emu.frames_with(50, Duration::from_millis(200), &["--tos", "2"]);
    assert!(sent >= 50);
    assert_eq!(sent, got, "every ECT frame crosses");
    let (sent0, got0) = emu.frames_with(20, Duration::from_millis(200), &["--tos", "0"]);
    assert!(sent0 >= 20);
    assert_eq!(got0, 0, "not-ECT frames are lost");
    let r = stop_json(em);
    assert_eq!(r["a2b"]["link"]["ecn_marked"].as_u64(), Some(sent), "{r}");
    let out = run(Command::new("tcpdump").args(["-nn", "-v", "-r"]).arg(&tap));
    let text = String::from_utf8_lossy(&out.stdout);
    // The a2b frames: UDP from A (the tap also holds B's ICMP replies, and
    // tcpdump quotes the probe inside them on a tab-indented line).
    let ip: Vec<&str> = text
        .lines()
        .filter(|l| !l.starts_with('\t') && l.contains(" IP (tos") && l.contains("proto UDP"))
        .collect();
    assert_eq!(ip.len() as u64, sent, "{text}");
    assert!(
        ip.iter().all(|l| l.contains("(tos 0x3,")),
        "CE on every frame: {text}"
    );
    assert!(!text.contains("bad cksum"), "{text}");
}

/// `--mm-log`: 1500-byte probes at 1 kpps (12 Mbit/s) into a Mahimahi
/// trace with an opportunity every 4 ms (3 Mbit/s) and a droptail queue
/// of 10, so most are dropped (a sender slowed by load still overloads). Each direction's log reads as
/// Mahimahi's graph scripts read it (timestamps at or after the base, no
/// negative delay, no departure before the base, known event types), its
/// `+` and `-` lines add up to the emulator's own frame and byte counters
/// (drops included in the arrivals), and a2b's `#` lines are the trace's
/// opportunities, used or wasted: every 4 ms, each once, 1500 bytes.
#[test]
fn mm_logs_parse_as_mahimahi_scripts_read_them_and_match_the_counters() {
    use wirelab_link::mmlog;
    if !netns_available(&[]) {
        return;
    }
    let emu = emu_lab();
    let trace = emu.dir.join("6mbit.up");
    std::fs::write(&trace, "4\n").unwrap();
    let stages = format!("link {} queue droptail packets=10", trace.display());
    let dir = emu.dir.join("mm");
    let em = emu.emulate(&["--a2b", &stages, "--mm-log", dir.to_str().unwrap()]);
    let (a_tx, b_rx) = emu.frames_with(500, Duration::from_millis(300), &["--size", "1458"]);
    let r = stop_json(em);
    let dropped = books(&r, a_tx, b_rx);
    assert!(n(&dropped["limit"]) > 0, "{r}");
    for (d, name) in [("a2b", "a2b.log"), ("b2a", "b2a.log")] {
        let text = std::fs::read_to_string(dir.join(name)).unwrap();
        let s = mmlog::parse(&text).unwrap_or_else(|e| panic!("{name}: {e}\n{text}"));
        let x = &r[d];
        assert_eq!(s.base_ms, 0);
        assert!(s.init_ms.is_some(), "{name}");
        assert_eq!(s.arrivals, n(&x["received"]), "{name} {r}");
        assert_eq!(s.arrival_bytes, n(&x["received_bytes"]), "{name} {r}");
        assert_eq!(s.departures, n(&x["sent"]), "{name} {r}");
        assert_eq!(s.departure_bytes, n(&x["sent_bytes"]), "{name} {r}");
        let logged = r["mm_log"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["direction"] == d)
            .unwrap();
        assert_eq!(
            n(&logged["lines"]),
            s.arrivals + s.departures + s.opportunities,
            "{r}"
        );
    }
    let a2b = std::fs::read_to_string(dir.join("a2b.log")).unwrap();
    let opps: Vec<u64> = a2b
        .lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| match l.split(' ').collect::<Vec<_>>()[..] {
            [t, "#", "1500"] => Some(t.parse().unwrap()),
            [_, "#", other] => panic!("opportunity of {other} bytes"),
            _ => None,
        })
        .collect();
    assert!(opps.len() as u64 >= b_rx, "{} opportunities", opps.len());
    assert!(opps.windows(2).all(|w| w[1] == w[0] + 4), "{opps:?}");
    let b2a = mmlog::parse(&std::fs::read_to_string(dir.join("b2a.log")).unwrap()).unwrap();
    assert_eq!(b2a.opportunities, 0);
}

/// `profile FILE` (Dummynet): a bad profile is refused before anything is
/// forwarded, naming the file and line; a good one (2 ms of airtime per
/// frame at 100 Mbit/s, loss level 0.5) loses about half the probes, each
/// counted as `loss`, and the books balance with B's interface.
#[test]
fn dummynet_profiles_are_checked_and_lose_at_their_loss_level() {
    if !netns_available(&[]) {
        return;
    }
    let emu = emu_lab();
    let bad = emu.dir.join("bad.profile");
    std::fs::write(&bad, "samples 10\nprob delay\n0 5\n1.2 5\n").unwrap();
    let out = emu
        .spawn_emulate(&["--a2b", &format!("profile {}", bad.display())])
        .wait_with_output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("bad.profile:4: probability 1.2 is above 1.0"),
        "{err}"
    );
    let good = emu.dir.join("half.profile");
    std::fs::write(
        &good,
        "name half\nbw 100Mbit/s\nsamples 100\nloss-level 0.5\nprob delay\n0 2\n1 2\n",
    )
    .unwrap();
    let em = emu.emulate(&["--a2b", &format!("profile {}", good.display())]);
    std::thread::sleep(Duration::from_millis(300));
    // 400 probes at 1 kpps: 2 ms of airtime each, 0.8 s of work.
    let (a_tx, b_rx) = emu.frames(400, Duration::from_millis(2_000));
    let r = stop_json(em);
    let dropped = books(&r, a_tx, b_rx);
    let lost = n(&dropped["loss"]);
    assert_eq!(lost, a_tx - b_rx, "{r}");
    let sigma = (a_tx as f64 * 0.25).sqrt();
    assert!(
        (lost as f64 - a_tx as f64 / 2.0).abs() <= 4.0 * sigma,
        "{r}"
    );
}

/// tcpdump on `dev` in `role`, frames coming in only, ns stamps, UDP
/// only; returns once it captures (it creates its file after opening the
/// interface).
fn tcpdump_udp(emu: &EmuLab, role: &str, dev: &str, cap: &std::path::Path) -> Child {
    tcpdump::start(
        emu.lab
            .exec(role, "timeout")
            .args([
                "60", "tcpdump", "-i", dev, "-Q", "in", "-U", "-nn", "-s", "96",
            ])
            .args(["-B", "16384", "--time-stamp-precision=nano", "-w"])
            .arg(cap)
            .arg("udp"),
        cap,
    )
}

/// (UDP destination port, probe sequence number) of every probe frame of a
/// classic pcap of Ethernet + IPv4 (no options) frames, in capture order.
fn probe_seqs(cap: &std::path::Path) -> Vec<(u16, u64)> {
    let b = std::fs::read(cap).unwrap();
    let u32le = |o: usize| u32::from_le_bytes(b[o..o + 4].try_into().unwrap()) as usize;
    let mut v = Vec::new();
    let mut off = 24;
    while off + 16 <= b.len() {
        let cl = u32le(off + 8);
        let f = &b[off + 16..(off + 16 + cl).min(b.len())];
        if f.len() > 42 {
            let p = wirelab_wire::ProbeRepr::parse(&f[42..]).expect("a wirelab probe");
            v.push((u16::from_be_bytes([f[36], f[37]]), p.seq));
        }
        off += 16 + cl;
    }
    v
}

/// Two UDP flows (ports 5001 and 5002, 1000 frames/s of 1042 bytes each,
/// 8.3 Mbit/s) from A into a 4 Mbit/s link, through `per-flow dport` (a
/// pipe per flow) and `sched drr weights 1,3`: the emulator counts the two
/// flows, its books balance with what B's interface received, and each flow
/// arrives in order. The rates they get are timing, not asserted here
/// (see the comment in the test).
#[test]
fn per_flow_pipes_and_drr_weights_share_the_rate_by_flow() {
    if !netns_available(&["tcpdump", "timeout"]) {
        return;
    }
    let emu = emu_lab();
    let b_dev = emu.dev("b", "e");
    for stages in [
        "rate 4mbit queue droptail packets=400 per-flow dport",
        "rate 4mbit sched drr weights 1,3 limit 800",
    ] {
        let cap = emu.dir.join("b.pcap");
        let b0 = emu.counter("b", &b_dev, "rx_packets");
        let td = tcpdump_udp(&emu, "b", &b_dev, &cap);
        let em = emu.emulate(&["--a2b", stages]);
        std::thread::sleep(Duration::from_millis(300));
        let send = |port: &str, secs: &str| {
            exec_in(emu.lab.ns("a"), exe())
                .args(["send", "198.18.7.2", "--port", port, "--rate", "1kpps"])
                .args(["--size", "1000", "-d", secs])
                .stdout(std::process::Stdio::null())
                .spawn()
                .unwrap()
        };
        let first = send("5001", "3.5s");
        std::thread::sleep(Duration::from_millis(300));
        let second = send("5002", "3s");
        for mut s in [first, second] {
            assert!(s.wait().unwrap().success());
        }
        // The queues drain (400 frames at 4 Mbit/s: 0.9 s).
        std::thread::sleep(Duration::from_millis(1_500));
        let r = stop_json(em);
        std::thread::sleep(Duration::from_millis(200));
        tcpdump::stop(td);
        assert_eq!(r["a2b"]["link"]["flows"], 2, "{r}");
        assert_eq!(r["a2b"]["link"]["flow_overflow"], 0, "{r}");
        // Exact counts and order, no rates: every frame the emulator sent
        // reached B (B's interface counts it; tcpdump may miss a few under
        // load, so it judges only order), each flow in its own order, and
        // both flows got through while both sent. The shares themselves
        // (4 Mbit/s per pipe, 1 : 3 under drr) are timing: checked on a
        // virtual clock in crates/wirelab-link/src/tests_flows.rs and
        // measured by `bench/emulate.sh --only flows`.
        let a2b = &r["a2b"];
        let dropped: u64 = a2b["link"]["dropped"]
            .as_object()
            .unwrap()
            .values()
            .map(n)
            .sum();
        // What a queue still held when the emulator stopped is counted
        // as unsent (the drain after the senders is a guess on a loaded
        // machine; the books are exact either way).
        let unsent = n(&a2b["dropped"]["unsent"]);
        assert_eq!(
            n(&a2b["sent"]) + dropped + unsent,
            n(&a2b["received"]),
            "{stages}: {r}"
        );
        let b_rx = emu.counter("b", &b_dev, "rx_packets") - b0;
        assert_eq!(b_rx, n(&a2b["sent"]), "{stages}: frames at B: {r}");
        let seqs = probe_seqs(&cap);
        assert!(
            seqs.len() as u64 <= b_rx,
            "{stages}: tcpdump saw more than B got"
        );
        // Sequence numbers never go back (the three end-of-flow repeats
        // of the last probe repeat its number).
        for port in [5001, 5002] {
            let mine: Vec<u64> = seqs.iter().filter(|f| f.0 == port).map(|f| f.1).collect();
            assert!(
                mine.windows(2).all(|w| w[0] <= w[1]),
                "{stages}: {port} out of order"
            );
            assert!(!mine.is_empty(), "{stages}: nothing of {port} at B");
        }
        // Port 5002 started 0.3 s after 5001 and stopped 0.2 s before it:
        // the first 5002 frame at B has 5001 frames after it (neither flow
        // starved the other once both were queued).
        let first = seqs.iter().position(|f| f.0 == 5002).unwrap();
        assert!(
            seqs[first..].iter().any(|f| f.0 == 5001),
            "{stages}: 5001 starved"
        );
    }
}

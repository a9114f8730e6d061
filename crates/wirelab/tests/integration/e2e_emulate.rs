//! `wirelab emulate` between two namespaces: A – E – B with the emulator in
//! E. Probes from A to B; the receiver's exact counts show what the link
//! did (trace actions, drops by reason), and the emulator's own counters
//! must agree with them. No timing is asserted (bench/ does that).

use crate::common::{
    count as n, exe, interrupt, json, netns_available, run, stop_json, wait_ok, EmuLab,
};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use wirelab_lab::lab::exec_in;

/// This file's lab: A – E – B on 198.18.6.0/24.
fn emu_lab() -> EmuLab {
    EmuLab::new("wlm", 6)
}

impl EmuLab {
    /// Sends `n` probes from A to B at 1 kpps; the receiver's flow report.
    fn probes(&self, n: u64) -> serde_json::Value {
        let rx = exec_in(self.lab.ns("b"), exe())
            .args(["recv", "--json", "--timeout", "20s"])
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        self.lab
            .wait_udp("b", 5757, Duration::from_secs(10))
            .unwrap_or_else(|e| panic!("{e}"));
        self.send_probes(n, &[]);
        let out = rx.wait_with_output().unwrap();
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        v["flows"][0].clone()
    }
}

#[test]
fn trace_actions_are_applied_exactly_and_counted() {
    if !netns_available(&[]) {
        return;
    }
    let emu = emu_lab();
    // docs/trace.md's example S1, then pass forever: probe 0 delayed, probe 1
    // dropped, probe 2 duplicated once, probe 3 twice (three copies).
    let trace = emu.dir.join("s1.pkt.csv");
    std::fs::write(
        &trace,
        "pass,1000\ndrop\ndup,2000\npass,3000\ndup,500\ndup,600\npass,700\n",
    )
    .unwrap();
    let stages = format!("trace {} at-end pass", trace.display());
    let em = emu.emulate(&["--a2b", &stages]);
    let f = emu.probes(10);
    let r = stop_json(em);
    // 10 probes and an end marker (3 repeats of the last probe, which pass).
    assert_eq!(f["lost"], 1, "{f}");
    assert_eq!(f["duplicates"], 3, "{f}");
    let a2b = &r["a2b"];
    assert_eq!(a2b["link"]["dropped"]["trace"], 1, "{r}");
    assert_eq!(a2b["link"]["duplicates"], 3, "{r}");
    assert_eq!(
        a2b["sent"].as_u64().unwrap() + 1,
        a2b["received"].as_u64().unwrap() + 3
    );
    assert_eq!(a2b["early"], 0);
    assert_eq!(r["b2a"]["received"], 0, "{r}");
}

#[test]
fn drops_by_reason_equal_what_is_missing_at_the_far_side() {
    if !netns_available(&[]) {
        return;
    }
    let emu = emu_lab();
    let (a_dev, b_dev) = (
        emu.lab.end("a", "e").dev.clone(),
        emu.lab.end("b", "e").dev.clone(),
    );
    let (a_tx, b_rx) = (
        emu.counter("a", &a_dev, "tx_packets"),
        emu.counter("b", &b_dev, "rx_packets"),
    );
    let em = emu.emulate(&[
        "--a2b",
        "delay 2ms 1ms loss random 20% duplicate 5% seed 11",
    ]);
    let f = emu.probes(2_000);
    let r = stop_json(em);
    let a_tx = emu.counter("a", &a_dev, "tx_packets") - a_tx;
    let b_rx = emu.counter("b", &b_dev, "rx_packets") - b_rx;
    let a2b = &r["a2b"];
    let n = |v: &serde_json::Value| v.as_u64().unwrap();
    let (received, sent) = (n(&a2b["received"]), n(&a2b["sent"]));
    let (lost, dups) = (
        n(&a2b["link"]["dropped"]["loss"]),
        n(&a2b["link"]["duplicates"]),
    );
    assert!(lost > 200 && dups > 20, "{r}");
    // Every frame A sent reached the emulator; what left it is what came in,
    // less the copies the loss model dropped, plus the duplicates; and that
    // is exactly what B's interface received.
    assert_eq!(received, a_tx, "{r}");
    assert_eq!(sent, received - lost + dups, "{r}");
    assert_eq!(b_rx, sent, "{r}");
    // Probe by probe, the receiver can only see fewer losses and duplicates
    // (a probe is lost only when all its copies are).
    assert!(
        n(&f["lost"]) <= lost && n(&f["duplicates"]) <= dups,
        "{f} vs {r}"
    );
    assert_eq!(a2b["early"], 0);
}

/// The emulator's log: one entry per copy.
fn read_log(p: &std::path::Path) -> Vec<wirelab_wire::EmuRecord> {
    let r = wirelab_wire::RecordReader::new(std::fs::File::open(p).unwrap()).unwrap();
    r.map(|x| wirelab_wire::EmuRecord::from_record(&x.unwrap()).expect("an emulator record"))
        .collect()
}

/// Every reason's count but `ring` (copies not sent).
fn dropped_copies(d: &serde_json::Value) -> u64 {
    d.as_object()
        .unwrap()
        .iter()
        .filter(|(k, _)| *k != "ring")
        .map(|(_, v)| n(v))
        .sum()
}

#[test]
fn drops_by_reason_are_in_the_report_the_log_and_its_analysis() {
    if !netns_available(&[]) {
        return;
    }
    let emu = emu_lab();
    let log = emu.dir.join("e.wlr");
    let (a_dev, b_dev) = (emu.dev("a", "e"), emu.dev("b", "e"));
    let b_rx = emu.counter("b", &b_dev, "rx_packets");
    let a_tx = emu.counter("a", &a_dev, "tx_packets");
    // 20 frames in flight at 1 kpps, room for 10: the limit drops about
    // half, the loss model some more.
    let stages = "delay 20ms limit 10 loss random 10% seed 5";
    let em = emu.emulate(&["--a2b", stages, "--log", log.to_str().unwrap()]);
    emu.probes(1_000);
    let r = stop_json(em);
    let b_rx = emu.counter("b", &b_dev, "rx_packets") - b_rx;
    let a_tx = emu.counter("a", &a_dev, "tx_packets") - a_tx;
    let a2b = &r["a2b"];
    let d = &a2b["dropped"];
    let (received, sent, dups) = (n(&a2b["received"]), n(&a2b["sent"]), n(&a2b["duplicates"]));
    assert!(n(&d["limit"]) > 100 && n(&d["loss"]) > 20, "{r}");
    assert_eq!(received, a_tx, "{r}");
    assert_eq!(received + dups, sent + dropped_copies(d), "{r}");
    assert_eq!(b_rx, sent, "{r}");
    assert_eq!(
        (n(&d["unsent"]), n(&d["send_failure"]), n(&a2b["early"])),
        (0, 0, 0)
    );
    // The model's own counters agree.
    assert_eq!(a2b["link"]["dropped"]["limit"], d["limit"]);
    assert_eq!(a2b["link"]["dropped"]["loss"], d["loss"]);
    assert_eq!(r["log"]["count"], received + dups, "{r}");

    // The log: each copy once, the fates as counted.
    let recs = read_log(&log);
    assert_eq!(recs.len() as u64, received + dups);
    let fate = |f| recs.iter().filter(|e| e.fate == f).count() as u64;
    use wirelab_wire::EmuFate;
    assert_eq!(fate(EmuFate::Sent), sent);
    assert_eq!(fate(EmuFate::Limit), n(&d["limit"]));
    assert_eq!(fate(EmuFate::Loss), n(&d["loss"]));
    for e in recs.iter().filter(|e| e.fate == EmuFate::Sent) {
        assert_eq!((e.rule, e.direction), (0, 0));
        assert_eq!(e.deadline_ns - e.arrival_ns, 20_000_000, "{e:?}");
        assert!(e.departure_ns >= e.deadline_ns, "early: {e:?}");
    }
    let seqs: std::collections::BTreeSet<u64> = recs.iter().map(|e| e.seq).collect();
    assert_eq!(seqs.len() as u64, received);
    assert_eq!(seqs.last(), Some(&(received - 1)));

    // analyze reads it back.
    let out = run(std::process::Command::new(exe())
        .args(["analyze", "--json"])
        .arg(&log));
    let a = json(&out);
    assert_eq!(a["schema"], "wirelab.emulate-log/1");
    let f = &a["flows"][0];
    assert_eq!(
        (f["rule"].clone(), f["direction"].clone()),
        (0.into(), "a2b".into())
    );
    assert_eq!(f["stages"], stages);
    assert_eq!((n(&f["frames"]), n(&f["sent"])), (received, sent));
    assert_eq!(f["dropped"]["limit"], d["limit"]);
    assert_eq!(f["dropped"]["loss"], d["loss"]);
    assert_eq!((n(&f["early"]), n(&f["lateness"]["count"])), (0, sent));
    assert_eq!(n(&f["scheduled_delay"]["count"]), sent);
    let text = run(std::process::Command::new(exe()).arg("analyze").arg(&log));
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        text.contains(&format!("a2b default [{stages}]: {received} frames")),
        "{text}"
    );
    assert!(text.contains("early 0"), "{text}");
}

/// Sent copies per frame (seq) and their scheduled delays, from a log.
fn fates(log: &[wirelab_wire::EmuRecord]) -> std::collections::BTreeMap<u64, Vec<u64>> {
    let mut m = std::collections::BTreeMap::<u64, Vec<u64>>::new();
    for e in log {
        let v = m.entry(e.seq).or_default();
        if e.fate == wirelab_wire::EmuFate::Sent {
            v.push(e.deadline_ns - e.arrival_ns);
        }
    }
    for v in m.values_mut() {
        v.sort_unstable();
    }
    m
}

#[test]
fn recorded_decisions_replay_the_run_exactly() {
    if !netns_available(&[]) {
        return;
    }
    let emu = emu_lab();
    let (l1, l2) = (emu.dir.join("1.wlr"), emu.dir.join("2.wlr"));
    let dec = emu.dir.join("run.pkt.csv");
    let em = emu.emulate(&[
        "--a2b",
        "delay 5ms 2ms loss random 10% duplicate 5%",
        "--seed",
        "9",
        "--log",
        l1.to_str().unwrap(),
        "--record-decisions",
        dec.to_str().unwrap(),
    ]);
    emu.probes(500);
    let r1 = stop_json(em);
    let trace = emu.dir.join("run.a2b.pkt.csv");
    assert_eq!(r1["decisions"][0]["path"], trace.to_str().unwrap(), "{r1}");
    assert!(
        !emu.dir.join("run.b2a.pkt.csv").exists(),
        "b2a has no stages"
    );
    let stages = format!("trace {} at-end stop", trace.display());
    let em = emu.emulate(&["--a2b", &stages, "--log", l2.to_str().unwrap()]);
    emu.probes(500);
    let r2 = stop_json(em);
    let (a, b) = (&r1["a2b"], &r2["a2b"]);
    assert!(
        n(&a["dropped"]["loss"]) > 10 && n(&a["duplicates"]) > 5,
        "{r1}"
    );
    for k in ["received", "sent"] {
        assert_eq!(a[k], b[k], "{k}: {r1} {r2}");
    }
    // Per frame: the same copies sent, with the same delays to the ns.
    let (f1, f2) = (fates(&read_log(&l1)), fates(&read_log(&l2)));
    // 500 probes, 3 repeats of the last, and the sender's empty datagram
    // that primes its path.
    assert_eq!(f1.len(), 504);
    let differ: Vec<_> = f1
        .iter()
        .filter(|(seq, v)| f2.get(seq) != Some(v))
        .take(5)
        .collect();
    assert!(differ.is_empty(), "{differ:?}");
    assert_eq!(f1.len(), f2.len());
}

#[test]
fn the_tap_holds_exactly_what_the_far_side_received() {
    if !netns_available(&["tcpdump"]) {
        return;
    }
    let emu = emu_lab();
    let (tap, far) = (emu.dir.join("t.pcapng"), emu.dir.join("b.pcap"));
    let b_dev = emu.dev("b", "e");
    let dump = exec_in(emu.lab.ns("b"), "tcpdump")
        // A 64 MiB buffer: immediate mode gives each frame a slot of the
        // snap length, and 2 MiB of them drop frames under load.
        .args([
            "-Q",
            "in",
            "-U",
            "-B",
            "65536",
            "--immediate-mode",
            "-i",
            &b_dev,
            "-w",
        ])
        .arg(&far)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // tcpdump is up once the file has its header.
    let t0 = Instant::now();
    while std::fs::metadata(&far).map_or(0, |m| m.len()) == 0 {
        assert!(t0.elapsed() < Duration::from_secs(20), "tcpdump not up");
        std::thread::sleep(Duration::from_millis(20));
    }
    let em = emu.emulate(&[
        "--a2b",
        "delay 1ms 500us duplicate 10% corrupt 5% seed 4",
        "--tap",
        tap.to_str().unwrap(),
    ]);
    emu.probes(300);
    let r = stop_json(em);
    interrupt(dump);
    let frames = |p: &std::path::Path, iface: Option<u32>| -> Vec<Vec<u8>> {
        let mut rd = wirelab_pcap::PcapReader::new(std::fs::File::open(p).unwrap()).unwrap();
        let mut v = Vec::new();
        while let Some(pkt) = rd.next_packet().unwrap() {
            if iface.is_none_or(|i| pkt.interface == i) {
                v.push(pkt.data.to_vec());
            }
        }
        v
    };
    let (t, b) = (frames(&tap, Some(0)), frames(&far, None));
    let sent = n(&r["a2b"]["sent"]);
    assert!(
        n(&r["a2b"]["duplicates"]) > 10 && n(&r["a2b"]["corrupted"]) > 5,
        "{r}"
    );
    assert_eq!(t.len() as u64, sent);
    assert_eq!(n(&r["tap"]["count"]), sent, "{r}");
    assert_eq!(t.len(), b.len());
    let differ = t.iter().zip(&b).filter(|(x, y)| x != y).count();
    assert_eq!(differ, 0);
    assert!(frames(&tap, Some(1)).is_empty(), "nothing went b2a");
}

#[test]
fn a_rule_takes_its_frames_and_the_rest_pass_arp_included() {
    if !netns_available(&[]) {
        return;
    }
    let emu = emu_lab();
    // A resolves B through the emulator: ARP goes a2b, the reply b2a.
    let a_dev = emu.dev("a", "e");
    run(emu
        .lab
        .exec("a", "ip")
        .args(["neigh", "del", "198.18.6.2", "dev", &a_dev]));
    let em = emu.emulate(&["--rule", "udp dst port 5004", "loss random 100%"]);
    // 40 probes to the rule's port (with the 3 repeats of the last and the
    // empty datagram that primes the sender's path: 44 frames), then 100 to
    // the receiver's (104 frames), which all arrive.
    run(exec_in(emu.lab.ns("a"), exe()).args([
        "send",
        "198.18.6.2",
        "--port",
        "5004",
        "--rate",
        "1kpps",
        "-n",
        "40",
    ]));
    let f = emu.probes(100);
    let r = stop_json(em);
    assert_eq!((n(&f["received"]), n(&f["lost"])), (100, 0), "{f}");
    let (a2b, b2a) = (&r["a2b"], &r["b2a"]);
    let rule = &a2b["rules"][0];
    assert_eq!(rule["filter"], "udp dst port 5004");
    assert_eq!(
        (n(&rule["frames"]), n(&rule["link"]["dropped"]["loss"])),
        (44, 44),
        "{r}"
    );
    assert_eq!(n(&a2b["dropped"]["loss"]), 44);
    // Everything else passed: the probes and ARP.
    let arp = n(&a2b["link"]["arrivals"]) - 104;
    assert!(arp >= 1, "{r}");
    assert_eq!(n(&a2b["sent"]), 104 + arp, "{r}");
    assert_eq!(n(&b2a["rules"][0]["frames"]), 0, "{r}");
    assert!(n(&b2a["link"]["arrivals"]) >= 1 && n(&b2a["sent"]) == n(&b2a["received"]));
}

/// `wirelab emulate ctl --socket SOCK ARGS...`.
fn ctl(sock: &std::path::Path, args: &[&str]) -> std::process::Output {
    Command::new(exe())
        .args(["emulate", "ctl", "--socket"])
        .arg(sock)
        .args(args)
        .output()
        .unwrap()
}

fn ctl_ok(sock: &std::path::Path, args: &[&str]) -> String {
    let o = ctl(sock, args);
    assert!(
        o.status.success(),
        "ctl {args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// Sends `n` probes from A to B's `port` at 1 kpps.
fn send_to(emu: &EmuLab, port: u16, n: u64) -> Child {
    exec_in(emu.lab.ns("a"), exe())
        .args(["send", "198.18.6.2", "-q", "--rate", "1kpps", "--port"])
        .arg(port.to_string())
        .args(["-n", &n.to_string()])
        .stdout(Stdio::null())
        .spawn()
        .unwrap()
}

/// The trace drops of one rule in a→b, by seq.
fn drops_of(log: &[wirelab_wire::EmuRecord], rule: u32) -> (u64, Vec<u64>) {
    let mine: Vec<_> = log
        .iter()
        .filter(|e| e.rule == rule && e.direction == 0)
        .collect();
    let frames = mine.iter().filter(|e| e.copy == 0).count() as u64;
    let mut d: Vec<u64> = mine
        .iter()
        .filter(|e| e.fate == wirelab_wire::EmuFate::Trace)
        .map(|e| e.seq)
        .collect();
    d.sort_unstable();
    (frames, d)
}

#[test]
fn rules_are_added_updated_and_removed_at_run_time_each_reading_its_own_trace() {
    if !netns_available(&[]) {
        return;
    }
    let emu = emu_lab();
    let (sock, log) = (emu.dir.join("ctl.sock"), emu.dir.join("l.wlr"));
    let trace = |name: &str, text: &str| {
        let p = emu.dir.join(name);
        std::fs::write(&p, text).unwrap();
        format!("trace {} at-end pass", p.display())
    };
    let t1 = trace("t1.pkt.csv", "drop\ndrop\npass,0\n");
    let t2 = trace("t2.pkt.csv", "pass,0\ndrop\ndrop\ndrop\n");
    let t3 = trace("t3.pkt.csv", "drop\ndrop\ndrop\n");
    let em = emu.emulate(&[
        "--ctl",
        sock.to_str().unwrap(),
        "--log",
        log.to_str().unwrap(),
    ]);
    let out = ctl_ok(&sock, &["add", "udp dst port 5004", &t1]);
    assert!(
        out.starts_with("added rule 1 a2b+b2a 'udp dst port 5004'"),
        "{out}"
    );
    ctl_ok(&sock, &["add", "udp dst port 6000", &t2]);
    // The same filter again: refused, nothing changed.
    let o = ctl(&sock, &["add", "a2b: udp dst port 5004", "delay 1ms"]);
    assert!(!o.status.success());
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("exists"),
        "{o:?}"
    );
    // Both rules at once: each frame of each reads its own trace in order.
    // Each send is 10 probes, the 3 repeats of the last and the empty
    // datagram that primes the path: 14 frames.
    let (x, y) = (send_to(&emu, 5004, 10), send_to(&emu, 6000, 10));
    wait_ok(x);
    wait_ok(y);
    let out = ctl_ok(&sock, &["update", "udp dst port 5004", &t3]);
    assert!(out.starts_with("updated rule 1"), "{out}");
    wait_ok(send_to(&emu, 5004, 10));
    assert!(ctl_ok(&sock, &["del", "2"]).starts_with("removed rule 2"));
    let list = ctl_ok(&sock, &["list"]);
    assert_eq!(list.lines().count(), 1, "{list}");
    assert!(
        list.contains("rule 1 a2b+b2a 'udp dst port 5004' [trace"),
        "{list}"
    );
    wait_ok(send_to(&emu, 6000, 10));
    let stats = ctl_ok(&sock, &["stats"]);
    assert!(stats.contains("rule 1 'udp dst port 5004'"), "{stats}");
    let o = ctl(&sock, &["del", "udp dst port 6000"]);
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("no rule"),
        "{o:?}"
    );
    let r = stop_json(em);

    let recs = read_log(&log);
    // Rule 1: 14 frames reading t1 (two drops), then 14 under t3 (three
    // drops); its frames count on across the update.
    assert_eq!(drops_of(&recs, 1), (28, vec![0, 1, 14, 15, 16]));
    // Rule 2: 14 frames reading t2; after it went, port 6000 passes.
    assert_eq!(drops_of(&recs, 2), (14, vec![1, 2, 3]));
    assert_eq!(drops_of(&recs, 0), (14, vec![]));
    let a2b = &r["a2b"];
    assert_eq!(n(&a2b["dropped"]["trace"]), 8, "{r}");
    assert_eq!(n(&a2b["sent"]), 4 * 14 - 8, "{r}");
    let ended: Vec<(u64, String, u64)> = a2b["ended_rules"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                n(&e["rule"]),
                e["ended"].as_str().unwrap().to_string(),
                n(&e["frames"]),
            )
        })
        .collect();
    assert_eq!(
        ended,
        [
            (1, "updated".to_string(), 14),
            (2, "removed".to_string(), 14)
        ]
    );
    assert_eq!(n(&a2b["rules"][0]["frames"]), 14);
    assert!(!sock.exists(), "the socket goes with the emulator");
}

#[test]
fn a_hundred_rule_changes_under_traffic_lose_and_reorder_nothing() {
    if !netns_available(&[]) {
        return;
    }
    use wirelab_engine::emulate::ctl::{request, Request};
    let emu = emu_lab();
    let sock = emu.dir.join("ctl.sock");
    // The same delay under the rule and without it: the order of frames
    // is theirs whatever rule takes them.
    let em = emu.emulate(&["--ctl", sock.to_str().unwrap(), "--a2b", "delay 1ms"]);
    let rx = exec_in(emu.lab.ns("b"), exe())
        .args(["recv", "--json", "--timeout", "60s"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    emu.lab
        .wait_udp("b", 5757, Duration::from_secs(10))
        .unwrap_or_else(|e| panic!("{e}"));
    let tx = exec_in(emu.lab.ns("a"), exe())
        .args(["send", "198.18.6.2", "-q", "--rate", "2kpps", "-d", "60s"])
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(200));
    let rule = "udp dst port 5757";
    for i in 0..100 {
        for req in [
            Request::Add {
                filter: rule.into(),
                stages: "delay 1ms".into(),
            },
            Request::Update {
                rule: rule.into(),
                stages: "delay 1ms seed 3".into(),
            },
            Request::Del { rule: rule.into() },
        ] {
            let v = request(&sock, &req).unwrap();
            assert_eq!(v["ok"], true, "round {i}: {req:?}: {v}");
        }
    }
    run(Command::new("kill").args(["-INT", &tx.id().to_string()]));
    wait_ok(tx);
    let out = rx.wait_with_output().unwrap();
    let f = json(&out)["flows"][0].clone();
    let r = stop_json(em);
    assert!(n(&f["received"]) > 100, "{f}");
    assert_eq!(
        (n(&f["lost"]), n(&f["duplicates"]), n(&f["reordered"])),
        (0, 0, 0),
        "{f}"
    );
    let a2b = &r["a2b"];
    assert_eq!(dropped_copies(&a2b["dropped"]), 0, "{r}");
    let ended = a2b["ended_rules"].as_array().unwrap();
    assert_eq!(ended.len(), 200);
    // The rules took traffic while it flowed.
    let took: u64 = ended.iter().map(|e| n(&e["frames"])).sum();
    assert!(took > 0, "{r}");
    assert_eq!(n(&a2b["sent"]), n(&a2b["received"]));
}

//! `wirelab emulate` between two namespaces: A – E – B with the emulator in
//! E. Probes from A to B; the receiver's exact counts show what the link
//! did (trace actions, drops by reason), and the emulator's own counters
//! must agree with them. No timing is asserted (bench/ does that).

mod common;

use common::{exe, json, netns_available, run};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use wirelab_ctl::lab::{exec_in, Lab, LinkSpec};

struct Emu {
    lab: Lab,
    dir: std::path::PathBuf,
}

impl Emu {
    fn new() -> Emu {
        // No IPv6 (no stray solicitations through the emulator); static
        // neighbours, so no ARP consumes trace records.
        let lab = Lab::new("wlm")
            .namespace("a")
            .namespace("e")
            .namespace("b")
            .link("a", "e", LinkSpec::new().ipv6_off())
            .link("e", "b", LinkSpec::new().ipv6_off())
            .build()
            .unwrap_or_else(|e| panic!("{e}"));
        let dir = std::env::temp_dir().join(lab.ns("e"));
        std::fs::create_dir_all(&dir).unwrap();
        let emu = Emu { lab, dir };
        let mac = |role: &str, peer: &str| {
            let dev = &emu.lab.end(role, peer).dev;
            let o = run(emu
                .lab
                .exec(role, "cat")
                .arg(format!("/sys/class/net/{dev}/address")));
            String::from_utf8_lossy(&o.stdout).trim().to_string()
        };
        let (ma, mb) = (mac("a", "e"), mac("b", "e"));
        for (role, peer, me, other, other_mac) in [
            ("a", "e", "198.18.6.1/24", "198.18.6.2", &mb),
            ("b", "e", "198.18.6.2/24", "198.18.6.1", &ma),
        ] {
            let dev = emu.lab.end(role, peer).dev.clone();
            run(emu
                .lab
                .exec(role, "ip")
                .args(["addr", "add", me, "dev", &dev]));
            run(emu.lab.exec(role, "ip").args([
                "neigh",
                "replace",
                other,
                "lladdr",
                other_mac,
                "dev",
                &dev,
                "nud",
                "permanent",
            ]));
        }
        emu
    }

    fn emulate(&self, args: &[&str]) -> Child {
        exec_in(self.lab.ns("e"), exe())
            .args(["emulate", "--json", "--a"])
            .arg(&self.lab.end("e", "a").dev)
            .arg("--b")
            .arg(&self.lab.end("e", "b").dev)
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    }

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
        run(exec_in(self.lab.ns("a"), exe()).args([
            "send",
            "198.18.6.2",
            "--rate",
            "1kpps",
            "-n",
            &n.to_string(),
        ]));
        let out = rx.wait_with_output().unwrap();
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        v["flows"][0].clone()
    }
}

impl Drop for Emu {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Stops the emulator (SIGINT) and returns its JSON report.
fn stop(child: Child) -> serde_json::Value {
    let pid = child.id().to_string();
    run(Command::new("kill").args(["-INT", &pid]));
    let deadline = Instant::now() + Duration::from_secs(20);
    let out = child.wait_with_output().unwrap();
    assert!(Instant::now() < deadline);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    json(&out)
}

#[test]
fn trace_actions_are_applied_exactly_and_counted() {
    if !netns_available(&[]) {
        return;
    }
    let emu = Emu::new();
    // The spec's S1 example, then pass forever: probe 0 delayed, probe 1
    // dropped, probe 2 duplicated once, probe 3 twice (three copies).
    let trace = emu.dir.join("s1.pkt.csv");
    std::fs::write(
        &trace,
        "pass,1000\ndrop\ndup,2000\npass,3000\ndup,500\ndup,600\npass,700\n",
    )
    .unwrap();
    let stages = format!("trace {} at-end pass", trace.display());
    let em = emu.emulate(&["--a2b", &stages]);
    std::thread::sleep(Duration::from_millis(300));
    let f = emu.probes(10);
    let r = stop(em);
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
    let emu = Emu::new();
    let (a_dev, b_dev) = (
        emu.lab.end("a", "e").dev.clone(),
        emu.lab.end("b", "e").dev.clone(),
    );
    let count = |role: &str, dev: &str, what: &str| -> u64 {
        let p = format!("/sys/class/net/{dev}/statistics/{what}");
        let o = run(emu.lab.exec(role, "cat").arg(p));
        String::from_utf8_lossy(&o.stdout).trim().parse().unwrap()
    };
    let (a_tx, b_rx) = (
        count("a", &a_dev, "tx_packets"),
        count("b", &b_dev, "rx_packets"),
    );
    let em = emu.emulate(&[
        "--a2b",
        "delay 2ms 1ms loss random 20% duplicate 5% seed 11",
    ]);
    std::thread::sleep(Duration::from_millis(300));
    let f = emu.probes(2_000);
    let r = stop(em);
    let a_tx = count("a", &a_dev, "tx_packets") - a_tx;
    let b_rx = count("b", &b_dev, "rx_packets") - b_rx;
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

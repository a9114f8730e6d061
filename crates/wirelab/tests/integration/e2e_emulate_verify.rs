//! `wirelab emulate verify` judging the real emulator: namespaces A – E –
//! B, the emulator in E, tcpdump with ns stamps on E's A-side interface
//! (frames entering, `-Q in`) and on B's interface (frames the emulator
//! sent: it sends past the qdisc, where E's own taps do not see them).
//! Counts and decisions are asserted exactly; timing only as "never
//! early", a correctness property. Delay figures belong to bench/.

use crate::common::{
    count as n, exe, json, netns_available, run, stop_json, tcpdump, tools_available, EmuLab,
};
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::Duration;
use wirelab_lab::lab::Lab;

/// This file's lab: A – E – B on 198.18.7.0/24.
fn emu_lab() -> EmuLab {
    EmuLab::new("wlv", 7)
}

impl EmuLab {
    /// Frames A has sent towards E.
    fn tx_packets(&self) -> u64 {
        self.counter("a", &self.dev("a", "e"), "tx_packets")
    }

    /// Runs the emulator with `stages` A→B while `n` probes go from A to
    /// B at 1 kpps, captured on both sides; returns the emulator's report,
    /// the frames A sent and the two captures.
    fn run(&self, stages: &str, n: u64) -> (serde_json::Value, u64, PathBuf, PathBuf) {
        let (cap_in, cap_out) = (self.dir.join("in.pcap"), self.dir.join("out.pcap"));
        let td_in = tcpdump(&self.lab, "e", &self.lab.end("e", "a").dev, &cap_in);
        let td_out = tcpdump(&self.lab, "b", &self.lab.end("b", "e").dev, &cap_out);
        let em = self.emulate(&["--a2b", stages]);
        std::thread::sleep(Duration::from_millis(300));
        let tx0 = self.tx_packets();
        self.send_probes(n, &[]);
        let sent = self.tx_packets() - tx0;
        // Every frame in, then whatever leaves (bounded: a missing frame
        // shows as a count, not as a hang).
        tcpdump::wait_frames(&cap_in, sent as usize, Duration::from_secs(20));
        tcpdump::wait_frames(&cap_out, 1, Duration::from_secs(20));
        std::thread::sleep(Duration::from_millis(500));
        tcpdump::stop(td_in);
        tcpdump::stop(td_out);
        (stop_json(em), sent, cap_in, cap_out)
    }

    fn verify(&self, cap_in: &Path, cap_out: &Path, args: &[&str]) -> serde_json::Value {
        json(&run(Command::new(exe())
            .args(["emulate", "verify", "--json"])
            .arg(cap_in)
            .arg(cap_out)
            .args(args)))
    }
}

/// tcpdump on `dev` in `role`, frames coming in only, ns stamps; returns
/// once it captures.
fn tcpdump(lab: &Lab, role: &str, dev: &str, cap: &Path) -> Child {
    tcpdump::start(
        lab.exec(role, "timeout")
            .args([
                "60", "tcpdump", "-i", dev, "-Q", "in", "-U", "-nn", "-s", "0",
            ])
            // A 64 MiB buffer: in immediate mode each frame takes a slot of
            // the snap length, and 2 MiB of them drop frames under load.
            .args([
                "-B",
                "65536",
                "--immediate-mode",
                "--time-stamp-precision=nano",
                "-w",
            ])
            .arg(cap),
        cap,
    )
}

#[test]
fn a_constant_delay_is_judged_frame_by_frame_and_never_early() {
    if !netns_available(&[]) || !tools_available(&["tcpdump", "timeout"]) {
        return;
    }
    let emu = emu_lab();
    let (r, sent, cap_in, cap_out) = emu.run("delay 2ms", 200);
    let v = emu.verify(&cap_in, &cap_out, &["--delay", "2ms"]);
    assert_eq!(v["schema"], "wirelab.emulate.verify/1");
    assert_eq!(v["configured"], "delay 2ms");
    // Every frame A sent went in, and left once.
    assert!(sent >= 200, "{sent}");
    assert_eq!(n(&v["in_frames"]), sent, "{v}");
    assert_eq!(n(&v["matched"]), sent, "{v}");
    assert_eq!(n(&v["out_frames"]), sent, "{v}");
    assert_eq!((n(&v["lost"]), n(&v["extra"])), (0, 0), "{v}");
    assert_eq!(n(&v["early"]), 0, "{v}");
    assert!(v["error"]["min_ns"].as_i64().unwrap() >= 0, "{v}");
    assert_eq!(n(&v["configured_delay"]["min_ns"]), 2_000_000);
    assert_eq!(n(&v["configured_delay"]["max_ns"]), 2_000_000);
    // The emulator agrees.
    assert_eq!(n(&r["a2b"]["sent"]), sent, "{r}");

    // Against a larger delay than configured, every copy is early.
    let v = emu.verify(&cap_in, &cap_out, &["--delay", "1s"]);
    assert_eq!(n(&v["early"]), sent, "{v}");
    assert_eq!(v["early_first"].as_array().unwrap().len(), 10);
}

#[test]
fn random_decisions_replay_exactly_through_the_link_model() {
    if !netns_available(&[]) || !tools_available(&["tcpdump", "timeout"]) {
        return;
    }
    let emu = emu_lab();
    let stages = "delay 2ms 1ms loss random 20% duplicate 5% seed 11";
    let (r, sent, cap_in, cap_out) = emu.run(stages, 1_000);
    let v = emu.verify(&cap_in, &cap_out, &["--stages", stages]);
    let a2b = &r["a2b"];
    let (drops, dups) = (
        n(&a2b["link"]["dropped"]["loss"]),
        n(&a2b["link"]["duplicates"]),
    );
    assert!(drops > 100 && dups > 10, "{r}");
    // The same seed, packet indices and stages give the emulator's own
    // decisions: every copy it sent is one the configuration expects, and
    // no other; the frames dropped whole are among its dropped copies.
    assert_eq!(n(&v["in_frames"]), sent, "{v}");
    assert_eq!(n(&v["in_frames"]), n(&a2b["link"]["arrivals"]), "{v}\n{r}");
    assert_eq!(
        n(&v["expected_copies"]),
        n(&a2b["link"]["queued"]),
        "{v}\n{r}"
    );
    assert_eq!(n(&v["matched"]), n(&a2b["sent"]), "{v}\n{r}");
    assert_eq!(n(&v["matched"]), n(&v["expected_copies"]), "{v}");
    let whole = n(&v["dropped_as_configured"]);
    assert!(whole > 100 && whole <= drops, "{v}\n{r}");
    assert_eq!(
        (n(&v["lost"]), n(&v["missing_copies"]), n(&v["extra"])),
        (0, 0, 0),
        "{v}"
    );
    assert_eq!(n(&v["early"]), 0, "{v}");
    // The jitter makes the configured delays vary: a KS distance over
    // every matched copy is given, and it tells the right delay from a
    // wrong one. The same decisions with 20 ms instead of 2 ms configured
    // put nearly every measured delay below the configured ones (distance
    // near 1; a copy descheduled for 17 ms would not be); the right
    // configuration fits better.
    assert_eq!(v["ks"]["samples"], v["matched"], "{v}");
    let d = v["ks"]["distance"].as_f64().unwrap();
    let far = emu.verify(
        &cap_in,
        &cap_out,
        &[
            "--stages",
            "delay 20ms 1ms loss random 20% duplicate 5% seed 11",
        ],
    );
    let far_d = far["ks"]["distance"].as_f64().unwrap();
    assert!(d < far_d && far_d <= 1.0, "{d} vs {far_d}: {v}\n{far}");
    assert!(n(&far["early"]) > 0, "{far}");

    // Another seed's decisions are not the emulator's.
    let w = emu.verify(&cap_in, &cap_out, &["--stages", stages, "--seed", "12"]);
    assert_eq!(w["dropped_as_configured"], v["dropped_as_configured"]);
    let other = emu.verify(
        &cap_in,
        &cap_out,
        &[
            "--stages",
            "delay 2ms 1ms loss random 20% duplicate 5% seed 12",
        ],
    );
    assert!(n(&other["lost"]) > 0 && n(&other["extra"]) > 0, "{other}");
}

//! Stressors end to end: `wirelab stress` runs stress-ng, reports its CPU
//! time and leaves no process behind when it ends, is stopped, or is
//! killed; a campaign's `[[stressor]]` is up during its point, recorded in
//! `point.json` with its log, gone after the point (over `lab:` and
//! `ssh://` transports), after a killed controller and after killed ssh
//! connections, and a stressor that dies fails the point (exit 4) naming
//! it. Counts and content only; CPU time is asserted only as a generous
//! fraction of what was asked.

use crate::common::bundle::{on_tx_rx, run_command, summary_rows, the_bundle, the_point};
use crate::common::files::{json_file, scratch, text};
use crate::common::sshd::{have_sshd, Sshd};
use crate::common::{exe, netns_available, tools_available};
use serde_json::Value;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Live (not zombie) processes whose name starts with `stress-ng`.
fn live_stress_ng() -> Vec<String> {
    let mut found = vec![];
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(stat) = std::fs::read_to_string(e.path().join("stat")) else {
            continue;
        };
        // pid (comm) state ...
        let (Some(open), Some(close)) = (stat.find('('), stat.rfind(')')) else {
            continue;
        };
        let comm = &stat[open + 1..close];
        let state = stat[close + 1..].split_whitespace().next().unwrap_or("");
        if comm.starts_with("stress-ng") && state != "Z" && state != "X" {
            found.push(format!("{} {comm} {state}", &stat[..open]));
        }
    }
    found
}

/// Polls until no live stress-ng process is left (at most 10 s).
fn no_stress_ng_left() -> Vec<String> {
    let t0 = Instant::now();
    loop {
        let left = live_stress_ng();
        if left.is_empty() || t0.elapsed() > Duration::from_secs(10) {
            return left;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn wait_for(what: &str, mut f: impl FnMut() -> bool) {
    let t0 = Instant::now();
    while !f() {
        assert!(t0.elapsed() < Duration::from_secs(60), "never: {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A part's arguments after its program.
fn args_of(part: &Value) -> String {
    let c: Vec<&str> = part["command"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap())
        .collect();
    c[1..].join(" ")
}

fn cpu_s(v: &Value) -> f64 {
    v["user_s"].as_f64().unwrap() + v["system_s"].as_f64().unwrap()
}

#[test]
fn stress_runs_stress_ng_reports_its_cpu_and_leaves_nothing() {
    if !tools_available(&["stress-ng"]) {
        return;
    }
    assert!(no_stress_ng_left().is_empty(), "stress-ng running before");
    // To its duration: 1 worker at 100 % for 2 s.
    let began = std::time::Instant::now();
    let o = Command::new(exe())
        .args(["stress", "cpu", "-w", "1", "-d", "2s", "--json"])
        .output()
        .unwrap();
    let wall_s = began.elapsed().as_secs_f64();
    assert!(o.status.success(), "{}", text(&o));
    let r: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(r["schema"], "wirelab.stress/1");
    assert_eq!(r["ended"], "duration");
    let p = &r["parts"][0];
    assert_eq!(args_of(p), "--cpu 1 --cpu-load 100");
    assert_eq!(p["exit_code"], 0);
    // One worker at 100 % for 2 s uses about 2 CPU seconds. The lower
    // bound is a twentieth of that, so only a worker that got under 5 % of
    // a CPU for its whole run fails it; the upper is physics (one worker
    // cannot use more CPU time than the wall time the test saw pass, plus
    // the kernel's tick of rounding), and catches a wrong unit.
    assert!(cpu_s(p) >= 0.1, "{r}");
    assert!(cpu_s(p) <= wall_s + 0.02, "{wall_s} s of wall time: {r}");
    assert!(cpu_s(&r) >= cpu_s(p), "{r}");
    assert!(no_stress_ng_left().is_empty());

    // Stopped by SIGTERM once up.
    let dir = scratch("stress", "term");
    let ready = dir.join("ready");
    let child = Command::new(exe())
        .args([
            "stress", "cpu", "-w", "2", "--load", "20", "--json", "--ready",
        ])
        .arg(&ready)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_for("the ready file", || ready.exists());
    let pids: Value = json_file(&ready);
    assert_eq!(pids["pids"].as_array().unwrap().len(), 1);
    assert!(live_stress_ng().len() >= 3, "{:?}", live_stress_ng());
    wirelab_io::process::kill(child.id(), signal_hook::consts::SIGTERM).unwrap();
    let o = child.wait_with_output().unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let r: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(r["ended"], "signal");
    assert!(no_stress_ng_left().is_empty());

    // Killed outright: its stress-ng dies with it (PR_SET_PDEATHSIG), and
    // stress-ng's workers with stress-ng.
    let ready2 = dir.join("ready2");
    let mut child = Command::new(exe())
        .args(["stress", "cpu", "-w", "2", "--load", "20", "--ready"])
        .arg(&ready2)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wait_for("the ready file", || ready2.exists());
    child.kill().unwrap();
    child.wait().unwrap();
    let left = no_stress_ng_left();
    assert!(left.is_empty(), "after SIGKILL: {left:?}");

    // A part that ends by itself fails the command, saying which.
    let o = Command::new(exe())
        .args([
            "stress",
            "cpu",
            "-w",
            "1",
            "-d",
            "30s",
            "--",
            "--timeout",
            "1",
        ])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("stressor part cpu"), "{err}");
    assert!(err.contains("ended by itself"), "{err}");
    // Usage errors name the flag.
    let o = Command::new(exe())
        .args(["stress", "get", "--load", "5"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--load is for cpu"));
    let _ = std::fs::remove_dir_all(&dir);
}

fn lab() -> String {
    on_tx_rx(
        51,
        r#"
[campaign]
name = "stress"
settle = "1s"

[[flow]]
name = "f"
from = "tx"
to = "rx"
count = COUNT
interval = "1ms"

[[stressor]]
host = "rx"
kind = "cpu"
workers = 1
"#,
    )
}

#[test]
fn a_point_runs_its_stressor_and_nothing_of_it_survives() {
    if !netns_available(&["stress-ng"]) {
        return;
    }
    assert!(no_stress_ng_left().is_empty(), "stress-ng running before");
    let dir = scratch("stress", "point");
    // 1500 probes at 1 ms: the stressor runs ≥ 1 s settle + 1.5 s.
    let o = run_command(&dir, &lab().replace("COUNT", "1500"))
        .arg("-q")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    assert!(no_stress_ng_left().is_empty(), "after the point");
    let b = the_bundle(&dir.join("results"));
    let (pdir, p) = the_point(&b);
    assert_eq!(p["status"], "done", "{p}");
    let s = &p["stressors"][0];
    assert_eq!(
        (&s["host"], &s["kind"], &s["exit"]),
        (&"rx".into(), &"cpu".into(), &0.into())
    );
    // A tenth of 1 worker × 2.5 s.
    assert!(cpu_s(s) >= 0.25, "{s}");
    assert_eq!(args_of(&s["report"]["parts"][0]), "--cpu 1 --cpu-load 100");
    assert_eq!(s["log"], "stressors/rx.log");
    let log = std::fs::read_to_string(pdir.join("stressors/rx.log")).unwrap();
    assert!(log.contains("dispatching hogs: 1 cpu"), "{log}");
    let rows = summary_rows(&b);
    assert_eq!(rows[0]["received"], 1500, "{rows:?}");
    let manifest = std::fs::read_to_string(b.join("manifest.json")).unwrap();
    assert!(manifest.contains("stressors/rx.log"), "{manifest}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_stressor_that_dies_fails_the_point_with_exit_4() {
    if !netns_available(&["stress-ng"]) {
        return;
    }
    let dir = scratch("stress", "dies");
    // stress-ng ends by itself after 2 s, during a 20 s flow.
    let control = lab().replace("COUNT", "20000") + "args = [\"--timeout\", \"2\"]\n";
    let o = run_command(&dir, &control).arg("-q").output().unwrap();
    assert_eq!(o.status.code(), Some(4), "{}", text(&o));
    let (_, p) = the_point(&the_bundle(&dir.join("results")));
    assert_eq!(p["status"], "failed", "{p}");
    let reason = p["reason"].as_str().unwrap();
    assert!(
        reason.starts_with("stressor 1 (cpu) on rx ended during the point"),
        "{reason}"
    );
    // The flow was stopped well before its 20,000 probes.
    let rows = summary_rows(&the_bundle(&dir.join("results")));
    assert!(rows[0]["sent"].as_u64().unwrap_or(0) < 20_000, "{rows:?}");
    assert_eq!(p["stressors"][0]["exit"], 1, "{p}");
    assert!(no_stress_ng_left().is_empty());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_killed_controller_leaves_no_stressor_behind() {
    if !netns_available(&["stress-ng"]) {
        return;
    }
    let dir = scratch("stress", "killed");
    let mut child = run_command(&dir, &lab().replace("COUNT", "60000"))
        .arg("-q")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wait_for("stress-ng under the campaign", || {
        live_stress_ng().len() >= 2
    });
    child.kill().unwrap();
    child.wait().unwrap();
    // The agents see their input end (dead-man rule): `wirelab stress`
    // gets SIGTERM and stops its stress-ng.
    let left = no_stress_ng_left();
    // The controller had no chance to remove its lab.
    let prefix = format!("wlrun-{}-", child.id());
    let list = Command::new("ip").args(["netns", "list"]).output().unwrap();
    for ns in String::from_utf8_lossy(&list.stdout).lines() {
        let name = ns.split_whitespace().next().unwrap_or("");
        if name.starts_with(&prefix) {
            let _ = Command::new("ip").args(["netns", "del", name]).status();
        }
    }
    assert!(left.is_empty(), "after the controller was killed: {left:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// The pids of processes whose command line holds every one of `needles`.
fn pids_with(needles: &[&str]) -> Vec<u32> {
    let mut found = vec![];
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|p| p.parse().ok()) else {
            continue;
        };
        let Ok(cmd) = std::fs::read(e.path().join("cmdline")) else {
            continue;
        };
        let cmd = String::from_utf8_lossy(&cmd).replace('\0', " ");
        if needles.iter().all(|n| cmd.contains(n)) {
            found.push(pid);
        }
    }
    found
}

#[test]
fn over_ssh_a_stressor_runs_and_a_lost_connection_stops_it() {
    if !have_sshd() || !netns_available(&["ssh", "ssh-keygen", "stress-ng"]) {
        return;
    }
    let dir = scratch("stress", "ssh");
    let sshd = Sshd::start(&dir);
    let lab = crate::common::Lab::new();
    let control = |count: u64| {
        format!(
            r#"
[campaign]
name = "ssh-stress"

[hosts]
s = {{ transport = "ssh://root@127.0.0.1:{p}?netns={s}", wirelab = "{exe}" }}
r = {{ transport = "ssh://root@127.0.0.1:{p}?netns={r}", wirelab = "{exe}", addr = "198.18.0.2" }}

[[flow]]
name = "f"
from = "s"
to = "r"
port = 6881
count = {count}
interval = "1ms"

[[stressor]]
host = "r"
kind = "get"
"#,
            p = sshd.port,
            s = lab.s,
            r = lab.r,
            exe = exe()
        )
    };
    let opts = sshd.run_opts("user");
    let began = std::time::Instant::now();
    let o = run_command(&dir, &control(1000))
        .arg("-q")
        .args(&opts)
        .output()
        .unwrap();
    let wall_s = began.elapsed().as_secs_f64();
    assert!(o.status.success(), "{}", text(&o));
    let b = the_bundle(&dir.join("results"));
    let (_, p) = the_point(&b);
    let s = &p["stressors"][0];
    assert_eq!(
        (&s["host"], &s["kind"], &s["exit"]),
        (&"r".into(), &"get".into(), &0.into())
    );
    // Some CPU, and no more than every CPU of the machine for the whole
    // run (physics: catches a wrong unit; nothing here depends on load).
    let cpus = std::thread::available_parallelism().unwrap().get() as f64;
    assert!(cpu_s(s) > 0.0, "{s}");
    assert!(
        cpu_s(s) <= wall_s * cpus + 0.02,
        "{wall_s} s × {cpus} CPUs: {s}"
    );
    assert!(no_stress_ng_left().is_empty(), "after the point");
    let _ = std::fs::remove_dir_all(dir.join("results"));

    // The ssh connections killed mid-point: exit 4, and the agents stop
    // their stressor.
    let child = run_command(&dir, &control(60_000))
        .arg("-q")
        .args(&opts)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_for("stress-ng under the ssh agent", || {
        live_stress_ng().len() >= 2
    });
    let port = format!("-p {} ", sshd.port);
    let clients = pids_with(&["ssh ", &port, "agent --stdio"]);
    assert!(!clients.is_empty(), "no ssh client to kill");
    for pid in clients {
        let _ = wirelab_io::process::kill(pid, signal_hook::consts::SIGKILL);
    }
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(4), "{}", text(&out));
    let left = no_stress_ng_left();
    assert!(left.is_empty(), "after the connection was lost: {left:?}");
    drop(sshd);
    let _ = std::fs::remove_dir_all(&dir);
}

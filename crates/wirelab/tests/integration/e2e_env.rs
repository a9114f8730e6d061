//! `wirelab env` end to end, in namespaces this test builds: a snapshot
//! through `netns:` and `ssh://`, `--apply mtu=9000` and a per-namespace
//! sysctl then `--revert` restoring both exactly, bad settings refused
//! without a change, and a campaign's `[env] apply` in effect during its
//! point and reverted after it, also when the controller is killed
//! mid-point (`env --diff` empty), and `env --apply` and `wirelab run`
//! SIGKILLed at many points leave whole revert files that restore /sys and
//! /proc.

use crate::common::bundle::{run_campaign, run_command};
use crate::common::files::{json_file, scratch, text};
use crate::common::sshd::{have_sshd, Sshd};
use crate::common::{exe, netns_available};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

fn env(args: &[&str], extra: &[String]) -> Output {
    Command::new(exe())
        .arg("env")
        .args(args)
        .args(extra)
        .output()
        .unwrap()
}

fn ok_json(o: &Output) -> Value {
    assert!(o.status.success(), "{}", text(o));
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", text(o)))
}

/// A file of namespace `ns`, read directly.
fn read_in(ns: &str, path: &str) -> String {
    let o = Command::new("ip")
        .args(["netns", "exec", ns, "cat", path])
        .output()
        .unwrap();
    String::from_utf8_lossy(&o.stdout).trim().to_string()
}

fn differences(before: &Path, host: &str, extra: &[String]) -> Vec<Value> {
    let d = ok_json(&env(
        &["--diff", before.to_str().unwrap(), host, "--json"],
        extra,
    ));
    assert_eq!(d["schema"], "wirelab.env.diff/1");
    d["differences"].as_array().unwrap().clone()
}

/// A test interface's MTU and `ip_forward`, as read from /sys and /proc.
type Settings = (String, String);

/// Both lab hosts' environments before a campaign, as files in its
/// directory, and what the campaign changes (each host's test interface's
/// MTU and `ip_forward`) read directly from /sys and /proc.
struct Before {
    hosts: [(String, PathBuf); 2],
    direct: [(String, String, Settings); 2],
}

impl Before {
    fn take(dir: &Path, lab: &crate::common::Lab) -> Before {
        let hosts = [&lab.s, &lab.r].map(|ns| {
            let (host, file) = (format!("netns:{ns}"), dir.join(format!("{ns}.json")));
            std::fs::write(&file, env(&[&host, "--json"], &[]).stdout).unwrap();
            (host, file)
        });
        let direct = [(&lab.s, lab.tx_if()), (&lab.r, lab.rx_if())]
            .map(|(ns, dev)| (ns.clone(), dev.to_string(), settings_in(ns, dev)));
        for (ns, _, was) in &direct {
            // What the campaign changes, so "as before" is not vacuous.
            assert_eq!(was, &("1500".to_string(), "0".to_string()), "{ns}");
        }
        Before { hosts, direct }
    }

    /// What differs now on each host, by `wirelab env --diff`.
    fn differences(&self) -> [Vec<Value>; 2] {
        self.hosts
            .each_ref()
            .map(|(host, file)| differences(file, host, &[]))
    }

    /// What differs now, read directly (not through wirelab's snapshot
    /// code): (namespace, (MTU, ip_forward) before, now).
    fn direct_differences(&self) -> Vec<(String, Settings, Settings)> {
        self.direct
            .iter()
            .filter_map(|(ns, dev, was)| {
                let now = settings_in(ns, dev);
                (&now != was).then(|| (ns.clone(), was.clone(), now))
            })
            .collect()
    }

    /// Waits (at most 20 s) until both hosts are as they were: /sys and
    /// /proc read directly, and `env --diff` agrees.
    fn wait_restored(&self) {
        let t0 = Instant::now();
        loop {
            let direct = self.direct_differences();
            let d = self.differences();
            if direct.is_empty() && d.iter().all(Vec::is_empty) {
                break;
            }
            assert!(
                t0.elapsed() < Duration::from_secs(20),
                "still changed: {direct:?}; env --diff: {d:?}"
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }
}

/// Snapshot, apply, diff, revert, diff on `host` (namespace `ns`, whose
/// interface is `dev`).
fn round_trip(host: &str, ns: &str, dev: &str, dir: &Path, extra: &[String]) {
    let before = dir.join("before.json");
    let snap = ok_json(&env(&[host, "--json"], extra));
    assert_eq!(snap["schema"], "wirelab.env/1");
    assert_eq!(snap["host"], host);
    let mtu_key = format!("nic.{dev}.mtu");
    assert_eq!(snap["values"][&mtu_key], "1500", "{snap}");
    assert_eq!(snap["values"]["sysctl.net.ipv4.ip_forward"], "0");
    std::fs::write(&before, serde_json::to_vec(&snap).unwrap()).unwrap();

    let a = ok_json(&env(
        &[
            host,
            "--apply",
            "mtu=9000",
            "net.ipv4.ip_forward=1",
            "--if",
            dev,
            "--json",
        ],
        extra,
    ));
    let h = &a["hosts"][0];
    let token = h["token"].as_str().unwrap().to_string();
    let changes = h["changes"].as_array().unwrap();
    assert_eq!(changes.len(), 2, "{a}");
    assert_eq!(
        (&changes[0]["previous"], &changes[0]["value"]),
        (&Value::from("1500"), &Value::from("9000"))
    );
    assert_eq!(read_in(ns, &format!("/sys/class/net/{dev}/mtu")), "9000");
    assert_eq!(read_in(ns, "/proc/sys/net/ipv4/ip_forward"), "1");
    assert!(Path::new(&format!("/run/wirelab/env/{token}.json")).exists());
    let diff = differences(&before, host, extra);
    let keys: Vec<&str> = diff.iter().map(|d| d["key"].as_str().unwrap()).collect();
    assert_eq!(keys, [mtu_key.as_str(), "sysctl.net.ipv4.ip_forward"]);
    assert_eq!(diff[0]["a"], "1500");
    assert_eq!(diff[0]["b"], "9000");

    let r = env(&[host, "--revert", &token], extra);
    assert!(r.status.success(), "{}", text(&r));
    let out = String::from_utf8_lossy(&r.stdout);
    assert!(
        out.contains(&format!("the MTU of {dev}: 9000 -> 1500")),
        "{out}"
    );
    assert_eq!(read_in(ns, &format!("/sys/class/net/{dev}/mtu")), "1500");
    assert_eq!(read_in(ns, "/proc/sys/net/ipv4/ip_forward"), "0");
    assert!(!Path::new(&format!("/run/wirelab/env/{token}.json")).exists());
    assert_eq!(differences(&before, host, extra), Vec::<Value>::new());
    // A token reverts once.
    let again = env(&[host, "--revert", &token], extra);
    assert_eq!(again.status.code(), Some(1), "{}", text(&again));
}

#[test]
fn apply_then_revert_restores_mtu_and_sysctl_exactly() {
    if !netns_available(&["ethtool"]) {
        return;
    }
    let dir = scratch("env", "rt");
    let lab = crate::common::Lab::new();
    let host = format!("netns:{}", lab.s);
    round_trip(&host, &lab.s, lab.tx_if(), &dir, &[]);

    // Refused settings change nothing and leave no revert file.
    let o = env(&[&host, "--apply", "speed=10", "--if", lab.tx_if()], &[]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(String::from_utf8_lossy(&o.stderr).contains("known: mtu, rings"));
    let o = env(&[&host, "--apply", "mtu=9000"], &[]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--if IF"));
    // A veth has no rings: the MTU read before is left alone.
    let o = env(
        &[
            &host,
            "--apply",
            "mtu=9000",
            "rings=4096",
            "--if",
            lab.tx_if(),
        ],
        &[],
    );
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("nothing was changed"),
        "{}",
        text(&o)
    );
    assert_eq!(
        read_in(&lab.s, &format!("/sys/class/net/{}/mtu", lab.tx_if())),
        "1500"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn apply_then_revert_over_ssh() {
    if !have_sshd() || !netns_available(&["ssh", "ssh-keygen", "ethtool"]) {
        return;
    }
    let dir = scratch("env", "ssh");
    let sshd = Sshd::start(&dir);
    let lab = crate::common::Lab::new();
    let mut extra = sshd.run_opts("user");
    extra.extend(["--wirelab".to_string(), exe().to_string()]);
    let host = sshd.transport(Some(&lab.r)).to_string();
    round_trip(&host, &lab.r, lab.rx_if(), &dir, &extra);
    drop(sshd);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A campaign between the lab's namespaces whose `[env] apply` sets the
/// MTU to 9000 on both ends: a raw socket cannot fragment, so its 8000-byte
/// probes arrive only while the setting is in effect.
fn control(lab: &crate::common::Lab, count: u64, port: u16) -> String {
    control_via(
        lab,
        &format!("netns:{}", lab.s),
        &format!("netns:{}", lab.r),
        count,
        port,
    )
}

/// [`control`] with the hosts reached through `ts` and `tr`.
fn control_via(lab: &crate::common::Lab, ts: &str, tr: &str, count: u64, port: u16) -> String {
    format!(
        r#"
[campaign]
name = "envapply"

[hosts]
s = {{ transport = "{ts}", test_if = "{sif}", control_if = "{sif}", wirelab = "{exe}" }}
r = {{ transport = "{tr}", test_if = "{rif}", addr = "198.18.0.2", wirelab = "{exe}" }}

[[flow]]
name = "big"
from = "s"
to = "r"
port = {port}
count = {count}
interval = "1ms"
size = 8000
socket = "raw"

[env]
apply.s = {{ mtu = 9000 }}
apply.r = {{ mtu = 9000, "net.ipv4.ip_forward" = 1 }}
"#,
        sif = lab.tx_if(),
        rif = lab.rx_if(),
        exe = exe(),
    )
}

#[test]
fn a_campaign_applies_env_for_its_points_and_reverts_it() {
    if !netns_available(&["ethtool"]) {
        return;
    }
    let dir = scratch("env", "run");
    let lab = crate::common::Lab::new();
    let before = Before::take(&dir, &lab);
    let (o, b) = run_campaign(&dir, &control(&lab, 50, 6901), &["-q"]);
    assert!(o.status.success(), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("host s: control_if and test_if are both"),
        "{err}"
    );
    let s = json_file(&b.join("summary.json"));
    let row = &s["rows"][0];
    assert_eq!(
        (row["sent"].as_u64(), row["received"].as_u64()),
        (Some(50), Some(50)),
        "{row}"
    );
    // The bundle: each host's snapshot (before the settings), the
    // difference between them, the warning and what was applied.
    let es = json_file(&b.join("env/s.json"));
    assert_eq!(es["host"], "s");
    assert_eq!(es["values"][format!("nic.{}.mtu", lab.tx_if())], "1500");
    let e = json_file(&b.join("env/diff.json"));
    assert_eq!(e["schema"], "wirelab.run.env/1");
    assert_eq!(e["pairs"].as_array().unwrap().len(), 1);
    assert_eq!(
        (&e["pairs"][0]["a"], &e["pairs"][0]["b"]),
        (&"r".into(), &"s".into())
    );
    assert_eq!(e["warnings"].as_array().unwrap().len(), 1);
    let applied = e["applied"].as_array().unwrap();
    assert_eq!(applied.len(), 2, "{e}");
    assert_eq!(applied[0]["host"], "r");
    assert_eq!(
        applied[0]["changes"][1]["target"]["name"],
        "net.ipv4.ip_forward"
    );
    let m = json_file(&b.join("manifest.json"));
    let files: Vec<&str> = m["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["path"].as_str().unwrap())
        .collect();
    for f in ["env/diff.json", "env/r.json", "env/s.json"] {
        assert!(files.contains(&f), "{files:?}");
    }
    // Reverted after the last point.
    assert_eq!(before.direct_differences(), []);
    assert_eq!(before.differences(), [Vec::<Value>::new(), Vec::new()]);

    // Without the settings the same flow cannot send: the campaign's
    // success above was the settings' doing.
    let bare = control(&lab, 50, 6902);
    let bare = &bare[..bare.find("[env]").unwrap()];
    let o = run_command(&dir, bare).arg("-q").output().unwrap();
    assert_eq!(o.status.code(), Some(4), "{}", text(&o));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_killed_controller_leaves_the_environment_as_it_was() {
    if !netns_available(&["ethtool"]) {
        return;
    }
    let dir = scratch("env", "kill");
    let lab = crate::common::Lab::new();
    let before = Before::take(&dir, &lab);
    let mut child = run_command(&dir, &control(&lab, 60_000, 6903))
        .arg("-q")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Wait for the point to be under way with the settings in effect.
    let t0 = Instant::now();
    let rx_mtu = format!("/sys/class/net/{}/mtu", lab.rx_if());
    while !(read_in(&lab.r, &rx_mtu) == "9000" && sender_running("6903")) {
        assert!(
            t0.elapsed() < Duration::from_secs(60),
            "the point never started"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    // The agents see their input end, stop their children and revert.
    before.wait_restored();
    let _ = std::fs::remove_dir_all(&dir);
}

/// Whether a `wirelab send` to `port` runs.
fn sender_running(port: &str) -> bool {
    std::fs::read_dir("/proc").unwrap().flatten().any(|e| {
        std::fs::read(e.path().join("cmdline")).is_ok_and(|c| {
            let c = String::from_utf8_lossy(&c).replace('\0', " ");
            c.contains("wirelab") && c.contains(" send ") && c.contains(port)
        })
    })
}

#[test]
fn a_lost_ssh_connection_leaves_the_environment_as_it_was() {
    if !have_sshd() || !netns_available(&["ssh", "ssh-keygen", "ethtool"]) {
        return;
    }
    let dir = scratch("env", "sshkill");
    let sshd = Sshd::start(&dir);
    let lab = crate::common::Lab::new();
    let before = Before::take(&dir, &lab);
    let (ts, tr) = (
        sshd.transport(Some(&lab.s)).to_string(),
        sshd.transport(Some(&lab.r)).to_string(),
    );
    let child = run_command(&dir, &control_via(&lab, &ts, &tr, 60_000, 6905))
        .arg("-q")
        .args(sshd.run_opts("user"))
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let t0 = Instant::now();
    let rx_mtu = format!("/sys/class/net/{}/mtu", lab.rx_if());
    while !(read_in(&lab.r, &rx_mtu) == "9000" && sender_running("6905")) {
        assert!(
            t0.elapsed() < Duration::from_secs(60),
            "the point never started"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    // The ssh clients of this test's server, killed by their pids.
    let port = format!("-p {} ", sshd.port);
    let mut killed = 0;
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(c) = std::fs::read(e.path().join("cmdline")) else {
            continue;
        };
        let c = String::from_utf8_lossy(&c).replace('\0', " ");
        if c.starts_with("ssh ") && c.contains(&port) {
            let pid = e.file_name().to_string_lossy().into_owned();
            let st = Command::new("kill").args(["-KILL", &pid]).status().unwrap();
            killed += usize::from(st.success());
        }
    }
    assert!(killed > 0, "no ssh client to kill");
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(4), "{}", text(&out));
    before.wait_restored();
    drop(sshd);
    let _ = std::fs::remove_dir_all(&dir);
}

/// The MTU of `dev` and `ip_forward` in namespace `ns`, read directly.
fn settings_in(ns: &str, dev: &str) -> Settings {
    (
        read_in(ns, &format!("/sys/class/net/{dev}/mtu")),
        read_in(ns, "/proc/sys/net/ipv4/ip_forward"),
    )
}

/// The revert files of process `pid` (its tokens hold its pid), after
/// removing the temporary files a kill left beside them.
fn revert_files_of(pid: u32) -> Vec<PathBuf> {
    let mark = format!("-{pid}-");
    let mut files = vec![];
    let Ok(dir) = std::fs::read_dir("/run/wirelab/env") else {
        return files;
    };
    for e in dir.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if !name.contains(&mark) {
            continue;
        }
        if name.starts_with('.') {
            let _ = std::fs::remove_file(e.path());
        } else {
            files.push(e.path());
        }
    }
    files
}

/// Waits (at most 10 s) until no process runs in namespace `ns`.
fn wait_no_process_in(ns: &str) {
    let t0 = Instant::now();
    loop {
        let o = Command::new("ip")
            .args(["netns", "pids", ns])
            .output()
            .unwrap();
        if o.stdout.iter().all(u8::is_ascii_whitespace) {
            return;
        }
        assert!(t0.elapsed() < Duration::from_secs(10), "{}", text(&o));
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// `env --apply` SIGKILLed at points spread over a whole run: each time
/// its revert file is absent (and nothing changed) or whole, and reverting
/// from it restores the values read directly from /sys and /proc.
#[test]
fn a_killed_apply_leaves_its_revert_file_absent_or_whole() {
    if !netns_available(&["ethtool"]) {
        return;
    }
    let lab = crate::common::Lab::new();
    let (ns, dev) = (lab.s.as_str(), lab.tx_if());
    let before = settings_in(ns, dev);
    assert_eq!(before, ("1500".to_string(), "0".to_string()));
    let o = Command::new("ip")
        .args(["netns", "exec", ns, "readlink", "/proc/self/ns/net"])
        .output()
        .unwrap();
    let netns = String::from_utf8_lossy(&o.stdout).trim().to_string();
    let apply = || {
        let mut c = lab.wirelab(ns);
        c.args([
            "env",
            "--apply",
            "mtu=9000",
            "net.ipv4.ip_forward=1",
            "--if",
            dev,
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null());
        c
    };
    let revert = |token: &str| {
        let o = lab
            .wirelab(ns)
            .args(["env", "--revert", token])
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", text(&o));
    };
    // One whole run sets the span the kills are spread over.
    let t0 = Instant::now();
    let mut whole = apply().spawn().unwrap();
    assert!(whole.wait().unwrap().success());
    let span = t0.elapsed();
    let [file] = revert_files_of(whole.id()).try_into().unwrap();
    let f: Value = json_file(&file);
    revert(f["token"].as_str().unwrap());
    assert_eq!(settings_in(ns, dev), before);

    let (mut absent, mut present) = (0, 0);
    for i in 0..20u32 {
        let mut child = apply().spawn().unwrap();
        std::thread::sleep(span * i / 19);
        child.kill().unwrap();
        child.wait().unwrap();
        // A tool it ran (ip, ethtool) may still finish its change.
        wait_no_process_in(ns);
        match revert_files_of(child.id()).as_slice() {
            [] => {
                absent += 1;
                assert_eq!(
                    settings_in(ns, dev),
                    before,
                    "kill {i}: no file, yet changed"
                );
            }
            [file] => {
                present += 1;
                let f: Value = serde_json::from_slice(&std::fs::read(file).unwrap())
                    .unwrap_or_else(|e| panic!("kill {i}: a torn revert file: {e}"));
                assert_eq!(f["schema"], "wirelab.env.revert/1");
                assert_eq!(f["netns"], netns.as_str());
                assert_eq!(f["changes"].as_array().unwrap().len(), 2, "{f}");
                revert(f["token"].as_str().unwrap());
                assert!(!file.exists());
                assert_eq!(settings_in(ns, dev), before, "kill {i}: not restored");
            }
            more => panic!("kill {i}: {more:?}"),
        }
    }
    eprintln!("20 kills over {span:?}: {absent} before the revert file, {present} after");
}

/// The namespace id (`net:[…]`) of namespace `ns`, as revert files name it.
fn netns_id(ns: &str) -> String {
    let o = Command::new("ip")
        .args(["netns", "exec", ns, "readlink", "/proc/self/ns/net"])
        .output()
        .unwrap();
    String::from_utf8_lossy(&o.stdout).trim().to_string()
}

/// The revert files (not the temporary ones) that name one of `ids`.
fn revert_files_naming(ids: &[String]) -> Vec<PathBuf> {
    let Ok(dir) = std::fs::read_dir("/run/wirelab/env") else {
        return vec![];
    };
    dir.flatten()
        .filter(|e| !e.file_name().to_string_lossy().starts_with('.'))
        .map(|e| e.path())
        .filter(|p| {
            let text = std::fs::read_to_string(p).unwrap_or_default();
            ids.iter().any(|id| text.contains(id.as_str()))
        })
        .collect()
}

/// `wirelab run` with `[env] apply` SIGKILLed at points spread over a whole
/// campaign (start, agents up, settings applied, flows, teardown): every
/// revert file its agents leave is whole and reverts, and afterwards the
/// hosts are as they were, read directly from /sys and /proc.
#[test]
fn a_killed_run_leaves_whole_revert_files_and_the_environment_restored() {
    if !netns_available(&["ethtool"]) {
        return;
    }
    let dir = scratch("env", "runkill");
    let lab = crate::common::Lab::new();
    let before = Before::take(&dir, &lab);
    let ids = [netns_id(&lab.s), netns_id(&lab.r)];
    let control = control(&lab, 300, 6907);
    // One whole run sets the span the kills are spread over.
    let t0 = Instant::now();
    let o = run_command(&dir, &control).arg("-q").output().unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let span = t0.elapsed();
    before.wait_restored();
    let mut left = 0;
    for i in 0..12u32 {
        let _ = std::fs::remove_dir_all(dir.join("results"));
        let mut child = run_command(&dir, &control)
            .arg("-q")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(span * i / 11);
        child.kill().unwrap();
        child.wait().unwrap();
        // The agents see their input end, stop their children and revert.
        for ns in [&lab.s, &lab.r] {
            wait_no_process_in(ns);
        }
        for file in revert_files_naming(&ids) {
            left += 1;
            let f: Value = serde_json::from_slice(&std::fs::read(&file).unwrap())
                .unwrap_or_else(|e| panic!("kill {i}: a torn revert file {file:?}: {e}"));
            assert_eq!(f["schema"], "wirelab.env.revert/1", "{f}");
            let ns = if f["netns"] == ids[0].as_str() {
                &lab.s
            } else {
                &lab.r
            };
            let o = lab
                .wirelab(ns)
                .args(["env", "--revert", f["token"].as_str().unwrap()])
                .output()
                .unwrap();
            assert!(o.status.success(), "kill {i}: {}", text(&o));
        }
        before.wait_restored();
    }
    eprintln!("12 kills over {span:?}: {left} revert files left for the test to revert");
    let _ = std::fs::remove_dir_all(&dir);
}

//! `wirelab run` end to end: the real binary runs campaigns whose `[lab]`
//! it builds itself (and, over ssh, in namespaces this test builds), and
//! the tests check the results bundle: exact counts per flow, the
//! manifest's hashes, the summary derived again by `wirelab analyze DIR`,
//! one T0 for all flows, DSCP on the wire for all three socket types,
//! the loss abort, Ctrl-C and `--resume`, a killed ssh connection, and a
//! 16-flow star. Counts and content only; no durations are asserted.

use crate::common::bundle::{
    on_tx_emu_rx, on_tx_rx, run_campaign, run_command, summary_rows, the_bundle, the_point,
};
use crate::common::files::{json_file, scratch, text};
use crate::common::sshd::{have_sshd, Sshd};
use crate::common::{exe, netns_available};
use serde_json::Value;
use std::io::BufReader;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};
use wirelab_wire::record::{RecordKind, RecordReader};

fn run(args: &[&str]) -> Output {
    Command::new(exe()).args(args).output().unwrap()
}

/// No namespace of `wirelab run`'s labs is left.
fn no_lab_left() {
    let out = Command::new("ip").args(["netns", "list"]).output().unwrap();
    let list = String::from_utf8_lossy(&out.stdout);
    let left: Vec<&str> = list
        .lines()
        .filter(|l| l.starts_with("wlrun-"))
        .filter(|l| {
            // Only labs of wirelab processes that are gone.
            let pid: u32 = l
                .split('-')
                .nth(1)
                .and_then(|p| p.parse().ok())
                .unwrap_or(0);
            !Path::new(&format!("/proc/{pid}")).exists()
        })
        .collect();
    assert!(left.is_empty(), "namespaces left behind: {left:?}");
}

/// The send times of a sender record file's Tx records.
fn tx_times(p: &Path) -> Vec<u64> {
    let f = std::fs::File::open(p).unwrap();
    let mut r = RecordReader::new(BufReader::new(f)).unwrap();
    let mut v = vec![];
    while let Some(rec) = r.next_record().unwrap() {
        if rec.kind == RecordKind::Tx {
            v.push(rec.tx_ns);
        }
    }
    v
}

/// Processes whose command line holds `needle`.
fn processes_with(needle: &str) -> Vec<String> {
    let mut found = vec![];
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(cmd) = std::fs::read(e.path().join("cmdline")) else {
            continue;
        };
        let cmd = String::from_utf8_lossy(&cmd).replace('\0', " ");
        if cmd.contains(needle) && cmd.contains("wirelab") {
            found.push(cmd);
        }
    }
    found
}

/// Polls until no process holds `needle` (at most 10 s); what is left.
fn strays(needle: &str) -> Vec<String> {
    let t0 = Instant::now();
    loop {
        let left = processes_with(needle);
        if left.is_empty() || t0.elapsed() > Duration::from_secs(10) {
            return left;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn two_way() -> String {
    on_tx_rx(
        31,
        r#"
[campaign]
name = "twoway"
pause = "100ms"

[[flow]]
name = "up"
from = "tx"
to = "rx"
count = 200
interval = "1ms"

[[flow]]
name = "down"
from = "rx"
to = "tx"
count = 200
interval = "1ms"

[sweep]
size = [64, 200]
"#,
    )
}

#[test]
fn dry_run_lists_points_and_exclusions_without_hosts() {
    let reference = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../examples/run/reference.toml"
    );
    let plan = |extra: &[&str]| -> Value {
        let mut args = vec!["run", reference, "--dry-run", "--json"];
        args.extend_from_slice(extra);
        let o = run(&args);
        assert!(o.status.success(), "{}", text(&o));
        serde_json::from_slice(&o.stdout).unwrap()
    };
    let ids = |p: &Value| -> Vec<String> {
        p["points"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x["id"].as_str().unwrap().to_string())
            .collect()
    };
    let a = plan(&[]);
    assert_eq!(a["schema"], "wirelab.run.plan/1");
    assert_eq!(a["combinations"], 360);
    assert_eq!(a["point_count"], 336);
    assert_eq!(a["excluded_count"], 24);
    for x in a["excluded"].as_array().unwrap() {
        assert_eq!(x["reason"], "socket != \"udp\" && size > 8972", "{x}");
    }
    assert_eq!(ids(&a), ids(&plan(&[])), "same seed, same order");
    let b = plan(&["--set", "campaign.seed=8"]);
    assert_ne!(ids(&a), ids(&b), "another seed, another order");
    let mut sa = ids(&a);
    let mut sb = ids(&b);
    sa.sort();
    sb.sort();
    assert_eq!(sa, sb, "the same points");
    // UDP: 10 sizes × 3 intervals × 2 DSCP × 2 delays.
    let udp = plan(&["--only", "socket == \"udp\""]);
    assert_eq!(udp["point_count"], 120);
    let one = plan(&["--set", "size=80"]);
    assert_eq!(one["point_count"], 36);
}

#[test]
fn bad_control_files_name_the_place_and_exit_2() {
    let dir = scratch("run", "bad");
    let f = dir.join("bad.toml");
    std::fs::write(&f, "[campaign]\nname = \"x\"\nbogus = 1\n").unwrap();
    let o = run(&["run", f.to_str().unwrap(), "--dry-run"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("bad.toml:3:1: campaign.bogus: unknown key"),
        "{err}"
    );
    // What this version does not run: refused before anything starts.
    let inband = format!(
        "{}\n[[flow]]\nname = \"ib\"\nfrom = \"tx\"\nto = \"rx\"\nquery = {{ mode = \"inband\" }}\n",
        two_way()
    );
    std::fs::write(&f, inband).unwrap();
    let o = run(&[
        "run",
        f.to_str().unwrap(),
        "--results",
        dir.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("query.mode = \"inband\" is not run"),
        "{}",
        text(&o)
    );
    assert!(!dir.join("results").exists());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn lab_campaign_counts_exactly_starts_together_and_derives_again() {
    if !netns_available(&[]) {
        return;
    }
    let dir = scratch("run", "twoway");
    let (o, b) = run_campaign(&dir, &two_way(), &["-q"]);
    assert!(o.status.success(), "{}", text(&o));
    no_lab_left();
    let rows = summary_rows(&b);
    assert_eq!(rows.len(), 4, "{rows:?}");
    for r in &rows {
        assert_eq!(r["status"], "done", "{r}");
        for (k, v) in [
            ("sent", 200),
            ("received", 200),
            ("lost", 0),
            ("lost_by_sequence", 0),
            ("planned", 200),
            ("lost_by_plan", 0),
            ("duplicates", 0),
            ("reordered", 0),
        ] {
            assert_eq!(r[k], v, "{k}: {r}");
        }
    }
    // The manifest covers every file, with the right hashes.
    let m = json_file(&b.join("manifest.json"));
    assert_eq!(m["exit_code"], 0);
    let listed: Vec<&str> = m["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["path"].as_str().unwrap())
        .collect();
    for want in ["control.toml", "summary.json", "summary.csv"] {
        assert!(listed.contains(&want), "{listed:?}");
    }
    assert_eq!(listed.iter().filter(|p| p.ends_with(".wlr")).count(), 8);
    // Checked by coreutils' sha256sum, not wirelab's own hashing: each
    // file's hash and size as listed.
    let mut sums = String::new();
    for f in m["files"].as_array().unwrap() {
        let path = f["path"].as_str().unwrap();
        sums += &format!("{}  {path}\n", f["sha256"].as_str().unwrap());
        let bytes = std::fs::metadata(b.join(path)).unwrap().len();
        assert_eq!(f["bytes"].as_u64(), Some(bytes), "{path}");
    }
    let mut sha = Command::new("sha256sum")
        .args(["--check", "--strict", "--quiet", "-"])
        .current_dir(&b)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::io::Write::write_all(&mut sha.stdin.take().unwrap(), sums.as_bytes()).unwrap();
    let o = sha.wait_with_output().unwrap();
    assert!(o.status.success(), "sha256sum --check: {}", text(&o));
    // The summary again from the records, twice, byte for byte.
    let stored = std::fs::read(b.join("summary.json")).unwrap();
    for _ in 0..2 {
        let o = run(&["analyze", b.to_str().unwrap(), "--json"]);
        assert!(o.status.success(), "{}", text(&o));
        assert_eq!(o.stdout, stored);
        assert!(o.stderr.is_empty(), "{}", text(&o));
    }
    // One start: every flow's first deadline is T0 on its sender's clock
    // (the controller's T0 plus that host's estimated offset), and no probe
    // leaves before it (how close to T0 they leave is bench/run.sh's
    // figure: a wall-clock matter on this machine).
    for (_, p) in wirelab_campaign::bundle::read_points(&b).unwrap() {
        let pdir = b.join("points").join(&p.id);
        for f in &p.flows {
            let clock = f.clock.as_ref().unwrap();
            assert_eq!(clock.at_unix_ns, p.t0_unix_ns.unwrap());
            let t0 = clock.sender_t0_unix_ns;
            let report = f.send_report.as_ref().unwrap();
            assert_eq!(
                report["flows"][0]["engine"]["first_deadline_unix_ns"].as_u64(),
                Some(t0),
                "{}: {report}",
                f.name
            );
            let first = tx_times(&pdir.join(format!("flows/{}/tx.wlr", f.name)))[0];
            assert!(first >= t0, "first probe at {first}, before T0 {t0}");
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

const THROUGH_EMULATOR: &str = r#"
[campaign]
name = "sockets"

[lab]
namespaces = ["tx", "emu", "rx"]
links = [
  { a = "tx", b = "emu", a_addr = "198.18.32.1/24", ipv6 = false },
  { a = "emu", b = "rx", b_addr = "198.18.32.2/24", ipv6 = false, b_if = "rx0", a_if = "emu1" },
]

[hosts]
tx = { transport = "lab:tx" }
emu = { transport = "lab:emu" }
rx = { transport = "lab:rx" }

[[flow]]
name = "f"
from = "tx"
to = "rx"
count = 300
interval = "1ms"
size = 300
dscp = 46

[emulate]
host = "emu"
ifaces = ["tx", "emu1"]
stages = "delay 100us"

[capture]
hosts = ["emu"]
ifaces = ["tx"]
snaplen = 128

[sweep]
socket = ["udp", "raw", "packet"]
"#;

#[test]
fn all_three_socket_types_cross_an_emulator_whole_with_their_dscp() {
    if !netns_available(&["tcpdump"]) {
        return;
    }
    let dir = scratch("run", "sockets");
    let (o, b) = run_campaign(&dir, THROUGH_EMULATOR, &["-q"]);
    assert!(o.status.success(), "{}", text(&o));
    no_lab_left();
    let rows = summary_rows(&b);
    assert_eq!(rows.len(), 3);
    for r in &rows {
        for (k, v) in [
            ("sent", 300),
            ("received", 300),
            ("lost", 0),
            ("reordered", 0),
        ] {
            assert_eq!(r[k], v, "{k}: {r}");
        }
        // Every probe was delayed by the emulator: never less than 100 µs.
        assert!(r["owd_mean_ns"].as_f64().unwrap() >= 100_000.0, "{r}");
    }
    // The destination MAC of each point's probes: the kernel's own choice
    // for udp and raw, wirelab's neighbour lookup for packet.
    let mut macs = std::collections::BTreeMap::new();
    for (pdir, p) in wirelab_campaign::bundle::read_points(&b).unwrap() {
        assert_eq!(p.pcaps, vec!["pcap/emu-tx.pcapng".to_string()]);
        let out = Command::new("tcpdump")
            .args(["-nn", "-v", "-e", "-r"])
            .arg(pdir.join("pcap/emu-tx.pcapng"))
            .args(["udp", "and", "dst", "port", "5800"])
            .stderr(Stdio::null())
            .output()
            .unwrap();
        let dump = String::from_utf8_lossy(&out.stdout);
        let headers: Vec<&str> = dump.lines().filter(|l| l.contains("tos 0x")).collect();
        // 300 probes and 3 end markers, plus empty priming datagrams.
        assert!(headers.len() >= 303, "{} headers\n{dump}", headers.len());
        for h in &headers {
            assert!(h.contains("tos 0xb8"), "{}: {h}", p.params["socket"]);
        }
        let dst: std::collections::BTreeSet<&str> = headers
            .iter()
            .filter_map(|h| h.split(" > ").nth(1)?.split(',').next())
            .collect();
        assert_eq!(dst.len(), 1, "{dst:?}");
        macs.insert(
            p.params["socket"].to_string(),
            dst.into_iter().next().unwrap().to_string(),
        );
    }
    assert_eq!(macs.len(), 3, "{macs:?}");
    assert_eq!(macs["packet"], macs["udp"], "{macs:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_loss_criterion_aborts_the_point_early_with_exit_3() {
    if !netns_available(&[]) {
        return;
    }
    let control = on_tx_emu_rx(
        33,
        r#"
[campaign]
name = "abort"

[[flow]]
name = "sut"
from = "tx"
to = "rx"
count = 20000
interval = "1ms"
query = { every_packets = 1000 }
abort = { lost_gt = 50 }

[emulate]
host = "emu"
ifaces = ["tx", "rx"]
stages = "loss 5%"
"#,
    );
    let dir = scratch("run", "abort");
    let (o, b) = run_campaign(&dir, &control, &["-q"]);
    assert_eq!(o.status.code(), Some(3), "{}", text(&o));
    no_lab_left();
    let rows = summary_rows(&b);
    assert_eq!(rows.len(), 1);
    let r = &rows[0];
    assert_eq!(r["status"], "aborted", "{r}");
    // The abort, not the count, ended the flow: lost > 50 at 5 % comes
    // near 1,000 probes (the first query) or 2,000; the flow's 20,000 is ten
    // times that, so a slow machine's late abort still ends it early.
    assert!(r["sent"].as_u64().unwrap() < 20_000, "{r}");
    assert!(r["lost"].as_u64().unwrap() > 50, "{r}");
    let reason = r["reason"].as_str().unwrap();
    assert!(reason.contains("lost > 50"), "{reason}");
    assert_eq!(json_file(&b.join("manifest.json"))["exit_code"], 3);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A flow by duration, as LUNA ran its experiments: its planned count is
/// what the sender's schedule held within the duration (deadlines every
/// 2 ms from 0 to under 1.5 s: 750), however late the sender was, and
/// lost_by_plan = planned − received.
#[test]
fn a_duration_flow_is_judged_against_what_its_schedule_planned() {
    if !netns_available(&[]) {
        return;
    }
    let control = on_tx_emu_rx(
        47,
        r#"
[campaign]
name = "plan"

[[flow]]
name = "sut"
from = "tx"
to = "rx"
duration = "1500ms"
interval = "2ms"

[emulate]
host = "emu"
ifaces = ["tx", "rx"]
stages = "loss 10%"
"#,
    );
    let dir = scratch("run", "plan");
    let (o, b) = run_campaign(&dir, &control, &["-q"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let rows = summary_rows(&b);
    let r = &rows[0];
    assert_eq!(r["planned"], 750, "{r}");
    let received = r["received"].as_u64().unwrap();
    // 10 % loss of up to 750 probes: some lost, most not.
    assert!(received > 0 && received < 750, "{r}");
    assert_eq!(r["lost_by_plan"].as_u64().unwrap(), 750 - received, "{r}");
    // The sender's own report says the same.
    let (_, point) = the_point(&b);
    let flow = &point["flows"][0];
    assert_eq!(flow["send_report"]["flows"][0]["engine"]["planned"], 750);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn ctrl_c_keeps_what_is_done_and_resume_runs_the_rest() {
    if !netns_available(&[]) {
        return;
    }
    let dir = scratch("run", "resume");
    let control = two_way()
        .replace("size = [64, 200]", "size = [64, 200, 300]")
        .replace("count = 200", "count = 3000");
    let (file, results) = (dir.join("c.toml"), dir.join("results"));
    let child = run_command(&dir, &control)
        .arg("-q")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Interrupt once the first point has its result and the second runs.
    let t0 = Instant::now();
    loop {
        let done = std::fs::read_dir(&results)
            .ok()
            .and_then(|mut r| r.next())
            .map(|d| d.unwrap().path().join("points"))
            .and_then(|p| std::fs::read_dir(p).ok())
            .map(|r| {
                r.flatten()
                    .filter(|e| e.path().join("point.json").exists())
                    .count()
            })
            .unwrap_or(0);
        if done >= 1 {
            break;
        }
        assert!(t0.elapsed() < Duration::from_secs(120), "no point finished");
        std::thread::sleep(Duration::from_millis(50));
    }
    // Into the second point (3000 probes at 1 ms: it cannot be done in
    // under 3 s, as the sender's rate is a ceiling), then Ctrl-C: the
    // 200 ms wait plus this loop's 50 ms polling is over ten times short of
    // the point's 3 s, so "fewer than 3 points done" holds on a slow machine.
    std::thread::sleep(Duration::from_millis(200));
    wirelab_io::process::kill(child.id(), signal_hook::consts::SIGINT).unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130), "{}", text(&out));
    no_lab_left();
    let b = the_bundle(&results);
    let s = json_file(&b.join("summary.json"));
    assert!(s["done"].as_u64().unwrap() >= 1, "{s}");
    assert!(s["done"].as_u64().unwrap() < 3, "{s}");
    let first: Vec<(String, u64)> = wirelab_campaign::bundle::read_points(&b)
        .unwrap()
        .into_iter()
        .filter(|(_, p)| p.status == wirelab_campaign::bundle::PointStatus::Done)
        .map(|(_, p)| (p.id, p.t0_unix_ns.unwrap()))
        .collect();
    let o = run(&[
        "run",
        file.to_str().unwrap(),
        "--resume",
        b.to_str().unwrap(),
        "-q",
    ]);
    assert!(o.status.success(), "{}", text(&o));
    no_lab_left();
    let s = json_file(&b.join("summary.json"));
    assert_eq!(s["done"], 3, "{s}");
    for r in s["rows"].as_array().unwrap() {
        assert_eq!(r["received"], 3000, "{r}");
    }
    // What was done before was not run again.
    for (id, t0) in first {
        let p = json_file(&b.join("points").join(&id).join("point.json"));
        assert_eq!(p["t0_unix_ns"], t0);
    }
    // Another control file is refused.
    std::fs::write(&file, control.replace("count = 3000", "count = 10")).unwrap();
    let o = run(&[
        "run",
        file.to_str().unwrap(),
        "--resume",
        b.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn ssh_hosts_run_a_campaign_and_a_lost_connection_leaves_nothing_behind() {
    if !have_sshd() || !netns_available(&["ssh", "ssh-keygen"]) {
        return;
    }
    let dir = scratch("run", "ssh");
    let sshd = Sshd::start(&dir);
    let lab = crate::common::Lab::new();
    let opts = sshd.run_opts("user");
    let control = |count: u64, port: u16| {
        format!(
            r#"
[campaign]
name = "ssh"

[hosts]
s = {{ transport = "ssh://root@127.0.0.1:{p}?netns={s}", wirelab = "{exe}" }}
r = {{ transport = "ssh://root@127.0.0.1:{p}?netns={r}", wirelab = "{exe}", addr = "198.18.0.2" }}

[[flow]]
name = "f"
from = "s"
to = "r"
port = {port}
count = {count}
interval = "1ms"
"#,
            p = sshd.port,
            s = lab.s,
            r = lab.r,
            exe = exe()
        )
    };
    let mut args: Vec<&str> = vec!["-q"];
    args.extend(opts.iter().map(String::as_str));
    let (o, b) = run_campaign(&dir, &control(300, 6871), &args);
    assert!(o.status.success(), "{}", text(&o));
    let r = &summary_rows(&b)[0];
    assert_eq!(
        (r["sent"].as_u64(), r["received"].as_u64()),
        (Some(300), Some(300)),
        "{r}"
    );
    let m = json_file(&b.join("manifest.json"));
    assert_eq!(m["agents"]["s"]["protocol"], 1);
    let _ = std::fs::remove_dir_all(dir.join("results"));

    // A long flow whose ssh connections are killed mid-point.
    let file = dir.join("long.toml");
    std::fs::write(&file, control(60_000, 6873)).unwrap();
    let child = Command::new(exe())
        .args(["run", file.to_str().unwrap(), "--results"])
        .arg(dir.join("results"))
        .args(&args)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let t0 = Instant::now();
    while processes_with("6873")
        .iter()
        .filter(|c| c.contains(" send "))
        .count()
        == 0
    {
        assert!(
            t0.elapsed() < Duration::from_secs(60),
            "the sender never started"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let port = sshd.port.to_string();
    let killed = Command::new("pkill")
        .args(["-KILL", "-f", &format!("ssh .*-p {port} ")])
        .status()
        .unwrap();
    assert!(killed.success(), "no ssh client to kill");
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(4), "{}", text(&out));
    let left = strays("6873");
    assert!(left.is_empty(), "left running: {left:?}");
    drop(sshd);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_sixteen_flow_star_runs_concurrently_on_one_machine() {
    if !netns_available(&[]) {
        return;
    }
    // Four endpoints, each joined to the centre by two links (A and B),
    // a flow each way on every link: 16 flows at once.
    let mut c = String::from(
        "[campaign]\nname = \"star16\"\n\n[lab]\nnamespaces = [\"c\", \"e1\", \"e2\", \"e3\", \"e4\"]\nlinks = [\n",
    );
    let mut hosts = String::from("[hosts]\n");
    let mut flows = String::new();
    for e in 1..=4 {
        for (li, link) in ["a", "b"].iter().enumerate() {
            let net = 40 + e * 2 + li;
            c.push_str(&format!(
                "  {{ a = \"c\", b = \"e{e}\", a_addr = \"198.18.{net}.1/24\", b_addr = \"198.18.{net}.2/24\", ipv6 = false }},\n"
            ));
            let (ch, eh) = (format!("c{e}{link}"), format!("e{e}{link}"));
            hosts.push_str(&format!(
                "{ch} = {{ transport = \"lab:c\", addr = \"198.18.{net}.1\" }}\n{eh} = {{ transport = \"lab:e{e}\", addr = \"198.18.{net}.2\" }}\n"
            ));
            for (name, from, to) in [
                (format!("h{e}{link}"), &ch, &eh),
                (format!("r{e}{link}"), &eh, &ch),
            ] {
                flows.push_str(&format!(
                    "[[flow]]\nname = \"{name}\"\nfrom = \"{from}\"\nto = \"{to}\"\ncount = 500\ninterval = \"1ms\"\n\n"
                ));
            }
        }
    }
    c.push_str("]\n\n");
    c.push_str(&hosts);
    c.push('\n');
    c.push_str(&flows);
    let dir = scratch("run", "star");
    let (o, b) = run_campaign(&dir, &c, &["-q"]);
    assert!(o.status.success(), "{}", text(&o));
    no_lab_left();
    let rows = summary_rows(&b);
    assert_eq!(rows.len(), 16);
    for r in &rows {
        assert_eq!(
            (r["sent"].as_u64(), r["received"].as_u64()),
            (Some(500), Some(500)),
            "{r}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

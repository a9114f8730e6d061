//! `wirelab run`'s counters and loss attribution end to end: a lab campaign
//! through `wirelab emulate` with 1 % random loss (200,000 probes at
//! 10 kpps), where the loss is the emulator's; and a receiver with a 4 KiB
//! socket buffer flooded at interval 0, where the loss is the receiver
//! stack's (RcvbufErrors), in a `[lab]` and over `ssh://` hosts. Counts
//! only; no durations asserted.

use crate::common::bundle::{
    derives_again, on_tx_emu_rx, on_tx_rx, run_campaign, summary_rows, the_point,
};
use crate::common::files::{json_file, scratch, text};
use crate::common::sshd::{have_sshd, Sshd};
use crate::common::{exe, netns_available};
use serde_json::Value;
use std::path::Path;

/// Every host's counters are there, before and after, and no counter
/// went down between them; the change of `key` on `host`.
fn counters_of(pdir: &Path, hosts: &[&str], host: &str, key: &str) -> u64 {
    let mut found = None;
    for h in hosts {
        let b = json_file(&pdir.join(format!("counters/{h}.before.json")));
        let a = json_file(&pdir.join(format!("counters/{h}.after.json")));
        assert!(a["unix_ns"].as_u64() > b["unix_ns"].as_u64());
        for (k, vb) in b["snmp"].as_object().unwrap() {
            let va = a["snmp"][k].as_u64().unwrap();
            assert!(va >= vb.as_u64().unwrap(), "{h} {k}: {vb} then {va}");
        }
        assert!(!a["ifaces"].as_object().unwrap().is_empty(), "{h}: {a}");
        assert!(!a["cpus"].as_array().unwrap().is_empty());
        if *h == host {
            found = Some(a["snmp"][key].as_u64().unwrap() - b["snmp"][key].as_u64().unwrap());
        }
    }
    found.unwrap()
}

/// The summary derived again by `wirelab analyze DIR`, byte for byte, and
/// the loss causes in summary.csv.
fn derives_again_with_causes(b: &Path) {
    derives_again(b);
    let csv = std::fs::read_to_string(b.join("summary.csv")).unwrap();
    let head = csv.lines().next().unwrap();
    for c in [
        "lost_sender",
        "lost_path",
        "lost_rx_nic",
        "lost_rx_stack",
        "lost_unexplained",
    ] {
        assert!(head.contains(c), "{head}");
    }
}

fn emulated_loss() -> String {
    on_tx_emu_rx(
        41,
        r#"
[campaign]
name = "emuloss"

[[flow]]
name = "f"
from = "tx"
to = "rx"
count = 200000
rate = "10kpps"
size = 64

# A ring of 1.6 s at 10 kpps: an emulator starved of the CPU for a while
# on a loaded machine drops nothing in front of it (ring drops would be
# the path's too, but not the 1 % the band is about).
[emulate]
host = "emu"
ifaces = ["tx", "rx"]
stages = "loss random 1% seed 7"
args = ["--ring-frames", "16384"]
"#,
    )
}

#[test]
fn emulator_loss_is_attributed_to_the_path() {
    if !netns_available(&[]) {
        return;
    }
    let dir = scratch("counters", "emuloss");
    let (o, b) = run_campaign(&dir, &emulated_loss(), &["-q"]);
    assert!(o.status.success(), "{}", text(&o));
    let (pdir, p) = the_point(&b);
    let f = &p["flows"][0];
    assert_eq!(f["emulate_direction"], "a2b", "{f}");
    let rows = summary_rows(&b);
    let r = &rows[0];
    assert_eq!(r["sent"], 200_000, "{r}");
    let lost = r["lost"].as_u64().unwrap();
    // Binomial(200,000, 1 %): 2,000 ± 5σ (σ = 44.5).
    assert!((1778..=2222).contains(&lost), "lost {lost}: {r}");
    let a = &f["attribution"];
    let parts: u64 = [
        "sender",
        "path",
        "receiver_nic",
        "receiver_stack",
        "unexplained",
    ]
    .iter()
    .map(|k| a[k].as_u64().unwrap())
    .sum();
    assert_eq!(parts, lost, "{a}");
    let path = a["path"].as_u64().unwrap();
    assert!(path * 100 >= lost * 99, "path {path} of {lost}: {a}");
    assert_eq!(r["lost_path"], a["path"]);
    assert_eq!(r["lost_unexplained"], a["unexplained"]);
    // The emulator's own count is what was attributed (and at least it).
    let dropped = p["emulate_report"]["a2b"]["dropped"]["loss"]
        .as_u64()
        .unwrap();
    assert!(dropped >= path, "{dropped} < {path}");
    counters_of(&pdir, &["emu", "rx", "tx"], "rx", "Udp.InDatagrams");
    // Samples about every second for every host, summarized.
    for h in ["emu", "rx", "tx"] {
        let lines = std::fs::read_to_string(pdir.join(format!("samples/{h}.jsonl"))).unwrap();
        let n = lines.lines().count();
        // 200,000 probes at 10 kpps take at least 20 s (the rate is a
        // ceiling), sampled every second, and the after snapshot is the
        // last sample: about 21. Two is ten times below that, so it fails
        // only if sampling stopped, not because the machine was slow.
        assert!(n >= 2, "{h}: {n} samples");
        // busy_cpus is a share of the host's CPUs over the interval: never
        // negative, never more CPUs than the host has (a wrong interval or
        // unit would break that).
        let cpus = std::thread::available_parallelism().unwrap().get() as f64;
        for line in lines.lines() {
            let s: Value = serde_json::from_str(line).unwrap();
            let busy = s["busy_cpus"].as_f64().unwrap();
            assert!((0.0..=cpus + 0.01).contains(&busy), "{h}: {cpus} CPUs: {s}");
        }
        assert_eq!(p["samples"][h]["samples"], n, "{}", p["samples"]);
    }
    derives_again_with_causes(&b);
    let _ = std::fs::remove_dir_all(&dir);
}

fn small_rcvbuf() -> String {
    on_tx_rx(
        42,
        r#"
[campaign]
name = "rcvbuf"

[[flow]]
name = "flood"
from = "tx"
to = "rx"
interval = "0"
duration = "1s"
size = 64
recv_args = ["--rcvbuf", "4096"]
"#,
    )
}

#[test]
fn a_full_receive_buffer_is_attributed_to_the_receiver_stack() {
    if !netns_available(&[]) {
        return;
    }
    let dir = scratch("counters", "rcvbuf");
    let (o, b) = run_campaign(&dir, &small_rcvbuf(), &["-q"]);
    assert!(o.status.success(), "{}", text(&o));
    rcvbuf_loss_is_the_stacks(&b);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Acceptance 5 over `ssh://` hosts (an sshd on loopback, the agents in
/// namespaces of their own).
#[test]
fn a_full_receive_buffer_over_ssh_is_attributed_to_the_receiver_stack() {
    if !have_sshd() || !netns_available(&["ssh", "ssh-keygen"]) {
        return;
    }
    let dir = scratch("counters", "rcvbuf-ssh");
    let sshd = Sshd::start(&dir);
    let lab = crate::common::Lab::new();
    let opts = sshd.run_opts("user");
    let control = format!(
        r#"
[campaign]
name = "rcvbuf-ssh"

[hosts]
tx = {{ transport = "ssh://root@127.0.0.1:{p}?netns={s}", wirelab = "{exe}" }}
rx = {{ transport = "ssh://root@127.0.0.1:{p}?netns={r}", wirelab = "{exe}", addr = "198.18.0.2" }}

[[flow]]
name = "flood"
from = "tx"
to = "rx"
interval = "0"
duration = "1s"
size = 64
recv_args = ["--rcvbuf", "4096"]
"#,
        p = sshd.port,
        s = lab.s,
        r = lab.r,
        exe = exe()
    );
    let mut args: Vec<&str> = opts.iter().map(String::as_str).collect();
    args.push("-q");
    let (o, b) = run_campaign(&dir, &control, &args);
    assert!(o.status.success(), "{}", text(&o));
    rcvbuf_loss_is_the_stacks(&b);
    drop(sshd);
    let _ = std::fs::remove_dir_all(&dir);
}

/// The flood's loss, the receiver's RcvbufErrors and its attribution.
fn rcvbuf_loss_is_the_stacks(b: &Path) {
    let (pdir, p) = the_point(b);
    let rows = summary_rows(b);
    let r = &rows[0];
    let lost = r["lost"].as_u64().unwrap();
    assert!(lost >= 1000, "the flood lost only {lost}: {r}");
    let rcvbuf = counters_of(&pdir, &["rx", "tx"], "rx", "Udp.RcvbufErrors");
    // The kernel counted every lost probe (and the few end markers and
    // priming datagrams it also refused): within 1 %.
    assert!(
        rcvbuf.abs_diff(lost) * 100 <= lost,
        "RcvbufErrors {rcvbuf}, lost {lost}"
    );
    let a = &p["flows"][0]["attribution"];
    let stack = a["receiver_stack"].as_u64().unwrap();
    assert!(
        stack * 100 >= lost * 99,
        "receiver stack {stack} of {lost}: {a}"
    );
    assert_eq!(r["lost_rx_stack"], stack);
    assert_eq!(r["lost_path"], 0);
    derives_again_with_causes(b);
}

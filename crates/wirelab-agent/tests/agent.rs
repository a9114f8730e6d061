//! The agent served in-process over a socket pair, with /bin/sh as the
//! children's executable, and the client against fake agents (shell
//! scripts) for the errors a real agent cannot be made to produce.

use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};
use wirelab_agent::agent::{serve, AgentConfig, AgentError, Ended, MAX_CHILDREN};
use wirelab_agent::proto::{self, PROTOCOL};
use wirelab_agent::transport::{AgentConn, ConnectOptions, Transport, TransportError};

struct Harness {
    sock: UnixStream,
    reader: BufReader<UnixStream>,
    agent: JoinHandle<Result<Ended, AgentError>>,
    next: u64,
}

impl Harness {
    fn start(cfg: AgentConfig) -> Harness {
        let (ours, theirs) = UnixStream::pair().unwrap();
        let out = theirs.try_clone().unwrap();
        let agent = std::thread::spawn(move || serve(theirs, out, cfg));
        // A hung agent fails the test instead of hanging it.
        ours.set_read_timeout(Some(Duration::from_secs(60)))
            .unwrap();
        Harness {
            reader: BufReader::new(ours.try_clone().unwrap()),
            sock: ours,
            agent,
            next: 1,
        }
    }

    fn sh() -> Harness {
        Harness::start(AgentConfig::new("/bin/sh"))
    }

    fn line(&mut self) -> Value {
        let mut l = String::new();
        self.reader.read_line(&mut l).unwrap();
        serde_json::from_str(&l).unwrap_or_else(|e| panic!("{e}: {l:?}"))
    }

    /// Sends `body` with the next id and returns the answer, checking its id.
    fn req(&mut self, mut body: Value) -> Value {
        let id = self.next;
        self.next += 1;
        body["id"] = json!(id);
        writeln!(self.sock, "{body}").unwrap();
        let v = self.line();
        assert_eq!(v["id"], json!(id), "{v}");
        v
    }

    fn spawn(&mut self, tag: &str, script: &str) -> u32 {
        let v = self.req(json!({"op": "spawn", "tag": tag, "args": ["-c", script]}));
        assert_eq!(v["kind"], "spawned", "{v}");
        v["pid"].as_u64().unwrap() as u32
    }

    fn wait(&mut self, tag: &str) -> Value {
        self.req(json!({"op": "wait", "tag": tag, "timeout_ms": 30_000}))
    }

    fn workdir(&mut self) -> PathBuf {
        let v = self.req(json!({"op": "hello", "protocol": PROTOCOL, "controller": "test"}));
        PathBuf::from(v["workdir"].as_str().unwrap())
    }

    /// Closes the input (the dead-man case) and returns why serve ended.
    fn hang_up(self) -> Ended {
        self.sock.shutdown(std::net::Shutdown::Write).unwrap();
        self.agent.join().unwrap().unwrap()
    }
}

/// Whether `pid` is gone (or a zombie no one will run again), polled for
/// up to 10 s.
fn gone(pid: u32) -> bool {
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(10) {
        match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
            Err(_) => return true,
            Ok(s)
                if s.rsplit(')')
                    .next()
                    .unwrap_or("")
                    .trim_start()
                    .starts_with('Z') =>
            {
                return true
            }
            Ok(_) => std::thread::sleep(Duration::from_millis(20)),
        }
    }
    false
}

#[test]
fn hello_says_who_and_where() {
    let mut h = Harness::sh();
    let v = h.req(json!({"op": "hello", "protocol": PROTOCOL, "controller": "test"}));
    assert_eq!(v["kind"], "hello");
    assert_eq!(v["protocol"], json!(PROTOCOL));
    assert_eq!(v["version"], env!("CARGO_PKG_VERSION"));
    assert_eq!(v["pid"], json!(std::process::id()));
    let caps: Vec<&str> = v["capabilities"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_str().unwrap())
        .collect();
    assert_eq!(
        caps,
        [
            "spawn",
            "wait",
            "signal",
            "status",
            "fetch",
            "time",
            "sockets",
            "remove",
            "counters",
            "env",
            "env_apply",
            "env_revert"
        ]
    );
    let dir = PathBuf::from(v["workdir"].as_str().unwrap());
    assert!(dir.is_dir());
    // Another protocol still gets this agent's hello: the controller names both.
    let v = h.req(json!({"op": "hello", "protocol": 999, "controller": "9"}));
    assert_eq!(v["protocol"], json!(PROTOCOL));
    let t = h.req(json!({"op": "time"}));
    assert!(t["realtime_ns"].as_u64().unwrap() > 1_600_000_000_000_000_000);
    assert!(t["monotonic_ns"].as_u64().unwrap() > 0);
    assert_eq!(h.hang_up(), Ended::Eof);
    assert!(!dir.exists(), "the agent's own workdir is removed");
}

#[test]
fn children_run_in_the_workdir_with_their_output_in_files() {
    let mut h = Harness::sh();
    let dir = h.workdir();
    h.spawn("a", "pwd; echo err >&2; exit 3");
    let v = h.wait("a");
    assert_eq!(v["kind"], "exited", "{v}");
    assert_eq!(v["code"], 3);
    assert_eq!(v["signal"], Value::Null);
    assert_eq!(v["stdout"], format!("{}\n", dir.display()));
    assert_eq!(v["stdout_truncated"], false);
    assert_eq!(v["stderr_tail"], "err\n");
    assert_eq!(std::fs::read(dir.join("a.err")).unwrap(), b"err\n");
    // Reported once: then forgotten, and its tag stays used.
    let v = h.wait("a");
    assert_eq!(v["kind"], "error");
    assert!(
        v["message"].as_str().unwrap().contains("already reported"),
        "{v}"
    );
    let v = h.req(json!({"op": "spawn", "tag": "a", "args": []}));
    assert!(
        v["message"].as_str().unwrap().contains("was used before"),
        "{v}"
    );
    for bad in ["", "../x", "a/b", ".hidden"] {
        let v = h.req(json!({"op": "spawn", "tag": bad, "args": []}));
        assert!(v["message"].as_str().unwrap().contains("bad tag"), "{v}");
    }

    // Big stdout is cut at 1 MiB; stderr gives its last 4 KiB.
    h.spawn(
        "big",
        "head -c 1100000 /dev/zero | tr '\\0' x; head -c 10000 /dev/zero | tr '\\0' e >&2; echo END >&2",
    );
    let v = h.wait("big");
    assert_eq!(v["stdout_bytes"], 1_100_000);
    assert_eq!(v["stdout_truncated"], true);
    assert_eq!(v["stdout"].as_str().unwrap().len(), proto::STDOUT_CAP);
    let tail = v["stderr_tail"].as_str().unwrap();
    assert_eq!(tail.len(), proto::STDERR_TAIL);
    assert!(tail.starts_with("eee") && tail.ends_with("eeeEND\n"));
    assert_eq!(h.hang_up(), Ended::Eof);
}

#[test]
fn wait_times_out_signal_ends_status_lists() {
    let mut h = Harness::sh();
    let pid = h.spawn("s", "exec sleep 30");
    let v = h.req(json!({"op": "wait", "tag": "s", "timeout_ms": 10}));
    assert_eq!(v["kind"], "running");
    let v = h.req(json!({"op": "status"}));
    assert_eq!(
        v["children"],
        json!([{"tag": "s", "pid": pid, "running": true, "code": null, "signal": null}])
    );
    let v = h.req(json!({"op": "signal", "tag": "s", "signal": "term"}));
    assert_eq!(v["kind"], "ok");
    let v = h.wait("s");
    assert_eq!(v["signal"], 15, "{v}");
    assert_eq!(v["code"], Value::Null);
    let v = h.req(json!({"op": "status"}));
    assert_eq!(v["children"], json!([]));
    // Signalling an ended child that was not waited for is harmless.
    h.spawn("q", "exit 0");
    let v = h.req(json!({"op": "status"}));
    let start = Instant::now();
    let mut v = v;
    while v["children"][0]["running"] == true && start.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(20));
        v = h.req(json!({"op": "status"}));
    }
    assert_eq!(v["children"][0]["code"], 0, "{v}");
    let v = h.req(json!({"op": "signal", "tag": "q", "signal": "kill"}));
    assert_eq!(v["kind"], "ok");
    let v = h.req(json!({"op": "signal", "tag": "nosuch", "signal": "int"}));
    assert!(
        v["message"].as_str().unwrap().contains("no child tagged"),
        "{v}"
    );
    assert_eq!(h.hang_up(), Ended::Eof);
}

#[test]
fn fetch_reads_chunks_inside_the_workdir_only() {
    let mut h = Harness::sh();
    let dir = h.workdir();
    h.spawn(
        "w",
        "mkdir sub && head -c 2500000 /dev/urandom > sub/data.bin",
    );
    assert_eq!(h.wait("w")["code"], 0);
    let want = std::fs::read(dir.join("sub/data.bin")).unwrap();
    let mut got = Vec::new();
    let mut chunks = 0;
    loop {
        let v = h.req(json!({"op": "fetch", "path": "sub/data.bin", "offset": got.len(), "max": proto::MAX_CHUNK}));
        assert_eq!(v["kind"], "chunk", "{v}");
        assert_eq!(v["size"], 2_500_000);
        got.extend(proto::base64_decode(v["data_b64"].as_str().unwrap()).unwrap());
        chunks += 1;
        if v["eof"] == true {
            break;
        }
        assert!(chunks < 10);
    }
    assert_eq!(chunks, 3);
    assert!(got == want);
    let v = h.req(json!({"op": "fetch", "path": "sub/data.bin", "offset": 2_499_990, "max": 4}));
    assert_eq!(v["eof"], false);
    assert_eq!(
        proto::base64_decode(v["data_b64"].as_str().unwrap()).unwrap(),
        want[2_499_990..2_499_994]
    );
    let v = h.req(json!({"op": "fetch", "path": "sub/data.bin", "offset": 2_500_000, "max": 4}));
    assert_eq!(
        (v["eof"].clone(), v["data_b64"].clone()),
        (json!(true), json!(""))
    );
    let v = h.req(json!({"op": "fetch", "path": "sub/data.bin", "offset": 2_500_001, "max": 4}));
    assert!(
        v["message"].as_str().unwrap().contains("beyond the end"),
        "{v}"
    );
    for (path, why) in [
        ("/etc/passwd", "must be relative"),
        ("../../etc/passwd", "without '..'"),
        ("sub/../sub/data.bin", "without '..'"),
    ] {
        let v = h.req(json!({"op": "fetch", "path": path, "offset": 0, "max": 10}));
        assert!(v["message"].as_str().unwrap().contains(why), "{path}: {v}");
    }
    std::os::unix::fs::symlink("/etc", dir.join("etc")).unwrap();
    let v = h.req(json!({"op": "fetch", "path": "etc/hostname", "offset": 0, "max": 10}));
    assert!(v["message"].as_str().unwrap().contains("outside"), "{v}");
    for max in [0, proto::MAX_CHUNK + 1] {
        let v = h.req(json!({"op": "fetch", "path": "sub/data.bin", "offset": 0, "max": max}));
        assert!(v["message"].as_str().unwrap().contains("fetch max"), "{v}");
    }
    assert_eq!(h.hang_up(), Ended::Eof);
}

#[test]
fn hostile_lines_get_errors_and_the_agent_goes_on() {
    let mut h = Harness::sh();
    // Over 1 MiB on one line: skipped without being stored, answered with id 0.
    let huge = format!(
        "{{\"id\":5,\"op\":\"spawn\",\"tag\":\"{}\"}}\n",
        "x".repeat(2 << 20)
    );
    h.sock.write_all(huge.as_bytes()).unwrap();
    let v = h.line();
    assert_eq!(v["id"], 0);
    assert!(
        v["message"].as_str().unwrap().contains("over the limit"),
        "{v}"
    );
    writeln!(h.sock, "this is not json").unwrap();
    let v = h.line();
    assert_eq!(
        (v["id"].clone(), v["kind"].clone()),
        (json!(0), json!("error"))
    );
    writeln!(h.sock, "{{\"id\":77,\"op\":\"format_disk\"}}").unwrap();
    let v = h.line();
    assert_eq!(v["id"], 77);
    assert!(
        v["message"].as_str().unwrap().contains("format_disk"),
        "{v}"
    );
    writeln!(
        h.sock,
        "{{\"id\":78,\"op\":\"wait\",\"tag\":\"x\",\"timeout_ms\":-1}}"
    )
    .unwrap();
    assert_eq!(h.line()["id"], 78);
    // Blank lines are no requests.
    writeln!(h.sock, "\n   ").unwrap();
    h.next = 100;
    assert_eq!(h.req(json!({"op": "time"}))["kind"], "time");
    assert_eq!(h.hang_up(), Ended::Eof);
}

#[test]
fn at_most_64_children_and_bye_stops_them_all() {
    let mut h = Harness::sh();
    let dir = h.workdir();
    let pids: Vec<u32> = (0..MAX_CHILDREN)
        .map(|i| h.spawn(&format!("c{i}"), "exec sleep 30"))
        .collect();
    let v = h.req(json!({"op": "spawn", "tag": "one-more", "args": []}));
    assert!(
        v["message"].as_str().unwrap().contains("64 children"),
        "{v}"
    );
    let v = h.req(json!({"op": "bye"}));
    assert_eq!(v["kind"], "ok");
    // `ok` comes after the clean-up: nothing is left.
    for p in pids {
        assert!(gone(p), "child {p} outlived bye");
    }
    assert!(!dir.exists());
    assert_eq!(h.agent.join().unwrap().unwrap(), Ended::Bye);
}

#[test]
fn dead_man_kills_children_that_ignore_sigterm_and_keeps_a_given_workdir() {
    let dir = std::env::temp_dir().join(format!("wl-agent-test-{}", std::process::id()));
    let mut cfg = AgentConfig::new("/bin/sh");
    cfg.workdir = Some(dir.clone());
    let mut h = Harness::start(cfg);
    assert_eq!(h.workdir(), dir.canonicalize().unwrap());
    let stubborn = h.spawn("stubborn", "trap '' TERM; exec sleep 30");
    let polite = h.spawn("polite", "exec sleep 30");
    // A wait in progress when the controller goes away ends early.
    let id = h.next;
    h.next += 1;
    writeln!(
        h.sock,
        "{}",
        json!({"id": id, "op": "wait", "tag": "polite", "timeout_ms": 600_000})
    )
    .unwrap();
    assert_eq!(h.hang_up(), Ended::Eof);
    assert!(gone(stubborn), "SIGKILL after the grace period");
    assert!(gone(polite));
    assert!(dir.is_dir(), "a workdir the user gave is kept");
    assert!(dir.join("stubborn.out").exists());
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn stop_flag_ends_the_agent() {
    let cfg = AgentConfig::new("/bin/sh");
    let stop = cfg.stop.clone();
    let mut h = Harness::start(cfg);
    let pid = h.spawn("s", "exec sleep 30");
    stop.store(true, Ordering::SeqCst);
    assert_eq!(h.agent.join().unwrap().unwrap(), Ended::Stopped);
    assert!(gone(pid));
}

fn script(dir: &Path, name: &str, body: &str) -> String {
    use std::os::unix::fs::PermissionsExt;
    let p = dir.join(name);
    std::fs::write(&p, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    p.display().to_string()
}

fn quiet(timeout: Duration, wirelab: &str) -> ConnectOptions {
    ConnectOptions {
        wirelab: wirelab.into(),
        timeout,
        log: Some(std::sync::Arc::new(|_: &str| {})),
        ..ConnectOptions::default()
    }
}

fn fakes_dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("wl-fake-agents-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[test]
fn a_different_protocol_is_refused_naming_both_versions() {
    let d = fakes_dir("mismatch");
    let fake = script(
        &d,
        "wirelab",
        r#"read line
echo '{"id":1,"kind":"hello","protocol":999,"version":"9.9.9","capabilities":[],"host":"x","workdir":"/","pid":1}'
cat > /dev/null"#,
    );
    let e = AgentConn::connect_with(&Transport::Local, &quiet(Duration::from_secs(30), &fake))
        .unwrap_err();
    assert!(
        matches!(e, TransportError::VersionMismatch { theirs: 999, .. }),
        "{e:?}"
    );
    let msg = e.to_string();
    for want in [
        "protocol 999 (wirelab 9.9.9)",
        &format!(
            "protocol {PROTOCOL} (wirelab {})",
            env!("CARGO_PKG_VERSION")
        ),
        "install the same wirelab version on local",
    ] {
        assert!(msg.contains(want), "{want:?} not in {msg}");
    }
    // A wirelab from before the agent existed.
    let older = script(
        &d,
        "older",
        "echo \"error: unrecognized subcommand 'agent'\" >&2\nexit 2",
    );
    let e = AgentConn::connect_with(&Transport::Local, &quiet(Duration::from_secs(30), &older))
        .unwrap_err();
    let msg = e.to_string();
    assert!(
        msg.contains("has no `agent` subcommand (an older version"),
        "{msg}"
    );
    assert!(
        msg.contains("install the same wirelab version on local"),
        "{msg}"
    );
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn missing_agents_and_namespaces_are_named() {
    let e = AgentConn::connect_with(
        &Transport::Local,
        &quiet(Duration::from_secs(30), "/nonexistent/wirelab"),
    )
    .unwrap_err();
    let msg = e.to_string();
    assert!(
        msg.contains("no wirelab at \"/nonexistent/wirelab\" on local"),
        "{msg}"
    );
    assert!(
        msg.contains("set `wirelab = \"/path/to/wirelab\"` for the host"),
        "{msg}"
    );
    // A namespace transport needs root (`ip netns exec`); without it that half is skipped.
    if wirelab_testkit::require_root() {
        let e = AgentConn::connect_with(
            &Transport::Netns("wl-no-such-ns".into()),
            &quiet(Duration::from_secs(30), "/bin/true"),
        )
        .unwrap_err();
        let msg = e.to_string();
        assert!(msg.contains("netns:wl-no-such-ns"), "{msg}");
        assert!(msg.contains("wl-no-such-ns"), "{msg}");
        assert!(msg.contains("before it said hello"), "{msg}");
    }
}

#[test]
fn a_silent_agent_times_out_and_a_dying_one_is_lost() {
    let d = fakes_dir("silent");
    let hello = format!(
        r#"{{"id":1,"kind":"hello","protocol":{PROTOCOL},"version":"x","capabilities":[],"host":"x","workdir":"/","pid":1}}"#
    );
    // A login banner on stdout before the hello is skipped.
    let silent = script(
        &d,
        "silent",
        &format!("echo 'Welcome!'\nread line\necho '{hello}'\ncat > /dev/null"),
    );
    let mut c =
        AgentConn::connect_with(&Transport::Local, &quiet(Duration::from_secs(30), &silent))
            .unwrap();
    assert_eq!(c.hello().version, "x");
    c.set_timeout(Duration::from_millis(300));
    let e = c.time().unwrap_err();
    assert!(
        matches!(e, TransportError::Timeout { op: "time", .. }),
        "{e:?}"
    );
    assert!(
        e.to_string().contains("did not answer `time` within 300ms"),
        "{e}"
    );
    drop(c);

    let dying = script(
        &d,
        "dying",
        &format!("read line\necho '{hello}'\necho 'out of luck' >&2\nread line\nexit 7"),
    );
    let mut c = AgentConn::connect_with(&Transport::Local, &quiet(Duration::from_secs(30), &dying))
        .unwrap();
    let e = c.time().unwrap_err();
    let msg = e.to_string();
    assert!(msg.contains("lost the agent on local"), "{msg}");
    assert!(
        msg.contains("exit status 7") && msg.contains("out of luck"),
        "{msg}"
    );
    // Once lost, every request says so at once.
    assert!(matches!(
        c.status().unwrap_err(),
        TransportError::Lost { .. }
    ));

    let quits = script(&d, "quits", "echo 'cannot start: no luck' >&2\nexit 1");
    let e = AgentConn::connect_with(&Transport::Local, &quiet(Duration::from_secs(30), &quits))
        .unwrap_err();
    let msg = e.to_string();
    assert!(
        msg.contains("exited with exit status 1 before it said hello: cannot start: no luck"),
        "{msg}"
    );
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn missing_files_are_not_found_and_remove_is_idempotent() {
    let mut a = Harness::sh();
    let r = a.req(json!({"op": "fetch", "path": "nosuch.wlr", "offset": 0, "max": 16}));
    assert_eq!(r["kind"], "not_found", "{r}");
    assert_eq!(r["path"], "nosuch.wlr");
    let r = a.req(json!({"op": "remove", "path": "nosuch.wlr"}));
    assert_eq!(r["kind"], "ok", "{r}");
    let r = a.req(json!({"op": "remove", "path": "../x"}));
    assert_eq!(r["kind"], "error", "{r}");
    let r = a.req(json!({"op": "sockets"}));
    assert_eq!(r["kind"], "sockets", "{r}");
    assert!(r["udp_ports"].is_array() && r["packet"].is_u64(), "{r}");
}

#[test]
fn counters_snapshot_the_namespace_and_refuse_bad_names() {
    let mut a = Harness::sh();
    // All interfaces but lo, in full.
    let r = a.req(json!({"op": "counters"}));
    assert_eq!(r["kind"], "counters", "{r}");
    assert!(r["snmp"]["Udp.InDatagrams"].is_u64(), "{r}");
    assert!(r["snmp"]["Ip.ReasmFails"].is_u64(), "{r}");
    assert!(!r["softnet"].as_array().unwrap().is_empty(), "{r}");
    assert!(r["cpus"][0]["cpu"] == "cpu", "{r}");
    assert!(r["meminfo"]["MemTotal"].as_u64().unwrap() > 0, "{r}");
    assert!(r["ifaces"].get("lo").is_none(), "{r}");
    // One interface asked for, as a sample: no programs run (no qdiscs,
    // no ethtool); a name that is no interface's is said, not read.
    let r = a.req(json!({"op": "counters", "ifaces": ["lo", "../x"], "sample": true}));
    assert_eq!(r["kind"], "counters", "{r}");
    assert!(r["ifaces"]["lo"]["sysfs"]["rx_packets"].is_u64(), "{r}");
    assert_eq!(r["ifaces"]["lo"]["ethtool"], json!({}), "{r}");
    assert_eq!(r["qdiscs"], json!([]), "{r}");
    assert_eq!(r["ifaces"].as_object().unwrap().len(), 1, "{r}");
    let why = r["unavailable"].to_string();
    assert!(
        why.contains("../x") && why.contains("not an interface name"),
        "{why}"
    );
}

#[test]
fn an_agent_without_counters_is_refused_naming_the_version_to_install() {
    let d = fakes_dir("nocounters");
    let fake = script(
        &d,
        "wirelab",
        &format!(
            r#"read line
echo '{{"id":1,"kind":"hello","protocol":{PROTOCOL},"version":"0.0.9","capabilities":["spawn","sockets"],"host":"x","workdir":"/","pid":1}}'
cat > /dev/null"#
        ),
    );
    let mut a =
        AgentConn::connect_with(&Transport::Local, &quiet(Duration::from_secs(30), &fake)).unwrap();
    let e = a.counters(&[], false).unwrap_err();
    let msg = e.to_string();
    for want in [
        "the wirelab 0.0.9 on local does not serve `counters`",
        &format!(
            "install wirelab {} or later there",
            env!("CARGO_PKG_VERSION")
        ),
    ] {
        assert!(msg.contains(want), "{want:?} not in {msg}");
    }
    drop(a);
    std::fs::remove_dir_all(&d).unwrap();
}

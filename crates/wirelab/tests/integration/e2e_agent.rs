//! `wirelab agent --stdio` reached through each transport with
//! `wirelab_agent::transport::AgentConn`: local, netns (a lab built here) and
//! ssh to an sshd this test starts on 127.0.0.1 with generated keys. Each
//! runs `wirelab recv` and `wirelab send` as agent children, checks the exact
//! counts, fetches a record file; the dead-man rule is checked by killing
//! the ssh client and by dropping a connection, and the errors by an
//! unknown binary, a wrong key, a closed port and a fake agent.

use crate::common::files::scratch;
use crate::common::sshd::{have_sshd, Sshd};
use crate::common::{exe, free_udp_port, netns_available, wait_udp_here, Lab};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};
use wirelab_agent::proto::{Exit, Sig, PROTOCOL};
use wirelab_agent::transport::{AgentConn, ConnectOptions, Transport, TransportError};

fn s(v: &[&str]) -> Vec<String> {
    v.iter().map(|a| a.to_string()).collect()
}

fn opts(ssh_opts: Vec<String>) -> ConnectOptions {
    ConnectOptions {
        wirelab: exe().into(),
        ssh_opts,
        ..ConnectOptions::default()
    }
}

fn wait_exit(c: &mut AgentConn, tag: &str) -> Exit {
    let e = c
        .wait(tag, Duration::from_secs(60))
        .unwrap_or_else(|e| panic!("{e}"))
        .unwrap_or_else(|| panic!("{tag} still runs after 60 s"));
    assert!(e.success(), "{tag}: {e}\n{}", e.stderr_tail);
    e
}

fn json(e: &Exit) -> Value {
    serde_json::from_str(&e.stdout).unwrap_or_else(|err| panic!("{err}: {}", e.stdout))
}

/// Whether process `pid` is gone (or a zombie), polled for up to 10 s.
fn gone(pid: u32) -> bool {
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(10) {
        match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
            Err(_) => return true,
            Ok(st)
                if st
                    .rsplit(')')
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

/// 5 probes from `tx` to a receiver on `rx` at `addr:port`, both agents'
/// children; checks the counts from both JSON reports and fetches the
/// receiver's record file to `dir`, checking it against `wirelab analyze`.
/// `ready` waits until the receiver listens.
fn round_trip(
    rx: &mut AgentConn,
    tx: &mut AgentConn,
    addr: &str,
    port: u16,
    dir: &Path,
    ready: impl FnOnce(),
) {
    let p = port.to_string();
    let recv = s(&[
        "recv",
        "--bind",
        addr,
        "-p",
        &p,
        "-o",
        "rx.wlr",
        "--json",
        "-q",
        "--timeout",
        "60s",
    ]);
    rx.spawn("rx", &recv).unwrap_or_else(|e| panic!("{e}"));
    ready();
    let send = s(&[
        "send", addr, "-p", &p, "-n", "5", "-i", "1ms", "-o", "tx.wlr", "--json", "-q",
    ]);
    tx.spawn("tx", &send).unwrap_or_else(|e| panic!("{e}"));
    let t = json(&wait_exit(tx, "tx"));
    assert_eq!(t["totals"]["sent"], 5, "{t}");
    let r = json(&wait_exit(rx, "rx"));
    assert_eq!(
        (r["totals"]["received"].clone(), r["totals"]["lost"].clone()),
        (5.into(), 0.into()),
        "{r}"
    );
    let (rx_file, tx_file) = (dir.join("rx.wlr"), dir.join("tx.wlr"));
    let n = rx
        .fetch("rx.wlr", &rx_file)
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(n, std::fs::metadata(&rx_file).unwrap().len());
    assert!(n > 0);
    tx.fetch("tx.wlr", &tx_file)
        .unwrap_or_else(|e| panic!("{e}"));
    let out = crate::common::run(
        Command::new(exe())
            .arg("analyze")
            .args([&tx_file, &rx_file])
            .arg("--json"),
    );
    let a: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(a["totals"]["received"], 5, "{a}");
    assert_eq!(a["totals"]["lost"], 0, "{a}");
    // Fetch stays inside the workdir.
    let e = rx.fetch("../rx.wlr", &dir.join("x")).unwrap_err();
    assert!(e.to_string().contains("without '..'"), "{e}");
    assert!(!dir.join("x").exists());
}

#[test]
fn local_agent_runs_send_and_recv_and_fetches_records() {
    let dir = scratch("agent", "local");
    let mut c = AgentConn::connect(&Transport::Local, exe(), &[]).unwrap_or_else(|e| panic!("{e}"));
    let h = c.hello().clone();
    assert_eq!(h.protocol, PROTOCOL);
    assert_eq!(h.version, env!("CARGO_PKG_VERSION"));
    assert!(h.capabilities.iter().any(|c| c == "fetch"));
    let workdir = PathBuf::from(&h.workdir);
    assert!(workdir.is_dir());
    // One agent is both ends here: the connection is used twice in turn.
    let mut tx = AgentConn::connect(&Transport::Local, exe(), &[]).unwrap();
    let port = free_udp_port();
    round_trip(&mut c, &mut tx, "127.0.0.1", port, &dir, || {
        wait_udp_here(port)
    });
    // Byte-identical to the agent's file.
    assert!(
        std::fs::read(dir.join("rx.wlr")).unwrap()
            == std::fs::read(workdir.join("rx.wlr")).unwrap()
    );
    let t = c.time().unwrap();
    assert!(t.realtime_ns > 0 && t.monotonic_ns > 0);
    // A child that fails gives its exit code and stderr.
    c.spawn("bad", &s(&["send", "--count", "lots", "127.0.0.1"]))
        .unwrap();
    let e = c.wait("bad", Duration::from_secs(30)).unwrap().unwrap();
    assert_eq!(e.code, Some(2));
    assert!(e.stderr_tail.contains("--count"), "{}", e.stderr_tail);
    let err = c.spawn("bad", &[]).unwrap_err();
    assert!(
        matches!(err, TransportError::Agent { op: "spawn", .. }),
        "{err}"
    );
    c.close().unwrap_or_else(|e| panic!("{e}"));
    tx.close().unwrap();
    assert!(!workdir.exists(), "the agent removes the workdir it made");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn dropping_a_connection_stops_the_agent_and_its_children() {
    let c = AgentConn::connect(&Transport::Local, exe(), &[]).unwrap();
    let mut c = c;
    let agent = c.hello().pid;
    let child = spawn_forever_recv(&mut c);
    assert!(!gone_now(child));
    drop(c);
    assert!(gone(child), "child {child} outlived its agent");
    assert!(gone(agent), "agent {agent} outlived its connection");
}

/// `wirelab recv --forever` on a free loopback port, spawned by the agent
/// as "rx": its pid.
fn spawn_forever_recv(c: &mut AgentConn) -> u32 {
    let port = free_udp_port().to_string();
    c.spawn(
        "rx",
        &s(&[
            "recv",
            "--bind",
            "127.0.0.1",
            "-p",
            &port,
            "--forever",
            "-q",
        ]),
    )
    .unwrap()
}

fn gone_now(pid: u32) -> bool {
    !Path::new(&format!("/proc/{pid}")).exists()
}

#[test]
fn netns_agents_run_a_flow_between_two_namespaces() {
    if !netns_available(&[]) {
        return;
    }
    let lab = Lab::new();
    let mut rx = AgentConn::connect(&Transport::Netns(lab.r.clone()), exe(), &[])
        .unwrap_or_else(|e| panic!("{e}"));
    let mut tx = AgentConn::connect(&Transport::Netns(lab.s.clone()), exe(), &[]).unwrap();
    // The agent really lives in the namespace.
    let ns_of = |pid: u32| std::fs::read_link(format!("/proc/{pid}/ns/net")).unwrap();
    use std::os::unix::fs::MetadataExt;
    let ino = std::fs::metadata(format!("/run/netns/{}", lab.r))
        .unwrap()
        .ino();
    assert_eq!(
        ns_of(rx.hello().pid).to_string_lossy(),
        format!("net:[{ino}]")
    );
    round_trip(&mut rx, &mut tx, "198.18.0.2", 5757, &lab.dir, || {
        lab.wait_udp(&lab.r, 5757)
    });
    rx.close().unwrap();
    tx.close().unwrap();
}

#[test]
fn missing_namespace_is_a_clear_error() {
    if !netns_available(&[]) {
        return;
    }
    let e = AgentConn::connect(&Transport::Netns("wl-e2e-nosuch".into()), exe(), &[]).unwrap_err();
    let msg = e.to_string();
    assert!(
        msg.contains("netns:wl-e2e-nosuch") && msg.contains("Cannot open network namespace"),
        "{msg}"
    );
}

#[test]
fn ssh_agents_run_flows_die_with_their_connection_and_explain_failures() {
    if !have_sshd() || !netns_available(&["ssh", "ssh-keygen"]) {
        return;
    }
    let dir = scratch("agent", "ssh");
    let sshd = Sshd::start(&dir);
    let o = opts(sshd.opts("user"));

    // Loopback, both ends over ssh.
    let mut rx = AgentConn::connect_with(&sshd.transport(None), &o).unwrap_or_else(|e| {
        panic!(
            "{e}\nsshd: {}",
            std::fs::read_to_string(dir.join("sshd.log")).unwrap()
        )
    });
    assert_eq!(rx.hello().protocol, PROTOCOL);
    let mut tx = AgentConn::connect_with(&sshd.transport(None), &o).unwrap();
    let port = free_udp_port();
    round_trip(&mut rx, &mut tx, "127.0.0.1", port, &dir, || {
        wait_udp_here(port)
    });
    rx.close().unwrap_or_else(|e| panic!("{e}"));
    tx.close().unwrap();

    // ssh://…?netns= receiving, netns: sending, across a veth link.
    let lab = Lab::new();
    let mut rx = AgentConn::connect_with(&sshd.transport(Some(&lab.r)), &o)
        .unwrap_or_else(|e| panic!("{e}"));
    let mut tx = AgentConn::connect(&Transport::Netns(lab.s.clone()), exe(), &[]).unwrap();
    round_trip(&mut rx, &mut tx, "198.18.0.2", 5757, &lab.dir, || {
        lab.wait_udp(&lab.r, 5757)
    });
    rx.close().unwrap();
    tx.close().unwrap();

    // Dead-man: kill the ssh client while a child runs; the agent and the
    // child are gone soon after.
    let mut c = AgentConn::connect_with(&sshd.transport(None), &o).unwrap();
    let agent = c.hello().pid;
    let child = spawn_forever_recv(&mut c);
    assert!(!gone_now(child) && !gone_now(agent));
    let ssh = c.process_id().unwrap();
    let _ = Command::new("kill")
        .args(["-KILL", &ssh.to_string()])
        .status();
    assert!(gone(child), "child {child} outlived the ssh connection");
    assert!(gone(agent), "agent {agent} outlived the ssh connection");
    let e = c.signal("rx", Sig::Term).unwrap_err();
    assert!(
        e.to_string()
            .contains("lost the agent on ssh://root@127.0.0.1"),
        "{e}"
    );
    drop(c);

    // Failures name their cause.
    let quiet = |mut o: ConnectOptions| {
        o.log = Some(Arc::new(|_: &str| {}));
        o
    };
    let mut nowl = quiet(o.clone());
    nowl.wirelab = "/nonexistent/wirelab".into();
    let e = AgentConn::connect_with(&sshd.transport(None), &nowl).unwrap_err();
    let msg = e.to_string();
    assert!(matches!(e, TransportError::AgentNotFound { .. }), "{msg}");
    assert!(
        msg.contains("set `wirelab = \"/path/to/wirelab\"` for the host"),
        "{msg}"
    );

    let stranger = quiet(opts(sshd.opts("stranger")));
    let e = AgentConn::connect_with(&sshd.transport(None), &stranger).unwrap_err();
    let msg = e.to_string();
    assert!(matches!(e, TransportError::Ssh { .. }), "{msg}");
    assert!(msg.contains("Permission denied"), "{msg}");

    let closed = free_tcp_port_nobody_listens();
    let t: Transport = format!("ssh://root@127.0.0.1:{closed}").parse().unwrap();
    let e = AgentConn::connect_with(&t, &quiet(o.clone())).unwrap_err();
    let msg = e.to_string();
    assert!(
        msg.contains("cannot reach ssh://root@127.0.0.1") && msg.contains("Connection refused"),
        "{msg}"
    );

    // A wirelab of another protocol on the far side.
    let fake = dir.join("old-wirelab");
    std::fs::write(
        &fake,
        "#!/bin/sh\nread line\necho '{\"id\":1,\"kind\":\"hello\",\"protocol\":999,\"version\":\"9.9.9\"}'\ncat >/dev/null\n",
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
    let mut old = quiet(o.clone());
    old.wirelab = fake.display().to_string();
    let e = AgentConn::connect_with(&sshd.transport(None), &old).unwrap_err();
    let msg = e.to_string();
    assert!(msg.contains("protocol 999 (wirelab 9.9.9)"), "{msg}");
    assert!(
        msg.contains(&format!(
            "install the same wirelab version on ssh://root@127.0.0.1:{}",
            sshd.port
        )),
        "{msg}"
    );

    drop(sshd);
    std::fs::remove_dir_all(&dir).unwrap();
}

fn free_tcp_port_nobody_listens() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// The binary by hand: SIGTERM to the agent stops its child and removes its
/// workdir; SIGKILL to the agent leaves no chance to clean up, and the
/// kernel kills the child (PR_SET_PDEATHSIG).
#[test]
fn signals_to_the_agent_leave_no_child_behind() {
    use std::io::{BufRead, BufReader, Write};
    for sig in ["-TERM", "-KILL"] {
        let mut agent = Command::new(exe())
            .args(["agent", "--stdio"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut input = agent.stdin.take().unwrap();
        let mut output = BufReader::new(agent.stdout.take().unwrap());
        let mut ask = |line: &str| -> Value {
            writeln!(input, "{line}").unwrap();
            let mut l = String::new();
            output.read_line(&mut l).unwrap();
            serde_json::from_str(&l).unwrap_or_else(|e| panic!("{e}: {l:?}"))
        };
        let hello = ask(r#"{"id":1,"op":"hello","protocol":1,"controller":"test"}"#);
        let workdir = PathBuf::from(hello["workdir"].as_str().unwrap());
        let port = free_udp_port();
        let v = ask(&format!(
            r#"{{"id":2,"op":"spawn","tag":"rx","args":["recv","--bind","127.0.0.1","-p","{port}","--forever","-q"]}}"#
        ));
        let child = v["pid"].as_u64().unwrap() as u32;
        wait_udp_here(port);
        let st = Command::new("kill")
            .args([sig, &agent.id().to_string()])
            .status()
            .unwrap();
        assert!(st.success());
        let st = agent.wait().unwrap();
        assert!(gone(child), "{sig}: child {child} outlived the agent");
        if sig == "-TERM" {
            assert_eq!(st.code(), Some(0), "{sig}");
            assert!(!workdir.exists(), "{sig}: workdir left behind");
        } else {
            let _ = std::fs::remove_dir_all(&workdir);
        }
    }
}

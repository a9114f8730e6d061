//! The lab on the real kernel: needs root and iproute2. Skipped without
//! them through `wirelab_testkit::skip` (a failure on CI).

use std::process::Command;
use std::time::Duration;
use wirelab_lab::lab::{Lab, LabError, LinkSpec};

fn netns_list() -> String {
    let out = Command::new("ip").args(["netns", "list"]).output().unwrap();
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn listed(list: &str, ns: &str) -> bool {
    list.lines()
        .any(|l| l.split_whitespace().next() == Some(ns))
}

#[test]
fn two_namespace_lab_exists_until_dropped() {
    let lab = match Lab::new("wlc")
        .namespace("s")
        .namespace("r")
        .link(
            "s",
            "r",
            LinkSpec::new()
                .ipv4("198.18.0.1/24", "198.18.0.2/24")
                .ipv6("fd77::1/64", "fd77::2/64")
                .mtu(9000),
        )
        .build()
    {
        Ok(l) => l,
        Err(e @ (LabError::NeedsRoot | LabError::MissingTool { .. })) => {
            wirelab_testkit::skip(e);
            return;
        }
        Err(e) => panic!("{e}"),
    };
    let names: Vec<String> = lab.namespaces().map(str::to_owned).collect();
    let list = netns_list();
    for ns in &names {
        assert!(listed(&list, ns), "{ns} not in `ip netns list`: {list}");
    }
    // Both ends are up with their addresses and the MTU asked for.
    for (role, peer) in [("s", "r"), ("r", "s")] {
        let end = lab.end(role, peer);
        let out = lab
            .exec(role, "ip")
            .args(["-o", "addr", "show", "dev", &end.dev])
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        for c in &end.addrs {
            assert!(
                text.contains(&c.to_string()),
                "{c} not on {}: {text}",
                end.dev
            );
        }
        let sys = |what: &str| {
            let out = lab
                .exec(role, "cat")
                .arg(format!("/sys/class/net/{}/{what}", end.dev))
                .output()
                .unwrap();
            String::from_utf8_lossy(&out.stdout).trim().to_string()
        };
        assert_eq!(sys("mtu"), "9000");
        assert_eq!(sys("operstate"), "up");
    }
    // Nothing listens in a fresh namespace: wait_udp names the port.
    let e = lab
        .wait_udp("s", 6998, Duration::from_millis(50))
        .unwrap_err();
    assert!(e.to_string().contains("6998"), "{e}");
    drop(lab);
    let list = netns_list();
    for ns in &names {
        assert!(!listed(&list, ns), "{ns} left behind: {list}");
    }
}

#[test]
fn a_failed_build_leaves_nothing_behind() {
    // The last step fails (no such sysctl) after the namespaces exist.
    let r = Lab::new("wlf")
        .namespace("a")
        .namespace("b")
        .link(
            "a",
            "b",
            LinkSpec::new().ipv4("198.18.0.1/24", "198.18.0.2/24"),
        )
        .sysctl("a", "net.wirelab.no_such_key", "1")
        .build();
    match r {
        Ok(_) => panic!("an unknown sysctl was accepted"),
        Err(e @ (LabError::NeedsRoot | LabError::MissingTool { .. })) => wirelab_testkit::skip(e),
        Err(e) => {
            assert!(e.to_string().contains("no_such_key"), "{e}");
            let mine = format!("wlf-{}-", std::process::id());
            let list = netns_list();
            assert!(!list.contains(&mine), "left behind: {list}");
        }
    }
}

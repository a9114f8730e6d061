use super::*;
use wirelab_host::env::apply::Target;

fn mtu(previous: &str, value: &str) -> Change {
    Change {
        setting: "mtu".into(),
        target: Target::Mtu {
            iface: "eth1".into(),
        },
        previous: previous.into(),
        value: value.into(),
    }
}

fn applied(host: &str) -> Applied {
    Applied {
        host: host.into(),
        token: format!("t-{host}"),
        changes: vec![mtu("1500", "9000")],
    }
}

#[test]
fn a_refusal_puts_back_the_hosts_already_changed_last_first() {
    let hosts: Vec<String> = ["a", "b", "c"].map(String::from).to_vec();
    let refuse = |h: &str| HostError::Env(EnvError::BadToken(h.to_string()));
    let mut reverted = vec![];
    let mut heard = vec![];
    let e = apply_in_turn(
        &hosts,
        |h| {
            if h == "c" {
                Err(refuse(h))
            } else {
                Ok(applied(h))
            }
        },
        |h, t| {
            reverted.push(format!("{h} {t}"));
            if h == "a" {
                Err(refuse("gone"))
            } else {
                Ok(())
            }
        },
        &mut |a| heard.push(a.host.clone()),
    )
    .unwrap_err();
    assert_eq!(heard, ["a", "b"]);
    assert_eq!(reverted, ["b t-b", "a t-a"]);
    let HostError::RolledBack { notes, source } = &e else {
        panic!("{e}")
    };
    assert_eq!(
        notes,
        "b was put back; a could not be put back (bad token \"gone\": a token is the word \
         `wirelab env --apply` printed): wirelab env a --revert t-a"
    );
    assert!(matches!(**source, HostError::Env(EnvError::BadToken(_))));
    // The first host refusing changed nothing: its error as it is.
    let e = apply_in_turn(
        &hosts,
        |h| Err(refuse(h)),
        |_, _| unreachable!(),
        &mut |_| {},
    )
    .unwrap_err();
    assert!(matches!(e, HostError::Env(_)), "{e}");
    let all = apply_in_turn(
        &hosts,
        |h| Ok(applied(h)),
        |_, _| unreachable!(),
        &mut |_| {},
    )
    .unwrap();
    assert_eq!(all.len(), 3);
}

#[test]
fn what_was_done_as_text_and_json() {
    let a = applied("netns:rx");
    assert_eq!(
        a.text(),
        "netns:rx: applied t-netns:rx (undo: wirelab env netns:rx --revert t-netns:rx)\n  \
         the MTU of eth1: 1500 -> 9000\n"
    );
    assert_eq!(
        reverted_text("local", "tok", &a.changes),
        "local: reverted tok\n  the MTU of eth1: 9000 -> 1500\n"
    );
    let j = applied_json(std::slice::from_ref(&a));
    assert_eq!(j["schema"], "wirelab.env.applied/1");
    assert_eq!(j["hosts"][0]["token"], "t-netns:rx");
    let j = reverted_json("local", "tok", &a.changes);
    let keys: Vec<&str> = j.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(keys, ["changes", "host", "schema", "token"]);
    let mut x = Snapshot::new("x", 1);
    x.values.insert("kernel.release".into(), "6.1".into());
    let y = Snapshot::new("y", 2);
    assert_eq!(
        snapshots_text(std::slice::from_ref(&x)),
        "# x\nkernel.release = 6.1\n"
    );
    assert_eq!(
        snapshots_text(&[x.clone(), y.clone()]),
        "# x\nkernel.release = 6.1\n\n# y\n"
    );
    assert!(snapshots_json(std::slice::from_ref(&x))
        .unwrap()
        .starts_with('{'));
    assert!(snapshots_json(&[x, y]).unwrap().starts_with('['));
}

#[test]
fn a_saved_snapshot_is_read_back_and_anything_else_named() {
    let d = std::env::temp_dir().join(format!("wirelab-env-hosts-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    let hosts = Hosts {
        wirelab: "wirelab".into(),
        ssh_options: vec![],
    };
    let mut s = Snapshot::new("netns:rx", 5);
    s.values.insert("nic.eth1.mtu".into(), "1500".into());
    let (saved, bad) = (d.join("before.json"), d.join("bad.json"));
    std::fs::write(&saved, serde_json::to_string_pretty(&s).unwrap()).unwrap();
    std::fs::write(&bad, "{").unwrap();
    assert_eq!(hosts.snapshot_or_file(saved.to_str().unwrap()).unwrap(), s);
    let e = hosts.snapshot_or_file(bad.to_str().unwrap()).unwrap_err();
    assert!(matches!(e, HostError::NotASnapshot { .. }), "{e}");
    let missing = d.join("missing.json");
    let e = hosts
        .snapshot_or_file(missing.to_str().unwrap())
        .unwrap_err();
    assert!(
        e.to_string()
            .contains("neither a host (local, netns:NAME, ssh://HOST)"),
        "{e}"
    );
    std::fs::remove_dir_all(&d).unwrap();
}

use super::keys::placeholders;
use super::*;
use wirelab_host::stress::StressPreset;

const REFERENCE: &str = include_str!("../../../../examples/run/reference.toml");

/// A small valid file; tests append to it or replace parts.
const BASE: &str = r#"[campaign]
name = "t"

[hosts]
tx = { transport = "local" }
rx = { transport = "local", addr = "127.0.0.1" }

[[flow]]
name = "f"
from = "tx"
to = "rx"
"#;

fn ok(text: &str) -> Control {
    parse("c.toml", text).unwrap_or_else(|e| panic!("{e}\n{text}"))
}

/// The error's (line, col, key, message).
fn bad(text: &str) -> (usize, usize, String, String) {
    match parse("c.toml", text) {
        Ok(_) => panic!("accepted:\n{text}"),
        Err(ControlError::Invalid {
            file,
            line,
            col,
            key,
            message,
        }) => {
            assert_eq!(file, "c.toml");
            (line, col, key, message)
        }
        Err(e) => panic!("{e}"),
    }
}

fn line_of(text: &str, needle: &str) -> usize {
    text.lines()
        .position(|l| l.contains(needle))
        .unwrap_or_else(|| panic!("{needle} not in text"))
        + 1
}

#[test]
fn reference_parses() {
    let c = ok(REFERENCE);
    assert_eq!(c.campaign.name, "dtss-lab");
    assert_eq!(c.campaign.order, Order::Shuffled);
    assert_eq!((c.campaign.seed, c.campaign.repetitions), (7, 1));
    assert_eq!(
        (c.campaign.settle_ns, c.campaign.pause_ns),
        (5_000_000_000, 2_000_000_000)
    );
    assert_eq!(c.hosts.len(), 3);
    assert_eq!(c.hosts["tx"].transport, "ssh://lab@h1");
    assert_eq!(c.hosts["tx"].test_if.as_deref(), Some("eth1"));
    assert_eq!(c.hosts["emu"].wirelab, "wirelab");
    let f = &c.flows[0];
    assert_eq!(
        (f.name.as_str(), f.from.as_str(), f.to.as_str()),
        ("sut", "tx", "rx")
    );
    assert_eq!(f.duration, Some(60_000_000_000));
    assert_eq!(f.warmup_packets, 10);
    assert_eq!(f.query.every_packets, 100_000);
    assert_eq!(f.query.mode, QueryMode::Control);
    assert_eq!(f.abort.lost_gt, Some(50));
    assert_eq!(f.abort.max_duration, Some(7_200_000_000_000));
    let keys: Vec<&str> = c.sweep.axes.iter().map(|a| a.key.as_str()).collect();
    assert_eq!(
        keys,
        ["size", "interval", "socket", "dscp", "emulate.delay"],
        "file order"
    );
    assert_eq!(c.sweep.axes[0].values[9], Value::Int(65000));
    assert_eq!(c.sweep.exclude, [r#"socket != "udp" && size > 8972"#]);
    let e = c.emulate.as_ref().unwrap();
    assert_eq!(e.stages.as_deref(), Some("delay {emulate.delay} 50us"));
    assert_eq!(e.ifaces, ["e1".to_string(), "e2".to_string()]);
    assert_eq!(c.capture.as_ref().unwrap().snaplen, Some(96));
    assert_eq!(
        c.capture_ifaces("emu"),
        ["e1", "e2"],
        "the emulator's by default"
    );
    assert!(c.capture_ifaces("rx").is_empty(), "not a capture host");
    assert_eq!(c.stressors[0].preset, Some(StressPreset::Realistic));
    let env = &c.env.as_ref().unwrap().apply["rx"];
    assert_eq!(env["net.core.rmem_max"], Value::Int(26_214_400));
    assert_eq!(env["rings"], Value::Int(4096));
    assert_eq!(c.metrics.as_ref().unwrap().listen, "127.0.0.1:9464");
}

#[test]
fn defaults() {
    let c = ok(BASE);
    assert_eq!(c.campaign.order, Order::Sequential);
    assert_eq!((c.campaign.seed, c.campaign.repetitions), (1, 1));
    let f = &c.flows[0];
    assert_eq!(f.socket, SocketKind::Udp);
    assert_eq!(
        (f.duration, f.count),
        (None, None),
        "filled in when resolved"
    );
    assert_eq!(f.query.every_packets, DEFAULT_QUERY_EVERY);
    assert!(c.sweep.axes.is_empty());
    assert_eq!(c.test_addr("rx").as_deref(), Some("127.0.0.1"));
    assert_eq!(c.host_mtu("tx"), None);
}

#[test]
fn syntax_error_has_position() {
    let (line, col, key, msg) = bad("[campaign]\nname = \"x\nseed = 1\n");
    assert_eq!((line, key.as_str()), (2, ""));
    assert!(col >= 8, "{col}");
    assert!(!msg.is_empty());
    let e = parse("c.toml", "[campaign]\nname = \"x\nseed = 1\n").unwrap_err();
    assert!(e.to_string().starts_with("c.toml:2:"), "{e}");
}

#[test]
fn unknown_keys() {
    let t = BASE.replace("name = \"t\"", "name = \"t\"\nseeed = 3");
    let (line, col, key, msg) = bad(&t);
    assert_eq!((line, col, key.as_str()), (3, 1, "campaign.seeed"));
    assert!(
        msg.contains("unknown key; expected one of: name, description, order, seed"),
        "{msg}"
    );

    let t = format!("{BASE}durration = \"5s\"\n");
    let (line, _, key, msg) = bad(&t);
    assert_eq!(
        (line, key.as_str()),
        (line_of(&t, "durration"), "flow.f.durration")
    );
    assert!(msg.contains("duration"), "{msg}");

    let t = format!("{BASE}abort = {{ lost = 5 }}\n");
    let (line, col, key, _) = bad(&t);
    assert_eq!(
        (line, col, key.as_str()),
        (line_of(&t, "lost"), 11, "flow.f.abort.lost")
    );

    let t = format!("{BASE}[extra]\nx = 1\n");
    let (_, _, key, msg) = bad(&t);
    assert_eq!(key, "extra");
    assert!(msg.contains("campaign, hosts, lab, flow, sweep"), "{msg}");

    let t = BASE.replace("addr = \"127.0.0.1\"", "adr = \"127.0.0.1\"");
    let (_, _, key, _) = bad(&t);
    assert_eq!(key, "hosts.rx.adr");
}

#[test]
fn bad_values() {
    let e = parse("ctl.toml", &format!("{BASE}duration = \"5x\"\n")).unwrap_err();
    let s = e.to_string();
    assert!(
        s.starts_with("ctl.toml:12:12: flow.f.duration: invalid duration \"5x\""),
        "{s}"
    );
    let cases: &[(&str, &str, &str)] = &[
        ("duration = 5", "flow.f.duration", "string with a unit"),
        ("duration = \"0s\"", "flow.f.duration", "above 0"),
        ("count = 0", "flow.f.count", "at least 1"),
        ("dscp = 64", "flow.f.dscp", "0 to 63"),
        (
            "socket = \"tcp\"",
            "flow.f.socket",
            "\"udp\", \"raw\" or \"packet\"",
        ),
        ("size = \"big\"", "flow.f.size", "big"),
        ("size = -1", "flow.f.size", "number of bytes"),
        ("interval = \"10\"", "flow.f.interval", "unit"),
        ("interval = 5", "flow.f.interval", "duration with a unit"),
        ("rate = \"fast\"", "flow.f.rate", "packet rate"),
        ("echo = \"yes\"", "flow.f.echo", "true or false"),
        ("port = 70000", "flow.f.port", "1 to 65535"),
        (
            "query = { mode = \"sideways\" }",
            "flow.f.query.mode",
            "\"control\" or \"inband\"",
        ),
        (
            "query = { every_packets = 0 }",
            "flow.f.query.every_packets",
            "from 1",
        ),
        (
            "abort = { max_duration = \"2 hours\" }",
            "flow.f.abort.max_duration",
            "invalid duration",
        ),
        (
            "abort = { lost_gt = -1 }",
            "flow.f.abort.lost_gt",
            "integer from 0",
        ),
        (
            "interval = \"1ms\"\nrate = \"1kpps\"",
            "flow.f.rate",
            "not both",
        ),
        (
            "send_args = [\"--size\", \"80\"]",
            "flow.f.send_args",
            "`size` key",
        ),
        (
            "recv_args = [\"-o\", \"x.wlr\"]",
            "flow.f.recv_args",
            "records every flow",
        ),
        (
            "send_args = \"--padding random\"",
            "flow.f.send_args",
            "array of strings",
        ),
        ("when = 'size >'", "flow.f.when", "ends early"),
    ];
    for (line, key, want) in cases {
        let t = format!("{BASE}{line}\n");
        let (l, _, k, m) = bad(&t);
        assert_eq!(k, *key, "{line}: {m}");
        assert!(m.contains(want), "{line}: {m}");
        assert!(l >= 12, "{line}: line {l}");
    }
    let campaign: &[(&str, &str, &str)] = &[
        (
            "order = \"random\"",
            "campaign.order",
            "\"sequential\" or \"shuffled\"",
        ),
        ("repetitions = 0", "campaign.repetitions", "from 1"),
        ("settle = \"5\"", "campaign.settle", "needs a unit"),
        ("seed = \"7\"", "campaign.seed", "expected an integer"),
    ];
    for (line, key, want) in campaign {
        let t = BASE.replace("name = \"t\"", &format!("name = \"t\"\n{line}"));
        let (l, _, k, m) = bad(&t);
        assert_eq!((l, k.as_str()), (3, *key), "{line}: {m}");
        assert!(m.contains(want), "{line}: {m}");
    }
    let t = BASE.replace("name = \"t\"", "name = \"a b\"");
    assert_eq!(bad(&t).2, "campaign.name");
    let t = BASE.replace("addr = \"127.0.0.1\"", "addr = \"127.0.0.1/8\"");
    let (_, _, k, m) = bad(&t);
    assert_eq!(k, "hosts.rx.addr");
    assert!(m.contains("no prefix"), "{m}");
    let t = BASE.replace("transport = \"local\" }", "transport = \"telnet://x\" }");
    let (_, _, k, m) = bad(&t);
    assert_eq!(k, "hosts.tx.transport");
    assert!(m.contains("ssh://"), "{m}");
}

#[test]
fn missing_sections_and_keys() {
    let (_, _, k, m) = bad("[hosts]\na = { transport = \"local\" }\n");
    assert_eq!(k, "campaign");
    assert!(m.contains("missing"), "{m}");
    let t = BASE.replace("from = \"tx\"\n", "");
    let (l, c, k, m) = bad(&t);
    assert_eq!(
        (l, c, k.as_str()),
        (line_of(&t, "[[flow]]"), 1, "flow.f.from")
    );
    assert!(m.contains("missing: the sending host"), "{m}");
    let t = BASE.replace("name = \"f\"\n", "");
    assert_eq!(bad(&t).2, "flow[1].name");
    let t = &BASE[..BASE.find("[[flow]]").unwrap()];
    assert_eq!(bad(t).2, "flow");
}

#[test]
fn unknown_hosts() {
    let t = BASE.replace("to = \"rx\"", "to = \"rz\"");
    let (l, c, k, m) = bad(&t);
    assert_eq!((l, c, k.as_str()), (line_of(&t, "rz"), 6, "flow.f.to"));
    assert_eq!(m, "unknown host \"rz\"; hosts: rx, tx");
    let cases = [
        "[emulate]\nhost = \"em\"\nifaces = [\"a\", \"b\"]\nstages = \"delay 1ms\"\n",
        "[capture]\nhosts = [\"rx\", \"nope\"]\n",
        "[[stressor]]\nhost = \"nope\"\nkind = \"cpu\"\n",
        "[env]\napply.nope = { rings = 1 }\n",
    ];
    for (sec, key) in cases.iter().zip([
        "emulate.host",
        "capture.hosts",
        "stressor[1].host",
        "env.apply.nope",
    ]) {
        let t = format!("{BASE}{sec}");
        let (_, _, k, m) = bad(&t);
        assert_eq!(k, key, "{m}");
        assert!(m.contains("unknown host"), "{m}");
    }
}

#[test]
fn duplicate_flow_names() {
    let t = format!("{BASE}\n[[flow]]\nname = \"f\"\nfrom = \"rx\"\nto = \"tx\"\n");
    let (l, c, k, m) = bad(&t);
    assert_eq!(
        (l, c, k.as_str()),
        (line_of(&t, "from = \"rx\"") - 1, 8, "flow[2].name")
    );
    assert!(m.contains("already defined"), "{m}");
}

#[test]
fn duplicate_ports_to_one_host() {
    let t = format!(
        "{BASE}port = 5000\n\n[[flow]]\nname = \"g\"\nfrom = \"tx\"\nto = \"rx\"\nport = 5000\n"
    );
    let (_, _, k, m) = bad(&t);
    assert_eq!(k, "flow.g.port");
    assert!(m.contains("flow f also receives on port 5000"), "{m}");
}

#[test]
fn sweep_errors() {
    let t = format!("{BASE}\n[sweep]\nsize = []\n");
    let (l, c, k, m) = bad(&t);
    assert_eq!(
        (l, c, k.as_str()),
        (line_of(&t, "size = []"), 8, "sweep.size")
    );
    assert!(m.contains("empty axis"), "{m}");

    let t = format!("{BASE}\n[sweep]\nsize = 80\n");
    assert!(bad(&t).3.contains("array of values"));

    let t = format!("{BASE}\n[sweep]\nsize = [80, \"huge\"]\n");
    let (_, c, k, m) = bad(&t);
    assert_eq!((c, k.as_str()), (13, "sweep.size"), "{m}");

    let t = format!("{BASE}\n[sweep]\nsize = [80, 80]\n");
    assert!(bad(&t).3.contains("listed twice"));

    let t = format!("{BASE}\n[sweep]\nsizes = [80]\n");
    let (_, _, k, m) = bad(&t);
    assert_eq!(k, "sweep.sizes");
    assert!(m.contains("changes nothing"), "{m}");

    let t = format!("{BASE}\n[sweep]\n\"flow.g.size\" = [80]\n");
    assert!(bad(&t).3.contains("no flow is named \"g\"; flows: f"));

    let t = format!("{BASE}\n[sweep]\n\"flow.f.colour\" = [80]\n");
    assert!(bad(&t).3.contains("size, interval, rate"));

    let t = format!("{BASE}\n[sweep]\nport = [5000]\n");
    assert!(bad(&t).3.contains("flow.NAME.port"));

    let t = format!("{BASE}interval = \"1ms\"\n\n[sweep]\nrate = [\"1kpps\"]\n");
    let (_, _, k, m) = bad(&t);
    assert_eq!(k, "sweep.rate");
    assert!(m.contains("both an interval"), "{m}");

    let t = format!("{BASE}\n[sweep]\ndscp = [0, 99]\n");
    assert!(bad(&t).3.contains("0 to 63"));
}

#[test]
fn bad_exclusion_points_into_the_string() {
    let t = format!("{BASE}\n[sweep]\nsize = [80]\nexclude = ['size >> 3']\n");
    let (l, c, k, m) = bad(&t);
    assert_eq!((l, k.as_str()), (line_of(&t, "exclude"), "sweep.exclude"));
    // `exclude = ['` is 12 characters; the second `>` is at offset 6.
    assert_eq!(c, 12 + 6 + 1, "{m}");
    assert!(m.contains("\"size >> 3\": at character 7"), "{m}");

    let t = format!("{BASE}\n[sweep]\nsize = [80]\nexclude = ['socket == \"raw\"']\n");
    let (_, c, _, m) = bad(&t);
    assert_eq!(c, 13, "{m}");
    assert!(
        m.contains("`socket` is not a sweep key; the sweep's keys are: size"),
        "{m}"
    );

    let t = format!("{BASE}\n[sweep]\nsize = [80]\nexclude = ['(size > 3']\n");
    assert!(bad(&t).3.contains("closing `)`"));
}

#[test]
fn placeholders_and_when_name_axes() {
    let emu =
        "[emulate]\nhost = \"tx\"\nifaces = [\"a\", \"b\"]\nstages = \"delay {emulate.delay}\"\n";
    let t = format!("{BASE}{emu}");
    let (l, c, k, m) = bad(&t);
    assert_eq!((l, k.as_str()), (line_of(&t, "stages"), "emulate.stages"));
    assert_eq!(c, 17, "{m}");
    assert!(
        m.contains("{emulate.delay} is not a sweep key; there is no [sweep]"),
        "{m}"
    );
    let t = format!("{BASE}{emu}\n[sweep]\n\"emulate.delay\" = [\"1ms\"]\n");
    ok(&t);

    let t = format!("{BASE}when = 'dir == \"h\"'\n");
    let (_, c, k, m) = bad(&t);
    assert_eq!((c, k.as_str()), (9, "flow.f.when"));
    assert!(m.contains("`dir` is not a sweep key"), "{m}");
    let t = format!("{BASE}when = 'dir == \"h\"'\n\n[sweep]\ndir = [\"h\", \"r\"]\n");
    ok(&t);

    let t = format!(
        "{BASE}send_args = [\"--padding\", \"{{pad}}\"]\n\n[sweep]\npad = [\"random\", \"0\"]\n"
    );
    ok(&t);
}

#[test]
fn emulate_and_capture_checks() {
    let t = format!("{BASE}[emulate]\nhost = \"tx\"\nifaces = [\"a\"]\nstages = \"delay 1ms\"\n");
    assert!(bad(&t).3.contains("two interfaces"));
    let t = format!("{BASE}[emulate]\nhost = \"tx\"\nifaces = [\"a\", \"b\"]\n");
    assert!(bad(&t).3.contains("missing: the link's stages"));
    let t = format!(
        "{BASE}[emulate]\nhost = \"tx\"\nifaces = [\"a\", \"b\"]\nstages = \"delay 1ms\"\na2b = \"loss 1%\"\n"
    );
    assert!(bad(&t).3.contains("not both"));
    let t = format!("{BASE}[capture]\nhosts = [\"rx\"]\n");
    let (_, _, k, m) = bad(&t);
    assert_eq!(k, "capture.hosts");
    assert!(m.contains("set hosts.rx.test_if or capture.ifaces"), "{m}");
    let t = format!("{BASE}[capture]\nhosts = [\"rx\"]\nifaces = [\"lo\"]\nsnaplen = 0\n");
    assert_eq!(bad(&t).2, "capture.snaplen");
    let t = format!("{BASE}[metrics]\nlisten = \"localhost\"\n");
    assert!(bad(&t).3.contains("ADDRESS:PORT"));
    let t = format!("{BASE}[[stressor]]\nhost = \"rx\"\n");
    assert!(bad(&t).3.contains("either preset or kind"));
    let t = format!("{BASE}[[stressor]]\nhost = \"rx\"\nkind = \"gpu\"\n");
    assert!(bad(&t).3.contains("cpu, get, cpu-rt"));
}

#[test]
fn stressor_keys_are_checked_for_their_kind() {
    let c = ok(&format!(
        "{BASE}[[stressor]]\nhost = \"rx\"\nkind = \"network\"\ntarget = \"tx\"\nrate = \"100Mbit\"\nsize = 1000\n"
    ));
    assert_eq!(c.stressors[0].target.as_deref(), Some("tx"));
    assert_eq!(c.stressors[0].rate.as_deref(), Some("100Mbit"));
    let cases = [
        (
            "kind = \"timer\"\nrate = \"fast\"\n",
            "stressor[1].rate",
            "1Hz to 1GHz",
        ),
        (
            "kind = \"network\"\nrate = \"1MHz\"\ntarget = \"tx\"\n",
            "stressor[1].rate",
            "bit rate",
        ),
        (
            "kind = \"network\"\n",
            "stressor[1].target",
            "needs target = HOST",
        ),
        (
            "kind = \"get\"\nload = 5\n",
            "stressor[1].load",
            "load is for cpu",
        ),
        (
            "kind = \"cpu\"\nio_cap = \"1Gbit\"\n",
            "stressor[1].io_cap",
            "io_cap is for hdd",
        ),
        (
            "kind = \"hdd\"\nio_cap = \"lots\"\n",
            "stressor[1].io_cap",
            "1Gbit",
        ),
        (
            "kind = \"cpu\"\ntarget = \"nope\"\n",
            "stressor[1].target",
            "unknown host",
        ),
        (
            "kind = \"cpu\"\nwhen = 'state == \"x\"'\n",
            "stressor[1].when",
            "`state` is not a sweep key",
        ),
        ("kind = \"cpu\"\nwhen = 'size =='\n", "stressor[1].when", ""),
    ];
    for (keys, key, msg) in cases {
        let t = format!("{BASE}[[stressor]]\nhost = \"rx\"\n{keys}");
        let (_, _, k, m) = bad(&t);
        assert_eq!(k, key, "{keys}: {m}");
        assert!(m.contains(msg), "{keys}: {m}");
    }
}

const LAB: &str = r#"[campaign]
name = "lab"

[lab]
namespaces = ["tx", "emu", "rx"]
links = [
  { a = "tx", b = "emu", a_addr = "198.18.1.1/24", mtu = 9000, ipv6 = false },
  { a = "emu", b = "rx", b_addr = "198.18.1.2/24", ipv6 = false },
]

[hosts]
tx = { transport = "lab:tx", test_if = "emu" }
emu = { transport = "lab:emu" }
rx = { transport = "lab:rx", test_if = "emu" }

[[flow]]
name = "f"
from = "tx"
to = "rx"

[emulate]
host = "emu"
ifaces = ["tx", "rx"]
stages = "delay 1ms"
"#;

#[test]
fn lab_section() {
    let c = ok(LAB);
    let lab = c.lab.as_ref().unwrap();
    assert_eq!(lab.namespaces, ["tx", "emu", "rx"]);
    assert_eq!(lab.links[0].mtu, Some(9000));
    assert!(!lab.links[1].ipv6);
    assert_eq!(c.host_mtu("tx"), Some(9000));
    assert_eq!(c.host_mtu("rx"), Some(DEFAULT_LINK_MTU));
    assert_eq!(
        c.host_mtu("emu"),
        Some(DEFAULT_LINK_MTU),
        "smallest of its links"
    );
    assert_eq!(c.test_addr("rx").as_deref(), Some("198.18.1.2"));
    assert_eq!(c.test_addr("emu"), None);

    let t = LAB.replace("transport = \"lab:rx\"", "transport = \"lab:rz\"");
    let (_, _, k, m) = bad(&t);
    assert_eq!(k, "hosts.rx.transport");
    assert!(
        m.contains("not a [lab] namespace; namespaces: tx, emu, rx"),
        "{m}"
    );
    let t = LAB.replace("ifaces = [\"tx\", \"rx\"]", "ifaces = [\"tx\", \"eth0\"]");
    let (_, _, k, m) = bad(&t);
    assert_eq!(k, "emulate.ifaces");
    assert!(m.contains("lab namespace emu links to: tx, rx"), "{m}");
    let t = LAB.replace("\"emu\", \"rx\"]", "\"emu\", \"receiver\"]");
    assert!(bad(&t).3.contains("1 to 6 lowercase"));
    let t = LAB.replace(
        "b = \"rx\", b_addr = \"198.18.1.2/24\"",
        "b = \"rx\", b_addr = \"198.18.1.2\"",
    );
    let (_, _, k, m) = bad(&t);
    assert_eq!(k, "lab.links[2].b_addr");
    assert!(m.contains("ADDRESS/PREFIX"), "{m}");
    let t = LAB.replace("a = \"emu\", b = \"rx\"", "a = \"emu\", b = \"zz\"");
    assert_eq!(bad(&t).2, "lab.links[2].b");
    let t = LAB.replace(
        "[lab]\n",
        "[lab]\nroutes = [{ ns = \"tx\", to = \"198.18.2.0/24\", via = \"x\" }]\n",
    );
    assert_eq!(bad(&t).2, "lab.routes[1].via");
    let t = LAB.replace(
        "[lab]\n",
        "[lab]\nsysctls = [{ ns = \"emu\", key = \"net.ipv4.ip_forward\", value = 1 }]\nroutes = [{ ns = \"tx\", to = \"default\", via = \"198.18.1.2\" }]\n",
    );
    let c = ok(&t);
    let lab = c.lab.unwrap();
    assert_eq!(lab.sysctls[0].value, "1");
    assert_eq!(lab.routes[0].to, "default");
    let t = LAB.replace(
        "transport = \"lab:tx\"",
        "transport = \"lab:tx\", test_if = \"rx\"",
    );
    assert!(bad(&t).1 > 0);
}

#[test]
fn integers_with_underscores_and_floats() {
    let t = format!("{BASE}count = 1_000\nquery = {{ every_packets = 0x10 }}\n");
    let c = ok(&t);
    assert_eq!(c.flows[0].count, Some(1000));
    assert_eq!(c.flows[0].query.every_packets, 16);
    let t = format!("{BASE}\n[sweep]\nsize = [80]\nload = [0.5, nan]\nexclude = ['load > 1']\n");
    let (_, _, k, m) = bad(&t);
    assert_eq!(k, "sweep.load");
    assert!(m.contains("changes nothing") || m.contains("finite"), "{m}");
}

#[test]
fn load_reads_a_file() {
    let dir = std::env::temp_dir().join(format!("wirelab-ctl-load-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join("c.toml");
    std::fs::write(&p, BASE).unwrap();
    let (c, text) = load(&p).unwrap();
    assert_eq!(text, BASE);
    assert_eq!(c.campaign.name, "t");
    std::fs::write(&p, format!("{BASE}count = 0\n")).unwrap();
    let e = load(&p).unwrap_err().to_string();
    assert!(
        e.starts_with(&format!("{}:12:9: flow.f.count:", p.display())),
        "{e}"
    );
    let e = load(&dir.join("missing.toml")).unwrap_err().to_string();
    assert!(e.starts_with("cannot read control file"), "{e}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn placeholder_scan() {
    let v: Vec<_> = placeholders("delay {emulate.delay} {x} {} {a b} {y").collect();
    assert_eq!(v, [("emulate.delay", 6), ("x", 22)]);
    let s = substitute("delay {d} 50us {{d}}", |k| (k == "d").then(|| "5ms".into())).unwrap();
    assert_eq!(s, "delay 5ms 50us {5ms}");
    assert_eq!(substitute("{q}", |_| None), Err("q"));
}

#[test]
fn never_panics_on_odd_input() {
    for t in [
        "",
        "[[campaign]]\nname = 1",
        "campaign = 3",
        "[hosts]\nx = 3",
        "[campaign]\nname = \"x\"\n[hosts]\n",
        "[campaign]\nname = \"x\"\n[hosts]\nx = { transport = \"local\" }\nflow = 3",
        "[campaign]\nname = \"x\"\n[hosts]\nx = { transport = \"local\" }\nflow = [1]",
        "\u{feff}[campaign]",
        "[campaign]\nname = \"é\"",
        "[campaign]\nname = 1979-05-27",
    ] {
        assert!(parse("c.toml", t).is_err(), "{t}");
    }
}

#[test]
fn search_names_a_swept_axis_and_needs_sequential_order() {
    let base = |sweep: &str, order: &str| {
        format!(
            "[campaign]\nname = \"s\"\norder = \"{order}\"\n[hosts]\na = {{ transport = \"local\" }}\n\
             [[flow]]\nname = \"f\"\nfrom = \"a\"\nto = \"a\"\ncount = 10\n[sweep]\n{sweep}\n"
        )
    };
    let ok = parse(
        "c.toml",
        &base(
            "interval = [\"1ms\", \"2ms\"]\nsearch = { axis = \"interval\", lossfree = 2 }",
            "sequential",
        ),
    )
    .unwrap();
    assert_eq!(
        ok.sweep.search,
        Some(Search {
            axis: "interval".into(),
            lossfree: 2
        })
    );
    let e = parse(
        "c.toml",
        &base(
            "interval = [\"1ms\"]\nsearch = { axis = \"size\", lossfree = 2 }",
            "sequential",
        ),
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("search.axis") && e.contains("not a sweep key"),
        "{e}"
    );
    let e = parse(
        "c.toml",
        &base(
            "interval = [\"1ms\"]\nsearch = { axis = \"interval\", lossfree = 2 }",
            "shuffled",
        ),
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("sequential"), "{e}");
    let e = parse(
        "c.toml",
        &base(
            "interval = [\"1ms\"]\nsearch = { axis = \"interval\" }",
            "sequential",
        ),
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("lossfree"), "{e}");
}

#[test]
fn env_settings_are_checked_as_wirelab_env_checks_them() {
    let c = ok(&format!(
        "{BASE}[env]\napply.rx = {{ mtu = 9000, eee = false, \"net.core.rmem_max\" = 26214400 }}\n"
    ));
    let rx = &c.env.unwrap().apply["rx"];
    assert_eq!(rx.len(), 3);
    for (setting, says) in [
        (
            "speed = 1000",
            "unknown setting \"speed\"; known: mtu, rings",
        ),
        ("mtu = 20", "from 68 to 65535"),
        ("eee = \"maybe\"", "give on or off"),
    ] {
        let t = format!("{BASE}[env]\napply.rx = {{ {setting} }}\n");
        let (l, c, k, m) = bad(&t);
        let key = setting.split(' ').next().unwrap();
        assert_eq!(
            (l, c, k.as_str()),
            (line_of(&t, "apply.rx"), 14, &*format!("env.apply.rx.{key}"))
        );
        assert!(m.contains(says), "{m}");
    }
}

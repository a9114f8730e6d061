use super::*;
use crate::control::{parse, QueryMode};

const REFERENCE: &str = include_str!("../../../../examples/run/reference.toml");

fn reference() -> Control {
    parse("reference.toml", REFERENCE).unwrap()
}

fn sets(v: &[(&str, &str)]) -> Vec<(String, String)> {
    v.iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn params(v: &[(&str, Value)]) -> BTreeMap<String, Value> {
    v.iter().map(|(k, v)| (k.to_string(), v.clone())).collect()
}

fn s(x: &str) -> Value {
    Value::Str(x.into())
}

#[test]
fn reference_gives_336_points_and_24_exclusions() {
    let p = plan(&reference(), None, &[]).unwrap();
    assert_eq!(p.combinations, 360);
    assert_eq!(p.points.len(), 336);
    assert_eq!(p.excluded.len(), 24);
    assert_eq!(p.filtered, 0);
    for e in &p.excluded {
        assert_eq!(e.reason, r#"socket != "udp" && size > 8972"#);
        assert_eq!(e.params["size"], Value::Int(65000));
        assert_ne!(e.params["socket"], s("udp"));
    }
    let indices: Vec<usize> = p.points.iter().map(|p| p.index).collect();
    assert_eq!(indices, (0..336).collect::<Vec<_>>());
    let ids: HashSet<&str> = p.points.iter().map(|p| p.id.as_str()).collect();
    assert_eq!(ids.len(), 336, "ids are unique");
    assert!(p
        .points
        .iter()
        .all(|p| p.id.len() == 16 && p.repetition == 0));
}

#[test]
fn sequential_order_is_the_cartesian_product_in_file_order() {
    let p = plan(
        &reference(),
        None,
        &sets(&[("campaign.order", "sequential")]),
    )
    .unwrap();
    let first: Vec<String> = p.points[..3]
        .iter()
        .map(|p| params_text(&p.params))
        .collect();
    assert_eq!(
        first,
        [
            "dscp=0 emulate.delay=0ms interval=0us size=80 socket=udp",
            "dscp=0 emulate.delay=5ms interval=0us size=80 socket=udp",
            "dscp=46 emulate.delay=0ms interval=0us size=80 socket=udp",
        ]
    );
    let last = &p.points[335].params;
    assert_eq!(
        params_text(last),
        "dscp=46 emulate.delay=5ms interval=100us size=65000 socket=udp"
    );
}

#[test]
fn shuffled_order_is_stable_for_a_seed() {
    let c = reference();
    let a = plan(&c, None, &[]).unwrap();
    let b = plan(&c, None, &[]).unwrap();
    assert_eq!(a, b);
    let other = plan(&c, None, &sets(&[("campaign.seed", "8")])).unwrap();
    let ids = |p: &Plan| p.points.iter().map(|x| x.id.clone()).collect::<Vec<_>>();
    assert_ne!(ids(&a), ids(&other), "another seed, another order");
    let mut x = ids(&a);
    let mut y = ids(&other);
    x.sort();
    y.sort();
    assert_eq!(x, y, "the same points");
    // The order for seed 7 is fixed forever: a change in the shuffle or the
    // generator would reorder resumed campaigns.
    assert_eq!(
        ids(&a)[..3],
        ["e9052373ebda334a", "49250b1882501ead", "5930a8e8208f30a4"]
    );
}

#[test]
fn point_ids_are_stable() {
    let p = params(&[
        ("size", Value::Int(80)),
        ("interval", s("10us")),
        ("socket", s("udp")),
        ("dscp", Value::Int(46)),
        ("emulate.delay", s("5ms")),
    ]);
    assert_eq!(point_id(&p, 0), "6ad3e91b1ea08d11");
    assert_ne!(point_id(&p, 0), point_id(&p, 1));
    // Types count: the number 80 and the string "80" are different points.
    let q = params(&[("size", s("80"))]);
    let r = params(&[("size", Value::Int(80))]);
    assert_ne!(point_id(&q, 0), point_id(&r, 0));
    assert_eq!(point_id(&BTreeMap::new(), 0).len(), 16);
    // The id of a point in a plan is the function of its parameters.
    let pl = plan(&reference(), None, &[]).unwrap();
    let pt = pl.points.iter().find(|x| x.params == p).unwrap();
    assert_eq!(pt.id, point_id(&p, 0));
}

#[test]
fn repetitions_are_rounds_with_their_own_ids() {
    let c = reference();
    let p = plan(
        &c,
        None,
        &sets(&[
            ("campaign.repetitions", "2"),
            ("campaign.order", "sequential"),
        ]),
    )
    .unwrap();
    assert_eq!(p.points.len(), 672);
    assert_eq!(p.excluded.len(), 24, "excluded once per combination");
    assert!(p.points[..336].iter().all(|x| x.repetition == 0));
    assert!(p.points[336..].iter().all(|x| x.repetition == 1));
    assert_eq!(p.points[0].params, p.points[336].params);
    assert_ne!(p.points[0].id, p.points[336].id);
}

#[test]
fn set_replaces_an_axis_or_a_scalar() {
    let c = reference();
    let p = plan(&c, None, &sets(&[("socket", "raw"), ("size", "\"8080\"")])).unwrap();
    assert_eq!(p.combinations, 3 * 2 * 2);
    assert!(p.points.iter().all(|x| x.params["socket"] == s("raw")));
    assert!(p.points.iter().all(|x| x.params["size"] == s("8080")));

    let p = plan(
        &c,
        None,
        &sets(&[("flow.sut.duration", "2s"), ("campaign.seed", "9")]),
    )
    .unwrap();
    assert_eq!(p.campaign.seed, 9);
    assert_eq!(p.axes.last().unwrap().key, "flow.sut.duration");
    let pt = &p.points[0];
    assert_eq!(pt.params["flow.sut.duration"], s("2s"));
    let r = resolve(&c, pt).unwrap();
    assert_eq!(r.flows[0].duration, Some(2_000_000_000));

    let p = plan(
        &c,
        None,
        &sets(&[("campaign.settle", "1s"), ("campaign.pause", "0")]),
    )
    .unwrap();
    assert_eq!(
        (p.campaign.settle_ns, p.campaign.pause_ns),
        (1_000_000_000, 0)
    );

    let e = plan(&c, None, &sets(&[("colour", "red")])).unwrap_err();
    let m = e.to_string();
    assert!(m.starts_with("--set colour: changes nothing"), "{m}");
    assert!(m.contains("campaign.seed, campaign.repetitions"), "{m}");
    assert!(m.contains("emulate.delay"), "{m}");
    assert!(m.contains("flow.NAME.KEY with NAME one of sut"), "{m}");

    for (k, v, want) in [
        ("dscp", "64", "0 to 63"),
        ("socket", "tcp", "\"udp\", \"raw\" or \"packet\""),
        ("campaign.seed", "x", "integer"),
        ("campaign.repetitions", "0", "1 to 1000000"),
        ("campaign.order", "random", "sequential or shuffled"),
        ("campaign.settle", "5", "needs a unit"),
        ("flow.nope.size", "80", "no flow is named \"nope\""),
        ("campaign.name", "x", "--set takes campaign.seed"),
        ("rate", "1kpps", "both an interval"),
    ] {
        let e = plan(&c, None, &sets(&[(k, v)])).unwrap_err();
        assert!(matches!(&e, PlanError::Set { key, .. } if key == k), "{e}");
        assert!(e.to_string().contains(want), "{k}={v}: {e}");
    }
}

#[test]
fn set_values_parse_like_toml_scalars() {
    assert_eq!(parse_set_value("80"), Value::Int(80));
    assert_eq!(parse_set_value("-3"), Value::Int(-3));
    assert_eq!(parse_set_value("2.5"), Value::Float(2.5));
    assert_eq!(parse_set_value("true"), Value::Bool(true));
    assert_eq!(parse_set_value("10us"), s("10us"));
    assert_eq!(parse_set_value("\"80\""), s("80"));
    assert_eq!(parse_set_value("'a b'"), s("a b"));
    assert_eq!(parse_set_value("\""), s("\""));
    assert_eq!(parse_set_value("1e3"), Value::Float(1000.0));
    assert_eq!(parse_set_value("inf"), s("inf"));
}

#[test]
fn only_narrows_before_exclusions() {
    let c = reference();
    let only = Expr::parse("size == 65000 && dscp == 0").unwrap();
    let p = plan(&c, Some(&only), &[]).unwrap();
    assert_eq!(p.filtered, 360 - 18);
    assert_eq!(p.excluded.len(), 12);
    assert_eq!(p.points.len(), 6);
    let bad = Expr::parse("sise == 1").unwrap();
    let e = plan(&c, Some(&bad), &[]).unwrap_err();
    assert_eq!(
        e.to_string(),
        "--only \"sise == 1\": at character 1: `sise` is not a sweep key; the sweep's keys are: \
         size, interval, socket, dscp, emulate.delay"
    );
    let typed = Expr::parse("socket > 3").unwrap();
    let e = plan(&c, Some(&typed), &[]).unwrap_err();
    assert!(e.to_string().contains("cannot order"), "{e}");
}

#[test]
fn exclusion_that_cannot_be_evaluated_is_an_error() {
    let t = REFERENCE.replace(
        r#"exclude = ['socket != "udp" && size > 8972']"#,
        r#"exclude = ['socket > 1']"#,
    );
    let c = parse("r.toml", &t).unwrap();
    let e = plan(&c, None, &[]).unwrap_err();
    let m = e.to_string();
    assert!(
        m.starts_with("exclude \"socket > 1\" at point dscp=0"),
        "{m}"
    );
    assert!(
        m.contains("cannot order \"udp\" (string) and 1 (number)"),
        "{m}"
    );
}

const LAB: &str = r#"[campaign]
name = "auto"

[lab]
namespaces = ["a", "b"]
links = [{ a = "a", b = "b", a_addr = "198.18.0.1/24", b_addr = "198.18.0.2/24" }]

[hosts]
a = { transport = "lab:a" }
b = { transport = "lab:b" }

[[flow]]
name = "f"
from = "a"
to = "b"

[sweep]
size = [1000, 1472, 1473, 9000]
socket = ["udp", "raw", "packet"]
"#;

#[test]
fn raw_and_packet_sizes_above_the_mtu_are_excluded() {
    let c = parse("lab.toml", LAB).unwrap();
    let p = plan(&c, None, &[]).unwrap();
    assert_eq!(
        (p.combinations, p.points.len(), p.excluded.len()),
        (12, 8, 4)
    );
    let reasons: Vec<String> = p
        .excluded
        .iter()
        .map(|e| format!("{} {}: {}", e.params["size"], e.params["socket"], e.reason))
        .collect();
    assert_eq!(
        reasons,
        [
            "1473 raw: socket raw cannot fragment: size 1473 > MTU 1500 − 28",
            "1473 packet: socket packet cannot fragment: size 1473 > MTU 1500 − 28",
            "9000 raw: socket raw cannot fragment: size 9000 > MTU 1500 − 28",
            "9000 packet: socket packet cannot fragment: size 9000 > MTU 1500 − 28",
        ]
    );
    // A host MTU says otherwise; a distribution of sizes is left to `send`.
    let t = LAB.replace("\"lab:a\" }", "\"lab:a\", mtu = 9000 }");
    let p = plan(&parse("lab.toml", &t).unwrap(), None, &[]).unwrap();
    assert_eq!(p.excluded.len(), 2);
    assert!(p.excluded[0].reason.ends_with("size 9000 > MTU 9000 − 28"));
    let t = LAB.replace("[1000, 1472, 1473, 9000]", "[\"uniform:64,9000\"]");
    let p = plan(&parse("lab.toml", &t).unwrap(), None, &[]).unwrap();
    assert_eq!(p.excluded.len(), 0);
}

const DIRECTIONS: &str = r#"[campaign]
name = "dir"

[hosts]
c = { transport = "local", addr = "127.0.0.1" }
e = { transport = "local", addr = "127.0.0.1", mtu = 1500 }

[[flow]]
name = "h"
from = "c"
to = "e"
when = 'direction == "h"'
port = 5001

[[flow]]
name = "r"
from = "e"
to = "c"
count = 500
when = 'direction == "r"'
send_args = ["--padding", "{pad}"]
port = 5002

[sweep]
direction = ["h", "r", "none"]
pad = ["random"]
size = [80, 9000]
socket = ["udp", "raw"]
"#;

#[test]
fn when_selects_flows_and_names_the_flow_in_reasons() {
    let c = parse("d.toml", DIRECTIONS).unwrap();
    let p = plan(&c, None, &sets(&[("campaign.order", "sequential")])).unwrap();
    assert_eq!(p.combinations, 12);
    // "none": 4 without a flow; raw 9000 from e (MTU 1500): 1 more.
    assert_eq!(p.excluded.len(), 5);
    let none: Vec<&Excluded> = p
        .excluded
        .iter()
        .filter(|e| e.params["direction"] == s("none"))
        .collect();
    assert_eq!(none.len(), 4);
    assert_eq!(none[0].reason, "no flow runs: every flow's `when` is false");
    let mtu: Vec<&Excluded> = p
        .excluded
        .iter()
        .filter(|e| e.params["direction"] != s("none"))
        .collect();
    assert_eq!(
        mtu[0].reason,
        "flow r: socket raw cannot fragment: size 9000 > MTU 1500 − 28"
    );
    assert_eq!(mtu[0].params["direction"], s("r"));
    let pt = p
        .points
        .iter()
        .find(|x| x.params["direction"] == s("r") && x.params["socket"] == s("udp"))
        .unwrap();
    let r = resolve(&c, pt).unwrap();
    assert_eq!(r.flows.len(), 1);
    let f = &r.flows[0];
    assert_eq!(f.name, "r");
    assert_eq!(f.send_args, ["--padding", "random"]);
    assert_eq!(
        (f.count, f.duration),
        (Some(500), None),
        "count alone stays alone"
    );
    let pt = p
        .points
        .iter()
        .find(|x| x.params["direction"] == s("h"))
        .unwrap();
    let r = resolve(&c, pt).unwrap();
    assert_eq!(r.flows[0].name, "h");
    assert_eq!(
        r.flows[0].duration,
        Some(DEFAULT_DURATION_NS),
        "the default"
    );
}

#[test]
fn resolve_substitutes_every_flow_and_the_stages() {
    let c = reference();
    let p = plan(&c, None, &[]).unwrap();
    let want = params(&[
        ("size", Value::Int(4080)),
        ("interval", s("10us")),
        ("socket", s("packet")),
        ("dscp", Value::Int(46)),
        ("emulate.delay", s("5ms")),
    ]);
    let pt = p.points.iter().find(|x| x.params == want).unwrap();
    let r = resolve(&c, pt).unwrap();
    let f = &r.flows[0];
    assert_eq!(f.size.as_deref(), Some("4080"));
    assert_eq!(f.interval.as_deref(), Some("10us"));
    assert_eq!(f.socket, SocketKind::Packet);
    assert_eq!(f.dscp, Some(46));
    assert_eq!(f.duration, Some(60_000_000_000));
    assert_eq!(f.query.mode, QueryMode::Control);
    let e = r.emulate.unwrap();
    assert_eq!(e.stages.as_deref(), Some("delay 5ms 50us"));
    assert_eq!(
        c.emulate.as_ref().unwrap().stages.as_deref(),
        Some("delay {emulate.delay} 50us")
    );
    assert_eq!(r.capture.unwrap().hosts, ["emu"]);

    // flow.NAME.KEY wins over the key for every flow.
    let mut q = pt.clone();
    q.params.insert("flow.sut.size".into(), Value::Int(200));
    assert_eq!(
        resolve(&c, &q).unwrap().flows[0].size.as_deref(),
        Some("200")
    );

    // A point that does not belong to this file.
    let mut q = pt.clone();
    q.params.insert("colour".into(), s("red"));
    let e = resolve(&c, &q).unwrap_err().to_string();
    assert!(e.contains("colour: changes nothing"), "{e}");
    let mut q = pt.clone();
    q.params.insert("socket".into(), s("tcp"));
    assert!(resolve(&c, &q)
        .unwrap_err()
        .to_string()
        .contains("socket: a socket is"));
    let mut q = pt.clone();
    q.params.remove("emulate.delay");
    let e = resolve(&c, &q).unwrap_err().to_string();
    assert!(
        e.contains("{emulate.delay} in \"delay {emulate.delay} 50us\" is not a parameter"),
        "{e}"
    );
}

#[test]
fn stages_are_checked_for_every_point() {
    let t = REFERENCE.replace(r#"["0ms", "5ms"]"#, r#"["0ms", "fast"]"#);
    let c = parse("r.toml", &t).unwrap();
    let e = plan(&c, None, &[]).unwrap_err().to_string();
    assert!(e.contains("emulator stages \"delay fast 50us\""), "{e}");
}

/// Axes of 10 values each, `n` of them.
fn wide(n: usize) -> Control {
    let mut t = String::from(
        "[campaign]\nname = \"wide\"\norder = \"shuffled\"\n[hosts]\na = { transport = \"local\" }\n\
         [[flow]]\nname = \"f\"\nfrom = \"a\"\nto = \"a\"\nsend_args = [",
    );
    let keys: Vec<String> = (0..n).map(|i| format!("p{i}")).collect();
    t.push_str(
        &keys
            .iter()
            .map(|k| format!("\"--x={{{k}}}\""))
            .collect::<Vec<_>>()
            .join(", "),
    );
    t.push_str("]\n[sweep]\n");
    for k in &keys {
        t.push_str(&format!("{k} = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]\n"));
    }
    parse("wide.toml", &t).unwrap()
}

#[test]
fn ten_thousand_points() {
    let p = plan(&wide(4), None, &[]).unwrap();
    assert_eq!((p.combinations, p.points.len()), (10_000, 10_000));
    let report = PlanReport::new(&wide(4), &p);
    assert_eq!(report.point_count, 10_000);
}

#[test]
fn more_than_a_million_points_is_refused() {
    let c = wide(7);
    let e = plan(&c, None, &[]).unwrap_err();
    assert!(matches!(
        e,
        PlanError::TooMany {
            combinations: 10_000_000,
            repetitions: 1
        }
    ));
    assert!(e
        .to_string()
        .contains("more than 1000000 points: narrow the sweep"));
    // Narrowed by --set it is fine.
    let p = plan(
        &c,
        None,
        &sets(&[("p0", "1"), ("p1", "2"), ("p2", "3"), ("p3", "4")]),
    )
    .unwrap();
    assert_eq!(p.points.len(), 1000);
    let e = plan(&wide(3), None, &sets(&[("campaign.repetitions", "1001")])).unwrap_err();
    assert!(matches!(
        e,
        PlanError::TooMany {
            combinations: 1000,
            repetitions: 1001
        }
    ));
}

#[test]
fn report_and_text() {
    let c = reference();
    let p = plan(&c, None, &[]).unwrap();
    let r = PlanReport::new(&c, &p);
    let j = serde_json::to_value(&r).unwrap();
    assert_eq!(j["schema"], "wirelab.run.plan/1");
    assert_eq!(j["combinations"], 360);
    assert_eq!(j["point_count"], 336);
    assert_eq!(j["excluded_count"], 24);
    assert_eq!(j["campaign"]["settle_ns"], 5_000_000_000u64);
    assert_eq!(j["campaign"]["order"], "shuffled");
    assert_eq!(j["hosts"], serde_json::json!(["emu", "rx", "tx"]));
    assert_eq!(j["flows"], serde_json::json!(["sut"]));
    assert_eq!(j["points"][0]["index"], 0);
    assert_eq!(j["excluded"][0]["params"]["size"], 65000);
    assert_eq!(
        j["excluded"][0]["reason"],
        r#"socket != "udp" && size > 8972"#
    );
    let back: PlanReport = serde_json::from_value(j).unwrap();
    assert_eq!(back, r);

    let text = plan_text(&c, &p);
    let mut lines = text.lines();
    assert_eq!(
        lines.next().unwrap(),
        "campaign dtss-lab: 360 combinations, 24 excluded, 336 points (1 repetition, shuffled with seed 7)"
    );
    assert_eq!(lines.next().unwrap(), "");
    assert_eq!(
        lines.next().unwrap(),
        "index  id                size   interval  socket  dscp  emulate.delay"
    );
    let row = lines.next().unwrap();
    assert!(
        row.starts_with(&format!("    0  {}  ", p.points[0].id)),
        "{row}"
    );
    let is_id = |t: &str| t.len() == 16 && t.bytes().all(|b| b.is_ascii_hexdigit());
    let rows = text
        .lines()
        .filter(|l| l.split_whitespace().nth(1).is_some_and(is_id))
        .count();
    assert_eq!(rows, 336);
    assert!(text.contains(
        "\nexcluded (24):\n  size=65000 interval=0us socket=raw dscp=0 emulate.delay=0ms: socket != \"udp\" && size > 8972\n"
    ), "{text}");

    let only = Expr::parse("size == 80 && interval == \"0us\" && dscp == 0").unwrap();
    let p = plan(&c, Some(&only), &sets(&[("campaign.repetitions", "2")])).unwrap();
    let text = plan_text(&c, &p);
    assert!(text.starts_with(
        "campaign dtss-lab: 360 combinations, 0 excluded, 354 left out by --only, 12 points (2 repetitions, shuffled with seed 7)\n"
    ), "{text}");
    assert!(
        text.contains("\nindex  id                rep  size"),
        "{text}"
    );
}

#[test]
fn no_sweep_is_one_point_per_repetition() {
    let t = "[campaign]\nname = \"one\"\nrepetitions = 3\n[hosts]\na = { transport = \"local\" }\n\
             [[flow]]\nname = \"f\"\nfrom = \"a\"\nto = \"a\"\n";
    let c = parse("one.toml", t).unwrap();
    let p = plan(&c, None, &[]).unwrap();
    assert_eq!((p.combinations, p.points.len()), (1, 3));
    assert!(p.points.iter().all(|x| x.params.is_empty()));
    let text = plan_text(&c, &p);
    assert!(text.contains("index  id                rep\n"), "{text}");
}

/// Every example control file parses and plans; the expected sizes are the
/// ones docs/run.md shows.
#[test]
fn examples_parse_and_plan() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/run");
    let mut seen = Vec::new();
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().and_then(|e| e.to_str()) != Some("toml") {
            continue;
        }
        let (c, _) = crate::control::load(&path).unwrap_or_else(|e| panic!("{e}"));
        let p = plan(&c, None, &[]).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        for pt in &p.points {
            resolve(&c, pt).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        }
        let name = path.file_stem().unwrap().to_string_lossy().into_owned();
        seen.push((name, p.combinations, p.points.len(), p.excluded.len()));
    }
    seen.sort();
    let want: Vec<(String, u64, usize, usize)> = vec![
        ("dtss-dscp".into(), 33, 27, 6),
        ("dtss-isolated".into(), 24, 24, 0),
        ("dtss-latency".into(), 60, 56, 4),
        ("dtss-realistic".into(), 33, 27, 6),
        ("dtss-star".into(), 3, 3, 0),
        ("luna-concurrent".into(), 4, 4, 0),
        ("luna-sweep".into(), 27, 27, 0),
        ("quickstart".into(), 6, 6, 0),
        ("reference".into(), 360, 336, 24),
        ("search-limit".into(), 6, 6, 0),
    ];
    assert_eq!(seen, want);
}

#[test]
fn odometer_turns_the_last_axis_fastest_and_wraps() {
    let axis = |key: &str, n: i64| Axis {
        key: key.into(),
        values: (0..n).map(Value::Int).collect(),
    };
    let axes = [axis("a", 2), axis("b", 3)];
    let mut digits = vec![0, 0];
    let mut seen = vec![digits.clone()];
    for _ in 1..6 {
        next_combination(&mut digits, &axes);
        seen.push(digits.clone());
    }
    let want: Vec<Vec<usize>> = [[0, 0], [0, 1], [0, 2], [1, 0], [1, 1], [1, 2]]
        .iter()
        .map(|d| d.to_vec())
        .collect();
    assert_eq!(seen, want);
    next_combination(&mut digits, &axes);
    assert_eq!(digits, [0, 0], "past the last combination it wraps");

    assert!(matches!(count_combinations(&axes, 1000), Ok(6)));
    let huge = vec![axis("x", 1 << 16); 9]; // 2^144 overflows u128
    assert!(matches!(
        count_combinations(&huge, 1),
        Err(PlanError::TooMany { combinations, .. }) if combinations == u128::MAX
    ));
}

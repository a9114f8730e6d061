//! Reading each section of a control file into its typed value, with the
//! checks that need the rest of the file (known hosts, lab namespaces,
//! sweep keys).

use std::collections::BTreeMap;
use std::net::{IpAddr, SocketAddr};

use toml::de::DeTable;

use super::keys::{
    check_axis_value, check_pacing, placeholders, FlowKey, MANAGED_RECV, MANAGED_SEND,
};
use super::reader::{self, At, Src, Tbl};
use super::schema;
use super::*;
use crate::expr::{Expr, Value};
use wirelab_host::stress::{StressKind, StressPreset};

/// A flow's parsed `when` with the string it came from.
type When = Option<(Expr, At<String>)>;
/// A string that may hold placeholders: its dotted key and the string.
type Source = (String, Option<At<String>>);

/// Reads a whole document.
pub(super) fn document(src: &Src) -> Result<Control, ControlError> {
    let doc = DeTable::parse(src.text).map_err(|e| {
        let off = e.span().map_or(0, |s| s.start);
        src.err(off, "", e.message().trim_end().replace('\n', "; "))
    })?;
    let root = Tbl::root(src, &doc);
    root.only(&schema::top_level())?;
    let campaign = read_campaign(&root)?;
    let lab = root.table("lab")?.map(|t| read_lab(&t)).transpose()?;
    let hosts = read_hosts(&root, lab.as_ref())?;
    let flows = read_flows(&root, &hosts)?;
    let mut c = Control {
        campaign,
        hosts,
        lab,
        flows,
        sweep: Sweep::default(),
        emulate: None,
        capture: None,
        stressors: Vec::new(),
        env: None,
        metrics: None,
    };
    c.emulate = root
        .table("emulate")?
        .map(|t| read_emulate(&t, &c))
        .transpose()?;
    c.capture = root
        .table("capture")?
        .map(|t| read_capture(&t, &c))
        .transpose()?;
    c.stressors = root
        .tables("stressor")?
        .iter()
        .map(|t| read_stressor(t, &c))
        .collect::<Result<_, _>>()?;
    c.env = root.table("env")?.map(|t| read_env(&t, &c)).transpose()?;
    c.metrics = root
        .table("metrics")?
        .map(|t| read_metrics(&t))
        .transpose()?;
    let sweep = root.table("sweep")?;
    let when = read_whens(&root, &c)?;
    if let Some(t) = &sweep {
        c.sweep = read_sweep(t, &c)?;
    }
    check_params(&root, sweep.as_ref(), &c, &when)?;
    check_stressor_whens(&root, &c)?;
    Ok(c)
}

/// A stressor's `when` names sweep keys only.
fn check_stressor_whens(root: &Tbl, c: &Control) -> Result<(), ControlError> {
    let axes: Vec<&str> = c.sweep.axes.iter().map(|a| a.key.as_str()).collect();
    for t in root.tables("stressor")? {
        let Some(w) = t.str("when")? else { continue };
        let e = Expr::parse(&w.v).expect("checked in read_stressor");
        for (v, pos) in e.variables() {
            if !axes.contains(&v) {
                return Err(t.err(
                    t.src.offset_in_string(&w.span, &w.v, pos),
                    "when",
                    format!(
                        "`{v}` is not a sweep key; the sweep's keys are: {}",
                        axes.join(", ")
                    ),
                ));
            }
        }
    }
    Ok(())
}

fn valid_name(s: &str, dot: bool) -> bool {
    !s.is_empty()
        && s.len() <= 64
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-' || (dot && b == b'.'))
}

fn read_campaign(root: &Tbl) -> Result<Campaign, ControlError> {
    let Some(t) = root.table("campaign")? else {
        return Err(root.missing(
            "campaign",
            "a [campaign] table with at least name = \"...\"",
        ));
    };
    t.only(&schema::CAMPAIGN.names())?;
    let name = t.req_str(
        "name",
        "the campaign's name (it names the results directory)",
    )?;
    if !valid_name(&name.v, true) {
        return Err(t.err(
            name.span.start,
            "name",
            "use 1 to 64 letters, digits, '.', '_' or '-' (it names the results directory)",
        ));
    }
    let order = match t.str("order")? {
        None => Order::Sequential,
        Some(o) => Order::parse(&o.v).ok_or_else(|| {
            t.err(
                o.span.start,
                "order",
                format!("{:?}: use \"sequential\" or \"shuffled\"", o.v),
            )
        })?,
    };
    Ok(Campaign {
        name: name.v,
        description: t.str("description")?.map(|a| a.v),
        order,
        seed: t.int("seed", 0, i64::MAX as u64)?.map_or(1, |a| a.v),
        repetitions: t
            .int("repetitions", 1, 1_000_000)?
            .map_or(1, |a| a.v as u32),
        settle_ns: t.duration("settle")?.map_or(0, |a| a.v),
        pause_ns: t.duration("pause")?.map_or(0, |a| a.v),
        owd_uncertainty_max_ns: t
            .duration("owd_uncertainty_max")?
            .map_or(super::OWD_UNCERTAINTY_MAX_NS, |a| a.v),
    })
}

fn parse_cidr(s: &str) -> bool {
    s.split_once('/').is_some_and(|(a, p)| {
        a.parse::<IpAddr>().is_ok_and(|ip| {
            p.parse::<u8>()
                .is_ok_and(|p| p <= if ip.is_ipv4() { 32 } else { 128 })
        })
    })
}

fn read_lab(t: &Tbl) -> Result<LabSpec, ControlError> {
    t.only(&schema::LAB.names())?;
    let namespaces = read_lab_namespaces(t)?;
    let link_tables = t.tables("links")?;
    if link_tables.len() > 36 {
        return Err(t.err(
            link_tables[36].span.start,
            "links",
            "a lab has at most 36 links",
        ));
    }
    let links = link_tables
        .iter()
        .map(|l| read_lab_link(l, &namespaces))
        .collect::<Result<_, _>>()?;
    let routes = t
        .tables("routes")?
        .iter()
        .map(|r| read_lab_route(r, &namespaces))
        .collect::<Result<_, _>>()?;
    let sysctls = t
        .tables("sysctls")?
        .iter()
        .map(|s| read_lab_sysctl(s, &namespaces))
        .collect::<Result<_, _>>()?;
    Ok(LabSpec {
        namespaces,
        links,
        routes,
        sysctls,
    })
}

/// The lab's namespaces: at least one, each 1 to 6 lowercase letters or
/// digits (they prefix interface names, which the kernel caps at 15), none
/// twice.
fn read_lab_namespaces(t: &Tbl) -> Result<Vec<String>, ControlError> {
    let ns_list = t.strings("namespaces")?;
    if ns_list.is_empty() {
        return Err(t.missing("namespaces", "the lab's namespaces, e.g. [\"tx\", \"rx\"]"));
    }
    let mut namespaces: Vec<String> = Vec::new();
    for n in ns_list {
        if !valid_lab_ns(&n.v) {
            return Err(t.err(
                n.span.start,
                "namespaces",
                format!(
                    "{:?}: a lab namespace is 1 to 6 lowercase letters or digits",
                    n.v
                ),
            ));
        }
        if namespaces.contains(&n.v) {
            return Err(t.err(
                n.span.start,
                "namespaces",
                format!("{:?} is listed twice", n.v),
            ));
        }
        namespaces.push(n.v);
    }
    Ok(namespaces)
}

fn valid_lab_ns(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 6
        && s.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
}

/// `a` names one of the lab's namespaces.
fn known_lab_ns(
    t: &Tbl,
    key: &str,
    a: &At<String>,
    namespaces: &[String],
) -> Result<(), ControlError> {
    if namespaces.contains(&a.v) {
        return Ok(());
    }
    Err(t.err(
        a.span.start,
        key,
        format!(
            "{:?} is not a lab namespace; namespaces: {}",
            a.v,
            namespaces.join(", ")
        ),
    ))
}

/// One `[[lab.links]]`: two different known namespaces, optional addresses,
/// and interface names for both ends or neither.
fn read_lab_link(l: &Tbl, namespaces: &[String]) -> Result<LabLink, ControlError> {
    l.only(&schema::LAB_LINK.names())?;
    let a = l.req_str("a", "the namespace at one end")?;
    let b = l.req_str("b", "the namespace at the other end")?;
    known_lab_ns(l, "a", &a, namespaces)?;
    known_lab_ns(l, "b", &b, namespaces)?;
    if a.v == b.v {
        return Err(l.err(b.span.start, "b", "a link joins two different namespaces"));
    }
    let (a_if, b_if) = (lab_link_ifname(l, "a_if")?, lab_link_ifname(l, "b_if")?);
    if a_if.is_some() != b_if.is_some() {
        return Err(l.err(
            l.span.start,
            if a_if.is_some() { "b_if" } else { "a_if" },
            "name both ends (a_if and b_if) or neither",
        ));
    }
    Ok(LabLink {
        a_addr: lab_link_addr(l, "a_addr")?,
        b_addr: lab_link_addr(l, "b_addr")?,
        a_if,
        b_if,
        a: a.v,
        b: b.v,
        mtu: l.int("mtu", 68, 65535)?.map(|m| m.v as u32),
        ipv6: l.bool("ipv6")?.unwrap_or(true),
    })
}

/// A link end's address, if given, as ADDRESS/PREFIX.
fn lab_link_addr(l: &Tbl, key: &str) -> Result<Option<String>, ControlError> {
    let Some(x) = l.str(key)? else {
        return Ok(None);
    };
    if !parse_cidr(&x.v) {
        return Err(l.err(
            x.span.start,
            key,
            format!("{:?}: write ADDRESS/PREFIX, e.g. 198.18.0.1/24", x.v),
        ));
    }
    Ok(Some(x.v))
}

/// A link end's interface name, if given: what the kernel accepts.
fn lab_link_ifname(l: &Tbl, key: &str) -> Result<Option<String>, ControlError> {
    let Some(x) = l.str(key)? else {
        return Ok(None);
    };
    let ok = !x.v.is_empty()
        && x.v.len() <= 15
        && x.v
            .bytes()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'));
    if !ok {
        return Err(l.err(
            x.span.start,
            key,
            format!(
                "{:?}: an interface name is 1 to 15 letters, digits, '-', '_' or '.'",
                x.v
            ),
        ));
    }
    Ok(Some(x.v))
}

/// One `[[lab.routes]]`: a known namespace, a destination and a gateway.
fn read_lab_route(r: &Tbl, namespaces: &[String]) -> Result<LabRoute, ControlError> {
    r.only(&schema::LAB_ROUTE.names())?;
    let ns = r.req_str("ns", "the namespace the route is added in")?;
    known_lab_ns(r, "ns", &ns, namespaces)?;
    let to = r.req_str("to", "the destination, ADDRESS/PREFIX or \"default\"")?;
    if to.v != "default" && !parse_cidr(&to.v) {
        return Err(r.err(
            to.span.start,
            "to",
            format!("{:?}: write ADDRESS/PREFIX or \"default\"", to.v),
        ));
    }
    let via = r.req_str("via", "the gateway's address")?;
    if via.v.parse::<IpAddr>().is_err() {
        return Err(r.err(
            via.span.start,
            "via",
            format!("{:?} is not an IP address", via.v),
        ));
    }
    Ok(LabRoute {
        ns: ns.v,
        to: to.v,
        via: via.v,
    })
}

/// One `[[lab.sysctls]]`: a known namespace, a sysctl name and any value.
fn read_lab_sysctl(s: &Tbl, namespaces: &[String]) -> Result<LabSysctl, ControlError> {
    s.only(&schema::LAB_SYSCTL.names())?;
    let ns = s.req_str("ns", "the namespace")?;
    known_lab_ns(s, "ns", &ns, namespaces)?;
    let key = s.req_str("key", "the sysctl, e.g. \"net.ipv4.ip_forward\"")?;
    if key.v.is_empty()
        || !key
            .v
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"._-/".contains(&b))
    {
        return Err(s.err(
            key.span.start,
            "key",
            format!("{:?} is not a sysctl name", key.v),
        ));
    }
    let value = s
        .value("value")?
        .ok_or_else(|| s.missing("value", "the value to set"))?;
    Ok(LabSysctl {
        ns: ns.v,
        key: key.v,
        value: value.v.to_string(),
    })
}

fn read_hosts(
    root: &Tbl,
    lab: Option<&LabSpec>,
) -> Result<BTreeMap<String, HostSpec>, ControlError> {
    let Some(t) = root.table("hosts")? else {
        return Err(root.missing(
            "hosts",
            "a [hosts] table, e.g. tx = { transport = \"lab:tx\" }",
        ));
    };
    let mut hosts = BTreeMap::new();
    for (name, span, v) in t.entries() {
        if !valid_name(name, false) {
            return Err(t.err(
                span.start,
                name,
                "a host name is 1 to 64 letters, digits, '_' or '-'",
            ));
        }
        let h = t.sub(name, v, "a table such as { transport = \"netns:NAME\" }")?;
        h.only(&schema::HOST.names())?;
        let tr = h.req_str(
            "transport",
            "how to reach the host: \"local\", \"netns:NAME\", \"lab:NS\" or \"ssh://user@host\"",
        )?;
        let lab_ns = check_transport(&h, &tr, lab)?;
        let iface = |key: &str| -> Result<Option<String>, ControlError> {
            let Some(i) = h.word(key)? else {
                return Ok(None);
            };
            if let Some(ns) = lab_ns {
                check_lab_iface(&h, key, &i, ns, lab)?;
            } else if i.v.len() > 15 || i.v.contains(['/', ' ']) {
                return Err(h.err(
                    i.span.start,
                    key,
                    format!(
                        "{:?} is not an interface name (at most 15 characters, no '/' or space)",
                        i.v
                    ),
                ));
            }
            Ok(Some(i.v))
        };
        let test_if = iface("test_if")?;
        let control_if = iface("control_if")?;
        let addr = h.word("addr")?;
        if let Some(a) = &addr {
            if a.v.parse::<IpAddr>().is_err() {
                return Err(h.err(
                    a.span.start,
                    "addr",
                    format!(
                        "{:?} is not an IP address (no prefix: 198.18.0.2, fd77::2)",
                        a.v
                    ),
                ));
            }
        }
        let test_clock_offset_ns = match h.str("test_clock_offset")? {
            None => None,
            Some(o) => Some(
                wirelab_core::clocksync::parse_offset_ns(&o.v)
                    .map_err(|e| h.err(o.span.start, "test_clock_offset", e.to_string()))?,
            ),
        };
        hosts.insert(
            name.to_string(),
            HostSpec {
                transport: tr.v,
                test_if,
                control_if,
                wirelab: h.word("wirelab")?.map_or_else(|| "wirelab".into(), |a| a.v),
                mtu: h.int("mtu", 68, 65535)?.map(|m| m.v as u32),
                addr: addr.map(|a| a.v),
                test_clock_offset_ns,
            },
        );
    }
    if hosts.is_empty() {
        return Err(t.missing("", "at least one host"));
    }
    Ok(hosts)
}

/// Checks a transport's form; for `lab:NS` returns NS.
fn check_transport<'s>(
    h: &Tbl,
    tr: &'s At<String>,
    lab: Option<&LabSpec>,
) -> Result<Option<&'s str>, ControlError> {
    let bad = |m: String| Err(h.err(tr.span.start, "transport", m));
    let forms =
        "use \"local\", \"netns:NAME\", \"lab:NS\" or \"ssh://[user@]host[:port][?netns=NAME]\"";
    let s = tr.v.as_str();
    if s == "local" {
        return Ok(None);
    }
    if let Some(n) = s.strip_prefix("netns:") {
        return if n.is_empty() || n.contains('/') {
            bad(format!("{s:?}: netns: needs a namespace name"))
        } else {
            Ok(None)
        };
    }
    if let Some(n) = s.strip_prefix("lab:") {
        let Some(lab) = lab else {
            return bad(format!(
                "{s:?}: lab: needs a [lab] section that declares namespace {n:?}"
            ));
        };
        if !lab.namespaces.iter().any(|x| x == n) {
            return bad(format!(
                "{n:?} is not a [lab] namespace; namespaces: {}",
                lab.namespaces.join(", ")
            ));
        }
        return Ok(Some(n));
    }
    if let Some(rest) = s.strip_prefix("ssh://") {
        let host = rest.split(['?', ':']).next().unwrap_or("");
        let host = host.rsplit('@').next().unwrap_or("");
        return if host.is_empty() {
            bad(format!("{s:?}: ssh:// needs a host"))
        } else {
            Ok(None)
        };
    }
    bad(format!("{s:?}: {forms}"))
}

/// A lab host names an interface by the namespace at the link's other end,
/// or by the name its link gives it (`a_if`, `b_if`).
fn check_lab_iface(
    t: &Tbl,
    key: &str,
    i: &At<String>,
    ns: &str,
    lab: Option<&LabSpec>,
) -> Result<(), ControlError> {
    let peers: Vec<&str> = lab
        .map(|l| {
            l.links
                .iter()
                .filter_map(|k| {
                    if k.a == ns {
                        Some(k.b.as_str())
                    } else if k.b == ns {
                        Some(k.a.as_str())
                    } else {
                        None
                    }
                })
                .collect()
        })
        .unwrap_or_default();
    let named: Vec<&str> = lab
        .map(|l| {
            l.links
                .iter()
                .flat_map(|k| [(&k.a, &k.a_if), (&k.b, &k.b_if)])
                .filter(|(n, name)| *n == ns && name.is_some())
                .filter_map(|(_, name)| name.as_deref())
                .collect()
        })
        .unwrap_or_default();
    if peers.contains(&i.v.as_str()) || named.contains(&i.v.as_str()) {
        return Ok(());
    }
    Err(t.err(
        i.span.start,
        key,
        format!(
            "{:?}: a lab host names an interface by the namespace at the other end of its link \
             or by the link's a_if/b_if; lab namespace {ns} links to: {}{}",
            i.v,
            if peers.is_empty() {
                "nothing".to_string()
            } else {
                peers.join(", ")
            },
            if named.is_empty() {
                String::new()
            } else {
                format!("; its named interfaces: {}", named.join(", "))
            }
        ),
    ))
}

fn known_host<'a>(
    t: &Tbl,
    key: &str,
    a: &At<String>,
    hosts: &'a BTreeMap<String, HostSpec>,
) -> Result<&'a HostSpec, ControlError> {
    hosts.get(&a.v).ok_or_else(|| {
        t.err(
            a.span.start,
            key,
            format!(
                "unknown host {:?}; hosts: {}",
                a.v,
                hosts.keys().cloned().collect::<Vec<_>>().join(", ")
            ),
        )
    })
}

fn read_flows(
    root: &Tbl,
    hosts: &BTreeMap<String, HostSpec>,
) -> Result<Vec<FlowSpec>, ControlError> {
    let mut flows: Vec<FlowSpec> = Vec::new();
    let tables = root.tables("flow")?;
    if tables.is_empty() {
        return Err(root.missing("flow", "at least one [[flow]] with name, from and to"));
    }
    let mut ports: BTreeMap<(String, u16), String> = BTreeMap::new();
    for mut t in tables {
        let name = read_flow_name(&t, &flows)?;
        t.path = format!("flow.{}", name);
        flows.push(read_flow(&t, name, hosts, &mut ports)?);
    }
    Ok(flows)
}

/// A flow's name: valid, and not taken by an earlier flow.
fn read_flow_name(t: &Tbl, earlier: &[FlowSpec]) -> Result<String, ControlError> {
    let name = t.req_str("name", "the flow's name")?;
    if !valid_name(&name.v, false) {
        return Err(t.err(
            name.span.start,
            "name",
            "a flow name is 1 to 64 letters, digits, '_' or '-'",
        ));
    }
    if earlier.iter().any(|f| f.name == name.v) {
        return Err(t.err(
            name.span.start,
            "name",
            format!(
                "a flow named {:?} is already defined; give each flow its own name",
                name.v
            ),
        ));
    }
    Ok(name.v)
}

/// One `[[flow]]` after its name. `ports` holds the (host, port) pairs
/// earlier flows receive on, so no two flows share a receiving port.
fn read_flow(
    t: &Tbl,
    name: String,
    hosts: &BTreeMap<String, HostSpec>,
    ports: &mut BTreeMap<(String, u16), String>,
) -> Result<FlowSpec, ControlError> {
    t.only(&schema::FLOW.names())?;
    let from = t.req_str("from", "the sending host")?;
    let to = t.req_str("to", "the receiving host")?;
    known_host(t, "from", &from, hosts)?;
    known_host(t, "to", &to, hosts)?;
    let mut f = default_flow(name, from.v, to.v);
    for k in FlowKey::ALL {
        if let Some(v) = t.value(k.name())? {
            k.apply(&mut f, &v.v)
                .map_err(|m| t.err(v.span.start, k.name(), m))?;
        }
    }
    if f.interval.is_some() && f.rate.is_some() {
        let at = t.get("rate").map_or(0, |v| v.span().start);
        return Err(t.err(
            at,
            "rate",
            "give interval or rate, not both (a flow is paced by one of them)",
        ));
    }
    if let Some(p) = f.port {
        if let Some(other) = ports.insert((f.to.clone(), p), f.name.clone()) {
            let at = t.get("port").map_or(0, |v| v.span().start);
            return Err(t.err(
                at,
                "port",
                format!("flow {other} also receives on port {p} of host {}", f.to),
            ));
        }
    }
    if let Some(q) = t.table("query")? {
        read_flow_query(&q, &mut f.query)?;
    }
    if let Some(a) = t.table("abort")? {
        f.abort = read_flow_abort(&a)?;
    }
    f.when = t.word("when")?.map(|w| w.v);
    f.send_args = read_flow_args(t, "send_args", MANAGED_SEND)?;
    f.recv_args = read_flow_args(t, "recv_args", MANAGED_RECV)?;
    Ok(f)
}

/// A flow with every optional key at its default.
fn default_flow(name: String, from: String, to: String) -> FlowSpec {
    FlowSpec {
        name,
        from,
        to,
        duration: None,
        count: None,
        interval: None,
        rate: None,
        size: None,
        socket: SocketKind::Udp,
        dscp: None,
        echo: false,
        port: None,
        warmup_packets: 0,
        query: Query {
            every_packets: DEFAULT_QUERY_EVERY,
            mode: QueryMode::Control,
        },
        abort: Abort::default(),
        when: None,
        send_args: Vec::new(),
        recv_args: Vec::new(),
    }
}

/// A flow's `[flow.query]`, over the defaults in `query`.
fn read_flow_query(q: &Tbl, query: &mut Query) -> Result<(), ControlError> {
    q.only(&schema::FLOW_QUERY.names())?;
    if let Some(n) = q.int("every_packets", 1, u64::MAX >> 1)? {
        query.every_packets = n.v;
    }
    if let Some(m) = q.str("mode")? {
        query.mode = match m.v.as_str() {
            "control" => QueryMode::Control,
            "inband" => QueryMode::Inband,
            _ => {
                return Err(q.err(
                    m.span.start,
                    "mode",
                    format!("{:?}: use \"control\" or \"inband\"", m.v),
                ))
            }
        };
    }
    Ok(())
}

/// A flow's `[flow.abort]`; a zero `max_duration` would stop it at once.
fn read_flow_abort(a: &Tbl) -> Result<Abort, ControlError> {
    a.only(&schema::FLOW_ABORT.names())?;
    let mut abort = Abort {
        lost_gt: a.int("lost_gt", 0, u64::MAX >> 1)?.map(|n| n.v),
        max_duration: None,
    };
    if let Some(d) = a.duration("max_duration")? {
        if d.v == 0 {
            return Err(a.err(d.span.start, "max_duration", "must be above 0"));
        }
        abort.max_duration = Some(d.v);
    }
    Ok(abort)
}

/// A flow's verbatim `send_args` or `recv_args`; an option the runner
/// manages (`managed`: flag and the key or reason that sets it) is refused.
fn read_flow_args(
    t: &Tbl,
    key: &str,
    managed: &[(&str, &str)],
) -> Result<Vec<String>, ControlError> {
    let args = t.strings(key)?;
    for a in &args {
        let flag = a.v.split('=').next().unwrap_or("");
        if let Some((_, by)) = managed.iter().find(|(m, _)| *m == flag) {
            let how = if by.starts_with('(') {
                format!("leave it out {by}")
            } else {
                format!("set the flow's `{by}` key instead")
            };
            return Err(t.err(a.span.start, key, format!("{flag}: {how}")));
        }
    }
    Ok(args.into_iter().map(|a| a.v).collect())
}

fn read_emulate(t: &Tbl, c: &Control) -> Result<EmulateSpec, ControlError> {
    t.only(&schema::EMULATE.names())?;
    let host = t.req_str("host", "the host the emulator runs on")?;
    let h = known_host(t, "host", &host, &c.hosts)?;
    let ifaces = t.strings("ifaces")?;
    if ifaces.len() != 2 {
        let at = t.get("ifaces").map_or(t.span.start, |v| v.span().start);
        return Err(t.err(
            at,
            "ifaces",
            "give the two interfaces the emulator bridges, e.g. [\"eth1\", \"eth2\"]",
        ));
    }
    if let Some(ns) = h.transport.strip_prefix("lab:") {
        for i in &ifaces {
            check_lab_iface(t, "ifaces", i, ns, c.lab.as_ref())?;
        }
    }
    if ifaces[0].v == ifaces[1].v {
        return Err(t.err(
            ifaces[1].span.start,
            "ifaces",
            "the two interfaces must differ",
        ));
    }
    let stages = t.str("stages")?;
    let a2b = t.str("a2b")?;
    let b2a = t.str("b2a")?;
    if let (Some(s), true) = (&stages, a2b.is_some() || b2a.is_some()) {
        return Err(t.err(
            s.span.start,
            "stages",
            "stages applies to both directions: give stages, or a2b and/or b2a, not both",
        ));
    }
    if stages.is_none() && a2b.is_none() && b2a.is_none() {
        return Err(t.missing(
            "stages",
            "the link's stages (stages for both directions, or a2b / b2a), e.g. \"delay 5ms\"",
        ));
    }
    let [a, b] = [&ifaces[0], &ifaces[1]].map(|i| i.v.clone());
    Ok(EmulateSpec {
        host: host.v,
        ifaces: [a, b],
        stages: stages.map(|s| s.v),
        a2b: a2b.map(|s| s.v),
        b2a: b2a.map(|s| s.v),
        args: t.strings("args")?.into_iter().map(|a| a.v).collect(),
    })
}

fn read_capture(t: &Tbl, c: &Control) -> Result<CaptureSpec, ControlError> {
    t.only(&schema::CAPTURE.names())?;
    let hosts = t.strings("hosts")?;
    if hosts.is_empty() {
        return Err(t.missing("hosts", "the hosts to capture on, e.g. [\"rx\"]"));
    }
    for h in &hosts {
        known_host(t, "hosts", h, &c.hosts)?;
    }
    let ifaces = if t.get("ifaces").is_some() {
        let v = t.strings("ifaces")?;
        if v.is_empty() {
            return Err(t.err(
                t.get("ifaces").map_or(0, |x| x.span().start),
                "ifaces",
                "leave ifaces out to capture on each host's test_if, or name at least one",
            ));
        }
        for h in &hosts {
            if let Some(ns) = c.hosts[&h.v].transport.strip_prefix("lab:") {
                for i in &v {
                    check_lab_iface(t, "ifaces", i, ns, c.lab.as_ref())?;
                }
            }
        }
        v.into_iter().map(|a| a.v).collect()
    } else {
        for h in &hosts {
            let emulator = c.emulate.as_ref().is_some_and(|e| e.host == h.v);
            if c.hosts[&h.v].test_if.is_none() && !emulator {
                return Err(t.err(
                    h.span.start,
                    "hosts",
                    format!(
                        "host {} has no test_if: set hosts.{}.test_if or capture.ifaces",
                        h.v, h.v
                    ),
                ));
            }
        }
        Vec::new()
    };
    Ok(CaptureSpec {
        hosts: hosts.into_iter().map(|h| h.v).collect(),
        ifaces,
        snaplen: t.int("snaplen", 1, 262_144)?.map(|n| n.v as u32),
        filter: t.word("filter")?.map(|f| f.v),
        args: t.strings("args")?.into_iter().map(|a| a.v).collect(),
    })
}

/// The keys of a `[[stressor]]` that shape its load, in the order an error
/// of `wirelab stress`'s checks is matched to one of them (each a key of
/// [`schema::STRESSOR`]).
const LOAD_KEYS: [&str; 8] = [
    "workers",
    "load",
    "rt_priority",
    "rate",
    "target",
    "port",
    "size",
    "io_cap",
];

fn read_stressor(t: &Tbl, c: &Control) -> Result<StressorSpec, ControlError> {
    t.only(&schema::STRESSOR.names())?;
    let host = t.req_str("host", "the host the load runs on")?;
    known_host(t, "host", &host, &c.hosts)?;
    let preset = match t.str("preset")? {
        None => None,
        Some(p) if p.v == "realistic" => Some(StressPreset::Realistic),
        Some(p) => {
            return Err(t.err(
                p.span.start,
                "preset",
                format!("{:?}: the preset is \"realistic\"", p.v),
            ))
        }
    };
    const KINDS: [(&str, StressKind); 7] = [
        ("cpu", StressKind::Cpu),
        ("get", StressKind::Get),
        ("cpu-rt", StressKind::CpuRt),
        ("bigheap", StressKind::Bigheap),
        ("hdd", StressKind::Hdd),
        ("timer", StressKind::Timer),
        ("network", StressKind::Network),
    ];
    let kind = match t.str("kind")? {
        None => None,
        Some(k) => Some(
            KINDS
                .iter()
                .find(|(n, _)| *n == k.v)
                .map(|(_, x)| *x)
                .ok_or_else(|| {
                    t.err(
                        k.span.start,
                        "kind",
                        format!("{:?}: use one of {}", k.v, KINDS.map(|(n, _)| n).join(", ")),
                    )
                })?,
        ),
    };
    if preset.is_some() == kind.is_some() {
        return Err(t.err(
            t.span.start,
            "kind",
            "give either preset or kind (one load per [[stressor]])",
        ));
    }
    let spec = StressorSpec {
        host: host.v,
        preset,
        kind,
        workers: t.int("workers", 1, 4096)?.map(|n| n.v as u32),
        load: t.int("load", 1, 100)?.map(|n| n.v as u8),
        rt_priority: t.int("rt_priority", 1, 99)?.map(|n| n.v as u8),
        rate: None,
        target: None,
        port: t.int("port", 1, 65535)?.map(|n| n.v as u16),
        size: t.int("size", 24, 65507)?.map(|n| n.v as u32),
        io_cap: None,
        when: None,
        args: t.strings("args")?.into_iter().map(|a| a.v).collect(),
    };
    check_stressor(t, c, spec)
}

/// The keys of a `[[stressor]]` that depend on its kind, checked the way
/// `wirelab stress` will take them.
fn check_stressor(
    t: &Tbl,
    c: &Control,
    mut spec: StressorSpec,
) -> Result<StressorSpec, ControlError> {
    use wirelab_host::stress::{self, Load, Options};
    let at = |key: &str| t.get(key).map_or(t.span.start, |v| v.span().start);
    if let Some(r) = t.word("rate")? {
        let ok = if spec.kind == Some(StressKind::Timer) {
            stress::parse_hz(&r.v)
                .map(|_| ())
                .map_err(|e| e.to_string())
        } else {
            wirelab_core::units::parse_bitrate_bps(&r.v)
                .map(|_| ())
                .map_err(|e| format!("{e} (network load's bit rate, e.g. 1Gbit)"))
        };
        ok.map_err(|m| t.err(r.span.start, "rate", m))?;
        spec.rate = Some(r.v);
    }
    if let Some(r) = t.word("io_cap")? {
        wirelab_core::units::parse_bitrate_bps(&r.v)
            .map_err(|e| t.err(r.span.start, "io_cap", format!("{e} (e.g. 1Gbit)")))?;
        spec.io_cap = Some(r.v);
    }
    if let Some(h) = t.str("target")? {
        known_host(t, "target", &h, &c.hosts)?;
        spec.target = Some(h.v);
    }
    if let Some(w) = t.str("when")? {
        Expr::parse(&w.v).map_err(|e| {
            t.err(
                t.src.offset_in_string(&w.span, &w.v, e.pos),
                "when",
                e.message,
            )
        })?;
        spec.when = Some(w.v);
    }
    // The kind's own checks, with placeholder values for what is only
    // known per point (the target's address).
    let load = match (spec.preset, spec.kind) {
        (Some(_), _) => Load::Realistic,
        (None, Some(k)) => Load::of_kind(k),
        (None, None) => Load::Cpu,
    };
    let o = Options {
        workers: spec.workers,
        load: spec.load,
        rt_priority: spec.rt_priority,
        timer_hz: spec
            .rate
            .as_deref()
            .filter(|_| load == Load::Timer)
            .map(|_| 1),
        to: spec.target.clone(),
        port: spec.port,
        bitrate: spec.rate.clone().filter(|_| load != Load::Timer),
        size: spec.size,
        io_cap_bytes_per_s: spec.io_cap.as_ref().map(|_| 1),
        args: vec![],
    };
    if let Err(e) = stress::plan(load, &o, 1, None) {
        use wirelab_jobs::stress::flag;
        let e = e
            .to_string()
            .replace(flag::WORKERS, "workers")
            .replace(flag::LOAD, "load")
            .replace(flag::RT_PRIORITY, "rt_priority")
            .replace(flag::TIMER_FREQ, "rate")
            .replace(&format!("{} ADDR", flag::TO), "target = HOST")
            .replace(flag::TO, "target")
            .replace(flag::PORT, "port")
            .replace(flag::BITRATE, "rate")
            .replace(flag::SIZE, "size")
            .replace(flag::IO_CAP, "io_cap");
        let key = LOAD_KEYS
            .into_iter()
            .find(|k| t.get(k).is_some() && e.starts_with(k))
            .unwrap_or("target");
        return Err(t.err(at(key), key, e));
    }
    Ok(spec)
}

fn read_env(t: &Tbl, c: &Control) -> Result<EnvSpec, ControlError> {
    t.only(&schema::ENV.names())?;
    let mut apply = BTreeMap::new();
    if let Some(a) = t.table("apply")? {
        for (host, span, v) in a.entries() {
            if !c.hosts.contains_key(host) {
                return Err(a.err(
                    span.start,
                    host,
                    format!(
                        "unknown host {host:?}; hosts: {}",
                        c.hosts.keys().cloned().collect::<Vec<_>>().join(", ")
                    ),
                ));
            }
            let s = a.sub(host, v, "a table of settings, e.g. { rings = 4096 }")?;
            let mut settings = BTreeMap::new();
            for (k, span, _) in s.entries() {
                let v = s.value(k)?.expect("key present");
                // The setting and its value checked as `wirelab env` would;
                // whether the host has a test_if is checked at run time.
                wirelab_host::env::apply::plan(
                    &[(k.to_string(), v.v.to_string())],
                    Some("test_if"),
                )
                .map_err(|e| s.err(span.start, k, e.to_string()))?;
                settings.insert(k.to_string(), v.v);
            }
            apply.insert(host.to_string(), settings);
        }
    }
    Ok(EnvSpec { apply })
}

fn read_metrics(t: &Tbl) -> Result<MetricsSpec, ControlError> {
    t.only(&schema::METRICS.names())?;
    let l = t.req_str(
        "listen",
        "the address to serve /metrics on, e.g. \"127.0.0.1:9464\"",
    )?;
    if l.v.parse::<SocketAddr>().is_err() {
        return Err(t.err(
            l.span.start,
            "listen",
            format!("{:?}: write ADDRESS:PORT, e.g. \"127.0.0.1:9464\"", l.v),
        ));
    }
    Ok(MetricsSpec {
        listen: l.v,
        linger_ns: t.duration("linger")?.map_or(0, |d| d.v),
    })
}

/// Parses each flow's `when`; variables are checked once the sweep is read.
fn read_whens(root: &Tbl, c: &Control) -> Result<Vec<When>, ControlError> {
    let tables = root.tables("flow")?;
    c.flows
        .iter()
        .zip(&tables)
        .map(|(f, t)| {
            let Some(w) = t.str("when")? else {
                return Ok(None);
            };
            let e = Expr::parse(&w.v).map_err(|e| {
                root.src.err(
                    root.src.offset_in_string(&w.span, &w.v, e.pos),
                    &format!("flow.{}.when", f.name),
                    e.message,
                )
            })?;
            Ok(Some((e, w)))
        })
        .collect()
}

fn read_sweep(t: &Tbl, c: &Control) -> Result<Sweep, ControlError> {
    let mut sweep = Sweep::default();
    for (key, span, v) in t.entries() {
        if key == "search" {
            let Some(st) = t.table("search")? else {
                return Err(t.err(
                    v.span().start,
                    "search",
                    "write search = { axis = \"interval\", lossfree = 3 }",
                ));
            };
            st.only(&schema::SWEEP_SEARCH.names())?;
            let axis = st.req_str("axis", "the sweep key to search along")?;
            let n = st.int("lossfree", 1, 1_000)?.ok_or_else(|| {
                st.missing("lossfree", "loss-free points in a row that end the search")
            })?;
            sweep.search = Some(Search {
                axis: axis.v,
                lossfree: n.v as u32,
            });
            continue;
        }
        if key == "exclude" {
            for x in t.strings("exclude")? {
                Expr::parse(&x.v).map_err(|e| {
                    t.err(
                        t.src.offset_in_string(&x.span, &x.v, e.pos),
                        "exclude",
                        format!("{:?}: {}", x.v, e),
                    )
                })?;
                sweep.exclude.push(x.v);
            }
            continue;
        }
        let target = c.target(key).map_err(|e| t.err(span.start, key, e))?;
        let toml::de::DeValue::Array(a) = v.get_ref() else {
            return Err(t.err(
                v.span().start,
                key,
                "a sweep axis is an array of values, e.g. [80, 1500]",
            ));
        };
        if a.is_empty() {
            return Err(t.err(
                v.span().start,
                key,
                "an empty axis gives no points: list at least one value",
            ));
        }
        let mut values: Vec<Value> = Vec::with_capacity(a.len());
        for x in a.iter() {
            let val = reader::scalar(x.get_ref()).map_err(|m| t.err(x.span().start, key, m))?;
            check_axis_value(c, target, &val).map_err(|m| t.err(x.span().start, key, m))?;
            if values.contains(&val) {
                return Err(t.err(
                    x.span().start,
                    key,
                    format!("{} is listed twice", val.literal()),
                ));
            }
            values.push(val);
        }
        sweep.axes.push(Axis {
            key: key.to_string(),
            values,
        });
    }
    if let Some(s) = &sweep.search {
        let at = t.get("search").map_or(t.span.start, |v| v.span().start);
        if !sweep.axes.iter().any(|a| a.key == s.axis) {
            return Err(t.err(
                at,
                "search.axis",
                format!("{:?} is not a sweep key of this file", s.axis),
            ));
        }
        if c.campaign.order != Order::Sequential {
            return Err(t.err(
                at,
                "search",
                "a search runs its axis in order: use campaign.order = \"sequential\"",
            ));
        }
    }
    check_pacing(c, &sweep.axes).map_err(|(key, m)| {
        let at = t.get(&key).map_or(t.span.start, |v| v.span().start);
        t.err(at, &key, m)
    })?;
    Ok(sweep)
}

/// Placeholders, `when` and exclusion variables all name sweep axes.
fn check_params(
    root: &Tbl,
    sweep: Option<&Tbl>,
    c: &Control,
    whens: &[When],
) -> Result<(), ControlError> {
    let axes: Vec<&str> = c.sweep.axes.iter().map(|a| a.key.as_str()).collect();
    let listed = || {
        if axes.is_empty() {
            "there is no [sweep]".to_string()
        } else {
            format!("the sweep's keys are: {}", axes.join(", "))
        }
    };
    for (f, w) in c.flows.iter().zip(whens) {
        if let Some((e, at)) = w {
            for (v, pos) in e.variables() {
                if !axes.contains(&v) {
                    return Err(root.src.err(
                        root.src.offset_in_string(&at.span, &at.v, pos),
                        &format!("flow.{}.when", f.name),
                        format!("`{v}` is not a sweep key; {}", listed()),
                    ));
                }
            }
        }
    }
    if let Some(t) = sweep {
        for x in t.strings("exclude")? {
            let e = Expr::parse(&x.v).expect("checked in read_sweep");
            for (v, pos) in e.variables() {
                if !axes.contains(&v) {
                    return Err(t.err(
                        t.src.offset_in_string(&x.span, &x.v, pos),
                        "exclude",
                        format!("`{v}` is not a sweep key; {}", listed()),
                    ));
                }
            }
        }
    }
    // Placeholders: find the string in the file for a position.
    let strings = placeholder_sources(root)?;
    for (key, at) in &strings {
        let Some(at) = at else { continue };
        for (p, pos) in placeholders(&at.v) {
            if !axes.contains(&p) {
                return Err(root.src.err(
                    root.src.offset_in_string(&at.span, &at.v, pos),
                    key,
                    format!("{{{p}}} is not a sweep key; {}", listed()),
                ));
            }
        }
    }
    Ok(())
}

/// The strings that may hold placeholders, with their keys and places.
fn placeholder_sources(root: &Tbl) -> Result<Vec<Source>, ControlError> {
    let mut out = Vec::new();
    for t in root.tables("flow")? {
        let name = t.str("name")?.map_or_else(String::new, |n| n.v);
        for key in ["send_args", "recv_args"] {
            for a in t.strings(key)? {
                out.push((format!("flow.{name}.{key}"), Some(a)));
            }
        }
    }
    for (sec, keys, lists) in [
        ("emulate", &["stages", "a2b", "b2a"][..], &["args"][..]),
        ("capture", &["filter"][..], &["args"][..]),
    ] {
        if let Some(t) = root.table(sec)? {
            for k in keys {
                out.push((t.key(k), t.str(k)?));
            }
            for k in lists {
                for a in t.strings(k)? {
                    out.push((t.key(k), Some(a)));
                }
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(text: &str) -> (String, String) {
        match super::super::parse("c.toml", text) {
            Err(ControlError::Invalid { key, message, .. }) => (key, message),
            other => panic!("expected an Invalid error, got {other:?}"),
        }
    }

    const LAB: &str = "[campaign]\nname = \"t\"\n\n[lab]\nnamespaces = [\"tx\", \"rx\"]\n\
        links = [{ a = \"tx\", b = \"rx\" LINK }]\n\n\
        [hosts]\ntx = { transport = \"lab:tx\" }\nrx = { transport = \"lab:rx\" }\n\n\
        [[flow]]\nname = \"f\"\nfrom = \"tx\"\nto = \"rx\"\nFLOW";

    fn lab(link: &str, flow: &str) -> String {
        LAB.replace(" LINK", link).replace("FLOW", flow)
    }

    #[test]
    fn load_keys_are_stressor_keys() {
        let keys = schema::STRESSOR.names();
        for k in LOAD_KEYS {
            assert!(keys.contains(&k), "{k}");
        }
    }

    #[test]
    fn lab_namespaces_are_short_lowercase_words() {
        assert!(valid_lab_ns("tx") && valid_lab_ns("emu2") && valid_lab_ns("abcdef"));
        for bad in ["", "abcdefg", "Tx", "t-x", "t_x", "t.x"] {
            assert!(!valid_lab_ns(bad), "{bad:?}");
        }
    }

    #[test]
    fn lab_link_names_both_interfaces_or_neither() {
        let c = super::super::parse("c.toml", &lab(", a_if = \"t0\", b_if = \"r0\"", ""))
            .expect("both ends named");
        let l = &c.lab.unwrap().links[0];
        assert_eq!(
            (l.a_if.as_deref(), l.b_if.as_deref()),
            (Some("t0"), Some("r0"))
        );
        let (key, m) = message(&lab(", a_if = \"t0\"", ""));
        assert_eq!(key, "lab.links[1].b_if");
        assert!(m.contains("name both ends"), "{m}");
        let (key, m) = message(&lab(", b_if = \"r0\"", ""));
        assert_eq!(key, "lab.links[1].a_if");
        assert!(m.contains("name both ends"), "{m}");
        let (key, m) = message(&lab(", a_if = \"a/b\", b_if = \"r0\"", ""));
        assert_eq!(key, "lab.links[1].a_if");
        assert!(m.contains("an interface name is 1 to 15"), "{m}");
    }

    #[test]
    fn flow_args_refuse_what_the_runner_manages() {
        let (key, m) = message(&lab("", "recv_args = [\"--port=9000\"]\n"));
        assert_eq!(key, "flow.f.recv_args");
        assert_eq!(m, "--port: set the flow's `port` key instead");
        let (key, m) = message(&lab("", "recv_args = [\"--json\"]\n"));
        assert_eq!(key, "flow.f.recv_args");
        assert!(m.starts_with("--json: leave it out ("), "{m}");
        let c = super::super::parse("c.toml", &lab("", "recv_args = [\"--quiet\"]\n"))
            .expect("an unmanaged option passes through");
        assert_eq!(c.flows[0].recv_args, ["--quiet"]);
    }
}

//! The control file's keys, one table per section: the reader's
//! unknown-key checks take their lists from here, and docs/run.md's key
//! tables are these tables rendered (a test compares them;
//! `WIRELAB_BLESS=1` rewrites the docs' tables).
//!
//! Contracts: a section's keys are in the order an unknown-key error lists
//! them; a name in capitals (`KEY`) stands for any name the file chooses and
//! is not a key the file writes; every string is one line of Markdown
//! without `|` (it is a table cell).

use super::keys::FlowKey;

/// One key of a section.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Key {
    pub name: &'static str,
    pub required: bool,
    /// The default as the docs state it; empty when there is none to state.
    pub default: &'static str,
    pub meaning: &'static str,
}

/// One table of the control file.
#[derive(Debug)]
pub(crate) struct Section {
    /// Its TOML header: `[campaign]`, or `[[flow]]` for an array of tables;
    /// `NAME` stands for a host's name.
    pub header: &'static str,
    keys: &'static [Key],
    /// Whether the flow keys a sweep sets ([`FlowKey`]) follow `keys`.
    flow_keys: bool,
}

impl Section {
    /// The dotted path, e.g. `lab.links`.
    pub fn path(&self) -> &'static str {
        self.header.trim_matches(['[', ']'])
    }

    /// Every key, in the order an unknown-key error lists them.
    pub fn keys(&self) -> impl Iterator<Item = Key> + '_ {
        let flow = FlowKey::ALL.into_iter().filter(|_| self.flow_keys);
        self.keys.iter().copied().chain(flow.map(FlowKey::key))
    }

    /// The keys a file may write (not the `KEY` placeholders).
    pub fn names(&self) -> Vec<&'static str> {
        self.keys()
            .map(|k| k.name)
            .filter(|n| !is_placeholder(n))
            .collect()
    }
}

/// Whether `name` stands for any name (`KEY`, `NAME`).
fn is_placeholder(name: &str) -> bool {
    name.bytes().all(|b| b.is_ascii_uppercase())
}

/// The keys of the file's top level: each section's first path element.
pub(crate) fn top_level() -> Vec<&'static str> {
    let mut v: Vec<&'static str> = Vec::new();
    for s in SECTIONS {
        let first = s.path().split('.').next().unwrap_or_default();
        if !v.contains(&first) {
            v.push(first);
        }
    }
    v
}

const fn req(name: &'static str, meaning: &'static str) -> Key {
    Key {
        name,
        required: true,
        default: "",
        meaning,
    }
}

const fn opt(name: &'static str, default: &'static str, meaning: &'static str) -> Key {
    Key {
        name,
        required: false,
        default,
        meaning,
    }
}

const fn section(header: &'static str, keys: &'static [Key]) -> Section {
    Section {
        header,
        keys,
        flow_keys: false,
    }
}

/// Every section, in the docs' order.
pub(crate) const SECTIONS: [&Section; 16] = [
    &CAMPAIGN,
    &HOST,
    &LAB,
    &LAB_LINK,
    &LAB_ROUTE,
    &LAB_SYSCTL,
    &FLOW,
    &FLOW_QUERY,
    &FLOW_ABORT,
    &SWEEP,
    &SWEEP_SEARCH,
    &EMULATE,
    &CAPTURE,
    &STRESSOR,
    &ENV,
    &METRICS,
];

pub(crate) const CAMPAIGN: Section = section(
    "[campaign]",
    &[
        req(
            "name",
            "1 to 64 letters, digits, `.`, `_` or `-`: it names the results directory",
        ),
        opt("description", "", "free text, printed with the plan"),
        opt(
            "order",
            "`sequential`",
            "`sequential` or `shuffled` (by `seed`)",
        ),
        opt("seed", "1", "the seed of the shuffled order"),
        opt("repetitions", "1", "how many times every point runs"),
        opt(
            "settle",
            "0",
            "how long the path settles after the emulator and captures are up, before the flows",
        ),
        opt("pause", "0", "the wait between points"),
        opt(
            "owd_uncertainty_max",
            "1ms",
            "above this clock-offset uncertainty a cross-host flow's OWD is published only \
             relative to its minimum, [Clock offset](#clock-offset-between-hosts)",
        ),
    ],
);

pub(crate) const HOST: Section = section(
    "[hosts.NAME]",
    &[
        req(
            "transport",
            "`local`, `netns:NAME` (a namespace that exists), `lab:NS` (a namespace of this \
             file's `[lab]`) or `ssh://[USER@]HOST[:PORT][?netns=NAME]`",
        ),
        opt(
            "test_if",
            "",
            "the interface test traffic uses; `[env]` interface settings and captures go to it",
        ),
        opt("control_if", "", "the interface the control channel uses"),
        opt("wirelab", "`\"wirelab\"`", "the binary on that host"),
        opt(
            "mtu",
            "",
            "the test interface's MTU: raw and packet sockets cannot send above MTU − 28, \
             [Points](#points)",
        ),
        opt("addr", "", "the address flows to this host send to"),
        opt(
            "test_clock_offset",
            "",
            "a test hook: `\"3ms\"`, `\"-250us\"` shifts every realtime stamp of that host's \
             agent and its tools",
        ),
    ],
);

pub(crate) const LAB: Section = section(
    "[lab]",
    &[
        req(
            "namespaces",
            "the namespaces, 1 to 6 lowercase letters or digits each, e.g. `[\"tx\", \"rx\"]`",
        ),
        opt(
            "links",
            "",
            "veth links between them, `[[lab.links]]` (at most 36)",
        ),
        opt("routes", "", "routes, `[[lab.routes]]`"),
        opt("sysctls", "", "sysctls, `[[lab.sysctls]]`"),
    ],
);

pub(crate) const LAB_LINK: Section = section(
    "[[lab.links]]",
    &[
        req("a", "the namespace at one end"),
        req("b", "the namespace at the other end"),
        opt("a_addr", "", "`a`'s address, ADDRESS/PREFIX"),
        opt("b_addr", "", "`b`'s address, ADDRESS/PREFIX"),
        opt(
            "a_if",
            "",
            "the interface's name in `a` (name both ends or neither; by default the lab names them)",
        ),
        opt("b_if", "", "the interface's name in `b`"),
        opt("mtu", "1500", "the link's MTU"),
        opt(
            "ipv6",
            "true",
            "IPv6 on the link; off keeps router solicitations and neighbour discovery off the wire",
        ),
    ],
);

pub(crate) const LAB_ROUTE: Section = section(
    "[[lab.routes]]",
    &[
        req("ns", "the namespace the route is added in"),
        req("to", "the destination, ADDRESS/PREFIX or `default`"),
        req("via", "the gateway's address"),
    ],
);

pub(crate) const LAB_SYSCTL: Section = section(
    "[[lab.sysctls]]",
    &[
        req("ns", "the namespace"),
        req("key", "the sysctl, e.g. `net.ipv4.ip_forward`"),
        req("value", "the value it is set to"),
    ],
);

pub(crate) const FLOW: Section = Section {
    header: "[[flow]]",
    keys: &[
        req(
            "name",
            "1 to 64 letters, digits, `_` or `-`; no two flows alike",
        ),
        req("from", "the sending host"),
        req("to", "the receiving host"),
        opt("query", "", "the loss queries, `[flow.query]`"),
        opt("abort", "", "when the flow stops early, `[flow.abort]`"),
        opt("when", "", "an expression: the points this flow runs in"),
        opt("send_args", "", "any other `wirelab send` option, verbatim"),
        opt("recv_args", "", "any other `wirelab recv` option, verbatim"),
    ],
    flow_keys: true,
};

pub(crate) const FLOW_QUERY: Section = section(
    "[flow.query]",
    &[
        opt(
            "every_packets",
            "100000",
            "packets between two queries of the receiver's loss count",
        ),
        opt(
            "mode",
            "`control`",
            "`control` (over the control channel, not blocking the sender) or `inband` (between probes)",
        ),
    ],
);

pub(crate) const FLOW_ABORT: Section = section(
    "[flow.abort]",
    &[
        opt(
            "lost_gt",
            "",
            "stop once more than this many packets are lost",
        ),
        opt("max_duration", "", "stop after this long"),
    ],
);

pub(crate) const SWEEP: Section = section(
    "[sweep]",
    &[
        opt("KEY", "", "`[values]`: an axis, below"),
        opt(
            "exclude",
            "",
            "`[expressions]`: the combinations not run, [Points](#points)",
        ),
        opt(
            "search",
            "",
            "`{ axis, lossfree }`: a search for the loss-free limit, [Points](#points)",
        ),
    ],
);

pub(crate) const SWEEP_SEARCH: Section = section(
    "[sweep.search]",
    &[
        req("axis", "the sweep key to search along"),
        req("lossfree", "loss-free points in a row that end the search"),
    ],
);

pub(crate) const EMULATE: Section = section(
    "[emulate]",
    &[
        req("host", "the host the emulator runs on"),
        req(
            "ifaces",
            "the two interfaces it bridges, e.g. `[\"eth1\", \"eth2\"]`",
        ),
        opt(
            "stages",
            "",
            "the link's stages for both directions, e.g. `\"delay 5ms\"`; or `a2b`/`b2a`",
        ),
        opt(
            "a2b",
            "",
            "the stages from the first interface to the second",
        ),
        opt(
            "b2a",
            "",
            "the stages from the second interface to the first",
        ),
        opt("args", "", "more `wirelab emulate` options"),
    ],
);

pub(crate) const CAPTURE: Section = section(
    "[capture]",
    &[
        req("hosts", "the hosts to capture on"),
        opt("ifaces", "each host's `test_if`", "the interfaces"),
        opt("snaplen", "", "bytes kept of each packet"),
        opt("filter", "", "a tcpdump-syntax filter"),
        opt("args", "", "more `wirelab capture` options"),
    ],
);

pub(crate) const STRESSOR: Section = section(
    "[[stressor]]",
    &[
        req("host", "the host the load runs on"),
        opt("preset", "", "`realistic`; or `kind`"),
        opt(
            "kind",
            "",
            "`cpu`, `get`, `cpu-rt`, `bigheap`, `hdd`, `timer` or `network`",
        ),
        opt(
            "workers",
            "",
            "workers (stress-ng instances); unset: the host's CPU count",
        ),
        opt("load", "", "% of a CPU per cpu/cpu-rt worker"),
        opt(
            "rt_priority",
            "",
            "SCHED_FIFO priority of cpu-rt, the realistic preset's RT workers or network load's \
             sender",
        ),
        opt(
            "rate",
            "",
            "the timer's frequency, `\"100kHz\"`, or network load's bit rate, `\"1Gbit\"`",
        ),
        opt("target", "", "network load: the host it is sent to"),
        opt("port", "", "network load: the UDP port"),
        opt("size", "", "network load: UDP payload bytes"),
        opt("io_cap", "", "a bit rate capping the disk writer's writes"),
        opt("when", "", "an expression: the points it runs in"),
        opt("args", "", "more stress-ng arguments"),
    ],
);

pub(crate) const ENV: Section = section(
    "[env]",
    &[opt(
        "apply",
        "",
        "`apply.HOST = { SETTING = value, … }`: settings (`mtu`, `rings`, \
         `coalesce_rx_usecs`, `eee`, `offload.gro`, any sysctl by its dotted name, …; \
         [env.md](env.md)) set on the host before the first point and reverted after the \
         last; interface settings go to its `test_if`",
    )],
);

pub(crate) const METRICS: Section = section(
    "[metrics]",
    &[
        req(
            "listen",
            "ADDRESS:PORT to serve Prometheus metrics on while the campaign runs",
        ),
        opt(
            "linger",
            "0",
            "how long the endpoint stays up after the campaign, so that a scraper reads the \
             final values",
        ),
    ],
);

#[cfg(test)]
mod tests;

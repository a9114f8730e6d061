//! `wirelab emulate`: flags to an [`EmulateJob`], its counters to stdout.

use crate::error::{rt_error, usage, Privilege};
use anyhow::Result;
use clap::{Args, Subcommand};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use wirelab_core::link::{Direction, LinkConfig, LinkKey};
use wirelab_engine::emulate::ctl::{self, CtlRule, CtlSetup};
use wirelab_engine::emulate::recorder::decision_path;
use wirelab_engine::emulate::{open_link, DirModel, LiveDir, Recorder, RuleLink};
use wirelab_engine::job::emulate::{EmulateError, EmulateJob, MmLogSetup};
use wirelab_engine::job::rt::RtSetup;
use wirelab_engine::job::stop_on_signals;
use wirelab_io::bpf::BpfProgram;

#[derive(Args, Debug)]
#[command(after_help = "Stages (netem's syntax; see docs/emulate.md):\n  \
delay 10ms [2ms [25%]] [dist normal|pareto|paretonormal|uniform]\n  \
loss random 1% [25%] | loss state P13 [P31 [P32 [P23 [P14]]]] | loss gemodel P [R [1-H [1-K]]] [ecn]\n  \
duplicate 1% [C]   corrupt 0.1% [C]   reorder 25% [C] gap 5\n  \
rate 10mbit [OVERHEAD [CELL [CELLOVERHEAD]]] [burst 125k]   slot MIN [MAX] [packets N] [bytes B]\n  \
limit 1000 | limit bytes 1m   order fifo|free   seed 7   drd MIN MAX\n  \
trace FILE [scale X] [offset T] [at-end loop|hold|stop|pass|drop]\n  \
timeline NET.csv [period T] [at-end loop|hold|stop|pass|drop]   (time-indexed CSV)\n  \
link FILE [once]   (Mahimahi delivery opportunities)   onoff exp|periodic ON OFF [drop]\n  \
queue droptail|drophead|codel|pie [packets=N] [bytes=B] [target=T] [interval=T]\n  \
profile FILE   (Dummynet pipe profile: airtime and loss curve; needs rate or its bw line)\n\n\
Example: wirelab emulate --a veth1 --b veth2 --both 'delay 20ms 2ms loss 1%' -d 60s")]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
pub struct EmulateArgs {
    #[command(subcommand)]
    pub cmd: Option<EmulateCmd>,
    /// First interface of the bridge
    #[arg(long = "a", value_name = "IF", required = true)]
    pub a: Option<String>,
    /// Second interface of the bridge
    #[arg(long = "b", value_name = "IF", required = true)]
    pub b: Option<String>,
    /// Stages for frames from A to B
    #[arg(long, value_name = "STAGES", allow_hyphen_values = true)]
    pub a2b: Option<String>,
    /// Stages for frames from B to A
    #[arg(long, value_name = "STAGES", allow_hyphen_values = true)]
    pub b2a: Option<String>,
    /// Stages for both directions (each its own state and random stream)
    #[arg(long, value_name = "STAGES", conflicts_with_all = ["a2b", "b2a"], allow_hyphen_values = true)]
    pub both: Option<String>,
    /// Frames matching FILTER (tcpdump syntax; `a2b:` or `b2a:` in front for one direction)
    /// get STAGES instead of the direction's; the first matching rule wins; repeatable
    #[arg(long, num_args = 2, value_names = ["FILTER", "STAGES"], allow_hyphen_values = true)]
    pub rule: Vec<String>,
    /// Stop after this long (default: until Ctrl-C / SIGTERM)
    #[arg(short = 'd', long, value_name = "DURATION", value_parser = crate::values::NONZERO_DURATION)]
    pub duration: Option<u64>,
    /// Seed of every random decision when the stages give none
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Receive ring slots per direction
    #[arg(long, default_value_t = 4096, value_parser = clap::value_parser!(u32).range(16..=1_048_576))]
    pub ring_frames: u32,
    /// Spin before each deadline for this long (learned from the sleeps unless --fixed-spin)
    #[arg(long, value_name = "DURATION", default_value = "200us", value_parser = crate::values::duration(0, 100_000_000, "0 to 100ms"))]
    pub spin: u64,
    /// Keep the --spin margin fixed instead of learning it
    #[arg(long)]
    pub fixed_spin: bool,
    /// Pin the a→b thread to this CPU and b→a to the next
    #[arg(long, value_name = "N")]
    pub cpu: Option<usize>,
    /// SCHED_FIFO priority of both threads (1-99), and locked memory
    #[arg(long, value_name = "PRIO", value_parser = clap::value_parser!(i32).range(1..=99))]
    pub rt_priority: Option<i32>,
    /// Log every copy of every frame (arrival, deadline, departure or drop reason) to this
    /// record file; `wirelab analyze FILE` summarises it
    #[arg(long, value_name = "FILE")]
    pub log: Option<PathBuf>,
    /// Write the frames each direction sends, with their departure times, to this pcapng file
    #[arg(long, value_name = "FILE")]
    pub tap: Option<PathBuf>,
    /// Write every decision as a packet trace that replays the run (`trace FILE`): one file per
    /// direction and rule with stages, named FILE with `.a2b`/`.b2a` (and `.ruleN`) before
    /// the extension (.pkt.csv exact; .bin/.nist.txt µs)
    #[arg(long, value_name = "FILE")]
    pub record_decisions: Option<PathBuf>,
    /// Write Mahimahi-compatible logs (mm-link's format, read by mm-throughput-graph and
    /// mm-delay-graph) to DIR/a2b.log and DIR/b2a.log: a line per frame received, per copy
    /// sent and per delivery opportunity of a `link` stage (DIR is created)
    #[arg(long, value_name = "DIR")]
    pub mm_log: Option<PathBuf>,
    /// Accept rule changes (`wirelab emulate ctl`) on this unix socket
    #[arg(long, value_name = "PATH", num_args = 0..=1, default_missing_value = DEFAULT_CTL)]
    pub ctl: Option<PathBuf>,
    /// Print the report as JSON (schema wirelab.emulate/1)
    #[arg(long)]
    pub json: bool,
    /// No live counters on stderr
    #[arg(short, long)]
    pub quiet: bool,
}

/// The control socket when `--ctl` and `ctl --socket` give none.
pub const DEFAULT_CTL: &str = "/run/wirelab-emulate.sock";

#[derive(Subcommand, Debug)]
pub enum EmulateCmd {
    /// Change a running emulator's rules over its --ctl socket
    Ctl(CtlArgs),
    /// Judge an emulator from captures of its input and output: applied
    /// delay per frame, its error against the configuration, loss, extra
    /// copies, early copies, the seed's Table B.1, KS and χ² tests
    Verify(crate::cmd::emulate_verify::VerifyArgs),
}

#[derive(Args, Debug)]
#[command(
    after_help = "Rules are named by their number (`ctl list`) or their filter. A change applies \
between two frames; an updated or removed rule keeps what it holds until each copy left at its \
deadline.\n\nExample:\n  wirelab emulate --a eA --b eB --ctl /run/emu.sock &\n  \
wirelab emulate ctl --socket /run/emu.sock add 'udp dst port 5004' 'delay 20ms loss random 1%'"
)]
pub struct CtlArgs {
    /// The emulator's control socket (its --ctl)
    #[arg(long, value_name = "PATH", default_value = DEFAULT_CTL)]
    pub socket: PathBuf,
    /// Print the emulator's answer as JSON
    #[arg(long)]
    pub json: bool,
    #[command(subcommand)]
    pub op: CtlOp,
}

#[derive(Subcommand, Debug)]
pub enum CtlOp {
    /// Add a rule after the others: frames matching FILTER (`a2b:`/`b2a:` in front for one
    /// direction) get STAGES; fails "exists" if FILTER has a rule
    Add {
        filter: String,
        #[arg(allow_hyphen_values = true)]
        stages: String,
    },
    /// Give rule RULE (its number or filter) new stages
    Update {
        rule: String,
        #[arg(allow_hyphen_values = true)]
        stages: String,
    },
    /// Remove rule RULE (its number or filter)
    Del { rule: String },
    /// The rules
    List,
    /// The rules with their counters, and both directions' counters
    Stats,
}

fn link_config(flag: &str, stages: &str) -> Result<LinkConfig> {
    LinkConfig::parse(stages).map_err(|e| usage(format!("{flag} '{stages}': {e}")))
}

/// One `--rule`: its number, directions, filter and stages.
struct RuleArg {
    rule: u32,
    dirs: Vec<Direction>,
    filter: String,
    stages: String,
}

/// `rules`: the values of every `--rule`, two each.
fn rule_args(rules: &[String]) -> Result<Vec<RuleArg>> {
    let mut out = Vec::new();
    for (i, r) in rules.chunks(2).enumerate() {
        let (f, stages) = match r {
            [f, s] => (f.trim(), s.clone()),
            _ => return Err(usage("--rule takes two values: FILTER STAGES")),
        };
        let (dirs, filter) = if let Some(f) = f.strip_prefix("a2b:") {
            (vec![Direction::AToB], f.trim())
        } else if let Some(f) = f.strip_prefix("b2a:") {
            (vec![Direction::BToA], f.trim())
        } else {
            (vec![Direction::AToB, Direction::BToA], f)
        };
        if filter.is_empty() {
            return Err(usage(format!(
                "--rule '{f}': the filter is empty; stages for every frame go in --a2b, --b2a or --both"
            )));
        }
        out.push(RuleArg {
            rule: i as u32 + 1,
            dirs,
            filter: filter.to_string(),
            stages,
        });
    }
    Ok(out)
}

fn dir_name(d: Direction) -> &'static str {
    match d {
        Direction::AToB => "a2b",
        Direction::BToA => "b2a",
    }
}

/// A rule's link to build for one direction.
struct NewRule<'a> {
    rule: u32,
    filter: Option<BpfProgram>,
    stages: &'a str,
    dir: Direction,
    /// Just added (a decision trace starts; an updated rule's goes on).
    new: bool,
}

/// Builds one rule's link: stage list, seed, trace file, decision trace.
fn rule_link(flag: &str, r: NewRule<'_>, seed: u64, decisions: Option<&Path>) -> Result<RuleLink> {
    let c = link_config(flag, r.stages)?;
    let key = LinkKey {
        seed: c.seed.unwrap_or(seed),
        rule: r.rule,
        direction: r.dir,
    };
    let link = open_link(&c, key).map_err(|e| usage(format!("{flag}: {e}")))?;
    let mut l = RuleLink::new(r.rule, r.filter, r.stages, key.seed, link);
    if let (Some(base), false, true) = (decisions, r.stages.trim().is_empty(), r.new) {
        let p = decision_path(base, dir_name(r.dir), r.rule)
            .map_err(|e| usage(format!("--record-decisions: {e}")))?;
        let rec = Recorder::create(&p).map_err(|e| anyhow::anyhow!("--record-decisions: {e}"))?;
        l = l.record_to(rec);
    }
    Ok(l)
}

pub fn run(a: EmulateArgs) -> Result<()> {
    match a.cmd {
        Some(EmulateCmd::Ctl(c)) => ctl_run(c),
        Some(EmulateCmd::Verify(v)) => crate::cmd::emulate_verify::run_verify(v),
        None => emulate(a),
    }
}

fn emulate(a: EmulateArgs) -> Result<()> {
    let (if_a, if_b) = match (&a.a, &a.b) {
        (Some(x), Some(y)) => (x.clone(), y.clone()),
        _ => return Err(usage("emulate needs --a IF and --b IF")),
    };
    let (s_ab, s_ba) = match &a.both {
        Some(s) => (s.as_str(), s.as_str()),
        None => (
            a.a2b.as_deref().unwrap_or(""),
            a.b2a.as_deref().unwrap_or(""),
        ),
    };
    let (f_ab, f_ba) = if a.both.is_some() {
        ("--both", "--both")
    } else {
        ("--a2b", "--b2a")
    };
    if let Some(p) = &a.record_decisions {
        decision_path(p, "a2b", 0).map_err(|e| usage(format!("--record-decisions: {e}")))?;
    }
    let rules = rule_args(&a.rule)?;
    let decisions = a.record_decisions.as_deref();
    let model = |dir: Direction, flag: &str, stages: &str| -> Result<DirModel> {
        let mut links = Vec::new();
        for r in rules.iter().filter(|r| r.dirs.contains(&dir)) {
            let flag = format!("--rule '{}'", r.filter);
            let f = BpfProgram::compile(&r.filter, 1, 65_535)
                .map_err(|e| usage(format!("--rule: {e}")))?;
            let new = NewRule {
                rule: r.rule,
                filter: Some(f),
                stages: &r.stages,
                dir,
                new: true,
            };
            links.push(rule_link(&flag, new, a.seed, decisions)?);
        }
        let new = NewRule {
            rule: 0,
            filter: None,
            stages,
            dir,
            new: true,
        };
        let default = rule_link(flag, new, a.seed, decisions)?;
        Ok(DirModel::new(links, default))
    };
    let mut m_ab = model(Direction::AToB, f_ab, s_ab)?;
    let mut m_ba = model(Direction::BToA, f_ba, s_ba)?;
    let live = [Arc::new(LiveDir::default()), Arc::new(LiveDir::default())];
    let ctl = a.ctl.as_ref().map(|path| {
        let (t_ab, r_ab) = std::sync::mpsc::channel();
        let (t_ba, r_ba) = std::sync::mpsc::channel();
        m_ab.set_control(r_ab);
        m_ba.set_control(r_ba);
        let seed = a.seed;
        let decisions = a.record_decisions.clone();
        CtlSetup {
            path: path.clone(),
            rules: rules
                .iter()
                .map(|r| CtlRule {
                    rule: r.rule,
                    directions: r.dirs.iter().map(|&d| dir_name(d)).collect(),
                    filter: r.filter.clone(),
                    stages: r.stages.clone(),
                })
                .collect(),
            build: Box::new(move |rule, filter, stages, dir, new| {
                let f = BpfProgram::compile(filter, 1, 65_535).map_err(|e| e.to_string())?;
                let flag = format!("rule {rule} ({})", dir_name(dir));
                let r = NewRule {
                    rule,
                    filter: Some(f),
                    stages,
                    dir,
                    new,
                };
                rule_link(&flag, r, seed, decisions.as_deref()).map_err(|e| e.to_string())
            }),
            to: [t_ab, t_ba],
            live: live.clone(),
        }
    });
    let config = serde_json::json!({
        "a": if_a, "b": if_b,
        "a2b": s_ab, "b2a": s_ba,
        "seed": [m_ab.default_link().seed, m_ba.default_link().seed],
        "rules": rules.iter().map(|r| serde_json::json!({
            "rule": r.rule,
            "directions": r.dirs.iter().map(|d| dir_name(*d)).collect::<Vec<_>>(),
            "filter": r.filter,
            "stages": r.stages,
        })).collect::<Vec<_>>(),
    });
    let job = EmulateJob {
        a: if_a.clone(),
        b: if_b.clone(),
        a2b: m_ab,
        b2a: m_ba,
        ring_frames: a.ring_frames,
        duration: a.duration.map(Duration::from_nanos),
        spin_ns: a.spin,
        learn: !a.fixed_spin,
        rt: RtSetup {
            cpu: a.cpu,
            fifo_priority: a.rt_priority,
            mlock: a.rt_priority.is_some(),
        },
        live: live.clone(),
        log: a.log.clone().map(|p| (p, config)),
        tap: a.tap.clone(),
        ctl,
        mm_log: a.mm_log.clone().map(|dir| MmLogSetup {
            dir,
            command_line: std::env::args().collect::<Vec<_>>().join(" "),
            titles: [
                format!("a2b ({if_a} -> {if_b}) [{s_ab}]"),
                format!("b2a ({if_b} -> {if_a}) [{s_ba}]"),
            ],
        }),
    };
    let stop = stop_on_signals()?;
    if !a.json {
        eprintln!(
            "emulate: bridging {if_a} <-> {if_b}{}{}; Ctrl-C to stop",
            a.duration
                .map(|d| format!(" for {:.2} s", d as f64 / 1e9))
                .unwrap_or_default(),
            a.ctl
                .as_ref()
                .map(|p| format!("; rules changed over {}", p.display()))
                .unwrap_or_default()
        );
    }
    let ticker = crate::progress::ticker(a.quiet, move |_| {
        format!(
            "a2b {} | b2a {}",
            live[0].snapshot().line(),
            live[1].snapshot().line()
        )
    });
    let res = job.run(&stop);
    drop(ticker);
    let mut run = res.map_err(map_err)?;
    let decisions = run.finish_recording();
    let report = run.report(&decisions);
    if a.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print!("{}", report.text());
    }
    Ok(())
}

fn map_err(e: EmulateError) -> anyhow::Error {
    match e {
        EmulateError::Ring(wirelab_io::ring_rx::RingError::Privilege { .. })
        | EmulateError::Socket(wirelab_io::packet_sock::PacketError::Permission { .. }) => {
            anyhow::Error::new(Privilege(e.to_string()))
        }
        EmulateError::Rt(r) => rt_error(r),
        EmulateError::SameInterface(_)
        | EmulateError::Interface { .. }
        | EmulateError::Ctl(ctl::CtlError::InUse { .. } | ctl::CtlError::NotASocket { .. }) => {
            usage(e.to_string())
        }
        e => e.into(),
    }
}

/// `wirelab emulate ctl`: one request, its answer on stdout.
fn ctl_run(c: CtlArgs) -> Result<()> {
    use ctl::Request;
    let req = match c.op {
        CtlOp::Add { filter, stages } => Request::Add { filter, stages },
        CtlOp::Update { rule, stages } => Request::Update { rule, stages },
        CtlOp::Del { rule } => Request::Del { rule },
        CtlOp::List => Request::List,
        CtlOp::Stats => Request::Stats,
    };
    let v = ctl::request(&c.socket, &req)?;
    if c.json {
        println!("{}", serde_json::to_string_pretty(&v)?);
    }
    if v["ok"] != true {
        anyhow::bail!(
            "{}",
            v["error"]
                .as_str()
                .unwrap_or("the emulator refused the request")
        );
    }
    if c.json {
        return Ok(());
    }
    let rule_line = |r: &serde_json::Value| {
        let dirs: Vec<&str> = r["directions"]
            .as_array()
            .map(|a| a.iter().filter_map(|d| d.as_str()).collect())
            .unwrap_or_default();
        let stages = r["stages"].as_str().unwrap_or("");
        format!(
            "rule {} {} '{}' [{}]",
            r["rule"],
            dirs.join("+"),
            r["filter"].as_str().unwrap_or(""),
            if stages.is_empty() { "pass" } else { stages }
        )
    };
    match req {
        Request::Add { .. } => println!("added {}", rule_line(&v["rule"])),
        Request::Update { .. } => println!("updated {}", rule_line(&v["rule"])),
        Request::Del { .. } => println!("removed {}", rule_line(&v["rule"])),
        Request::List => {
            let rules = v["rules"].as_array().cloned().unwrap_or_default();
            if rules.is_empty() {
                println!("no rules");
            }
            for r in &rules {
                println!("{}", rule_line(r));
            }
        }
        Request::Stats => {
            for d in ["a2b", "b2a"] {
                let s = &v[d];
                let l = &s["live"];
                println!(
                    "{d}: {} received, {} sent, {} duplicated, {} held",
                    l["received"], l["sent"], l["duplicates"], l["held"]
                );
                for r in s["rules"].as_array().cloned().unwrap_or_default() {
                    let link = &r["link"];
                    let dropped: Vec<String> = link["dropped"]
                        .as_object()
                        .map(|o| {
                            o.iter()
                                .filter(|(_, n)| n.as_u64().unwrap_or(0) > 0)
                                .map(|(k, n)| format!("{} {n}", k.replace('_', " ")))
                                .collect()
                        })
                        .unwrap_or_default();
                    let stages = r["stages"].as_str().unwrap_or("");
                    let name = if r["rule"] == 0 {
                        "default".to_string()
                    } else {
                        format!(
                            "rule {} '{}'",
                            r["rule"],
                            r["filter"].as_str().unwrap_or("")
                        )
                    };
                    println!(
                        "  {name} [{}]: {} frames, {} duplicated, dropped {}, {} queued",
                        if stages.is_empty() { "pass" } else { stages },
                        r["frames"],
                        link["duplicates"],
                        if dropped.is_empty() {
                            "0".to_string()
                        } else {
                            dropped.join(", ")
                        },
                        link["queue_packets"]
                    );
                }
            }
        }
    }
    Ok(())
}

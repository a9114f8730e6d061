//! `wirelab emulate`: flags to an [`EmulateJob`], its counters to stdout.

use crate::error::{rt_error, usage, Privilege};
use anyhow::Result;
use clap::Args;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use wirelab_core::link::{Direction, LinkConfig, LinkKey};
use wirelab_engine::emulate::recorder::decision_path;
use wirelab_engine::emulate::{open_link, DirModel, LiveDir, Recorder, RuleLink};
use wirelab_engine::job::emulate::{EmulateError, EmulateJob};
use wirelab_engine::job::rt::RtSetup;
use wirelab_engine::job::stop_on_signals;
use wirelab_io::bpf::BpfProgram;

#[derive(Args, Debug)]
#[command(after_help = "Stages (netem's syntax; see docs/emulate.md):\n  \
delay 10ms [2ms [25%]] [dist normal|pareto|paretonormal|uniform]\n  \
loss random 1% [25%] | loss state P13 [P31 [P32 [P23 [P14]]]] | loss gemodel P [R [1-H [1-K]]]\n  \
duplicate 1% [C]   corrupt 0.1% [C]   reorder 25% [C] gap 5\n  \
rate 10mbit [OVERHEAD [CELL [CELLOVERHEAD]]]   slot MIN [MAX] [packets N] [bytes B]\n  \
limit 1000 | limit bytes 1m   order fifo|free   seed 7\n  \
trace FILE [scale X] [offset T] [at-end loop|hold|stop|pass|drop]\n\n\
Example: wirelab emulate --a veth1 --b veth2 --both 'delay 20ms 2ms loss 1%' -d 60s")]
pub struct EmulateArgs {
    /// First interface of the bridge
    #[arg(long = "a", value_name = "IF")]
    pub a: String,
    /// Second interface of the bridge
    #[arg(long = "b", value_name = "IF")]
    pub b: String,
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
    /// Print the report as JSON (schema wirelab.emulate/1)
    #[arg(long)]
    pub json: bool,
    /// No live counters on stderr
    #[arg(short, long)]
    pub quiet: bool,
}

fn link_config(flag: &str, stages: &str) -> Result<LinkConfig> {
    let c = LinkConfig::parse(stages).map_err(|e| usage(format!("{flag} '{stages}': {e}")))?;
    if c.ecn {
        return Err(usage(format!(
            "{flag}: `ecn` (CE marking instead of loss) is not supported by the forwarder yet; \
             leave it out to drop"
        )));
    }
    Ok(c)
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

/// Builds one rule's link: stage list, seed, trace file, decision trace.
fn rule_link(
    flag: &str,
    rule: u32,
    filter: Option<BpfProgram>,
    stages: &str,
    dir: Direction,
    seed: u64,
    decisions: Option<&Path>,
) -> Result<RuleLink> {
    let c = link_config(flag, stages)?;
    let key = LinkKey {
        seed: c.seed.unwrap_or(seed),
        rule,
        direction: dir,
    };
    let link = open_link(&c, key).map_err(|e| usage(format!("{flag}: {e}")))?;
    let mut l = RuleLink::new(rule, filter, stages, key.seed, link);
    if let (Some(base), false) = (decisions, stages.trim().is_empty()) {
        let p = decision_path(base, dir_name(dir), rule)
            .map_err(|e| usage(format!("--record-decisions: {e}")))?;
        let r = Recorder::create(&p).map_err(|e| anyhow::anyhow!("--record-decisions: {e}"))?;
        l = l.record_to(r);
    }
    Ok(l)
}

pub fn run(a: EmulateArgs) -> Result<()> {
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
            links.push(rule_link(
                &flag,
                r.rule,
                Some(f),
                &r.stages,
                dir,
                a.seed,
                decisions,
            )?);
        }
        let default = rule_link(flag, 0, None, stages, dir, a.seed, decisions)?;
        Ok(DirModel::new(links, default))
    };
    let m_ab = model(Direction::AToB, f_ab, s_ab)?;
    let m_ba = model(Direction::BToA, f_ba, s_ba)?;
    let config = serde_json::json!({
        "a": a.a, "b": a.b,
        "a2b": s_ab, "b2a": s_ba,
        "seed": [m_ab.default_link().seed, m_ba.default_link().seed],
        "rules": rules.iter().map(|r| serde_json::json!({
            "rule": r.rule,
            "directions": r.dirs.iter().map(|d| dir_name(*d)).collect::<Vec<_>>(),
            "filter": r.filter,
            "stages": r.stages,
        })).collect::<Vec<_>>(),
    });
    let live = [Arc::new(LiveDir::default()), Arc::new(LiveDir::default())];
    let job = EmulateJob {
        a: a.a.clone(),
        b: a.b.clone(),
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
    };
    let stop = stop_on_signals()?;
    if !a.json {
        eprintln!(
            "emulate: bridging {} <-> {}{}; Ctrl-C to stop",
            a.a,
            a.b,
            a.duration
                .map(|d| format!(" for {:.2} s", d as f64 / 1e9))
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
        EmulateError::SameInterface(_) | EmulateError::Interface { .. } => usage(e.to_string()),
        e => e.into(),
    }
}

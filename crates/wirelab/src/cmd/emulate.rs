//! `wirelab emulate`: flags to an [`EmulateJob`], its counters to stdout.

use crate::error::{rt_error, usage, Privilege};
use anyhow::Result;
use clap::Args;
use std::time::Duration;
use wirelab_core::link::{Direction, LinkConfig, LinkKey};
use wirelab_engine::emulate::{open_link, CoreLink};
use wirelab_engine::job::emulate::{EmulateError, EmulateJob};
use wirelab_engine::job::rt::RtSetup;
use wirelab_engine::job::stop_on_signals;

#[derive(Args, Debug)]
#[command(after_help = "Stages (netem's syntax; see docs/emulate.md):\n  \
delay 10ms [2ms [25%]] [dist normal|pareto|paretonormal|uniform]\n  \
loss random 1% [25%] | loss state P13 [P31 [P32 [P23 [P14]]]] | loss gemodel P [R [1-H [1-K]]]\n  \
duplicate 1% [C]   corrupt 0.1% [C]   reorder 25% [C] gap 5\n  \
rate 10mbit [OVERHEAD [CELL [CELLOVERHEAD]]] [burst 125k]   slot MIN [MAX] [packets N] [bytes B]\n  \
limit 1000 | limit bytes 1m   order fifo|free   seed 7   drd MIN MAX\n  \
trace FILE [scale X] [offset T] [at-end loop|hold|stop|pass|drop]\n  \
timeline NET.csv [period T] [at-end loop|hold|stop|pass|drop]   (time-indexed CSV)\n  \
link FILE [once]   (Mahimahi delivery opportunities)   onoff exp|periodic ON OFF [drop]\n  \
queue droptail|drophead|codel|pie [packets=N] [bytes=B] [target=T] [interval=T]\n\n\
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
    /// Print the report as JSON (schema wirelab.emulate/1)
    #[arg(long)]
    pub json: bool,
}

fn link_config(flag: &str, stages: Option<&str>) -> Result<LinkConfig> {
    let s = stages.unwrap_or("");
    let c = LinkConfig::parse(s).map_err(|e| usage(format!("{flag} '{s}': {e}")))?;
    if c.ecn {
        return Err(usage(format!(
            "{flag}: `ecn` (CE marking instead of loss) is not supported by the forwarder yet; \
             leave it out to drop"
        )));
    }
    Ok(c)
}

pub fn run(a: EmulateArgs) -> Result<()> {
    let (s_ab, s_ba) = match &a.both {
        Some(s) => (Some(s.as_str()), Some(s.as_str())),
        None => (a.a2b.as_deref(), a.b2a.as_deref()),
    };
    let (f_ab, f_ba) = if a.both.is_some() {
        ("--both", "--both")
    } else {
        ("--a2b", "--b2a")
    };
    let c_ab = link_config(f_ab, s_ab)?;
    let c_ba = link_config(f_ba, s_ba)?;
    let key = |c: &LinkConfig, direction| LinkKey {
        seed: c.seed.unwrap_or(a.seed),
        rule: 0,
        direction,
    };
    let (k_ab, k_ba) = (key(&c_ab, Direction::AToB), key(&c_ba, Direction::BToA));
    let bad =
        |flag: &str, e: wirelab_engine::emulate::LinkSetupError| usage(format!("{flag}: {e}"));
    let l_ab = open_link(&c_ab, k_ab).map_err(|e| bad(f_ab, e))?;
    let l_ba = open_link(&c_ba, k_ba).map_err(|e| bad(f_ba, e))?;
    let job = EmulateJob {
        a: a.a.clone(),
        b: a.b.clone(),
        a2b: CoreLink::new(l_ab),
        b2a: CoreLink::new(l_ba),
        ring_frames: a.ring_frames,
        duration: a.duration.map(Duration::from_nanos),
        spin_ns: a.spin,
        learn: !a.fixed_spin,
        rt: RtSetup {
            cpu: a.cpu,
            fifo_priority: a.rt_priority,
            mlock: a.rt_priority.is_some(),
        },
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
    let run = job.run(&stop).map_err(map_err)?;
    let report = run.report(
        [s_ab.unwrap_or(""), s_ba.unwrap_or("")],
        [k_ab.seed, k_ba.seed],
    );
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

//! Stressors (`wirelab stress`, a campaign's `[[stressor]]`): which
//! processes make a load, decided without I/O.
//!
//! A load is one or more **parts**, each one process: stress-ng with the
//! mapped arguments (§3.4 of the Airbus DTSS test report: `cpu` with N
//! workers at a load %, `get` for kernel-mode load, `cpu` at SCHED_FIFO,
//! `bigheap`, `hdd`, `timer`), or wirelab's own `send` for network load.
//! The preset `realistic` (the report's Table 4.1) expands to its parts.
//! The binary runs the parts; the campaign maps a `[[stressor]]` to a
//! `wirelab stress` job with [`job_for`].

use serde::{Deserialize, Serialize};
use thiserror::Error;
use wirelab_jobs::StressJob;

pub mod supervise;

/// The schema of `wirelab stress --json`.
pub const REPORT_SCHEMA: &str = "wirelab.stress/1";
/// SCHED_FIFO priority of `cpu-rt` without `rt_priority` (§3.4 of the
/// Airbus DTSS test report).
pub const DEFAULT_RT_PRIORITY: u8 = 50;
/// The `timer` kind's frequency without a rate (§3.4 of the Airbus DTSS
/// test report: 1 MHz).
pub const DEFAULT_TIMER_HZ: u64 = 1_000_000;
/// Network load's UDP payload without a size: a full 1500-byte frame.
pub const DEFAULT_NET_SIZE: u32 = 1472;
/// Network load's port without one (the discard service).
pub const DEFAULT_NET_PORT: u16 = 9;

/// One `[[stressor]]` of a control file: a preset or one kind of load on
/// `host`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StressorSpec {
    pub host: String,
    pub preset: Option<StressPreset>,
    pub kind: Option<StressKind>,
    pub workers: Option<u32>,
    /// Percent of a CPU per worker, 1 to 100.
    pub load: Option<u8>,
    pub rt_priority: Option<u8>,
    /// A rate for `timer` (`"1MHz"` style, as given) or `network`.
    pub rate: Option<String>,
    /// Network load: the host it is sent to (outside the flow under test).
    pub target: Option<String>,
    /// Network load: the UDP port and payload size.
    pub port: Option<u16>,
    pub size: Option<u32>,
    /// A cap of `hdd`'s (and the preset's disk writer's) writes, a bit rate
    /// as given (`"1Gbit"`), applied with cgroup v2 io.max.
    pub io_cap: Option<String>,
    /// An expression over the sweep's keys: the points the stressor runs
    /// in (default: all).
    pub when: Option<String>,
    pub args: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum StressPreset {
    /// The Airbus DTSS test report, Table 4.1: RT CPU hogs, light CPU
    /// load, a capped disk writer, a 100 kHz timer, network load.
    Realistic,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum StressKind {
    Cpu,
    Get,
    CpuRt,
    Bigheap,
    Hdd,
    Timer,
    Network,
}

#[derive(Debug, Error, PartialEq, Eq)]
pub enum StressError {
    #[error("{0}")]
    Option(String),
    #[error("{given:?}: use one of {}", Load::ALL.map(Load::name).join(", "))]
    UnknownLoad { given: String },
    #[error("{given:?}: a frequency from 1Hz to 1GHz in whole Hz, e.g. 100kHz, 1MHz")]
    Frequency { given: String },
}

/// What to load: one kind, or the preset.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Load {
    Cpu,
    Get,
    CpuRt,
    Bigheap,
    Hdd,
    Timer,
    Network,
    Realistic,
}

impl Load {
    pub const ALL: [Load; 8] = [
        Load::Cpu,
        Load::Get,
        Load::CpuRt,
        Load::Bigheap,
        Load::Hdd,
        Load::Timer,
        Load::Network,
        Load::Realistic,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Load::Cpu => "cpu",
            Load::Get => "get",
            Load::CpuRt => "cpu-rt",
            Load::Bigheap => "bigheap",
            Load::Hdd => "hdd",
            Load::Timer => "timer",
            Load::Network => "network",
            Load::Realistic => "realistic",
        }
    }

    pub fn of_kind(k: StressKind) -> Load {
        match k {
            StressKind::Cpu => Load::Cpu,
            StressKind::Get => Load::Get,
            StressKind::CpuRt => Load::CpuRt,
            StressKind::Bigheap => Load::Bigheap,
            StressKind::Hdd => Load::Hdd,
            StressKind::Timer => Load::Timer,
            StressKind::Network => Load::Network,
        }
    }
}

impl std::str::FromStr for Load {
    type Err = StressError;
    fn from_str(s: &str) -> Result<Load, StressError> {
        Load::ALL
            .into_iter()
            .find(|l| l.name() == s)
            .ok_or_else(|| StressError::UnknownLoad { given: s.into() })
    }
}

/// The options of one load, as `wirelab stress` takes them.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Options {
    /// Workers (stress-ng instances); default: the CPU count for `cpu`
    /// and `cpu-rt`, 1 for the others.
    pub workers: Option<u32>,
    /// Percent of a CPU per `cpu`/`cpu-rt` worker (default 100).
    pub load: Option<u8>,
    /// SCHED_FIFO priority of `cpu-rt` (default 50).
    pub rt_priority: Option<u8>,
    /// The `timer` frequency in Hz (default 1 MHz).
    pub timer_hz: Option<u64>,
    /// Network load: where to (an address outside the flow under test).
    pub to: Option<String>,
    pub port: Option<u16>,
    /// Network load in bit/s of UDP payload (default 1 Gbit/s).
    pub bitrate: Option<String>,
    /// Network load's UDP payload in bytes.
    pub size: Option<u32>,
    /// Cap of `hdd`'s writes in bytes per second (cgroup v2 io.max).
    pub io_cap_bytes_per_s: Option<u64>,
    /// More stress-ng arguments, verbatim, for every stress-ng part.
    pub args: Vec<String>,
}

/// Which program a part runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Program {
    StressNg,
    /// wirelab itself (`send` for network load).
    Wirelab,
}

/// One process of a load.
#[derive(Debug, Clone, PartialEq)]
pub struct Part {
    /// What it is, e.g. `cpu`, `rt-hogs`, `disk`.
    pub name: String,
    pub program: Program,
    pub args: Vec<String>,
    /// Cap its writes to this many bytes per second (cgroup v2 io.max).
    pub io_cap_bytes_per_s: Option<u64>,
    /// Its SCHED_FIFO priority, for a real-time part.
    pub rt_priority: Option<u8>,
}

/// The parts of `load`. `cpus` is the machine's CPU count (the default
/// worker count of CPU loads); `duration_s` bounds network load's sender
/// (`None`: a day; either way the stress command stops it).
pub fn plan(
    load: Load,
    o: &Options,
    cpus: u32,
    duration_s: Option<u64>,
) -> Result<(Vec<Part>, Vec<String>), StressError> {
    check_options(load, o)?;
    let mut notes = vec![];
    let workers = |default: u32| o.workers.unwrap_or(default).max(1).to_string();
    let prio = o.rt_priority.unwrap_or(DEFAULT_RT_PRIORITY);
    let ng = |name: &str, mut args: Vec<String>| {
        args.extend(o.args.iter().cloned());
        Part {
            name: name.into(),
            program: Program::StressNg,
            args,
            io_cap_bytes_per_s: None,
            rt_priority: None,
        }
    };
    let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    let cpu = |n: String, load: u8| s(&["--cpu", &n, "--cpu-load", &load.to_string()]);
    let rt = |mut a: Vec<String>| {
        a.extend(s(&["--sched", "fifo", "--sched-prio", &prio.to_string()]));
        a
    };
    // Network load runs at a real-time priority only when asked (the DTSS
    // report's own load generator ran at 90); the realistic preset's
    // stays a normal process, as iperf was there.
    let net = |to: &str, rt_priority: Option<u8>| Part {
        name: "network".into(),
        program: Program::Wirelab,
        args: net_args(o, to, duration_s, rt_priority),
        io_cap_bytes_per_s: None,
        rt_priority,
    };
    let parts = match load {
        Load::Cpu => vec![ng("cpu", cpu(workers(cpus), o.load.unwrap_or(100)))],
        Load::CpuRt => {
            let mut p = ng("cpu-rt", rt(cpu(workers(cpus), o.load.unwrap_or(100))));
            p.rt_priority = Some(prio);
            vec![p]
        }
        // Every kind runs one worker per CPU unless told otherwise, as the
        // DTSS report's isolated load states did.
        Load::Get => vec![ng("get", s(&["--get", &workers(cpus)]))],
        Load::Bigheap => vec![ng("bigheap", s(&["--bigheap", &workers(cpus)]))],
        Load::Hdd => {
            let mut p = ng("hdd", s(&["--hdd", &workers(cpus)]));
            p.io_cap_bytes_per_s = o.io_cap_bytes_per_s;
            vec![p]
        }
        Load::Timer => {
            let hz = o.timer_hz.unwrap_or(DEFAULT_TIMER_HZ);
            vec![ng(
                "timer",
                s(&["--timer", &workers(cpus), "--timer-freq", &hz.to_string()]),
            )]
        }
        Load::Network => vec![net(o.to.as_deref().unwrap_or_default(), o.rt_priority)],
        Load::Realistic => {
            // Table 4.1 of the Airbus DTSS test report: both CPU loads are
            // real-time processes.
            let mut hogs = ng("rt-hogs", rt(cpu("4".into(), 100)));
            hogs.rt_priority = Some(prio);
            let mut light = ng("light", rt(cpu("20".into(), 5)));
            light.rt_priority = Some(prio);
            let mut disk = ng("disk", s(&["--hdd", "1"]));
            disk.io_cap_bytes_per_s = Some(o.io_cap_bytes_per_s.unwrap_or(1_000_000_000 / 8));
            let timer = ng("timer", s(&["--timer", "1", "--timer-freq", "100000"]));
            // The real-time hogs last: once they run, everything else
            // (starting the other parts too) gets what RT throttling leaves.
            let mut v = vec![light, disk, timer];
            match &o.to {
                Some(to) => v.push(net(to, None)),
                None => notes.push(
                    "realistic: no network load (give --to ADDR, a host outside the flow under \
                     test, for the preset's 1 Gbit/s)"
                        .to_string(),
                ),
            }
            v.push(hogs);
            v
        }
    };
    Ok((parts, notes))
}

/// Refuses an option that does not apply to `load`, naming it.
fn check_options(load: Load, o: &Options) -> Result<(), StressError> {
    let bad = |m: String| Err(StressError::Option(m));
    let cpu_like = matches!(load, Load::Cpu | Load::CpuRt);
    if o.load.is_some() && !cpu_like {
        return bad(format!(
            "--load is for cpu and cpu-rt (a percent of a CPU per worker), not {}",
            load.name()
        ));
    }
    if o.rt_priority.is_some() && !matches!(load, Load::CpuRt | Load::Realistic | Load::Network) {
        return bad(format!(
            "--rt-priority is for cpu-rt, realistic and network, not {}",
            load.name()
        ));
    }
    if o.timer_hz.is_some() && !matches!(load, Load::Timer) {
        return bad(format!("--timer-freq is for timer, not {}", load.name()));
    }
    if o.io_cap_bytes_per_s.is_some() && !matches!(load, Load::Hdd | Load::Realistic) {
        return bad(format!(
            "--io-cap is for hdd and realistic, not {}",
            load.name()
        ));
    }
    let net_opts = o.port.is_some() || o.bitrate.is_some() || o.size.is_some();
    if (net_opts || o.to.is_some()) && !matches!(load, Load::Network | Load::Realistic) {
        return bad(format!(
            "--to, --port, --bitrate and --size are for network and realistic, not {}",
            load.name()
        ));
    }
    if o.workers.is_some() && load == Load::Realistic {
        return bad("--workers: the realistic preset has its own worker counts".into());
    }
    if load == Load::Network && o.to.is_none() {
        return bad("network load needs --to ADDR: a host outside the flow under test".into());
    }
    Ok(())
}

/// `wirelab send` arguments of network load.
fn net_args(
    o: &Options,
    to: &str,
    duration_s: Option<u64>,
    rt_priority: Option<u8>,
) -> Vec<String> {
    // Past the stressor's own end (a minute of margin), which stops it:
    // a sender that ended first would count as a part that died.
    let d = duration_s.map_or(24 * 3600, |d| d + 60);
    wirelab_jobs::SendJob {
        target: to.into(),
        port: o.port.unwrap_or(DEFAULT_NET_PORT),
        bitrate: Some(o.bitrate.clone().unwrap_or_else(|| "1Gbit".into())),
        size: Some(o.size.unwrap_or(DEFAULT_NET_SIZE).to_string()),
        duration_ns: Some(d * 1_000_000_000),
        rt_priority,
        quiet: true,
        ..Default::default()
    }
    .argv()
}

/// Parses a frequency: `100kHz`, `1MHz`, `2000Hz` or a plain number (Hz).
pub fn parse_hz(s: &str) -> Result<u64, StressError> {
    let t = s.trim();
    let (num, mult) = if let Some(n) = t.strip_suffix("GHz") {
        (n, 1e9)
    } else if let Some(n) = t.strip_suffix("MHz") {
        (n, 1e6)
    } else if let Some(n) = t.strip_suffix("kHz").or_else(|| t.strip_suffix("KHz")) {
        (n, 1e3)
    } else if let Some(n) = t.strip_suffix("Hz") {
        (n, 1.0)
    } else {
        (t, 1.0)
    };
    let v = wirelab_core::units::parse_number(num)
        .ok()
        .map(|v| v * mult)
        .filter(|v| v.is_finite() && *v >= 1.0 && *v <= 1e9 && v.fract() == 0.0)
        .ok_or_else(|| StressError::Frequency { given: s.into() })?;
    Ok(v as u64)
}

/// The `wirelab stress` job of a `[[stressor]]`: `to` is the address of
/// its `target` host (network load), `ready` the file it writes once
/// every part is up.
pub fn job_for(spec: &StressorSpec, to: Option<&str>, ready: &str) -> StressJob {
    let load = match (spec.preset, spec.kind) {
        (Some(StressPreset::Realistic), _) => Load::Realistic,
        (None, Some(k)) => Load::of_kind(k),
        (None, None) => Load::Cpu,
    };
    let (timer_freq, bitrate) = match load {
        Load::Timer => (spec.rate.clone(), None),
        _ => (None, spec.rate.clone()),
    };
    StressJob {
        kind: load.name().into(),
        workers: spec.workers,
        load: spec.load,
        rt_priority: spec.rt_priority,
        timer_freq,
        bitrate,
        to: to.map(str::to_string),
        port: spec.port,
        size: spec.size,
        io_cap: spec.io_cap.clone(),
        duration_ns: None,
        ready: Some(ready.into()),
        json: true,
        stress_ng_args: spec.args.clone(),
    }
}

/// How a `wirelab stress` run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Ended {
    /// Its `--duration` passed.
    Duration,
    /// SIGINT or SIGTERM.
    Signal,
    /// A part ended by itself (or never started): the load was not there.
    PartEnded,
}

/// One part as it ran.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PartReport {
    pub name: String,
    /// The program and its arguments.
    pub command: Vec<String>,
    pub pid: u32,
    /// Its exit code (None: ended by a signal).
    pub exit_code: Option<i32>,
    pub signal: Option<i32>,
    /// It ended before it was asked to.
    pub ended_early: bool,
    /// CPU seconds of the process and the workers it reaped.
    pub user_s: f64,
    pub system_s: f64,
    /// The write cap in force (bytes/s), when one was asked and applied.
    pub io_cap_bytes_per_s: Option<u64>,
}

/// `wirelab stress --json` (`wirelab.stress/1`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Report {
    pub schema: String,
    pub load: Load,
    pub ended: Ended,
    pub duration_s: f64,
    pub parts: Vec<PartReport>,
    /// CPU seconds of everything the stressor ran (parts, their workers,
    /// and workers orphaned by a part's death).
    pub user_s: f64,
    pub system_s: f64,
    /// What was not done as asked (an I/O cap that could not be applied,
    /// a preset's part left out), and why.
    pub notes: Vec<String>,
}

/// The report as the terminal shows it.
pub fn render_text(r: &Report) -> String {
    let mut s = format!(
        "stress {}: {:.1} s, ended by {}; CPU {:.2} s user, {:.2} s system\n",
        r.load.name(),
        r.duration_s,
        match r.ended {
            Ended::Duration => "its duration",
            Ended::Signal => "a signal",
            Ended::PartEnded => "a part's end",
        },
        r.user_s,
        r.system_s
    );
    for p in &r.parts {
        let how = match (p.exit_code, p.signal) {
            (Some(c), _) => format!("exit {c}"),
            (None, Some(sig)) => format!("signal {sig}"),
            _ => "?".into(),
        };
        s += &format!(
            "  {:<8} pid {:<7} {:<8} CPU {:>8.2} s user {:>8.2} s system{}  {}\n",
            p.name,
            p.pid,
            how,
            p.user_s,
            p.system_s,
            p.io_cap_bytes_per_s
                .map_or(String::new(), |c| format!("  (writes capped at {c} B/s)")),
            p.command[1..].join(" ")
        );
    }
    for n in &r.notes {
        s += &format!("  note: {n}\n");
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(p: &Part) -> String {
        p.args.join(" ")
    }

    #[test]
    fn kinds_map_to_stress_ng_arguments() {
        let o = Options::default();
        let one = |l| plan(l, &o, 2, None).unwrap().0;
        assert_eq!(args(&one(Load::Cpu)[0]), "--cpu 2 --cpu-load 100");
        assert_eq!(
            args(&one(Load::CpuRt)[0]),
            "--cpu 2 --cpu-load 100 --sched fifo --sched-prio 50"
        );
        assert_eq!(one(Load::CpuRt)[0].rt_priority, Some(50));
        // One worker per CPU for every kind.
        assert_eq!(args(&one(Load::Get)[0]), "--get 2");
        assert_eq!(args(&one(Load::Bigheap)[0]), "--bigheap 2");
        assert_eq!(args(&one(Load::Hdd)[0]), "--hdd 2");
        assert_eq!(args(&one(Load::Timer)[0]), "--timer 2 --timer-freq 1000000");
        let o = Options {
            workers: Some(3),
            load: Some(40),
            rt_priority: Some(70),
            args: vec!["--taskset".into(), "1".into()],
            ..Options::default()
        };
        let p = plan(Load::CpuRt, &o, 2, None).unwrap().0;
        assert_eq!(
            args(&p[0]),
            "--cpu 3 --cpu-load 40 --sched fifo --sched-prio 70 --taskset 1"
        );
        assert_eq!(p[0].program, Program::StressNg);
    }

    #[test]
    fn options_of_another_kind_are_refused_naming_the_flag() {
        let cases = [
            (
                Load::Get,
                Options {
                    load: Some(5),
                    ..Options::default()
                },
                "--load",
            ),
            (
                Load::Cpu,
                Options {
                    rt_priority: Some(5),
                    ..Options::default()
                },
                "--rt-priority",
            ),
            (
                Load::Cpu,
                Options {
                    timer_hz: Some(5),
                    ..Options::default()
                },
                "--timer-freq",
            ),
            (
                Load::Timer,
                Options {
                    io_cap_bytes_per_s: Some(5),
                    ..Options::default()
                },
                "--io-cap",
            ),
            (
                Load::Cpu,
                Options {
                    to: Some("10.0.0.1".into()),
                    ..Options::default()
                },
                "--to",
            ),
            (
                Load::Realistic,
                Options {
                    workers: Some(2),
                    ..Options::default()
                },
                "--workers",
            ),
            (Load::Network, Options::default(), "--to ADDR"),
        ];
        for (l, o, flag) in cases {
            let e = plan(l, &o, 2, None).unwrap_err().to_string();
            assert!(e.contains(flag), "{l:?}: {e}");
        }
    }

    #[test]
    fn network_load_is_wirelab_send_to_the_given_address() {
        let o = Options {
            to: Some("10.9.0.2".into()),
            bitrate: Some("200Mbit".into()),
            ..Options::default()
        };
        let p = plan(Load::Network, &o, 2, Some(5)).unwrap().0;
        assert_eq!(p[0].program, Program::Wirelab);
        assert_eq!(
            args(&p[0]),
            "send 10.9.0.2 --port 9 --quiet --duration 65s --bitrate 200Mbit --size 1472"
        );
    }

    #[test]
    fn realistic_is_table_4_1() {
        let (p, notes) = plan(Load::Realistic, &Options::default(), 2, None).unwrap();
        let names: Vec<&str> = p.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(names, ["light", "disk", "timer", "rt-hogs"]);
        assert_eq!(
            args(&p[0]),
            "--cpu 20 --cpu-load 5 --sched fifo --sched-prio 50"
        );
        assert_eq!(p[0].rt_priority, Some(50));
        assert_eq!(args(&p[1]), "--hdd 1");
        assert_eq!(p[1].io_cap_bytes_per_s, Some(125_000_000));
        assert_eq!(args(&p[2]), "--timer 1 --timer-freq 100000");
        assert_eq!(
            args(&p[3]),
            "--cpu 4 --cpu-load 100 --sched fifo --sched-prio 50"
        );
        assert!(notes[0].contains("no network load"), "{notes:?}");
        let o = Options {
            to: Some("10.0.0.9".into()),
            ..Options::default()
        };
        let (p, notes) = plan(Load::Realistic, &o, 2, None).unwrap();
        assert_eq!(p.len(), 5);
        assert!(notes.is_empty());
        assert_eq!(
            args(&p[3]),
            "send 10.0.0.9 --port 9 --quiet --duration 24h --bitrate 1Gbit --size 1472"
        );
    }

    #[test]
    fn frequencies() {
        assert_eq!(parse_hz("100kHz"), Ok(100_000));
        assert_eq!(parse_hz("1MHz"), Ok(1_000_000));
        assert_eq!(parse_hz("2.5kHz"), Ok(2_500));
        assert_eq!(parse_hz("500"), Ok(500));
        for bad in ["", "0", "1.5", "2GHz", "fast", "-1kHz"] {
            assert!(parse_hz(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_stressor_section_becomes_a_stress_command() {
        let spec = StressorSpec {
            host: "rx".into(),
            preset: None,
            kind: Some(StressKind::Timer),
            workers: Some(2),
            load: None,
            rt_priority: None,
            rate: Some("100kHz".into()),
            target: None,
            port: None,
            size: None,
            io_cap: None,
            when: None,
            args: vec!["--timer-slack".into(), "0".into()],
        };
        assert_eq!(
            job_for(&spec, None, "s.ready").argv().join(" "),
            "stress timer --workers 2 --timer-freq 100kHz --ready s.ready --json -- --timer-slack 0"
        );
        let spec = StressorSpec {
            kind: Some(StressKind::Network),
            rate: Some("100Mbit".into()),
            target: Some("far".into()),
            workers: None,
            args: vec![],
            ..spec
        };
        assert_eq!(
            job_for(&spec, Some("10.1.0.2"), "r").argv().join(" "),
            "stress network --bitrate 100Mbit --to 10.1.0.2 --ready r --json"
        );
    }
}

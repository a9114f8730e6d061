//! Flags of `wirelab stress KIND`: one stressor until stopped.

use clap::Args;
use std::path::PathBuf;
use wirelab_host::stress::{self, Load, Options};

#[derive(Args, Debug)]
#[command(after_long_help = "Loads (stress-ng arguments; N = --workers):\n  \
cpu        --cpu N --cpu-load L          (N default, for every kind: the CPU count; L = --load, default 100)\n  \
get        --get N                       (kernel-mode load: get*() system calls)\n  \
cpu-rt     --cpu N --cpu-load L --sched fifo --sched-prio P   (P = --rt-priority, default 50)\n  \
bigheap    --bigheap N                   (memory: a growing heap)\n  \
hdd        --hdd N                       (I/O in the working directory; --io-cap caps it)\n  \
timer      --timer N --timer-freq F      (F = --timer-freq, default 1MHz)\n  \
network    wirelab send --to ADDR --bitrate R (default 1Gbit) -s SIZE, at SCHED_FIFO P with --rt-priority P\n  \
realistic  Table 4.1 of the Airbus DTSS test report: 4 SCHED_FIFO workers at 100 %, 20 SCHED_FIFO at 5 %, one disk writer capped \
at 1 Gbit/s, a 100 kHz timer, and with --to network load at 1 Gbit/s\n\n\
Arguments after -- go to every stress-ng part verbatim. --io-cap uses cgroup v2 (io.max on the \
disk holding the working directory); where that is not available the writer runs uncapped and \
the report says why.\n\n\
The stressor runs until --duration passes, SIGINT or SIGTERM; then every process it started is \
stopped (SIGINT, SIGKILL 5 s later) and reaped. A part that ends by itself stops the rest and \
makes the command fail (exit 1). Needs stress-ng (apt-get install stress-ng).\n\n\
Examples:\n  wirelab stress cpu --workers 2 --load 50 -d 10s\n  \
wirelab stress realistic --to 10.0.0.9 --json")]
pub struct StressArgs {
    /// The load: cpu, get, cpu-rt, bigheap, hdd, timer, network, realistic
    #[arg(value_name = "KIND", value_parser = |s: &str| s.parse::<Load>())]
    pub kind: Load,
    /// Workers (stress-ng instances); default: the CPU count
    #[arg(short, long, value_parser = clap::value_parser!(u32).range(1..=4096))]
    pub workers: Option<u32>,
    /// Percent of a CPU per cpu/cpu-rt worker (1-100)
    #[arg(long, value_name = "PERCENT", value_parser = clap::value_parser!(u8).range(1..=100))]
    pub load: Option<u8>,
    /// SCHED_FIFO priority of cpu-rt and the realistic preset's RT workers (1-99, default 50), or
    /// of network load's sender (default: not real-time)
    #[arg(long, value_parser = clap::value_parser!(u8).range(1..=99))]
    pub rt_priority: Option<u8>,
    /// Timer frequency, e.g. 100kHz, 1MHz (default 1MHz)
    #[arg(long, value_name = "HZ", value_parser = stress::parse_hz)]
    pub timer_freq: Option<u64>,
    /// Network load: the address to send to (a host outside the flow under test)
    #[arg(long, value_name = "ADDR")]
    pub to: Option<String>,
    /// Network load: UDP port (default 9)
    #[arg(long)]
    pub port: Option<u16>,
    /// Network load: bit rate of UDP payload, e.g. 100Mbit (default 1Gbit)
    #[arg(long, value_name = "BITRATE", value_parser = crate::values::BITRATE)]
    pub bitrate: Option<f64>,
    /// Network load: UDP payload bytes (24-65507, default 1472)
    #[arg(long, value_parser = clap::value_parser!(u32).range(24..=65507))]
    pub size: Option<u32>,
    /// Cap the disk writer's writes, e.g. 1Gbit, 50MB/s (cgroup v2 io.max)
    #[arg(long, value_name = "BITRATE", value_parser = crate::values::BITRATE)]
    pub io_cap: Option<f64>,
    /// Stop after this long, e.g. 30s (default: until SIGINT or SIGTERM)
    #[arg(short, long, value_name = "DURATION", value_parser = crate::values::NONZERO_DURATION)]
    pub duration: Option<u64>,
    /// Write this file once every part is up (how `wirelab run` sees the load there)
    #[arg(long, value_name = "FILE")]
    pub ready: Option<PathBuf>,
    /// Print the report as JSON (wirelab.stress/1)
    #[arg(long)]
    pub json: bool,
    /// More stress-ng arguments, for every stress-ng part
    #[arg(last = true, value_name = "STRESS-NG ARGS")]
    pub args: Vec<String>,
}

impl StressArgs {
    /// The stressor's options.
    pub fn options(&self) -> Options {
        Options {
            workers: self.workers,
            load: self.load,
            rt_priority: self.rt_priority,
            timer_hz: self.timer_freq,
            to: self.to.clone(),
            port: self.port,
            bitrate: self.bitrate.map(|b| format!("{b}")),
            size: self.size,
            io_cap_bytes_per_s: self.io_cap.map(|b| (b / 8.0).round().max(1.0) as u64),
            args: self.args.clone(),
        }
    }
}

//! Flags of `wirelab recv`.

use crate::common::{FormatArg, IpFamily, DEFAULT_PORT};
use crate::values::{self, NONZERO_DURATION, WINDOW};
use clap::{value_parser, Args, ValueEnum};
use std::path::PathBuf;
use std::time::Duration;
use wirelab_core::units;
use wirelab_engine::job::net::BindAddr;
use wirelab_engine::job::recv::{RecvJob, RecvSettings};
use wirelab_engine::job::rt::RtSetup;
use wirelab_engine::receiver::{RecvConfig, RecvWait};

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum RecvWaitArg {
    /// Block until packets arrive
    Block,
    /// Wake every --poll-period and take what is queued
    Poll,
    /// Block while traffic is sparse, poll when it is dense (forecaster with hysteresis)
    Adaptive,
}

#[derive(Args, Debug)]
#[command(after_long_help = "EXAMPLES:\n  \
wirelab recv                           # port 5757, IPv6 socket accepting IPv4 too\n  \
wirelab recv -4 --port 9000 --json     # summary as JSON on stdout when it ends\n  \
wirelab recv --echo --forever          # a standing reflector for `wirelab send --echo`\n  \
wirelab recv --record rx.wlr           # per-packet records for `wirelab analyze`\n\n\
It ends on Ctrl-C / SIGTERM, or once every flow has sent its end marker (then --linger), or after --idle-timeout.")]
pub struct RecvArgs {
    /// UDP port to listen on (0: a free port, shown at the start)
    #[arg(short, long, default_value_t = DEFAULT_PORT)]
    pub port: u16,
    /// Local address to bind (default: all addresses)
    #[arg(long, value_name = "ADDR")]
    pub bind: Option<BindAddr>,
    #[command(flatten)]
    pub family: IpFamily,
    /// Reflect echo requests back to their sender with receive/transmit times
    #[arg(long)]
    pub echo: bool,
    /// Probe layout expected: wirelab, or luna from a LUNA client (flows numbered by
    /// source address; ends after --idle-timeout, 2s unless given, as LUNA sends no end
    /// marker; echo requests mirrored unchanged)
    #[arg(long, value_enum, default_value = "wirelab")]
    pub format: FormatArg,
    /// Socket receive buffer size (4KiB to 1GiB)
    #[arg(long, default_value = "32MiB", value_parser = values::bytes(4096, 1 << 30, "between 4KiB and 1GiB"))]
    pub rcvbuf: u64,
    /// Datagrams taken per recvmmsg call
    #[arg(long, default_value_t = 64, value_parser = clap::value_parser!(u16).range(1..=1024))]
    pub batch: u16,
    /// SO_BUSY_POLL in µs (0 = off, at most 1000000; above the sysctl needs CAP_NET_ADMIN)
    #[arg(long, default_value_t = 0, value_parser = value_parser!(u32).range(..=1_000_000))]
    pub busy_poll: u32,
    /// How to wait for packets: block in recvmmsg, poll every --poll-period, or let the
    /// arrival-rate forecaster switch between the two (few wake-ups under floods)
    #[arg(long, value_enum, default_value_t = RecvWaitArg::Adaptive)]
    pub wait: RecvWaitArg,
    /// Poll period of --wait poll and adaptive (1us to 1s)
    #[arg(long, default_value = "200us", value_name = "DURATION",
          value_parser = values::duration(1_000, 1_000_000_000, "between 1us and 1s"))]
    pub poll_period: u64,
    /// After every flow has ended, wait this long for late packets
    #[arg(long, default_value = "300ms", value_name = "DURATION", value_parser = units::parse_duration_ns)]
    pub linger: u64,
    /// End when nothing has arrived for this long (after the first packet)
    #[arg(long, value_name = "DURATION", value_parser = NONZERO_DURATION)]
    pub idle_timeout: Option<u64>,
    /// End after this long in any case
    #[arg(long, value_name = "DURATION", value_parser = NONZERO_DURATION)]
    pub timeout: Option<u64>,
    /// Keep running after flows end (only a signal or --timeout ends it)
    #[arg(long)]
    pub forever: bool,
    /// Window for throughput over time in the summary (at least 1ms)
    #[arg(long, default_value = "1s", value_name = "DURATION", value_parser = WINDOW)]
    pub window: u64,
    /// Most flows measured live (up to about 1.3 MiB each once a flow has sent over 1024
    /// probes); probes of further flows are counted, not measured
    #[arg(long, default_value_t = wirelab_analysis::DEFAULT_MAX_LIVE_FLOWS as u32,
          value_name = "N", value_parser = clap::value_parser!(u32).range(1..=65536))]
    pub max_flows: u32,
    /// Rewrite FILE with the loss so far per flow (JSON, schema wirelab.recv.status/1:
    /// received, highest sequence, lost) at the start, every 250 ms and at the end; a
    /// controller such as `wirelab run` reads it to abort a run early
    #[arg(long, value_name = "FILE")]
    pub status: Option<PathBuf>,
    /// Share the port with other receivers started with --reuse-port (SO_REUSEPORT: the
    /// kernel gives each sender address and port to one of them); without it a port
    /// already in use is refused
    #[arg(long)]
    pub reuse_port: bool,
    /// Pin the receiving thread to this CPU
    #[arg(long)]
    pub cpu: Option<usize>,
    /// Run the receiving thread under SCHED_FIFO at this priority (1-99; needs CAP_SYS_NICE)
    #[arg(long, value_name = "PRIO", value_parser = value_parser!(i32).range(1..=99))]
    pub rt_priority: Option<i32>,
    /// Have the NIC IF stamp every received packet in hardware (SIOCSHWTSTAMP, needs
    /// CAP_NET_ADMIN); the NIC's setting is restored at exit. Stamps are on the NIC's
    /// clock: sync it to the system clock (phc2sys) for one-way delays
    #[arg(long, value_name = "IF")]
    pub hw_timestamps: Option<String>,
    /// Write per-packet records here
    #[arg(short = 'o', long, value_name = "FILE")]
    pub record: Option<PathBuf>,
    /// Print the summary as JSON (schema wirelab.recv/1) when it ends
    #[arg(long)]
    pub json: bool,
    /// No progress output on stderr
    #[arg(short, long)]
    pub quiet: bool,
}

impl RecvArgs {
    /// The receiver these flags ask for.
    pub fn job(&self) -> RecvJob {
        let bind = BindAddr::or_any(self.bind, self.port, self.family.family());
        let period_ns = self.poll_period;
        RecvJob {
            recv: RecvConfig {
                bind,
                v6only: self.family.ipv6,
                echo: self.echo,
                rcvbuf: self.rcvbuf as usize,
                batch: self.batch.into(),
                busy_poll_us: self.busy_poll,
                linger: Duration::from_nanos(self.linger),
                idle_timeout: match self.idle_timeout {
                    // LUNA flows have no end marker: end when they fall silent.
                    None if self.format == FormatArg::Luna
                        && self.timeout.is_none()
                        && !self.forever =>
                    {
                        Some(Duration::from_secs(2))
                    }
                    d => d.map(Duration::from_nanos),
                },
                format: self.format.engine(),
                reuse_port: self.reuse_port,
                max_duration: self.timeout.map(Duration::from_nanos),
                forever: self.forever,
                wait: match self.wait {
                    RecvWaitArg::Block => RecvWait::Block,
                    RecvWaitArg::Poll => RecvWait::Poll { period_ns },
                    RecvWaitArg::Adaptive => RecvWait::Adaptive { period_ns },
                },
            },
            rt: RtSetup {
                cpu: self.cpu,
                fifo_priority: self.rt_priority,
                mlock: false,
            },
            window_ns: self.window,
            max_flows: self.max_flows as usize,
            record: self.record.clone(),
            status: self.status.clone(),
            hw_timestamps: self.hw_timestamps.clone(),
            settings: RecvSettings {
                rcvbuf: self.rcvbuf,
                batch: self.batch,
                busy_poll_us: self.busy_poll,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{test_parse, Command};

    fn job(args: &str) -> RecvJob {
        match test_parse(&format!("recv {args}")) {
            Command::Recv(a) => a.job(),
            c => panic!("{c:?}"),
        }
    }

    #[test]
    fn luna_flows_end_when_silent_unless_told_otherwise() {
        let secs = |args| job(args).recv.idle_timeout.map(|d| d.as_secs_f64());
        assert_eq!(secs("--format luna"), Some(2.0));
        assert_eq!(secs("--format luna --idle-timeout 500ms"), Some(0.5));
        assert_eq!(secs("--format luna --forever"), None);
        assert_eq!(secs("--format luna --timeout 9s"), None);
        assert_eq!(secs(""), None);
        let j = job("-4 --port 9000 --wait poll --poll-period 50us");
        assert_eq!(j.recv.bind.to_string(), "0.0.0.0:9000");
        assert!(matches!(j.recv.wait, RecvWait::Poll { period_ns: 50_000 }));
    }
}

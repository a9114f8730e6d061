//! Command-line interface definitions.

use crate::values::{self, NONZERO_DURATION, WINDOW};
use clap::{value_parser, Args, Parser, Subcommand, ValueEnum};
use std::path::PathBuf;
use wirelab_core::gen::GenSpec;
use wirelab_core::replay::LatePolicy;
use wirelab_core::units;
use wirelab_engine::job::net::{BindAddr, Family};
use wirelab_engine::job::replay::select::Selector;
use wirelab_engine::replay::{Ranges, Spin};
use wirelab_engine::sender::Padding;
use wirelab_wire::rewrite::arg::{SourceMac, Tpid, VlanOp};
use wirelab_wire::rewrite::split::PortSet;
use wirelab_wire::rewrite::{parse_mac, Cidr, FixLen, IpMap, PortMap, Ttl};

pub const DEFAULT_PORT: u16 = 5757;

#[derive(Parser, Debug)]
#[command(
    name = "wirelab",
    version,
    about = "A precise network test lab in one binary: generate, receive, reflect and measure traffic per packet",
    long_about = "wirelab generates UDP probes with exact per-packet timing, receives or reflects them with kernel \
timestamps, and turns per-packet records into loss, reordering, delay, jitter and pacing statistics.\n\n\
Quick start:\n  wirelab demo                      # a self-contained lab in two network namespaces\n  \
wirelab recv                      # on host B\n  wirelab send B --rate 10kpps -d 5s  # on host A\n\n\
Exit codes: 0 success, 1 runtime failure, 2 usage error, 3 missing privilege \
(`wirelab run`: 3 a point aborted, 4 infrastructure failure, 130 interrupted).\n\
Set WIRELAB_LOG=debug for diagnostics on stderr.",
    propagate_version = true
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Send paced probes to a receiver (or reflector, with --echo)
    Send(SendArgs),
    /// Receive probes, measure them live, optionally reflect them (--echo)
    Recv(RecvArgs),
    /// Join sender and receiver record files and report every metric
    Analyze(AnalyzeArgs),
    /// Export records, probes joined with their arrivals, or a campaign: CSV, JSON lines, Parquet
    Export(ExportArgs),
    /// Make one self-contained HTML page with plots from record files
    Report(crate::cmd::report::ReportArgs),
    /// Run a complete lab: two network namespaces, a receiver, a sender, an analysis
    Demo(DemoArgs),
    /// Capture packets to pcapng/pcap through an mmap'd TPACKET_V3 ring, losslessly
    Capture(CaptureArgs),
    /// Replay pcap/pcapng files onto an interface with measured timing fidelity
    Replay(ReplayArgs),
    /// Bridge two interfaces through an emulated link: delay, loss, rate, traces; never early
    Emulate(crate::cmd::emulate::EmulateArgs),
    /// Trace tools: convert, dump, encode, gen, stats, from-records, maketable
    Trace(crate::cmd::trace::TraceArgs),
    /// Run a campaign from a control file: hosts, flows, sweep, emulator, captures
    Run(crate::cmd::run::RunArgs),
    /// Serve `wirelab run`'s controller on stdin/stdout (started by it over ssh or ip netns)
    Agent(crate::cmd::agent::AgentArgs),
    /// Run a stressor (stress-ng CPU, kernel, RT, memory, I/O, timer load; network load) until stopped
    Stress(crate::cmd::stress::StressArgs),
    /// A host's environment: snapshot, diff, apply settings and revert them (local, netns:, ssh://)
    Env(crate::cmd::env::EnvArgs),
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum WaitArg {
    /// Sleep until each deadline (cheapest, least precise)
    Sleep,
    /// Busy-poll the clock (most precise, uses a full core)
    Spin,
    /// Sleep until shortly before the deadline (--spin-margin), then spin
    Hybrid,
}

/// Probe layout on the wire.
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum FormatArg {
    /// wirelab's header: flow id, 64-bit sequence, send time, end marker
    #[default]
    Wirelab,
    /// LUNA's 21-byte layout (u32 sequence, timespec, flags) for LUNA peers: no flow id
    /// (flows told apart by source address), no end marker, echoes mirrored unchanged
    Luna,
}

impl CatchUpArgs {
    /// The policy; `rebase_threshold_ns` is the lateness --late rebase shifts on.
    pub fn policy(&self, rebase_threshold_ns: u64) -> LatePolicy {
        match self.late {
            LateArg::Burst => LatePolicy::Burst,
            LateArg::Rebase => LatePolicy::Rebase {
                threshold_ns: rebase_threshold_ns,
            },
            LateArg::Spread => LatePolicy::Spread {
                factor: self.spread_factor,
                max_shrink_ns: self.spread_max_shrink,
                horizon: self.spread_horizon,
            },
        }
    }
}

/// Whether a sender calibrates its start phase (send, replay).
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum PhaseArg {
    /// Calibrate, then start at the phase whose deadlines meet the fewest stalls
    Auto,
    /// Start at once
    Off,
}

/// Start-phase calibration against periodic stalls (send, replay).
#[derive(Args, Debug, Clone)]
pub struct PhaseArgs {
    /// Start phase: "auto" first spins for --phase-calibration on the sending CPU, maps
    /// where it loses the CPU at regular times (the kernel tick, host timers on a VM) and
    /// starts (at most ~25ms after the calibration) at the phase where the deadlines miss
    /// those stalls; what it saw and chose is in the --json output ("phase"). "off" starts
    /// at once. Default: auto (send: off with --start-at)
    #[arg(long, value_enum)]
    pub phase: Option<PhaseArg>,
    /// How long --phase auto watches for stalls (40ms, two 20ms folds, to 10s)
    #[arg(long, default_value = "200ms", value_name = "DURATION",
          value_parser = values::duration(40_000_000, 10_000_000_000, "between 40ms and 10s"))]
    pub phase_calibration: u64,
}

impl PhaseArgs {
    /// The calibration to run, or None with --phase off.
    pub fn config(&self) -> Option<wirelab_engine::phase::PhaseConfig> {
        (self.phase != Some(PhaseArg::Off)).then(|| wirelab_engine::phase::PhaseConfig {
            calibrate: std::time::Duration::from_nanos(self.phase_calibration),
        })
    }
}

/// `send --socket`.
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum SocketArg {
    /// A UDP socket: the kernel builds every header
    Udp,
    /// A raw IPv4 socket (IP_HDRINCL): wirelab builds the IPv4 and UDP headers
    Raw,
    /// An AF_PACKET socket on the route's egress interface: wirelab builds the Ethernet,
    /// IPv4 and UDP headers, the next hop's MAC from the neighbour table
    Packet,
}

impl SocketArg {
    pub fn engine(self) -> wirelab_engine::txpath::SocketKind {
        use wirelab_engine::txpath::SocketKind;
        match self {
            SocketArg::Udp => SocketKind::Udp,
            SocketArg::Raw => SocketKind::Raw,
            SocketArg::Packet => SocketKind::Packet,
        }
    }
}

/// `send --start-at`: unix nanoseconds, or an RFC 3339 time in UTC.
pub fn parse_start_at(s: &str) -> Result<u64, String> {
    let hint = "give unix nanoseconds (1795428000500000000) or an RFC 3339 time in UTC \
                (2026-11-23T10:00:00.5Z)";
    if !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) {
        return s
            .parse::<u64>()
            .map_err(|_| format!("{s:?} is beyond 2554: {hint}"));
    }
    let t = humantime::parse_rfc3339(s).map_err(|e| format!("{s:?}: {e}: {hint}"))?;
    let ns = t
        .duration_since(std::time::UNIX_EPOCH)
        .map_err(|_| format!("{s:?} is before 1970: {hint}"))?
        .as_nanos();
    u64::try_from(ns).map_err(|_| format!("{s:?} is beyond 2554: {hint}"))
}

impl FormatArg {
    pub fn engine(self) -> wirelab_engine::ProbeFormat {
        match self {
            FormatArg::Wirelab => wirelab_engine::ProbeFormat::Wirelab,
            FormatArg::Luna => wirelab_engine::ProbeFormat::Luna,
        }
    }
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum RecvWaitArg {
    /// Block until packets arrive
    Block,
    /// Wake every --poll-period and take what is queued
    Poll,
    /// Block while traffic is sparse, poll when it is dense (forecaster with hysteresis)
    Adaptive,
}

#[derive(Args, Debug, Clone)]
pub struct IpFamily {
    /// Use IPv4 only
    #[arg(short = '4', long = "ipv4", conflicts_with = "ipv6")]
    pub ipv4: bool,
    /// Use IPv6 only (the receiver then refuses IPv4)
    #[arg(short = '6', long = "ipv6")]
    pub ipv6: bool,
}

impl IpFamily {
    pub fn family(&self) -> Family {
        match (self.ipv4, self.ipv6) {
            (true, _) => Family::V4,
            (_, true) => Family::V6,
            _ => Family::Any,
        }
    }
}

#[derive(Args, Debug)]
#[command(after_long_help = "INTERVAL AND SIZE SPECS:\n  \
1ms | const:1ms          constant\n  \
uniform:MIN,MAX          uniform\n  \
exp:MEAN                 exponential (Poisson arrivals as intervals)\n  \
normal:MEAN,SD           normal (clamped at the bounds, clamps counted)\n  \
lognormal:MEAN,SD        log-normal with this mean and SD\n  \
pareto:SCALE,SHAPE       Pareto (SCALE = minimum)\n  \
weibull:SCALE,SHAPE      Weibull\n  \
gamma:SHAPE,SCALE        gamma\n  \
cauchy:MEDIAN,SCALE      Cauchy (clamped to the valid range, clamps counted)\n  \
onoff:ON/OFF/INNER       bursts: on/off period lengths from specs, INNER while on\n  \
file:PATH[,once]         values from a file, one per line (looped unless once)\n  \
cdf:PATH                 empirical CDF: lines \"VALUE PROBABILITY\"\n\
Intervals take time units (ns, us, ms, s); sizes take bytes (64, 1500B, 1KiB).\n\n\
EXAMPLES:\n  \
wirelab send 10.0.0.2 --rate 10kpps --size 100 --count 100000 --json\n  \
wirelab send ::1 --interval exp:1ms --size uniform:64,1400 --duration 10s --record tx.wlr\n  \
wirelab send host --echo --interval 10ms --duration 30s     # RTT against `wirelab recv --echo`\n  \
wirelab send 10.0.0.2 --socket packet --dscp 46 -n 1000     # Ethernet, IPv4, UDP built by wirelab\n  \
wirelab send 10.0.0.2 --start-at 2026-11-23T10:00:00Z       # first probe at that instant (UTC)")]
pub struct SendArgs {
    /// Receiver host name or address
    pub host: String,
    /// Receiver UDP port
    #[arg(short, long, default_value_t = DEFAULT_PORT, value_parser = value_parser!(u16).range(1..))]
    pub port: u16,
    #[command(flatten)]
    pub family: IpFamily,
    /// Local address to bind (default: any)
    #[arg(long, value_name = "ADDR")]
    pub bind: Option<BindAddr>,
    /// Socket the probes leave through: udp; raw (IP_HDRINCL: wirelab builds IPv4 + UDP
    /// headers); packet (AF_PACKET on the route's egress interface, Ethernet header too, the
    /// next hop's MAC from the neighbour table, resolved by ARP if missing). raw and packet:
    /// IPv4 only, need CAP_NET_RAW, and do not fragment: sizes up to the MTU - 28
    #[arg(long, value_enum, default_value_t = SocketArg::Udp)]
    pub socket: SocketArg,
    /// Flow id of the first flow (0..2^32); each flow has its own sequence space
    #[arg(long, default_value_t = 1)]
    pub flow: u32,
    /// Number of concurrent flows (ids FLOW, FLOW+1, ...), each on its own socket and thread
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=256))]
    pub flows: u32,
    /// Interval between probes as a spec (see below), e.g. 100us, exp:1ms; 0 sends as fast
    /// as possible (no schedule); at most 1h
    #[arg(short, long, value_name = "SPEC", conflicts_with_all = ["rate", "bitrate"],
          value_parser = values::INTERVAL)]
    pub interval: Option<GenSpec>,
    /// Constant packet rate, e.g. 10kpps, 1Mpps, 500
    #[arg(short, long, value_name = "RATE", conflicts_with = "bitrate", value_parser = values::RATE)]
    pub rate: Option<f64>,
    /// Constant bit rate of UDP payload, e.g. 50Mbit, 1Gbit (uses the mean size)
    #[arg(short, long, value_name = "BITRATE", value_parser = values::BITRATE)]
    pub bitrate: Option<f64>,
    /// UDP payload size as a spec, e.g. 100, uniform:64,1400: 24 (40 with --echo, 21 with
    /// --format luna) to 65507 bytes; a distribution's tail beyond them is clamped and counted
    #[arg(short, long, value_name = "SPEC", default_value = "64", value_parser = values::SIZE)]
    pub size: GenSpec,
    /// Stop after this many probes
    #[arg(short = 'n', long, value_parser = values::at_least(1u64))]
    pub count: Option<u64>,
    /// Stop after this long, e.g. 5s, 500ms (default 10s when no --count)
    #[arg(short, long, value_name = "DURATION", value_parser = NONZERO_DURATION)]
    pub duration: Option<u64>,
    /// DSCP code point (0-63), set in the TOS/traffic-class byte
    #[arg(long, value_parser = clap::value_parser!(u8).range(0..=63), conflicts_with = "tos")]
    pub dscp: Option<u8>,
    /// Raw TOS / traffic-class byte (0-255)
    #[arg(long)]
    pub tos: Option<u8>,
    /// Padding after the probe header: a byte value (0x00-0xff) or "random"
    #[arg(long, default_value = "0")]
    pub padding: Padding,
    /// Flag the first N probes as warm-up (analysis excludes them)
    #[arg(long, default_value_t = 0)]
    pub warmup: u64,
    /// How to wait for each deadline
    #[arg(long, value_enum, default_value_t = WaitArg::Hybrid)]
    pub wait: WaitArg,
    /// With --wait hybrid: start spinning this long before the deadline; "auto" learns it
    /// from how late this machine's sleeps wake up (starting at 2ms, between 50us and 5ms:
    /// at 500 pps and more the sender then spins through every gap) and drops to 100us while
    /// the sender waits for a CPU shared with busy work; a duration fixes it
    #[arg(long, default_value = "auto", value_name = "DURATION|auto")]
    pub spin_margin: Spin,
    /// Most probes sent in one sendmmsg call when behind schedule
    #[arg(long, default_value_t = 64, value_parser = clap::value_parser!(u16).range(1..=64))]
    pub batch: u16,
    /// Run the sending threads under SCHED_FIFO at this priority (1-99; needs CAP_SYS_NICE)
    #[arg(long, value_name = "PRIO", value_parser = value_parser!(i32).range(1..=99))]
    pub rt_priority: Option<i32>,
    /// Pin the sending thread to this CPU (flow i goes to CPU+i)
    #[arg(long)]
    pub cpu: Option<usize>,
    /// Lock all memory (mlockall; needs CAP_IPC_LOCK)
    #[arg(long)]
    pub mlock: bool,
    /// Do not send the empty priming datagram before the first probe (it resolves the
    /// neighbour and warms the send path so the first probes leave on time; receivers ignore it)
    #[arg(long)]
    pub no_prime: bool,
    /// Keep the schedule's origin at the planned start even when the first send call
    /// returns late (default: deadlines run from the first packet's departure, so a slow
    /// first call on a cold path does not make the second packet late)
    #[arg(long)]
    pub planned_start: bool,
    /// Request echo replies (the receiver runs `wirelab recv --echo`) and measure RTT
    #[arg(long)]
    pub echo: bool,
    /// Probe layout: wirelab, or luna for a LUNA server (21-byte minimum; RTT only with
    /// --echo; no end marker, so the receiver cannot count tail loss)
    #[arg(long, value_enum, default_value = "wirelab")]
    pub format: FormatArg,
    #[command(flatten)]
    pub catch_up: CatchUpArgs,
    /// With a constant interval (see --phase)
    #[command(flatten)]
    pub phase: PhaseArgs,
    /// Absolute start: the first probe's deadline, as unix nanoseconds or RFC 3339 UTC
    /// (2026-11-23T10:00:00.5Z), up to 24 h ahead (1 ms late at most, once the flows are set
    /// up); the phase is then not calibrated (--phase off)
    #[arg(long, value_name = "TIME", value_parser = parse_start_at)]
    pub start_at: Option<u64>,
    /// With --echo: how long to wait for outstanding replies at the end
    #[arg(long, default_value = "1s", value_name = "DURATION", value_parser = units::parse_duration_ns)]
    pub echo_wait: u64,
    /// Seed of every random choice (intervals, sizes, padding); same seed, same run
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Write per-packet records here (read with `wirelab analyze` / `export`)
    #[arg(short = 'o', long, value_name = "FILE")]
    pub record: Option<PathBuf>,
    /// Print the summary as JSON (schema wirelab.send/1)
    #[arg(long)]
    pub json: bool,
    /// No progress output on stderr
    #[arg(short, long)]
    pub quiet: bool,
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

#[derive(Args, Debug)]
#[command(after_long_help = "EXAMPLES:\n  \
wirelab analyze tx.wlr rx.wlr              # join sender and receiver by flow and sequence\n  \
wirelab analyze rx.wlr --json              # receiver records alone\n  \
wirelab analyze tx.wlr --window 100ms      # sender alone: pacing accuracy, RTT with --echo\n  \
wirelab analyze cap.pcapng tx.wlr          # probes in a capture (any tool's) as receive records\n  \
wirelab analyze voip.pcap --rtp-clock 96=48000   # RTP streams: loss, sequence errors, jitter\n\n\
Captures (pcap or pcapng, by their magic) mix freely with record files: each wirelab probe in one is a receive record (its time the capture's), and RTP streams are measured as Wireshark's RTP stream analysis measures them.\n\n\
One-way delay is receive time minus send time on two clocks: it is exact only when both hosts' clocks are synchronized (on one host they are the same clock).")]
pub struct AnalyzeArgs {
    /// Record files written by `send --record` and `recv --record`, pcap/pcapng captures,
    /// or one results directory of `wirelab run` (its summary is derived again from its
    /// records)
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    /// Window for throughput over time (at least 1ms)
    #[arg(long, default_value = "1s", value_name = "DURATION", value_parser = WINDOW)]
    pub window: u64,
    /// Most flows analyzed; inputs with more are refused before any is analyzed
    #[arg(long, default_value_t = wirelab_analysis::join::DEFAULT_MAX_FLOWS as u32,
          value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub max_flows: u32,
    /// Print the report as JSON (schema wirelab.analysis/1)
    #[arg(long)]
    pub json: bool,
    /// What to look for in captures
    #[command(flatten)]
    pub capture: AnalyzeCaptureArgs,
}

/// `analyze`'s options for pcap/pcapng inputs.
#[derive(Args, Debug, Default)]
pub struct AnalyzeCaptureArgs {
    /// Captures: UDP destination port whose datagrams are LUNA probes (LUNA's layout has
    /// no magic to find it by); repeat for more ports
    #[arg(long, value_name = "PORT", value_parser = clap::value_parser!(u16).range(1..))]
    pub luna_port: Vec<u16>,
    /// Captures: only UDP datagrams from or to PORT are RTP (like Wireshark's Decode As);
    /// without it every UDP datagram between ports >= 1024 that parses as RTP version 2
    /// is (like its RTP heuristic); repeat for more ports
    #[arg(long, value_name = "PORT", value_parser = clap::value_parser!(u16).range(1..))]
    pub rtp_port: Vec<u16>,
    /// Captures: the RTP clock rate of payload type PT in Hz (dynamic types have none
    /// without it, so no jitter); repeat for more types
    #[arg(long, value_name = "PT=HZ", value_parser = crate::cmd::analyze::parse_rtp_clock)]
    pub rtp_clock: Vec<(u8, u32)>,
    /// Captures: do not look for RTP streams
    #[arg(long)]
    pub no_rtp: bool,
}

impl AnalyzeCaptureArgs {
    /// The capture options, keeping at most `max_rtp_streams` RTP streams.
    pub fn options(&self, max_rtp_streams: usize) -> wirelab_analysis::CaptureOptions {
        wirelab_analysis::CaptureOptions {
            luna_ports: self.luna_port.clone(),
            rtp: !self.no_rtp,
            rtp_ports: self.rtp_port.clone(),
            rtp_clocks: self.rtp_clock.iter().copied().collect(),
            max_rtp_streams,
        }
    }
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExportFormat {
    /// Comma-separated values with a header line
    Csv,
    /// One JSON object per line
    Jsonl,
    /// Apache Parquet (snappy): a file, or a dataset directory for a campaign
    Parquet,
}

#[derive(Args, Debug)]
#[command(after_long_help = "INPUTS:\n  \
one record file (send, recv, reflect --record; replay's departure log): its records, every field\n  \
a sender file and a receiver file of one run: one row per probe sent, joined with its arrival\n    \
(rx_ns, owd_ns, lost, duplicates, reordered; null rx_ns and owd_ns when lost)\n  \
a `wirelab run` results directory: a Parquet dataset directory (-o, new), packets partitioned by\n    \
point (packets/point=<id>/part-0.parquet, the point's parameters and flow name as columns) and\n    \
points.parquet (the rows of summary.csv)\n\n\
The columns, their types and units are in docs/analyze.md (\"Export\").\n\n\
EXAMPLES:\n  wirelab export rx.wlr > rx.csv\n  wirelab export tx.wlr --format jsonl -o tx.jsonl\n  \
wirelab export tx.wlr rx.wlr --format parquet -o packets.parquet\n  \
wirelab export results/quickstart-20261126T144315Z-7c98c828 --format parquet -o dataset")]
pub struct ExportArgs {
    /// A record file, a sender and a receiver file of one run, or a campaign results directory
    #[arg(required = true, num_args = 1..=2, value_name = "INPUT")]
    pub inputs: Vec<PathBuf>,
    /// Output format
    #[arg(short, long, value_enum, default_value_t = ExportFormat::Csv)]
    pub format: ExportFormat,
    /// Output file (default: stdout); for a campaign, a new directory
    #[arg(short, long, value_name = "PATH")]
    pub output: Option<PathBuf>,
    /// Print the file's header metadata (JSON) instead of the records (one record file)
    #[arg(long)]
    pub header: bool,
    /// How far arrivals may come out of send order (sender's clock) and still be joined
    /// to their probe; later ones are counted as not joined
    #[arg(long, default_value = "2s", value_name = "DURATION", value_parser = NONZERO_DURATION)]
    pub join_window: u64,
}

#[derive(Args, Debug)]
#[command(
    after_long_help = "As root, the lab is two network namespaces joined by a veth pair (198.18.0.1 and \
198.18.0.2, the benchmarking range), removed again at the end. Without root it says so and runs the same over loopback."
)]
pub struct DemoArgs {
    /// How long the sender runs
    #[arg(short, long, default_value = "3s", value_name = "DURATION", value_parser = NONZERO_DURATION)]
    pub duration: u64,
    /// Interval spec of the sender
    #[arg(short, long, default_value = "exp:500us", value_name = "SPEC",
          value_parser = |s: &str| values::INTERVAL(s).map(|_| s.to_string()))]
    pub interval: String,
    /// Size spec of the sender
    #[arg(short, long, default_value = "uniform:64,512", value_name = "SPEC",
          value_parser = |s: &str| values::SIZE(s).map(|_| s.to_string()))]
    pub size: String,
    /// Run over loopback even as root
    #[arg(long)]
    pub loopback: bool,
    /// Keep the record files in this directory (default: a temporary one, removed)
    #[arg(long, value_name = "DIR")]
    pub keep: Option<PathBuf>,
    /// Put an emulated link between sender and receiver: a third namespace
    /// runs `wirelab emulate --both STAGES` (e.g. 'delay 20ms 2ms loss 1%')
    #[arg(long, value_name = "STAGES", allow_hyphen_values = true, conflicts_with = "loopback",
          value_parser = values::STAGES)]
    pub emulate: Option<String>,
    /// Print the analysis as JSON
    #[arg(long)]
    pub json: bool,
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum CaptureFormatArg {
    /// pcapng with ns timestamps, interface name and statistics blocks
    Pcapng,
    /// Classic pcap (see --tsprec)
    Pcap,
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum TsPrecArg {
    /// Microseconds (magic a1b2c3d4, readable by every tool)
    Us,
    /// Nanoseconds (magic a1b23c4d)
    Ns,
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum CaptureWaitArg {
    /// Sleep in ppoll until the kernel retires a block (least CPU at low rates)
    Block,
    /// Look at the ring every --poll-period without a system call
    Poll,
    /// Forecast the arrival rate and switch between block and poll (seed 001)
    Adaptive,
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum DirectionArg {
    /// Received packets only
    In,
    /// Sent packets only
    Out,
    /// Both
    Both,
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum FanoutArg {
    /// By flow hash (a flow stays in one thread's file)
    Hash,
    /// By the CPU that received the packet
    Cpu,
    /// Round robin
    Lb,
}

#[derive(Args, Debug)]
#[command(after_long_help = "EXAMPLES:\n  \
wirelab capture -i eth0 -w out.pcapng                     # everything, until Ctrl-C\n  \
wirelab capture -i eth0 udp port 5757 -w out.pcapng -c 1000\n  \
wirelab capture -i eth0 -w - | tshark -r -                # stream to another tool\n  \
wirelab capture -i eth0 -w cap.pcapng --rotate-every 1h --rotate-align --rotate-files 24\n  \
wirelab capture -i eth0 -w big.pcapng --threads 2 --fanout hash   # big.t0.pcapng, big.t1.pcapng\n\n\
The summary goes to stdout, or to stderr when the capture itself goes to stdout (-w -).\n\
Needs CAP_NET_RAW (root, or `setcap cap_net_raw,cap_net_admin=ep wirelab`). See docs/capture.md.")]
pub struct CaptureArgs {
    /// Interface to capture on
    #[arg(short, long, value_name = "IF")]
    pub interface: String,
    /// Filter in tcpdump syntax (pcap-filter(7)), e.g. `udp port 5757`; the words are joined
    #[arg(value_name = "FILTER")]
    pub filter: Vec<String>,
    /// Write packets to FILE ("-" = stdout)
    #[arg(short = 'w', long = "write", value_name = "FILE")]
    pub write: PathBuf,
    /// Stop after this many packets
    #[arg(short = 'c', long, value_parser = values::at_least(1u64))]
    pub count: Option<u64>,
    /// Stop after this long (e.g. 10s, 5min)
    #[arg(short, long, value_name = "DURATION", value_parser = NONZERO_DURATION)]
    pub duration: Option<u64>,
    /// Bytes kept of each packet (1 to 262144)
    #[arg(short, long, default_value_t = 262_144, value_parser = value_parser!(u32).range(1..=262_144))]
    pub snaplen: u32,
    /// Do not put the interface into promiscuous mode
    #[arg(short = 'p', long)]
    pub no_promisc: bool,
    /// Which direction to capture
    #[arg(short = 'Q', long, value_enum, default_value_t = DirectionArg::Both)]
    pub direction: DirectionArg,
    /// File format
    #[arg(long, value_enum, default_value_t = CaptureFormatArg::Pcapng)]
    pub format: CaptureFormatArg,
    /// Timestamp precision of --format pcap
    #[arg(long, value_enum, default_value_t = TsPrecArg::Ns)]
    pub tsprec: TsPrecArg,
    /// Ring block size (multiple of 4 KiB)
    #[arg(long, default_value = "1MiB", value_name = "SIZE", value_parser = units::parse_bytes)]
    pub block_size: u64,
    /// Ring block count (halved automatically while the kernel lacks memory)
    #[arg(long, default_value_t = 64)]
    pub block_count: u32,
    /// Block retire timeout: longest a partly filled block waits (ms resolution, at most
    /// 10s; 0 = kernel)
    #[arg(long, default_value = "10ms", value_name = "DURATION",
          value_parser = values::duration(0, 10_000_000_000, "0 (the kernel's) or 1ms to 10s"))]
    pub retire: u64,
    /// How to wait for packets
    #[arg(long, value_enum, default_value_t = CaptureWaitArg::Adaptive)]
    pub wait: CaptureWaitArg,
    /// Poll period in µs for --wait poll|adaptive (1 to 1000000)
    #[arg(long, default_value_t = 1000, value_name = "US", value_parser = value_parser!(u64).range(1..=1_000_000))]
    pub poll_period: u64,
    /// Start a new file once one reaches this size (e.g. 100MB; at least 4KiB)
    #[arg(long, value_name = "SIZE", value_parser = values::bytes(4096, u64::MAX, "at least 4KiB"))]
    pub rotate_size: Option<u64>,
    /// Start a new file every DURATION (at least 1s)
    #[arg(long, value_name = "DURATION", value_parser = values::duration(1_000_000_000, u64::MAX, "at least 1s"))]
    pub rotate_every: Option<u64>,
    /// Cut --rotate-every files at multiples of DURATION since the epoch (wall clock)
    #[arg(long, requires = "rotate_every")]
    pub rotate_align: bool,
    /// Keep only the newest N files (a ring of files)
    #[arg(long, value_name = "N", value_parser = values::at_least(1u32))]
    pub rotate_files: Option<u32>,
    /// Capture threads joined by PACKET_FANOUT (merged into FILE, or FILE.tN.EXT with --split)
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=64))]
    pub threads: u16,
    /// How PACKET_FANOUT spreads packets over threads
    #[arg(long, value_enum, default_value_t = FanoutArg::Hash)]
    pub fanout: FanoutArg,
    /// Pin capture threads to these CPUs (comma-separated, used in turn); default: the
    /// CPUs outside the interface's RPS mask, when RPS is on
    #[arg(long, value_delimiter = ',', value_name = "CPU,...")]
    pub cpu: Vec<usize>,
    /// Do not pin capture threads off the interface's RPS CPUs by default
    #[arg(long)]
    pub no_avoid_rps: bool,
    /// Write files through the page cache instead of O_DIRECT (the default for regular
    /// files where the filesystem allows it: no copy into the page cache)
    #[arg(long)]
    pub buffered_io: bool,
    /// Print a live statistics line on stderr this often (e.g. 1s; at least 10ms)
    #[arg(long, value_name = "DURATION", value_parser = values::duration(10_000_000, u64::MAX, "at least 10ms"))]
    pub stats_interval: Option<u64>,
    /// Print the summary as JSON (schema wirelab.capture/1)
    #[arg(long)]
    pub json: bool,
    /// No progress or notes on stderr
    #[arg(short, long)]
    pub quiet: bool,
    /// With --threads: one writer merges every thread's packets into FILE in kernel
    /// timestamp order (the default; holds packets back up to 2 x --retire + 20 ms)
    #[arg(long, conflicts_with = "split")]
    pub merge: bool,
    /// With --threads: each thread writes its own file FILE.tN.EXT (no merge, no copy)
    #[arg(long)]
    pub split: bool,
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReplayTxArg {
    /// The TX ring with --topspeed (throughput), sendmmsg when timing matters (measured:
    /// lower inter-departure error tails, docs/replay.md)
    Auto,
    /// AF_PACKET TX ring (TPACKET_V2), batched kicks
    Ring,
    /// sendmmsg on a packet socket
    Sendmmsg,
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum LateArg {
    /// Send everything due at once (tcpreplay's behaviour)
    Burst,
    /// Shift the rest of the schedule by the lateness (gaps kept, duration grows)
    Rebase,
    /// Keep at least --spread-factor x the original gap while catching up (no drift)
    Spread,
}

/// How a sender (send, replay) catches up after a late departure.
#[derive(Args, Debug, Clone)]
pub struct CatchUpArgs {
    /// Catch-up policy when late
    #[arg(long, value_enum, default_value = "spread")]
    pub late: LateArg,
    /// Fraction of the original gap kept at least while catching up (--late spread; 0 to 1)
    #[arg(long, default_value = "0.5", value_name = "F", value_parser = values::number(0.0, 1.0, "within 0..=1"))]
    pub spread_factor: f64,
    /// Most a gap is shortened while catching up (--late spread): each catch-up gap is off
    /// by at most this much; larger values catch up faster
    #[arg(long, default_value = "2us", value_name = "DURATION", value_parser = units::parse_duration_ns)]
    pub spread_max_shrink: u64,
    /// --late spread: lateness up to N x --spread-max-shrink is worked off gently, that
    /// much per gap; larger lateness is caught up at once, as far as --spread-factor allows
    #[arg(long, default_value_t = 8, value_name = "N",
          value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    pub spread_horizon: u32,
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum RateLayerArg {
    /// Count L2 frame bytes (as captured, without FCS)
    L2,
    /// Count bytes on the wire: frame padded to 60, + FCS, preamble, inter-frame gap
    Wire,
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum VlanArg {
    /// Insert a new outer tag
    Add,
    /// Remove the outer tag
    Del,
    /// Change the outer tag's fields
    Retag,
}

/// `replay --bad-ts`: classic pcap sub-second fields of one second or more.
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum BadTsArg {
    /// As read: the excess carries into the seconds
    Keep,
    /// The previous packet's time
    Clamp,
    /// Read every sub-second field of a microsecond file as nanoseconds
    Ns,
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum FixLenArg {
    Pad,
    Trunc,
    Del,
}

impl From<VlanArg> for VlanOp {
    fn from(v: VlanArg) -> VlanOp {
        match v {
            VlanArg::Add => VlanOp::Add,
            VlanArg::Del => VlanOp::Del,
            VlanArg::Retag => VlanOp::Retag,
        }
    }
}

impl From<FixLenArg> for FixLen {
    fn from(f: FixLenArg) -> FixLen {
        match f {
            FixLenArg::Pad => FixLen::Pad,
            FixLenArg::Trunc => FixLen::Trunc,
            FixLenArg::Del => FixLen::Del,
        }
    }
}

#[derive(Args, Debug)]
#[command(
    after_long_help = "TIMING: original (default), --multiplier, --pps, --mbps, --topspeed. Deadlines are absolute \
(first packet's start + trace offset / multiplier); when late, --late spread (default) keeps at least half of every \
original gap while catching up, burst sends everything due at once, rebase shifts the schedule.\n\n\
SELECTION: --include/--exclude take packet numbers (7,11,20-23,174-, or P:LIST) or a BPF filter (F:EXPR or any \
other text, tcpdump syntax).\n\n\
EXAMPLES:\n  \
wirelab replay -i eth1 trace.pcap\n  \
wirelab replay -i eth1 --pps 100kpps --loop 0 --duration 60s trace.pcapng\n  \
wirelab replay -i eth1 --topspeed --enet-smac if --enet-dmac 02:00:00:00:00:02 trace.pcap\n  \
wirelab replay -w out.pcap --mtu 300 --mtu-trunc --fixcsum trace.pcap   # rewrite only, no timing"
)]
pub struct ReplayArgs {
    /// pcap or pcapng files, replayed in order
    #[arg(required = true, value_name = "FILE")]
    pub files: Vec<PathBuf>,
    /// Interface to send on (with -I: the primary one, for client packets)
    #[arg(short = 'i', long = "intf1", value_name = "IF", required_unless_present_any = ["write", "save_cache"])]
    pub intf: Option<String>,
    #[command(flatten)]
    pub split: Box<ReplaySplitArgs>,
    /// Speed-up factor of the original timing (2 = twice as fast; 0.000001 to 1000000)
    #[arg(short = 'x', long, value_name = "X", conflicts_with_all = ["pps", "mbps", "topspeed"],
          value_parser = values::number(1e-6, 1e6, "between 0.000001 and 1000000"))]
    pub multiplier: Option<f64>,
    /// Fixed packet rate (e.g. 1000, 100kpps; at least 0.001)
    #[arg(short = 'p', long, value_name = "RATE", conflicts_with_all = ["mbps", "topspeed"],
          value_parser = values::RATE)]
    pub pps: Option<f64>,
    /// Fixed bit rate in Mbit/s (see --rate-layer; at least 0.001)
    #[arg(short = 'M', long, value_name = "MBPS", conflicts_with = "topspeed",
          value_parser = values::number(1e-3, f64::MAX, "at least 0.001 (1 kbit/s)"))]
    pub mbps: Option<f64>,
    /// What --mbps counts
    #[arg(long, value_enum, default_value = "l2")]
    pub rate_layer: RateLayerArg,
    /// As fast as possible
    #[arg(short = 't', long)]
    pub topspeed: bool,
    /// Packets per tick with --pps/--mbps
    #[arg(long, default_value_t = 1, value_name = "N", value_parser = values::at_least(1u32))]
    pub burst: u32,
    /// Passes over the trace (0 = until stopped)
    #[arg(short = 'l', long = "loop", default_value_t = 1, value_name = "N")]
    pub loops: u64,
    /// Gap between passes (default: the trace's mean gap, so timestamps continue)
    #[arg(long, value_name = "DURATION", value_parser = units::parse_duration_ns)]
    pub loop_delay: Option<u64>,
    /// Stop after this much time
    #[arg(long, value_name = "DURATION", value_parser = NONZERO_DURATION)]
    pub duration: Option<u64>,
    /// Stop after this many packets
    #[arg(short = 'L', long, value_name = "N", value_parser = values::at_least(1u64))]
    pub limit: Option<u64>,
    /// pcap records whose sub-second field is 1 s or more (ns written into a µs file):
    /// keep them as read, clamp them to the previous packet's time, or read the file's
    /// sub-second fields as ns
    #[arg(long, value_enum, default_value = "keep", value_name = "POLICY")]
    pub bad_ts: BadTsArg,
    #[command(flatten)]
    pub catch_up: CatchUpArgs,
    /// Timed replay of a trace that fits in memory (see --phase)
    #[command(flatten)]
    pub phase: PhaseArgs,
    /// Lateness that counts as late (report; threshold of --late rebase)
    #[arg(long, default_value = "10us", value_name = "DURATION", value_parser = units::parse_duration_ns)]
    pub late_threshold: u64,
    /// Sleep until this long before each deadline, then spin; "auto" learns the margin
    /// from how late this machine's sleeps wake up (1ms..2ms: gaps shorter than that are
    /// spun through)
    #[arg(long, default_value = "auto", value_name = "DURATION|auto")]
    pub spin: Spin,
    /// Transmit method
    #[arg(long, value_enum, default_value = "auto")]
    pub tx: ReplayTxArg,
    /// Go through the qdisc layer (default: PACKET_QDISC_BYPASS)
    #[arg(long)]
    pub no_qdisc_bypass: bool,
    /// Slots of the TX ring (8 to 65536; each holds a frame of the interface's MTU)
    #[arg(long, default_value_t = 1024, value_name = "N", value_parser = value_parser!(u32).range(8..=65_536))]
    pub ring_slots: u32,
    /// Most frames per send call (1 to 1024, the kernel's limit for sendmmsg)
    #[arg(long, default_value_t = 64, value_name = "N", value_parser = value_parser!(u16).range(1..=1024))]
    pub batch: u16,
    /// Preload budget; larger inputs are streamed with read-ahead
    #[arg(long, default_value = "1GiB", value_name = "BYTES", value_parser = units::parse_bytes)]
    pub max_preload: u64,
    /// SCHED_FIFO priority (1-99)
    #[arg(long, value_name = "PRIO", value_parser = value_parser!(i32).range(1..=99))]
    pub rt_priority: Option<i32>,
    /// Pin the sending thread to this CPU
    #[arg(long, value_name = "CPU")]
    pub cpu: Option<usize>,
    /// Lock memory (mlockall)
    #[arg(long)]
    pub mlock: bool,
    /// Write every departure to this record file (read it with `wirelab analyze` or `wirelab export`)
    #[arg(long, value_name = "FILE")]
    pub log: Option<PathBuf>,
    /// Send only these packets: numbers (7,11,20-23,174- or P:LIST) or a BPF filter (F:EXPR or plain text)
    #[arg(long, value_name = "SPEC", value_parser = values::SELECT)]
    pub include: Option<Selector>,
    /// Never send these packets: numbers or a BPF filter, as --include
    #[arg(long, value_name = "SPEC", value_parser = values::SELECT)]
    pub exclude: Option<Selector>,
    /// Send only these packet numbers (1-100,200-)
    #[arg(long, value_name = "RANGES", value_parser = Ranges::parse)]
    pub packets: Option<Ranges>,
    #[command(flatten)]
    pub rw: Box<ReplayRewriteArgs>,
    /// Move addresses apart by the loop number in every pass after the first (tcpreplay --unique-ip)
    #[arg(long)]
    pub unique_ip: bool,
    /// Print the report as JSON (schema wirelab.replay/1)
    #[arg(long)]
    pub json: bool,
    /// No notes on stderr
    #[arg(short, long)]
    pub quiet: bool,
}

/// Outputs and two-interface split options of `wirelab replay` (boxed: keeps `Command` small).
#[derive(Args, Debug)]
pub struct ReplaySplitArgs {
    /// Second interface, for server packets (two-interface replay; classify with
    /// --auto, --cidr, --port-split or --cachefile)
    #[arg(short = 'I', long = "intf2", value_name = "IF", requires = "intf")]
    pub intf2: Option<String>,
    /// Split by who opens each conversation: TCP SYN sender = client; otherwise the
    /// endpoint on a port below 1024, else the first sender, is the client's peer (tcpprep -a)
    #[arg(short = 'a', long, conflicts_with_all = ["cidr", "port_split", "cachefile"])]
    pub auto: bool,
    /// Split by source address: packets from these networks are server packets
    /// (tcpprep -c), e.g. 192.168.0.0/16,[fd00::/8]
    #[arg(long, value_name = "CIDRS", conflicts_with_all = ["port_split", "cachefile"],
          value_delimiter = ',', value_parser = |s: &str| Cidr::parse(s.trim_start_matches('[').trim_end_matches(']')))]
    pub cidr: Vec<Cidr>,
    /// Split by port: a source port in --server-ports makes a server packet (tcpprep -p)
    #[arg(long, conflicts_with = "cachefile")]
    pub port_split: bool,
    /// Server ports for --port-split (default 0-1023)
    #[arg(long, value_name = "PORTS", requires = "port_split", value_parser = PortSet::parse)]
    pub server_ports: Option<PortSet>,
    /// Load the client/server split from this cache file: wirelab's (--save-cache) or
    /// tcpprep's binary one (tcpprep -o; primary = client, secondary = server, "don't
    /// send" packets are skipped). It must cover exactly the packets of the trace
    #[arg(short = 'c', long, value_name = "FILE")]
    pub cachefile: Option<PathBuf>,
    /// Write the client/server split to this cache file (with no -i/-w: only classify, like tcpprep -o)
    #[arg(long, value_name = "FILE")]
    pub save_cache: Option<PathBuf>,
    /// Write the (selected, rewritten) packets to this pcap file instead of sending
    #[arg(short = 'w', long, value_name = "FILE", conflicts_with = "intf")]
    pub write: Option<PathBuf>,
}

/// Rewrite options of `wirelab replay`.
#[derive(Args, Debug)]
pub struct ReplayRewriteArgs {
    /// Destination MAC (aa:bb:cc:dd:ee:ff)
    #[arg(long, value_name = "MAC", value_parser = parse_mac)]
    pub enet_dmac: Option<[u8; 6]>,
    /// Source MAC, or `if` for the sending interface's MAC
    #[arg(long, value_name = "MAC")]
    pub enet_smac: Option<SourceMac>,
    /// VLAN operation on the outer tag
    #[arg(long, value_enum)]
    pub enet_vlan: Option<VlanArg>,
    /// VLAN id for add/retag (0-4095)
    #[arg(long, value_name = "VID", value_parser = value_parser!(u16).range(..=4095))]
    pub enet_vlan_tag: Option<u16>,
    /// VLAN priority (PCP) for add/retag (0-7)
    #[arg(long, value_name = "PCP", value_parser = value_parser!(u8).range(..=7))]
    pub enet_vlan_pri: Option<u8>,
    /// VLAN CFI/DEI bit for add
    #[arg(long, value_name = "0|1", value_parser = value_parser!(u8).range(..=1))]
    pub enet_vlan_cfi: Option<u8>,
    /// VLAN TPID for add/retag: 802.1q (0x8100) or 802.1ad (0x88a8)
    #[arg(long, value_name = "PROTO")]
    pub enet_vlan_proto: Option<Tpid>,
    /// Map source addresses FROM:TO by CIDR (repeatable; [v6]/64:[v6]/64 for IPv6)
    #[arg(long, value_name = "MAP", value_parser = IpMap::parse)]
    pub srcipmap: Vec<IpMap>,
    /// Map destination addresses FROM:TO by CIDR (repeatable)
    #[arg(long, value_name = "MAP", value_parser = IpMap::parse)]
    pub dstipmap: Vec<IpMap>,
    /// Map source and destination addresses FROM:TO (repeatable)
    #[arg(long, value_name = "MAP", value_parser = IpMap::parse)]
    pub pnat: Vec<IpMap>,
    /// Map TCP/UDP ports PORT[-PORT]:NEW (repeatable)
    #[arg(long, value_name = "MAP", value_parser = PortMap::parse)]
    pub portmap: Vec<PortMap>,
    /// TTL / hop limit: N, +N or -N
    #[arg(long, value_name = "TTL", value_parser = Ttl::parse)]
    pub ttl: Option<Ttl>,
    /// MTU for --mtu-trunc (L3 bytes; 68, IPv4's minimum, to 65535)
    #[arg(long, default_value_t = 1500, value_name = "BYTES", value_parser = value_parser!(u16).range(68..))]
    pub mtu: u16,
    /// Truncate frames whose L3 part exceeds --mtu (fixes lengths and checksums)
    #[arg(long)]
    pub mtu_trunc: bool,
    /// Frames cut short by the capture: pad to the original length, shrink the IP length, or drop
    #[arg(long, value_enum)]
    pub fixlen: Option<FixLenArg>,
    /// Remove the last 4 bytes (Ethernet FCS) of every frame
    #[arg(long)]
    pub efcs: bool,
    /// Recompute every IPv4/TCP/UDP/ICMP checksum
    #[arg(long)]
    pub fixcsum: bool,
    /// Randomise IP addresses consistently with this seed
    #[arg(long, value_name = "N")]
    pub seed: Option<u64>,
}

#[cfg(test)]
mod tests {
    use super::parse_start_at;

    #[test]
    fn start_at_takes_unix_ns_or_rfc3339_utc() {
        assert_eq!(
            parse_start_at("1795428000500000000"),
            Ok(1_795_428_000_500_000_000)
        );
        assert_eq!(
            parse_start_at("2026-11-23T10:00:00.5Z"),
            Ok(1_795_428_000_500_000_000)
        );
        assert_eq!(
            parse_start_at("2026-11-23T10:00:00Z"),
            Ok(1_795_428_000_000_000_000)
        );
        for bad in [
            "",
            "now",
            "2026-11-23T10:00:00+01:00",
            "2026-13-01T00:00:00Z",
            "99999999999999999999",
            "-5",
        ] {
            let e = parse_start_at(bad).unwrap_err();
            assert!(e.contains("RFC 3339"), "{bad}: {e}");
        }
    }
}

//! Flags of `wirelab send`.

use crate::common::{CatchUpArgs, FormatArg, IpFamily, PhaseArg, PhaseArgs, DEFAULT_PORT};
use crate::values::{self, NONZERO_DURATION};
use crate::{usage, Usage};
use clap::{value_parser, Args, ValueEnum};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;
use wirelab_core::gen::GenSpec;
use wirelab_core::gen::{Dist, SpecKind};
use wirelab_core::schedule::{Limits, SpinMargin, WaitStrategy};
use wirelab_core::units;
use wirelab_engine::job::net::BindAddr;
use wirelab_engine::job::net::Family;
use wirelab_engine::job::rt::RtSetup;
use wirelab_engine::job::send::SendJob;
use wirelab_engine::job::spec;
use wirelab_engine::replay::Spin;
use wirelab_engine::sender::FlowConfig;
use wirelab_engine::sender::Padding;
use wirelab_engine::txpath::SocketKind;

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum WaitArg {
    /// Sleep until each deadline (cheapest, least precise)
    Sleep,
    /// Busy-poll the clock (most precise, uses a full core)
    Spin,
    /// Sleep until shortly before the deadline (--spin-margin), then spin
    Hybrid,
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

/// Lateness that `--late rebase` shifts the schedule on.
const REBASE_THRESHOLD_NS: u64 = 10_000;

impl SendArgs {
    /// The flag the intervals come from, for messages.
    pub fn interval_flag(&self) -> &'static str {
        match (self.rate, self.bitrate) {
            (Some(_), _) => "--rate",
            (_, Some(_)) => "--bitrate",
            _ => "--interval",
        }
    }

    /// The job these flags ask for. Every flag is checked first; then
    /// `resolve` looks the host up in the family the flags allow (a lookup is
    /// I/O, the caller's).
    pub fn job<E: From<Usage>>(
        &self,
        resolve: impl FnOnce(Family) -> Result<SocketAddr, E>,
    ) -> Result<SendJob, E> {
        let ival_flag = self.interval_flag();
        let intervals = match (self.interval.clone(), self.rate, self.bitrate) {
            (Some(i), _, _) => Ok(i),
            (None, Some(pps), _) => spec::rate_interval(pps),
            (None, None, Some(bps)) => spec::bitrate_interval(bps, &self.size).ok_or_else(|| {
                usage("--bitrate needs a --size whose mean is defined (not cauchy, not heavy-tailed pareto)")
            })?,
            (None, None, None) => spec::rate_interval(1000.0),
        }
        .map_err(|e| usage(format!("{ival_flag}: {e}")))?;
        let duration_ns = self
            .duration
            .or(self.count.is_none().then_some(10_000_000_000));
        let (spin_ns, adaptive_spin) = match self.spin_margin {
            Spin::Auto => (SpinMargin::DEFAULT_INITIAL_NS, true),
            Spin::Fixed(ns) => (ns, false),
        };
        let socket = self.socket.engine();
        // An absolute start is where the first deadline lies: a calibrated
        // phase would move it.
        if self.start_at.is_some() && self.phase.phase == Some(PhaseArg::Auto) {
            return Err(usage(
                "--start-at fixes the first deadline and --phase auto would move it: leave --phase out (--start-at implies --phase off)",
            ).into());
        }
        // The start phase matters only for a periodic schedule.
        let phase_config = self.phase.config().filter(|_| self.start_at.is_none());
        let phase = match (phase_config, intervals.kind()) {
            (Some(pc), SpecKind::Dist(Dist::Const { value })) if *value > 0.0 => Some((pc, *value)),
            _ => None,
        };
        if let Some(n) = self.count.filter(|&n| self.warmup >= n) {
            return Err(usage(format!(
                "--warmup {} flags every one of the {n} probes of --count as warm-up: nothing would be measured",
                self.warmup
            )).into());
        }
        if self.format == FormatArg::Luna {
            if self.warmup > 0 {
                return Err(usage(
                    "--warmup needs the wirelab probe format: LUNA probes have no warm-up flag",
                )
                .into());
            }
            if self.count.is_some_and(|n| n > 1 << 32) {
                return Err(usage(
                    "--format luna numbers probes with 32 bits: --count must be at most 4294967296",
                )
                .into());
            }
        }
        let mut family = self.family.family();
        if socket != SocketKind::Udp {
            if family == Family::V6 {
                return Err(usage(format!(
                    "--socket {} builds IPv4 headers: -6 needs --socket udp",
                    socket.as_str()
                ))
                .into());
            }
            family = Family::V4;
        }
        let target = resolve(family)?;
        Ok(SendJob {
            flow: FlowConfig {
                target,
                bind: self.bind.map(|b| BindAddr::or_any(Some(b), 0, Family::Any)),
                flow: self.flow,
                limits: Limits {
                    count: self.count,
                    duration_ns,
                },
                tos: self.tos.or(self.dscp.map(|d| d << 2)),
                warmup: self.warmup,
                padding: self.padding,
                wait: match self.wait {
                    WaitArg::Sleep => WaitStrategy::Sleep,
                    WaitArg::Spin => WaitStrategy::Spin,
                    WaitArg::Hybrid => WaitStrategy::Hybrid { spin_ns },
                },
                adaptive_spin,
                prime: !self.no_prime,
                anchor_first: !self.planned_start,
                echo: self.echo,
                echo_wait: Duration::from_nanos(self.echo_wait),
                last_repeats: 3,
                last_gap: Duration::from_millis(2),
                max_batch: self.batch.into(),
                lead: Duration::ZERO,
                seed: self.seed,
                epoch_mono_ns: None,
                start_mono_ns: None,
                mono_to_real: 0,
                format: self.format.engine(),
                late: self.catch_up.policy(REBASE_THRESHOLD_NS),
                phase,
            },
            flows: self.flows,
            seed: self.seed,
            rt: RtSetup {
                cpu: self.cpu,
                fifo_priority: self.rt_priority,
                mlock: self.mlock,
            },
            record: self.record.clone(),
            host: self.host.clone(),
            socket,
            start_at_unix_ns: self.start_at,
            intervals,
            sizes: self.size.clone(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{test_parse, Command};

    fn send(args: &str) -> SendArgs {
        match test_parse(&format!("send {args}")) {
            Command::Send(a) => a,
            c => panic!("{c:?}"),
        }
    }

    /// The job, resolved to a fixed address; the family it was asked for.
    fn job(args: &str) -> Result<(SendJob, Family), Usage> {
        let mut asked = None;
        let job = send(args).job(|f| {
            asked = Some(f);
            Ok::<_, Usage>("192.0.2.1:5757".parse().unwrap())
        })?;
        Ok((job, asked.unwrap()))
    }

    #[test]
    fn the_rate_flags_become_a_constant_interval_and_a_calibrated_phase() {
        let (j, family) = job("h --rate 2kpps -n 10").unwrap();
        assert_eq!(j.intervals.to_string(), "const:500us");
        assert_eq!(j.flow.limits.count, Some(10));
        assert_eq!(j.flow.limits.duration_ns, None);
        assert!(j.flow.phase.is_some());
        assert_eq!(family, Family::Any);
        // 1000 pps and 10 s when nothing is said; a random interval has no phase.
        let (j, _) = job("h").unwrap();
        assert_eq!(j.intervals.to_string(), "const:1ms");
        assert_eq!(j.flow.limits.duration_ns, Some(10_000_000_000));
        assert!(job("h -i exp:1ms").unwrap().0.flow.phase.is_none());
        assert!(job("h --rate 1kpps --phase off")
            .unwrap()
            .0
            .flow
            .phase
            .is_none());
    }

    #[test]
    fn contradictory_flags_are_refused_naming_them_before_any_lookup() {
        let cases = [
            (
                "h -n 5 --warmup 5",
                "--warmup 5 flags every one of the 5 probes",
            ),
            (
                "h --format luna --warmup 1",
                "LUNA probes have no warm-up flag",
            ),
            (
                "h --format luna -n 4294967297",
                "--count must be at most 4294967296",
            ),
            ("h --socket raw -6", "-6 needs --socket udp"),
            (
                "h --start-at 1795428000500000000 --phase auto",
                "--start-at implies --phase off",
            ),
            (
                "h --bitrate 1Mbit --size cauchy:100,10",
                "--bitrate needs a --size whose mean is defined",
            ),
        ];
        for (args, says) in cases {
            let no_lookup = |_| -> Result<SocketAddr, Usage> { panic!("{args}: looked up") };
            let e = send(args).job(no_lookup).err().expect(args).0;
            assert!(e.contains(says), "{args}: {e}");
        }
    }

    #[test]
    fn raw_and_packet_sockets_resolve_ipv4_and_dscp_sets_the_tos_byte() {
        let (j, family) = job("h --socket packet --dscp 46").unwrap();
        assert_eq!(family, Family::V4);
        assert_eq!(j.socket, SocketKind::Packet);
        assert_eq!(j.flow.tos, Some(46 << 2));
    }

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

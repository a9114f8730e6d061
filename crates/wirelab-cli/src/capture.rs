//! Flags of `wirelab capture`.

use crate::values::{self, NONZERO_DURATION};
use crate::{usage, Usage};
use clap::{value_parser, Args, ValueEnum};
use std::path::PathBuf;
use wirelab_capture::{CaptureConfig, FileFormat, Rotation, WaitPolicy};
use wirelab_core::units;
use wirelab_io::ring_rx::{Direction, FanoutMode, RingConfig};
use wirelab_pcap::PcapPrecision;

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
    /// Forecast the arrival rate and switch between block and poll (the DMA-ring capture thesis)
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

impl CaptureArgs {
    /// The capture these flags ask for.
    pub fn config(&self) -> Result<CaptureConfig, Usage> {
        let block_size = u32::try_from(self.block_size).map_err(|_| {
            usage(format!(
                "--block-size {} is larger than 4 GiB",
                self.block_size
            ))
        })?;
        let ring = u64::from(block_size) * u64::from(self.block_count);
        if ring > u64::from(u32::MAX) {
            return Err(usage(format!(
                "--block-size x --block-count is {ring} bytes: a ring must stay below 4 GiB \
                 (the kernel's limit)"
            )));
        }
        if self.retire != 0 && self.retire < 1_000_000 {
            return Err(usage(
                "--retire has millisecond resolution: use 0 (kernel default) or at least 1ms",
            ));
        }
        Ok(CaptureConfig {
            ifname: self.interface.clone(),
            filter: self.filter.join(" "),
            snaplen: self.snaplen,
            ring: RingConfig {
                block_size,
                block_count: self.block_count,
                retire_ms: (self.retire / 1_000_000) as u32,
                promisc: !self.no_promisc,
                direction: match self.direction {
                    DirectionArg::In => Direction::In,
                    DirectionArg::Out => Direction::Out,
                    DirectionArg::Both => Direction::Both,
                },
                fanout: None,
            },
            wait: match self.wait {
                CaptureWaitArg::Block => WaitPolicy::Block,
                CaptureWaitArg::Poll => WaitPolicy::Poll,
                CaptureWaitArg::Adaptive => WaitPolicy::Adaptive,
            },
            poll_period_ns: self.poll_period * 1_000,
            count: self.count,
            duration_ns: self.duration,
            threads: self.threads.into(),
            fanout: match self.fanout {
                FanoutArg::Hash => FanoutMode::Hash,
                FanoutArg::Cpu => FanoutMode::Cpu,
                FanoutArg::Lb => FanoutMode::RoundRobin,
            },
            path: (self.write.as_os_str() != "-").then(|| self.write.clone()),
            merge: !self.split,
            format: match (self.format, self.tsprec) {
                (CaptureFormatArg::Pcapng, _) => FileFormat::Pcapng,
                (CaptureFormatArg::Pcap, TsPrecArg::Us) => FileFormat::Pcap(PcapPrecision::Micro),
                (CaptureFormatArg::Pcap, TsPrecArg::Ns) => FileFormat::Pcap(PcapPrecision::Nano),
            },
            rotation: Rotation {
                max_bytes: self.rotate_size,
                every_ns: self.rotate_every,
                align: self.rotate_align,
                max_files: self.rotate_files,
            },
            cpus: self.cpu.clone(),
            avoid_rps_cpus: !self.no_avoid_rps,
            direct_io: !self.buffered_io,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{test_parse, Command};

    fn config(args: &str) -> Result<CaptureConfig, Usage> {
        match test_parse(&format!("capture -i e0 {args}")) {
            Command::Capture(a) => a.config(),
            c => panic!("{c:?}"),
        }
    }

    #[test]
    fn the_ring_must_fit_the_kernel_and_retire_has_ms_resolution() {
        let c = config("-w c.pcapng --retire 5ms --format pcap --tsprec us udp port 5757").unwrap();
        assert_eq!((c.ring.retire_ms, c.filter.as_str()), (5, "udp port 5757"));
        assert!(matches!(c.format, FileFormat::Pcap(PcapPrecision::Micro)));
        assert_eq!(
            c.ring.block_size as u64 * c.ring.block_count as u64,
            64 << 20
        );
        let e = config("-w c.pcapng --block-size 64MiB --block-count 64").unwrap_err();
        assert!(e.0.contains("must stay below 4 GiB"), "{e}");
        let e = config("-w c.pcapng --retire 500us").unwrap_err();
        assert!(e.0.contains("millisecond resolution"), "{e}");
        assert_eq!(config("-w -").unwrap().path, None);
        assert_eq!(config("-w c.pcapng").unwrap().path, Some("c.pcapng".into()));
    }
}

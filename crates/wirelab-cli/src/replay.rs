//! Flags of `wirelab replay`.

use crate::common::{CatchUpArgs, PhaseArgs};
use crate::values::{self, NONZERO_DURATION};
use crate::{usage, Usage};
use clap::{value_parser, Args, ValueEnum};
use std::path::PathBuf;
use wirelab_core::replay::Timing;
use wirelab_core::units;
use wirelab_engine::job::replay::select::{selection, Selector};
use wirelab_engine::job::replay::sides::SplitFrom;
use wirelab_engine::job::replay::{TxMethod, TxSetup};
use wirelab_engine::job::rt::RtSetup;
use wirelab_engine::replay::{Output, Ranges, ReadSpec, ReplayConfig, Spin, Split};
use wirelab_wire::rewrite::arg::{SourceMac, Tpid, VlanFields, VlanOp};
use wirelab_wire::rewrite::split::{PortSet, SplitMode};
use wirelab_wire::rewrite::{parse_mac, Cidr, FixLen, IpMap, PortMap, RewriteSpec, Ttl, Vlan};

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

impl ReplaySplitArgs {
    /// Where the client/server split comes from, if one is asked for.
    fn source(&self) -> Option<SplitFrom> {
        let mode = if self.auto {
            SplitMode::Auto
        } else if !self.cidr.is_empty() {
            SplitMode::Cidr(self.cidr.clone())
        } else if self.port_split {
            SplitMode::Port(self.server_ports.clone().unwrap_or_default())
        } else {
            return self.cachefile.clone().map(SplitFrom::Cache);
        };
        Some(SplitFrom::Classify(mode))
    }
}

impl ReplayArgs {
    /// The client/server split asked for, once its flags agree.
    pub fn split_from(&self) -> Result<Option<SplitFrom>, Usage> {
        let s = &self.split;
        let from = s.source();
        if from.is_none() && (s.intf2.is_some() || s.save_cache.is_some()) {
            return Err(usage(
                "-I and --save-cache need a client/server split: add --auto, --cidr NETS, --port-split or --cachefile FILE",
            ));
        }
        if from.is_some() && s.intf2.is_none() && s.save_cache.is_none() {
            return Err(usage(
                "a client/server split (--auto/--cidr/--port-split/--cachefile) needs -I IF2 for the server packets",
            ));
        }
        if s.intf2.is_some() && s.intf2 == self.intf {
            return Err(usage(
                "-I names the same interface as -i: give the second interface for server packets",
            ));
        }
        Ok(from)
    }

    /// How frames leave.
    pub fn tx(&self) -> TxSetup {
        TxSetup {
            method: match self.tx {
                ReplayTxArg::Auto => TxMethod::Auto,
                ReplayTxArg::Ring => TxMethod::Ring,
                ReplayTxArg::Sendmmsg => TxMethod::Sendmmsg,
            },
            topspeed: self.topspeed,
            qdisc_bypass: !self.no_qdisc_bypass,
            ring_slots: self.ring_slots as usize,
        }
    }

    /// The rewrites; `interface_mac` looks up `--enet-smac if`'s MAC (I/O,
    /// the caller's).
    pub fn rewrite<E: From<Usage>>(
        &self,
        interface_mac: impl FnOnce(&str) -> Result<[u8; 6], E>,
    ) -> Result<RewriteSpec, E> {
        let rw = &self.rw;
        let smac = match (rw.enet_smac, &self.intf) {
            (Some(SourceMac::Interface), Some(i)) => Some(interface_mac(i)?),
            (Some(SourceMac::Interface), None) => {
                return Err(
                    usage("--enet-smac if needs -i IF (the interface whose MAC to use)").into(),
                )
            }
            (Some(SourceMac::Addr(m)), _) => Some(m),
            (None, _) => None,
        };
        let fields = VlanFields {
            vid: rw.enet_vlan_tag,
            pcp: rw.enet_vlan_pri,
            dei: rw.enet_vlan_cfi,
            tpid: rw.enet_vlan_proto,
        };
        let vlan = rw.enet_vlan.map(|op| Vlan::from_fields(op.into(), fields));
        Ok(RewriteSpec {
            efcs: rw.efcs,
            dmac: rw.enet_dmac,
            smac,
            vlan: vlan
                .transpose()
                .map_err(|e| usage(format!("--enet-vlan: {e} (--enet-vlan-tag)")))?,
            src_map: [&rw.srcipmap[..], &rw.pnat].concat(),
            dst_map: [&rw.dstipmap[..], &rw.pnat].concat(),
            ports: rw.portmap.clone(),
            ttl: rw.ttl,
            mtu_trunc: rw.mtu_trunc.then_some(rw.mtu.into()),
            fixlen: rw.fixlen.map(Into::into),
            fixcsum: rw.fixcsum,
            seed: rw.seed,
            pad_limit: None,
        })
    }

    /// The replay's schedule.
    pub fn timing(&self) -> Timing {
        let burst = self.burst;
        match (self.topspeed, self.pps, self.mbps) {
            (true, _, _) => Timing::Topspeed,
            (_, Some(pps), _) => Timing::Pps { pps, burst },
            (_, _, Some(m)) => Timing::Rate {
                bps: m * 1e6,
                wire: self.rate_layer == RateLayerArg::Wire,
                burst,
            },
            _ => Timing::Original {
                multiplier: self.multiplier.unwrap_or(1.0),
            },
        }
    }

    /// The replay's config, given its rewrites, where it goes and its split.
    pub fn config(
        &self,
        rewrite: RewriteSpec,
        output: Output,
        split: Option<Split>,
    ) -> ReplayConfig {
        ReplayConfig {
            read: ReadSpec {
                files: self.files.clone(),
                select: selection(
                    self.include.clone(),
                    self.exclude.clone(),
                    self.packets.clone(),
                ),
                rewrite,
                max_frame: None,
                egress_mtu: None,
                bad_ts: match self.bad_ts {
                    BadTsArg::Keep => wirelab_pcap::FractionPolicy::Keep,
                    BadTsArg::Clamp => wirelab_pcap::FractionPolicy::Clamp,
                    BadTsArg::Ns => wirelab_pcap::FractionPolicy::Nanoseconds,
                },
            },
            timing: self.timing(),
            late: self.catch_up.policy(self.late_threshold),
            late_threshold_ns: self.late_threshold,
            loops: self.loops,
            loop_delay_ns: self.loop_delay,
            duration_ns: self.duration,
            limit: self.limit,
            unique_ip: self.unique_ip,
            max_preload: self.max_preload,
            batch: self.batch.into(),
            spin: self.spin,
            log: self.log.clone(),
            output,
            split,
            progress: None,
            phase: self.phase.config(),
        }
    }

    /// The sending thread's real-time settings.
    pub fn rt(&self) -> RtSetup {
        RtSetup {
            cpu: self.cpu,
            fifo_priority: self.rt_priority,
            mlock: self.mlock,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{test_parse, Command};

    fn replay(args: &str) -> ReplayArgs {
        match test_parse(&format!("replay {args}")) {
            Command::Replay(a) => a,
            c => panic!("{c:?}"),
        }
    }

    #[test]
    fn a_split_needs_both_interfaces_and_its_classifier() {
        let refused = |args: &str| replay(args).split_from().unwrap_err().0;
        assert!(refused("-i e1 -I e2 t.pcap").contains("need a client/server split"));
        assert!(refused("-i e1 --auto t.pcap").contains("needs -I IF2"));
        assert!(refused("-i e1 -I e1 --auto t.pcap").contains("same interface"));
        let from = replay("-i e1 -I e2 --port-split t.pcap")
            .split_from()
            .unwrap();
        assert!(matches!(
            from,
            Some(SplitFrom::Classify(SplitMode::Port(_)))
        ));
        assert!(replay("-i e1 t.pcap").split_from().unwrap().is_none());
    }

    #[test]
    fn timing_flags_become_the_schedule() {
        assert_eq!(
            replay("-i e t.pcap").timing(),
            Timing::Original { multiplier: 1.0 }
        );
        assert_eq!(
            replay("-i e -x 2 t.pcap").timing(),
            Timing::Original { multiplier: 2.0 }
        );
        assert_eq!(
            replay("-i e --pps 1kpps --burst 4 t.pcap").timing(),
            Timing::Pps {
                pps: 1000.0,
                burst: 4
            }
        );
        assert_eq!(
            replay("-i e -M 10 --rate-layer wire t.pcap").timing(),
            Timing::Rate {
                bps: 10e6,
                wire: true,
                burst: 1
            }
        );
        assert_eq!(replay("-i e -t t.pcap").timing(), Timing::Topspeed);
        assert!(replay("-i e -t t.pcap").tx().ring());
        assert!(!replay("-i e t.pcap").tx().ring());
    }

    #[test]
    fn the_source_mac_of_the_interface_is_looked_up_only_when_asked() {
        let mac = [2, 0, 0, 0, 0, 9];
        let rw = replay("-i e1 --enet-smac if --pnat 10.0.0.0/8:192.168.0.0/16 t.pcap")
            .rewrite(|i| {
                assert_eq!(i, "e1");
                Ok::<_, Usage>(mac)
            })
            .unwrap();
        assert_eq!(rw.smac, Some(mac));
        assert_eq!((rw.src_map.len(), rw.dst_map.len()), (1, 1));
        let no_lookup = |_: &str| -> Result<[u8; 6], Usage> { panic!("looked up") };
        let e = replay("-w o.pcap --enet-smac if t.pcap")
            .rewrite(no_lookup)
            .unwrap_err();
        assert!(e.0.contains("--enet-smac if needs -i IF"), "{e}");
        let e = replay("-w o.pcap --enet-vlan add t.pcap")
            .rewrite(no_lookup)
            .unwrap_err();
        assert!(e.0.starts_with("--enet-vlan: "), "{e}");
    }
}

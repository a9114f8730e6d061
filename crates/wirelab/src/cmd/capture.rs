//! `wirelab capture`.

use crate::cli::{
    CaptureArgs, CaptureFormatArg, CaptureWaitArg, DirectionArg, FanoutArg, TsPrecArg,
};
use crate::error::{usage, Privilege};
use anyhow::Result;
use std::io::Write;
use std::time::Duration;
use wirelab_engine::capture::{
    Capture, CaptureConfig, CaptureError, FileFormat, LiveSnapshot, Rotation, WaitPolicy,
};
use wirelab_engine::job::text;
use wirelab_io::ring_rx::{Direction, FanoutMode, RingConfig, RingError};
use wirelab_pcap::PcapPrecision;

fn config(a: &CaptureArgs) -> Result<CaptureConfig> {
    let block_size = u32::try_from(a.block_size).map_err(|_| {
        usage(format!(
            "--block-size {} is larger than 4 GiB",
            a.block_size
        ))
    })?;
    let retire_ns = a.retire;
    if retire_ns != 0 && retire_ns < 1_000_000 {
        return Err(usage(
            "--retire has millisecond resolution: use 0 (kernel default) or at least 1ms",
        ));
    }
    if a.poll_period == 0 {
        return Err(usage("--poll-period must be at least 1 µs"));
    }
    let path = (a.write.as_os_str() != "-").then(|| a.write.clone());
    Ok(CaptureConfig {
        ifname: a.interface.clone(),
        filter: a.filter.join(" "),
        snaplen: a.snaplen.max(1),
        ring: RingConfig {
            block_size,
            block_count: a.block_count,
            retire_ms: (retire_ns / 1_000_000) as u32,
            promisc: !a.no_promisc,
            direction: match a.direction {
                DirectionArg::In => Direction::In,
                DirectionArg::Out => Direction::Out,
                DirectionArg::Both => Direction::Both,
            },
            fanout: None,
        },
        wait: match a.wait {
            CaptureWaitArg::Block => WaitPolicy::Block,
            CaptureWaitArg::Poll => WaitPolicy::Poll,
            CaptureWaitArg::Adaptive => WaitPolicy::Adaptive,
        },
        poll_period_ns: a.poll_period * 1_000,
        count: a.count,
        duration_ns: a.duration,
        threads: a.threads as usize,
        fanout: match a.fanout {
            FanoutArg::Hash => FanoutMode::Hash,
            FanoutArg::Cpu => FanoutMode::Cpu,
            FanoutArg::Lb => FanoutMode::RoundRobin,
        },
        path,
        merge: !a.split,
        format: match (a.format, a.tsprec) {
            (CaptureFormatArg::Pcapng, _) => FileFormat::Pcapng,
            (CaptureFormatArg::Pcap, TsPrecArg::Us) => FileFormat::Pcap(PcapPrecision::Micro),
            (CaptureFormatArg::Pcap, TsPrecArg::Ns) => FileFormat::Pcap(PcapPrecision::Nano),
        },
        rotation: Rotation {
            max_bytes: a.rotate_size,
            every_ns: a.rotate_every,
            align: a.rotate_align,
            max_files: a.rotate_files,
        },
        cpus: a.cpu.clone(),
        avoid_rps_cpus: !a.no_avoid_rps,
        direct_io: !a.buffered_io,
    })
}

fn map_err(e: CaptureError) -> anyhow::Error {
    match e {
        CaptureError::Ring(RingError::Privilege { .. }) => {
            anyhow::Error::new(Privilege(e.to_string()))
        }
        CaptureError::Ring(RingError::Config(m)) => {
            usage(format!("{m} (--block-size, --block-count)"))
        }
        CaptureError::Config(m) => usage(m),
        CaptureError::Ring(RingError::Interface(e)) => usage(e.to_string()),
        CaptureError::Filter(f) => usage(f.to_string()),
        CaptureError::Ring(RingError::Setup { step, .. }) => {
            let flags = match step {
                "PACKET_MR_PROMISC" => " (--no-promisc)",
                "PACKET_RX_RING" | "mmap of the ring" => " (--block-size, --block-count)",
                _ => "",
            };
            anyhow::anyhow!("{e}{flags}")
        }
        e => anyhow::Error::new(e),
    }
}

pub fn run(a: CaptureArgs) -> Result<()> {
    let cfg = config(&a)?;
    let to_stdout = cfg.path.is_none();
    let stats_every = a
        .stats_interval
        .filter(|&ns| ns > 0)
        .map(Duration::from_nanos);
    let stop = wirelab_engine::job::stop_on_signals()?;
    let cap = Capture::open(cfg.clone()).map_err(map_err)?;
    if !a.quiet {
        for n in cap.notes() {
            eprintln!("wirelab capture: note: {n}");
        }
        let (bs, bc) = cap.geometry();
        eprintln!(
            "wirelab capture: listening on {}{}, ring {} × {} KiB, wait {}, writing {}{}",
            cfg.ifname,
            if cfg.filter.is_empty() {
                String::new()
            } else {
                format!(" ({})", cfg.filter)
            },
            bc,
            bs / 1024,
            a.wait_name(),
            a.write.display(),
            if cfg.count.is_none() && cfg.duration_ns.is_none() {
                "; Ctrl-C to stop"
            } else {
                ""
            }
        );
    }
    let mut last = (0.0f64, 0u64, 0u64);
    let quiet = a.quiet;
    let report = cap
        .run(&stop, stats_every, |s: &LiveSnapshot| {
            if quiet {
                return;
            }
            let dt = (s.elapsed_s - last.0).max(1e-6);
            let pps = (s.packets - last.1) as f64 / dt;
            let wps = (s.wakeups - last.2) as f64 / dt;
            last = (s.elapsed_s, s.packets, s.wakeups);
            eprintln!(
                "{:8.1}s {:>12} pkts {:>10.0} pps {:>8.1} MB  ring drops {}  wake-ups {:.0}/s  mode {} ({} switches)",
                s.elapsed_s,
                s.packets,
                pps,
                s.bytes as f64 / 1e6,
                s.ring_drops,
                wps,
                s.mode.as_str(),
                s.switches
            );
        })
        .map_err(map_err)?;
    let text = if a.json {
        let mut s = serde_json::to_string_pretty(&report)?;
        s.push('\n');
        s
    } else {
        text::capture(&report)
    };
    if to_stdout {
        eprint!("{text}");
    } else {
        let mut o = std::io::stdout().lock();
        o.write_all(text.as_bytes())?;
        o.flush()?;
    }
    Ok(())
}

impl CaptureArgs {
    fn wait_name(&self) -> String {
        match self.wait {
            CaptureWaitArg::Block => "block".into(),
            CaptureWaitArg::Poll => format!("poll every {} µs", self.poll_period),
            CaptureWaitArg::Adaptive => format!("adaptive (poll every {} µs)", self.poll_period),
        }
    }
}

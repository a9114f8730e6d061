//! `wirelab capture`: flags to a [`CaptureJob`], its report to stdout (or
//! stderr when the capture itself goes to stdout).

use crate::error::{rt_error, usage, Privilege};
use anyhow::Result;
use std::io::Write;
use std::time::Duration;
use wirelab_cli::capture::{
    CaptureArgs, CaptureFormatArg, CaptureWaitArg, DirectionArg, FanoutArg, TsPrecArg,
};
use wirelab_engine::capture::{CaptureConfig, CaptureError, FileFormat, Rotation, WaitPolicy};
use wirelab_engine::job::capture::{CaptureJob, CaptureJobError};
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
    let ring = u64::from(block_size) * u64::from(a.block_count);
    if ring > u64::from(u32::MAX) {
        return Err(usage(format!(
            "--block-size x --block-count is {ring} bytes: a ring must stay below 4 GiB (the kernel's limit)"
        )));
    }
    if a.retire != 0 && a.retire < 1_000_000 {
        return Err(usage(
            "--retire has millisecond resolution: use 0 (kernel default) or at least 1ms",
        ));
    }
    Ok(CaptureConfig {
        ifname: a.interface.clone(),
        filter: a.filter.join(" "),
        snaplen: a.snaplen,
        ring: RingConfig {
            block_size,
            block_count: a.block_count,
            retire_ms: (a.retire / 1_000_000) as u32,
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
        threads: a.threads.into(),
        fanout: match a.fanout {
            FanoutArg::Hash => FanoutMode::Hash,
            FanoutArg::Cpu => FanoutMode::Cpu,
            FanoutArg::Lb => FanoutMode::RoundRobin,
        },
        path: (a.write.as_os_str() != "-").then(|| a.write.clone()),
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

fn map_err(e: impl Into<CaptureJobError>) -> anyhow::Error {
    let e = match e.into() {
        CaptureJobError::Cpu(e) => return rt_error(e),
        CaptureJobError::Capture(e) => e,
    };
    match e {
        CaptureError::Ring(RingError::Privilege { .. }) => Privilege(e.to_string()).into(),
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
        e => e.into(),
    }
}

pub fn run(a: CaptureArgs) -> Result<()> {
    let cfg = config(&a)?;
    let to_stdout = cfg.path.is_none();
    let job = CaptureJob::open(cfg).map_err(map_err)?;
    if !a.quiet {
        for n in job.notes() {
            eprintln!("wirelab capture: note: {n}");
        }
        eprintln!("{}", job.banner());
    }
    let stats_every = a.stats_interval.map(Duration::from_nanos);
    let report = job
        .run(stats_every, |line| {
            if !a.quiet {
                eprintln!("{line}")
            }
        })
        .map_err(map_err)?;
    let text = match a.json {
        true => format!("{}\n", serde_json::to_string_pretty(&report)?),
        false => text::capture(&report),
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

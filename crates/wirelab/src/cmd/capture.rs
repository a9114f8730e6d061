//! `wirelab capture`: its flags' [`CaptureJob`] run, its report to stdout
//! (or stderr when the capture itself goes to stdout).

use crate::error::{rt_error, usage, Privilege};
use anyhow::Result;
use std::io::Write;
use std::time::Duration;
use wirelab_capture::CaptureError;
use wirelab_cli::capture::CaptureArgs;
use wirelab_engine::job::capture::{CaptureJob, CaptureJobError};
use wirelab_engine::job::text;
use wirelab_io::ring_rx::RingError;

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
    let cfg = a.config()?;
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

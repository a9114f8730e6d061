//! `wirelab send`: flags to a [`SendJob`], its report to stdout.

use crate::cli::{FormatArg, SendArgs, WaitArg};
use crate::error::{rt_error, usage};
use crate::values;
use anyhow::Result;
use std::time::Duration;
use wirelab_analysis::schema::{to_json_sorted, SendSettings};
use wirelab_core::gen::{Dist, SpecKind, SpecUnit};
use wirelab_core::schedule::{Limits, SpinMargin, WaitStrategy};
use wirelab_engine::job::rt::RtSetup;
use wirelab_engine::job::send::{SendError, SendJob, Values};
use wirelab_engine::job::{spec, text};
use wirelab_engine::sender::{FlowConfig, Padding};

/// Lateness that `--late rebase` shifts the schedule on.
const REBASE_THRESHOLD_NS: u64 = 10_000;

pub fn run(a: SendArgs) -> Result<()> {
    let size_spec = values::parse_spec("--size", &a.size, SpecUnit::Bytes)?;
    let ival_spec = values::interval_spec(
        a.interval.as_deref(),
        a.rate,
        a.bitrate,
        spec::mean_of(&size_spec),
    )?;
    let duration_ns = match (a.duration, a.count) {
        (Some(d), _) => Some(d),
        (None, Some(_)) => None,
        (None, None) => Some(10_000_000_000),
    };
    let adaptive_spin = a.spin_margin == "auto";
    let wait = match a.wait {
        WaitArg::Sleep => WaitStrategy::Sleep,
        WaitArg::Spin => WaitStrategy::Spin,
        WaitArg::Hybrid => WaitStrategy::Hybrid {
            spin_ns: if adaptive_spin {
                SpinMargin::DEFAULT_INITIAL_NS
            } else {
                values::duration_ns("--spin-margin", &a.spin_margin)?
            },
        },
    };
    let late = a.catch_up.policy(REBASE_THRESHOLD_NS)?;
    // The start phase matters only for a periodic schedule.
    let phase = match (a.phase.config()?, ival_spec.kind()) {
        (Some(pc), SpecKind::Dist(Dist::Const { value })) => Some((pc, *value)),
        _ => None,
    };
    let tos = a.tos.or(a.dscp.map(|d| d << 2));
    let target = super::resolve(&a.host, a.port, a.family.ipv4, a.family.ipv6)?;
    let bind = a
        .bind
        .as_deref()
        .map(|b| super::bind_addr(Some(b), 0, false))
        .transpose()?;
    if a.format == FormatArg::Luna {
        if a.warmup > 0 {
            return Err(usage(
                "--warmup needs the wirelab probe format: LUNA probes have no warm-up flag",
            ));
        }
        if a.count.is_some_and(|n| n > 1 << 32) {
            return Err(usage(
                "--format luna numbers probes with 32 bits: --count must be at most 4294967296",
            ));
        }
    }
    let settings = SendSettings {
        host: a.host.clone(),
        target: target.to_string(),
        flow: a.flow,
        flows: a.flows,
        interval: ival_spec.to_string(),
        size: size_spec.to_string(),
        count: a.count,
        duration_ns,
        tos,
        padding: a.padding.clone(),
        warmup: a.warmup,
        wait: format!("{:?}", a.wait).to_lowercase(),
        echo: a.echo,
        seed: a.seed,
        batch: a.batch,
        rt_priority: a.rt_priority,
        cpu: a.cpu,
        format: format!("{:?}", a.format).to_lowercase(),
        late: format!("{late:?}"),
        phase: phase.map(|(pc, _)| pc.calibrate.as_nanos() as u64),
    };
    let job = SendJob {
        flow: FlowConfig {
            target,
            bind,
            flow: a.flow,
            limits: Limits {
                count: a.count,
                duration_ns,
            },
            tos,
            warmup: a.warmup,
            padding: parse_padding(&a.padding)?,
            wait,
            adaptive_spin,
            prime: !a.no_prime,
            anchor_first: !a.planned_start,
            echo: a.echo,
            echo_wait: Duration::from_nanos(a.echo_wait),
            last_repeats: 3,
            last_gap: Duration::from_millis(2),
            max_batch: a.batch as usize,
            lead: Duration::ZERO,
            seed: a.seed,
            epoch_mono_ns: None,
            start_mono_ns: None,
            mono_to_real: 0,
            format: a.format.engine(),
            late,
            phase,
        },
        flows: a.flows,
        seed: a.seed,
        rt: RtSetup {
            cpu: a.cpu,
            fifo_priority: a.rt_priority,
            mlock: a.mlock,
        },
        record: a.record.clone(),
        settings,
        intervals: ival_spec,
        sizes: size_spec,
    };
    let msg = format!(
        "sending to {target}: {} flow(s), interval {}, size {}",
        a.flows, job.intervals, job.sizes
    );
    let run = job.start().map_err(send_error)?;
    let sent = run.progress();
    let ticker = crate::progress::ticker(a.quiet || a.json, move |_| {
        format!("{msg}; {} sent", sent.get())
    });
    let report = run.join().map_err(send_error);
    drop(ticker);
    let report = report?;
    if a.json {
        println!("{}", to_json_sorted(&report)?);
    } else {
        text::write_send(&report, &mut std::io::stdout().lock())?;
    }
    Ok(())
}

fn send_error(e: SendError) -> anyhow::Error {
    match e {
        SendError::Spec { values, .. } => usage(format!(
            "{} {e}",
            match values {
                Values::Intervals => "--interval",
                Values::Sizes => "--size",
            }
        )),
        SendError::Rt(e) => rt_error(e),
        e => anyhow::Error::new(e),
    }
}

fn parse_padding(s: &str) -> Result<Padding> {
    if s == "random" {
        return Ok(Padding::Random);
    }
    let v = if let Some(h) = s.strip_prefix("0x") {
        u8::from_str_radix(h, 16).ok()
    } else {
        s.parse::<u8>().ok()
    };
    v.map(Padding::Const).ok_or_else(|| {
        usage(format!(
            "--padding {s:?}: give a byte value (0-255 or 0x00-0xff) or \"random\""
        ))
    })
}

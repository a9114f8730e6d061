//! `wirelab send`: flags to a [`SendJob`], its report to stdout.

use crate::error::{rt_error, usage, Privilege};
use anyhow::Result;
use std::time::Duration;
use wirelab_analysis::schema::to_json_sorted;
use wirelab_cli::common::{FormatArg, PhaseArg};
use wirelab_cli::send::{SendArgs, WaitArg};
use wirelab_core::gen::{Dist, SpecKind};
use wirelab_core::schedule::{Limits, SpinMargin, WaitStrategy};
use wirelab_engine::job::net::{self, BindAddr, Family};
use wirelab_engine::job::rt::RtSetup;
use wirelab_engine::job::send::{SendError, SendJob, Values};
use wirelab_engine::job::{spec, text};
use wirelab_engine::replay::Spin;
use wirelab_engine::sender::FlowConfig;
use wirelab_engine::txpath::{PathError, SocketKind};

/// Lateness that `--late rebase` shifts the schedule on.
const REBASE_THRESHOLD_NS: u64 = 10_000;

pub fn run(a: SendArgs) -> Result<()> {
    // The flag the intervals came from, for messages.
    let ival_flag = match (a.rate, a.bitrate) {
        (Some(_), _) => "--rate",
        (_, Some(_)) => "--bitrate",
        _ => "--interval",
    };
    let intervals = match (a.interval.clone(), a.rate, a.bitrate) {
        (Some(i), _, _) => Ok(i),
        (None, Some(pps), _) => spec::rate_interval(pps),
        (None, None, Some(bps)) => spec::bitrate_interval(bps, &a.size).ok_or_else(|| {
            usage("--bitrate needs a --size whose mean is defined (not cauchy, not heavy-tailed pareto)")
        })?,
        (None, None, None) => spec::rate_interval(1000.0),
    }
    .map_err(|e| usage(format!("{ival_flag}: {e}")))?;
    let duration_ns = a.duration.or(a.count.is_none().then_some(10_000_000_000));
    let (spin_ns, adaptive_spin) = match a.spin_margin {
        Spin::Auto => (SpinMargin::DEFAULT_INITIAL_NS, true),
        Spin::Fixed(ns) => (ns, false),
    };
    let socket = a.socket.engine();
    // An absolute start is where the first deadline lies: a calibrated
    // phase would move it.
    if a.start_at.is_some() && a.phase.phase == Some(PhaseArg::Auto) {
        return Err(usage(
            "--start-at fixes the first deadline and --phase auto would move it: leave --phase out (--start-at implies --phase off)",
        ));
    }
    // The start phase matters only for a periodic schedule.
    let phase_config = a.phase.config().filter(|_| a.start_at.is_none());
    let phase = match (phase_config, intervals.kind()) {
        (Some(pc), SpecKind::Dist(Dist::Const { value })) if *value > 0.0 => Some((pc, *value)),
        _ => None,
    };
    if let Some(n) = a.count.filter(|&n| a.warmup >= n) {
        return Err(usage(format!(
            "--warmup {} flags every one of the {n} probes of --count as warm-up: nothing would be measured",
            a.warmup
        )));
    }
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
    let mut family = a.family.family();
    if socket != SocketKind::Udp {
        if family == Family::V6 {
            return Err(usage(format!(
                "--socket {} builds IPv4 headers: -6 needs --socket udp",
                socket.as_str()
            )));
        }
        family = Family::V4;
    }
    let target = net::resolve(&a.host, a.port, family).map_err(|e| match e {
        net::ResolveError::NoAddress { .. } if socket != SocketKind::Udp => usage(format!(
            "--socket {} builds IPv4 headers, and {} has no IPv4 address (IPv6 needs --socket udp)",
            socket.as_str(),
            a.host
        )),
        e @ net::ResolveError::NoAddress { .. } => usage(e.to_string()),
        e => e.into(),
    })?;
    let job = SendJob {
        flow: FlowConfig {
            target,
            bind: a.bind.map(|b| BindAddr::or_any(Some(b), 0, Family::Any)),
            flow: a.flow,
            limits: Limits {
                count: a.count,
                duration_ns,
            },
            tos: a.tos.or(a.dscp.map(|d| d << 2)),
            warmup: a.warmup,
            padding: a.padding,
            wait: match a.wait {
                WaitArg::Sleep => WaitStrategy::Sleep,
                WaitArg::Spin => WaitStrategy::Spin,
                WaitArg::Hybrid => WaitStrategy::Hybrid { spin_ns },
            },
            adaptive_spin,
            prime: !a.no_prime,
            anchor_first: !a.planned_start,
            echo: a.echo,
            echo_wait: Duration::from_nanos(a.echo_wait),
            last_repeats: 3,
            last_gap: Duration::from_millis(2),
            max_batch: a.batch.into(),
            lead: Duration::ZERO,
            seed: a.seed,
            epoch_mono_ns: None,
            start_mono_ns: None,
            mono_to_real: 0,
            format: a.format.engine(),
            late: a.catch_up.policy(REBASE_THRESHOLD_NS),
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
        host: a.host.clone(),
        socket,
        start_at_unix_ns: a.start_at,
        intervals,
        sizes: a.size.clone(),
    };
    let msg = format!(
        "sending to {target}: {} flow(s), interval {}, size {}, socket {}",
        a.flows,
        job.intervals,
        job.sizes,
        socket.as_str()
    );
    let send_error = |e| match e {
        SendError::Spec { values, .. } | SendError::Range { values, .. } => usage(format!(
            "{} {e}",
            if values == Values::Sizes {
                "--size"
            } else {
                ival_flag
            }
        )),
        SendError::TooBig { .. } => usage(format!("--size {e}")),
        SendError::StartPast { .. } | SendError::StartTooFar { .. } => usage(e.to_string()),
        SendError::Path { ref source, .. } if source.is_permission() => {
            anyhow::Error::new(Privilege(e.to_string()))
        }
        SendError::Path {
            source: PathError::NotIpv4(_) | PathError::LocalTarget(_),
            ..
        } => usage(e.to_string()),
        SendError::Rt(e) => rt_error(e),
        e => e.into(),
    };
    let run = job.start().map_err(send_error)?;
    for n in run.notes().iter().filter(|_| !a.quiet) {
        eprintln!("wirelab send: note: {n}");
    }
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

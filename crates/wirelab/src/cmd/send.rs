//! `wirelab send`.

use crate::cli::{FormatArg, SendArgs, WaitArg};
use crate::cmd::analyze::{sender_summary, Requested, RttAccum, SendAccum, SentFlow};
use crate::error::usage;
use crate::values;
use anyhow::{Context, Result};
use std::time::Duration;
use wirelab_analysis::SenderInfo;
use wirelab_core::gen::{Bounds, Dist, SpecKind, SpecUnit};
use wirelab_core::schedule::{Limits, SpinMargin, WaitStrategy};
use wirelab_engine::recordlog::{hostname, RecordLog, RecordMeta};
use wirelab_engine::sender::{self, FlowConfig, Padding, MAX_PAYLOAD};
use wirelab_engine::StopFlag;
use wirelab_io::clock::{mono_ns, mono_to_real_offset};
use wirelab_wire::luna::LUNA_LEN;
use wirelab_wire::probe::{ECHO_LEN, HEADER_LEN};
use wirelab_wire::record::Role;

/// Lateness that `--late rebase` shifts the schedule on.
const REBASE_THRESHOLD_NS: u64 = 10_000;

pub fn run(a: SendArgs) -> Result<()> {
    let size_spec = values::parse_spec("--size", &a.size, SpecUnit::Bytes)?;
    let mean_size = values::mean_of(&size_spec);
    let ival_spec = values::interval_spec(
        a.interval.as_deref(),
        a.rate.as_deref(),
        a.bitrate.as_deref(),
        mean_size,
    )?;
    let duration_ns = match (&a.duration, a.count) {
        (Some(d), _) => Some(values::duration_ns("--duration", d)?),
        (None, Some(_)) => None,
        (None, None) => Some(10_000_000_000),
    };
    let limits = Limits {
        count: a.count,
        duration_ns,
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
    let padding = parse_padding(&a.padding)?;
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
    let echo_wait = Duration::from_nanos(values::duration_ns("--echo-wait", &a.echo_wait)?);
    let min_size = match (a.format, a.echo) {
        (FormatArg::Luna, _) => LUNA_LEN,
        (FormatArg::Wirelab, true) => ECHO_LEN,
        (FormatArg::Wirelab, false) => HEADER_LEN,
    } as f64;
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
    let size_bounds = Bounds::new(min_size, MAX_PAYLOAD as f64)?;
    let ival_bounds = Bounds::new(0.0, values::MAX_INTERVAL_NS)?;
    // Build every generator up front so a bad file fails before anything is sent.
    let mut gens = Vec::new();
    for i in 0..a.flows {
        let seed = a.seed.wrapping_add(i as u64 * 0x9e37_79b9);
        gens.push((
            values::build("--interval", &ival_spec, seed, ival_bounds)?,
            values::build("--size", &size_spec, seed ^ 0xa5a5, size_bounds)?,
        ));
    }

    if a.mlock {
        wirelab_io::rt::lock_memory()?;
    }
    let config = serde_json::json!({
        "host": a.host, "target": target.to_string(), "flow": a.flow, "flows": a.flows,
        "interval": ival_spec.to_string(), "size": size_spec.to_string(),
        "count": a.count, "duration_ns": duration_ns, "tos": tos, "padding": a.padding,
        "warmup": a.warmup, "wait": format!("{:?}", a.wait).to_lowercase(), "echo": a.echo,
        "seed": a.seed, "batch": a.batch, "rt_priority": a.rt_priority, "cpu": a.cpu,
        "format": a.format.engine(), "late": format!("{late:?}"),
        "phase": phase.map(|(pc, _)| pc.calibrate.as_nanos() as u64),
    });
    let mono_to_real = mono_to_real_offset();
    // sched_ns counts from the epoch; the first departure follows 50 ms
    // later, after every thread is set up.
    let epoch = mono_ns();
    let start = epoch + 50_000_000;
    let start_unix_ns = (epoch as i128 + mono_to_real) as u64;
    let log = match &a.record {
        Some(p) => {
            let meta = RecordMeta {
                wirelab_version: env!("CARGO_PKG_VERSION").into(),
                role: "sender".into(),
                host: hostname(),
                clock: "CLOCK_MONOTONIC schedule; tx times CLOCK_REALTIME".into(),
                start_unix_ns,
                config: config.clone(),
            };
            Some(
                RecordLog::create(p, Role::Sender, &meta)
                    .with_context(|| format!("cannot create record file {}", p.display()))?,
            )
        }
        None => None,
    };

    let stop = StopFlag::new();
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(sig, stop.as_arc())?;
    }
    let pb = crate::progress::spinner(a.quiet || a.json);
    if let Some(pb) = &pb {
        pb.set_message(format!(
            "sending to {target}: {} flow(s), interval {ival_spec}, size {size_spec}",
            a.flows
        ));
    }

    let interval_ns = Requested::from_config(&config).mean_interval_ns();
    let mut handles = Vec::new();
    for (i, (mut ivals, mut sizes)) in gens.into_iter().enumerate() {
        let cfg = FlowConfig {
            target,
            bind,
            flow: a.flow.wrapping_add(i as u32),
            limits,
            tos,
            warmup: a.warmup,
            padding,
            wait,
            adaptive_spin,
            prime: !a.no_prime,
            anchor_first: !a.planned_start,
            echo: a.echo,
            echo_wait,
            last_repeats: 3,
            last_gap: Duration::from_millis(2),
            max_batch: a.batch as usize,
            lead: Duration::ZERO,
            seed: a.seed.wrapping_add(i as u64),
            epoch_mono_ns: Some(epoch),
            start_mono_ns: Some(start),
            mono_to_real,
            format: a.format.engine(),
            late,
            phase,
        };
        let stop = stop.clone();
        let tx_log = log.as_ref().map(|l| l.writer());
        let reply_log = log.as_ref().filter(|_| a.echo).map(|l| l.writer());
        let cpu = a.cpu.map(|c| c + i);
        let prio = a.rt_priority;
        let info = SenderInfo {
            start_unix_ns,
            interval_ns,
            late_threshold_ns: None,
        };
        let echo = a.echo;
        handles.push(std::thread::spawn(move || -> Result<SentFlow> {
            if let Some(c) = cpu {
                wirelab_io::rt::pin_to_cpu(c)?;
            }
            if let Some(p) = prio {
                wirelab_io::rt::set_fifo_priority(p)?;
            }
            let mut next_ival = || ivals.next();
            let mut next_size = || sizes.next();
            let mut tx = SendAccum::new(info);
            let (stats, rtt) = sender::run_flow(
                &cfg,
                &mut next_ival,
                &mut next_size,
                tx_log,
                reply_log,
                &mut tx,
                RttAccum::default(),
                &stop,
            )
            .with_context(|| format!("flow {} to {}", cfg.flow, cfg.target))?;
            Ok(SentFlow {
                stats,
                tx,
                rtt,
                echo,
                clamped_intervals: ivals.clamped(),
                clamped_sizes: sizes.clamped(),
            })
        }));
    }
    let mut outcomes = Vec::new();
    let mut first_err = None;
    for h in handles {
        match h.join() {
            Ok(Ok(o)) => outcomes.push(o),
            Ok(Err(e)) => {
                stop.stop();
                first_err.get_or_insert(e);
            }
            Err(_) => {
                stop.stop();
                first_err.get_or_insert(anyhow::anyhow!("a sending thread panicked"));
            }
        }
    }
    if let Some(pb) = pb {
        pb.finish_and_clear();
    }
    let mut log_stats = None;
    if let Some(log) = log {
        log_stats = Some(log.finish().context("cannot finish the record file")?);
    }
    if let Some(e) = first_err {
        return Err(e);
    }
    let mut report = sender_summary(&mut outcomes, &config, target)?;
    report["record_log"] = serde_json::to_value(log_stats)?;
    if a.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        crate::cmd::analyze::print_sender_summary(&report)?;
    }
    Ok(())
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

//! `wirelab recv`.

use crate::cli::{FormatArg, RecvArgs, RecvWaitArg};
use crate::values;
use anyhow::{Context, Result};
use std::time::Duration;
use wirelab_engine::receiver::{Receiver, RecvConfig, RecvCounters, RecvWait};
use wirelab_engine::recordlog::{hostname, RecordLog, RecordMeta};
use wirelab_engine::StopFlag;
use wirelab_io::clock::real_ns;
use wirelab_io::hwtstamp::{HwTsError, RxHwStamping};
use wirelab_wire::record::Role;

pub fn run(a: RecvArgs) -> Result<()> {
    let bind = super::bind_addr(a.bind.as_deref(), a.port, a.family.ipv4)?;
    let dur = |flag: &str, v: &Option<String>| -> Result<Option<Duration>> {
        v.as_deref()
            .map(|s| values::duration_ns(flag, s).map(Duration::from_nanos))
            .transpose()
    };
    let window_ns = values::duration_ns("--window", &a.window)?.max(1_000_000);
    let cfg = RecvConfig {
        bind,
        v6only: a.family.ipv6,
        echo: a.echo,
        rcvbuf: values::bytes("--rcvbuf", &a.rcvbuf)? as usize,
        batch: a.batch as usize,
        busy_poll_us: a.busy_poll,
        linger: Duration::from_nanos(values::duration_ns("--linger", &a.linger)?),
        idle_timeout: match dur("--idle-timeout", &a.idle_timeout)? {
            // LUNA flows have no end marker: end when they fall silent.
            None if a.format == FormatArg::Luna && a.timeout.is_none() && !a.forever => {
                Some(Duration::from_secs(2))
            }
            d => d,
        },
        format: a.format.engine(),
        max_duration: dur("--timeout", &a.timeout)?,
        forever: a.forever,
        wait: {
            let period_ns = values::duration_ns("--poll-period", &a.poll_period)?;
            if period_ns < 1_000 {
                return Err(crate::error::usage("--poll-period must be at least 1us"));
            }
            match a.wait {
                RecvWaitArg::Block => RecvWait::Block,
                RecvWaitArg::Poll => RecvWait::Poll { period_ns },
                RecvWaitArg::Adaptive => RecvWait::Adaptive { period_ns },
            }
        },
    };
    if let Some(c) = a.cpu {
        wirelab_io::rt::pin_to_cpu(c)?;
    }
    if let Some(p) = a.rt_priority {
        wirelab_io::rt::set_fifo_priority(p)?;
    }
    let rx = Receiver::bind(cfg.clone()).map_err(|e| bind_error(e, bind))?;
    let local = rx.local_addr()?;
    // Held until the end: dropping it restores the NIC's stamping setting.
    let hw = match &a.hw_timestamps {
        Some(ifname) => Some(RxHwStamping::enable(ifname).map_err(hw_error)?),
        None => None,
    };
    let clock =
        match &hw {
            Some(h) => format!(
            "rx times from the hardware clock of {} (PHC {}) where stamped, else CLOCK_REALTIME",
            h.interface(),
            h.info.phc_index.map_or("-".into(), |i| format!("/dev/ptp{i}"))
        ),
            None => format!(
                "rx times CLOCK_REALTIME, {} timestamps",
                rx.timestamp_mode().as_str()
            ),
        };
    let log = match &a.record {
        Some(p) => {
            let meta = RecordMeta {
                wirelab_version: env!("CARGO_PKG_VERSION").into(),
                role: if a.echo { "reflector" } else { "receiver" }.into(),
                host: hostname(),
                clock: clock.clone(),
                start_unix_ns: real_ns(),
                config: serde_json::json!({
                    "bind": local.to_string(), "echo": a.echo, "rcvbuf": a.rcvbuf,
                    "batch": a.batch, "busy_poll_us": a.busy_poll,
                    "hw_timestamps": a.hw_timestamps, "format": a.format.engine(),
                }),
            };
            Some(
                RecordLog::create(p, Role::Receiver, &meta)
                    .with_context(|| format!("cannot create record file {}", p.display()))?,
            )
        }
        None => None,
    };
    let stop = StopFlag::new();
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(sig, stop.as_arc())?;
    }
    if !a.quiet && !a.json {
        eprintln!(
            "wirelab recv: listening on {local} ({}{}), Ctrl-C to stop",
            rx.timestamp_mode().as_str(),
            if a.echo {
                ", reflecting echo requests"
            } else {
                ""
            }
        );
    }
    let pb = crate::progress::spinner(a.quiet);
    let mut last = (0u64, std::time::Instant::now());
    let mut progress = |c: &RecvCounters| {
        if let Some(pb) = &pb {
            let dt = last.1.elapsed().as_secs_f64().max(1e-3);
            let rate = (c.packets - last.0) as f64 / dt;
            last = (c.packets, std::time::Instant::now());
            pb.set_message(format!(
                "{} packets, {:.0} pps, {} flow(s) ({} ended), {} kernel drops, {} not probes, wait {}",
                c.packets, rate, c.flows, c.flows_ended, c.kernel_drops, c.malformed, c.wait_mode
            ));
        }
    };
    let mut flows = super::analyze::LiveFlows::new(window_ns);
    let mut writer = log.as_ref().map(|l| l.writer());
    let out = rx.run(
        &mut flows,
        writer.as_mut(),
        &stop,
        &mut progress,
        Duration::from_millis(250),
    )?;
    if let Some(pb) = &pb {
        pb.finish_and_clear();
    }
    drop(writer);
    let log_stats = match log {
        Some(l) => Some(l.finish().context("cannot finish the record file")?),
        None => None,
    };
    let summary = flows.finish();
    let hw_json = hw.as_ref().map(|h| {
        serde_json::json!({
            "interface": h.interface(),
            "phc_index": h.info.phc_index,
            "rx_filter": h.applied.rx_filter,
            "changed_config": h.changed_config(),
            "stamped_packets": out.counters.hw_timestamps,
        })
    });
    drop(hw);
    if a.json {
        let v = serde_json::json!({
            "schema": "wirelab.recv/1",
            "receiver": out,
            "flows": summary.flows,
            "totals": summary.totals,
            "clock_note": super::analyze::CLOCK_NOTE,
            "record_log": log_stats,
            "hw_timestamps": hw_json,
            "clock": clock,
        });
        println!("{}", serde_json::to_string_pretty(&v)?);
    } else {
        println!(
            "receiver {}: {} packets, {} bytes in {:.3} s ({}), ended by {}; {} kernel drops, {} not probes, {} echo replies\n\
             wait {}: {:.0} wake-ups/s, {:.1} packets per wake-up, {} mode switches, CPU {:.3} s user + {:.3} s system",
            out.local_addr,
            out.counters.packets,
            out.counters.bytes,
            out.duration_ns as f64 / 1e9,
            out.timestamping,
            out.end_reason,
            out.counters.kernel_drops,
            out.counters.malformed,
            out.counters.echo_replies,
            out.wait,
            out.wakeups_per_s,
            out.packets_per_wakeup,
            out.counters.mode_switches,
            out.cpu_user_ns as f64 / 1e9,
            out.cpu_system_ns as f64 / 1e9,
        );
        for f in &out.flow_sources {
            println!("LUNA flow {} = probes from {}", f.flow, f.source);
        }
        if let Some(h) = &hw_json {
            println!(
                "hardware timestamps on {}: {} of {} packets stamped by the NIC",
                h["interface"].as_str().unwrap_or("?"),
                out.counters.hw_timestamps,
                out.counters.packets
            );
        }
        super::analyze::print_summary(&summary)?;
    }
    Ok(())
}

fn hw_error(e: HwTsError) -> anyhow::Error {
    match e {
        HwTsError::Permission(_) => anyhow::Error::new(crate::error::Privilege(e.to_string())),
        HwTsError::NoDevice(_) | HwTsError::NotSupported(..) | HwTsError::BadName(_) => {
            crate::error::usage(format!("--hw-timestamps: {e}"))
        }
        HwTsError::Io { .. } => anyhow::Error::new(e).context("--hw-timestamps"),
    }
}

fn bind_error(e: std::io::Error, bind: std::net::SocketAddr) -> anyhow::Error {
    match e.kind() {
        std::io::ErrorKind::AddrInUse => crate::error::usage(format!(
            "port {} is already in use on {}: pick another with --port",
            bind.port(),
            bind.ip()
        )),
        std::io::ErrorKind::PermissionDenied => anyhow::Error::new(crate::error::Privilege(format!(
            "binding {bind} needs privilege (ports below 1024 need CAP_NET_BIND_SERVICE): use --port 1024 or above"
        ))),
        std::io::ErrorKind::AddrNotAvailable => crate::error::usage(format!(
            "{} is not an address of this host: check --bind",
            bind.ip()
        )),
        _ => anyhow::Error::new(e).context(format!("cannot bind {bind}")),
    }
}

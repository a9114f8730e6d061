//! `wirelab recv`: flags to a [`RecvJob`], its report to stdout.

use crate::cli::{FormatArg, RecvArgs, RecvWaitArg};
use crate::error::{rt_error, usage, Privilege};
use crate::values;
use anyhow::Result;
use std::time::Duration;
use wirelab_analysis::schema::to_json_sorted;
use wirelab_engine::job::recv::{RecvError, RecvJob, RecvSettings};
use wirelab_engine::job::rt::RtSetup;
use wirelab_engine::job::text;
use wirelab_engine::receiver::{RecvConfig, RecvCounters, RecvWait};
use wirelab_io::hwtstamp::HwTsError;

pub fn run(a: RecvArgs) -> Result<()> {
    let bind = super::bind_addr(a.bind.as_deref(), a.port, a.family.ipv4)?;
    if a.poll_period < 1_000 {
        return Err(usage("--poll-period must be at least 1us"));
    }
    let job = RecvJob {
        recv: RecvConfig {
            bind,
            v6only: a.family.ipv6,
            echo: a.echo,
            rcvbuf: values::bytes("--rcvbuf", &a.rcvbuf)? as usize,
            batch: a.batch as usize,
            busy_poll_us: a.busy_poll,
            linger: Duration::from_nanos(a.linger),
            idle_timeout: match a.idle_timeout {
                // LUNA flows have no end marker: end when they fall silent.
                None if a.format == FormatArg::Luna && a.timeout.is_none() && !a.forever => {
                    Some(Duration::from_secs(2))
                }
                d => d.map(Duration::from_nanos),
            },
            format: a.format.engine(),
            reuse_port: a.reuse_port,
            max_duration: a.timeout.map(Duration::from_nanos),
            forever: a.forever,
            wait: match a.wait {
                RecvWaitArg::Block => RecvWait::Block,
                RecvWaitArg::Poll => RecvWait::Poll {
                    period_ns: a.poll_period,
                },
                RecvWaitArg::Adaptive => RecvWait::Adaptive {
                    period_ns: a.poll_period,
                },
            },
        },
        rt: RtSetup {
            cpu: a.cpu,
            fifo_priority: a.rt_priority,
            mlock: false,
        },
        window_ns: a.window.max(1_000_000),
        max_flows: a.max_flows as usize,
        record: a.record.clone(),
        hw_timestamps: a.hw_timestamps.clone(),
        settings: RecvSettings {
            rcvbuf: a.rcvbuf.clone(),
            batch: a.batch,
            busy_poll_us: a.busy_poll,
        },
    };
    let rx = job.bind().map_err(|e| recv_error(e, bind))?;
    if !a.quiet && !a.json {
        eprintln!(
            "wirelab recv: listening on {} ({}{}), Ctrl-C to stop",
            rx.local_addr(),
            rx.timestamping(),
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
    let report = rx.run(&mut progress);
    if let Some(pb) = &pb {
        pb.finish_and_clear();
    }
    let report = report.map_err(|e| recv_error(e, bind))?;
    if a.json {
        println!("{}", to_json_sorted(&report)?);
    } else {
        text::write_recv(&report, &mut std::io::stdout().lock())?;
    }
    Ok(())
}

fn recv_error(e: RecvError, bind: std::net::SocketAddr) -> anyhow::Error {
    use std::io::ErrorKind;
    match e {
        RecvError::Rt(e) => rt_error(e),
        RecvError::HwStamping(e @ HwTsError::Permission(_)) => {
            anyhow::Error::new(Privilege(e.to_string()))
        }
        RecvError::HwStamping(
            e @ (HwTsError::NoDevice(_) | HwTsError::NotSupported(..) | HwTsError::BadName(_)),
        ) => usage(format!("--hw-timestamps: {e}")),
        RecvError::HwStamping(e) => anyhow::Error::new(e).context("--hw-timestamps"),
        RecvError::Bind { source, .. } => match source.kind() {
            ErrorKind::AddrInUse => usage(format!(
                "port {} is already in use on {}: pick another with --port (receivers that all \
                 pass --reuse-port share a port)",
                bind.port(),
                bind.ip()
            )),
            ErrorKind::PermissionDenied => anyhow::Error::new(Privilege(format!(
                "binding {bind} needs privilege (ports below 1024 need CAP_NET_BIND_SERVICE): use --port 1024 or above"
            ))),
            ErrorKind::AddrNotAvailable => usage(format!(
                "{} is not an address of this host: check --bind",
                bind.ip()
            )),
            _ => anyhow::Error::new(source).context(format!("cannot bind {bind}")),
        },
        e => anyhow::Error::new(e),
    }
}

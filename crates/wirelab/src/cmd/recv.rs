//! `wirelab recv`: flags to a [`RecvJob`], its report to stdout.

use crate::error::{rt_error, usage, Privilege};
use anyhow::Result;
use std::time::Duration;
use wirelab_analysis::schema::to_json_sorted;
use wirelab_cli::common::FormatArg;
use wirelab_cli::recv::{RecvArgs, RecvWaitArg};
use wirelab_engine::job::net::BindAddr;
use wirelab_engine::job::recv::{ProgressLine, RecvError, RecvJob, RecvSettings};
use wirelab_engine::job::rt::RtSetup;
use wirelab_engine::job::text;
use wirelab_engine::receiver::{RecvConfig, RecvCounters, RecvWait};
use wirelab_io::hwtstamp::HwTsError;

pub fn run(a: RecvArgs) -> Result<()> {
    let bind = BindAddr::or_any(a.bind, a.port, a.family.family());
    let period_ns = a.poll_period;
    let job = RecvJob {
        recv: RecvConfig {
            bind,
            v6only: a.family.ipv6,
            echo: a.echo,
            rcvbuf: a.rcvbuf as usize,
            batch: a.batch.into(),
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
                RecvWaitArg::Poll => RecvWait::Poll { period_ns },
                RecvWaitArg::Adaptive => RecvWait::Adaptive { period_ns },
            },
        },
        rt: RtSetup {
            cpu: a.cpu,
            fifo_priority: a.rt_priority,
            mlock: false,
        },
        window_ns: a.window,
        max_flows: a.max_flows as usize,
        record: a.record.clone(),
        status: a.status.clone(),
        hw_timestamps: a.hw_timestamps.clone(),
        settings: RecvSettings {
            rcvbuf: a.rcvbuf,
            batch: a.batch,
            busy_poll_us: a.busy_poll,
        },
    };
    let rx = job.bind().map_err(|e| recv_error(e, bind))?;
    if !a.quiet && !a.json {
        eprintln!("{}", rx.banner());
    }
    let pb = crate::progress::spinner(a.quiet);
    let mut line = ProgressLine::default();
    let mut progress = |c: &RecvCounters| {
        if let Some(pb) = &pb {
            pb.set_message(line.line(c));
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
        RecvError::HwStamping(e @ HwTsError::Permission(_)) => Privilege(e.to_string()).into(),
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
            ErrorKind::PermissionDenied => Privilege(format!(
                "binding {bind} needs privilege (ports below 1024 need CAP_NET_BIND_SERVICE): use --port 1024 or above"
            ))
            .into(),
            ErrorKind::AddrNotAvailable => usage(format!(
                "{} is not an address of this host: check --bind",
                bind.ip()
            )),
            _ => anyhow::Error::new(source).context(format!("cannot bind {bind}")),
        },
        e => e.into(),
    }
}

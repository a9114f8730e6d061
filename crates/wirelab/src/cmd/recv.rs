//! `wirelab recv`: its flags' [`RecvJob`](wirelab_engine::job::recv::RecvJob) run, its report to stdout.

use crate::error::{rt_error, usage, Privilege};
use anyhow::Result;
use wirelab_analysis::schema::to_json_sorted;
use wirelab_cli::recv::RecvArgs;
use wirelab_engine::job::recv::{ProgressLine, RecvError};
use wirelab_engine::job::text;
use wirelab_engine::receiver::RecvCounters;
use wirelab_io::hwtstamp::HwTsError;

pub fn run(a: RecvArgs) -> Result<()> {
    let job = a.job();
    let bind = job.recv.bind;
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
        RecvError::Bind { cause: source, .. } => match source.kind() {
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

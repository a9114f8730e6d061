//! `wirelab send`: its flags' [`SendJob`](wirelab_engine::job::send::SendJob) run, its report to stdout.

use crate::error::{rt_error, usage, Privilege};
use anyhow::Result;
use wirelab_analysis::schema::to_json_sorted;
use wirelab_cli::send::SendArgs;
use wirelab_engine::job::net;
use wirelab_engine::job::send::{SendError, Values};
use wirelab_engine::job::text;
use wirelab_engine::txpath::{PathError, SocketKind};

pub fn run(a: SendArgs) -> Result<()> {
    let ival_flag = a.interval_flag();
    let socket = a.socket.engine();
    let job = a.job(|family| {
        net::resolve(&a.host, a.port, family).map_err(|e| match e {
            net::ResolveError::NoAddress { .. } if socket != SocketKind::Udp => usage(format!(
                "--socket {} builds IPv4 headers, and {} has no IPv4 address (IPv6 needs --socket udp)",
                socket.as_str(),
                a.host
            )),
            e @ net::ResolveError::NoAddress { .. } => usage(e.to_string()),
            e => e.into(),
        })
    })?;
    let target = job.flow.target;
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
        SendError::Path { ref cause, .. } if cause.is_permission() => {
            anyhow::Error::new(Privilege(e.to_string()))
        }
        SendError::Path {
            cause: PathError::NotIpv4(_) | PathError::LocalTarget(_),
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

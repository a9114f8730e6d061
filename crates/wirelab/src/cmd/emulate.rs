//! `wirelab emulate`: its flags' emulator run, its counters to stdout;
//! `emulate ctl` asks a running emulator.

use crate::error::{rt_error, usage, Privilege};
use anyhow::Result;
use wirelab_cli::emulate::{CtlArgs, CtlOp, EmulateArgs, EmulateCmd};
use wirelab_engine::emulate::client::{answer_text, refusal};
use wirelab_engine::emulate::ctl::{self, Request};
use wirelab_engine::job::emulate::EmulateError;
use wirelab_engine::job::stop_on_signals;

pub fn run(a: EmulateArgs) -> Result<()> {
    match a.cmd {
        Some(EmulateCmd::Ctl(c)) => ctl_run(c),
        Some(EmulateCmd::Verify(v)) => crate::cmd::emulate_verify::run_verify(v),
        None => emulate(a),
    }
}

fn emulate(a: EmulateArgs) -> Result<()> {
    let spec = a.spec(std::env::args().collect::<Vec<_>>().join(" "))?;
    let (if_a, if_b, spec_rt) = (spec.a.clone(), spec.b.clone(), spec.rt);
    let job = spec.job().map_err(|e| {
        if e.is_usage() {
            usage(e.to_string())
        } else {
            e.into()
        }
    })?;
    let stop = stop_on_signals()?;
    if let Some(w) = spec_rt.throttle_warning() {
        eprintln!("emulate: warning: {w}");
    }
    if !a.json {
        eprintln!(
            "emulate: bridging {if_a} <-> {if_b}{}{}; Ctrl-C to stop",
            a.duration
                .map(|d| format!(" for {:.2} s", d as f64 / 1e9))
                .unwrap_or_default(),
            a.ctl
                .as_ref()
                .map(|p| format!("; rules changed over {}", p.display()))
                .unwrap_or_default()
        );
    }
    let live = job.live.clone();
    let ticker = crate::progress::ticker(a.quiet, move |_| {
        format!(
            "a2b {} | b2a {}",
            live[0].snapshot().line(),
            live[1].snapshot().line()
        )
    });
    let res = job.run(&stop);
    drop(ticker);
    let mut run = res.map_err(map_err)?;
    let decisions = run.finish_recording();
    let report = run.report(&decisions);
    if a.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print!("{}", report.text());
    }
    Ok(())
}

fn map_err(e: EmulateError) -> anyhow::Error {
    match e {
        EmulateError::Ring(wirelab_io::ring_rx::RingError::Privilege { .. })
        | EmulateError::Socket(wirelab_io::packet_sock::PacketError::Permission { .. }) => {
            anyhow::Error::new(Privilege(e.to_string()))
        }
        EmulateError::Rt(r) => rt_error(r),
        EmulateError::SameInterface(_)
        | EmulateError::Interface { .. }
        | EmulateError::Ctl(ctl::CtlError::InUse { .. } | ctl::CtlError::NotASocket { .. }) => {
            usage(e.to_string())
        }
        e => e.into(),
    }
}

/// `wirelab emulate ctl`: one request, its answer on stdout.
fn ctl_run(c: CtlArgs) -> Result<()> {
    let req = match c.op {
        CtlOp::Add { filter, stages } => Request::Add { filter, stages },
        CtlOp::Update { rule, stages } => Request::Update { rule, stages },
        CtlOp::Del { rule } => Request::Del { rule },
        CtlOp::List => Request::List,
        CtlOp::Stats => Request::Stats,
    };
    let v = ctl::request(&c.socket, &req)?;
    if c.json {
        println!("{}", serde_json::to_string_pretty(&v)?);
    }
    if let Some(m) = refusal(&v) {
        anyhow::bail!("{m}");
    }
    if !c.json {
        print!("{}", answer_text(&req, &v));
    }
    Ok(())
}

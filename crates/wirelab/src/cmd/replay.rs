//! `wirelab replay`: its flags' [`ReplayJob`] run, its report to stdout.

use crate::error::{rt_error, usage, Privilege};
use anyhow::Result;
use wirelab_cli::replay::ReplayArgs;
use wirelab_engine::job::replay::sides::{cache_report, sides};
use wirelab_engine::job::replay::{ReplayJob, ReplayJobError};
use wirelab_engine::job::text;
use wirelab_engine::replay::{self, Output, ReplayError, Split};
use wirelab_io::packet_sock::PacketError;

pub fn run(a: ReplayArgs) -> Result<()> {
    let s = &a.split;
    let sides = a
        .split_from()?
        .map(|f| sides(&a.files, &f, s.save_cache.as_deref()))
        .transpose()
        .map_err(job_error)?;
    let tx = a.tx();
    let output = match (&s.write, a.intf.as_deref()) {
        (Some(w), _) => Output::File(w.clone()),
        (None, Some(i)) => tx.output(i),
        (None, None) => {
            // Classify only (tcpprep): the cache file is written.
            if let (Some(m), Some(out)) = (&sides, &s.save_cache) {
                let r = cache_report(m, out);
                match a.json {
                    true => println!("{}", r.to_json()?),
                    false => text::write_replay_cache(&r, &mut std::io::stdout().lock())?,
                }
            }
            return Ok(());
        }
    };
    let rewrite =
        a.rewrite(|i| Ok::<_, anyhow::Error>(replay::interface(i).map_err(job_error)?.mac))?;
    let split = s.intf2.as_deref().zip(sides).map(|(i2, sides)| Split {
        secondary: tx.output(i2),
        sides,
    });
    let cfg = a.config(rewrite, output, split);
    if a.loops == 0 && a.duration.is_none() && a.limit.is_none() && !a.quiet {
        eprintln!("wirelab replay: looping until interrupted (Ctrl-C)");
    }
    let job = ReplayJob::new(cfg, a.rt());
    let sent = job.progress();
    let ticker = crate::progress::ticker(a.quiet, move |secs| {
        let n = sent.get();
        format!("replay: {n} frame(s) sent, {:.0} pps", n as f64 / secs)
    });
    let res = job.run();
    drop(ticker);
    let rep = res.map_err(|e| match e {
        ReplayJobError::Replay(e @ ReplayError::Packet(PacketError::Os { .. })) if tx.ring() => {
            anyhow::anyhow!("{e} (--ring-slots, or --tx sendmmsg)")
        }
        e => job_error(e),
    })?;
    if a.json {
        println!("{}", serde_json::to_string_pretty(&rep)?);
    } else {
        text::write_replay(&rep, &mut std::io::stdout().lock())?;
    }
    // Nothing sent and not asked for: a failure, with the reason.
    match rep.nothing_sent {
        Some(n) if !n.asked => {
            let verb = if rep.tx == "file" { "written" } else { "sent" };
            Err(anyhow::anyhow!("nothing {verb}: {}", n.reason))
        }
        _ => Ok(()),
    }
}

fn job_error(e: impl Into<ReplayJobError>) -> anyhow::Error {
    match e.into() {
        ReplayJobError::Rt(e) => rt_error(e),
        ReplayJobError::Replay(e @ ReplayError::Packet(PacketError::Permission { .. })) => {
            Privilege(e.to_string()).into()
        }
        ReplayJobError::Replay(e @ ReplayError::Packet(PacketError::NoInterface { .. })) => {
            usage(e.to_string())
        }
        e @ ReplayJobError::Cache { .. } => usage(e.to_string()),
        e => e.into(),
    }
}

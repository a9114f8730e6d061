//! `wirelab trace`: trace tools. Flags to `wirelab_engine::trace` jobs;
//! their reports to stderr (stdout may carry the output), their errors to
//! exit codes: bad input is a usage error (exit 2) naming its place
//! (`FILE:LINE:COL: what`).

use crate::error::usage;
use anyhow::Result;
use std::io::{self, BufWriter};
use wirelab_cli::trace::{TraceArgs, TraceCmd};
use wirelab_engine::trace::TraceJobError;

pub fn run(a: TraceArgs) -> Result<()> {
    match a.cmd {
        TraceCmd::Convert(c) => eprint!("{}", c.job().run().map_err(failed)?.text()),
        TraceCmd::Dump(d) => {
            let mut out = BufWriter::new(io::stdout().lock());
            d.job().run(&mut out).map_err(failed)?;
        }
        TraceCmd::Encode(e) => e.job()?.run().map_err(failed)?,
        TraceCmd::Gen(g) => eprint!("{}", g.job().run().map_err(failed)?.text()),
        TraceCmd::Stats(s) => {
            let r = s.job().run().map_err(failed)?;
            if s.json {
                println!("{}", serde_json::to_string_pretty(&r.json())?);
            } else {
                print!("{}", r.text());
            }
        }
        TraceCmd::FromRecords(f) => eprint!("{}", f.job().run().map_err(failed)?.text()),
        TraceCmd::Maketable(m) => eprint!("{}", m.job().run().map_err(failed)?.text()),
    }
    Ok(())
}

/// Bad input is a usage error (exit 2); a file the machine cannot open,
/// read or write a runtime failure (exit 1).
fn failed(e: TraceJobError) -> anyhow::Error {
    if e.is_usage() {
        usage(e.to_string())
    } else {
        e.into()
    }
}

//! `wirelab trace`: trace tools. Flags to `wirelab_engine::trace` jobs;
//! their reports to stderr (stdout may carry the output), their errors to
//! exit codes: bad input is a usage error (exit 2) naming its place
//! (`FILE:LINE:COL: what`).

use crate::error::usage;
use anyhow::Result;
use std::io::{self, BufWriter};
use wirelab_cli::trace::{fmt, options, ActionArg, OrderArg, TraceArgs, TraceCmd, WordFormat};
use wirelab_core::trace::dump::{encode_word, WordAction};
use wirelab_core::trace::measured::OwdBase;
use wirelab_core::trace::TraceOptions;
use wirelab_engine::trace::{self as job, InputSpec, TraceJobError};

pub fn run(a: TraceArgs) -> Result<()> {
    match a.cmd {
        TraceCmd::Convert(c) => {
            let order = c.order.order();
            let input = InputSpec {
                path: c.input,
                format: fmt("--from", c.from),
                options: options(order, c.neg, c.period),
            };
            let to_options = TraceOptions {
                order: c.to_order.map_or(order, OrderArg::order),
                ..TraceOptions::default()
            };
            let (output, to) = (c.output, fmt("--to", c.to));
            let job = job::Convert {
                input,
                output,
                to,
                to_options,
            };
            eprint!("{}", job.run().map_err(failed)?.text());
        }
        TraceCmd::Dump(d) => {
            let (input, bits, json) = (d.read.input(d.file), d.bits, d.json);
            let mut out = BufWriter::new(io::stdout().lock());
            job::Dump { input, bits, json }
                .run(&mut out)
                .map_err(failed)?;
        }
        TraceCmd::Encode(e) => {
            let action = match e.action {
                ActionArg::Delay => WordAction::Delay,
                ActionArg::Drop => WordAction::Drop,
                ActionArg::Dup => WordAction::Dup,
            };
            let word =
                encode_word(action, e.delay_us).map_err(|m| usage(format!("--delay-us: {m}")))?;
            let bin = (e.format == WordFormat::Bin).then(|| e.order.order());
            let output = e.output.map(|p| p.to_string_lossy().into_owned());
            let job = job::Encode {
                word,
                bin,
                output,
                append: e.append,
            };
            job.run().map_err(failed)?;
        }
        TraceCmd::Gen(g) => {
            let job = job::Gen {
                dist: g.dist,
                mean_ns: g.mean,
                jitter_ns: g.jitter,
                count: g.count,
                loss: g.loss,
                hurst: g.hurst,
                block: g.block,
                seed: g.seed,
                output: g.output,
                format: fmt("--format", g.format),
                order: g.order.order(),
            };
            eprint!("{}", job.run().map_err(failed)?.text());
        }
        TraceCmd::Stats(s) => {
            let r = job::Stats {
                input: s.read.input(s.file),
            }
            .run()
            .map_err(failed)?;
            if s.json {
                println!("{}", serde_json::to_string_pretty(&r.json())?);
            } else {
                print!("{}", r.text());
            }
        }
        TraceCmd::FromRecords(f) => {
            let job = job::FromRecords {
                sender: f.sender.to_string_lossy().into_owned(),
                receiver: f.receiver.to_string_lossy().into_owned(),
                flow: f.flow,
                base: if f.absolute {
                    OwdBase::Absolute
                } else {
                    OwdBase::Relative
                },
                output: f.output,
                format: fmt("--format", f.format),
                order: f.order.order(),
            };
            eprint!("{}", job.run().map_err(failed)?.text());
        }
        TraceCmd::Maketable(m) => {
            let job = job::Maketable {
                input: m.read.input(m.file),
                output: m.output,
            };
            eprint!("{}", job.run().map_err(failed)?.text());
        }
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

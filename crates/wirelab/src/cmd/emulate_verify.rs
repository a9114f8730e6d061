//! `wirelab emulate verify IN OUT`: flags to an
//! [`wirelab_engine::emulate::verify::Verify`] job, its
//! `wirelab.emulate.verify/1` report rendered.

use crate::error::usage;
use anyhow::Result;
use wirelab_analysis::emuverify::VerifyConfig;
use wirelab_cli::verify::{Dir, VerifyArgs};
use wirelab_core::link::Direction;
use wirelab_engine::emulate::verify::{Configured, Verify};

pub fn run_verify(a: VerifyArgs) -> Result<()> {
    let configured = match (a.delay, a.trace, a.stages) {
        (Some(d), _, _) => Configured::Delay(d),
        (_, Some(t), _) => Configured::Trace(t),
        (_, _, s) => Configured::Stages(s.unwrap_or_default()),
    };
    let job = Verify {
        input: a.input,
        output: a.output,
        configured,
        seed: a.seed,
        direction: match a.direction {
            Dir::A2b => Direction::AToB,
            Dir::B2a => Direction::BToA,
        },
        config: VerifyConfig {
            window_ns: a.window,
            max_pending: usize::try_from(a.max_pending).unwrap_or(usize::MAX),
            ks_samples: usize::try_from(a.ks_samples).unwrap_or(usize::MAX),
            skip_in: a.skip,
        },
    };
    let r = job.run().map_err(|e| usage(e.to_string()))?;
    if a.json {
        for w in &r.warnings {
            eprintln!("wirelab: warning: {w}");
        }
        println!("{}", serde_json::to_string_pretty(&r)?);
    } else {
        print!("{}", r.text());
    }
    Ok(())
}

//! `wirelab emulate verify IN OUT`: its flags'
//! [`wirelab_engine::emulate::verify::Verify`] job run, its
//! `wirelab.emulate.verify/1` report rendered.

use crate::error::usage;
use anyhow::Result;
use wirelab_cli::verify::VerifyArgs;

pub fn run_verify(a: VerifyArgs) -> Result<()> {
    let json = a.json;
    let job = a.job();
    let r = job.run().map_err(|e| usage(e.to_string()))?;
    if json {
        for w in &r.warnings {
            eprintln!("wirelab: warning: {w}");
        }
        println!("{}", serde_json::to_string_pretty(&r)?);
    } else {
        print!("{}", r.text());
    }
    Ok(())
}

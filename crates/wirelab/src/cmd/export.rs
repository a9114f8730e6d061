//! `wirelab export`.

use crate::cli::{ExportArgs, ExportFormat};
use anyhow::{Context, Result};
use std::io::{BufWriter, Write};
use wirelab_wire::record::RecordReader;

pub fn run(a: ExportArgs) -> Result<()> {
    let f = std::fs::File::open(&a.file)
        .with_context(|| format!("cannot open {}", a.file.display()))?;
    let mut r = RecordReader::new(std::io::BufReader::with_capacity(1 << 20, f))
        .with_context(|| format!("{}", a.file.display()))?;
    let out: Box<dyn Write> = match &a.output {
        Some(p) => Box::new(
            std::fs::File::create(p).with_context(|| format!("cannot create {}", p.display()))?,
        ),
        None => Box::new(std::io::stdout().lock()),
    };
    let mut out = BufWriter::with_capacity(1 << 20, out);
    if a.header {
        writeln!(out, "{}", r.header().metadata)?;
        out.flush()?;
        return Ok(());
    }
    // Stream: records are converted as they are read, never all held.
    let mut err = None;
    let mut read = 0u64;
    let records = std::iter::from_fn(|| match r.next_record() {
        Ok(x) => {
            read += u64::from(x.is_some());
            x
        }
        Err(e) => {
            err = Some(e);
            None
        }
    });
    match a.format {
        ExportFormat::Csv => wirelab_analysis::export_csv(records, &mut out)?,
        ExportFormat::Jsonl => wirelab_analysis::export_jsonl(records, &mut out)?,
    };
    out.flush()?;
    if let Some(e) = err {
        return Err(e).with_context(|| format!("reading {}", a.file.display()));
    }
    if r.trailing_bytes > 0 {
        eprintln!(
            "wirelab: {}: read {read} whole record(s); ignored a partial record of {} bytes \
             at the end (file cut short?)",
            a.file.display(),
            r.trailing_bytes
        );
    }
    Ok(())
}

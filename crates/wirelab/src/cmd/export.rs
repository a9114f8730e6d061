//! `wirelab export`.

use crate::cli::{ExportArgs, ExportFormat};
use anyhow::Result;
use wirelab_engine::job::records;

pub fn run(a: ExportArgs) -> Result<()> {
    let format = match (a.header, a.format) {
        (true, _) => records::ExportFormat::Header,
        (false, ExportFormat::Csv) => records::ExportFormat::Csv,
        (false, ExportFormat::Jsonl) => records::ExportFormat::Jsonl,
    };
    let skipped = records::export(&a.file, format, a.output.as_deref())?;
    if skipped.unknown_kind > 0 {
        eprintln!(
            "wirelab: {}: skipped {} records of an unknown kind (written by a newer wirelab, or damaged)",
            a.file.display(),
            skipped.unknown_kind
        );
    }
    let partial = skipped.partial_bytes;
    if partial > 0 {
        eprintln!(
            "wirelab: {}: read {} whole record(s); ignored a partial record of {partial} bytes \
             at the end (file cut short?)",
            a.file.display(),
            skipped.records
        );
    }
    Ok(())
}

//! `wirelab report`: one self-contained HTML page (inline SVG and CSS, a
//! small inline script for sorting tables, nothing fetched) from a run's
//! probe records or a campaign's results directory.
//!
//! * [`source`] — where per-packet records come from ([`ProbeSource`]:
//!   record files and pcap/pcapng captures).
//! * [`probes`] — the probe report's data in two streaming passes.
//! * [`bucket`] — envelopes and histograms whose size the caller sets.
//! * [`plot`] — the figures, drawn with plotters' SVG backend.
//! * [`html`] — the page around them.
//! * [`campaign`] — the page of a `wirelab run` results directory.
//! * [`compare`] — the page of results directories side by side
//!   (`--compare`).
//! * [`json_page`] — the page of `--json` reports (tables).
//! * [`replay`] — the page of a replay departure log (`replay --log`).
//! * [`emulate`] — the page of an emulator per-copy log (`emulate --log`).
//! * [`inputs`] — given paths, which page they make, and the page.
#![forbid(unsafe_code)]

pub mod bucket;
pub mod campaign;
pub mod compare;
pub mod emulate;
pub mod error;
pub mod html;
pub mod inputs;
pub mod json_page;
pub mod plot;
pub mod probes;
pub mod replay;
pub mod source;

pub use error::ReportError;
pub use probes::{collect, ProbeData, ProbeOptions};
pub use source::{CaptureFile, MemorySource, ProbeSource, RecordFile, Side, SourceInfo};
pub mod probe_page;

/// A probe report page from `sources` (see [`probes`] and [`probe_page`]).
pub fn probe_report(
    sources: &[&dyn ProbeSource],
    opts: &ProbeOptions,
    title: &str,
) -> Result<String, ReportError> {
    let data = collect(sources, opts)?;
    probe_page::render(&data, title)
}

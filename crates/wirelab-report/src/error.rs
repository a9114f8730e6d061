//! The report's errors: each names the input and what to do.

use std::path::PathBuf;
use thiserror::Error;

#[derive(Debug, Error)]
pub enum ReportError {
    #[error("cannot open {path}: {cause}", path = path.display())]
    Open {
        path: PathBuf,
        cause: std::io::Error,
    },
    #[error("{path}: {message}", path = path.display())]
    Input { path: PathBuf, message: String },
    #[error(
        "the records hold more than {limit} flows: raise --max-flows to report on them (each \
         flow's statistics are kept until the end)"
    )]
    TooManyFlows { limit: usize },
    #[error(
        "no probe records nor RTP streams in the inputs: give record files (send/recv \
         --record) or a capture of probes or RTP"
    )]
    NoRecords,
    #[error("drawing a plot: {0}")]
    Plot(String),
    #[error(transparent)]
    Analysis(#[from] wirelab_analysis::AnalysisError),
}

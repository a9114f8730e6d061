//! Typed errors of the analysis crate.

use thiserror::Error;

/// Everything that can go wrong in analysis, rendering or export.
#[derive(Debug, Error)]
pub enum AnalysisError {
    /// The records name more flows than the configured limit (checked
    /// before anything per flow is allocated): a hostile file must not make
    /// us keep a report per distinct flow id without limit.
    #[error("the records hold {found} flows, more than the limit of {limit}")]
    TooManyFlows { limit: usize, found: u64 },
    /// A configuration value is out of range.
    #[error("invalid analysis configuration: {0}")]
    InvalidConfig(&'static str),
    /// Writing text, CSV or JSON lines failed.
    #[error("I/O error writing analysis output: {0}")]
    Io(std::io::Error),
    /// Serialising JSON failed.
    #[error("JSON serialisation failed: {0}")]
    Json(serde_json::Error),
}

// Not `#[from]`: that would also make them the source, and the messages already print them.
impl From<serde_json::Error> for AnalysisError {
    fn from(e: serde_json::Error) -> Self {
        Self::Json(e)
    }
}

impl From<std::io::Error> for AnalysisError {
    fn from(e: std::io::Error) -> Self {
        Self::Io(e)
    }
}

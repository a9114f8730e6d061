//! The `wirelab trace` tools as jobs: each takes a typed configuration,
//! reads and writes its files, and returns a typed report (its text for
//! stderr beside it) or a [`TraceJobError`]. The decisions themselves
//! (formats, conversions, statistics, the join) are `wirelab_trace`'s.
//!
//! Inputs and outputs are paths, `-` for stdin/stdout ([`files`]); an
//! output file a job does not finish is removed ([`Output`]).

pub mod convert;
pub mod dump;
pub mod error;
pub mod files;
pub mod gen;
pub mod maketable;
pub mod records;
pub mod stats;

pub use convert::{Convert, ConvertReport};
pub use dump::{Dump, Encode};
pub use error::TraceJobError;
pub use files::{FormatOpt, InputSpec, Output};
pub use gen::{Gen, GenReport};
pub use maketable::{Maketable, MaketableReport};
pub use records::{FromRecords, FromRecordsReport};
pub use stats::{Stats, StatsReport};

//! wirelab's Parquet export: the tables of `wirelab_analysis::columns`
//! (records, joined packets) and a campaign's summary rows as Arrow record
//! batches, written by the Parquet `ArrowWriter` (snappy).
//!
//! Batches are built column-wise: one `Vec` per column, filled row by row
//! without allocation and handed to Arrow as is every [`BATCH_ROWS`] rows,
//! so memory is a batch plus the writer's open row group, whatever the
//! input's length. Columns of constant value per part (a campaign point's
//! parameters, the flow's name) follow the table's own columns
//! ([`Constant`]).
//!
//! Parquet types: `U8`/`U32` columns are unsigned 8/32-bit integers, `U64`
//! and `I64` signed 64-bit integers (a `U64` value above 2^63−1, which
//! wirelab never writes, is refused with [`ExportError::TooLarge`]), `Bool`
//! booleans, `Str` UTF-8 strings.
//!
//! * [`files`] — one record file, or a sender/receiver pair joined.
//! * [`campaign`] — a campaign's results directory as a dataset.
//! * [`points`] — JSON rows as typed columns.
//! * [`output`] — where an export goes (a file, stdout) and what it refuses.
#![forbid(unsafe_code)]

mod batch;
pub mod campaign;
pub mod files;
pub mod output;
pub mod points;

pub use arrow_schema;
pub use batch::{PacketSink, RecordSink};
pub use points::json_rows_to_parquet;

use arrow_schema::{DataType, Field, Schema};
use std::io::Write;
use std::sync::Arc;
use thiserror::Error;
use wirelab_analysis::columns::{ColType, Column};

/// Rows per Arrow record batch.
pub const BATCH_ROWS: usize = 64 * 1024;
/// Rows per Parquet row group.
pub const ROW_GROUP_ROWS: usize = 1024 * 1024;

#[derive(Debug, Error)]
pub enum ExportError {
    #[error("Parquet writer: {0}")]
    Parquet(parquet::errors::ParquetError),
    #[error("Arrow batch: {0}")]
    Arrow(arrow_schema::ArrowError),
    #[error(
        "column {column}: value {value} does not fit Parquet's signed 64-bit integer \
         (not a value wirelab writes: is the record file damaged?)"
    )]
    TooLarge { column: &'static str, value: u64 },
    #[error("constant column {0}: the part's values do not match the columns declared")]
    Constants(String),
}

// Not `#[from]`: that would also make them the source, and the messages already print them.
impl From<arrow_schema::ArrowError> for ExportError {
    fn from(e: arrow_schema::ArrowError) -> Self {
        Self::Arrow(e)
    }
}

impl From<parquet::errors::ParquetError> for ExportError {
    fn from(e: parquet::errors::ParquetError) -> Self {
        Self::Parquet(e)
    }
}

/// A column with one value for a whole part (a campaign point's
/// parameter, the flow's name).
#[derive(Debug, Clone, PartialEq)]
pub enum Constant {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(String),
}

impl Constant {
    /// The Arrow type of a column holding this value (`Null`: UTF-8).
    pub fn data_type(&self) -> DataType {
        match self {
            Constant::Bool(_) => DataType::Boolean,
            Constant::Int(_) => DataType::Int64,
            Constant::Float(_) => DataType::Float64,
            Constant::Str(_) | Constant::Null => DataType::Utf8,
        }
    }
}

/// The Arrow type of a table column.
pub fn data_type(t: ColType) -> DataType {
    match t {
        ColType::U8 => DataType::UInt8,
        ColType::U32 => DataType::UInt32,
        ColType::U64 | ColType::I64 => DataType::Int64,
        ColType::Bool => DataType::Boolean,
        ColType::Str => DataType::Utf8,
    }
}

/// The Arrow schema of a table followed by constant columns.
pub fn schema(cols: &[Column], constants: &[Field]) -> Arc<Schema> {
    let mut fields: Vec<Field> = cols
        .iter()
        .map(|c| Field::new(c.name, data_type(c.ty), c.nullable))
        .collect();
    fields.extend(constants.iter().cloned());
    Arc::new(Schema::new(fields))
}

/// Writer settings: snappy; dictionary encoding only for columns with
/// few distinct values (ids, sizes, flags, names), not for times.
fn properties(cols: &[Column], constants: &[Field]) -> parquet::file::properties::WriterProperties {
    use parquet::basic::Compression;
    use parquet::file::properties::WriterProperties;
    use parquet::schema::types::ColumnPath;
    let mut b = WriterProperties::builder()
        .set_compression(Compression::SNAPPY)
        .set_max_row_group_size(ROW_GROUP_ROWS)
        .set_created_by(format!("wirelab {}", env!("CARGO_PKG_VERSION")))
        .set_dictionary_enabled(false);
    let few = cols
        .iter()
        .filter(|c| {
            matches!(
                c.ty,
                ColType::U8 | ColType::U32 | ColType::Str | ColType::Bool
            )
        })
        .map(|c| c.name.to_string())
        .chain(constants.iter().map(|f| f.name().clone()));
    for name in few {
        b = b.set_column_dictionary_enabled(ColumnPath::from(name), true);
    }
    b.build()
}

/// A writer of the table and its schema.
fn writer<W: Write + Send>(
    out: W,
    cols: &[Column],
    constants: &[Field],
) -> Result<(parquet::arrow::ArrowWriter<W>, Arc<Schema>), ExportError> {
    let schema = schema(cols, constants);
    let w = parquet::arrow::ArrowWriter::try_new(
        out,
        schema.clone(),
        Some(properties(cols, constants)),
    )?;
    Ok((w, schema))
}

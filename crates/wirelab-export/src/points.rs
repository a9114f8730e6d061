//! Tables of JSON values (a campaign's summary rows, its points'
//! parameters) as typed Arrow columns: a column's type is inferred from
//! all its values — integers, numbers, booleans, or else text — so a
//! swept rate stays a number and `"1%"` a string.

use crate::{Constant, ExportError};
use arrow_array::{ArrayRef, BooleanArray, Float64Array, Int64Array, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema};
use serde_json::Value;
use std::io::Write;
use std::sync::Arc;

/// The Arrow type that holds every one of `values` (nulls fit any type;
/// only nulls: UTF-8).
pub fn column_type<'a>(values: impl IntoIterator<Item = &'a Value>) -> DataType {
    let (mut int, mut float, mut boolean, mut other) = (false, false, false, false);
    for v in values {
        match v {
            Value::Null => {}
            Value::Bool(_) => boolean = true,
            Value::Number(n) if n.as_i64().is_some() => int = true,
            Value::Number(_) => float = true,
            _ => other = true,
        }
    }
    let number = int || float;
    if other || (boolean && number) || !(boolean || number) {
        DataType::Utf8
    } else if boolean {
        DataType::Boolean
    } else if float {
        DataType::Float64
    } else {
        DataType::Int64
    }
}

/// `v` as a value of a column of type `dt` (from [`column_type`]).
pub fn constant(v: &Value, dt: &DataType) -> Constant {
    match (v, dt) {
        (Value::Null, _) => Constant::Null,
        (Value::Bool(b), DataType::Boolean) => Constant::Bool(*b),
        (Value::Number(n), DataType::Int64) => n.as_i64().map_or(Constant::Null, Constant::Int),
        (Value::Number(n), DataType::Float64) => n.as_f64().map_or(Constant::Null, Constant::Float),
        (Value::String(s), _) => Constant::Str(s.clone()),
        (other, _) => Constant::Str(other.to_string()),
    }
}

/// Writes `rows` (each a value per column of `names`, missing values
/// null) as one Parquet table; returns the rows written.
pub fn json_rows_to_parquet<W: Write + Send>(
    out: W,
    names: &[String],
    rows: &[Vec<Value>],
) -> Result<u64, ExportError> {
    let null = Value::Null;
    let at = |r: &'_ Vec<Value>, i: usize| r.get(i).unwrap_or(&null).clone();
    let mut fields = Vec::with_capacity(names.len());
    let mut cols: Vec<ArrayRef> = Vec::with_capacity(names.len());
    for (i, name) in names.iter().enumerate() {
        let values: Vec<Value> = rows.iter().map(|r| at(r, i)).collect();
        let dt = column_type(&values);
        let consts = values.iter().map(|v| constant(v, &dt));
        let col: ArrayRef = match dt {
            DataType::Int64 => Arc::new(Int64Array::from_iter(consts.map(|c| match c {
                Constant::Int(x) => Some(x),
                _ => None,
            }))),
            DataType::Float64 => Arc::new(Float64Array::from_iter(consts.map(|c| match c {
                Constant::Float(x) => Some(x),
                _ => None,
            }))),
            DataType::Boolean => Arc::new(BooleanArray::from_iter(consts.map(|c| match c {
                Constant::Bool(x) => Some(x),
                _ => None,
            }))),
            _ => Arc::new(StringArray::from_iter(consts.map(|c| match c {
                Constant::Str(x) => Some(x),
                _ => None,
            }))),
        };
        fields.push(Field::new(name, dt, true));
        cols.push(col);
    }
    let schema = Arc::new(Schema::new(fields));
    let props = parquet::file::properties::WriterProperties::builder()
        .set_compression(parquet::basic::Compression::SNAPPY)
        .set_created_by(format!("wirelab {}", env!("CARGO_PKG_VERSION")))
        .build();
    let mut w = parquet::arrow::ArrowWriter::try_new(out, schema.clone(), Some(props))?;
    if !rows.is_empty() {
        w.write(&RecordBatch::try_new(schema, cols)?)?;
    }
    w.into_inner()?;
    Ok(rows.len() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn column_types_hold_every_value() {
        let t = |v: Value| column_type(v.as_array().unwrap());
        assert_eq!(t(json!([1, null, -3])), DataType::Int64);
        assert_eq!(t(json!([1, 2.5])), DataType::Float64);
        assert_eq!(t(json!([true, null])), DataType::Boolean);
        assert_eq!(t(json!(["1%", 2])), DataType::Utf8);
        assert_eq!(t(json!([true, 2])), DataType::Utf8);
        assert_eq!(t(json!([null])), DataType::Utf8);
        assert_eq!(t(json!([u64::MAX])), DataType::Float64);
        assert_eq!(
            constant(&json!(2), &DataType::Float64),
            Constant::Float(2.0)
        );
        assert_eq!(
            constant(&json!(2), &DataType::Utf8),
            Constant::Str("2".into())
        );
    }

    #[test]
    fn rows_round_trip() {
        use bytes::Bytes;
        use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
        let names = vec![
            "point".to_string(),
            "loss".into(),
            "sent".into(),
            "rtt".into(),
        ];
        let rows = vec![
            vec![json!("a1"), json!("1%"), json!(200), json!(null)],
            vec![json!("b2"), json!("0%"), json!(199)],
        ];
        let mut buf = Vec::new();
        assert_eq!(json_rows_to_parquet(&mut buf, &names, &rows).unwrap(), 2);
        let b = ParquetRecordBatchReaderBuilder::try_new(Bytes::from(buf))
            .unwrap()
            .build()
            .unwrap()
            .next()
            .unwrap()
            .unwrap();
        assert_eq!(b.num_rows(), 2);
        let sent = b.column(2).as_any().downcast_ref::<Int64Array>().unwrap();
        assert_eq!(sent.values(), &[200, 199]);
        assert!(b.column(3).is_null(0) && b.column(3).is_null(1));
        assert_eq!(b.schema().field(1).data_type(), &DataType::Utf8);
    }
}

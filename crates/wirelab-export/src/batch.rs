//! Column-wise batch builders for the record and packet tables.

use crate::{writer, Constant, ExportError, BATCH_ROWS};
use arrow_array::builder::StringBuilder;
use arrow_array::{
    new_null_array, ArrayRef, BooleanArray, Float64Array, Int64Array, RecordBatch, StringArray,
    UInt32Array, UInt8Array,
};
use arrow_schema::{Field, Schema};
use parquet::arrow::ArrowWriter;
use std::io::Write;
use std::sync::Arc;
use wirelab_analysis::columns::{Column, PACKET_COLUMNS, RECORD_COLUMNS};
use wirelab_analysis::export::kind_name;
use wirelab_analysis::PacketRow;
use wirelab_wire::Record;

fn signed(column: &'static str, value: u64) -> Result<i64, ExportError> {
    i64::try_from(value).map_err(|_| ExportError::TooLarge { column, value })
}

/// The constant columns of a part: their fields and current values.
struct Constants {
    fields: Vec<Field>,
    values: Vec<Constant>,
}

impl Constants {
    fn new(fields: &[Field]) -> Constants {
        Constants {
            fields: fields.to_vec(),
            values: vec![Constant::Null; fields.len()],
        }
    }

    fn set(&mut self, values: Vec<Constant>) -> Result<(), ExportError> {
        if values.len() != self.fields.len() {
            return Err(ExportError::Constants(format!(
                "{} values for {} columns",
                values.len(),
                self.fields.len()
            )));
        }
        for (f, v) in self.fields.iter().zip(&values) {
            if *v != Constant::Null && v.data_type() != *f.data_type() {
                return Err(ExportError::Constants(f.name().clone()));
            }
        }
        self.values = values;
        Ok(())
    }

    fn arrays(&self, n: usize) -> Vec<ArrayRef> {
        self.fields
            .iter()
            .zip(&self.values)
            .map(|(f, v)| -> ArrayRef {
                match v {
                    Constant::Null => new_null_array(f.data_type(), n),
                    Constant::Bool(b) => Arc::new(BooleanArray::from(vec![*b; n])),
                    Constant::Int(i) => Arc::new(Int64Array::from(vec![*i; n])),
                    Constant::Float(x) => Arc::new(Float64Array::from(vec![*x; n])),
                    Constant::Str(s) => {
                        Arc::new(StringArray::from_iter_values(std::iter::repeat_n(s, n)))
                    }
                }
            })
            .collect()
    }
}

/// The Parquet side of a sink: the writer and its schema, the part's
/// constant columns and the rows written.
struct Table<W: Write + Send> {
    w: ArrowWriter<W>,
    schema: Arc<Schema>,
    constants: Constants,
    rows: u64,
}

impl<W: Write + Send> Table<W> {
    fn new(out: W, cols: &[Column], constants: &[Field]) -> Result<Self, ExportError> {
        let (w, schema) = writer(out, cols, constants)?;
        Ok(Table {
            w,
            schema,
            constants: Constants::new(constants),
            rows: 0,
        })
    }

    /// Writes one batch: `cols` of `n` rows each, then the constant columns.
    fn write(&mut self, mut cols: Vec<ArrayRef>, n: usize) -> Result<(), ExportError> {
        cols.extend(self.constants.arrays(n));
        self.w
            .write(&RecordBatch::try_new(self.schema.clone(), cols)?)?;
        self.rows += n as u64;
        Ok(())
    }

    /// Writes the footer; returns the rows written and the output.
    fn finish(self) -> Result<(u64, W), ExportError> {
        Ok((self.rows, self.w.into_inner()?))
    }
}

fn cap<T>() -> Vec<T> {
    Vec::with_capacity(BATCH_ROWS)
}

fn take<T>(v: &mut Vec<T>) -> Vec<T> {
    std::mem::replace(v, cap())
}

/// Writes record-file records ([`RECORD_COLUMNS`]) to Parquet.
pub struct RecordSink<W: Write + Send> {
    table: Table<W>,
    flow: Vec<u32>,
    kind: StringBuilder,
    seq: Vec<i64>,
    size: Vec<u32>,
    sched: Vec<i64>,
    tx: Vec<i64>,
    rx: Vec<i64>,
    refl_rx: Vec<i64>,
    refl_tx: Vec<i64>,
    probe_flags: Vec<u8>,
    rec_flags: Vec<u8>,
    tos: Vec<u8>,
}

impl<W: Write + Send> RecordSink<W> {
    /// A sink whose rows end in `constants` (nullable; values set by
    /// [`RecordSink::set_constants`], null until then).
    pub fn new(out: W, constants: &[Field]) -> Result<Self, ExportError> {
        Ok(RecordSink {
            table: Table::new(out, &RECORD_COLUMNS, constants)?,
            flow: cap(),
            kind: StringBuilder::with_capacity(BATCH_ROWS, BATCH_ROWS * 2),
            seq: cap(),
            size: cap(),
            sched: cap(),
            tx: cap(),
            rx: cap(),
            refl_rx: cap(),
            refl_tx: cap(),
            probe_flags: cap(),
            rec_flags: cap(),
            tos: cap(),
        })
    }

    pub fn set_constants(&mut self, values: Vec<Constant>) -> Result<(), ExportError> {
        self.flush()?;
        self.table.constants.set(values)
    }

    pub fn push(&mut self, r: &Record) -> Result<(), ExportError> {
        self.flow.push(r.flow);
        self.kind.append_value(kind_name(r.kind));
        self.seq.push(signed("seq", r.seq)?);
        self.size.push(r.size);
        self.sched.push(signed("sched_ns", r.sched_ns)?);
        self.tx.push(signed("tx_ns", r.tx_ns)?);
        self.rx.push(signed("rx_ns", r.rx_ns)?);
        self.refl_rx.push(signed("refl_rx_ns", r.refl_rx_ns)?);
        self.refl_tx.push(signed("refl_tx_ns", r.refl_tx_ns)?);
        self.probe_flags.push(r.probe_flags);
        self.rec_flags.push(r.rec_flags);
        self.tos.push(r.tos);
        if self.flow.len() >= BATCH_ROWS {
            self.flush()?;
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<(), ExportError> {
        let n = self.flow.len();
        if n == 0 {
            return Ok(());
        }
        let cols: Vec<ArrayRef> = vec![
            Arc::new(UInt32Array::from(take(&mut self.flow))),
            Arc::new(self.kind.finish()),
            Arc::new(Int64Array::from(take(&mut self.seq))),
            Arc::new(UInt32Array::from(take(&mut self.size))),
            Arc::new(Int64Array::from(take(&mut self.sched))),
            Arc::new(Int64Array::from(take(&mut self.tx))),
            Arc::new(Int64Array::from(take(&mut self.rx))),
            Arc::new(Int64Array::from(take(&mut self.refl_rx))),
            Arc::new(Int64Array::from(take(&mut self.refl_tx))),
            Arc::new(UInt8Array::from(take(&mut self.probe_flags))),
            Arc::new(UInt8Array::from(take(&mut self.rec_flags))),
            Arc::new(UInt8Array::from(take(&mut self.tos))),
        ];
        self.table.write(cols, n)
    }

    /// Writes what is left and the footer; returns the rows written and
    /// the output.
    pub fn finish(mut self) -> Result<(u64, W), ExportError> {
        self.flush()?;
        self.table.finish()
    }
}

/// Writes joined packets ([`PACKET_COLUMNS`]) to Parquet.
pub struct PacketSink<W: Write + Send> {
    table: Table<W>,
    flow: Vec<u32>,
    seq: Vec<i64>,
    size: Vec<u32>,
    sched: Vec<i64>,
    tx: Vec<i64>,
    rx: Vec<Option<i64>>,
    owd: Vec<Option<i64>>,
    lost: Vec<bool>,
    duplicates: Vec<u32>,
    reordered: Vec<bool>,
    warmup: Vec<bool>,
    tos: Vec<u8>,
    rx_flags: Vec<Option<u8>>,
}

impl<W: Write + Send> PacketSink<W> {
    /// A sink whose rows end in `constants` (see [`RecordSink::new`]).
    pub fn new(out: W, constants: &[Field]) -> Result<Self, ExportError> {
        Ok(PacketSink {
            table: Table::new(out, &PACKET_COLUMNS, constants)?,
            flow: cap(),
            seq: cap(),
            size: cap(),
            sched: cap(),
            tx: cap(),
            rx: cap(),
            owd: cap(),
            lost: cap(),
            duplicates: cap(),
            reordered: cap(),
            warmup: cap(),
            tos: cap(),
            rx_flags: cap(),
        })
    }

    pub fn set_constants(&mut self, values: Vec<Constant>) -> Result<(), ExportError> {
        self.flush()?;
        self.table.constants.set(values)
    }

    pub fn push(&mut self, r: &PacketRow) -> Result<(), ExportError> {
        self.flow.push(r.flow);
        self.seq.push(signed("seq", r.seq)?);
        self.size.push(r.size);
        self.sched.push(signed("sched_ns", r.sched_ns)?);
        self.tx.push(signed("tx_ns", r.tx_ns)?);
        self.rx.push(match r.rx_ns {
            Some(v) => Some(signed("rx_ns", v)?),
            None => None,
        });
        self.owd.push(r.owd_ns);
        self.lost.push(r.lost());
        self.duplicates.push(r.duplicates);
        self.reordered.push(r.reordered);
        self.warmup.push(r.warmup);
        self.tos.push(r.tos);
        self.rx_flags.push(r.rx_flags);
        if self.flow.len() >= BATCH_ROWS {
            self.flush()?;
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<(), ExportError> {
        let n = self.flow.len();
        if n == 0 {
            return Ok(());
        }
        let cols: Vec<ArrayRef> = vec![
            Arc::new(UInt32Array::from(take(&mut self.flow))),
            Arc::new(Int64Array::from(take(&mut self.seq))),
            Arc::new(UInt32Array::from(take(&mut self.size))),
            Arc::new(Int64Array::from(take(&mut self.sched))),
            Arc::new(Int64Array::from(take(&mut self.tx))),
            Arc::new(Int64Array::from(take(&mut self.rx))),
            Arc::new(Int64Array::from(take(&mut self.owd))),
            Arc::new(BooleanArray::from(take(&mut self.lost))),
            Arc::new(UInt32Array::from(take(&mut self.duplicates))),
            Arc::new(BooleanArray::from(take(&mut self.reordered))),
            Arc::new(BooleanArray::from(take(&mut self.warmup))),
            Arc::new(UInt8Array::from(take(&mut self.tos))),
            Arc::new(UInt8Array::from(take(&mut self.rx_flags))),
        ];
        self.table.write(cols, n)
    }

    /// Writes what is left and the footer; returns the rows written and
    /// the output.
    pub fn finish(mut self) -> Result<(u64, W), ExportError> {
        self.flush()?;
        self.table.finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::Array;
    use arrow_schema::DataType;
    use bytes::Bytes;
    use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
    use wirelab_wire::RecordKind;

    fn read(buf: Vec<u8>) -> Vec<RecordBatch> {
        ParquetRecordBatchReaderBuilder::try_new(Bytes::from(buf))
            .unwrap()
            .build()
            .unwrap()
            .map(|b| b.unwrap())
            .collect()
    }

    #[test]
    fn records_round_trip_across_batches_with_constants() {
        let fields = [
            Field::new("loss", DataType::Utf8, true),
            Field::new("rate", DataType::Int64, true),
        ];
        let mut s = RecordSink::new(Vec::new(), &fields).unwrap();
        let n = BATCH_ROWS as u64 + 10;
        s.set_constants(vec![Constant::Str("1%".into()), Constant::Int(7)])
            .unwrap();
        for seq in 0..n {
            s.push(&Record {
                flow: 3,
                seq,
                tx_ns: 1_700_000_000_000_000_000 + seq,
                kind: if seq % 2 == 0 {
                    RecordKind::Tx
                } else {
                    RecordKind::Rx
                },
                tos: 0xb8,
                ..Record::default()
            })
            .unwrap();
        }
        let (rows, buf) = s.finish().unwrap();
        assert_eq!(rows, n);
        let batches = read(buf);
        let total: usize = batches.iter().map(|b| b.num_rows()).sum();
        assert_eq!(total as u64, n);
        let b = &batches[0];
        let schema = b.schema();
        let names: Vec<&str> = schema.fields().iter().map(|f| f.name().as_str()).collect();
        let mut want: Vec<&str> = RECORD_COLUMNS.iter().map(|c| c.name).collect();
        want.extend(["loss", "rate"]);
        assert_eq!(names, want);
        let seq = b.column(2).as_any().downcast_ref::<Int64Array>().unwrap();
        assert_eq!(seq.value(5), 5);
        let kind = b.column(1).as_any().downcast_ref::<StringArray>().unwrap();
        assert_eq!((kind.value(0), kind.value(1)), ("tx", "rx"));
        let loss = b.column(12).as_any().downcast_ref::<StringArray>().unwrap();
        assert_eq!(loss.value(3), "1%");
    }

    #[test]
    fn packets_keep_nulls_and_refuse_what_does_not_fit() {
        let mut s = PacketSink::new(Vec::new(), &[]).unwrap();
        let got = PacketRow {
            flow: 1,
            seq: 0,
            rx_ns: Some(10),
            owd_ns: Some(-3),
            rx_flags: Some(1),
            ..PacketRow::default()
        };
        let lost = PacketRow {
            seq: 1,
            ..PacketRow::default()
        };
        s.push(&got).unwrap();
        s.push(&lost).unwrap();
        let (_, buf) = s.finish().unwrap();
        let b = &read(buf)[0];
        let owd = b.column(6).as_any().downcast_ref::<Int64Array>().unwrap();
        assert_eq!((owd.value(0), owd.is_null(1)), (-3, true));
        let lost_col = b.column(7).as_any().downcast_ref::<BooleanArray>().unwrap();
        assert_eq!((lost_col.value(0), lost_col.value(1)), (false, true));
        assert!(b.schema().field(5).is_nullable());
        assert!(!b.schema().field(4).is_nullable());

        let mut s = PacketSink::new(Vec::new(), &[]).unwrap();
        let huge = PacketRow {
            tx_ns: u64::MAX,
            ..PacketRow::default()
        };
        assert!(matches!(
            s.push(&huge),
            Err(ExportError::TooLarge {
                column: "tx_ns",
                ..
            })
        ));
    }

    #[test]
    fn constants_must_match_their_columns() {
        let fields = [Field::new("rate", DataType::Int64, true)];
        let mut s = PacketSink::new(Vec::new(), &fields).unwrap();
        assert!(s.set_constants(vec![Constant::Str("x".into())]).is_err());
        assert!(s.set_constants(vec![]).is_err());
        s.set_constants(vec![Constant::Null]).unwrap();
        s.push(&PacketRow::default()).unwrap();
        let (_, buf) = s.finish().unwrap();
        assert!(read(buf)[0].column(13).is_null(0));
    }
}

//! `trace from-records`: a sender + receiver record pair as a packet trace
//! that replays the measured path (the join is
//! [`wirelab_trace::measured`]).

use super::files::{finish, packet_output_format, writer, FormatOpt, Output};
use super::TraceJobError;
use std::fs::File;
use std::io::BufReader;
use std::path::Path;
use wirelab_trace::measured::{JoinFail, MeasuredSummary, OwdBase, RxIndex};
use wirelab_trace::{ByteOrder, Format, Record, TraceOptions};
use wirelab_wire::record::{RecordReader, Role};

pub struct FromRecords {
    pub sender: String,
    pub receiver: String,
    /// Only this flow.
    pub flow: Option<u32>,
    pub base: OwdBase,
    /// The output (`-`: stdout) and its format.
    pub output: String,
    pub format: FormatOpt,
    pub order: ByteOrder,
}

#[derive(Debug)]
pub struct FromRecordsReport {
    pub output: String,
    pub format: Format,
    pub base: OwdBase,
    pub summary: MeasuredSummary,
}

impl FromRecordsReport {
    /// The lines for stderr: what was written, then what was left out.
    pub fn text(&self) -> String {
        let s = &self.summary;
        let base = match self.base {
            OwdBase::Relative => format!(
                "delays relative to the smallest one-way delay, {:.3}us",
                s.subtracted_ns as f64 / 1000.0
            ),
            OwdBase::Absolute => "delays as measured".into(),
        };
        let mut t = format!(
            "from-records: {} probes sent, {} lost, {} duplicate copies -> {} records in {} \
             ({}); {base}\n",
            s.sent, s.lost, s.duplicates, s.records, self.output, self.format
        );
        if s.repeats > 0 {
            t.push_str(&format!(
                "from-records: {} packets re-sent under a recorded sequence number (end-marker \
                 repeats) left out\n",
                s.repeats
            ));
        }
        if s.unexpected > 0 {
            t.push_str(&format!(
                "wirelab: warning: {} received probes are not in the sender's records (left \
                 out)\n",
                s.unexpected
            ));
        }
        if s.receiver_no_time > 0 {
            t.push_str(&format!(
                "wirelab: warning: {} receiver records have no send or receive time (left out)\n",
                s.receiver_no_time
            ));
        }
        t
    }
}

fn open(path: &str) -> Result<RecordReader<BufReader<File>>, TraceJobError> {
    let f = File::open(Path::new(path)).map_err(|source| TraceJobError::Open {
        path: path.into(),
        source,
    })?;
    RecordReader::new(BufReader::with_capacity(1 << 20, f)).map_err(|error| {
        TraceJobError::Records {
            path: path.into(),
            error,
        }
    })
}

impl FromRecords {
    pub fn run(self) -> Result<FromRecordsReport, TraceJobError> {
        let format = packet_output_format(&self.output, &self.format)?;
        let mut sender = open(&self.sender)?;
        let mut receiver = open(&self.receiver)?;
        if sender.header().role != Role::Sender {
            return Err(TraceJobError::SenderFirst {
                path: self.sender,
                role: sender.header().role.as_str(),
            });
        }
        if receiver.header().role == Role::Sender {
            return Err(TraceJobError::ReceiverSecond {
                path: self.receiver,
            });
        }
        let read_err = |path: &str| {
            let path = path.to_string();
            move |error| TraceJobError::Records { path, error }
        };
        let mut idx = RxIndex::new(self.flow);
        while let Some(r) = receiver.next_record().map_err(read_err(&self.receiver))? {
            idx.push(&r);
        }
        let mut join = idx.finish(self.base);
        let (guard, out) = Output::create(&self.output, false)?;
        let opts = TraceOptions {
            order: self.order,
            ..TraceOptions::default()
        };
        let mut w = writer(format, &opts, out, &self.output)?;
        let mut n = 0u64;
        while let Some(r) = sender.next_record().map_err(read_err(&self.sender))? {
            join.packet(&r, |rec: Record| {
                n += 1;
                w.write(&rec)
            })
            .map_err(|e| match e {
                JoinFail::Measured(error) => TraceJobError::Negative {
                    path: self.receiver.clone(),
                    error,
                },
                JoinFail::Out(e) => TraceJobError::write(&self.output, n, e),
            })?;
        }
        finish(w, &self.output)?;
        let summary = join.summary();
        if summary.sent == 0 {
            return Err(TraceJobError::NoProbes {
                path: self.sender,
                flow: self.flow,
            });
        }
        guard.keep();
        Ok(FromRecordsReport {
            output: self.output,
            format,
            base: join.base(),
            summary,
        })
    }
}

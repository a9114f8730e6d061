//! `trace stats`: statistics of a packet trace, streamed.

use super::files::InputSpec;
use super::TraceJobError;
use wirelab_trace::stats::{TraceStats, TraceStatsReport};
use wirelab_trace::Format;

pub struct Stats {
    pub input: InputSpec,
}

/// `wirelab.trace.stats/1`: the file, its format and its statistics.
#[derive(Debug)]
pub struct StatsReport {
    pub file: String,
    pub format: Format,
    pub stats: TraceStatsReport,
}

impl StatsReport {
    /// The JSON document (keys in the order serde_json's map keeps).
    pub fn json(&self) -> serde_json::Value {
        let mut j = serde_json::json!({
            "schema": "wirelab.trace.stats/1",
            "file": self.file,
            "format": self.format.name(),
        });
        if let (Some(obj), Ok(serde_json::Value::Object(fields))) =
            (j.as_object_mut(), serde_json::to_value(&self.stats))
        {
            obj.extend(fields);
        }
        j
    }

    pub fn text(&self) -> String {
        self.stats.text(&self.file, self.format)
    }
}

impl Stats {
    pub fn run(self) -> Result<StatsReport, TraceJobError> {
        let (format, reader) = self.input.open_packets("stats")?;
        let mut s = TraceStats::new();
        for rec in reader {
            s.push(&rec.map_err(|e| e.in_file(&self.input.path))?);
        }
        Ok(StatsReport {
            file: self.input.path,
            format,
            stats: s.report(),
        })
    }
}

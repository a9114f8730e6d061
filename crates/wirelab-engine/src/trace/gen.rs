//! `trace gen`: a synthetic packet trace written to a file.

use super::files::{finish, packet_output_format, writer, FormatOpt, Output};
use super::TraceJobError;
use std::fs::File;
use std::io::BufReader;
use wirelab_trace::dist::DistTable;
use wirelab_trace::gen::{GenConfig, Shape, TraceGen};
use wirelab_trace::{Action, ByteOrder, Format, TraceOptions};

pub struct Gen {
    /// A built-in shape's name or a `.dist` file.
    pub dist: String,
    pub mean_ns: u64,
    pub jitter_ns: u64,
    pub count: u64,
    pub loss: f64,
    pub hurst: Option<f64>,
    pub block: usize,
    pub seed: u64,
    /// The output (`-`: stdout) and its format.
    pub output: String,
    pub format: FormatOpt,
    pub order: ByteOrder,
}

/// What was generated.
#[derive(Debug)]
pub struct GenReport {
    pub output: String,
    pub format: Format,
    pub records: u64,
    pub drops: u64,
    pub hurst: Option<f64>,
    /// The fGn block length used (`None`: independent delays).
    pub block: Option<usize>,
    /// Negative delays written as 0.
    pub clamped: u64,
}

impl GenReport {
    /// The line for stderr.
    pub fn text(&self) -> String {
        let noise = match (self.hurst, self.block) {
            (Some(h), Some(b)) => format!("fractional Gaussian noise H={h}, blocks of {b}"),
            _ => "independent".into(),
        };
        format!(
            "gen: {} records ({} drops) to {} ({}); {noise}; {} delays below 0 written as 0\n",
            self.records, self.drops, self.output, self.format, self.clamped
        )
    }
}

impl Gen {
    fn shape(&self) -> Result<Shape, TraceJobError> {
        if let Some(s) = Shape::builtin(&self.dist) {
            return Ok(s);
        }
        let f = File::open(&self.dist).map_err(|error| TraceJobError::Dist {
            name: self.dist.clone(),
            error,
        })?;
        let table = DistTable::read(BufReader::new(f)).map_err(|e| e.in_file(&self.dist))?;
        Ok(Shape::Table(table))
    }

    pub fn run(self) -> Result<GenReport, TraceJobError> {
        let shape = self.shape()?;
        let format = packet_output_format(&self.output, &self.format)?;
        let mut g = TraceGen::new(GenConfig {
            shape,
            mean_ns: self.mean_ns,
            jitter_ns: self.jitter_ns,
            count: self.count,
            loss: self.loss,
            hurst: self.hurst,
            block: self.block,
            seed: self.seed,
        })?;
        let (guard, out) = Output::create(&self.output, false)?;
        let opts = TraceOptions {
            order: self.order,
            ..TraceOptions::default()
        };
        let mut w = writer(format, &opts, out, &self.output)?;
        let (mut records, mut drops) = (0u64, 0u64);
        for rec in g.by_ref() {
            records += 1;
            drops += u64::from(rec.action == Action::Drop);
            w.write(&rec)
                .map_err(|e| TraceJobError::write(&self.output, records, e))?;
        }
        finish(w, &self.output)?;
        guard.keep();
        Ok(GenReport {
            output: self.output,
            format,
            records,
            drops,
            hurst: self.hurst,
            block: g.block(),
            clamped: g.clamped(),
        })
    }
}

//! `trace maketable`: an iproute2 `.dist` table from a trace's delays,
//! read twice (the mean and σ first, as iproute2's maketable).

use super::files::{InputSpec, Output};
use super::TraceJobError;
use wirelab_trace::maketable::{write_table, Moments, TableBuilder};
use wirelab_trace::{Action, Record, TraceError};

pub struct Maketable {
    /// A file (read twice: not stdin).
    pub input: InputSpec,
    /// The table (`-`: stdout).
    pub output: String,
}

#[derive(Debug)]
pub struct MaketableReport {
    pub output: String,
    pub samples: u64,
    pub mean_us: f64,
    pub sigma_us: f64,
    pub entries: usize,
}

impl MaketableReport {
    /// The line for stderr.
    pub fn text(&self) -> String {
        format!(
            "maketable: {} samples, mean {:.3}us, σ {:.3}us -> {} ({} entries)\n",
            self.samples, self.mean_us, self.sigma_us, self.output, self.entries
        )
    }
}

impl Maketable {
    /// A record's sample in µs (`None` for a drop).
    fn sample(&self, r: Result<Record, TraceError>) -> Result<Option<f64>, TraceJobError> {
        Ok(match r.map_err(|e| e.in_file(&self.input.path))?.action {
            Action::Delay { delay_ns } | Action::Duplicate { delay_ns } => {
                Some(delay_ns as f64 / 1000.0)
            }
            Action::Drop => None,
        })
    }

    fn table_error(&self, error: wirelab_trace::maketable::MaketableError) -> TraceJobError {
        TraceJobError::Table {
            path: self.input.path.clone(),
            error,
        }
    }

    pub fn run(self) -> Result<MaketableReport, TraceJobError> {
        if self.input.path == "-" {
            return Err(TraceJobError::TwiceFromStdin);
        }
        let mut m = Moments::default();
        for r in self.input.open_packets("maketable")?.1 {
            if let Some(x) = self.sample(r)? {
                m.push(x);
            }
        }
        let (mu, sigma) = m.finish().map_err(|e| self.table_error(e))?;
        let mut b = TableBuilder::new(mu, sigma);
        for r in self.input.open_packets("maketable")?.1 {
            if let Some(x) = self.sample(r)? {
                b.push(x).map_err(|e| self.table_error(e))?;
            }
        }
        let table = b.finish().map_err(|e| self.table_error(e))?;
        let (guard, out) = Output::create(&self.output, false)?;
        write_table(&table, out).map_err(|source| TraceJobError::Write {
            path: self.output.clone(),
            source,
        })?;
        guard.keep();
        Ok(MaketableReport {
            output: self.output,
            samples: m.count(),
            mean_us: mu,
            sigma_us: sigma,
            entries: table.len(),
        })
    }
}

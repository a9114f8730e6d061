//! Flags of `wirelab trace`, and the trace jobs' inputs they stand for.

use crate::{usage, Usage};
use clap::{Args, Subcommand, ValueEnum};
use std::path::PathBuf;
use wirelab_engine::trace::{self as job, FormatOpt, InputSpec};
use wirelab_trace::dump::{encode_word, WordAction};
use wirelab_trace::fgn::{DEFAULT_BLOCK, MAX_BLOCK, MIN_BLOCK};
use wirelab_trace::measured::OwdBase;
use wirelab_trace::{ByteOrder, NegPolicy, TraceOptions};

#[derive(Args, Debug)]
pub struct TraceArgs {
    #[command(subcommand)]
    pub cmd: TraceCmd,
}

#[derive(Subcommand, Debug)]
pub enum TraceCmd {
    /// Convert a trace to another format (nist-bin, nist-txt, delays, pkt-csv among
    /// themselves; kbit-ms, csv rates and mahimahi to mahimahi; mahimahi to kbit-ms)
    Convert(ConvertArgs),
    /// Print one line per record (nist words bit by bit with --bits)
    Dump(DumpArgs),
    /// Print or write one NIST Net trace word
    Encode(EncodeArgs),
    /// Generate a packet trace: delays from a distribution, optionally long-range
    /// dependent (fractional Gaussian noise with --hurst), and random drops
    Gen(GenArgs),
    /// Count, mean, σ, min, max, lag-1 autocorrelation and a Hurst estimate of a packet trace
    Stats(StatsArgs),
    /// Turn a sender + receiver record pair into a trace that replays the measured path
    FromRecords(FromRecordsArgs),
    /// Make an iproute2/netem .dist table from samples (as iproute2's maketable)
    Maketable(MaketableArgs),
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum OrderArg {
    /// Little-endian (what x86 writes)
    Le,
    /// Big-endian
    Be,
}

impl OrderArg {
    pub fn order(self) -> ByteOrder {
        match self {
            OrderArg::Le => ByteOrder::Little,
            OrderArg::Be => ByteOrder::Big,
        }
    }
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum NegArg {
    /// Refuse negative delays
    Error,
    /// Read negative delays as 0
    Zero,
}

/// How to read an input trace.
#[derive(Args, Debug, Clone)]
pub struct ReadOpts {
    /// Input format (default: from the file name): nist-bin, nist-txt, delays, pkt-csv,
    /// mahimahi, csv, dist
    #[arg(long, value_name = "FMT")]
    pub fmt: Option<String>,
    /// Byte order of nist-bin words
    #[arg(long, value_enum, default_value_t = OrderArg::Le)]
    pub order: OrderArg,
    /// Negative delays: refuse them, or read them as 0
    #[arg(long, value_enum, default_value_t = NegArg::Error)]
    pub neg: NegArg,
    /// Length of a t_us/t_ms CSV trace: its last row lasts until then
    #[arg(long, value_name = "DURATION", value_parser = crate::values::NONZERO_DURATION)]
    pub period: Option<u64>,
}

impl ReadOpts {
    pub fn input(&self, path: String) -> InputSpec {
        let options = options(self.order.order(), self.neg, self.period);
        InputSpec {
            path,
            format: fmt("--fmt", self.fmt.clone()),
            options,
        }
    }
}

#[derive(Args, Debug)]
#[command(
    after_help = "Formats are told by the file names (.bin .nist.txt .delays .pkt.csv \
.up .down .csv; .kbit for kbit-ms) or by --from/--to. kbit-ms: one number per line, the kbit \
the link delivers in that ms. `-` is stdin/stdout (give --from/--to).\n\n\
Example: wirelab trace convert s1.nist.txt s1.bin"
)]
pub struct ConvertArgs {
    /// Input trace (`-`: stdin)
    pub input: String,
    /// Output trace (`-`: stdout)
    pub output: String,
    /// Input format: nist-bin, nist-txt, delays, pkt-csv, mahimahi, csv, kbit-ms
    #[arg(long, value_name = "FMT")]
    pub from: Option<String>,
    /// Output format (the same names)
    #[arg(long, value_name = "FMT")]
    pub to: Option<String>,
    /// Byte order of nist-bin input words
    #[arg(long, value_enum, default_value_t = OrderArg::Le)]
    pub order: OrderArg,
    /// Byte order of nist-bin output words (default: --order)
    #[arg(long, value_enum)]
    pub to_order: Option<OrderArg>,
    /// Negative input delays: refuse them, or read them as 0
    #[arg(long, value_enum, default_value_t = NegArg::Error)]
    pub neg: NegArg,
    /// Length of a t_us/t_ms CSV input trace: its last row lasts until then
    #[arg(long, value_name = "DURATION", value_parser = crate::values::NONZERO_DURATION)]
    pub period: Option<u64>,
}

#[derive(Args, Debug)]
#[command(after_help = "Example: wirelab trace dump s1.bin --bits")]
pub struct DumpArgs {
    /// The trace (`-`: stdin, with --fmt)
    pub file: String,
    /// Show each nist word: hex, then action bits (31-30), sign bit (29), delay bits (28-0)
    #[arg(long)]
    pub bits: bool,
    /// One JSON object per record
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub read: ReadOpts,
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum ActionArg {
    Delay,
    Drop,
    Dup,
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum WordFormat {
    /// The word as a signed integer on a line (nist-txt)
    Txt,
    /// The word's 4 bytes (nist-bin)
    Bin,
}

#[derive(Args, Debug)]
#[command(
    after_help = "Example: wirelab trace encode --action dup --delay-us 500   # prints -2147483148"
)]
pub struct EncodeArgs {
    /// What the word does to its packet
    #[arg(long, value_enum)]
    pub action: ActionArg,
    /// Delay in µs (negative sets the sign bit; none for a drop)
    #[arg(
        long,
        value_name = "N",
        default_value_t = 0,
        allow_hyphen_values = true
    )]
    pub delay_us: i64,
    /// txt: a nist-txt line; bin: 4 nist-bin bytes
    #[arg(long, value_enum, default_value_t = WordFormat::Txt)]
    pub format: WordFormat,
    /// Byte order of a bin word
    #[arg(long, value_enum, default_value_t = OrderArg::Le)]
    pub order: OrderArg,
    /// Write to this file instead of stdout
    #[arg(short = 'o', long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Append to --output instead of replacing it (build a trace word by word)
    #[arg(long, requires = "output")]
    pub append: bool,
}

#[derive(Args, Debug)]
#[command(
    after_help = "Shapes (the emulator's `delay MEAN JITTER dist NAME`): const (always MEAN), \
uniform (MEAN ± JITTER), normal (σ = JITTER), pareto, paretonormal (mean MEAN), exp (MEAN + \
JITTER × (E − 1)), or a .dist table file (netem's, scaled by JITTER). With --hurst the delays are \
fractional Gaussian noise mapped to the shape (Davies-Harte, exact within a block of --block \
delays; blocks are independent). Negative delays become 0.\n\n\
Example: wirelab trace gen --dist normal --mean 20ms --jitter 2ms --hurst 0.8 --count 100000 -o lrd.pkt.csv"
)]
pub struct GenArgs {
    /// const, uniform, normal, pareto, paretonormal, exp, or a .dist file
    #[arg(long, value_name = "DIST")]
    pub dist: String,
    /// Mean delay
    #[arg(long, value_name = "DURATION", value_parser = crate::values::duration(0, u64::MAX, "a duration"))]
    pub mean: u64,
    /// Spread of the delays (its meaning depends on --dist)
    #[arg(long, value_name = "DURATION", default_value = "0", value_parser = crate::values::duration(0, u64::MAX, "a duration"))]
    pub jitter: u64,
    /// Records to write
    #[arg(long, value_name = "N", value_parser = crate::values::at_least(1u64))]
    pub count: u64,
    /// Probability of a drop record (0.01 or 1%)
    #[arg(long, value_name = "P", default_value = "0", value_parser = probability)]
    pub loss: f64,
    /// Hurst parameter in (0, 1) for long-range dependent delays (0.5: independent)
    #[arg(long, value_name = "H", value_parser = crate::values::number(1e-9, 1.0 - 1e-9, "between 0 and 1, exclusive"))]
    pub hurst: Option<f64>,
    /// Delays per fractional-Gaussian-noise block (a power of two, 2^4 to 2^24; memory
    /// about 56 bytes each); correlations reach across one block at most
    #[arg(long, value_name = "N", default_value_t = DEFAULT_BLOCK, value_parser = block)]
    pub block: usize,
    /// Seed of every random draw
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Output trace (`-`: stdout)
    #[arg(short = 'o', long, value_name = "FILE")]
    pub output: String,
    /// Output format (default: from the file name; pkt-csv for stdout)
    #[arg(long, value_name = "FMT")]
    pub format: Option<String>,
    /// Byte order of nist-bin output words
    #[arg(long, value_enum, default_value_t = OrderArg::Le)]
    pub order: OrderArg,
}

#[derive(Args, Debug)]
#[command(
    after_help = "σ is the sample standard deviation; lag-1 is the sample \
autocorrelation; the Hurst estimate is the aggregated-variance method, corrected for the \
finite sample (docs/trace.md). Delays of delay and duplicate records count; drops do not."
)]
pub struct StatsArgs {
    /// A packet trace (`-`: stdin, with --fmt)
    pub file: String,
    /// Print JSON (schema wirelab.trace.stats/1)
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub read: ReadOpts,
}

#[derive(Args, Debug)]
#[command(
    after_help = "Per probe the sender recorded, in its order: never received → drop; \
received once → its one-way delay; received k times → k − 1 duplicates and a delay, the \
copies' delays in increasing order. One-way delay = receive time − the send time the probe \
carries, minus the smallest of the run unless --absolute.\n\n\
Example: wirelab trace from-records send.wlr recv.wlr -o path.pkt.csv"
)]
pub struct FromRecordsArgs {
    /// The sender's record file (wirelab send --record)
    pub sender: PathBuf,
    /// The receiver's (or reflector's) record file
    pub receiver: PathBuf,
    /// Output trace (`-`: stdout)
    #[arg(short = 'o', long, value_name = "FILE")]
    pub output: String,
    /// Output format: pkt-csv, nist-bin, nist-txt, delays (default: from the file name,
    /// pkt-csv for stdout)
    #[arg(long, value_name = "FMT")]
    pub format: Option<String>,
    /// Only this flow
    #[arg(long, value_name = "ID")]
    pub flow: Option<u32>,
    /// Keep the one-way delays as measured (the clocks must agree) instead of subtracting
    /// the smallest
    #[arg(long)]
    pub absolute: bool,
    /// Byte order of nist-bin output words
    #[arg(long, value_enum, default_value_t = OrderArg::Le)]
    pub order: OrderArg,
}

#[derive(Args, Debug)]
#[command(
    after_help = "The samples are the delays (µs) of a packet trace; a plain list of \
numbers is a delays trace (--fmt delays). The table is the one iproute2's maketable prints for \
the same numbers.\n\nExample: wirelab trace maketable owd.delays -o owd.dist"
)]
pub struct MaketableArgs {
    /// A packet trace of samples (read twice: not stdin)
    pub file: String,
    /// The .dist table to write (`-`: stdout)
    #[arg(short = 'o', long, value_name = "FILE")]
    pub output: String,
    #[command(flatten)]
    pub read: ReadOpts,
}

fn probability(s: &str) -> Result<f64, String> {
    let (num, scale) = match s.trim().strip_suffix('%') {
        Some(n) => (n, 100.0),
        None => (s, 1.0),
    };
    let v = wirelab_core::units::parse_number(num).map_err(|e| e.to_string())? / scale;
    if (0.0..=1.0).contains(&v) {
        Ok(v)
    } else {
        Err("must be within [0, 1] (0.01 or 1% for one percent)".into())
    }
}

fn block(s: &str) -> Result<usize, String> {
    let n: usize = s.parse().map_err(|e| format!("{e}"))?;
    if n.is_power_of_two() && (MIN_BLOCK..=MAX_BLOCK).contains(&n) {
        Ok(n)
    } else {
        Err("must be a power of two from 16 to 16777216".into())
    }
}

fn fmt(flag: &'static str, name: Option<String>) -> FormatOpt {
    FormatOpt { flag, name }
}

fn options(order: ByteOrder, neg: NegArg, period_ns: Option<u64>) -> TraceOptions {
    let neg = match neg {
        NegArg::Error => NegPolicy::Error,
        NegArg::Zero => NegPolicy::Zero,
    };
    TraceOptions {
        order,
        neg,
        period_ns,
    }
}

impl ConvertArgs {
    pub fn job(&self) -> job::Convert {
        let order = self.order.order();
        job::Convert {
            input: InputSpec {
                path: self.input.clone(),
                format: fmt("--from", self.from.clone()),
                options: options(order, self.neg, self.period),
            },
            output: self.output.clone(),
            to: fmt("--to", self.to.clone()),
            to_options: TraceOptions {
                order: self.to_order.map_or(order, OrderArg::order),
                ..TraceOptions::default()
            },
        }
    }
}

impl DumpArgs {
    pub fn job(&self) -> job::Dump {
        job::Dump {
            input: self.read.input(self.file.clone()),
            bits: self.bits,
            json: self.json,
        }
    }
}

impl EncodeArgs {
    /// The word's job; a delay the word cannot hold is refused.
    pub fn job(&self) -> Result<job::Encode, Usage> {
        let action = match self.action {
            ActionArg::Delay => WordAction::Delay,
            ActionArg::Drop => WordAction::Drop,
            ActionArg::Dup => WordAction::Dup,
        };
        let word =
            encode_word(action, self.delay_us).map_err(|m| usage(format!("--delay-us: {m}")))?;
        Ok(job::Encode {
            word,
            bin: (self.format == WordFormat::Bin).then(|| self.order.order()),
            output: self
                .output
                .as_ref()
                .map(|p| p.to_string_lossy().into_owned()),
            append: self.append,
        })
    }
}

impl GenArgs {
    pub fn job(&self) -> job::Gen {
        job::Gen {
            dist: self.dist.clone(),
            mean_ns: self.mean,
            jitter_ns: self.jitter,
            count: self.count,
            loss: self.loss,
            hurst: self.hurst,
            block: self.block,
            seed: self.seed,
            output: self.output.clone(),
            format: fmt("--format", self.format.clone()),
            order: self.order.order(),
        }
    }
}

impl StatsArgs {
    pub fn job(&self) -> job::Stats {
        job::Stats {
            input: self.read.input(self.file.clone()),
        }
    }
}

impl FromRecordsArgs {
    pub fn job(&self) -> job::FromRecords {
        job::FromRecords {
            sender: self.sender.to_string_lossy().into_owned(),
            receiver: self.receiver.to_string_lossy().into_owned(),
            flow: self.flow,
            base: if self.absolute {
                OwdBase::Absolute
            } else {
                OwdBase::Relative
            },
            output: self.output.clone(),
            format: fmt("--format", self.format.clone()),
            order: self.order.order(),
        }
    }
}

impl MaketableArgs {
    pub fn job(&self) -> job::Maketable {
        job::Maketable {
            input: self.read.input(self.file.clone()),
            output: self.output.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{test_parse, Command};

    fn trace(args: &str) -> TraceCmd {
        match test_parse(&format!("trace {args}")) {
            Command::Trace(t) => t.cmd,
            c => panic!("{c:?}"),
        }
    }

    #[test]
    fn each_tool_gets_its_job_with_the_flags_that_name_its_formats() {
        let TraceCmd::Convert(c) =
            trace("convert a.txt - --from nist-txt --to nist-bin --order be --neg zero")
        else {
            panic!()
        };
        let j = c.job();
        assert_eq!(
            (j.input.format.flag, j.input.format.name.as_deref()),
            ("--from", Some("nist-txt"))
        );
        assert_eq!(
            (j.to.flag, j.to.name.as_deref()),
            ("--to", Some("nist-bin"))
        );
        // The output's byte order follows the input's unless --to-order says otherwise.
        assert_eq!(j.to_options.order, ByteOrder::Big);
        assert_eq!(j.input.options.neg, NegPolicy::Zero);
        let TraceCmd::FromRecords(f) = trace("from-records tx.wlr rx.wlr -o - --absolute") else {
            panic!()
        };
        let j = f.job();
        assert_eq!((j.base, j.format.flag), (OwdBase::Absolute, "--format"));
        let TraceCmd::Encode(e) = trace("encode --action drop --delay-us 5") else {
            panic!()
        };
        let refused = e.job().err().expect("a drop with a delay");
        assert!(refused.0.starts_with("--delay-us: "), "{refused}");
        let TraceCmd::Encode(e) =
            trace("encode --action dup --delay-us -500 --format bin --order be")
        else {
            panic!()
        };
        assert_eq!(e.job().unwrap().bin, Some(ByteOrder::Big));
    }

    #[test]
    fn flag_values() {
        assert_eq!(probability("1%"), Ok(0.01));
        assert_eq!(probability("0.25"), Ok(0.25));
        assert!(probability("1.5").is_err());
        assert_eq!(block("1024"), Ok(1024));
        assert!(block("1000").is_err());
        assert!(block("8").is_err());
    }
}

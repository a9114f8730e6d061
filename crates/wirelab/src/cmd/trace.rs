//! `wirelab trace`: trace tools. Flags to `wirelab_core::trace` calls;
//! files opened here. Bad input is a usage error (exit 2) naming its place
//! (`FILE:LINE:COL: what`); reports go to stderr when stdout carries the
//! output.

use crate::error::usage;
use anyhow::{Context, Result};
use clap::{Args, Subcommand, ValueEnum};
use std::fs::File;
use std::io::{self, BufRead, BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};
use wirelab_core::trace::conv::{convert_any, ConvFormat, ConvSummary};
use wirelab_core::trace::dist::DistTable;
use wirelab_core::trace::dump::{encode_word, Dump, WordAction};
use wirelab_core::trace::fgn::{DEFAULT_BLOCK, MAX_BLOCK, MIN_BLOCK};
use wirelab_core::trace::gen::{GenConfig, Shape, TraceGen};
use wirelab_core::trace::maketable::{write_table, Moments, TableBuilder};
use wirelab_core::trace::measured::{JoinFail, OwdBase, RxIndex};
use wirelab_core::trace::rate::describe;
use wirelab_core::trace::stats::{TraceStats, TraceStatsReport};
use wirelab_core::trace::{
    Action, ByteOrder, ConvertError, Format, FormatError, Indexing, NegPolicy, PacketReader,
    PacketWriter, Record, TraceError, TraceOptions, WriteError,
};
use wirelab_wire::record::{RecordReader, Role};

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
    fn order(self) -> ByteOrder {
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
    fn options(&self) -> TraceOptions {
        TraceOptions {
            order: self.order.order(),
            neg: match self.neg {
                NegArg::Error => NegPolicy::Error,
                NegArg::Zero => NegPolicy::Zero,
            },
            period_ns: self.period,
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

pub fn run(a: TraceArgs) -> Result<()> {
    match a.cmd {
        TraceCmd::Convert(c) => convert(c),
        TraceCmd::Dump(d) => dump(d),
        TraceCmd::Encode(e) => encode(e),
        TraceCmd::Gen(g) => gen(g),
        TraceCmd::Stats(s) => stats(s),
        TraceCmd::FromRecords(f) => from_records(f),
        TraceCmd::Maketable(m) => maketable(m),
    }
}

// ---- files ----

/// An input: a buffered file, or stdin for `-`.
fn open_input(path: &str) -> Result<Box<dyn BufRead>> {
    if path == "-" {
        return Ok(Box::new(BufReader::with_capacity(1 << 16, io::stdin())));
    }
    let f = File::open(path).with_context(|| format!("cannot open {path}"))?;
    Ok(Box::new(BufReader::with_capacity(1 << 16, f)))
}

/// The format of input `path`: `fmt` (the value of `flag`), else from its
/// name and first bytes.
fn input_format(
    path: &str,
    flag: &str,
    fmt: Option<&str>,
    input: &mut dyn BufRead,
) -> Result<Format> {
    match input_conv_format(path, flag, fmt, input)? {
        ConvFormat::Trace(f) => Ok(f),
        ConvFormat::KbitMs => Err(usage(format!(
            "{path}: kbit-ms is a rate series for `wirelab trace convert` (to mahimahi)"
        ))),
    }
}

/// As [`input_format`], kbit-ms included.
fn input_conv_format(
    path: &str,
    flag: &str,
    fmt: Option<&str>,
    input: &mut dyn BufRead,
) -> Result<ConvFormat> {
    if let Some(f) = fmt {
        return f
            .parse::<ConvFormat>()
            .map_err(|e| usage(format!("{flag}: {e}")));
    }
    if path == "-" {
        return Err(usage(format!("reading stdin: give its format with {flag}")));
    }
    let head = input
        .fill_buf()
        .with_context(|| format!("cannot read {path}"))?;
    ConvFormat::for_input(path, head).map_err(|e| {
        usage(match e {
            FormatError::Ambiguous { path, ext } => format!(
                "{path}: the extension {ext} does not tell the trace format: add {flag} \
                 nist-txt or {flag} delays"
            ),
            FormatError::NoExtension(path) => format!(
                "{path}: cannot tell the trace format from the file name: add {flag} NAME \
                 (nist-bin, nist-txt, delays, pkt-csv, mahimahi, csv, dist, kbit-ms)"
            ),
            e => e.to_string(),
        })
    })
}

/// An output file, removed again if the command fails before finishing it.
struct Output {
    path: Option<PathBuf>,
    done: bool,
}

impl Output {
    fn create(path: &str, append: bool) -> Result<(Output, Box<dyn Write>)> {
        if path == "-" {
            let w: Box<dyn Write> = Box::new(BufWriter::new(io::stdout().lock()));
            return Ok((
                Output {
                    path: None,
                    done: false,
                },
                w,
            ));
        }
        let f = File::options()
            .write(true)
            .create(true)
            .append(append)
            .truncate(!append)
            .open(path)
            .with_context(|| format!("cannot create {path}"))?;
        Ok((
            Output {
                path: (!append).then(|| PathBuf::from(path)),
                done: false,
            },
            Box::new(BufWriter::with_capacity(1 << 16, f)),
        ))
    }

    fn keep(mut self) {
        self.done = true;
    }
}

impl Drop for Output {
    fn drop(&mut self) {
        if let (false, Some(p)) = (self.done, &self.path) {
            let _ = std::fs::remove_file(p);
        }
    }
}

fn bad_trace(name: &str, e: TraceError) -> anyhow::Error {
    usage(e.in_file(name).to_string())
}

/// The packet format of an output: `--format`, else its name (`.csv` is
/// pkt-csv), else pkt-csv for stdout.
fn packet_output_format(path: &str, flag: Option<&str>) -> Result<Format> {
    let f = match flag {
        Some(f) => f.parse().map_err(|e| usage(format!("--format: {e}")))?,
        None if path == "-" => Format::PktCsv,
        None => match ConvFormat::for_output(path, ConvFormat::Trace(Format::PktCsv)) {
            Some(ConvFormat::Trace(f)) => f,
            _ => {
                return Err(usage(format!(
                    "{path}: cannot tell the trace format from the file name: add --format \
                     (pkt-csv, nist-bin, nist-txt or delays)"
                )))
            }
        },
    };
    if f.indexing() != Indexing::Packet {
        return Err(usage(format!(
            "{f} is not a packet trace: write pkt-csv, nist-bin, nist-txt or delays"
        )));
    }
    Ok(f)
}

fn write_failed(path: &str, record: u64, e: WriteError) -> anyhow::Error {
    match e {
        WriteError::Io(e) => anyhow::Error::new(e).context(format!("writing {path}")),
        WriteError::Unrepresentable(m) => usage(format!("{path}: record {record}: {m}")),
    }
}

// ---- convert ----

fn convert(a: ConvertArgs) -> Result<()> {
    let mut input = open_input(&a.input)?;
    let from = input_conv_format(&a.input, "--from", a.from.as_deref(), &mut *input)?;
    let to = match &a.to {
        Some(f) => f
            .parse::<ConvFormat>()
            .map_err(|e| usage(format!("--to: {e}")))?,
        None if a.output == "-" => return Err(usage("writing stdout: give its format with --to")),
        None => ConvFormat::for_output(&a.output, from).ok_or_else(|| {
            usage(format!(
                "{}: cannot tell the output format from the file name: add --to FMT",
                a.output
            ))
        })?,
    };
    let order = a.order.order();
    let from_opts = TraceOptions {
        order,
        neg: match a.neg {
            NegArg::Error => NegPolicy::Error,
            NegArg::Zero => NegPolicy::Zero,
        },
        period_ns: a.period,
    };
    let to_opts = TraceOptions {
        order: a.to_order.map_or(order, OrderArg::order),
        ..TraceOptions::default()
    };
    let (guard, out) = Output::create(&a.output, false)?;
    let summary = convert_any(from, &from_opts, input, to, &to_opts, out).map_err(|e| match e {
        ConvertError::Read(e) => bad_trace(&a.input, e),
        ConvertError::Write {
            source: WriteError::Unrepresentable(m),
            record,
        } => usage(format!("{}: record {record}: {m}", a.input)),
        ConvertError::Write { record, source } => write_failed(&a.output, record, source),
        ConvertError::Row { line, message } => usage(format!("{}:{line}: {message}", a.input)),
        ConvertError::Output(m) => usage(format!("{}: {m}", a.input)),
        e @ (ConvertError::Unsupported { .. } | ConvertError::Format(_)) => usage(e.to_string()),
    })?;
    guard.keep();
    let what = match summary {
        ConvSummary::Packets(n) => format!("{n} records"),
        ConvSummary::Rate(s) => format!("{} records ({})", s.records, describe(&s)),
    };
    eprintln!(
        "convert: {} ({from}) -> {} ({to}): {what}",
        a.input, a.output
    );
    Ok(())
}

// ---- dump ----

fn dump(a: DumpArgs) -> Result<()> {
    let mut input = open_input(&a.file)?;
    let format = input_format(&a.file, "--fmt", a.read.fmt.as_deref(), &mut *input)?;
    if a.bits && !matches!(format, Format::NistBin | Format::NistTxt) {
        return Err(usage(format!(
            "--bits shows NIST Net words: {} is {format}, not nist-bin or nist-txt",
            a.file
        )));
    }
    let mut d = Dump::new(format, &a.read.options(), &a.file, input);
    let mut out = BufWriter::new(io::stdout().lock());
    let mut first_error = None;
    for e in d.by_ref() {
        if a.json {
            writeln!(out, "{}", serde_json::to_string(&e)?)?;
        } else {
            writeln!(out, "{}", e.text(a.bits))?;
        }
        if let (None, wirelab_core::trace::dump::DumpValue::Error { error }) =
            (&first_error, &e.value)
        {
            first_error = Some(error.clone());
        }
    }
    out.flush()?;
    match first_error {
        None => Ok(()),
        Some(first) if d.errors() == 1 => Err(usage(first)),
        Some(first) => Err(usage(format!(
            "{first} (and {} more bad records)",
            d.errors() - 1
        ))),
    }
}

// ---- encode ----

fn encode(a: EncodeArgs) -> Result<()> {
    let action = match a.action {
        ActionArg::Delay => WordAction::Delay,
        ActionArg::Drop => WordAction::Drop,
        ActionArg::Dup => WordAction::Dup,
    };
    let word = encode_word(action, a.delay_us).map_err(|m| usage(format!("--delay-us: {m}")))?;
    let bytes = match a.format {
        WordFormat::Txt => format!("{}\n", word as i32).into_bytes(),
        WordFormat::Bin => match a.order {
            OrderArg::Le => word.to_le_bytes().to_vec(),
            OrderArg::Be => word.to_be_bytes().to_vec(),
        },
    };
    match &a.output {
        Some(p) => {
            let mut f = File::options()
                .write(true)
                .create(true)
                .append(a.append)
                .truncate(!a.append)
                .open(p)
                .with_context(|| format!("cannot create {}", p.display()))?;
            f.write_all(&bytes)
                .with_context(|| format!("writing {}", p.display()))?;
        }
        None => {
            let mut out = io::stdout().lock();
            out.write_all(&bytes)?;
            out.flush()?;
        }
    }
    Ok(())
}

// ---- gen ----

fn gen(a: GenArgs) -> Result<()> {
    let shape = match Shape::builtin(&a.dist) {
        Some(s) => s,
        None => {
            let f = File::open(&a.dist).map_err(|e| {
                usage(format!(
                    "--dist {}: not const, uniform, normal, pareto, paretonormal or exp, and \
                     not a readable .dist file ({e})",
                    a.dist
                ))
            })?;
            Shape::Table(DistTable::read(BufReader::new(f)).map_err(|e| bad_trace(&a.dist, e))?)
        }
    };
    let format = packet_output_format(&a.output, a.format.as_deref())?;
    let mut g = TraceGen::new(GenConfig {
        shape,
        mean_ns: a.mean,
        jitter_ns: a.jitter,
        count: a.count,
        loss: a.loss,
        hurst: a.hurst,
        block: a.block,
        seed: a.seed,
    })
    .map_err(|e| usage(e.to_string()))?;
    let (guard, out) = Output::create(&a.output, false)?;
    let opts = TraceOptions {
        order: a.order.order(),
        ..TraceOptions::default()
    };
    let mut w = packet_writer(format, &opts, out, &a.output)?;
    let (mut n, mut drops) = (0u64, 0u64);
    for rec in g.by_ref() {
        n += 1;
        drops += u64::from(rec.action == Action::Drop);
        w.write(&rec).map_err(|e| write_failed(&a.output, n, e))?;
    }
    w.finish()
        .with_context(|| format!("writing {}", a.output))?;
    guard.keep();
    let noise = match (a.hurst, g.block()) {
        (Some(h), Some(b)) => format!("fractional Gaussian noise H={h}, blocks of {b}"),
        _ => "independent".into(),
    };
    eprintln!(
        "gen: {n} records ({drops} drops) to {} ({format}); {noise}; {} delays below 0 written as 0",
        a.output,
        g.clamped()
    );
    Ok(())
}

fn packet_writer(
    format: Format,
    opts: &TraceOptions,
    out: Box<dyn Write>,
    path: &str,
) -> Result<PacketWriter<Box<dyn Write>>> {
    PacketWriter::new(format, opts, out).map_err(|e| match e {
        ConvertError::Write { record, source } => write_failed(path, record, source),
        e => usage(e.to_string()),
    })
}

// ---- stats ----

fn packet_reader(
    path: &str,
    read: &ReadOpts,
    what: &str,
) -> Result<(Format, PacketReader<Box<dyn BufRead>>)> {
    let mut input = open_input(path)?;
    let format = input_format(path, "--fmt", read.fmt.as_deref(), &mut *input)?;
    let r = PacketReader::new(format, &read.options(), input).map_err(|_| {
        usage(format!(
            "{path} is a {format} trace: {what} reads packet traces (nist-bin, nist-txt, \
             delays, pkt-csv)"
        ))
    })?;
    Ok((format, r))
}

fn stats(a: StatsArgs) -> Result<()> {
    let (format, reader) = packet_reader(&a.file, &a.read, "stats")?;
    let mut s = TraceStats::new();
    for rec in reader {
        s.push(&rec.map_err(|e| bad_trace(&a.file, e))?);
    }
    let r = s.report();
    if a.json {
        let mut j = serde_json::json!({
            "schema": "wirelab.trace.stats/1",
            "file": a.file,
            "format": format.name(),
        });
        if let (Some(obj), serde_json::Value::Object(fields)) =
            (j.as_object_mut(), serde_json::to_value(&r)?)
        {
            obj.extend(fields);
        }
        println!("{}", serde_json::to_string_pretty(&j)?);
    } else {
        print!("{}", stats_text(&a.file, format, &r));
    }
    Ok(())
}

fn us(ns: f64) -> String {
    format!("{:.3}us", ns / 1000.0)
}

fn stats_text(file: &str, format: Format, r: &TraceStatsReport) -> String {
    let mut t = format!("{file}: {format}\n");
    t.push_str(&format!(
        "records  {}  (delay {}, drop {}, dup {}, corrupt {})\n",
        r.records, r.delays, r.drops, r.dups, r.corrupts
    ));
    match (r.mean_ns, r.min_ns, r.max_ns) {
        (Some(mean), Some(min), Some(max)) => t.push_str(&format!(
            "delay    mean {}  σ {}  min {}  max {}  (over {} delays and duplicates)\n",
            us(mean),
            r.stddev_ns.map_or("-".into(), us),
            us(min as f64),
            us(max as f64),
            r.values
        )),
        _ => t.push_str("delay    - (no delay or duplicate records)\n"),
    }
    t.push_str(&format!(
        "lag-1    {}\n",
        r.lag1
            .map_or("- (needs 2 delays that differ)".into(), |v| format!(
                "{v:.4}"
            ))
    ));
    match &r.hurst {
        Some(h) => t.push_str(&format!(
            "Hurst    {:.3}  ({}; block lengths {} to {}, {} lengths)\n",
            h.hurst, h.method, h.min_block, h.max_block, h.block_lengths
        )),
        None => t.push_str("Hurst    - (needs at least 64 delays that vary)\n"),
    }
    t
}

// ---- from-records ----

fn open_records(path: &Path) -> Result<RecordReader<BufReader<File>>> {
    let f = File::open(path).with_context(|| format!("cannot open {}", path.display()))?;
    RecordReader::new(BufReader::with_capacity(1 << 20, f))
        .map_err(|e| usage(format!("{}: {e}", path.display())))
}

fn from_records(a: FromRecordsArgs) -> Result<()> {
    let format = packet_output_format(&a.output, a.format.as_deref())?;
    let mut sender = open_records(&a.sender)?;
    let mut receiver = open_records(&a.receiver)?;
    if sender.header().role != Role::Sender {
        return Err(usage(format!(
            "{} is a {} record file: give the sender's file first, then the receiver's",
            a.sender.display(),
            sender.header().role.as_str()
        )));
    }
    if receiver.header().role == Role::Sender {
        return Err(usage(format!(
            "{} is a sender record file: the second file is the receiver's (or reflector's)",
            a.receiver.display()
        )));
    }
    let read_err = |p: &Path, e| usage(format!("{}: {e}", p.display()));
    let mut idx = RxIndex::new(a.flow);
    while let Some(r) = receiver
        .next_record()
        .map_err(|e| read_err(&a.receiver, e))?
    {
        idx.push(&r);
    }
    let base = if a.absolute {
        OwdBase::Absolute
    } else {
        OwdBase::Relative
    };
    let mut join = idx.finish(base);
    let (guard, out) = Output::create(&a.output, false)?;
    let opts = TraceOptions {
        order: a.order.order(),
        ..TraceOptions::default()
    };
    let mut w = packet_writer(format, &opts, out, &a.output)?;
    let mut n = 0u64;
    while let Some(r) = sender.next_record().map_err(|e| read_err(&a.sender, e))? {
        join.packet(&r, |rec: Record| {
            n += 1;
            w.write(&rec)
        })
        .map_err(|e| match e {
            JoinFail::Measured(e) => usage(format!(
                "{}: {e}: leave out --absolute",
                a.receiver.display()
            )),
            JoinFail::Out(e) => write_failed(&a.output, n, e),
        })?;
    }
    w.finish()
        .with_context(|| format!("writing {}", a.output))?;
    let s = join.summary();
    if s.sent == 0 {
        return Err(usage(format!(
            "{}: no probes{} in the sender's records: no trace",
            a.sender.display(),
            a.flow.map(|f| format!(" of flow {f}")).unwrap_or_default()
        )));
    }
    guard.keep();
    let base = match join.base() {
        OwdBase::Relative => format!(
            "delays relative to the smallest one-way delay, {}",
            us(s.subtracted_ns as f64)
        ),
        OwdBase::Absolute => "delays as measured".into(),
    };
    eprintln!(
        "from-records: {} probes sent, {} lost, {} duplicate copies -> {} records in {} ({format}); {base}",
        s.sent, s.lost, s.duplicates, s.records, a.output
    );
    if s.repeats > 0 {
        eprintln!(
            "from-records: {} packets re-sent under a recorded sequence number (end-marker \
             repeats) left out",
            s.repeats
        );
    }
    if s.unexpected > 0 {
        eprintln!(
            "wirelab: warning: {} received probes are not in the sender's records (left out)",
            s.unexpected
        );
    }
    if s.receiver_no_time > 0 {
        eprintln!(
            "wirelab: warning: {} receiver records have no send or receive time (left out)",
            s.receiver_no_time
        );
    }
    Ok(())
}

// ---- maketable ----

fn maketable(a: MaketableArgs) -> Result<()> {
    if a.file == "-" {
        return Err(usage(
            "maketable reads its samples twice (the mean first): give a file, not stdin",
        ));
    }
    let sample = |r: Result<Record, TraceError>| -> Result<Option<f64>> {
        Ok(match r.map_err(|e| bad_trace(&a.file, e))?.action {
            Action::Delay { delay_ns } | Action::Duplicate { delay_ns } => {
                Some(delay_ns as f64 / 1000.0)
            }
            Action::Drop => None,
        })
    };
    let (_, reader) = packet_reader(&a.file, &a.read, "maketable")?;
    let mut m = Moments::default();
    for r in reader {
        if let Some(x) = sample(r)? {
            m.push(x);
        }
    }
    let (mu, sigma) = m.finish().map_err(|e| usage(format!("{}: {e}", a.file)))?;
    let (_, reader) = packet_reader(&a.file, &a.read, "maketable")?;
    let mut b = TableBuilder::new(mu, sigma);
    for r in reader {
        if let Some(x) = sample(r)? {
            b.push(x).map_err(|e| usage(format!("{}: {e}", a.file)))?;
        }
    }
    let table = b.finish().map_err(|e| usage(format!("{}: {e}", a.file)))?;
    let (guard, out) = Output::create(&a.output, false)?;
    write_table(&table, out).with_context(|| format!("writing {}", a.output))?;
    guard.keep();
    eprintln!(
        "maketable: {} samples, mean {:.3}us, σ {:.3}us -> {} ({} entries)",
        m.count(),
        mu,
        sigma,
        a.output,
        table.len()
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

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

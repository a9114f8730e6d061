//! Building a direction's [`Link`] from its stage list: the files its
//! stages read are opened and checked here.

use wirelab_link::{self as link, Link};

/// Why a direction's link could not be built.
#[derive(Debug, thiserror::Error)]
pub enum LinkSetupError {
    #[error("cannot read trace {path}: {cause}")]
    Open { path: String, cause: std::io::Error },
    #[error(transparent)]
    Format(#[from] wirelab_trace::FormatError),
    #[error("{path}: a {format} trace gives {what}; {hint}")]
    WrongStage {
        path: String,
        format: &'static str,
        what: &'static str,
        hint: String,
    },
    #[error(transparent)]
    Trace(#[from] wirelab_trace::FileError),
    #[error(transparent)]
    Link(#[from] link::LinkError),
    /// A bad Dummynet profile: `FILE:LINE: what`.
    #[error("{path}:{error}")]
    Profile {
        path: String,
        error: link::profile::ProfileError,
    },
}

/// A profile is read whole; ipfw's are a few KiB (at most 1024 points).
const PROFILE_MAX_BYTES: u64 = 1 << 20;

/// Reads and checks a Dummynet profile.
fn read_profile(path: &str) -> Result<link::profile::Profile, LinkSetupError> {
    use std::io::Read;
    let open_err = |source| LinkSetupError::Open {
        path: path.to_string(),
        cause: source,
    };
    let mut text = String::new();
    std::fs::File::open(path)
        .map_err(open_err)?
        .take(PROFILE_MAX_BYTES + 1)
        .read_to_string(&mut text)
        .map_err(open_err)?;
    if text.len() as u64 > PROFILE_MAX_BYTES {
        return Err(LinkSetupError::Profile {
            path: path.to_string(),
            error: link::profile::ProfileError {
                line: 0,
                what: "larger than 1 MiB: a profile holds at most 1024 points".into(),
            },
        });
    }
    link::profile::Profile::parse(&text).map_err(|error| LinkSetupError::Profile {
        path: path.to_string(),
        error,
    })
}

/// The link for `config`. Every file a stage reads (`trace`, `link`,
/// `timeline`) is checked whole first (a bad record is an error before
/// any frame is forwarded), then streamed, so a trace of any size takes
/// bounded memory.
pub fn open_link(config: &link::LinkConfig, key: link::LinkKey) -> Result<Link, LinkSetupError> {
    use std::io::BufReader;
    use wirelab_trace::csv::{CsvReader, Timeline};
    use wirelab_trace::mahimahi::Opportunities;
    use wirelab_trace::{validate, AtEnd, Format, Indexing, PacketReader, TraceOptions};
    let open = |p: &str| {
        std::fs::File::open(p).map_err(|source| LinkSetupError::Open {
            path: p.to_string(),
            cause: source,
        })
    };
    let check = |path: &str, format: Format, opts: &TraceOptions| {
        validate(format, opts, BufReader::new(open(path)?))
            .map(|_| ())
            .map_err(|e| LinkSetupError::Trace(e.in_file(path)))
    };
    let mut sources = link::Sources::default();
    if let Some(spec) = &config.trace {
        let path = spec.file.clone();
        let format = detect(&path, &open)?;
        if format.indexing() != Indexing::Packet {
            let hint = match format {
                Format::Mahimahi => format!("use the link stage: link {path}"),
                Format::Csv => format!("use the timeline stage: timeline {path}"),
                _ => "a trace stage reads nist-bin, nist-txt, delays or pkt-csv".to_string(),
            };
            return Err(LinkSetupError::WrongStage {
                path,
                format: format.name(),
                what: "rates or times, not per-packet actions",
                hint,
            });
        }
        let opts = TraceOptions::default();
        check(&path, format, &opts)?;
        let reader = move || {
            let f = std::fs::File::open(&path).ok();
            f.and_then(|f| PacketReader::new(format, &opts, BufReader::new(f)).ok())
                .into_iter()
                .flatten()
                // Checked whole above: an error now means the file changed
                // under the run, and the trace ends there.
                .map_while(Result::ok)
                .map(|r| r.action)
        };
        sources.trace = Some(if spec.at_end == AtEnd::Loop {
            Box::new(link::Looping::new(reader))
        } else {
            Box::new(reader())
        });
    }
    if let Some(spec) = &config.link {
        // Always Mahimahi, whatever the file is called (its own traces
        // have no extension that says so).
        let opts = TraceOptions::default();
        check(&spec.file, Format::Mahimahi, &opts)?;
        let f = BufReader::new(open(&spec.file)?);
        let opps = Opportunities::new(f, !spec.once).map_while(Result::ok);
        sources.opportunities = Some(Box::new(opps));
    }
    if let Some(spec) = &config.timeline {
        let opts = TraceOptions {
            period_ns: spec.period_ns,
            ..TraceOptions::default()
        };
        check(&spec.file, Format::Csv, &opts)?;
        let reader = CsvReader::new(BufReader::new(open(&spec.file)?), &opts);
        let timeline = Timeline::new(reader, spec.at_end);
        sources.timeline = Some(Box::new(timeline));
    }
    if let Some(spec) = &config.profile {
        sources.profile = Some(read_profile(&spec.file)?);
    }
    Ok(Link::with_sources(config, key, sources)?)
}

/// The format of the trace file `path`, from its name and first bytes.
fn detect(
    path: &str,
    open: &impl Fn(&str) -> Result<std::fs::File, LinkSetupError>,
) -> Result<wirelab_trace::Format, LinkSetupError> {
    use std::io::Read;
    let mut head = Vec::with_capacity(4096);
    open(path)?
        .take(4096)
        .read_to_end(&mut head)
        .map_err(|source| LinkSetupError::Open {
            path: path.to_string(),
            cause: source,
        })?;
    Ok(wirelab_trace::Format::detect(path, &head)?)
}

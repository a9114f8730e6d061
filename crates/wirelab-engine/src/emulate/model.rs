//! Building a direction's [`Link`] from its stage list: the files its
//! stages read are opened and checked here.

use wirelab_core::link::{self, Link};

/// Why a direction's link could not be built.
#[derive(Debug, thiserror::Error)]
pub enum LinkSetupError {
    #[error("cannot read trace {path}: {source}")]
    Open {
        path: String,
        source: std::io::Error,
    },
    #[error("{0}")]
    Format(#[from] wirelab_core::trace::FormatError),
    #[error("{path}: a {format} trace gives rates or times, not per-packet actions; a `trace` stage reads nist-bin, nist-txt, delays or pkt-csv")]
    NotPerPacket { path: String, format: &'static str },
    #[error("{0}")]
    Trace(#[from] wirelab_core::trace::FileError),
    #[error("{0}")]
    Link(#[from] link::LinkError),
}

/// The link for `config`: with a `trace` stage, its file is checked whole
/// first (a bad record is an error before any frame is forwarded), then
/// streamed, so a trace of any size takes bounded memory.
pub fn open_link(config: &link::LinkConfig, key: link::LinkKey) -> Result<Link, LinkSetupError> {
    use std::io::{BufReader, Read};
    use wirelab_core::trace::{validate, Format, Indexing, PacketReader, TraceOptions};
    let Some(spec) = &config.trace else {
        return Ok(Link::new(config, key)?);
    };
    let path = spec.file.clone();
    let open = |p: &str| {
        std::fs::File::open(p).map_err(|source| LinkSetupError::Open {
            path: p.to_string(),
            source,
        })
    };
    let mut head = Vec::with_capacity(4096);
    open(&path)?
        .take(4096)
        .read_to_end(&mut head)
        .map_err(|source| LinkSetupError::Open {
            path: path.clone(),
            source,
        })?;
    let format = Format::detect(&path, &head)?;
    if format.indexing() != Indexing::Packet {
        return Err(LinkSetupError::NotPerPacket {
            path,
            format: format.name(),
        });
    }
    let opts = TraceOptions::default();
    validate(format, &opts, BufReader::new(open(&path)?)).map_err(|e| e.in_file(&path))?;
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
    let source: Box<dyn wirelab_core::trace::ActionSource + Send> =
        if spec.at_end == link::TraceEnd::Loop {
            Box::new(link::Looping::new(reader))
        } else {
            Box::new(reader())
        };
    Ok(Link::with_trace(config, key, source)?)
}

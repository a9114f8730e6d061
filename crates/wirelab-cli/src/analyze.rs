//! Flags of `wirelab analyze`.

use crate::values::WINDOW;
use clap::Args;
use std::path::PathBuf;

/// `--rtp-clock PT=HZ`: a payload type (0–127) and its clock rate (at
/// least 1000 Hz: the jitter is computed per ms of clock, as Wireshark's).
pub fn parse_rtp_clock(s: &str) -> Result<(u8, u32), String> {
    let (pt, hz) = s
        .split_once('=')
        .ok_or_else(|| format!("'{s}': expected PT=HZ, e.g. 96=48000"))?;
    let pt: u8 = pt
        .trim()
        .parse()
        .ok()
        .filter(|p| *p < 128)
        .ok_or_else(|| format!("payload type '{pt}': expected 0 to 127"))?;
    let hz: u32 = hz
        .trim()
        .parse()
        .ok()
        .filter(|h| *h >= 1000)
        .ok_or_else(|| {
            format!("clock rate '{hz}': expected a whole number of Hz, at least 1000")
        })?;
    Ok((pt, hz))
}

#[derive(Args, Debug)]
#[command(after_long_help = "EXAMPLES:\n  \
wirelab analyze tx.wlr rx.wlr              # join sender and receiver by flow and sequence\n  \
wirelab analyze rx.wlr --json              # receiver records alone\n  \
wirelab analyze tx.wlr --window 100ms      # sender alone: pacing accuracy, RTT with --echo\n  \
wirelab analyze cap.pcapng tx.wlr          # probes in a capture (any tool's) as receive records\n  \
wirelab analyze voip.pcap --rtp-clock 96=48000   # RTP streams: loss, sequence errors, jitter\n\n\
Captures (pcap or pcapng, by their magic) mix freely with record files: each wirelab probe in one is a receive record (its time the capture's), and RTP streams are measured as Wireshark's RTP stream analysis measures them.\n\n\
One-way delay is receive time minus send time on two clocks: it is exact only when both hosts' clocks are synchronized (on one host they are the same clock).")]
pub struct AnalyzeArgs {
    /// Record files written by `send --record` and `recv --record`, pcap/pcapng captures,
    /// or one results directory of `wirelab run` (its summary is derived again from its
    /// records)
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    /// Window for throughput over time (at least 1ms)
    #[arg(long, default_value = "1s", value_name = "DURATION", value_parser = WINDOW)]
    pub window: u64,
    /// Most flows analyzed; inputs with more are refused before any is analyzed
    #[arg(long, default_value_t = wirelab_analysis::join::DEFAULT_MAX_FLOWS as u32,
          value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub max_flows: u32,
    /// Print the report as JSON (schema wirelab.analysis/1)
    #[arg(long)]
    pub json: bool,
    /// What to look for in captures
    #[command(flatten)]
    pub capture: AnalyzeCaptureArgs,
}

/// `analyze`'s options for pcap/pcapng inputs.
#[derive(Args, Debug, Default)]
pub struct AnalyzeCaptureArgs {
    /// Captures: UDP destination port whose datagrams are LUNA probes (LUNA's layout has
    /// no magic to find it by); repeat for more ports
    #[arg(long, value_name = "PORT", value_parser = clap::value_parser!(u16).range(1..))]
    pub luna_port: Vec<u16>,
    /// Captures: only UDP datagrams from or to PORT are RTP (like Wireshark's Decode As);
    /// without it every UDP datagram between ports >= 1024 that parses as RTP version 2
    /// is (like its RTP heuristic); repeat for more ports
    #[arg(long, value_name = "PORT", value_parser = clap::value_parser!(u16).range(1..))]
    pub rtp_port: Vec<u16>,
    /// Captures: the RTP clock rate of payload type PT in Hz (dynamic types have none
    /// without it, so no jitter); repeat for more types
    #[arg(long, value_name = "PT=HZ", value_parser = parse_rtp_clock)]
    pub rtp_clock: Vec<(u8, u32)>,
    /// Captures: do not look for RTP streams
    #[arg(long)]
    pub no_rtp: bool,
}

impl AnalyzeCaptureArgs {
    /// The capture options, keeping at most `max_rtp_streams` RTP streams.
    pub fn options(&self, max_rtp_streams: usize) -> wirelab_analysis::CaptureOptions {
        wirelab_analysis::CaptureOptions {
            luna_ports: self.luna_port.clone(),
            rtp: !self.no_rtp,
            rtp_ports: self.rtp_port.clone(),
            rtp_clocks: self.rtp_clock.iter().copied().collect(),
            max_rtp_streams,
        }
    }
}

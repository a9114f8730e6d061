//! Flag groups and values shared by several subcommands.

use crate::values::{self};
use clap::{Args, ValueEnum};
use wirelab_core::replay::LatePolicy;
use wirelab_core::units;
use wirelab_engine::job::net::Family;

pub const DEFAULT_PORT: u16 = 5757;

/// Probe layout on the wire.
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum FormatArg {
    /// wirelab's header: flow id, 64-bit sequence, send time, end marker
    #[default]
    Wirelab,
    /// LUNA's 21-byte layout (u32 sequence, timespec, flags) for LUNA peers: no flow id
    /// (flows told apart by source address), no end marker, echoes mirrored unchanged
    Luna,
}

impl CatchUpArgs {
    /// The policy; `rebase_threshold_ns` is the lateness --late rebase shifts on.
    pub fn policy(&self, rebase_threshold_ns: u64) -> LatePolicy {
        match self.late {
            LateArg::Burst => LatePolicy::Burst,
            LateArg::Rebase => LatePolicy::Rebase {
                threshold_ns: rebase_threshold_ns,
            },
            LateArg::Spread => LatePolicy::Spread {
                factor: self.spread_factor,
                max_shrink_ns: self.spread_max_shrink,
                horizon: self.spread_horizon,
            },
        }
    }
}

/// Whether a sender calibrates its start phase (send, replay).
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum PhaseArg {
    /// Calibrate, then start at the phase whose deadlines meet the fewest stalls
    Auto,
    /// Start at once
    Off,
}

/// Start-phase calibration against periodic stalls (send, replay).
#[derive(Args, Debug, Clone)]
pub struct PhaseArgs {
    /// Start phase: "auto" first spins for --phase-calibration on the sending CPU, maps
    /// where it loses the CPU at regular times (the kernel tick, host timers on a VM) and
    /// starts (at most ~25ms after the calibration) at the phase where the deadlines miss
    /// those stalls; what it saw and chose is in the --json output ("phase"). "off" starts
    /// at once. Default: auto (send: off with --start-at)
    #[arg(long, value_enum)]
    pub phase: Option<PhaseArg>,
    /// How long --phase auto watches for stalls (40ms, two 20ms folds, to 10s)
    #[arg(long, default_value = "200ms", value_name = "DURATION",
          value_parser = values::duration(40_000_000, 10_000_000_000, "between 40ms and 10s"))]
    pub phase_calibration: u64,
}

impl PhaseArgs {
    /// The calibration to run, or None with --phase off.
    pub fn config(&self) -> Option<wirelab_engine::phase::PhaseConfig> {
        (self.phase != Some(PhaseArg::Off)).then(|| wirelab_engine::phase::PhaseConfig {
            calibrate: std::time::Duration::from_nanos(self.phase_calibration),
        })
    }
}

impl FormatArg {
    pub fn engine(self) -> wirelab_engine::ProbeFormat {
        match self {
            FormatArg::Wirelab => wirelab_engine::ProbeFormat::Wirelab,
            FormatArg::Luna => wirelab_engine::ProbeFormat::Luna,
        }
    }
}

#[derive(Args, Debug, Clone)]
pub struct IpFamily {
    /// Use IPv4 only
    #[arg(short = '4', long = "ipv4", conflicts_with = "ipv6")]
    pub ipv4: bool,
    /// Use IPv6 only (the receiver then refuses IPv4)
    #[arg(short = '6', long = "ipv6")]
    pub ipv6: bool,
}

impl IpFamily {
    pub fn family(&self) -> Family {
        match (self.ipv4, self.ipv6) {
            (true, _) => Family::V4,
            (_, true) => Family::V6,
            _ => Family::Any,
        }
    }
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum LateArg {
    /// Send everything due at once (tcpreplay's behaviour)
    Burst,
    /// Shift the rest of the schedule by the lateness (gaps kept, duration grows)
    Rebase,
    /// Keep at least --spread-factor x the original gap while catching up (no drift)
    Spread,
}

/// How a sender (send, replay) catches up after a late departure.
#[derive(Args, Debug, Clone)]
pub struct CatchUpArgs {
    /// Catch-up policy when late
    #[arg(long, value_enum, default_value = "spread")]
    pub late: LateArg,
    /// Fraction of the original gap kept at least while catching up (--late spread; 0 to 1)
    #[arg(long, default_value = "0.5", value_name = "F", value_parser = values::number(0.0, 1.0, "within 0..=1"))]
    pub spread_factor: f64,
    /// Most a gap is shortened while catching up (--late spread): each catch-up gap is off
    /// by at most this much; larger values catch up faster
    #[arg(long, default_value = "2us", value_name = "DURATION", value_parser = units::parse_duration_ns)]
    pub spread_max_shrink: u64,
    /// --late spread: lateness up to N x --spread-max-shrink is worked off gently, that
    /// much per gap; larger lateness is caught up at once, as far as --spread-factor allows
    #[arg(long, default_value_t = 8, value_name = "N",
          value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    pub spread_horizon: u32,
}

//! What each sweep, `--set` and point key sets, the check of its values,
//! and `{KEY}` placeholders.

use super::schema::Key;
use super::{Axis, Control, FlowSpec, SocketKind};
use crate::expr::{Expr, Value};
use wirelab_core::gen::{GenError, GenSpec, SpecUnit};
use wirelab_core::units::{parse_duration_ns, parse_rate_pps, UnitError};

/// Why a value does not fit its flow key; the message says what the key
/// takes. `literal` is the value as TOML writes it.
#[derive(Debug, thiserror::Error)]
pub enum ValueError {
    /// An integer key given something else or out of its range.
    #[error("{takes}, not {literal}")]
    Int {
        takes: &'static str,
        literal: String,
    },
    #[error("a size is a number of bytes or a `send --size` spec such as \"uniform:64,1400\", not {literal}")]
    Size { literal: String },
    #[error("an interval is a duration with a unit (\"100us\"), 0, or a `send --interval` spec such as \"exp:1ms\", not {literal}")]
    Interval { literal: String },
    #[error("a rate is a packet rate such as \"10kpps\", not {literal}")]
    Rate { literal: String },
    #[error("rate {rate:?} must be above 0")]
    RateNotPositive { rate: String },
    #[error("a socket is \"udp\", \"raw\" or \"packet\", not {literal}")]
    Socket { literal: String },
    #[error("a duration is a string with a unit such as \"60s\", not {literal}")]
    Duration { literal: String },
    #[error("a flow's duration must be above 0")]
    ZeroDuration,
    #[error("echo is true or false, not {literal}")]
    Echo { literal: String },
    /// A size or interval spec that does not parse.
    #[error(transparent)]
    Spec(#[from] GenError),
    /// A rate or duration that does not parse.
    #[error(transparent)]
    Unit(#[from] UnitError),
}

/// Why a sweep or `--set` key sets nothing.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum KeyError {
    #[error("write flow.NAME.KEY (e.g. flow.{first_flow}.size)")]
    FlowForm { first_flow: String },
    #[error("no flow is named {name:?}; flows: {flows}")]
    NoFlow { name: String, flows: String },
    #[error("a flow's swept key is one of: {}", FlowKey::names(false).join(", "))]
    FlowField,
    #[error("{key} differs per flow: write flow.NAME.{key} (e.g. flow.{first_flow}.{key})")]
    PerFlow { key: String, first_flow: String },
    #[error("campaign settings are not swept; set one with --set")]
    Campaign,
    #[error(
        "changes nothing: not a flow key ({}), not flow.NAME.KEY, and no {{{key}}} placeholder \
         or flow or stressor `when` uses it",
        FlowKey::names(true).join(", ")
    )]
    Unused { key: String },
}

/// A flow field a sweep, `--set` or the file sets from a [`Value`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FlowKey {
    Size,
    Interval,
    Rate,
    Socket,
    Dscp,
    Count,
    Duration,
    Echo,
    Port,
    WarmupPackets,
}

impl FlowKey {
    pub const ALL: [FlowKey; 10] = [
        FlowKey::Size,
        FlowKey::Interval,
        FlowKey::Rate,
        FlowKey::Socket,
        FlowKey::Dscp,
        FlowKey::Count,
        FlowKey::Duration,
        FlowKey::Echo,
        FlowKey::Port,
        FlowKey::WarmupPackets,
    ];

    pub fn name(self) -> &'static str {
        match self {
            FlowKey::Size => "size",
            FlowKey::Interval => "interval",
            FlowKey::Rate => "rate",
            FlowKey::Socket => "socket",
            FlowKey::Dscp => "dscp",
            FlowKey::Count => "count",
            FlowKey::Duration => "duration",
            FlowKey::Echo => "echo",
            FlowKey::Port => "port",
            FlowKey::WarmupPackets => "warmup_packets",
        }
    }

    /// The key's row of the `[[flow]]` table ([`schema`](super::schema)).
    pub fn key(self) -> Key {
        let (default, meaning) = match self {
            FlowKey::Size => (
                "as `wirelab send`",
                "payload bytes: a number or a `wirelab send --size` spec, e.g. `\"uniform:64,1400\"`",
            ),
            FlowKey::Interval => (
                "as `wirelab send`",
                "between probes: a duration, `0` (as fast as possible) or a `wirelab send \
                 --interval` spec; give `interval` or `rate`",
            ),
            FlowKey::Rate => ("", "a constant packet rate, e.g. `\"10kpps\"`"),
            FlowKey::Socket => ("`udp`", "`udp`, `raw` or `packet`"),
            FlowKey::Dscp => ("", "the DSCP code point, 0 to 63"),
            FlowKey::Count => ("", "stop after this many probes"),
            FlowKey::Duration => ("10 s without `count`", "how long the flow sends"),
            FlowKey::Echo => (
                "false",
                "the receiver echoes each probe back and the sender measures RTT",
            ),
            FlowKey::Port => (
                "5800 + the flow's place in the file",
                "the receiver's port; swept per flow only (`flow.NAME.port`)",
            ),
            FlowKey::WarmupPackets => (
                "0",
                "the first N probes are flagged as warm-up; analysis leaves them out",
            ),
        };
        Key {
            name: self.name(),
            required: false,
            default,
            meaning,
        }
    }

    pub fn parse(s: &str) -> Option<FlowKey> {
        FlowKey::ALL.into_iter().find(|k| k.name() == s)
    }

    /// Whether the key may be swept for all flows at once (a port may not:
    /// two flows to one host would share it).
    pub fn for_all_flows(self) -> bool {
        self != FlowKey::Port
    }

    pub fn names(all_flows: bool) -> Vec<&'static str> {
        FlowKey::ALL
            .into_iter()
            .filter(|k| !all_flows || k.for_all_flows())
            .map(FlowKey::name)
            .collect()
    }

    /// Checks `v` and sets the field of `f`. The message says what the key
    /// takes.
    pub fn apply(self, f: &mut FlowSpec, v: &Value) -> Result<(), ValueError> {
        let literal = || v.literal();
        let int = |lo: i64, hi: i64, takes: &'static str| match v {
            Value::Int(n) if (lo..=hi).contains(n) => Ok(*n),
            _ => Err(ValueError::Int {
                takes,
                literal: literal(),
            }),
        };
        match self {
            FlowKey::Size => {
                let s = match v {
                    Value::Int(n) if *n >= 0 => n.to_string(),
                    Value::Str(s) => s.clone(),
                    _ => return Err(ValueError::Size { literal: literal() }),
                };
                GenSpec::parse(&s, SpecUnit::Bytes)?;
                f.size = Some(s);
            }
            FlowKey::Interval => {
                let s = match v {
                    Value::Int(0) => "0".to_string(),
                    Value::Str(s) => s.clone(),
                    _ => return Err(ValueError::Interval { literal: literal() }),
                };
                GenSpec::parse(&s, SpecUnit::Time)?;
                f.interval = Some(s);
            }
            FlowKey::Rate => {
                let s = match v {
                    Value::Int(n) if *n > 0 => n.to_string(),
                    Value::Str(s) => s.clone(),
                    _ => return Err(ValueError::Rate { literal: literal() }),
                };
                match parse_rate_pps(&s)? {
                    r if r > 0.0 && r.is_finite() => f.rate = Some(s),
                    _ => return Err(ValueError::RateNotPositive { rate: s }),
                }
            }
            FlowKey::Socket => {
                f.socket = match v {
                    Value::Str(s) => SocketKind::parse(s),
                    _ => None,
                }
                .ok_or_else(|| ValueError::Socket { literal: literal() })?;
            }
            FlowKey::Dscp => f.dscp = Some(int(0, 63, "a DSCP code point is 0 to 63")? as u8),
            FlowKey::Count => {
                f.count =
                    Some(int(1, i64::MAX, "a count is a number of packets, at least 1")? as u64)
            }
            FlowKey::Duration => {
                let ns = match v {
                    Value::Str(s) => parse_duration_ns(s)?,
                    _ => return Err(ValueError::Duration { literal: literal() }),
                };
                if ns == 0 {
                    return Err(ValueError::ZeroDuration);
                }
                f.duration = Some(ns);
            }
            FlowKey::Echo => match v {
                Value::Bool(b) => f.echo = *b,
                _ => return Err(ValueError::Echo { literal: literal() }),
            },
            FlowKey::Port => f.port = Some(int(1, 65535, "a port is 1 to 65535")? as u16),
            FlowKey::WarmupPackets => {
                f.warmup_packets = int(
                    0,
                    i64::MAX,
                    "warmup_packets is a number of packets, 0 or more",
                )? as u64
            }
        }
        Ok(())
    }
}

/// What a sweep key (or a `--set` key, or a point parameter) sets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Target {
    /// That field of every flow.
    AllFlows(FlowKey),
    /// That field of one flow (index into `Control::flows`).
    Flow(usize, FlowKey),
    /// A `{KEY}` placeholder or a `when` parameter.
    Param,
}

/// `send` and `recv` options a flow sets with its own keys: refused in
/// `send_args`/`recv_args`, where they would be given twice.
pub(super) const MANAGED_SEND: &[(&str, &str)] = {
    use wirelab_jobs::send::flag as f;
    &[
        (f::SIZE, "size"),
        (f::SIZE_SHORT, "size"),
        (f::INTERVAL, "interval"),
        (f::INTERVAL_SHORT, "interval"),
        (f::RATE, "rate"),
        (f::RATE_SHORT, "rate"),
        (f::COUNT, "count"),
        (f::COUNT_SHORT, "count"),
        (f::DURATION, "duration"),
        (f::DURATION_SHORT, "duration"),
        (f::DSCP, "dscp"),
        (f::SOCKET, "socket"),
        (f::ECHO, "echo"),
        (f::PORT, "port"),
        (f::PORT_SHORT, "port"),
        (f::WARMUP, "warmup_packets"),
        (f::RECORD, "(the runner records every flow)"),
        (f::RECORD_SHORT, "(the runner records every flow)"),
        (f::JSON, "(the runner asks for JSON)"),
    ]
};
pub(super) const MANAGED_RECV: &[(&str, &str)] = {
    use wirelab_jobs::recv::flag as f;
    &[
        (f::PORT, "port"),
        (f::PORT_SHORT, "port"),
        (f::ECHO, "echo"),
        (f::RECORD, "(the runner records every flow)"),
        (f::RECORD_SHORT, "(the runner records every flow)"),
        (f::JSON, "(the runner asks for JSON)"),
    ]
};

impl Control {
    /// What sweep or `--set` key `key` sets, or why it sets nothing.
    pub(crate) fn target(&self, key: &str) -> Result<Target, KeyError> {
        if let Some(rest) = key.strip_prefix("flow.") {
            let (name, field) = rest.rsplit_once('.').ok_or_else(|| KeyError::FlowForm {
                first_flow: self.first_flow().into(),
            })?;
            let i = self
                .flows
                .iter()
                .position(|f| f.name == name)
                .ok_or_else(|| KeyError::NoFlow {
                    name: name.into(),
                    flows: self.flow_names(),
                })?;
            let k = FlowKey::parse(field).ok_or(KeyError::FlowField)?;
            return Ok(Target::Flow(i, k));
        }
        if let Some(k) = FlowKey::parse(key) {
            if !k.for_all_flows() {
                return Err(KeyError::PerFlow {
                    key: key.into(),
                    first_flow: self.first_flow().into(),
                });
            }
            return Ok(Target::AllFlows(k));
        }
        if key.starts_with("campaign.") {
            return Err(KeyError::Campaign);
        }
        if self.uses_param(key) {
            return Ok(Target::Param);
        }
        Err(KeyError::Unused { key: key.into() })
    }

    fn first_flow(&self) -> &str {
        self.flows.first().map_or("NAME", |f| f.name.as_str())
    }

    fn flow_names(&self) -> String {
        let v: Vec<&str> = self.flows.iter().map(|f| f.name.as_str()).collect();
        if v.is_empty() {
            "none".into()
        } else {
            v.join(", ")
        }
    }

    /// Every string that may hold `{KEY}` placeholders.
    pub(crate) fn placeholder_strings(&self) -> Vec<&str> {
        let mut v: Vec<&str> = Vec::new();
        for f in &self.flows {
            v.extend(f.send_args.iter().chain(&f.recv_args).map(String::as_str));
        }
        if let Some(e) = &self.emulate {
            v.extend(
                [&e.stages, &e.a2b, &e.b2a]
                    .into_iter()
                    .flatten()
                    .map(String::as_str),
            );
            v.extend(e.args.iter().map(String::as_str));
        }
        if let Some(c) = &self.capture {
            v.extend(c.filter.as_deref());
            v.extend(c.args.iter().map(String::as_str));
        }
        v
    }

    fn uses_param(&self, key: &str) -> bool {
        self.placeholder_strings()
            .iter()
            .any(|s| placeholders(s).any(|(p, _)| p == key))
            || self
                .flows
                .iter()
                .map(|f| &f.when)
                .chain(self.stressors.iter().map(|s| &s.when))
                .any(|w| {
                    w.as_deref()
                        .and_then(|w| Expr::parse(w).ok())
                        .is_some_and(|e| e.variables().iter().any(|(v, _)| *v == key))
                })
    }
}

/// The `{KEY}` placeholders of `s` with their byte offsets: a name of
/// letters, digits, `_`, `.` and `-` between braces. Other braces are text.
pub(crate) fn placeholders(s: &str) -> impl Iterator<Item = (&str, usize)> {
    let b = s.as_bytes();
    let mut i = 0;
    std::iter::from_fn(move || {
        while i < b.len() {
            if b[i] == b'{' {
                let start = i + 1;
                let mut j = start;
                while j < b.len() && (b[j].is_ascii_alphanumeric() || b"_.-".contains(&b[j])) {
                    j += 1;
                }
                if j > start && j < b.len() && b[j] == b'}' {
                    i = j + 1;
                    return Some((&s[start..j], start - 1));
                }
            }
            i += 1;
        }
        None
    })
}

/// `s` with every `{KEY}` replaced by `lookup(KEY)`; the first unknown key
/// is the error.
pub(crate) fn substitute(s: &str, lookup: impl Fn(&str) -> Option<String>) -> Result<String, &str> {
    let mut out = String::with_capacity(s.len());
    let mut last = 0;
    for (key, at) in placeholders(s) {
        out.push_str(&s[last..at]);
        out.push_str(&lookup(key).ok_or(key)?);
        last = at + key.len() + 2;
    }
    out.push_str(&s[last..]);
    Ok(out)
}

/// Checks one axis value for what its key sets.
pub(crate) fn check_axis_value(c: &Control, target: Target, v: &Value) -> Result<(), ValueError> {
    match target {
        Target::AllFlows(k) | Target::Flow(_, k) => {
            let mut f = c.flows.first().cloned().expect("a control has a flow");
            k.apply(&mut f, v)
        }
        Target::Param => Ok(()),
    }
}

/// No flow is paced by both an interval and a rate once the axes apply.
/// Returns the offending key and the message.
pub(crate) fn check_pacing(c: &Control, axes: &[Axis]) -> Result<(), (String, String)> {
    let sets = |i: usize, k: FlowKey| -> Option<String> {
        axes.iter().find_map(|a| match c.target(&a.key) {
            Ok(Target::AllFlows(x)) if x == k => Some(a.key.clone()),
            Ok(Target::Flow(j, x)) if x == k && j == i => Some(a.key.clone()),
            _ => None,
        })
    };
    for (i, f) in c.flows.iter().enumerate() {
        let iv = sets(i, FlowKey::Interval).or(f
            .interval
            .as_ref()
            .map(|_| format!("flow.{}.interval", f.name)));
        let rt =
            sets(i, FlowKey::Rate).or(f.rate.as_ref().map(|_| format!("flow.{}.rate", f.name)));
        if let (Some(iv), Some(rt)) = (iv, rt) {
            let key = if axes.iter().any(|a| a.key == rt) {
                rt.clone()
            } else {
                iv.clone()
            };
            return Err((
                key,
                format!(
                    "flow {} would get both an interval ({iv}) and a rate ({rt}): a flow is paced by one of them",
                    f.name
                ),
            ));
        }
    }
    Ok(())
}

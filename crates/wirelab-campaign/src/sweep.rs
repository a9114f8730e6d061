//! The points of a campaign: the sweep's cartesian product, less
//! exclusions, times repetitions, in run order; and a point resolved into
//! the flows, emulator and capture it runs.
//!
//! Contracts:
//! - Combinations enumerate the axes in file order, the last axis varying
//!   fastest. `--only` drops combinations first (counted in
//!   [`Plan::filtered`]); then a combination is excluded, with the reason,
//!   by the first `exclude` expression that holds for it (the reason is the
//!   expression), by a flow that cannot carry its size (`socket raw cannot
//!   fragment: size 9000 > MTU 1500 − 28`, when the sending host's MTU is
//!   known: [`Control::host_mtu`]), or because no flow's `when` holds.
//! - Repetitions are rounds: every point of round 0, then of round 1, ...;
//!   `shuffled` order permutes all of them with ChaCha8 seeded by
//!   `campaign.seed` and a Fisher–Yates shuffle written out here, so the
//!   same seed gives the same order on every version and machine.
//! - A point's id is 16 hex digits of FNV-1a 64 over its sorted parameters
//!   (typed) and repetition: stable across runs, versions and platforms.
//! - At most [`MAX_POINTS`] combinations × repetitions are considered;
//!   more is refused before anything is built.
//! - Values set by `--set` are checked like the file's; `--set` on a key that
//!   is not swept adds a one-value axis, so the value is part of each
//!   point's parameters (and id) and [`resolve`] sees it.

mod search;
mod text;

use std::collections::{BTreeMap, HashSet};

use rand_chacha::rand_core::{RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};
use wirelab_core::gen::{GenSpec, SpecUnit};
use wirelab_core::units::parse_duration_ns;
use wirelab_link::LinkConfig;

use crate::control::{
    check_axis_value, check_pacing, substitute, Axis, Campaign, CaptureSpec, Control, EmulateSpec,
    FlowKey, FlowSpec, KeyError, Order, SocketKind, Target, ValueError, DEFAULT_DURATION_NS,
    IPV4_UDP_HEADERS,
};
use crate::expr::{Expr, ExprError, Value};

pub use search::SearchState;
pub use text::plan_text;

/// Most combinations × repetitions a plan may hold.
pub const MAX_POINTS: u64 = 1_000_000;
/// Schema of [`PlanReport`].
pub const PLAN_SCHEMA: &str = "wirelab.run.plan/1";

/// Why a plan could not be made or a point resolved.
#[derive(Debug, thiserror::Error)]
pub enum PlanError {
    #[error("--set {key}: {message}")]
    Set { key: String, message: String },
    #[error("--only {expr:?}: {error}")]
    Only { expr: String, error: ExprError },
    #[error("exclude {expr:?} at point {params}: {error}")]
    Exclusion {
        expr: String,
        params: String,
        error: ExprError,
    },
    #[error(
        "{combinations} combinations × {repetitions} repetitions is more than {MAX_POINTS} points: \
         narrow the sweep with --only or --set, or split the campaign"
    )]
    TooMany {
        combinations: u128,
        repetitions: u32,
    },
    /// A point that cannot be resolved against the control file.
    #[error("point {params}: {problem}")]
    Point {
        params: String,
        problem: Box<PointError>,
    },
}

/// Why a point cannot be resolved against the control file. Causes are
/// printed, not returned as sources.
#[derive(Debug, thiserror::Error)]
pub enum PointError {
    #[error("{key}: {err}")]
    Key { key: String, err: KeyError },
    #[error("{key}: {err}")]
    Value { key: String, err: ValueError },
    #[error("parameter {key} is missing")]
    Missing { key: String },
    #[error("{{{key}}} in {text:?} is not a parameter of this point")]
    Placeholder { key: String, text: String },
    #[error("flow {flow} when {when:?}: {err}")]
    When {
        flow: String,
        when: String,
        err: ExprError,
    },
    #[error("emulator stages {stages:?}: {err}")]
    Stages {
        stages: String,
        err: wirelab_link::SpecError,
    },
    #[error("two points share id {id}; rename a sweep key")]
    SharedId { id: String },
}

/// One run of the campaign.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Point {
    /// 16 hex digits of a stable hash of `params` and `repetition`.
    pub id: String,
    /// Position in the run order, from 0.
    pub index: usize,
    /// Round, from 0.
    pub repetition: u32,
    pub params: BTreeMap<String, Value>,
}

/// A combination that is not run, and why.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Excluded {
    pub params: BTreeMap<String, Value>,
    pub reason: String,
}

/// The points of a campaign in run order.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    /// The campaign settings after `--set`.
    pub campaign: Campaign,
    /// The axes after `--set`, in file order (`--set` additions last).
    pub axes: Vec<Axis>,
    /// Size of the cartesian product.
    pub combinations: u64,
    /// Combinations `--only` left out.
    pub filtered: u64,
    pub points: Vec<Point>,
    pub excluded: Vec<Excluded>,
}

/// What one point runs: the flows that run in it with the sweep's values
/// in place (and the default duration filled in), the emulator and capture
/// with `{placeholders}` filled.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Resolved {
    pub flows: Vec<FlowSpec>,
    pub emulate: Option<EmulateSpec>,
    pub capture: Option<CaptureSpec>,
}

/// `wirelab run --dry-run --json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlanReport {
    /// [`PLAN_SCHEMA`].
    pub schema: String,
    /// After `--set`.
    pub campaign: Campaign,
    /// The hosts a run would contact, and its flows, by name.
    pub hosts: Vec<String>,
    pub flows: Vec<String>,
    pub axes: Vec<Axis>,
    pub combinations: u64,
    pub filtered: u64,
    pub excluded_count: u64,
    pub point_count: u64,
    pub points: Vec<Point>,
    pub excluded: Vec<Excluded>,
}

impl PlanReport {
    pub fn new(c: &Control, plan: &Plan) -> PlanReport {
        PlanReport {
            schema: PLAN_SCHEMA.to_string(),
            campaign: plan.campaign.clone(),
            hosts: c.hosts.keys().cloned().collect(),
            flows: c.flows.iter().map(|f| f.name.clone()).collect(),
            axes: plan.axes.clone(),
            combinations: plan.combinations,
            filtered: plan.filtered,
            excluded_count: plan.excluded.len() as u64,
            point_count: plan.points.len() as u64,
            points: plan.points.clone(),
            excluded: plan.excluded.clone(),
        }
    }
}

/// FNV-1a, 64 bits.
fn fnv1a(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// The id of a point: 16 hex digits of FNV-1a 64 over `key=TYPE:value`
/// lines of the sorted parameters and a `repetition=N` line.
pub fn point_id(params: &BTreeMap<String, Value>, repetition: u32) -> String {
    let mut s = String::new();
    for (k, v) in params {
        let (tag, val) = match v {
            Value::Int(n) => ('i', n.to_string()),
            Value::Float(x) => ('f', format!("{x:?}")),
            Value::Str(t) => ('s', t.clone()),
            Value::Bool(b) => ('b', b.to_string()),
        };
        s.push_str(&format!("{k}={tag}:{val}\n"));
    }
    s.push_str(&format!("repetition={repetition}\n"));
    format!("{:016x}", fnv1a(s.as_bytes()))
}

/// `a=1 b=x` in key order, for messages.
pub(crate) fn params_text(params: &BTreeMap<String, Value>) -> String {
    if params.is_empty() {
        return "(no parameters)".into();
    }
    params
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// A `--set` value as written on the command line: an integer, true/false,
/// a decimal number, a quoted string, else the text as a string.
pub fn parse_set_value(s: &str) -> Value {
    if let Ok(n) = s.parse::<i64>() {
        return Value::Int(n);
    }
    match s {
        "true" => return Value::Bool(true),
        "false" => return Value::Bool(false),
        _ => {}
    }
    for q in ['"', '\''] {
        if let Some(inner) = s.strip_prefix(q).and_then(|r| r.strip_suffix(q)) {
            if s.len() >= 2 {
                return Value::Str(inner.to_string());
            }
        }
    }
    let numeric = s.bytes().any(|b| b.is_ascii_digit())
        && s.bytes()
            .all(|b| b.is_ascii_digit() || b"+-.eE".contains(&b));
    if numeric {
        if let Ok(x) = s.parse::<f64>() {
            if x.is_finite() {
                return Value::Float(x);
            }
        }
    }
    Value::Str(s.to_string())
}

fn set_keys_help(c: &Control) -> String {
    let mut v = vec![
        "campaign.seed".to_string(),
        "campaign.repetitions".into(),
        "campaign.order".into(),
        "campaign.settle".into(),
        "campaign.pause".into(),
    ];
    v.extend(c.sweep.axes.iter().map(|a| a.key.clone()));
    for k in FlowKey::names(true) {
        if !v.iter().any(|x| x == k) {
            v.push(k.to_string());
        }
    }
    let flows: Vec<&str> = c.flows.iter().map(|f| f.name.as_str()).collect();
    format!(
        "{}, and flow.NAME.KEY with NAME one of {} and KEY one of {}",
        v.join(", "),
        flows.join(", "),
        FlowKey::names(false).join(", ")
    )
}

/// The control file with `--set` applied: a sweep key gets the one value,
/// a campaign setting is replaced, a flow key not swept becomes a
/// one-value axis.
pub fn apply_sets(c: &Control, sets: &[(String, String)]) -> Result<Control, PlanError> {
    let mut c = c.clone();
    for (key, raw) in sets {
        let v = parse_set_value(raw);
        let bad = |message: String| PlanError::Set {
            key: key.clone(),
            message,
        };
        let dur = || parse_duration_ns(raw).map_err(|e| bad(e.to_string()));
        match key.as_str() {
            "campaign.seed" => match v {
                Value::Int(n) if n >= 0 => c.campaign.seed = n as u64,
                _ => return Err(bad(format!("a seed is an integer, 0 or more, not {raw}"))),
            },
            "campaign.repetitions" => match v {
                Value::Int(n) if (1..=1_000_000).contains(&n) => c.campaign.repetitions = n as u32,
                _ => return Err(bad(format!("repetitions is 1 to 1000000, not {raw}"))),
            },
            "campaign.order" => {
                c.campaign.order = Order::parse(raw)
                    .ok_or_else(|| bad(format!("{raw:?}: use sequential or shuffled")))?
            }
            "campaign.settle" => c.campaign.settle_ns = dur()?,
            "campaign.pause" => c.campaign.pause_ns = dur()?,
            k if k.starts_with("campaign.") => {
                return Err(bad(
                    "--set takes campaign.seed, campaign.repetitions, campaign.order, \
                     campaign.settle and campaign.pause"
                        .into(),
                ))
            }
            _ => {
                let target = c
                    .target(key)
                    .map_err(|m| bad(format!("{m}; keys --set takes: {}", set_keys_help(&c))))?;
                check_axis_value(&c, target, &v).map_err(|e| bad(e.to_string()))?;
                match c.sweep.axes.iter_mut().find(|a| &a.key == key) {
                    Some(a) => a.values = vec![v],
                    None => c.sweep.axes.push(Axis {
                        key: key.clone(),
                        values: vec![v],
                    }),
                }
            }
        }
    }
    check_pacing(&c, &c.sweep.axes).map_err(|(key, message)| PlanError::Set { key, message })?;
    Ok(c)
}

/// How each point parameter applies, precomputed once per plan.
struct Targets(Vec<(String, Target)>);

impl Targets {
    fn of<'a>(c: &Control, keys: impl Iterator<Item = &'a String>) -> Result<Targets, PointError> {
        keys.map(|k| {
            c.target(k)
                .map(|t| (k.clone(), t))
                .map_err(|err| PointError::Key {
                    key: k.clone(),
                    err,
                })
        })
        .collect::<Result<_, _>>()
        .map(Targets)
    }
}

/// Resolves point `p` of control file `c` (the file as loaded: `--set`
/// values are among the point's parameters).
pub fn resolve(c: &Control, p: &Point) -> Result<Resolved, PlanError> {
    let err = |problem| PlanError::Point {
        params: params_text(&p.params),
        problem: Box::new(problem),
    };
    let targets = Targets::of(c, p.params.keys()).map_err(err)?;
    resolve_with(c, &targets, &p.params).map_err(err)
}

fn resolve_with(
    c: &Control,
    targets: &Targets,
    params: &BTreeMap<String, Value>,
) -> Result<Resolved, PointError> {
    let mut flows = c.flows.clone();
    // Every-flow keys first, so flow.NAME.KEY wins.
    for pass in 0..2 {
        for (key, t) in &targets.0 {
            let v = params
                .get(key)
                .ok_or_else(|| PointError::Missing { key: key.clone() })?;
            let r = match (*t, pass) {
                (Target::AllFlows(k), 0) => flows.iter_mut().try_for_each(|f| k.apply(f, v)),
                (Target::Flow(i, k), 1) => k.apply(&mut flows[i], v),
                _ => Ok(()),
            };
            r.map_err(|err| PointError::Value {
                key: key.clone(),
                err,
            })?;
        }
    }
    let lookup = |k: &str| params.get(k).map(Value::to_string);
    let fill = |s: &str| {
        substitute(s, lookup).map_err(|k| PointError::Placeholder {
            key: k.into(),
            text: s.into(),
        })
    };
    let fill_all = |v: &[String]| v.iter().map(|s| fill(s)).collect::<Result<Vec<_>, _>>();
    let mut active = Vec::with_capacity(flows.len());
    for mut f in flows {
        if let Some(w) = &f.when {
            let when = |err| PointError::When {
                flow: f.name.clone(),
                when: w.clone(),
                err,
            };
            if !Expr::parse(w).and_then(|e| e.eval(params)).map_err(when)? {
                continue;
            }
        }
        if f.duration.is_none() && f.count.is_none() {
            f.duration = Some(DEFAULT_DURATION_NS);
        }
        f.send_args = fill_all(&f.send_args)?;
        f.recv_args = fill_all(&f.recv_args)?;
        active.push(f);
    }
    let emulate = match &c.emulate {
        None => None,
        Some(e) => {
            let mut e = e.clone();
            for s in [&mut e.stages, &mut e.a2b, &mut e.b2a]
                .into_iter()
                .flatten()
            {
                *s = fill(s)?;
                LinkConfig::parse(s).map_err(|err| PointError::Stages {
                    stages: s.clone(),
                    err,
                })?;
            }
            e.args = fill_all(&e.args)?;
            Some(e)
        }
    };
    let capture = match &c.capture {
        None => None,
        Some(cap) => {
            let mut cap = cap.clone();
            if let Some(f) = &mut cap.filter {
                *f = fill(f)?;
            }
            cap.args = fill_all(&cap.args)?;
            Some(cap)
        }
    };
    Ok(Resolved {
        flows: active,
        emulate,
        capture,
    })
}

/// Why a resolved combination cannot run, if it cannot.
fn auto_exclusion(c: &Control, r: &Resolved) -> Option<String> {
    if r.flows.is_empty() {
        return Some("no flow runs: every flow's `when` is false".into());
    }
    for f in &r.flows {
        if f.socket == SocketKind::Udp {
            continue;
        }
        let (Some(mtu), Some(size)) = (c.host_mtu(&f.from), f.size.as_deref()) else {
            continue;
        };
        let Some(bytes) = GenSpec::parse(size, SpecUnit::Bytes)
            .ok()
            .and_then(|g| g.as_const())
        else {
            continue;
        };
        if bytes > f64::from(mtu.saturating_sub(IPV4_UDP_HEADERS)) {
            let who = if c.flows.len() > 1 {
                format!("flow {}: ", f.name)
            } else {
                String::new()
            };
            return Some(format!(
                "{who}socket {} cannot fragment: size {bytes} > MTU {mtu} − {IPV4_UDP_HEADERS}",
                f.socket
            ));
        }
    }
    None
}

/// Puts `v` in a random order determined by `seed` alone: Fisher–Yates
/// over ChaCha8 (seed's 8 little-endian bytes, then zeros), each index drawn
/// as the high 64 bits of a 64×64 product.
fn shuffle<T>(v: &mut [T], seed: u64) {
    let mut key = [0u8; 32];
    key[..8].copy_from_slice(&seed.to_le_bytes());
    let mut rng = ChaCha8Rng::from_seed(key);
    for i in (1..v.len()).rev() {
        let j = ((u128::from(rng.next_u64()) * (i as u128 + 1)) >> 64) as usize;
        v.swap(i, j);
    }
}

/// The points of `c` with `--set` values `sets` applied, narrowed by
/// `--only` expression `only`, in run order.
pub fn plan(
    c: &Control,
    only: Option<&Expr>,
    sets: &[(String, String)],
) -> Result<Plan, PlanError> {
    let c = apply_sets(c, sets)?;
    let axes = c.sweep.axes.clone();
    if let Some(e) = only {
        check_only_keys(e, &axes)?;
    }
    let reps = c.campaign.repetitions;
    let combinations = count_combinations(&axes, reps)?;
    let exclusions = c
        .sweep
        .exclude
        .iter()
        .map(|s| {
            Expr::parse(s).map_err(|error| PlanError::Exclusion {
                expr: s.clone(),
                params: String::new(),
                error,
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    let targets =
        Targets::of(&c, axes.iter().map(|a| &a.key)).map_err(|problem| PlanError::Point {
            params: String::new(),
            problem: Box::new(problem),
        })?;
    let mut filtered = 0u64;
    let mut kept: Vec<BTreeMap<String, Value>> = Vec::new();
    let mut excluded = Vec::new();
    let mut digits = vec![0usize; axes.len()];
    for n in 0..combinations {
        if n > 0 {
            next_combination(&mut digits, &axes);
        }
        let params: BTreeMap<String, Value> = axes
            .iter()
            .zip(&digits)
            .map(|(a, &d)| (a.key.clone(), a.values[d].clone()))
            .collect();
        if let Some(e) = only {
            let hit = e.eval(&params).map_err(|error| PlanError::Only {
                expr: e.to_string(),
                error,
            })?;
            if !hit {
                filtered += 1;
                continue;
            }
        }
        match exclusion_reason(&c, &exclusions, &targets, &params)? {
            Some(reason) => excluded.push(Excluded { params, reason }),
            None => kept.push(params),
        }
    }
    let points = order_points(&kept, reps, c.campaign.order, c.campaign.seed)?;
    Ok(Plan {
        campaign: c.campaign,
        axes,
        combinations,
        filtered,
        points,
        excluded,
    })
}

/// `--only` names sweep keys only.
fn check_only_keys(e: &Expr, axes: &[Axis]) -> Result<(), PlanError> {
    let keys: Vec<&str> = axes.iter().map(|a| a.key.as_str()).collect();
    let Some((v, pos)) = e.variables().into_iter().find(|(v, _)| !keys.contains(v)) else {
        return Ok(());
    };
    Err(PlanError::Only {
        expr: e.to_string(),
        error: ExprError {
            pos,
            message: format!(
                "`{v}` is not a sweep key; the sweep's keys are: {}",
                if keys.is_empty() {
                    "none".into()
                } else {
                    keys.join(", ")
                }
            ),
        },
    })
}

/// The size of the axes' cartesian product, refused when it times `reps`
/// is above [`MAX_POINTS`] (checked before any combination is built).
fn count_combinations(axes: &[Axis], reps: u32) -> Result<u64, PlanError> {
    let combinations = axes
        .iter()
        .try_fold(1u128, |n, a| n.checked_mul(a.values.len() as u128))
        .unwrap_or(u128::MAX);
    if combinations.saturating_mul(u128::from(reps)) > u128::from(MAX_POINTS) {
        return Err(PlanError::TooMany {
            combinations,
            repetitions: reps,
        });
    }
    Ok(combinations as u64)
}

/// Advances `digits` (one value index per axis) like an odometer: the last
/// axis turns fastest.
fn next_combination(digits: &mut [usize], axes: &[Axis]) {
    for (d, a) in digits.iter_mut().zip(axes).rev() {
        *d += 1;
        if *d < a.values.len() {
            break;
        }
        *d = 0;
    }
}

/// Why the combination `params` is not run: the first `exclude` expression
/// that holds for it, else what makes its resolved point unrunnable.
fn exclusion_reason(
    c: &Control,
    exclusions: &[Expr],
    targets: &Targets,
    params: &BTreeMap<String, Value>,
) -> Result<Option<String>, PlanError> {
    for e in exclusions {
        let hit = e.eval(params).map_err(|error| PlanError::Exclusion {
            expr: e.to_string(),
            params: params_text(params),
            error,
        })?;
        if hit {
            return Ok(Some(e.to_string()));
        }
    }
    let r = resolve_with(c, targets, params).map_err(|problem| PlanError::Point {
        params: params_text(params),
        problem: Box::new(problem),
    })?;
    Ok(auto_exclusion(c, &r))
}

/// The kept combinations as points: every repetition of each in turn, or
/// shuffled by `seed`; then numbered in run order. Two points with one id
/// would share a results directory, so that is an error.
fn order_points(
    kept: &[BTreeMap<String, Value>],
    reps: u32,
    order: Order,
    seed: u64,
) -> Result<Vec<Point>, PlanError> {
    let mut points = Vec::with_capacity(kept.len() * reps as usize);
    for repetition in 0..reps {
        for params in kept {
            points.push(Point {
                id: point_id(params, repetition),
                index: 0,
                repetition,
                params: params.clone(),
            });
        }
    }
    let mut seen = HashSet::with_capacity(points.len());
    for p in &points {
        if !seen.insert(p.id.as_str()) {
            return Err(PlanError::Point {
                params: params_text(&p.params),
                problem: Box::new(PointError::SharedId { id: p.id.clone() }),
            });
        }
    }
    drop(seen);
    if order == Order::Shuffled {
        shuffle(&mut points, seed);
    }
    for (i, p) in points.iter_mut().enumerate() {
        p.index = i;
    }
    Ok(points)
}

#[cfg(test)]
mod tests;

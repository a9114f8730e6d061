//! The campaign page: a results directory of `wirelab run` (docs/run.md)
//! read from its `summary.json` (`wirelab.run.summary/1`), the hosts'
//! `samples/*.jsonl` and `env/`: a sortable table with a row per point and
//! flow, per swept parameter loss / throughput / one-way delay against it
//! (one line per combination of the other parameters and the flow, so
//! socket types and directions are apart), CPU over the campaign, abort
//! reasons, loss attribution, and the environment with its diff.
//!
//! Memory: the summary's rows and the samples (about one per host and
//! second of the campaign), bounded by the campaign asked for.

use crate::error::ReportError;
use crate::html::{Cell, Page};
use crate::plot;
use serde::de::{DeserializeOwned, IgnoredAny};
use std::collections::BTreeMap;
use std::io::BufRead;
use std::path::{Path, PathBuf};
use wirelab_analysis::schema::host::{RunEnv, Sample, Snapshot};
use wirelab_analysis::schema::run::{ParamValue, PointStatus, Summary, SummaryRow, SUMMARY_SCHEMA};
use wirelab_analysis::text::{fmt_bps, fmt_ns, fmt_pps};

/// At one x position: x, the values of its points (repetitions), the
/// largest uncertainty among them.
type XValues = (f64, Vec<f64>, f64);

/// Whether `dir` looks like a results directory of `wirelab run`.
pub fn is_results_dir(dir: &Path) -> bool {
    dir.join("summary.json").is_file() && dir.join("points").is_dir()
}

/// A JSON document of `wirelab run`, read as the type it was written as.
fn read_json<T: DeserializeOwned>(path: &Path) -> Result<T, ReportError> {
    let text = std::fs::read_to_string(path).map_err(|source| ReportError::Open {
        path: path.to_path_buf(),
        cause: source,
    })?;
    serde_json::from_str(&text).map_err(|e| ReportError::Input {
        path: path.to_path_buf(),
        message: format!("not what wirelab run writes there: {e}"),
    })
}

/// A parameter value as a number with its unit suffix (`"1%"` → 1, `%`;
/// `"70us"` → 70, `us`), when it is one.
fn numeric(v: &str) -> Option<(f64, String)> {
    let end = v
        .char_indices()
        .find(|(_, c)| !(c.is_ascii_digit() || *c == '.' || *c == '-' || *c == '+' || *c == 'e'))
        .map_or(v.len(), |(i, _)| i);
    let x: f64 = v[..end].parse().ok()?;
    x.is_finite().then(|| (x, v[end..].to_string()))
}

/// Figure titles for a swept parameter.
pub fn param_figures(param: &str) -> [String; 3] {
    [
        format!("Loss against {param}"),
        format!("Throughput against {param}"),
        format!("One-way delay against {param}"),
    ]
}

/// The CPU figure's title.
pub const CPU_FIGURE: &str = "CPU over the campaign";
/// The interface counters figure's title.
pub const IFACE_FIGURE: &str = "Interface packet rates over the campaign";

/// The summary's rows and what was swept in them.
struct Sweep<'a> {
    rows: &'a [SummaryRow],
    /// Every parameter and its values, in order of first appearance.
    values: BTreeMap<String, Vec<String>>,
    /// The parameters whose value varies.
    swept: Vec<String>,
    /// The flows' names, sorted.
    flows: Vec<String>,
}

impl<'a> Sweep<'a> {
    fn of(rows: &'a [SummaryRow]) -> Sweep<'a> {
        let mut values: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for r in rows {
            for (k, v) in params_of(r) {
                let e = values.entry(k).or_default();
                if !e.contains(&v) {
                    e.push(v);
                }
            }
        }
        let swept = values
            .iter()
            .filter(|(_, v)| v.len() > 1)
            .map(|(k, _)| k.clone())
            .collect();
        let mut flows: Vec<String> = rows.iter().map(|r| r.flow.clone()).collect();
        flows.sort();
        flows.dedup();
        Sweep {
            rows,
            values,
            swept,
            flows,
        }
    }
}

/// A row's parameters as the page shows them.
fn params_of(r: &SummaryRow) -> BTreeMap<String, String> {
    r.params
        .iter()
        .map(|(k, v)| (k.clone(), param_text(v)))
        .collect()
}

/// A parameter as JSON writes it, strings without quotes.
fn param_text(v: &ParamValue) -> String {
    match v {
        ParamValue::Str(s) => s.clone(),
        v => serde_json::to_string(v).unwrap_or_default(),
    }
}

/// An optional text, `-` when absent.
fn or_dash(v: &Option<String>) -> String {
    v.clone().unwrap_or_else(|| "-".into())
}

/// `summary.json`, read through the type the runner wrote it with.
pub(crate) fn read_summary(dir: &Path) -> Result<Summary, ReportError> {
    let path = dir.join("summary.json");
    let bad = |m: String| ReportError::Input {
        path: path.clone(),
        message: m,
    };
    let text = std::fs::read_to_string(&path).map_err(|source| ReportError::Open {
        path: path.clone(),
        cause: source,
    })?;
    let summary: Summary = serde_json::from_str(&text)
        .map_err(|e| bad(format!("not a {SUMMARY_SCHEMA} document: {e}")))?;
    if summary.schema != SUMMARY_SCHEMA {
        return Err(bad(format!("not a {SUMMARY_SCHEMA} document")));
    }
    Ok(summary)
}

/// Renders the page of the results directory `dir`.
pub fn render(dir: &Path, title: &str) -> Result<String, ReportError> {
    let summary = read_summary(dir)?;
    let sweep = Sweep::of(&summary.rows);
    let mut p = Page::new(title);
    p.para(&format!(
        "wirelab {} — campaign report of {}: {} points ({} done, {} aborted, {} failed, {} \
         interrupted), {} rows (one per point and flow); swept: {}.",
        env!("CARGO_PKG_VERSION"),
        dir.display(),
        summary.points,
        summary.done,
        summary.aborted,
        summary.failed,
        summary.interrupted,
        sweep.rows.len(),
        if sweep.swept.is_empty() {
            "nothing".to_string()
        } else {
            sweep.swept.join(", ")
        }
    ));
    p.h2("Points");
    points_table(&mut p, &sweep);
    p.h2("Aborts and failures");
    stopped_table(&mut p, &sweep);
    for param in &sweep.swept {
        p.h2(&format!("Against {param}"));
        param_figures_of(&mut p, &sweep, param)?;
    }
    p.h2("CPU and counters");
    host_figures(&mut p, dir)?;
    p.h2("Environment");
    environment(dir, &mut p)?;
    Ok(p.finish())
}

/// A summary number as the page shows and sorts it (as f64, the way
/// JSON numbers read).
trait Num: Copy {
    fn f64(self) -> f64;
}

impl Num for u64 {
    fn f64(self) -> f64 {
        self as f64
    }
}
impl Num for i64 {
    fn f64(self) -> f64 {
        self as f64
    }
}
impl Num for f64 {
    fn f64(self) -> f64 {
        self
    }
}

/// A count cell, `-` when unknown.
fn cnt(v: Option<impl Num>) -> Cell {
    match v.map(Num::f64) {
        Some(v) => Cell::num(format!("{v}"), v),
        None => Cell::text("-"),
    }
}

/// A duration cell (ns), `-` when unknown.
fn ns(v: Option<impl Num>) -> Cell {
    match v.map(Num::f64) {
        Some(v) => Cell::num(fmt_ns(v), v),
        None => Cell::text("-"),
    }
}

/// The sortable table: a row per point and flow.
fn points_table(p: &mut Page, sweep: &Sweep<'_>) {
    let names: Vec<&String> = sweep.values.keys().collect();
    let mut heads: Vec<&str> = vec!["point"];
    heads.extend(names.iter().map(|n| n.as_str()));
    heads.extend([
        "flow",
        "status",
        "sent",
        "received",
        "lost",
        "loss",
        "throughput",
        "rate",
        "OWD mean",
        "OWD p99",
        "OWD max",
        "± U",
        "IPDV p99",
        "jitter",
        "lost sender",
        "lost path",
        "lost rx NIC",
        "lost rx stack",
        "lost unexplained",
        "timer misses",
        "reason",
    ]);
    let table: Vec<Vec<Cell>> = sweep
        .rows
        .iter()
        .map(|r| {
            let params = params_of(r);
            let mut c = vec![Cell::text(r.point.clone())];
            for n in &names {
                let v = params.get(*n).cloned().unwrap_or_else(|| "-".into());
                c.push(match numeric(&v) {
                    Some((x, _)) => Cell::num(v, x),
                    None => Cell::text(v),
                });
            }
            c.push(Cell::text(r.flow.clone()));
            c.push(Cell::text(r.status.as_str()));
            c.extend([cnt(r.sent), cnt(r.received), cnt(r.lost)]);
            c.push(match r.loss_ratio {
                Some(v) => Cell::num(format!("{:.4} %", v * 100.0), v),
                None => Cell::text("-"),
            });
            c.push(match r.throughput_bps {
                Some(v) => Cell::num(fmt_bps(v), v),
                None => Cell::text("-"),
            });
            c.push(match r.rate_pps {
                Some(v) => Cell::num(fmt_pps(v), v),
                None => Cell::text("-"),
            });
            c.extend([
                ns(r.owd_mean_ns),
                ns(r.owd_p99_ns),
                ns(r.owd_max_ns),
                ns(r.owd_uncertainty_ns),
                ns(r.ipdv_p99_abs_ns),
                ns(r.jitter_ns),
            ]);
            c.extend([
                cnt(r.lost_sender),
                cnt(r.lost_path),
                cnt(r.lost_rx_nic),
                cnt(r.lost_rx_stack),
                cnt(r.lost_unexplained),
                cnt(r.timer_misses),
            ]);
            c.push(Cell::text(or_dash(&r.reason)));
            c
        })
        .collect();
    p.table(&heads, &table, true);
}

/// Aborted or failed points and why.
fn stopped_table(p: &mut Page, sweep: &Sweep<'_>) {
    let stopped: Vec<Vec<Cell>> = sweep
        .rows
        .iter()
        .filter(|r| r.status != PointStatus::Done)
        .map(|r| {
            let params: Vec<String> = params_of(r)
                .iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect();
            vec![
                Cell::text(r.point.clone()),
                Cell::text(params.join(" ")),
                Cell::text(r.status.as_str()),
                Cell::text(or_dash(&r.reason)),
                Cell::text(or_dash(&r.error)),
            ]
        })
        .collect();
    if stopped.is_empty() {
        p.para("Every point ran to its end.");
    } else {
        p.table(
            &["point", "parameters", "status", "reason", "error"],
            &stopped,
            true,
        );
    }
}

/// The metrics a swept parameter is plotted against, by figure name.
const PARAM_METRICS: [&str; 5] = ["loss", "throughput", "OWD mean", "OWD p99", "OWD max"];

/// A row's value of one of [`PARAM_METRICS`].
fn metric(r: &SummaryRow, m: &str) -> Option<f64> {
    match m {
        "loss" => r.loss_ratio,
        "throughput" => r.throughput_bps,
        "OWD mean" => r.owd_mean_ns,
        "OWD p99" => r.owd_p99_ns.map(|v| v as f64),
        "OWD max" => r.owd_max_ns.map(|v| v as f64),
        _ => None,
    }
}

/// (series, metric) -> x -> values (repetitions averaged later).
type ByParam<'m> = BTreeMap<(String, &'m str), BTreeMap<i64, XValues>>;

/// Each row's metrics at its value of `param`, one series per combination
/// of the other swept parameters and the flow. `x_of` places a value.
fn collect_by_param(
    sweep: &Sweep<'_>,
    param: &str,
    x_of: &dyn Fn(&str) -> Option<f64>,
) -> ByParam<'static> {
    let key_of = |r: &SummaryRow| -> String {
        let ps = params_of(r);
        let mut k: Vec<String> = sweep
            .swept
            .iter()
            .filter(|s| *s != param)
            .map(|s| format!("{s}={}", ps.get(s).map_or("-", String::as_str)))
            .collect();
        if sweep.flows.len() > 1 {
            k.push(r.flow.clone());
        }
        if k.is_empty() {
            "all".into()
        } else {
            k.join(" ")
        }
    };
    let mut acc: ByParam<'static> = BTreeMap::new();
    for r in sweep.rows {
        let Some(x) = params_of(r).get(param).and_then(|v| x_of(v)) else {
            continue;
        };
        let xk = (x * 1e6).round() as i64;
        let u = r.owd_uncertainty_ns.map_or(0.0, |v| v as f64);
        for m in PARAM_METRICS {
            if let Some(v) = metric(r, m) {
                let e = acc.entry((key_of(r), m)).or_default().entry(xk).or_insert((
                    x,
                    Vec::new(),
                    0.0,
                ));
                e.1.push(v);
                if m.starts_with("OWD") {
                    e.2 = e.2.max(u);
                }
            }
        }
    }
    acc
}

/// The series of `metrics` (repetitions averaged), scaled.
fn series_of(acc: &ByParam<'_>, metrics: &[&str], scale: f64) -> Vec<plot::ErrSeries> {
    acc.iter()
        .filter(|((_, m), _)| metrics.contains(m))
        .map(|((s, m), pts)| {
            let name = if metrics.len() > 1 {
                format!("{s} {m}")
            } else {
                s.clone()
            };
            let pts = pts
                .values()
                .map(|(x, vs, u)| {
                    (
                        *x,
                        vs.iter().sum::<f64>() / vs.len() as f64 * scale,
                        u * scale,
                    )
                })
                .collect();
            (name, pts)
        })
        .collect()
}

/// Loss, throughput and one-way delay against the swept `param`.
fn param_figures_of(p: &mut Page, sweep: &Sweep<'_>, param: &str) -> Result<(), ReportError> {
    let vals = &sweep.values[param];
    let nums: Option<Vec<(f64, String)>> = vals.iter().map(|v| numeric(v)).collect();
    let (unit, cats) = match &nums {
        Some(n) if n.iter().all(|(_, u)| *u == n[0].1) => (n[0].1.clone(), None),
        _ => (String::new(), Some(vals.clone())),
    };
    let x_of = |v: &str| -> Option<f64> {
        match &cats {
            Some(c) => c.iter().position(|x| x == v).map(|i| i as f64),
            None => numeric(v).map(|n| n.0),
        }
    };
    let acc = collect_by_param(sweep, param, &x_of);
    let x_desc = if unit.is_empty() {
        param.to_string()
    } else {
        format!("{param} ({unit})")
    };
    let titles = param_figures(param);
    let svg = plot::by_param(
        &series_of(&acc, &["loss"], 100.0),
        &x_desc,
        "loss (%)",
        cats.as_deref(),
    )?;
    p.figure(&titles[0], &svg, "Loss ratio per point (repetitions averaged), one line per combination of the other swept parameters and the flow.");
    let svg = plot::by_param(
        &series_of(&acc, &["throughput"], 1e-6),
        &x_desc,
        "throughput (Mbit/s)",
        cats.as_deref(),
    )?;
    p.figure(&titles[1], &svg, "Received throughput per point.");
    let owd = series_of(&acc, &["OWD mean", "OWD p99", "OWD max"], 1e-3);
    let svg = plot::by_param(&owd, &x_desc, "one-way delay (µs)", cats.as_deref())?;
    p.figure(
        &titles[2],
        &svg,
        "Mean, p99 and max one-way delay per point, corrected by the measured clock offset; \
         bars: ± the offset's uncertainty U.",
    );
    Ok(())
}

/// CPU and interface counters over the campaign from the hosts' samples.
fn host_figures(p: &mut Page, dir: &Path) -> Result<(), ReportError> {
    let cpu = read_samples(&dir.join("points"), |host, s| {
        vec![(host.to_string(), s.busy_cpus)]
    })?;
    let svg = plot::lines(
        &since_first(&cpu),
        "time since the first sample (s)",
        "busy CPUs",
        &[],
    )?;
    p.figure(
        CPU_FIGURE,
        &svg,
        "Busy CPUs (user + system + softirq, summed over CPUs) of each host, sampled about once a \
         second while the points ran; gaps between points are not drawn apart.",
    );
    let mut ifaces = read_samples(&dir.join("points"), |host, s| {
        s.ifaces
            .iter()
            .flat_map(|(name, r)| {
                [("rx", r.rx_pps), ("tx", r.tx_pps)].map(|(d, v)| (format!("{host} {name} {d}"), v))
            })
            .collect()
    })?;
    // A direction that never carried a packet is left out of the legend.
    ifaces.retain(|_, v| v.iter().any(|s| s.1 > 0.0));
    if !ifaces.is_empty() {
        let svg = plot::lines(
            &since_first(&ifaces),
            "time since the first sample (s)",
            "packets/s",
            &[],
        )?;
        p.figure(
            IFACE_FIGURE,
            &svg,
            "Packets per second received (rx) and sent (tx) on each host's interfaces, from \
             the interface counters sampled with the CPU.",
        );
    }
    Ok(())
}

/// Series of the hosts' samples from every point, in time order: `pick`
/// turns one sample of a host into `(series, value)` pairs.
fn read_samples(
    points: &Path,
    pick: impl Fn(&str, &Sample) -> Vec<(String, f64)>,
) -> Result<BTreeMap<String, Vec<(u64, f64)>>, ReportError> {
    let mut out: BTreeMap<String, Vec<(u64, f64)>> = BTreeMap::new();
    let mut files: Vec<PathBuf> = Vec::new();
    for e in std::fs::read_dir(points).map_err(|source| ReportError::Open {
        path: points.to_path_buf(),
        cause: source,
    })? {
        let Ok(e) = e else { continue };
        if let Ok(rd) = std::fs::read_dir(e.path().join("samples")) {
            files.extend(rd.flatten().map(|f| f.path()));
        }
    }
    for f in files {
        let Some(host) = f.file_stem().map(|s| s.to_string_lossy().into_owned()) else {
            continue;
        };
        let Ok(file) = std::fs::File::open(&f) else {
            continue;
        };
        for line in std::io::BufReader::new(file).lines() {
            let Ok(line) = line else { break };
            // A line cut by a crash is skipped.
            let Ok(s) = serde_json::from_str::<Sample>(&line) else {
                continue;
            };
            for (series, v) in pick(&host, &s) {
                out.entry(series).or_default().push((s.unix_ns, v));
            }
        }
    }
    for v in out.values_mut() {
        v.sort_by_key(|s| s.0);
    }
    Ok(out)
}

/// Series with times as seconds since the first sample of any.
fn since_first(series: &BTreeMap<String, Vec<(u64, f64)>>) -> Vec<(String, Vec<(f64, f64)>)> {
    let t0 = series
        .values()
        .flat_map(|v| v.iter().map(|s| s.0))
        .min()
        .unwrap_or(0);
    series
        .iter()
        .map(|(name, v)| {
            let pts = v
                .iter()
                .map(|(t, b)| (t.saturating_sub(t0) as f64 / 1e9, *b));
            (name.clone(), pts.collect())
        })
        .collect()
}

fn environment(dir: &Path, p: &mut Page) -> Result<(), ReportError> {
    let env = dir.join("env");
    let Ok(rd) = std::fs::read_dir(&env) else {
        p.para("No env/ directory in the results.");
        return Ok(());
    };
    let mut hosts: Vec<PathBuf> = rd
        .flatten()
        .map(|e| e.path())
        .filter(|f| {
            f.extension().is_some_and(|x| x == "json") && f.file_stem().is_some_and(|s| s != "diff")
        })
        .collect();
    hosts.sort();
    p.begin_row();
    for h in &hosts {
        let snap: Snapshot = read_json(h)?;
        p.begin_block(&format!("host {}", snap.host));
        let kv = &snap.values;
        p.details(
            &format!("{} settings", kv.len()),
            &kv.iter()
                .map(|(k, v)| format!("{k} = {v}"))
                .collect::<Vec<_>>()
                .join("\n"),
        );
        p.end_block();
    }
    p.end_row();
    let diff = env.join("diff.json");
    if diff.is_file() {
        let env: RunEnv<IgnoredAny> = read_json(&diff)?;
        let mut rows = Vec::new();
        for pair in &env.pairs {
            for d in &pair.differences {
                rows.push(vec![
                    Cell::text(format!("{} / {}", pair.a, pair.b)),
                    Cell::text(d.key.clone()),
                    Cell::text(or_dash(&d.a)),
                    Cell::text(or_dash(&d.b)),
                ]);
            }
        }
        p.para(&format!(
            "Differences between hosts (env/diff.json): {}",
            rows.len()
        ));
        p.table(&["hosts", "key", "first", "second"], &rows, true);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parameter_values_split_into_number_and_unit() {
        assert_eq!(numeric("1%"), Some((1.0, "%".into())));
        assert_eq!(numeric("70us"), Some((70.0, "us".into())));
        assert_eq!(numeric("0.5"), Some((0.5, String::new())));
        assert_eq!(numeric("udp"), None);
        assert_eq!(numeric(""), None);
    }

    /// A line of `samples/<host>.jsonl`: eth1's receive rate `rx`.
    fn sample_line(unix_ns: u64, busy: f64, rx: f64) -> String {
        format!(
            "{{\"unix_ns\":{unix_ns},\"interval_ns\":1000000000,\"cpus\":[],\"busy_cpus\":{busy},\
             \"softirq_cpus\":0.0,\"mem_used_kb\":null,\"ifaces\":{{\"eth1\":{{\"rx_pps\":{rx},\
             \"tx_pps\":0.0,\"rx_bps\":0.0,\"tx_bps\":0.0}}}}}}\n"
        )
    }

    fn bundle(dir: &Path, summary: &str) {
        std::fs::create_dir_all(dir.join("points/p1/samples")).unwrap();
        std::fs::create_dir_all(dir.join("env")).unwrap();
        std::fs::write(dir.join("summary.json"), summary).unwrap();
        std::fs::write(
            dir.join("points/p1/samples/rx.jsonl"),
            sample_line(1_000_000_000, 0.5, 100.0)
                + "not json\n"
                + &sample_line(2_000_000_000, 1.5, 250.0),
        )
        .unwrap();
        std::fs::write(
            dir.join("env/rx.json"),
            r#"{"schema":"wirelab.env/1","host":"rx","taken_unix_ns":1,"values":{"kernel":"6.1"}}"#,
        )
        .unwrap();
        std::fs::write(
            dir.join("env/diff.json"),
            r#"{"schema":"wirelab.run.env/1","pairs":[{"schema":"wirelab.env.diff/1","a":"rx","b":"tx","differences":[{"key":"mtu","a":"1500","b":"9000"}]}],"warnings":[],"applied":[]}"#,
        )
        .unwrap();
    }

    #[test]
    fn interface_rates_are_series_per_host_interface_and_direction() {
        let dir = std::env::temp_dir().join(format!("wl-report-ifaces-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("points/p1/samples")).unwrap();
        std::fs::create_dir_all(dir.join("points/p2/samples")).unwrap();
        let line = |t: u64, rx: f64| sample_line(t, 0.0, rx);
        std::fs::write(dir.join("points/p2/samples/rx.jsonl"), line(3, 30.0)).unwrap();
        std::fs::write(
            dir.join("points/p1/samples/rx.jsonl"),
            line(2, 20.0) + "cut\n" + &line(1, 10.0),
        )
        .unwrap();
        let got = read_samples(&dir.join("points"), |h, s| {
            let r = &s.ifaces["eth1"];
            vec![
                (format!("{h} e1 rx"), r.rx_pps),
                (format!("{h} e1 tx"), r.tx_pps),
            ]
        })
        .unwrap();
        // Points merged in time order, the cut line skipped.
        assert_eq!(got["rx e1 rx"], vec![(1, 10.0), (2, 20.0), (3, 30.0)]);
        assert_eq!(got["rx e1 tx"].len(), 3);
        let rel = since_first(&got);
        assert_eq!(rel[0].1[2], (2e-9, 30.0));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_sweep_gives_a_row_per_point_and_three_figures_per_swept_parameter() {
        let dir = std::env::temp_dir().join(format!("wl-report-camp-{}", std::process::id()));
        let row = |p: &str, loss: &str, sock: &str, lost: u64, status: &str| {
            format!(
                r#"{{"point":"{p}","params":{{"loss":"{loss}","socket":"{sock}","size":"80"}},"status":"{status}","reason":{},"flow":"probe","sent":200,"received":{},"lost":{lost},"loss_ratio":{},"throughput_bps":1e6,"owd_mean_ns":1000,"owd_p99_ns":2000,"owd_max_ns":3000,"owd_uncertainty_ns":50,"lost_path":{lost}}}"#,
                if status == "done" {
                    "null".to_string()
                } else {
                    "\"loss above 5%\"".into()
                },
                200 - lost,
                lost as f64 / 200.0
            )
        };
        let rows = [
            row("a1", "0%", "udp", 0, "done"),
            row("a2", "1%", "udp", 2, "done"),
            row("a3", "0%", "raw", 0, "done"),
            row("a4", "1%", "raw", 30, "aborted"),
        ];
        bundle(
            &dir,
            &format!(
                r#"{{"schema":"wirelab.run.summary/1","points":4,"done":3,"aborted":1,"rows":[{}]}}"#,
                rows.join(",")
            ),
        );
        assert!(is_results_dir(&dir));
        let html = render(&dir, "camp").unwrap();
        // Two swept parameters (size is constant), three figures each, CPU
        // and the interface rates.
        assert_eq!(html.matches("<svg").count(), 8);
        assert!(html.contains(IFACE_FIGURE));
        for t in param_figures("loss").iter().chain(&param_figures("socket")) {
            assert!(html.contains(&format!("<h3>{t}</h3>")), "{t}");
        }
        assert!(!html.contains("Against size"));
        assert!(html.contains(CPU_FIGURE));
        // A row per point with its loss and attribution; the abort's reason.
        assert_eq!(html.matches("<td class=\"l\">probe</td>").count(), 4);
        assert!(html.contains("<td data-v=\"0.15\">15.0000 %</td>"));
        assert!(html.contains("loss above 5%"));
        // One line per socket on the loss plot; the environment and its diff.
        assert!(html.contains("socket=udp") && html.contains("socket=raw"));
        assert!(html.contains("kernel = 6.1") && html.contains("<td class=\"l\">9000</td>"));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_damaged_bundle_is_an_error_not_a_panic() {
        let dir = std::env::temp_dir().join(format!("wl-report-camp-bad-{}", std::process::id()));
        bundle(&dir, "{\"schema\":\"other\"}");
        assert!(matches!(render(&dir, "x"), Err(ReportError::Input { .. })));
        bundle(&dir, "[1,2");
        assert!(matches!(render(&dir, "x"), Err(ReportError::Input { .. })));
        // A row whose values have the wrong types is refused, not guessed at.
        bundle(
            &dir,
            r#"{"schema":"wirelab.run.summary/1","rows":[{"params":7,"flow":[],"loss_ratio":"x"}]}"#,
        );
        let e = render(&dir, "x").unwrap_err().to_string();
        assert!(e.contains("not a wirelab.run.summary/1 document"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

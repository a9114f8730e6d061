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
use serde_json::Value;
use std::collections::BTreeMap;
use std::io::BufRead;
use std::path::{Path, PathBuf};
use wirelab_analysis::text::{fmt_bps, fmt_ns, fmt_pps};

/// At one x position: x, the values of its points (repetitions), the
/// largest uncertainty among them.
type XValues = (f64, Vec<f64>, f64);

/// Whether `dir` looks like a results directory of `wirelab run`.
pub fn is_results_dir(dir: &Path) -> bool {
    dir.join("summary.json").is_file() && dir.join("points").is_dir()
}

fn read_json(path: &Path) -> Result<Value, ReportError> {
    let text = std::fs::read_to_string(path).map_err(|source| ReportError::Open {
        path: path.to_path_buf(),
        cause: source,
    })?;
    serde_json::from_str(&text).map_err(|e| ReportError::Input {
        path: path.to_path_buf(),
        message: format!("not JSON: {e}"),
    })
}

fn text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => "-".into(),
        v => v.to_string(),
    }
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

/// Renders the page of the results directory `dir`.
pub fn render(dir: &Path, title: &str) -> Result<String, ReportError> {
    let summary = read_json(&dir.join("summary.json"))?;
    let bad = |m: &str| ReportError::Input {
        path: dir.join("summary.json"),
        message: m.to_string(),
    };
    if summary.get("schema").and_then(Value::as_str) != Some("wirelab.run.summary/1") {
        return Err(bad("not a wirelab.run.summary/1 document"));
    }
    let rows = summary
        .get("rows")
        .and_then(Value::as_array)
        .ok_or_else(|| bad("no rows"))?;
    let params_of = |r: &Value| -> BTreeMap<String, String> {
        r.get("params")
            .and_then(Value::as_object)
            .map(|m| m.iter().map(|(k, v)| (k.clone(), text(v))).collect())
            .unwrap_or_default()
    };
    // Parameters in any row, and those whose value varies: the swept ones.
    let mut values: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for r in rows {
        for (k, v) in params_of(r) {
            let e = values.entry(k).or_default();
            if !e.contains(&v) {
                e.push(v);
            }
        }
    }
    let names: Vec<String> = values.keys().cloned().collect();
    let swept: Vec<String> = values
        .iter()
        .filter(|(_, v)| v.len() > 1)
        .map(|(k, _)| k.clone())
        .collect();
    let flows: Vec<String> = {
        let mut f: Vec<String> = rows.iter().map(|r| text(&r["flow"])).collect();
        f.sort();
        f.dedup();
        f
    };

    let mut p = Page::new(title);
    let count = |k: &str| summary.get(k).and_then(Value::as_u64).unwrap_or(0);
    p.para(&format!(
        "wirelab {} — campaign report of {}: {} points ({} done, {} aborted, {} failed, {} \
         interrupted), {} rows (one per point and flow); swept: {}.",
        env!("CARGO_PKG_VERSION"),
        dir.display(),
        count("points"),
        count("done"),
        count("aborted"),
        count("failed"),
        count("interrupted"),
        rows.len(),
        if swept.is_empty() {
            "nothing".to_string()
        } else {
            swept.join(", ")
        }
    ));

    // The table.
    p.h2("Points");
    let num = |r: &Value, k: &str| r.get(k).and_then(Value::as_f64);
    let ns = |v: Option<f64>| match v {
        Some(v) => Cell::num(fmt_ns(v), v),
        None => Cell::text("-"),
    };
    let cnt = |v: Option<f64>| match v {
        Some(v) => Cell::num(format!("{v}"), v),
        None => Cell::text("-"),
    };
    let mut heads: Vec<String> = vec!["point".into()];
    heads.extend(names.iter().cloned());
    for h in [
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
    ] {
        heads.push(h.into());
    }
    let table: Vec<Vec<Cell>> = rows
        .iter()
        .map(|r| {
            let params = params_of(r);
            let mut c = vec![Cell::text(text(&r["point"]))];
            for n in &names {
                let v = params.get(n).cloned().unwrap_or_else(|| "-".into());
                c.push(match numeric(&v) {
                    Some((x, _)) => Cell::num(v, x),
                    None => Cell::text(v),
                });
            }
            c.push(Cell::text(text(&r["flow"])));
            c.push(Cell::text(text(&r["status"])));
            c.push(cnt(num(r, "sent")));
            c.push(cnt(num(r, "received")));
            c.push(cnt(num(r, "lost")));
            c.push(match num(r, "loss_ratio") {
                Some(v) => Cell::num(format!("{:.4} %", v * 100.0), v),
                None => Cell::text("-"),
            });
            c.push(match num(r, "throughput_bps") {
                Some(v) => Cell::num(fmt_bps(v), v),
                None => Cell::text("-"),
            });
            c.push(match num(r, "rate_pps") {
                Some(v) => Cell::num(fmt_pps(v), v),
                None => Cell::text("-"),
            });
            for k in [
                "owd_mean_ns",
                "owd_p99_ns",
                "owd_max_ns",
                "owd_uncertainty_ns",
                "ipdv_p99_abs_ns",
                "jitter_ns",
            ] {
                c.push(ns(num(r, k)));
            }
            for k in [
                "lost_sender",
                "lost_path",
                "lost_rx_nic",
                "lost_rx_stack",
                "lost_unexplained",
                "timer_misses",
            ] {
                c.push(cnt(num(r, k)));
            }
            c.push(Cell::text(text(&r["reason"])));
            c
        })
        .collect();
    let head_refs: Vec<&str> = heads.iter().map(String::as_str).collect();
    p.table(&head_refs, &table, true);

    // Aborted or failed points and why.
    let stopped: Vec<Vec<Cell>> = rows
        .iter()
        .filter(|r| r["status"].as_str() != Some("done"))
        .map(|r| {
            let params: Vec<String> = params_of(r)
                .iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect();
            vec![
                Cell::text(text(&r["point"])),
                Cell::text(params.join(" ")),
                Cell::text(text(&r["status"])),
                Cell::text(text(&r["reason"])),
                Cell::text(text(&r["error"])),
            ]
        })
        .collect();
    p.h2("Aborts and failures");
    if stopped.is_empty() {
        p.para("Every point ran to its end.");
    } else {
        p.table(
            &["point", "parameters", "status", "reason", "error"],
            &stopped,
            true,
        );
    }

    // Per swept parameter.
    for param in &swept {
        p.h2(&format!("Against {param}"));
        let vals = &values[param];
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
        // Series: the other swept parameters and the flow.
        let key_of = |r: &Value| -> String {
            let ps = params_of(r);
            let mut k: Vec<String> = swept
                .iter()
                .filter(|s| *s != param)
                .map(|s| format!("{s}={}", ps.get(s).map_or("-", String::as_str)))
                .collect();
            if flows.len() > 1 {
                k.push(text(&r["flow"]));
            }
            if k.is_empty() {
                "all".into()
            } else {
                k.join(" ")
            }
        };
        // (series, metric) -> x -> values (repetitions averaged).
        let mut acc: BTreeMap<(String, &str), BTreeMap<i64, XValues>> = BTreeMap::new();
        for r in rows {
            let Some(x) = params_of(r).get(param).and_then(|v| x_of(v)) else {
                continue;
            };
            let xk = (x * 1e6).round() as i64;
            let u = num(r, "owd_uncertainty_ns").unwrap_or(0.0);
            for (metric, key) in [
                ("loss", "loss_ratio"),
                ("throughput", "throughput_bps"),
                ("OWD mean", "owd_mean_ns"),
                ("OWD p99", "owd_p99_ns"),
                ("OWD max", "owd_max_ns"),
            ] {
                if let Some(v) = num(r, key) {
                    let e = acc
                        .entry((key_of(r), metric))
                        .or_default()
                        .entry(xk)
                        .or_insert((x, Vec::new(), 0.0));
                    e.1.push(v);
                    if metric.starts_with("OWD") {
                        e.2 = e.2.max(u);
                    }
                }
            }
        }
        let series = |metrics: &[&str], scale: f64| -> Vec<plot::ErrSeries> {
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
        };
        let x_desc = if unit.is_empty() {
            param.clone()
        } else {
            format!("{param} ({unit})")
        };
        let titles = param_figures(param);
        let svg = plot::by_param(
            &series(&["loss"], 100.0),
            &x_desc,
            "loss (%)",
            cats.as_deref(),
        )?;
        p.figure(&titles[0], &svg, "Loss ratio per point (repetitions averaged), one line per combination of the other swept parameters and the flow.");
        let svg = plot::by_param(
            &series(&["throughput"], 1e-6),
            &x_desc,
            "throughput (Mbit/s)",
            cats.as_deref(),
        )?;
        p.figure(&titles[1], &svg, "Received throughput per point.");
        let owd = series(&["OWD mean", "OWD p99", "OWD max"], 1e-3);
        let svg = plot::by_param(&owd, &x_desc, "one-way delay (µs)", cats.as_deref())?;
        p.figure(
            &titles[2],
            &svg,
            "Mean, p99 and max one-way delay per point, corrected by the measured clock offset; \
             bars: ± the offset's uncertainty U.",
        );
    }

    // CPU and interface counters over the campaign from the hosts' samples.
    p.h2("CPU and counters");
    let cpu = read_samples(&dir.join("points"), |host, j| {
        j["busy_cpus"]
            .as_f64()
            .map(|b| (host.to_string(), b))
            .into_iter()
            .collect()
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
    let mut ifaces = read_samples(&dir.join("points"), |host, j| {
        let Some(m) = j["ifaces"].as_object() else {
            return vec![];
        };
        m.iter()
            .flat_map(|(name, r)| {
                [("rx", &r["rx_pps"]), ("tx", &r["tx_pps"])]
                    .into_iter()
                    .filter_map(move |(d, v)| v.as_f64().map(|v| (format!("{host} {name} {d}"), v)))
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

    // Environment.
    p.h2("Environment");
    environment(dir, &mut p)?;
    Ok(p.finish())
}

/// Series of the hosts' samples from every point, in time order: `pick`
/// turns one sample of a host into `(series, value)` pairs.
fn read_samples(
    points: &Path,
    pick: impl Fn(&str, &Value) -> Vec<(String, f64)>,
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
            let Ok(j) = serde_json::from_str::<Value>(&line) else {
                continue;
            };
            let Some(t) = j["unix_ns"].as_u64() else {
                continue;
            };
            for (series, v) in pick(&host, &j) {
                out.entry(series).or_default().push((t, v));
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
        let j = read_json(h)?;
        let name = text(&j["host"]);
        p.begin_block(&format!("host {name}"));
        let kv: Vec<(String, String)> = j["values"]
            .as_object()
            .map(|m| m.iter().map(|(k, v)| (k.clone(), text(v))).collect())
            .unwrap_or_default();
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
        let j = read_json(&diff)?;
        let mut rows = Vec::new();
        for pair in j["pairs"].as_array().into_iter().flatten() {
            for d in pair["differences"].as_array().into_iter().flatten() {
                rows.push(vec![
                    Cell::text(format!("{} / {}", text(&pair["a"]), text(&pair["b"]))),
                    Cell::text(text(&d["key"])),
                    Cell::text(text(&d["a"])),
                    Cell::text(text(&d["b"])),
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

    fn bundle(dir: &Path, summary: &str) {
        std::fs::create_dir_all(dir.join("points/p1/samples")).unwrap();
        std::fs::create_dir_all(dir.join("env")).unwrap();
        std::fs::write(dir.join("summary.json"), summary).unwrap();
        std::fs::write(
            dir.join("points/p1/samples/rx.jsonl"),
            "{\"unix_ns\":1000000000,\"busy_cpus\":0.5,\"ifaces\":{\"eth1\":{\"rx_pps\":100.0,\"tx_pps\":0.0}}}\nnot json\n{\"unix_ns\":2000000000,\"busy_cpus\":1.5,\"ifaces\":{\"eth1\":{\"rx_pps\":250.0,\"tx_pps\":0.0}}}\n",
        )
        .unwrap();
        std::fs::write(
            dir.join("env/rx.json"),
            r#"{"host":"rx","values":{"kernel":"6.1"}}"#,
        )
        .unwrap();
        std::fs::write(
            dir.join("env/diff.json"),
            r#"{"pairs":[{"a":"rx","b":"tx","differences":[{"key":"mtu","a":"1500","b":"9000"}]}]}"#,
        )
        .unwrap();
    }

    #[test]
    fn interface_rates_are_series_per_host_interface_and_direction() {
        let dir = std::env::temp_dir().join(format!("wl-report-ifaces-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("points/p1/samples")).unwrap();
        std::fs::create_dir_all(dir.join("points/p2/samples")).unwrap();
        let line = |t: u64, rx: f64| {
            format!(
                "{{\"unix_ns\":{t},\"ifaces\":{{\"e1\":{{\"rx_pps\":{rx},\"tx_pps\":0.0}}}}}}\n"
            )
        };
        std::fs::write(dir.join("points/p2/samples/rx.jsonl"), line(3, 30.0)).unwrap();
        std::fs::write(
            dir.join("points/p1/samples/rx.jsonl"),
            line(2, 20.0) + "cut\n" + &line(1, 10.0),
        )
        .unwrap();
        let got = read_samples(&dir.join("points"), |h, j| {
            let r = &j["ifaces"]["e1"];
            vec![
                (format!("{h} e1 rx"), r["rx_pps"].as_f64().unwrap()),
                (format!("{h} e1 tx"), r["tx_pps"].as_f64().unwrap()),
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
        bundle(
            &dir,
            r#"{"schema":"wirelab.run.summary/1","rows":[{"params":7,"flow":[],"loss_ratio":"x"}]}"#,
        );
        render(&dir, "x").unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

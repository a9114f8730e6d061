//! The page of `wirelab report --compare A B [C…]`: result bundles of
//! `wirelab run` side by side ([`wirelab_analysis::compare`] does the
//! statistics). Each bundle is read from its `summary.json` and
//! `control.toml`; the control files are compared key by key outside
//! `[sweep]` (what `--set` and the sweep values change is expected to
//! differ), and a difference is a warning, not a refusal.

use crate::campaign::read_summary;
use crate::error::ReportError;
use crate::html::{Cell, Page};
use crate::plot;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use toml::de::{DeTable, DeValue};
use wirelab_analysis::compare::{self, CompareReport, CompareRow, Metric};
use wirelab_analysis::schema::run::{ParamValue, Summary};
use wirelab_analysis::text::{fmt_bps, fmt_ns, fmt_pps};

/// A comparison and what the bundles lacked or did not share, a line each.
#[derive(Debug)]
pub struct Compared {
    pub report: CompareReport,
    pub warnings: Vec<String>,
}

/// Compares the bundles `dirs` (each a results directory of `wirelab
/// run`, checked by the caller), each after the first against the first.
pub fn compare_bundles(
    dirs: &[PathBuf],
    settings: &compare::Settings,
) -> Result<Compared, ReportError> {
    let summaries: Vec<Summary> = dirs
        .iter()
        .map(|d| read_summary(d))
        .collect::<Result<_, _>>()?;
    let rows: Vec<&[_]> = summaries.iter().map(|s| s.rows.as_slice()).collect();
    let fixed = compare::fixed_params(&rows);
    let labels: Vec<String> = (0..dirs.len()).map(compare::label).collect();
    let samples: Vec<_> = (labels.iter().zip(&rows))
        .map(|(l, r)| compare::samples(l, r, &fixed))
        .collect();
    let bundles = (labels.iter().zip(dirs).zip(&rows))
        .map(|((l, d), r)| compare::bundle_info(l, &d.display().to_string(), r, &fixed))
        .collect();
    let mut warnings = Vec::new();
    let mut control_differences = BTreeSet::new();
    let base = control(&dirs[0], &mut warnings);
    for (l, d) in labels.iter().zip(dirs).skip(1) {
        let (Some(a), Some(b)) = (&base, control(d, &mut warnings)) else {
            continue;
        };
        let keys = differing_keys(a, &b);
        if !keys.is_empty() {
            warnings.push(format!(
                "the control files of A and {l} differ outside [sweep], in {}: compared \
                 anyway; check that the bundles measure the same thing",
                keys.join(", ")
            ));
            control_differences.extend(keys);
        }
    }
    let comparison = compare::compare(&samples, settings);
    if !comparison.only_in.is_empty() {
        warnings.push(format!(
            "{} point(s) are in only some of the bundles: listed, not compared",
            comparison.only_in.len()
        ));
    }
    if comparison.rows.iter().any(|r| r.ci.is_none()) {
        warnings.push(
            "some points have one value on a side: no interval without repetitions (run with \
             --set campaign.repetitions=3 or more)"
                .to_string(),
        );
    }
    Ok(Compared {
        report: CompareReport {
            schema: compare::COMPARE_SCHEMA.to_string(),
            seed: settings.seed,
            resamples: settings.resamples,
            confidence: settings.confidence,
            bundles,
            control_differences: control_differences.into_iter().collect(),
            comparison,
        },
        warnings,
    })
}

/// A bundle's control file, flattened; absent (with a warning) when it
/// cannot be read.
fn control(dir: &Path, warnings: &mut Vec<String>) -> Option<BTreeMap<String, String>> {
    let path = dir.join("control.toml");
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) => {
            warnings.push(format!(
                "{}: {e}: cannot tell whether the campaigns match",
                path.display()
            ));
            return None;
        }
    };
    match flatten_control(&text) {
        Ok(kv) => Some(kv),
        Err(e) => {
            warnings.push(format!(
                "{}: not TOML ({e}): cannot tell whether the campaigns match",
                path.display()
            ));
            None
        }
    }
}

/// A control file as dotted key → value text (`flow.0.count` → `2000`).
pub fn flatten_control(text: &str) -> Result<BTreeMap<String, String>, toml::de::Error> {
    let doc = DeTable::parse(text)?;
    let mut out = BTreeMap::new();
    flatten_table(doc.get_ref(), "", &mut out);
    Ok(out)
}

fn flatten_table(t: &DeTable, prefix: &str, out: &mut BTreeMap<String, String>) {
    for (k, v) in t.iter() {
        flatten_value(v.get_ref(), &format!("{prefix}{}", k.get_ref()), out);
    }
}

fn flatten_value(v: &DeValue, key: &str, out: &mut BTreeMap<String, String>) {
    let text = match v {
        DeValue::Table(t) => return flatten_table(t, &format!("{key}."), out),
        DeValue::Array(a) => {
            for (i, v) in a.iter().enumerate() {
                flatten_value(v.get_ref(), &format!("{key}.{i}"), out);
            }
            return;
        }
        DeValue::String(s) => format!("{s:?}"),
        DeValue::Integer(i) => i.as_str().to_string(),
        DeValue::Float(f) => f.as_str().to_string(),
        DeValue::Boolean(b) => b.to_string(),
        DeValue::Datetime(d) => d.to_string(),
    };
    out.insert(key.to_string(), text);
}

/// Keys outside `[sweep]` whose values differ or that one side lacks.
pub fn differing_keys(a: &BTreeMap<String, String>, b: &BTreeMap<String, String>) -> Vec<String> {
    let keys: BTreeSet<&String> = a.keys().chain(b.keys()).collect();
    keys.into_iter()
        .filter(|k| !(k.as_str() == "sweep" || k.starts_with("sweep.")))
        .filter(|k| a.get(*k) != b.get(*k))
        .cloned()
        .collect()
}

/// How a metric's values are shown: text of a value, a difference, and
/// the figure's scale and axis.
struct Show {
    name: &'static str,
    value: fn(f64) -> String,
    scale: f64,
    axis: &'static str,
}

fn show(m: Metric) -> Show {
    fn pct(v: f64) -> String {
        format!("{:.3} %", v * 100.0)
    }
    let ns = |name, axis| Show {
        name,
        value: fmt_ns,
        scale: 1e-3,
        axis,
    };
    match m {
        Metric::LossRatio => Show {
            name: "loss",
            value: pct,
            scale: 100.0,
            axis: "loss (%)",
        },
        Metric::ThroughputBps => Show {
            name: "throughput",
            value: fmt_bps,
            scale: 1e-6,
            axis: "throughput (Mbit/s)",
        },
        Metric::RatePps => Show {
            name: "packet rate",
            value: fmt_pps,
            scale: 1.0,
            axis: "packets/s",
        },
        Metric::OwdMeanNs => ns("OWD mean", "OWD mean (µs)"),
        Metric::OwdP99Ns => ns("OWD p99", "OWD p99 (µs)"),
        Metric::JitterNs => ns("jitter", "jitter (µs)"),
        Metric::IpdvP99AbsNs => ns("IPDV p99", "IPDV p99 (µs)"),
        Metric::RttMeanNs => ns("RTT mean", "RTT mean (µs)"),
        Metric::RttP99Ns => ns("RTT p99", "RTT p99 (µs)"),
    }
}

/// A signed value: `+` or `−` and the magnitude as `f` shows it.
fn signed(v: f64, f: fn(f64) -> String) -> String {
    let sign = if v < 0.0 { "−" } else { "+" };
    format!("{sign}{}", f(v.abs()))
}

/// A point's parameters and flow as the page shows them.
fn point_text(params: &BTreeMap<String, ParamValue>, flow: &str) -> String {
    compare::PointKey {
        params: params.clone(),
        flow: flow.to_string(),
    }
    .text()
}

/// The figure title of a metric.
pub fn figure_title(m: Metric) -> String {
    format!("{} per point and bundle", show(m).name)
}

/// Renders the comparison's page.
pub fn render(r: &CompareReport, title: &str) -> Result<String, ReportError> {
    let mut p = Page::new(title);
    let others: Vec<&str> = r.bundles[1..].iter().map(|b| b.label.as_str()).collect();
    p.para(&format!(
        "wirelab {} — {} result bundles side by side: {} against A. Per point, flow and \
         metric: the mean of the repetitions on each side, the difference (B − A), its {} % \
         bootstrap interval ({} resamples, seed {}; the percentile interval expanded for small \
         samples, and never narrower than Welch's t interval) and Cohen's d (the difference \
         over the pooled standard deviation). Significant (*) when the interval excludes 0. \
         Only points that ran to their end count; parameters each bundle holds at one value \
         tell the bundles apart, the others the points.",
        env!("CARGO_PKG_VERSION"),
        r.bundles.len(),
        others.join(", "),
        percent(r.confidence),
        r.resamples,
        r.seed
    ));
    p.h2("Bundles");
    let rows: Vec<Vec<Cell>> = r
        .bundles
        .iter()
        .map(|b| {
            let fixed: Vec<String> = b.fixed.iter().map(|(k, v)| format!("{k}={v}")).collect();
            vec![
                Cell::text(b.label.clone()),
                Cell::text(b.path.clone()),
                Cell::text(fixed.join(" ")),
                Cell::num(b.rows_done.to_string(), b.rows_done as f64),
                Cell::num(b.rows.to_string(), b.rows as f64),
            ]
        })
        .collect();
    p.table(
        &["bundle", "path", "fixed parameters", "rows done", "rows"],
        &rows,
        false,
    );
    if !r.control_differences.is_empty() {
        p.warning(&format!(
            "The control files differ outside [sweep] in: {}.",
            r.control_differences.join(", ")
        ));
    }
    p.h2("Differences");
    p.para(
        "Sorted by |d|, largest first; a difference where neither side varies (no d) above \
         all, rows without an interval (one value a side) last. Click a column head to sort by \
         it.",
    );
    differences_table(&mut p, &r.comparison.rows, r.confidence);
    p.h2("Points in only some bundles");
    if r.comparison.only_in.is_empty() {
        p.para("Every point is in every bundle.");
    } else {
        let rows: Vec<Vec<Cell>> = r
            .comparison
            .only_in
            .iter()
            .map(|o| {
                vec![
                    Cell::text(point_text(&o.params, &o.flow)),
                    Cell::text(o.bundles.join(", ")),
                ]
            })
            .collect();
        p.table(&["point", "only in"], &rows, true);
    }
    p.h2("Figures");
    figures(&mut p, r)?;
    Ok(p.finish())
}

fn differences_table(p: &mut Page, rows: &[CompareRow], confidence: f64) {
    let interval = format!("{} % interval", percent(confidence));
    let table: Vec<Vec<Cell>> = rows
        .iter()
        .map(|r| {
            let s = show(r.metric);
            let ci = match r.ci {
                Some([lo, hi]) => Cell::num(
                    format!("[{}, {}]", signed(lo, s.value), signed(hi, s.value)),
                    lo,
                ),
                None => Cell::text(r.note.clone().unwrap_or_default()),
            };
            let mark = match (r.ci, r.significant) {
                (None, _) => "-",
                (Some(_), true) => "*",
                (Some(_), false) => "",
            };
            vec![
                Cell::text(point_text(&r.params, &r.flow)),
                Cell::text(s.name),
                Cell::text(format!("{} vs {}", r.b.bundle, r.a.bundle)),
                Cell::num((s.value)(r.a.mean), r.a.mean),
                Cell::num(r.a.n.to_string(), r.a.n as f64),
                Cell::num((s.value)(r.b.mean), r.b.mean),
                Cell::num(r.b.n.to_string(), r.b.n as f64),
                Cell::num(signed(r.difference, s.value), r.difference),
                match r.relative {
                    Some(v) => Cell::num(format!("{:+.1} %", v * 100.0), v),
                    None => Cell::text("-"),
                },
                ci,
                Cell::text(mark),
                match r.effect_size {
                    Some(d) => Cell::num(format!("{:.2}", d.abs()), d.abs()),
                    None if r.rank().is_infinite() => Cell::text("no spread"),
                    None => Cell::text("-"),
                },
            ]
        })
        .collect();
    p.table(
        &[
            "point",
            "metric",
            "bundles",
            "A mean",
            "A n",
            "B mean",
            "B n",
            "difference",
            "relative",
            &interval,
            "significant",
            "|d|",
        ],
        &table,
        true,
    );
}

/// A bundle's label and the fixed parameters that tell it from the
/// others (`B loss=3%`).
fn legend(r: &CompareReport, label: &str) -> String {
    let Some(b) = r.bundles.iter().find(|b| b.label == label) else {
        return label.to_string();
    };
    let apart = b
        .fixed
        .iter()
        .filter(|(k, v)| r.bundles.iter().any(|o| o.fixed.get(*k) != Some(*v)))
        .map(|(k, v)| format!("{k}={v}"));
    std::iter::once(label.to_string())
        .chain(apart)
        .collect::<Vec<_>>()
        .join(" ")
}

/// Per metric, one series per bundle over the points: the mean ± the
/// standard deviation of the repetitions.
fn figures(p: &mut Page, r: &CompareReport) -> Result<(), ReportError> {
    let metrics: BTreeSet<Metric> = r.comparison.rows.iter().map(|x| x.metric).collect();
    for m in metrics {
        let s = show(m);
        let rows: Vec<&CompareRow> = r.comparison.rows.iter().filter(|x| x.metric == m).collect();
        let mut cats: Vec<String> = rows
            .iter()
            .map(|x| point_text(&x.params, &x.flow))
            .collect();
        cats.sort();
        cats.dedup();
        // bundle label -> point index -> (mean, sd)
        let mut by: BTreeMap<&str, BTreeMap<usize, (f64, f64)>> = BTreeMap::new();
        for x in &rows {
            let i = cats
                .binary_search(&point_text(&x.params, &x.flow))
                .unwrap_or_default();
            for side in [&x.a, &x.b] {
                by.entry(side.bundle.as_str())
                    .or_default()
                    .insert(i, (side.mean, side.sd.unwrap_or(0.0)));
            }
        }
        let series: Vec<plot::ErrSeries> = by
            .iter()
            .map(|(label, pts)| {
                let name = legend(r, label);
                let pts = pts
                    .iter()
                    .map(|(i, (mean, sd))| (*i as f64, mean * s.scale, sd * s.scale))
                    .collect();
                (name, pts)
            })
            .collect();
        let svg = plot::by_param(&series, "point", s.axis, Some(&cats))?;
        p.figure(
            &figure_title(m),
            &svg,
            "One line per bundle over the points compared: the mean of the repetitions; bars: ± \
             their standard deviation.",
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests;

/// A confidence as a percentage, as many digits as it has (95, 99.9).
fn percent(confidence: f64) -> String {
    let p = format!("{:.4}", confidence * 100.0);
    p.trim_end_matches('0').trim_end_matches('.').to_string()
}

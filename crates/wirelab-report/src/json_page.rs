//! The page of `--json` reports (`wirelab.send/1`, `recv/1`, `analysis/1`,
//! `capture/1`, `replay/1`, `emulate/1`), recognised by their `schema`
//! key: per report its scalar fields as key → value rows (nested objects
//! flattened to dotted keys) and each array of objects (flows, threads,
//! stages) as a sortable table with a row per element; a `capture/1`
//! report also gets its drops per stage as bars.

use crate::error::ReportError;
use crate::html::{Cell, Page};
use crate::plot;
use serde::Deserialize;
use serde_json::{Map, Value};
use wirelab_analysis::schema::{CaptureLoss, CAPTURE_SCHEMA};

/// The schemas this page reads.
pub const SCHEMAS: [&str; 6] = [
    "wirelab.send/1",
    "wirelab.recv/1",
    "wirelab.analysis/1",
    "wirelab.capture/1",
    "wirelab.replay/1",
    "wirelab.emulate/1",
];

/// The schema of a JSON report this page reads, if `v` is one.
pub fn schema_of(v: &Value) -> Option<&'static str> {
    let s = v.get("schema")?.as_str()?;
    SCHEMAS.iter().copied().find(|k| *k == s)
}

/// The figure of a `capture/1` report.
pub const CAPTURE_FIGURE: &str = "Drops per stage";

/// What the drops figure reads of a `capture/1` report: its loss by
/// stage, as the capture wrote it, and the packets it captured.
#[derive(Debug, Deserialize)]
pub struct CaptureDrops {
    #[serde(default)]
    pub packets: u64,
    pub loss: CaptureLoss,
}

impl CaptureDrops {
    /// The drops of the report `v`, if it has its `loss`.
    pub fn of(v: &Value) -> Option<CaptureDrops> {
        CaptureDrops::deserialize(v).ok()
    }

    /// The drops by stage (docs/capture.md, "Loss accounting"), in path
    /// order: the interface, the ring, the writer.
    pub fn stages(&self) -> Vec<(String, u64)> {
        let l = &self.loss;
        vec![
            ("interface rx_dropped".into(), l.if_rx_dropped),
            ("interface rx_missed".into(), l.if_rx_missed_errors),
            ("ring".into(), l.ring_drops),
            ("writer".into(), l.writer_drops),
        ]
    }
}

/// A `capture/1` report's drops by stage, in path order.
pub fn capture_drops(v: &Value) -> Option<Vec<(String, u64)>> {
    CaptureDrops::of(v).map(|c| c.stages())
}

/// Most levels of nesting flattened into one key, and most columns of a
/// table: deeper or further fields stay in the JSON at the page's end.
const MAX_DEPTH: usize = 4;
const MAX_COLUMNS: usize = 40;

fn scalar(v: &Value) -> Option<Cell> {
    match v {
        Value::Null => Some(Cell::text("-")),
        Value::Bool(b) => Some(Cell::text(b.to_string())),
        Value::Number(n) => Some(Cell::num(n.to_string(), n.as_f64().unwrap_or(f64::NAN))),
        Value::String(s) => Some(Cell::text(s.clone())),
        _ => None,
    }
}

/// Scalars under `m` as dotted keys; arrays of objects collected apart.
fn flatten<'a>(
    m: &'a Map<String, Value>,
    prefix: &str,
    depth: usize,
    out: &mut Vec<(String, Cell)>,
    tables: &mut Vec<(String, &'a Vec<Value>)>,
) {
    for (k, v) in m {
        let key = if prefix.is_empty() {
            k.clone()
        } else {
            format!("{prefix}.{k}")
        };
        match v {
            Value::Object(inner) if depth < MAX_DEPTH => {
                flatten(inner, &key, depth + 1, out, tables)
            }
            Value::Array(a) if a.iter().any(Value::is_object) => tables.push((key, a)),
            Value::Array(a) => out.push((
                key,
                Cell::text(
                    a.iter()
                        .map(|x| x.to_string())
                        .collect::<Vec<_>>()
                        .join(", "),
                ),
            )),
            v => {
                if let Some(c) = scalar(v) {
                    out.push((key, c));
                }
            }
        }
    }
}

fn table_of(p: &mut Page, rows: &[Value]) {
    let flat: Vec<Vec<(String, Cell)>> = rows
        .iter()
        .filter_map(Value::as_object)
        .map(|m| {
            let mut out = Vec::new();
            flatten(m, "", 1, &mut out, &mut Vec::new());
            out
        })
        .collect();
    let mut heads: Vec<String> = Vec::new();
    for r in &flat {
        for (k, _) in r {
            if !heads.contains(k) && heads.len() < MAX_COLUMNS {
                heads.push(k.clone());
            }
        }
    }
    let cells: Vec<Vec<Cell>> = flat
        .iter()
        .map(|r| {
            heads
                .iter()
                .map(|h| {
                    r.iter()
                        .find(|(k, _)| k == h)
                        .map_or_else(|| Cell::text(""), |(_, c)| c.clone())
                })
                .collect()
        })
        .collect();
    let refs: Vec<&str> = heads.iter().map(String::as_str).collect();
    p.table(&refs, &cells, true);
}

/// Renders the page of `reports` (a name and the parsed document each).
pub fn render(reports: &[(String, Value)], title: &str) -> Result<String, ReportError> {
    let mut p = Page::new(title);
    p.para(&format!(
        "wirelab {} — {} JSON report(s); their plots need the per-packet records (--record).",
        env!("CARGO_PKG_VERSION"),
        reports.len()
    ));
    for (name, v) in reports {
        let Some(m) = v.as_object() else { continue };
        p.h2(&format!("{name} ({})", schema_of(v).unwrap_or("?")));
        let (mut scalars, mut tables) = (Vec::new(), Vec::new());
        flatten(m, "", 1, &mut scalars, &mut tables);
        let kv: Vec<Vec<Cell>> = scalars
            .into_iter()
            .map(|(k, c)| vec![Cell::text(k), c])
            .collect();
        p.table(&["key", "value"], &kv, false);
        if let Some(c) = CaptureDrops::of(v).filter(|_| schema_of(v) == Some(CAPTURE_SCHEMA)) {
            let drops = c.stages();
            let total: u64 = drops.iter().map(|d| d.1).sum();
            let svg = plot::category_bars(&drops, "dropped packets")?;
            let text: Vec<String> = drops.iter().map(|(k, n)| format!("{k} {n}")).collect();
            p.figure(
                CAPTURE_FIGURE,
                &svg,
                &format!(
                    "Packets lost by stage, from the interface's counters to the writer: {} \
                     ({total} in all, beside {} captured).",
                    text.join(", "),
                    c.packets
                ),
            );
        }
        for (key, rows) in tables {
            p.para(&format!("{key}: {} entries", rows.len()));
            table_of(&mut p, rows);
        }
        p.details(
            "the JSON",
            &serde_json::to_string_pretty(v).map_err(|e| ReportError::Plot(e.to_string()))?,
        );
    }
    Ok(p.finish())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reports_become_tables_and_unknown_schemas_are_not_taken() {
        let v: Value = serde_json::from_str(
            r#"{"schema":"wirelab.recv/1","receiver":{"packets":12,"mode":"kernel"},
                "flows":[{"flow":1,"received":10,"latency":{"p99_ns":5}},{"flow":2,"received":2}]}"#,
        )
        .unwrap();
        assert_eq!(schema_of(&v), Some("wirelab.recv/1"));
        assert_eq!(schema_of(&serde_json::json!({"schema": "other/1"})), None);
        assert_eq!(schema_of(&serde_json::json!([1])), None);
        let html = render(&[("rx.json".into(), v)], "t").unwrap();
        assert!(html.contains("<td class=\"l\">receiver.packets</td><td data-v=\"12\">12</td>"));
        assert!(html.contains("<th>latency.p99_ns</th>"), "{html}");
        assert!(html.contains("flows: 2 entries"));
        assert_eq!(
            html.matches("<tr>").count(),
            2 + 2 + 3,
            "kv rows and table rows"
        );
        assert!(!html.contains("<figure>"), "no figure but for capture/1");
    }

    #[test]
    fn a_capture_report_has_its_drops_per_stage() {
        let v: Value = serde_json::from_str(
            r#"{"schema":"wirelab.capture/1","packets":900,"loss":{"if_rx_dropped":3,
                "if_rx_missed_errors":0,"ring_drops":120,"ring_freeze_q_cnt":2,"writer_drops":0}}"#,
        )
        .unwrap();
        assert_eq!(
            capture_drops(&v)
                .unwrap()
                .iter()
                .map(|d| d.1)
                .collect::<Vec<_>>(),
            [3, 0, 120, 0]
        );
        let html = render(&[("cap.json".into(), v)], "t").unwrap();
        assert_eq!(html.matches("<figure>").count(), 1);
        assert!(html.contains(&format!("<h3>{CAPTURE_FIGURE}</h3>")));
        assert!(html.contains(
            "interface rx_dropped 3, interface rx_missed 0, ring 120, writer 0 (123 in all, \
             beside 900 captured)"
        ));
        assert!(html.contains("\nring\n</text>"), "bar label");
    }
}

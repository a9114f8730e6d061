//! The human listing of a plan (`wirelab run --dry-run`).

use std::fmt::Write;

use super::Plan;
use crate::control::{Control, Order};

fn plural(n: u64, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// A summary line, one row per point in run order (index, id, repetition
/// when there are several, the parameters in axis order), then the
/// excluded combinations with their reasons.
pub fn plan_text(c: &Control, plan: &Plan) -> String {
    let mut s = String::new();
    let camp = &plan.campaign;
    let order = match camp.order {
        Order::Sequential => "sequential".to_string(),
        Order::Shuffled => format!("shuffled with seed {}", camp.seed),
    };
    let _ = write!(
        s,
        "campaign {}: {}, {} excluded",
        camp.name,
        plural(plan.combinations, "combination", "combinations"),
        plan.excluded.len()
    );
    if plan.filtered > 0 {
        let _ = write!(s, ", {} left out by --only", plan.filtered);
    }
    let _ = writeln!(
        s,
        ", {} ({}, {})",
        plural(plan.points.len() as u64, "point", "points"),
        plural(u64::from(camp.repetitions), "repetition", "repetitions"),
        order
    );
    if let Some(x) = &c.sweep.search {
        let _ = writeln!(
            s,
            "search along {}: the rest of a combination's {} values is left out after {} \
             loss-free point(s) in a row",
            x.axis, x.axis, x.lossfree
        );
    }
    if let Some(d) = &c.campaign.description {
        let _ = writeln!(s, "{d}");
    }
    let reps = camp.repetitions > 1;
    let mut head: Vec<String> = vec!["index".into(), "id".into()];
    if reps {
        head.push("rep".into());
    }
    head.extend(plan.axes.iter().map(|a| a.key.clone()));
    let rows: Vec<Vec<String>> = plan
        .points
        .iter()
        .map(|p| {
            let mut r = vec![p.index.to_string(), p.id.clone()];
            if reps {
                r.push(p.repetition.to_string());
            }
            r.extend(plan.axes.iter().map(|a| {
                p.params
                    .get(&a.key)
                    .map_or_else(String::new, |v| v.to_string())
            }));
            r
        })
        .collect();
    if !rows.is_empty() {
        let mut w: Vec<usize> = head.iter().map(String::len).collect();
        for r in &rows {
            for (x, c) in w.iter_mut().zip(r) {
                *x = (*x).max(c.chars().count());
            }
        }
        let line = |s: &mut String, r: &[String]| {
            let cells: Vec<String> = r
                .iter()
                .zip(&w)
                .enumerate()
                .map(|(i, (c, &w))| {
                    if i == 0 {
                        format!("{c:>w$}")
                    } else {
                        format!("{c:<w$}")
                    }
                })
                .collect();
            let _ = writeln!(s, "{}", cells.join("  ").trim_end());
        };
        s.push('\n');
        line(&mut s, &head);
        for r in &rows {
            line(&mut s, r);
        }
    }
    if !plan.excluded.is_empty() {
        let _ = writeln!(s, "\nexcluded ({}):", plan.excluded.len());
        for e in &plan.excluded {
            let params: Vec<String> = plan
                .axes
                .iter()
                .filter_map(|a| e.params.get(&a.key).map(|v| format!("{}={v}", a.key)))
                .collect();
            let _ = writeln!(s, "  {}: {}", params.join(" "), e.reason);
        }
    }
    s
}

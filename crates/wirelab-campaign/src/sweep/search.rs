//! The search along one axis (`[sweep] search = { axis, lossfree }`): which
//! points are left out once their group has been loss-free long enough.
//!
//! A group is one combination of the other parameters and one repetition;
//! its points come in the axis's file order (the plan is sequential). After
//! `lossfree` loss-free points of a group in a row, its remaining points are
//! not run. The state is rebuilt from results in plan order, so `--resume`
//! leaves out the same points.

use super::Point;
use crate::control::Search;
use crate::expr::Value;
use std::collections::{BTreeMap, HashMap};

/// Where each group of a search stands.
#[derive(Debug, Clone)]
pub struct SearchState {
    search: Option<Search>,
    /// Loss-free points in a row per group, and the point that ended it.
    groups: HashMap<String, (u32, Option<String>)>,
}

impl SearchState {
    pub fn new(search: Option<&Search>) -> SearchState {
        SearchState {
            search: search.cloned(),
            groups: HashMap::new(),
        }
    }

    fn group(&self, p: &Point) -> Option<String> {
        let s = self.search.as_ref()?;
        let others: BTreeMap<&String, &Value> =
            p.params.iter().filter(|(k, _)| **k != s.axis).collect();
        Some(format!("{others:?}#{}", p.repetition))
    }

    /// Why `p` is not run, if its group's search has ended.
    pub fn skip(&self, p: &Point) -> Option<String> {
        let s = self.search.as_ref()?;
        let (_, ended) = self.groups.get(&self.group(p)?)?;
        ended.as_ref().map(|at| {
            format!(
                "search along {}: {} loss-free point(s) in a row up to {}={at}",
                s.axis, s.lossfree, s.axis
            )
        })
    }

    /// Notes how point `p` came out.
    pub fn record(&mut self, p: &Point, lossfree: bool) {
        let (Some(s), Some(g)) = (self.search.as_ref(), self.group(p)) else {
            return;
        };
        let need = s.lossfree;
        let at = p.params.get(&s.axis).map(Value::to_string);
        let e = self.groups.entry(g).or_insert((0, None));
        if e.1.is_some() {
            return;
        }
        e.0 = if lossfree { e.0 + 1 } else { 0 };
        if e.0 >= need {
            e.1 = Some(at.unwrap_or_default());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(interval: i64, size: i64) -> Point {
        let mut params = BTreeMap::new();
        params.insert("interval".to_string(), Value::Int(interval));
        params.insert("size".to_string(), Value::Int(size));
        Point {
            id: String::new(),
            index: 0,
            repetition: 0,
            params,
        }
    }

    #[test]
    fn a_group_ends_after_n_lossfree_points_in_a_row() {
        let mut s = SearchState::new(Some(&Search {
            axis: "interval".into(),
            lossfree: 2,
        }));
        // size 80: loss at 0, clean at 10, loss at 20, clean at 30 and 40.
        for (i, clean) in [(0, false), (10, true), (20, false), (30, true), (40, true)] {
            assert_eq!(s.skip(&point(i, 80)), None, "interval {i}");
            s.record(&point(i, 80), clean);
        }
        let why = s.skip(&point(50, 80)).unwrap();
        assert_eq!(
            why,
            "search along interval: 2 loss-free point(s) in a row up to interval=40"
        );
        // Another size is its own group.
        assert_eq!(s.skip(&point(50, 8900)), None);
        // Without a search nothing is left out.
        let mut none = SearchState::new(None);
        none.record(&point(0, 80), true);
        assert_eq!(none.skip(&point(0, 80)), None);
    }
}

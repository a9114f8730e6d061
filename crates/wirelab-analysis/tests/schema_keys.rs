//! The key paths of the JSON documents `wirelab run` writes and `wirelab
//! report` reads back (`schema::run`, `schema::host`, and the loss of
//! `capture/1` that its drops figure reads), pinned in
//! `schema_keys.txt`: renaming, adding or removing a field shows there as
//! a change to review. `WIRELAB_BLESS=1` rewrites the file.

use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;
use wirelab_analysis::schema::host::{Diff, RunEnv, Sample, Snapshot};
use wirelab_analysis::schema::run::Summary;
use wirelab_analysis::schema::CaptureLoss;

const FILE: &str = "tests/schema_keys.txt";

/// Every key path of `v`: objects as `a.b`, arrays as `a[]` (their first
/// element stands for all).
fn paths(v: &Value, prefix: &str, out: &mut Vec<String>) {
    match v {
        Value::Object(m) => {
            for (k, v) in m {
                let p = if prefix.is_empty() {
                    k.clone()
                } else {
                    format!("{prefix}.{k}")
                };
                out.push(p.clone());
                paths(v, &p, out);
            }
        }
        Value::Array(a) => {
            if let Some(first) = a.first() {
                paths(first, &format!("{prefix}[]"), out);
            }
        }
        _ => {}
    }
}

/// `json` read as `T` and written again: the keys `T` writes, with every
/// list and map holding one element.
fn keys_of<T: DeserializeOwned + Serialize>(name: &str, json: &str) -> String {
    let t: T = serde_json::from_str(json).unwrap_or_else(|e| panic!("{name}: {e}"));
    let mut out = vec![];
    paths(&serde_json::to_value(&t).unwrap(), "", &mut out);
    format!("== {name}\n{}\n", out.join("\n"))
}

#[test]
fn the_documents_keys_are_as_pinned() {
    let now = [
        keys_of::<Summary>(
            "wirelab.run.summary/1",
            r#"{"schema":"wirelab.run.summary/1","rows":[
                {"point":"p","status":"done","flow":"f","params":{"KEY":1}}]}"#,
        ),
        keys_of::<Sample>(
            "samples/<host>.jsonl",
            r#"{"unix_ns":1,"interval_ns":1,"busy_cpus":0,"softirq_cpus":0,
                "mem_used_kb":1,
                "cpus":[{"cpu":"cpu0","user":0,"system":0,"softirq":0,"busy":0}],
                "ifaces":{"IF":{"rx_pps":0,"tx_pps":0,"rx_bps":0,"tx_bps":0}}}"#,
        ),
        keys_of::<Snapshot>(
            "wirelab.env/1",
            r#"{"schema":"wirelab.env/1","host":"h","taken_unix_ns":1,"values":{"KEY":"v"}}"#,
        ),
        keys_of::<Diff>(
            "wirelab.env.diff/1",
            r#"{"schema":"wirelab.env.diff/1","a":"x","b":"y",
                "differences":[{"key":"k","a":"1","b":null}]}"#,
        ),
        keys_of::<RunEnv<Value>>(
            "wirelab.run.env/1",
            r#"{"schema":"wirelab.run.env/1","warnings":["w"],"applied":[],
                "pairs":[{"schema":"wirelab.env.diff/1","a":"x","b":"y",
                          "differences":[{"key":"k","a":"1","b":null}]}]}"#,
        ),
        keys_of::<CaptureLoss>("wirelab.capture/1 loss (the report's drops figure)", "{}"),
    ]
    .concat();
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(FILE);
    if std::env::var_os("WIRELAB_BLESS").is_some() {
        std::fs::write(&path, &now).unwrap();
        return;
    }
    let pinned = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        pinned == now,
        "the documents' keys changed (review, then WIRELAB_BLESS=1):\n{}",
        line_diff(&pinned, &now)
    );
}

/// The lines only one side has, marked `-` (pinned) and `+` (now).
fn line_diff(pinned: &str, now: &str) -> String {
    let old: Vec<&str> = pinned.lines().collect();
    let new: Vec<&str> = now.lines().collect();
    let gone = old
        .iter()
        .filter(|l| !new.contains(l))
        .map(|l| format!("- {l}"));
    let came = new
        .iter()
        .filter(|l| !old.contains(l))
        .map(|l| format!("+ {l}"));
    gone.chain(came).collect::<Vec<_>>().join("\n")
}

//! `wirelab emulate ctl`'s reading of the emulator's answer to a request
//! ([`super::ctl::request`] sends it): refused or not, and in lines of text.

use super::ctl::Request;
use serde_json::Value;

/// Why the emulator refused a request (its answer `v` says `ok: false`);
/// `None` when it applied it.
pub fn refusal(v: &Value) -> Option<String> {
    (v["ok"] != true).then(|| {
        v["error"]
            .as_str()
            .unwrap_or("the emulator refused the request")
            .to_string()
    })
}

fn stages_or_pass(r: &Value) -> &str {
    match r["stages"].as_str().unwrap_or("") {
        "" => "pass",
        s => s,
    }
}

/// `rule N a2b+b2a 'FILTER' [STAGES]`.
fn rule_line(r: &Value) -> String {
    let dirs: Vec<&str> = r["directions"]
        .as_array()
        .map(|a| a.iter().filter_map(|d| d.as_str()).collect())
        .unwrap_or_default();
    format!(
        "rule {} {} '{}' [{}]",
        r["rule"],
        dirs.join("+"),
        r["filter"].as_str().unwrap_or(""),
        stages_or_pass(r)
    )
}

/// The text of an applied request's answer `v`.
pub fn answer_text(req: &Request, v: &Value) -> String {
    let mut t = String::new();
    let mut line = |s: String| {
        t.push_str(&s);
        t.push('\n');
    };
    match req {
        Request::Add { .. } => line(format!("added {}", rule_line(&v["rule"]))),
        Request::Update { .. } => line(format!("updated {}", rule_line(&v["rule"]))),
        Request::Del { .. } => line(format!("removed {}", rule_line(&v["rule"]))),
        Request::List => {
            let rules = v["rules"].as_array().cloned().unwrap_or_default();
            if rules.is_empty() {
                line("no rules".into());
            }
            rules.iter().for_each(|r| line(rule_line(r)));
        }
        Request::Stats => {
            for d in ["a2b", "b2a"] {
                let l = &v[d]["live"];
                line(format!(
                    "{d}: {} received, {} sent, {} duplicated, {} held",
                    l["received"], l["sent"], l["duplicates"], l["held"]
                ));
                for r in v[d]["rules"].as_array().cloned().unwrap_or_default() {
                    line(rule_stats_line(&r));
                }
            }
        }
    }
    t
}

/// `  default [STAGES]: N frames, N duplicated, dropped …, N queued`.
fn rule_stats_line(r: &Value) -> String {
    let link = &r["link"];
    let dropped: Vec<String> = link["dropped"]
        .as_object()
        .map(|o| {
            o.iter()
                .filter(|(_, n)| n.as_u64().unwrap_or(0) > 0)
                .map(|(k, n)| format!("{} {n}", k.replace('_', " ")))
                .collect()
        })
        .unwrap_or_default();
    let name = if r["rule"] == 0 {
        "default".to_string()
    } else {
        format!(
            "rule {} '{}'",
            r["rule"],
            r["filter"].as_str().unwrap_or("")
        )
    };
    format!(
        "  {name} [{}]: {} frames, {} duplicated, dropped {}, {} queued",
        stages_or_pass(r),
        r["frames"],
        link["duplicates"],
        if dropped.is_empty() {
            "0".to_string()
        } else {
            dropped.join(", ")
        },
        link["queue_packets"]
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn answers_as_text() {
        let rule = json!({"rule": 2, "directions": ["a2b"], "filter": "udp", "stages": ""});
        let v = json!({"ok": true, "rule": rule});
        let add = Request::Add {
            filter: "a2b: udp".into(),
            stages: String::new(),
        };
        assert_eq!(refusal(&v), None);
        assert_eq!(answer_text(&add, &v), "added rule 2 a2b 'udp' [pass]\n");
        let no = json!({"ok": false, "error": "exists: a rule with filter \"udp\""});
        assert_eq!(refusal(&no).unwrap(), "exists: a rule with filter \"udp\"");
        assert_eq!(
            refusal(&json!({"ok": false})).unwrap(),
            "the emulator refused the request"
        );
        let v = json!({"ok": true, "rules": []});
        assert_eq!(answer_text(&Request::List, &v), "no rules\n");
        let dir = json!({
            "live": {"received": 5, "sent": 4, "duplicates": 0, "held": 1},
            "rules": [{"rule": 0, "filter": "", "stages": "delay 1ms", "frames": 5,
                       "link": {"duplicates": 0, "queue_packets": 1,
                                "dropped": {"loss": 0, "queue_full": 2}}}],
        });
        let v = json!({"ok": true, "a2b": dir, "b2a": dir});
        let half = "a2b: 5 received, 4 sent, 0 duplicated, 1 held\n  \
                    default [delay 1ms]: 5 frames, 0 duplicated, dropped queue full 2, 1 queued\n";
        assert_eq!(
            answer_text(&Request::Stats, &v),
            format!("{half}{}", half.replacen("a2b", "b2a", 1))
        );
    }
}

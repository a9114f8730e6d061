//! `wirelab run --metrics-listen`: the real binary runs a two-point lab
//! campaign (one point done, one aborted on its loss criterion) while the
//! test scrapes /metrics; every scrape must pass the Prometheus project's
//! own text parser (Python prometheus_client), counters must never
//! decrease from one scrape to the next, and their final values must add
//! up the bundle's results.

use crate::common::bundle::{on_tx_emu_rx, run_command, summary_rows, the_bundle};
use crate::common::files::scratch;
use crate::common::prom::{parse, scrape};
use crate::common::{netns_available, tools_available};

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read};
use std::process::Stdio;
use std::time::{Duration, Instant};

fn control() -> String {
    on_tx_emu_rx(
        37,
        r#"
[campaign]
name = "metrics"
pause = "200ms"

[[flow]]
name = "sut"
from = "tx"
to = "rx"
count = 3000
interval = "1ms"
query = { every_packets = 500 }
abort = { lost_gt = 40 }

[emulate]
host = "emu"
ifaces = ["tx", "rx"]
stages = "delay 1ms loss {loss}"

[sweep]
loss = ["0%", "10%"]

[metrics]
listen = "127.0.0.1:0"
linger = "3s"
"#,
    )
}

#[test]
fn metrics_parse_never_decrease_and_end_equal_to_the_results() {
    if !netns_available(&[]) || !tools_available(&["python3"]) {
        return;
    }
    let dir = scratch("metrics", "run");
    let results = dir.join("results");
    let mut child = run_command(&dir, &control())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The address (port 0 asked: the kernel picks one) is on stderr.
    let mut err = BufReader::new(child.stderr.take().unwrap());
    let mut addr = None;
    let mut line = String::new();
    while err.read_line(&mut line).unwrap() > 0 {
        if let Some(rest) = line.trim().strip_prefix("wirelab run: metrics on http://") {
            addr = Some(rest.trim_end_matches("/metrics").to_string());
            break;
        }
        line.clear();
    }
    let addr = addr.unwrap_or_else(|| panic!("no metrics address on stderr: {line}"));
    // The rest of stderr, drained on a thread so the run never blocks on it.
    let rest = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = err.read_to_string(&mut s);
        s
    });
    let mut files = vec![];
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(120) {
        match scrape(&addr) {
            Some(body) => {
                let f = dir.join(format!("scrape-{:04}.txt", files.len()));
                std::fs::write(&f, body).unwrap();
                files.push(f);
            }
            // The linger is over: the run is ending.
            None if child.try_wait().unwrap().is_some() || !files.is_empty() => break,
            None => {}
        }
        std::thread::sleep(Duration::from_millis(150));
    }
    let status = child.wait().unwrap();
    let stderr = rest.join().unwrap();
    assert_eq!(status.code(), Some(3), "one point aborts: {stderr}");
    // One scrape every 150 ms over the two points and the 3 s linger: about
    // 40. Two (the least "never decrease" needs) is twenty times below
    // that: fewer means the server stopped answering, not a slow machine.
    assert!(files.len() >= 2, "{} scrapes", files.len());
    let scrapes = parse(&files);

    // Counters never decrease.
    let mut last: BTreeMap<String, f64> = BTreeMap::new();
    for s in &scrapes {
        for (k, v) in s {
            if k.contains("_total{") || k.contains("_bucket{") || k.contains("_count{") {
                if let Some(before) = last.get(k) {
                    assert!(v >= before, "{k} went from {before} to {v}");
                }
                last.insert(k.clone(), *v);
            }
        }
    }

    // The final scrape adds up the bundle's points.
    let fin = scrapes.last().unwrap();
    let bundle = the_bundle(&results);
    let rows = summary_rows(&bundle);
    assert_eq!(rows.len(), 2);
    let sum = |key: &str| -> f64 { rows.iter().map(|r| r[key].as_u64().unwrap() as f64).sum() };
    for (metric, key) in [
        ("wirelab_flow_sent_packets_total", "sent"),
        ("wirelab_flow_received_packets_total", "received"),
        ("wirelab_flow_lost_packets_total", "lost"),
        ("wirelab_flow_timer_misses_total", "timer_misses"),
    ] {
        assert_eq!(fin[&format!("{metric}{{flow=sut}}")], sum(key), "{metric}");
    }
    assert_eq!(
        fin["wirelab_flow_owd_seconds_count{flow=sut}"],
        sum("received")
    );
    assert!(sum("lost") > 40.0);
    // The loss by cause adds up to the loss, and it is the emulator's.
    let cause =
        |c: &str| fin[&format!("wirelab_flow_lost_attributed_packets_total{{cause={c},flow=sut}}")];
    let causes = ["sender", "path", "rx_nic", "rx_stack", "unexplained"];
    assert_eq!(causes.iter().map(|c| cause(c)).sum::<f64>(), sum("lost"));
    assert_eq!(cause("path"), sum("lost_path"));
    assert!(cause("path") > 0.0);
    // The receiver's interface counters: every probe it took crossed one.
    let rx_ifs: f64 = fin
        .iter()
        .filter(|(k, _)| {
            k.starts_with("wirelab_host_counter_delta_total{counter=if/")
                && k.ends_with("/rx_packets,host=rx}")
        })
        .map(|(_, v)| v)
        .sum();
    assert!(rx_ifs >= sum("received"), "{rx_ifs}");
    let done = rows.iter().find(|r| r["status"] == "done").unwrap();
    assert_eq!(done["lost"], 0, "{done}");
    assert_eq!(fin["wirelab_points{state=done}"], 1.0);
    assert_eq!(fin["wirelab_points{state=aborted}"], 1.0);
    assert_eq!(fin["wirelab_points{state=pending}"], 0.0);
    assert_eq!(fin["wirelab_points{state=running}"], 0.0);
    assert_eq!(fin["wirelab_aborts_total{reason=lost_gt}"], 1.0);
    // The clock offset of the flow's host pair, within its uncertainty of
    // 0 (one machine).
    let series = |name: &str| -> f64 {
        let k = fin
            .keys()
            .find(|k| k.starts_with(name))
            .unwrap_or_else(|| panic!("no {name}"));
        fin[k]
    };
    let u = series("wirelab_clock_uncertainty_seconds{");
    assert!(
        u > 0.0 && series("wirelab_clock_offset_seconds{").abs() <= u,
        "U {u}"
    );
    // Some scrape saw a point running, with its parameters as labels.
    assert!(
        scrapes.iter().any(|s| s
            .keys()
            .any(|k| k.starts_with("wirelab_point_info{") && k.contains("loss="))),
        "no scrape saw a running point"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

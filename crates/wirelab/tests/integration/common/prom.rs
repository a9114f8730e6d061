//! `wirelab run`'s /metrics: one scrape over HTTP, and the samples as the
//! Prometheus project's own parser (Python prometheus_client) reads them.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

/// One HTTP GET of /metrics: the body, if the server answered 200.
pub fn scrape(addr: &str) -> Option<String> {
    let mut s = TcpStream::connect(addr).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    write!(
        s,
        "GET /metrics HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .ok()?;
    let mut resp = String::new();
    s.read_to_string(&mut resp).ok()?;
    let (head, body) = resp.split_once("\r\n\r\n")?;
    head.starts_with("HTTP/1.1 200").then(|| {
        assert!(
            head.to_ascii_lowercase()
                .contains("content-type: text/plain; version=0.0.4"),
            "{head}"
        );
        body.to_string()
    })
}

/// The samples of each scrape as the Prometheus parser read them: per
/// scrape, "name{labels}" → value.
pub fn parse(files: &[PathBuf]) -> Vec<BTreeMap<String, f64>> {
    let script = r#"
import json, sys
from prometheus_client.parser import text_string_to_metric_families
out = []
for path in sys.argv[1:]:
    text = open(path).read()
    samples = {}
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            labels = ",".join(f"{k}={v}" for k, v in sorted(s.labels.items()))
            samples[f"{s.name}{{{labels}}}"] = s.value
    out.append(samples)
print(json.dumps(out))
"#;
    let out = Command::new("python3")
        .arg("-c")
        .arg(script)
        .args(files)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "the Prometheus parser refused a scrape: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

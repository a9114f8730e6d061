//! Live campaign metrics in the Prometheus text exposition format
//! (`wirelab run --metrics-listen ADDR`, `[metrics] listen`).
//!
//! [`Metrics`] is fed the runner's [`Event`]s and holds the series;
//! [`Server`] serves them on `GET /metrics` from a thread of its own.
//!
//! Flow series are labelled by flow name only, so that their number does
//! not grow with the campaign's points: the counters (`*_total`) and the
//! OWD histogram add up each finished point's results (the analysis of its
//! record files, as in `summary.json`), so they never decrease and their
//! final values are the sums of the points' results. While a point runs,
//! the receivers' status files feed the `*_live` gauges, estimates (a
//! duplicate counts as received, tail loss is not seen yet) that go back to
//! 0 when the point ends; `wirelab_point_info` names the point running.

use crate::attribution::counters_file;
use crate::bundle::{self, PointFile, PointStatus};
use crate::campaign::Event;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::{Registry, Unit};
use std::io;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};
use thiserror::Error;
use wirelab_analysis::{Arrival, FlowConfig, FlowStats};
use wirelab_host::counters::{Delta, Snapshot};
use wirelab_wire::probe::ProbeFlags;
use wirelab_wire::{RecordError, RecordKind, RecordReader};

/// The point states counted by `wirelab_points`.
const STATES: [&str; 6] = [
    "pending",
    "running",
    "done",
    "aborted",
    "failed",
    "interrupted",
];

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct FlowLabels {
    flow: String,
}

/// A host pair of a flow: sender's host, receiver's host.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct PairLabels {
    from: String,
    to: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct CauseLabels {
    flow: String,
    cause: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct HostLabels {
    host: String,
    counter: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct StressorLabels {
    host: String,
    kind: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct StateLabels {
    state: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ReasonLabels {
    reason: String,
}

type FloatGauge = Gauge<f64, AtomicU64>;

#[derive(Default)]
struct State {
    current: Option<Vec<(String, String)>>,
    counted: std::collections::HashSet<String>,
}

/// The campaign's series, fed with [`Metrics::event`].
pub struct Metrics {
    registry: Registry,
    sent: Family<FlowLabels, Counter>,
    received: Family<FlowLabels, Counter>,
    lost: Family<FlowLabels, Counter>,
    duplicates: Family<FlowLabels, Counter>,
    timer_misses: Family<FlowLabels, Counter>,
    owd: Family<FlowLabels, Histogram>,
    live_received: Family<FlowLabels, Gauge>,
    live_lost: Family<FlowLabels, Gauge>,
    lost_by_cause: Family<CauseLabels, Counter>,
    host_counters: Family<HostLabels, Counter>,
    stressors_up: Family<StressorLabels, Gauge>,
    stressor_cpu: Family<StressorLabels, Counter<f64, AtomicU64>>,
    points: Family<StateLabels, Gauge>,
    aborts: Family<ReasonLabels, Counter>,
    point_info: Family<Vec<(String, String)>, Gauge>,
    point_seconds: FloatGauge,
    clock_offset: Family<PairLabels, FloatGauge>,
    clock_uncertainty: Family<PairLabels, FloatGauge>,
    /// The labels of `wirelab_point_info` of the point running, and the
    /// points whose results are in the counters (each is added once).
    state: Mutex<State>,
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    pub fn new() -> Metrics {
        let m = Metrics {
            registry: Registry::with_prefix("wirelab"),
            sent: Family::default(),
            received: Family::default(),
            lost: Family::default(),
            duplicates: Family::default(),
            timer_misses: Family::default(),
            // 1 µs to about 16 s, doubling.
            owd: Family::new_with_constructor(|| {
                Histogram::new(exponential_buckets(1e-6, 2.0, 25))
            }),
            live_received: Family::default(),
            live_lost: Family::default(),
            lost_by_cause: Family::default(),
            host_counters: Family::default(),
            stressors_up: Family::default(),
            stressor_cpu: Family::default(),
            points: Family::default(),
            aborts: Family::default(),
            point_info: Family::default(),
            point_seconds: FloatGauge::default(),
            clock_offset: Family::default(),
            clock_uncertainty: Family::default(),
            state: Mutex::default(),
        };
        let mut r = Registry::with_prefix("wirelab");
        // Registration order is the order of the exposition.
        m.register_flow_series(&mut r);
        m.register_host_series(&mut r);
        m.register_point_series(&mut r);
        m.register_clock_series(&mut r);
        for s in STATES {
            m.points.get_or_create(&state(s)).set(0);
        }
        Metrics { registry: r, ..m }
    }

    /// Per-flow series: the finished points' counts and delays, and the
    /// running point's live counts.
    fn register_flow_series(&self, r: &mut Registry) {
        r.register(
            "flow_sent_packets",
            "Probes a flow's senders sent in the finished points",
            self.sent.clone(),
        );
        r.register(
            "flow_received_packets",
            "Probes a flow's receivers received (duplicates not counted) in the finished points",
            self.received.clone(),
        );
        r.register(
            "flow_lost_packets",
            "Probes of a flow lost in the finished points, against the senders' counts",
            self.lost.clone(),
        );
        r.register(
            "flow_duplicate_packets",
            "Duplicate probes of a flow received in the finished points",
            self.duplicates.clone(),
        );
        r.register(
            "flow_timer_misses",
            "Departures of a flow that missed their deadline in the finished points",
            self.timer_misses.clone(),
        );
        r.register_with_unit(
        "flow_owd",
        "One-way delay of each probe of a flow received in the finished points (receive minus send stamp)",
        Unit::Seconds,
        self.owd.clone(),
    );
        r.register(
            "flow_live_received_packets",
            "Probes received so far in the running point, from the receiver's status \
         (duplicates included); 0 once the point ends",
            self.live_received.clone(),
        );
        r.register(
            "flow_live_lost_packets",
            "Probes lost so far in the running point against the highest sequence seen; 0 once \
         the point ends",
            self.live_lost.clone(),
        );
        r.register(
            "flow_lost_attributed_packets",
            "Lost probes of a flow in the finished points by cause (sender, path, rx_nic, \
         rx_stack, unexplained), from the hosts' counters and the emulator's drops",
            self.lost_by_cause.clone(),
        );
    }

    /// Per-host series: NIC and stack counters, and stressors.
    fn register_host_series(&self, r: &mut Registry) {
        r.register(
            "host_counter_delta",
            "A host's NIC and stack counters (interface statistics, /proc/net/snmp Udp and \
         Ip, softnet, qdisc drops): the change over each finished point, added up",
            self.host_counters.clone(),
        );
        r.register(
            "stressors_up",
            "Stressors of each kind running on a host",
            self.stressors_up.clone(),
        );
        r.register_with_unit(
            "stressor_cpu",
            "CPU time (user + system) of everything a stressor ran, finished points added up",
            Unit::Seconds,
            self.stressor_cpu.clone(),
        );
    }

    /// The campaign's progress: points by state, aborts, the running point.
    fn register_point_series(&self, r: &mut Registry) {
        r.register(
            "points",
            "Points of the campaign by state",
            self.points.clone(),
        );
        r.register(
            "aborts",
            "Points aborted, by the criterion that fired",
            self.aborts.clone(),
        );
        r.register(
            "point_info",
            "The point running (1) with its id and parameters as labels",
            self.point_info.clone(),
        );
        r.register_with_unit(
            "point_elapsed",
            "Time since the running point's T0 (0 between points)",
            Unit::Seconds,
            self.point_seconds.clone(),
        );
    }

    /// Clock offsets between host pairs.
    fn register_clock_series(&self, r: &mut Registry) {
        r.register_with_unit(
            "clock_offset",
            "Receiver's clock minus sender's of a host pair at the last finished point's T0, \
         from probes before and after the point",
            Unit::Seconds,
            self.clock_offset.clone(),
        );
        r.register_with_unit(
            "clock_uncertainty",
            "Uncertainty U of wirelab_clock_offset_seconds: the true offset is within ± this",
            Unit::Seconds,
            self.clock_uncertainty.clone(),
        );
    }

    /// Updates the series with one event of the runner. The series are
    /// shared with the server's thread, which renders them meanwhile: a
    /// point's results are read (its record files analysed) without
    /// holding anything a scrape waits for.
    pub fn event(&self, e: &Event<'_>) {
        match e {
            Event::Started { points, .. } => {
                self.points
                    .get_or_create(&state("pending"))
                    .set(*points as i64);
            }
            Event::Point { point, .. } => {
                self.points.get_or_create(&state("pending")).dec();
                self.points.get_or_create(&state("running")).set(1);
                let mut labels = vec![("point".to_string(), point.id.clone())];
                labels.extend(
                    point
                        .params
                        .iter()
                        .map(|(k, v)| (label_name(k), v.to_string())),
                );
                self.point_info.get_or_create(&labels).set(1);
                self.point_seconds.set(0.0);
                self.state().current = Some(labels);
            }
            Event::Flow {
                name,
                received,
                lost,
            } => {
                let l = flow(name);
                self.live_received.get_or_create(&l).set(*received as i64);
                self.live_lost.get_or_create(&l).set(*lost as i64);
            }
            Event::Tick { elapsed } => {
                self.point_seconds.set(elapsed.as_secs_f64());
            }
            Event::PointEnded {
                status, dir, file, ..
            } => {
                if let Some(labels) = self.state().current.take() {
                    self.point_info.remove(&labels);
                }
                self.points.get_or_create(&state("running")).set(0);
                self.points.get_or_create(&state(status.as_str())).inc();
                self.point_seconds.set(0.0);
                self.live_received.clear();
                self.live_lost.clear();
                if let Some(f) = file.filter(|f| self.state().counted.insert(f.id.clone())) {
                    if f.status == PointStatus::Aborted {
                        let why = f.abort_criterion.as_deref().unwrap_or("unknown");
                        self.aborts.get_or_create(&reason(why)).inc();
                    }
                    self.results(dir, f);
                }
            }
            Event::Stressors(up) => {
                self.stressors_up.clear();
                for (host, kind) in up.iter() {
                    self.stressors_up
                        .get_or_create(&StressorLabels {
                            host: host.clone(),
                            kind: kind.clone(),
                        })
                        .inc();
                }
            }
            Event::Note(_) | Event::Warning(_) => {}
        }
    }

    /// Adds a finished point's per-flow results, as `summary.json` has
    /// them.
    fn results(&self, dir: &Path, p: &PointFile) {
        for r in bundle::point_rows(dir, p) {
            let l = flow(&r.flow);
            let add = |f: &Family<FlowLabels, Counter>, v: Option<u64>| {
                f.get_or_create(&l).inc_by(v.unwrap_or(0));
            };
            add(&self.sent, r.sent);
            add(&self.received, r.received);
            add(&self.lost, r.lost);
            add(&self.duplicates, r.duplicates);
            add(&self.timer_misses, r.timer_misses);
            for (cause, v) in [
                ("sender", r.lost_sender),
                ("path", r.lost_path),
                ("rx_nic", r.lost_rx_nic),
                ("rx_stack", r.lost_rx_stack),
                ("unexplained", r.lost_unexplained),
            ] {
                if let Some(v) = v {
                    self.lost_by_cause
                        .get_or_create(&CauseLabels {
                            flow: r.flow.clone(),
                            cause: cause.into(),
                        })
                        .inc_by(v);
                }
            }
        }
        for s in &p.stressors {
            let cpu = s.user_s.unwrap_or(0.0) + s.system_s.unwrap_or(0.0);
            self.stressor_cpu
                .get_or_create(&StressorLabels {
                    host: s.host.clone(),
                    kind: s.kind.clone(),
                })
                .inc_by(cpu);
        }
        for (host, delta) in host_deltas(dir) {
            for (counter, v) in delta {
                self.host_counters
                    .get_or_create(&HostLabels {
                        host: host.clone(),
                        counter,
                    })
                    .inc_by(v);
            }
        }
        for f in &p.flows {
            let clock = f.clock.as_ref().map(|c| c.correction());
            if let Some(rx) = &f.rx {
                // An unreadable record file adds nothing; the summary row
                // carries the error.
                let h = self.owd.get_or_create(&flow(&f.name));
                let _ = observe_owd(&dir.join(rx), f.flow_id, clock.as_ref(), &h);
            }
            if let Some(c) = &f.clock {
                let l = PairLabels {
                    from: f.from.clone(),
                    to: f.to.clone(),
                };
                self.clock_offset
                    .get_or_create(&l)
                    .set(c.offset_ns as f64 / 1e9);
                self.clock_uncertainty
                    .get_or_create(&l)
                    .set(c.uncertainty_ns as f64 / 1e9);
            }
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The exposition text (`text/plain; version=0.0.4`).
    pub fn render(&self) -> String {
        let mut s = String::new();
        // Writing to a String cannot fail.
        let _ = prometheus_client::encoding::prometheus_text::encode(&mut s, &self.registry);
        s
    }
}

/// The counters of [`host_deltas`]: what explains a loss, and the traffic
/// it is weighed against.
fn exported(name: &str) -> bool {
    const SNMP: [&str; 6] = [
        "snmp/Udp.InErrors",
        "snmp/Udp.RcvbufErrors",
        "snmp/Udp.SndbufErrors",
        "snmp/Udp.NoPorts",
        "snmp/Ip.ReasmFails",
        "snmp/Ip.FragCreates",
    ];
    const IF: [&str; 8] = [
        "/rx_packets",
        "/tx_packets",
        "/rx_dropped",
        "/tx_dropped",
        "/rx_errors",
        "/tx_errors",
        "/rx_missed_errors",
        "/rx_fifo_errors",
    ];
    SNMP.contains(&name)
        || name == "softnet/dropped"
        || (name.starts_with("if/") && IF.iter().any(|s| name.ends_with(s)))
        || (name.starts_with("qdisc/") && name.ends_with("/drops"))
}

/// Per host of a finished point, the change of each exported counter
/// between its `counters/<host>.before.json` and `.after.json` (hosts
/// without both files are left out).
fn host_deltas(dir: &Path) -> Vec<(String, Vec<(String, u64)>)> {
    let read =
        |p: &Path| -> Option<Snapshot> { serde_json::from_slice(&std::fs::read(p).ok()?).ok() };
    let Ok(entries) = std::fs::read_dir(dir.join("counters")) else {
        return vec![];
    };
    let mut hosts: Vec<String> = entries
        .filter_map(|e| {
            let name = e.ok()?.file_name().into_string().ok()?;
            name.strip_suffix(".before.json").map(str::to_string)
        })
        .collect();
    hosts.sort();
    hosts
        .into_iter()
        .filter_map(|h| {
            let before = read(&dir.join(counters_file(&h, "before")))?;
            let after = read(&dir.join(counters_file(&h, "after")))?;
            let d = Delta::between(&before, &after);
            let v = d.values.into_iter().filter(|(k, _)| exported(k)).collect();
            Some((h, v))
        })
        .collect()
}

fn flow(name: &str) -> FlowLabels {
    FlowLabels { flow: name.into() }
}

fn state(s: &str) -> StateLabels {
    StateLabels { state: s.into() }
}

fn reason(s: &str) -> ReasonLabels {
    ReasonLabels { reason: s.into() }
}

/// A sweep key as a label name: `emulate.delay` → `emulate_delay`.
fn label_name(k: &str) -> String {
    let mut s: String = k
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    if s.starts_with(|c: char| c.is_ascii_digit()) || s == "point" {
        s.insert(0, '_');
    }
    s
}

/// Each received probe's one-way delay of `flow` in a receiver's record
/// file, in seconds, into `h` (receive stamps corrected by `clock`, as the
/// summary's); duplicates, warm-up probes and repeated end markers are
/// left out, as the analysis leaves them out. Streamed: records are not
/// held.
fn observe_owd(
    path: &Path,
    flow: u32,
    clock: Option<&wirelab_analysis::ClockCorrection>,
    h: &Histogram,
) -> Result<(), RecordError> {
    let f = std::fs::File::open(path)?;
    let mut r = RecordReader::new(io::BufReader::new(f))?;
    // The analysis's own classification of each arrival decides what is a
    // result: a duplicate, a warm-up probe or a repeated end marker is not,
    // while the first copy of a probe counts even when it came as an end
    // marker (the original lost on the way). The histogram's count then
    // equals the summary's `received`.
    let mut stats = FlowStats::new(flow, FlowConfig::default());
    while let Some(rec) = r.next_record()? {
        if rec.kind != RecordKind::Rx || rec.flow != flow {
            continue;
        }
        let rx = clock.map_or(rec.rx_ns, |c| c.to_sender_clock(rec.rx_ns));
        let arrival = stats.observe(
            rec.seq,
            rec.tx_ns,
            rx,
            rec.size,
            ProbeFlags(rec.probe_flags),
        );
        if arrival == Arrival::Measured && rec.tx_ns > 0 && rx > 0 {
            h.observe((rx as i128 - rec.tx_ns as i128) as f64 / 1e9);
        }
    }
    Ok(())
}

#[derive(Debug, Error)]
pub enum MetricsError {
    #[error(
        "cannot serve metrics on {addr}: {message} (pick a free ADDRESS:PORT with \
         --metrics-listen or [metrics] listen)"
    )]
    Listen { addr: SocketAddr, message: String },
}

/// `GET /metrics` served on a thread until dropped.
pub struct Server {
    http: Arc<tiny_http::Server>,
    thread: Option<std::thread::JoinHandle<()>>,
    addr: SocketAddr,
}

impl Server {
    /// Listens on `addr` and serves `metrics`.
    pub fn start(addr: SocketAddr, metrics: Arc<Metrics>) -> Result<Server, MetricsError> {
        let http = tiny_http::Server::http(addr).map_err(|e| MetricsError::Listen {
            addr,
            message: e.to_string(),
        })?;
        let bound = http.server_addr().to_ip().unwrap_or(addr);
        let http = Arc::new(http);
        let h = http.clone();
        let thread = std::thread::Builder::new()
            .name("metrics".into())
            .spawn(move || serve(&h, &metrics))
            .map_err(|e| MetricsError::Listen {
                addr,
                message: e.to_string(),
            })?;
        Ok(Server {
            http,
            thread: Some(thread),
            addr: bound,
        })
    }

    /// The address it listens on (the port chosen when 0 was asked).
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.http.unblock();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn serve(http: &tiny_http::Server, metrics: &Metrics) {
    use tiny_http::{Header, Method, Response};
    let text_type = Header::from_bytes(
        &b"Content-Type"[..],
        prometheus_client::encoding::prometheus_text::CONTENT_TYPE.as_bytes(),
    )
    .expect("a valid header");
    for req in http.incoming_requests() {
        let path = req.url().split('?').next().unwrap_or("");
        let resp = match (req.method(), path) {
            (Method::Get | Method::Head, "/metrics") => {
                Response::from_string(metrics.render()).with_header(text_type.clone())
            }
            (Method::Get | Method::Head, _) => {
                Response::from_string("wirelab run: metrics are at /metrics\n")
                    .with_status_code(404)
            }
            _ => Response::from_string("GET /metrics\n").with_status_code(405),
        };
        // A scraper that went away is its own business.
        let _ = req.respond(resp);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A receiver's file at the end of an aborted, lossy point: the final
    /// probe (seq 3) lost and only its end-marker copies arrived, plus a
    /// duplicate and a warm-up probe. The histogram holds exactly the
    /// probes the analysis counts as received.
    #[test]
    fn owd_histogram_counts_what_the_analysis_receives() {
        use wirelab_wire::record::{RecordFileHeader, Role};
        use wirelab_wire::Record;
        let rx = |seq: u64, flags: u8| Record {
            flow: 1,
            size: 64,
            seq,
            tx_ns: 1_000_000 + seq * 1_000,
            rx_ns: 1_500_000 + seq * 1_000,
            probe_flags: flags,
            kind: RecordKind::Rx,
            ..Record::default()
        };
        let (last, warm) = (ProbeFlags::LAST, ProbeFlags::WARMUP);
        let records = [
            rx(0, warm),
            rx(1, 0),
            rx(2, 0),
            rx(2, 0),
            rx(3, last),
            rx(3, last),
            rx(3, last),
        ];
        let header = RecordFileHeader {
            role: Role::Receiver,
            metadata: "{}".into(),
        };
        let dir = std::env::temp_dir().join(format!("wl-metrics-owd-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("rx.wlr");
        std::fs::write(&path, header.file_with(&records)).unwrap();
        let mut stats = FlowStats::new(1, FlowConfig::default());
        for r in &records {
            stats.observe(r.seq, r.tx_ns, r.rx_ns, r.size, ProbeFlags(r.probe_flags));
        }
        let received = stats.finish(None).received;
        let m = Metrics::new();
        observe_owd(&path, 1, None, &m.owd.get_or_create(&flow("f"))).unwrap();
        let text = m.render();
        let _ = std::fs::remove_dir_all(&dir);
        // Seqs 1, 2 and 3 (its first end-marker copy): not the warm-up
        // probe, the duplicate or the marker's repeats.
        assert_eq!(received, Some(3));
        assert!(
            text.contains("wirelab_flow_owd_seconds_count{flow=\"f\"} 3\n"),
            "{text}"
        );
    }

    #[test]
    fn label_names_are_prometheus_names() {
        assert_eq!(label_name("emulate.delay"), "emulate_delay");
        assert_eq!(label_name("size"), "size");
        assert_eq!(label_name("9x"), "_9x");
        assert_eq!(label_name("point"), "_point");
    }

    #[test]
    fn every_series_is_exposed_in_registration_order() {
        // A family without series is not exposed: give each one.
        let m = Metrics::new();
        let flow = FlowLabels { flow: "f".into() };
        for f in [
            &m.sent,
            &m.received,
            &m.lost,
            &m.duplicates,
            &m.timer_misses,
        ] {
            f.get_or_create(&flow).inc();
        }
        m.owd.get_or_create(&flow).observe(1e-3);
        m.live_received.get_or_create(&flow).set(1);
        m.live_lost.get_or_create(&flow).set(1);
        let cause = CauseLabels {
            flow: "f".into(),
            cause: "path".into(),
        };
        m.lost_by_cause.get_or_create(&cause).inc();
        let counter = HostLabels {
            host: "h".into(),
            counter: "c".into(),
        };
        m.host_counters.get_or_create(&counter).inc();
        let stressor = StressorLabels {
            host: "h".into(),
            kind: "cpu".into(),
        };
        m.stressors_up.get_or_create(&stressor).set(1);
        m.stressor_cpu.get_or_create(&stressor).inc_by(1.0);
        let reason = ReasonLabels {
            reason: "lost_gt".into(),
        };
        m.aborts.get_or_create(&reason).inc();
        m.point_info
            .get_or_create(&vec![("id".into(), "p".into())])
            .set(1);
        let pair = PairLabels {
            from: "a".into(),
            to: "b".into(),
        };
        m.clock_offset.get_or_create(&pair).set(0.0);
        m.clock_uncertainty.get_or_create(&pair).set(0.0);
        let text = m.render();
        let helped: Vec<&str> = text
            .lines()
            .filter_map(|l| l.strip_prefix("# HELP "))
            .filter_map(|l| l.split(' ').next())
            .collect();
        let want = [
            "flow_sent_packets_total",
            "flow_received_packets_total",
            "flow_lost_packets_total",
            "flow_duplicate_packets_total",
            "flow_timer_misses_total",
            "flow_owd_seconds",
            "flow_live_received_packets",
            "flow_live_lost_packets",
            "flow_lost_attributed_packets_total",
            "host_counter_delta_total",
            "stressors_up",
            "stressor_cpu_seconds_total",
            "points",
            "aborts_total",
            "point_info",
            "point_elapsed_seconds",
            "clock_offset_seconds",
            "clock_uncertainty_seconds",
        ]
        .map(|n| format!("wirelab_{n}"));
        assert_eq!(helped, want);
        assert!(
            text.contains("wirelab_points{state=\"pending\"} 0"),
            "{text}"
        );
    }
}

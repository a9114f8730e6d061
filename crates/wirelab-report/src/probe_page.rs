//! The probe report page: inputs, configuration and environment, the
//! analysis summary table, the figures, and the `wirelab.analysis/1` JSON.

use crate::bucket::LinearHist;
use crate::error::ReportError;
use crate::html::{value_text, Cell, Page};
use crate::plot::{self, ns_unit};
use crate::probes::ProbeData;
use crate::source::Side;
use wirelab_analysis::capture::rtp::RTP_HEADS;
use wirelab_analysis::text::{fmt_bps, fmt_ns, fmt_pps};
use wirelab_analysis::{DelayStats, FlowReport};

/// Figure titles, in page order (receiver figures, then the sender's).
pub const RX_FIGURES: [&str; 9] = [
    "One-way delay over time",
    "One-way delay CDF",
    "One-way delay histogram",
    "Inter-arrival time histogram",
    "IPDV histogram",
    "Loss-burst lengths",
    "Reordering extent",
    "Throughput per window",
    "Packet rate per window",
];
pub const TX_FIGURES: [&str; 1] = ["Send lateness over time"];

fn ns_cell(v: Option<f64>) -> Cell {
    match v {
        Some(v) => Cell::num(fmt_ns(v), v),
        None => Cell::text("-"),
    }
}

fn opt<T, U>(v: Option<T>, f: impl FnOnce(T) -> Option<U>) -> Option<U> {
    v.and_then(f)
}

fn row(name: String, f: &FlowReport, lat: Option<&DelayStats>) -> Vec<Cell> {
    let rx = f.receiver.as_ref();
    let tx = f.sender.as_ref();
    let lat_v = |g: fn(&DelayStats) -> f64| lat.map(g);
    vec![
        Cell::text(name),
        Cell::count(f.sent),
        Cell::count(f.received),
        Cell::count(f.lost),
        match f.loss_ratio {
            Some(r) => Cell::num(format!("{:.4} %", r * 100.0), r),
            None => Cell::text("-"),
        },
        Cell::count(f.duplicates),
        Cell::count(f.reordered),
        ns_cell(lat_v(|l| l.min_ns as f64)),
        ns_cell(lat_v(|l| l.mean_ns)),
        ns_cell(lat_v(|l| l.p50_ns as f64)),
        ns_cell(lat_v(|l| l.p99_ns as f64)),
        ns_cell(lat_v(|l| l.max_ns as f64)),
        ns_cell(opt(rx, |r| r.ipdv.as_ref().map(|i| i.p99_abs_ns as f64))),
        ns_cell(opt(rx, |r| r.jitter_ns)),
        match opt(rx, |r| r.rate.as_ref()?.rate_pps) {
            Some(v) => Cell::num(fmt_pps(v), v),
            None => Cell::text("-"),
        },
        match opt(rx, |r| r.rate.as_ref()?.payload_bps) {
            Some(v) => Cell::num(fmt_bps(v), v),
            None => Cell::text("-"),
        },
        ns_cell(opt(tx, |t| t.lateness.as_ref().map(|l| l.p99_ns as f64))),
        Cell::count(opt(tx, |t| t.late)),
        match opt(tx, |t| t.departure.as_ref()?.ks_distance) {
            Some(v) => Cell::num(format!("{v:.4}"), v),
            None => Cell::text("-"),
        },
    ]
}

const HEADS: [&str; 19] = [
    "flow",
    "sent",
    "received",
    "lost",
    "loss",
    "dup",
    "reordered",
    "OWD min",
    "OWD mean",
    "OWD p50",
    "OWD p99",
    "OWD max",
    "IPDV p99 |abs|",
    "jitter",
    "rx rate",
    "rx payload",
    "lateness p99",
    "late",
    "KS interval",
];

/// The summary table's rows: one per flow, then the totals.
pub fn summary_rows(d: &ProbeData) -> Vec<Vec<Cell>> {
    let mut rows: Vec<Vec<Cell>> = d
        .summary
        .flows
        .iter()
        .map(|f| row(f.flow.to_string(), f, f.latency.as_ref()))
        .collect();
    let t = &d.summary.totals;
    let mut total = FlowReport::empty(0);
    total.sent = t.sent;
    total.received = t.received;
    total.lost = t.lost;
    total.loss_ratio = t.loss_ratio;
    total.duplicates = t.duplicates;
    total.reordered = t.reordered;
    let mut r = row("total".into(), &total, t.latency.as_ref());
    for c in r.iter_mut().skip(12) {
        *c = Cell::text("");
    }
    rows.push(r);
    rows
}

fn hist_bars(h: &LinearHist, div: f64) -> Vec<(f64, f64, f64)> {
    h.bins()
        .into_iter()
        .map(|(a, b, c)| (a as f64 / div, b as f64 / div, c as f64))
        .collect()
}

fn outside(h: &LinearHist) -> String {
    if h.below + h.above == 0 {
        String::new()
    } else {
        format!(
            " {} values below and {} above the range are not drawn.",
            h.below, h.above
        )
    }
}

/// Renders the page.
pub fn render(d: &ProbeData, title: &str) -> Result<String, ReportError> {
    let mut p = Page::new(title);
    // Captures of RTP alone have no probes: no probe summary, no delay note.
    let probes = !d.summary.flows.is_empty();
    p.para(&match probes {
        true => format!(
            "wirelab {} — probe report. {}",
            env!("CARGO_PKG_VERSION"),
            wirelab_analysis::OWD_CLOCK_NOTE
        ),
        false => format!(
            "wirelab {} — report of captures: no wirelab or LUNA probes in them.",
            env!("CARGO_PKG_VERSION")
        ),
    });

    p.h2("Inputs");
    let rows: Vec<Vec<Cell>> = d
        .sources
        .iter()
        .map(|(i, e)| {
            vec![
                Cell::text(i.name.clone()),
                Cell::text(match i.side {
                    Side::Sender => "sender",
                    Side::Receiver => "receiver",
                }),
                Cell::count(Some(e.records)),
                Cell::count(Some(e.ignored)),
                Cell::count(Some(e.unknown_kind)),
                Cell::count(Some(e.partial_bytes as u64)),
            ]
        })
        .collect();
    p.table(
        &[
            "file",
            "side",
            "records",
            "ignored",
            "unknown kind",
            "partial bytes at end",
        ],
        &rows,
        false,
    );

    if probes {
        p.h2("Summary");
        p.table(&HEADS, &summary_rows(d), true);
    }
    for w in &d.summary.warnings {
        p.warning(&w.message);
    }

    if !d.captures.is_empty() {
        captures(d, &mut p);
    }

    if d.has_rx() {
        p.h2("Receiver");
        figures_rx(d, &mut p)?;
    }
    if d.has_tx() {
        p.h2("Sender");
        let t0 = d.span.map_or(0, |s| s.0);
        if let Some(env) = &d.lateness {
            let svg = plot::envelope(&env.points(), env.width(), t0, &[], "", "lateness")?;
            p.figure(
                TX_FIGURES[0],
                &svg,
                &format!(
                    "Send time minus scheduled time per probe, in buckets of {}: min–max band, \
                     p50 and p99.",
                    fmt_ns(env.width() as f64)
                ),
            );
        } else {
            let svg = plot::envelope(&[], 1, 0, &[], "", "lateness")?;
            p.figure(
                TX_FIGURES[0],
                &svg,
                "No scheduled probes: no lateness to show.",
            );
        }
    }
    p.h2("Configuration and environment");
    p.begin_row();
    for (i, _) in &d.sources {
        p.begin_block(&i.name);
        let Some(serde_json::Value::Object(m)) = &i.metadata else {
            p.para("no metadata");
            p.end_block();
            continue;
        };
        let mut kv = Vec::new();
        for (k, v) in m {
            match v {
                serde_json::Value::Object(inner) => {
                    for (k2, v2) in inner {
                        kv.push((format!("{k}.{k2}"), value_text(v2)));
                    }
                }
                v => kv.push((k.clone(), value_text(v))),
            }
        }
        p.kv(&kv);
        p.end_block();
    }
    p.end_row();

    p.details(
        "wirelab.analysis/1 (the numbers above)",
        &d.summary.to_json()?,
    );
    Ok(p.finish())
}

/// What each capture held (`analyze`'s capture line) and its RTP streams.
fn captures(d: &ProbeData, p: &mut Page) {
    use wirelab_analysis::capture::source_name;
    p.h2("Captures");
    let rows: Vec<Vec<Cell>> = d
        .captures
        .iter()
        .map(|(c, _)| {
            let n = &c.counts;
            let mut row = vec![Cell::text(c.file.clone())];
            row.extend(
                [
                    n.frames,
                    n.udp,
                    n.probes,
                    n.luna_probes,
                    n.echo_replies,
                    n.rtp_packets,
                    n.other_udp,
                    n.not_ip,
                    n.other_ip,
                    n.later_fragments,
                    n.truncated,
                ]
                .map(|v| Cell::count(Some(v))),
            );
            row
        })
        .collect();
    p.table(
        &[
            "capture",
            "frames",
            "UDP",
            "wirelab probes",
            "LUNA probes",
            "echo replies",
            "RTP packets",
            "other UDP",
            "not IP",
            "other IP",
            "later fragments",
            "cut short",
        ],
        &rows,
        false,
    );
    for (c, _) in &d.captures {
        if let Some(e) = &c.error {
            p.warning(&format!(
                "{}: {e}: the {} frames before it are reported (the rest of the file is \
                 unreadable; a capture cut short by a crash ends like this)",
                c.file, c.counts.frames
            ));
        }
        if !c.counts.unknown_linktypes.is_empty() {
            p.warning(&format!(
                "{}: skipped frames of link types this wirelab does not read (type, frames): \
                 {:?}",
                c.file, c.counts.unknown_linktypes
            ));
        }
        for l in &c.luna_sources {
            p.para(&format!("{}: LUNA flow {} = {}", c.file, l.flow, l.source));
        }
    }
    for (_, r) in d.captures.iter().filter(|(_, r)| !r.streams.is_empty()) {
        p.h2(&format!("RTP streams in {}", r.file));
        let ms = |v: Option<f64>| match v {
            Some(v) => Cell::num(format!("{v:.3}ms"), v),
            None => Cell::text("-"),
        };
        let rows: Vec<Vec<Cell>> = r
            .streams
            .iter()
            .map(|s| {
                vec![
                    Cell::text(source_name(&s.src, s.src_port)),
                    Cell::text(source_name(&s.dst, s.dst_port)),
                    Cell::num(format!("0x{:08x}", s.ssrc), f64::from(s.ssrc)),
                    Cell::num(s.payload_type.to_string(), f64::from(s.payload_type)),
                    Cell::count(Some(s.packets)),
                    Cell::num(s.lost.to_string(), s.lost as f64),
                    Cell::count(Some(s.sequence_errors)),
                    Cell::count(Some(s.duplicates)),
                    Cell::count(Some(s.wraps)),
                    Cell::count(Some(s.late)),
                    ms(Some(s.max_delta_ms)),
                    ms(s.mean_jitter_ms),
                    ms(s.max_jitter_ms),
                ]
            })
            .collect();
        p.table(&RTP_HEADS, &rows, true);
        if r.streams.iter().any(|s| s.max_jitter_ms.is_none()) {
            p.para(
                "jitter '-': a dynamic payload type without a clock rate; give it with \
                 --rtp-clock PT=HZ",
            );
        }
        if r.packets_over_cap > 0 {
            p.warning(&format!(
                "{} packets of streams beyond --max-flows were not analysed",
                r.packets_over_cap
            ));
        }
    }
}

/// The receiver's figures, in the order of [`RX_FIGURES`].
fn figures_rx(d: &ProbeData, p: &mut Page) -> Result<(), ReportError> {
    figure_owd_over_time(d, p)?;
    figures_owd_distribution(d, p)?;
    figure_interarrival(d, p)?;
    figure_ipdv(d, p)?;
    figures_loss_bursts_and_reordering(d, p)?;
    figures_rates(d, p)
}

/// 1. One-way delay over time, with loss marks.
fn figure_owd_over_time(d: &ProbeData, p: &mut Page) -> Result<(), ReportError> {
    let t0 = d.span.map_or(0, |s| s.0);
    let lost: u64 = d.summary.totals.lost.unwrap_or(0);
    let (svg, cap) = match &d.owd {
        Some(env) => {
            let marks = env.marks();
            let how = if d.loss_exact {
                "red marks: packets sent in the bucket and never received"
            } else {
                "red marks: the first lost sequence numbers (at most 100 per flow), placed \
                 between their flow's neighbours (no sender records)"
            };
            (
                plot::envelope(&env.points(), env.width(), t0, &marks, "lost", "one-way delay")?,
                format!(
                    "By send time, buckets of {}: min–max band, p50 and p99; {how}. {lost} lost in all.",
                    fmt_ns(env.width() as f64)
                ),
            )
        }
        None => (
            plot::envelope(&[], 1, 0, &[], "", "one-way delay")?,
            "No probe carried both a send and a receive time.".to_string(),
        ),
    };
    p.figure(RX_FIGURES[0], &svg, &cap);

    Ok(())
}

/// 2. The one-way delay CDF with its percentiles; 3. its histogram.
fn figures_owd_distribution(d: &ProbeData, p: &mut Page) -> Result<(), ReportError> {
    let lat = d.summary.totals.latency;
    let u = ns_unit(lat.map_or(0.0, |l| {
        (l.max_ns as f64).abs().max((l.min_ns as f64).abs())
    }));
    let cdf: Vec<(f64, f64)> = d
        .owd_quantiles
        .iter()
        .map(|&(q, v)| (v as f64 / u.div, q))
        .collect();
    let marks: Vec<(f64, f64, String)> = match lat {
        Some(l) => [
            (0.5, l.p50_ns, "p50"),
            (0.99, l.p99_ns, "p99"),
            (0.999, l.p999_ns, "p99.9"),
        ]
        .into_iter()
        .map(|(q, v, n)| (v as f64 / u.div, q, format!("{n} {}", fmt_ns(v as f64))))
        .collect(),
        None => Vec::new(),
    };
    let svg = plot::lines(
        &[("CDF".into(), cdf)],
        &format!("one-way delay ({})", u.name),
        "fraction of packets",
        &marks,
    )?;
    p.figure(
        RX_FIGURES[1],
        &svg,
        "Cumulative distribution of the one-way delay over all flows.",
    );

    // 3. Histogram.
    let (bars, cap) = match &d.owd_hist {
        Some(h) => (
            hist_bars(h, u.div),
            format!("From the minimum to p99.9.{}", outside(h)),
        ),
        None => (Vec::new(), "No delays.".into()),
    };
    let vl: Vec<(f64, String)> = marks.iter().take(2).map(|m| (m.0, m.2.clone())).collect();
    let svg = plot::bars(
        &bars,
        &format!("one-way delay ({})", u.name),
        "packets",
        &vl,
    )?;
    p.figure(RX_FIGURES[2], &svg, &cap);

    Ok(())
}

/// 4. Inter-arrival times against the requested interval.
fn figure_interarrival(d: &ProbeData, p: &mut Page) -> Result<(), ReportError> {
    let ks = d
        .summary
        .flows
        .iter()
        .filter_map(|f| f.sender.as_ref()?.departure.as_ref()?.ks_distance)
        .fold(None, |a: Option<f64>, k| Some(a.map_or(k, |a| a.max(k))));
    let (bars, cap, vl, unit) = match &d.interarrival {
        Some(h) => {
            let u = ns_unit(h.bins().last().map_or(0.0, |b| b.1 as f64));
            let vl: Vec<(f64, String)> = d
                .requested_interval_ns
                .map(|r| {
                    (
                        r as f64 / u.div,
                        format!("requested mean {}", fmt_ns(r as f64)),
                    )
                })
                .into_iter()
                .collect();
            let ks = match ks {
                Some(k) => format!(
                    " KS distance of the departures against the requested distribution: {k:.4}."
                ),
                None => " No KS distance (no sender records, or a constant interval).".into(),
            };
            (
                hist_bars(h, u.div),
                format!("Receive-time gaps per flow, up to p99.9.{ks}{}", outside(h)),
                vl,
                u,
            )
        }
        None => (
            Vec::new(),
            "Fewer than two arrivals.".into(),
            Vec::new(),
            ns_unit(0.0),
        ),
    };
    let svg = plot::bars(
        &bars,
        &format!("inter-arrival time ({})", unit.name),
        "packets",
        &vl,
    )?;
    p.figure(RX_FIGURES[3], &svg, &cap);

    Ok(())
}

/// 5. IPDV over sequence-consecutive pairs.
fn figure_ipdv(d: &ProbeData, p: &mut Page) -> Result<(), ReportError> {
    let (bars, cap, unit) = match &d.ipdv {
        Some(h) => {
            let u = ns_unit(h.bins().last().map_or(0.0, |b| b.1 as f64));
            (
                hist_bars(h, u.div),
                format!(
                    "OWD(s) − OWD(s−1) over sequence-consecutive pairs (RFC 3393), within twice \
                     the p99 magnitude.{}",
                    outside(h)
                ),
                u,
            )
        }
        None => (
            Vec::new(),
            "No sequence-consecutive pairs arrived.".into(),
            ns_unit(0.0),
        ),
    };
    let svg = plot::bars(&bars, &format!("IPDV ({})", unit.name), "pairs", &[])?;
    p.figure(RX_FIGURES[4], &svg, &cap);

    Ok(())
}

/// 6. Loss burst lengths; 7. reordering extents.
fn figures_loss_bursts_and_reordering(d: &ProbeData, p: &mut Page) -> Result<(), ReportError> {
    for (title, buckets, what, none) in [
        (
            RX_FIGURES[5],
            &d.bursts,
            "burst length (packets)",
            "No loss.",
        ),
        (
            RX_FIGURES[6],
            &d.extents,
            "reordering extent (packets)",
            "No reordering.",
        ),
    ] {
        let bars: Vec<(f64, f64, f64)> = buckets
            .iter()
            .map(|b| (b.from as f64 - 0.5, b.to as f64 + 0.5, b.count as f64))
            .collect();
        let svg = plot::bars(&bars, what, "count", &[])?;
        let cap = if bars.is_empty() {
            none.to_string()
        } else {
            format!(
                "{} in all; lengths above 16 are grouped in ranges.",
                buckets.iter().map(|b| b.count).sum::<u64>()
            )
        };
        p.figure(title, &svg, &cap);
    }

    Ok(())
}

/// 8. Throughput and 9. packet rate per window.
fn figures_rates(d: &ProbeData, p: &mut Page) -> Result<(), ReportError> {
    let w0 = d.windows.first().map_or(0, |w| w.t_ns);
    let xs = |t: u64| t.saturating_sub(w0) as f64 / 1e9;
    let win = d
        .summary
        .flows
        .iter()
        .find_map(|f| f.receiver.as_ref().map(|r| r.window_ns))
        .unwrap_or(0);
    let bps: Vec<(f64, f64)> = d
        .windows
        .iter()
        .map(|w| (xs(w.t_ns), w.payload_bps / 1e6))
        .collect();
    let wire: Vec<(f64, f64)> = d
        .windows
        .iter()
        .map(|w| (xs(w.t_ns), w.wire_bps / 1e6))
        .collect();
    let svg = plot::lines(
        &[("payload".into(), bps), ("on the wire".into(), wire)],
        "time (s)",
        "Mbit/s",
        &[],
    )?;
    let cap = format!(
        "Received throughput in windows of {} (all flows), by receive time.",
        fmt_ns(win as f64)
    );
    p.figure(RX_FIGURES[7], &svg, &cap);
    let pps: Vec<(f64, f64)> = d.windows.iter().map(|w| (xs(w.t_ns), w.rate_pps)).collect();
    let svg = plot::lines(&[("received".into(), pps)], "time (s)", "packets/s", &[])?;
    p.figure(
        RX_FIGURES[8],
        &svg,
        &cap.replace("throughput", "packet rate"),
    );
    Ok(())
}

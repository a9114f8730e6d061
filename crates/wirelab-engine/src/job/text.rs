//! Human summaries of the job reports (the output without `--json`).

use super::recv::RecvJobReport;
use super::send::SendJobReport;
use crate::replay::ReplayReport;
use std::io::{self, Write};
use wirelab_analysis::schema::ReplayCacheReport;
use wirelab_analysis::{render_text, DelayStats};
use wirelab_capture::CaptureReport;
use wirelab_core::gen::{GenSpec, SpecUnit};
use wirelab_core::units::format_ns;

fn ns(v: Option<impl Into<f64>>) -> String {
    v.map(|x| format_ns(x.into())).unwrap_or_else(|| "-".into())
}

/// "p50 .. p99 .. p99.9 .. max ..".
fn tail(p: &DelayStats) -> String {
    format!(
        "p50 {} p99 {} p99.9 {} max {}",
        format_ns(p.p50_ns as f64),
        format_ns(p.p99_ns as f64),
        format_ns(p.p999_ns as f64),
        format_ns(p.max_ns as f64)
    )
}

fn ks(v: Option<f64>) -> String {
    v.map(|d| format!("{d:.4}")).unwrap_or_else(|| "n/a".into())
}

/// `wirelab send`'s summary: one block per flow.
pub fn write_send(r: &SendJobReport, out: &mut dyn Write) -> io::Result<()> {
    // The socket type is named when it is not the ordinary UDP socket.
    let socket = match r.config.socket.as_str() {
        "udp" => String::new(),
        s => format!(", socket {s}"),
    };
    writeln!(
        out,
        "sent to {}: interval {}, size {}{socket}",
        r.target, r.config.interval, r.config.size
    )?;
    // Interval 0: no schedule, so lateness, deadlines and drift mean nothing.
    let unpaced =
        GenSpec::parse(&r.config.interval, SpecUnit::Time).is_ok_and(|s| s.as_const() == Some(0.0));
    for f in &r.flows {
        let e = &f.engine.stats;
        let s = f.report.sender.as_ref();
        let lat = s.and_then(|s| s.lateness.as_ref());
        let sent = f.report.sent.map_or("null".into(), |n| n.to_string());
        let rate = s.and_then(|s| s.rate.as_ref()).and_then(|r| r.rate_pps);
        if unpaced {
            writeln!(
                out,
                "flow {}: {} probes ({} bytes) as fast as possible (interval 0) {}; no schedule, so no lateness or drift",
                f.report.flow,
                sent,
                e.bytes,
                rate.map_or("in one instant (no rate to measure)".into(), |p| format!(
                    "at {p:.1} pps"
                )),
            )?;
        } else {
            writeln!(
                out,
                "flow {}: {} probes ({} bytes) at {} pps; lateness p50 {} p99 {} p99.9 {} max {}; missed deadlines {}; drift {} ppm",
                f.report.flow,
                sent,
                e.bytes,
                // No rate without time between the first and last departure.
                rate.map_or("-".into(), |p| format!("{p:.1}")),
                ns(lat.map(|l| l.p50_ns as f64)),
                ns(lat.map(|l| l.p99_ns as f64)),
                ns(lat.map(|l| l.p999_ns as f64)),
                ns(lat.map(|l| l.max_ns as f64)),
                s.and_then(|s| s.late).map_or("null".into(), |n| n.to_string()),
                s.and_then(|s| s.drift.as_ref())
                    .and_then(|d| d.drift_ppm)
                    .map(|d| format!("{d:.2}"))
                    .unwrap_or_else(|| "-".into()),
            )?;
        }
        writeln!(
            out,
            "  {} send calls, {} batched (max {} per call), {} retries, {} errors; clamped: {} intervals, {} sizes; KS distance: intervals {}, sizes {}",
            e.send_calls,
            e.batched_calls,
            e.max_batch,
            e.send_retries,
            e.send_errors,
            f.engine.clamped_intervals,
            f.engine.clamped_sizes,
            ks(s.and_then(|s| s.departure.as_ref()).and_then(|d| d.ks_distance)),
            ks(s.and_then(|s| s.sizes.as_ref()).and_then(|d| d.ks_distance)),
        )?;
        if let Some(p) = &e.phase {
            writeln!(out, "  {p}")?;
        }
        if let Some(r) = &f.report.rtt {
            writeln!(
                out,
                "  rtt: {} replies, lost {}; min {} p50 {} p99 {} max {}; reflector residence p50 {}; network rtt p50 {}",
                r.replies,
                r.lost.map_or("null".into(), |n| n.to_string()),
                ns(r.rtt.as_ref().map(|d| d.min_ns as f64)),
                ns(r.rtt.as_ref().map(|d| d.p50_ns as f64)),
                ns(r.rtt.as_ref().map(|d| d.p99_ns as f64)),
                ns(r.rtt.as_ref().map(|d| d.max_ns as f64)),
                ns(r.residence.as_ref().map(|d| d.p50_ns as f64)),
                ns(r.net_rtt.as_ref().map(|d| d.p50_ns as f64)),
            )?;
            writeln!(
                out,
                "  one-way (needs synchronized clocks): forward p50 {}, return p50 {}",
                ns(r.forward.as_ref().map(|d| d.p50_ns as f64)),
                ns(r.return_.as_ref().map(|d| d.p50_ns as f64)),
            )?;
        }
    }
    Ok(())
}

/// `wirelab recv`'s summary: the receiver's own counters, then the flows.
pub fn write_recv(r: &RecvJobReport, out: &mut dyn Write) -> io::Result<()> {
    let o = &r.receiver;
    let c = &o.counters;
    writeln!(
        out,
        "receiver {}: {} packets, {} bytes in {:.3} s ({}), ended by {}; {} kernel drops, {} not probes, {} echo replies\n\
         wait {}: {:.0} wake-ups/s, {:.1} packets per wake-up, {} mode switches, CPU {:.3} s user + {:.3} s system",
        o.local_addr,
        c.packets,
        c.bytes,
        o.duration_ns as f64 / 1e9,
        o.timestamping,
        o.end_reason,
        c.kernel_drops,
        c.malformed,
        c.echo_replies,
        o.wait,
        o.wakeups_per_s,
        o.packets_per_wakeup,
        c.mode_switches,
        o.cpu_user_ns as f64 / 1e9,
        o.cpu_system_ns as f64 / 1e9,
    )?;
    for f in &o.flow_sources {
        writeln!(out, "LUNA flow {} = probes from {}", f.flow, f.source)?;
    }
    if let Some(h) = &r.hw_timestamps {
        writeln!(
            out,
            "hardware timestamps on {}: {} of {} packets stamped by the NIC",
            h.interface, c.hw_timestamps, c.packets
        )?;
    }
    render_text(&r.summary(), &mut &mut *out).map_err(|e| match e {
        wirelab_analysis::AnalysisError::Io(e) => e,
        e => io::Error::other(e),
    })
}

/// `wirelab replay`'s summary.
pub fn write_replay(r: &ReplayReport, out: &mut dyn Write) -> io::Result<()> {
    let f = &r.fidelity;
    writeln!(
        out,
        "replay: {} packet(s) to {} via {}{} ({} loop(s), stopped: {})",
        f.packets,
        r.output,
        r.tx,
        if r.qdisc_bypass {
            " (qdisc bypass)"
        } else {
            ""
        },
        r.loops,
        r.stopped_by
    )?;
    writeln!(
        out,
        "  trace: {} packet(s) per pass, {} bytes held in {} (budget {} bytes), read {} / selected {} / filtered {} / too short {} / oversize {}",
        r.load.packets, r.load.bytes, r.load.mode, r.load.max_preload_bytes, r.read.read, r.read.selected, r.read.filtered, r.read.too_short, r.read.oversize
    )?;
    for line in replay_input_notes(r) {
        writeln!(out, "  {line}")?;
    }
    if r.rewrite.changed > 0 || r.rewrite.dropped > 0 {
        writeln!(
            out,
            "  rewrite: {} changed, {} dropped, {} truncated, {} checksum recomputes, {} not recomputable",
            r.rewrite.changed, r.rewrite.dropped, r.rewrite.truncated, r.rewrite.csum_recomputed, r.rewrite.csum_unfixable
        )?;
    }
    if r.tx != "file" && r.nothing_sent.is_none() {
        let d = &f.departure_error;
        let g = &f.interdeparture_error;
        writeln!(out, "  departure error (actual - scheduled): {}", tail(d))?;
        writeln!(
            out,
            "  inter-departure error |gap - original|: {} (mean signed {})",
            tail(g),
            format_ns(f.interdeparture_error_mean_signed_ns)
        )?;
        writeln!(
            out,
            "  duration {} vs scheduled {}: error {} ({:.1} ppm)",
            format_ns(f.duration_ns as f64),
            format_ns(f.scheduled_duration_ns as f64),
            format_ns(f.duration_error_ns as f64),
            f.drift_ppm
        )?;
        writeln!(
            out,
            "  late (> {}): {} packet(s) in {} run(s), longest {}",
            format_ns(f.late_threshold_ns as f64),
            f.late_packets,
            f.late_runs,
            f.late_run_max
        )?;
        writeln!(
            out,
            "  achieved: {:.0} pps, {:.3} Mbit/s L2, {:.3} Mbit/s wire",
            f.pps, f.mbps_l2, f.mbps_wire
        )?;
        writeln!(
            out,
            "  send: {} call(s), {} failure(s), {} retr(ies), {} frame(s) lost",
            r.send.kicks, r.send.failures, r.send.retries, r.send.frames_lost
        )?;
        if let Some(sp) = &r.split {
            writeln!(
                out,
                "  split ({}): {} client packet(s) on {}, {} server packet(s) on {}{}",
                sp.mode,
                sp.client_packets,
                sp.primary,
                sp.server_packets,
                sp.secondary,
                if sp.skipped_packets > 0 {
                    format!(
                        ", {} not sent (\"don't send\" in the cache)",
                        sp.skipped_packets
                    )
                } else {
                    String::new()
                }
            )?;
        }
        writeln!(
            out,
            "  wait: spin margin {} (final {}, max {}), {} sleep(s), {} woke past the deadline, worst oversleep {}",
            r.wait.spin,
            format_ns(r.wait.spin_margin_final_ns as f64),
            format_ns(r.wait.spin_margin_max_ns as f64),
            r.wait.sleeps,
            r.wait.sleeps_past_deadline,
            format_ns(r.wait.oversleep_max_ns as f64)
        )?;
        if let Some(p) = &r.phase {
            writeln!(out, "  {p}")?;
        }
        writeln!(out, "  departure = {}", r.departure)?;
    }
    Ok(())
}

/// What reading found and changed that the user must know: broken
/// timestamps and the schedule they make, an FCS removed, lengths a pcap
/// file normalises, frames too large, nothing sent.
fn replay_input_notes(r: &ReplayReport) -> Vec<String> {
    let rd = &r.read;
    let mut v = vec![];
    if rd.ts_bad_fraction + rd.ts_backwards + rd.ts_missing > 0 {
        v.push(format!(
            "timestamps: {} with a sub-second field of 1 s or more (--bad-ts {}), {} going backwards and {} missing (sent at the latest time before them); one pass scheduled {}, timestamps spanning {}",
            rd.ts_bad_fraction,
            rd.bad_ts,
            rd.ts_backwards,
            rd.ts_missing,
            ns_u64(rd.schedule_ns),
            ns_u64(rd.span_ns)
        ));
    }
    if rd.fcs_stripped > 0 {
        v.push(format!(
            "fcs: removed from {} frame(s), as the file's link-type field or packet flags announce",
            rd.fcs_stripped
        ));
    }
    if r.tx == "file" && rd.orig_len_below_caplen > 0 {
        v.push(format!(
            "written: {} record(s) whose original length is below the captured length (first: packet {}) got the captured length, as pcap requires",
            rd.orig_len_below_caplen,
            rd.orig_len_below_caplen_first.unwrap_or(0)
        ));
    }
    if r.rewrite.pad_oversize > 0 {
        v.push(format!(
            "fixlen pad: {} frame(s) not sent: their original length exceeds the {} bytes {} takes (counted as oversize)",
            r.rewrite.pad_oversize,
            rd.pad_limit_bytes.unwrap_or(0),
            r.output
        ));
    }
    if let Some(n) = &r.nothing_sent {
        let verb = if r.tx == "file" { "written" } else { "sent" };
        v.push(format!("nothing {verb}: {}", n.reason));
    }
    v
}

/// `wirelab replay`'s summary when it only classified packets.
pub fn write_replay_cache(r: &ReplayCacheReport, out: &mut dyn Write) -> io::Result<()> {
    write!(
        out,
        "cache {}: {} packet(s) classified by {}: {} client (-i), {} server (-I)",
        r.cachefile, r.packets, r.mode, r.client_packets, r.server_packets
    )?;
    if r.skipped_packets > 0 {
        write!(out, ", {} not sent", r.skipped_packets)?;
    }
    writeln!(out)?;
    if !r.comment.is_empty() {
        writeln!(out, "  tcpprep comment: {}", r.comment.escape_debug())?;
    }
    Ok(())
}

fn ns_u64(ns: u64) -> String {
    format_ns(ns as f64)
}

/// `wirelab capture`'s summary.
pub fn capture(r: &CaptureReport) -> String {
    let merged = r.merge.iter().flat_map(|m| m.files.iter());
    let files: Vec<&str> = r
        .threads
        .iter()
        .flat_map(|t| t.files.iter())
        .chain(merged)
        .filter(|f| !f.deleted)
        .map(|f| f.path.as_str())
        .collect();
    let files = if files.len() > 3 {
        format!(
            "{} … {} ({} files)",
            files[0],
            files[files.len() - 1],
            files.len()
        )
    } else {
        files.join(", ")
    };
    let l = &r.loss;
    let d = &r.delivery_latency;
    let mut s = format!(
        "wirelab capture: {} packets ({:.1} kB) on {} in {:.2} s → {} [{}; stopped by {}]\n",
        r.packets,
        r.bytes as f64 / 1e3,
        r.interface,
        r.duration_s,
        files,
        r.format,
        r.stop_reason
    );
    s += &format!(
        "  loss: interface rx_dropped {} rx_missed {}; ring drops {} (queue freezes {}); writer {}\n",
        l.if_rx_dropped, l.if_rx_missed_errors, l.ring_drops, l.ring_freeze_q_cnt, l.writer_drops
    );
    s += &format!(
        "  wait {}: {} wake-ups ({:.0}/s), {:.1} packets/wake-up, {} mode switches, {:.0}% of cycles polling\n",
        serde_json::to_value(r.wait)
            .ok()
            .and_then(|v| v.as_str().map(String::from))
            .unwrap_or_default(),
        r.wakeups,
        r.wakeups_per_s,
        r.packets_per_wakeup,
        r.mode_switches,
        r.poll_fraction * 100.0
    );
    s += &format!(
        "  cpu: {:.3} s user + {:.3} s system ({:.1}% of a core, {:.0} ns/packet)\n",
        r.cpu.process_user_s,
        r.cpu.process_system_s,
        r.cpu.utilization * 100.0,
        r.cpu.ns_per_packet
    );
    if d.count > 0 {
        s += &format!(
            "  delivery latency (kernel stamp → handled): min {} p50 {} p90 {} p99 {} max {}\n",
            format_ns(d.min_ns as f64),
            format_ns(d.p50_ns as f64),
            format_ns(d.p90_ns as f64),
            format_ns(d.p99_ns as f64),
            format_ns(d.max_ns as f64)
        );
    }
    if let Some(m) = &r.merge {
        s += &format!(
            "  merge of {} threads: {} batches, at most {} packets held back, longest delay {} (idle bound {}), {} pool waits, {} late\n",
            r.threads.len(),
            m.batches,
            m.held_max,
            ns_u64(m.max_delay_ns),
            ns_u64(m.idle_bound_ns),
            m.pool_waits,
            m.late
        );
    }
    for n in &r.notes {
        s += &format!("  note: {n}\n");
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sender::FlowSendStats;
    use wirelab_analysis::schema::{
        SendEngine, SendReport, SendSettings, SendTotals, SentFlowReport, REPLAY_CACHE_SCHEMA,
        SEND_SCHEMA,
    };
    use wirelab_analysis::FlowReport;

    fn send_text(interval: &str) -> String {
        let r: SendJobReport = SendReport {
            schema: SEND_SCHEMA,
            target: "127.0.0.1:5757".into(),
            config: SendSettings {
                host: "127.0.0.1".into(),
                target: "127.0.0.1:5757".into(),
                flow: 1,
                flows: 1,
                interval: interval.into(),
                size: "const:64".into(),
                count: Some(10),
                duration_ns: None,
                tos: None,
                padding: "0".into(),
                warmup: 0,
                wait: "hybrid".into(),
                echo: false,
                seed: 1,
                batch: 64,
                rt_priority: None,
                cpu: None,
                format: "wirelab".into(),
                late: "Burst".into(),
                phase: None,
                socket: "udp".into(),
                start_at_unix_ns: None,
            },
            flows: vec![SentFlowReport {
                report: FlowReport::empty(1),
                echo_replies: 0,
                engine: SendEngine {
                    stats: FlowSendStats::default(),
                    clamped_intervals: 0,
                    clamped_sizes: 0,
                },
            }],
            totals: SendTotals { flows: 1, sent: 10 },
            record_log: None,
        };
        let mut out = Vec::new();
        write_send(&r, &mut out).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn an_unpaced_send_says_so_instead_of_a_rate_of_zero() {
        let t = send_text("const:0ns");
        assert!(t.contains("as fast as possible (interval 0)"), "{t}");
        assert!(!t.contains("0.0 pps") && !t.contains("drift -"), "{t}");
        let t = send_text("const:1ms");
        assert!(t.contains("at - pps") && t.contains("drift - ppm"), "{t}");
        assert!(!t.contains("as fast"), "{t}");
    }

    #[test]
    fn the_cache_summary_counts_sides_and_skips() {
        let mut r = ReplayCacheReport {
            schema: REPLAY_CACHE_SCHEMA,
            cachefile: "c.txt".into(),
            mode: "tcpprep".into(),
            comment: "-c\t10.0.0.0/8".into(),
            packets: 179,
            client_packets: 3,
            server_packets: 147,
            skipped_packets: 29,
        };
        let text = |r: &ReplayCacheReport| {
            let mut out = Vec::new();
            write_replay_cache(r, &mut out).unwrap();
            String::from_utf8(out).unwrap()
        };
        assert_eq!(
            text(&r),
            "cache c.txt: 179 packet(s) classified by tcpprep: 3 client (-i), 147 server (-I), 29 not sent\n  tcpprep comment: -c\\t10.0.0.0/8\n"
        );
        (r.skipped_packets, r.comment) = (0, String::new());
        assert_eq!(
            text(&r),
            "cache c.txt: 179 packet(s) classified by tcpprep: 3 client (-i), 147 server (-I)\n"
        );
    }
}

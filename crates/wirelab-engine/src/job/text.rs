//! Human summaries of the send and recv reports (the `--json`-less output).

use super::recv::RecvJobReport;
use super::send::SendJobReport;
use std::io::{self, Write};
use wirelab_analysis::render_text;
use wirelab_core::units::format_ns;

fn ns(v: Option<impl Into<f64>>) -> String {
    v.map(|x| format_ns(x.into())).unwrap_or_else(|| "-".into())
}

fn ks(v: Option<f64>) -> String {
    v.map(|d| format!("{d:.4}")).unwrap_or_else(|| "n/a".into())
}

/// `wirelab send`'s summary: one block per flow.
pub fn write_send(r: &SendJobReport, out: &mut dyn Write) -> io::Result<()> {
    writeln!(
        out,
        "sent to {}: interval {}, size {}",
        r.target, r.config.interval, r.config.size
    )?;
    for f in &r.flows {
        let e = &f.engine.stats;
        let s = f.report.sender.as_ref();
        let lat = s.and_then(|s| s.lateness.as_ref());
        let sent = f.report.sent.map_or("null".into(), |n| n.to_string());
        writeln!(
            out,
            "flow {}: {} probes ({} bytes) at {:.1} pps; lateness p50 {} p99 {} p99.9 {} max {}; missed deadlines {}; drift {} ppm",
            f.report.flow,
            sent,
            e.bytes,
            s.and_then(|s| s.rate.as_ref()).and_then(|r| r.rate_pps).unwrap_or(0.0),
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

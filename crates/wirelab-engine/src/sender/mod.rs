//! The sender: one paced flow of probes per thread.
//!
//! Each flow owns a connected UDP socket (and with `--socket raw|packet`
//! the socket that sends, see [`crate::txpath`]) and a [`Pacer`]. Departures sit on
//! absolute CLOCK_MONOTONIC deadlines; when several are due at once (the
//! interval is shorter than one send call, or a wake-up came late) they
//! leave in one sendmmsg batch, each still stamped and recorded with its own
//! scheduled time, so lateness is measured, never hidden. The flow ends with
//! its final probe repeated with the LAST flag ([`FlowConfig::last_repeats`]
//! copies, three from the command line) so the receiver knows the count
//! without guessing (the final sequence + 1) and a single lost copy does not
//! leave it waiting for its idle timeout.

mod slots;

use crate::pace::{wait_for, Delivery};
use crate::phase::{calibrate_origin, PhaseConfig, PhaseReport};
use crate::recordlog::RecordWriter;
use crate::txpath::{PathConfig, SocketKind, TxPath, NEIGH_TIMEOUT};
use crate::ProbeFormat;
use crate::StopFlag;
use slots::{ProbeMaker, Slots};
use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use wirelab_core::pace::{LatePolicy, MarginBounds, PaceConfig, Pacer, SpinMargin, WaitStrategy};
use wirelab_core::phase::{DeadlinePhases, BIN_NS, FOLD_PERIOD_NS};
use wirelab_core::schedule::{Intervals, Limits};
use wirelab_io::clock::{mono_ns, set_timer_slack};
use wirelab_io::tx::is_transient;
use wirelab_io::udp::{nothing_received, RecvBatch, RxTimestamp, UdpSock};
use wirelab_io::{Clock, MonoClock, Transmit};
use wirelab_wire::luna::LunaProbe;
use wirelab_wire::probe::{EchoTimes, ProbeFlags, ProbeRepr};
use wirelab_wire::record::{Record, RecordKind};
use wirelab_wire::udp4::Udp4Frame;

/// Largest UDP payload over IPv4.
pub const MAX_PAYLOAD: usize = 65_507;
/// Bytes of each batch slot's probe buffer before a larger probe grows it.
const PROBE_BUF_START: usize = 2048;
const MAX_BATCH: usize = 64;
/// Mixed into the flow's seed for the random padding stream.
const PADDING_SEED: u64 = 0x005e_ed0f_9add;
/// With a calibrated start, how long before the first deadline the priming
/// datagram leaves.
const PRIME_LEAD_NS: u64 = 300_000;
/// Without a calibration, how long before the first deadline the priming
/// datagram leaves at the latest (an ordinary run primes at setup, this
/// long before its start; a later start waits for this moment).
const PRESTART_PRIME_NS: u64 = 50_000_000;
/// Longest single sleep while waiting for a distant start, so a stop
/// request ends the wait soon.
const PRESTART_SLEEP_NS: u64 = 100_000_000;

/// A source of values (intervals in ns, sizes in bytes). `None` ends the flow.
pub trait Values: Send {
    fn next_value(&mut self) -> Option<f64>;
}

impl<F: FnMut() -> Option<f64> + Send> Values for F {
    fn next_value(&mut self) -> Option<f64> {
        self()
    }
}

/// How payload bytes after the probe header are filled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Padding {
    /// Every padding byte has this value.
    Const(u8),
    /// Fresh random bytes in every packet (defeats compression on the path).
    Random,
}

/// Settings of one sending flow.
#[derive(Debug, Clone)]
pub struct FlowConfig {
    pub target: SocketAddr,
    pub bind: Option<SocketAddr>,
    pub flow: u32,
    pub limits: Limits,
    pub tos: Option<u8>,
    /// The first `warmup` probes carry the WARMUP flag.
    pub warmup: u64,
    pub padding: Padding,
    pub wait: WaitStrategy,
    /// With a hybrid wait: learn the spin margin from observed oversleep
    /// ([`SpinMargin`]), starting from the configured one.
    pub adaptive_spin: bool,
    /// Send one empty datagram during setup (see `run_flow`).
    pub prime: bool,
    /// Run the schedule from the first packet's departure instead of the planned start
    /// (see `wirelab_core::pace::Pacer::first_departure`).
    pub anchor_first: bool,
    pub echo: bool,
    /// After the last probe, how long to wait for outstanding echo replies.
    pub echo_wait: Duration,
    /// Extra copies of the final probe sent with the LAST flag.
    pub last_repeats: u32,
    /// Gap between those copies.
    pub last_gap: Duration,
    pub max_batch: usize,
    /// Delay from setup to the first departure.
    pub lead: Duration,
    pub seed: u64,
    /// The run's epoch on CLOCK_MONOTONIC: `sched_ns` in records counts
    /// from here (else: when the flow starts).
    pub epoch_mono_ns: Option<u64>,
    /// First departure, shared by several flows; must lie after the epoch
    /// so every scheduled time is positive (0 means "unscheduled" in
    /// records). Default: epoch + lead.
    pub start_mono_ns: Option<u64>,
    /// Offset turning monotonic into wall-clock ns.
    pub mono_to_real: i128,
    /// Probe layout. LUNA probes carry a 32-bit sequence (the flow stops
    /// after 2^32 probes), no flow id and no end marker, and no priming
    /// datagram is sent (a LUNA server would log it).
    pub format: ProbeFormat,
    /// How to catch up when late (`wirelab_core::schedule` module docs).
    pub late: LatePolicy,
    /// With a constant interval (ns): calibrate the schedule's start phase
    /// against this CPU's periodic stalls first ([`crate::phase`]).
    pub phase: Option<(PhaseConfig, f64)>,
}

/// What one flow did, for the sender's summary.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct FlowSendStats {
    pub flow: u32,
    pub sent: u64,
    pub bytes: u64,
    pub warmup: u64,
    /// sendmmsg calls made, and how many of them carried more than one probe.
    pub send_calls: u64,
    pub batched_calls: u64,
    pub max_batch: usize,
    /// Send calls that failed (ENOBUFS, EAGAIN, ...) and were retried.
    pub send_retries: u64,
    pub send_errors: u64,
    pub last_repeats: u32,
    pub start_unix_ns: u64,
    /// The first probe's deadline on the wall clock (after a start-phase
    /// calibration moved it): `--start-at` exactly, when given.
    pub first_deadline_unix_ns: u64,
    /// First and last departure, monotonic ns from the run's epoch.
    pub first_tx_offset_ns: u64,
    pub last_tx_offset_ns: u64,
    pub last_sched_offset_ns: u64,
    pub echo_replies: u64,
    /// Probes the schedule planned within the flow's count or duration,
    /// sent or not (a sender cut off by the clock before its schedule
    /// ended still planned the rest); null when unbounded (no limit, or
    /// unpaced under a duration).
    pub planned: Option<u64>,
    pub stopped_early: bool,
    /// Sleeps taken, and the hybrid spin margin at the end of the run.
    pub sleeps: u64,
    pub spin_margin_ns: Option<u64>,
    /// The start-phase calibration, when one ran.
    pub phase: Option<PhaseReport>,
    /// 200 ms windows in which the CPU was found shared with other work
    /// (the hybrid margin then drops to 100 µs: sleep more, spin less).
    pub contended_windows: u64,
    /// How far the schedule's origin moved to the first departure (None:
    /// it stayed at the planned or calibrated start).
    pub anchor_lag_ns: Option<u64>,
}

/// Receives every record a flow produces, as it is produced: streaming
/// statistics live here, so a long run holds no per-packet memory.
pub trait RecordSink: Send {
    fn record(&mut self, r: &Record);
}

/// Keeps every record (tests, short runs).
impl RecordSink for Vec<Record> {
    fn record(&mut self, r: &Record) {
        self.push(*r);
    }
}

/// Discards records.
impl RecordSink for () {
    fn record(&mut self, _: &Record) {}
}

/// Runs one flow to completion (limits reached, values exhausted, or stop).
/// Tx records go to `tx_sink`, echo replies to `reply_sink` (owned by the
/// reply thread and handed back), and both to the record log when writers
/// are given (`log` for Tx records, `reply_log` for echo replies).
#[allow(clippy::too_many_arguments)]
pub fn run_flow<S: RecordSink + 'static>(
    cfg: &FlowConfig,
    intervals: &mut dyn Values,
    sizes: &mut dyn Values,
    log: Option<RecordWriter>,
    reply_log: Option<RecordWriter>,
    tx_sink: &mut dyn RecordSink,
    reply_sink: S,
    stop: &StopFlag,
) -> io::Result<(FlowSendStats, S)> {
    let path = TxPath::open(&PathConfig {
        kind: SocketKind::Udp,
        target: cfg.target,
        bind: cfg.bind,
        tos: cfg.tos,
        neigh_timeout: NEIGH_TIMEOUT,
    })
    .map_err(io::Error::other)?;
    run_flow_on(
        path, cfg, intervals, sizes, log, reply_log, tx_sink, reply_sink, stop,
    )
}

/// [`run_flow`] on a path opened beforehand (any socket type): probes
/// leave through `path.tx` behind `path.frame`'s headers, echo replies are
/// read from `path.udp`.
#[allow(clippy::too_many_arguments)]
pub fn run_flow_on<S: RecordSink + 'static>(
    mut path: TxPath,
    cfg: &FlowConfig,
    intervals: &mut dyn Values,
    sizes: &mut dyn Values,
    mut log: Option<RecordWriter>,
    reply_log: Option<RecordWriter>,
    tx_sink: &mut dyn RecordSink,
    reply_sink: S,
    stop: &StopFlag,
) -> io::Result<(FlowSendStats, S)> {
    set_timer_slack(1);

    // Echo replies are read on a second thread from a clone of the socket.
    let replies_got = Arc::new(AtomicU64::new(0));
    let reply_stop = StopFlag::new();
    let mut reply_sink = Some(reply_sink);
    let reply_thread = if cfg.echo {
        let sink = reply_sink.take();
        let mut rsock = path.udp.try_clone()?;
        rsock.enable_rx_timestamps();
        rsock.set_read_timeout(Duration::from_millis(50))?;
        let rstop = reply_stop.clone();
        let log = reply_log;
        let flow = cfg.flow;
        let off = cfg.mono_to_real;
        let got = replies_got.clone();
        let format = cfg.format;
        Some(std::thread::spawn(move || {
            reply_loop(rsock, flow, format, off, log, sink, got, rstop)
        }))
    } else {
        None
    };

    let mut st = pace_probes(
        cfg,
        &mut MonoClock,
        &mut path.tx,
        path.frame.as_ref(),
        intervals,
        sizes,
        log.as_mut(),
        tx_sink,
        stop,
    )?;
    if let Some(l) = log.as_mut() {
        l.flush()?;
    }

    if let Some(t) = reply_thread {
        // Stop early once every probe has come back.
        let wait_until = mono_ns() + cfg.echo_wait.as_nanos() as u64;
        while mono_ns() < wait_until
            && replies_got.load(Ordering::Relaxed) < st.sent
            && !t.is_finished()
        {
            std::thread::sleep(Duration::from_millis(10));
        }
        reply_stop.stop();
        let (count, sink) = t
            .join()
            .map_err(|_| io::Error::other("echo reply thread panicked"))??;
        st.echo_replies = count;
        reply_sink = Some(sink);
    }
    let reply_sink = reply_sink.ok_or_else(|| io::Error::other("echo reply sink lost"))?;
    Ok((st, reply_sink))
}

/// The sending half of a flow over any clock and link: start phase,
/// priming, the paced loop, the end-of-flow marker. [`run_flow`] runs it on
/// the machine's clock and a UDP socket; tests run it on `wirelab_io::sim`.
/// With `frame`, every packet handed to `tx` is the probe behind those
/// headers, lengths and checksums filled for it (raw and packet sockets).
#[allow(clippy::too_many_arguments)]
pub fn pace_probes<C: Clock, T: Transmit>(
    cfg: &FlowConfig,
    clock: &mut C,
    tx: &mut T,
    frame: Option<&Udp4Frame>,
    intervals: &mut dyn Values,
    sizes: &mut dyn Values,
    mut log: Option<&mut RecordWriter>,
    tx_sink: &mut dyn RecordSink,
    stop: &StopFlag,
) -> io::Result<FlowSendStats> {
    let max_batch = cfg.max_batch.clamp(1, MAX_BATCH);
    let mut maker = ProbeMaker::new(cfg);
    let mut slots = Slots::new(cfg, frame, max_batch);
    let epoch = cfg.epoch_mono_ns.unwrap_or_else(|| clock.now_ns());
    let (mut pacer, phase) = prepare(cfg, clock, tx, &mut slots, epoch, stop);
    let mut schedule = Intervals::new(cfg.limits, max_batch);
    let mut due: Vec<u64> = Vec::with_capacity(max_batch);
    let mut st = FlowSendStats {
        flow: cfg.flow,
        start_unix_ns: (epoch as i128 + cfg.mono_to_real) as u64,
        first_deadline_unix_ns: (pacer.origin_ns() as i128 + cfg.mono_to_real) as u64,
        ..Default::default()
    };
    let mut seq: u64 = 0;

    while !stop.is_stopped() {
        if maker.luna && seq > u64::from(u32::MAX) {
            // The LUNA sequence number would wrap.
            break;
        }
        // When the next probe is due, and wait for it.
        pull_intervals(&mut schedule, intervals);
        let now = clock.now_ns();
        schedule.clock(now.saturating_sub(pacer.origin_ns()));
        let Some(first) = schedule.next() else { break };
        let deadline = pacer.deadline(first, now);
        let Some(now) = wait_for(clock, &mut pacer, deadline, now) else {
            continue;
        };
        // Every probe due by now leaves in this batch.
        let mut count = pacer.batch(schedule.pending().take(max_batch), now);
        if maker.luna {
            count = count.min((u64::from(u32::MAX) + 1 - seq) as usize);
        }
        schedule.take(count, &mut due);
        let origin = pacer.origin_ns();
        for &d in &due {
            pacer.departed(d, now);
        }
        // Build, stamp, send.
        let (n, sizes_done) = slots.build(&mut maker, sizes, seq, due.len());
        if n == 0 {
            break;
        }
        let now = clock.now_ns();
        let tx_real = (now as i128 + cfg.mono_to_real) as u64;
        slots.stamp(n, maker.luna, tx_real)?;
        let d = slots.send(tx, n);
        let returned = clock.now_ns();
        let sent = count_call(&mut st, d)?;
        pacer.sent(n, returned.saturating_sub(now));
        if st.sent == 0 && sent > 0 {
            // The schedule runs from the first departure (`Pacer::first_departure`).
            if let Some(lag) = pacer.first_departure(due[0], returned) {
                st.anchor_lag_ns = Some(lag);
            }
        }
        // Record what left.
        let batch = SentBatch {
            seq,
            lens: &slots.lens[..sent],
            due: &due[..sent],
            sched_base: origin - epoch,
            now_offset: now - epoch,
            tx_real,
        };
        account(cfg, &maker, &mut st, &batch, tx_sink, log.as_deref_mut())?;
        seq += sent as u64;
        if sizes_done {
            break;
        }
    }
    st.stopped_early = stop.is_stopped();
    st.planned = schedule.planned(&mut || intervals.next_value());
    st.phase = phase;
    st.spin_margin_ns = pacer.margin_ns();
    let ps = pacer.stats();
    st.sleeps = ps.sleeps;
    st.contended_windows = ps.contended_windows;

    // End-of-flow marker: the final probe again with LAST, fresh tx time
    // (LUNA has no such flag).
    if st.sent > 0 && !maker.luna {
        st.last_repeats = send_last(cfg, clock, tx, &mut slots, &maker, seq - 1)?;
    }
    Ok(st)
}

/// Before the loop: waits for a distant start, primes the path and
/// calibrates the start phase. Returns the pacer the loop runs on, its
/// origin final, and the calibration's report.
fn prepare<C: Clock, T: Transmit>(
    cfg: &FlowConfig,
    clock: &mut C,
    tx: &mut T,
    slots: &mut Slots,
    epoch: u64,
    stop: &StopFlag,
) -> (Pacer, Option<PhaseReport>) {
    let calibrate = cfg.phase.filter(|&(_, i)| i >= BIN_NS as f64);
    let prime = cfg.prime && cfg.format != ProbeFormat::Luna;
    let lead = (cfg.lead.as_nanos() as u64).max(1_000);
    let mut pacer = Pacer::new(
        cfg.start_mono_ns.unwrap_or(epoch + lead).max(epoch + 1),
        PaceConfig {
            wait: cfg.wait,
            learn: cfg.adaptive_spin.then_some(MarginBounds::SEND),
            late: cfg.late,
            anchor_first: cfg.anchor_first,
        },
    );
    // A start farther off than an ordinary run's lead (`--start-at`): wait
    // for it in bounded absolute sleeps, so a stop request ends the wait.
    let wake = pacer.origin_ns().saturating_sub(PRESTART_PRIME_NS);
    loop {
        let now = clock.now_ns();
        if now >= wake || stop.is_stopped() {
            break;
        }
        clock.sleep_until(wake.min(now + PRESTART_SLEEP_NS));
    }
    // Prime the path before the first deadline: a zero-length datagram
    // resolves the neighbour entry and warms the send path, whose first
    // call costs tens of µs. Receivers ignore empty datagrams. With a phase
    // calibration it goes out shortly before the first deadline instead.
    if prime && calibrate.is_none() && !stop.is_stopped() {
        slots.prime(tx);
    }
    let Some((pc, interval_ns)) = calibrate else {
        return (pacer, None);
    };
    let deadlines = DeadlinePhases::constant(interval_ns);
    let search = (interval_ns.round() as u64).min(FOLD_PERIOD_NS);
    let (origin, report) = calibrate_origin(clock, pc, pacer.origin_ns(), &deadlines, search);
    pacer.set_origin(origin);
    // Anchoring may not move the deadlines out of the run of good phases
    // the choice sits in the middle of.
    pacer.limit_anchor(report.margin_ns / 2);
    if prime {
        // Just before the first deadline: after the sleep that follows
        // the calibration, the path is cold again.
        let at = origin.saturating_sub(PRIME_LEAD_NS);
        clock.sleep_until(at.saturating_sub(SpinMargin::DEFAULT_INITIAL_NS));
        clock.spin_until(at);
        // Through the probes' own send path, so its code is paged in.
        slots.prime(tx);
    }
    (pacer, Some(report))
}

/// Feeds the schedule the intervals it wants next; marks it exhausted when
/// `intervals` ends.
#[inline]
fn pull_intervals(schedule: &mut Intervals, intervals: &mut dyn Values) {
    while schedule.wants_interval() {
        match intervals.next_value() {
            Some(v) => schedule.push_interval(v),
            None => {
                schedule.exhaust();
                break;
            }
        }
    }
}

/// Counts one send call; returns how many probes left. A hard error with
/// nothing sent ends the flow; a transient one, or any after a partial
/// send, is counted and the flow goes on.
#[inline]
fn count_call(st: &mut FlowSendStats, d: Delivery) -> io::Result<usize> {
    st.send_retries += d.retries;
    if let Some(e) = d.error {
        st.send_errors += 1;
        if d.sent == 0 && !is_transient(&e) {
            return Err(e);
        }
    }
    st.send_calls += 1;
    if d.sent > 1 {
        st.batched_calls += 1;
    }
    st.max_batch = st.max_batch.max(d.sent);
    Ok(d.sent)
}

/// The probes one send call put out, for their records.
struct SentBatch<'a> {
    /// The first probe's sequence number.
    seq: u64,
    /// Each probe's payload length and schedule offset (from the origin).
    lens: &'a [usize],
    due: &'a [u64],
    /// The pacer's origin and the call's time, in ns from the epoch.
    sched_base: u64,
    now_offset: u64,
    /// The tx time the probes carry.
    tx_real: u64,
}

/// Writes a Tx record per probe that left (to the sink and the log) and
/// counts them.
#[inline]
fn account(
    cfg: &FlowConfig,
    maker: &ProbeMaker,
    st: &mut FlowSendStats,
    b: &SentBatch,
    tx_sink: &mut dyn RecordSink,
    mut log: Option<&mut RecordWriter>,
) -> io::Result<()> {
    let sent = b.lens.len();
    for (i, (&len, &due)) in b.lens.iter().zip(b.due).enumerate() {
        let s = b.seq + i as u64;
        let warm = s < cfg.warmup;
        let rec = Record {
            flow: cfg.flow,
            size: len as u32,
            seq: s,
            sched_ns: b.sched_base + due,
            tx_ns: b.tx_real,
            probe_flags: maker.flags(s).bits(),
            kind: RecordKind::Tx,
            rec_flags: if sent > 1 { Record::TX_BATCHED } else { 0 },
            tos: cfg.tos.unwrap_or(0),
            ..Default::default()
        };
        if st.sent == 0 && i == 0 {
            st.first_tx_offset_ns = b.now_offset;
        }
        st.bytes += len as u64;
        if warm {
            st.warmup += 1;
        }
        tx_sink.record(&rec);
        if let Some(l) = log.as_mut() {
            l.write(&rec)?;
        }
    }
    st.sent += sent as u64;
    st.last_tx_offset_ns = b.now_offset;
    if let Some(&last) = b.due.last() {
        st.last_sched_offset_ns = b.sched_base + last;
    }
    Ok(())
}

/// Sends the end-of-flow marker: probe `last_seq` again with LAST, each copy
/// with a fresh tx time, `cfg.last_gap` apart. Returns the copies sent.
fn send_last<C: Clock, T: Transmit>(
    cfg: &FlowConfig,
    clock: &mut C,
    tx: &mut T,
    slots: &mut Slots,
    maker: &ProbeMaker,
    last_seq: u64,
) -> io::Result<u32> {
    let len = slots
        .lens
        .first()
        .copied()
        .unwrap_or(maker.min_size)
        .max(maker.min_size);
    let mut sent = 0;
    for r in 0..cfg.last_repeats {
        if r > 0 {
            let t = clock.now_ns() + cfg.last_gap.as_nanos() as u64;
            clock.sleep_until(t);
        }
        let p = ProbeRepr {
            flags: maker
                .base_flags
                .without(ProbeFlags::ECHO_REQUEST)
                .with(ProbeFlags::LAST),
            flow: cfg.flow,
            seq: last_seq,
            tx_ns: (clock.now_ns() as i128 + cfg.mono_to_real) as u64,
            echo: None,
        };
        if slots.send_last(tx, p, len)? {
            sent += 1;
        }
    }
    Ok(sent)
}

/// Reads echo replies until stopped; returns the reply count and the sink.
#[allow(clippy::too_many_arguments)]
fn reply_loop<S: RecordSink>(
    sock: UdpSock,
    flow: u32,
    format: ProbeFormat,
    mono_to_real: i128,
    mut log: Option<RecordWriter>,
    sink: Option<S>,
    got: Arc<AtomicU64>,
    stop: StopFlag,
) -> io::Result<(u64, S)> {
    let mut sink = sink.ok_or_else(|| io::Error::other("echo reply sink missing"))?;
    let mut batch = RecvBatch::new(64, 2048);
    let mut count = 0u64;
    loop {
        match sock.recv_batch(&mut batch) {
            Ok(n) => {
                let user_now = (mono_ns() as i128 + mono_to_real) as u64;
                for i in 0..n {
                    let (data, meta) = batch.get(i);
                    let (seq, tx_ns, probe_flags, echo) = match format {
                        ProbeFormat::Wirelab => {
                            let Ok(p) = ProbeRepr::parse(data) else {
                                continue;
                            };
                            let Some(echo) = p.echo else { continue };
                            if p.flow != flow {
                                continue;
                            }
                            (p.seq, p.tx_ns, p.flags.bits(), echo)
                        }
                        // A LUNA server mirrors the probe: RTT only, no
                        // reflector times (the socket is connected, so
                        // only the target's datagrams arrive).
                        ProbeFormat::Luna => {
                            let Ok(l) = LunaProbe::parse(data) else {
                                continue;
                            };
                            let flags = ProbeFlags::ECHO_REPLY;
                            (u64::from(l.seq), l.tx_ns, flags, EchoTimes::default())
                        }
                    };
                    let (rx_ns, rec_flags) = match meta.ts {
                        RxTimestamp::Software(t) => (t, Record::RX_KERNEL_TS),
                        RxTimestamp::Hardware(t) => (t, Record::RX_HW_TS),
                        RxTimestamp::None => (user_now, 0),
                    };
                    count += 1;
                    got.fetch_add(1, Ordering::Relaxed);
                    let rec = Record {
                        flow,
                        size: data.len() as u32,
                        seq,
                        tx_ns,
                        rx_ns,
                        refl_rx_ns: echo.rx_ns,
                        refl_tx_ns: echo.tx_ns,
                        probe_flags,
                        kind: RecordKind::EchoReply,
                        rec_flags,
                        ..Default::default()
                    };
                    sink.record(&rec);
                    if let Some(l) = log.as_mut() {
                        l.write(&rec)?;
                    }
                }
            }
            Err(e) if nothing_received(&e) => {}
            // The peer's port is closed (ICMP unreachable): keep listening.
            Err(e) if e.kind() == io::ErrorKind::ConnectionRefused => {}
            Err(e) => return Err(e),
        }
        if stop.is_stopped() {
            break;
        }
    }
    if let Some(l) = log.as_mut() {
        l.flush()?;
    }
    Ok((count, sink))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::phase::PhaseConfig;
    use wirelab_io::sim::{PeriodicStall, SimClock, SimResult, SimTx};

    const EPOCH: u64 = 1_000_000_000;

    pub(super) fn cfg(count: u64) -> FlowConfig {
        FlowConfig {
            target: "127.0.0.1:9".parse().unwrap(),
            bind: None,
            flow: 3,
            limits: Limits {
                count: Some(count),
                duration_ns: None,
            },
            tos: None,
            warmup: 2,
            padding: Padding::Const(0xab),
            wait: WaitStrategy::Hybrid {
                spin_ns: SpinMargin::DEFAULT_INITIAL_NS,
            },
            adaptive_spin: true,
            prime: false,
            anchor_first: false,
            echo: false,
            echo_wait: Duration::ZERO,
            last_repeats: 3,
            last_gap: Duration::from_millis(2),
            max_batch: 64,
            lead: Duration::from_millis(5),
            seed: 1,
            epoch_mono_ns: Some(EPOCH),
            start_mono_ns: None,
            mono_to_real: 0,
            format: ProbeFormat::Wirelab,
            late: LatePolicy::DEFAULT,
            phase: None,
        }
    }

    /// Runs `cfg` at `interval_ns` on `clock` over a link whose calls cost
    /// `cost_ns`; returns the stats, the records and the link.
    fn run(
        cfg: &FlowConfig,
        clock: &mut SimClock,
        mut link: SimTx,
        interval_ns: f64,
    ) -> (io::Result<FlowSendStats>, Vec<Record>, SimTx) {
        let mut recs: Vec<Record> = vec![];
        let st = pace_probes(
            cfg,
            clock,
            &mut link,
            None,
            &mut || Some(interval_ns),
            &mut || Some(100.0),
            None,
            &mut recs,
            &StopFlag::new(),
        );
        (st, recs, link)
    }

    /// Departures of the probes themselves (not the end markers).
    fn departures(link: &SimTx) -> Vec<(u64, ProbeRepr)> {
        link.sent
            .iter()
            .map(|d| (d.at_ns, ProbeRepr::parse(&d.bytes).unwrap()))
            .filter(|(_, p)| !p.flags.contains(ProbeFlags::LAST))
            .collect()
    }

    #[test]
    fn probes_leave_on_their_deadlines_and_the_records_say_so() {
        let mut clock = SimClock::new(EPOCH).oversleep(30_000);
        let link = SimTx::new(&clock, 3_000, 100);
        let (st, recs, link) = run(&cfg(100), &mut clock, link, 1e6);
        let st = st.unwrap();
        assert_eq!((st.sent, st.last_repeats, st.send_calls), (100, 3, 100));
        assert_eq!(recs.len(), 100);
        let dep = departures(&link);
        assert_eq!(dep.len(), 100);
        for (k, (r, (at, p))) in recs.iter().zip(&dep).enumerate() {
            let k = k as u64;
            // First deadline at the lead (5 ms), then 1 ms apart, exactly.
            assert_eq!(r.sched_ns, 5_000_000 + k * 1_000_000, "seq {k}");
            assert_eq!((r.seq, p.seq, p.flow, r.size), (k, k, 3, 100));
            // Never early; late only by the clock read that stamps the probe.
            let deadline = EPOCH + r.sched_ns;
            assert_eq!(*at, deadline + 20, "seq {k}");
            assert_eq!(p.tx_ns, r.tx_ns);
            assert_eq!(p.flags.contains(ProbeFlags::WARMUP), k < 2);
        }
        // The end markers repeat the last sequence number, 2 ms apart.
        let last: Vec<_> = link.sent[100..]
            .iter()
            .map(|d| (d.at_ns, ProbeRepr::parse(&d.bytes).unwrap()))
            .collect();
        assert!(last
            .iter()
            .all(|(_, p)| p.seq == 99 && p.flags.contains(ProbeFlags::LAST)));
        assert!(last.windows(2).all(|w| w[1].0 - w[0].0 >= 2_000_000));
        // 30 µs oversleeps: the learned margin came down from 2 ms.
        assert!(st.spin_margin_ns.unwrap() < SpinMargin::DEFAULT_INITIAL_NS);
    }

    #[test]
    fn after_a_2ms_stall_the_backlog_leaves_at_once_and_no_gap_is_below_half() {
        let mut clock = SimClock::new(EPOCH);
        // 10 kpps; the thread loses its CPU for 2 ms 20 ms into the run.
        clock.stall_at(EPOCH + 25_000_050, 2_000_000);
        let link = SimTx::new(&clock, 3_000, 100);
        let (st, recs, link) = run(&cfg(1_000), &mut clock, link, 100_000.0);
        assert_eq!(st.unwrap().sent, 1_000);
        assert_eq!(recs.len(), 1_000);
        let dep = departures(&link);
        // One send call took the packets the stall made due.
        let mut calls: Vec<(u64, usize)> = vec![];
        for (at, _) in &dep {
            match calls.last_mut() {
                Some((t, n)) if t == at => *n += 1,
                _ => calls.push((*at, 1)),
            }
        }
        let batch = calls
            .iter()
            .position(|&(_, n)| n > 1)
            .expect("a catch-up batch");
        // Of the 20 probes the stall made due, those more than 1 ms late
        // (SPREAD_BURST_AFTER_NS) leave at once; the rest are caught up
        // with gaps shortened to no less than half.
        assert_eq!(calls[batch].1, 11, "{:?}", &calls[batch - 1..batch + 2]);
        assert_eq!(calls.iter().filter(|&&(_, n)| n > 1).count(), 1);
        // Every other gap between send calls is at least half the interval.
        for w in calls[batch..].windows(2) {
            assert!(w[1].0 - w[0].0 >= 50_000, "{w:?}");
        }
        // And the run rejoined its schedule: the last probe is on time.
        let (at, _) = dep[999];
        assert_eq!(at, EPOCH + recs[999].sched_ns + 20);
    }

    #[test]
    fn a_calibrated_start_misses_the_periodic_stalls() {
        const TICK: PeriodicStall = PeriodicStall {
            period_ns: 4_000_000,
            phase_ns: 5_000_000,
            len_ns: 30_000,
        };
        let late = |phase: bool| {
            let mut clock = SimClock::new(EPOCH).periodic_stall(TICK);
            // Without anchoring: a first departure that meets a tick would
            // move the whole schedule off it too.
            let mut c = cfg(200);
            c.phase = phase.then_some((
                PhaseConfig {
                    calibrate: Duration::from_millis(200),
                },
                1e6,
            ));
            let link = SimTx::new(&clock, 3_000, 100);
            let (st, recs, link) = run(&c, &mut clock, link, 1e6);
            let st = st.unwrap();
            let dep = departures(&link);
            assert_eq!(dep.len(), 200);
            if phase {
                let p = st.phase.unwrap();
                assert_eq!(p.hits_per_s, 0.0, "{p:?}");
                assert!(p.hits_per_s_unshifted >= p.hits_per_s);
            }
            recs.iter()
                .zip(&dep)
                .filter(|(r, (at, _))| *at > EPOCH + r.sched_ns + 1_000)
                .count()
        };
        // Started on the tick, every fourth probe meets it; calibrated, none.
        assert_eq!(late(false), 50);
        assert_eq!(late(true), 0);
    }

    #[test]
    fn raw_and_packet_frames_carry_each_probes_headers() {
        use wirelab_wire::rewrite::{fix_checksums, parse_ethernet, parse_raw_ip, L3Kind};
        use wirelab_wire::udp4::{EthAddrs, Udp4Header};
        let ip = Udp4Header {
            src: "198.18.0.1:40000".parse().unwrap(),
            dst: "198.18.0.2:5757".parse().unwrap(),
            tos: 0xb8,
            ttl: 64,
            dont_fragment: true,
        };
        let eth = EthAddrs {
            dst: [2, 0, 0, 0, 0, 2],
            src: [2, 0, 0, 0, 0, 1],
        };
        for eth in [Some(eth), None] {
            let frame = Udp4Frame { eth, ip };
            let hl = frame.prefix_len();
            let mut clock = SimClock::new(EPOCH);
            let mut link = SimTx::new(&clock, 3_000, 100);
            let mut c = cfg(20);
            c.prime = true;
            let mut k = 0u32;
            let mut sizes = || {
                k += 1;
                Some(f64::from(24 + 61 * k))
            };
            let mut recs: Vec<Record> = vec![];
            let st = pace_probes(
                &c,
                &mut clock,
                &mut link,
                Some(&frame),
                &mut || Some(1e6),
                &mut sizes,
                None,
                &mut recs,
                &StopFlag::new(),
            )
            .unwrap();
            assert_eq!((st.sent, st.last_repeats), (20, 3));
            // The priming datagram, 20 probes, 3 end markers.
            assert_eq!(link.sent.len(), 24);
            for (i, d) in link.sent.iter().enumerate() {
                let b = &d.bytes;
                let l = match eth {
                    Some(_) => {
                        assert_eq!(&b[..12], &[2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1]);
                        parse_ethernet(b)
                    }
                    None => parse_raw_ip(b),
                };
                let (L3Kind::V4, at) = l.l3.unwrap() else {
                    panic!("not IPv4")
                };
                assert_eq!(l.ip_len, b.len() - at, "packet {i}");
                assert_eq!((b[at + 1], b[at + 8]), (0xb8, 64));
                assert_eq!(&b[at + 4..at + 8], &[0, i as u8, 0x40, 0]);
                let mut fixed = b.clone();
                assert!(fix_checksums(&mut fixed, &l, false));
                assert_eq!(&fixed, b, "packet {i}: checksums");
                let payload = &b[hl..];
                if i == 0 {
                    assert!(payload.is_empty(), "the priming datagram is empty");
                    continue;
                }
                let p = ProbeRepr::parse(payload).unwrap();
                let seq = (i - 1).min(19);
                assert_eq!(p.seq, seq as u64);
                let r = &recs[seq];
                if i <= 20 {
                    assert_eq!(
                        (payload.len(), r.size as usize),
                        (85 + 61 * seq, 85 + 61 * seq)
                    );
                    assert_eq!(p.tx_ns, r.tx_ns);
                }
            }
        }
    }

    #[test]
    fn a_distant_start_waits_then_primes_just_before_it() {
        let mut clock = SimClock::new(EPOCH);
        let mut c = cfg(5);
        c.prime = true;
        // The first deadline 10 s after the epoch (`--start-at`).
        c.start_mono_ns = Some(EPOCH + 10_000_000_000);
        let link = SimTx::new(&clock, 3_000, 100);
        let (st, recs, link) = run(&c, &mut clock, link, 1e6);
        let st = st.unwrap();
        assert_eq!(st.sent, 5);
        assert_eq!(st.first_deadline_unix_ns, EPOCH + 10_000_000_000);
        assert_eq!(recs[0].sched_ns, 10_000_000_000);
        assert!(recs[0].tx_ns >= EPOCH + 10_000_000_000);
        // The priming datagram left 50 ms before the start, not at setup.
        let prime = &link.sent[0];
        assert!(prime.bytes.is_empty());
        let wake = EPOCH + 10_000_000_000 - PRESTART_PRIME_NS;
        assert!(
            (wake..wake + 1_000).contains(&prime.at_ns),
            "{}",
            prime.at_ns
        );
        // A stop during the wait ends the flow without a probe.
        let stop = StopFlag::new();
        stop.stop();
        let mut link = SimTx::new(&clock, 3_000, 100);
        c.start_mono_ns = Some(clock.now_ns() + 3_600_000_000_000);
        let before = clock.now_ns();
        let st = pace_probes(
            &c,
            &mut clock,
            &mut link,
            None,
            &mut || Some(1e6),
            &mut || Some(100.0),
            None,
            &mut (),
            &stop,
        )
        .unwrap();
        assert_eq!((st.sent, st.stopped_early), (0, true));
        assert!(link.sent.is_empty());
        assert!(clock.now_ns() - before < PRESTART_SLEEP_NS);
    }

    #[test]
    fn transient_errors_are_retried_and_a_hard_one_ends_the_flow() {
        let mut clock = SimClock::new(EPOCH);
        let link = SimTx::new(&clock, 3_000, 100).script([
            SimResult::Fail(libc::ENOBUFS),
            SimResult::Take(1),
            SimResult::Fail(libc::ECONNREFUSED),
        ]);
        let (st, recs, link) = run(&cfg(10), &mut clock, link, 1e6);
        let st = st.unwrap();
        assert_eq!((st.sent, st.send_retries, st.send_errors), (10, 2, 0));
        assert_eq!(recs.len(), 10);
        assert_eq!(departures(&link).len(), 10);
        let link = SimTx::new(&clock, 3_000, 100).script([SimResult::Fail(libc::EMSGSIZE)]);
        let (st, recs, _) = run(&cfg(10), &mut clock, link, 1e6);
        assert_eq!(st.unwrap_err().raw_os_error(), Some(libc::EMSGSIZE));
        assert!(recs.is_empty());
    }
}

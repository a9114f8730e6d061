//! The sender: one paced flow of probes per thread.
//!
//! Each flow owns a connected UDP socket and a [`Pacer`]. Departures sit on
//! absolute CLOCK_MONOTONIC deadlines; when several are due at once (the
//! interval is shorter than one send call, or a wake-up came late) they
//! leave in one sendmmsg batch, each still stamped and recorded with its own
//! scheduled time, so lateness is measured, never hidden. The flow ends with
//! its final probe repeated with the LAST flag so the receiver knows the
//! count without guessing.

use crate::phase::{calibrate_origin, PhaseConfig, PhaseReport};
use crate::recordlog::RecordWriter;
use crate::stop::StopFlag;
use crate::ProbeFormat;
use rand::{RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use wirelab_core::phase::{DeadlinePhases, BIN_NS, FOLD_PERIOD_NS};
use wirelab_core::replay::LatePolicy;
use wirelab_core::schedule::{Action, Limits, Pacer, SpinMargin, WaitStrategy};
use wirelab_io::clock::{
    mono_ns, set_timer_slack, sleep_until_mono, spin_until_mono, thread_cpu_ns,
};
use wirelab_io::udp::{RecvBatch, RxTimestamp, UdpSock};
use wirelab_wire::luna::{self, LunaProbe, LUNA_ECHO, LUNA_LEN};
use wirelab_wire::probe::{self, EchoTimes, ProbeFlags, ProbeRepr, ECHO_LEN, HEADER_LEN};
use wirelab_wire::record::{Record, RecordKind};

/// Largest UDP payload over IPv4.
pub const MAX_PAYLOAD: usize = 65_507;
const MAX_BATCH: usize = 64;
/// How often the sender checks whether its CPU is shared (`SpinMargin::observe_cpu_loss`).
const CPU_WINDOW_NS: u64 = 200_000_000;
/// With a calibrated start, how long before the first deadline the priming
/// datagram leaves.
const PRIME_LEAD_NS: u64 = 300_000;

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
    /// (see `Pacer::delay_start`).
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
    /// First and last departure, monotonic ns from the run's epoch.
    pub first_tx_offset_ns: u64,
    pub last_tx_offset_ns: u64,
    pub last_sched_offset_ns: u64,
    pub echo_replies: u64,
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
    mut log: Option<RecordWriter>,
    reply_log: Option<RecordWriter>,
    tx_sink: &mut dyn RecordSink,
    reply_sink: S,
    stop: &StopFlag,
) -> io::Result<(FlowSendStats, S)> {
    let sock = UdpSock::connect(cfg.target, cfg.bind)?;
    if let Some(tos) = cfg.tos {
        sock.set_tos(tos)?;
    }
    let _ = sock.set_send_buffer(4 << 20);
    set_timer_slack(1);

    let luna = cfg.format == ProbeFormat::Luna;
    let min_size = match (luna, cfg.echo) {
        (true, _) => LUNA_LEN,
        (false, true) => ECHO_LEN,
        (false, false) => HEADER_LEN,
    };
    let mut rng = ChaCha8Rng::seed_from_u64(cfg.seed ^ 0x005e_ed0f_9add);
    let max_batch = cfg.max_batch.clamp(1, MAX_BATCH);
    let mut bufs: Vec<Vec<u8>> = (0..max_batch)
        .map(|_| match cfg.padding {
            Padding::Const(b) => vec![b; MAX_PAYLOAD],
            Padding::Random => vec![0u8; MAX_PAYLOAD],
        })
        .collect();
    let mut lens = vec![0usize; max_batch];

    // Echo replies are read on a second thread from a clone of the socket.
    let replies_wanted = Arc::new(AtomicU64::new(0));
    let replies_got = Arc::new(AtomicU64::new(0));
    let reply_stop = StopFlag::new();
    let mut reply_sink = Some(reply_sink);
    let reply_thread = if cfg.echo {
        let sink = reply_sink.take();
        let mut rsock = sock.try_clone()?;
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

    // Prime the path before the first deadline: a zero-length datagram
    // resolves the neighbour entry and warms the send path, whose first
    // call costs tens of µs (it made the first probes late). Receivers
    // ignore empty datagrams. With a phase calibration it goes out shortly
    // before the first deadline instead.
    let calibrate = cfg.phase.filter(|&(_, i)| i >= BIN_NS as f64);
    let prime = cfg.prime && !luna;
    if prime && calibrate.is_none() {
        let _ = sock.send(&[]);
    }
    let epoch = cfg.epoch_mono_ns.unwrap_or_else(mono_ns);
    let lead = (cfg.lead.as_nanos() as u64).max(1_000);
    let mut start = cfg.start_mono_ns.unwrap_or(epoch + lead).max(epoch + 1);
    let start_real = (epoch as i128 + cfg.mono_to_real) as u64;
    let mut phase = None;
    if let Some((pc, interval_ns)) = calibrate {
        let deadlines = DeadlinePhases::constant(interval_ns);
        let search = (interval_ns.round() as u64).min(FOLD_PERIOD_NS);
        let (origin, report) = calibrate_origin(pc, start, &deadlines, search);
        start = origin;
        if prime {
            // Just before the first deadline: after the sleep that follows
            // the calibration, the path is cold again (the first probe left
            // 38 µs late at 1 kpps with the datagram sent right after it).
            let at = start.saturating_sub(PRIME_LEAD_NS);
            let _ = sleep_until_mono(at.saturating_sub(SpinMargin::DEFAULT_INITIAL_NS));
            spin_until_mono(at);
            // Through the probes' own send path, so its code is paged in.
            let _ = sock.send_batch(&[&[]]);
        }
        phase = Some(report);
    }
    let mut pacer = Pacer::new(start, cfg.wait, cfg.limits, max_batch).with_late_policy(cfg.late);
    // One send call's cost, a moving average of single-probe calls; late
    // packets nearer than this to their catch-up target join the batch.
    let mut send_cost_ns: u64 = 5_000;
    pacer.set_send_cost(send_cost_ns);
    let mut margin = match cfg.wait {
        WaitStrategy::Hybrid { spin_ns } if cfg.adaptive_spin => Some(SpinMargin::new(
            spin_ns,
            SpinMargin::DEFAULT_FLOOR_NS,
            SpinMargin::DEFAULT_CEIL_NS,
        )),
        _ => None,
    };
    let mut due: Vec<u64> = Vec::with_capacity(max_batch);
    let mut cpu_window = CpuWindow::new();
    let mut st = FlowSendStats {
        flow: cfg.flow,
        start_unix_ns: start_real,
        ..Default::default()
    };
    let mut seq: u64 = 0;
    let mut sizes_done = false;
    let mut base_flags = ProbeFlags::empty();
    if cfg.echo {
        base_flags = base_flags.with(ProbeFlags::ECHO_REQUEST);
    }

    while !stop.is_stopped() {
        if luna && seq > u64::from(u32::MAX) {
            // The LUNA sequence number would wrap.
            break;
        }
        while pacer.wants_interval() {
            match intervals.next_value() {
                Some(v) => pacer.push_interval(v),
                None => {
                    pacer.exhaust();
                    break;
                }
            }
        }
        let now = mono_ns();
        match pacer.poll(now) {
            Action::Done => break,
            Action::SleepUntil(t) => {
                // EINTR (a signal) just loops back to check the stop flag.
                let _ = sleep_until_mono(t);
                let woke = mono_ns();
                st.sleeps += 1;
                cpu_window.slept_ns += woke.saturating_sub(now);
                if let Some(m) = margin.as_mut() {
                    m.observe(t, woke);
                    pacer.set_spin_margin(m.margin_ns());
                    cpu_window.check(woke, m, &mut pacer, &mut st);
                }
            }
            Action::SpinUntil(t) => {
                // The time the spin ended is the check's clock: no extra read
                // on the way to the send.
                let now = spin_until_mono(t);
                if let Some(m) = margin.as_mut() {
                    cpu_window.check(now, m, &mut pacer, &mut st);
                }
            }
            Action::Send { count } => {
                let count = if luna {
                    count.min((u64::from(u32::MAX) + 1 - seq) as usize)
                } else {
                    count
                };
                pacer.take(count, &mut due);
                let mut n = 0;
                for (i, _) in due.iter().enumerate() {
                    let Some(size) = sizes.next_value() else {
                        sizes_done = true;
                        break;
                    };
                    let len = (size.max(0.0).round() as usize).clamp(min_size, MAX_PAYLOAD);
                    let mut flags = base_flags;
                    if seq + (i as u64) < cfg.warmup {
                        flags = flags.with(ProbeFlags::WARMUP);
                    }
                    let b = &mut bufs[i];
                    if luna {
                        let l = LunaProbe {
                            seq: (seq + i as u64) as u32,
                            tx_ns: 0,
                            flags: if cfg.echo { LUNA_ECHO } else { 0 },
                        };
                        l.emit(b);
                    } else {
                        let p = ProbeRepr {
                            flags,
                            flow: cfg.flow,
                            seq: seq + i as u64,
                            tx_ns: 0,
                            echo: None,
                        };
                        p.emit(b);
                    }
                    if cfg.padding == Padding::Random {
                        rng.fill_bytes(&mut b[HEADER_LEN..len]);
                    }
                    lens[i] = len;
                    n += 1;
                }
                if n == 0 {
                    break;
                }
                let now = mono_ns();
                let tx_real = (now as i128 + cfg.mono_to_real) as u64;
                for b in bufs.iter_mut().take(n) {
                    if luna {
                        luna::stamp_tx_ns(b, tx_real);
                    } else {
                        probe::stamp_tx_ns(b, tx_real);
                    }
                }
                let sent = send_all(&sock, &bufs, &lens[..n], &mut st)?;
                let cost = mono_ns().saturating_sub(now);
                // Single-probe calls only, and not the ones a stall inflated.
                if n == 1 && cost < send_cost_ns * 4 {
                    send_cost_ns = (send_cost_ns * 7 + cost) / 8;
                    pacer.set_send_cost(send_cost_ns);
                }
                if st.sent == 0 && sent > 0 && cfg.anchor_first {
                    // The schedule runs from the first departure (see
                    // `Pacer::delay_start`): the first call on a cold path is
                    // slow (15-40 µs here even after priming). After a phase
                    // calibration only while that keeps the deadlines inside
                    // the run of good phases the choice sits in the middle of.
                    let lag = mono_ns().saturating_sub(due[0]);
                    if phase.as_ref().is_none_or(|p| lag < p.margin_ns / 2) {
                        pacer.delay_start(lag);
                        st.anchor_lag_ns = Some(lag);
                    }
                }
                st.send_calls += 1;
                if sent > 1 {
                    st.batched_calls += 1;
                }
                st.max_batch = st.max_batch.max(sent);
                if cfg.echo {
                    replies_wanted.fetch_add(sent as u64, Ordering::Relaxed);
                }
                for i in 0..sent {
                    let s = seq + i as u64;
                    let warm = s < cfg.warmup;
                    let rec = Record {
                        flow: cfg.flow,
                        size: lens[i] as u32,
                        seq: s,
                        sched_ns: due[i] - epoch,
                        tx_ns: tx_real,
                        probe_flags: if warm {
                            base_flags.with(ProbeFlags::WARMUP).bits()
                        } else {
                            base_flags.bits()
                        },
                        kind: RecordKind::Tx,
                        rec_flags: if sent > 1 { Record::TX_BATCHED } else { 0 },
                        tos: cfg.tos.unwrap_or(0),
                        ..Default::default()
                    };
                    if st.sent == 0 && i == 0 {
                        st.first_tx_offset_ns = now - epoch;
                    }
                    st.bytes += lens[i] as u64;
                    if warm {
                        st.warmup += 1;
                    }
                    tx_sink.record(&rec);
                    if let Some(l) = log.as_mut() {
                        l.write(&rec)?;
                    }
                }
                st.sent += sent as u64;
                st.last_tx_offset_ns = now - epoch;
                st.last_sched_offset_ns = due[sent.saturating_sub(1)] - epoch;
                seq += sent as u64;
                if sizes_done {
                    break;
                }
            }
        }
    }
    st.stopped_early = stop.is_stopped();
    st.phase = phase;
    st.spin_margin_ns = match cfg.wait {
        WaitStrategy::Hybrid { spin_ns } => Some(margin.map_or(spin_ns, |m| m.margin_ns())),
        _ => None,
    };

    // End-of-flow marker: the final probe again with LAST, fresh tx time
    // (LUNA has no such flag).
    if st.sent > 0 && !luna {
        let last_seq = seq - 1;
        let len = lens.first().copied().unwrap_or(min_size).max(min_size);
        for r in 0..cfg.last_repeats {
            if r > 0 {
                std::thread::sleep(cfg.last_gap);
            }
            let p = ProbeRepr {
                flags: base_flags
                    .without(ProbeFlags::ECHO_REQUEST)
                    .with(ProbeFlags::LAST),
                flow: cfg.flow,
                seq: last_seq,
                tx_ns: (mono_ns() as i128 + cfg.mono_to_real) as u64,
                echo: None,
            };
            p.emit(&mut bufs[0]);
            if sock.send(&bufs[0][..len]).is_ok() {
                st.last_repeats += 1;
            }
        }
    }
    if let Some(l) = log.as_mut() {
        l.flush()?;
    }

    if let Some(t) = reply_thread {
        // Stop early once every probe has come back.
        let wait_until = mono_ns() + cfg.echo_wait.as_nanos() as u64;
        let wanted = replies_wanted.load(Ordering::Relaxed);
        while mono_ns() < wait_until
            && replies_got.load(Ordering::Relaxed) < wanted
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

/// CPU accounting of the sending thread for the contention check: the
/// current window's start (monotonic), the thread's CPU time then, and
/// the time it has spent in sleep calls since.
struct CpuWindow {
    start_ns: u64,
    cpu_ns: u64,
    slept_ns: u64,
}

impl CpuWindow {
    fn new() -> Self {
        CpuWindow {
            start_ns: mono_ns(),
            cpu_ns: thread_cpu_ns(),
            slept_ns: 0,
        }
    }

    /// Every [`CPU_WINDOW_NS`] (`now` is CLOCK_MONOTONIC, already read by the
    /// caller): tells the margin learner how long the thread
    /// waited for its CPU (neither running nor asleep), so a CPU shared with
    /// busy work makes it sleep more and spin less
    /// (`SpinMargin::observe_cpu_loss`).
    fn check(&mut self, now: u64, m: &mut SpinMargin, pacer: &mut Pacer, st: &mut FlowSendStats) {
        let window = now.saturating_sub(self.start_ns);
        if window < CPU_WINDOW_NS {
            return;
        }
        let cpu = thread_cpu_ns();
        let ran = cpu.saturating_sub(self.cpu_ns);
        m.observe_cpu_loss(window.saturating_sub(ran + self.slept_ns), window);
        pacer.set_spin_margin(m.margin_ns());
        st.contended_windows += u64::from(m.contended());
        self.start_ns = now;
        self.cpu_ns = cpu;
        self.slept_ns = 0;
    }
}

/// Sends `lens.len()` buffers, retrying the rest after a partial send or a
/// transient error (ENOBUFS/EAGAIN), so no probe is skipped. Returns how
/// many were sent; gives up only after repeated failures.
fn send_all(
    sock: &UdpSock,
    bufs: &[Vec<u8>],
    lens: &[usize],
    st: &mut FlowSendStats,
) -> io::Result<usize> {
    let mut refs: [&[u8]; MAX_BATCH] = [&[]; MAX_BATCH];
    for (i, &l) in lens.iter().enumerate() {
        refs[i] = &bufs[i][..l];
    }
    let n = lens.len();
    let mut done = 0;
    let mut failures = 0;
    while done < n {
        match sock.send_batch(&refs[done..n]) {
            Ok(k) => {
                done += k;
                if k == 0 {
                    failures += 1;
                }
            }
            Err(e) => {
                st.send_retries += 1;
                failures += 1;
                // ECONNREFUSED: an ICMP port unreachable for an earlier probe
                // (the receiver is not up yet); the next send goes through.
                let transient =
                    crate::transient_send_error(&e) || e.raw_os_error() == Some(libc::ECONNREFUSED);
                if !transient || failures > 1000 {
                    st.send_errors += 1;
                    if done == 0 && !transient {
                        return Err(e);
                    }
                    return Ok(done);
                }
                std::thread::yield_now();
            }
        }
        if failures > 1000 {
            break;
        }
    }
    Ok(done)
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
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock
                        | io::ErrorKind::TimedOut
                        | io::ErrorKind::Interrupted
                ) => {}
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

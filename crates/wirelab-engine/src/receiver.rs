//! The receiver and reflector.
//!
//! One thread receives with recvmmsg, takes kernel timestamps from each
//! message's control data, parses the probe in place, and hands one
//! [`Record`] per probe to a [`RxSink`] (live statistics, a record file).
//! With `echo`, each echo request is turned into a reply in its own buffer
//! and sent back to its source with the reflector's receive and transmit
//! times. It ends on a stop request, after every flow seen has sent its
//! LAST marker (plus a linger for stragglers), or after an idle timeout.

use crate::recordlog::RecordWriter;
use crate::ProbeFormat;
use crate::StopFlag;
use std::collections::HashMap;
use std::io;
use std::net::SocketAddr;
use std::time::Duration;
use wirelab_core::forecast::{ForecastParams, Forecaster, WaitMode};
use wirelab_io::ifstats::{cpu_time, CpuScope};
use wirelab_io::udp::nothing_received;
use wirelab_io::udp::{RecvBatch, RxTimestamp, TimestampMode, UdpSock};
use wirelab_io::{Clock, MonoClock, Receive};
use wirelab_wire::luna::LunaProbe;
use wirelab_wire::probe::{make_echo_reply, EchoTimes, ProbeFlags, ProbeRepr};
use wirelab_wire::record::{Record, RecordKind};

/// Receives each probe's record, in arrival order.
pub trait RxSink {
    fn packet(&mut self, rec: &Record);
}

impl<F: FnMut(&Record)> RxSink for F {
    fn packet(&mut self, rec: &Record) {
        self(rec)
    }
}

/// How the receive loop waits for packets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RecvWait {
    /// Block in recvmmsg until a packet arrives (one wake-up per burst).
    Block,
    /// Sleep a fixed period, then take everything queued without blocking.
    Poll { period_ns: u64 },
    /// The arrival-rate forecaster picks block or poll every cycle
    /// (`wirelab_core::forecast`): blocking while traffic is sparse,
    /// polling at the period when packets come faster than it.
    Adaptive { period_ns: u64 },
}

impl RecvWait {
    pub fn as_str(self) -> &'static str {
        match self {
            RecvWait::Block => "block",
            RecvWait::Poll { .. } => "poll",
            RecvWait::Adaptive { .. } => "adaptive",
        }
    }
}

#[derive(Debug, Clone)]
pub struct RecvConfig {
    pub bind: SocketAddr,
    /// For an IPv6 bind: refuse IPv4 (v4-mapped) senders.
    pub v6only: bool,
    pub echo: bool,
    /// Requested socket receive buffer in bytes.
    pub rcvbuf: usize,
    pub batch: usize,
    /// SO_BUSY_POLL µs (0 = off).
    pub busy_poll_us: u32,
    /// After every flow has ended, wait this long for late packets.
    pub linger: Duration,
    /// End when nothing arrived for this long after the first packet.
    pub idle_timeout: Option<Duration>,
    /// End after this long in any case.
    pub max_duration: Option<Duration>,
    /// Keep serving after flows end (a standing reflector).
    pub forever: bool,
    pub wait: RecvWait,
    /// Probe layout expected (LUNA flows get ids by source address).
    pub format: ProbeFormat,
    /// Share the port with other receivers that share it (SO_REUSEPORT);
    /// otherwise a port already held is refused.
    pub reuse_port: bool,
}

impl Default for RecvConfig {
    fn default() -> Self {
        RecvConfig {
            bind: "[::]:4790".parse().unwrap(),
            v6only: false,
            echo: false,
            rcvbuf: 32 << 20,
            batch: 64,
            busy_poll_us: 0,
            linger: Duration::from_millis(300),
            idle_timeout: None,
            max_duration: None,
            forever: false,
            wait: RecvWait::Block,
            format: ProbeFormat::Wirelab,
            reuse_port: false,
        }
    }
}

/// Flow ids of LUNA senders, which carry none: one per source address, in
/// order of appearance from 1, bounded against hostile senders.
#[derive(Default)]
struct SourceFlows {
    ids: HashMap<SocketAddr, u32>,
}

impl SourceFlows {
    const MAX: usize = 1 << 16;

    fn flow_of(&mut self, src: SocketAddr) -> Option<u32> {
        let next = self.ids.len() as u32 + 1;
        match self.ids.get(&src) {
            Some(&id) => Some(id),
            None if self.ids.len() < Self::MAX => {
                self.ids.insert(src, next);
                Some(next)
            }
            None => None,
        }
    }

    fn list(&self) -> Vec<FlowSource> {
        let mut v: Vec<FlowSource> = self
            .ids
            .iter()
            .map(|(a, &flow)| FlowSource {
                flow,
                source: a.to_string(),
            })
            .collect();
        v.sort_by_key(|f| f.flow);
        v
    }
}

/// Which source address a flow id stands for (LUNA probes carry no flow id).
#[derive(Debug, Clone, serde::Serialize)]
pub struct FlowSource {
    pub flow: u32,
    pub source: String,
}

/// Counters for live progress and the final summary.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct RecvCounters {
    pub packets: u64,
    pub bytes: u64,
    /// Datagrams that were not wirelab probes (bad magic, too short, ...).
    pub malformed: u64,
    /// Empty datagrams (senders prime the path with one), ignored.
    pub empty: u64,
    /// Datagrams larger than the receive buffer, cut.
    pub truncated: u64,
    /// Cumulative kernel socket drops (SO_RXQ_OVFL).
    pub kernel_drops: u64,
    pub flows: usize,
    pub flows_ended: usize,
    pub echo_replies: u64,
    pub echo_send_errors: u64,
    pub recv_calls: u64,
    /// Packets whose receive time came from user space, not the kernel.
    pub user_timestamps: u64,
    /// Packets stamped by the NIC's hardware clock (see `recv --hw-timestamps`).
    pub hw_timestamps: u64,
    /// Wait mode in use now ("block" or "poll") and how often it changed.
    pub wait_mode: &'static str,
    pub mode_switches: u64,
    /// recvmmsg calls that returned packets, and the packets they returned.
    pub wakeups: u64,
    pub wakeup_packets: u64,
}

/// The receiver's final report.
#[derive(Debug, Clone, serde::Serialize)]
pub struct RecvOutcome {
    pub counters: RecvCounters,
    pub local_addr: String,
    pub timestamping: &'static str,
    pub rcvbuf_bytes: usize,
    pub duration_ns: u64,
    /// Why it ended: "flows-ended", "signal", "idle-timeout", "max-duration".
    pub end_reason: &'static str,
    /// The configured wait ("block", "poll", "adaptive") and its poll period.
    pub wait: &'static str,
    pub poll_period_ns: Option<u64>,
    pub wakeups_per_s: f64,
    pub packets_per_wakeup: f64,
    /// CPU time of the receiving thread (user + system).
    pub cpu_user_ns: u64,
    pub cpu_system_ns: u64,
    /// Probe layout received.
    pub format: ProbeFormat,
    /// With `format` luna: the source address behind each flow id.
    pub flow_sources: Vec<FlowSource>,
}

/// A bound receiver, ready to run (split so callers can learn the port first).
pub struct Receiver {
    cfg: RecvConfig,
    sock: UdpSock,
    rcvbuf: usize,
}

#[derive(Default)]
struct FlowEnd {
    ended: bool,
}

impl Receiver {
    pub fn bind(cfg: RecvConfig) -> io::Result<Receiver> {
        let mut sock = UdpSock::bind_with(cfg.bind, cfg.v6only, cfg.reuse_port)?;
        sock.enable_rx_timestamps();
        let rcvbuf = sock.set_recv_buffer(cfg.rcvbuf).unwrap_or(0);
        sock.set_read_timeout(Duration::from_millis(50))?;
        if cfg.busy_poll_us > 0 {
            sock.set_busy_poll(cfg.busy_poll_us)?;
        }
        Ok(Receiver { cfg, sock, rcvbuf })
    }

    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.sock.local_addr()
    }

    pub fn timestamp_mode(&self) -> TimestampMode {
        self.sock.timestamp_mode()
    }

    /// Receives until an end condition. `progress` is called about every
    /// `progress_every` with the live counters.
    pub fn run(
        &self,
        sink: &mut dyn RxSink,
        log: Option<&mut RecordWriter>,
        stop: &StopFlag,
        progress: &mut dyn FnMut(&RecvCounters),
        progress_every: Duration,
    ) -> io::Result<RecvOutcome> {
        let mut out = receive(
            &self.cfg,
            &mut MonoClock,
            &mut &self.sock,
            sink,
            log,
            stop,
            progress,
            progress_every,
        )?;
        out.local_addr = self.local_addr().map(|a| a.to_string()).unwrap_or_default();
        out.timestamping = self.sock.timestamp_mode().as_str();
        out.rcvbuf_bytes = self.rcvbuf;
        Ok(out)
    }
}

/// The receive loop over any clock and socket ([`Receiver::run`] runs it on
/// the machine's; tests on `wirelab_io::sim`). The outcome's socket facts
/// (local address, timestamping, buffer size) are left empty.
#[allow(clippy::too_many_arguments)]
pub fn receive<C: Clock, R: Receive>(
    cfg: &RecvConfig,
    clock: &mut C,
    rx: &mut R,
    sink: &mut dyn RxSink,
    mut log: Option<&mut RecordWriter>,
    stop: &StopFlag,
    progress: &mut dyn FnMut(&RecvCounters),
    progress_every: Duration,
) -> io::Result<RecvOutcome> {
    let mut batch = RecvBatch::new(cfg.batch, 65_536);
    let mut st = RxState::default();
    let t0 = clock.now_ns();
    let mut ends = Ends::new(t0);
    let mut next_progress = t0 + progress_every.as_nanos() as u64;
    let cpu0 = cpu_time(CpuScope::Thread).ok();
    let mut waiter = Waiter::new(cfg.wait, t0);
    let end_reason = loop {
        if stop.is_stopped() {
            break "signal";
        }
        let now = clock.now_ns();
        if let Some(reason) = ends.reason(cfg, now) {
            break reason;
        }
        if now >= next_progress {
            progress(&st.c);
            next_progress = now + progress_every.as_nanos() as u64;
        }
        let n = waiter.receive(clock, rx, &mut batch, now, &mut st.c)?;
        if n == 0 {
            continue;
        }
        st.c.wakeups += 1;
        st.c.wakeup_packets += n as u64;
        let user_now = clock.wall_ns();
        ends.last_rx = Some(clock.now_ns());
        st.c.kernel_drops = batch.kernel_drops as u64;
        for i in 0..n {
            let Some(mut rec) = st.classify(cfg, &batch, i, user_now) else {
                continue;
            };
            if cfg.echo && ProbeFlags(rec.probe_flags).is_echo_request() {
                reflect(cfg, clock, rx, &mut batch, i, &mut rec, &mut st.c);
            }
            sink.packet(&rec);
            if let Some(l) = log.as_deref_mut() {
                l.write(&rec)?;
            }
            st.track_end(&rec);
        }
        st.c.flows = st.flows.len();
        if st.c.flows > 0 && st.c.flows_ended == st.c.flows {
            ends.all_ended_at.get_or_insert(clock.now_ns());
        } else {
            ends.all_ended_at = None;
        }
    };
    progress(&st.c);
    let dur = clock.now_ns() - t0;
    let cpu = match (cpu0, cpu_time(CpuScope::Thread).ok()) {
        (Some(a), Some(b)) => a.delta(&b),
        _ => Default::default(),
    };
    let c = st.c;
    Ok(RecvOutcome {
        wait: cfg.wait.as_str(),
        poll_period_ns: waiter.period_ns,
        wakeups_per_s: c.wakeups as f64 / (dur as f64 / 1e9).max(1e-9),
        packets_per_wakeup: if c.wakeups > 0 {
            c.wakeup_packets as f64 / c.wakeups as f64
        } else {
            0.0
        },
        cpu_user_ns: cpu.user_ns,
        cpu_system_ns: cpu.system_ns,
        counters: c,
        local_addr: String::new(),
        timestamping: "",
        rcvbuf_bytes: 0,
        duration_ns: dur,
        end_reason,
        format: cfg.format,
        flow_sources: st.luna_flows.list(),
    })
}

/// The times the loop's end conditions are judged from (monotonic ns).
struct Ends {
    t0: u64,
    /// The last wake-up that brought packets.
    last_rx: Option<u64>,
    /// When every flow seen had ended (cleared when a new one appears).
    all_ended_at: Option<u64>,
}

impl Ends {
    fn new(t0: u64) -> Self {
        Ends {
            t0,
            last_rx: None,
            all_ended_at: None,
        }
    }

    /// Why the loop ends at `now`, if it does: the run's length, the idle
    /// timeout, or every flow ended and the linger over (never `forever`).
    fn reason(&self, cfg: &RecvConfig, now: u64) -> Option<&'static str> {
        if let Some(d) = cfg.max_duration {
            if now - self.t0 >= d.as_nanos() as u64 {
                return Some("max-duration");
            }
        }
        if let (Some(t), Some(idle)) = (self.last_rx, cfg.idle_timeout) {
            if now - t >= idle.as_nanos() as u64 {
                return Some("idle-timeout");
            }
        }
        match self.all_ended_at {
            Some(t) if !cfg.forever && now - t >= cfg.linger.as_nanos() as u64 => {
                Some("flows-ended")
            }
            _ => None,
        }
    }
}

/// How the loop waits: the mode now, its poll period, and the forecaster
/// that switches between block and poll (adaptive wait only).
struct Waiter {
    mode: WaitMode,
    period_ns: Option<u64>,
    forecaster: Option<Forecaster>,
    next_poll: u64,
    /// The last call filled the batch: more is queued, take it at once.
    draining: bool,
}

impl Waiter {
    fn new(wait: RecvWait, t0: u64) -> Self {
        let (period_ns, adaptive) = match wait {
            RecvWait::Block => (None, false),
            RecvWait::Poll { period_ns } => (Some(period_ns.max(1_000)), false),
            RecvWait::Adaptive { period_ns } => (Some(period_ns.max(1_000)), true),
        };
        Waiter {
            mode: match wait {
                RecvWait::Poll { .. } => WaitMode::Poll,
                _ => WaitMode::Block,
            },
            period_ns,
            forecaster: period_ns
                .filter(|_| adaptive)
                .map(|p| Forecaster::new(ForecastParams::for_poll_period(p), t0)),
            next_poll: t0,
            draining: false,
        }
    }

    /// Waits as the mode says and receives into `batch`: the packets taken
    /// (0 when nothing came). The forecaster then picks the next mode.
    #[inline]
    fn receive<C: Clock, R: Receive>(
        &mut self,
        clock: &mut C,
        rx: &mut R,
        batch: &mut RecvBatch,
        now: u64,
        c: &mut RecvCounters,
    ) -> io::Result<usize> {
        let res = match self.mode {
            WaitMode::Block => rx.receive(batch, true),
            WaitMode::Poll => {
                // Timer-paced: wake on the period grid and take what is
                // queued; a full batch means more is waiting, so go on
                // draining without sleeping.
                if !self.draining {
                    let p = self.period_ns.unwrap_or(1_000_000);
                    self.next_poll = self.next_poll.max(now) + p;
                    clock.sleep_until(self.next_poll);
                }
                rx.receive(batch, false)
            }
        };
        c.recv_calls += 1;
        let n = match res {
            Ok(n) => n,
            Err(e) if nothing_received(&e) => 0,
            Err(e) => return Err(e),
        };
        if let Some(f) = self.forecaster.as_mut() {
            let m = f.on_cycle(clock.now_ns(), n as u64);
            if m != self.mode {
                c.mode_switches += 1;
                self.mode = m;
            }
        }
        c.wait_mode = self.mode.as_str();
        self.draining = n == batch.capacity();
        Ok(n)
    }
}

/// What the loop knows of the traffic: counters, the flows seen and
/// whether each has ended, LUNA flow ids by source.
#[derive(Default)]
struct RxState {
    c: RecvCounters,
    flows: HashMap<u32, FlowEnd>,
    luna_flows: SourceFlows,
}

impl RxState {
    /// Counts datagram `i` of `batch` and, when it is a probe, returns its
    /// Rx record (receive time from the kernel, the NIC or `user_now`).
    #[inline]
    fn classify(
        &mut self,
        cfg: &RecvConfig,
        batch: &RecvBatch,
        i: usize,
        user_now: u64,
    ) -> Option<Record> {
        let c = &mut self.c;
        let (data, meta) = batch.get(i);
        if meta.truncated {
            c.truncated += 1;
        }
        if data.is_empty() {
            // A sender's priming datagram: not traffic.
            c.empty += 1;
            return None;
        }
        let Some(p) = parse_probe(cfg.format, data, || {
            batch.source(i).and_then(|a| self.luna_flows.flow_of(a))
        }) else {
            c.malformed += 1;
            return None;
        };
        let (rx_ns, rec_flags) = match meta.ts {
            RxTimestamp::Software(t) => (t, Record::RX_KERNEL_TS),
            RxTimestamp::Hardware(t) => {
                c.hw_timestamps += 1;
                (t, Record::RX_HW_TS)
            }
            RxTimestamp::None => {
                c.user_timestamps += 1;
                (user_now, 0)
            }
        };
        c.packets += 1;
        c.bytes += data.len() as u64;
        Some(Record {
            flow: p.flow,
            size: data.len() as u32,
            seq: p.seq,
            tx_ns: p.tx_ns,
            rx_ns,
            probe_flags: p.flags.bits(),
            kind: RecordKind::Rx,
            rec_flags,
            ..Default::default()
        })
    }

    /// Notes the record's flow, and its end on a LAST probe. The table is
    /// bounded against hostile senders: new flows past the bound are not
    /// tracked.
    #[inline]
    fn track_end(&mut self, rec: &Record) {
        if self.flows.len() < 1 << 16 || self.flows.contains_key(&rec.flow) {
            let f = self.flows.entry(rec.flow).or_default();
            if ProbeFlags(rec.probe_flags).is_last() && !f.ended {
                f.ended = true;
                self.c.flows_ended += 1;
            }
        }
    }
}

/// The probe in `data`, or None when it is none (or an echo reply). A LUNA
/// probe carries no flow id: `luna_flow` gives its source's.
#[inline]
fn parse_probe(
    format: ProbeFormat,
    data: &[u8],
    luna_flow: impl FnOnce() -> Option<u32>,
) -> Option<ProbeRepr> {
    match format {
        ProbeFormat::Wirelab => ProbeRepr::parse(data)
            .ok()
            .filter(|p| !p.flags.is_echo_reply()),
        ProbeFormat::Luna => {
            let l = LunaProbe::parse(data).ok();
            match (l, luna_flow()) {
                (Some(l), Some(flow)) => Some(ProbeRepr {
                    flags: if l.is_echo_request() {
                        ProbeFlags(ProbeFlags::ECHO_REQUEST)
                    } else {
                        ProbeFlags::empty()
                    },
                    flow,
                    seq: u64::from(l.seq),
                    tx_ns: l.tx_ns,
                    echo: None,
                }),
                _ => None,
            }
        }
    }
}

/// Turns echo request `i` into its reply in place, with the reflector's
/// receive and transmit times (also put in `rec`), and sends it back to its
/// source.
#[inline]
fn reflect<C: Clock, R: Receive>(
    cfg: &RecvConfig,
    clock: &mut C,
    rx: &mut R,
    batch: &mut RecvBatch,
    i: usize,
    rec: &mut Record,
    c: &mut RecvCounters,
) {
    let src = batch.source(i);
    let tx = clock.wall_ns();
    let times = EchoTimes {
        rx_ns: rec.rx_ns,
        tx_ns: tx,
    };
    rec.refl_rx_ns = rec.rx_ns;
    rec.refl_tx_ns = tx;
    let len = rec.size as usize;
    let slot = batch.slot_mut(i);
    let reply_len = match cfg.format {
        ProbeFormat::Wirelab => make_echo_reply(slot, len, times),
        // A LUNA server mirrors the packet as received.
        ProbeFormat::Luna => Some(len),
    };
    match (reply_len, src) {
        (Some(rlen), Some(src)) => match rx.reply(&slot[..rlen], src) {
            Ok(_) => c.echo_replies += 1,
            Err(_) => c.echo_send_errors += 1,
        },
        _ => c.echo_send_errors += 1,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wirelab_io::sim::{SimClock, SimRx};

    const T0: u64 = 1_000_000_000;

    fn probe(flow: u32, seq: u64, flags: u8, size: usize) -> Vec<u8> {
        let mut b = vec![0u8; size];
        let p = ProbeRepr {
            flags: ProbeFlags(flags),
            flow,
            seq,
            tx_ns: SimClock::WALL_OFFSET_NS + T0 + seq * 1_000,
            echo: None,
        };
        p.emit(&mut b).unwrap();
        b
    }

    fn src(port: u16) -> SocketAddr {
        SocketAddr::from(([192, 0, 2, 1], port))
    }

    /// Runs `cfg` over `rx` on `clock`; returns the outcome and the records.
    fn run(cfg: &RecvConfig, clock: &mut SimClock, rx: &mut SimRx) -> (RecvOutcome, Vec<Record>) {
        let mut recs = vec![];
        let out = receive(
            cfg,
            clock,
            rx,
            &mut |r: &Record| recs.push(*r),
            None,
            &StopFlag::new(),
            &mut |_| {},
            Duration::from_secs(1),
        )
        .unwrap();
        (out, recs)
    }

    #[test]
    fn counts_and_records_are_exact() {
        let mut clock = SimClock::new(T0);
        let mut rx = SimRx::new(&clock, 50_000_000);
        let mut t = T0 + 1_000_000;
        let mut push = |rx: &mut SimRx, d: &[u8], port| {
            rx.arrive(t, d, src(port));
            t += 10_000;
        };
        push(&mut rx, &[], 1); // a sender's priming datagram
        for seq in 0..100 {
            // Flow 1 with seq 60 after 61 and a duplicate of 50; flow 2 in order.
            let s1 = match seq {
                60 => 61,
                61 => 60,
                s => s,
            };
            push(&mut rx, &probe(1, s1, 0, 100), 1);
            if seq == 50 {
                push(&mut rx, &probe(1, 50, 0, 100), 1);
            }
            push(&mut rx, &probe(2, seq, 0, 64), 2);
        }
        push(&mut rx, b"junk!", 3);
        for _ in 0..3 {
            push(&mut rx, &probe(1, 99, ProbeFlags::LAST, 100), 1);
            push(&mut rx, &probe(2, 99, ProbeFlags::LAST, 64), 2);
        }
        let last_arrival = t - 10_000;
        let (out, recs) = run(&RecvConfig::default(), &mut clock, &mut rx);
        let c = &out.counters;
        assert_eq!((c.packets, c.empty, c.malformed), (207, 1, 1));
        assert_eq!((c.flows, c.flows_ended), (2, 2));
        assert_eq!(c.bytes, 101 * 100 + 100 * 64 + 3 * (100 + 64));
        assert_eq!(c.user_timestamps, 0);
        assert_eq!(out.end_reason, "flows-ended");
        // The linger (300 ms) runs from the last end marker.
        assert!(out.duration_ns >= last_arrival - T0 + 300_000_000);
        // Records in arrival order, stamped with the kernel's receive time.
        assert_eq!(recs.len(), 207);
        let f1: Vec<u64> = recs.iter().filter(|r| r.flow == 1).map(|r| r.seq).collect();
        assert_eq!(&f1[60..64], [59, 61, 60, 62], "after the duplicate of 50");
        assert_eq!(f1.iter().filter(|&&s| s == 50).count(), 2);
        for r in &recs {
            assert_eq!(r.kind, RecordKind::Rx);
            assert_eq!(r.rec_flags, Record::RX_KERNEL_TS);
            assert!(r.rx_ns > SimClock::WALL_OFFSET_NS + T0);
        }
        assert_eq!(recs[0].rx_ns, SimClock::WALL_OFFSET_NS + T0 + 1_010_000);
    }

    #[test]
    fn a_flood_switches_to_polling_and_sparse_traffic_back_to_blocking() {
        let mut clock = SimClock::new(T0);
        let mut rx = SimRx::new(&clock, 50_000_000);
        // 20 ms of one probe every 2 µs, then one every 20 ms for 400 ms.
        let mut t = T0 + 1_000_000;
        let mut seq = 0;
        for _ in 0..10_000 {
            rx.arrive(t, &probe(1, seq, 0, 64), src(1));
            t += 2_000;
            seq += 1;
        }
        for _ in 0..20 {
            t += 20_000_000;
            rx.arrive(t, &probe(1, seq, 0, 64), src(1));
            seq += 1;
        }
        rx.arrive(t, &probe(1, seq - 1, ProbeFlags::LAST, 64), src(1));
        let cfg = RecvConfig {
            wait: RecvWait::Adaptive {
                period_ns: 1_000_000,
            },
            ..RecvConfig::default()
        };
        let (out, recs) = run(&cfg, &mut clock, &mut rx);
        let c = &out.counters;
        assert_eq!(c.packets, 10_021);
        assert_eq!(recs.len(), 10_021);
        assert!(recs.windows(2).all(|w| w[0].seq <= w[1].seq));
        // Into polling for the flood (full batches per wake-up), and back.
        assert!(c.mode_switches >= 2, "{c:?}");
        assert_eq!(c.wait_mode, "block");
        assert!(out.packets_per_wakeup > 10.0, "{}", out.packets_per_wakeup);
    }

    #[test]
    fn echo_requests_are_reflected_with_the_reflector_times() {
        let mut clock = SimClock::new(T0);
        let mut rx = SimRx::new(&clock, 50_000_000);
        for seq in 0..10 {
            rx.arrive(
                T0 + 1_000_000 + seq * 1_000_000,
                &probe(4, seq, ProbeFlags::ECHO_REQUEST, 64),
                src(9),
            );
        }
        rx.arrive(T0 + 20_000_000, &probe(4, 9, ProbeFlags::LAST, 64), src(9));
        let cfg = RecvConfig {
            echo: true,
            ..RecvConfig::default()
        };
        let (out, recs) = run(&cfg, &mut clock, &mut rx);
        assert_eq!(
            (out.counters.echo_replies, out.counters.echo_send_errors),
            (10, 0)
        );
        assert_eq!(rx.replies.len(), 10);
        for (k, (_, data, to)) in rx.replies.iter().enumerate() {
            assert_eq!(*to, src(9));
            let p = ProbeRepr::parse(data).unwrap();
            assert!(p.flags.is_echo_reply());
            assert_eq!(p.seq, k as u64);
            let e = p.echo.unwrap();
            assert_eq!(e.rx_ns, recs[k].rx_ns);
            assert_eq!((recs[k].refl_rx_ns, recs[k].refl_tx_ns), (e.rx_ns, e.tx_ns));
            assert!(e.tx_ns >= e.rx_ns);
        }
    }
}

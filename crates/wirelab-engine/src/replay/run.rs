//! Running a replay: the outputs opened and joined, the trace loaded (or
//! scanned to be streamed), the start phase, the passes, the report.

use super::*;

fn file_bytes(files: &[PathBuf]) -> u64 {
    files
        .iter()
        .filter_map(|f| std::fs::metadata(f).ok())
        .map(|m| m.len())
        .sum()
}

/// An open output: the link, its name, the kind, qdisc bypass, the MTU.
type Opened = (Tx, String, &'static str, bool, Option<u32>);

fn open_output(out: &Output, batch: usize) -> Result<Opened, ReplayError> {
    Ok(match out {
        Output::Ring {
            ifname,
            qdisc_bypass,
            slots,
        } => {
            let sock = PacketSocket::open(ifname, *qdisc_bypass)?;
            let mtu = sock.info().mtu;
            let max = mtu as usize + HEADER_BYTES + VLAN_TAG_BYTES;
            let ring = TxRing::new(sock, max, *slots)?;
            let b = ring.qdisc_bypass();
            (Tx::Ring(ring), ifname.clone(), "ring", b, Some(mtu))
        }
        Output::Sendmmsg {
            ifname,
            qdisc_bypass,
        } => {
            let sock = PacketSocket::open(ifname, *qdisc_bypass)?;
            sock.set_send_buffer(4 << 20);
            let mtu = sock.info().mtu;
            let max = mtu as usize + HEADER_BYTES + VLAN_TAG_BYTES;
            let b = sock.qdisc_bypass();
            let bufs = (0..batch.max(1)).map(|_| Vec::with_capacity(max)).collect();
            (
                Tx::Frames {
                    link: Box::new(sock),
                    bufs,
                    n: 0,
                },
                ifname.clone(),
                "sendmmsg",
                b,
                Some(mtu),
            )
        }
        Output::File(p) => {
            let f = std::fs::File::create(p).map_err(|e| ReplayError::Io {
                what: format!("cannot create {}", p.display()),
                cause: e,
            })?;
            let w = wirelab_pcap::PcapWriter::new(
                BufWriter::new(f),
                1,
                262_144,
                wirelab_pcap::PcapPrecision::Nano,
            )
            .map_err(|e| ReplayError::Io {
                what: format!("writing {}", p.display()),
                cause: e,
            })?;
            (
                Tx::File {
                    w,
                    base_ns: 0,
                    keep_ts: false,
                    pending: Vec::new(),
                },
                p.display().to_string(),
                "file",
                false,
                None,
            )
        }
    })
}

/// Runs a replay to the end (or until `stop`), printing nothing.
pub fn run(cfg: &ReplayConfig, stop: &StopFlag) -> Result<ReplayReport, ReplayError> {
    let mut outputs = vec![open_output(&cfg.output, cfg.batch)?];
    if let Some(sp) = &cfg.split {
        outputs.push(open_output(&sp.secondary, cfg.batch)?);
    }
    run_on(cfg, stop, MonoClock, outputs)
}

/// [`run`] on any clock, with the outputs already open (the primary, then
/// the split's secondary).
pub(super) fn run_on<C: Clock>(
    cfg: &ReplayConfig,
    stop: &StopFlag,
    mut clock: C,
    outputs: Vec<Opened>,
) -> Result<ReplayReport, ReplayError> {
    let mut out = join_outputs(outputs)?;
    let mut read = cfg.read.clone();
    read.egress_mtu = out.egress_mtu;
    read.max_frame = out
        .egress_mtu
        .map(|m| m as usize + HEADER_BYTES + VLAN_TAG_BYTES);
    let loaded = load(cfg, &read, &mut clock)?;
    let keep_ts = matches!(cfg.timing, Timing::Original { multiplier } if multiplier == 1.0);
    for tx in &mut out.txs {
        if let Tx::File {
            base_ns,
            keep_ts: k,
            ..
        } = tx
        {
            *base_ns = loaded.stats.first_ts_ns.unwrap_or(0);
            *k = keep_ts;
        }
    }
    let log = match &cfg.log {
        Some(p) => {
            let origin = (clock.now_ns() as i128 + mono_to_real_offset()) as u64;
            Some(DepartureLog::create(p, cfg, origin)?)
        }
        None => None,
    };
    let paced = is_paced(cfg);
    if let Some(note) = trace::schedule_notice(&loaded.stats, cfg.timing).filter(|_| paced) {
        tracing::warn!("{note}");
    }
    let txs = std::mem::take(&mut out.txs);
    let mut s = new_sender(cfg, stop, clock, txs, &loaded, log);
    let mut phase = None;
    if let (Some(pc), Some(t), true) = (cfg.phase, &loaded.trace, is_timed(cfg)) {
        phase = Some(calibrate_phase(&mut s, pc, t));
    }
    let passes = replay_passes(&mut s, loaded.trace.as_ref(), &read, loaded.count)?;
    finish_outputs(&mut s)?;
    let mut report = ReplayReport {
        schema: SCHEMA,
        output: out.desc.clone(),
        tx: out.kind,
        qdisc_bypass: out.bypass,
        departure: match out.kind {
            "file" if keep_ts => "none (written to a file: each packet's own timestamp in the first pass, the first packet's time plus the ideal offset in later passes)",
            "file" => "none (written to a file: the first packet's time plus each packet's ideal offset)",
            _ => "CLOCK_MONOTONIC just before the send() that hands the frame to the kernel (TX ring kick / sendmmsg)",
        },
        files: cfg.read.files.iter().map(|f| f.display().to_string()).collect(),
        load: loaded.info,
        rewrite: loaded.stats.rewrite.into(),
        read: loaded.stats,
        timing: format!("{:?}", cfg.timing),
        late_policy: format!("{:?}", cfg.late),
        loops: passes,
        stopped_by: s.stopped_by,
        fidelity: s.fid.report(),
        send: s.send,
        split: cfg.split.as_ref().map(|sp| SplitReport {
            mode: sp.sides.mode.clone(),
            primary: out.desc.clone(),
            secondary: out.split_desc.clone().unwrap_or_default(),
            client_packets: s.per_side[0],
            server_packets: s.per_side[1],
            skipped_packets: s.skipped,
        }),
        wait: wait_report(cfg.spin, &s.pacer, s.waited),
        phase,
        nothing_sent: None,
    };
    report.nothing_sent = outcome::why_nothing_sent(&report);
    Ok(report)
}

/// The outputs of a replay as one: the links (primary first) and what the
/// report says of them.
struct Outputs {
    txs: Vec<Tx>,
    desc: String,
    kind: &'static str,
    bypass: bool,
    /// The smaller of the two MTUs: frames must fit both.
    egress_mtu: Option<u32>,
    split_desc: Option<String>,
}

/// Joins the primary output and the split's secondary (if any); warns when
/// the two differ in kind or qdisc bypass.
fn join_outputs(outputs: Vec<Opened>) -> Result<Outputs, ReplayError> {
    let mut outputs = outputs.into_iter();
    let (tx, desc, kind, bypass, egress_mtu) = outputs
        .next()
        .ok_or_else(|| ReplayError::Input("no output".into()))?;
    let mut out = Outputs {
        txs: vec![tx],
        desc,
        kind,
        bypass,
        egress_mtu,
        split_desc: None,
    };
    if let Some((tx2, desc2, kind2, bypass2, mtu2)) = outputs.next() {
        if kind2 != kind || bypass2 != bypass {
            tracing::warn!(
                "the two outputs differ: {kind}/{kind2}, qdisc bypass {bypass}/{bypass2}"
            );
        }
        out.egress_mtu = match (egress_mtu, mtu2) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        out.txs.push(tx2);
        out.split_desc = Some(desc2);
    }
    Ok(out)
}

/// The trace as read before the first departure.
struct Loaded {
    /// In memory, or None: streamed in every pass.
    trace: Option<Trace>,
    stats: ReadStats,
    count: u64,
    info: LoadInfo,
}

/// Preloads the trace within the budget (rewrites can grow frames past the
/// file's size: checked as it loads), else scans it once for the loop clock
/// and the counts (the same a preload makes: a pass of the replay may stop
/// early) and leaves it to be streamed.
fn load<C: Clock>(
    cfg: &ReplayConfig,
    read: &ReadSpec,
    clock: &mut C,
) -> Result<Loaded, ReplayError> {
    let mut stats = ReadStats::default();
    let in_bytes = file_bytes(&read.files);
    let t0 = clock.now_ns();
    let trace = match in_bytes <= cfg.max_preload {
        true => trace::preload(read, &mut stats, cfg.max_preload)?,
        false => None,
    };
    let count = match &trace {
        Some(t) => t.pkts.len() as u64,
        None => {
            stats = ReadStats::default();
            let mut n = 0u64;
            trace::scan(read, &mut stats, |_, _| {
                n += 1;
                true
            })?;
            n
        }
    };
    let info = LoadInfo {
        mode: if trace.is_none() { "stream" } else { "memory" },
        bytes: trace.as_ref().map(Trace::bytes).unwrap_or(in_bytes),
        packets: count,
        load_ns: clock.now_ns() - t0,
        max_preload_bytes: cfg.max_preload,
    };
    Ok(Loaded {
        trace,
        stats,
        count,
        info,
    })
}

/// Frames are sent, not written to a file.
fn is_paced(cfg: &ReplayConfig) -> bool {
    !matches!(cfg.output, Output::File(_))
}

/// Departures on a schedule: sent (not written to a file), not at top speed.
fn is_timed(cfg: &ReplayConfig) -> bool {
    is_paced(cfg) && !matches!(cfg.timing, Timing::Topspeed)
}

/// The sender over `txs`, its schedule's origin 20 ms from now.
fn new_sender<'a, C: Clock>(
    cfg: &'a ReplayConfig,
    stop: &'a StopFlag,
    mut clock: C,
    txs: Vec<Tx>,
    loaded: &Loaded,
    log: Option<DepartureLog>,
) -> Sender<'a, C> {
    let (wait, learn) = match cfg.spin {
        Spin::Fixed(ns) => (WaitStrategy::Hybrid { spin_ns: ns }, None),
        Spin::Auto => (
            WaitStrategy::Hybrid {
                spin_ns: MarginBounds::REPLAY.initial_ns,
            },
            Some(MarginBounds::REPLAY),
        ),
    };
    let origin = clock.now_ns() + 20_000_000;
    Sender {
        cfg,
        clock,
        tx: txs,
        per_side: [0; 2],
        skipped: 0,
        sched: Schedule::new(cfg.timing),
        pacer: Pacer::new(
            origin,
            PaceConfig {
                wait,
                learn,
                late: cfg.late,
                anchor_first: is_timed(cfg),
            },
        ),
        loops: LoopClock::new(loaded.stats.schedule_ns, loaded.count, cfg.loop_delay_ns),
        fid: Fidelity::new(cfg.late_threshold_ns),
        send: SendStats::default(),
        queue: Vec::with_capacity(cfg.batch.max(1)),
        sent: 0,
        stop,
        stopped_by: "done",
        log,
        paced: is_paced(cfg),
        waited: false,
        kick_waits: matches!(cfg.timing, Timing::Topspeed),
    }
}

/// Moves the sender's origin to a start phase that misses this CPU's
/// periodic stalls, judged on where the first pass's deadlines fall
/// (packets a split skips included: close enough for a phase choice).
fn calibrate_phase<C: Clock>(s: &mut Sender<C>, pc: PhaseConfig, t: &Trace) -> PhaseReport {
    let mut sched = Schedule::new(s.cfg.timing);
    let offsets = t
        .pkts
        .iter()
        .take(PHASE_MAX_PACKETS)
        .map(|p| sched.next(s.loops.trace_ns(0, p.t_ns), p.len));
    let deadlines = DeadlinePhases::new(offsets);
    let (origin, report) = calibrate_origin(
        &mut s.clock,
        pc,
        s.pacer.origin_ns(),
        &deadlines,
        FOLD_PERIOD_NS,
    );
    // The first departure still moves the origin by how late its kick
    // returned (the first kick on a cold path takes tens of µs and
    // there is no harmless frame to warm it with): the phase moves by
    // that much, well inside the choice's margin except for dense CBR.
    s.pacer.set_origin(origin);
    report
}

/// Replays the trace `cfg.loops` times (0: until stopped), from memory or
/// streamed by a reader thread; returns the passes begun.
fn replay_passes<C: Clock>(
    s: &mut Sender<C>,
    trace: Option<&Trace>,
    read: &ReadSpec,
    count: u64,
) -> Result<u64, ReplayError> {
    let loops = s.cfg.loops;
    let mut pass = 0u64;
    let mut go = count > 0;
    while go && (loops == 0 || pass < loops) {
        match trace {
            Some(t) => {
                for p in &t.pkts {
                    if !s.packet(p, t.data(p), pass) {
                        go = false;
                        break;
                    }
                }
            }
            None => {
                let (txc, rxc) = mpsc::sync_channel::<Trace>(4);
                let rd = read.clone();
                let reader = std::thread::spawn(move || trace::stream(&rd, &txc));
                'chunks: for chunk in rxc.iter() {
                    for p in &chunk.pkts {
                        if !s.packet(p, chunk.data(p), pass) {
                            go = false;
                            break 'chunks;
                        }
                    }
                }
                drop(rxc);
                reader
                    .join()
                    .map_err(|_| ReplayError::Input("the reader thread panicked".into()))??;
            }
        }
        pass += 1;
    }
    Ok(pass)
}

/// Sends what is queued, waits for every TX ring to drain (every frame
/// released before the ring is unmapped and the report made), flushes file
/// outputs and finishes the departure log.
fn finish_outputs<C: Clock>(s: &mut Sender<C>) -> Result<(), ReplayError> {
    s.flush();
    for tx in &mut s.tx {
        if let Tx::Ring(r) = tx {
            if let Err(e) = r.wait_done() {
                tracing::warn!("waiting for the TX ring to drain: {e}");
            }
            s.send.wrong_format += r.wrong_format();
        }
        if let Tx::File { w, .. } = tx {
            w.flush().map_err(|e| ReplayError::Io {
                what: "flushing the output file".into(),
                cause: e,
            })?;
        }
    }
    if let Some(l) = s.log.take() {
        l.finish()?;
    }
    Ok(())
}

/// How the sender waited; all zero when no packet waited (top speed, a file).
fn wait_report(spin: Spin, pacer: &Pacer, waited: bool) -> WaitReport {
    let st = pacer.stats();
    let margin = |m: u64| if waited { m } else { 0 };
    WaitReport {
        spin: match spin {
            Spin::Auto => "auto".into(),
            Spin::Fixed(ns) => format!("{ns}ns"),
        },
        spin_margin_final_ns: margin(pacer.margin_ns().unwrap_or(0)),
        spin_margin_max_ns: margin(st.margin_max_ns),
        sleeps: st.sleeps,
        sleeps_past_deadline: st.sleeps_past_deadline,
        oversleep_max_ns: st.oversleep_max_ns,
    }
}

//! One point, as its phases: conditions up (emulator, captures, counters,
//! stressors, the settle time), receivers up, the senders' synced start,
//! watch and query until the senders end, stop and drain, then the
//! conditions down, the files fetched and the point's record summarised.
//! Whatever a phase started is in [`PointRun`], which kills what is still
//! running on every way out.

use super::*;
use wirelab_analysis::schema::SendPlans;

/// What a point runs in: the campaign, the point resolved, its directory.
pub(super) struct PointCx<'a> {
    pub control: &'a Control,
    pub plan: &'a Plan,
    pub point: &'a Point,
    pub resolved: sweep::Resolved,
    pub pdir: PathBuf,
    pub stop: &'a AtomicBool,
}

/// The emulator and the captures a point started.
struct Conditions {
    emulate: Option<(String, String)>,
    /// (host, interface, tag, file in the agent's workdir).
    captures: Vec<(String, String, String, String)>,
}

/// How each flow's sender and receiver ended, by flow name.
#[derive(Default)]
struct Exits {
    send: BTreeMap<String, Exit>,
    recv: BTreeMap<String, Exit>,
}

/// Runs `point`: its record, whatever its status; an error when the
/// infrastructure failed.
#[allow(clippy::too_many_arguments)]
pub(super) fn run_point(
    control: &Control,
    plan: &Plan,
    point: &Point,
    cfg: &RunConfig,
    hosts: &mut Hosts<'_>,
    dir: &Path,
    stop: &AtomicBool,
    on: &mut dyn FnMut(Event<'_>),
) -> Result<PointFile, RunError> {
    let cx = PointCx {
        control,
        plan,
        point,
        resolved: sweep::resolve(control, point)?,
        pdir: dir.join("points").join(&point.id),
        stop,
    };
    std::fs::create_dir_all(&cx.pdir).map_err(|e| bundle_io(&cx.pdir, e))?;
    let mut flows = flow_runs(&cx, cfg.quick);
    let mut targets = vec![];
    for f in &flows {
        targets.push(hosts.target(&f.spec.from, &f.spec.to)?);
    }
    let mut file = PointFile::begun(
        point.id.clone(),
        point.index,
        point.repetition,
        point.params.clone(),
        unix_ns(),
    );
    let mut run = PointRun {
        hosts,
        started: vec![],
    };
    let conditions = conditions_up(&mut run, &cx)?;
    // Counters before anything loads the hosts; then the stressors, up
    // before the settle time.
    let mut counters = PointCounters::before(&mut run, control, &cx.resolved, &cx.pdir)?;
    let mut stressors = stressors::start(&mut run, control, point)?;
    on(Event::Stressors(&stressors.up()));
    // The campaign's settle time: the path (an emulator's queues, a
    // stressor's load) reaches its steady state before the flows start.
    if !sleep_unless(stop, plan.campaign.settle_ns) {
        interrupted(&mut file);
    }
    // The hosts' clocks, before the receivers start.
    let hosts_of = flows
        .iter()
        .flat_map(|f| [f.spec.from.as_str(), f.spec.to.as_str()]);
    let mut clocks = PointClocks::before(hosts_of, |h| run.agent(h)?.time().map_err(agent(h)))?;
    receivers_up(&mut run, &flows)?;
    synced_start(&mut run, &cx, &flows, &targets, &clocks, &mut file)?;
    let mut exits = Exits::default();
    let mut watch = Watch {
        counters: &mut counters,
        stressors: &mut stressors,
        exits: &mut exits,
    };
    watch.run(&mut run, &cx, &mut flows, &mut file, on)?;
    stop_and_drain(&mut run, &flows, &mut exits)?;
    clocks.after(|h| run.agent(h)?.time().map_err(agent(h)))?;
    counters.after(&mut run, &cx.pdir, &mut file)?;
    conditions_down(&mut run, &cx, conditions, &mut file)?;
    // Stressors, after the flows have drained.
    let (st, failed) = stressors.stop(&mut run, &cx.pdir)?;
    on(Event::Stressors(&[]));
    file.stressors = st;
    if let (PointStatus::Done, Some(why)) = (file.status, failed) {
        fail(&mut file, why);
    }
    fetch_flows(&mut run, &cx, &flows, &exits, &clocks, &mut file)?;
    attribute(&cx.pdir, &mut file);
    run.started.clear();
    drop(run);
    file.ended_unix_ns = unix_ns();
    let mut text = serde_json::to_string_pretty(&file).expect("a point serializes");
    text.push('\n');
    bundle::write_atomic(&cx.pdir.join("point.json"), text.as_bytes())?;
    Ok(file)
}

fn interrupted(file: &mut PointFile) {
    file.status = PointStatus::Interrupted;
    file.reason = Some("interrupted (Ctrl-C)".into());
}

fn fail(file: &mut PointFile, why: String) {
    file.status = PointStatus::Failed;
    file.reason = Some(why);
}

/// The point's flows, `--quick` applied. Ids and ports by the flow's
/// place in the control file, the same at every point whichever flows
/// run there.
fn flow_runs(cx: &PointCx<'_>, quick: bool) -> Vec<FlowRun> {
    cx.resolved
        .flows
        .iter()
        .map(|f| {
            let mut spec = f.clone();
            if quick {
                quicken(&mut spec);
            }
            let i = cx
                .control
                .flows
                .iter()
                .position(|c| c.name == f.name)
                .unwrap_or(0);
            FlowRun {
                id: i as u32 + 1,
                port: f.port.unwrap_or(BASE_PORT + i as u16),
                tag: format!("{}-{}", cx.point.id, f.name),
                spec,
                status: None,
                queried: 0,
            }
        })
        .collect()
}

/// The emulator and the captures, each seen holding its sockets.
fn conditions_up(run: &mut PointRun<'_, '_>, cx: &PointCx<'_>) -> Result<Conditions, RunError> {
    let mut out = Conditions {
        emulate: None,
        captures: vec![],
    };
    if let Some(e) = &cx.resolved.emulate {
        let tag = format!("{}-emulate", cx.point.id);
        let args = EmulateJob {
            a: run.hosts.ifname(&e.host, &e.ifaces[0]),
            b: run.hosts.ifname(&e.host, &e.ifaces[1]),
            json: true,
            quiet: true,
            both: e.stages.clone(),
            a2b: e.a2b.clone(),
            b2a: e.b2a.clone(),
            extra: e.args.clone(),
        }
        .argv();
        let before = run.agent(&e.host)?.sockets().map_err(agent(&e.host))?;
        run.spawn(&e.host, &tag, args)?;
        // Two receive rings and two sending sockets.
        wait_ready(run, &e.host, &tag, |s| s.packet >= before.packet + 4)?;
        out.emulate = Some((e.host.clone(), tag));
    }
    let Some(c) = &cx.resolved.capture else {
        return Ok(out);
    };
    for host in &c.hosts {
        let ifaces = cx.control.capture_ifaces(host);
        if ifaces.is_empty() {
            return Err(RunError::Setup(format!(
                "[capture] on host {host}: name the interfaces (capture.ifaces) or the host's \
                 test_if"
            )));
        }
        for ifname in ifaces {
            let tag = format!("{}-cap-{host}-{ifname}", cx.point.id);
            let file = format!("{tag}.pcapng");
            let args = CaptureJob {
                interface: run.hosts.ifname(host, &ifname),
                write: file.clone(),
                json: true,
                quiet: true,
                snaplen: c.snaplen,
                filter: c.filter.clone(),
                extra: c.args.clone(),
            }
            .argv();
            let before = run.agent(host)?.sockets().map_err(agent(host))?;
            run.spawn(host, &tag, args)?;
            wait_ready(run, host, &tag, |s| s.packet > before.packet)?;
            out.captures.push((host.clone(), ifname, tag, file));
        }
    }
    Ok(out)
}

/// Every flow's receiver, seen bound to its port.
fn receivers_up(run: &mut PointRun<'_, '_>, flows: &[FlowRun]) -> Result<(), RunError> {
    for f in flows {
        let args = RecvJob {
            port: f.port,
            record: Some(format!("{}-rx.wlr", f.tag)),
            status: Some(format!("{}.status", f.tag)),
            json: true,
            quiet: true,
            echo: f.spec.echo,
            extra: f.spec.recv_args.clone(),
            ..RecvJob::default()
        }
        .argv();
        run.spawn(&f.spec.to, &format!("{}-recv", f.tag), args)?;
    }
    for f in flows {
        let port = f.port;
        wait_ready(run, &f.spec.to, &format!("{}-recv", f.tag), |s| {
            s.udp_ports.contains(&port)
        })?;
    }
    Ok(())
}

/// Every sender, from one absolute start T0 (each given it on its own
/// host's clock).
fn synced_start(
    run: &mut PointRun<'_, '_>,
    cx: &PointCx<'_>,
    flows: &[FlowRun],
    targets: &[String],
    clocks: &PointClocks,
    file: &mut PointFile,
) -> Result<(), RunError> {
    let t0 = unix_ns() + START_LEAD.as_nanos() as u64;
    file.t0_unix_ns = Some(t0);
    for (f, target) in flows.iter().zip(targets) {
        let t0_there = clocks.local_t0(&f.spec.from, t0);
        let args = send_job(f, target, t0_there, cx.plan.campaign.seed).argv();
        run.spawn(&f.spec.from, &format!("{}-send", f.tag), args)?;
    }
    Ok(())
}

/// What the watch of a running point looks at besides the flows.
struct Watch<'w> {
    counters: &'w mut PointCounters,
    stressors: &'w mut stressors::Stressors,
    exits: &'w mut Exits,
}

impl Watch<'_> {
    /// Until every sender has ended, or an abort, Ctrl-C or a stressor
    /// that ends: each flow's status queried, the hosts sampled.
    fn run(
        &mut self,
        run: &mut PointRun<'_, '_>,
        cx: &PointCx<'_>,
        flows: &mut [FlowRun],
        file: &mut PointFile,
        on: &mut dyn FnMut(Event<'_>),
    ) -> Result<(), RunError> {
        let began = Instant::now();
        let mut abort: Option<String> = None;
        while self.exits.send.len() < flows.len() {
            if cx.stop.load(Ordering::Relaxed) {
                interrupted(file);
                break;
            }
            std::thread::sleep(WATCH_EVERY);
            let since_t0 = began.elapsed().saturating_sub(START_LEAD);
            on(Event::Tick { elapsed: since_t0 });
            self.counters.sample(run, &cx.pdir)?;
            for f in flows.iter_mut() {
                self.flow(run, f, &mut abort, file, since_t0, on)?;
            }
            if abort.is_some() {
                file.status = PointStatus::Aborted;
                file.reason = abort.clone();
                break;
            }
            if let Some(why) = self.stressors.check(run)? {
                fail(file, why);
                break;
            }
        }
        Ok(())
    }

    /// One look at a flow: its sender's end, its receiver's status, its
    /// abort criteria (the first abort found stands).
    fn flow(
        &mut self,
        run: &mut PointRun<'_, '_>,
        f: &mut FlowRun,
        abort: &mut Option<String>,
        file: &mut PointFile,
        since_t0: Duration,
        on: &mut dyn FnMut(Event<'_>),
    ) -> Result<(), RunError> {
        if !self.exits.send.contains_key(&f.spec.name) {
            let a = run.agent(&f.spec.from)?;
            let tag = format!("{}-send", f.tag);
            if let Some(e) = a.wait(&tag, Duration::ZERO).map_err(agent(&f.spec.from))? {
                self.exits.send.insert(f.spec.name.clone(), e);
            }
        }
        if let Some(s) = read_status(run, &f.spec.to, &format!("{}.status", f.tag))? {
            on(Event::Flow {
                name: &f.spec.name,
                received: s.packets,
                lost: s.lost(),
            });
            if abort.is_none() {
                *abort = check_abort(f, &s);
                if abort.is_some() {
                    file.abort_criterion = Some("lost_gt".into());
                }
            }
            f.status = Some(s);
        }
        if let (None, Some(max)) = (&abort, f.spec.abort.max_duration) {
            if since_t0.as_nanos() as u64 > max {
                file.abort_criterion = Some("max_duration".into());
                *abort = Some(format!(
                    "flow {}: max_duration {} reached",
                    f.spec.name,
                    humantime::format_duration(Duration::from_nanos(max))
                ));
            }
        }
        Ok(())
    }
}

/// Senders still running (an abort or Ctrl-C) stopped; receivers given
/// [`DRAIN`] to end by themselves, then stopped.
fn stop_and_drain(
    run: &mut PointRun<'_, '_>,
    flows: &[FlowRun],
    exits: &mut Exits,
) -> Result<(), RunError> {
    for f in flows {
        if !exits.send.contains_key(&f.spec.name) {
            let e = run.stop(&f.spec.from, &format!("{}-send", f.tag))?;
            exits.send.insert(f.spec.name.clone(), e);
        }
    }
    let drained = Instant::now();
    while exits.recv.len() < flows.len() && drained.elapsed() < DRAIN {
        for f in flows {
            if !exits.recv.contains_key(&f.spec.name) {
                let a = run.agent(&f.spec.to)?;
                let tag = format!("{}-recv", f.tag);
                if let Some(e) = a.wait(&tag, Duration::ZERO).map_err(agent(&f.spec.to))? {
                    exits.recv.insert(f.spec.name.clone(), e);
                }
            }
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    for f in flows {
        if !exits.recv.contains_key(&f.spec.name) {
            let e = run.stop(&f.spec.to, &format!("{}-recv", f.tag))?;
            exits.recv.insert(f.spec.name.clone(), e);
        }
    }
    Ok(())
}

/// The emulator and the captures stopped, their reports and files kept;
/// one that failed fails a point that was otherwise done.
fn conditions_down(
    run: &mut PointRun<'_, '_>,
    cx: &PointCx<'_>,
    c: Conditions,
    file: &mut PointFile,
) -> Result<(), RunError> {
    if let Some((host, tag)) = &c.emulate {
        let x = run.stop(host, tag)?;
        file.emulate_report = json_report(&x);
        if file.status == PointStatus::Done && x.code != Some(0) {
            fail(file, format!("emulate on {host}: {}", exit_text(&x)));
        }
    }
    for (host, ifname, tag, name) in &c.captures {
        let x = run.stop(host, tag)?;
        let local = format!("pcap/{host}-{ifname}.pcapng");
        fetch(run, host, name, &cx.pdir.join(&local))?;
        file.pcaps.push(local);
        if file.status == PointStatus::Done && x.code != Some(0) {
            fail(
                file,
                format!("capture on {host} {ifname}: {}", exit_text(&x)),
            );
        }
    }
    Ok(())
}

/// Each flow's record files fetched and its entry in the point's record:
/// reports, exits, direction, clock. A tool that failed fails a point that
/// was otherwise done.
fn fetch_flows(
    run: &mut PointRun<'_, '_>,
    cx: &PointCx<'_>,
    flows: &[FlowRun],
    exits: &Exits,
    clocks: &PointClocks,
    file: &mut PointFile,
) -> Result<(), RunError> {
    for f in flows {
        let fdir = format!("flows/{}", f.spec.name);
        let (tx, rx) = (format!("{fdir}/tx.wlr"), format!("{fdir}/rx.wlr"));
        let got_tx = fetch(
            run,
            &f.spec.from,
            &format!("{}-tx.wlr", f.tag),
            &cx.pdir.join(&tx),
        )?;
        let got_rx = fetch(
            run,
            &f.spec.to,
            &format!("{}-rx.wlr", f.tag),
            &cx.pdir.join(&rx),
        )?;
        let se = exits.send.get(&f.spec.name);
        let re = exits.recv.get(&f.spec.name);
        for (what, host, e) in [("send", &f.spec.from, se), ("recv", &f.spec.to, re)] {
            if let Some(e) = e {
                if e.code != Some(0) && file.status == PointStatus::Done {
                    let why = format!("flow {}: {what} on {host}: {}", f.spec.name, exit_text(e));
                    fail(file, why);
                }
            }
        }
        let emulate = cx.resolved.emulate.as_ref();
        file.flows.push(PointFlow {
            name: f.spec.name.clone(),
            flow_id: f.id,
            from: f.spec.from.clone(),
            to: f.spec.to.clone(),
            planned: f.spec.count.or_else(|| se.and_then(|e| planned(e, f.id))),
            tx: got_tx.then_some(tx),
            rx: got_rx.then_some(rx),
            send_report: se.and_then(json_report),
            recv_report: re.and_then(json_report),
            send_exit: se.and_then(|e| e.code),
            recv_exit: re.and_then(|e| e.code),
            emulate_direction: emulate
                .and_then(|e| emulate_direction(run.hosts, e, &f.spec.from, &f.spec.to)),
            attribution: None,
            clock: clocks.flow(
                &cx.pdir,
                &f.spec.from,
                &f.spec.to,
                file.t0_unix_ns,
                cx.plan.campaign.owd_uncertainty_max_ns,
            )?,
        });
    }
    Ok(())
}

/// A flow without a count: what its sender's schedule planned within the
/// duration, from its send/1 report.
fn planned(send: &Exit, flow: u32) -> Option<u64> {
    serde_json::from_str::<SendPlans>(send.stdout.trim())
        .ok()?
        .planned(flow)
}

//! `wirelab replay`: flags to a [`ReplayJob`], its report to stdout.

use crate::error::{rt_error, usage, Privilege};
use anyhow::Result;
use wirelab_cli::replay::{BadTsArg, RateLayerArg, ReplayArgs, ReplaySplitArgs, ReplayTxArg};
use wirelab_core::replay::Timing;
use wirelab_engine::job::replay::select::selection;
use wirelab_engine::job::replay::sides::{cache_report, sides, SplitFrom};
use wirelab_engine::job::replay::{ReplayJob, ReplayJobError, TxMethod, TxSetup};
use wirelab_engine::job::rt::RtSetup;
use wirelab_engine::job::text;
use wirelab_engine::replay::{self, Output, ReadSpec, ReplayConfig, ReplayError, Split};
use wirelab_io::packet_sock::PacketError;
use wirelab_wire::rewrite::arg::{SourceMac, VlanFields};
use wirelab_wire::rewrite::split::SplitMode;
use wirelab_wire::rewrite::{RewriteSpec, Vlan};

fn split_from(s: &ReplaySplitArgs) -> Option<SplitFrom> {
    let mode = if s.auto {
        SplitMode::Auto
    } else if !s.cidr.is_empty() {
        SplitMode::Cidr(s.cidr.clone())
    } else if s.port_split {
        SplitMode::Port(s.server_ports.clone().unwrap_or_default())
    } else {
        return s.cachefile.clone().map(SplitFrom::Cache);
    };
    Some(SplitFrom::Classify(mode))
}

fn rewrite(a: &ReplayArgs) -> Result<RewriteSpec> {
    let rw = &a.rw;
    let smac = match (rw.enet_smac, &a.intf) {
        (Some(SourceMac::Interface), Some(i)) => Some(replay::interface(i).map_err(job_error)?.mac),
        (Some(SourceMac::Interface), None) => {
            return Err(usage(
                "--enet-smac if needs -i IF (the interface whose MAC to use)",
            ))
        }
        (Some(SourceMac::Addr(m)), _) => Some(m),
        (None, _) => None,
    };
    let fields = VlanFields {
        vid: rw.enet_vlan_tag,
        pcp: rw.enet_vlan_pri,
        dei: rw.enet_vlan_cfi,
        tpid: rw.enet_vlan_proto,
    };
    let vlan = rw.enet_vlan.map(|op| Vlan::from_fields(op.into(), fields));
    Ok(RewriteSpec {
        efcs: rw.efcs,
        dmac: rw.enet_dmac,
        smac,
        vlan: vlan
            .transpose()
            .map_err(|e| usage(format!("--enet-vlan: {e} (--enet-vlan-tag)")))?,
        src_map: [&rw.srcipmap[..], &rw.pnat].concat(),
        dst_map: [&rw.dstipmap[..], &rw.pnat].concat(),
        ports: rw.portmap.clone(),
        ttl: rw.ttl,
        mtu_trunc: rw.mtu_trunc.then_some(rw.mtu.into()),
        fixlen: rw.fixlen.map(Into::into),
        fixcsum: rw.fixcsum,
        seed: rw.seed,
        pad_limit: None,
    })
}

pub fn run(a: ReplayArgs) -> Result<()> {
    let s = &a.split;
    let from = split_from(s);
    if from.is_none() && (s.intf2.is_some() || s.save_cache.is_some()) {
        return Err(usage(
            "-I and --save-cache need a client/server split: add --auto, --cidr NETS, --port-split or --cachefile FILE",
        ));
    }
    let sides = from
        .map(|f| sides(&a.files, &f, s.save_cache.as_deref()))
        .transpose()
        .map_err(job_error)?;
    let tx = TxSetup {
        method: match a.tx {
            ReplayTxArg::Auto => TxMethod::Auto,
            ReplayTxArg::Ring => TxMethod::Ring,
            ReplayTxArg::Sendmmsg => TxMethod::Sendmmsg,
        },
        topspeed: a.topspeed,
        qdisc_bypass: !a.no_qdisc_bypass,
        ring_slots: a.ring_slots as usize,
    };
    let output = match (&s.write, a.intf.as_deref()) {
        (Some(w), _) => Output::File(w.clone()),
        (None, Some(i)) => tx.output(i),
        (None, None) => {
            // Classify only (tcpprep): the cache file is written.
            if let (Some(m), Some(out)) = (&sides, &s.save_cache) {
                let r = cache_report(m, out);
                match a.json {
                    true => println!("{}", r.to_json()?),
                    false => text::write_replay_cache(&r, &mut std::io::stdout().lock())?,
                }
            }
            return Ok(());
        }
    };
    if sides.is_some() && s.intf2.is_none() && s.save_cache.is_none() {
        return Err(usage(
            "a client/server split (--auto/--cidr/--port-split/--cachefile) needs -I IF2 for the server packets",
        ));
    }
    if s.intf2.is_some() && s.intf2 == a.intf {
        return Err(usage(
            "-I names the same interface as -i: give the second interface for server packets",
        ));
    }
    let burst = a.burst;
    let timing = match (a.topspeed, a.pps, a.mbps) {
        (true, _, _) => Timing::Topspeed,
        (_, Some(pps), _) => Timing::Pps { pps, burst },
        (_, _, Some(m)) => Timing::Rate {
            bps: m * 1e6,
            wire: a.rate_layer == RateLayerArg::Wire,
            burst,
        },
        _ => Timing::Original {
            multiplier: a.multiplier.unwrap_or(1.0),
        },
    };
    let cfg = ReplayConfig {
        read: ReadSpec {
            files: a.files.clone(),
            select: selection(a.include.clone(), a.exclude.clone(), a.packets.clone()),
            rewrite: rewrite(&a)?,
            max_frame: None,
            egress_mtu: None,
            bad_ts: match a.bad_ts {
                BadTsArg::Keep => wirelab_pcap::FractionPolicy::Keep,
                BadTsArg::Clamp => wirelab_pcap::FractionPolicy::Clamp,
                BadTsArg::Ns => wirelab_pcap::FractionPolicy::Nanoseconds,
            },
        },
        timing,
        late: a.catch_up.policy(a.late_threshold),
        late_threshold_ns: a.late_threshold,
        loops: a.loops,
        loop_delay_ns: a.loop_delay,
        duration_ns: a.duration,
        limit: a.limit,
        unique_ip: a.unique_ip,
        max_preload: a.max_preload,
        batch: a.batch.into(),
        spin: a.spin,
        log: a.log.clone(),
        output,
        split: s.intf2.as_deref().zip(sides).map(|(i2, sides)| Split {
            secondary: tx.output(i2),
            sides,
        }),
        progress: None,
        phase: a.phase.config(),
    };
    if a.loops == 0 && a.duration.is_none() && a.limit.is_none() && !a.quiet {
        eprintln!("wirelab replay: looping until interrupted (Ctrl-C)");
    }
    let rt = RtSetup {
        cpu: a.cpu,
        fifo_priority: a.rt_priority,
        mlock: a.mlock,
    };
    let job = ReplayJob::new(cfg, rt);
    let sent = job.progress();
    let ticker = crate::progress::ticker(a.quiet, move |secs| {
        let n = sent.get();
        format!("replay: {n} frame(s) sent, {:.0} pps", n as f64 / secs)
    });
    let res = job.run();
    drop(ticker);
    let rep = res.map_err(|e| match e {
        ReplayJobError::Replay(e @ ReplayError::Packet(PacketError::Os { .. })) if tx.ring() => {
            anyhow::anyhow!("{e} (--ring-slots, or --tx sendmmsg)")
        }
        e => job_error(e),
    })?;
    if a.json {
        println!("{}", serde_json::to_string_pretty(&rep)?);
    } else {
        text::write_replay(&rep, &mut std::io::stdout().lock())?;
    }
    // Nothing sent and not asked for: a failure, with the reason.
    match rep.nothing_sent {
        Some(n) if !n.asked => {
            let verb = if rep.tx == "file" { "written" } else { "sent" };
            Err(anyhow::anyhow!("nothing {verb}: {}", n.reason))
        }
        _ => Ok(()),
    }
}

fn job_error(e: impl Into<ReplayJobError>) -> anyhow::Error {
    match e.into() {
        ReplayJobError::Rt(e) => rt_error(e),
        ReplayJobError::Replay(e @ ReplayError::Packet(PacketError::Permission { .. })) => {
            Privilege(e.to_string()).into()
        }
        ReplayJobError::Replay(e @ ReplayError::Packet(PacketError::NoInterface { .. })) => {
            usage(e.to_string())
        }
        e @ ReplayJobError::Cache { .. } => usage(e.to_string()),
        e => e.into(),
    }
}

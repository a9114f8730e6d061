//! `wirelab replay`.

use crate::cli::{BadTsArg, FixLenArg, RateLayerArg, ReplayArgs, ReplayTxArg, VlanArg};
use crate::error::{rt_error, usage};
use crate::values;
use anyhow::{Context, Result};
use wirelab_core::replay::Timing;
use wirelab_engine::job::replay::{ReplayJob, ReplayJobError};
use wirelab_engine::job::rt::RtSetup;
use wirelab_engine::job::text;
use wirelab_engine::replay::{
    self, Output, Ranges, ReadSpec, ReplayConfig, ReplayError, Selection, Spin, Split,
};
use wirelab_io::bpf::BpfProgram;
use wirelab_wire::rewrite::split::{parse_cidrs, PortSet, SideMap, SplitMode};
use wirelab_wire::rewrite::{parse_mac, FixLen, RewriteSpec, Vlan};

enum Sel {
    Ranges(Ranges),
    Bpf(BpfProgram),
}

fn selection_spec(flag: &str, s: &str) -> Result<Sel> {
    if let Some(r) = s.strip_prefix("P:") {
        return Ranges::parse(r)
            .map(Sel::Ranges)
            .map_err(|e| usage(format!("{flag}: {e}")));
    }
    if s.starts_with("S:") || s.starts_with("D:") {
        return Err(usage(format!(
            "{flag} {s:?}: tcpreplay's S:/D: CIDR lists are not supported; use a BPF filter, e.g. {flag} 'src net 10.0.0.0/8'"
        )));
    }
    let expr = s.strip_prefix("F:").unwrap_or(s);
    if !s.starts_with("F:") {
        if let Ok(r) = Ranges::parse(s) {
            if !r.0.is_empty() {
                return Ok(Sel::Ranges(r));
            }
        }
    }
    BpfProgram::compile(expr, 1, 262_144)
        .map(Sel::Bpf)
        .map_err(|e| usage(format!("{flag}: {e}")))
}

fn rewrite_spec(a: &ReplayArgs) -> Result<RewriteSpec> {
    let mut r = RewriteSpec {
        efcs: a.rw.efcs,
        fixcsum: a.rw.fixcsum,
        seed: a.rw.seed,
        mtu_trunc: a.rw.mtu_trunc.then_some(a.rw.mtu),
        fixlen: a.rw.fixlen.map(|f| match f {
            FixLenArg::Pad => FixLen::Pad,
            FixLenArg::Trunc => FixLen::Trunc,
            FixLenArg::Del => FixLen::Del,
        }),
        ..Default::default()
    };
    r.dmac = a.rw.enet_dmac;
    if let Some(m) = &a.rw.enet_smac {
        r.smac = Some(if m == "if" {
            let ifname = a.intf.as_deref().ok_or_else(|| {
                usage("--enet-smac if needs -i IF (the interface whose MAC to use)")
            })?;
            replay::interface(ifname)?.mac
        } else {
            parse_mac(m).map_err(|e| usage(format!("--enet-smac: {e}")))?
        });
    }
    let tpid = match a
        .rw
        .enet_vlan_proto
        .as_deref()
        .map(str::to_ascii_lowercase)
        .as_deref()
    {
        None => None,
        Some("802.1q") | Some("8100") | Some("0x8100") => Some(0x8100),
        Some("802.1ad") | Some("88a8") | Some("0x88a8") => Some(0x88a8),
        Some(o) => {
            return Err(usage(format!(
                "--enet-vlan-proto {o:?}: expected 802.1q or 802.1ad"
            )))
        }
    };
    if let Some(v) = a.rw.enet_vlan_tag {
        if v > 4095 {
            return Err(usage(format!("--enet-vlan-tag {v}: VLAN ids are 0..=4095")));
        }
    }
    if a.rw.enet_vlan_pri.is_some_and(|p| p > 7) || a.rw.enet_vlan_cfi.is_some_and(|c| c > 1) {
        return Err(usage("--enet-vlan-pri is 0..=7 and --enet-vlan-cfi 0 or 1"));
    }
    r.vlan = match a.rw.enet_vlan {
        None => None,
        Some(VlanArg::Add) => {
            let vid =
                a.rw.enet_vlan_tag
                    .ok_or_else(|| usage("--enet-vlan add needs --enet-vlan-tag VID"))?;
            let tci = (u16::from(a.rw.enet_vlan_pri.unwrap_or(0)) << 13)
                | (u16::from(a.rw.enet_vlan_cfi.unwrap_or(0)) << 12)
                | vid;
            Some(Vlan::Add {
                tpid: tpid.unwrap_or(0x8100),
                tci,
            })
        }
        Some(VlanArg::Del) => Some(Vlan::Strip),
        Some(VlanArg::Retag) => Some(Vlan::Retag {
            vid: a.rw.enet_vlan_tag,
            pcp: a.rw.enet_vlan_pri,
            tpid,
        }),
    };
    r.src_map = [&a.rw.srcipmap[..], &a.rw.pnat].concat();
    r.dst_map = [&a.rw.dstipmap[..], &a.rw.pnat].concat();
    r.ports = a.rw.portmap.clone();
    r.ttl = a.rw.ttl;
    Ok(r)
}

/// The client/server split: from --cachefile, or computed by --auto /
/// --cidr / --port-split; saved with --save-cache.
fn side_map(a: &ReplayArgs) -> Result<Option<SideMap>> {
    let mode = if a.split.auto {
        Some(SplitMode::Auto)
    } else if let Some(c) = &a.split.cidr {
        Some(SplitMode::Cidr(
            parse_cidrs(c).map_err(|e| usage(format!("--cidr: {e}")))?,
        ))
    } else if a.split.port_split {
        Some(SplitMode::Port(match &a.split.server_ports {
            Some(p) => PortSet::parse(p).map_err(|e| usage(format!("--server-ports: {e}")))?,
            None => PortSet::default(),
        }))
    } else {
        None
    };
    let map = match (&mode, &a.split.cachefile) {
        (Some(m), _) => Some(replay::side_map(&a.files, m)?),
        (None, Some(f)) => {
            // wirelab's text cache or tcpprep's binary one, told apart by
            // the first bytes.
            let b = std::fs::read(f)
                .with_context(|| format!("reading the cache file {}", f.display()))?;
            let m = SideMap::load(&b).map_err(|e| usage(format!("{}: {e}", f.display())))?;
            // Per packet number: a cache made for another trace would send
            // packets on the wrong side without a word.
            let n = replay::count_packets(&a.files)?;
            m.check_trace(n)
                .map_err(|e| usage(format!("{}: {e}", f.display())))?;
            Some(m)
        }
        (None, None) => None,
    };
    if let (Some(m), Some(out)) = (&map, &a.split.save_cache) {
        std::fs::write(out, m.to_text())
            .with_context(|| format!("writing the cache file {}", out.display()))?;
    }
    if map.is_none() && (a.split.intf2.is_some() || a.split.save_cache.is_some()) {
        return Err(usage(
            "-I and --save-cache need a client/server split: add --auto, --cidr NETS, --port-split or --cachefile FILE",
        ));
    }
    Ok(map)
}

pub fn run(a: ReplayArgs) -> Result<()> {
    let sides = side_map(&a)?;
    if a.intf.is_none() && a.split.write.is_none() {
        // Classify only (tcpprep): the cache file is written.
        if let (Some(m), Some(out)) = (&sides, &a.split.save_cache) {
            let n = m.counts();
            if a.json {
                println!(
                    "{}",
                    serde_json::json!({
                        "schema": "wirelab.replay.cache/1",
                        "cachefile": out.display().to_string(),
                        "mode": m.mode,
                        "comment": m.comment,
                        "packets": n.total(),
                        "client_packets": n.client,
                        "server_packets": n.server,
                        "skipped_packets": n.skipped,
                    })
                );
            } else {
                println!(
                    "cache {}: {} packet(s) classified by {}: {} client (-i), {} server (-I){}",
                    out.display(),
                    n.total(),
                    m.mode,
                    n.client,
                    n.server,
                    if n.skipped > 0 {
                        format!(", {} not sent", n.skipped)
                    } else {
                        String::new()
                    }
                );
                if !m.comment.is_empty() {
                    println!("  tcpprep comment: {}", m.comment.escape_debug());
                }
            }
        }
        return Ok(());
    }
    if sides.is_some() && a.split.intf2.is_none() && a.split.save_cache.is_none() {
        return Err(usage(
            "a client/server split (--auto/--cidr/--port-split/--cachefile) needs -I IF2 for the server packets",
        ));
    }
    let timing = if a.topspeed {
        Timing::Topspeed
    } else if let Some(pps) = a.pps {
        if !(pps.is_finite() && pps > 0.0) {
            return Err(usage("--pps must be above 0"));
        }
        Timing::Pps {
            pps,
            burst: a.burst.max(1),
        }
    } else if let Some(m) = a.mbps {
        if !(m.is_finite() && m > 0.0) {
            return Err(usage("--mbps must be above 0"));
        }
        Timing::Rate {
            bps: m * 1e6,
            wire: a.rate_layer == RateLayerArg::Wire,
            burst: a.burst.max(1),
        }
    } else {
        let x = a.multiplier.unwrap_or(1.0);
        if !(x.is_finite() && x > 0.0) {
            return Err(usage("--multiplier must be above 0"));
        }
        Timing::Original { multiplier: x }
    };
    let late_threshold_ns = a.late_threshold;
    let late = a.catch_up.policy(late_threshold_ns)?;
    let mut select = Selection::default();
    for (flag, spec, incl) in [
        ("--include", &a.include, true),
        ("--exclude", &a.exclude, false),
    ] {
        if let Some(s) = spec {
            match (selection_spec(flag, s)?, incl) {
                (Sel::Ranges(r), true) => select.include_ranges.0.extend(r.0),
                (Sel::Ranges(r), false) => select.exclude_ranges = r,
                (Sel::Bpf(b), true) => select.include_bpf = Some(b),
                (Sel::Bpf(b), false) => select.exclude_bpf = Some(b),
            }
        }
    }
    if let Some(p) = &a.packets {
        select.include_ranges.0.extend(
            Ranges::parse(p)
                .map_err(|e| usage(format!("--packets: {e}")))?
                .0,
        );
    }
    let tx = match a.tx {
        ReplayTxArg::Auto if a.topspeed => ReplayTxArg::Ring,
        ReplayTxArg::Auto => ReplayTxArg::Sendmmsg,
        t => t,
    };
    let output = match (&a.split.write, &a.intf) {
        (Some(w), _) => Output::File(w.clone()),
        (None, Some(i)) => match tx {
            ReplayTxArg::Ring => Output::Ring {
                ifname: i.clone(),
                qdisc_bypass: !a.no_qdisc_bypass,
                slots: a.ring_slots.max(8),
            },
            ReplayTxArg::Sendmmsg | ReplayTxArg::Auto => Output::Sendmmsg {
                ifname: i.clone(),
                qdisc_bypass: !a.no_qdisc_bypass,
            },
        },
        (None, None) => return Err(usage("give -i IF to send, or -w FILE to write a pcap")),
    };
    let split = match (&a.split.intf2, sides) {
        (Some(i2), Some(sides)) => {
            if Some(i2) == a.intf.as_ref() {
                return Err(usage(
                    "-I names the same interface as -i: give the second interface for server packets",
                ));
            }
            Some(Split {
                secondary: match tx {
                    ReplayTxArg::Ring => Output::Ring {
                        ifname: i2.clone(),
                        qdisc_bypass: !a.no_qdisc_bypass,
                        slots: a.ring_slots.max(8),
                    },
                    ReplayTxArg::Sendmmsg | ReplayTxArg::Auto => Output::Sendmmsg {
                        ifname: i2.clone(),
                        qdisc_bypass: !a.no_qdisc_bypass,
                    },
                },
                sides,
            })
        }
        _ => None,
    };
    let cfg = ReplayConfig {
        read: ReadSpec {
            files: a.files.clone(),
            select,
            rewrite: rewrite_spec(&a)?,
            max_frame: None,
            egress_mtu: None,
            bad_ts: match a.bad_ts {
                BadTsArg::Keep => wirelab_pcap::FractionPolicy::Keep,
                BadTsArg::Clamp => wirelab_pcap::FractionPolicy::Clamp,
                BadTsArg::Ns => wirelab_pcap::FractionPolicy::Nanoseconds,
            },
        },
        timing,
        late,
        late_threshold_ns,
        loops: a.loops,
        loop_delay_ns: a.loop_delay,
        duration_ns: a.duration,
        limit: a.limit,
        unique_ip: a.unique_ip,
        max_preload: a.max_preload,
        batch: a.batch.clamp(1, 4096),
        spin: if a.spin == "auto" {
            Spin::Auto
        } else {
            Spin::Fixed(values::duration_ns("--spin", &a.spin)?)
        },
        log: a.log.clone(),
        output,
        split,
        progress: None,
        phase: a.phase.config()?,
    };
    if a.loops == 0 && a.duration.is_none() && a.limit.is_none() && !a.quiet {
        eprintln!("wirelab replay: looping until interrupted (Ctrl-C)");
    }
    let job = ReplayJob::new(
        cfg,
        RtSetup {
            cpu: a.cpu,
            fifo_priority: a.rt_priority,
            mlock: a.mlock,
        },
    );
    let sent = job.progress();
    let ticker = crate::progress::ticker(a.quiet, move |secs| {
        let n = sent.get();
        format!("replay: {n} frame(s) sent, {:.0} pps", n as f64 / secs)
    });
    let res = job.run();
    drop(ticker);
    let rep = res.map_err(|e| match e {
        ReplayJobError::Rt(e) => rt_error(e),
        ReplayJobError::Replay(
            e @ ReplayError::Packet(wirelab_io::packet_sock::PacketError::Permission { .. }),
        ) => anyhow::Error::new(crate::error::Privilege(e.to_string())),
        ReplayJobError::Replay(
            e @ ReplayError::Packet(wirelab_io::packet_sock::PacketError::NoInterface { .. }),
        ) => usage(e.to_string()),
        ReplayJobError::Replay(
            e @ ReplayError::Packet(wirelab_io::packet_sock::PacketError::Os { .. }),
        ) if a.tx != ReplayTxArg::Sendmmsg => {
            anyhow::anyhow!("{e} (--ring-slots, or --tx sendmmsg)")
        }
        other => anyhow::Error::new(other),
    })?;
    if a.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&rep).context("serialising the report")?
        );
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

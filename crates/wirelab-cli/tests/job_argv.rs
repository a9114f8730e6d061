//! Every job spec of `wirelab-jobs` against the CLI that runs it: its
//! `argv()` parses with [`Cli`] itself, and each field of the spec comes
//! back as the flag the CLI read. A flag renamed on either side, or a spec
//! field given to the wrong flag, fails here. Each check destructures its
//! spec without `..`, so a field added to a spec must be checked too.

use clap::Parser;
use std::path::PathBuf;
use wirelab_cli::agent::AgentArgs;
use wirelab_cli::capture::CaptureArgs;
use wirelab_cli::emulate::EmulateArgs;
use wirelab_cli::recv::RecvArgs;
use wirelab_cli::send::{SendArgs, SocketArg};
use wirelab_cli::stress::StressArgs;
use wirelab_cli::{values, Cli, Command};
use wirelab_jobs::{AgentJob, CaptureJob, EmulateJob, RecvJob, SendJob, SendSocket, StressJob};

fn parse(argv: Vec<String>) -> Command {
    let shown = argv.join(" ");
    match Cli::try_parse_from(std::iter::once("wirelab".to_string()).chain(argv)) {
        Ok(cli) => cli.command,
        Err(e) => panic!("wirelab {shown}: {e}"),
    }
}

fn strings(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

fn check_send(spec: &SendJob) {
    let Command::Send(a) = parse(spec.argv()) else {
        panic!("not send")
    };
    let a: SendArgs = a;
    let SendJob {
        target,
        port,
        flow,
        start_at_unix_ns,
        record,
        json,
        quiet,
        seed,
        ipv4,
        count,
        duration_ns,
        interval,
        rate,
        bitrate,
        size,
        dscp,
        warmup,
        socket,
        echo,
        rt_priority,
        extra,
    } = spec;
    assert_eq!(&a.host, target);
    assert_eq!(a.port, *port);
    assert_eq!(a.flow, flow.unwrap_or(1));
    assert_eq!(a.start_at, *start_at_unix_ns);
    assert_eq!(a.record, record.as_ref().map(PathBuf::from));
    assert_eq!((a.json, a.quiet, a.echo), (*json, *quiet, *echo));
    assert_eq!(a.seed, seed.unwrap_or(1));
    assert_eq!(a.family.ipv4, *ipv4);
    assert_eq!(a.count, *count);
    assert_eq!(a.duration, *duration_ns);
    let interval = interval.as_deref().map(|s| values::INTERVAL(s).unwrap());
    assert_eq!(a.interval, interval);
    assert_eq!(a.rate, rate.as_deref().map(|s| values::RATE(s).unwrap()));
    let bitrate = bitrate.as_deref().map(|s| values::BITRATE(s).unwrap());
    assert_eq!(a.bitrate, bitrate);
    assert_eq!(
        a.size,
        values::SIZE(size.as_deref().unwrap_or("64")).unwrap()
    );
    assert_eq!(a.dscp, *dscp);
    assert_eq!(a.warmup, warmup.unwrap_or(0));
    let want = match socket.unwrap_or(SendSocket::Udp) {
        SendSocket::Udp => SocketArg::Udp,
        SendSocket::Raw => SocketArg::Raw,
        SendSocket::Packet => SocketArg::Packet,
    };
    assert_eq!(a.socket, want);
    assert_eq!(a.rt_priority, rt_priority.map(i32::from));
    // The user's own arguments reach the CLI after the spec's.
    assert_eq!(a.batch, if extra.is_empty() { 64 } else { 8 });
}

#[test]
fn send_specs_are_what_send_parses() {
    let full = SendJob {
        target: "10.0.0.2".into(),
        port: 5801,
        flow: Some(3),
        start_at_unix_ns: Some(1_795_428_000_500_000_000),
        record: Some("p1-f-tx.wlr".into()),
        json: true,
        quiet: true,
        seed: Some(44),
        ipv4: true,
        count: Some(1000),
        duration_ns: Some(2_500_000_000),
        interval: Some("exp:1ms".into()),
        rate: None,
        bitrate: None,
        size: Some("uniform:64,1400".into()),
        dscp: Some(46),
        warmup: Some(10),
        socket: Some(SendSocket::Packet),
        echo: true,
        rt_priority: Some(90),
        extra: strings(&["--batch", "8"]),
    };
    check_send(&full);
    // Pacing flags exclude each other: one spec each.
    check_send(&SendJob {
        interval: None,
        rate: Some("10kpps".into()),
        socket: Some(SendSocket::Raw),
        ..full.clone()
    });
    check_send(&SendJob {
        interval: None,
        bitrate: Some("50Mbit".into()),
        socket: Some(SendSocket::Udp),
        ..full
    });
    check_send(&SendJob {
        target: "::1".into(),
        port: 9,
        ..SendJob::default()
    });
}

fn check_recv(spec: &RecvJob) {
    let Command::Recv(a) = parse(spec.argv()) else {
        panic!("not recv")
    };
    let a: RecvArgs = a;
    let RecvJob {
        port,
        record,
        status,
        json,
        quiet,
        ipv4,
        idle_timeout_ns,
        timeout_ns,
        echo,
        extra,
    } = spec;
    assert_eq!(a.port, *port);
    assert_eq!(a.record, record.as_ref().map(PathBuf::from));
    assert_eq!(a.status, status.as_ref().map(PathBuf::from));
    assert_eq!((a.json, a.quiet, a.echo), (*json, *quiet, *echo));
    assert_eq!(a.family.ipv4, *ipv4);
    assert_eq!(a.idle_timeout, *idle_timeout_ns);
    assert_eq!(a.timeout, *timeout_ns);
    assert_eq!(a.batch, if extra.is_empty() { 64 } else { 16 });
}

#[test]
fn recv_specs_are_what_recv_parses() {
    check_recv(&RecvJob {
        port: 5800,
        record: Some("p1-f-rx.wlr".into()),
        status: Some("p1-f.status".into()),
        json: true,
        quiet: true,
        ipv4: true,
        idle_timeout_ns: Some(5_000_000_000),
        timeout_ns: Some(75_000_000_000),
        echo: true,
        extra: strings(&["--batch", "16"]),
    });
    check_recv(&RecvJob {
        port: 6000,
        ..RecvJob::default()
    });
}

fn check_emulate(spec: &EmulateJob) {
    let Command::Emulate(a) = parse(spec.argv()) else {
        panic!("not emulate")
    };
    let a: EmulateArgs = a;
    let EmulateJob {
        a: ia,
        b: ib,
        json,
        quiet,
        both,
        a2b,
        b2a,
        extra,
    } = spec;
    assert!(a.cmd.is_none());
    assert_eq!((a.a.as_ref(), a.b.as_ref()), (Some(ia), Some(ib)));
    assert_eq!((a.json, a.quiet), (*json, *quiet));
    assert_eq!((&a.both, &a.a2b, &a.b2a), (both, a2b, b2a));
    assert_eq!(a.seed, if extra.is_empty() { 1 } else { 7 });
}

#[test]
fn emulate_specs_are_what_emulate_parses() {
    let full = EmulateJob {
        a: "veth-a".into(),
        b: "veth-b".into(),
        json: true,
        quiet: true,
        both: Some("delay 20ms 2ms loss 1%".into()),
        a2b: None,
        b2a: None,
        extra: strings(&["--seed", "7"]),
    };
    check_emulate(&full);
    check_emulate(&EmulateJob {
        both: None,
        a2b: Some("rate 10Mbit".into()),
        b2a: Some("-".into()),
        ..full
    });
    check_emulate(&EmulateJob {
        a: "x".into(),
        b: "y".into(),
        ..EmulateJob::default()
    });
}

fn check_capture(spec: &CaptureJob) {
    let Command::Capture(a) = parse(spec.argv()) else {
        panic!("not capture")
    };
    let a: CaptureArgs = a;
    let CaptureJob {
        interface,
        write,
        json,
        quiet,
        snaplen,
        filter,
        extra,
    } = spec;
    assert_eq!(&a.interface, interface);
    assert_eq!(a.write, PathBuf::from(write));
    assert_eq!((a.json, a.quiet), (*json, *quiet));
    assert_eq!(a.snaplen, snaplen.unwrap_or(262_144));
    assert_eq!(a.filter.join(" "), filter.clone().unwrap_or_default());
    assert_eq!(a.count, (!extra.is_empty()).then_some(5));
}

#[test]
fn capture_specs_are_what_capture_parses() {
    check_capture(&CaptureJob {
        interface: "eth1".into(),
        write: "p1-cap-a-eth1.pcapng".into(),
        json: true,
        quiet: true,
        snaplen: Some(128),
        filter: Some("udp port 5800".into()),
        extra: strings(&["-c", "5"]),
    });
    check_capture(&CaptureJob {
        interface: "lo".into(),
        write: "-".into(),
        ..CaptureJob::default()
    });
}

fn check_stress(spec: &StressJob) {
    let Command::Stress(a) = parse(spec.argv()) else {
        panic!("not stress")
    };
    let a: StressArgs = a;
    let StressJob {
        kind,
        workers,
        load,
        rt_priority,
        timer_freq,
        bitrate,
        to,
        port,
        size,
        io_cap,
        duration_ns,
        ready,
        json,
        stress_ng_args,
    } = spec;
    assert_eq!(a.kind, kind.parse::<wirelab_host::stress::Load>().unwrap());
    assert_eq!(
        (a.workers, a.load, a.rt_priority),
        (*workers, *load, *rt_priority)
    );
    let hz = timer_freq
        .as_deref()
        .map(|s| wirelab_host::stress::parse_hz(s).unwrap());
    assert_eq!(a.timer_freq, hz);
    let rate = |v: &Option<String>| v.as_deref().map(|s| values::BITRATE(s).unwrap());
    assert_eq!(a.bitrate, rate(bitrate));
    assert_eq!(a.io_cap, rate(io_cap));
    assert_eq!((&a.to, a.port, a.size), (to, *port, *size));
    assert_eq!(a.duration, *duration_ns);
    assert_eq!(a.ready, ready.as_ref().map(PathBuf::from));
    assert_eq!(a.json, *json);
    assert_eq!(&a.args, stress_ng_args);
}

#[test]
fn stress_specs_are_what_stress_parses() {
    let full = StressJob {
        kind: "network".into(),
        workers: Some(2),
        load: Some(40),
        rt_priority: Some(70),
        timer_freq: None,
        bitrate: Some("100Mbit".into()),
        to: Some("10.1.0.2".into()),
        port: Some(9000),
        size: Some(1200),
        io_cap: Some("1Gbit".into()),
        duration_ns: Some(30_000_000_000),
        ready: Some("p1-stress1.ready".into()),
        json: true,
        stress_ng_args: strings(&["--timer-slack", "0"]),
    };
    check_stress(&full);
    check_stress(&StressJob {
        kind: "timer".into(),
        timer_freq: Some("100kHz".into()),
        bitrate: None,
        ..full
    });
    check_stress(&StressJob {
        kind: "realistic".into(),
        ..StressJob::default()
    });
}

fn check_agent(spec: &AgentJob) {
    let Command::Agent(a) = parse(spec.argv()) else {
        panic!("not agent")
    };
    let a: AgentArgs = a;
    let AgentJob {
        workdir,
        test_clock_offset_ns,
    } = spec;
    assert!(a.stdio);
    assert_eq!(a.workdir, workdir.as_ref().map(PathBuf::from));
    let offset = a
        .test_clock_offset
        .map(|o| wirelab_core::clocksync::parse_offset_ns(&o).unwrap());
    assert_eq!(offset, *test_clock_offset_ns);
}

#[test]
fn agent_specs_are_what_agent_parses() {
    check_agent(&AgentJob {
        workdir: Some("/tmp/w".into()),
        test_clock_offset_ns: Some(-3_000_000),
    });
    check_agent(&AgentJob::default());
}

#[test]
fn a_renamed_flag_is_refused_by_the_parser() {
    // The check above is only as good as clap's refusal of an unknown flag.
    let mut argv = RecvJob::default().argv();
    argv.push("--no-such-flag".into());
    assert!(Cli::try_parse_from(std::iter::once("wirelab".to_string()).chain(argv)).is_err());
}

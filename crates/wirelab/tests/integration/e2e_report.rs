//! End-to-end: `wirelab report` on the records of a real send/recv run in
//! two network namespaces (every 100th probe dropped by nftables), opened
//! in headless Chromium: no console errors, every figure in the DOM, a
//! screenshot.

use crate::common::bundle::{on_tx_rx, run_campaign};
use crate::common::*;
use std::path::Path;
use std::process::{Command, Stdio};
use wirelab_lab::lab::exec_in;

/// Headless Chromium's binary (Debian's `chromium`).
const CHROMIUM: &str = "chromium";

fn chromium(args: &[&str], page: &Path) -> std::process::Output {
    let out = Command::new("timeout")
        .args([
            "120",
            CHROMIUM,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
        ])
        .args(["--enable-logging=stderr", "--v=0"])
        .arg(format!(
            "--user-data-dir={}",
            page.with_extension("profile").display()
        ))
        .args(args)
        .arg(format!("file://{}", page.display()))
        .output()
        .expect("spawn chromium");
    assert!(
        out.status.success(),
        "chromium: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// A 1100×1400 screenshot of `page` written to `png`: its bytes.
fn screenshot(page: &Path, png: &Path) -> Vec<u8> {
    chromium(
        &[
            "--hide-scrollbars",
            "--window-size=1100,1400",
            &format!("--screenshot={}", png.display()),
        ],
        page,
    );
    std::fs::read(png).unwrap()
}

/// Console messages in Chromium's log (`...:INFO:CONSOLE:1] "msg", source:
/// ...`). Chromium logs `console.error` and uncaught exceptions at INFO
/// level, so any console line counts: the page itself logs nothing.
fn console_errors(stderr: &str) -> Vec<&str> {
    stderr.lines().filter(|l| l.contains(":CONSOLE")).collect()
}

/// `wirelab report [--title TITLE] -o PAGE INPUTS…`, which must succeed:
/// what it says on stdout.
fn report(title: Option<&str>, page: &Path, inputs: &[&Path]) -> String {
    let mut c = Command::new(exe());
    c.arg("report");
    if let Some(t) = title {
        c.args(["--title", t]);
    }
    let out = run(c.arg("-o").arg(page).args(inputs));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn probe_report_renders_in_a_browser_with_every_figure() {
    if !netns_available(&["nft", CHROMIUM]) {
        return;
    }
    let lab = Lab::new();
    let port = 6201;
    lab.drop_every_100th(port);
    let (tx_file, rx_file) = (lab.file("tx.wlr"), lab.file("rx.wlr"));
    let rx = lab
        .wirelab(&lab.r)
        .args([
            "recv",
            "--port",
            &port.to_string(),
            "--quiet",
            "--timeout",
            "30s",
            "--record",
        ])
        .arg(&rx_file)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    lab.wait_udp(&lab.r, port);
    // The priming datagram and probes 99, 199, ..., 999 are dropped.
    run(lab
        .wirelab(&lab.s)
        .args([
            "send",
            "198.18.0.2",
            "--port",
            &port.to_string(),
            "--rate",
            "20kpps",
        ])
        .args(["--size", "100", "--count", "1050", "--quiet", "--record"])
        .arg(&tx_file));
    wait_ok(rx);

    let page = lab.file("report.html");
    let said = report(Some("e2e report"), &page, &[&tx_file, &rx_file]);
    assert!(
        said.starts_with(&format!("report: {} (1 flows, 10 figures", page.display())),
        "{said}"
    );
    let html = std::fs::read_to_string(&page).unwrap();
    // Self-contained: no reference to another file or URL.
    for bad in [" src=", " href=", "url(", "@import"] {
        assert!(
            !html.contains(bad),
            "the page refers to something outside: {bad}"
        );
    }
    // The golden numbers of the run in the summary table: 1050 sent, 10 lost.
    assert!(html.contains("<td data-v=\"1050\">1050</td>"), "sent");
    assert!(html.contains("<td data-v=\"1040\">1040</td>"), "received");
    assert!(html.contains("<td data-v=\"10\">10</td>"), "lost");
    // Every lost probe is marked on the delay plot.
    assert!(html.contains("lost (10)"), "loss marks");

    // The browser: no console errors, all figures with their titles, the
    // sorting script ran (it marks the column heads).
    let dom = chromium(&["--dump-dom"], &page);
    let errors = console_errors(&String::from_utf8_lossy(&dom.stderr)).join("\n");
    assert!(errors.is_empty(), "console errors:\n{errors}");
    let dom = String::from_utf8_lossy(&dom.stdout);
    assert_eq!(dom.matches("<svg").count(), 10, "figures in the DOM");
    for title in wirelab_report::probe_page::RX_FIGURES
        .iter()
        .chain(&wirelab_report::probe_page::TX_FIGURES)
    {
        assert!(dom.contains(&format!("<h3>{title}</h3>")), "figure {title}");
    }
    assert!(dom.contains("<title>e2e report</title>"));
    assert!(
        dom.contains("class=\"sort\""),
        "the table-sorting script did not run"
    );
    let png = lab.file("report.png");
    let shot = screenshot(&page, &png);
    assert!(
        shot.len() > 10_000 && shot.starts_with(b"\x89PNG"),
        "{} bytes",
        shot.len()
    );
}

/// `wirelab capture` on the receiver's interface during a send/recv run
/// that also carries an RTP stream (200 packets, sequence number 7 never
/// sent): `wirelab report cap.pcapng tx.wlr` gives the probe page with
/// `analyze`'s numbers on the same files, the capture's counts and the RTP
/// table, and renders in Chromium.
#[test]
fn capture_report_gives_analyzes_numbers_and_the_rtp_streams() {
    if !netns_available(&["python3", CHROMIUM]) {
        return;
    }
    let lab = Lab::new();
    let port = 6203;
    let (tx_file, cap) = (lab.file("tx.wlr"), lab.file("cap.pcapng"));
    let capture = lab
        .wirelab(&lab.r)
        .args(["capture", "-i", lab.rx_if(), "--json", "--quiet"])
        .args([
            "--format",
            "pcapng",
            "--block-size",
            "1MiB",
            "--block-count",
            "64",
        ])
        .args(["udp", "-w"])
        .arg(&cap)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_for_file(
        &cap,
        "capture did not start",
        std::time::Duration::from_secs(10),
    );
    let rx = lab
        .wirelab(&lab.r)
        .args([
            "recv",
            "--port",
            &port.to_string(),
            "--quiet",
            "--timeout",
            "30s",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    lab.wait_udp(&lab.r, port);
    run(lab
        .wirelab(&lab.s)
        .args(["send", "198.18.0.2", "--port", &port.to_string()])
        .args(["--rate", "20kpps", "--size", "100", "--count", "1000"])
        .args(["--quiet", "--record"])
        .arg(&tx_file));
    wait_ok(rx);
    // PCMU (payload type 0), 20 ms of audio a packet, sent 1 ms apart.
    lab.sh(
        &lab.s,
        "python3 -c 'import socket,struct,time\n\
         s=socket.socket(socket.AF_INET,socket.SOCK_DGRAM)\n\
         s.bind((\"198.18.0.1\",5004))\n\
         for q in range(200):\n\
         \x20if q!=7: s.sendto(struct.pack(\"!BBHII\",0x80,0,q,q*160,0xfeed0001)+bytes(160),(\"198.18.0.2\",5006))\n\
         \x20time.sleep(0.001)'",
    );
    // Let the last frames reach the capture's ring before it stops.
    std::thread::sleep(std::time::Duration::from_millis(300));
    let c = interrupt(capture);

    let want = run(Command::new(exe())
        .args(["analyze", "--json"])
        .arg(&cap)
        .arg(&tx_file));
    let want: serde_json::Value = serde_json::from_slice(&want.stdout).unwrap();
    let page = lab.file("cap.html");
    let said = report(Some("capture report"), &page, &[&cap, &tx_file]);
    assert!(
        said.starts_with(&format!("report: {} (1 flows, 10 figures", page.display())),
        "{said}"
    );
    let html = std::fs::read_to_string(&page).unwrap();
    let t = &want["totals"];
    assert_eq!(t["sent"], 1000, "{t}");
    for k in ["sent", "received", "lost"] {
        let v = t[k].as_u64().unwrap();
        assert!(
            html.contains(&format!("<td data-v=\"{v}\">{v}</td>")),
            "{k} {v}"
        );
    }
    // The capture's counts: every probe that arrived is a frame of it.
    let probes = want["captures"][0]["counts"]["probes"].as_u64().unwrap();
    assert!(probes >= t["received"].as_u64().unwrap() && probes > 0);
    assert!(html.contains(&format!("<td data-v=\"{probes}\">{probes}</td>")));
    let streams = want["rtp"][0]["streams"].as_array().unwrap();
    assert_eq!(streams.len(), 1, "{streams:?}");
    assert_eq!(
        (&streams[0]["packets"], &streams[0]["lost"]),
        (&serde_json::json!(199), &serde_json::json!(1))
    );
    assert!(html.contains(
        "<td class=\"l\">198.18.0.1:5004</td><td class=\"l\">198.18.0.2:5006</td>\
         <td data-v=\"4276944897\">0xfeed0001</td><td data-v=\"0\">0</td>\
         <td data-v=\"199\">199</td><td data-v=\"1\">1</td>"
    ));

    let dom = chromium(&["--dump-dom"], &page);
    let errors = console_errors(&String::from_utf8_lossy(&dom.stderr)).join("\n");
    assert!(errors.is_empty(), "console errors:\n{errors}");
    let dom = String::from_utf8_lossy(&dom.stdout);
    assert_eq!(dom.matches("<svg").count(), 10, "figures in the DOM");
    for title in wirelab_report::probe_page::RX_FIGURES {
        assert!(dom.contains(&format!("<h3>{title}</h3>")), "figure {title}");
    }
    assert!(dom.contains(&format!(">RTP streams in {}</h2>", cap.display())));
    assert!(dom.contains(">Captures</h2>"));

    // The capture's own --json report: its drops per stage as bars.
    let cj = lab.file("cap.json");
    std::fs::write(&cj, &c.stdout).unwrap();
    let v: serde_json::Value = serde_json::from_slice(&c.stdout).unwrap();
    let jpage = lab.file("capjson.html");
    report(None, &jpage, &[&cj]);
    let html = std::fs::read_to_string(&jpage).unwrap();
    let l = &v["loss"];
    assert!(
        html.contains(&format!(
            "interface rx_dropped {}, interface rx_missed {}, ring {}, writer {}",
            l["if_rx_dropped"], l["if_rx_missed_errors"], l["ring_drops"], l["writer_drops"]
        )),
        "{l}"
    );
    let dom = chromium(&["--dump-dom"], &jpage);
    let errors = console_errors(&String::from_utf8_lossy(&dom.stderr)).join("\n");
    assert!(errors.is_empty(), "console errors:\n{errors}");
    let dom = String::from_utf8_lossy(&dom.stdout);
    assert_eq!(dom.matches("<svg").count(), 1, "figures in the DOM");
    assert!(dom.contains(&format!(
        "<h3>{}</h3>",
        wirelab_report::json_page::CAPTURE_FIGURE
    )));
}

/// `wirelab replay --log` of a trace written here (1,000 UDP frames, gaps
/// of 50 µs and 500 µs in turn), two loops: `wirelab report r.wlr` gives
/// the replay page with the fidelity numbers `replay --json` printed for
/// the same run and its three figures, and renders in Chromium.
#[test]
fn replay_log_report_has_replays_fidelity_and_its_figures() {
    if !netns_available(&[CHROMIUM]) {
        return;
    }
    let lab = Lab::new();
    let (trace, log) = (lab.file("trace.pcapng"), lab.file("r.wlr"));
    {
        use wirelab_analysis::capture::frame::build::{ethernet, ipv4_udp};
        let mut w = wirelab_pcap::PcapngWriter::new(Vec::new()).unwrap();
        let i = w
            .add_interface("veth", wirelab_pcap::LINKTYPE_ETHERNET, 65535)
            .unwrap();
        let mut ts = 1_700_000_000_000_000_000u64;
        for n in 0..1000u32 {
            let f = ethernet(&ipv4_udp(
                [198, 18, 0, 1],
                [198, 18, 0, 2],
                40000,
                6204,
                &n.to_be_bytes().repeat(20),
            ));
            w.write_packet(i, ts, f.len() as u32, &f).unwrap();
            ts += if n % 2 == 0 { 50_000 } else { 500_000 };
        }
        std::fs::write(&trace, w.into_inner().unwrap()).unwrap();
    }
    let out = run(lab
        .wirelab(&lab.s)
        .args([
            "replay",
            "--json",
            "-i",
            lab.tx_if(),
            "--loop",
            "2",
            "--log",
        ])
        .arg(&log)
        .arg(&trace));
    let rep: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let f = &rep["fidelity"];
    assert_eq!(f["packets"], 2000, "{f}");

    let page = lab.file("replay.html");
    let said = report(None, &page, &[&log]);
    assert!(
        said.starts_with(&format!(
            "report: {} (replay log, 2000 frames, 3 figures",
            page.display()
        )),
        "{said}"
    );
    let html = std::fs::read_to_string(&page).unwrap();
    // The departure and gap errors are replay's own, from the same run.
    for (what, k) in [
        ("departure_error", "p50_ns"),
        ("departure_error", "max_ns"),
        ("interdeparture_error", "p99_ns"),
        ("interdeparture_error", "max_ns"),
    ] {
        let v = f[what][k].as_i64().unwrap();
        assert!(
            html.contains(&format!("<td data-v=\"{v}\">")),
            "{what}.{k} {v}"
        );
    }
    assert!(html.contains("2000 frames in 2 loop(s)"));
    // 999 pairs a loop, fewer than MAX_SCATTER: every pair is drawn but
    // those a batched send left with a replayed gap of 0 (no place on log
    // axes, counted apart).
    let cap = html
        .split("Each dot a pair")
        .nth(1)
        .and_then(|c| c.split("</figcaption>").next())
        .expect("scatter caption");
    let num_before = |tail: &str| -> u64 {
        let head = cap.split(tail).next().unwrap().trim_end();
        let n = head.rsplit(|c: char| !c.is_ascii_digit()).next().unwrap();
        n.parse().unwrap_or_else(|_| panic!("{cap}"))
    };
    let drawn = num_before(" of 1998 pairs");
    let zeros = if cap.contains(" with a gap of 0") {
        num_before(" with a gap of 0")
    } else {
        0
    };
    assert_eq!(drawn + zeros, 1998, "{cap}");
    assert!(!cap.contains("(one in"), "{cap}");

    let dom = chromium(&["--dump-dom"], &page);
    let errors = console_errors(&String::from_utf8_lossy(&dom.stderr)).join("\n");
    assert!(errors.is_empty(), "console errors:\n{errors}");
    let dom = String::from_utf8_lossy(&dom.stdout);
    assert_eq!(dom.matches("<svg").count(), 3, "figures in the DOM");
    for title in wirelab_report::replay::FIGURES {
        assert!(dom.contains(&format!("<h3>{title}</h3>")), "figure {title}");
    }
}

/// `wirelab emulate --log` between two namespaces with delay, a queue
/// limit and random loss, 1,000 probes through it: `wirelab report e.wlr`
/// gives the emulator page with `analyze`'s numbers of the same log, its
/// three figures, and renders in Chromium.
#[test]
fn emulator_log_report_has_analyzes_numbers_and_its_figures() {
    if !netns_available(&[CHROMIUM]) {
        return;
    }
    let emu = EmuLab::new("wlrp", 44);
    let log = emu.dir.join("e.wlr");
    let stages = "delay 20ms limit 10 loss random 10% seed 5";
    let em = emu.emulate(&["--a2b", stages, "--log", log.to_str().unwrap()]);
    let rx = exec_in(emu.lab.ns("b"), exe())
        .args(["recv", "--quiet", "--timeout", "20s"])
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    emu.lab
        .wait_udp("b", 5757, std::time::Duration::from_secs(10))
        .unwrap_or_else(|e| panic!("{e}"));
    run(exec_in(emu.lab.ns("a"), exe()).args([
        "send",
        "198.18.44.2",
        "--rate",
        "1kpps",
        "-n",
        "1000",
        "--quiet",
    ]));
    rx.wait_with_output().unwrap();
    interrupt(em);

    let a = run(Command::new(exe()).args(["analyze", "--json"]).arg(&log));
    let a: serde_json::Value = serde_json::from_slice(&a.stdout).unwrap();
    let t = &a["totals"];
    let page = emu.dir.join("emu.html");
    let said = report(None, &page, &[&log]);
    assert!(
        said.starts_with(&format!(
            "report: {} (emulator log, {} copies, 3 figures",
            page.display(),
            t["copies"]
        )),
        "{said}"
    );
    let html = std::fs::read_to_string(&page).unwrap();
    let (limit, loss) = (&t["dropped"]["limit"], &t["dropped"]["loss"]);
    assert!(
        limit.as_u64().unwrap() > 100 && loss.as_u64().unwrap() > 20,
        "{t}"
    );
    assert!(
        html.contains(&format!(
            "{} frames, {} copies, {} sent",
            t["frames"], t["copies"], t["sent"]
        )),
        "totals"
    );
    assert!(
        html.contains(&format!(
            "by reason (all rules and directions): loss {loss}, limit {limit}."
        )),
        "drops"
    );
    let f = &a["flows"][0];
    for k in ["p50_ns", "p99_ns", "max_ns"] {
        let v = &f["applied_delay"][k];
        assert!(
            html.contains(&format!("<td data-v=\"{v}\">")),
            "applied {k} {v}"
        );
    }
    assert!(html.contains(&format!(">{stages}</td>")));

    let dom = chromium(&["--dump-dom"], &page);
    let errors = console_errors(&String::from_utf8_lossy(&dom.stderr)).join("\n");
    assert!(errors.is_empty(), "console errors:\n{errors}");
    let dom = String::from_utf8_lossy(&dom.stdout);
    assert_eq!(dom.matches("<svg").count(), 3, "figures in the DOM");
    for title in wirelab_report::emulate::FIGURES {
        assert!(dom.contains(&format!("<h3>{title}</h3>")), "figure {title}");
    }
}

/// Two flows, one each way, over a size sweep of two points.
fn campaign() -> String {
    on_tx_rx(
        37,
        r#"
[campaign]
name = "reportcamp"
pause = "100ms"

[[flow]]
name = "up"
from = "tx"
to = "rx"
count = 300
interval = "1ms"

[[flow]]
name = "down"
from = "rx"
to = "tx"
count = 300
interval = "1ms"

[sweep]
size = [64, 200]
"#,
    )
}

#[test]
fn campaign_report_is_written_by_run_and_renders_in_a_browser() {
    if !netns_available(&[CHROMIUM]) {
        return;
    }
    let dir = files::scratch("report", "campaign");
    let (out, bundle) = run_campaign(&dir, &campaign(), &[]);
    assert!(out.status.success(), "{}", files::text(&out));
    let page = bundle.join("report.html");
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        said.contains(&format!("report: {}\n", page.display())),
        "{said}"
    );
    let html = std::fs::read_to_string(&page).unwrap();
    // A row per point and flow: 2 sizes x 2 flows.
    for flow in ["up", "down"] {
        let cells = format!("<td class=\"l\">{flow}</td><td class=\"l\">done</td>");
        assert_eq!(html.matches(&cells).count(), 2, "{flow}");
    }
    // Sent and received 300 in each of the 4 rows (veth loses nothing).
    assert_eq!(html.matches("<td data-v=\"300\">300</td>").count(), 8);
    // The same page from `wirelab report DIR`.
    let again = dir.join("again.html");
    run(Command::new(exe())
        .arg("report")
        .arg(&bundle)
        .arg("-o")
        .arg(&again));
    assert_eq!(std::fs::read_to_string(&again).unwrap(), html);

    let dom = chromium(&["--dump-dom"], &page);
    let errors = console_errors(&String::from_utf8_lossy(&dom.stderr)).join("\n");
    assert!(errors.is_empty(), "console errors:\n{errors}");
    let dom = String::from_utf8_lossy(&dom.stdout);
    // The swept size: loss, throughput, OWD against it, one line per flow
    // (direction); CPU and the interfaces' packet rates.
    assert_eq!(dom.matches("<svg").count(), 5, "figures in the DOM");
    for t in wirelab_report::campaign::param_figures("size") {
        assert!(dom.contains(&format!("<h3>{t}</h3>")), "figure {t}");
    }
    for t in [
        wirelab_report::campaign::CPU_FIGURE,
        wirelab_report::campaign::IFACE_FIGURE,
    ] {
        assert!(dom.contains(&format!("<h3>{t}</h3>")), "figure {t}");
    }
    assert!(
        dom.contains("class=\"sort\""),
        "the table-sorting script did not run"
    );
    let png = dir.join("campaign.png");
    assert!(screenshot(&page, &png).starts_with(b"\x89PNG"));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn report_errors_say_what_to_do() {
    let dir = files::scratch("report", "errors");
    let json = dir.join("recv.json");
    std::fs::write(&json, br#"{"schema":"wirelab.recv/1"}"#).unwrap();
    let junk = dir.join("junk.bin");
    std::fs::write(&junk, b"\0\0\0\0\0\0\0\0garbage").unwrap();
    let (missing, out, deep) = (
        dir.join("missing.wlr"),
        dir.join("r.html"),
        dir.join("no/such/dir/r.html"),
    );
    // Logs with pages of their own (headers only), and a cut capture.
    let log = |name: &str, role: &str| {
        let p = dir.join(name);
        let h = wirelab_wire::record::RecordFileHeader {
            role: wirelab_wire::record::Role::Sender,
            metadata: format!(r#"{{"role":"{role}"}}"#),
        };
        std::fs::write(&p, h.to_bytes()).unwrap();
        p
    };
    let (emu, replay, tx) = (
        log("e.wlr", "emulate"),
        log("r.wlr", "replay"),
        log("tx.wlr", "sender"),
    );
    let cap = dir.join("cap.pcap");
    std::fs::write(&cap, [0xd4, 0xc3, 0xb2, 0xa1, 2, 0]).unwrap();
    let cases: [(Vec<&Path>, &Path, &str); 8] = [
        (
            vec![&emu, &tx],
            &out,
            "an emulator log (emulate --log): give it alone",
        ),
        (
            vec![&tx, &replay],
            &out,
            "a replay departure log (replay --log): give it alone",
        ),
        (vec![&cap], &out, "not a readable pcap/pcapng capture"),
        (vec![&json, &junk], &out, "the inputs mix them"),
        (vec![&junk], &out, "not a wirelab record file"),
        (vec![&dir], &out, "not a results directory"),
        (vec![&missing], &out, "cannot read"),
        (vec![&junk], &deep, "does not exist: create it first"),
    ];
    for (inputs, out, says) in cases {
        let o = Command::new(exe())
            .arg("report")
            .args(inputs)
            .arg("-o")
            .arg(out)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{err}");
        assert!(err.contains(says), "{says}: {err}");
        assert!(!err.contains("panicked"), "{err}");
    }
    // A --json report alone: its tables.
    let o = Command::new(exe())
        .arg("report")
        .arg(&json)
        .arg("-o")
        .arg(&out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", files::text(&o));
    assert!(std::fs::read_to_string(&out)
        .unwrap()
        .contains("wirelab.recv/1"));
    let other = dir.join("other.json");
    std::fs::write(&other, br#"{"schema":"something/1"}"#).unwrap();
    let o = Command::new(exe())
        .arg("report")
        .arg(&other)
        .arg("-o")
        .arg(&out)
        .output()
        .unwrap();
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("not a report of wirelab"),
        "{}",
        files::text(&o)
    );
    let _ = std::fs::remove_dir_all(&dir);
}

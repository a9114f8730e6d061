//! The agent protocol: newline-delimited JSON on the agent's stdin (requests)
//! and stdout (responses), one response per request, matched by `id`.
//!
//! A request is an object with `id` and `op` (`{"id":1,"op":"time"}`), a
//! response one with the request's `id` and `kind`
//! (`{"id":1,"kind":"time","realtime_ns":…,"monotonic_ns":…}`). The first
//! request is `hello`; the agent answers with its [`PROTOCOL`] number
//! whatever the controller's, so that the controller can name both versions
//! when they differ. A line the agent cannot read gets an `error` response
//! with the line's `id` when one can be found, else id 0. Lines are bounded
//! ([`MAX_REQUEST_LINE`], [`MAX_RESPONSE_LINE`]): a longer one is skipped
//! to its newline without being stored.

use serde::{Deserialize, Serialize};
use std::io::{self, BufRead};

/// The protocol version; bumped on any incompatible change.
pub const PROTOCOL: u32 = 1;
/// Longest request line the agent reads; requests are small.
pub const MAX_REQUEST_LINE: usize = 1 << 20;
/// Longest response line the controller reads: a child's stdout
/// ([`STDOUT_CAP`]) JSON-escaped at worst (6 bytes per byte), with room.
pub const MAX_RESPONSE_LINE: usize = 8 << 20;
/// Largest fetch chunk (before base64).
pub const MAX_CHUNK: u32 = 1 << 20;
/// A child's stdout returned by `wait` is cut after this many bytes.
pub const STDOUT_CAP: usize = 1 << 20;
/// How much of the end of a child's stderr `wait` returns.
pub const STDERR_TAIL: usize = 4096;

/// A request or response with its id.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Envelope<T> {
    pub id: u64,
    #[serde(flatten)]
    pub body: T,
}

/// Signals a controller may send to a child.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Sig {
    Int,
    Term,
    Kill,
}

impl Sig {
    /// The signal number.
    pub fn number(self) -> i32 {
        match self {
            Sig::Int => signal_hook::consts::SIGINT,
            Sig::Term => signal_hook::consts::SIGTERM,
            Sig::Kill => signal_hook::consts::SIGKILL,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum Request {
    /// First request: the controller's protocol and wirelab version.
    Hello { protocol: u32, controller: String },
    /// Runs the agent's own wirelab executable with `args` in the workdir,
    /// stdout and stderr to `TAG.out` and `TAG.err` there. Tags are 1 to 64
    /// letters, digits, `.`, `_` or `-`, not starting with `.`, and unique
    /// for the agent's life.
    Spawn { tag: String, args: Vec<String> },
    /// Waits up to `timeout_ms` for the child to end: `exited` (the child is
    /// then forgotten) or `running`.
    Wait { tag: String, timeout_ms: u64 },
    /// Signals a child; a child that has already ended is left alone.
    Signal { tag: String, signal: Sig },
    /// The children not yet reported by `wait`.
    Status,
    /// Up to `max` bytes of a file in the workdir from `offset`.
    Fetch { path: String, offset: u64, max: u32 },
    /// The agent's CLOCK_REALTIME and CLOCK_MONOTONIC.
    Time,
    /// The sockets open in the agent's network namespace: the UDP ports
    /// bound and the packet sockets (a tool is ready once it holds its
    /// sockets).
    Sockets,
    /// Removes a file of the workdir (done: `ok`, also if it was not there).
    Remove { path: String },
    /// A snapshot of the network namespace's and host's counters
    /// ([`wirelab_host::counters::Snapshot`]): the interfaces `ifaces` (all but
    /// `lo` when empty); `sample`: only the /proc and /sys files (no `tc`,
    /// no `ethtool`), for samples taken while a point runs.
    Counters {
        #[serde(default)]
        ifaces: Vec<String>,
        #[serde(default)]
        sample: bool,
    },
    /// Stop every child, clean up and exit (answered with `ok` first).
    Bye,
    /// The environment snapshot of the agent's host, named `host`
    /// (answered with `env`).
    Env { host: String },
    /// Applies `KEY`, `VALUE` settings (interface ones to `iface`), a
    /// revert file first (answered with `env_applied` and its token).
    /// Unless `keep`, the agent reverts them itself when it stops.
    EnvApply {
        settings: Vec<(String, String)>,
        iface: Option<String>,
        keep: bool,
    },
    /// Restores what the application `token` changed (answered with
    /// `env_reverted`).
    EnvRevert { token: String },
}

impl Request {
    /// The `op` name, for messages.
    pub fn op(&self) -> &'static str {
        match self {
            Request::Hello { .. } => "hello",
            Request::Spawn { .. } => "spawn",
            Request::Wait { .. } => "wait",
            Request::Signal { .. } => "signal",
            Request::Status => "status",
            Request::Fetch { .. } => "fetch",
            Request::Time => "time",
            Request::Sockets => "sockets",
            Request::Remove { .. } => "remove",
            Request::Counters { .. } => "counters",
            Request::Bye => "bye",
            Request::Env { .. } => "env",
            Request::EnvApply { .. } => "env_apply",
            Request::EnvRevert { .. } => "env_revert",
        }
    }
}

/// What the agent says about itself in answer to `hello`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct HelloInfo {
    pub protocol: u32,
    /// The agent's wirelab version.
    pub version: String,
    /// The requests it serves.
    pub capabilities: Vec<String>,
    /// Its host name.
    pub host: String,
    /// Its working directory (children run there, `fetch` reads there).
    pub workdir: String,
    /// Its process id on that host.
    pub pid: u32,
}

/// How a child ended, and what it printed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Exit {
    /// Exit code, when it exited.
    pub code: Option<i32>,
    /// Signal number, when a signal ended it.
    pub signal: Option<i32>,
    /// Its stdout, the first [`STDOUT_CAP`] bytes (invalid UTF-8 replaced).
    pub stdout: String,
    /// The whole stdout's size in bytes.
    pub stdout_bytes: u64,
    /// Whether `stdout` was cut (the whole is in `TAG.out`).
    pub stdout_truncated: bool,
    /// The last [`STDERR_TAIL`] bytes of its stderr.
    pub stderr_tail: String,
}

impl Exit {
    /// Whether it exited with code 0.
    pub fn success(&self) -> bool {
        self.code == Some(0)
    }
}

impl std::fmt::Display for Exit {
    /// "exit code N" or "signal N".
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match (self.code, self.signal) {
            (Some(c), _) => write!(f, "exit code {c}"),
            (None, Some(s)) => write!(f, "signal {s}"),
            (None, None) => f.write_str("unknown status"),
        }
    }
}

/// One child in a `status` answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChildStatus {
    pub tag: String,
    pub pid: u32,
    pub running: bool,
    pub code: Option<i32>,
    pub signal: Option<i32>,
}

/// The sockets of the agent's network namespace.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Sockets {
    /// Local ports of bound UDP sockets (IPv4 and IPv6), sorted, unique.
    pub udp_ports: Vec<u16>,
    /// Packet (AF_PACKET) sockets.
    pub packet: u32,
}

impl Sockets {
    /// From the text of `/proc/net/udp`, `/proc/net/udp6` (any number,
    /// concatenated) and `/proc/net/packet`.
    pub fn parse(udp: &str, packet: &str) -> Sockets {
        let mut udp_ports: Vec<u16> = udp
            .lines()
            .filter_map(|l| {
                let local = l.split_whitespace().nth(1)?;
                let (_, port) = local.rsplit_once(':')?;
                u16::from_str_radix(port, 16).ok()
            })
            .filter(|&p| p != 0)
            .collect();
        udp_ports.sort_unstable();
        udp_ports.dedup();
        let packet = packet
            .lines()
            .skip(1)
            .filter(|l| !l.trim().is_empty())
            .count() as u32;
        Sockets { udp_ports, packet }
    }
}

/// The agent's clocks, read back to back.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct AgentTime {
    pub realtime_ns: u64,
    pub monotonic_ns: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Response {
    Hello(HelloInfo),
    Spawned {
        pid: u32,
    },
    Exited(Exit),
    Running,
    Status {
        children: Vec<ChildStatus>,
    },
    /// A piece of a file: `data_b64` (standard base64, padded) starts at
    /// the requested offset; `size` is the file's size when read; `eof`
    /// whether the piece reaches it.
    Chunk {
        data_b64: String,
        eof: bool,
        size: u64,
    },
    Time(AgentTime),
    Sockets(Sockets),
    Counters(Box<wirelab_host::counters::Snapshot>),
    /// `fetch` of a file that does not exist (yet).
    NotFound {
        path: String,
    },
    Ok,
    Error {
        message: String,
    },
    Env(wirelab_host::env::Snapshot),
    EnvApplied {
        token: String,
        changes: Vec<wirelab_host::env::apply::Change>,
    },
    EnvReverted {
        changes: Vec<wirelab_host::env::apply::Change>,
    },
}

/// Serializes one message as a line (with its newline).
pub fn encode<T: Serialize>(msg: &Envelope<T>) -> Vec<u8> {
    // A derived Serialize of these types cannot fail (string keys, no
    // non-finite floats).
    let mut v = serde_json::to_vec(msg).unwrap_or_default();
    v.push(b'\n');
    v
}

/// A line that is not a valid request: the answer's id and message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadLine {
    /// The line's `id` when it has one, else 0.
    pub id: u64,
    pub message: String,
}

/// Parses a request line.
pub fn decode_request(line: &[u8]) -> Result<Envelope<Request>, BadLine> {
    decode(line)
}

/// Parses a response line.
pub fn decode_response(line: &[u8]) -> Result<Envelope<Response>, BadLine> {
    decode(line)
}

fn decode<T: serde::de::DeserializeOwned>(line: &[u8]) -> Result<Envelope<T>, BadLine> {
    serde_json::from_slice(line).map_err(|e| {
        let id = serde_json::from_slice::<serde_json::Value>(line)
            .ok()
            .and_then(|v| v.get("id").and_then(|i| i.as_u64()))
            .unwrap_or(0);
        BadLine {
            id,
            message: format!("bad message: {e}"),
        }
    })
}

/// What [`read_line`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LineRead {
    /// A line is in the buffer, without its newline (the last line of the
    /// input may lack one).
    Line,
    /// A line longer than the limit was skipped; its length.
    TooLong(usize),
    /// End of input.
    Eof,
}

/// Reads one line into `buf` (cleared first), storing at most `max` bytes:
/// a longer line is read to its end and dropped.
pub fn read_line(r: &mut impl BufRead, max: usize, buf: &mut Vec<u8>) -> io::Result<LineRead> {
    buf.clear();
    let mut len = 0usize;
    loop {
        let avail = match r.fill_buf() {
            Ok(a) => a,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if avail.is_empty() {
            return Ok(if len > max {
                LineRead::TooLong(len)
            } else if len == 0 {
                LineRead::Eof
            } else {
                LineRead::Line
            });
        }
        let (part, done) = match avail.iter().position(|&b| b == b'\n') {
            Some(i) => (&avail[..i], i + 1),
            None => (avail, avail.len()),
        };
        let newline = done > part.len();
        len = len.saturating_add(part.len());
        if len <= max {
            buf.extend_from_slice(part);
        } else {
            buf.clear();
        }
        r.consume(done);
        if newline {
            return Ok(if len > max {
                LineRead::TooLong(len)
            } else {
                LineRead::Line
            });
        }
    }
}

/// Standard base64 with padding (the `data_b64` of a chunk).
pub fn base64_encode(data: &[u8]) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(data)
}

/// Decodes standard padded base64; anything else (wrong length, stray or
/// misplaced characters, non-zero padding bits) is refused.
pub fn base64_decode(s: &str) -> Result<Vec<u8>, String> {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD
        .decode(s)
        .map_err(|e| format!("bad base64: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line<T: Serialize>(id: u64, body: T) -> String {
        String::from_utf8(encode(&Envelope { id, body })).unwrap()
    }

    #[test]
    fn requests_are_byte_exact_and_round_trip() {
        let hello = Request::Hello {
            protocol: 1,
            controller: "0.1.0".into(),
        };
        assert_eq!(
            line(1, hello.clone()),
            "{\"id\":1,\"op\":\"hello\",\"protocol\":1,\"controller\":\"0.1.0\"}\n"
        );
        let spawn = Request::Spawn {
            tag: "rx".into(),
            args: vec!["recv".into(), "--json".into()],
        };
        assert_eq!(
            line(2, spawn.clone()),
            "{\"id\":2,\"op\":\"spawn\",\"tag\":\"rx\",\"args\":[\"recv\",\"--json\"]}\n"
        );
        assert_eq!(line(3, Request::Time), "{\"id\":3,\"op\":\"time\"}\n");
        // An older controller's `counters` (no fields) reads as all
        // interfaces, in full.
        assert_eq!(
            decode_request(b"{\"id\":5,\"op\":\"counters\"}")
                .unwrap()
                .body,
            Request::Counters {
                ifaces: vec![],
                sample: false
            }
        );
        let sig = Request::Signal {
            tag: "rx".into(),
            signal: Sig::Term,
        };
        assert_eq!(
            line(4, sig.clone()),
            "{\"id\":4,\"op\":\"signal\",\"tag\":\"rx\",\"signal\":\"term\"}\n"
        );
        for (id, r) in [
            (1, hello),
            (2, spawn),
            (3, Request::Time),
            (4, sig),
            (5, Request::Status),
            (6, Request::Bye),
            (
                7,
                Request::Wait {
                    tag: "a".into(),
                    timeout_ms: u64::MAX,
                },
            ),
            (
                8,
                Request::Counters {
                    ifaces: vec!["eth1".into()],
                    sample: true,
                },
            ),
            (
                u64::MAX,
                Request::Fetch {
                    path: "a/b.wlr".into(),
                    offset: 1 << 40,
                    max: MAX_CHUNK,
                },
            ),
        ] {
            let env = Envelope { id, body: r };
            assert_eq!(decode_request(&encode(&env)).unwrap(), env);
        }
    }

    #[test]
    fn responses_are_byte_exact_and_round_trip() {
        assert_eq!(
            line(9, Response::Running),
            "{\"id\":9,\"kind\":\"running\"}\n"
        );
        assert_eq!(
            line(
                2,
                Response::Time(AgentTime {
                    realtime_ns: 5,
                    monotonic_ns: 6
                })
            ),
            "{\"id\":2,\"kind\":\"time\",\"realtime_ns\":5,\"monotonic_ns\":6}\n"
        );
        let exit = Response::Exited(Exit {
            code: Some(0),
            signal: None,
            stdout: "{\"a\":1}\n".into(),
            stdout_bytes: 8,
            stdout_truncated: false,
            stderr_tail: String::new(),
        });
        assert_eq!(
            line(3, exit.clone()),
            "{\"id\":3,\"kind\":\"exited\",\"code\":0,\"signal\":null,\"stdout\":\"{\\\"a\\\":1}\\n\",\
             \"stdout_bytes\":8,\"stdout_truncated\":false,\"stderr_tail\":\"\"}\n"
        );
        let hello = Response::Hello(HelloInfo {
            protocol: PROTOCOL,
            version: "0.1.0".into(),
            capabilities: vec!["spawn".into()],
            host: "h".into(),
            workdir: "/tmp/w".into(),
            pid: 7,
        });
        for (id, r) in [
            (1, hello),
            (3, exit),
            (4, Response::Spawned { pid: 42 }),
            (5, Response::Ok),
            (
                9,
                Response::Counters(Box::new(wirelab_host::counters::Snapshot {
                    unix_ns: 3,
                    snmp: [("Udp.RcvbufErrors".to_string(), 7)].into(),
                    ..Default::default()
                })),
            ),
            (
                6,
                Response::Error {
                    message: "no\n\"such\"".into(),
                },
            ),
            (
                7,
                Response::Chunk {
                    data_b64: base64_encode(b"hi"),
                    eof: true,
                    size: 2,
                },
            ),
            (
                8,
                Response::Status {
                    children: vec![ChildStatus {
                        tag: "t".into(),
                        pid: 1,
                        running: false,
                        code: None,
                        signal: Some(9),
                    }],
                },
            ),
        ] {
            let env = Envelope { id, body: r };
            assert_eq!(decode_response(&encode(&env)).unwrap(), env);
        }
    }

    #[test]
    fn env_requests_and_answers_are_byte_exact_and_round_trip() {
        let apply = Request::EnvApply {
            settings: vec![("mtu".into(), "9000".into())],
            iface: Some("eth1".into()),
            keep: false,
        };
        assert_eq!(
            line(1, apply.clone()),
            "{\"id\":1,\"op\":\"env_apply\",\"settings\":[[\"mtu\",\"9000\"]],\
             \"iface\":\"eth1\",\"keep\":false}\n"
        );
        let change = wirelab_host::env::apply::Change {
            setting: "mtu".into(),
            target: wirelab_host::env::apply::Target::Mtu {
                iface: "eth1".into(),
            },
            previous: "1500".into(),
            value: "9000".into(),
        };
        let applied = Response::EnvApplied {
            token: "t-1".into(),
            changes: vec![change.clone()],
        };
        assert_eq!(
            line(1, applied.clone()),
            "{\"id\":1,\"kind\":\"env_applied\",\"token\":\"t-1\",\"changes\":[{\"setting\":\
             \"mtu\",\"target\":{\"kind\":\"mtu\",\"iface\":\"eth1\"},\"previous\":\"1500\",\
             \"value\":\"9000\"}]}\n"
        );
        let mut snap = wirelab_host::env::Snapshot::new("netns:a", 5);
        snap.values.insert("nic.va.mtu".into(), "1500".into());
        for (id, r) in [
            (2, Request::Env { host: "h".into() }),
            (3, apply),
            (
                4,
                Request::EnvRevert {
                    token: "t-1".into(),
                },
            ),
        ] {
            let env = Envelope { id, body: r };
            assert_eq!(decode_request(&encode(&env)).unwrap(), env);
        }
        for (id, r) in [
            (5, Response::Env(snap)),
            (6, applied),
            (
                7,
                Response::EnvReverted {
                    changes: vec![change],
                },
            ),
        ] {
            let env = Envelope { id, body: r };
            assert_eq!(decode_response(&encode(&env)).unwrap(), env);
        }
    }

    #[test]
    fn bad_lines_give_their_id_or_zero() {
        let e = decode_request(b"{\"id\":12,\"op\":\"launch\"}").unwrap_err();
        assert_eq!(e.id, 12);
        assert!(e.message.contains("launch"), "{}", e.message);
        let e = decode_request(b"{\"id\":3,\"op\":\"spawn\",\"tag\":5}").unwrap_err();
        assert_eq!(e.id, 3);
        for bad in [
            &b"not json"[..],
            b"",
            b"[]",
            b"{\"op\":\"time\"}",
            b"{\"id\":-1,\"op\":\"time\"}",
            b"{\"id\":1.5,\"op\":\"time\"}",
            b"{\"id\":\"7\",\"op\":\"time\"}",
            b"\xff\xfe",
        ] {
            let e = decode_request(bad).unwrap_err();
            assert_eq!(e.id, 0, "{bad:?}");
        }
        // Unknown fields are ignored: a newer controller's extra field
        // does not break an agent of the same protocol.
        let ok = decode_request(b"{\"id\":1,\"op\":\"time\",\"extra\":true}").unwrap();
        assert_eq!(ok.body, Request::Time);
    }

    #[test]
    fn lines_are_bounded_and_skipped_whole() {
        let big = vec![b'x'; 3000];
        let mut input = Vec::new();
        input.extend_from_slice(b"short\n");
        input.extend_from_slice(&big);
        input.extend_from_slice(b"\nnext\nlast");
        // A tiny BufReader buffer makes the long line arrive in pieces.
        let mut r = io::BufReader::with_capacity(7, &input[..]);
        let mut buf = Vec::new();
        assert_eq!(read_line(&mut r, 100, &mut buf).unwrap(), LineRead::Line);
        assert_eq!(buf, b"short");
        assert_eq!(
            read_line(&mut r, 100, &mut buf).unwrap(),
            LineRead::TooLong(3000)
        );
        assert!(buf.capacity() <= 2 * 100, "{}", buf.capacity());
        assert_eq!(read_line(&mut r, 100, &mut buf).unwrap(), LineRead::Line);
        assert_eq!(buf, b"next");
        assert_eq!(read_line(&mut r, 100, &mut buf).unwrap(), LineRead::Line);
        assert_eq!(buf, b"last");
        assert_eq!(read_line(&mut r, 100, &mut buf).unwrap(), LineRead::Eof);
        // Exactly the limit is a line; one more is too long, also at EOF.
        let mut r = io::BufReader::new(&b"abc\nabcd"[..]);
        assert_eq!(read_line(&mut r, 3, &mut buf).unwrap(), LineRead::Line);
        assert_eq!(
            read_line(&mut r, 3, &mut buf).unwrap(),
            LineRead::TooLong(4)
        );
        assert_eq!(read_line(&mut r, 3, &mut buf).unwrap(), LineRead::Eof);
    }

    #[test]
    fn base64_round_trips_and_refuses_junk() {
        assert_eq!(base64_encode(b""), "");
        assert_eq!(base64_encode(b"f"), "Zg==");
        assert_eq!(base64_encode(b"fo"), "Zm8=");
        assert_eq!(base64_encode(b"foo"), "Zm9v");
        assert_eq!(base64_encode(b"foobar"), "Zm9vYmFy");
        assert_eq!(base64_encode(&[0xfb, 0xff]), "+/8=");
        for n in 0..300usize {
            let data: Vec<u8> = (0..n).map(|i| (i * 37 + n) as u8).collect();
            assert_eq!(base64_decode(&base64_encode(&data)).unwrap(), data);
        }
        for bad in [
            "Z", "Zg=", "Zg==Zg==", "Z===", "Zh==", "Zm9v\n", "Zm-v", "====",
        ] {
            assert!(base64_decode(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn sockets_from_proc_text() {
        let udp = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode ref pointer drops\n\
   12: 00000000:16A9 00000000:0000 07 00000000:00000000 00:00000000 00000000     0        0 3 2 0000000000000000 0\n\
   13: 0100007F:0035 00000000:0000 07 00000000:00000000 00:00000000 00000000     0        0 4 2 0000000000000000 0\n\
  sl  local_address                         remote_address                        st\n\
   20: 00000000000000000000000000000000:16A9 00000000000000000000000000000000:0000 07\n";
        let packet = "sk       RefCnt Type Proto  Iface R Rmem   User   Inode\n\
ffff 3 3 0003 0 1 0 0 1\nffff 3 3 0003 0 1 0 0 2\n";
        let s = Sockets::parse(udp, packet);
        assert_eq!(s.udp_ports, vec![0x35, 0x16A9]);
        assert_eq!(s.packet, 2);
        assert_eq!(Sockets::parse("", ""), Sockets::default());
    }
}

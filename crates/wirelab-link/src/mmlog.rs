//! Mahimahi-compatible link logs (mm-link's `--uplink-log` format), so
//! Mahimahi's `mm-throughput-graph` and `mm-delay-graph` read what the
//! emulator did.
//!
//! mm-link writes header lines starting with `#` (among them
//! `# init timestamp: MS`, the wall clock in ms at start, and
//! `# base timestamp: MS`, where its trace starts, in ms since init), then
//! one line per event, times in whole ms since init:
//!
//! - `T + BYTES`: a packet arrived at the link;
//! - `T # 1500`: a delivery opportunity, used or wasted;
//! - `T - BYTES DELAY`: a packet left; `DELAY` = `T` − its arrival's `T`.
//!
//! The scripts subtract the base timestamp from every `T` and die on an
//! event before the header's base, on a negative delay, on a departure
//! whose arrival is before the base, and on any other event type (so the
//! `T d PKTS BYTES` drop lines of newer mm-link versions are not written:
//! its own scripts refuse them). [`parse`] checks a log the way the
//! scripts read it. Sans-IO: the writer appends to a buffer, the parser
//! reads text.

use std::io::Write;

/// Whole ms since the log's start (the init timestamp) for times on the
/// arrival stamps' clock; times before the start count as the start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MmClock {
    /// The start, ns on the arrival stamps' clock.
    pub origin_ns: u64,
}

impl MmClock {
    pub fn ms(&self, t_ns: u64) -> u64 {
        t_ns.saturating_sub(self.origin_ns) / 1_000_000
    }
}

/// The header: `title` and `command` as comments, the init timestamp
/// (wall clock ms at the log's start), base timestamp 0 (events count
/// from the start).
pub fn header(out: &mut Vec<u8>, title: &str, command: &str, init_unix_ms: u64) {
    let one_line = |s: &str| s.replace(['\n', '\r'], " ");
    let _ = writeln!(out, "# wirelab emulate {}", one_line(title));
    let _ = writeln!(out, "# command line: {}", one_line(command));
    let _ = writeln!(out, "# init timestamp: {init_unix_ms}");
    let _ = writeln!(out, "# base timestamp: 0");
}

/// `T + BYTES`.
pub fn arrival(out: &mut Vec<u8>, ms: u64, bytes: u32) {
    let _ = writeln!(out, "{ms} + {bytes}");
}

/// `T # 1500`.
pub fn opportunity(out: &mut Vec<u8>, ms: u64) {
    let _ = writeln!(out, "{ms} # {}", super::OPPORTUNITY_BYTES);
}

/// `T - BYTES DELAY` for a packet that arrived at `arrival_ms` (not after
/// `ms`: a departure before its arrival is written as at its arrival).
pub fn departure(out: &mut Vec<u8>, ms: u64, bytes: u32, arrival_ms: u64) {
    let ms = ms.max(arrival_ms);
    let _ = writeln!(out, "{ms} - {bytes} {}", ms - arrival_ms);
}

/// What a log holds, read as Mahimahi's scripts read it; times are ms
/// after the base timestamp.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MmLogSummary {
    pub init_ms: Option<u64>,
    pub base_ms: u64,
    pub arrivals: u64,
    pub arrival_bytes: u64,
    pub opportunities: u64,
    pub capacity_bytes: u64,
    pub departures: u64,
    pub departure_bytes: u64,
    /// The first event's time and the latest (the scripts' duration is
    /// their difference).
    pub first_ms: Option<u64>,
    pub last_ms: u64,
    pub max_delay_ms: u64,
}

/// Why a log would make a Mahimahi script die: its line (1-based) and
/// the script's complaint.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {what}")]
pub struct MmLogError {
    pub line: usize,
    pub what: String,
}

/// Reads a log as `mm-throughput-graph` and `mm-delay-graph` do, refusing
/// what makes them die, and adds it up.
pub fn parse(text: &str) -> Result<MmLogSummary, MmLogError> {
    let mut s = MmLogSummary::default();
    let mut base = None;
    for (i, raw) in text.lines().enumerate() {
        let err = |what: String| MmLogError { line: i + 1, what };
        if let Some(rest) = raw.strip_prefix('#') {
            if let Some(v) = rest.strip_prefix(" base timestamp: ") {
                let digits: String = v.chars().take_while(char::is_ascii_digit).collect();
                if !digits.is_empty() {
                    if base.is_some() {
                        return Err(err("base timestamp multiply defined".into()));
                    }
                    base = Some(digits.parse::<u64>().map_err(|e| err(e.to_string()))?);
                }
            } else if let Some(v) = rest.strip_prefix(" init timestamp: ") {
                s.init_ms = v.trim().parse().ok();
            }
            continue;
        }
        let f: Vec<&str> = raw.split_whitespace().collect();
        if f.len() < 3 {
            return Err(err("Format: timestamp event_type num_bytes [delay]".into()));
        }
        let num = |x: &str, what: &str| {
            if !x.is_empty() && x.bytes().all(|b| b.is_ascii_digit()) {
                x.parse::<u64>().map_err(|e| err(format!("{what}: {e}")))
            } else {
                Err(err(format!("Invalid {what}: {x}")))
            }
        };
        let ts = num(f[0], "timestamp")?;
        let bytes = num(f[2], "byte count")?;
        let Some(b) = base else {
            return Err(err("logfile is missing base timestamp".into()));
        };
        let Some(ts) = ts.checked_sub(b) else {
            return Err(err(format!("timestamp {ts} before the base {b}")));
        };
        s.first_ms.get_or_insert(ts);
        s.last_ms = s.last_ms.max(ts);
        match f[1] {
            "+" => {
                s.arrivals += 1;
                s.arrival_bytes += bytes;
            }
            "#" => {
                s.opportunities += 1;
                s.capacity_bytes += bytes;
            }
            "-" => {
                let Some(d) = f.get(3) else {
                    return Err(err("Departure format: timestamp - num_bytes delay".into()));
                };
                let d = num(d, "delay")?;
                if d > ts {
                    return Err(err(format!(
                        "Invalid timestamp and delay: ts={ts}, delay={d}"
                    )));
                }
                s.departures += 1;
                s.departure_bytes += bytes;
                s.max_delay_ms = s.max_delay_ms.max(d);
            }
            other => return Err(err(format!("Unknown event type: {other}"))),
        }
    }
    if s.first_ms.is_none() {
        return Err(MmLogError {
            line: text.lines().count(),
            what: "Must have at least one event".into(),
        });
    }
    s.base_ms = base.unwrap_or(0);
    Ok(s)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Direction, Link, LinkConfig, LinkKey, Release};
    use std::sync::{Arc, Mutex};

    #[test]
    fn lines_are_mm_links() {
        let mut b = Vec::new();
        header(
            &mut b,
            "a2b (eA -> eB) [link 1.up]",
            "wirelab emulate\n--a x",
            1_700_000_000_123,
        );
        let c = MmClock {
            origin_ns: 5_000_000_000,
        };
        arrival(&mut b, c.ms(5_002_999_999), 1500);
        opportunity(&mut b, c.ms(5_003_000_000));
        departure(&mut b, c.ms(5_013_400_000), 1500, c.ms(5_002_999_999));
        arrival(&mut b, c.ms(4_000_000_000), 60); // before the start: at 0
        let t = String::from_utf8(b).unwrap();
        assert_eq!(
            t,
            "# wirelab emulate a2b (eA -> eB) [link 1.up]\n# command line: wirelab emulate --a x\n\
             # init timestamp: 1700000000123\n# base timestamp: 0\n2 + 1500\n3 # 1500\n13 - 1500 11\n0 + 60\n"
        );
        let s = parse(&t).unwrap();
        assert_eq!(s.init_ms, Some(1_700_000_000_123));
        assert_eq!((s.arrivals, s.arrival_bytes), (2, 1560));
        assert_eq!((s.opportunities, s.capacity_bytes), (1, 1500));
        assert_eq!(
            (s.departures, s.departure_bytes, s.max_delay_ms),
            (1, 1500, 11)
        );
        assert_eq!((s.first_ms, s.last_ms), (Some(2), 13));
    }

    #[test]
    fn parse_refuses_what_the_scripts_die_on() {
        let h = "# base timestamp: 10\n";
        let e = |t: &str| parse(t).unwrap_err().to_string();
        assert_eq!(e("5 + 100\n"), "line 1: logfile is missing base timestamp");
        assert_eq!(
            e(&format!("{h}{h}")),
            "line 2: base timestamp multiply defined"
        );
        assert_eq!(
            e(&format!("{h}12 d 1 1500\n")),
            "line 2: Unknown event type: d"
        );
        assert_eq!(
            e(&format!("{h}12 - 100\n")),
            "line 2: Departure format: timestamp - num_bytes delay"
        );
        assert_eq!(
            e(&format!("{h}12 - 100 3\n")),
            "line 2: Invalid timestamp and delay: ts=2, delay=3"
        );
        assert_eq!(e(&format!("{h}12 - 100 -1\n")), "line 2: Invalid delay: -1");
        assert_eq!(
            e(&format!("{h}1.5 + 100\n")),
            "line 2: Invalid timestamp: 1.5"
        );
        assert_eq!(
            e(&format!("{h}9 + 100\n")),
            "line 2: timestamp 9 before the base 10"
        );
        assert_eq!(
            e(&format!("{h}12 +\n")),
            "line 2: Format: timestamp event_type num_bytes [delay]"
        );
        assert_eq!(e(h), "line 1: Must have at least one event");
        let s = parse(&format!(
            "# x\n{h}# init timestamp: 7\n10 + 100\n12 - 100 2\n"
        ))
        .unwrap();
        assert_eq!(
            (s.base_ms, s.first_ms, s.last_ms, s.init_ms),
            (10, Some(0), 2, Some(7))
        );
    }

    /// A `link` trace of one `1`: an opportunity every ms, each logged
    /// once, used or wasted, at the trace's times from the first arrival.
    #[test]
    fn every_opportunity_is_logged_once_used_or_wasted() {
        let cfg = LinkConfig::parse("link up queue droptail packets=100").unwrap();
        let key = LinkKey {
            seed: 1,
            rule: 0,
            direction: Direction::AToB,
        };
        let opps = Box::new((1..).map(|k| k as u64)); // 1, 2, 3, ... ms
        let sources = crate::Sources {
            opportunities: Some(opps),
            ..Default::default()
        };
        let mut link = Link::with_sources(&cfg, key, sources).unwrap();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let s2 = seen.clone();
        assert!(link.log_opportunities(Box::new(move |t| s2.lock().unwrap().push(t))));
        let ms = 1_000_000u64;
        let t0 = 7 * ms + 300_000; // virtual clock
        let mut out: Vec<Release> = Vec::new();
        // Three 1500-byte frames at once, then idle, then one more.
        for i in 0..3 {
            link.arrive(t0, 1500, i, false);
        }
        link.pop_due(t0 + 10 * ms, &mut out);
        assert_eq!(
            out.iter().map(|r| r.deadline_ns - t0).collect::<Vec<_>>(),
            [ms, 2 * ms, 3 * ms]
        );
        link.arrive(t0 + 20 * ms + 500_000, 1000, 3, false);
        out.clear();
        link.pop_due(t0 + 30 * ms, &mut out);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].deadline_ns, t0 + 21 * ms);
        // Used at 1..3 ms, wasted 4..20 (idle, logged at the arrival),
        // used at 21: every ms from 1 to 21, once, in order.
        let got: Vec<u64> = seen.lock().unwrap().iter().map(|t| (t - t0) / ms).collect();
        assert_eq!(got, (1..=21).collect::<Vec<_>>());
        assert!(seen.lock().unwrap().iter().all(|t| (t - t0) % ms == 0));
        // The run stops at 40.5 ms, idle: 22..40 wasted and logged; what
        // comes after the end (a frame drained) is not.
        link.end_opportunity_log(t0 + 40 * ms + 500_000);
        link.arrive(t0 + 41 * ms, 1500, 4, false);
        out.clear();
        link.pop_due(u64::MAX, &mut out);
        assert_eq!(out.len(), 1);
        let got: Vec<u64> = seen.lock().unwrap().iter().map(|t| (t - t0) / ms).collect();
        assert_eq!(got, (1..=40).collect::<Vec<_>>());
        // No link stage: nothing to log.
        let mut plain = Link::new(&LinkConfig::parse("rate 10mbit").unwrap(), key).unwrap();
        assert!(!plain.log_opportunities(Box::new(|_| {})));
    }
}

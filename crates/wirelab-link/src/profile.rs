//! Dummynet's pipe profile (`ipfw pipe N config profile FILE`, ipfw(8)):
//! an empirical distribution of the extra time the channel is busy for a
//! packet (MAC framing, contention, retransmissions: "airtime"), and a
//! loss level past which the packet is lost after that time.
//!
//! The file: whitespace-separated `keyword value` lines, `#` starts a
//! comment; `name ID`, `samples N` (2..1024, default 100), `bw RATE`,
//! `loss-level L` (0..1, default 1: no loss), then `prob delay` or
//! `delay prob` and at least two points of the cumulative curve in that
//! order (delay in ms, points in any order). Loaded as ipfw loads it: the
//! points sorted by probability (then delay) and the curve sampled at `N`
//! equally likely indices (`samples[i]` for `i` from `prob1·N` to
//! `prob2·N` by linear interpolation; indices no segment covers stay 0);
//! a packet draws an index uniformly, takes that sample's airtime, and is
//! lost if the index is at least `⌊L·N⌋` (Dummynet's `extra_bits`).
//! Sans-IO: [`Profile::parse`] reads text, [`Profile::draw`] maps a
//! uniform draw to an outcome.

use wirelab_core::units::parse_number;

/// ipfw's bounds on `samples` and on the number of points.
pub const MAX_SAMPLES: usize = 1024;
pub const MIN_POINTS: usize = 2;

/// A loaded profile.
#[derive(Debug, Clone, PartialEq)]
pub struct Profile {
    /// The `name` line (empty without one).
    pub name: String,
    /// Airtime of each equally likely index, ns.
    pub samples_ns: Vec<u64>,
    /// Indices at or above this are lost.
    pub loss_index: usize,
    /// The `bw` line, bits per second.
    pub bw_bps: Option<u64>,
}

/// A bad profile: its line (1-based; 0 for the whole file) and what.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{line}: {what}")]
pub struct ProfileError {
    pub line: usize,
    pub what: String,
}

/// What one packet gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Draw {
    pub airtime_ns: u64,
    /// Lost once its airtime is over.
    pub lost: bool,
}

#[derive(Clone, Copy)]
struct Point {
    prob: f64,
    delay_ms: f64,
}

/// The lines read so far.
#[derive(Default)]
struct Lines {
    samples: Option<usize>,
    loss: Option<f64>,
    name: Option<String>,
    bw: Option<u64>,
    /// Set by the points' header: whether points are `delay prob`.
    delay_first: Option<bool>,
    points: Vec<Point>,
}

impl Lines {
    /// Takes one `key arg` line; the error is what is wrong with it.
    fn take(&mut self, key: &str, arg: &str) -> Result<(), String> {
        match key.to_ascii_lowercase().as_str() {
            "samples" => {
                if self.samples.is_some() {
                    return Err("samples given twice".into());
                }
                self.samples = Some(read_samples(arg)?);
            }
            "bw" => {
                if self.bw.is_some() {
                    return Err("bw given twice".into());
                }
                self.bw = Some(parse_bw(arg)?);
            }
            "loss-level" => {
                if self.loss.is_some() {
                    return Err("loss-level given twice".into());
                }
                let l = read_number(arg, "loss-level")?;
                if l > 1.0 {
                    return Err(format!("loss-level {arg} is above 1.0 (a probability)"));
                }
                self.loss = Some(l);
            }
            "name" => {
                if self.name.is_some() {
                    return Err("name given twice".into());
                }
                self.name = Some(arg.to_string());
            }
            "prob" | "delay" if self.delay_first.is_none() => {
                let first = key.eq_ignore_ascii_case("delay");
                let other = if first { "prob" } else { "delay" };
                if !arg.eq_ignore_ascii_case(other) {
                    return Err(format!("write `{key} {other}` to start the points"));
                }
                self.delay_first = Some(first);
            }
            "prob" | "delay" => return Err("the points' header is given twice".into()),
            _ => {
                let Some(df) = self.delay_first else {
                    return Err(format!(
                        "unknown keyword {key:?}: use name, samples, bw, loss-level, then `prob delay` or `delay prob` and the points"
                    ));
                };
                let (d, p) = if df { (key, arg) } else { (arg, key) };
                let point = read_point(d, p)?;
                if self.points.len() == MAX_SAMPLES {
                    return Err(format!("more than {MAX_SAMPLES} points (ipfw's maximum)"));
                }
                self.points.push(point);
            }
        }
        Ok(())
    }

    /// After the last line: the points' header and enough points.
    fn check_complete(&self) -> Result<(), String> {
        if self.delay_first.is_none() {
            return Err(
                "no `prob delay` (or `delay prob`) line: the curve's points are missing".into(),
            );
        }
        if self.points.len() < MIN_POINTS {
            return Err(format!(
                "{} point(s): the curve needs at least {MIN_POINTS}",
                self.points.len()
            ));
        }
        Ok(())
    }
}

/// A line without its comment, as `(keyword, value)`; `None` for a blank
/// line.
fn split_line(raw: &str) -> Result<Option<(&str, &str)>, String> {
    let raw = raw.trim_start_matches('\u{feff}');
    let body = raw.split('#').next().unwrap_or("");
    let words: Vec<&str> = body.split_whitespace().collect();
    match words[..] {
        [] => Ok(None),
        [k] => Err(format!("missing value for {k}")),
        [k, a] => Ok(Some((k, a))),
        _ => Err("too many values: write one `keyword value` or `x y` point per line".into()),
    }
}

/// A finite number at or above 0.
fn read_number(s: &str, what: &str) -> Result<f64, String> {
    if s.strip_prefix('-').is_some_and(|r| parse_number(r).is_ok()) {
        return Err(format!("{what} {s} is negative"));
    }
    match parse_number(s) {
        Ok(v) if v.is_finite() && v >= 0.0 => Ok(v),
        Ok(_) => Err(format!("{what} {s} is negative")),
        Err(_) => Err(format!("{what} {s:?} is not a number")),
    }
}

/// `samples N`: a whole number in ipfw's range.
fn read_samples(arg: &str) -> Result<usize, String> {
    let n: usize = arg
        .parse()
        .map_err(|_| format!("samples {arg:?} is not a whole number"))?;
    if !(MIN_POINTS..=MAX_SAMPLES).contains(&n) {
        return Err(format!(
            "samples {n}: use 2 to {MAX_SAMPLES} (ipfw's range)"
        ));
    }
    Ok(n)
}

/// A point of the curve from its delay (ms) and probability words.
fn read_point(d: &str, p: &str) -> Result<Point, String> {
    let delay_ms = read_number(d, "delay")?;
    let prob = read_number(p, "probability")?;
    if prob > 1.0 {
        return Err(format!("probability {p} is above 1.0"));
    }
    Ok(Point { prob, delay_ms })
}

/// The curve sampled at `n` equally likely indices, in ms, as ipfw does:
/// points sorted by probability (then delay), then segment by segment,
/// indices ⌊y1⌋ to ⌊y2⌋ (exclusive) on the line through the two points;
/// indices no segment covers stay 0.
fn sample_curve(mut points: Vec<Point>, n: usize) -> Vec<f64> {
    points.sort_by(|a, b| {
        a.prob
            .total_cmp(&b.prob)
            .then(a.delay_ms.total_cmp(&b.delay_ms))
    });
    let mut ms = vec![0.0f64; n];
    for w in points.windows(2) {
        let (y1, x1) = (w[0].prob * n as f64, w[0].delay_ms);
        let (y2, x2) = (w[1].prob * n as f64, w[1].delay_ms);
        let (from, to) = (y1 as usize, (y2 as usize).min(n));
        for (ix, s) in ms.iter_mut().enumerate().take(to).skip(from) {
            *s = if x1 == x2 {
                x1
            } else {
                let m = (y2 - y1) / (x2 - x1);
                let c = y1 - m * x1;
                (ix as f64 - c) / m
            };
        }
    }
    ms
}

impl Profile {
    /// Parses a profile's text; errors name the line (the last line for
    /// what the whole file lacks).
    pub fn parse(text: &str) -> Result<Profile, ProfileError> {
        let mut lines = Lines::default();
        let mut last_line = 0;
        for (i, raw) in text.lines().enumerate() {
            let line = i + 1;
            last_line = line;
            let err = |what: String| ProfileError { line, what };
            if let Some((key, arg)) = split_line(raw).map_err(err)? {
                lines.take(key, arg).map_err(err)?;
            }
        }
        lines.check_complete().map_err(|what| ProfileError {
            line: last_line,
            what,
        })?;
        let n = lines.samples.unwrap_or(100);
        let ms = sample_curve(lines.points, n);
        Ok(Profile {
            name: lines.name.unwrap_or_default(),
            samples_ns: ms
                .iter()
                .map(|m| (m.max(0.0) * 1e6).round() as u64)
                .collect(),
            loss_index: (lines.loss.unwrap_or(1.0) * n as f64) as usize,
            bw_bps: lines.bw,
        })
    }

    /// The outcome of a uniform draw `u` in [0, 1).
    pub fn draw(&self, u: f64) -> Draw {
        let n = self.samples_ns.len();
        let i = ((u * n as f64) as usize).min(n - 1);
        Draw {
            airtime_ns: self.samples_ns[i],
            lost: i >= self.loss_index,
        }
    }

    /// The probability a packet is lost.
    pub fn loss_probability(&self) -> f64 {
        let n = self.samples_ns.len();
        n.saturating_sub(self.loss_index) as f64 / n as f64
    }
}

/// ipfw's bandwidth: a number, `K`/`M` (×1000), then bits or `B`/`bytes`
/// (×8), with or without `/s` (`1Mbit/s`, `500KB/s`, `2000000`); or
/// wirelab's rate (`10mbit`).
fn parse_bw(s: &str) -> Result<u64, String> {
    let bad = || format!("bw {s:?}: write bits per second such as 10Mbit/s, 500KByte/s or 10mbit");
    let t = s.strip_suffix("/s").unwrap_or(s);
    let digits = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let v: f64 = t[..digits].parse().map_err(|_| bad())?;
    let mut rest = &t[digits..];
    let mut mult = 1.0;
    if let Some(r) = rest.strip_prefix(['K', 'k']) {
        mult = 1e3;
        rest = r;
    } else if let Some(r) = rest.strip_prefix(['M', 'm']) {
        mult = 1e6;
        rest = r;
    } else if let Some(r) = rest.strip_prefix(['G', 'g']) {
        mult = 1e9;
        rest = r;
    }
    // ipfw: a capital B is bytes.
    let unit = rest.to_ascii_lowercase();
    let bytes = rest.starts_with('B') || unit.starts_with("byte");
    let known = if bytes {
        matches!(unit.as_str(), "b" | "byte" | "bytes")
    } else {
        matches!(unit.as_str(), "" | "bit" | "bits")
    };
    if !known {
        return Err(bad());
    }
    let bps = v * mult * if bytes { 8.0 } else { 1.0 };
    if !(1.0..1e15).contains(&bps) {
        return Err(format!("bw {s:?}: must be at least 1 bit/s"));
    }
    Ok(bps.round() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// ipfw(8)'s example profile.
    const MAN: &str = "name    bla_bla_bla\nsamples 100\nloss-level    0.86\nprob    delay\n\
        0       200     # minimum overhead is 200ms\n0.5     200\n0.5     300\n0.8     1000\n\
        0.9     1300\n1       1300\n#configuration file end\n";

    #[test]
    fn the_man_pages_example_loads_as_ipfw_interpolates_it() {
        let p = Profile::parse(MAN).unwrap();
        assert_eq!(p.name, "bla_bla_bla");
        assert_eq!(p.samples_ns.len(), 100);
        assert_eq!(p.loss_index, 86);
        assert_eq!(p.bw_bps, None);
        let ms = |i: usize| p.samples_ns[i] as f64 / 1e6;
        // 0..50: 200 ms (vertical segment); 50..80 from 300 to 1000 ms
        // (the point (0.5, 300) then linear); 80..90 1000..1300; 90..100 1300.
        assert!((0..50).all(|i| ms(i) == 200.0));
        assert_eq!(ms(50), 300.0);
        assert!((ms(65) - (300.0 + 700.0 * 15.0 / 30.0)).abs() < 1e-6);
        assert!((ms(85) - 1150.0).abs() < 1e-6);
        assert!((90..100).all(|i| ms(i) == 1300.0));
        assert!((p.loss_probability() - 0.14).abs() < 1e-12);
        assert_eq!(
            p.draw(0.0),
            Draw {
                airtime_ns: 200_000_000,
                lost: false
            }
        );
        assert_eq!(
            p.draw(0.859_999),
            Draw {
                airtime_ns: 1_150_000_000,
                lost: false
            }
        );
        assert!(p.draw(0.86).lost && p.draw(0.999_999).lost);
    }

    #[test]
    fn delay_first_points_any_order_and_ipfw_bandwidths() {
        let p = Profile::parse("bw 2Mbit/s\nsamples 4\ndelay prob\n10 1\n0 0\n").unwrap();
        assert_eq!(p.samples_ns, [0, 2_500_000, 5_000_000, 7_500_000]);
        assert_eq!(p.loss_index, 4);
        assert_eq!(p.bw_bps, Some(2_000_000));
        let bw = |s| parse_bw(s);
        assert_eq!(bw("500KByte/s"), Ok(4_000_000));
        assert_eq!(bw("500KB/s"), Ok(4_000_000));
        assert_eq!(bw("10mbit"), Ok(10_000_000));
        assert_eq!(bw("2000000"), Ok(2_000_000));
        assert!(bw("fast").is_err() && bw("0").is_err() && bw("10mbyte-ish").is_err());
    }

    fn link(stages: &str, profile: &str, seed: u64) -> crate::Link {
        use crate::{Direction, Link, LinkConfig, LinkKey, Sources};
        let cfg = LinkConfig::parse(stages).unwrap();
        let key = LinkKey {
            seed,
            rule: 0,
            direction: Direction::AToB,
        };
        let sources = Sources {
            profile: Some(Profile::parse(profile).unwrap()),
            ..Default::default()
        };
        Link::with_sources(&cfg, key, sources).unwrap()
    }

    /// ipfw(8)'s example profile at 1 Gbit/s (its `bw`), 20,000 packets
    /// of 125 bytes (1 µs on the wire) 2 s apart (no queueing): the loss
    /// rate is the profile's 14 % within 3σ, and the airtimes of the
    /// delivered copies (release − arrival − 1 µs) are the profile's
    /// samples below the loss level: each one of them, and a KS distance
    /// to their distribution below the 1 % critical value.
    #[test]
    fn airtime_and_loss_follow_the_profile() {
        let p = Profile::parse(&format!("bw 1Gbit/s\n{MAN}")).unwrap();
        let mut l = link("profile f", &format!("bw 1Gbit/s\n{MAN}"), 7);
        let n = 20_000u64;
        let (mut lost, mut air) = (0u64, Vec::new());
        for i in 0..n {
            let t = i * 2_000_000_000;
            let a = l.arrive(t, 125, i, false);
            match a.copies() {
                [crate::Fate::Dropped(crate::DropReason::Loss)] => lost += 1,
                [crate::Fate::Queued(q)] => air.push(q.deadline_ns - t - 1_000),
                other => panic!("{other:?}"),
            }
        }
        assert_eq!(l.counters().dropped.loss, lost);
        let pl = p.loss_probability();
        let sigma = (n as f64 * pl * (1.0 - pl)).sqrt();
        assert!(
            (lost as f64 - n as f64 * pl).abs() <= 3.0 * sigma,
            "lost {lost}"
        );
        let kept = &p.samples_ns[..p.loss_index];
        assert!(air.iter().all(|a| kept.contains(a)));
        air.sort_unstable();
        let mut reference = kept.to_vec();
        reference.sort_unstable();
        let cdf = |v: &[u64], x: u64| v.partition_point(|&y| y <= x) as f64 / v.len() as f64;
        let ks = air
            .iter()
            .chain(&reference)
            .map(|&x| (cdf(&air, x) - cdf(&reference, x)).abs())
            .fold(0.0, f64::max);
        let critical = 1.63 / (air.len() as f64).sqrt();
        assert!(ks < critical, "KS {ks} >= {critical}");
    }

    /// Airtime is link time: back-to-back packets wait for the airtime of
    /// those before them, lost ones included (Dummynet drops a packet
    /// after its airtime). 10 ms each, half lost, 1 µs on the wire.
    #[test]
    fn airtime_occupies_the_link_even_for_lost_packets() {
        let mut l = link(
            "profile f rate 1gbit",
            "samples 2\nloss-level 0.5\ndelay prob\n10 0\n10 1\n",
            3,
        );
        let (mut lost, mut kept) = (0, 0);
        for i in 0..200u64 {
            let a = l.arrive(0, 125, i, false);
            match a.copies() {
                [crate::Fate::Queued(q)] => {
                    assert_eq!(q.deadline_ns, (i + 1) * 10_001_000);
                    kept += 1;
                }
                [crate::Fate::Dropped(_)] => lost += 1,
                other => panic!("{other:?}"),
            }
        }
        assert!(lost > 50 && kept > 50, "{lost} {kept}");
    }

    #[test]
    fn a_profile_needs_one_speed() {
        use crate::{Direction, Link, LinkConfig, LinkError, LinkKey, Sources};
        let key = LinkKey {
            seed: 1,
            rule: 0,
            direction: Direction::AToB,
        };
        let make = |stages: &str, text: &str| {
            let sources = Sources {
                profile: Some(Profile::parse(text).unwrap()),
                ..Default::default()
            };
            Link::with_sources(&LinkConfig::parse(stages).unwrap(), key, sources).map(|_| ())
        };
        let curve = "prob delay\n0 1\n1 2\n";
        assert!(matches!(
            make("profile f", curve),
            Err(LinkError::ProfileNeedsRate)
        ));
        let bw = format!("bw 1Mbit/s\n{curve}");
        assert!(matches!(
            make("profile f rate 1mbit", &bw),
            Err(LinkError::ProfileRate(1_000_000))
        ));
        assert!(make("profile f", &bw).is_ok() && make("profile f rate 1mbit", curve).is_ok());
        let conflict = |s: &str| LinkConfig::parse(s).unwrap_err().to_string();
        assert!(conflict("profile f trace t.bin").contains("remove profile or the trace"));
        assert!(conflict("profile f rate 1mbit queue codel").contains("use profile with rate"));
        assert_eq!(
            LinkConfig::parse("rate 1mbit profile f")
                .unwrap()
                .to_string(),
            "rate 1mbit profile f"
        );
    }

    #[test]
    fn bad_profiles_name_the_line() {
        let e = |t: &str| Profile::parse(t).unwrap_err().to_string();
        assert_eq!(
            e("samples 100\nsamples 10\nprob delay\n0 1\n1 2\n"),
            "2: samples given twice"
        );
        assert_eq!(
            e("samples 5000\n"),
            "1: samples 5000: use 2 to 1024 (ipfw's range)"
        );
        assert_eq!(
            e("loss-level 1.5\n"),
            "1: loss-level 1.5 is above 1.0 (a probability)"
        );
        assert_eq!(e("loss-level x\n"), "1: loss-level \"x\" is not a number");
        assert_eq!(
            e("prob delay\n0 10\n1.2 20\n"),
            "3: probability 1.2 is above 1.0"
        );
        assert_eq!(e("prob delay\n0 -10\n1 20\n"), "2: delay -10 is negative");
        assert_eq!(
            e("prob delay\n0 10\n"),
            "2: 1 point(s): the curve needs at least 2"
        );
        assert_eq!(
            e("samples 10\n"),
            "1: no `prob delay` (or `delay prob`) line: the curve's points are missing"
        );
        assert_eq!(e("0 10\n1 20\n"), "1: unknown keyword \"0\": use name, samples, bw, loss-level, then `prob delay` or `delay prob` and the points");
        assert_eq!(e("prob\n"), "1: missing value for prob");
        assert_eq!(
            e("prob delay\n0 10 3\n"),
            "2: too many values: write one `keyword value` or `x y` point per line"
        );
        assert_eq!(
            e("prob delay\nprob delay\n"),
            "2: the points' header is given twice"
        );
        assert_eq!(e("prob ms\n"), "1: write `prob delay` to start the points");
        assert_eq!(
            e(""),
            "0: no `prob delay` (or `delay prob`) line: the curve's points are missing"
        );
        let many: String = (0..=MAX_SAMPLES).map(|i| format!("0 {i}\n")).collect();
        assert_eq!(
            e(&format!("prob delay\n{many}")),
            "1026: more than 1024 points (ipfw's maximum)"
        );
        // CRLF, a BOM, comments and blank lines are fine.
        assert!(Profile::parse("\u{feff}# c\r\n\r\nprob delay\r\n0 1\r\n1 2\r\n").is_ok());
    }

    #[test]
    fn the_curve_is_sampled_segment_by_segment_with_gaps_left_at_zero() {
        let pt = |prob, delay_ms| Point { prob, delay_ms };
        // Given out of order: sorted by probability first.
        let ms = sample_curve(vec![pt(1.0, 8.0), pt(0.25, 0.0), pt(0.5, 4.0)], 8);
        // Indices 0 and 1 lie below the first point: no segment covers them.
        assert_eq!(ms[..2], [0.0, 0.0]);
        // 0.25→0.5 covers indices 2, 3: the line from (2, 0 ms) to (4, 4 ms).
        assert_eq!(ms[2..4], [0.0, 2.0]);
        // 0.5→1.0 covers 4..8: from (4, 4 ms) to (8, 8 ms).
        assert_eq!(ms[4..], [4.0, 5.0, 6.0, 7.0]);
        // Equal delays: the segment is flat.
        assert_eq!(sample_curve(vec![pt(0.0, 3.0), pt(1.0, 3.0)], 4), [3.0; 4]);
    }

    #[test]
    fn lines_split_into_a_keyword_and_a_value() {
        assert_eq!(split_line("  # only a comment"), Ok(None));
        assert_eq!(
            split_line("\u{feff}samples 10 # c"),
            Ok(Some(("samples", "10")))
        );
        assert_eq!(split_line("bw"), Err("missing value for bw".into()));
        assert!(split_line("0.5 1 2")
            .unwrap_err()
            .starts_with("too many values"));
        assert_eq!(
            read_number("-0.5", "delay"),
            Err("delay -0.5 is negative".into())
        );
        assert_eq!(
            read_number("x", "delay"),
            Err("delay \"x\" is not a number".into())
        );
    }
}

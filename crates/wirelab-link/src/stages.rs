//! The registry of the stage language: one entry per keyword, with its
//! parser, its checks against the rest of the list, its canonical printed
//! form, its help line and the drop reasons it can give.
//!
//! Everything that lists the stages is made from [`STAGES`]: the parser's
//! keyword lookup and its "expected one of" message, [`LinkConfig`]'s
//! `Display`, `wirelab emulate --help` ([`help_text`]) and the stage table
//! of docs/emulate-model.md ([`docs_table`], checked by a test).
//!
//! Contracts:
//! - The table's order is the canonical form's: a config prints its
//!   stages in this order, each by its entry's `print`.
//! - Checks run after the whole list is read, in table order; the first
//!   failing one is the error.
//! - The link model's pipeline does not read this table: its order is
//!   fixed in the model (see the module doc of `link`).

use super::model::DropReason;
use super::spec::{
    fmt_chance, fmt_duration, fmt_percent, fmt_rate, parse_burst, parse_chance, parse_delay,
    parse_dist, parse_drd, parse_limit, parse_loss, parse_onoff, parse_per_flow, parse_queue,
    parse_rate_clause, parse_reorder, parse_sched, parse_slot, parse_timeline, parse_trace,
    LinkConfig, LossModel, MmLinkSpec, OnOffKind, Order, Parser, ProfileSpec, SchedSpec, Seen,
    SpecError, SpecErrorKind,
};

/// One keyword of the stage language.
pub struct Stage {
    /// The word that starts it.
    pub keyword: &'static str,
    /// Other spellings (netem's).
    pub aliases: &'static [&'static str],
    /// Its syntax, as help and docs show it.
    pub syntax: &'static str,
    /// What it does, in a few words.
    pub summary: &'static str,
    /// A stage list that uses it (the registry's tests parse and print it).
    pub example: &'static str,
    /// Why it may drop a copy.
    pub drops: &'static [DropReason],
    /// Reads the stage's arguments (the keyword at token `at` is consumed).
    pub(super) parse: fn(&mut Parser, &mut Draft, usize) -> Result<(), SpecError>,
    /// Checks it against the whole list (and completes the config).
    pub(super) check: fn(&mut Draft, &Parser) -> Result<(), SpecError>,
    /// Its canonical form, `None` when the config does not use it.
    pub(super) print: fn(&LinkConfig) -> Option<String>,
}

/// A stage list being read: the config so far, where each option was.
#[derive(Default)]
pub(super) struct Draft {
    pub config: LinkConfig,
    pub seen: Seen,
    /// `burst B`, moved into the rate by its check.
    pub burst: Option<u64>,
}

/// Every stage, in canonical order.
pub static STAGES: &[Stage] = &[
    TRACE, DELAY, DIST, LOSS, ECN, DUPLICATE, CORRUPT, REORDER, RATE, BURST, PROFILE, LINK, ONOFF,
    QUEUE, DRD, TIMELINE, SLOT, LIMIT, ORDER, PER_FLOW, SCHED, SEED,
];

/// The entry a keyword (or alias) starts.
pub(super) fn stage_named(word: &str) -> Option<&'static Stage> {
    STAGES
        .iter()
        .find(|s| s.keyword == word || s.aliases.contains(&word))
}

/// The keywords, comma-separated (the parser's "expected one of").
pub(super) fn keyword_list() -> String {
    let words: Vec<&str> = STAGES.iter().map(|s| s.keyword).collect();
    words.join(", ")
}

/// Marks `slot` as given at token `at`, refusing a second time.
fn once(
    slot: &mut Option<usize>,
    name: &'static str,
    at: usize,
    p: &Parser,
) -> Result<(), SpecError> {
    if slot.is_some() {
        return Err(p.err_at(at, SpecErrorKind::Repeated(name)));
    }
    *slot = Some(at);
    Ok(())
}

fn conflict(p: &Parser, at: usize, msg: &str) -> SpecError {
    p.err_at(at, SpecErrorKind::Conflict(msg.to_string()))
}

fn no_check(_: &mut Draft, _: &Parser) -> Result<(), SpecError> {
    Ok(())
}

/// For a stage printed as part of another's form.
fn printed_by_other(_: &LinkConfig) -> Option<String> {
    None
}

const TRACE: Stage = Stage {
    keyword: "trace",
    aliases: &[],
    syntax: "trace FILE [scale X] [offset T] [at-end loop|hold|stop|pass|drop]",
    summary: "per-packet delay, drop and duplicate from a packet trace",
    example: "trace f.bin scale 10 offset -1ms at-end hold",
    drops: &[DropReason::Trace, DropReason::TraceEnd, DropReason::Horizon],
    parse: |p, d, at| {
        once(&mut d.seen.trace, "trace", at, p)?;
        d.config.trace = Some(parse_trace(p)?);
        Ok(())
    },
    check: |d, p| {
        let (seen, Some(at)) = (&d.seen, d.seen.trace) else {
            return Ok(());
        };
        let decided = [
            (seen.delay, "delay"),
            (seen.loss, "loss"),
            (seen.duplicate, "duplicate"),
            (seen.reorder, "reorder"),
        ];
        match decided.iter().find(|(s, _)| s.is_some()) {
            Some((Some(other), name)) => Err(conflict(
                p,
                (*other).max(at),
                &format!(
                    "trace decides delay, loss and duplication per packet: remove {name} or the trace"
                ),
            )),
            _ => Ok(()),
        }
    },
    print: |c| {
        let t = c.trace.as_ref()?;
        let mut s = format!("trace {}", t.file);
        if t.scale != 1.0 {
            s += &format!(" scale {}", t.scale);
        }
        if t.offset_ns != 0 {
            let sign = if t.offset_ns < 0 { "-" } else { "" };
            s += &format!(" offset {sign}{}", fmt_duration(t.offset_ns.unsigned_abs()));
        }
        s += &format!(" at-end {}", t.at_end.name());
        Some(s)
    },
};

const DELAY: Stage = Stage {
    keyword: "delay",
    aliases: &["latency"],
    syntax: "delay T [J [C%]] [dist uniform|normal|pareto|paretonormal]",
    summary: "delay T with jitter J and its correlation C",
    example: "delay 10ms 2ms 25% dist normal",
    drops: &[DropReason::Horizon],
    parse: |p, d, at| {
        once(&mut d.seen.delay, "delay", at, p)?;
        d.config.delay = Some(parse_delay(p, &mut d.seen)?);
        Ok(())
    },
    check: |d, p| match (&d.config.delay, d.seen.delay) {
        (Some(x), Some(at)) if x.corr > 0.0 && x.jitter_ns == 0 => {
            Err(conflict(p, at, "a delay correlation needs a jitter"))
        }
        _ => Ok(()),
    },
    print: |c| {
        let d = c.delay.as_ref()?;
        let mut s = format!("delay {}", fmt_duration(d.delay_ns));
        if d.jitter_ns > 0 {
            s += &format!(" {}", fmt_duration(d.jitter_ns));
            if d.corr > 0.0 {
                s += &format!(" {}", fmt_percent(d.corr));
            }
            s += &format!(" dist {}", d.dist.name());
        }
        Some(s)
    },
};

const DIST: Stage = Stage {
    keyword: "dist",
    aliases: &["distribution"],
    syntax: "dist uniform|normal|pareto|paretonormal",
    summary: "the jitter's shape (anywhere in the list; needs a jitter)",
    example: "delay 10ms 2ms loss 1% dist pareto",
    drops: &[],
    parse: |p, d, at| {
        if d.seen.dist.is_some() {
            return Err(p.err_at(at, SpecErrorKind::Repeated("dist")));
        }
        d.seen.dist = Some((at, parse_dist(p)?));
        Ok(())
    },
    check: |d, p| {
        let Some((at, dist)) = d.seen.dist else {
            return Ok(());
        };
        match &mut d.config.delay {
            Some(x) if x.jitter_ns > 0 => {
                x.dist = dist;
                Ok(())
            }
            _ => Err(conflict(
                p,
                at,
                "dist shapes the jitter: give one, e.g. delay 10ms 2ms dist normal",
            )),
        }
    },
    print: printed_by_other,
};

const LOSS: Stage = Stage {
    keyword: "loss",
    aliases: &["drop"],
    syntax: "loss [random] P% [C%] | loss state P13% [P31% [P32% [P23% [P14%]]]] | loss gemodel P% [R% [1-H% [1-K%]]]",
    summary: "random, 4-state Markov or Gilbert-Elliott loss",
    example: "loss gemodel 1% 10% 100% 0%",
    drops: &[DropReason::Loss],
    parse: |p, d, at| {
        once(&mut d.seen.loss, "loss", at, p)?;
        d.config.loss = Some(parse_loss(p)?);
        Ok(())
    },
    check: no_check,
    print: |c| {
        Some(match *c.loss.as_ref()? {
            LossModel::Random(x) => format!("loss random {}", fmt_chance(x)),
            LossModel::State {
                p13,
                p31,
                p32,
                p23,
                p14,
            } => format!(
                "loss state {} {} {} {} {}",
                fmt_percent(p13),
                fmt_percent(p31),
                fmt_percent(p32),
                fmt_percent(p23),
                fmt_percent(p14)
            ),
            LossModel::GilbertElliott {
                p,
                r,
                loss_bad,
                loss_good,
            } => format!(
                "loss gemodel {} {} {} {}",
                fmt_percent(p),
                fmt_percent(r),
                fmt_percent(loss_bad),
                fmt_percent(loss_good)
            ),
        })
    },
};

const ECN: Stage = Stage {
    keyword: "ecn",
    aliases: &[],
    syntax: "ecn",
    summary: "mark ECN-capable packets CE instead of dropping them for the loss model",
    example: "loss 1% ecn",
    drops: &[],
    parse: |p, d, at| {
        once(&mut d.seen.ecn, "ecn", at, p)?;
        d.config.ecn = true;
        Ok(())
    },
    check: |d, p| match d.seen.ecn {
        Some(at) if d.config.loss.is_none() => Err(conflict(
            p,
            at,
            "ecn marks packets the loss model would drop: add loss (e.g. loss 1% ecn)",
        )),
        _ => Ok(()),
    },
    print: |c| c.ecn.then(|| "ecn".to_string()),
};

const DUPLICATE: Stage = Stage {
    keyword: "duplicate",
    aliases: &[],
    syntax: "duplicate P% [C%]",
    summary: "a second copy of the packet",
    example: "duplicate 1%",
    drops: &[],
    parse: |p, d, at| {
        once(&mut d.seen.duplicate, "duplicate", at, p)?;
        d.config.duplicate = Some(parse_chance(p, "duplicate")?);
        Ok(())
    },
    check: no_check,
    print: |c| Some(format!("duplicate {}", fmt_chance(c.duplicate?))),
};

const CORRUPT: Stage = Stage {
    keyword: "corrupt",
    aliases: &[],
    syntax: "corrupt P% [C%]",
    summary: "flip one bit",
    example: "corrupt 0.1% 5%",
    drops: &[],
    parse: |p, d, at| {
        once(&mut d.seen.corrupt, "corrupt", at, p)?;
        d.config.corrupt = Some(parse_chance(p, "corrupt")?);
        Ok(())
    },
    check: no_check,
    print: |c| Some(format!("corrupt {}", fmt_chance(c.corrupt?))),
};

const REORDER: Stage = Stage {
    keyword: "reorder",
    aliases: &[],
    syntax: "reorder P% [C%] [gap N]",
    summary: "send at once, skipping the delay (needs a delay > 0)",
    example: "delay 10ms reorder 25% gap 5",
    drops: &[],
    parse: |p, d, at| {
        once(&mut d.seen.reorder, "reorder", at, p)?;
        d.config.reorder = Some(parse_reorder(p)?);
        Ok(())
    },
    check: |d, p| {
        let (c, Some(at)) = (&d.config, d.seen.reorder) else {
            return Ok(());
        };
        if c.delay.is_none_or(|x| x.delay_ns == 0) {
            return Err(conflict(
                p,
                at,
                "reorder needs a delay for the packets it does not reorder (e.g. delay 10ms reorder 25% gap 5)",
            ));
        }
        if c.order == Order::Fifo {
            return Err(conflict(
                p,
                at.max(d.seen.order.unwrap_or(0)),
                "reorder and order fifo contradict each other: fifo forbids reordering",
            ));
        }
        Ok(())
    },
    print: |c| {
        let r = c.reorder?;
        Some(format!("reorder {} gap {}", fmt_chance(r.chance), r.gap))
    },
};

const RATE: Stage = Stage {
    keyword: "rate",
    aliases: &[],
    syntax: "rate R [OVH [CELL [CELLOVH]]]",
    summary: "serialize at R bit/s (OVH, CELLOVH bytes may be negative)",
    example: "rate 1mbit 0 48 5",
    drops: &[DropReason::Horizon],
    parse: |p, d, at| {
        once(&mut d.seen.rate, "rate", at, p)?;
        d.config.rate = Some(parse_rate_clause(p)?);
        Ok(())
    },
    check: no_check,
    print: |c| {
        let r = c.rate?;
        let mut s = format!("rate {}", fmt_rate(r.bits_per_sec));
        if r.packet_overhead != 0 || r.cell_size != 0 {
            s += &format!(" {}", r.packet_overhead);
            if r.cell_size != 0 {
                s += &format!(" {} {}", r.cell_size, r.cell_overhead);
            }
        }
        if r.burst_bytes > 0 {
            s += &format!(" burst {}", r.burst_bytes);
        }
        Some(s)
    },
};

const BURST: Stage = Stage {
    keyword: "burst",
    aliases: &[],
    syntax: "burst B",
    summary: "with rate: Dummynet's burst credit after the link was idle",
    example: "rate 1mbit burst 125k",
    drops: &[],
    parse: |p, d, at| {
        once(&mut d.seen.burst, "burst", at, p)?;
        d.burst = Some(parse_burst(p)?);
        Ok(())
    },
    check: |d, p| match (d.burst, d.seen.burst, &mut d.config.rate) {
        (Some(b), Some(_), Some(r)) => {
            r.burst_bytes = b;
            Ok(())
        }
        (Some(_), Some(at), None) => Err(conflict(
            p,
            at,
            "burst is credit of a rate: give one (e.g. rate 1mbit burst 125k)",
        )),
        _ => Ok(()),
    },
    print: printed_by_other,
};

const PROFILE: Stage = Stage {
    keyword: "profile",
    aliases: &[],
    syntax: "profile FILE",
    summary: "Dummynet's pipe profile: airtime and loss level (needs rate or the file's bw)",
    example: "rate 1mbit profile wifi.prof",
    drops: &[DropReason::Loss],
    parse: |p, d, at| {
        once(&mut d.seen.profile, "profile", at, p)?;
        let file = p.need("profile", "a Dummynet profile file")?.to_string();
        d.config.profile = Some(ProfileSpec { file });
        Ok(())
    },
    check: |d, p| {
        let (seen, Some(at)) = (&d.seen, d.seen.profile) else {
            return Ok(());
        };
        if let Some(t) = seen.trace {
            return Err(conflict(
                p,
                at.max(t),
                "trace decides delay and loss per packet: remove profile or the trace",
            ));
        }
        let held = [
            (seen.queue, "queue"),
            (seen.link, "link"),
            (seen.onoff, "onoff"),
        ];
        match held.iter().find(|(s, _)| s.is_some()) {
            Some((Some(other), name)) => Err(conflict(
                p,
                at.max(*other),
                &format!(
                    "profile adds airtime to the rate's serialization, which {name} replaces with a queue simulated in time: use profile with rate (or the profile's bw)"
                ),
            )),
            _ => Ok(()),
        }
    },
    print: |c| Some(format!("profile {}", c.profile.as_ref()?.file)),
};

const LINK: Stage = Stage {
    keyword: "link",
    aliases: &[],
    syntax: "link FILE [once]",
    summary: "Mahimahi delivery opportunities as the bottleneck",
    example: "link up.trace once",
    drops: &[DropReason::LinkDead, DropReason::Limit],
    parse: |p, d, at| {
        once(&mut d.seen.link, "link", at, p)?;
        let file = p.need("link", "a Mahimahi trace file")?.to_string();
        let once = p.peek() == Some("once");
        p.pos += usize::from(once);
        d.config.link = Some(MmLinkSpec { file, once });
        Ok(())
    },
    check: |d, p| match (d.seen.link, d.seen.rate) {
        (Some(a), Some(b)) => Err(conflict(
            p,
            a.max(b),
            "link and rate both set the bottleneck's speed: use one of them",
        )),
        _ => Ok(()),
    },
    print: |c| {
        let l = c.link.as_ref()?;
        Some(format!(
            "link {}{}",
            l.file,
            if l.once { " once" } else { "" }
        ))
    },
};

const ONOFF: Stage = Stage {
    keyword: "onoff",
    aliases: &[],
    syntax: "onoff exp|periodic ON OFF [drop]",
    summary: "the bottleneck goes on and off (ON, OFF at least 1ms)",
    example: "rate 10mbit onoff exp 1s 500ms drop",
    drops: &[DropReason::LinkDead, DropReason::Limit],
    parse: |p, d, at| {
        once(&mut d.seen.onoff, "onoff", at, p)?;
        d.config.onoff = Some(parse_onoff(p)?);
        Ok(())
    },
    check: no_check,
    print: |c| {
        let o = c.onoff?;
        let kind = match o.kind {
            OnOffKind::Exp => "exp",
            OnOffKind::Periodic => "periodic",
        };
        Some(format!(
            "onoff {kind} {} {}{}",
            fmt_duration(o.on_ns),
            fmt_duration(o.off_ns),
            if o.drop { " drop" } else { "" }
        ))
    },
};

const QUEUE: Stage = Stage {
    keyword: "queue",
    aliases: &[],
    syntax: "queue droptail|drophead|codel|pie [packets=N] [bytes=B] [target=T] [interval=T]",
    summary: "the queue in front of the bottleneck (mm-link's forms)",
    example: "rate 10mbit queue codel packets=1000 target=5ms",
    drops: &[DropReason::Limit, DropReason::Aqm],
    parse: |p, d, at| {
        once(&mut d.seen.queue, "queue", at, p)?;
        d.config.queue = Some(parse_queue(p)?);
        Ok(())
    },
    check: |d, p| {
        let c = &d.config;
        match d.seen.queue {
            Some(at) if c.rate.is_none() && c.link.is_none() && c.onoff.is_none() => Err(conflict(
                p,
                at,
                "a queue fills in front of a bottleneck: add rate R, link FILE or onoff \
                     (e.g. queue codel rate 10mbit)",
            )),
            _ => Ok(()),
        }
    },
    print: |c| {
        let q = c.queue?;
        let mut s = format!("queue {}", q.kind.name());
        if let Some(n) = q.packets {
            s += &format!(" packets={n}");
        }
        if let Some(b) = q.bytes {
            s += &format!(" bytes={b}");
        }
        if let Some(t) = q.target_ns {
            s += &format!(" target={}", fmt_duration(t));
        }
        if let Some(i) = q.interval_ns {
            s += &format!(" interval={}", fmt_duration(i));
        }
        Some(s)
    },
};

const DRD: Stage = Stage {
    keyword: "drd",
    aliases: &[],
    syntax: "drd MIN MAX [congest C]",
    summary: "NIST Net's derivative random drop by queue length",
    example: "delay 50ms drd 20 50 congest 30",
    drops: &[DropReason::Drd],
    parse: |p, d, at| {
        once(&mut d.seen.drd, "drd", at, p)?;
        d.config.drd = Some(parse_drd(p)?);
        Ok(())
    },
    check: no_check,
    print: |c| {
        let d = c.drd?;
        let mut s = format!("drd {} {}", d.min, d.max);
        if let Some(x) = d.congest {
            s += &format!(" congest {x}");
        }
        Some(s)
    },
};

const TIMELINE: Stage = Stage {
    keyword: "timeline",
    aliases: &[],
    syntax: "timeline FILE [period T] [at-end loop|hold|stop|pass|drop]",
    summary: "link parameters by time from a time-indexed CSV",
    example: "timeline net.csv period 10s at-end hold",
    drops: &[DropReason::TraceEnd, DropReason::Loss, DropReason::Limit],
    parse: |p, d, at| {
        once(&mut d.seen.timeline, "timeline", at, p)?;
        d.config.timeline = Some(parse_timeline(p)?);
        Ok(())
    },
    check: no_check,
    print: |c| {
        let t = c.timeline.as_ref()?;
        let mut s = format!("timeline {}", t.file);
        if let Some(x) = t.period_ns {
            s += &format!(" period {}", fmt_duration(x));
        }
        s += &format!(" at-end {}", t.at_end.name());
        Some(s)
    },
};

const SLOT: Stage = Stage {
    keyword: "slot",
    aliases: &[],
    syntax: "slot MIN [MAX] [packets N] [bytes B]",
    summary: "release only at slot edges, N packets or B bytes each",
    example: "delay 200us slot 800us 10ms packets 42 bytes 64k",
    drops: &[DropReason::Horizon],
    parse: |p, d, at| {
        once(&mut d.seen.slot, "slot", at, p)?;
        d.config.slot = Some(parse_slot(p)?);
        Ok(())
    },
    check: no_check,
    print: |c| {
        let s = c.slot?;
        let mut t = format!("slot {} {}", fmt_duration(s.min_ns), fmt_duration(s.max_ns));
        if let Some(n) = s.packets {
            t += &format!(" packets {n}");
        }
        if let Some(b) = s.bytes {
            t += &format!(" bytes {b}");
        }
        Some(t)
    },
};

const LIMIT: Stage = Stage {
    keyword: "limit",
    aliases: &[],
    syntax: "limit N | limit packets N | limit bytes B",
    summary: "what the link holds at once (both may be given)",
    example: "limit 50000 limit bytes 1M",
    drops: &[DropReason::Limit],
    parse: |p, d, at| parse_limit(p, &mut d.config.limit, &mut d.seen, at),
    check: no_check,
    print: |c| {
        let packets = c.limit.packets.map(|n| format!("limit {n}"));
        let bytes = c.limit.bytes.map(|b| format!("limit bytes {b}"));
        match (packets, bytes) {
            (Some(n), Some(b)) => Some(format!("{n} {b}")),
            (n, b) => n.or(b),
        }
    },
};

const ORDER: Stage = Stage {
    keyword: "order",
    aliases: &[],
    syntax: "order fifo|free",
    summary: "fifo: no packet leaves before an earlier one (default free)",
    example: "delay 100ms 75ms order fifo",
    drops: &[],
    parse: |p, d, at| {
        once(&mut d.seen.order, "order", at, p)?;
        d.config.order = match p.need("order", "fifo or free")? {
            "fifo" => Order::Fifo,
            "free" => Order::Free,
            _ => {
                return Err(p.err_prev(SpecErrorKind::Value {
                    what: "order",
                    reason: "expected fifo or free".to_string(),
                }))
            }
        };
        Ok(())
    },
    check: no_check,
    print: |c| (c.order == Order::Fifo).then(|| "order fifo".to_string()),
};

const PER_FLOW: Stage = Stage {
    keyword: "per-flow",
    aliases: &[],
    syntax: "per-flow MASK [flows N]",
    summary: "Dummynet's dynamic pipes: a pipe per flow (MASK e.g. src/24,dport)",
    example: "rate 10mbit per-flow src/24,dport flows 9",
    drops: &[],
    parse: |p, d, at| {
        once(&mut d.seen.per_flow, "per-flow", at, p)?;
        d.config.per_flow = Some(parse_per_flow(p)?);
        Ok(())
    },
    check: |d, p| {
        let (seen, Some(at)) = (&d.seen, d.seen.per_flow) else {
            return Ok(());
        };
        if !d.config.flow_pipes() {
            return Ok(());
        }
        let files = [
            (seen.trace, "trace"),
            (seen.link, "link"),
            (seen.timeline, "timeline"),
        ];
        match files.iter().find(|(s, _)| s.is_some()) {
            Some((Some(other), name)) => Err(conflict(
                p,
                at.max(*other),
                &format!(
                    "per-flow gives each flow a pipe of its own, but the {name} file has one \
                     cursor: use a rule per flow (--rule FILTER '{name} ...') instead"
                ),
            )),
            _ => Ok(()),
        }
    },
    print: |c| {
        let x = c.per_flow?;
        let mut s = format!("per-flow {}", x.mask);
        if let Some(n) = x.max_flows {
            s += &format!(" flows {n}");
        }
        Some(s)
    },
};

const SCHED: Stage = Stage {
    keyword: "sched",
    aliases: &[],
    syntax: "sched fifo | drr [weights W1,W2,...] [quantum B] | fq_codel [target T] [interval T] [quantum B] [flows N]",
    summary: "how the bottleneck serves its flow queues",
    example: "rate 10mbit sched fq_codel target 5ms interval 100ms quantum 1514 flows 64",
    drops: &[DropReason::Limit, DropReason::Aqm],
    parse: |p, d, at| {
        once(&mut d.seen.sched, "sched", at, p)?;
        d.config.sched = Some(parse_sched(p)?);
        Ok(())
    },
    check: check_sched,
    print: |c| Some(print_sched(c.sched.as_ref()?)),
};

fn check_sched(d: &mut Draft, p: &Parser) -> Result<(), SpecError> {
    let (c, seen) = (&d.config, &d.seen);
    let Some(at) = seen.sched else {
        return Ok(());
    };
    if c.rate.is_none() && c.link.is_none() && c.onoff.is_none() {
        return Err(conflict(
            p,
            at,
            "a scheduler serves a bottleneck: add rate R, link FILE or onoff \
             (e.g. sched drr weights 1,3 rate 10mbit)",
        ));
    }
    if let (Some(q), true) = (seen.queue, c.flow_queues()) {
        return Err(conflict(
            p,
            at.max(q),
            "sched drr and fq_codel keep a queue per flow, bounded together by limit \
             (fq_codel runs CoDel on each): remove queue",
        ));
    }
    if let (Some(pf), Some(SchedSpec::Fifo)) = (seen.per_flow, &c.sched) {
        return Err(conflict(
            p,
            at.max(pf),
            "sched fifo serves one queue: use per-flow alone for a pipe per flow, or \
             sched drr|fq_codel for a queue per flow on one link",
        ));
    }
    if let (Some(pf), Some(SchedSpec::FqCodel { .. })) = (seen.per_flow, &c.sched) {
        if c.per_flow.is_some_and(|x| x.max_flows.is_some()) {
            return Err(conflict(
                p,
                at.max(pf),
                "fq_codel hashes flows into its buckets: give their number to it \
                 (sched fq_codel flows N), not to per-flow",
            ));
        }
    }
    Ok(())
}

fn print_sched(s: &SchedSpec) -> String {
    match s {
        SchedSpec::Fifo => "sched fifo".to_string(),
        SchedSpec::Drr { weights, quantum } => {
            let mut s = "sched drr".to_string();
            if !weights.is_empty() {
                let w: Vec<String> = weights.iter().map(u32::to_string).collect();
                s += &format!(" weights {}", w.join(","));
            }
            if let Some(q) = quantum {
                s += &format!(" quantum {q}");
            }
            s
        }
        SchedSpec::FqCodel {
            target_ns,
            interval_ns,
            quantum,
            flows,
        } => {
            let mut s = "sched fq_codel".to_string();
            if let Some(t) = target_ns {
                s += &format!(" target {}", fmt_duration(*t));
            }
            if let Some(i) = interval_ns {
                s += &format!(" interval {}", fmt_duration(*i));
            }
            if let Some(q) = quantum {
                s += &format!(" quantum {q}");
            }
            if let Some(n) = flows {
                s += &format!(" flows {n}");
            }
            s
        }
    }
}

const SEED: Stage = Stage {
    keyword: "seed",
    aliases: &[],
    syntax: "seed N",
    summary: "the seed of every random decision (default: the emulator's --seed)",
    example: "loss 1% seed 7",
    drops: &[],
    parse: |p, d, at| {
        once(&mut d.seen.seed, "seed", at, p)?;
        d.config.seed = Some(p.count("seed", "seed")?);
        Ok(())
    },
    check: no_check,
    print: |c| Some(format!("seed {}", c.seed?)),
};

/// The stage list of `wirelab emulate --help`: per stage its syntax (a
/// long one broken before its ` | ` alternatives), then what it does.
pub fn help_text() -> String {
    let mut s = String::new();
    for st in STAGES {
        let syntax = if st.syntax.len() > 76 {
            st.syntax.replace(" | ", "\n    | ")
        } else {
            st.syntax.to_string()
        };
        s += &format!("  {syntax}\n      {}\n", st.summary);
    }
    s
}

/// The stage table of the model reference (docs/emulate-model.md), in
/// markdown: syntax, what it does, the drop reasons it can give.
pub fn docs_table() -> String {
    let mut s = "| stage | what it does | drops |\n|---|---|---|\n".to_string();
    for st in STAGES {
        let drops: Vec<String> = st.drops.iter().map(|r| format!("`{}`", r.name())).collect();
        let drops = if drops.is_empty() {
            "—".to_string()
        } else {
            drops.join(" ")
        };
        let also: Vec<String> = st
            .aliases
            .iter()
            .map(|a| format!(" (also `{a}`)"))
            .collect();
        s += &format!(
            "| `{}` | {}{} | {drops} |\n",
            st.syntax.replace('|', "\\|"),
            st.summary,
            also.concat()
        );
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_stage_parses_its_example_and_prints_it_back() {
        for st in STAGES {
            let c = LinkConfig::parse(st.example).unwrap_or_else(|e| panic!("{}: {e}", st.example));
            let printed = c.to_string();
            let words: Vec<&str> = printed.split(' ').collect();
            assert!(words.contains(&st.keyword), "{}: {printed}", st.keyword);
            assert_eq!(LinkConfig::parse(&printed), Ok(c), "{printed}");
            for word in std::iter::once(&st.keyword).chain(st.aliases) {
                assert!(std::ptr::eq(stage_named(word).unwrap(), st), "{word}");
            }
        }
    }

    #[test]
    fn keywords_are_unique_and_the_unknown_error_lists_them() {
        let mut words: Vec<&str> = STAGES
            .iter()
            .flat_map(|s| std::iter::once(s.keyword).chain(s.aliases.iter().copied()))
            .collect();
        let n = words.len();
        words.sort_unstable();
        words.dedup();
        assert_eq!(words.len(), n, "a word starts two stages");
        let e = LinkConfig::parse("bogus").unwrap_err().to_string();
        for st in STAGES {
            assert!(
                e.contains(&format!(" {},", st.keyword)) || e.ends_with(st.keyword),
                "{e}"
            );
        }
    }

    #[test]
    fn help_has_a_line_per_stage() {
        let help = help_text().replace("\n    | ", " | ");
        for st in STAGES {
            assert!(
                help.contains(&format!("  {}\n", st.syntax)),
                "{}",
                st.keyword
            );
        }
    }

    /// The table between these markers in the model reference is
    /// `docs_table()`, byte for byte; on a change, paste the printed one.
    #[test]
    fn the_docs_stage_table_is_the_registry() {
        const BEGIN: &str = "<!-- stage table: made by wirelab_link::docs_table -->\n";
        const END: &str = "<!-- end of stage table -->";
        let path =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/emulate-model.md");
        let doc = std::fs::read_to_string(&path).unwrap();
        let start = doc.find(BEGIN).expect("begin marker") + BEGIN.len();
        let len = doc[start..].find(END).expect("end marker");
        let want = docs_table();
        assert!(
            doc[start..start + len] == want,
            "{} is out of date; its stage table should read:\n{want}",
            path.display()
        );
    }
}

//! What a link emulator did to each frame, judged from outside: a capture
//! of what entered it (IN) and of what left it (OUT), both stamped by one
//! host's clock (`wirelab emulate verify`, the judge of bench/emulate.sh).
//!
//! Frames are matched by content: a 64-bit digest of the captured bytes
//! and the original length, less the transport checksum ([`digest`]). The applied delay of a copy is its OUT stamp
//! minus its IN stamp; the error is the applied delay minus what the
//! configuration says for that copy ([`Configuration`], fed in IN order,
//! so a per-packet trace's k-th record meets the k-th IN frame).
//!
//! Contracts:
//! - **Order**: events are fed in time order ([`verify_captures`] merges
//!   the two files by stamp, IN first on a tie). An OUT frame matches the
//!   oldest IN frame of the same content that still expects a copy; its
//!   j-th copy is judged against the j-th smallest configured delay. With
//!   none open it is `duplicated` (a copy too many, or of a frame the
//!   configuration drops) if such a frame is still held, else `unknown`.
//!   Identical frames are told apart only by this order.
//! - **Memory** is bounded by [`VerifyConfig`], never by the input: an IN
//!   frame is held until the stream passes its stamp plus `window_ns`
//!   (then it is final: lost, short of copies, or done) or until
//!   `max_pending` newer frames are held (then it is final early and
//!   counted `evicted`). The KS test keeps at most `ks_samples` pairs (a
//!   reservoir).
//! - **Early** means applied < configured, by any amount.

mod pcaps;
#[cfg(test)]
mod tests;
mod text;

use std::collections::{HashMap, VecDeque};
use std::hash::Hasher;

use serde::Serialize;
use wirelab_wire::headers::proto::{TCP, UDP};
use wirelab_wire::headers::walk::walk_ethernet;

use crate::ks::ks_two_sample;
use crate::latency::{DelayStats, SignedHistogram};

pub use chi2::{Chi2Report, Chi2Test};
pub use pcaps::{verify_captures, Side, VerifyError};

mod chi2;

/// The schema identifier of [`VerifyReport`] in JSON.
pub const SCHEMA: &str = "wirelab.emulate.verify/1";

/// How many examples of lost and early copies a report names.
pub const EXAMPLES: usize = 10;

/// What the emulator's configuration does to each IN frame.
pub trait Configuration {
    /// IN frame `index` (0-based, in IN order) of `len` bytes, stamped
    /// `t_ns`: appends the configured delay (ns) of every copy the
    /// configuration forwards to `delays`; none means it drops the frame.
    fn decide(&mut self, index: u64, t_ns: u64, len: u32, delays: &mut Vec<u64>);

    /// As [`decide`](Self::decide), with the first bytes of the frame
    /// (up to [`FRAME_HEAD`]) for a configuration that tells flows apart.
    fn decide_frame(
        &mut self,
        index: u64,
        t_ns: u64,
        len: u32,
        _head: &[u8],
        delays: &mut Vec<u64>,
    ) {
        self.decide(index, t_ns, len, delays)
    }
}

/// How many leading bytes of an IN frame a [`Configuration`] is shown:
/// enough for Ethernet, VLAN tags, an IPv6 header with an extension
/// header and the ports (the flow the forwarder reads from whole frames).
pub const FRAME_HEAD: usize = 128;

impl<F: FnMut(u64, u64, u32, &mut Vec<u64>)> Configuration for F {
    fn decide(&mut self, index: u64, t_ns: u64, len: u32, delays: &mut Vec<u64>) {
        self(index, t_ns, len, delays)
    }
}

/// One copy of every frame after a fixed delay.
#[derive(Debug, Clone, Copy)]
pub struct ConstantDelay(pub u64);

impl Configuration for ConstantDelay {
    fn decide(&mut self, _: u64, _: u64, _: u32, delays: &mut Vec<u64>) {
        delays.push(self.0);
    }
}

/// The bounds of a verification.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VerifyConfig {
    /// How long after its IN stamp a frame's copies are looked for (above
    /// the largest configured delay).
    pub window_ns: u64,
    /// IN frames held at most (memory: about 100 bytes each).
    pub max_pending: usize,
    /// Pairs (applied, configured) kept for the KS distance.
    pub ks_samples: usize,
    /// IN frames to leave out at the start (captured before the emulator
    /// ran): the frame after them is the emulator's packet 0.
    pub skip_in: u64,
}

impl Default for VerifyConfig {
    fn default() -> Self {
        VerifyConfig {
            window_ns: 2_000_000_000,
            max_pending: 1 << 20,
            ks_samples: 1_000_000,
            skip_in: 0,
        }
    }
}

/// The digest frames are matched by: the captured bytes and the original
/// length (so frames cut by a snap length differ by their tails), without
/// the UDP or TCP checksum of an Ethernet frame (`linktype` 1, any VLAN
/// tags the frame walk steps over, IPv4 or IPv6 without extension
/// headers). A capture where a sender hands frames to a veth holds the
/// partial checksum of checksum offload; what an emulator sends on carries
/// the full one.
pub fn digest(linktype: u16, frame: &[u8], orig_len: u32) -> u64 {
    // SipHash with fixed keys: the same in both captures of one run.
    #[allow(deprecated)]
    let mut h = std::hash::SipHasher::new();
    h.write_u32(orig_len);
    match l4_checksum_at(linktype, frame) {
        Some(at) => {
            h.write(&frame[..at]);
            h.write(&[0, 0]);
            h.write(&frame[at + 2..]);
        }
        None => h.write(frame),
    }
    h.finish()
}

/// Where the UDP or TCP checksum of an Ethernet frame is, if it is whole
/// in `frame` (read by the shared frame walk; behind MPLS or IPv6
/// extension headers the checksum counts, as it always has).
fn l4_checksum_at(linktype: u16, frame: &[u8]) -> Option<usize> {
    const ETHERNET: u16 = 1;
    if linktype != ETHERNET {
        return None;
    }
    let w = walk_ethernet(frame);
    if w.mpls_labels > 0 || w.ip?.ext_headers > 0 {
        return None;
    }
    // Only a first fragment holds the transport header.
    let at = match w.l4? {
        (UDP, l4) => l4 + 6,
        (TCP, l4) => l4 + 16,
        _ => return None,
    };
    (at + 2 <= frame.len()).then_some(at)
}

/// The layout of Table B.1 of the NIST Net trace-emulation thesis: the error
/// of the applied delay, µs.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct TableB1 {
    pub count: u64,
    pub avg_us: f64,
    pub sigma_us: f64,
    pub min_us: f64,
    pub max_us: f64,
}

/// Two-sample KS distance between the applied and the configured delays
/// of the matched copies (when the configured delays vary).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct KsReport {
    /// Pairs compared (a uniform sample when there were more).
    pub samples: u64,
    pub distance: f64,
}

/// A copy that left before its configured delay.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct EarlyCopy {
    /// IN frame index.
    pub index: u64,
    /// Copy number (0: the first to leave).
    pub copy: u32,
    /// Applied − configured (negative).
    pub error_ns: i64,
}

/// The verification (JSON schema `wirelab.emulate.verify/1`). Counts are
/// frames; `*_first` name at most [`EXAMPLES`] IN frame indices.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct VerifyReport {
    pub schema: &'static str,
    /// The IN capture (set by the caller).
    pub in_file: String,
    /// The OUT capture (set by the caller).
    pub out_file: String,
    /// The configuration judged against, as given (set by the caller).
    pub configured: String,
    /// Seed of the configuration's random decisions (set by the caller).
    pub seed: Option<u64>,
    pub window_ns: u64,
    /// IN frames left out at the start ([`VerifyConfig::skip_in`]).
    pub skipped_in: u64,
    /// IN frames judged.
    pub in_frames: u64,
    pub out_frames: u64,
    /// Copies the configuration forwards.
    pub expected_copies: u64,
    /// OUT frames matched to an expected copy.
    pub matched: u64,
    /// IN frames the configuration forwards of which no copy left.
    pub lost: u64,
    /// Expected copies that did not leave (those of lost frames included).
    pub missing_copies: u64,
    /// IN frames the configuration drops, and of which no copy left.
    pub dropped_as_configured: u64,
    /// OUT frames not matched: `duplicated + unknown`.
    pub extra: u64,
    /// OUT copies of an IN frame beyond what the configuration forwards.
    pub duplicated: u64,
    /// OUT frames whose content no IN frame in the window has.
    pub unknown: u64,
    /// Matched copies with applied < configured delay.
    pub early: u64,
    /// IN frames given up before their window ended (`max_pending`).
    pub evicted: u64,
    pub lost_first: Vec<u64>,
    pub early_first: Vec<EarlyCopy>,
    /// OUT − IN per matched copy (`min_seq`/`max_seq`: IN frame index).
    pub applied: Option<DelayStats>,
    /// The configured delay of each matched copy.
    pub configured_delay: Option<DelayStats>,
    /// Applied − configured per matched copy.
    pub error: Option<DelayStats>,
    /// `error` in the thesis's Table B.1 layout.
    pub table_b1: Option<TableB1>,
    pub ks: Option<KsReport>,
    /// Drop and duplication rates, configured vs observed.
    pub chi2: Chi2Report,
    pub warnings: Vec<String>,
}

/// One IN frame waiting for its copies.
#[derive(Debug)]
struct Entry {
    digest: u64,
    t_ns: u64,
    index: u64,
    /// Configured delays, ascending.
    delays: Vec<u64>,
    seen: u32,
    /// Copies beyond the configured ones (counted `duplicated`).
    extra: u32,
    /// Sequence number of the next held frame of the same content.
    next_same: Option<u64>,
}

impl Entry {
    fn open(&self) -> bool {
        (self.seen as usize) < self.delays.len()
    }
}

/// The held frames of one content: a chain through [`Entry::next_same`].
#[derive(Debug, Clone, Copy)]
struct Chain {
    head: u64,
    tail: u64,
    /// No open frame precedes this one in the chain (frames only close).
    open_from: Option<u64>,
}

/// Small deterministic generator for the KS reservoir.
#[derive(Debug)]
struct XorShift(u64);

impl XorShift {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
}

/// The streaming judge (see the module docs); [`verify_captures`] drives
/// it over two capture files.
#[derive(Debug)]
pub struct Verifier {
    cfg: VerifyConfig,
    /// Held frames in IN order; `held[0]` has sequence number `base`.
    held: VecDeque<Entry>,
    base: u64,
    chains: HashMap<u64, Chain>,
    now: u64,
    r: VerifyReport,
    applied: SignedHistogram,
    configured: SignedHistogram,
    error: SignedHistogram,
    pairs: Vec<(f64, f64)>,
    pairs_seen: u64,
    rng: XorShift,
    fates: Fates,
}

/// Retired IN frames by fate, as configured and as observed.
#[derive(Debug, Default)]
struct Fates {
    frames: u64,
    /// Frames with at least one copy: [configured, observed].
    delivered: [u64; 2],
    /// Frames with more than one copy: [configured, observed].
    duplicated: [u64; 2],
}

impl Fates {
    /// A frame the configuration gave `expected` copies, of which `left`
    /// left.
    fn add(&mut self, expected: u64, left: u64) {
        self.frames += 1;
        self.delivered[0] += u64::from(expected > 0);
        self.delivered[1] += u64::from(left > 0);
        self.duplicated[0] += u64::from(expected > 1);
        self.duplicated[1] += u64::from(left > 1);
    }

    fn tests(&self) -> Chi2Report {
        let split = |yes: u64, of: u64| [yes, of - yes];
        let [d_conf, d_obs] = self.delivered;
        let [u_conf, u_obs] = self.duplicated;
        Chi2Report {
            delivery: chi2::homogeneity(split(d_conf, self.frames), split(d_obs, self.frames)),
            duplication: chi2::homogeneity(split(u_conf, d_conf), split(u_obs, d_obs)),
        }
    }
}

impl Verifier {
    pub fn new(cfg: VerifyConfig) -> Verifier {
        Verifier {
            cfg: VerifyConfig {
                max_pending: cfg.max_pending.max(1),
                ..cfg
            },
            held: VecDeque::new(),
            base: 0,
            chains: HashMap::new(),
            now: 0,
            r: VerifyReport {
                schema: SCHEMA,
                in_file: String::new(),
                out_file: String::new(),
                configured: String::new(),
                seed: None,
                window_ns: cfg.window_ns,
                skipped_in: 0,
                in_frames: 0,
                out_frames: 0,
                expected_copies: 0,
                matched: 0,
                lost: 0,
                missing_copies: 0,
                dropped_as_configured: 0,
                extra: 0,
                duplicated: 0,
                unknown: 0,
                early: 0,
                evicted: 0,
                lost_first: Vec::new(),
                early_first: Vec::new(),
                applied: None,
                configured_delay: None,
                error: None,
                table_b1: None,
                ks: None,
                chi2: Chi2Report {
                    delivery: None,
                    duplication: None,
                },
                warnings: Vec::new(),
            },
            applied: SignedHistogram::new(),
            configured: SignedHistogram::new(),
            error: SignedHistogram::new(),
            pairs: Vec::new(),
            pairs_seen: 0,
            rng: XorShift(0x9e37_79b9_7f4a_7c15),
            fates: Fates::default(),
        }
    }

    /// An IN frame (`digest` of [`digest`]); `model` says its copies.
    pub fn ingress(
        &mut self,
        t_ns: u64,
        digest: u64,
        len: u32,
        model: &mut (impl Configuration + ?Sized),
    ) {
        self.ingress_frame(t_ns, digest, len, &[], model)
    }

    /// [`ingress`](Self::ingress) with the frame's first bytes for `model`.
    pub fn ingress_frame(
        &mut self,
        t_ns: u64,
        digest: u64,
        len: u32,
        head: &[u8],
        model: &mut (impl Configuration + ?Sized),
    ) {
        self.advance(t_ns);
        let index = self.r.in_frames;
        self.r.in_frames += 1;
        let mut delays = Vec::new();
        model.decide_frame(index, t_ns, len, head, &mut delays);
        delays.sort_unstable();
        self.r.expected_copies += delays.len() as u64;
        let e = Entry {
            digest,
            t_ns,
            index,
            delays,
            seen: 0,
            extra: 0,
            next_same: None,
        };
        let seq = self.base + self.held.len() as u64;
        let open = e.open();
        self.held.push_back(e);
        match self.chains.get_mut(&digest) {
            Some(c) => {
                let tail = c.tail;
                c.tail = seq;
                if c.open_from.is_none() && open {
                    c.open_from = Some(seq);
                }
                if let Some(t) = self.entry_mut(tail) {
                    t.next_same = Some(seq);
                }
            }
            None => {
                self.chains.insert(
                    digest,
                    Chain {
                        head: seq,
                        tail: seq,
                        open_from: open.then_some(seq),
                    },
                );
            }
        }
        while self.held.len() > self.cfg.max_pending {
            self.r.evicted += 1;
            self.retire_front();
        }
    }

    /// An OUT frame.
    pub fn egress(&mut self, t_ns: u64, digest: u64) {
        self.advance(t_ns);
        self.r.out_frames += 1;
        let Some(chain) = self.chains.get(&digest).copied() else {
            self.r.unknown += 1;
            return;
        };
        // The first open frame of this content, moving the cursor past
        // the frames that closed since.
        let mut cur = chain.open_from;
        while let Some(s) = cur {
            match self.entry(s) {
                Some(e) if e.open() => break,
                Some(e) => cur = e.next_same,
                None => cur = None,
            }
        }
        if let Some(c) = self.chains.get_mut(&digest) {
            c.open_from = cur;
        }
        let Some(seq) = cur else {
            self.r.duplicated += 1;
            if let Some(e) = self.entry_mut(chain.tail) {
                e.extra = e.extra.saturating_add(1);
            }
            return;
        };
        let Some(e) = self.entry_mut(seq) else {
            return;
        };
        let copy = e.seen;
        let configured = e.delays[copy as usize];
        e.seen += 1;
        let (index, t_in) = (e.index, e.t_ns);
        let applied = i128::from(t_ns) - i128::from(t_in);
        let applied = applied.clamp(i128::from(i64::MIN), i128::from(i64::MAX)) as i64;
        let configured_i = i64::try_from(configured).unwrap_or(i64::MAX);
        let error = applied.saturating_sub(configured_i);
        self.r.matched += 1;
        self.applied.record(applied, index);
        self.configured.record(configured_i, index);
        self.error.record(error, index);
        if error < 0 {
            self.r.early += 1;
            if self.r.early_first.len() < EXAMPLES {
                self.r.early_first.push(EarlyCopy {
                    index,
                    copy,
                    error_ns: error,
                });
            }
        }
        self.sample(applied as f64, configured_i as f64);
    }

    /// Ends the input: every held frame is final.
    pub fn finish(mut self) -> VerifyReport {
        while !self.held.is_empty() {
            self.retire_front();
        }
        let r = &mut self.r;
        r.extra = r.duplicated + r.unknown;
        r.chi2 = self.fates.tests();
        r.applied = self.applied.stats();
        r.configured_delay = self.configured.stats();
        r.error = self.error.stats();
        r.table_b1 = r.error.as_ref().map(|e| TableB1 {
            count: e.count,
            avg_us: e.mean_ns / 1e3,
            sigma_us: e.stdev_ns / 1e3,
            min_us: e.min_ns as f64 / 1e3,
            max_us: e.max_ns as f64 / 1e3,
        });
        // Against a constant delay the KS distance says nothing the error
        // does not (every applied delay is a little above it).
        let varies = self.configured.min() != self.configured.max();
        if varies && !self.pairs.is_empty() {
            let (mut a, mut c): (Vec<f64>, Vec<f64>) = self.pairs.iter().copied().unzip();
            r.ks = Some(KsReport {
                samples: a.len() as u64,
                distance: ks_two_sample(&mut a, &mut c),
            });
        }
        if r.evicted > 0 {
            r.warnings.push(format!(
                "{} IN frames were given up before their window ended (more than {} held): \
                 raise --max-pending or lower --window",
                r.evicted, self.cfg.max_pending
            ));
        }
        if r.in_frames > 0 && r.out_frames > 0 && r.matched == 0 {
            r.warnings.push(
                "no OUT frame matches an IN frame: are both captures of the same traffic \
                 (IN the emulator's input, OUT its output), stamped by one host's clock?"
                    .into(),
            );
        }
        self.r
    }

    /// Time moves to `t_ns`; frames whose window has passed are final.
    fn advance(&mut self, t_ns: u64) {
        self.now = self.now.max(t_ns);
        while self
            .held
            .front()
            .is_some_and(|e| self.now.saturating_sub(e.t_ns) > self.cfg.window_ns)
        {
            self.retire_front();
        }
    }

    fn entry(&self, seq: u64) -> Option<&Entry> {
        self.held
            .get(usize::try_from(seq.checked_sub(self.base)?).ok()?)
    }

    fn entry_mut(&mut self, seq: u64) -> Option<&mut Entry> {
        let i = usize::try_from(seq.checked_sub(self.base)?).ok()?;
        self.held.get_mut(i)
    }

    /// The oldest held frame is final: count what became of it.
    fn retire_front(&mut self) {
        let Some(e) = self.held.pop_front() else {
            return;
        };
        let seq = self.base;
        self.base += 1;
        // It heads its chain: frames are held and retired in one order.
        match (self.chains.get_mut(&e.digest), e.next_same) {
            (Some(c), Some(next)) if c.head == seq => {
                c.head = next;
                if c.open_from == Some(seq) {
                    c.open_from = Some(next);
                }
            }
            (Some(c), None) if c.head == seq => {
                self.chains.remove(&e.digest);
            }
            _ => {}
        }
        let expected = e.delays.len() as u64;
        let seen = u64::from(e.seen);
        let left = seen + u64::from(e.extra);
        self.fates.add(expected, left);
        self.r.missing_copies += expected.saturating_sub(seen);
        if seen == 0 && e.extra == 0 {
            if expected == 0 {
                self.r.dropped_as_configured += 1;
            } else {
                self.r.lost += 1;
                if self.r.lost_first.len() < EXAMPLES {
                    self.r.lost_first.push(e.index);
                }
            }
        }
    }

    /// Reservoir sampling of (applied, configured) pairs.
    fn sample(&mut self, applied: f64, configured: f64) {
        self.pairs_seen += 1;
        if self.pairs.len() < self.cfg.ks_samples {
            self.pairs.push((applied, configured));
            return;
        }
        let r = self.rng.next() % self.pairs_seen;
        if let Some(slot) = usize::try_from(r).ok().and_then(|i| self.pairs.get_mut(i)) {
            *slot = (applied, configured);
        }
    }
}

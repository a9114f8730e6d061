//! Mahimahi delivery opportunities as the link's bottleneck (mm-link).
//!
//! The caller reads the trace (`trace::mahimahi::Opportunities`, looping
//! or once) and hands the link the opportunity times in ms from the
//! trace's start, non-decreasing; the link's first arrival is the trace's
//! start. Each opportunity carries [`OPPORTUNITY_BYTES`]: the packet in
//! transit and then the next ones in the queue use it; a packet larger
//! than what is left carries the rest over to the next opportunities;
//! what no packet uses is wasted. When the times run out the link is dead.

/// Bytes one delivery opportunity carries (mm-link's PACKET_SIZE).
pub const OPPORTUNITY_BYTES: u32 = 1500;

/// Delivery opportunities, ms from the trace's start, non-decreasing;
/// `None`: the link is dead from then on.
pub type OpportunitySource = Box<dyn Iterator<Item = u64> + Send>;

/// Told the time (ns, the arrival stamps' clock) of every opportunity as
/// the link uses it up — carrying frames or wasted (idle, link off) — in
/// time order: what mm-link logs as `T # 1500` ([`super::mmlog`]).
pub type OpportunityLog = Box<dyn FnMut(u64) + Send>;

pub(crate) struct Opportunities {
    src: OpportunitySource,
    origin: u64,
    next: Option<u64>,
    log: Option<OpportunityLog>,
}

impl Opportunities {
    pub(crate) fn new(src: OpportunitySource) -> Opportunities {
        Opportunities {
            src,
            origin: 0,
            next: None,
            log: None,
        }
    }

    pub(crate) fn set_log(&mut self, log: Option<OpportunityLog>) {
        self.log = log;
    }

    /// The trace starts at `t0` (ns).
    pub(crate) fn start(&mut self, t0: u64) {
        self.origin = t0;
        self.fetch();
    }

    fn fetch(&mut self) {
        let prev = self.next.unwrap_or(0);
        self.next = self.src.next().map(|ms| {
            // A source that went backwards is taken as "at the same time".
            self.origin
                .saturating_add(ms.saturating_mul(1_000_000))
                .max(prev)
        });
    }

    /// The next opportunity's time (ns); `None`: no more (dead).
    pub(crate) fn peek(&self) -> Option<u64> {
        self.next
    }

    /// Uses up the next opportunity.
    pub(crate) fn take(&mut self) {
        if let (Some(log), Some(t)) = (&mut self.log, self.next) {
            log(t);
        }
        self.fetch();
    }
}

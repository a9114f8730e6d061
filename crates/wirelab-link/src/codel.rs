//! CoDel (RFC 8289), the dequeue side: which head packets to drop.
//!
//! The RFC's pseudocode (its section 5, with the Linux re-entry rule it
//! prints): a packet's sojourn is the time from enqueue to dequeue; once
//! it has stayed at or above TARGET for INTERVAL (and more than one
//! maximum-size packet is queued), CoDel enters the dropping state and
//! drops at `INTERVAL / sqrt(count)` spacing until a sojourn goes below
//! TARGET. `maxpacket` is the largest frame seen (the RFC says: use the
//! MTU; Linux uses the largest packet seen).

/// What CoDel needs of the queue it guards.
pub(crate) trait Fifo {
    /// Enqueue time of the head packet, and its length; `None` if empty.
    fn head(&self) -> Option<(u64, u32)>;
    /// Removes the head (it is dropped or sent by the caller).
    fn pop_head(&mut self);
    /// Bytes queued.
    fn bytes(&self) -> u64;
}

/// What one dequeue does.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Dequeue {
    /// Head packets dropped, in order, before the one dequeued.
    pub(crate) dropped: u32,
    /// A packet was dequeued (it is the queue's head; the caller takes it).
    pub(crate) got: bool,
}

#[derive(Debug, Clone)]
pub(crate) struct Codel {
    target: u64,
    interval: u64,
    first_above: Option<u64>,
    drop_next: u64,
    count: u32,
    lastcount: u32,
    dropping: bool,
}

impl Codel {
    pub(crate) fn new(target: u64, interval: u64) -> Codel {
        Codel {
            target,
            interval,
            first_above: None,
            drop_next: 0,
            count: 0,
            lastcount: 0,
            dropping: false,
        }
    }

    fn control_law(&self, t: u64) -> u64 {
        t.saturating_add((self.interval as f64 / f64::from(self.count.max(1)).sqrt()) as u64)
    }

    /// The RFC's `dodequeue`: looks at the head (without taking it) and
    /// says whether it may be dropped. `None`: the queue is empty.
    fn look(&mut self, q: &impl Fifo, now: u64, maxpacket: u32) -> Option<bool> {
        let Some((enq, len)) = q.head() else {
            self.first_above = None;
            return None;
        };
        let sojourn = now.saturating_sub(enq);
        // Bytes left once the head is gone.
        let after = q.bytes() - u64::from(len);
        if sojourn < self.target || after <= u64::from(maxpacket) {
            self.first_above = None;
            return Some(false);
        }
        match self.first_above {
            None => {
                self.first_above = Some(now.saturating_add(self.interval));
                Some(false)
            }
            Some(t) => Some(now >= t),
        }
    }

    /// The RFC's `dequeue` at `now`: drops head packets (calling
    /// `q.pop_head()` for each, counted in `dropped`) and leaves the packet
    /// to send, if any, at the head with `got` set.
    pub(crate) fn dequeue(&mut self, q: &mut impl Fifo, now: u64, maxpacket: u32) -> Dequeue {
        let mut out = Dequeue::default();
        let Some(ok_to_drop) = self.look(q, now, maxpacket) else {
            return out;
        };
        if self.dropping {
            if !ok_to_drop {
                self.dropping = false;
            }
            // Each turn drops one packet: bounded by the queue.
            while now >= self.drop_next && self.dropping {
                q.pop_head();
                out.dropped += 1;
                self.count = self.count.saturating_add(1);
                match self.look(q, now, maxpacket) {
                    Some(true) => self.drop_next = self.control_law(self.drop_next),
                    Some(false) => self.dropping = false,
                    None => {
                        self.dropping = false;
                        return out;
                    }
                }
            }
        } else if ok_to_drop {
            q.pop_head();
            out.dropped += 1;
            let has_next = self.look(q, now, maxpacket).is_some();
            self.dropping = true;
            // Re-entering soon after the last dropping state: start from the
            // drop rate that controlled the queue then (Linux's rule).
            let delta = self.count.wrapping_sub(self.lastcount);
            self.count = 1;
            let since = i128::from(now) - i128::from(self.drop_next);
            if delta > 1 && since < 16 * i128::from(self.interval) {
                self.count = delta;
            }
            self.drop_next = self.control_law(now);
            self.lastcount = self.count;
            if !has_next {
                return out;
            }
        }
        out.got = true;
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::VecDeque;

    struct Q(VecDeque<(u64, u32)>);

    impl Fifo for Q {
        fn head(&self) -> Option<(u64, u32)> {
            self.0.front().copied()
        }
        fn pop_head(&mut self) {
            self.0.pop_front();
        }
        fn bytes(&self) -> u64 {
            self.0.iter().map(|&(_, l)| u64::from(l)).sum()
        }
    }

    const MS: u64 = 1_000_000;

    #[test]
    fn drops_only_after_an_interval_above_target_then_faster() {
        let mut c = Codel::new(5 * MS, 100 * MS);
        // A standing queue of 100 packets, all enqueued at 0.
        let mut q = Q((0..100).map(|_| (0, 1000)).collect());
        // Below target: nothing.
        assert_eq!(
            c.dequeue(&mut q, 4 * MS, 1000),
            Dequeue {
                dropped: 0,
                got: true
            }
        );
        q.pop_head();
        // Above target: the interval starts.
        assert_eq!(
            c.dequeue(&mut q, 10 * MS, 1000),
            Dequeue {
                dropped: 0,
                got: true
            }
        );
        q.pop_head();
        assert_eq!(c.dequeue(&mut q, 109 * MS, 1000).dropped, 0);
        q.pop_head();
        // An interval later: one drop, then the dropping state.
        assert_eq!(
            c.dequeue(&mut q, 110 * MS, 1000),
            Dequeue {
                dropped: 1,
                got: true
            }
        );
        q.pop_head();
        // Next drop an interval later, then at interval/sqrt(2), ...
        assert_eq!(c.dequeue(&mut q, 209 * MS, 1000).dropped, 0);
        q.pop_head();
        assert_eq!(c.dequeue(&mut q, 210 * MS, 1000).dropped, 1);
        q.pop_head();
        let next = 210 * MS + (100.0 * MS as f64 / 2f64.sqrt()) as u64;
        assert_eq!(c.dequeue(&mut q, next - 1, 1000).dropped, 0);
        q.pop_head();
        assert_eq!(c.dequeue(&mut q, next, 1000).dropped, 1);
    }

    #[test]
    fn one_packet_queued_is_never_dropped() {
        let mut c = Codel::new(5 * MS, 100 * MS);
        for i in 0..50 {
            let mut q = Q(VecDeque::from([(0, 1500)]));
            let d = c.dequeue(&mut q, (i + 1) * 50 * MS, 1500);
            assert_eq!(
                d,
                Dequeue {
                    dropped: 0,
                    got: true
                }
            );
        }
        let mut q = Q(VecDeque::new());
        assert_eq!(c.dequeue(&mut q, 10_000 * MS, 1500), Dequeue::default());
    }
}

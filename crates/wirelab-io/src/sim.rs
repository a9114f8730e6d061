//! A simulated backend for driver tests: a virtual clock with scripted
//! stalls and wake-up latency, a transmit link with scripted costs and
//! errors that records every departure, a receiving socket, and a capture
//! ring with scripted blocks and kernel drops. Deterministic: the same
//! script gives the same run, whatever the machine is doing.

use crate::clock::Clock;
use crate::ring_rx::{BlockSource, FrameBlock, RingStats, RxPacket};
use crate::tx::Transmit;
use crate::udp::{Receive, RecvBatch, RxTimestamp};
use std::collections::VecDeque;
use std::io;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

/// Stalls that recur: the thread loses the CPU for `len_ns` at every
/// `phase_ns + k × period_ns` (a kernel tick, a host timer).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PeriodicStall {
    pub period_ns: u64,
    pub phase_ns: u64,
    pub len_ns: u64,
}

#[derive(Debug, Default)]
struct ClockState {
    now_ns: u64,
    cpu_ns: u64,
    read_cost_ns: u64,
    oversleep_ns: u64,
    periodic: Vec<PeriodicStall>,
    /// One-off stalls, (start, length), in order.
    once: VecDeque<(u64, u64)>,
    sleeps: u64,
}

impl ClockState {
    /// The end of the stall covering `t`, if one does.
    fn stall_end(&self, t: u64) -> Option<u64> {
        let mut end = None;
        for p in &self.periodic {
            if p.period_ns == 0 || t < p.phase_ns {
                continue;
            }
            let start = t - (t - p.phase_ns) % p.period_ns;
            if t < start + p.len_ns {
                end = end.max(Some(start + p.len_ns));
            }
        }
        for &(s, l) in &self.once {
            if s <= t && t < s + l {
                end = end.max(Some(s + l));
            }
        }
        end
    }

    /// Moves to `t` running (CPU time accrues) and then out of any stall covering it.
    fn run_to(&mut self, t: u64) {
        let t = t.max(self.now_ns);
        self.cpu_ns += t - self.now_ns;
        self.now_ns = t;
        while let Some(end) = self.stall_end(self.now_ns) {
            self.now_ns = end;
        }
        while self
            .once
            .front()
            .is_some_and(|&(s, l)| s + l <= self.now_ns)
        {
            self.once.pop_front();
        }
    }

    /// Every stall start in `[from, to)`.
    fn stalls_in(&self, from: u64, to: u64, out: &mut Vec<(u64, u64)>) {
        for p in &self.periodic {
            if p.period_ns == 0 {
                continue;
            }
            let mut s = if from <= p.phase_ns {
                p.phase_ns
            } else {
                from + (p.period_ns - (from - p.phase_ns) % p.period_ns) % p.period_ns
            };
            while s < to {
                out.push((s, s + p.len_ns));
                s += p.period_ns;
            }
        }
        out.extend(
            self.once
                .iter()
                .filter(|&&(s, _)| from <= s && s < to)
                .map(|&(s, l)| (s, s + l)),
        );
        out.sort_unstable();
    }
}

/// A virtual monotonic clock. Reading it costs `read_cost_ns`; a sleep
/// wakes `oversleep_ns` after its target; the thread is off the CPU during
/// scripted stalls (a spin or sleep that would end inside one ends when it
/// does). Clones share one timeline, so a [`SimTx`] can charge its send
/// calls to it.
#[derive(Debug, Clone, Default)]
pub struct SimClock {
    state: Arc<Mutex<ClockState>>,
}

impl SimClock {
    /// Wall-clock time is the monotonic time plus this (2020-01-01).
    pub const WALL_OFFSET_NS: u64 = 1_577_836_800_000_000_000;

    /// Starts at `now_ns`; reads cost 20 ns.
    pub fn new(now_ns: u64) -> SimClock {
        let c = SimClock::default();
        {
            let mut s = c.lock();
            s.now_ns = now_ns;
            s.read_cost_ns = 20;
        }
        c
    }

    fn lock(&self) -> MutexGuard<'_, ClockState> {
        // A test thread that panicked holding the lock has already failed.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Every sleep wakes this much after its target.
    pub fn oversleep(self, ns: u64) -> SimClock {
        self.lock().oversleep_ns = ns;
        self
    }

    /// Adds a recurring stall.
    pub fn periodic_stall(self, stall: PeriodicStall) -> SimClock {
        self.lock().periodic.push(stall);
        self
    }

    /// Adds a one-off stall of `len_ns` at `at_ns`.
    pub fn stall_at(&self, at_ns: u64, len_ns: u64) {
        let mut s = self.lock();
        let i = s.once.partition_point(|&(t, _)| t <= at_ns);
        s.once.insert(i, (at_ns, len_ns));
    }

    /// The current time, without the cost of a read.
    pub fn peek_ns(&self) -> u64 {
        self.lock().now_ns
    }

    /// Time passes running for `ns` (a send call's cost).
    pub fn advance(&self, ns: u64) {
        let mut s = self.lock();
        let t = s.now_ns + ns;
        s.run_to(t);
    }

    /// Sleep calls made.
    pub fn sleeps(&self) -> u64 {
        self.lock().sleeps
    }
}

impl Clock for SimClock {
    fn now_ns(&mut self) -> u64 {
        let mut s = self.lock();
        let t = s.now_ns + s.read_cost_ns;
        s.run_to(t);
        s.now_ns
    }

    fn sleep_until(&mut self, t_ns: u64) {
        let mut s = self.lock();
        s.sleeps += 1;
        let wake = t_ns.max(s.now_ns) + s.oversleep_ns;
        // Asleep: no CPU time, and a stall before the wake-up costs nothing.
        s.now_ns = wake;
        while let Some(end) = s.stall_end(s.now_ns) {
            s.now_ns = end;
        }
    }

    fn spin_until(&mut self, t_ns: u64) -> u64 {
        let mut s = self.lock();
        let t = t_ns.max(s.now_ns + s.read_cost_ns);
        s.run_to(t);
        s.now_ns
    }

    fn thread_cpu_ns(&mut self) -> u64 {
        self.lock().cpu_ns
    }

    fn wall_ns(&mut self) -> u64 {
        SimClock::WALL_OFFSET_NS + self.now_ns()
    }

    fn record_stalls(
        &mut self,
        until_ns: u64,
        threshold_ns: u64,
        max: usize,
        out: &mut Vec<(u64, u64)>,
    ) -> usize {
        out.clear();
        let mut s = self.lock();
        let from = s.now_ns;
        let mut all = Vec::new();
        s.stalls_in(from, until_ns, &mut all);
        all.retain(|&(a, b)| b - a > threshold_ns);
        s.run_to(until_ns);
        let n = all.len();
        all.truncate(max);
        *out = all;
        n
    }
}

/// What a [`SimTx`] does on one call.
#[derive(Debug)]
pub enum SimResult {
    /// Takes the first `n` packets (fewer if fewer were offered).
    Take(usize),
    /// Fails with this OS error number.
    Fail(i32),
}

/// One packet that left a [`SimTx`]: the clock when its send call began,
/// and its bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Departure {
    pub at_ns: u64,
    pub bytes: Vec<u8>,
}

/// A simulated link: every call costs `base_ns + per_packet_ns × n` on the
/// clock; scripted results apply to the next calls in order, after which
/// every call takes everything.
#[derive(Debug)]
pub struct SimTx {
    clock: SimClock,
    base_ns: u64,
    per_packet_ns: u64,
    script: VecDeque<SimResult>,
    /// Every packet that left, in order.
    pub sent: Vec<Departure>,
    /// Calls made, including failed ones.
    pub calls: u64,
}

impl SimTx {
    /// A link charging its calls to `clock`.
    pub fn new(clock: &SimClock, base_ns: u64, per_packet_ns: u64) -> SimTx {
        SimTx {
            clock: clock.clone(),
            base_ns,
            per_packet_ns,
            script: VecDeque::new(),
            sent: Vec::new(),
            calls: 0,
        }
    }

    /// Scripts the next calls' results.
    pub fn script(mut self, results: impl IntoIterator<Item = SimResult>) -> SimTx {
        self.script.extend(results);
        self
    }
}

impl Transmit for SimTx {
    fn transmit(&mut self, packets: &[&[u8]]) -> io::Result<usize> {
        self.calls += 1;
        let at = self.clock.peek_ns();
        let n = match self.script.pop_front() {
            Some(SimResult::Fail(e)) => {
                self.clock.advance(self.base_ns);
                return Err(io::Error::from_raw_os_error(e));
            }
            Some(SimResult::Take(n)) => n.min(packets.len()),
            None => packets.len(),
        };
        self.clock
            .advance(self.base_ns + self.per_packet_ns * n as u64);
        self.sent.extend(packets[..n].iter().map(|p| Departure {
            at_ns: at,
            bytes: p.to_vec(),
        }));
        Ok(n)
    }
}

/// A simulated receiving socket: datagrams arrive at scripted times (on
/// the [`SimClock`]) with kernel software timestamps; a blocking receive
/// waits for the next arrival, up to `timeout_ns`, like a socket with a
/// read timeout; replies are kept.
#[derive(Debug)]
pub struct SimRx {
    clock: SimClock,
    timeout_ns: u64,
    /// Arrivals not yet received: (monotonic time, payload, source).
    arrivals: VecDeque<(u64, Vec<u8>, SocketAddr)>,
    /// Replies sent: (clock, payload, destination).
    pub replies: Vec<(u64, Vec<u8>, SocketAddr)>,
    /// Receive calls, and how many found nothing.
    pub calls: u64,
    pub empty_calls: u64,
}

impl SimRx {
    /// A socket on `clock` whose blocking receives give up after `timeout_ns`.
    pub fn new(clock: &SimClock, timeout_ns: u64) -> SimRx {
        SimRx {
            clock: clock.clone(),
            timeout_ns,
            arrivals: VecDeque::new(),
            replies: Vec::new(),
            calls: 0,
            empty_calls: 0,
        }
    }

    /// A datagram from `src` arrives at `at_ns` (arrivals must be pushed in order).
    pub fn arrive(&mut self, at_ns: u64, data: &[u8], src: SocketAddr) {
        self.arrivals.push_back((at_ns, data.to_vec(), src));
    }
}

impl Receive for SimRx {
    fn receive(&mut self, batch: &mut RecvBatch, wait: bool) -> io::Result<usize> {
        self.calls += 1;
        let mut now = self.clock.peek_ns();
        if wait && self.arrivals.front().is_none_or(|a| a.0 > now) {
            let until = now + self.timeout_ns;
            let next = self.arrivals.front().map_or(until, |a| a.0.min(until));
            let mut c = self.clock.clone();
            c.sleep_until(next);
            now = self.clock.peek_ns();
        }
        let ready = self.arrivals.iter().take_while(|a| a.0 <= now).count();
        if ready == 0 {
            self.empty_calls += 1;
            return Err(io::ErrorKind::WouldBlock.into());
        }
        let mut msgs = self.arrivals.iter().take(ready).map(|(t, d, src)| {
            let ts = RxTimestamp::Software(SimClock::WALL_OFFSET_NS + t);
            (d.as_slice(), ts, *src)
        });
        let n = batch.fill(&mut msgs);
        self.arrivals.drain(..n);
        Ok(n)
    }

    fn reply(&mut self, data: &[u8], to: SocketAddr) -> io::Result<usize> {
        self.replies.push((self.clock.peek_ns(), data.to_vec(), to));
        Ok(data.len())
    }
}

/// A frame of [`SimFrames`]: arrival, bytes, the VLAN tag taken off.
type SimArrival = (u64, Vec<u8>, Option<(u16, u16)>);

/// A simulated receive ring for a forwarder: frames arrive at scripted
/// monotonic times and carry kernel timestamps (wall clock, as a ring's);
/// a frame is visible from its arrival on; waiting advances the clock to
/// the next arrival or the timeout.
#[derive(Debug)]
pub struct SimFrames {
    clock: SimClock,
    /// Not yet released.
    arrivals: VecDeque<SimArrival>,
    /// Waits that ended with nothing there.
    pub empty_waits: u64,
}

impl SimFrames {
    pub fn new(clock: &SimClock) -> SimFrames {
        SimFrames {
            clock: clock.clone(),
            arrivals: VecDeque::new(),
            empty_waits: 0,
        }
    }

    /// A frame arrives at `at_ns` (arrivals must be pushed in order).
    pub fn arrive(&mut self, at_ns: u64, frame: &[u8]) {
        self.arrivals.push_back((at_ns, frame.to_vec(), None));
    }

    /// A frame whose VLAN tag (TCI, TPID) the driver took off arrives.
    pub fn arrive_tagged(&mut self, at_ns: u64, frame: &[u8], vlan: (u16, u16)) {
        self.arrivals.push_back((at_ns, frame.to_vec(), Some(vlan)));
    }

    /// Frames not yet read.
    pub fn pending(&self) -> usize {
        self.arrivals.len()
    }
}

impl crate::ring_frames::FrameSource for SimFrames {
    fn peek(&self) -> Option<crate::ring_frames::RxFrame<'_>> {
        let now = self.clock.peek_ns();
        let (at, data, vlan) = self.arrivals.front().filter(|a| a.0 <= now)?;
        Some(crate::ring_frames::RxFrame {
            data,
            orig_len: data.len() as u32,
            ts_ns: SimClock::WALL_OFFSET_NS + at,
            vlan: *vlan,
            losing: false,
            csum_partial: false,
        })
    }

    fn release(&mut self) {
        if self.peek().is_some() {
            self.arrivals.pop_front();
        }
    }

    fn wait(&mut self, timeout: std::time::Duration) -> io::Result<bool> {
        let now = self.clock.peek_ns();
        let until = now.saturating_add(timeout.as_nanos() as u64);
        let next = self.arrivals.front().map_or(until, |a| a.0.min(until));
        if next > now {
            let mut c = self.clock.clone();
            c.sleep_until(next);
        }
        let ready = self.peek().is_some();
        if !ready {
            self.empty_waits += 1;
        }
        Ok(ready)
    }
}

/// One frame in a [`SimRing`].
#[derive(Debug)]
struct SimFrame {
    ts_ns: u64,
    orig_len: u32,
    data: Vec<u8>,
}

#[derive(Debug)]
struct SimBlockData {
    retire_ns: u64,
    frames: Vec<SimFrame>,
}

/// A simulated TPACKET_V3 receive ring on a [`SimClock`]. The script lays
/// frames into the open block ([`SimRing::frame`]) and retires it at a
/// given time ([`SimRing::retire`]): from then on the driver can read it.
/// Frames are stamped with the wall-clock form of their arrival
/// (`SimClock::WALL_OFFSET_NS + at`), as the kernel stamps with
/// CLOCK_REALTIME, and cut to the snap length keeping their length on the
/// wire. [`SimRing::kernel_drops`] scripts frames the kernel dropped.
/// Counters follow the kernel's: `packets` counts every frame that has
/// arrived by now, dropped ones included. A wait sleeps the clock until the
/// next retirement or the timeout. After the script the ring stays idle.
#[derive(Debug)]
pub struct SimRing {
    clock: SimClock,
    snaplen: u32,
    block_size: usize,
    block_count: usize,
    retire_ms: u32,
    /// Retired blocks not yet handed back, in ring order.
    retired: VecDeque<SimBlockData>,
    open: Vec<SimFrame>,
    /// Frame arrivals and drops as (time, delivered, dropped), for the counters.
    events: Vec<(u64, u64, u64)>,
    last_retire_ns: u64,
    /// Blocks handed back.
    pub released: u64,
    /// Wait calls.
    pub waits: u64,
}

impl SimRing {
    /// An empty ring on `clock` that claims `retire_ms` (what a driver's drain and merge
    /// bounds are derived from); 64 blocks of 1 MiB, snap length 262144.
    pub fn new(clock: &SimClock, retire_ms: u32) -> SimRing {
        SimRing {
            clock: clock.clone(),
            snaplen: 262_144,
            block_size: 1 << 20,
            block_count: 64,
            retire_ms,
            retired: VecDeque::new(),
            open: Vec::new(),
            events: Vec::new(),
            last_retire_ns: 0,
            released: 0,
            waits: 0,
        }
    }

    /// Frames longer than `snaplen` are cut to it (keeping their length on the wire).
    pub fn snaplen(mut self, snaplen: u32) -> SimRing {
        self.snaplen = snaplen;
        self
    }

    /// A frame arrives at `at_ns` (monotonic) into the open block.
    pub fn frame(&mut self, at_ns: u64, data: &[u8]) {
        self.frame_stamped(at_ns, SimClock::WALL_OFFSET_NS + at_ns, data);
    }

    /// A frame arrives at `at_ns` into the open block with the kernel stamp `ts_ns` (wall
    /// clock): stamps taken on several CPUs reach one ring slightly out of order.
    pub fn frame_stamped(&mut self, at_ns: u64, ts_ns: u64, data: &[u8]) {
        let cap = data.len().min(self.snaplen as usize);
        self.open.push(SimFrame {
            ts_ns,
            orig_len: data.len() as u32,
            data: data[..cap].to_vec(),
        });
        self.events.push((at_ns, 1, 0));
    }

    /// The open block (possibly empty: a retire timeout on an idle link) is handed to user
    /// space at `at_ns`; blocks retire in order, so an earlier time counts as the previous
    /// block's.
    pub fn retire(&mut self, at_ns: u64) {
        let retire_ns = at_ns.max(self.last_retire_ns);
        self.last_retire_ns = retire_ns;
        self.retired.push_back(SimBlockData {
            retire_ns,
            frames: std::mem::take(&mut self.open),
        });
    }

    /// The kernel drops `n` frames at `at_ns` (ring full: one queue freeze).
    pub fn kernel_drops(&mut self, at_ns: u64, n: u64) {
        self.events.push((at_ns, 0, n));
    }

    /// Whether every scripted block has been read and handed back.
    pub fn finished(&self) -> bool {
        self.retired.is_empty() && self.open.is_empty()
    }

    fn ready(&self) -> bool {
        self.retired
            .front()
            .is_some_and(|b| b.retire_ns <= self.clock.peek_ns())
    }
}

/// A retired block of a [`SimRing`]; dropping it hands it back.
#[derive(Debug)]
pub struct SimBlock<'a> {
    ring: &'a mut SimRing,
}

impl FrameBlock for SimBlock<'_> {
    type Frames<'b>
        = SimBlockFrames<'b>
    where
        Self: 'b;

    fn packets(&self) -> SimBlockFrames<'_> {
        SimBlockFrames {
            inner: self.ring.retired[0].frames.iter(),
        }
    }
}

impl Drop for SimBlock<'_> {
    fn drop(&mut self) {
        self.ring.retired.pop_front();
        self.ring.released += 1;
    }
}

/// The frames of a [`SimBlock`].
#[derive(Debug)]
pub struct SimBlockFrames<'a> {
    inner: std::slice::Iter<'a, SimFrame>,
}

impl<'a> Iterator for SimBlockFrames<'a> {
    type Item = RxPacket<'a>;

    fn next(&mut self) -> Option<RxPacket<'a>> {
        self.inner.next().map(|f| RxPacket {
            data: &f.data,
            orig_len: f.orig_len,
            ts_ns: f.ts_ns,
            pkttype: 0,
        })
    }
}

impl BlockSource for SimRing {
    type Block<'a> = SimBlock<'a>;

    fn next_block(&mut self) -> Option<SimBlock<'_>> {
        // Not `then_some`: a block built and dropped would be handed back unread.
        if self.ready() {
            Some(SimBlock { ring: self })
        } else {
            None
        }
    }

    fn wait(&mut self, timeout: Duration) -> io::Result<bool> {
        self.waits += 1;
        if self.ready() {
            return Ok(true);
        }
        let until = self
            .clock
            .peek_ns()
            .saturating_add(u64::try_from(timeout.as_nanos()).unwrap_or(u64::MAX));
        let next = self
            .retired
            .front()
            .map_or(until, |b| b.retire_ns.min(until));
        self.clock.sleep_until(next);
        Ok(self.ready())
    }

    fn stats(&mut self) -> io::Result<RingStats> {
        let now = self.clock.peek_ns();
        let mut st = RingStats::default();
        for &(_, delivered, dropped) in self.events.iter().filter(|e| e.0 <= now) {
            st.packets += delivered + dropped;
            st.drops += dropped;
            st.freeze_q_cnt += u64::from(dropped > 0);
        }
        Ok(st)
    }

    fn geometry(&self) -> (usize, usize) {
        (self.block_size, self.block_count)
    }

    fn retire_ms(&self) -> u32 {
        self.retire_ms
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stalls_delay_spins_and_wake_ups_and_are_recorded() {
        let mut c = SimClock::new(0)
            .oversleep(500)
            .periodic_stall(PeriodicStall {
                period_ns: 4_000_000,
                phase_ns: 1_000_000,
                len_ns: 30_000,
            });
        assert_eq!(c.spin_until(999_000), 999_000);
        // A spin ending inside a stall ends when the stall does.
        assert_eq!(c.spin_until(1_010_000), 1_030_000);
        // A sleep wakes late by the oversleep, or at the end of a stall.
        c.sleep_until(2_000_000);
        assert_eq!(c.now_ns(), 2_000_520);
        c.sleep_until(4_999_600);
        assert_eq!(c.peek_ns(), 5_030_000);
        let mut out = vec![];
        // At 9, 13 and 17 ms; two kept.
        let n = c.record_stalls(20_000_000, 2_000, 2, &mut out);
        assert_eq!(n, 3);
        assert_eq!(out, [(9_000_000, 9_030_000), (13_000_000, 13_030_000)]);
        assert_eq!(c.peek_ns(), 20_000_000);
    }

    #[test]
    fn a_simulated_socket_delivers_arrivals_in_batches_and_times_out() {
        let c = SimClock::new(0);
        let src: SocketAddr = "192.0.2.1:5000".parse().unwrap();
        let mut rx = SimRx::new(&c, 50_000_000);
        for k in 0..5u8 {
            rx.arrive(1_000, &[k; 3], src);
        }
        rx.arrive(10_000_000, b"late", src);
        let mut b = RecvBatch::new(4, 2);
        assert!(rx.receive(&mut b, false).is_err(), "nothing yet");
        assert_eq!(rx.receive(&mut b, true).unwrap(), 4);
        assert_eq!(c.peek_ns(), 1_000, "woke at the first arrival");
        let (d, m) = b.get(0);
        assert_eq!(
            (d, m.truncated, m.ts),
            (
                &[0u8, 0][..],
                true,
                RxTimestamp::Software(SimClock::WALL_OFFSET_NS + 1_000)
            )
        );
        assert_eq!(b.source(3), Some(src));
        assert_eq!(rx.receive(&mut b, true).unwrap(), 1);
        assert_eq!(rx.receive(&mut b, true).unwrap(), 1);
        assert_eq!(c.peek_ns(), 10_000_000);
        assert!(rx.receive(&mut b, true).is_err());
        assert_eq!(c.peek_ns(), 60_000_000, "a blocking call times out");
        rx.reply(b"r", src).unwrap();
        assert_eq!(rx.replies.len(), 1);
    }

    #[test]
    fn cpu_time_excludes_sleeps() {
        let mut c = SimClock::new(0);
        c.spin_until(1_000);
        c.sleep_until(10_000);
        c.spin_until(11_000);
        assert_eq!(c.thread_cpu_ns(), 2_000);
        assert_eq!(c.sleeps(), 1);
    }

    #[test]
    fn a_simulated_ring_retires_blocks_on_time_and_counts_like_the_kernel() {
        let c = SimClock::new(0);
        let mut ring = SimRing::new(&c, 10).snaplen(4);
        ring.frame(1_000, b"abcdef");
        ring.frame(2_000, b"xy");
        ring.retire(5_000);
        ring.kernel_drops(6_000, 3);
        ring.frame(7_000, b"z");
        ring.retire(4_000); // earlier than the previous block: retires with it
        ring.frame(20_000_000, b"late");
        ring.retire(30_000_000);
        assert!(ring.next_block().is_none(), "nothing retired yet");
        assert_eq!(ring.stats().unwrap(), RingStats::default());
        // A wait sleeps until the next retirement.
        assert!(ring.wait(Duration::from_millis(1)).unwrap());
        assert_eq!(c.peek_ns(), 5_000);
        {
            let b = ring.next_block().unwrap();
            let v: Vec<_> = b
                .packets()
                .map(|p| (p.ts_ns - SimClock::WALL_OFFSET_NS, p.orig_len, p.data))
                .collect();
            assert_eq!(v, [(1_000, 6, &b"abcd"[..]), (2_000, 2, &b"xy"[..])]);
        }
        assert_eq!(ring.released, 1);
        // The second block retired at 5 µs too, but its frame and the drops arrive later:
        // the counters show only what has arrived by now.
        assert_eq!(ring.stats().unwrap().packets, 2);
        assert_eq!(ring.next_block().unwrap().packets().count(), 1);
        // ... or up to the timeout.
        assert!(!ring.wait(Duration::from_millis(1)).unwrap());
        assert_eq!(c.peek_ns(), 1_005_000);
        let st = ring.stats().unwrap();
        assert_eq!((st.packets, st.drops, st.freeze_q_cnt), (6, 3, 1));
        assert!(ring.wait(Duration::from_secs(1)).unwrap());
        assert_eq!(c.peek_ns(), 30_000_000);
        drop(ring.next_block());
        assert!(ring.finished());
        assert_eq!((ring.released, ring.waits), (3, 3));
        assert_eq!(ring.stats().unwrap().packets, 7);
    }

    #[test]
    fn the_link_charges_the_clock_and_follows_its_script() {
        let c = SimClock::new(100);
        let mut tx =
            SimTx::new(&c, 1_000, 10).script([SimResult::Fail(libc::ENOBUFS), SimResult::Take(1)]);
        let p: [&[u8]; 2] = [b"a", b"b"];
        assert!(crate::tx::is_transient(&tx.transmit(&p).unwrap_err()));
        assert_eq!(tx.transmit(&p).unwrap(), 1);
        assert_eq!(tx.transmit(&p[1..]).unwrap(), 1);
        assert_eq!(tx.calls, 3);
        assert_eq!(tx.sent.len(), 2);
        assert_eq!(tx.sent[0].at_ns, 1_100);
        assert_eq!(tx.sent[1].bytes, b"b");
        assert_eq!(c.peek_ns(), 100 + 1_000 + 1_010 + 1_010);
    }
}

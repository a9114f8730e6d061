//! A capture thread: its ring read in place into its sink (its own file or
//! the merge writer), the wait between cycles, the drain after a stop.

use super::*;

/// Where a capture thread's packets go: its own file, or the merge writer.
pub(super) enum Sink {
    File(Box<Output>),
    Merge(MergeTx),
}

impl Sink {
    #[inline]
    fn write(&mut self, ts_ns: u64, orig_len: u32, data: &[u8]) -> io::Result<()> {
        match self {
            Sink::File(o) => o.write(ts_ns, orig_len, data),
            Sink::Merge(m) => m.write(ts_ns, orig_len, data),
        }
    }

    fn tick(
        &mut self,
        clock: &mut impl Clock,
        scan_start: u64,
        counters: Option<&StatsCounters>,
    ) -> io::Result<()> {
        match self {
            Sink::File(o) => o.tick(clock.wall_ns(), counters),
            Sink::Merge(m) => m.end_cycle(scan_start, counters.copied()),
        }
    }
}

/// The interface's drops since the start (for the files' statistics blocks); the sysfs
/// files are kept open and read every 100 ms.
pub(super) struct IfaceDrops {
    pub(super) ifname: String,
    pub(super) before: IfCounters,
    pub(super) reader: Option<IfCountersReader>,
}

impl IfaceDrops {
    fn since_start(&mut self) -> Option<u64> {
        if self.reader.is_none() {
            self.reader = IfCountersReader::open(&self.ifname).ok();
        }
        let after = self.reader.as_ref()?.read().ok()?;
        let d = self.before.delta(&after);
        Some(d.rx_dropped + d.rx_missed_errors)
    }
}

/// A capture thread: pinned when asked, its CPU time measured around the worker.
pub(super) fn run_thread<R: BlockSource, C: Clock>(
    w: Worker<R, C>,
    cpu: Option<usize>,
) -> Result<ThreadReport, CaptureError> {
    if let Some(c) = cpu {
        wirelab_io::rt::pin_to_cpu(c).map_err(|e| io::Error::other(e.to_string()))?;
    }
    let cpu0 = cpu_time(CpuScope::Thread)?;
    let mut r = w.run()?;
    let cpu = cpu0.delta(&cpu_time(CpuScope::Thread)?);
    r.cpu_user_ns = cpu.user_ns;
    r.cpu_system_ns = cpu.system_ns;
    Ok(r)
}

pub(super) struct Worker<R, C> {
    pub(super) idx: usize,
    pub(super) ring: R,
    pub(super) clock: C,
    pub(super) sink: Sink,
    pub(super) live: Arc<Live>,
    pub(super) stop: StopFlag,
    pub(super) stop_at: Arc<AtomicU64>,
    /// `--duration` end on the monotonic clock.
    pub(super) deadline: Option<u64>,
    pub(super) wait: WaitPolicy,
    pub(super) poll_period_ns: u64,
    pub(super) count: Option<u64>,
    pub(super) drain_ns: u64,
    /// `None`: no interface counters (a simulated ring).
    pub(super) iface: Option<IfaceDrops>,
}

/// A capture thread's counts so far.
#[derive(Default)]
struct Tally {
    packets: u64,
    bytes: u64,
    blocks: u64,
    wakeups: u64,
    poll_cycles: u64,
    /// Packets stamped after the stop time, not written.
    after_stop: u64,
}

/// What one scan of the ring wrote.
#[derive(Default)]
struct Scan {
    packets: u64,
    bytes: u64,
    blocks: u64,
    /// `--count` reached.
    done: bool,
}

impl<R: BlockSource, C: Clock> Worker<R, C> {
    fn counters(&mut self, packets: u64) -> io::Result<StatsCounters> {
        let st = self.ring.stats()?;
        Ok(StatsCounters {
            start_ns: None,
            end_ns: None,
            ifrecv: Some(st.packets),
            ifdrop: Some(st.drops),
            filter_accept: Some(st.packets),
            osdrop: self.iface.as_mut().and_then(IfaceDrops::since_start),
            usrdeliv: Some(packets),
        })
    }

    /// The capture loop: scan the ring, tick the output, then wait (block or
    /// poll, as the forecaster says) or, after a stop, drain; ends at
    /// `--count`, after the drain, or at an error.
    pub(super) fn run(mut self) -> Result<ThreadReport, CaptureError> {
        let mut latency = DeliveryLatency::new();
        let period = self.poll_period_ns;
        // The kernel's notification unit is the retired block, so blocks are the events
        // whose period is forecast: poll once blocks retire faster than the poll period.
        let params = ForecastParams {
            n1: 2,
            n2: 8,
            ..ForecastParams::for_poll_period(period)
        };
        let mut fc = Forecaster::new(params, self.clock.now_ns());
        let mut mode = match self.wait {
            WaitPolicy::Poll => WaitMode::Poll,
            _ => WaitMode::Block,
        };
        let mut next_poll = self.clock.now_ns() + period;
        let mut next_stats = self.clock.now_ns() + 100_000_000;
        let mut drain_until: Option<u64> = None;
        let mut t = Tally::default();
        let mut stop_real = u64::MAX;
        let err = loop {
            // Read before the ring is found empty: the merge watermark of an idle thread.
            let scan_start = self.clock.wall_ns();
            let scan = match self.scan(stop_real, &mut t.after_stop, &mut latency) {
                Ok(s) => s,
                Err(e) => break Some(e),
            };
            self.count_scan(&mut t, &scan);
            if scan.done {
                self.stop.stop();
                break None;
            }
            let now = self.clock.now_ns();
            if let Err(e) = self.tick(now, scan_start, t.packets, &mut next_stats) {
                break Some(e);
            }
            self.check_deadline(now);
            if self.stop.is_stopped() {
                if self.drain_over(now, &mut drain_until, &mut stop_real) {
                    break None;
                }
                let _ = self.ring.wait(Duration::from_millis(5));
                continue;
            }
            if mode == WaitMode::Poll {
                t.poll_cycles += 1;
            }
            if self.wait == WaitPolicy::Adaptive {
                mode = self.choose_mode(&mut fc, now, scan.blocks);
            }
            if let Err(e) = self.wait_next(mode, now, &mut next_poll) {
                break Some(e);
            }
            t.wakeups += 1;
            self.live.wakeups.fetch_add(1, Ordering::Relaxed);
        };
        self.finish(err, t, fc.switches(), latency)
    }

    /// Writes every packet of every retired block, each block handed back
    /// once read; packets stamped after `stop_real` are only counted. Stops
    /// at `--count` (across all threads) or a write error.
    #[inline]
    fn scan(
        &mut self,
        stop_real: u64,
        after_stop: &mut u64,
        latency: &mut DeliveryLatency,
    ) -> Result<Scan, CaptureError> {
        let mut s = Scan::default();
        while let Some(block) = self.ring.next_block() {
            // One clock read per block, not per packet.
            let now_real = self.clock.wall_ns();
            let mut n_in_block = 0u32;
            for p in block.packets() {
                if p.ts_ns > stop_real {
                    *after_stop += 1;
                    continue;
                }
                let mut last = false;
                if let Some(c) = self.count {
                    let k = self.live.taken.fetch_add(1, Ordering::Relaxed);
                    if k >= c {
                        s.done = true;
                        break;
                    }
                    last = k + 1 == c;
                }
                self.sink.write(p.ts_ns, p.orig_len, p.data)?;
                if DeliveryLatency::sampled(n_in_block) {
                    latency.record(p.ts_ns, now_real);
                }
                n_in_block += 1;
                s.packets += 1;
                s.bytes += p.data.len() as u64;
                if last {
                    s.done = true;
                    break;
                }
            }
            s.blocks += 1;
            drop(block);
            if s.done {
                break;
            }
        }
        Ok(s)
    }

    /// Adds a scan to the thread's counts and the live ones.
    #[inline]
    fn count_scan(&self, t: &mut Tally, s: &Scan) {
        t.packets += s.packets;
        t.bytes += s.bytes;
        t.blocks += s.blocks;
        if s.packets > 0 {
            self.live.packets.fetch_add(s.packets, Ordering::Relaxed);
            self.live.bytes.fetch_add(s.bytes, Ordering::Relaxed);
        }
    }

    /// Ends the output's cycle: every 100 ms with the ring's counters (also
    /// the live ring drops, from thread 0), else without.
    fn tick(
        &mut self,
        now: u64,
        scan_start: u64,
        packets: u64,
        next_stats: &mut u64,
    ) -> Result<(), CaptureError> {
        if now < *next_stats {
            self.sink.tick(&mut self.clock, scan_start, None)?;
            return Ok(());
        }
        *next_stats = now + 100_000_000;
        let c = self.counters(packets)?;
        if self.idx == 0 {
            self.live
                .ring_drops
                .store(c.ifdrop.unwrap_or(0), Ordering::Relaxed);
        }
        self.sink.tick(&mut self.clock, scan_start, Some(&c))?;
        Ok(())
    }

    /// At `--duration`'s end, stops every thread (once).
    fn check_deadline(&self, now: u64) {
        if let Some(d) = self.deadline {
            if now >= d && !self.stop.is_stopped() {
                self.live.duration_hit.store(true, Ordering::Relaxed);
                self.stop.stop();
            }
        }
    }

    /// After a stop: the first call fixes the stop time (the first thread to
    /// see the stop fixes it for all) and the drain's end; true once the
    /// drain is over.
    fn drain_over(&mut self, now: u64, drain_until: &mut Option<u64>, stop_real: &mut u64) -> bool {
        match *drain_until {
            None => {
                let _ = self.stop_at.compare_exchange(
                    0,
                    self.clock.wall_ns(),
                    Ordering::Relaxed,
                    Ordering::Relaxed,
                );
                *stop_real = self.stop_at.load(Ordering::Relaxed);
                *drain_until = Some(now + self.drain_ns);
                false
            }
            Some(t) => now >= t,
        }
    }

    /// The adaptive wait's next mode, from the blocks this cycle retired
    /// (shown live for thread 0).
    fn choose_mode(&self, fc: &mut Forecaster, now: u64, blocks: u64) -> WaitMode {
        let mode = fc.on_cycle(now, blocks);
        if self.idx == 0 {
            self.live
                .mode
                .store((mode == WaitMode::Poll) as u8, Ordering::Relaxed);
            self.live.switches.store(fc.switches(), Ordering::Relaxed);
        }
        mode
    }

    /// Waits for the next cycle: in `ppoll` until a block retires (bounded
    /// by the deadline), or until the next point of the poll grid.
    fn wait_next(
        &mut self,
        mode: WaitMode,
        now: u64,
        next_poll: &mut u64,
    ) -> Result<(), CaptureError> {
        let period = self.poll_period_ns;
        match mode {
            WaitMode::Block => {
                let limit = capture::block_wait_ns(now, self.deadline);
                self.ring.wait(Duration::from_nanos(limit))?;
                *next_poll = self.clock.now_ns() + period;
            }
            WaitMode::Poll => {
                *next_poll = capture::next_poll_ns(*next_poll, now, period);
                self.clock.sleep_until(*next_poll);
            }
        }
        Ok(())
    }

    /// Closes the output with the final counters and makes the report; the
    /// loop's error, if any, wins. A reader that went away (`-w - | head`)
    /// ends the capture like a signal.
    fn finish(
        mut self,
        mut err: Option<CaptureError>,
        t: Tally,
        mode_switches: u64,
        latency: DeliveryLatency,
    ) -> Result<ThreadReport, CaptureError> {
        let broken_pipe =
            matches!(&err, Some(CaptureError::Io(e)) if e.kind() == io::ErrorKind::BrokenPipe);
        if broken_pipe {
            self.stop.stop();
            err = None;
        }
        let counters = self.counters(t.packets)?;
        let end = self.clock.wall_ns();
        let (mut pool_waits, mut pool_batches) = (0, 0);
        let files = match self.sink {
            Sink::File(o) => o.finish(end, &counters),
            Sink::Merge(m) => {
                pool_waits = m.pool_waits;
                pool_batches = m.allocated() as u64;
                m.finish(counters).map(|()| Vec::new())
            }
        };
        if let Some(e) = err {
            return Err(e);
        }
        let files = match files {
            Err(e) if broken_pipe && e.kind() == io::ErrorKind::BrokenPipe => Vec::new(),
            f => f?,
        };
        let st = self.ring.stats()?;
        Ok(ThreadReport {
            thread: self.idx,
            packets: t.packets,
            bytes: t.bytes,
            ring_packets: st.packets,
            ring_drops: st.drops,
            ring_freeze_q_cnt: st.freeze_q_cnt,
            blocks: t.blocks,
            wakeups: t.wakeups,
            poll_cycles: t.poll_cycles,
            mode_switches,
            // Measured around the worker by `run_thread`.
            cpu_user_ns: 0,
            cpu_system_ns: 0,
            files,
            after_stop: t.after_stop,
            pool_waits,
            pool_batches,
            latency: Some(latency),
        })
    }
}

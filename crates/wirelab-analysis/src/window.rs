//! Throughput and packet rate over fixed time windows, and the frame-size
//! model used for L2 and wire bit rates.
//!
//! Windows are aligned to multiples of `window_ns` since the Unix epoch (so
//! windows of different flows line up) and created only as time advances.
//! Memory stays bounded on hostile timestamps: a gap of more than
//! [`MAX_GAP_FILL`] empty windows is not filled (the vector is then sparse),
//! at most [`MAX_WINDOWS`] windows exist, and a packet whose window cannot be
//! found or created (time went backwards past a gap, or the cap is reached)
//! is counted in `unwindowed`. Rates divide by the full window length, so a
//! partly covered first or last window shows a lower rate.

use serde::Serialize;
use wirelab_wire::ethernet::Framing;

/// Most windows kept per flow.
pub const MAX_WINDOWS: usize = 1 << 20;
/// Longest run of empty windows filled in between two packets.
pub const MAX_GAP_FILL: u64 = 10_000;

/// How UDP payload bytes map to L2 frame and wire bytes: the headers in
/// front of the payload, then the Ethernet framing of
/// [`wirelab_wire::ethernet`] (the model replay counts with too).
///
/// L2 bytes = `max(payload + l2_overhead_bytes, min_l2_frame_bytes)`; the
/// default overhead 42 = Ethernet header 14 + IPv4 20 + UDP 8 (use 62 for
/// IPv6), the minimum frame 60 (64 with FCS). Wire bytes add
/// `wire_extra_bytes` = preamble and SFD 8 + FCS 4 + inter-frame gap 12 = 24.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct RateModel {
    pub l2_overhead_bytes: u32,
    pub min_l2_frame_bytes: u32,
    pub wire_extra_bytes: u32,
}

impl Default for RateModel {
    fn default() -> Self {
        RateModel {
            l2_overhead_bytes: 42,
            min_l2_frame_bytes: Framing::ETHERNET.min_frame_bytes,
            wire_extra_bytes: Framing::ETHERNET.wire_extra_bytes,
        }
    }
}

impl RateModel {
    /// The framing part of the model.
    pub fn framing(&self) -> Framing {
        Framing {
            min_frame_bytes: self.min_l2_frame_bytes,
            wire_extra_bytes: self.wire_extra_bytes,
        }
    }
    /// L2 frame bytes (without FCS) for a UDP payload of `payload` bytes.
    pub fn l2_bytes(&self, payload: u32) -> u64 {
        self.framing()
            .frame_bytes(u64::from(payload) + u64::from(self.l2_overhead_bytes))
    }
    /// Bytes a frame occupies on the wire, incl. preamble, FCS and gap.
    pub fn wire_bytes(&self, payload: u32) -> u64 {
        self.framing()
            .wire_bytes(u64::from(payload) + u64::from(self.l2_overhead_bytes))
    }
}

#[derive(Debug, Clone, Copy)]
struct Win {
    start_ns: u64,
    packets: u64,
    bytes: u64,
    l2_bytes: u64,
}

impl Win {
    fn empty(start_ns: u64) -> Win {
        Win {
            start_ns,
            packets: 0,
            bytes: 0,
            l2_bytes: 0,
        }
    }
    fn add(&mut self, payload: u32, l2: u64) {
        self.packets = self.packets.saturating_add(1);
        self.bytes = self.bytes.saturating_add(payload as u64);
        self.l2_bytes = self.l2_bytes.saturating_add(l2);
    }
}

/// Streaming windowed throughput; see the module docs.
#[derive(Debug, Clone)]
pub struct Windows {
    window_ns: u64,
    model: RateModel,
    wins: Vec<Win>,
    unwindowed: u64,
}

impl Windows {
    /// `window_ns` of 0 is treated as 1 s.
    pub fn new(window_ns: u64, model: RateModel) -> Self {
        Windows {
            window_ns: if window_ns == 0 {
                1_000_000_000
            } else {
                window_ns
            },
            model,
            wins: Vec::new(),
            unwindowed: 0,
        }
    }

    pub fn window_ns(&self) -> u64 {
        self.window_ns
    }

    /// Adds a packet received at `t_ns` with `payload` UDP payload bytes.
    pub fn add(&mut self, t_ns: u64, payload: u32) {
        let w = self.window_ns;
        let start = t_ns - t_ns % w;
        let l2 = self.model.l2_bytes(payload);
        let last_start = match self.wins.last_mut() {
            Some(last) if last.start_ns == start => {
                last.add(payload, l2);
                return;
            }
            Some(last) => last.start_ns,
            None => {
                let mut win = Win::empty(start);
                win.add(payload, l2);
                self.wins.push(win);
                return;
            }
        };
        if start > last_start {
            let gap = (start - last_start) / w - 1;
            if gap <= MAX_GAP_FILL {
                for k in 1..=gap {
                    if self.wins.len() >= MAX_WINDOWS {
                        break;
                    }
                    self.wins.push(Win::empty(last_start + k * w));
                }
            }
            if self.wins.len() >= MAX_WINDOWS {
                self.unwindowed = self.unwindowed.saturating_add(1);
                return;
            }
            let mut win = Win::empty(start);
            win.add(payload, l2);
            self.wins.push(win);
        } else {
            match self.wins.binary_search_by_key(&start, |x| x.start_ns) {
                Ok(i) => {
                    if let Some(x) = self.wins.get_mut(i) {
                        x.add(payload, l2);
                    }
                }
                Err(_) => self.unwindowed = self.unwindowed.saturating_add(1),
            }
        }
    }

    /// Packets that fit no window.
    pub fn unwindowed(&self) -> u64 {
        self.unwindowed
    }

    pub fn report(&self) -> Vec<WindowReport> {
        let secs = self.window_ns as f64 / 1e9;
        let extra = self.model.wire_extra_bytes as f64;
        self.wins
            .iter()
            .map(|x| WindowReport {
                t_start_ns: x.start_ns,
                packets: x.packets,
                bytes: x.bytes,
                rate_pps: x.packets as f64 / secs,
                payload_bps: x.bytes as f64 * 8.0 / secs,
                l2_bps: x.l2_bytes as f64 * 8.0 / secs,
                wire_bps: (x.l2_bytes as f64 + extra * x.packets as f64) * 8.0 / secs,
            })
            .collect()
    }
}

/// One throughput window (JSON `{t_start_ns, packets, bytes, rate_pps,
/// payload_bps, l2_bps, wire_bps}`); `t_start_ns` is Unix-epoch ns aligned
/// to the window length, `bytes` are UDP payload bytes.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct WindowReport {
    pub t_start_ns: u64,
    pub packets: u64,
    pub bytes: u64,
    pub rate_pps: f64,
    pub payload_bps: f64,
    pub l2_bps: f64,
    pub wire_bps: f64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frame_model() {
        let m = RateModel::default();
        assert_eq!(m.l2_bytes(1000), 1042);
        assert_eq!(m.wire_bytes(1000), 1066);
        assert_eq!(m.l2_bytes(10), 60);
        assert_eq!(m.wire_bytes(10), 84);
        // The same framing as replay's wire-rate model.
        assert_eq!(m.wire_bytes(10), wirelab_wire::ethernet::wire_bytes(52));
        assert_eq!(m.wire_bytes(1000), wirelab_wire::ethernet::wire_bytes(1042));
    }

    #[test]
    fn windows_of_100ms() {
        let mut w = Windows::new(100_000_000, RateModel::default());
        // 10 packets of 100 B in [1.0 s, 1.1 s), 5 in [1.1, 1.2), none in
        // [1.2, 1.3), 1 in [1.3, 1.4).
        for i in 0..10u64 {
            w.add(1_000_000_000 + i * 10_000_000, 100);
        }
        for i in 0..5u64 {
            w.add(1_100_000_000 + i * 20_000_000, 100);
        }
        w.add(1_350_000_000, 100);
        // Back in time to an existing window, and before all windows.
        w.add(1_150_000_000, 100);
        w.add(5, 100);
        let r = w.report();
        let p: Vec<(u64, u64)> = r.iter().map(|x| (x.t_start_ns, x.packets)).collect();
        assert_eq!(
            p,
            vec![
                (1_000_000_000, 10),
                (1_100_000_000, 6),
                (1_200_000_000, 0),
                (1_300_000_000, 1)
            ]
        );
        assert_eq!(w.unwindowed(), 1);
        assert!((r[0].rate_pps - 100.0).abs() < 1e-9);
        assert!((r[0].payload_bps - 8000.0 * 10.0).abs() < 1e-6);
        assert!((r[0].l2_bps - 142.0 * 8.0 * 100.0).abs() < 1e-6);
        assert!((r[0].wire_bps - 166.0 * 8.0 * 100.0).abs() < 1e-6);
    }

    #[test]
    fn hostile_times_stay_bounded() {
        let mut w = Windows::new(1, RateModel::default());
        for t in [0, u64::MAX, 1, u64::MAX / 2, u64::MAX - 1] {
            w.add(t, 0);
        }
        assert!(w.report().len() <= 3);
        let mut w = Windows::new(0, RateModel::default());
        w.add(u64::MAX, u32::MAX);
        assert_eq!(w.report()[0].bytes, u32::MAX as u64);
    }
}

//! The sender's per-packet steps: each probe built in its batch slot,
//! stamped at the send call, its headers filled, and the batch handed to the
//! socket. No allocation per packet: the slots are made before the start
//! and only grow for a probe larger than any before it.

use super::{FlowConfig, Padding, Values, MAX_BATCH, MAX_PAYLOAD, PADDING_SEED, PROBE_BUF_START};
use crate::pace::{send_batch, Delivery, SEND_RETRIES};
use crate::ProbeFormat;
use rand::{RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::io;
use wirelab_io::Transmit;
use wirelab_wire::luna::{self, LunaProbe, LUNA_ECHO, LUNA_LEN};
use wirelab_wire::probe::{self, ProbeFlags, ProbeRepr, ECHO_LEN, HEADER_LEN};
use wirelab_wire::udp4::Udp4Frame;

/// How a flow's probes look: layout, flags, the size bounds and padding.
pub(super) struct ProbeMaker {
    pub luna: bool,
    echo: bool,
    flow: u32,
    warmup: u64,
    /// ECHO_REQUEST when echo is on; WARMUP is added per probe.
    pub base_flags: ProbeFlags,
    /// The smallest probe the layout allows (with echo: room for the times).
    pub min_size: usize,
    /// The header's length: padding follows it.
    hdr: usize,
    random: bool,
    rng: ChaCha8Rng,
}

impl ProbeMaker {
    pub fn new(cfg: &FlowConfig) -> Self {
        let luna = cfg.format == ProbeFormat::Luna;
        let base_flags = if cfg.echo {
            ProbeFlags::empty().with(ProbeFlags::ECHO_REQUEST)
        } else {
            ProbeFlags::empty()
        };
        ProbeMaker {
            luna,
            echo: cfg.echo,
            flow: cfg.flow,
            warmup: cfg.warmup,
            base_flags,
            min_size: match (luna, cfg.echo) {
                (true, _) => LUNA_LEN,
                (false, true) => ECHO_LEN,
                (false, false) => HEADER_LEN,
            },
            hdr: if luna { LUNA_LEN } else { HEADER_LEN },
            random: cfg.padding == Padding::Random,
            rng: ChaCha8Rng::seed_from_u64(cfg.seed ^ PADDING_SEED),
        }
    }

    /// The payload length of a probe asked to be `size` bytes: rounded, and
    /// held between the layout's minimum and the largest UDP payload.
    #[inline]
    pub fn len(&self, size: f64) -> usize {
        (size.max(0.0).round() as usize).clamp(self.min_size, MAX_PAYLOAD)
    }

    /// The flags probe `seq` carries: WARMUP while within the warm-up count.
    #[inline]
    pub fn flags(&self, seq: u64) -> ProbeFlags {
        if seq < self.warmup {
            self.base_flags.with(ProbeFlags::WARMUP)
        } else {
            self.base_flags
        }
    }

    /// Writes probe `seq`'s header (tx time 0: stamped at the send call)
    /// and, with random padding, fresh bytes up to `len`.
    #[inline]
    fn emit(&mut self, b: &mut [u8], seq: u64, len: usize) {
        if self.luna {
            let l = LunaProbe {
                seq: seq as u32,
                tx_ns: 0,
                flags: if self.echo { LUNA_ECHO } else { 0 },
            };
            l.emit(b);
        } else {
            let p = ProbeRepr {
                flags: self.flags(seq),
                flow: self.flow,
                seq,
                tx_ns: 0,
                echo: None,
            };
            p.emit(b);
        }
        if self.random && len > self.hdr {
            self.rng.fill_bytes(&mut b[self.hdr..len]);
        }
    }
}

/// One buffer per batch slot: the headers of `frame` (if any), then the
/// probe. Sized before the start for probes up to PROBE_BUF_START bytes; a
/// larger probe grows its slot to the next power of two (a few times at
/// most), so a flow's buffers follow its sizes instead of taking
/// --batch × 64 KiB each.
pub(super) struct Slots<'f> {
    bufs: Vec<Vec<u8>>,
    /// The probe's length in each slot filled by the last [`Slots::build`].
    pub lens: Vec<usize>,
    frame: Option<&'f Udp4Frame>,
    /// Length of `frame`'s headers in front of each probe.
    hl: usize,
    /// The constant padding byte (0 with random padding).
    fill: u8,
    /// IP identification of the packets built here, one per packet.
    ident: u16,
}

impl<'f> Slots<'f> {
    pub fn new(cfg: &FlowConfig, frame: Option<&'f Udp4Frame>, max_batch: usize) -> Self {
        let fill = match cfg.padding {
            Padding::Const(b) => b,
            Padding::Random => 0,
        };
        let hl = frame.map_or(0, Udp4Frame::prefix_len);
        Slots {
            bufs: (0..max_batch)
                .map(|_| vec![fill; hl + PROBE_BUF_START])
                .collect(),
            lens: vec![0; max_batch],
            frame,
            hl,
            fill,
            ident: 0,
        }
    }

    /// Builds up to `count` probes from `seq` on, one size from `sizes`
    /// each: how many were built, and whether `sizes` ran out first.
    #[inline]
    pub fn build(
        &mut self,
        maker: &mut ProbeMaker,
        sizes: &mut dyn Values,
        seq: u64,
        count: usize,
    ) -> (usize, bool) {
        for i in 0..count {
            let Some(size) = sizes.next_value() else {
                return (i, true);
            };
            let len = maker.len(size);
            let b = &mut self.bufs[i];
            if b.len() < self.hl + len {
                b.resize(
                    self.hl + len.next_power_of_two().min(MAX_PAYLOAD),
                    self.fill,
                );
            }
            maker.emit(&mut b[self.hl..], seq + i as u64, len);
            self.lens[i] = len;
        }
        (count, false)
    }

    /// Stamps the first `n` probes with the send call's wall-clock time and
    /// fills their headers (raw and packet sockets).
    #[inline]
    pub fn stamp(&mut self, n: usize, luna: bool, tx_real: u64) -> io::Result<()> {
        let hl = self.hl;
        for (b, &l) in self.bufs.iter_mut().zip(&self.lens[..n]) {
            if luna {
                luna::stamp_tx_ns(&mut b[hl..], tx_real);
            } else {
                probe::stamp_tx_ns(&mut b[hl..], tx_real);
            }
            if let Some(f) = self.frame {
                write_headers(f, &mut b[..hl + l], &mut self.ident)?;
            }
        }
        Ok(())
    }

    /// Hands the first `n` slots to `tx` in as few calls as it takes.
    #[inline]
    pub fn send<T: Transmit>(&self, tx: &mut T, n: usize) -> Delivery {
        let mut refs: [&[u8]; MAX_BATCH] = [&[]; MAX_BATCH];
        for (r, (b, &l)) in refs.iter_mut().zip(self.bufs.iter().zip(&self.lens[..n])) {
            *r = &b[..self.hl + l];
        }
        send_batch(tx, &refs[..n], SEND_RETRIES)
    }

    /// Sends one end-of-flow copy of probe `seq` (`len` bytes) with the LAST
    /// flag and a fresh tx time from slot 0; whether the kernel took it.
    pub fn send_last<T: Transmit>(
        &mut self,
        tx: &mut T,
        p: ProbeRepr,
        len: usize,
    ) -> io::Result<bool> {
        let hl = self.hl;
        p.emit(&mut self.bufs[0][hl..]);
        if let Some(f) = self.frame {
            write_headers(f, &mut self.bufs[0][..hl + len], &mut self.ident)?;
        }
        Ok(send_batch(tx, &[&self.bufs[0][..hl + len]], SEND_RETRIES).sent == 1)
    }

    /// Sends the empty priming datagram (behind `frame`'s headers, if any);
    /// its failure is not the run's.
    pub fn prime<T: Transmit>(&mut self, tx: &mut T) {
        let mut buf = vec![0u8; self.hl];
        if let Some(f) = self.frame {
            if write_headers(f, &mut buf, &mut self.ident).is_err() {
                return;
            }
        }
        let _ = tx.transmit(&[buf.as_slice()]);
    }
}

/// Fills `frame`'s headers for the probe in `buf` with the next IP id.
fn write_headers(frame: &Udp4Frame, buf: &mut [u8], ident: &mut u16) -> io::Result<()> {
    frame
        .write(buf, *ident)
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
    *ident = ident.wrapping_add(1);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(warmup: u64, echo: bool) -> FlowConfig {
        let mut c = crate::sender::tests::cfg(10);
        c.warmup = warmup;
        c.echo = echo;
        c
    }

    #[test]
    fn sizes_are_held_within_the_layout_and_warmup_flags_the_first_probes() {
        let m = ProbeMaker::new(&cfg(2, true));
        assert_eq!(m.len(-5.0), ECHO_LEN);
        assert_eq!(m.len(1e9), MAX_PAYLOAD);
        assert_eq!(m.len(99.6), 100);
        assert!(m.flags(1).contains(ProbeFlags::WARMUP));
        assert!(!m.flags(2).contains(ProbeFlags::WARMUP));
        assert!(m.flags(2).contains(ProbeFlags::ECHO_REQUEST));
    }

    #[test]
    fn build_stops_where_the_sizes_end_and_grows_a_slot_for_a_large_probe() {
        let c = cfg(0, false);
        let mut m = ProbeMaker::new(&c);
        let mut s = Slots::new(&c, None, 4);
        let mut sizes = [100.0, 5000.0].into_iter();
        let mut next = move || sizes.next();
        assert_eq!(s.build(&mut m, &mut next, 7, 4), (2, true));
        assert_eq!(&s.lens[..2], &[100, 5000]);
        assert_eq!(s.bufs[1].len(), 8192);
        let p = ProbeRepr::parse(&s.bufs[1][..5000]).unwrap();
        assert_eq!(p.seq, 8);
    }
}

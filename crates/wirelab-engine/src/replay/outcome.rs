//! Why a replay sent nothing: every frame read is accounted for, and the
//! caller decides the exit status from whether the user asked for it.

use super::ReplayReport;

/// A replay that sent (or wrote) no frame, and why.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct NothingSent {
    /// Why, with the counts and the flag that changes it.
    pub reason: String,
    /// The user asked for it (a selection that matches nothing, `--limit
    /// 0`, a `--duration` over before the first frame, a signal, a cache
    /// file's "don't send"); otherwise it is a failure.
    pub asked: bool,
}

impl ReplayReport {
    /// `None` when a frame was sent.
    pub(crate) fn why_nothing_sent(&self) -> Option<NothingSent> {
        if self.fidelity.packets > 0 {
            return None;
        }
        let asked = |reason: String| {
            Some(NothingSent {
                reason,
                asked: true,
            })
        };
        let failed = |reason: String| {
            Some(NothingSent {
                reason,
                asked: false,
            })
        };
        let r = &self.read;
        match self.stopped_by {
            "signal" => return asked("stopped by a signal before the first frame".into()),
            "limit" => return asked("--limit allows no frame".into()),
            "duration" => return asked("--duration ended before the first frame was due".into()),
            _ => {}
        }
        if r.read == 0 {
            return failed("the input holds no packets".into());
        }
        if r.selected == 0 {
            let mut parts = vec![];
            let dropped = self.rewrite.dropped;
            if r.filtered > dropped {
                parts.push(format!(
                    "{} by the selection (--include/--exclude/--packets)",
                    r.filtered - dropped
                ));
            }
            if dropped > 0 {
                parts.push(format!("{dropped} by --fixlen del"));
            }
            let pad = self.rewrite.pad_oversize;
            if r.oversize > pad {
                let max = r.max_frame_bytes.map_or(String::new(), |m| {
                    format!(" ({m} bytes: its MTU + 14 bytes of Ethernet header + a VLAN tag if tagged)")
                });
                parts.push(format!(
                    "{} as larger than {} takes{max}; --mtu-trunc cuts frames to --mtu, or raise the MTU",
                    r.oversize - pad,
                    self.output
                ));
            }
            if r.too_short > 0 {
                parts.push(format!(
                    "{} as shorter than an Ethernet header (14 bytes)",
                    r.too_short
                ));
            }
            if pad > 0 {
                parts.push(format!(
                    "{pad} whose original length exceeds the {} bytes --fixlen pad may pad to (the largest frame {} takes)",
                    r.pad_limit_bytes.unwrap_or(0),
                    self.output
                ));
            }
            let reason = format!(
                "all {} packet(s) read were left out: {}",
                r.read,
                parts.join(", ")
            );
            return if r.oversize > 0 {
                failed(reason)
            } else {
                asked(reason)
            };
        }
        if let Some(sp) = self.split.as_ref().filter(|sp| sp.skipped_packets > 0) {
            if self.send.frames_lost == 0 {
                return asked(format!(
                    "the cache file marks every selected packet \"don't send\" ({} skipped)",
                    sp.skipped_packets
                ));
            }
        }
        if self.send.frames_lost > 0 {
            return failed(format!(
                "every frame failed to send ({} lost, {} failed call(s); see the warnings above)",
                self.send.frames_lost, self.send.failures
            ));
        }
        failed(format!(
            "{} packet(s) were selected but none went out",
            r.selected
        ))
    }
}

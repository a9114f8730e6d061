//! Why a replay sent nothing: every frame read is accounted for, and the
//! caller decides the exit status from whether the user asked for it.

use super::ReplayReport;

pub use wirelab_analysis::schema::NothingSent;

/// `None` when a frame was sent.
pub(crate) fn why_nothing_sent(report: &ReplayReport) -> Option<NothingSent> {
    let this = report;
    {
        if this.fidelity.packets > 0 {
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
        let r = &this.read;
        match this.stopped_by {
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
            let dropped = this.rewrite.dropped;
            if r.filtered > dropped {
                parts.push(format!(
                    "{} by the selection (--include/--exclude/--packets)",
                    r.filtered - dropped
                ));
            }
            if dropped > 0 {
                parts.push(format!("{dropped} by --fixlen del"));
            }
            let pad = this.rewrite.pad_oversize;
            if r.oversize > pad {
                let max = r.max_frame_bytes.map_or(String::new(), |m| {
                    format!(" ({m} bytes: its MTU + 14 bytes of Ethernet header + a VLAN tag if tagged)")
                });
                parts.push(format!(
                    "{} as larger than {} takes{max}; --mtu-trunc cuts frames to --mtu, or raise the MTU",
                    r.oversize - pad,
                    this.output
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
                    this.output
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
        if let Some(sp) = this.split.as_ref().filter(|sp| sp.skipped_packets > 0) {
            if this.send.frames_lost == 0 {
                return asked(format!(
                    "the cache file marks every selected packet \"don't send\" ({} skipped)",
                    sp.skipped_packets
                ));
            }
        }
        if this.send.frames_lost > 0 {
            return failed(format!(
                "every frame failed to send ({} lost, {} failed call(s); see the warnings above)",
                this.send.frames_lost, this.send.failures
            ));
        }
        failed(format!(
            "{} packet(s) were selected but none went out",
            r.selected
        ))
    }
}

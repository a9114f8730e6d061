//! The client/server split of a two-interface replay: classified from the
//! trace, or loaded from a cache file (wirelab's or tcpprep's) and checked
//! against the trace; optionally saved.

use super::ReplayJobError;
use crate::replay;
use std::path::{Path, PathBuf};
use wirelab_analysis::schema::{ReplayCacheReport, REPLAY_CACHE_SCHEMA};
use wirelab_wire::rewrite::split::{SideMap, SplitMode};

/// Where the split comes from.
#[derive(Clone, Debug)]
pub enum SplitFrom {
    /// Classify every packet of the trace.
    Classify(SplitMode),
    /// Load a cache file.
    Cache(PathBuf),
}

/// The side of every packet of `files`, saved to `save` when given.
pub fn sides(
    files: &[PathBuf],
    from: &SplitFrom,
    save: Option<&Path>,
) -> Result<SideMap, ReplayJobError> {
    let map = match from {
        SplitFrom::Classify(mode) => replay::side_map(files, mode)?,
        SplitFrom::Cache(path) => {
            let bytes = std::fs::read(path).map_err(|source| ReplayJobError::CacheRead {
                path: path.clone(),
                cause: source,
            })?;
            let bad = |source| ReplayJobError::Cache {
                path: path.clone(),
                cause: source,
            };
            let m = SideMap::load(&bytes).map_err(bad)?;
            // Per packet number: a cache made for another trace would send
            // packets on the wrong side without a word.
            m.check_trace(replay::count_packets(files)?).map_err(bad)?;
            m
        }
    };
    if let Some(out) = save {
        std::fs::write(out, map.to_text()).map_err(|source| ReplayJobError::CacheWrite {
            path: out.to_path_buf(),
            cause: source,
        })?;
    }
    Ok(map)
}

/// The report of a run that only wrote the cache file `path`.
pub fn cache_report(map: &SideMap, path: &Path) -> ReplayCacheReport {
    let n = map.counts();
    ReplayCacheReport {
        schema: REPLAY_CACHE_SCHEMA,
        cachefile: path.display().to_string(),
        mode: map.mode.clone(),
        comment: map.comment.clone(),
        packets: n.total(),
        client_packets: n.client,
        server_packets: n.server,
        skipped_packets: n.skipped,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wirelab_wire::rewrite::split::Side;

    fn tmp(name: &str) -> PathBuf {
        std::env::temp_dir().join(format!("wl-sides-{}-{name}", std::process::id()))
    }

    #[test]
    fn a_cache_is_checked_against_the_trace_and_saved_as_text() {
        let map = SideMap {
            sides: vec![Some(Side::Client), Some(Side::Server), None],
            mode: "tcpprep".into(),
            comment: "-c 10.0.0.0/8".into(),
        };
        let (cache, saved, trace) = (tmp("c.txt"), tmp("saved.txt"), tmp("t.pcap"));
        std::fs::write(&cache, map.to_text()).unwrap();
        // A trace of 2 packets: the 3-packet cache was made for another one.
        let mut w = wirelab_pcap::PcapWriter::new(
            std::fs::File::create(&trace).unwrap(),
            1,
            65535,
            wirelab_pcap::PcapPrecision::Nano,
        )
        .unwrap();
        for t in [1, 2] {
            w.write_packet(t, 60, &[0u8; 60]).unwrap();
        }
        drop(w);
        let from = SplitFrom::Cache(cache.clone());
        let e = sides(std::slice::from_ref(&trace), &from, Some(&saved)).unwrap_err();
        assert!(matches!(e, ReplayJobError::Cache { .. }), "{e}");
        assert!(e.to_string().contains("another trace"), "{e}");
        assert!(!saved.exists(), "nothing saved from a refused cache");

        let report = cache_report(&map, &saved);
        assert_eq!(
            (report.packets, report.client_packets, report.server_packets),
            (3, 1, 1)
        );
        assert_eq!(report.skipped_packets, 1);
        let missing = sides(&[], &SplitFrom::Cache(tmp("none")), None).unwrap_err();
        assert!(matches!(missing, ReplayJobError::CacheRead { .. }));
        for p in [cache, trace] {
            std::fs::remove_file(p).unwrap();
        }
    }
}

//! The iproute2 .dist reader over arbitrary bytes: a table that loads has
//! 1 ..= 16384 entries, writes and reads back equal, and samples without
//! panicking for any uniform value or netem random number.

use wirelab_trace::dist::{DistTable, NETEM_DIST_MAX};

/// The target's body: panics when a promise above is broken.
pub fn run(data: &[u8]) {
    let Ok(t) = DistTable::read(data) else { return };
    assert!(!t.is_empty() && t.len() <= NETEM_DIST_MAX);
    let mut out = Vec::new();
    t.write(&mut out, "fuzz").expect("Vec output");
    assert_eq!(
        DistTable::read(&out[..]).expect("a written table reads back"),
        t
    );
    for u in [0.0, 0.5, 0.999_999, 1.0, -1.0, f64::NAN] {
        assert!(t.sample(u).abs() <= 4.0);
    }
    for (mu, sigma, rnd) in [
        (0, 1, 0),
        (i64::MAX, i32::MAX, u32::MAX),
        (i64::MIN, i32::MIN, 7),
    ] {
        let _ = t.netem_delay(mu, sigma, rnd);
    }
}

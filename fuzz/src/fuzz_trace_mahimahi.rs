//! The Mahimahi reader and the looping opportunity sequence over arbitrary
//! bytes: times never decrease, a looped pass repeats the first shifted by
//! the period, and nothing panics.

use std::io::Cursor;

use wirelab_trace::mahimahi::{MahimahiReader, MahimahiWriter, Opportunities};

/// The target's body: panics when a promise above is broken.
pub fn run(data: &[u8]) {
    let items: Vec<_> = MahimahiReader::new(data).take(data.len() + 2).collect();
    assert!(items.len() <= data.len() + 1);
    let times: Vec<u64> = items
        .iter()
        .filter_map(|r| r.as_ref().ok().copied())
        .collect();
    assert!(times.windows(2).all(|w| w[0] <= w[1]));
    let clean = items.iter().all(Result::is_ok);
    if clean {
        let mut w = MahimahiWriter::new(Vec::new());
        for &t in &times {
            w.write(t).expect("non-decreasing times");
        }
        let text = w.finish().expect("a clean trace has a period > 0");
        let back: Vec<u64> = MahimahiReader::new(&text[..])
            .map(|r| r.expect("written times read back"))
            .collect();
        assert_eq!(back, times);
        // Two passes of the loop.
        let n = times.len();
        let period = *times.last().expect("a clean trace is not empty");
        let looped: Vec<u64> = Opportunities::new(Cursor::new(data.to_vec()), true)
            .take(2 * n)
            .map(|r| r.expect("a clean trace loops cleanly"))
            .collect();
        if let Some(second) = times
            .iter()
            .map(|t| t.checked_add(period))
            .collect::<Option<Vec<u64>>>()
        {
            assert_eq!(&looped[..n], &times[..]);
            assert_eq!(&looped[n..], &second[..]);
        }
    } else {
        let _ = Opportunities::new(Cursor::new(data.to_vec()), true)
            .take(2 * data.len() + 4)
            .count();
    }
}

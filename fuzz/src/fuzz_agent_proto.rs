//! The agent protocol over arbitrary bytes: request and response lines
//! never panic, and what decodes encodes back to the same message; the
//! bounded line reader, fed a few bytes per read, never stores more than
//! its limit and accounts for every input byte; base64 accepts only its
//! canonical form (decode then encode gives the input back).

use std::io::{BufReader, Read};
use wirelab_agent::proto::{self, LineRead};

/// Returns at most `step` bytes per read call.
struct Trickle<'a> {
    data: &'a [u8],
    step: usize,
}

impl Read for Trickle<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = buf.len().min(self.step).min(self.data.len());
        buf[..n].copy_from_slice(&self.data[..n]);
        self.data = &self.data[n..];
        Ok(n)
    }
}

/// The target's body: panics when a promise above is broken.
pub fn run(data: &[u8]) {
    if let Ok(req) = proto::decode_request(data) {
        let again = proto::decode_request(&proto::encode(&req)).expect("re-encoded request");
        assert_eq!(again, req);
    }
    if let Ok(resp) = proto::decode_response(data) {
        let again = proto::decode_response(&proto::encode(&resp)).expect("re-encoded response");
        assert_eq!(again, resp);
    }

    let (max, step) = match data.first() {
        Some(&b) => (usize::from(b % 64) + 1, usize::from(b / 64) + 1),
        None => (1, 1),
    };
    let mut r = BufReader::with_capacity(8, Trickle { data, step });
    let mut buf = Vec::new();
    let mut seen = 0usize;
    let mut lines = 0usize;
    loop {
        match proto::read_line(&mut r, max, &mut buf).expect("reads from memory") {
            LineRead::Eof => break,
            LineRead::Line => {
                assert!(buf.len() <= max && !buf.contains(&b'\n'));
                seen += buf.len();
            }
            LineRead::TooLong(n) => {
                assert!(n > max);
                seen += n;
            }
        }
        lines += 1;
        assert!(lines <= data.len(), "more lines than bytes");
    }
    let newlines = data.iter().filter(|&&b| b == b'\n').count();
    assert_eq!(seen + newlines, data.len());

    if let Ok(s) = std::str::from_utf8(data) {
        if let Ok(bytes) = proto::base64_decode(s) {
            assert_eq!(proto::base64_encode(&bytes), s);
        }
    }
    let enc = proto::base64_encode(data);
    assert_eq!(proto::base64_decode(&enc).expect("own encoding"), data);
}

//! pcapng blocks after a valid section header block: the first input byte
//! picks the byte order (bit 0) and how the section length is given
//! (bit 1: -1 = unknown, else the real length of the rest); the remaining
//! bytes are the blocks (interface descriptions, packets, statistics, more
//! sections). Never panics, loops or over-allocates; whole and trickled
//! reads agree.

/// The target's body: panics when a promise above is broken.
pub fn run(data: &[u8]) {
    let Some((&sel, rest)) = data.split_first() else {
        return;
    };
    let big = sel & 1 != 0;
    let section_len: i64 = if sel & 2 != 0 { rest.len() as i64 } else { -1 };
    let mut f = Vec::with_capacity(28 + rest.len());
    let u32b = |v: u32| {
        if big {
            v.to_be_bytes()
        } else {
            v.to_le_bytes()
        }
    };
    let u16b = |v: u16| {
        if big {
            v.to_be_bytes()
        } else {
            v.to_le_bytes()
        }
    };
    f.extend_from_slice(&0x0A0D_0D0Au32.to_be_bytes());
    f.extend_from_slice(&u32b(28));
    f.extend_from_slice(&u32b(0x1A2B_3C4D));
    f.extend_from_slice(&u16b(1));
    f.extend_from_slice(&u16b(0));
    f.extend_from_slice(&if big {
        section_len.to_be_bytes()
    } else {
        section_len.to_le_bytes()
    });
    f.extend_from_slice(&u32b(28));
    f.extend_from_slice(rest);
    super::pcap_read::check(&f, sel >> 2);
}

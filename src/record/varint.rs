//! Zigzag varint / varlong encoding, as Kafka's `ByteUtils` writes it.

/// Zigzag encoding of an i32 (small magnitudes, positive or negative, become small).
#[inline]
pub fn zigzag32(v: i32) -> u32 {
    ((v << 1) ^ (v >> 31)) as u32
}

/// Zigzag encoding of an i64.
#[inline]
pub fn zigzag64(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

/// Bytes of the unsigned varint `u` (1 to 10), from its bit length: no loop.
#[inline]
pub fn uvarint_size(u: u64) -> usize {
    let bits = 64 - (u | 1).leading_zeros() as usize;
    bits.div_ceil(7)
}

/// Bytes a [`write_uvarint`] may store past its position: its 8-byte store.
pub const WRITE_SLACK: usize = 8;

/// Writes the unsigned varint `u` at `out[p..]` and returns the position after it.
///
/// One- and two-byte varints (every length, offset delta and timestamp delta of a batch of
/// lines) are written directly; up to 35 bits the 7-bit groups are spread and given their
/// continuation bits by a mask of the length, and stored as one 8-byte word: no loop over the
/// bytes. `out` must hold [`WRITE_SLACK`] bytes past `p` (the bytes past the varint are
/// scratch the next write overwrites), and 10 for a larger `u`.
#[inline(always)]
pub fn write_uvarint(out: &mut [u8], p: usize, u: u64) -> usize {
    if u < 0x80 {
        out[p] = u as u8;
        return p + 1;
    }
    if u < 0x4000 {
        out[p..p + 2].copy_from_slice(&[(u as u8) | 0x80, (u >> 7) as u8]);
        return p + 2;
    }
    write_uvarint_long(out, p, u)
}

#[inline(never)]
fn write_uvarint_long(out: &mut [u8], p: usize, u: u64) -> usize {
    let n = uvarint_size(u);
    if n <= 5 {
        let groups = (u & 0x7f)
            | ((u << 1) & 0x7f00)
            | ((u << 2) & 0x7f_0000)
            | ((u << 3) & 0x7f00_0000)
            | ((u << 4) & 0x7f_0000_0000);
        let continuation = 0x80_8080_8080u64 & ((1u64 << (8 * (n - 1))) - 1);
        out[p..p + 8].copy_from_slice(&(groups | continuation).to_le_bytes());
    } else {
        let mut u = u;
        for b in &mut out[p..p + n - 1] {
            *b = (u as u8) | 0x80;
            u >>= 7;
        }
        out[p + n - 1] = u as u8;
    }
    p + n
}

/// Appends the unsigned varint `u`.
#[inline]
fn put_uvarint(buf: &mut Vec<u8>, u: u64) {
    let mut word = [0u8; 16];
    let n = write_uvarint(&mut word, 0, u);
    buf.extend_from_slice(&word[..n]);
}

/// Appends `v` as a zigzag varint (max 5 bytes).
pub fn put_varint(buf: &mut Vec<u8>, v: i32) {
    put_uvarint(buf, zigzag32(v) as u64)
}

/// Appends `v` as a zigzag varlong (max 10 bytes).
pub fn put_varlong(buf: &mut Vec<u8>, v: i64) {
    put_uvarint(buf, zigzag64(v))
}

/// Number of bytes `put_varint(v)` writes.
#[inline]
pub fn varint_size(v: i32) -> usize {
    uvarint_size(zigzag32(v) as u64)
}

/// Number of bytes `put_varlong(v)` writes.
#[inline]
pub fn varlong_size(v: i64) -> usize {
    uvarint_size(zigzag64(v))
}

/// Reads a zigzag varint at `*pos`, advancing it. `None` when truncated or longer than 5 bytes.
#[inline(always)]
pub fn get_varint(buf: &[u8], pos: &mut usize) -> Option<i32> {
    match buf.get(*pos) {
        Some(&b) if b < 0x80 => {
            *pos += 1;
            Some(((b >> 1) as i32) ^ -((b & 1) as i32))
        }
        // Two bytes: record and value lengths of 64 to 8,191 bytes, offset deltas from 64.
        Some(&b) if *pos + 1 < buf.len() && buf[*pos + 1] < 0x80 => {
            let u = (b & 0x7f) as u32 | (buf[*pos + 1] as u32) << 7;
            *pos += 2;
            Some(((u >> 1) as i32) ^ -((u & 1) as i32))
        }
        _ => get_varint_long(buf, pos),
    }
}

#[inline(never)]
fn get_varint_long(buf: &[u8], pos: &mut usize) -> Option<i32> {
    let mut u: u32 = 0;
    for i in 0..5 {
        let b = *buf.get(*pos)?;
        *pos += 1;
        u |= ((b & 0x7f) as u32) << (7 * i);
        if b & 0x80 == 0 {
            return Some(((u >> 1) as i32) ^ -((u & 1) as i32));
        }
    }
    None
}

/// Reads a zigzag varlong at `*pos`, advancing it. `None` when truncated or longer than 10 bytes.
#[inline(always)]
pub fn get_varlong(buf: &[u8], pos: &mut usize) -> Option<i64> {
    match buf.get(*pos) {
        Some(&b) if b < 0x80 => {
            *pos += 1;
            Some(((b >> 1) as i64) ^ -((b & 1) as i64))
        }
        // Two bytes: record and value lengths of 64 to 8,191 bytes, offset deltas from 64.
        Some(&b) if *pos + 1 < buf.len() && buf[*pos + 1] < 0x80 => {
            let u = (b & 0x7f) as u32 | (buf[*pos + 1] as u32) << 7;
            *pos += 2;
            Some(((u >> 1) as i64) ^ -((u & 1) as i64))
        }
        _ => get_varlong_long(buf, pos),
    }
}

#[inline(never)]
fn get_varlong_long(buf: &[u8], pos: &mut usize) -> Option<i64> {
    let mut u: u64 = 0;
    for i in 0..10 {
        let b = *buf.get(*pos)?;
        *pos += 1;
        u |= ((b & 0x7f) as u64) << (7 * i);
        if b & 0x80 == 0 {
            return Some(((u >> 1) as i64) ^ -((u & 1) as i64));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    // Vectors from Kafka's ByteUtilsTest.
    const VARINTS: &[(i32, &[u8])] = &[
        (0, &[0x00]),
        (-1, &[0x01]),
        (1, &[0x02]),
        (63, &[0x7e]),
        (-64, &[0x7f]),
        (64, &[0x80, 0x01]),
        (-65, &[0x81, 0x01]),
        (8191, &[0xfe, 0x7f]),
        (i32::MAX, &[0xfe, 0xff, 0xff, 0xff, 0x0f]),
        (i32::MIN, &[0xff, 0xff, 0xff, 0xff, 0x0f]),
    ];

    #[test]
    fn varint_vectors() {
        for (v, bytes) in VARINTS {
            let mut b = Vec::new();
            put_varint(&mut b, *v);
            assert_eq!(&b[..], *bytes, "encode {v}");
            assert_eq!(varint_size(*v), bytes.len());
            let mut pos = 0;
            assert_eq!(get_varint(bytes, &mut pos), Some(*v));
            assert_eq!(pos, bytes.len());
        }
    }

    #[test]
    fn varlong_vectors() {
        let cases: &[(i64, &[u8])] = &[
            (0, &[0x00]),
            (-1, &[0x01]),
            (64, &[0x80, 0x01]),
            (
                i64::MAX,
                &[0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01],
            ),
        ];
        for (v, bytes) in cases {
            let mut b = Vec::new();
            put_varlong(&mut b, *v);
            assert_eq!(&b[..], *bytes);
            assert_eq!(varlong_size(*v), bytes.len());
            let mut pos = 0;
            assert_eq!(get_varlong(bytes, &mut pos), Some(*v));
        }
    }

    /// The loop-per-byte encoder Kafka's `ByteUtils.writeUnsignedVarlong` is.
    fn reference(mut u: u64) -> Vec<u8> {
        let mut out = Vec::new();
        while u >= 0x80 {
            out.push((u as u8) | 0x80);
            u >>= 7;
        }
        out.push(u as u8);
        out
    }

    #[test]
    fn branch_light_writes_match_the_byte_loop_at_every_length_boundary() {
        let mut values = vec![0u64, 1, u64::MAX, u64::MAX - 1];
        for bits in 1..64 {
            let edge = 1u64 << bits;
            values.extend([edge - 1, edge, edge + 1]);
        }
        for u in values {
            let want = reference(u);
            assert_eq!(uvarint_size(u), want.len(), "size of {u}");
            // Garbage after the position must not leak into the varint.
            let mut out = [0xAAu8; 3 + 16];
            let end = write_uvarint(&mut out, 3, u);
            assert_eq!(end, 3 + want.len(), "end of {u}");
            assert_eq!(&out[3..end], &want[..], "bytes of {u}");
            let mut pos = 0;
            assert_eq!(
                get_varlong(&want, &mut pos),
                Some((u >> 1) as i64 ^ -((u & 1) as i64))
            );
        }
    }

    #[test]
    fn reads_match_the_byte_loop_at_every_length_boundary() {
        let mut values = vec![0u64, 1, u64::MAX];
        for bits in 1..64 {
            let edge = 1u64 << bits;
            values.extend([edge - 1, edge, edge + 1]);
        }
        for u in values {
            let bytes = reference(u);
            let want = (u >> 1) as i64 ^ -((u & 1) as i64);
            // At the end of the buffer and with bytes after it.
            for tail in [&[][..], &[0x01, 0x80][..]] {
                let buf = [&bytes[..], tail].concat();
                let mut pos = 0;
                assert_eq!(get_varlong(&buf, &mut pos), Some(want), "{u}");
                assert_eq!(pos, bytes.len());
                let mut pos = 0;
                let v32 = get_varint(&buf, &mut pos);
                if bytes.len() <= 5 && u <= u32::MAX as u64 {
                    assert_eq!(v32, Some(want as i32), "{u}");
                    assert_eq!(pos, bytes.len());
                } else if bytes.len() > 5 {
                    assert_eq!(v32, None, "{u}: longer than 5 bytes");
                }
            }
            // Truncated: every proper prefix is refused.
            for cut in 0..bytes.len() {
                let mut pos = 0;
                assert_eq!(
                    get_varlong(&bytes[..cut], &mut pos),
                    None,
                    "{u} cut at {cut}"
                );
            }
        }
    }

    #[test]
    fn truncated_and_overlong_are_rejected() {
        let mut pos = 0;
        assert_eq!(get_varint(&[0x80], &mut pos), None);
        let mut pos = 0;
        assert_eq!(
            get_varint(&[0x80, 0x80, 0x80, 0x80, 0x80, 0x01], &mut pos),
            None
        );
    }
}

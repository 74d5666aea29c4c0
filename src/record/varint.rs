//! Zigzag varint / varlong encoding, as Kafka's `ByteUtils` writes it.

/// Appends `v` as a zigzag varint (max 5 bytes).
pub fn put_varint(buf: &mut Vec<u8>, v: i32) {
    let mut u = ((v << 1) ^ (v >> 31)) as u32;
    while u >= 0x80 {
        buf.push((u as u8) | 0x80);
        u >>= 7;
    }
    buf.push(u as u8);
}

/// Appends `v` as a zigzag varlong (max 10 bytes).
pub fn put_varlong(buf: &mut Vec<u8>, v: i64) {
    let mut u = ((v << 1) ^ (v >> 63)) as u64;
    while u >= 0x80 {
        buf.push((u as u8) | 0x80);
        u >>= 7;
    }
    buf.push(u as u8);
}

/// Number of bytes `put_varint(v)` writes.
pub fn varint_size(v: i32) -> usize {
    let mut u = ((v << 1) ^ (v >> 31)) as u32;
    let mut n = 1;
    while u >= 0x80 {
        u >>= 7;
        n += 1;
    }
    n
}

/// Number of bytes `put_varlong(v)` writes.
pub fn varlong_size(v: i64) -> usize {
    let mut u = ((v << 1) ^ (v >> 63)) as u64;
    let mut n = 1;
    while u >= 0x80 {
        u >>= 7;
        n += 1;
    }
    n
}

/// Reads a zigzag varint at `*pos`, advancing it. `None` when truncated or longer than 5 bytes.
pub fn get_varint(buf: &[u8], pos: &mut usize) -> Option<i32> {
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
pub fn get_varlong(buf: &[u8], pos: &mut usize) -> Option<i64> {
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

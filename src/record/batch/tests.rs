use super::*;
use crate::record::{BatchBuilder, BatchOptions, RecordInput, encode_record};

/// The 73-byte example of docs/format.md, the worked example.
const HELLO: [u8; 73] = [
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x3d, 0x00, 0x00, 0x00, 0x00,
    0x02, 0xe6, 0x41, 0xa4, 0x4b, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x8b, 0xcf,
    0xe5, 0x68, 0x00, 0x00, 0x00, 0x01, 0x8b, 0xcf, 0xe5, 0x68, 0x00, 0xff, 0xff, 0xff, 0xff, 0xff,
    0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x00, 0x00, 0x00, 0x01, 0x16, 0x00, 0x00,
    0x00, 0x01, 0x0a, 0x68, 0x65, 0x6c, 0x6c, 0x6f, 0x00,
];

#[test]
fn crc32c_check_values() {
    assert_eq!(crc32c::crc32c(b"123456789"), 0xE3069283);
    assert_eq!(crc32c::crc32c(b"Some String"), 608512271);
    assert_eq!(crate::record::crc32c(b"123456789"), 0xE3069283);
    assert_eq!(crate::record::crc32c(b"Some String"), 608512271);
}

proptest::proptest! {
    /// The batch checksum is the crc32c crate's CRC-32C on every length (the folding
    /// implementation takes other paths below 16, 64 and 256 bytes, and for the tail) and
    /// alignment.
    #[test]
    fn the_batch_crc_is_the_crc32c_crates(
        bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..5000),
        skip in 0usize..64,
    ) {
        let b = &bytes[skip.min(bytes.len())..];
        proptest::prop_assert_eq!(crate::record::crc32c(b), crc32c::crc32c(b));
    }
}

#[test]
fn encodes_the_worked_example_byte_for_byte() {
    let mut b = BatchBuilder::new();
    b.begin(0, BatchOptions::default());
    b.add(&RecordInput {
        value: Some(b"hello"),
        timestamp: 1_700_000_000_000,
        ..Default::default()
    });
    assert_eq!(b.finish().unwrap(), &HELLO[..]);
}

#[test]
fn decodes_the_worked_example() {
    let v = BatchView::new(&HELLO).unwrap();
    assert!(v.is_valid());
    assert_eq!(v.header.crc, 3863061579);
    assert_eq!(v.header.size(), 73);
    assert_eq!(v.header.last_offset(), 0);
    let mut scratch = Vec::new();
    let recs: Vec<_> = v
        .records(&mut scratch)
        .unwrap()
        .map(|r| r.unwrap())
        .collect();
    assert_eq!(recs.len(), 1);
    let r = recs[0];
    assert_eq!(r.value, Some(&b"hello"[..]));
    assert_eq!(r.key, None);
    assert_eq!(r.timestamp, 1_700_000_000_000);
}

#[test]
fn record_with_key_and_header_matches_notes() {
    let mut buf = Vec::new();
    let hdrs: [(&[u8], Option<&[u8]>); 1] = [(b"h", Some(b"x"))];
    encode_record(
        &mut buf,
        1,
        5,
        &RecordInput {
            key: Some(b"k"),
            value: Some(b"v"),
            headers: &hdrs,
            timestamp: 0,
        },
    );
    assert_eq!(
        buf,
        [
            0x18, 0x00, 0x0A, 0x02, 0x02, 0x6B, 0x02, 0x76, 0x02, 0x02, 0x68, 0x02, 0x78
        ]
    );
}

#[test]
fn flipped_byte_fails_crc_and_truncation_is_detected() {
    let mut bad = HELLO;
    bad[70] ^= 1;
    let v = BatchView::new(&bad).unwrap();
    assert!(matches!(
        v.ensure_valid(),
        Err(BatchError::CrcMismatch { .. })
    ));
    assert!(matches!(
        BatchView::new(&HELLO[..72]),
        Err(BatchError::Truncated { need: 73, .. })
    ));
    let mut small = HELLO;
    small[8..12].copy_from_slice(&5i32.to_be_bytes());
    assert!(matches!(
        BatchView::new(&small),
        Err(BatchError::SizeTooSmall(5))
    ));
}

#[test]
fn log_append_time_reports_max_timestamp_for_every_record() {
    let mut b = BatchBuilder::new();
    b.begin(
        7,
        BatchOptions {
            timestamp_type: TimestampType::LogAppendTime,
            log_append_time: 42_000,
            compression: Compression::Zstd,
            ..Default::default()
        },
    );
    for i in 0..3 {
        b.add(&RecordInput {
            value: Some(b"x"),
            timestamp: i,
            ..Default::default()
        });
    }
    let bytes = b.finish().unwrap().to_vec();
    let v = BatchView::new(&bytes).unwrap();
    v.ensure_valid().unwrap();
    assert_eq!(v.header.timestamp_type(), TimestampType::LogAppendTime);
    let mut s = Vec::new();
    let recs: Vec<_> = v.records(&mut s).unwrap().map(|r| r.unwrap()).collect();
    assert_eq!(recs.len(), 3);
    assert!(recs.iter().all(|r| r.timestamp == 42_000));
    assert_eq!(recs[2].offset, 9);
}

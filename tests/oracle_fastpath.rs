//! The encoder's fast paths against an independent codec, the `kafka-protocol` crate.
//!
//! `BatchBuilder` writes value-only records (no key, no headers: a line of an append file) by
//! a shorter path, reserves room once per `add_all` and writes varints without a loop per
//! byte. Random batches of value-only records, and of records mixing keys, null values and
//! headers, are encoded here three ways (one `add_all`, `add_all` in random pieces, `add` one
//! by one) and must equal, byte for byte, the batch kafka-protocol's `RecordBatchEncoder`
//! writes for the same records, and decode with kafka-protocol's `RecordBatchDecoder` to the
//! records given. Compressed batches and LogAppendTime batches (whose bytes differ from
//! kafka-protocol's by design) are checked by decoding alone.
//!
//! An append file's request (lines split and encoded in one pass by `add_lines`, in one or
//! several parts, uncompressed or not) is checked the same way against kafka-protocol's batch
//! of its lines.
//!
//! The other way, batches kafka-protocol writes are decoded by `BatchView` (iterating, and
//! `for_each_record`, whose value-only shortcut reads lines) to the records it was given.

use kafka_protocol::protocol::StrBytes;
use kafka_protocol::records::{
    Compression as KCompression, Record as KRecord, RecordBatchDecoder, RecordBatchEncoder,
    RecordEncodeOptions, TimestampType as KTimestampType,
};
use proptest::prelude::*;
use topicfs::record::{
    BatchBuilder, BatchOptions, BatchView, Compression, HEADER_SIZE, Record, RecordInput,
    TimestampType, encode_record,
};

/// One record, owned.
#[derive(Clone, Debug)]
struct Rec {
    key: Option<Vec<u8>>,
    value: Option<Vec<u8>>,
    headers: Vec<(String, Option<Vec<u8>>)>,
    timestamp: i64,
}

/// Bytes of a length whose varint takes one, two or three bytes.
fn bytes(max_small: usize) -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        8 => prop::collection::vec(any::<u8>(), 0..max_small),
        1 => prop::collection::vec(any::<u8>(), 8_100..8_300),
    ]
}

/// Timestamps from a start, in steps that make one- to several-byte varlong deltas; sorted
/// (kafka-protocol takes the smallest timestamp as the base, topicfs the first) unless asked.
fn timestamps(n: usize, sorted: bool) -> impl Strategy<Value = Vec<i64>> {
    let step = prop_oneof![Just(0i64), 0i64..100, 0i64..100_000, 0i64..10_000_000_000];
    (
        0i64..4_000_000_000_000,
        prop::collection::vec(step, n),
        prop::collection::vec(any::<i64>(), n),
    )
        .prop_map(move |(start, steps, jitter)| {
            let mut t = start;
            steps
                .iter()
                .zip(&jitter)
                .map(|(s, j)| {
                    t += s;
                    if sorted { t } else { t + j % 1_000_000 }
                })
                .collect()
        })
}

fn value_only(max: usize, sorted: bool) -> impl Strategy<Value = Vec<Rec>> {
    prop::collection::vec(prop::option::weighted(0.95, bytes(200)), 1..max).prop_flat_map(
        move |values| {
            let n = values.len();
            timestamps(n, sorted).prop_map(move |ts| {
                values
                    .iter()
                    .zip(ts)
                    .map(|(v, timestamp)| Rec {
                        key: None,
                        value: v.clone(),
                        headers: Vec::new(),
                        timestamp,
                    })
                    .collect()
            })
        },
    )
}

fn mixed(max: usize, sorted: bool) -> impl Strategy<Value = Vec<Rec>> {
    let header = ("[a-zé]{0,6}", prop::option::of(bytes(40)));
    let shape = (
        prop::option::of(bytes(40)),
        prop::option::weighted(0.9, bytes(200)),
        prop::collection::vec(header, 0..4),
    );
    prop::collection::vec(shape, 1..max).prop_flat_map(move |shapes| {
        let n = shapes.len();
        timestamps(n, sorted).prop_map(move |ts| {
            shapes
                .iter()
                .zip(ts)
                .map(|((key, value, headers), timestamp)| {
                    // kafka-protocol keeps a record's headers in a map: distinct keys only.
                    let mut seen = std::collections::BTreeSet::new();
                    let headers = headers
                        .iter()
                        .filter(|(k, _)| seen.insert(k.clone()))
                        .cloned()
                        .collect();
                    Rec {
                        key: key.clone(),
                        value: value.clone(),
                        headers,
                        timestamp,
                    }
                })
                .collect()
        })
    })
}

type Headers<'a> = Vec<(&'a [u8], Option<&'a [u8]>)>;

fn header_refs(recs: &[Rec]) -> Vec<Headers<'_>> {
    recs.iter()
        .map(|r| {
            r.headers
                .iter()
                .map(|(k, v)| (k.as_bytes(), v.as_deref()))
                .collect()
        })
        .collect()
}

fn inputs<'a>(recs: &'a [Rec], headers: &'a [Headers<'a>]) -> Vec<RecordInput<'a>> {
    recs.iter()
        .zip(headers)
        .map(|(r, h)| RecordInput {
            key: r.key.as_deref(),
            value: r.value.as_deref(),
            headers: h,
            timestamp: r.timestamp,
        })
        .collect()
}

/// How the records are handed to the builder.
#[derive(Clone, Copy, Debug)]
enum Feed {
    AllAtOnce,
    /// `add_all` of pieces cut every `n` records.
    Pieces(usize),
    OneByOne,
}

fn feed() -> impl Strategy<Value = Feed> {
    prop_oneof![
        Just(Feed::AllAtOnce),
        (1usize..40).prop_map(Feed::Pieces),
        Just(Feed::OneByOne),
    ]
}

fn build(base: i64, opts: BatchOptions, records: &[RecordInput], feed: Feed) -> Vec<u8> {
    let mut b = BatchBuilder::new();
    // A builder reused after a larger batch: stale bytes past the content must not leak.
    b.begin(7, BatchOptions::default());
    let filler = [0xEEu8; 3000];
    for _ in 0..20 {
        b.add(&RecordInput {
            key: Some(&filler),
            value: Some(&filler),
            ..Default::default()
        });
    }
    b.finish().unwrap();
    b.begin(base, opts);
    match feed {
        Feed::AllAtOnce => b.add_all(records),
        Feed::Pieces(n) => records.chunks(n).for_each(|c| b.add_all(c)),
        Feed::OneByOne => records.iter().for_each(|r| b.add(r)),
    }
    b.finish().unwrap().to_vec()
}

fn kp_records(base: i64, recs: &[Rec]) -> Vec<KRecord> {
    recs.iter()
        .enumerate()
        .map(|(i, r)| KRecord {
            transactional: false,
            control: false,
            delete_horizon: false,
            partition_leader_epoch: 0,
            producer_id: -1,
            producer_epoch: -1,
            // kafka-protocol batches records whose offset - sequence is constant; the first
            // record's -1 is the batch's base sequence (none), as topicfs writes it.
            sequence: (i as i32).wrapping_sub(1),
            timestamp_type: KTimestampType::Creation,
            offset: base + i as i64,
            timestamp: r.timestamp,
            key: r.key.clone().map(Into::into),
            value: r.value.clone().map(Into::into),
            headers: r
                .headers
                .iter()
                .map(|(k, v)| (StrBytes::from_string(k.clone()), v.clone().map(Into::into)))
                .collect(),
        })
        .collect()
}

fn kp_encode(base: i64, recs: &[Rec]) -> Vec<u8> {
    let mut out = Vec::new();
    RecordBatchEncoder::encode(
        &mut out,
        &kp_records(base, recs),
        &RecordEncodeOptions {
            version: 2,
            compression: KCompression::None,
        },
    )
    .expect("kafka-protocol encodes");
    out
}

/// kafka-protocol decodes `bytes` (checking the CRC) to exactly `recs`, at `base`.
fn check_decodes(bytes: &[u8], base: i64, recs: &[Rec], ts_type: TimestampType, append: i64) {
    let mut input = bytes;
    let set = RecordBatchDecoder::decode(&mut input).expect("kafka-protocol decodes the batch");
    assert!(
        input.is_empty(),
        "{} bytes left after the batch",
        input.len()
    );
    assert_eq!(set.records.len(), recs.len());
    for (i, (k, r)) in set.records.iter().zip(recs).enumerate() {
        assert_eq!(k.offset, base + i as i64, "#{i} offset");
        assert_eq!(
            k.timestamp, r.timestamp,
            "#{i} timestamp (stored create time)"
        );
        let want_type = match ts_type {
            TimestampType::CreateTime => KTimestampType::Creation,
            TimestampType::LogAppendTime => KTimestampType::LogAppend,
        };
        assert_eq!(k.timestamp_type, want_type, "#{i} timestamp type");
        assert_eq!(k.key.as_deref(), r.key.as_deref(), "#{i} key");
        assert_eq!(k.value.as_deref(), r.value.as_deref(), "#{i} value");
        let headers: Vec<(String, Option<Vec<u8>>)> = k
            .headers
            .iter()
            .map(|(hk, hv)| (hk.to_string(), hv.as_ref().map(|v| v.to_vec())))
            .collect();
        assert_eq!(headers, r.headers, "#{i} headers");
    }
    let max_ts = i64::from_be_bytes(bytes[35..43].try_into().unwrap());
    let want_max = match ts_type {
        TimestampType::CreateTime => recs.iter().map(|r| r.timestamp).max().unwrap(),
        TimestampType::LogAppendTime => append,
    };
    assert_eq!(max_ts, want_max, "max timestamp");
}

/// The records region is exactly the records `encode_record` writes one by one.
fn check_encode_record(bytes: &[u8], records: &[RecordInput]) {
    let mut want = Vec::new();
    for (i, r) in records.iter().enumerate() {
        encode_record(
            &mut want,
            i as i32,
            r.timestamp.wrapping_sub(records[0].timestamp),
            r,
        );
    }
    assert_eq!(
        &bytes[HEADER_SIZE..],
        &want[..],
        "records region vs encode_record"
    );
}

/// The text of a write to an append file: lines of random bytes (no `\n`; empty ones, ones
/// whose length varint takes two or three bytes, ones around 63/64 bytes and around 8,000
/// bytes, where the encoder's short-line path starts and stops), the last one sometimes
/// unterminated, and sometimes more than 64 lines (offset deltas of two bytes).
fn request() -> impl Strategy<Value = (Vec<Vec<u8>>, bool)> {
    let line = prop_oneof![
        6 => prop::collection::vec(any::<u8>().prop_map(|b| if b == b'\n' { b'x' } else { b }), 0..200),
        1 => Just(Vec::new()),
        1 => prop::collection::vec(b'a'..=b'z', 60..68),
        1 => prop::collection::vec(b'a'..=b'z', 7_990..8_010),
        1 => prop::collection::vec(b'a'..=b'z', 8_100..8_300),
    ];
    (
        prop_oneof![
            3 => prop::collection::vec(line.clone(), 1..40),
            1 => prop::collection::vec(line, 60..300),
        ],
        any::<bool>(),
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn append_requests_are_kafka_protocols_batches_of_their_lines(
        (request_lines, unterminated) in request(),
        // Lines before the request's: its records then have offset deltas of three bytes.
        before in prop_oneof![4 => Just(0usize), 1 => Just(8_150usize)],
        cuts in prop::collection::vec(any::<prop::sample::Index>(), 0..3),
        // How much later each part is stamped than the one before: deltas from the batch's
        // first timestamp of one byte and of two. (Not earlier: kafka-protocol bases a batch
        // on its least timestamp, Kafka on its first record's, as our encoder does.)
        later in prop::collection::vec(prop_oneof![Just(0i64), 1i64..40, 64i64..300], 3),
        base in 0i64..1i64 << 40,
        codec in prop_oneof![
            4 => Just(Compression::None),
            1 => Just(Compression::Lz4),
            1 => Just(Compression::Zstd),
        ],
    ) {
        let ts = 1_750_000_000_321;
        let mut lines: Vec<Vec<u8>> = (0..before).map(|i| format!("b{i}").into_bytes()).collect();
        lines.extend(request_lines);
        let mut text = Vec::new();
        for l in &lines {
            text.extend_from_slice(l);
            text.push(b'\n');
        }
        if unterminated && !lines.last().unwrap().is_empty() {
            text.pop();
        }
        // The request in parts cut at line ends, as a pending partial line and the rest are.
        let mut ends: Vec<usize> = cuts
            .iter()
            .map(|i| {
                let at = i.index(text.len() + 1);
                text[..at].iter().rposition(|&b| b == b'\n').map_or(0, |p| p + 1)
            })
            .collect();
        ends.sort_unstable();
        let mut b = BatchBuilder::new();
        // A builder reused after a larger batch: stale bytes past the content must not leak.
        b.begin(7, BatchOptions::default());
        b.add_lines(&[0xEEu8; 100_000], ts);
        b.finish().unwrap();
        let opts = BatchOptions { compression: codec, ..Default::default() };
        b.begin(base, opts);
        let mut start = 0;
        // The timestamp of each line's record: that of the part it was added in.
        let mut stamps = Vec::new();
        let mut part_ts = ts;
        for (i, end) in ends.into_iter().chain([text.len()]).enumerate() {
            if i > 0 {
                part_ts += later[i - 1];
            }
            let n = b.add_lines(&text[start..end], part_ts);
            stamps.extend(std::iter::repeat_n(part_ts, n));
            start = end;
        }
        let ours = b.finish().unwrap().to_vec();
        prop_assert_eq!(stamps.len(), lines.len());
        let recs: Vec<Rec> = lines
            .iter()
            .zip(&stamps)
            .map(|(l, &timestamp)| Rec { key: None, value: Some(l.clone()), headers: Vec::new(), timestamp })
            .collect();
        if codec == Compression::None {
            let theirs = kp_encode(base, &recs);
            prop_assert!(ours == theirs, "{} vs {} bytes, first difference at {:?}",
                ours.len(), theirs.len(), ours.iter().zip(&theirs).position(|(a, b)| a != b));
        }
        check_decodes(&ours, base, &recs, TimestampType::CreateTime, -1);
    }

    #[test]
    fn value_only_batches_are_kafka_protocols_bytes(
        recs in value_only(1500, true),
        base in prop_oneof![Just(0i64), 0i64..1i64 << 40],
        feed in feed(),
    ) {
        let headers = header_refs(&recs);
        let records = inputs(&recs, &headers);
        let ours = build(base, BatchOptions::default(), &records, feed);
        let theirs = kp_encode(base, &recs);
        prop_assert!(ours == theirs, "{} vs {} bytes, first difference at {:?}",
            ours.len(), theirs.len(), ours.iter().zip(&theirs).position(|(a, b)| a != b));
        check_decodes(&ours, base, &recs, TimestampType::CreateTime, -1);
        check_encode_record(&ours, &records);
    }

    #[test]
    fn mixed_batches_are_kafka_protocols_bytes(
        recs in mixed(300, true),
        base in 0i64..1i64 << 40,
        feed in feed(),
    ) {
        let headers = header_refs(&recs);
        let records = inputs(&recs, &headers);
        let ours = build(base, BatchOptions::default(), &records, feed);
        let theirs = kp_encode(base, &recs);
        prop_assert!(ours == theirs, "{} vs {} bytes, first difference at {:?}",
            ours.len(), theirs.len(), ours.iter().zip(&theirs).position(|(a, b)| a != b));
        check_encode_record(&ours, &records);
    }

    #[test]
    fn unsorted_compressed_and_log_append_time_batches_decode_to_their_records(
        recs in prop_oneof![value_only(600, false), mixed(200, false)],
        base in 0i64..1i64 << 40,
        feed in feed(),
        codec in prop_oneof![
            Just(Compression::None),
            Just(Compression::Lz4),
            Just(Compression::Zstd),
            Just(Compression::Snappy),
            Just(Compression::Gzip),
        ],
        log_append in any::<bool>(),
    ) {
        let headers = header_refs(&recs);
        let records = inputs(&recs, &headers);
        let ts_type = if log_append {
            TimestampType::LogAppendTime
        } else {
            TimestampType::CreateTime
        };
        let append = 1_750_000_000_123;
        let opts = BatchOptions {
            compression: codec,
            timestamp_type: ts_type,
            log_append_time: append,
            ..Default::default()
        };
        let ours = build(base, opts, &records, feed);
        check_decodes(&ours, base, &recs, ts_type, append);
        if codec == Compression::None {
            check_encode_record(&ours, &records);
        }
    }

    #[test]
    fn kafka_protocol_batches_decode_to_their_records(
        recs in prop_oneof![value_only(800, false), mixed(200, false)],
        base in 0i64..1i64 << 40,
    ) {
        let bytes = kp_encode(base, &recs);
        let view = BatchView::new(&bytes).unwrap();
        view.ensure_valid().unwrap();
        prop_assert_eq!(view.header.size(), bytes.len(), "one batch");
        let owned = |r: &Record| {
            let headers: Vec<(String, Option<Vec<u8>>)> = r
                .headers()
                .iter()
                .map(|(k, v)| (String::from_utf8(k.to_vec()).unwrap(), v.map(<[u8]>::to_vec)))
                .collect();
            (r.offset, r.timestamp, r.key.map(<[u8]>::to_vec), r.value.map(<[u8]>::to_vec), headers)
        };
        let want: Vec<_> = recs
            .iter()
            .enumerate()
            .map(|(i, r)| {
                (base + i as i64, r.timestamp, r.key.clone(), r.value.clone(), r.headers.clone())
            })
            .collect();
        let mut scratch = Vec::new();
        let iterated: Vec<_> = view
            .records(&mut scratch)
            .unwrap()
            .map(|r| owned(&r.unwrap()))
            .collect();
        prop_assert_eq!(&iterated, &want);
        let mut each = Vec::new();
        view.records(&mut scratch)
            .unwrap()
            .for_each_record(|r| each.push(owned(r)))
            .unwrap();
        prop_assert_eq!(&each, &want);
        // The lines loop: each value (empty for null) and a newline, from a start offset.
        let from = base + (recs.len() as i64 / 3);
        let mut next = from;
        let mut lines = b"before".to_vec();
        view.records(&mut scratch)
            .unwrap()
            .lines_into(&mut next, i64::MAX, &mut lines)
            .unwrap();
        let mut want_lines = b"before".to_vec();
        for r in &recs[(from - base) as usize..] {
            want_lines.extend_from_slice(r.value.as_deref().unwrap_or_default());
            want_lines.push(b'\n');
        }
        prop_assert!(lines == want_lines, "lines differ");
        prop_assert_eq!(next, base + recs.len() as i64);
    }
}

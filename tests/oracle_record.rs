//! Independent-oracle tests for the RecordBatch v2 codec (docs/format.md, RecordBatch v2).
//!
//! Nothing here proves the format by our own encode-then-decode:
//! 1. every batch `BatchBuilder` writes is decoded by the `kafka-protocol` crate, its 61-byte
//!    header is parsed by a few fixed-offset reads written here from the notes' table, its CRC is
//!    recomputed with the `crc32c` crate over bytes 21..end, and its records region is inflated by
//!    kafka-protocol's own codecs and compared with kafka-protocol's encoding of the same records;
//! 2. every batch kafka-protocol's `RecordBatchEncoder` writes (each codec it supports) is decoded
//!    by `BatchView` and every field compared with the records handed to the encoder;
//! 3. kafka-protocol batches with one byte flipped after offset 21 fail `ensure_valid` with
//!    `CrcMismatch` carrying the exact stored and recomputed CRCs.
//!
//! Checks collect their failures per table row, so one run reports every mismatching field.

use kafka_protocol::compression::{self as kc, Decompressor};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::records::{
    Compression as KCompression, Record as KRecord, RecordBatchDecoder, RecordBatchEncoder,
    RecordEncodeOptions, TimestampType as KTimestampType,
};
use topicfs::record::{
    BatchBuilder, BatchError, BatchHeader, BatchOptions, BatchView, Compression, RecordInput,
    TimestampType,
};

const CODECS: [Compression; 5] = [
    Compression::None,
    Compression::Gzip,
    Compression::Snappy,
    Compression::Lz4,
    Compression::Zstd,
];
const TS_TYPES: [TimestampType; 2] = [TimestampType::CreateTime, TimestampType::LogAppendTime];
/// 2023-11-14T22:13:20Z, the notes' worked-example timestamp.
const T0: i64 = 1_700_000_000_000;
/// The broker append time stamped on LogAppendTime batches.
const LOG_APPEND_TIME: i64 = 1_750_000_000_123;
const MIB: usize = 1 << 20;

// ---------------------------------------------------------------------------------------------
// Test data: owned records and batch-level settings, shared by both directions.
// ---------------------------------------------------------------------------------------------

#[derive(Clone, Debug, PartialEq, Eq)]
struct Rec {
    key: Option<Vec<u8>>,
    value: Option<Vec<u8>>,
    headers: Vec<(String, Option<Vec<u8>>)>,
    timestamp: i64,
}

impl Rec {
    fn new(key: Option<&[u8]>, value: Option<&[u8]>, timestamp: i64) -> Rec {
        Rec {
            key: key.map(<[u8]>::to_vec),
            value: value.map(<[u8]>::to_vec),
            headers: Vec::new(),
            timestamp,
        }
    }
    fn header(mut self, k: &str, v: Option<&[u8]>) -> Rec {
        self.headers.push((k.to_string(), v.map(<[u8]>::to_vec)));
        self
    }
}

/// Batch-level fields (everything except the codec and the timestamp type).
#[derive(Clone, Copy, Debug)]
struct Spec {
    base_offset: i64,
    partition_leader_epoch: i32,
    producer_id: i64,
    producer_epoch: i16,
    base_sequence: i32,
    transactional: bool,
    control: bool,
    /// Attribute bit 6 (set by the log cleaner); only kafka-protocol can write it.
    delete_horizon: bool,
}

const PLAIN: Spec = Spec {
    base_offset: 0,
    partition_leader_epoch: 0,
    producer_id: -1,
    producer_epoch: -1,
    base_sequence: -1,
    transactional: false,
    control: false,
    delete_horizon: false,
};
const IDEMPOTENT: Spec = Spec {
    partition_leader_epoch: 7,
    producer_id: 9_876_543_210,
    producer_epoch: 12,
    base_sequence: 1_000,
    ..PLAIN
};
const TRANSACTIONAL: Spec = Spec {
    partition_leader_epoch: 3,
    producer_id: 77,
    producer_epoch: 2,
    base_sequence: 0,
    transactional: true,
    ..PLAIN
};
/// A transaction marker batch: control + transactional, no sequence (as the coordinator writes).
const CONTROL: Spec = Spec {
    base_sequence: -1,
    control: true,
    ..TRANSACTIONAL
};
/// Sequence numbers that wrap past i32::MAX within the batch.
const SEQ_WRAP: Spec = Spec {
    producer_id: 5,
    producer_epoch: 0,
    base_sequence: i32::MAX - 1,
    ..PLAIN
};

/// Batch-level fields and the records of one batch.
type Segment = (Spec, Vec<Rec>);
type Segments = Vec<Segment>;

fn at(spec: Spec, base_offset: i64) -> Spec {
    Spec {
        base_offset,
        ..spec
    }
}

/// Deterministic pseudo-random bytes (xorshift64*), with a small alphabet every 4th byte so the
/// codecs have something to find.
fn noise(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed | 1;
    (0..len)
        .map(|i| {
            x ^= x >> 12;
            x ^= x << 25;
            x ^= x >> 27;
            let r = (x.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 56) as u8;
            if i % 4 == 0 { b'a' + r % 8 } else { r }
        })
        .collect()
}

fn single_null_key() -> Vec<Rec> {
    vec![Rec::new(None, Some(b"hello"), T0)]
}

fn keys_and_headers() -> Vec<Rec> {
    let long_header = vec![0xA5; 300]; // 2-byte varint length
    vec![
        Rec::new(Some(b"k0"), Some(b"v0"), T0)
            .header("h1", Some(b"x"))
            .header("null-valued", None),
        // Empty is not null: both must come back as Some(empty).
        Rec::new(Some(b""), Some(b""), T0 + 1).header("empty", Some(b"")),
        Rec::new(None, Some(b"no key"), T0 + 2),
        Rec::new(Some("clé".as_bytes()), Some(&[0, 255, 128, 1]), T0 + 3)
            .header("ünïcode", Some("värde".as_bytes()))
            .header("a", Some(b"1"))
            .header("b", None)
            .header("long", Some(&long_header))
            .header("", Some(b"empty header key")),
        Rec::new(Some(&noise(200, 3)), Some(&noise(5_000, 4)), T0 + 1_000),
    ]
}

fn tombstones() -> Vec<Rec> {
    vec![
        Rec::new(Some(b"user-1"), None, T0),
        Rec::new(Some(b"user-2"), Some(b"alive"), T0 + 5),
        Rec::new(Some(b"user-3"), None, T0 + 5).header("reason", None),
        Rec::new(None, None, T0 + 9),
    ]
}

/// First timestamp is neither the minimum nor the maximum; deltas go far negative and positive
/// (multi-byte varlongs both ways).
fn out_of_order() -> Vec<Rec> {
    [
        T0 + 5_000,
        T0,
        T0 + 10_000,
        0,
        T0 - 1,
        4_102_444_800_000,
        T0 + 5_000,
    ]
    .iter()
    .enumerate()
    .map(|(i, &ts)| Rec::new(Some(format!("k{i}").as_bytes()), Some(b"v"), ts))
    .collect()
}

fn ten_thousand() -> Vec<Rec> {
    (0..10_000u32)
        .map(|i| {
            let key = format!("key-{}", i % 977);
            let value = format!("value {i} {}", "x".repeat((i % 50) as usize));
            let mut r = Rec::new(
                (i % 7 != 0).then_some(key.as_bytes()),
                (i % 13 != 0).then_some(value.as_bytes()),
                T0 + (i as i64) * 3 + (i as i64 % 5),
            );
            if i % 100 == 0 {
                r = r
                    .header("seq", Some(i.to_string().as_bytes()))
                    .header("n", None);
            }
            r
        })
        .collect()
}

fn one_mib_value() -> Vec<Rec> {
    vec![
        Rec::new(Some(b"big"), Some(&noise(MIB, 11)), T0).header("size", Some(b"1MiB")),
        Rec::new(Some(b"after"), Some(b"small"), T0 + 1),
        Rec::new(None, Some(&noise(MIB + 17, 12)), T0 + 2),
    ]
}

/// One COMMIT marker: key = version 0 + type 1; value = version 0 + coordinator epoch 9.
fn commit_marker() -> Vec<Rec> {
    vec![Rec::new(
        Some(&[0, 0, 0, 1]),
        Some(&[0, 0, 0, 0, 0, 9]),
        T0 + 50,
    )]
}

// ---------------------------------------------------------------------------------------------
// Oracle-side helpers: fixed-offset header parse, zigzag sizes, kafka-protocol glue.
// ---------------------------------------------------------------------------------------------

/// The 61-byte v2 header, read at the offsets of docs/format.md, Batch header (independent of
/// `BatchHeader::parse`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct RawHeader {
    base_offset: i64,
    length: i32,
    partition_leader_epoch: i32,
    magic: i8,
    crc: u32,
    attributes: i16,
    last_offset_delta: i32,
    base_timestamp: i64,
    max_timestamp: i64,
    producer_id: i64,
    producer_epoch: i16,
    base_sequence: i32,
    records_count: i32,
}

fn raw_header(b: &[u8]) -> RawHeader {
    let i64_at = |o: usize| i64::from_be_bytes(b[o..o + 8].try_into().unwrap());
    let i32_at = |o: usize| i32::from_be_bytes(b[o..o + 4].try_into().unwrap());
    let i16_at = |o: usize| i16::from_be_bytes(b[o..o + 2].try_into().unwrap());
    RawHeader {
        base_offset: i64_at(0),
        length: i32_at(8),
        partition_leader_epoch: i32_at(12),
        magic: b[16] as i8,
        crc: u32::from_be_bytes(b[17..21].try_into().unwrap()),
        attributes: i16_at(21),
        last_offset_delta: i32_at(23),
        base_timestamp: i64_at(27),
        max_timestamp: i64_at(35),
        producer_id: i64_at(43),
        producer_epoch: i16_at(51),
        base_sequence: i32_at(53),
        records_count: i32_at(57),
    }
}

/// Attributes as docs/format.md (Attributes) defines them.
fn want_attributes(codec: Compression, ts: TimestampType, spec: &Spec) -> i16 {
    let id = match codec {
        Compression::None => 0,
        Compression::Gzip => 1,
        Compression::Snappy => 2,
        Compression::Lz4 => 3,
        Compression::Zstd => 4,
    };
    id | if ts == TimestampType::LogAppendTime {
        0x08
    } else {
        0
    } | if spec.transactional { 0x10 } else { 0 }
        | if spec.control { 0x20 } else { 0 }
        | if spec.delete_horizon { 0x40 } else { 0 }
}

fn zigzag_size(v: i64) -> usize {
    let mut u = ((v << 1) ^ (v >> 63)) as u64;
    let mut n = 1;
    while u >= 0x80 {
        u >>= 7;
        n += 1;
    }
    n
}

fn field_size(b: Option<&[u8]>) -> usize {
    b.map_or(1, |b| zigzag_size(b.len() as i64) + b.len())
}

/// Size of one encoded record, length prefix included (`DefaultRecord.sizeInBytes`).
fn record_size(r: &Rec, offset_delta: i64, ts_delta: i64) -> usize {
    let mut body = 1 + zigzag_size(ts_delta) + zigzag_size(offset_delta);
    body += field_size(r.key.as_deref()) + field_size(r.value.as_deref());
    body += zigzag_size(r.headers.len() as i64);
    for (k, v) in &r.headers {
        body += field_size(Some(k.as_bytes())) + field_size(v.as_deref());
    }
    zigzag_size(body as i64) + body
}

/// Kafka's `DefaultRecordBatch.incrementSequence`.
fn kafka_increment_sequence(sequence: i32, increment: i32) -> i32 {
    if sequence > i32::MAX - increment {
        increment - (i32::MAX - sequence) - 1
    } else {
        sequence + increment
    }
}

fn kp_codec(c: Compression) -> KCompression {
    match c {
        Compression::None => KCompression::None,
        Compression::Gzip => KCompression::Gzip,
        Compression::Snappy => KCompression::Snappy,
        Compression::Lz4 => KCompression::Lz4,
        Compression::Zstd => KCompression::Zstd,
    }
}

fn kp_ts_type(t: TimestampType) -> KTimestampType {
    match t {
        TimestampType::CreateTime => KTimestampType::Creation,
        TimestampType::LogAppendTime => KTimestampType::LogAppend,
    }
}

/// Inflates a records region with kafka-protocol's own codec implementations.
fn kp_decompress(codec: Compression, region: &[u8]) -> Result<Vec<u8>, String> {
    let mut b: &[u8] = region;
    let r = match codec {
        Compression::None => return Ok(region.to_vec()),
        Compression::Gzip => kc::Gzip::decompress(&mut b, |p| Ok(p.to_vec())),
        Compression::Snappy => kc::Snappy::decompress(&mut b, |p| Ok(p.to_vec())),
        Compression::Lz4 => kc::Lz4::decompress(&mut b, |p| Ok(p.to_vec())),
        Compression::Zstd => kc::Zstd::decompress(&mut b, |p| Ok(p.to_vec())),
    };
    r.map_err(|e| format!("{e:#}"))
}

fn kp_records(spec: &Spec, recs: &[Rec]) -> Vec<KRecord> {
    recs.iter()
        .enumerate()
        .map(|(i, r)| KRecord {
            transactional: spec.transactional,
            control: spec.control,
            delete_horizon: spec.delete_horizon,
            partition_leader_epoch: spec.partition_leader_epoch,
            producer_id: spec.producer_id,
            producer_epoch: spec.producer_epoch,
            sequence: spec.base_sequence.wrapping_add(i as i32),
            timestamp_type: KTimestampType::Creation,
            offset: spec.base_offset + i as i64,
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

/// kafka-protocol's encoding of consecutive segments (it starts a new batch whenever the
/// batch-level fields change).
fn kp_encode(segments: &[Segment], codec: Compression) -> Vec<u8> {
    let records: Vec<KRecord> = segments
        .iter()
        .flat_map(|(spec, recs)| kp_records(spec, recs))
        .collect();
    let mut out = Vec::new();
    RecordBatchEncoder::encode(
        &mut out,
        &records,
        &RecordEncodeOptions {
            version: 2,
            compression: kp_codec(codec),
        },
    )
    .unwrap_or_else(|e| panic!("kafka-protocol cannot encode {codec:?}: {e:#}"));
    out
}

fn options(spec: &Spec, codec: Compression, ts: TimestampType) -> BatchOptions {
    BatchOptions {
        compression: codec,
        timestamp_type: ts,
        log_append_time: LOG_APPEND_TIME,
        partition_leader_epoch: spec.partition_leader_epoch,
        producer_id: spec.producer_id,
        producer_epoch: spec.producer_epoch,
        base_sequence: spec.base_sequence,
        transactional: spec.transactional,
        control: spec.control,
    }
}

fn build_ours(b: &mut BatchBuilder, spec: &Spec, opts: BatchOptions, recs: &[Rec]) -> Vec<u8> {
    b.begin(spec.base_offset, opts);
    for r in recs {
        let headers: Vec<(&[u8], Option<&[u8]>)> = r
            .headers
            .iter()
            .map(|(k, v)| (k.as_bytes(), v.as_deref()))
            .collect();
        b.add(&RecordInput {
            key: r.key.as_deref(),
            value: r.value.as_deref(),
            headers: &headers,
            timestamp: r.timestamp,
        });
    }
    b.finish().expect("BatchBuilder::finish").to_vec()
}

/// Compares two byte fields without dumping megabytes into the failure message.
fn diff_bytes(got: Option<&[u8]>, want: Option<&[u8]>) -> Option<String> {
    match (got, want) {
        (None, None) => None,
        (Some(g), Some(w)) if g == w => None,
        (Some(g), Some(w)) => {
            let first = g.iter().zip(w).position(|(a, b)| a != b);
            Some(format!(
                "len {} vs want {}, first difference at {first:?}",
                g.len(),
                w.len()
            ))
        }
        (g, w) => Some(format!(
            "got {}, want {}",
            g.map_or("null".into(), |g| format!("{} bytes", g.len())),
            w.map_or("null".into(), |w| format!("{} bytes", w.len()))
        )),
    }
}

struct Errors {
    ctx: String,
    list: Vec<String>,
}

impl Errors {
    fn new(ctx: String) -> Errors {
        Errors {
            ctx,
            list: Vec::new(),
        }
    }
    fn eq<T: PartialEq + std::fmt::Debug>(
        &mut self,
        what: impl std::fmt::Display,
        got: T,
        want: T,
    ) {
        if got != want {
            self.push(format!("{what}: got {got:?}, want {want:?}"));
        }
    }
    fn bytes(&mut self, what: impl std::fmt::Display, got: Option<&[u8]>, want: Option<&[u8]>) {
        if let Some(d) = diff_bytes(got, want) {
            self.push(format!("{what}: {d}"));
        }
    }
    fn push(&mut self, msg: String) {
        if self.list.len() < 40 {
            self.list.push(format!("[{}] {msg}", self.ctx));
        }
    }
}

fn report(all: Vec<String>) {
    assert!(
        all.is_empty(),
        "{} mismatch(es):\n{}",
        all.len(),
        all.join("\n")
    );
}

// ---------------------------------------------------------------------------------------------
// 1. Our BatchBuilder -> kafka-protocol (+ independent header parse and CRC-32C).
// ---------------------------------------------------------------------------------------------

struct OursCase {
    name: &'static str,
    spec: Spec,
    records: fn() -> Vec<Rec>,
}

fn ours_cases() -> Vec<OursCase> {
    vec![
        OursCase {
            name: "one record, null key",
            spec: PLAIN,
            records: single_null_key,
        },
        OursCase {
            name: "keys, headers, null header values",
            spec: at(PLAIN, 1_234),
            records: keys_and_headers,
        },
        OursCase {
            name: "tombstones, idempotent producer, base offset > i32",
            spec: at(IDEMPOTENT, 5_000_000_000),
            records: tombstones,
        },
        OursCase {
            name: "out-of-order timestamps",
            spec: PLAIN,
            records: out_of_order,
        },
        OursCase {
            name: "transactional",
            spec: at(TRANSACTIONAL, 42),
            records: keys_and_headers,
        },
        OursCase {
            name: "control COMMIT marker",
            spec: at(CONTROL, 47),
            records: commit_marker,
        },
        OursCase {
            name: "sequence wraps past i32::MAX",
            spec: at(SEQ_WRAP, 9),
            records: tombstones,
        },
        OursCase {
            name: "10,000 records",
            spec: at(IDEMPOTENT, 100_000),
            records: ten_thousand,
        },
        OursCase {
            name: "1 MiB values",
            spec: at(PLAIN, 7),
            records: one_mib_value,
        },
    ]
}

/// The header of one of our batches, read independently, against what the notes say we must
/// have written.
fn check_our_header(
    e: &mut Errors,
    bytes: &[u8],
    spec: &Spec,
    codec: Compression,
    ts: TimestampType,
    recs: &[Rec],
) {
    let n = recs.len();
    let h = raw_header(bytes);
    let want_max_ts = match ts {
        TimestampType::LogAppendTime => LOG_APPEND_TIME,
        TimestampType::CreateTime => recs.iter().map(|r| r.timestamp).max().unwrap(),
    };
    e.eq("baseOffset", h.base_offset, spec.base_offset);
    e.eq("length", h.length as usize, bytes.len() - 12);
    e.eq(
        "partitionLeaderEpoch",
        h.partition_leader_epoch,
        spec.partition_leader_epoch,
    );
    e.eq("magic", h.magic, 2);
    e.eq(
        "crc (crc32c over 21..end)",
        h.crc,
        crc32c::crc32c(&bytes[21..]),
    );
    e.eq("attributes", h.attributes, want_attributes(codec, ts, spec));
    e.eq("lastOffsetDelta", h.last_offset_delta, n as i32 - 1);
    e.eq("baseTimestamp", h.base_timestamp, recs[0].timestamp);
    e.eq("maxTimestamp", h.max_timestamp, want_max_ts);
    e.eq("producerId", h.producer_id, spec.producer_id);
    e.eq("producerEpoch", h.producer_epoch, spec.producer_epoch);
    e.eq("baseSequence", h.base_sequence, spec.base_sequence);
    e.eq("recordsCount", h.records_count, n as i32);
}

/// Record `i` as kafka-protocol decoded it (`k`) against the one we wrote (`r`).
fn check_kp_record(e: &mut Errors, i: usize, k: &KRecord, r: &Rec, spec: &Spec, ts: TimestampType) {
    // kafka-protocol reports base + delta even for LogAppendTime, i.e. the stored create time.
    e.eq(
        format_args!("#{i} offset"),
        k.offset,
        spec.base_offset + i as i64,
    );
    e.eq(format_args!("#{i} timestamp"), k.timestamp, r.timestamp);
    e.eq(
        format_args!("#{i} timestamp type"),
        k.timestamp_type,
        kp_ts_type(ts),
    );
    e.bytes(format_args!("#{i} key"), k.key.as_deref(), r.key.as_deref());
    e.bytes(
        format_args!("#{i} value"),
        k.value.as_deref(),
        r.value.as_deref(),
    );
    let headers: Vec<(String, Option<Vec<u8>>)> = k
        .headers
        .iter()
        .map(|(hk, hv)| (hk.to_string(), hv.as_ref().map(|b| b.to_vec())))
        .collect();
    e.eq(format_args!("#{i} headers"), &headers, &r.headers);
    e.eq(
        format_args!("#{i} transactional"),
        k.transactional,
        spec.transactional,
    );
    e.eq(format_args!("#{i} control"), k.control, spec.control);
    e.eq(format_args!("#{i} delete horizon"), k.delete_horizon, false);
    e.eq(
        format_args!("#{i} leader epoch"),
        k.partition_leader_epoch,
        spec.partition_leader_epoch,
    );
    e.eq(
        format_args!("#{i} producer id"),
        k.producer_id,
        spec.producer_id,
    );
    e.eq(
        format_args!("#{i} producer epoch"),
        k.producer_epoch,
        spec.producer_epoch,
    );
    e.eq(
        format_args!("#{i} sequence"),
        k.sequence,
        spec.base_sequence.wrapping_add(i as i32),
    );
}

/// Every check of one of our batches against kafka-protocol and the notes.
fn check_ours(
    e: &mut Errors,
    bytes: &[u8],
    spec: &Spec,
    codec: Compression,
    ts: TimestampType,
    recs: &[Rec],
) {
    let n = recs.len();

    // Header, read independently, against what the notes say we must have written.
    check_our_header(e, bytes, spec, codec, ts, recs);

    // kafka-protocol: validates the CRC itself, then decodes every record.
    let mut input: &[u8] = bytes;
    let set = match RecordBatchDecoder::decode(&mut input) {
        Ok(s) => s,
        Err(err) => return e.push(format!("kafka-protocol rejects the batch: {err:#}")),
    };
    e.eq("bytes left after kafka-protocol decode", input.len(), 0);
    e.eq("kafka-protocol version", set.version, 2);
    e.eq(
        "kafka-protocol compression",
        set.compression,
        kp_codec(codec),
    );
    e.eq("kafka-protocol record count", set.records.len(), n);
    for (i, (k, r)) in set.records.iter().zip(recs).enumerate() {
        check_kp_record(e, i, k, r, spec, ts);
    }

    // The records region, inflated by kafka-protocol's codecs, holds exactly the n records and
    // nothing after them (kafka-protocol's decoder does not check for trailing bytes).
    let plain = match kp_decompress(codec, &bytes[61..]) {
        Ok(p) => p,
        Err(err) => return e.push(format!("kafka-protocol cannot inflate: {err}")),
    };
    let want_len: usize = recs
        .iter()
        .enumerate()
        .map(|(i, r)| record_size(r, i as i64, r.timestamp.wrapping_sub(recs[0].timestamp)))
        .sum();
    e.eq("records region length", plain.len(), want_len);

    // Byte equality with kafka-protocol's encoder where both must agree: it uses the minimum
    // timestamp as baseTimestamp, Kafka (and we) the first record's.
    let min_ts = recs.iter().map(|r| r.timestamp).min().unwrap();
    if recs[0].timestamp == min_ts {
        let theirs = kp_encode(&[(*spec, recs.to_vec())], Compression::None);
        if let Some(d) = diff_bytes(Some(&plain), Some(&theirs[61..])) {
            e.push(format!(
                "records region differs from kafka-protocol's encoding: {d}"
            ));
        }
        if codec == Compression::None
            && ts == TimestampType::CreateTime
            && let Some(d) = diff_bytes(Some(bytes), Some(&theirs))
        {
            e.push(format!("batch differs from kafka-protocol's encoding: {d}"));
        }
    }
}

#[test]
fn our_batches_decode_in_kafka_protocol_field_for_field() {
    // One builder for the whole table: reusing its buffers must not leak between batches.
    let mut builder = BatchBuilder::new();
    let mut all = Vec::new();
    let mut runs = 0;
    for case in ours_cases() {
        let recs = (case.records)();
        for codec in CODECS {
            for ts in TS_TYPES {
                let bytes = build_ours(
                    &mut builder,
                    &case.spec,
                    options(&case.spec, codec, ts),
                    &recs,
                );
                let mut e =
                    Errors::new(format!("{} / {} / {}", case.name, codec.name(), ts.name()));
                check_ours(&mut e, &bytes, &case.spec, codec, ts, &recs);
                all.extend(e.list);
                runs += 1;
            }
        }
    }
    assert_eq!(runs, 9 * 5 * 2);
    report(all);
}

#[test]
fn concatenated_batches_decode_as_a_log_in_kafka_protocol() {
    // A .log file is batches back to back: one per codec, alternating timestamp types.
    let mut builder = BatchBuilder::new();
    let mut log = Vec::new();
    let mut want = Vec::new(); // (offset, value, timestamp type)
    let mut next = 0i64;
    for (i, codec) in CODECS.iter().enumerate() {
        let ts = TS_TYPES[i % 2];
        let recs: Vec<Rec> = (0..=i)
            .map(|j| {
                let v = format!("{}-{j}", codec.name());
                Rec::new(None, Some(v.as_bytes()), T0 + j as i64)
            })
            .collect();
        let spec = at(PLAIN, next);
        log.extend_from_slice(&build_ours(
            &mut builder,
            &spec,
            options(&spec, *codec, ts),
            &recs,
        ));
        for r in &recs {
            want.push((next, r.value.clone(), kp_ts_type(ts)));
            next += 1;
        }
    }
    let mut input: &[u8] = &log;
    let sets = RecordBatchDecoder::decode_all(&mut input).expect("kafka-protocol decode_all");
    let codecs: Vec<KCompression> = sets.iter().map(|s| s.compression).collect();
    assert_eq!(codecs, CODECS.map(kp_codec));
    let got: Vec<_> = sets
        .iter()
        .flat_map(|s| &s.records)
        .map(|r| {
            (
                r.offset,
                r.value.as_ref().map(|v| v.to_vec()),
                r.timestamp_type,
            )
        })
        .collect();
    assert_eq!(got, want);
}

// ---------------------------------------------------------------------------------------------
// 2. kafka-protocol's RecordBatchEncoder -> our BatchView.
// ---------------------------------------------------------------------------------------------

struct TheirsCase {
    name: &'static str,
    /// Consecutive segments; kafka-protocol writes one batch per segment.
    segments: Segments,
}

fn theirs_cases() -> Vec<TheirsCase> {
    let mut mixed = keys_and_headers();
    mixed.extend(tombstones());
    vec![
        TheirsCase {
            name: "one record, null key",
            segments: vec![(PLAIN, single_null_key())],
        },
        TheirsCase {
            name: "keys, headers, null header values, tombstones",
            segments: vec![(
                Spec {
                    partition_leader_epoch: 4,
                    ..at(PLAIN, 1_000)
                },
                mixed,
            )],
        },
        TheirsCase {
            name: "out-of-order timestamps",
            segments: vec![(at(PLAIN, 3), out_of_order())],
        },
        TheirsCase {
            name: "transactional idempotent",
            segments: vec![(at(TRANSACTIONAL, 5_000_000_000), keys_and_headers())],
        },
        TheirsCase {
            name: "control COMMIT marker",
            segments: vec![(at(CONTROL, 12), commit_marker())],
        },
        TheirsCase {
            name: "sequence wraps past i32::MAX",
            segments: vec![(at(SEQ_WRAP, 0), tombstones())],
        },
        TheirsCase {
            name: "three batches: plain, transactional, marker",
            segments: vec![
                (at(PLAIN, 100), tombstones()),
                (at(TRANSACTIONAL, 104), keys_and_headers()),
                (at(CONTROL, 109), commit_marker()),
            ],
        },
        TheirsCase {
            name: "delete horizon set (compacted tombstones)",
            segments: vec![(
                Spec {
                    delete_horizon: true,
                    ..at(PLAIN, 40)
                },
                tombstones(),
            )],
        },
        TheirsCase {
            name: "10,000 records",
            segments: vec![(at(IDEMPOTENT, 0), ten_thousand())],
        },
        TheirsCase {
            name: "1 MiB values",
            segments: vec![(at(PLAIN, 77), one_mib_value())],
        },
    ]
}

/// What a broker does to a batch on LogAppendTime topics (`setMaxTimestamp`): set attribute bit 3,
/// write the append time as maxTimestamp, recompute the CRC. Applied to every batch of `log`.
fn stamp_log_append_time(log: &mut [u8], append_time: i64) {
    let mut pos = 0;
    while pos < log.len() {
        let size = 12 + i32::from_be_bytes(log[pos + 8..pos + 12].try_into().unwrap()) as usize;
        let b = &mut log[pos..pos + size];
        b[22] |= 0x08;
        b[35..43].copy_from_slice(&append_time.to_be_bytes());
        let crc = crc32c::crc32c(&b[21..]);
        b[17..21].copy_from_slice(&crc.to_be_bytes());
        pos += size;
    }
}

/// The offsets, timestamps, producer fields and count of batch `b`'s header `h`.
fn check_their_offsets(
    e: &mut Errors,
    b: usize,
    h: &BatchHeader,
    spec: &Spec,
    recs: &[Rec],
    ts: TimestampType,
) {
    let n = recs.len();
    let min_ts = recs.iter().map(|r| r.timestamp).min().unwrap();
    let max_ts = match ts {
        TimestampType::LogAppendTime => LOG_APPEND_TIME,
        TimestampType::CreateTime => recs.iter().map(|r| r.timestamp).max().unwrap(),
    };
    e.eq(
        format_args!("batch {b} last_offset_delta"),
        h.last_offset_delta,
        n as i32 - 1,
    );
    e.eq(
        format_args!("batch {b} last_offset"),
        h.last_offset(),
        spec.base_offset + n as i64 - 1,
    );
    e.eq(
        format_args!("batch {b} next_offset"),
        h.next_offset(),
        spec.base_offset + n as i64,
    );
    e.eq(
        format_args!("batch {b} base_timestamp"),
        h.base_timestamp,
        min_ts,
    );
    e.eq(
        format_args!("batch {b} max_timestamp"),
        h.max_timestamp,
        max_ts,
    );
    e.eq(
        format_args!("batch {b} producer_id"),
        h.producer_id,
        spec.producer_id,
    );
    e.eq(
        format_args!("batch {b} producer_epoch"),
        h.producer_epoch,
        spec.producer_epoch,
    );
    e.eq(
        format_args!("batch {b} base_sequence"),
        h.base_sequence,
        spec.base_sequence,
    );
    let want_last_seq = if spec.base_sequence < 0 {
        -1
    } else {
        kafka_increment_sequence(spec.base_sequence, n as i32 - 1)
    };
    e.eq(
        format_args!("batch {b} last_sequence"),
        h.last_sequence(),
        want_last_seq,
    );
    e.eq(
        format_args!("batch {b} records_count"),
        h.records_count,
        n as i32,
    );
}

/// The header of batch `b` of kafka-protocol's encoding, as [`BatchView`] reads it, against
/// the header read independently (`raw`) and what was encoded.
fn check_their_header(
    e: &mut Errors,
    b: usize,
    view: &BatchView<'_>,
    raw: &RawHeader,
    (spec, recs): &Segment,
    codec: Compression,
    ts: TimestampType,
) {
    let h = view.header;
    let min_ts = recs.iter().map(|r| r.timestamp).min().unwrap();
    if let Err(err) = view.ensure_valid() {
        e.push(format!("batch {b}: ensure_valid: {err}"));
    }
    e.eq(format_args!("batch {b} is_valid"), view.is_valid(), true);
    e.eq(
        format_args!("batch {b} compute_crc"),
        view.compute_crc(),
        raw.crc,
    );
    e.eq(
        format_args!("batch {b} bytes"),
        view.bytes.len(),
        raw.length as usize + 12,
    );
    e.eq(
        format_args!("batch {b} size()"),
        h.size(),
        raw.length as usize + 12,
    );
    e.eq(
        format_args!("batch {b} base_offset"),
        h.base_offset,
        spec.base_offset,
    );
    e.eq(format_args!("batch {b} length"), h.length, raw.length);
    e.eq(
        format_args!("batch {b} leader epoch"),
        h.partition_leader_epoch,
        spec.partition_leader_epoch,
    );
    e.eq(format_args!("batch {b} magic"), h.magic, 2);
    e.eq(format_args!("batch {b} crc"), h.crc, raw.crc);
    e.eq(
        format_args!("batch {b} attributes"),
        h.attributes,
        want_attributes(codec, ts, spec),
    );
    e.eq(
        format_args!("batch {b} compression"),
        h.compression(),
        Ok(codec),
    );
    e.eq(
        format_args!("batch {b} timestamp type"),
        h.timestamp_type(),
        ts,
    );
    e.eq(
        format_args!("batch {b} transactional"),
        h.is_transactional(),
        spec.transactional,
    );
    e.eq(
        format_args!("batch {b} control"),
        h.is_control(),
        spec.control,
    );
    e.eq(
        format_args!("batch {b} delete horizon"),
        h.delete_horizon_ms(),
        spec.delete_horizon.then_some(min_ts),
    );
    check_their_offsets(e, b, &h, spec, recs, ts);
}

/// Record `i` of batch `b` as [`BatchView::records`] decodes it, against the one encoded.
fn check_their_record(
    e: &mut Errors,
    b: usize,
    i: usize,
    rec: &topicfs::record::Record<'_>,
    r: &Rec,
    spec: &Spec,
    ts: TimestampType,
) {
    let want_ts = match ts {
        TimestampType::LogAppendTime => LOG_APPEND_TIME,
        TimestampType::CreateTime => r.timestamp,
    };
    e.eq(
        format_args!("batch {b} #{i} offset"),
        rec.offset,
        spec.base_offset + i as i64,
    );
    e.eq(
        format_args!("batch {b} #{i} timestamp"),
        rec.timestamp,
        want_ts,
    );
    e.bytes(
        format_args!("batch {b} #{i} key"),
        rec.key,
        r.key.as_deref(),
    );
    e.bytes(
        format_args!("batch {b} #{i} value"),
        rec.value,
        r.value.as_deref(),
    );
    e.eq(
        format_args!("batch {b} #{i} header_count"),
        rec.header_count,
        r.headers.len() as i32,
    );
    let headers: Vec<(String, Option<Vec<u8>>)> = rec
        .headers()
        .into_iter()
        .map(|(k, v)| {
            (
                String::from_utf8_lossy(k).into_owned(),
                v.map(<[u8]>::to_vec),
            )
        })
        .collect();
    e.eq(format_args!("batch {b} #{i} headers"), &headers, &r.headers);
}

fn check_theirs(
    e: &mut Errors,
    log: &[u8],
    segments: &[Segment],
    codec: Compression,
    ts: TimestampType,
) {
    let mut pos = 0;
    let mut scratch = Vec::new();
    for (b, (spec, recs)) in segments.iter().enumerate() {
        let n = recs.len();
        let view = match BatchView::new(&log[pos..]) {
            Ok(v) => v,
            Err(err) => return e.push(format!("batch {b}: BatchView::new: {err}")),
        };
        let h = view.header;
        let raw = raw_header(&log[pos..]);
        check_their_header(e, b, &view, &raw, &segments[b], codec, ts);

        let iter = match view.records(&mut scratch) {
            Ok(it) => it,
            Err(err) => return e.push(format!("batch {b}: records(): {err}")),
        };
        let mut count = 0;
        for (i, rec) in iter.enumerate() {
            count += 1;
            let rec = match rec {
                Ok(r) => r,
                Err(err) => {
                    e.push(format!("batch {b} #{i}: {err}"));
                    break;
                }
            };
            let Some(r) = recs.get(i) else {
                e.push(format!("batch {b}: record #{i} beyond the {n} encoded"));
                break;
            };
            check_their_record(e, b, i, &rec, r, spec, ts);
        }
        e.eq(format_args!("batch {b} records iterated"), count, n);
        pos += h.size();
    }
    e.eq("bytes after the last batch", log.len() - pos, 0);
}

#[test]
fn kafka_protocol_batches_decode_through_batch_view() {
    let mut all = Vec::new();
    let mut runs = 0;
    for case in theirs_cases() {
        for codec in CODECS {
            let mut log = kp_encode(&case.segments, codec);
            for ts in TS_TYPES {
                if ts == TimestampType::LogAppendTime {
                    // kafka-protocol's encoder never sets the timestamp-type bit; stamp it as a
                    // broker would, and make sure kafka-protocol still accepts the result.
                    stamp_log_append_time(&mut log, LOG_APPEND_TIME);
                    let mut input: &[u8] = &log;
                    let sets = RecordBatchDecoder::decode_all(&mut input)
                        .expect("kafka-protocol rejects its own batch after stamping");
                    assert!(
                        sets.iter()
                            .flat_map(|s| &s.records)
                            .all(|r| r.timestamp_type == KTimestampType::LogAppend)
                    );
                }
                let mut e =
                    Errors::new(format!("{} / {} / {}", case.name, codec.name(), ts.name()));
                check_theirs(&mut e, &log, &case.segments, codec, ts);
                all.extend(e.list);
                runs += 1;
            }
        }
    }
    assert_eq!(runs, 10 * 5 * 2);
    report(all);
}

// ---------------------------------------------------------------------------------------------
// 3. Corruption of kafka-protocol batches.
// ---------------------------------------------------------------------------------------------

/// What our reader must say about a batch with one byte changed.
#[derive(Debug, Clone, Copy)]
enum Flip {
    /// Inside the CRC-covered region (or the CRC itself): `CrcMismatch`.
    Crc,
    /// baseOffset / partitionLeaderEpoch are not covered by the CRC: still valid.
    Uncovered,
    /// The magic byte: rejected before anything else.
    Magic,
}

/// What our reader and kafka-protocol say about `bad`, one byte changed as `expect` says;
/// each disagreement with `expect` goes to `all`, named by `ctx`.
fn check_flip(bad: &[u8], expect: Flip, ctx: &str, all: &mut Vec<String>) {
    let view = BatchView::new(bad);
    let kp = RecordBatchDecoder::decode(&mut &bad[..]);
    match expect {
        Flip::Crc => {
            let want = BatchError::CrcMismatch {
                stored: u32::from_be_bytes(bad[17..21].try_into().unwrap()),
                computed: crc32c::crc32c(&bad[21..]),
            };
            match view {
                Ok(v) => {
                    if v.ensure_valid() != Err(want.clone()) {
                        all.push(format!(
                            "[{ctx}] ensure_valid = {:?}, want Err({want:?})",
                            v.ensure_valid()
                        ));
                    }
                    if v.is_valid() {
                        all.push(format!("[{ctx}] is_valid() is true"));
                    }
                }
                Err(err) => all.push(format!("[{ctx}] BatchView::new: {err}")),
            }
            if kp.is_ok() {
                all.push(format!(
                    "[{ctx}] kafka-protocol accepted it: flip not meaningful"
                ));
            }
        }
        Flip::Uncovered => match view {
            Ok(v) => {
                if let Err(err) = v.ensure_valid() {
                    all.push(format!(
                        "[{ctx}] ensure_valid failed outside the CRC range: {err}"
                    ));
                }
                if kp.is_err() {
                    all.push(format!("[{ctx}] kafka-protocol rejected it"));
                }
            }
            Err(err) => all.push(format!("[{ctx}] BatchView::new: {err}")),
        },
        Flip::Magic => {
            let want = Err(BatchError::UnsupportedMagic(bad[16] as i8));
            let got = view.map(|_| ());
            if got != want {
                all.push(format!("[{ctx}] BatchView::new = {got:?}, want {want:?}"));
            }
        }
    }
}

#[test]
fn corrupted_kafka_protocol_batches_fail_ensure_valid() {
    let spec = at(TRANSACTIONAL, 300);
    let mut all = Vec::new();
    for codec in CODECS {
        let good = kp_encode(&[(spec, keys_and_headers())], codec);
        let len = good.len();
        let stored = u32::from_be_bytes(good[17..21].try_into().unwrap());
        assert_eq!(
            stored,
            crc32c::crc32c(&good[21..]),
            "{codec:?}: kafka-protocol's own CRC"
        );
        let table: Vec<(usize, u8, Flip)> = vec![
            (0, 0x01, Flip::Uncovered),
            (7, 0xFF, Flip::Uncovered),
            (12, 0x01, Flip::Uncovered),
            (15, 0x80, Flip::Uncovered),
            (16, 0x01, Flip::Magic),
            (17, 0x01, Flip::Crc),
            (20, 0xFF, Flip::Crc),
            (21, 0x01, Flip::Crc), // attributes, unused high byte
            (22, 0x01, Flip::Crc), // codec bits
            (22, 0x08, Flip::Crc), // timestamp-type bit
            (23, 0x01, Flip::Crc), // lastOffsetDelta
            (27, 0x01, Flip::Crc), // baseTimestamp
            (35, 0x01, Flip::Crc), // maxTimestamp
            (43, 0x01, Flip::Crc), // producerId
            (51, 0x01, Flip::Crc), // producerEpoch
            (53, 0x01, Flip::Crc), // baseSequence
            (57, 0x01, Flip::Crc), // recordsCount
            (60, 0x80, Flip::Crc),
            (61, 0x01, Flip::Crc), // first records byte
            (61 + (len - 61) / 2, 0x10, Flip::Crc),
            (len - 1, 0x01, Flip::Crc), // last byte
        ];
        for (at_byte, mask, expect) in table {
            let mut bad = good.clone();
            bad[at_byte] ^= mask;
            let ctx = format!("{} / byte {at_byte} ^ {mask:#04x}", codec.name());
            check_flip(&bad, expect, &ctx, &mut all);
        }
        // Cut short by one byte: the batch is not all there.
        let cut = BatchView::new(&good[..len - 1]).map(|_| ());
        let want = Err(BatchError::Truncated {
            need: len,
            have: len - 1,
        });
        if cut != want {
            all.push(format!(
                "[{}] truncated: {cut:?}, want {want:?}",
                codec.name()
            ));
        }
    }
    report(all);
}

// ---------------------------------------------------------------------------------------------
// The checks themselves must be able to fail.
// ---------------------------------------------------------------------------------------------

/// Rewrites the length field and the CRC after tampering, so only the tampered field is wrong.
fn reseal(b: &mut [u8]) {
    let len = (b.len() - 12) as i32;
    b[8..12].copy_from_slice(&len.to_be_bytes());
    let crc = crc32c::crc32c(&b[21..]);
    b[17..21].copy_from_slice(&crc.to_be_bytes());
}

type Tamper = fn(&mut Vec<u8>);

#[test]
fn the_oracle_checks_catch_tampering() {
    let spec = at(TRANSACTIONAL, 42);
    let recs = keys_and_headers();
    let (codec, ts) = (Compression::None, TimestampType::CreateTime);
    let good = build_ours(
        &mut BatchBuilder::new(),
        &spec,
        options(&spec, codec, ts),
        &recs,
    );
    let mut e = Errors::new("untampered".into());
    check_ours(&mut e, &good, &spec, codec, ts, &recs);
    assert!(e.list.is_empty(), "{:#?}", e.list);

    // (what, tampering, re-seal length and CRC afterwards)
    let table: [(&str, Tamper, bool); 9] = [
        ("maxTimestamp", |b| b[42] ^= 1, true),
        ("producerEpoch", |b| b[52] ^= 1, true),
        ("transactional bit", |b| b[22] &= !0x10, true),
        ("lastOffsetDelta", |b| b[26] ^= 1, true),
        ("recordsCount - 1", |b| b[60] -= 1, true),
        ("baseTimestamp", |b| b[34] ^= 1, true),
        (
            "last value byte",
            |b| *b.iter_mut().rev().nth(1).unwrap() ^= 1,
            true,
        ),
        (
            "trailing bytes after the records",
            |b| b.extend_from_slice(&[0, 0]),
            true,
        ),
        ("stale CRC", |b| b[70] ^= 1, false),
    ];
    for (what, tamper, seal) in table {
        let mut bad = good.clone();
        tamper(&mut bad);
        if seal {
            reseal(&mut bad);
        }
        let mut e = Errors::new(what.into());
        check_ours(&mut e, &bad, &spec, codec, ts, &recs);
        assert!(!e.list.is_empty(), "check_ours did not notice: {what}");
    }

    let segments = vec![(spec, recs.clone())];
    let log = kp_encode(&segments, codec);
    let mut e = Errors::new("untampered".into());
    check_theirs(&mut e, &log, &segments, codec, ts);
    assert!(e.list.is_empty(), "{:#?}", e.list);
    let mut wrong_value = recs.clone();
    wrong_value[2].value = Some(b"no kez".to_vec());
    let mut wrong_header = recs.clone();
    wrong_header[0].headers[1].1 = Some(Vec::new());
    let mut one_more = recs.clone();
    one_more.push(Rec::new(None, Some(b"extra"), T0 + 2_000));
    let wrong_expectations: [(&str, Segments, TimestampType); 5] = [
        ("value", vec![(spec, wrong_value)], ts),
        ("null header value", vec![(spec, wrong_header)], ts),
        ("record count", vec![(spec, one_more)], ts),
        (
            "producer id",
            vec![(
                Spec {
                    producer_id: 78,
                    ..spec
                },
                recs.clone(),
            )],
            ts,
        ),
        (
            "timestamp type",
            segments.clone(),
            TimestampType::LogAppendTime,
        ),
    ];
    for (what, want, want_ts) in wrong_expectations {
        let mut e = Errors::new(what.into());
        check_theirs(&mut e, &log, &want, codec, want_ts);
        assert!(!e.list.is_empty(), "check_theirs did not notice: {what}");
    }
}

//! Golden tests for `topicfs::dump::run` (Kafka's DumpLogSegments output).
//!
//! Segment files are built without topicfs' own encoder: from the worked example of docs/format.md
//! (tests/fixtures/dump), with the independent `kafka-protocol` crate, or by hand.
//! Expected lines are written from the rules of docs/format.md section 7; only the sizes and
//! stored CRCs are read back from the independently built bytes.

use std::path::{Path, PathBuf};

use kafka_protocol::indexmap::IndexMap;
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::records::{
    Compression as KCompression, Record, RecordBatchEncoder, RecordEncodeOptions,
    TimestampType as KTimestampType,
};
use topicfs::dump::{DumpOptions, run, split_files_arg};

// ---------------------------------------------------------------------------------------------
// helpers

struct Output {
    out: String,
    err: String,
    code: i32,
}

fn dump(opts: &DumpOptions) -> Output {
    let mut out = Vec::new();
    let mut err = Vec::new();
    let code = run(opts, &mut out, &mut err);
    Output {
        out: String::from_utf8(out).unwrap(),
        err: String::from_utf8(err).unwrap(),
        code,
    }
}

fn opts(files: &[&Path]) -> DumpOptions {
    DumpOptions {
        files: files
            .iter()
            .map(|p| p.to_str().unwrap().to_string())
            .collect(),
        ..Default::default()
    }
}

fn deep(files: &[&Path]) -> DumpOptions {
    DumpOptions {
        deep_iteration: true,
        ..opts(files)
    }
}

fn data(files: &[&Path]) -> DumpOptions {
    DumpOptions {
        print_data_log: true,
        ..opts(files)
    }
}

fn p(path: &Path) -> String {
    path.to_str().unwrap().to_string()
}

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/dump")
        .join(name)
}

/// The §7.1 batch line.
#[allow(clippy::too_many_arguments)]
fn batch_line(
    base: i64,
    last: i64,
    count: i32,
    base_seq: i32,
    last_seq: i32,
    pid: i64,
    epoch: i16,
    ple: i32,
    txn: bool,
    control: bool,
    position: u64,
    ts_type: &str,
    max_ts: i64,
    size: usize,
    codec: &str,
    crc: u32,
    valid: bool,
) -> String {
    format!(
        "baseOffset: {base} lastOffset: {last} count: {count} baseSequence: {base_seq} lastSequence: {last_seq} producerId: {pid} producerEpoch: {epoch} partitionLeaderEpoch: {ple} isTransactional: {txn} isControl: {control} deleteHorizonMs: OptionalLong.empty position: {position} {ts_type}: {max_ts} size: {size} magic: 2 compresscodec: {codec} crc: {crc} isvalid: {valid}\n"
    )
}

/// A plain (non-idempotent) batch line.
fn plain_line(
    base: i64,
    last: i64,
    count: i32,
    position: u64,
    max_ts: i64,
    bytes: &[u8],
    codec: &str,
) -> String {
    batch_line(
        base,
        last,
        count,
        -1,
        -1,
        -1,
        -1,
        0,
        false,
        false,
        position,
        "CreateTime",
        max_ts,
        bytes.len(),
        codec,
        stored_crc(bytes),
        true,
    )
}

fn stored_crc(batch: &[u8]) -> u32 {
    let crc = u32::from_be_bytes(batch[17..21].try_into().unwrap());
    assert_eq!(
        crc,
        crc32c::crc32c(&batch[21..]),
        "fixture batch has a valid CRC"
    );
    crc
}

/// A `kafka-protocol` record. Within one encoded batch `sequence - offset` must be constant;
/// `seq_base` is the sequence of the batch's first record (-1 without a producer).
#[allow(clippy::too_many_arguments)]
fn rec(
    offset: i64,
    first_offset: i64,
    seq_base: i32,
    ts: i64,
    key: Option<&[u8]>,
    value: Option<&[u8]>,
    headers: &[(&'static str, Option<&[u8]>)],
    producer: (i64, i16, bool, bool),
) -> Record {
    let mut h = IndexMap::new();
    for (k, v) in headers {
        h.insert(StrBytes::from_static_str(k), v.map(|v| v.to_vec().into()));
    }
    Record {
        transactional: producer.2,
        control: producer.3,
        delete_horizon: false,
        partition_leader_epoch: 0,
        producer_id: producer.0,
        producer_epoch: producer.1,
        timestamp_type: KTimestampType::Creation,
        offset,
        sequence: seq_base.wrapping_add((offset - first_offset) as i32),
        timestamp: ts,
        key: key.map(|k| k.to_vec().into()),
        value: value.map(|v| v.to_vec().into()),
        headers: h,
    }
}

const NO_PRODUCER: (i64, i16, bool, bool) = (-1, -1, false, false);

/// Encodes records that must form exactly one batch.
fn kp_batch(records: &[Record], compression: KCompression) -> Vec<u8> {
    let mut buf: Vec<u8> = Vec::new();
    RecordBatchEncoder::encode(
        &mut buf,
        records,
        &RecordEncodeOptions {
            version: 2,
            compression,
        },
    )
    .unwrap();
    let declared = i32::from_be_bytes(buf[8..12].try_into().unwrap()) as usize + 12;
    assert_eq!(declared, buf.len(), "records form one batch");
    buf
}

/// Three plain records at `base..base+2`: keyed, null key, null value; one with headers.
fn three_records(base: i64, ts: i64) -> Vec<Record> {
    vec![
        rec(
            base,
            base,
            -1,
            ts,
            Some(b"k1"),
            Some(b"v1"),
            &[],
            NO_PRODUCER,
        ),
        rec(
            base + 1,
            base,
            -1,
            ts + 5,
            None,
            Some(b"hello world"),
            &[("h1", Some(b"x")), ("h2", None)],
            NO_PRODUCER,
        ),
        rec(
            base + 2,
            base,
            -1,
            ts + 2,
            Some(b"k3"),
            None,
            &[],
            NO_PRODUCER,
        ),
    ]
}

fn write(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, bytes).unwrap();
    path
}

fn offset_entry(rel: i32, pos: i32) -> Vec<u8> {
    [rel.to_be_bytes(), pos.to_be_bytes()].concat()
}

fn time_entry(ts: i64, rel: i32) -> Vec<u8> {
    [ts.to_be_bytes().to_vec(), rel.to_be_bytes().to_vec()].concat()
}

/// Sets the LogAppendTime attribute and maxTimestamp, recomputing the CRC.
fn to_log_append_time(batch: &mut [u8], append_time: i64) {
    batch[22] |= 0x08;
    batch[35..43].copy_from_slice(&append_time.to_be_bytes());
    let crc = crc32c::crc32c(&batch[21..]);
    batch[17..21].copy_from_slice(&crc.to_be_bytes());
}

// ---------------------------------------------------------------------------------------------
// the worked example of docs/format.md

const HELLO_BATCH: &str = "baseOffset: 0 lastOffset: 0 count: 1 baseSequence: -1 lastSequence: -1 producerId: -1 producerEpoch: -1 partitionLeaderEpoch: 0 isTransactional: false isControl: false deleteHorizonMs: OptionalLong.empty position: 0 CreateTime: 1700000000000 size: 73 magic: 2 compresscodec: none crc: 3863061579 isvalid: true\n";

#[test]
fn worked_example_shallow_deep_and_data() {
    let log = fixture("00000000000000000000.log");
    assert_eq!(std::fs::read(&log).unwrap().len(), 73);
    let head = format!("Dumping {}\nLog starting offset: 0\n", p(&log));

    let o = dump(&opts(&[&log]));
    assert_eq!(o.out, format!("{head}{HELLO_BATCH}"));
    assert_eq!((o.err.as_str(), o.code), ("", 0));

    let o = dump(&deep(&[&log]));
    assert_eq!(
        o.out,
        format!(
            "{head}{HELLO_BATCH}| offset: 0 CreateTime: 1700000000000 keySize: -1 valueSize: 5 sequence: -1 headerKeys: []\n"
        )
    );
    assert_eq!((o.err.as_str(), o.code), ("", 0));

    let o = dump(&data(&[&log]));
    assert_eq!(
        o.out,
        format!(
            "{head}{HELLO_BATCH}| offset: 0 CreateTime: 1700000000000 keySize: -1 valueSize: 5 sequence: -1 headerKeys: [] payload: hello\n"
        )
    );

    // --skip-record-metadata quirk: null key loses the "| " prefix.
    let o = dump(&DumpOptions {
        skip_record_metadata: true,
        ..data(&[&log])
    });
    assert_eq!(o.out, format!("{head}{HELLO_BATCH} payload: hello\n"));
}

#[test]
fn relative_paths_print_as_given_but_normalised() {
    let log = fixture("00000000000000000000.log");
    let dir = p(log.parent().unwrap());
    let o = dump(&DumpOptions {
        files: vec![format!("{dir}//00000000000000000000.log")],
        ..Default::default()
    });
    assert!(
        o.out
            .starts_with(&format!("Dumping {dir}/00000000000000000000.log\n"))
    );
}

// ---------------------------------------------------------------------------------------------
// kafka-protocol built segments

#[test]
fn uncompressed_keys_headers_null_key_and_value() {
    let dir = tempfile::tempdir().unwrap();
    let b0 = kp_batch(&three_records(0, 1_700_000_000_000), KCompression::None);
    let b1 = kp_batch(
        &[rec(
            3,
            3,
            -1,
            1_700_000_001_000,
            Some("ключ".as_bytes()),
            Some(b"\xff\xfeok"),
            &[],
            NO_PRODUCER,
        )],
        KCompression::None,
    );
    let log = write(
        dir.path(),
        "00000000000000000000.log",
        &[b0.clone(), b1.clone()].concat(),
    );
    let head = format!("Dumping {}\nLog starting offset: 0\n", p(&log));
    let l0 = plain_line(0, 2, 3, 0, 1_700_000_000_005, &b0, "none");
    let l1 = plain_line(3, 3, 1, b0.len() as u64, 1_700_000_001_000, &b1, "none");

    let o = dump(&opts(&[&log]));
    assert_eq!(o.out, format!("{head}{l0}{l1}"));
    assert_eq!((o.err.as_str(), o.code), ("", 0));

    let o = dump(&data(&[&log]));
    let expected = format!(
        "{head}{l0}\
| offset: 0 CreateTime: 1700000000000 keySize: 2 valueSize: 2 sequence: -1 headerKeys: [] key: k1 payload: v1\n\
| offset: 1 CreateTime: 1700000000005 keySize: -1 valueSize: 11 sequence: -1 headerKeys: [h1,h2] payload: hello world\n\
| offset: 2 CreateTime: 1700000000002 keySize: 2 valueSize: -1 sequence: -1 headerKeys: [] key: k3\n\
{l1}\
| offset: 3 CreateTime: 1700000001000 keySize: 8 valueSize: 4 sequence: -1 headerKeys: [] key: ключ payload: \u{fffd}\u{fffd}ok\n"
    );
    assert_eq!(o.out, expected);
    assert_eq!((o.err.as_str(), o.code), ("", 0));

    // deep iteration without data, and the metadata-less variant.
    let o = dump(&deep(&[&log]));
    assert!(o.out.contains(
        "| offset: 1 CreateTime: 1700000000005 keySize: -1 valueSize: 11 sequence: -1 headerKeys: [h1,h2]\n"
    ));
    let o = dump(&DumpOptions {
        skip_record_metadata: true,
        ..data(&[&log])
    });
    assert_eq!(
        o.out,
        format!(
            "{head}{l0}| key: k1 payload: v1\n payload: hello world\n| key: k3\n{l1}| key: ключ payload: \u{fffd}\u{fffd}ok\n"
        )
    );
    // deep iteration with skipped metadata and no data: one empty line per record.
    let o = dump(&DumpOptions {
        skip_record_metadata: true,
        ..deep(&[&log])
    });
    assert_eq!(o.out, format!("{head}{l0}\n\n\n{l1}\n"));
}

#[test]
fn every_codec() {
    for (codec, name) in [
        (KCompression::Gzip, "gzip"),
        (KCompression::Snappy, "snappy"),
        (KCompression::Lz4, "lz4"),
        (KCompression::Zstd, "zstd"),
        (KCompression::None, "none"),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let b0 = kp_batch(&three_records(100, 1_600_000_000_000), codec);
        let log = write(dir.path(), "00000000000000000100.log", &b0);
        let o = dump(&data(&[&log]));
        let expected = format!(
            "Dumping {}\nLog starting offset: 100\n{}\
| offset: 100 CreateTime: 1600000000000 keySize: 2 valueSize: 2 sequence: -1 headerKeys: [] key: k1 payload: v1\n\
| offset: 101 CreateTime: 1600000000005 keySize: -1 valueSize: 11 sequence: -1 headerKeys: [h1,h2] payload: hello world\n\
| offset: 102 CreateTime: 1600000000002 keySize: 2 valueSize: -1 sequence: -1 headerKeys: [] key: k3\n",
            p(&log),
            plain_line(100, 102, 3, 0, 1_600_000_000_005, &b0, name)
        );
        assert_eq!(o.out, expected, "codec {name}");
        assert_eq!((o.err.as_str(), o.code), ("", 0), "codec {name}");
    }
}

/// A transaction marker of producer 4242 (epoch 7) at `offset`: `kind` 0 abort, 1 commit.
fn marker_batch(offset: i64, kind: u8, coordinator_epoch: u8, ts: i64) -> Vec<u8> {
    kp_batch(
        &[rec(
            offset,
            offset,
            -1,
            ts,
            Some(&[0, 0, 0, kind]),
            Some(&[0, 0, 0, 0, 0, coordinator_epoch]),
            &[],
            (4242, 7, true, true),
        )],
        KCompression::None,
    )
}

/// The line of a valid uncompressed transactional batch of producer 4242 (epoch 7):
/// (base, last, count) offsets, (base, last) sequences.
fn txn_line(
    (base, last, count): (i64, i64, i32),
    (base_seq, last_seq): (i32, i32),
    control: bool,
    position: u64,
    max_ts: i64,
    batch: &[u8],
) -> String {
    batch_line(
        base,
        last,
        count,
        base_seq,
        last_seq,
        4242,
        7,
        0,
        true,
        control,
        position,
        "CreateTime",
        max_ts,
        batch.len(),
        "none",
        stored_crc(batch),
        true,
    )
}

#[test]
fn transactional_batch_and_control_markers() {
    let dir = tempfile::tempdir().unwrap();
    let txn = (4242i64, 7i16, true, false);
    let data_batch = kp_batch(
        &[
            rec(0, 0, 10, 1_000, Some(b"a"), Some(b"1"), &[], txn),
            rec(1, 0, 10, 1_001, Some(b"b"), Some(b"2"), &[], txn),
        ],
        KCompression::None,
    );
    let commit = marker_batch(2, 1, 9, 1_002);
    let abort = marker_batch(3, 0, 10, 1_003);
    let log = write(
        dir.path(),
        "00000000000000000000.log",
        &[data_batch.clone(), commit.clone(), abort.clone()].concat(),
    );
    let l0 = txn_line((0, 1, 2), (10, 11), false, 0, 1_001, &data_batch);
    let pos1 = data_batch.len() as u64;
    let l1 = txn_line((2, 2, 1), (-1, -1), true, pos1, 1_002, &commit);
    let pos2 = pos1 + commit.len() as u64;
    let l2 = txn_line((3, 3, 1), (-1, -1), true, pos2, 1_003, &abort);
    let o = dump(&data(&[&log]));
    let expected = format!(
        "Dumping {}\nLog starting offset: 0\n{l0}\
| offset: 0 CreateTime: 1000 keySize: 1 valueSize: 1 sequence: 10 headerKeys: [] key: a payload: 1\n\
| offset: 1 CreateTime: 1001 keySize: 1 valueSize: 1 sequence: 11 headerKeys: [] key: b payload: 2\n\
{l1}\
| offset: 2 CreateTime: 1002 keySize: 4 valueSize: 6 sequence: -1 headerKeys: [] endTxnMarker: COMMIT coordinatorEpoch: 9\n\
{l2}\
| offset: 3 CreateTime: 1003 keySize: 4 valueSize: 6 sequence: -1 headerKeys: [] endTxnMarker: ABORT coordinatorEpoch: 10\n",
        p(&log)
    );
    assert_eq!(o.out, expected);
    assert_eq!((o.err.as_str(), o.code), ("", 0));

    // Control records print nothing at all when metadata is skipped.
    let o = dump(&DumpOptions {
        skip_record_metadata: true,
        ..data(&[&log])
    });
    assert_eq!(
        o.out,
        format!(
            "Dumping {}\nLog starting offset: 0\n{l0}| key: a payload: 1\n| key: b payload: 2\n{l1}\n{l2}\n",
            p(&log)
        )
    );
}

#[test]
fn log_append_time_batches_report_the_append_time_for_every_record() {
    let dir = tempfile::tempdir().unwrap();
    let mut b = kp_batch(&three_records(0, 1_000), KCompression::None);
    to_log_append_time(&mut b, 5_000);
    let log = write(dir.path(), "00000000000000000000.log", &b);
    let o = dump(&deep(&[&log]));
    let line = batch_line(
        0,
        2,
        3,
        -1,
        -1,
        -1,
        -1,
        0,
        false,
        false,
        0,
        "LogAppendTime",
        5_000,
        b.len(),
        "none",
        stored_crc(&b),
        true,
    );
    assert_eq!(
        o.out,
        format!(
            "Dumping {}\nLog starting offset: 0\n{line}\
| offset: 0 LogAppendTime: 5000 keySize: 2 valueSize: 2 sequence: -1 headerKeys: []\n\
| offset: 1 LogAppendTime: 5000 keySize: -1 valueSize: 11 sequence: -1 headerKeys: [h1,h2]\n\
| offset: 2 LogAppendTime: 5000 keySize: 2 valueSize: -1 sequence: -1 headerKeys: []\n",
            p(&log)
        )
    );
}

#[test]
fn non_consecutive_offsets_reported_most_recent_first() {
    let dir = tempfile::tempdir().unwrap();
    let b0 = kp_batch(&three_records(0, 10), KCompression::None);
    let b1 = kp_batch(&three_records(5, 20), KCompression::Lz4);
    let b2 = kp_batch(&three_records(20, 30), KCompression::None);
    let log = write(
        dir.path(),
        "00000000000000000000.log",
        &[b0, b1, b2].concat(),
    );
    let o = dump(&deep(&[&log]));
    assert_eq!(o.code, 0);
    assert_eq!(
        o.err,
        format!(
            "Non-consecutive offsets in {}\n  7 is followed by 20\n  2 is followed by 5\n",
            p(&log)
        )
    );
    // Shallow iteration does not look at record offsets.
    assert_eq!(dump(&opts(&[&log])).err, "");
}

#[test]
fn max_bytes_stops_early_without_the_trailing_bytes_report() {
    let dir = tempfile::tempdir().unwrap();
    let b0 = kp_batch(&three_records(0, 10), KCompression::None);
    let b1 = kp_batch(&three_records(3, 20), KCompression::None);
    let log = write(
        dir.path(),
        "00000000000000000000.log",
        &[b0.clone(), b1].concat(),
    );
    let o = dump(&DumpOptions {
        max_bytes: Some(b0.len() as u64 + 20),
        ..opts(&[&log])
    });
    assert_eq!(
        o.out,
        format!(
            "Dumping {}\nLog starting offset: 0\n{}",
            p(&log),
            plain_line(0, 2, 3, 0, 15, &b0, "none")
        )
    );
}

#[test]
fn legacy_v1_message() {
    // offset 7, magic 1, CreateTime 1234, null key, value "hi" (built by hand, CRC-32 IEEE).
    let mut msg = vec![1u8, 0];
    msg.extend_from_slice(&1234i64.to_be_bytes());
    msg.extend_from_slice(&(-1i32).to_be_bytes());
    msg.extend_from_slice(&2i32.to_be_bytes());
    msg.extend_from_slice(b"hi");
    let mut c = flate2::Crc::new();
    c.update(&msg);
    let crc = c.sum();
    let mut rec = crc.to_be_bytes().to_vec();
    rec.extend_from_slice(&msg);
    let mut file = 7i64.to_be_bytes().to_vec();
    file.extend_from_slice(&(rec.len() as i32).to_be_bytes());
    file.extend_from_slice(&rec);
    let dir = tempfile::tempdir().unwrap();
    let log = write(dir.path(), "00000000000000000007.log", &file);
    let o = dump(&data(&[&log]));
    assert_eq!(
        o.out,
        format!(
            "Dumping {}\nLog starting offset: 7\n\
offset: 7 position: 0 CreateTime: 1234 size: {} magic: 1 compresscodec: none crc: {crc} isvalid: true\n\
| offset: 7 CreateTime: 1234 keySize: -1 valueSize: 2 isValid: true crc: {crc}}} payload: hi\n",
            p(&log),
            file.len()
        )
    );
}

// ---------------------------------------------------------------------------------------------
// damaged segments

#[test]
fn torn_tail_is_reported_as_invalid_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let b0 = kp_batch(&three_records(0, 10), KCompression::None);
    let b1 = kp_batch(&three_records(3, 20), KCompression::None);
    for torn in [1usize, 10, 17, 18, 30, b1.len() - 1] {
        let log = write(
            dir.path(),
            "00000000000000000000.log",
            &[b0.clone(), b1[..torn].to_vec()].concat(),
        );
        let o = dump(&data(&[&log]));
        assert!(
            o.out.ends_with(&format!(
                "Found {torn} invalid bytes at the end of 00000000000000000000.log\n"
            )),
            "torn at {torn}: {}",
            o.out
        );
        assert_eq!(o.out.matches("baseOffset:").count(), 1);
        assert_eq!((o.err.as_str(), o.code), ("", 0));
    }
}

#[test]
fn flipped_byte_makes_the_batch_invalid() {
    let dir = tempfile::tempdir().unwrap();
    let mut bytes = std::fs::read(fixture("00000000000000000000.log")).unwrap();
    bytes[67] = b'j'; // "hello" -> "jello"
    let log = write(dir.path(), "00000000000000000000.log", &bytes);
    let o = dump(&data(&[&log]));
    let line = HELLO_BATCH.replace("isvalid: true", "isvalid: false");
    assert_eq!(
        o.out,
        format!(
            "Dumping {}\nLog starting offset: 0\n{line}| offset: 0 CreateTime: 1700000000000 keySize: -1 valueSize: 5 sequence: -1 headerKeys: [] payload: jello\n",
            p(&log)
        )
    );
    assert_eq!((o.err.as_str(), o.code), ("", 0));
}

#[test]
fn zero_filled_tail_is_a_corrupt_record_exception() {
    let dir = tempfile::tempdir().unwrap();
    let mut bytes = std::fs::read(fixture("00000000000000000000.log")).unwrap();
    bytes.extend_from_slice(&[0u8; 100]);
    let log = write(dir.path(), "00000000000000000000.log", &bytes);
    let o = dump(&opts(&[&log]));
    assert_eq!(
        o.out,
        format!("Dumping {}\nLog starting offset: 0\n{HELLO_BATCH}", p(&log))
    );
    assert_eq!(
        o.err,
        format!(
            "Exception in thread \"main\" org.apache.kafka.common.errors.CorruptRecordException: Found record size 0 smaller than minimum record overhead (14) in file {}.\n",
            p(&log)
        )
    );
    assert_eq!(o.code, 1);
}

#[test]
fn record_count_larger_than_the_records() {
    // count 2 in the header but one record: Kafka's iterator runs out of bytes.
    let dir = tempfile::tempdir().unwrap();
    let mut bytes = std::fs::read(fixture("00000000000000000000.log")).unwrap();
    bytes[60] = 2;
    let crc = crc32c::crc32c(&bytes[21..]);
    bytes[17..21].copy_from_slice(&crc.to_be_bytes());
    let log = write(dir.path(), "00000000000000000000.log", &bytes);
    let o = dump(&deep(&[&log]));
    assert!(o.out.ends_with(
        "| offset: 0 CreateTime: 1700000000000 keySize: -1 valueSize: 5 sequence: -1 headerKeys: []\n"
    ));
    assert_eq!(
        o.err,
        "Exception in thread \"main\" org.apache.kafka.common.InvalidRecordException: Incorrect declared batch size, premature EOF reached\n"
    );
    assert_eq!(o.code, 1);
}

#[test]
fn missing_file_and_unknown_suffix() {
    let dir = tempfile::tempdir().unwrap();
    let other = write(dir.path(), "notes.txt", b"x");
    let missing = dir.path().join("00000000000000000000.log");
    let o = dump(&opts(&[&other, &missing]));
    assert_eq!(
        o.out,
        format!(
            "Dumping {}\nDumping {}\nLog starting offset: 0\n",
            p(&other),
            p(&missing)
        )
    );
    assert_eq!(
        o.err,
        format!(
            "Ignoring unknown file {}\nException in thread \"main\" java.nio.file.NoSuchFileException: {}\n",
            p(&other),
            p(&missing)
        )
    );
    assert_eq!(o.code, 1);
}

// ---------------------------------------------------------------------------------------------
// .index / .timeindex

/// A segment at base 100 with batches of 3 records (100-102, 103-105, 106-108).
fn segment(dir: &Path) -> (PathBuf, Vec<Vec<u8>>) {
    let batches: Vec<Vec<u8>> = (0..3)
        .map(|i| {
            kp_batch(
                &three_records(100 + 3 * i, 1_000 * (i + 1)),
                KCompression::None,
            )
        })
        .collect();
    let log = write(dir, "00000000000000000100.log", &batches.concat());
    (log, batches)
}

#[test]
fn offset_index_entries_and_mismatches() {
    let dir = tempfile::tempdir().unwrap();
    let (_, batches) = segment(dir.path());
    let p1 = batches[0].len() as i32;
    let p2 = p1 + batches[1].len() as i32;
    // Entry 1 is right (last offset of the batch at p1), entry 2 points at the batch ending at
    // 108 but claims 107.
    let idx = write(
        dir.path(),
        "00000000000000000100.index",
        &[offset_entry(5, p1), offset_entry(7, p2)].concat(),
    );
    let o = dump(&opts(&[&idx]));
    assert_eq!(
        o.out,
        format!(
            "Dumping {}\noffset: 105 position: {p1}\noffset: 107 position: {p2}\n",
            p(&idx)
        )
    );
    assert_eq!(
        o.err,
        format!(
            "Mismatches in :{}\n  Index offset: 107, log offset: 108\n",
            p(&idx)
        )
    );
    assert_eq!(o.code, 0);

    let o = dump(&DumpOptions {
        verify_index_only: true,
        ..opts(&[&idx])
    });
    assert_eq!(o.out, format!("Dumping {}\n", p(&idx)));
    assert!(o.err.starts_with("Mismatches in :"));

    let o = dump(&DumpOptions {
        index_sanity_check: true,
        ..opts(&[&idx])
    });
    assert_eq!(
        o.out,
        format!("Dumping {}\n{} passed sanity check.\n", p(&idx), p(&idx))
    );
    assert_eq!((o.err.as_str(), o.code), ("", 0));
}

#[test]
fn index_entry_pointing_past_the_log() {
    let dir = tempfile::tempdir().unwrap();
    let (log, batches) = segment(dir.path());
    let size: usize = batches.iter().map(Vec::len).sum();
    // Entry 1 names an offset beyond the log but points at the last batch: a mismatch.
    // Entry 2 points past the end of the .log: FileRecords.slice throws.
    let idx = write(
        dir.path(),
        "00000000000000000100.index",
        &[
            offset_entry(50, (size - batches[2].len()) as i32),
            offset_entry(60, size as i32 + 1000),
        ]
        .concat(),
    );
    let o = dump(&opts(&[&idx]));
    assert_eq!(
        o.out,
        format!(
            "Dumping {}\noffset: 150 position: {}\n",
            p(&idx),
            size - batches[2].len()
        )
    );
    assert_eq!(
        o.err,
        format!(
            "Exception in thread \"main\" java.lang.IllegalArgumentException: Slice from position {} exceeds end position of FileRecords(size={size}, file={}, start=0, end=2147483647)\n",
            size + 1000,
            p(&log)
        )
    );
    assert_eq!(o.code, 1);

    // Without the throwing entry the mismatch is reported and the exit code is 0.
    let idx = write(
        dir.path(),
        "00000000000000000100.index",
        &offset_entry(50, (size - batches[2].len()) as i32),
    );
    let o = dump(&opts(&[&idx]));
    assert_eq!(
        o.err,
        format!(
            "Mismatches in :{}\n  Index offset: 150, log offset: 108\n",
            p(&idx)
        )
    );
    assert_eq!(o.code, 0);
}

#[test]
fn empty_and_untrimmed_offset_indexes() {
    let dir = tempfile::tempdir().unwrap();
    segment(dir.path());
    let idx = write(dir.path(), "00000000000000000100.index", b"");
    let o = dump(&DumpOptions {
        index_sanity_check: true,
        ..opts(&[&idx])
    });
    assert_eq!(
        o.out,
        format!("Dumping {}\n{} is empty.\n", p(&idx), p(&idx))
    );
    assert_eq!(o.code, 0);

    // A preallocated index that was never trimmed: all zeros. Kafka prints the first entry
    // (base offset, position 0), compares it with the first batch (last offset 102), and stops.
    let idx = write(dir.path(), "00000000000000000100.index", &[0u8; 80]);
    let o = dump(&opts(&[&idx]));
    assert_eq!(
        o.out,
        format!("Dumping {}\noffset: 100 position: 0\n", p(&idx))
    );
    assert_eq!(
        o.err,
        format!(
            "Mismatches in :{}\n  Index offset: 100, log offset: 102\n",
            p(&idx)
        )
    );
    assert_eq!(o.code, 0);
}

#[test]
fn offset_index_sanity_check_failures_use_absolute_paths() {
    let dir = tempfile::tempdir().unwrap();
    segment(dir.path());
    let idx = write(
        dir.path(),
        "00000000000000000100.index",
        &[offset_entry(2, 0), offset_entry(-5, 0)].concat(),
    );
    let o = dump(&DumpOptions {
        index_sanity_check: true,
        ..opts(&[&idx])
    });
    assert_eq!(
        o.err,
        format!(
            "Exception in thread \"main\" org.apache.kafka.storage.internals.log.CorruptIndexException: Corrupt index found, index file {} has non-zero size but the last offset is 95 which is less than the base offset 100\n",
            p(&idx)
        )
    );
    assert_eq!(o.code, 1);

    let idx = write(
        dir.path(),
        "00000000000000000100.index",
        &[offset_entry(2, 0), vec![0, 0, 0, 9]].concat(),
    );
    let o = dump(&DumpOptions {
        index_sanity_check: true,
        ..opts(&[&idx])
    });
    assert_eq!(
        o.err,
        format!(
            "Exception in thread \"main\" org.apache.kafka.storage.internals.log.CorruptIndexException: Index file {} is corrupt, found 12 bytes which is neither positive nor a multiple of 8\n",
            p(&idx)
        )
    );
    assert_eq!(o.code, 1);
}

#[test]
fn time_index_entries_out_of_order_mismatch_and_not_found() {
    let dir = tempfile::tempdir().unwrap();
    let (_, batches) = segment(dir.path());
    let p1 = batches[0].len() as i32;
    write(
        dir.path(),
        "00000000000000000100.index",
        &offset_entry(5, p1),
    );
    // Batch max timestamps: 1005 (ends 102), 2005 (ends 105), 3005 (ends 108).
    let tidx = write(
        dir.path(),
        "00000000000000000100.timeindex",
        &[
            time_entry(2_005, 5),  // right
            time_entry(1_500, 8),  // out of order, and the batch says 3005
            time_entry(3_005, 7),  // 107 is inside the batch ending at 108
            time_entry(4_000, 50), // beyond the log
            time_entry(0, 0),      // padding: stops the dump
            time_entry(9_999, 3),
        ]
        .concat(),
    );
    let o = dump(&opts(&[&tidx]));
    assert_eq!(
        o.out,
        format!(
            "Dumping {}\ntimestamp: 2005 offset: 105\ntimestamp: 1500 offset: 108\ntimestamp: 3005 offset: 107\ntimestamp: 4000 offset: 150\n",
            p(&tidx)
        )
    );
    let abs = p(&tidx);
    assert_eq!(
        o.err,
        format!(
            "Found timestamp mismatch in :{abs}\n  Index timestamp: 1500, log timestamp: 3005\n\
Found out of order timestamp in :{abs}\n  Index timestamp: 1500, Previously indexed timestamp: 2005\n\
The following indexed offsets are not found in the log.\n\
Indexed offset: 107, found log offset: 108\n\
Indexed offset: 150, found log offset: -1\n"
        )
    );
    assert_eq!(o.code, 0);

    // The last slot (9999, 103) is what the sanity check looks at: it passes.
    let o = dump(&DumpOptions {
        index_sanity_check: true,
        ..opts(&[&tidx])
    });
    assert_eq!(
        o.out,
        format!("Dumping {abs}\n{abs} passed sanity check.\n")
    );
    assert_eq!((o.err.as_str(), o.code), ("", 0));
}

#[test]
fn time_index_sanity() {
    let dir = tempfile::tempdir().unwrap();
    segment(dir.path());
    write(dir.path(), "00000000000000000100.index", b"");
    let tidx = write(
        dir.path(),
        "00000000000000000100.timeindex",
        &[time_entry(2_005, 5), time_entry(1_000, 8)].concat(),
    );
    let sanity = |path: &Path| {
        dump(&DumpOptions {
            index_sanity_check: true,
            ..opts(&[path])
        })
    };
    let o = sanity(&tidx);
    assert_eq!(
        o.err,
        format!(
            "Exception in thread \"main\" org.apache.kafka.storage.internals.log.CorruptIndexException: Corrupt time index found, time index file ({}) has non-zero size but the last timestamp is 1000 which is less than the first timestamp 2005\n",
            p(&tidx)
        )
    );
    assert_eq!(o.code, 1);

    write(
        dir.path(),
        "00000000000000000100.timeindex",
        &[time_entry(2_005, -1)].concat(),
    );
    let o = sanity(&tidx);
    assert!(o.err.ends_with(&format!(
        "Corrupt time index found, time index file ({}) has non-zero size but the last offset is 99 which is less than the first offset 100\n",
        p(&tidx)
    )));

    write(dir.path(), "00000000000000000100.timeindex", &[0u8; 13]);
    let o = sanity(&tidx);
    assert!(o.err.ends_with(&format!(
        "Time index file {} is corrupt, found 13 bytes which is neither positive nor a multiple of 12\n",
        p(&tidx)
    )));

    // Empty time index: no "is empty" message, the sanity check passes.
    write(dir.path(), "00000000000000000100.timeindex", b"");
    let o = sanity(&tidx);
    assert_eq!(
        o.out,
        format!("Dumping {}\n{} passed sanity check.\n", p(&tidx), p(&tidx))
    );
    let o = dump(&opts(&[&tidx]));
    assert_eq!(o.out, format!("Dumping {}\n", p(&tidx)));
}

// ---------------------------------------------------------------------------------------------
// .txnindex / .snapshot

#[test]
fn transaction_index() {
    let dir = tempfile::tempdir().unwrap();
    let entry = |pid: i64, first: i64, last: i64, lso: i64| {
        [
            0i16.to_be_bytes().to_vec(),
            pid.to_be_bytes().to_vec(),
            first.to_be_bytes().to_vec(),
            last.to_be_bytes().to_vec(),
            lso.to_be_bytes().to_vec(),
        ]
        .concat()
    };
    let mut bytes = [entry(4242, 10, 20, 5), entry(77, 30, 31, 21)].concat();
    bytes.extend_from_slice(&[1, 2, 3]); // a partial entry is ignored
    let t = write(dir.path(), "00000000000000000000.txnindex", &bytes);
    let o = dump(&opts(&[&t]));
    assert_eq!(
        o.out,
        format!(
            "Dumping {}\nversion: 0 producerId: 4242 firstOffset: 10 lastOffset: 20 lastStableOffset: 5\nversion: 0 producerId: 77 firstOffset: 30 lastOffset: 31 lastStableOffset: 21\n",
            p(&t)
        )
    );
    assert_eq!((o.err.as_str(), o.code), ("", 0));
}

fn producer_snapshot(entries: &[[i64; 8]]) -> Vec<u8> {
    let mut body = (entries.len() as i32).to_be_bytes().to_vec();
    for e in entries {
        body.extend_from_slice(&e[0].to_be_bytes()); // producer id
        body.extend_from_slice(&(e[1] as i16).to_be_bytes()); // epoch
        body.extend_from_slice(&(e[2] as i32).to_be_bytes()); // last sequence
        body.extend_from_slice(&e[3].to_be_bytes()); // last offset
        body.extend_from_slice(&(e[4] as i32).to_be_bytes()); // offset delta
        body.extend_from_slice(&e[5].to_be_bytes()); // timestamp
        body.extend_from_slice(&(e[6] as i32).to_be_bytes()); // coordinator epoch
        body.extend_from_slice(&e[7].to_be_bytes()); // current txn first offset
    }
    let mut out = 1i16.to_be_bytes().to_vec();
    out.extend_from_slice(&crc32c::crc32c(&body).to_be_bytes());
    out.extend_from_slice(&body);
    out
}

#[test]
fn producer_state_snapshot() {
    let dir = tempfile::tempdir().unwrap();
    let bytes = producer_snapshot(&[
        [1000, 5, 12, 42, 2, 1_700_000_000_000, 3, -1],
        [1001, 0, 4, -1, 0, 77, -1, 40],
    ]);
    let s = write(dir.path(), "00000000000000000043.snapshot", &bytes);
    let o = dump(&opts(&[&s]));
    assert_eq!(
        o.out,
        format!(
            "Dumping {}\n\
producerId: 1000 producerEpoch: 5 coordinatorEpoch: 3 currentTxnFirstOffset: OptionalLong.empty lastTimestamp: 1700000000000 firstSequence: 10 lastSequence: 12 lastOffset: 42 offsetDelta: 2 timestamp: 1700000000000\n\
producerId: 1001 producerEpoch: 0 coordinatorEpoch: -1 currentTxnFirstOffset: OptionalLong[40] lastTimestamp: 77 \n",
            p(&s)
        )
    );
    assert_eq!((o.err.as_str(), o.code), ("", 0));

    let mut bad = bytes.clone();
    *bad.last_mut().unwrap() ^= 1;
    write(dir.path(), "00000000000000000043.snapshot", &bad);
    let o = dump(&opts(&[&s]));
    let stored = u32::from_be_bytes(bad[2..6].try_into().unwrap());
    let computed = crc32c::crc32c(&bad[6..]);
    assert_eq!(o.out, format!("Dumping {}\n", p(&s)));
    assert_eq!(
        o.err,
        format!(
            "Snapshot is corrupt (CRC is no longer valid). Stored crc: {stored}. Computed crc: {computed}\n"
        )
    );
    assert_eq!(o.code, 0);

    write(dir.path(), "00000000000000000043.snapshot", &bytes[..20]);
    let o = dump(&opts(&[&s]));
    assert_eq!(
        o.err,
        "Snapshot failed schema validation: Error reading field 'producer_entries': Error reading field 'last_sequence': java.nio.BufferUnderflowException\n"
    );
    let mut head = bytes[..6].to_vec();
    head.extend_from_slice(&100i32.to_be_bytes());
    write(dir.path(), "00000000000000000043.snapshot", &head);
    let o = dump(&opts(&[&s]));
    assert_eq!(
        o.err,
        "Snapshot failed schema validation: Error reading field 'producer_entries': Error reading array of size 100, only 0 bytes available\n"
    );
    write(dir.path(), "00000000000000000043.snapshot", &bytes[..1]);
    let o = dump(&opts(&[&s]));
    assert_eq!(
        o.err,
        "Snapshot failed schema validation: Error reading field 'version': java.nio.BufferUnderflowException\n"
    );
    assert_eq!(o.code, 0);
}

// ---------------------------------------------------------------------------------------------
// never panic

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

/// The damage of one round to a valid log: flipped bits, a cut, hostile size fields, noise,
/// or a changed byte with the CRC fixed up (so the damage goes past the CRC check).
fn damage(bytes: &mut Vec<u8>, round: usize, rng: &mut Rng) {
    match round % 5 {
        0 => {
            for _ in 0..1 + rng.below(4) {
                let i = rng.below(bytes.len());
                bytes[i] ^= 1 << rng.below(8);
            }
        }
        1 => bytes.truncate(rng.below(bytes.len())),
        2 => {
            // Hostile size fields.
            let at = [8usize, 57, 61][rng.below(3)];
            let v = [-1i32, 0, 13, 14, 60, i32::MAX, i32::MIN][rng.below(7)];
            bytes[at..at + 4].copy_from_slice(&v.to_be_bytes());
        }
        3 => {
            *bytes = (0..rng.below(300)).map(|_| rng.next() as u8).collect();
        }
        _ => {
            let i = rng.below(bytes.len());
            let crc_fix = rng.below(2) == 0;
            bytes[i] = rng.next() as u8;
            if crc_fix && bytes.len() > 61 {
                let size = (i32::from_be_bytes(bytes[8..12].try_into().unwrap()) as usize + 12)
                    .min(bytes.len());
                if size > 21 {
                    let crc = crc32c::crc32c(&bytes[21..size]);
                    bytes[17..21].copy_from_slice(&crc.to_be_bytes());
                }
            }
        }
    }
}

#[test]
fn damaged_inputs_never_panic() {
    let dir = tempfile::tempdir().unwrap();
    let mut valid = Vec::new();
    for (i, codec) in [
        KCompression::None,
        KCompression::Gzip,
        KCompression::Snappy,
        KCompression::Lz4,
        KCompression::Zstd,
    ]
    .into_iter()
    .enumerate()
    {
        valid.extend(kp_batch(&three_records(3 * i as i64, 100), codec));
    }
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let log = dir.path().join("00000000000000000000.log");
    let idx = dir.path().join("00000000000000000000.index");
    let tidx = dir.path().join("00000000000000000000.timeindex");
    let snap = dir.path().join("00000000000000000000.snapshot");
    let txn = dir.path().join("00000000000000000000.txnindex");
    let all = DumpOptions {
        print_data_log: true,
        ..opts(&[&log, &idx, &tidx, &snap, &txn])
    };
    let rounds: usize = std::env::var("TOPICFS_DUMP_FUZZ_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(400);
    let mut exceptions = std::collections::BTreeMap::<String, usize>::new();
    for round in 0..rounds {
        let mut bytes = valid.clone();
        damage(&mut bytes, round, &mut rng);
        std::fs::write(&log, &bytes).unwrap();
        let junk: Vec<u8> = (0..rng.below(100)).map(|_| rng.next() as u8).collect();
        std::fs::write(&idx, &junk).unwrap();
        std::fs::write(&tidx, &junk).unwrap();
        std::fs::write(&snap, &junk).unwrap();
        std::fs::write(&txn, &junk).unwrap();
        for o in [
            all.clone(),
            DumpOptions {
                index_sanity_check: true,
                ..all.clone()
            },
            opts(&[&idx, &tidx, &log]),
        ] {
            let r = dump(&o);
            assert!(r.code == 0 || r.code == 1);
            if r.code == 1 {
                let line = r.err.lines().last().unwrap_or_default();
                assert!(
                    line.starts_with("Exception in thread \"main\" "),
                    "{}",
                    r.err
                );
                let class = line.split(':').next().unwrap_or_default().to_string();
                *exceptions.entry(class).or_default() += 1;
            }
        }
    }
    if std::env::var_os("TOPICFS_DUMP_FUZZ_ROUNDS").is_some() {
        eprintln!("{exceptions:#?}");
    }
    assert!(
        exceptions.len() >= 3,
        "the damage reaches Kafka's failure paths: {exceptions:?}"
    );
}

#[test]
fn files_argument_splits_like_java() {
    assert_eq!(split_files_arg("a.log,b.index"), vec!["a.log", "b.index"]);
    assert_eq!(split_files_arg("a.log,,"), vec!["a.log"]);
    let o = dump(&DumpOptions {
        files: vec!["noextension".into()],
        ..Default::default()
    });
    assert_eq!(o.out, "Dumping noextension\n");
    assert_eq!(
        o.err,
        "Exception in thread \"main\" java.lang.StringIndexOutOfBoundsException: begin -1, end 11, length 11\n"
    );
    assert_eq!(o.code, 1);
}

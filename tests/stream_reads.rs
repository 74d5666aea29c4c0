//! A `by-offset/<N>` stream read in pieces of random offsets and sizes (forward, backward and
//! past the end) serves exactly the bytes an independent decoder gives (a read is short only at
//! the end): every record of the
//! partition's `.log` files decoded by the kafka-protocol crate, from offset N on, each value
//! followed by `\n`. The partition has several segments and batches of one to many records,
//! null values among them, so the reader's fast decoding path (`for_each_record`) and its
//! general path both serve data.
//!
//! The second property serves segments written by kafka-protocol's encoder (batches compressed
//! with each codec, control batches among them) as lines and as JSON lines; the expected JSON
//! is built here from kafka-protocol's decoded records.

mod common;

use std::sync::Arc;

use base64::Engine;
use common::decode::{decode_dir_records, decode_log};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::records::{
    Compression as KCompression, Record as KRecord, RecordBatchEncoder, RecordEncodeOptions,
    TimestampType as KTimestampType,
};
use proptest::prelude::*;
use topicfs::config::LogConfig;
use topicfs::fs::inode::{Format, LookupName};
use topicfs::fs::stream::{FIRST_READ_MAX, StreamHandle, first_read_capped};
use topicfs::log::{LoadParams, PartitionLog};
use topicfs::record::RecordInput;

fn cfg(segment_bytes: u64) -> Arc<LogConfig> {
    Arc::new(LogConfig {
        segment_bytes,
        index_interval_bytes: 512,
        segment_index_bytes: 4096,
        ..LogConfig::default()
    })
}

/// Values of 0 to 300 bytes (two-byte varint lengths from 64), a few null, a few with a key.
fn record() -> impl Strategy<Value = (Option<Vec<u8>>, Option<Vec<u8>>)> {
    (
        prop::option::weighted(0.1, prop::collection::vec(any::<u8>(), 0..8)),
        prop::option::weighted(0.95, prop::collection::vec(any::<u8>(), 0..300)),
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn stream_pieces_are_the_decoded_records_byte_for_byte(
        batches in prop::collection::vec(prop::collection::vec(record(), 1..120), 1..12),
        segment_bytes in 4_000u64..40_000,
        start_pick in any::<prop::sample::Index>(),
        reads in prop::collection::vec((any::<prop::sample::Index>(), 1usize..70_000), 1..25),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let log = PartitionLog::create(&dir.path().join("t-0"), "t", 0, cfg(segment_bytes)).unwrap();
        let ts = topicfs::util::clock::now_ms();
        for batch in &batches {
            let recs: Vec<RecordInput> = batch
                .iter()
                .map(|(k, v)| RecordInput {
                    key: k.as_deref(),
                    value: v.as_deref(),
                    timestamp: ts,
                    ..Default::default()
                })
                .collect();
            // Split as the producer splits a batch larger than a segment.
            topicfs::produce::append_batch(&log, &recs).unwrap();
        }
        let all = decode_dir_records(&dir.path().join("t-0"));
        let n: usize = batches.iter().map(Vec::len).sum();
        prop_assert_eq!(all.len(), n);
        let start = start_pick.index(n + 1) as i64;
        let mut want = Vec::new();
        for r in all.iter().filter(|r| r.offset >= start) {
            want.extend_from_slice(r.value.as_deref().unwrap_or_default());
            want.push(b'\n');
        }
        let name = LookupName::at_offset(start, Format::Lines);
        let mut h = StreamHandle::open("t", Arc::new(log), name, None).unwrap();
        check_pieces(&mut h, &want, &reads, true)?;
    }
}

/// A record for kafka-protocol's encoder: key, value, headers (ASCII keys).
type Rec = (
    Option<Vec<u8>>,
    Option<Vec<u8>>,
    Vec<(String, Option<Vec<u8>>)>,
);

/// Text, binary (invalid UTF-8 among it) and null keys, values and header values.
fn kp_record() -> impl Strategy<Value = Rec> {
    let bytes = || {
        prop_oneof![
            prop::collection::vec(any::<u8>(), 0..200),
            "[ -~\\n\"\\\\é]{0,120}".prop_map(String::into_bytes),
        ]
    };
    (
        prop::option::weighted(0.3, bytes()),
        prop::option::weighted(0.9, bytes()),
        prop::collection::vec(("[a-z]{1,4}", prop::option::weighted(0.8, bytes())), 0..3),
    )
}

fn kp_codec(i: u8) -> KCompression {
    [
        KCompression::None,
        KCompression::Gzip,
        KCompression::Snappy,
        KCompression::Lz4,
        KCompression::Zstd,
    ][i as usize % 5]
}

/// One batch encoded by kafka-protocol at `base`: data records, or (`control`) one
/// transaction marker, as a broker writes it.
fn kp_batch(base: i64, recs: &[Rec], codec: KCompression, control: bool) -> Vec<u8> {
    let records: Vec<KRecord> = if control {
        vec![KRecord {
            transactional: true,
            control: true,
            delete_horizon: false,
            partition_leader_epoch: 0,
            producer_id: 7,
            producer_epoch: 0,
            timestamp_type: KTimestampType::Creation,
            offset: base,
            sequence: -1,
            timestamp: 1_700_000_000_000,
            // COMMIT marker: version 0, type 1; value: version 0, coordinator epoch 0.
            key: Some(vec![0, 0, 0, 1].into()),
            value: Some(vec![0, 0, 0, 0, 0, 0].into()),
            headers: Default::default(),
        }]
    } else {
        recs.iter()
            .enumerate()
            .map(|(i, (k, v, h))| KRecord {
                transactional: false,
                control: false,
                delete_horizon: false,
                partition_leader_epoch: 0,
                producer_id: -1,
                producer_epoch: -1,
                timestamp_type: KTimestampType::Creation,
                offset: base + i as i64,
                // The first record's -1 is the batch's base sequence (none).
                sequence: (i as i32).wrapping_sub(1),
                timestamp: 1_700_000_000_000 + (i as i64 * 7919) % 5000,
                key: k.clone().map(Into::into),
                value: v.clone().map(Into::into),
                headers: h
                    .iter()
                    .map(|(hk, hv)| {
                        (
                            StrBytes::from_string(hk.clone()),
                            hv.clone().map(Into::into),
                        )
                    })
                    .collect(),
            })
            .collect()
    };
    let mut out = Vec::new();
    RecordBatchEncoder::encode(
        &mut out,
        &records,
        &RecordEncodeOptions {
            version: 2,
            compression: codec,
        },
    )
    .expect("kafka-protocol encodes");
    out
}

/// Bytes as the JSON lines show them: a string when UTF-8, else `{"base64": ...}`.
fn json_bytes(b: Option<&[u8]>) -> serde_json::Value {
    match b {
        None => serde_json::Value::Null,
        Some(b) => match std::str::from_utf8(b) {
            Ok(s) => serde_json::json!(s),
            Err(_) => serde_json::json!({
                "base64": base64::engine::general_purpose::STANDARD.encode(b)
            }),
        },
    }
}

/// Reads `want.len() + 100` bytes of `h` as random pieces, then all of it in 128 KiB
/// requests (read ahead from the second), comparing each piece with `want`; the length
/// `fstat` shows is `want`'s, at open and while a read-ahead is under way, when it is
/// `measured` without reading (lines); otherwise (JSON lines) it is `want`'s or 0 at open
/// (`want`'s when the first read's bytes hold it all), never less than what was read nor
/// more than `want`'s while reading, and `want`'s at the end. Every read is
/// answered in full up to the end, except a first read of the open file of `st_blksize` or
/// more, which answers at most `FIRST_READ_MAX` bytes (a stdio lookup decodes no more than
/// that).
fn check_pieces(
    h: &mut StreamHandle,
    want: &[u8],
    reads: &[(prop::sample::Index, usize)],
    measured: bool,
) -> Result<(), TestCaseError> {
    let at_open = h.length().unwrap();
    if measured || want.len() <= FIRST_READ_MAX {
        prop_assert_eq!(at_open, want.len() as u64, "length at open");
    } else {
        prop_assert!(
            at_open == 0 || at_open == want.len() as u64,
            "length at open: {at_open}"
        );
    }
    for (i, (at, size)) in reads.iter().enumerate() {
        let offset = at.index(want.len() + 100) as u64;
        let got = h.read(offset, *size).unwrap().to_vec();
        let size = if i == 0 && first_read_capped(*size) {
            FIRST_READ_MAX
        } else {
            *size
        };
        let from = (offset as usize).min(want.len());
        let to = (from + size).min(want.len());
        prop_assert!(
            got == want[from..to],
            "read({offset}, {size}): {} bytes, want {}",
            got.len(),
            to - from
        );
    }
    let mut whole = Vec::new();
    loop {
        let piece = h.read(whole.len() as u64, 128 * 1024).unwrap();
        if piece.is_empty() {
            break;
        }
        whole.extend_from_slice(piece);
        let len = h.length().unwrap();
        if measured {
            prop_assert_eq!(len, want.len() as u64, "length while reading");
        } else {
            prop_assert!(
                len >= whole.len() as u64 && len <= want.len() as u64,
                "length while reading: {len}, read {}, whole {}",
                whole.len(),
                want.len()
            );
        }
    }
    prop_assert_eq!(h.length().unwrap(), want.len() as u64, "length at the end");
    prop_assert!(
        whole == want,
        "whole stream: {} bytes, want {}",
        whole.len(),
        want.len()
    );
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]

    #[test]
    fn broker_batches_compressed_and_control_serve_their_records_as_lines_and_json(
        batches in prop::collection::vec(
            (prop::collection::vec(kp_record(), 1..60), 0u8..5, prop::bool::weighted(0.15), prop::bool::weighted(0.3)),
            1..14,
        ),
        start_pick in any::<prop::sample::Index>(),
        reads in prop::collection::vec((any::<prop::sample::Index>(), 1usize..40_000), 1..16),
        counted in any::<bool>(),
    ) {
        // Segment files as a broker leaves them: each batch starts a new segment or follows
        // the one before.
        let dir = tempfile::tempdir().unwrap();
        let pdir = dir.path().join("t-0");
        std::fs::create_dir(&pdir).unwrap();
        let mut segments: Vec<(i64, Vec<u8>)> = Vec::new();
        let mut next = 0i64;
        for (i, (recs, codec, control, new_segment)) in batches.iter().enumerate() {
            let bytes = kp_batch(next, recs, kp_codec(*codec), *control);
            if i == 0 || *new_segment {
                segments.push((next, Vec::new()));
            }
            segments.last_mut().unwrap().1.extend_from_slice(&bytes);
            next += if *control { 1 } else { recs.len() as i64 };
        }
        for (base, bytes) in &segments {
            std::fs::write(pdir.join(format!("{base:020}.log")), bytes).unwrap();
        }
        // The oracle: kafka-protocol's records of the files, control records left out.
        let all: Vec<_> = segments
            .iter()
            .flat_map(|(base, bytes)| decode_log(bytes, &format!("{base:020}.log")))
            .filter(|r| !r.control)
            .collect();
        let log = Arc::new(
            PartitionLog::load(
                &pdir,
                "t",
                0,
                cfg(1 << 30),
                LoadParams {
                    recovery_point: 0,
                    log_start_offset: 0,
                    had_clean_shutdown: false,
                    read_only: false,
                },
            )
            .unwrap(),
        );
        prop_assert_eq!(log.log_end_offset(), next);
        if counted {
            // Every segment counted whole first: a start inside a segment's first half is then
            // measured from the kept count, less the lines before it.
            let every: usize = all.iter().map(|r| r.value.as_ref().map_or(0, |v| v.len()) + 1).sum();
            prop_assert_eq!(log.lines_len(0, next).unwrap(), every as u64, "lines of the whole log");
        }
        // `<p>/count`: the data records, control records left out, from the kept counts
        // when the segments were counted first.
        prop_assert_eq!(log.record_count().unwrap(), all.len() as u64, "count");
        let start = start_pick.index(next as usize + 1) as i64;
        let mut lines = Vec::new();
        let mut json = Vec::new();
        for r in all.iter().filter(|r| r.offset >= start) {
            lines.extend_from_slice(r.value.as_deref().unwrap_or_default());
            lines.push(b'\n');
            let headers: Vec<serde_json::Value> = r
                .headers
                .iter()
                .map(|(k, v)| serde_json::json!([k.to_string(), json_bytes(v.as_deref())]))
                .collect();
            let line = serde_json::json!({
                "topic": "t",
                "partition": 0,
                "offset": r.offset,
                "timestamp": r.timestamp,
                "timestampType": "CreateTime",
                "key": json_bytes(r.key.as_deref()),
                "value": json_bytes(r.value.as_deref()),
                "headers": headers,
            });
            serde_json::to_writer(&mut json, &line).unwrap();
            json.push(b'\n');
        }
        for (format, want) in [(Format::Lines, &lines), (Format::Jsonl, &json)] {
            let name = LookupName::at_offset(start, format);
            let mut h = StreamHandle::open("t", log.clone(), name, None).unwrap();
            check_pieces(&mut h, want, &reads, format == Format::Lines)?;
        }
    }
}

/// Appends `batches` batches of `per_batch` numbered lines of about 100 bytes; returns them
/// as a lines stream shows them.
fn append_numbered(log: &PartitionLog, batches: usize, per_batch: usize) -> Vec<u8> {
    let mut want = Vec::new();
    for b in 0..batches {
        let values: Vec<String> = (0..per_batch)
            .map(|i| format!("{b:05}-{i:05}-{}", "v".repeat(88)))
            .collect();
        let recs: Vec<RecordInput> = values
            .iter()
            .map(|v| RecordInput {
                value: Some(v.as_bytes()),
                ..Default::default()
            })
            .collect();
        log.append(&recs).unwrap();
        for v in &values {
            want.extend_from_slice(v.as_bytes());
            want.push(b'\n');
        }
    }
    want
}

/// Flips one bit of the byte at `at` of a segment file in place (the mount's copy of it
/// changes under it, as a disk's bytes would).
fn flip_byte(seg: &std::path::Path, at: usize) {
    let f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(seg)
        .unwrap();
    let mut b = [0u8];
    std::os::unix::fs::FileExt::read_exact_at(&f, &mut b, at as u64).unwrap();
    b[0] ^= 0x20;
    std::os::unix::fs::FileExt::write_all_at(&f, &b, at as u64).unwrap();
}

/// Reads `cat by-offset/<start>` in 128 KiB requests: what it served, and the error that
/// ended it (None at a clean end).
fn read_stream(log: &Arc<PartitionLog>, start: i64) -> (Vec<u8>, Option<topicfs::Error>) {
    let name = LookupName::at_offset(start, Format::Lines);
    let mut h = StreamHandle::open("t", log.clone(), name, None).unwrap();
    let mut served = Vec::new();
    loop {
        match h.read(served.len() as u64, 128 * 1024) {
            Ok([]) => return (served, None),
            Ok(piece) => served.extend_from_slice(piece),
            Err(e) => {
                // The error stays: no later read serves what lies past it.
                assert!(h.read(served.len() as u64, 128 * 1024).is_err());
                return (served, Some(e));
            }
        }
    }
}

/// A corrupt batch met by a read-ahead: what lies before it is served, then the read that
/// reaches it fails, and nothing of it or after it is ever served.
#[test]
fn a_corrupt_batch_met_ahead_fails_the_read_that_reaches_it() {
    let dir = tempfile::tempdir().unwrap();
    let pdir = dir.path().join("t-0");
    let log = Arc::new(PartitionLog::create(&pdir, "t", 0, cfg(1 << 30)).unwrap());
    let want = append_numbered(&log, 400, 50);
    let seg = pdir.join(format!("{:020}.log", 0));
    let at = std::fs::metadata(&seg).unwrap().len() as usize * 3 / 4;
    flip_byte(&seg, at);
    let (served, err) = read_stream(&log, 0);
    let err = err.expect("the stream ended cleanly");
    assert!(err.to_string().contains("corrupt"), "{err}");
    assert!(
        served.len() > want.len() / 2,
        "{} bytes served",
        served.len()
    );
    assert!(served.len() < want.len() * 3 / 4 + 1);
    assert_eq!(served, want[..served.len()], "what was served is the log's");
}

/// The byte positions of the batches of a `.log` file.
fn batch_starts(path: &std::path::Path) -> Vec<usize> {
    let bytes = std::fs::read(path).unwrap();
    let (mut at, mut starts) = (0, Vec::new());
    while at + 12 <= bytes.len() {
        starts.push(at);
        at += 12 + u32::from_be_bytes(bytes[at + 8..at + 12].try_into().unwrap()) as usize;
    }
    starts
}

/// A partition log of one large segment in `dir`: its `.log` file, its config, the log.
fn one_segment_log(
    dir: &tempfile::TempDir,
) -> (std::path::PathBuf, Arc<LogConfig>, Arc<PartitionLog>) {
    let pdir = dir.path().join("t-0");
    let cfg = cfg(1 << 30);
    let log = Arc::new(PartitionLog::create(&pdir, "t", 0, cfg.clone()).unwrap());
    (pdir.join(format!("{:020}.log", 0)), cfg, log)
}

/// A segment's CRCs are computed once while it is open: reads from its start extend the
/// prefix of checked batches; a batch in it is not checked again (its header is), one past
/// it always is.
#[test]
fn a_batch_is_crc_checked_once_while_its_segment_is_open() {
    let dir = tempfile::tempdir().unwrap();
    let (path, _, log) = one_segment_log(&dir);
    let want = append_numbered(&log, 40, 50);
    let seg = log.segments()[0].clone();
    assert_eq!(seg.checked_prefix(), 0, "appends check nothing");
    // A stream that starts inside the segment checks what it reads, but that is no prefix.
    let (served, err) = read_stream(&log, 1_000);
    assert!(err.is_none());
    assert_eq!(served.len(), want.len() / 2);
    assert_eq!(seg.checked_prefix(), 0);
    // One from the start checks every batch: the prefix is the whole segment.
    let (served, err) = read_stream(&log, 0);
    assert!(err.is_none());
    assert_eq!(served, want);
    assert_eq!(seg.checked_prefix(), seg.size());
    // Bytes appended since are past the prefix: a corrupt batch right where it ends fails
    // the read, after every record before it.
    let checked = seg.checked_prefix() as usize;
    append_numbered(&log, 2, 50);
    assert_eq!(batch_starts(&path)[40], checked);
    flip_byte(&path, checked + 100);
    let (served, err) = read_stream(&log, 0);
    assert!(err.unwrap().to_string().contains("corrupt"));
    assert_eq!(served, want);
    assert_eq!(seg.checked_prefix() as usize, checked);
    // A value byte changed inside the prefix behind the mount's back is served as it now
    // is: the batch's CRC is not computed again (the daemon owns its log dir while mounted).
    let value_at = std::fs::read(&path)
        .unwrap()
        .windows(11)
        .position(|w| w == b"00007-00003")
        .unwrap();
    flip_byte(&path, value_at);
    let (served, _) = read_stream(&log, 0);
    let i = want.windows(11).position(|w| w == b"00007-00003").unwrap();
    assert_eq!(&served[i..i + 11], b"\x100007-00003");
    // Its header is checked still: a base offset (which the CRC does not cover) lowered
    // below the batch before it fails the read that reaches it.
    flip_byte(&path, batch_starts(&path)[20] + 7);
    let (served, err) = read_stream(&log, 0);
    assert!(err.is_some(), "a batch out of sequence was served");
    assert!(
        served.len() <= want.len() * 21 / 40,
        "{} bytes served",
        served.len()
    );
}

/// A lookup's batch, away from the prefix, is CRC-checked once too: it starts a run of
/// checked batches (a read that goes on from it extends the run), a later lookup of it
/// checks its header only, a batch no check passed is checked; the prefix of a read from the
/// start takes the runs it reaches; recovery checks them again and forgets those past its
/// cut.
#[test]
fn a_lookups_batch_is_crc_checked_once_too() {
    let dir = tempfile::tempdir().unwrap();
    let (path, cfg, log) = one_segment_log(&dir);
    let want = append_numbered(&log, 40, 50);
    let seg = log.segments()[0].clone();
    let starts = batch_starts(&path);
    let line = |b: usize, i: usize| format!("{b:05}-{i:05}-");
    let lookup = |offset: i64| {
        let name = LookupName::at_offset(offset, Format::Lines);
        let mut h = StreamHandle::open("t", log.clone(), name, None).unwrap();
        h.read(0, 200).map(|b| b.to_vec())
    };
    // A read from batch 30 to the end: one run, however many batches.
    let (served, err) = read_stream(&log, 1_500);
    assert!(err.is_none());
    assert_eq!(served.len(), want.len() / 4);
    assert_eq!((seg.checked_prefix(), seg.checked_runs()), (0, 1));
    assert!(lookup(1_030).unwrap().starts_with(line(20, 30).as_bytes()));
    assert_eq!((seg.checked_prefix(), seg.checked_runs()), (0, 2));
    // A value byte of that batch changed behind the mount's back: served as it now is.
    let bytes = std::fs::read(&path).unwrap();
    let at = |b, i| {
        bytes
            .windows(12)
            .position(|w| w == line(b, i).as_bytes())
            .unwrap()
    };
    flip_byte(&path, at(20, 40));
    let got = lookup(1_040).unwrap();
    assert_eq!(&got[..12], format!("\x10{}", &line(20, 40)[1..]).as_bytes());
    assert_eq!(seg.checked_runs(), 2);
    // The same change in a batch no check passed fails the lookup.
    flip_byte(&path, at(25, 10));
    let err = lookup(1_260).unwrap_err();
    assert!(err.to_string().contains("corrupt"), "{err}");
    // A read from the start checks every batch up to the one it fails at (batch 20 it
    // trusts, the first lookup's run): the prefix reaches batch 25.
    let (served, err) = read_stream(&log, 0);
    assert!(err.is_some());
    assert_eq!(served.len(), want.len() * 25 / 40);
    assert_eq!(seg.checked_prefix() as usize, starts[25]);
    // Recovery computes every CRC again: it cuts at batch 20, forgetting what lay past it.
    let (cut, _) = seg.recover(&cfg).unwrap();
    assert!(cut > 0);
    assert_eq!(seg.size() as usize, starts[20]);
    assert_eq!(seg.checked_runs(), 0);
    assert_eq!(seg.checked_prefix(), seg.size());
}

/// A lookup by time frames its batch from an index entry: it computes the CRC of a batch
/// inside the prefix (a value byte changed there fails it, where a read from the start
/// serves it), and trusts only a batch that began a run.
#[test]
fn a_lookup_by_time_trusts_only_a_batch_that_began_a_run() {
    let dir = tempfile::tempdir().unwrap();
    let (path, _, log) = one_segment_log(&dir);
    let t0 = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
        - 100_000;
    for b in 0..30 {
        let values: Vec<String> = (0..50).map(|i| format!("{b:05}-{i:05}-v")).collect();
        let recs: Vec<RecordInput> = values
            .iter()
            .map(|v| RecordInput {
                value: Some(v.as_bytes()),
                timestamp: t0 + b * 1_000,
                ..Default::default()
            })
            .collect();
        log.append(&recs).unwrap();
    }
    let seg = log.segments()[0].clone();
    let bytes = std::fs::read(&path).unwrap();
    let at = |b: usize, i: usize| {
        let v = format!("{b:05}-{i:05}-");
        bytes.windows(12).position(|w| w == v.as_bytes()).unwrap()
    };
    // Batch 20 begins a run (a lookup by offset, read on to the end); batches 0-14 are the
    // prefix (a read from the start stops at batch 15, changed behind the mount's back).
    let name = LookupName::at_offset(1_010, Format::Lines);
    let mut h = StreamHandle::open("t", log.clone(), name, None).unwrap();
    assert!(h.read(0, 100).unwrap().starts_with(b"00020-00010-"));
    let mut read = 100;
    loop {
        match h.read(read, 128 * 1024).unwrap().len() {
            0 => break,
            n => read += n as u64,
        }
    }
    drop(h);
    flip_byte(&path, at(15, 3));
    assert!(read_stream(&log, 0).1.is_some());
    let starts = batch_starts(&path);
    assert_eq!(seg.checked_prefix() as usize, starts[15]);
    assert_eq!(seg.checked_runs(), 1);
    flip_byte(&path, at(5, 3));
    flip_byte(&path, at(20, 3));
    flip_byte(&path, at(21, 3));
    assert_eq!(log.offset_for_time(t0 + 20_000).unwrap(), Some(1_000));
    // Inside the prefix or inside the run: computed again.
    for b in [5, 21] {
        let err = log.offset_for_time(t0 + b * 1_000).unwrap_err();
        assert!(err.to_string().contains("corrupt"), "{err}");
    }
}

/// Recovery computes every CRC, the checked prefix's too, and the prefix is cut with the
/// segment.
#[test]
fn recovery_checks_the_crcs_of_the_checked_prefix_and_shrinks_it() {
    let dir = tempfile::tempdir().unwrap();
    let (path, cfg, log) = one_segment_log(&dir);
    let want = append_numbered(&log, 10, 50);
    assert_eq!(read_stream(&log, 0).0, want);
    let seg = log.segments()[0].clone();
    assert_eq!(seg.checked_prefix(), seg.size());
    let third = batch_starts(&path)[3];
    flip_byte(&path, third + 100);
    let (cut, _) = seg.recover(&cfg).unwrap();
    assert!(cut > 0, "recovery kept a batch whose CRC fails");
    assert_eq!(seg.size() as usize, third);
    assert_eq!(seg.checked_prefix() as usize, third);
}

/// Batches larger than a read (a producer's 1 MiB batches and more), read in 128 KiB
/// requests with read-ahead: every byte is the log's, in order.
#[test]
fn batches_larger_than_a_read_stream_whole() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = Arc::new(LogConfig {
        max_message_bytes: 4 << 20,
        ..LogConfig::default()
    });
    let log = Arc::new(PartitionLog::create(&dir.path().join("t-0"), "t", 0, cfg).unwrap());
    let want = append_numbered(&log, 6, 20_000);
    for start in [0i64, 12_345] {
        let name = LookupName::at_offset(start, Format::Lines);
        let mut h = StreamHandle::open("t", log.clone(), name, None).unwrap();
        let from: usize = want
            .split_inclusive(|&b| b == b'\n')
            .take(start as usize)
            .map(<[u8]>::len)
            .sum();
        let want = &want[from..];
        assert_eq!(h.length().unwrap(), want.len() as u64);
        let mut got = Vec::new();
        loop {
            let piece = h.read(got.len() as u64, 128 * 1024).unwrap();
            if piece.is_empty() {
                break;
            }
            got.extend_from_slice(piece);
        }
        assert!(
            got == want,
            "from {start}: {} bytes, want {}",
            got.len(),
            want.len()
        );
    }
}

/// What a reader does to a stream whose read-ahead prepares replies ahead of its requests.
#[derive(Clone, Debug)]
enum Step {
    /// The next `n` reads of `size` bytes, each where the one before ended.
    Sequential(usize, usize),
    /// A read somewhere else (a seek, forward or back) of `size` bytes.
    Seek(prop::sample::Index, usize),
    /// `fstat`.
    Length,
    /// Close and open again, reading on from where it was.
    Reopen,
}

fn step() -> impl Strategy<Value = Step> {
    let size = prop::sample::select(vec![64 * 1024, 128 * 1024, 200_000, 4096]);
    prop_oneof![
        4 => (1..12usize, size.clone()).prop_map(|(n, s)| Step::Sequential(n, s)),
        1 => (any::<prop::sample::Index>(), size).prop_map(|(i, s)| Step::Seek(i, s)),
        1 => Just(Step::Length),
        1 => Just(Step::Reopen),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    /// Replies prepared ahead (several at a time) are served only to the sequential reads
    /// they were made for, in order; a seek, a change of size, an `fstat` or a close while
    /// some are prepared (or being prepared) loses nothing and serves nothing twice: every
    /// read is the log's bytes at its offset, as long as it asked for up to the end.
    #[test]
    fn replies_prepared_ahead_serve_exactly_the_reads_they_were_made_for(
        steps in prop::collection::vec(step(), 1..12),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let log = Arc::new(PartitionLog::create(&dir.path().join("t-0"), "t", 0, cfg(1 << 30)).unwrap());
        let want = append_numbered(&log, 120, 100);
        let name = LookupName::at_offset(0, Format::Lines);
        let open = || StreamHandle::open("t", log.clone(), name, None).unwrap();
        let mut h = open();
        let mut first = true;
        let mut at = 0u64;
        let check = |h: &mut StreamHandle, at: u64, size: usize, first: &mut bool| {
            let got = h.read(at, size).unwrap().to_vec();
            let size = if std::mem::take(first) && first_read_capped(size) { FIRST_READ_MAX } else { size };
            let from = (at as usize).min(want.len());
            let to = (from + size).min(want.len());
            prop_assert!(got == want[from..to], "read({at}, {size}): {} bytes, want {}", got.len(), to - from);
            Ok(at + got.len() as u64)
        };
        for s in steps {
            match s {
                Step::Sequential(n, size) => {
                    for _ in 0..n {
                        at = check(&mut h, at, size, &mut first)?;
                    }
                }
                Step::Seek(i, size) => {
                    at = check(&mut h, i.index(want.len()) as u64, size, &mut first)?;
                }
                Step::Length => prop_assert_eq!(h.length().unwrap(), want.len() as u64),
                Step::Reopen => {
                    h = open();
                    first = true;
                }
            }
        }
        // Then the rest, sequentially.
        loop {
            let next = check(&mut h, at, 128 * 1024, &mut first)?;
            if next == at {
                break;
            }
            at = next;
        }
        prop_assert_eq!(at, want.len() as u64);
    }
}

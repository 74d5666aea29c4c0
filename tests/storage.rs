//! Storage core tests: append, roll, indexes, lookups, recovery, checked against a plain
//! in-memory model and against an independent decoder (the `kafka-protocol` crate).

mod common;

use std::path::Path;
use std::sync::Arc;

use common::decode::{decode_dir_records, offset_index_entries, time_index_entries};
use common::drain::read_all;
use proptest::prelude::*;
use topicfs::config::LogConfig;
use topicfs::log::{LoadParams, PartitionLog};
use topicfs::record::RecordInput;

fn cfg(segment_bytes: u64, interval: u64) -> Arc<LogConfig> {
    Arc::new(LogConfig {
        segment_bytes,
        index_interval_bytes: interval,
        segment_index_bytes: 4096,
        ..LogConfig::default()
    })
}

fn append_values(log: &PartitionLog, values: &[Vec<u8>], ts: &[i64]) {
    let recs: Vec<RecordInput> = values
        .iter()
        .zip(ts)
        .map(|(v, t)| RecordInput {
            value: Some(v),
            timestamp: *t,
            ..Default::default()
        })
        .collect();
    log.append(&recs).unwrap();
}

/// Decodes every `.log` file of `dir` with kafka-protocol; returns (offset, timestamp, value).
fn independent_decode(dir: &Path) -> Vec<(i64, i64, Vec<u8>)> {
    decode_dir_records(dir)
        .into_iter()
        .map(|r| (r.offset, r.timestamp, r.value.unwrap().to_vec()))
        .collect()
}

fn reopen(dir: &Path, c: Arc<LogConfig>, clean: bool, rp: i64) -> PartitionLog {
    PartitionLog::load(
        dir,
        "t",
        0,
        c,
        LoadParams {
            recovery_point: rp,
            log_start_offset: 0,
            had_clean_shutdown: clean,
            read_only: false,
        },
    )
    .unwrap()
}

#[test]
fn appends_roll_and_read_back_through_an_independent_decoder() {
    let d = tempfile::tempdir().unwrap();
    let c = cfg(2000, 300);
    let log = PartitionLog::create(d.path(), "t", 0, c.clone()).unwrap();
    let mut model = Vec::new();
    for i in 0..200i64 {
        let vals: Vec<Vec<u8>> = (0..(i % 4 + 1))
            .map(|j| format!("value-{i}-{j}").into_bytes())
            .collect();
        let ts: Vec<i64> = vals.iter().map(|_| 1_000 + i).collect();
        for (v, t) in vals.iter().zip(&ts) {
            model.push((model.len() as i64, *t, v.clone()));
        }
        append_values(&log, &vals, &ts);
    }
    assert_eq!(log.log_end_offset(), model.len() as i64);
    assert!(log.segments().len() > 5, "expected rolls at 2000 bytes");
    for s in log.segments() {
        assert!(s.size() <= 2000);
        assert_eq!(s.log_path().file_name().unwrap().len(), 24);
    }
    assert_eq!(read_all(&log, 0), model);
    // Every start offset, including ones in the middle of a batch, reads exactly from there.
    for start in [1, 2, 3, 17, 250, model.len() as i64 - 1] {
        assert_eq!(
            read_all(&log, start),
            model[start as usize..].to_vec(),
            "from {start}"
        );
    }
    assert!(read_all(&log, model.len() as i64).is_empty());
    assert!(log.read_from_offset(model.len() as i64 + 1).is_err());
    log.close().unwrap();
    assert_eq!(independent_decode(d.path()), model);
}

#[test]
fn indexes_follow_kafkas_rule_and_are_trimmed_at_roll() {
    let d = tempfile::tempdir().unwrap();
    let c = cfg(1 << 20, 4096);
    let log = PartitionLog::create(d.path(), "t", 0, c.clone()).unwrap();
    // 1,000-byte batches: entries map the batch's last offset to its start position.
    let val = vec![b'x'; 1000 - 61 - 9];
    for i in 0..30 {
        append_values(&log, std::slice::from_ref(&val), &[10 + i]);
    }
    let seg = &log.segments()[0];
    assert_eq!(
        std::fs::metadata(seg.offset_index.path()).unwrap().len(),
        4096,
        "preallocated"
    );
    assert_eq!(
        std::fs::metadata(seg.time_index.path()).unwrap().len(),
        4092,
        "rounded down to 12"
    );
    let size = std::fs::metadata(seg.log_path()).unwrap().len() / 30;
    assert_eq!(size, 1000);
    log.close().unwrap();
    let idx = std::fs::read(d.path().join("00000000000000000000.index")).unwrap();
    let entries: Vec<(i32, i32)> = offset_index_entries(&idx);
    // Kafka: entry when bytes since the last entry > 4096, before counting the append.
    assert_eq!(
        entries,
        vec![
            (5, 5000),
            (10, 10000),
            (15, 15000),
            (20, 20000),
            (25, 25000)
        ]
    );
    let ti = std::fs::read(d.path().join("00000000000000000000.timeindex")).unwrap();
    let tentries: Vec<(i64, i32)> = time_index_entries(&ti);
    // The last entry is the segment's final max timestamp, written at close.
    assert_eq!(
        tentries,
        vec![(15, 5), (20, 10), (25, 15), (30, 20), (35, 25), (39, 29)]
    );
}

#[test]
fn lookup_scans_at_most_one_interval_plus_one_batch() {
    let d = tempfile::tempdir().unwrap();
    let interval = 1024u64;
    let c = cfg(1 << 30, interval);
    let log = PartitionLog::create(d.path(), "t", 0, c).unwrap();
    let mut max_batch = 0u64;
    for i in 0..3000u64 {
        let n = (i % 7 + 1) as usize;
        let vals: Vec<Vec<u8>> = (0..n)
            .map(|j| vec![b'a' + (j as u8); (i % 50) as usize + 10])
            .collect();
        let before = log.segments()[0].size();
        append_values(&log, &vals, &vec![i as i64; n]);
        max_batch = max_batch.max(log.segments()[0].size() - before);
    }
    let leo = log.log_end_offset();
    for target in (0..leo).step_by(97) {
        let mut r = log.read_from_offset(target).unwrap();
        let mut first = None;
        r.next_batch(&mut |rec| {
            first.get_or_insert(rec.offset);
        })
        .unwrap();
        assert_eq!(first, Some(target));
        let scanned = log.last_lookup_scan_bytes();
        assert!(
            scanned <= interval + max_batch,
            "scanned {scanned} bytes for {target}"
        );
    }
}

#[test]
fn by_time_finds_first_record_at_or_after_with_out_of_order_timestamps() {
    let d = tempfile::tempdir().unwrap();
    let log = PartitionLog::create(d.path(), "t", 0, cfg(600, 100)).unwrap();
    let ts = [100, 50, 300, 200, 200, 400, 350, 1000, 900, 901];
    let mut model = Vec::new();
    for (i, t) in ts.iter().enumerate() {
        append_values(&log, &[format!("v{i}").into_bytes()], &[*t]);
        model.push((i as i64, *t));
    }
    for target in [0, 50, 51, 100, 101, 200, 250, 301, 399, 400, 401, 999, 1000] {
        let want = model.iter().find(|(_, t)| *t >= target).map(|(o, _)| *o);
        assert_eq!(log.offset_for_time(target).unwrap(), want, "ts {target}");
    }
    assert!(log.offset_for_time(1001).unwrap().is_none());
    assert!(log.read_from_time(1001).is_err());
}

#[test]
fn crash_recovery_truncates_garbage_and_keeps_every_record() {
    let d = tempfile::tempdir().unwrap();
    let c = cfg(3000, 200);
    let mut model = Vec::new();
    {
        let log = PartitionLog::create(d.path(), "t", 0, c.clone()).unwrap();
        for i in 0..100i64 {
            let v = format!("rec{i}").into_bytes();
            append_values(&log, std::slice::from_ref(&v), &[i]);
            model.push((i, i, v));
        }
        // Dropped without close: an unclean stop with untrimmed indexes.
    }
    let active = std::fs::read_dir(d.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "log"))
        .max()
        .unwrap();
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(&active)
        .unwrap();
    std::io::Write::write_all(
        &mut f,
        &[
            0xde, 0xad, 0xbe, 0xef, 0, 0, 0, 0, 0, 0, 0, 99, 1, 2, 3, 4, 2, 9, 9, 9,
        ],
    )
    .unwrap();
    drop(f);
    let log = reopen(d.path(), c.clone(), false, 0);
    assert_eq!(log.log_end_offset(), 100);
    assert_eq!(read_all(&log, 0), model);
    append_values(&log, &[b"after".to_vec()], &[500]);
    assert_eq!(read_all(&log, 100), vec![(100, 500, b"after".to_vec())]);
    log.close().unwrap();
    let mut all = model.clone();
    all.push((100, 500, b"after".to_vec()));
    assert_eq!(independent_decode(d.path()), all);
}

#[test]
fn corrupt_missing_and_truncated_indexes_are_rebuilt_identically() {
    let d = tempfile::tempdir().unwrap();
    let c = cfg(1500, 150);
    {
        let log = PartitionLog::create(d.path(), "t", 0, c.clone()).unwrap();
        for i in 0..200i64 {
            append_values(&log, &[format!("r{i}").into_bytes()], &[i * 10]);
        }
        log.close().unwrap();
    }
    let snapshot = |dir: &Path| {
        let mut v: Vec<(String, Vec<u8>)> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| {
                p.extension()
                    .is_some_and(|e| e == "index" || e == "timeindex")
            })
            .map(|p| {
                (
                    p.file_name().unwrap().to_string_lossy().into_owned(),
                    std::fs::read(&p).unwrap(),
                )
            })
            .collect();
        v.sort();
        v
    };
    let good = snapshot(d.path());
    assert!(good.len() >= 6);
    // Damage: garbage entries, a truncated file, a missing file.
    std::fs::write(d.path().join(&good[0].0), vec![0xff; 24]).unwrap();
    let t = &good[1];
    std::fs::write(d.path().join(&t.0), &t.1[..t.1.len().saturating_sub(5)]).unwrap();
    std::fs::remove_file(d.path().join(&good[2].0)).unwrap();
    let log = reopen(d.path(), c.clone(), true, 0);
    let leo = log.log_end_offset();
    assert_eq!(leo, 200);
    for off in [0, 7, 55, 120, 199] {
        assert_eq!(read_all(&log, off)[0].0, off);
    }
    for ts in [0, 5, 995, 1990] {
        assert_eq!(log.offset_for_time(ts).unwrap(), Some((ts + 9) / 10));
    }
    log.close().unwrap();
    assert_eq!(snapshot(d.path()), good);
}

#[test]
fn oversized_batch_is_refused_and_nothing_is_appended() {
    let d = tempfile::tempdir().unwrap();
    let c = Arc::new(LogConfig {
        max_message_bytes: 1000,
        ..LogConfig::default()
    });
    let log = PartitionLog::create(d.path(), "t", 0, c).unwrap();
    let big = vec![b'x'; 2000];
    let err = log
        .append(&[RecordInput {
            value: Some(&big),
            timestamp: 1,
            ..Default::default()
        }])
        .unwrap_err();
    assert!(
        matches!(err, topicfs::Error::RecordTooLarge { .. }),
        "{err}"
    );
    assert_eq!(log.log_end_offset(), 0);
    assert_eq!(log.segments()[0].size(), 0);
}

/// An append file's write through the storage (`PartitionStore::append_lines`): one batch when
/// it fits, split into batches as large as fit when it passes `max.message.bytes`, refused
/// whole on a compacted topic, nothing for nothing; the records are checked with kafka-protocol.
#[test]
fn lines_are_one_batch_split_when_too_large_and_refused_without_keys_on_compacted_topics() {
    use topicfs::storage::PartitionStore;
    let d = tempfile::tempdir().unwrap();
    let c = Arc::new(LogConfig {
        max_message_bytes: 1000,
        ..LogConfig::default()
    });
    let log = PartitionLog::create(d.path(), "t", 0, c).unwrap();
    let lines: Vec<String> = (0..40)
        .map(|i| format!("line {i:03} {}", "v".repeat(40)))
        .collect();
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    let (head, rest) = text.as_bytes().split_at(text.find('\n').unwrap() + 1);
    let first = PartitionStore::append_lines(&log, &[head, b"first batch\n"], 7).unwrap();
    assert_eq!((first.records, log.segments()[0].size() > 0), (2, true));
    assert_eq!(first.partitions.into_iter().collect::<Vec<_>>(), vec![0]);
    // 40 lines of ~50 bytes: about 2 KB of records, over the 1000-byte limit.
    let split = PartitionStore::append_lines(&log, &[head, rest], 8).unwrap();
    assert_eq!(split.records, 40);
    let none = PartitionStore::append_lines(&log, &[b"", b""], 9).unwrap();
    assert_eq!((none.records, log.log_end_offset()), (0, 42));
    assert!(none.partitions.is_empty());
    let got = independent_decode(d.path());
    let mut want: Vec<(i64, i64, Vec<u8>)> = vec![
        (0, 7, head[..head.len() - 1].to_vec()),
        (1, 7, b"first batch".to_vec()),
    ];
    for (i, l) in lines.iter().enumerate() {
        want.push((2 + i as i64, 8, l.as_bytes().to_vec()));
    }
    assert_eq!(got, want);
    let segment = std::fs::read(d.path().join("00000000000000000000.log")).unwrap();
    let batches = common::decode::batches(&segment);
    assert_eq!(batches[0].1, 2, "the first write is one batch");
    assert!(
        batches.len() >= 3,
        "the large write split: {} batches",
        batches.len()
    );
    assert_eq!(
        log.lines_len(0, 42).unwrap(),
        want.iter().map(|(_, _, v)| v.len() as u64 + 1).sum::<u64>()
    );

    let compacted = tempfile::tempdir().unwrap();
    let mut cc = LogConfig::default();
    cc.set_topic_key("cleanup.policy", "compact").unwrap();
    let log = PartitionLog::create(compacted.path(), "t", 0, Arc::new(cc)).unwrap();
    let err = PartitionStore::append_lines(&log, &[b"a\nb\n"], 7).unwrap_err();
    assert!(
        matches!(err.error, topicfs::Error::InvalidRecord(_)),
        "{}",
        err.error
    );
    let empty = PartitionStore::append_lines(&log, &[b""], 7).unwrap();
    assert_eq!(
        (
            err.appended.records + empty.records,
            log.log_end_offset(),
            log.segments()[0].size()
        ),
        (0, 0, 0)
    );
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]
    #[test]
    fn random_appends_and_lookups_match_a_model(
        batches in prop::collection::vec((1usize..6, 0usize..80, 0i64..1000), 1..60),
        segment_bytes in 800u64..3000,
        interval in 1u64..500,
        probes in prop::collection::vec(0i64..1100, 1..20),
    ) {
        let d = tempfile::tempdir().unwrap();
        let log = PartitionLog::create(d.path(), "t", 0, cfg(segment_bytes.max(400), interval)).unwrap();
        let mut model: Vec<(i64, i64, Vec<u8>)> = Vec::new();
        for (n, len, ts) in &batches {
            let vals: Vec<Vec<u8>> = (0..*n).map(|j| vec![b'a' + (j as u8 % 26); *len]).collect();
            let tss: Vec<i64> = (0..*n).map(|j| ts + (j as i64 * 37) % 11).collect();
            for (v, t) in vals.iter().zip(&tss) {
                model.push((model.len() as i64, *t, v.clone()));
            }
            append_values(&log, &vals, &tss);
        }
        prop_assert_eq!(log.log_end_offset(), model.len() as i64);
        for p in &probes {
            let off = p % (model.len() as i64 + 1);
            prop_assert_eq!(read_all(&log, off), model[off as usize..].to_vec());
            let want = model.iter().find(|(_, t, _)| t >= p).map(|(o, _, _)| *o);
            prop_assert_eq!(log.offset_for_time(*p).unwrap(), want);
        }
        log.close().unwrap();
        let reopened = reopen(d.path(), cfg(segment_bytes.max(400), interval), false, 0);
        prop_assert_eq!(read_all(&reopened, 0), model.clone());
        reopened.close().unwrap();
        prop_assert_eq!(independent_decode(d.path()), model);
    }
}

#[test]
fn by_time_counts_control_batches_as_kafka_does_but_readers_skip_them() {
    use topicfs::record::{BatchBuilder, BatchOptions};
    let d = tempfile::tempdir().unwrap();
    let mut bytes = Vec::new();
    let mut b = BatchBuilder::new();
    // offsets 0-1: data at ts 100/101; offset 2: a COMMIT marker stamped at ts 5000;
    // offset 3: data at ts 200.
    b.begin(
        0,
        BatchOptions {
            transactional: true,
            producer_id: 7,
            producer_epoch: 0,
            base_sequence: 0,
            ..Default::default()
        },
    );
    b.add(&RecordInput {
        value: Some(b"a"),
        timestamp: 100,
        ..Default::default()
    });
    b.add(&RecordInput {
        value: Some(b"b"),
        timestamp: 101,
        ..Default::default()
    });
    bytes.extend_from_slice(b.finish().unwrap());
    b.begin(
        2,
        BatchOptions {
            transactional: true,
            control: true,
            producer_id: 7,
            producer_epoch: 0,
            ..Default::default()
        },
    );
    b.add(&RecordInput {
        key: Some(&[0, 0, 0, 1]),
        value: Some(&[0, 0, 0, 0, 0, 0]),
        timestamp: 5000,
        ..Default::default()
    });
    bytes.extend_from_slice(b.finish().unwrap());
    b.begin(3, BatchOptions::default());
    b.add(&RecordInput {
        value: Some(b"c"),
        timestamp: 200,
        ..Default::default()
    });
    bytes.extend_from_slice(b.finish().unwrap());
    std::fs::write(d.path().join("00000000000000000000.log"), &bytes).unwrap();
    let log = reopen(d.path(), cfg(1 << 20, 4096), false, 0);
    assert_eq!(log.log_end_offset(), 4);
    assert_eq!(
        log.offset_for_time(150).unwrap(),
        Some(2),
        "the marker's timestamp counts"
    );
    assert_eq!(log.offset_for_time(5000).unwrap(), Some(2));
    assert_eq!(log.offset_for_time(5001).unwrap(), None);
    let values: Vec<Vec<u8>> = read_all(&log, 2).into_iter().map(|(_, _, v)| v).collect();
    assert_eq!(
        values,
        vec![b"c".to_vec()],
        "the marker itself is not shown"
    );
}

#[test]
fn a_brokers_producer_snapshot_is_carried_to_each_roll_and_to_the_log_end() {
    let d = tempfile::tempdir().unwrap();
    let snap = b"\x00\x01fake-producer-state".to_vec();
    {
        let log = PartitionLog::create(d.path(), "t", 0, cfg(500, 100)).unwrap();
        log.close().unwrap();
    }
    std::fs::write(d.path().join("00000000000000000000.snapshot"), &snap).unwrap();
    let log = reopen(d.path(), cfg(500, 100), true, 0);
    for i in 0..40 {
        append_values(&log, &[format!("value {i:03}").into_bytes()], &[i]);
    }
    log.close().unwrap();
    let bases: Vec<i64> = log.segments().iter().map(|s| s.base_offset).collect();
    assert!(bases.len() > 2);
    for b in bases.iter().skip(1).chain(std::iter::once(&40)) {
        let p = d.path().join(format!("{b:020}.snapshot"));
        assert_eq!(std::fs::read(&p).unwrap(), snap, "{}", p.display());
    }
    // Without any broker snapshot, topicfs writes none.
    let e = tempfile::tempdir().unwrap();
    let log = PartitionLog::create(e.path(), "t", 0, cfg(500, 100)).unwrap();
    for i in 0..40 {
        append_values(&log, &[format!("value {i:03}").into_bytes()], &[i]);
    }
    log.close().unwrap();
    assert!(!std::fs::read_dir(e.path()).unwrap().any(|f| {
        f.unwrap()
            .path()
            .extension()
            .is_some_and(|x| x == "snapshot")
    }));
}

#[test]
fn leftover_deleted_cleaned_swap_and_orphan_index_files_are_handled_at_load() {
    let d = tempfile::tempdir().unwrap();
    let c = cfg(600, 100);
    {
        let log = PartitionLog::create(d.path(), "t", 0, c.clone()).unwrap();
        for i in 0..30i64 {
            append_values(
                &log,
                &[format!("v{i:02}-zzzzzzzzzzzzzzzz").into_bytes()],
                &[i],
            );
        }
        log.close().unwrap();
    }
    let bases: Vec<i64> = {
        let mut v: Vec<i64> = std::fs::read_dir(d.path())
            .unwrap()
            .filter_map(|e| {
                let n = e.unwrap().file_name().into_string().unwrap();
                n.strip_suffix(".log").map(|b| b.parse().unwrap())
            })
            .collect();
        v.sort();
        v
    };
    assert!(bases.len() >= 3);
    let p = |b: i64, ext: &str| d.path().join(format!("{b:020}.{ext}"));
    std::fs::write(p(900, "log.deleted"), b"old").unwrap();
    std::fs::write(p(901, "index.cleaned"), b"partial").unwrap();
    std::fs::write(p(902, "index"), [0u8; 16]).unwrap(); // no .log: orphan
    std::fs::write(p(902, "timeindex"), [0u8; 24]).unwrap();
    // A completed swap replaces segment bases[1] with identical bytes.
    std::fs::copy(p(bases[1], "log"), p(bases[1], "log.swap")).unwrap();
    let log = reopen(d.path(), c, true, 0);
    for f in [
        p(900, "log.deleted"),
        p(901, "index.cleaned"),
        p(902, "index"),
        p(902, "timeindex"),
        p(bases[1], "log.swap"),
    ] {
        assert!(!f.exists(), "{} should be gone", f.display());
    }
    assert!(p(bases[1], "log").exists());
    assert_eq!(log.log_end_offset(), 30);
    assert_eq!(read_all(&log, 0).len(), 30);
}

/// Descriptors this process holds on files under `dir`.
fn open_fds_under(dir: &Path) -> usize {
    std::fs::read_dir("/proc/self/fd")
        .unwrap()
        .filter_map(|e| std::fs::read_link(e.ok()?.path()).ok())
        .filter(|p| p.starts_with(dir))
        .count()
}

#[test]
fn inactive_segments_do_not_keep_descriptors_open() {
    let d = tempfile::tempdir().unwrap();
    let c = cfg(300, 100);
    {
        let log = PartitionLog::create(d.path(), "t", 0, c.clone()).unwrap();
        for i in 0..600i64 {
            append_values(
                &log,
                &[format!("value-{i:04}-padding-padding").into_bytes()],
                &[i],
            );
        }
        assert!(log.segments().len() > 100);
        assert!(
            open_fds_under(d.path()) <= 6,
            "after rolls: {}",
            open_fds_under(d.path())
        );
    }
    // Unclean: every segment is recovered, then everything is read and searched by time.
    let log = reopen(d.path(), c.clone(), false, 0);
    assert!(
        open_fds_under(d.path()) <= 6,
        "after recovery: {}",
        open_fds_under(d.path())
    );
    assert_eq!(read_all(&log, 0).len(), 600);
    assert_eq!(log.offset_for_time(599).unwrap(), Some(599));
    for off in (0..600).step_by(37) {
        assert_eq!(read_all(&log, off)[0].0, off);
        // A lookup that reads one record and is dropped mid-segment.
        let mut r = log.read_from_offset(off).unwrap();
        r.next_batch(&mut |_| {}).unwrap();
    }
    assert!(
        open_fds_under(d.path()) <= 6,
        "after reads: {}",
        open_fds_under(d.path())
    );
    log.close().unwrap();
    drop(log);
    // Clean: indexes open lazily on first lookup, and keep only their mapping.
    let log = reopen(d.path(), c, true, 0);
    for off in (0..600).step_by(23) {
        let mut r = log.read_from_offset(off).unwrap();
        r.next_batch(&mut |_| {}).unwrap();
    }
    assert_eq!(log.offset_for_time(300).unwrap(), Some(300));
    let n = open_fds_under(d.path());
    assert!(n <= 6, "after lazy lookups: {n}");
}

//! Log compaction in the storage core: a model of keyed appends against what a clean keeps,
//! offsets and batch bounds preserved, tombstone timing (the delete horizon), transaction
//! markers, readers across a swap, indexes equal to a rebuild, an independent decoder.

mod common;

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use common::decode::decode_dir_records;
use proptest::prelude::*;
use topicfs::config::{CleanupPolicy, LogConfig};
use topicfs::log::cleaner::{CleanRound, Cleaner, choose};
use topicfs::log::{LoadParams, PartitionLog};
use topicfs::record::{BatchBuilder, BatchOptions, BatchView, RecordInput};

const NOW: i64 = 1_700_000_000_000;

fn cfg(segment_bytes: u64, interval: u64) -> Arc<LogConfig> {
    Arc::new(LogConfig {
        segment_bytes,
        index_interval_bytes: interval,
        segment_index_bytes: 4096,
        cleanup_policy: CleanupPolicy::compact(),
        message_timestamp_before_max_ms: i64::MAX,
        message_timestamp_after_max_ms: i64::MAX,
        ..LogConfig::default()
    })
}

/// (offset, key, value) as topicfs' reader returns them from `from`.
type Rec = (i64, Vec<u8>, Option<Vec<u8>>);

fn read_from(log: &PartitionLog, from: i64) -> Vec<Rec> {
    common::drain::keyed_records(log, from)
}

/// (base offset, last offset, record count, attributes, base timestamp) of every batch of every
/// `.log` of `dir`, in file order, each CRC-checked.
fn batches(dir: &Path) -> Vec<(i64, i64, i32, i16, i64)> {
    let mut out = Vec::new();
    for n in common::decode::log_files(dir) {
        let bytes = std::fs::read(dir.join(&n)).unwrap();
        let mut pos = 0;
        while pos < bytes.len() {
            let v = BatchView::new(&bytes[pos..]).unwrap();
            v.ensure_valid().unwrap();
            let h = v.header;
            out.push((
                h.base_offset,
                h.last_offset(),
                h.records_count,
                h.attributes,
                h.base_timestamp,
            ));
            pos += h.size();
        }
    }
    out
}

fn clean(log: &PartitionLog, cleaner: &mut Cleaner, first_dirty: i64, now: i64) -> CleanRound {
    let to_clean = choose::cleanable(log, Some(first_dirty), now).unwrap();
    cleaner
        .clean(
            log,
            to_clean.first_dirty,
            to_clean.first_uncleanable,
            now,
            &AtomicBool::new(false),
        )
        .unwrap()
        .expect("something to clean")
}

fn append(log: &PartitionLog, recs: &[(&[u8], Option<&[u8]>)], ts: i64) {
    let input: Vec<RecordInput> = recs
        .iter()
        .map(|(k, v)| RecordInput {
            key: Some(k),
            value: *v,
            timestamp: ts,
            ..Default::default()
        })
        .collect();
    log.append(&input).unwrap();
}

fn reopen(dir: &Path, c: Arc<LogConfig>, clean: bool) -> PartitionLog {
    PartitionLog::load(
        dir,
        "t",
        0,
        c,
        LoadParams {
            recovery_point: 0,
            log_start_offset: 0,
            had_clean_shutdown: clean,
            read_only: false,
        },
    )
    .unwrap()
}

/// The records a clean up to `end` must leave: below `end` the latest record of each key in
/// [0, end); everything from `end` on untouched.
fn model_after_clean(all: &[Rec], end: i64) -> Vec<Rec> {
    let mut latest: BTreeMap<&[u8], i64> = BTreeMap::new();
    for (o, k, _) in all.iter().filter(|r| r.0 < end) {
        latest.insert(k, *o);
    }
    all.iter()
        .filter(|(o, k, _)| *o >= end || latest.get(k.as_slice()) == Some(o))
        .cloned()
        .collect()
}

/// The `.index` and `.timeindex` bytes of every inactive segment of `dir`.
fn inactive_indexes(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    let logs = common::decode::log_files(dir);
    let inactive: Vec<&str> = logs[..logs.len() - 1]
        .iter()
        .map(|n| n.trim_end_matches(".log"))
        .collect();
    common::mount::file_names(dir)
        .into_iter()
        .filter(|n| n.ends_with(".index") || n.ends_with(".timeindex"))
        .filter(|n| inactive.iter().any(|b| n.starts_with(b)))
        .map(|n| (n.clone(), std::fs::read(dir.join(&n)).unwrap()))
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]
    #[test]
    fn a_clean_keeps_the_latest_record_of_every_key_and_nothing_else_changes(
        batches_in in prop::collection::vec(
            prop::collection::vec((0u8..12, 0usize..40, prop::bool::weighted(0.1)), 1..6), 2..70),
        segment_bytes in 600u64..3000,
        interval in 1u64..400,
        map_memory in prop::sample::select(vec![24usize * 5, 24 * 16, 1 << 16]),
    ) {
        let d = tempfile::tempdir().unwrap();
        let c = cfg(segment_bytes, interval);
        let log = PartitionLog::create(d.path(), "t", 0, c.clone()).unwrap();
        let mut all: Vec<Rec> = Vec::new();
        for (i, b) in batches_in.iter().enumerate() {
            let recs: Vec<(Vec<u8>, Option<Vec<u8>>)> = b
                .iter()
                .map(|(k, len, tomb)| (
                    format!("key-{k}").into_bytes(),
                    (!tomb).then(|| vec![b'a' + (i % 26) as u8; *len]),
                ))
                .collect();
            for (k, v) in &recs {
                all.push((all.len() as i64, k.clone(), v.clone()));
            }
            let refs: Vec<(&[u8], Option<&[u8]>)> =
                recs.iter().map(|(k, v)| (k.as_slice(), v.as_deref())).collect();
            append(&log, &refs, NOW - 1000 + i as i64);
        }
        let leo = log.log_end_offset();
        let before = batches(d.path());
        let active_base = log.segments().last().unwrap().base_offset;
        let mut cleaner = Cleaner::new(map_memory);
        let to_clean = choose::cleanable(&log, None, NOW).unwrap();
        prop_assert_eq!(to_clean.first_uncleanable, active_base);
        let round = cleaner
            .clean(&log, 0, to_clean.first_uncleanable, NOW, &AtomicBool::new(false))
            .unwrap();
        let Some(round) = round else {
            // Only the active segment holds records: nothing may be cleaned.
            prop_assert_eq!(active_base, 0);
            return Ok(());
        };
        prop_assert!(round.end_offset <= active_base && round.end_offset > 0);
        let want = model_after_clean(&all, round.end_offset);
        prop_assert_eq!(read_from(&log, 0), want.clone());
        prop_assert_eq!(log.log_end_offset(), leo);
        // Every offset opens, at the next record that exists (a gap starts after it).
        for n in 0..=leo {
            let from_n: Vec<Rec> = want.iter().filter(|r| r.0 >= n).cloned().collect();
            prop_assert_eq!(read_from(&log, n), from_n);
        }
        // Batches keep their base offset and last offset delta; nothing from the end of
        // the map on is touched.
        let after = batches(d.path());
        for b in &after {
            prop_assert!(before.iter().any(|o| o.0 == b.0 && o.1 == b.1), "{:?} not a batch of before", b);
        }
        // Segments from the first uncleanable offset on are untouched; batches past the end
        // of the map keep their records (a tombstone among them gets a delete horizon, as
        // Kafka's filter gives every retained batch holding one).
        let untouched = |v: &Vec<(i64, i64, i32, i16, i64)>| -> Vec<(i64, i64, i32, i16, i64)> {
            v.iter().filter(|b| b.0 >= round.first_uncleanable).cloned().collect()
        };
        prop_assert_eq!(untouched(&after), untouched(&before));
        let past_map = |v: &Vec<(i64, i64, i32, i16, i64)>| -> Vec<(i64, i64, i32, i16)> {
            v.iter().filter(|b| b.0 >= round.end_offset).map(|b| (b.0, b.1, b.2, b.3 & !0x40)).collect()
        };
        prop_assert_eq!(past_map(&after), past_map(&before));
        // The batch ending at the round's upper bound stays, even empty.
        if let Some(last) = before.iter().find(|b| b.1 + 1 == round.first_uncleanable) {
            prop_assert!(after.iter().any(|b| b.0 == last.0), "last batch {:?} dropped", last);
        }
        // Tombstones kept by this first clean carry a delete horizon.
        for b in after.iter().filter(|b| b.1 < round.end_offset) {
            let has_tomb = want.iter().any(|r| r.0 >= b.0 && r.0 <= b.1 && r.2.is_none());
            if has_tomb {
                prop_assert!(b.3 & 0x40 != 0, "batch {:?} holds a tombstone without a horizon", b);
                prop_assert_eq!(b.4, NOW + 86_400_000);
            }
        }
        // An independent decoder reads the same records.
        let decoded: Vec<Rec> = decode_dir_records(d.path())
            .into_iter()
            .map(|r| (r.offset, r.key.map(|k| k.to_vec()).unwrap_or_default(), r.value.map(|v| v.to_vec())))
            .collect();
        prop_assert_eq!(decoded, want.clone());
        // The cleaned indexes are the ones a recovery rebuilds from the .log files.
        log.close().unwrap();
        let written = inactive_indexes(d.path());
        let copy = tempfile::tempdir().unwrap();
        for n in common::mount::file_names(d.path()).into_iter().filter(|n| n.ends_with(".log")) {
            std::fs::copy(d.path().join(&n), copy.path().join(&n)).unwrap();
        }
        let rebuilt = reopen(copy.path(), c.clone(), false);
        rebuilt.close().unwrap();
        prop_assert_eq!(inactive_indexes(copy.path()), written);
        let reopened = reopen(d.path(), c.clone(), true);
        prop_assert_eq!(read_from(&reopened, 0), want);
        prop_assert!(!common::mount::file_names(d.path()).iter().any(|n| n.contains(".cleaned") || n.contains(".swap") || n.contains(".deleted")));
    }
}

#[test]
fn tombstones_stay_for_delete_retention_ms_after_the_first_clean_that_saw_them() {
    let d = tempfile::tempdir().unwrap();
    let c = Arc::new(LogConfig {
        delete_retention_ms: 10_000,
        ..(*cfg(200, 4096)).clone()
    });
    let log = PartitionLog::create(d.path(), "t", 0, c).unwrap();
    append(&log, &[(b"a", Some(b"1")), (b"b", Some(b"1"))], NOW);
    append(&log, &[(b"a", None)], NOW);
    log.roll_now().unwrap();
    append(&log, &[(b"c", Some(b"1"))], NOW);
    log.roll_now().unwrap();
    let mut cleaner = Cleaner::new(1 << 16);
    let r1 = clean(&log, &mut cleaner, 0, NOW);
    let expect_tomb = vec![
        (1, b"b".to_vec(), Some(b"1".to_vec())),
        (2, b"a".to_vec(), None),
        (3, b"c".to_vec(), Some(b"1".to_vec())),
    ];
    assert_eq!(read_from(&log, 0), expect_tomb);
    let tomb_batch = batches(d.path()).into_iter().find(|b| b.0 == 2).unwrap();
    assert_eq!(tomb_batch.3 & 0x40, 0x40, "delete horizon flag");
    assert_eq!(
        tomb_batch.4,
        NOW + 10_000,
        "base timestamp holds the horizon"
    );
    // A record's timestamp is still its own (deltas are relative to the horizon).
    let mut ts = Vec::new();
    let mut rd = log.read_from_offset(2).unwrap();
    while rd.next_batch(&mut |r| ts.push(r.timestamp)).unwrap() {}
    assert_eq!(ts, vec![NOW, NOW]);
    // Cleaned again before the horizon: the tombstone stays.
    append(&log, &[(b"c", Some(b"2"))], NOW);
    log.roll_now().unwrap();
    let r2 = clean(&log, &mut cleaner, r1.end_offset, NOW + 9_999);
    assert!(read_from(&log, 0).contains(&(2, b"a".to_vec(), None)));
    // At the horizon it goes; the batch boundaries that remain are original ones.
    append(&log, &[(b"d", Some(b"1"))], NOW);
    log.roll_now().unwrap();
    clean(&log, &mut cleaner, r2.end_offset, NOW + 10_000);
    let left = read_from(&log, 0);
    assert!(!left.iter().any(|r| r.1 == b"a"), "{left:?}");
    assert_eq!(
        left,
        vec![
            (1, b"b".to_vec(), Some(b"1".to_vec())),
            (4, b"c".to_vec(), Some(b"2".to_vec())),
            (5, b"d".to_vec(), Some(b"1".to_vec())),
        ]
    );
}

#[test]
fn a_compacted_topic_refuses_records_without_a_key() {
    let d = tempfile::tempdir().unwrap();
    let log = PartitionLog::create(d.path(), "t", 0, cfg(1 << 20, 4096)).unwrap();
    let e = log
        .append(&[RecordInput {
            value: Some(b"v"),
            timestamp: NOW,
            ..Default::default()
        }])
        .unwrap_err();
    assert!(matches!(e, topicfs::Error::InvalidRecord(_)), "{e}");
    assert!(
        e.to_string()
            .contains("Compacted topic cannot accept message without key in topic partition t-0")
    );
    assert_eq!(log.log_end_offset(), 0);
}

#[test]
fn an_open_reader_reads_what_it_started_on_across_a_swap() {
    let d = tempfile::tempdir().unwrap();
    let log = PartitionLog::create(d.path(), "t", 0, cfg(300, 4096)).unwrap();
    let mut all = Vec::new();
    for i in 0..60i64 {
        let k = format!("k{}", i % 3);
        let v = format!("v{i}");
        append(&log, &[(k.as_bytes(), Some(v.as_bytes()))], NOW);
        all.push((i, k.into_bytes(), Some(v.into_bytes())));
    }
    assert!(log.segments().len() > 4);
    let mut reader = log.read_from_offset(0).unwrap();
    let mut got = Vec::new();
    reader
        .next_batch(&mut |r| {
            got.push((
                r.offset,
                r.key.unwrap().to_vec(),
                r.value.map(<[u8]>::to_vec),
            ))
        })
        .unwrap();
    let mut cleaner = Cleaner::new(1 << 16);
    clean(&log, &mut cleaner, 0, NOW);
    // Twice: the replaced segment's name is taken again by the next generation.
    append(&log, &[(b"k0", Some(b"x"))], NOW);
    log.roll_now().unwrap();
    let r = clean(&log, &mut cleaner, 0, NOW);
    assert!(r.stats.segments_replaced >= 1);
    while reader
        .next_batch(&mut |r| {
            got.push((
                r.offset,
                r.key.unwrap().to_vec(),
                r.value.map(<[u8]>::to_vec),
            ))
        })
        .unwrap()
    {}
    assert_eq!(
        got, all,
        "the reader opened before the clean sees the log it opened"
    );
    drop(reader);
    let names = common::mount::file_names(d.path());
    assert!(!names.iter().any(|n| n.ends_with(".deleted")), "{names:?}");
    assert_eq!(read_from(&log, 0).len(), 3);
}

/// A transactional batch of `producer` (epoch 0) with keyed records at `base`.
fn txn_batch(base: i64, producer: i64, keys: &[&[u8]], ts: i64) -> Vec<u8> {
    let mut b = BatchBuilder::new();
    b.begin(
        base,
        BatchOptions {
            producer_id: producer,
            producer_epoch: 0,
            base_sequence: 0,
            transactional: true,
            ..Default::default()
        },
    );
    for k in keys {
        b.add(&RecordInput {
            key: Some(k),
            value: Some(b"t"),
            timestamp: ts,
            ..Default::default()
        });
    }
    b.finish().unwrap().to_vec()
}

/// A transaction marker (0 abort, 1 commit) of `producer` at `offset`.
fn marker(offset: i64, producer: i64, kind: i16, ts: i64) -> Vec<u8> {
    let mut b = BatchBuilder::new();
    b.begin(
        offset,
        BatchOptions {
            producer_id: producer,
            producer_epoch: 0,
            transactional: true,
            control: true,
            ..Default::default()
        },
    );
    let key = [0u8, 0, (kind >> 8) as u8, kind as u8];
    let value = [0u8, 0, 0, 0, 0, 0];
    b.add(&RecordInput {
        key: Some(&key),
        value: Some(&value),
        timestamp: ts,
        ..Default::default()
    });
    b.finish().unwrap().to_vec()
}

#[test]
fn aborted_transactions_go_and_their_marker_outlives_them_by_the_delete_horizon() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().join("t-0");
    std::fs::create_dir(&dir).unwrap();
    // A log a broker could have written: producer 7 aborts a transaction (offsets 0-1,
    // marker at 2), producer 8 commits one (3, marker at 4), then plain keyed records. The
    // producers are idle for two days, so they are not active (no producer state to keep).
    let old = NOW - 2 * 86_400_000;
    let mut seg0 = Vec::new();
    seg0.extend(txn_batch(0, 7, &[b"x", b"y"], old));
    seg0.extend(marker(2, 7, 0, old));
    seg0.extend(txn_batch(3, 8, &[b"z"], old));
    seg0.extend(marker(4, 8, 1, old));
    std::fs::write(dir.join("00000000000000000000.log"), &seg0).unwrap();
    let mut txn = Vec::new();
    txn.extend_from_slice(&0i16.to_be_bytes());
    for v in [7i64, 0, 2, 0] {
        txn.extend_from_slice(&v.to_be_bytes());
    }
    std::fs::write(dir.join("00000000000000000000.txnindex"), &txn).unwrap();
    let c = Arc::new(LogConfig {
        delete_retention_ms: 1000,
        ..(*cfg(1 << 20, 4096)).clone()
    });
    let log = reopen_dir(&dir, c.clone());
    log.roll_now().unwrap();
    append(&log, &[(b"z", Some(b"2"))], NOW);
    log.roll_now().unwrap();
    let mut cleaner = Cleaner::new(1 << 16);
    let r1 = clean(&log, &mut cleaner, 0, NOW);
    // The aborted data is gone; its marker stays (a batch of it was seen in this pass) and
    // the aborted transaction is in the new .txnindex; the committed record of z lost to z=2,
    // and the commit marker, whose batch was seen, stays.
    let b = batches(&dir);
    let offsets: Vec<(i64, i64, i32)> = b.iter().map(|b| (b.0, b.1, b.2)).collect();
    assert_eq!(offsets, vec![(2, 2, 1), (4, 4, 1), (5, 5, 1)], "{b:?}");
    assert_eq!(
        std::fs::read(dir.join("00000000000000000000.txnindex")).unwrap(),
        txn
    );
    // Next round: no batch of either transaction is left, so both markers are discardable:
    // they get a delete horizon first...
    append(&log, &[(b"w", Some(b"1"))], NOW);
    log.roll_now().unwrap();
    let r2 = clean(&log, &mut cleaner, r1.end_offset, NOW);
    let b = batches(&dir);
    let m: Vec<_> = b.iter().filter(|b| b.0 == 2 || b.0 == 4).collect();
    assert_eq!(m.len(), 2, "{b:?}");
    assert!(
        m.iter().all(|b| b.3 & 0x40 != 0 && b.4 == NOW + 1000),
        "{b:?}"
    );
    assert!(!dir.join("00000000000000000000.txnindex").exists());
    // ... and go once it has passed.
    append(&log, &[(b"v", Some(b"1"))], NOW);
    log.roll_now().unwrap();
    clean(&log, &mut cleaner, r2.end_offset, NOW + 1000);
    let b = batches(&dir);
    assert!(!b.iter().any(|b| b.0 == 2 || b.0 == 4), "{b:?}");
    assert_eq!(
        read_from(&log, 0),
        vec![
            (5, b"z".to_vec(), Some(b"2".to_vec())),
            (6, b"w".to_vec(), Some(b"1".to_vec())),
            (7, b"v".to_vec(), Some(b"1".to_vec())),
        ]
    );
}

fn reopen_dir(dir: &Path, c: Arc<LogConfig>) -> PartitionLog {
    PartitionLog::load(
        dir,
        "t",
        0,
        c,
        LoadParams {
            recovery_point: 0,
            log_start_offset: 0,
            had_clean_shutdown: false,
            read_only: false,
        },
    )
    .unwrap()
}

#[test]
fn the_last_batch_of_an_active_producer_stays_as_an_empty_batch() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().join("t-0");
    std::fs::create_dir(&dir).unwrap();
    let mut b = BatchBuilder::new();
    b.begin(
        0,
        BatchOptions {
            producer_id: 9,
            producer_epoch: 3,
            base_sequence: 0,
            ..Default::default()
        },
    );
    for _ in 0..3 {
        b.add(&RecordInput {
            key: Some(b"k"),
            value: Some(b"old"),
            timestamp: NOW,
            ..Default::default()
        });
    }
    std::fs::write(dir.join("00000000000000000000.log"), b.finish().unwrap()).unwrap();
    let log = reopen_dir(&dir, cfg(1 << 20, 4096));
    log.roll_now().unwrap();
    append(&log, &[(b"k", Some(b"new"))], NOW);
    log.roll_now().unwrap();
    let mut cleaner = Cleaner::new(1 << 16);
    clean(&log, &mut cleaner, 0, NOW);
    // One cleaned segment: the producer's last batch as a bare header, then k=new.
    let bytes = std::fs::read(dir.join("00000000000000000000.log")).unwrap();
    let h = BatchView::new(&bytes).unwrap().header;
    assert_eq!(h.size(), 61, "a bare header");
    BatchView::new(&bytes).unwrap().ensure_valid().unwrap();
    assert_eq!(
        (h.base_offset, h.last_offset_delta, h.records_count),
        (0, 2, 0)
    );
    assert_eq!(
        (h.producer_id, h.producer_epoch, h.base_sequence),
        (9, 3, 0)
    );
    assert_eq!((h.base_timestamp, h.max_timestamp), (-1, NOW));
    assert_eq!(
        read_from(&log, 0),
        vec![(3, b"k".to_vec(), Some(b"new".to_vec()))]
    );
}

#[test]
fn an_open_transaction_stops_the_clean_at_its_segment() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().join("t-0");
    std::fs::create_dir(&dir).unwrap();
    // a=1, b=1 (offsets 0-1); then producer 7's transaction at 2 with no marker yet.
    let mut b = BatchBuilder::new();
    b.begin(0, BatchOptions::default());
    for k in [b"a", b"b"] {
        b.add(&RecordInput {
            key: Some(k),
            value: Some(b"1"),
            timestamp: NOW,
            ..Default::default()
        });
    }
    std::fs::write(dir.join("00000000000000000000.log"), b.finish().unwrap()).unwrap();
    let log = reopen_dir(&dir, cfg(1 << 20, 4096));
    log.roll_now().unwrap();
    append(&log, &[(b"a", Some(b"2"))], NOW);
    log.roll_now().unwrap();
    let open_txn = txn_batch(log.log_end_offset(), 7, &[b"b"], NOW);
    drop(log);
    std::fs::write(dir.join("00000000000000000003.log"), &open_txn).unwrap();
    let log = reopen_dir(&dir, cfg(1 << 20, 4096));
    log.roll_now().unwrap();
    append(&log, &[(b"b", Some(b"3"))], NOW);
    log.roll_now().unwrap();
    let mut cleaner = Cleaner::new(1 << 16);
    let r = clean(&log, &mut cleaner, 0, NOW);
    // Only the segments below the transaction's are cleaned: a=1 goes (a=2 is at 2), b=1
    // stays (b=3 is past the last stable offset, out of the round).
    assert_eq!(r.first_uncleanable, 3);
    assert_eq!(r.end_offset, 3);
    let left: Vec<i64> = read_from(&log, 0).iter().map(|r| r.0).collect();
    assert_eq!(left, vec![1, 2, 3, 4]);
}

#[test]
fn the_cleaner_and_read_committed_readers_stop_alike_at_a_damaged_header() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().join("t-0");
    std::fs::create_dir(&dir).unwrap();
    // Producer 7's transaction (offset 0) and its commit marker (1), then plain records.
    let mut seg0 = txn_batch(0, 7, &[b"x"], NOW);
    let marker_at = seg0.len();
    seg0.extend(marker(1, 7, 1, NOW));
    std::fs::write(dir.join("00000000000000000000.log"), &seg0).unwrap();
    let log = reopen_dir(&dir, cfg(1 << 20, 4096));
    log.roll_now().unwrap();
    append(&log, &[(b"x", Some(b"2"))], NOW);
    log.roll_now().unwrap();
    // The marker's header is damaged (its magic byte) after the segment was loaded whole.
    let f = std::fs::OpenOptions::new()
        .write(true)
        .open(dir.join("00000000000000000000.log"))
        .unwrap();
    std::os::unix::fs::FileExt::write_all_at(&f, &[1], marker_at as u64 + 16).unwrap();
    // Both learn the producer state from the same headers, so neither takes the transaction
    // as open from 0 where the other fails: both report the damaged batch.
    let readers = log.set_read_committed().unwrap_err().to_string();
    let to_clean = choose::cleanable(&log, Some(0), NOW).unwrap();
    let cleaner = Cleaner::new(1 << 16)
        .clean(
            &log,
            to_clean.first_dirty,
            to_clean.first_uncleanable,
            NOW,
            &AtomicBool::new(false),
        )
        .map(|round| round.map(|r| r.end_offset))
        .map_err(|e| e.to_string());
    assert!(
        readers.contains(&format!("at byte {marker_at}")),
        "{readers}"
    );
    assert_eq!(cleaner, Err(readers));
}

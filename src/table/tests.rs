//! The key index against a local log in a temp dir.

use std::sync::Arc;

use super::*;
use crate::config::BrokerConfig;
use crate::manager::LogManager;
use crate::record::RecordInput;

fn topic(dir: &std::path::Path, partitions: u32) -> (Arc<LogManager>, Arc<dyn TopicStore>) {
    let mut c = BrokerConfig::default();
    c.log_dirs = vec![dir.to_path_buf()];
    c.num_partitions = partitions;
    let mgr = LogManager::open_in_test(c);
    let t: Arc<dyn TopicStore> = mgr.create_topic("t").unwrap();
    (mgr, t)
}

fn put(t: &dyn TopicStore, key: &[u8], value: Option<&[u8]>, ts: i64) {
    let r = RecordInput {
        key: Some(key),
        value,
        headers: &[],
        timestamp: ts,
    };
    let appended = t.append(&[r], 1 << 20).unwrap();
    assert_eq!(appended.records, 1);
}

#[test]
fn table_latest_value_per_key_and_tombstones() {
    let dir = tempfile::tempdir().unwrap();
    let (_mgr, t) = topic(dir.path(), 3);
    let idx = KeyIndex::new();
    put(&*t, b"a", Some(b"1"), 10);
    put(&*t, b"b", Some(b"2"), 11);
    idx.refresh(&*t).unwrap();
    assert_eq!(idx.value(&*t, b"a").unwrap(), Some((b"1".to_vec(), 10)));
    // Appends after the build are read in by the next refresh.
    put(&*t, b"a", Some(b"one"), 12);
    put(&*t, b"b", None, 13);
    // An unkeyed record is not in the table.
    t.append(
        &[RecordInput {
            key: None,
            value: Some(b"x"),
            headers: &[],
            timestamp: 14,
        }],
        1 << 20,
    )
    .unwrap();
    idx.refresh(&*t).unwrap();
    assert_eq!(idx.value(&*t, b"a").unwrap(), Some((b"one".to_vec(), 12)));
    assert_eq!(idx.get(&*t, b"a").unwrap().unwrap().value_len, 3);
    assert_eq!(idx.value(&*t, b"b").unwrap(), None);
    let starts = vec![0; 3];
    let listed: Vec<Vec<u8>> = idx
        .list(0, 100, &starts)
        .into_iter()
        .map(|l| l.key)
        .collect();
    assert_eq!(listed, vec![b"a".to_vec()]);
    assert_eq!(idx.len(), 2);
}

#[test]
fn table_listing_continues_from_a_slot() {
    let dir = tempfile::tempdir().unwrap();
    let (_mgr, t) = topic(dir.path(), 2);
    for i in 0..50u32 {
        put(&*t, format!("k{i}").as_bytes(), Some(b"v"), 1);
    }
    let idx = KeyIndex::new();
    idx.refresh(&*t).unwrap();
    let starts = vec![0; 2];
    let mut seen = Vec::new();
    let mut from = 0;
    loop {
        let chunk = idx.list(from, 7, &starts);
        if chunk.is_empty() {
            break;
        }
        from = chunk.last().unwrap().slot + 1;
        seen.extend(chunk.into_iter().map(|l| l.key));
    }
    seen.sort();
    let mut want: Vec<Vec<u8>> = (0..50).map(|i| format!("k{i}").into_bytes()).collect();
    want.sort();
    assert_eq!(seen, want);
}

#[test]
fn table_index_memory_per_key() {
    let dir = tempfile::tempdir().unwrap();
    let (_mgr, t) = topic(dir.path(), 1);
    let n = 20_000u32;
    let keys: Vec<Vec<u8>> = (0..n).map(|i| format!("key-{i:08}").into_bytes()).collect();
    let p = t.partition(0).unwrap();
    for chunk in keys.chunks(1000) {
        let recs: Vec<RecordInput<'_>> = chunk
            .iter()
            .map(|k| RecordInput {
                key: Some(k),
                value: Some(b"v"),
                headers: &[],
                timestamp: 1,
            })
            .collect();
        p.append(&recs).unwrap();
    }
    let idx = KeyIndex::new();
    idx.refresh(&*t).unwrap();
    assert_eq!(idx.len(), n as usize);
    let key_bytes: usize = keys.iter().map(Vec::len).sum();
    let per_key = (idx.heap_bytes() - key_bytes) as f64 / f64::from(n);
    assert!(per_key < 100.0, "{per_key} bytes per key besides the key");
}

#[test]
fn table_values_of_records_inside_large_batches() {
    let dir = tempfile::tempdir().unwrap();
    let (_mgr, t) = topic(dir.path(), 3);
    let keys: Vec<Vec<u8>> = (0..100)
        .map(|i| format!("user-{i:04}").into_bytes())
        .collect();
    let recs: Vec<RecordInput<'_>> = keys
        .iter()
        .map(|k| RecordInput {
            key: Some(k),
            value: Some(k),
            headers: &[],
            timestamp: 1,
        })
        .collect();
    t.append(&recs, 1 << 20).unwrap();
    let idx = KeyIndex::new();
    idx.refresh(&*t).unwrap();
    for k in &keys {
        let l = idx.get(&*t, k).unwrap();
        assert_eq!(
            idx.value(&*t, k).unwrap().map(|v| v.0).as_ref(),
            Some(k),
            "{:?} at {l:?}",
            String::from_utf8_lossy(k)
        );
    }
}

#[test]
fn table_values_of_many_keys_in_one_append() {
    let dir = tempfile::tempdir().unwrap();
    let (_mgr, t) = topic(dir.path(), 3);
    let keys: Vec<Vec<u8>> = (0..1000)
        .map(|i| format!("user-{i:010}").into_bytes())
        .collect();
    let value = [b'v'; 100];
    let recs: Vec<RecordInput<'_>> = keys
        .iter()
        .map(|k| RecordInput {
            key: Some(k),
            value: Some(&value),
            headers: &[],
            timestamp: 1,
        })
        .collect();
    t.append(&recs, 1 << 20).unwrap();
    let idx = KeyIndex::new();
    idx.refresh(&*t).unwrap();
    for k in &keys {
        let l = idx.get(&*t, k).unwrap().unwrap();
        let log = t.partition(l.partition).unwrap();
        let mut s = log.read_from_offset(l.offset).unwrap();
        let mut seen = Vec::new();
        s.next_batch_meta(&mut |_, r| {
            if seen.len() < 3 {
                seen.push((
                    r.offset,
                    String::from_utf8_lossy(r.key.unwrap()).into_owned(),
                ))
            }
        })
        .unwrap();
        assert!(
            idx.value(&*t, k).unwrap().is_some(),
            "{:?} at {l:?}: {seen:?}",
            String::from_utf8_lossy(k)
        );
    }
    for round in 0..3 {
        for k in keys.iter().rev() {
            let l = idx.get(&*t, k).unwrap();
            assert!(
                idx.value(&*t, k).unwrap().is_some(),
                "round {round}: {:?} at {l:?}",
                String::from_utf8_lossy(k)
            );
        }
    }
}

#[test]
fn a_value_in_the_wire_format_is_marked_and_keeps_its_length() {
    let dir = tempfile::tempdir().unwrap();
    let (_mgr, t) = topic(dir.path(), 1);
    let idx = KeyIndex::new();
    let wire = [0u8, 0, 0, 0, 7, 2, b'x'];
    put(&*t, b"w", Some(&wire), 1);
    // Too short for a schema id, or another first byte: as any value.
    put(&*t, b"short", Some(&[0, 0, 0, 7]), 2);
    put(&*t, b"text", Some(b"\x01\0\0\0\x07"), 3);
    idx.refresh(&*t).unwrap();
    let w = idx.get(&*t, b"w").unwrap().unwrap();
    assert!(w.wire);
    assert_eq!(w.value_len, wire.len() as u64);
    for k in [&b"short"[..], b"text"] {
        let l = idx.get(&*t, k).unwrap().unwrap();
        assert!(!l.wire, "{k:?}");
        assert_eq!(l.value_len, if k == b"short" { 4 } else { 5 });
    }
    // A tombstone stays one.
    put(&*t, b"w", None, 4);
    idx.refresh(&*t).unwrap();
    assert!(idx.get(&*t, b"w").unwrap().is_none());
}

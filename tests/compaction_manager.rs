//! The log manager's cleaner thread: the dirtiest compacted log is cleaned in the background,
//! its first dirty offset goes to `cleaner-offset-checkpoint` (Kafka's format) and survives a
//! restart; `__consumer_offsets` is compacted; `compact,delete` also deletes by time; topics
//! with `delete` only are left to retention.

mod common;

use std::path::Path;
use std::time::{Duration, Instant};

use topicfs::config::BrokerConfig;
use topicfs::consumer_offsets::OffsetsStorage;
use topicfs::manager::LogManager;
use topicfs::record::RecordInput;

fn broker(dir: &Path) -> BrokerConfig {
    let mut c = BrokerConfig::default();
    c.log_dirs = vec![dir.to_path_buf()];
    c.log.segment_bytes = 600;
    c.log.index_interval_bytes = 100;
    c.cleaner_backoff_ms = 20;
    c
}

fn put(mgr: &LogManager, topic: &str, key: &str, value: &str, ts: i64) {
    mgr.topic(topic)
        .unwrap()
        .partition(0)
        .unwrap()
        .append(&[RecordInput {
            key: Some(key.as_bytes()),
            value: Some(value.as_bytes()),
            timestamp: ts,
            ..Default::default()
        }])
        .unwrap();
}

/// (key, value) of every record of partition 0.
fn records(mgr: &LogManager, topic: &str) -> Vec<(String, String)> {
    let log = mgr.topic(topic).unwrap().partition(0).unwrap();
    let mut r = log.read_from_offset(log.log_start_offset()).unwrap();
    let mut out = Vec::new();
    while r
        .next_batch(&mut |rec| {
            out.push((
                String::from_utf8(rec.key.unwrap_or_default().to_vec()).unwrap(),
                String::from_utf8(rec.value.unwrap_or_default().to_vec()).unwrap(),
            ))
        })
        .unwrap()
    {}
    out
}

fn wait_for(what: &str, mut f: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !f() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn the_cleaner_thread_compacts_and_checkpoints_the_first_dirty_offset() {
    let d = tempfile::tempdir().unwrap();
    let mgr = LogManager::open(broker(d.path())).unwrap();
    mgr.create_topic("keyed").unwrap();
    mgr.create_topic("plain").unwrap();
    mgr.set_topic_config("keyed", "cleanup.policy", Some("compact"))
        .unwrap();
    let now = topicfs::util::clock::now_ms();
    for i in 0..200 {
        put(&mgr, "keyed", &format!("k{}", i % 5), &format!("v{i}"), now);
        put(&mgr, "plain", &format!("k{}", i % 5), &format!("v{i}"), now);
    }
    let keyed = mgr.topic("keyed").unwrap().partition(0).unwrap();
    wait_for("the first clean", || {
        mgr.cleaner_checkpoint("keyed", 0).is_some()
    });
    let first_dirty = mgr.cleaner_checkpoint("keyed", 0).unwrap();
    let active = keyed.segments().last().unwrap().base_offset;
    assert!(
        first_dirty > 0 && first_dirty <= active,
        "{first_dirty} {active}"
    );
    // Kafka's OffsetCheckpointFile: version, count, `topic partition offset`.
    let text = std::fs::read_to_string(d.path().join("cleaner-offset-checkpoint")).unwrap();
    assert_eq!(text, format!("0\n1\nkeyed 0 {first_dirty}\n"));
    // Below the first dirty offset each key appears once, with its latest value there.
    let recs = records(&mgr, "keyed");
    let log = mgr.topic("keyed").unwrap().partition(0).unwrap();
    let mut clean_part = Vec::new();
    let mut r = log.read_from_offset(0).unwrap();
    while r
        .next_batch(&mut |rec| {
            if rec.offset < first_dirty {
                clean_part.push(String::from_utf8(rec.key.unwrap().to_vec()).unwrap());
            }
        })
        .unwrap()
    {}
    let mut uniq = clean_part.clone();
    uniq.sort();
    uniq.dedup();
    assert_eq!(clean_part.len(), uniq.len(), "{clean_part:?}");
    // The latest value of every key survives.
    for k in 0..5 {
        let latest = (0..200).rev().find(|i| i % 5 == k).unwrap();
        assert!(recs.contains(&(format!("k{k}"), format!("v{latest}"))));
    }
    assert!(recs.len() < 200);
    // The delete-only topic is untouched.
    assert_eq!(records(&mgr, "plain").len(), 200);
    // A topic deleted and created again starts without a checkpoint.
    mgr.create_topic("gone").unwrap();
    mgr.set_topic_config("gone", "cleanup.policy", Some("compact"))
        .unwrap();
    for i in 0..100 {
        put(&mgr, "gone", &format!("k{}", i % 5), &format!("v{i}"), now);
    }
    wait_for("the clean of gone", || {
        mgr.cleaner_checkpoint("gone", 0).is_some()
    });
    mgr.delete_topic("gone").unwrap();
    assert_eq!(mgr.cleaner_checkpoint("gone", 0), None);
    let text = std::fs::read_to_string(d.path().join("cleaner-offset-checkpoint")).unwrap();
    assert!(!text.contains("gone"), "{text}");
    mgr.shutdown().unwrap();
    drop(mgr);
    let mgr = LogManager::open(broker(d.path())).unwrap();
    assert!(mgr.cleaner_checkpoint("keyed", 0).unwrap() >= first_dirty);
    mgr.shutdown().unwrap();
}

#[test]
fn consumer_offsets_is_compacted() {
    let d = tempfile::tempdir().unwrap();
    let mgr = LogManager::open(broker(d.path())).unwrap();
    mgr.create_offsets_topic(1).unwrap();
    let t = mgr.topic("__consumer_offsets").unwrap();
    assert!(t.config().cleanup_policy.compact);
    assert!(
        t.config_text().contains("cleanup.policy=compact"),
        "{}",
        t.config_text()
    );
    // Kafka's 100 MiB segments would keep everything in the active segment here.
    mgr.set_topic_config("__consumer_offsets", "segment.bytes", Some("600"))
        .unwrap();
    let now = topicfs::util::clock::now_ms();
    for i in 0..300 {
        let key = format!("group-{}", i % 3);
        let value = format!("commit-{i}");
        mgr.append_offsets(
            0,
            &[RecordInput {
                key: Some(key.as_bytes()),
                value: Some(value.as_bytes()),
                timestamp: now,
                ..Default::default()
            }],
        )
        .unwrap();
    }
    wait_for("__consumer_offsets to be cleaned", || {
        mgr.cleaner_checkpoint("__consumer_offsets", 0).is_some()
    });
    assert!(records(&mgr, "__consumer_offsets").len() < 300);
    mgr.shutdown().unwrap();
}

#[test]
fn compact_delete_also_deletes_old_segments_and_compact_alone_does_not() {
    let d = tempfile::tempdir().unwrap();
    let mgr = LogManager::open(broker(d.path())).unwrap();
    for (t, policy) in [("both", "compact,delete"), ("compact", "compact")] {
        mgr.create_topic(t).unwrap();
        mgr.set_topic_configs(
            t,
            &[
                ("cleanup.policy", Some(policy)),
                ("retention.ms", Some("1000")),
                // Only time retention is exercised: no cleaning.
                ("min.cleanable.dirty.ratio", Some("1")),
            ],
        )
        .unwrap();
    }
    let old = topicfs::util::clock::now_ms() - 3_600_000;
    for i in 0..100 {
        for t in ["both", "compact"] {
            put(&mgr, t, &format!("k{i}"), "v", old);
        }
    }
    wait_for("time retention of the compact,delete topic", || {
        mgr.topic("both")
            .unwrap()
            .partition(0)
            .unwrap()
            .log_start_offset()
            > 0
    });
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(records(&mgr, "compact").len(), 100);
    mgr.run_retention().unwrap();
    assert_eq!(
        records(&mgr, "compact").len(),
        100,
        "retention leaves compacted logs alone"
    );
    mgr.shutdown().unwrap();
}

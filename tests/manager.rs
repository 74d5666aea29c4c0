//! LogManager: log dir layout, lock, placement, checkpoints, clean and unclean restarts.

mod common;

use std::path::{Path, PathBuf};

use common::drain::read_all;
use common::mount::file_names;
use topicfs::config::BrokerConfig;
use topicfs::manager::LogManager;
use topicfs::record::RecordInput;

fn broker(dirs: &[&Path], partitions: u32) -> BrokerConfig {
    let mut c = BrokerConfig::default();
    c.log_dirs = dirs.iter().map(|d| d.to_path_buf()).collect();
    c.num_partitions = partitions;
    c.log.segment_bytes = 1000;
    c.log.index_interval_bytes = 100;
    c.log.segment_index_bytes = 1200;
    c
}

fn put(mgr: &LogManager, topic: &str, p: u32, v: &str) -> i64 {
    mgr.topic(topic)
        .unwrap()
        .partition(p)
        .unwrap()
        .append(&[RecordInput {
            value: Some(v.as_bytes()),
            timestamp: topicfs::util::clock::now_ms(),
            ..Default::default()
        }])
        .unwrap()
        .first_offset
}

fn values(mgr: &LogManager, topic: &str, p: u32) -> Vec<String> {
    let log = mgr.topic(topic).unwrap().partition(p).unwrap();
    read_all(&log, log.log_start_offset())
        .into_iter()
        .map(|(_, _, v)| String::from_utf8(v).unwrap())
        .collect()
}

#[test]
fn fresh_dir_gets_kafkas_root_files_and_a_lock() {
    let d = tempfile::tempdir().unwrap();
    let mgr = LogManager::open(broker(&[d.path()], 2)).unwrap();
    for f in [
        "meta.properties",
        "recovery-point-offset-checkpoint",
        "log-start-offset-checkpoint",
        "replication-offset-checkpoint",
        "cleaner-offset-checkpoint",
        ".lock",
    ] {
        assert!(d.path().join(f).exists(), "{f}");
    }
    let meta = std::fs::read_to_string(d.path().join("meta.properties")).unwrap();
    assert!(meta.starts_with("#\n#"), "{meta}");
    assert!(
        meta.contains("\ncluster.id=") && meta.contains("\nversion=1\n"),
        "{meta}"
    );
    assert_eq!(
        std::fs::read_to_string(d.path().join("cleaner-offset-checkpoint")).unwrap(),
        "0\n0\n"
    );
    // A second manager on the same dir is refused while the first holds the lock.
    match LogManager::open(broker(&[d.path()], 1)) {
        Err(topicfs::Error::LogDirLocked(p)) => assert_eq!(p, d.path()),
        Err(e) => panic!("unexpected error {e}"),
        Ok(_) => panic!("second manager opened a locked dir"),
    }
    mgr.create_topic("orders").unwrap();
    assert!(d.path().join("orders-0").is_dir() && d.path().join("orders-1").is_dir());
    assert!(d.path().join("orders-0/00000000000000000000.log").exists());
    assert!(matches!(
        mgr.create_topic("orders"),
        Err(topicfs::Error::TopicExists(_))
    ));
    assert!(matches!(
        mgr.create_topic("a/b"),
        Err(topicfs::Error::InvalidTopicName(_))
    ));
    mgr.shutdown().unwrap();
    assert!(d.path().join(".kafka_cleanshutdown").exists());
    drop(mgr);
    // meta.properties is never rewritten.
    let mgr = LogManager::open(broker(&[d.path()], 1)).unwrap();
    assert_eq!(
        std::fs::read_to_string(d.path().join("meta.properties")).unwrap(),
        meta
    );
    assert!(
        !d.path().join(".kafka_cleanshutdown").exists(),
        "marker is consumed at start"
    );
    assert_eq!(mgr.topics(), vec!["orders".to_string()]);
    assert_eq!(mgr.topic("orders").unwrap().partition_count(), 2);
}

#[test]
fn partitions_spread_over_the_least_loaded_dirs_and_grow() {
    let a = tempfile::tempdir().unwrap();
    let b = tempfile::tempdir().unwrap();
    let mgr = LogManager::open(broker(&[a.path(), b.path()], 3)).unwrap();
    mgr.create_topic("t1").unwrap();
    mgr.create_topic("t2").unwrap();
    let count = |d: &Path| {
        std::fs::read_dir(d)
            .unwrap()
            .filter(|e| e.as_ref().unwrap().path().is_dir())
            .count()
    };
    assert_eq!(count(a.path()) + count(b.path()), 6);
    assert_eq!(count(a.path()), 3);
    mgr.set_partition_count("t1", 5).unwrap();
    assert_eq!(mgr.topic("t1").unwrap().partition_count(), 5);
    assert!(matches!(
        mgr.set_partition_count("t1", 2),
        Err(topicfs::Error::InvalidPartitionCount {
            current: 5,
            requested: 2,
            ..
        })
    ));
    assert_eq!(count(a.path()) + count(b.path()), 8);
    assert_eq!(count(a.path()), 4);
    for p in 0..5 {
        put(&mgr, "t1", p, &format!("hello {p}"));
    }
    mgr.shutdown().unwrap();
    drop(mgr);
    let mgr = LogManager::open(broker(&[a.path(), b.path()], 3)).unwrap();
    for p in 0..5 {
        assert_eq!(values(&mgr, "t1", p), vec![format!("hello {p}")]);
    }
    mgr.delete_topic("t1").unwrap();
    assert_eq!(mgr.topics(), vec!["t2".to_string()]);
    assert_eq!(count(a.path()) + count(b.path()), 3);
}

#[test]
fn checkpoints_after_clean_shutdown_and_recovery_after_a_crash() {
    let d = tempfile::tempdir().unwrap();
    let mgr = LogManager::open(broker(&[d.path()], 1)).unwrap();
    mgr.create_topic("orders").unwrap();
    for i in 0..50 {
        put(&mgr, "orders", 0, &format!("m{i}"));
    }
    mgr.shutdown().unwrap();
    drop(mgr);
    let rp = std::fs::read_to_string(d.path().join("recovery-point-offset-checkpoint")).unwrap();
    assert_eq!(rp, "0\n1\norders 0 50\n");
    let hw = std::fs::read_to_string(d.path().join("replication-offset-checkpoint")).unwrap();
    assert_eq!(hw, "0\n1\norders 0 50\n");
    // Indexes of every segment are trimmed after a clean shutdown.
    for e in std::fs::read_dir(d.path().join("orders-0")).unwrap() {
        let p: PathBuf = e.unwrap().path();
        let len = std::fs::metadata(&p).unwrap().len();
        assert!(len < 1200, "{} is {len} bytes", p.display());
    }
    // Crash: no shutdown; garbage at the tail of the active segment.
    let mgr = LogManager::open(broker(&[d.path()], 1)).unwrap();
    for i in 50..60 {
        put(&mgr, "orders", 0, &format!("m{i}"));
    }
    let log = mgr.topic("orders").unwrap().partition(0).unwrap();
    let active = log.segments().last().unwrap().log_path().to_path_buf();
    std::mem::forget(mgr); // the daemon died: no shutdown, lock released below by closing nothing
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(&active)
        .unwrap();
    std::io::Write::write_all(&mut f, b"\0\0\0\0\0\0\0\x3c\0\0\0\x20torn").unwrap();
    drop(f);
    assert!(!d.path().join(".kafka_cleanshutdown").exists());
    // The leaked manager still holds the lock in this process: OFD locks conflict here too.
    assert!(LogManager::open(broker(&[d.path()], 1)).is_err());
}

#[test]
fn retention_by_bytes_and_time_deletes_oldest_segments_and_moves_log_start() {
    let d = tempfile::tempdir().unwrap();
    let mgr = LogManager::open(broker(&[d.path()], 1)).unwrap();
    mgr.create_topic("r").unwrap();
    let log = mgr.topic("r").unwrap().partition(0).unwrap();
    for i in 0..100 {
        put(&mgr, "r", 0, &format!("record number {i:04}"));
    }
    let segs = log.segments().len();
    assert!(segs > 4, "{segs} segments");
    let total = log.size_in_bytes() as i64;
    mgr.set_topic_config("r", "retention.bytes", Some(&(total / 2).to_string()))
        .unwrap();
    assert!(
        mgr.topic("r")
            .unwrap()
            .config_text()
            .starts_with("# topic overrides\nretention.bytes=")
    );
    let deleted = mgr.run_retention().unwrap();
    assert!(deleted > 0);
    assert!(log.size_in_bytes() as i64 <= total - total / 2 + 1000);
    let start = log.log_start_offset();
    assert!(start > 0);
    assert_eq!(start, log.segments()[0].base_offset);
    assert!(matches!(
        log.read_from_offset(start - 1),
        Err(topicfs::Error::OffsetOutOfRange { .. })
    ));
    assert_eq!(values(&mgr, "r", 0)[0], format!("record number {start:04}"));
    let cp = std::fs::read_to_string(d.path().join("log-start-offset-checkpoint")).unwrap();
    // As Kafka: only a log start above the first segment's base offset needs a checkpoint line.
    assert_eq!(cp, "0\n0\n");
    // Nothing is older than a minute yet; then everything is older than 1 ms.
    mgr.set_topic_config("r", "retention.bytes", None).unwrap();
    mgr.set_topic_config("r", "retention.ms", Some("60000"))
        .unwrap();
    assert_eq!(mgr.run_retention().unwrap(), 0);
    std::thread::sleep(std::time::Duration::from_millis(20));
    mgr.set_topic_config("r", "retention.ms", Some("1"))
        .unwrap();
    mgr.run_retention().unwrap();
    assert_eq!(
        log.log_start_offset(),
        100,
        "all data expired, a new empty segment rolled"
    );
    assert_eq!(log.segments().len(), 1);
    assert!(values(&mgr, "r", 0).is_empty());
    assert_eq!(put(&mgr, "r", 0, "fresh"), 100);
    // Overrides survive a restart; invalid keys and values are refused.
    assert!(matches!(
        mgr.set_topic_config("r", "nope", Some("1")),
        Err(topicfs::Error::InvalidConfig(_))
    ));
    assert!(matches!(
        mgr.set_topic_config("r", "retention.ms", Some("soon")),
        Err(topicfs::Error::InvalidConfig(_))
    ));
    mgr.shutdown().unwrap();
    drop(mgr);
    let mgr = LogManager::open(broker(&[d.path()], 1)).unwrap();
    let t = mgr.topic("r").unwrap();
    assert_eq!(t.config().retention_ms, 1);
    assert_eq!(t.partition(0).unwrap().log_start_offset(), 100);
    assert_eq!(values(&mgr, "r", 0), vec!["fresh".to_string()]);
}

#[test]
fn a_brokers_clean_shutdown_epoch_is_written_back() {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(
        d.path().join(".kafka_cleanshutdown"),
        "{\"version\":0,\"brokerEpoch\":11}",
    )
    .unwrap();
    let mgr = LogManager::open(broker(&[d.path()], 1)).unwrap();
    assert!(!d.path().join(".kafka_cleanshutdown").exists());
    mgr.shutdown().unwrap();
    assert_eq!(
        std::fs::read_to_string(d.path().join(".kafka_cleanshutdown")).unwrap(),
        "{\"version\":0,\"brokerEpoch\":11}"
    );
}

#[test]
fn an_open_reader_keeps_reading_segments_retention_deleted() {
    let d = tempfile::tempdir().unwrap();
    let mgr = LogManager::open(broker(&[d.path()], 1)).unwrap();
    mgr.create_topic("r").unwrap();
    let log = mgr.topic("r").unwrap().partition(0).unwrap();
    for i in 0..60 {
        put(&mgr, "r", 0, &format!("kept while read {i:03}"));
    }
    assert!(log.segments().len() > 3);
    let mut reader = log.read_from_offset(0).unwrap();
    let mut seen = Vec::new();
    reader
        .next_batch(&mut |r| seen.push(r.value.unwrap().to_vec()))
        .unwrap();
    mgr.set_topic_config("r", "retention.ms", Some("1"))
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(20));
    assert!(mgr.run_retention().unwrap() > 3);
    assert_eq!(log.log_start_offset(), 60);
    let logs = |ext: &str| {
        file_names(&d.path().join("r-0"))
            .iter()
            .filter(|n| n.ends_with(ext))
            .count()
    };
    assert_eq!(logs(".log"), 1, "only the new active segment is live");
    assert!(
        logs(".log.deleted") > 0,
        "the reader's segments wait for it"
    );
    while reader
        .next_batch(&mut |r| seen.push(r.value.unwrap().to_vec()))
        .unwrap()
    {}
    assert_eq!(seen.len(), 60);
    assert_eq!(seen[59], b"kept while read 059".to_vec());
    drop(reader);
    assert_eq!(logs(".deleted"), 0, "removed once the last reader is gone");
}

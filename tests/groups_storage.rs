//! Consumer-group offsets stored in `__consumer_offsets` through the LogManager: commits
//! survive a reopen (a remount), the partition count of an existing topic is used, records a
//! broker writes are read, and the bytes on disk are checked with independent decoders
//! (kafka-protocol for the batches, kafka-python's schema-driven decoder with Kafka 4.1.1's
//! OffsetCommitKey/OffsetCommitValue schemas for the keys and values).

use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;

use topicfs::base::OFFSETS_TOPIC;
use topicfs::config::BrokerConfig;
use topicfs::consumer_offsets::codec::{self, OffsetCommitKey, OffsetCommitValue};
use topicfs::consumer_offsets::{GroupOffsets, partition_for};
use topicfs::manager::LogManager;
use topicfs::record::RecordInput;

fn open(dir: &Path, offsets_partitions: u32) -> Arc<LogManager> {
    let mut c = BrokerConfig::default();
    c.log_dirs = vec![dir.to_path_buf()];
    c.offsets_topic_num_partitions = offsets_partitions;
    c.allow_untrusted_log_dir = true;
    LogManager::open(c).unwrap()
}

fn close(mgr: Arc<LogManager>) {
    mgr.shutdown().unwrap();
    drop(mgr);
}

/// Every record of one partition dir as kafka-protocol decodes it: (batch base offset,
/// key, value).
fn decoded_records(dir: &Path) -> Vec<(i64, Vec<u8>, Option<Vec<u8>>)> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".log"))
        .collect();
    names.sort();
    let mut out = Vec::new();
    for n in names {
        let bytes = std::fs::read(dir.join(&n)).unwrap();
        let mut input: &[u8] = &bytes;
        let mut base = 0;
        let sets = kafka_protocol::records::RecordBatchDecoder::decode_all(&mut input)
            .unwrap_or_else(|e| panic!("kafka-protocol cannot decode {n}: {e:#}"));
        for s in sets {
            if let Some(first) = s.records.first() {
                base = first.offset;
            }
            for r in &s.records {
                out.push((
                    base,
                    r.key.as_ref().expect("a key").to_vec(),
                    r.value.as_ref().map(|v| v.to_vec()),
                ));
            }
        }
    }
    out
}

fn rec<'a>(k: &'a [u8], v: Option<&'a [u8]>) -> RecordInput<'a> {
    RecordInput {
        key: Some(k),
        value: v,
        headers: &[],
        timestamp: topicfs::util::clock::now_ms(),
    }
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// kafka-python's decoding of (key, value) pairs, one JSON object each.
fn python_decode(records: &[(Vec<u8>, Option<Vec<u8>>)]) -> Vec<serde_json::Value> {
    let script =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/consumer_offsets/decode.py");
    let mut child = Command::new("python3")
        .arg(&script)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("python3 runs");
    {
        let mut stdin = child.stdin.take().unwrap();
        for (k, v) in records {
            let v = v.as_deref().map(hex).unwrap_or_else(|| "-".into());
            writeln!(stdin, "{} {v}", hex(k)).unwrap();
        }
    }
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "kafka-python decoder failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn commits_survive_a_reopen() {
    let tmp = tempfile::tempdir().unwrap();
    let mgr = open(tmp.path(), 50);
    let g = GroupOffsets::open(mgr.clone()).unwrap();
    assert_eq!(g.load_stats().partitions, 0);
    assert!(mgr.topic(OFFSETS_TOPIC).is_err());
    g.commit("g1", &[("orders", 0, 42), ("orders", 1, 7)])
        .unwrap();
    g.commit("g1", &[("orders", 0, 43)]).unwrap();
    g.commit("my-group", &[("orders", 2, 5), ("other", 0, 1)])
        .unwrap();
    g.reset("g2", "orders", &BTreeMap::from([(0, 0)])).unwrap();
    g.delete_offsets("g2", "orders").unwrap();
    // Created on the first commit with offsets.topic.num.partitions partitions.
    assert_eq!(mgr.topic(OFFSETS_TOPIC).unwrap().partition_count(), 50);
    for p in 0..50 {
        assert!(tmp.path().join(format!("{OFFSETS_TOPIC}-{p}")).is_dir());
    }
    drop(g);
    close(mgr);

    let mgr = open(tmp.path(), 7);
    let g = GroupOffsets::open(mgr.clone()).unwrap();
    assert_eq!(g.load_stats().partitions, 50);
    assert_eq!(
        g.partitions(),
        50,
        "the existing count wins over the config"
    );
    assert_eq!(
        g.committed("g1", "orders"),
        BTreeMap::from([(0, 43), (1, 7)])
    );
    assert_eq!(g.committed("my-group", "orders"), BTreeMap::from([(2, 5)]));
    assert_eq!(g.committed("my-group", "other"), BTreeMap::from([(0, 1)]));
    assert!(g.committed("g2", "orders").is_empty());
    assert_eq!(g.groups_of("orders"), vec!["g1", "my-group"]);
    assert_eq!(g.groups_of("other"), vec!["my-group"]);
    // g1's commits sit in partition 42, my-group's in 12 (Kafka's hash), nothing elsewhere
    // but g2's partition.
    let t = mgr.topic(OFFSETS_TOPIC).unwrap();
    assert_eq!(t.partition(42).unwrap().log_end_offset(), 3);
    assert_eq!(t.partition(12).unwrap().log_end_offset(), 2);
    let g2 = partition_for("g2", 50);
    assert_eq!(t.partition(g2).unwrap().log_end_offset(), 2);
    let total: i64 = (0..50)
        .map(|p| t.partition(p).unwrap().log_end_offset())
        .sum();
    assert_eq!(total, 7);
    // A commit after the reopen lands beside the old ones.
    g.commit("g1", &[("orders", 1, 8)]).unwrap();
    drop(g);
    close(mgr);
    let mgr = open(tmp.path(), 50);
    let g = GroupOffsets::open(mgr.clone()).unwrap();
    assert_eq!(
        g.committed("g1", "orders"),
        BTreeMap::from([(0, 43), (1, 8)])
    );
    drop(g);
    close(mgr);
}

#[test]
fn an_existing_topic_keeps_its_partition_count() {
    let tmp = tempfile::tempdir().unwrap();
    let mgr = open(tmp.path(), 50);
    // As a broker with offsets.topic.num.partitions=3 left it.
    mgr.create_topic_with_partitions(OFFSETS_TOPIC, 3).unwrap();
    let g = GroupOffsets::open(mgr.clone()).unwrap();
    g.commit("g1", &[("orders", 0, 1)]).unwrap();
    let t = mgr.topic(OFFSETS_TOPIC).unwrap();
    assert_eq!(t.partition_count(), 3);
    // "g1" hashes to 3242; 3242 % 3 = 2.
    assert_eq!(t.partition(2).unwrap().log_end_offset(), 1);
    assert_eq!(t.partition(0).unwrap().log_end_offset(), 0);
    drop(g);
    close(mgr);
}

#[test]
fn records_a_broker_writes_are_read() {
    let tmp = tempfile::tempdir().unwrap();
    let mgr = open(tmp.path(), 50);
    mgr.create_topic_with_partitions(OFFSETS_TOPIC, 1).unwrap();
    let log = mgr.topic(OFFSETS_TOPIC).unwrap().partition(0).unwrap();
    let key = |g: &str, p: i32| {
        codec::encode_offset_key(&OffsetCommitKey {
            group: g.into(),
            topic: "orders".into(),
            partition: p,
        })
        .unwrap()
    };
    let v4 = {
        let mut v = OffsetCommitValue::new(42, 1_700_000_000_000);
        v.topic_id = Some([9; 16]);
        v.leader_epoch = 3;
        codec::encode_offset_value_version(&v, 4).unwrap()
    };
    let v1 = codec::encode_offset_value_version(&OffsetCommitValue::new(5, 1), 1).unwrap();
    let v3 = codec::encode_offset_value(&OffsetCommitValue::new(9, 1)).unwrap();
    // The GroupMetadata key of "g1" (verified Kafka bytes) with an opaque value.
    let gm_key = [0u8, 2, 0, 2, b'g', b'1'];
    let k1 = key("g1", 0);
    let k2 = key("g1", 1);
    let k3 = key("gone", 0);
    let gm_value = [0u8, 3, 0, 8, 1, 2, 3];
    log.append(&[
        rec(&gm_key, Some(&gm_value)),
        rec(&k1, Some(&v3)),
        rec(&k3, Some(&v3)),
    ])
    .unwrap();
    log.append(&[rec(&k1, Some(&v4)), rec(&k2, Some(&v1)), rec(&k3, None)])
        .unwrap();
    // A type-6 record (KIP-848 group state) is passed over.
    log.append(&[rec(&[0, 6, 0, 0], Some(&[0, 0]))]).unwrap();
    drop(log);
    close(mgr);

    let mgr = open(tmp.path(), 50);
    let g = GroupOffsets::open(mgr.clone()).unwrap();
    assert_eq!(
        g.committed("g1", "orders"),
        BTreeMap::from([(0, 42), (1, 5)])
    );
    let full = g.committed_values("g1", "orders");
    assert_eq!(full[&0].leader_epoch, 3);
    assert_eq!(full[&0].topic_id, Some([9; 16]));
    assert!(g.committed("gone", "orders").is_empty());
    assert_eq!(g.groups(), vec!["g1"]);
    let st = g.load_stats();
    assert_eq!(
        (st.partitions, st.commits, st.other, st.undecodable),
        (1, 5, 2, 0)
    );
    drop(g);
    close(mgr);
}

#[test]
fn bytes_on_disk_decode_with_kafkas_schema() {
    let tmp = tempfile::tempdir().unwrap();
    let mgr = open(tmp.path(), 50);
    let g = GroupOffsets::open(mgr.clone()).unwrap();
    let before = topicfs::util::clock::now_ms();
    g.commit("g1", &[("orders", 0, 42), ("orders", 3, 1_000_000_000_000)])
        .unwrap();
    g.commit("g1", &[("payments.eu", 2, 0)]).unwrap();
    g.delete_offsets("g1", "orders").unwrap();
    let after = topicfs::util::clock::now_ms();
    let dir = tmp.path().join(format!("{OFFSETS_TOPIC}-42"));
    drop(g);
    close(mgr);

    let recs = decoded_records(&dir);
    // One batch per call: base offsets 0, 2, 3.
    let bases: Vec<i64> = recs.iter().map(|r| r.0).collect();
    assert_eq!(bases, vec![0, 0, 2, 3, 3]);
    let pairs: Vec<(Vec<u8>, Option<Vec<u8>>)> = recs.into_iter().map(|(_, k, v)| (k, v)).collect();
    let dec = python_decode(&pairs);
    assert_eq!(dec.len(), 5);
    let want = [
        ("orders", 0, Some(42i64)),
        ("orders", 3, Some(1_000_000_000_000)),
        ("payments.eu", 2, Some(0)),
        ("orders", 0, None),
        ("orders", 3, None),
    ];
    for (d, (topic, partition, offset)) in dec.iter().zip(want) {
        assert_eq!(d["record_type"], 1, "{d}");
        assert_eq!(d["group"], "g1", "{d}");
        assert_eq!(d["topic"], topic, "{d}");
        assert_eq!(d["partition"], partition, "{d}");
        match offset {
            Some(o) => {
                assert_eq!(d["value_version"], 3, "{d}");
                assert_eq!(d["offset"], o, "{d}");
                assert_eq!(d["leader_epoch"], -1, "{d}");
                assert_eq!(d["metadata"], "", "{d}");
                let ts = d["commit_timestamp"].as_i64().unwrap();
                assert!(before <= ts && ts <= after, "{d}");
            }
            None => assert!(d.get("value_version").is_none(), "a tombstone: {d}"),
        }
    }
}

/// Copies a fixture log dir into a temp dir (the manager writes checkpoints into its dir).
fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let dst = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &dst);
        } else {
            std::fs::copy(e.path(), dst).unwrap();
        }
    }
}

/// A log dir a real Kafka 4.1.1 broker wrote (`tests/fixtures/broker_offsets/README.md`):
/// `offsets.topic.num.partitions=3`, offsets set with `kafka-consumer-groups --reset-offsets
/// --execute` and removed with `--delete-offsets`.
#[test]
fn a_broker_written_log_dir_loads_the_broker_commits() {
    let tmp = tempfile::tempdir().unwrap();
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/broker_offsets/logs");
    copy_dir(&fixture, tmp.path());
    let mgr = open(tmp.path(), 50);
    let g = GroupOffsets::open(mgr.clone()).unwrap();
    assert_eq!(g.load_stats().partitions, 3);
    assert_eq!(g.load_stats().undecodable, 0);
    assert_eq!(
        g.committed("g1", "orders"),
        BTreeMap::from([(0, 3), (1, 1)])
    );
    assert_eq!(g.committed("my-group", "orders"), BTreeMap::from([(1, 2)]));
    assert!(
        g.committed("gone", "orders").is_empty(),
        "deleted by the broker's tombstone"
    );
    assert_eq!(g.groups_of("orders"), vec!["g1", "my-group"]);
    let v = &g.committed_values("g1", "orders")[&0];
    assert_eq!(v.metadata, "");
    assert_eq!(v.leader_epoch, -1);
    // 4.1.1 writes version 4 values (the admin client's commit carries no topic id).
    assert_eq!(v.topic_id, None);
    let home = tmp
        .path()
        .join(format!("{OFFSETS_TOPIC}-{}", partition_for("g1", 3)));
    let raw = decoded_records(&home);
    assert!(!raw.is_empty());
    for (_, k, v) in &raw {
        assert_eq!(&k[..2], &[0, 1]);
        if let Some(v) = v {
            assert_eq!(&v[..2], &[0, 4]);
        }
    }
    // topicfs commits go into the broker's partitions (3, not 50).
    g.commit("g1", &[("orders", 0, 4)]).unwrap();
    let t = mgr.topic(OFFSETS_TOPIC).unwrap();
    assert_eq!(t.partition_count(), 3);
    drop(g);
    close(mgr);
    let mgr = open(tmp.path(), 50);
    let g = GroupOffsets::open(mgr.clone()).unwrap();
    assert_eq!(
        g.committed("g1", "orders"),
        BTreeMap::from([(0, 4), (1, 1)])
    );
    drop(g);
    close(mgr);
}

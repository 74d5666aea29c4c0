//! `<topic>/table/` through a real mount: the latest value of every key as a file. Written
//! with shell redirections, Python and `rm`; the log checked by kafka-protocol (keyed records,
//! Kafka's murmur2 partitions, tombstones); escaped keys, oversized values, a remount, reads
//! across compaction and retention, and many keys.

use std::collections::BTreeMap;
use std::os::unix::fs::MetadataExt;

use crate::common::decode::decode_dir_records;
use crate::common::mount::{TestMount, wait_until};
use topicfs::produce::partitioner::partition_for_key;

fn python(m: &TestMount, script: &str) -> String {
    m.python(script, &[])
}

/// `ls -A table/`, sorted.
fn ls(m: &TestMount, topic: &str) -> Vec<String> {
    let mut names: Vec<String> = m
        .ok(&format!("ls -A {topic}/table/"))
        .lines()
        .map(str::to_string)
        .collect();
    names.sort();
    names
}

/// (partition, key, value) of a record.
type Decoded = (u32, Option<Vec<u8>>, Option<Vec<u8>>);

/// (partition, key, value) of every record of `topic`, decoded by kafka-protocol.
fn decoded(m: &TestMount, topic: &str, partitions: u32) -> Vec<Decoded> {
    let mut out = Vec::new();
    for p in 0..partitions {
        for r in decode_dir_records(&m.partition_dir(topic, p)) {
            out.push((p, r.key.map(|k| k.to_vec()), r.value.map(|v| v.to_vec())));
        }
    }
    out
}

#[test]
fn table_write_overwrite_rm_ls_and_the_log_kafka_decodes() {
    let m = TestMount::start(&["--num-partitions", "4"]);
    m.ok("mkdir t");
    assert_eq!(ls(&m, "t"), Vec::<String>::new());
    // A shell redirection: one record at close, the bytes as written (newline included).
    m.ok("echo hello > t/table/user-1");
    assert_eq!(m.read("t/table/user-1"), "hello\n");
    // Python: open, several writes, close: one record.
    python(
        &m,
        "f = open('t/table/user-2', 'wb')\nf.write(b'a' * 10)\nf.write(b'b' * 5)\nf.close()",
    );
    assert_eq!(m.read("t/table/user-2"), "aaaaaaaaaabbbbb");
    // Overwrite: the latest value, read at once after close.
    m.ok("printf v2 > t/table/user-1");
    assert_eq!(m.ok("cat t/table/user-1"), "v2");
    // stat: the value's length, the record's timestamp as mtime.
    let before = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    m.ok("printf 12345 > t/table/user-3");
    let md = std::fs::metadata(m.path("t/table/user-3")).unwrap();
    assert_eq!(md.len(), 5);
    assert!(md.is_file());
    assert!((md.mtime() - before).abs() <= 2, "mtime {}", md.mtime());
    // Records without a key are not in the table.
    m.ok("echo unkeyed >> t/append");
    assert_eq!(ls(&m, "t"), ["user-1", "user-2", "user-3"]);
    // Keyed records from append.jsonl are (every append path keeps the table current).
    m.ok(r#"echo '{"key":"user-4","value":"from jsonl"}' >> t/append.jsonl"#);
    assert_eq!(m.read("t/table/user-4"), "from jsonl");
    // rm: a tombstone; the key is gone from ls and from lookups.
    m.ok("rm t/table/user-2");
    assert_eq!(ls(&m, "t"), ["user-1", "user-3", "user-4"]);
    m.fails_with("cat t/table/user-2", "No such file");
    m.fails_with("rm t/table/user-2", "No such file");
    // `touch` of a new key: an empty value.
    m.ok("touch t/table/empty");
    assert_eq!(m.read("t/table/empty"), "");
    assert!(ls(&m, "t").contains(&"empty".to_string()));

    // The log: keyed records in the partitions Kafka's murmur2 partitioner picks, the
    // tombstone a null value.
    let records = decoded(&m, "t", 4);
    let keyed: Vec<_> = records.iter().filter(|r| r.1.is_some()).collect();
    assert_eq!(keyed.len(), 7, "{keyed:?}");
    for (p, key, _) in &keyed {
        assert_eq!(*p, partition_for_key(key.as_ref().unwrap(), 4), "{key:?}");
    }
    let mut latest: BTreeMap<Vec<u8>, Option<Vec<u8>>> = BTreeMap::new();
    for (_, k, v) in records.iter().filter(|r| r.1.is_some()) {
        latest.insert(k.clone().unwrap(), v.clone());
    }
    assert_eq!(latest[&b"user-2".to_vec()], None);
    assert_eq!(latest[&b"user-1".to_vec()], Some(b"v2".to_vec()));
    assert_eq!(latest[&b"empty".to_vec()], Some(Vec::new()));
    assert_eq!(
        records.iter().filter(|r| r.1.is_none()).count(),
        1,
        "the unkeyed record"
    );
}

#[test]
fn table_escaped_keys_open_by_their_escaped_names() {
    let m = TestMount::start(&["--num-partitions", "2"]);
    m.ok("mkdir t");
    // Keys that are not file names, written through append.jsonl (base64 for raw bytes).
    m.ok(r#"printf '%s\n' '{"key":"a/b","value":"slash"}' '{"key":"%x","value":"percent"}' '{"key":"..","value":"dots"}' '{"key":"ok","value":"plain"}' >> t/append.jsonl"#);
    assert_eq!(ls(&m, "t"), ["%25x", "%2E%2E", "a%2Fb", "ok"]);
    assert_eq!(m.read("t/table/a%2Fb"), "slash");
    assert_eq!(m.read("t/table/%25x"), "percent");
    assert_eq!(m.read("t/table/%2E%2E"), "dots");
    // Only the canonical name opens a key.
    m.fails_with("cat t/table/%61", "No such file");
    // Bytes that are not UTF-8, written by their escaped name.
    m.ok("printf raw > t/table/%FF%FEk");
    assert_eq!(m.read("t/table/%FF%FEk"), "raw");
    let keys: Vec<Vec<u8>> = decoded(&m, "t", 2)
        .into_iter()
        .filter_map(|r| r.1)
        .collect();
    assert!(keys.contains(&b"\xff\xfek".to_vec()), "{keys:?}");
    assert!(keys.contains(&b"a/b".to_vec()));
    // Round trips of arbitrary bytes through the mount: written by name, read back, and the
    // key in the log is the bytes.
    let mut expect: BTreeMap<Vec<u8>, String> = BTreeMap::new();
    let mut rng = 7u64;
    let mut next = || {
        rng = rng
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (rng >> 33) as u32
    };
    let mut keys: Vec<Vec<u8>> = (0..40)
        .map(|_| (0..1 + next() % 12).map(|_| next() as u8).collect())
        .collect();
    keys.extend([
        b"%".to_vec(),
        b".".to_vec(),
        b"...".to_vec(),
        b"a%2Fb".to_vec(),
        b"\0".to_vec(),
        b"/".to_vec(),
    ]);
    for (i, key) in keys.iter().enumerate() {
        let name = topicfs::table::names::key_to_name(key);
        let value = format!("value {i}");
        std::fs::write(m.path(&format!("t/table/{name}")), &value)
            .unwrap_or_else(|e| panic!("write {name:?}: {e}"));
        expect.insert(key.clone(), value);
    }
    let records = decoded(&m, "t", 2);
    for (key, value) in &expect {
        let name = topicfs::table::names::key_to_name(key);
        assert_eq!(
            std::fs::read_to_string(m.path(&format!("t/table/{name}"))).unwrap(),
            *value
        );
        let last = records
            .iter()
            .rfind(|r| r.1.as_deref() == Some(key))
            .unwrap_or_else(|| panic!("no record of key {key:?}"));
        assert_eq!(last.0, partition_for_key(key, 2));
        assert_eq!(last.2.as_deref(), Some(value.as_bytes()));
    }
    let listed = ls(&m, "t");
    for key in expect.keys() {
        assert!(listed.contains(&topicfs::table::names::key_to_name(key)));
    }
}

#[test]
fn table_oversized_value_fails_the_write_with_emsgsize_and_stores_nothing() {
    let m = TestMount::start(&["--num-partitions", "1"]);
    m.ok("mkdir t");
    m.ok("echo max.message.bytes=2000 >> t/config");
    m.ok("printf small > t/table/k");
    let end = m.end_offset("t", 0);
    // The write that passes max.message.bytes fails, and so do the close and later writes.
    let out = python(
        &m,
        r#"
import errno
f = open('t/table/k', 'wb', buffering=0)
f.write(b'x' * 1500)
for what in (lambda: f.write(b'y' * 1500), lambda: f.write(b'z'), f.close):
    try:
        what()
        print('ok')
    except OSError as e:
        print(errno.errorcode[e.errno])
"#,
    );
    assert_eq!(out, "EMSGSIZE\nEMSGSIZE\nEMSGSIZE\n");
    assert_eq!(m.end_offset("t", 0), end);
    assert_eq!(m.read("t/table/k"), "small");
    // A new key too: the write fails and the key does not exist.
    m.fails_with("head -c 5000 /dev/zero > t/table/big", "Message too long");
    m.fails_with("cat t/table/big", "No such file");
}

#[test]
fn table_rebuilt_at_remount() {
    let mut m = TestMount::start(&["--num-partitions", "3"]);
    m.ok("mkdir t");
    for i in 0..30 {
        m.ok(&format!("printf v{i} > t/table/k{}", i % 10));
    }
    m.ok("rm t/table/k0");
    let before = ls(&m, "t");
    assert_eq!(before.len(), 9);
    m.unmount();
    m.remount();
    assert_eq!(ls(&m, "t"), before);
    for k in 1..10 {
        assert_eq!(m.read(&format!("t/table/k{k}")), format!("v{}", 20 + k));
    }
    m.fails_with("cat t/table/k0", "No such file");
}

#[test]
fn table_reads_across_a_compaction() {
    let m = TestMount::start(&[
        "--num-partitions",
        "1",
        "--segment-bytes",
        "600",
        "--log-cleaner-backoff-ms",
        "50",
    ]);
    m.ok("mkdir t");
    m.ok("echo cleanup.policy=compact >> t/config");
    m.ok("echo min.cleanable.dirty.ratio=0.01 >> t/config");
    // The table is read (its index built) before the clean.
    m.ok("printf first > t/table/k0");
    assert_eq!(m.read("t/table/k0"), "first");
    for i in 0..120 {
        m.ok(&format!("printf value-{i} > t/table/k{}", i % 5));
    }
    wait_until("the cleaner cleaned t-0", || {
        m.first_dirty("t", 0).is_some()
    });
    let records = decoded(&m, "t", 1);
    assert!(
        records.len() < 121,
        "the log was compacted: {}",
        records.len()
    );
    assert_eq!(ls(&m, "t"), ["k0", "k1", "k2", "k3", "k4"]);
    for k in 0..5 {
        assert_eq!(
            m.read(&format!("t/table/k{k}")),
            format!("value-{}", 115 + k)
        );
    }
    // Written after the clean, read at once.
    m.ok("printf after > t/table/k1");
    assert_eq!(m.read("t/table/k1"), "after");
}

#[test]
fn table_reads_across_retention() {
    let m = TestMount::start(&[
        "--num-partitions",
        "1",
        "--segment-bytes",
        "300",
        "--retention-check-interval-ms",
        "100",
    ]);
    m.ok("mkdir t");
    for i in 0..40 {
        m.ok(&format!("printf value-{i} > t/table/old{i}"));
    }
    assert_eq!(ls(&m, "t").len(), 40);
    m.ok("echo retention.bytes=700 >> t/config");
    wait_until("retention deleted segments", || {
        m.read("t/0/log-start-offset").trim() != "0"
    });
    let start: i64 = m.read("t/0/log-start-offset").trim().parse().unwrap();
    // Keys whose latest record retention deleted are gone; the others read as before.
    let listed = ls(&m, "t");
    assert_eq!(listed.len() as i64, 40 - start, "{listed:?}");
    for i in 0..40 {
        let path = format!("t/table/old{i}");
        if i < start {
            m.fails_with(&format!("cat {path}"), "No such file");
        } else {
            assert_eq!(m.read(&path), format!("value-{i}"));
        }
    }
}

#[test]
fn table_many_keys_list_and_read() {
    let m = TestMount::start(&["--num-partitions", "3"]);
    m.ok("mkdir t");
    let n = 20_000;
    // Keyed records through append.jsonl, in large writes.
    let script = format!(
        r#"
import json
with open('t/append.jsonl', 'w') as f:
    for i in range({n}):
        f.write(json.dumps({{"key": "key-%06d" % i, "value": "v%d" % i}}) + "\n")
"#
    );
    python(&m, &script);
    let count = m.ok("ls t/table | wc -l");
    assert_eq!(count.trim(), n.to_string());
    // `ls` again (the index is not rebuilt) and a python listing agree.
    let py = python(&m, "import os\nprint(len(os.listdir('t/table')))");
    assert_eq!(py.trim(), n.to_string());
    for i in [0, 1, 9_999, 19_999] {
        assert_eq!(m.read(&format!("t/table/key-{i:06}")), format!("v{i}"));
    }
}

/// Keys whose names are too long to list (over 255 bytes) are left out of a listing, and the
/// keys after them are listed all the same: a piece of the listing made of long names only
/// must not read as the end of the directory.
#[test]
fn table_listing_goes_on_past_a_run_of_unlistable_long_names() {
    let m = TestMount::start(&["--num-partitions", "1"]);
    m.ok("mkdir t");
    let script = r#"
with open('t/0/append.kv', 'w') as f:
    for i in range(100):
        f.write("early%03d\tv\n" % i)
    for i in range(256):
        f.write("%s%03d\tv\n" % ("L" * 300, i))
    for i in range(300):
        f.write("later%03d\tv\n" % i)
"#;
    python(&m, script);
    // The later keys exist...
    m.ok("stat t/table/later000 t/table/later299");
    // ...and every listing shows all 400 short names.
    assert_eq!(m.ok("ls t/table | wc -l").trim(), "400");
    assert_eq!(m.ok("find t/table -type f | wc -l").trim(), "400");
    let py = python(&m, "import os\nprint(len(os.listdir('t/table')))");
    assert_eq!(py.trim(), "400");
    let names = ls(&m, "t");
    assert_eq!(names.first().map(String::as_str), Some("early000"));
    assert_eq!(names.last().map(String::as_str), Some("later299"));
}

#[test]
fn table_write_survives_a_forked_child_closing_the_descriptor() {
    let m = TestMount::start(&["--num-partitions", "1"]);
    m.ok("mkdir t");
    python(
        &m,
        r#"
import os
f = open('t/table/k', 'wb', buffering=0)
f.write(b'head-')
pid = os.fork()
if pid == 0:
    os._exit(0)
os.waitpid(pid, 0)
f.write(b'tail')
f.close()
"#,
    );
    assert_eq!(m.read("t/table/k"), "head-tail");
    let values: Vec<Option<Vec<u8>>> = decoded(&m, "t", 1).into_iter().map(|r| r.2).collect();
    assert_eq!(values, vec![Some(b"head-tail".to_vec())]);
}

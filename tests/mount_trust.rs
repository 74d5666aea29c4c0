//! What the daemon trusts, through real mounts: the ownership and modes of its log dir, the
//! permissions `--allow-other` shows to other users, a mount stacked on a topicfs mount, and
//! the record timestamps Kafka refuses. Another local user is uid/gid 65534 (setpriv).

#[path = "common/mount.rs"]
mod mount;

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;
use std::process::{Command, Output};

use mount::{BIN, TestMount, tail};

/// (offset, timestamp, value) of every record of a partition dir, decoded by kafka-protocol.
fn decoded(partition_dir: &Path) -> Vec<(i64, i64, String)> {
    let mut names: Vec<String> = std::fs::read_dir(partition_dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".log"))
        .collect();
    names.sort();
    let mut out = Vec::new();
    for n in names {
        let log = std::fs::read(partition_dir.join(&n)).unwrap();
        let mut input: &[u8] = &log;
        let sets = kafka_protocol::records::RecordBatchDecoder::decode_all(&mut input)
            .unwrap_or_else(|e| panic!("kafka-protocol cannot decode {n}: {e:#}"));
        for r in sets.iter().flat_map(|s| &s.records) {
            let v = r.value.as_ref().map(|v| v.to_vec()).unwrap_or_default();
            out.push((r.offset, r.timestamp, String::from_utf8(v).unwrap()));
        }
    }
    out
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

/// `sh -c script` as uid/gid 65534 with no supplementary groups, in `cwd`.
fn as_nobody(cwd: &Path, script: &str) -> Output {
    Command::new("setpriv")
        .args([
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            "sh",
            "-c",
        ])
        .arg(script)
        .current_dir(cwd)
        .output()
        .expect("run setpriv")
}

// ---------------------------------------------------------------------------------------------
// Timestamps Kafka refuses

#[test]
fn timestamps_kafka_refuses_are_einval_and_nothing_of_the_write_is_appended() {
    let m = TestMount::start(&["--num-partitions", "2"]);
    m.ok("mkdir t");
    let now = now_ms();
    let future = now + 2 * 3_600_000;
    // A record two hours ahead: over Kafka 4's message.timestamp.after.max.ms (1 hour), it
    // would otherwise hold back time retention of its segment until then.
    m.fails_with(
        &format!(r#"/bin/echo '{{"value":"future","timestamp":{future}}}' >> t/0/append.jsonl"#),
        "Invalid argument",
    );
    // Negative timestamps other than -1 (no timestamp) are refused; a good record in the
    // same write is not appended either.
    m.fails_with(
        r#"/usr/bin/printf '%s\n' '{"value":"good"}' '{"value":"neg","timestamp":-5}' >> t/0/append.jsonl"#,
        "Invalid argument",
    );
    assert_eq!(m.end_offset("t", 0), 0);
    // At topic level a write spans partitions (keys hash to both): one bad record refuses it
    // all, before any partition is appended to.
    let mut lines: Vec<String> = (0..20)
        .map(|i| format!(r#"{{"key":"k{i}","value":"v{i}"}}"#))
        .collect();
    lines.push(format!(
        r#"{{"key":"kz","value":"late","timestamp":{future}}}"#
    ));
    let quoted: Vec<String> = lines.iter().map(|l| format!("'{l}'")).collect();
    m.fails_with(
        &format!(
            "/usr/bin/printf '%s\\n' {} >> t/append.jsonl",
            quoted.join(" ")
        ),
        "Invalid argument",
    );
    assert_eq!(m.end_offset("t", 0), 0);
    assert_eq!(m.end_offset("t", 1), 0);
    for p in 0..2 {
        assert!(
            decoded(&m.partition_dir("t", p)).is_empty(),
            "partition {p}"
        );
    }
    // Without the bad line the same write lands in both partitions.
    m.ok(&format!(
        "/usr/bin/printf '%s\\n' {} >> t/append.jsonl",
        quoted[..20].join(" ")
    ));
    assert_eq!(m.end_offset("t", 0) + m.end_offset("t", 1), 20);
    assert!(m.end_offset("t", 0) > 0 && m.end_offset("t", 1) > 0);

    // -1 means no timestamp, as in Kafka; an hour ahead is still inside the bound.
    let edge = now_ms() + 3_500_000;
    m.ok(&format!(
        r#"/usr/bin/printf '%s\n' '{{"value":"none","timestamp":-1}}' '{{"value":"edge","timestamp":{edge}}}' > t/0/append.jsonl"#
    ));
    // The topic key message.timestamp.before.max.ms bounds the past.
    m.ok("echo message.timestamp.before.max.ms=60000 >> t/config");
    assert!(
        m.read("t/config")
            .contains("message.timestamp.before.max.ms=60000")
    );
    m.fails_with(
        r#"/bin/echo '{"value":"old","timestamp":1000}' > t/0/append.jsonl"#,
        "Invalid argument",
    );
    m.ok("echo message.timestamp.after.max.ms=0 >> t/config");
    m.fails_with(
        &format!(
            r#"/bin/echo '{{"value":"soon","timestamp":{}}}' > t/0/append.jsonl"#,
            now_ms() + 60_000
        ),
        "Invalid argument",
    );
    m.fails_with(
        "/bin/echo message.timestamp.after.max.ms=-3 >> t/config",
        "Invalid argument",
    );
    let log = m.daemon_log();
    assert!(
        log.contains("invalid negative timestamp -5"),
        "{}",
        tail(&log, 20)
    );
    assert!(log.contains("is out of range"), "{}", tail(&log, 20));

    // An independent decoder sees exactly the accepted records of partition 0.
    let recs = decoded(&m.partition_dir("t", 0));
    let tail_recs: Vec<(i64, String)> = recs
        .iter()
        .rev()
        .take(2)
        .rev()
        .map(|(_, ts, v)| (*ts, v.clone()))
        .collect();
    assert_eq!(
        tail_recs,
        vec![(-1, "none".to_string()), (edge, "edge".to_string())]
    );
    assert!(
        recs.iter()
            .all(|(_, ts, v)| *ts == -1 || (*ts >= now - 60_000 && *ts <= edge) && v != "old"),
        "{recs:?}"
    );
    assert_eq!(recs.len() as i64, m.end_offset("t", 0));
}

#[test]
fn log_message_timestamp_keys_are_broker_options() {
    let m = TestMount::start(&[
        "-o",
        "log.message.timestamp.before.max.ms=5000",
        "--message-timestamp-after-max-ms",
        "7",
    ]);
    m.ok("mkdir t");
    let cfg = m.read("t/config");
    assert!(
        cfg.contains("message.timestamp.before.max.ms=5000"),
        "{cfg}"
    );
    assert!(cfg.contains("message.timestamp.after.max.ms=7"), "{cfg}");
    m.fails_with(
        r#"/bin/echo '{"value":"old","timestamp":1000}' > t/0/append.jsonl"#,
        "Invalid argument",
    );
    m.ok("echo now > t/0/append");
    assert_eq!(m.end_offset("t", 0), 1);
}

// ---------------------------------------------------------------------------------------------
// A mount over a topicfs mount

/// The topicfs mounts at `mnt` in /proc/self/mountinfo.
fn topicfs_mounts_at(mnt: &Path) -> usize {
    let text = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
    let want = mnt.to_str().unwrap();
    text.lines()
        .filter(|l| {
            let (left, right) = l.split_once(" - ").unwrap();
            left.split(' ').nth(4) == Some(want) && right.starts_with("fuse.topicfs ")
        })
        .count()
}

#[test]
fn a_mount_over_a_topicfs_mount_is_refused() {
    let m = TestMount::start(&[]);
    m.ok("mkdir t && echo first > t/0/append");
    assert_eq!(topicfs_mounts_at(&m.mnt), 1);
    let other = m.dir.path().join("other-logs");
    // The same mountpoint, spelled directly and through `..`.
    let spelled = m.mnt.join("..").join("mnt");
    for at in [m.mnt.clone(), spelled] {
        for fg in [false, true] {
            let mut cmd = Command::new(BIN);
            cmd.arg("mount").arg(&at).arg("--log-dir").arg(&other);
            if fg {
                cmd.arg("--foreground");
            }
            let out = cmd.output().unwrap();
            let err = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(1), "{err}");
            assert!(err.contains("is already a topicfs mount"), "{err}");
            assert_eq!(err.lines().count(), 1, "{err}");
        }
    }
    assert_eq!(topicfs_mounts_at(&m.mnt), 1);
    // The first mount still serves, and nothing was created for the refused one.
    assert_eq!(m.read("t/0/by-offset/0"), "first\n");
    assert!(!other.exists());
}

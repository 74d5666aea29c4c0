//! What the daemon trusts, through real mounts: the ownership and modes of its log dir, the
//! permissions `--allow-other` shows to other users, a mount stacked on a topicfs mount, and
//! the record timestamps Kafka refuses. Another local user is uid/gid 65534 (setpriv).

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;
use std::process::Command;

use crate::common::decode::decode_partition_dir;
use crate::common::mount::{self, BIN, TestMount, as_nobody, file_names, tail};

/// (offset, timestamp, value) of every record of a partition dir, by kafka-protocol.
fn decoded(partition_dir: &Path) -> Vec<(i64, i64, String)> {
    decode_partition_dir(partition_dir)
        .iter()
        .map(|r| (r.offset, r.timestamp, r.text()))
        .collect()
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

// ---------------------------------------------------------------------------------------------
// Timestamps Kafka refuses

/// At topic level a write spans partitions (keys hash to both): one record with a timestamp
/// `future` refuses it all, before any partition is appended to.
fn topic_write_with_one_bad_timestamp(m: &TestMount, future: i64) {
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
}

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
    topic_write_with_one_bad_timestamp(&m, future);

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

// ---------------------------------------------------------------------------------------------
// A log dir owned by someone else

/// A root-owned 0755 temp dir (other users can reach into it) holding `sticky/` (1777, as
/// /tmp), `group/` (0775) and a mountpoint.
fn shared_tmp() -> tempfile::TempDir {
    let t = tempfile::Builder::new()
        .prefix("topicfs-trust-")
        .tempdir()
        .unwrap();
    std::fs::set_permissions(t.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    for (name, mode) in [("sticky", 0o1777), ("group", 0o775), ("mnt", 0o755)] {
        let d = t.path().join(name);
        std::fs::create_dir(&d).unwrap();
        std::fs::set_permissions(&d, std::fs::Permissions::from_mode(mode)).unwrap();
    }
    t
}

/// `topicfs mount` of `log_dir` at `t/mnt` that must be refused; returns its stderr.
fn refused_mount(t: &Path, log_dir: &Path, extra: &[&str]) -> String {
    let out = Command::new(BIN)
        .arg("mount")
        .arg(t.join("mnt"))
        .arg("--log-dir")
        .arg(log_dir)
        .args(extra)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    if out.status.success() {
        mount::force_unmount(&t.join("mnt"));
        panic!("mounting {} should be refused", log_dir.display());
    }
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(!mount::is_mounted(&t.join("mnt")));
    err
}

#[test]
fn a_log_dir_owned_by_someone_else_is_refused() {
    let t = shared_tmp();
    let sticky = t.path().join("sticky");
    // Another user creates the log dir first (as anyone can create /tmp/topicfs-logs).
    let out = as_nobody(&sticky, "mkdir -m 0700 logs && echo planted > logs/note");
    assert!(out.status.success(), "{out:?}");
    let theirs = sticky.join("logs");
    assert_eq!(std::fs::metadata(&theirs).unwrap().uid(), 65534);
    let err = refused_mount(t.path(), &theirs, &[]);
    assert!(err.contains("refusing log dir"), "{err}");
    assert!(err.contains("owned by uid 65534"), "{err}");
    assert!(err.contains("--allow-untrusted-log-dir"), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    // Nothing was written into it: no .lock, no meta.properties, no checkpoints.
    assert_eq!(file_names(&theirs), vec!["note"]);

    // A symbolic link planted at the path is not followed to its target.
    let target = t.path().join("root-owned");
    std::fs::create_dir(&target).unwrap();
    let out = as_nobody(&sticky, &format!("ln -s {} link", target.display()));
    assert!(out.status.success(), "{out:?}");
    let err = refused_mount(t.path(), &sticky.join("link"), &[]);
    assert!(err.contains("symbolic link owned by uid 65534"), "{err}");
    assert!(file_names(&target).is_empty());

    // A root-owned log dir in a group-writable (not sticky) directory, and a log dir that is
    // itself world-writable (sticky or not), are refused too.
    let in_group = t.path().join("group/logs");
    std::fs::create_dir(&in_group).unwrap();
    let err = refused_mount(t.path(), &in_group, &[]);
    assert!(err.contains("writable by its group"), "{err}");
    assert!(file_names(&in_group).is_empty());
    let open = t.path().join("open");
    std::fs::create_dir(&open).unwrap();
    std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o1777)).unwrap();
    let err = refused_mount(t.path(), &open, &[]);
    assert!(err.contains("writable by every user"), "{err}");

    // The explicit option accepts it (either spelling).
    for opt in [
        vec!["--allow-untrusted-log-dir"],
        vec!["-o", "allow_untrusted_log_dir"],
    ] {
        let mut args = vec!["--log-dir", theirs.to_str().unwrap()];
        args.extend(opt);
        let m = TestMount::with(mount::Options {
            log_dirs: 0,
            args: args.iter().map(|s| s.to_string()).collect(),
            ..Default::default()
        });
        m.ok("mkdir -p t && echo accepted >> t/0/append");
        assert!(theirs.join("meta.properties").exists());
        assert!(theirs.join("t-0").is_dir());
    }
}

#[test]
fn a_missing_log_dir_is_created_0700_without_following_a_link() {
    let t = shared_tmp();
    let sticky = t.path().join("sticky");
    let fresh = sticky.join("topicfs-logs");
    {
        let m = TestMount::with(mount::Options {
            log_dirs: 0,
            args: vec!["--log-dir".into(), fresh.to_str().unwrap().into()],
            ..Default::default()
        });
        m.ok("mkdir t && echo one >> t/0/append");
        let md = std::fs::symlink_metadata(&fresh).unwrap();
        assert!(md.is_dir());
        assert_eq!(md.permissions().mode() & 0o7777, 0o700);
        assert_eq!(md.uid(), 0);
        // The other user cannot look inside.
        let out = as_nobody(&sticky, "ls topicfs-logs");
        assert!(!out.status.success());
    }
    // A root-owned 0700 dir under sticky /tmp-like dir mounts again.
    let m = TestMount::with(mount::Options {
        log_dirs: 0,
        args: vec!["--log-dir".into(), fresh.to_str().unwrap().into()],
        ..Default::default()
    });
    assert_eq!(m.read("t/0/by-offset/0"), "one\n");
}

// ---------------------------------------------------------------------------------------------
// --allow-other and the log dir's permissions

/// Runs `script` as uid 65534 in the mountpoint; (success, stdout, stderr).
fn nobody_in(m: &TestMount, script: &str) -> (bool, String, String) {
    let out = as_nobody(&m.mnt, script);
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn nobody_denied(m: &TestMount, script: &str) {
    let (ok, out, err) = nobody_in(m, script);
    assert!(
        !ok,
        "`{script}` as uid 65534 should be denied; stdout: {out}"
    );
    assert!(
        err.contains("Permission denied"),
        "`{script}` as uid 65534: {err}"
    );
}

fn nobody_ok(m: &TestMount, script: &str) -> String {
    let (ok, out, err) = nobody_in(m, script);
    assert!(ok, "`{script}` as uid 65534 failed: {err}");
    out
}

const SEG: &str = "t/0/segments/00000000000000000000.log";

#[test]
fn allow_other_respects_the_log_dirs_permissions() {
    let mut m = TestMount::start(&["--allow-other"]);
    // The mountpoint's temp dir is root's 0700: let the other user reach the mountpoint.
    std::fs::set_permissions(m.dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    m.ok("mkdir t && echo secret >> t/0/append");
    let log_dir = m.log_dirs[0].clone();
    // A 0755 log dir (a new one outside a sticky dir, with umask 022): others may read, per
    // each file's mode, and nothing else.
    assert_eq!(
        std::fs::metadata(&log_dir).unwrap().permissions().mode() & 0o777,
        0o755
    );
    assert_eq!(nobody_ok(&m, "cat t/0/by-offset/0"), "secret\n");
    assert_eq!(nobody_ok(&m, "cat t/partitions"), "1\n");
    assert!(nobody_ok(&m, "ls t/0/segments").contains("00000000000000000000.log"));
    let seg = nobody_ok(&m, &format!("od -An -c {SEG} | tr -d ' \\n'"));
    assert!(seg.contains("secret"), "{seg}");
    for script in [
        "mkdir u",
        "rmdir t",
        "echo x >> t/0/append",
        "echo x >> t/append",
        "echo '{\"value\":\"x\"}' >> t/0/append.jsonl",
        "echo retention.ms=1 >> t/config",
        "echo 3 > t/partitions",
    ] {
        nobody_denied(&m, script);
    }
    assert_eq!(m.end_offset("t", 0), 1);
    assert!(m.read("t/config").contains("retention.ms=604800000"));
    // A segment file made 0600 on disk is its owner's only in the tree too.
    let on_disk = m.partition_dir("t", 0).join("00000000000000000000.log");
    std::fs::set_permissions(&on_disk, std::fs::Permissions::from_mode(0o600)).unwrap();
    assert_eq!(m.ok(&format!("stat -c %a {SEG}")), "400\n");
    nobody_denied(&m, &format!("cat {SEG}"));

    // A 0700 log dir: the tree is its owner's only, and the kernel enforces it.
    m.unmount();
    std::fs::set_permissions(&log_dir, std::fs::Permissions::from_mode(0o700)).unwrap();
    m.remount();
    assert_eq!(
        m.ok("stat -c %a:%u:%g . t t/0/by-offset/0 t/config t/0/append"),
        "700:0:0\n700:0:0\n400:0:0\n600:0:0\n600:0:0\n"
    );
    for script in [
        "cat t/0/by-offset/0",
        &format!("cat {SEG}"),
        "ls .",
        "ls t",
        "mkdir u",
        "echo x >> t/0/append",
        "echo retention.ms=1 >> t/config",
    ] {
        nobody_denied(&m, script);
    }
    // The owner (root here) still reads and writes.
    m.ok("echo more >> t/0/append");
    assert_eq!(m.read("t/0/by-offset/0"), "secret\nmore\n");
}

#[test]
fn allow_other_gives_the_tree_to_the_log_dirs_owner() {
    let mut m = TestMount::start(&["--allow-other", "--allow-untrusted-log-dir"]);
    std::fs::set_permissions(m.dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    m.ok("mkdir t && echo first >> t/0/append");
    m.unmount();
    let log_dir = m.log_dirs[0].clone();
    std::os::unix::fs::chown(&log_dir, Some(65534), Some(65534)).unwrap();
    m.remount();
    assert_eq!(m.ok("stat -c %a:%u:%g t"), "755:65534:65534\n");
    // The log dir's owner may read and append; the log dir was theirs to write anyway.
    assert_eq!(nobody_ok(&m, "cat t/0/by-offset/0"), "first\n");
    nobody_ok(&m, "/bin/echo second >> t/0/append");
    assert_eq!(m.read("t/0/by-offset/1"), "second\n");
}

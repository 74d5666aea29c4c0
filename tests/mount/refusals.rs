//! What a mount refuses, and the limits it keeps: a log dir overlapping the mountpoint, a bad
//! pid file, stray partition directories, colliding topic names, preallocation of an append
//! file.

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use crate::common::decode::batches;
use crate::common::mount::{BIN, TestMount, file_names, force_unmount, is_mounted};

/// Runs `topicfs mount` and returns its output; panics (after unmounting) if it hangs.
fn run_mount(args: &[&std::ffi::OsStr], mnt: &Path) -> Output {
    let mut child = Command::new(BIN)
        .arg("mount")
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > Duration::from_secs(30) {
            force_unmount(mnt);
            let _ = child.kill();
            panic!("topicfs mount hung");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

fn refused(out: &Output, mnt: &Path, want: &str) {
    let err = String::from_utf8_lossy(&out.stderr);
    if is_mounted(mnt) {
        force_unmount(mnt);
        panic!("mounted although it should be refused: {err}");
    }
    assert!(!out.status.success(), "exit 0: {err}");
    assert!(err.contains(want), "stderr should name {want:?}: {err}");
}

#[test]
fn a_log_dir_overlapping_the_mountpoint_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let mnt = dir.path().join("mnt");
    std::fs::create_dir(&mnt).unwrap();
    let link = dir.path().join("link");
    std::os::unix::fs::symlink(&mnt, &link).unwrap();
    let logs = dir.path().join("logs");
    std::fs::create_dir(&logs).unwrap();
    let inner_mnt = logs.join("mnt");
    std::fs::create_dir(&inner_mnt).unwrap();
    let cases: [(&Path, &Path, &str); 5] = [
        (&mnt, &mnt, "is the mountpoint"),
        (&mnt, &mnt.join("logs"), "is the mountpoint"),
        (&mnt, &link.join("sub/logs"), "inside it"),
        (&inner_mnt, &logs, "is inside log dir"),
        (&mnt, &dir.path().join("mnt/../mnt/x"), "inside it"),
    ];
    for (m, l, want) in cases {
        let out = run_mount(&[m.as_os_str(), "--log-dir".as_ref(), l.as_os_str()], m);
        refused(&out, m, want);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(&*l.to_string_lossy()), "{err}");
    }
    // Nothing was created inside the mountpoint.
    assert_eq!(std::fs::read_dir(&mnt).unwrap().count(), 0);
    // A pid file inside the mountpoint would be written through the mount: refused too.
    let out = run_mount(
        &[
            mnt.as_os_str(),
            "--log-dir".as_ref(),
            logs.join("x").as_os_str(),
            "--pid-file".as_ref(),
            mnt.join("pid").as_os_str(),
        ],
        &mnt,
    );
    refused(&out, &mnt, "pid file");
}

#[test]
fn a_pid_file_that_cannot_be_written_fails_the_mount() {
    let dir = tempfile::tempdir().unwrap();
    let mnt = dir.path().join("mnt");
    std::fs::create_dir(&mnt).unwrap();
    let logs = dir.path().join("logs");
    let a_dir = dir.path().join("a-dir");
    std::fs::create_dir(&a_dir).unwrap();
    for (pid, foreground) in [
        (dir.path().join("no/such/dir/topicfs.pid"), false),
        (a_dir.clone(), false),
        (dir.path().join("no/such/dir/topicfs.pid"), true),
    ] {
        let mut args = vec![
            mnt.as_os_str(),
            "--log-dir".as_ref(),
            logs.as_os_str(),
            "--pid-file".as_ref(),
            pid.as_os_str(),
        ];
        if foreground {
            args.push("--foreground".as_ref());
        }
        let out = run_mount(&args, &mnt);
        refused(&out, &mnt, "cannot write pid file");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(&*pid.to_string_lossy()), "{err}");
        // Failed before the log dir was touched.
        assert!(!logs.exists());
    }
}

#[test]
fn a_stray_partition_dir_is_reported_and_left_alone() {
    let mut m = TestMount::start(&[]);
    m.ok("mkdir t && echo 2 > t/partitions && echo a >> t/0/append && echo b >> t/1/append");
    m.unmount();
    let log = &m.log_dirs[0].clone();
    std::fs::create_dir(log.join("z-7000")).unwrap();
    std::fs::create_dir(log.join("t-5")).unwrap();
    m.remount();
    // Topic t keeps its 2 partitions; z (no partition 0) is not a topic.
    assert_eq!(m.read("t/partitions"), "2\n");
    assert_eq!(m.ok("ls"), "t\n");
    let dirs: Vec<String> = file_names(log)
        .into_iter()
        .filter(|n| n.starts_with("z-") || n.starts_with("t-"))
        .collect();
    let mut dirs = dirs;
    dirs.sort();
    assert_eq!(dirs, ["t-0", "t-1", "t-5", "z-7000"]);
    // Left alone: still empty.
    assert_eq!(std::fs::read_dir(log.join("z-7000")).unwrap().count(), 0);
    assert_eq!(std::fs::read_dir(log.join("t-5")).unwrap().count(), 0);
    let daemon = m.daemon_log();
    for stray in ["z-7000", "t-5"] {
        // Named by its whole path (the temp dir's random name may hold `t-5` too).
        let named = format!("{}: ", log.join(stray).display());
        let lines = daemon
            .lines()
            .filter(|l| l.contains(&named) && l.contains("left alone"))
            .count();
        assert_eq!(lines, 1, "one line names {stray}: {daemon}");
    }
    assert_eq!(m.read("t/1/by-offset/0"), "b\n");
}

#[test]
fn colliding_topic_names_are_refused_as_kafka_refuses_them() {
    let m = TestMount::start(&[]);
    m.ok("mkdir a.b");
    m.fails_with("mkdir a_b", "Invalid argument");
    m.ok("mkdir a_c && mkdir ab");
    m.fails_with("mkdir a.c", "Invalid argument");
    assert_eq!(m.ok("ls"), "a.b\na_c\nab\n");
    assert!(
        m.daemon_log()
            .contains("Topic 'a_b' collides with existing topic: a.b")
    );
    // Once the first is gone, the name is free.
    m.ok("rmdir a.b && mkdir a_b");
}

#[test]
fn fallocate_on_an_append_file_appends_nothing() {
    let m = TestMount::start(&[]);
    m.ok("mkdir t && echo first >> t/0/append");
    // fallocate(1) opens read-write (an append file reads as empty), then every file
    // refuses the fallocate call itself.
    let err = m.fails("fallocate -l 4096 t/0/append");
    assert!(err.contains("Operation not permitted"), "{err}");
    let config = m.read("t/config");
    let err = m.fails("fallocate -l 4096 t/config");
    assert!(err.contains("Operation not permitted"), "{err}");
    assert_eq!(m.read("t/config"), config);
    // On an append descriptor: the fallocate(2) call, then glibc's posix_fallocate, which
    // falls back to writing a zero byte per block only on EOPNOTSUPP.
    let out = m.ok("python3 -c '
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
libc.fallocate.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_long, ctypes.c_long]
fd = os.open(\"t/0/append\", os.O_WRONLY | os.O_APPEND)
print(\"SYSCALL\", libc.fallocate(fd, 0, 0, 4096), ctypes.get_errno())
try:
    os.posix_fallocate(fd, 0, 65536)
    print(\"ALLOCATED\")
except OSError as e:
    print(\"FAILED\", e.errno)
os.close(fd)
'");
    let mut lines = out.lines();
    assert_eq!(
        lines.next(),
        Some(format!("SYSCALL -1 {}", libc::EPERM).as_str()),
        "{out}"
    );
    let out = lines.next().unwrap_or_default().to_string();
    assert_eq!(out.trim(), format!("FAILED {}", libc::EPERM));
    m.ok("echo second >> t/0/append");
    assert_eq!(m.end_offset("t", 0), 2);
    let seg = m.partition_dir("t", 0).join("00000000000000000000.log");
    let values: Vec<Vec<u8>> = batches(&std::fs::read(seg).unwrap())
        .into_iter()
        .flat_map(|b| b.2)
        .collect();
    assert_eq!(values, vec![b"first".to_vec(), b"second".to_vec()]);
}

#[test]
fn broker_keys_follow_kafkas_validators_and_java_properties_syntax() {
    let dir = tempfile::tempdir().unwrap();
    let mnt = dir.path().join("mnt");
    std::fs::create_dir(&mnt).unwrap();
    let logs = dir.path().join("logs");
    let base = [mnt.as_os_str(), "--log-dir".as_ref(), logs.as_os_str()];
    for (args, want) in [
        (
            vec!["--segment-bytes", "99999999999"],
            "Invalid value 99999999999 for configuration log.segment.bytes: Not a number of type INT",
        ),
        (
            vec!["-o", "flush.messages=0"],
            "configuration log.flush.interval.messages: Value must be at least 1",
        ),
        (
            vec!["--roll-hours", "0"],
            "configuration log.roll.hours: Value must be at least 1",
        ),
        (
            vec!["--compression-type", "none"],
            "String must be one of: uncompressed",
        ),
    ] {
        let mut all: Vec<&std::ffi::OsStr> = base.to_vec();
        all.extend(args.iter().map(|a| std::ffi::OsStr::new(*a)));
        let out = run_mount(&all, &mnt);
        refused(&out, &mnt, want);
    }
    // A server.properties with continuations, escapes and blank-separated keys, as Java reads it.
    let props = dir.path().join("server.properties");
    std::fs::write(
        &props,
        "# a comment ending in a backslash does not continue \\\nnum.partitions:3\n\
         log.segment.bytes = \\\n        5000\n\
         log.retention.ms 1234\\\n5\n\
         ! compression.type=gzip\n\
         compression.type=\\u007astd\n",
    )
    .unwrap();
    let m = TestMount::start(&["--config", props.to_str().unwrap()]);
    m.ok("mkdir t");
    assert_eq!(m.read("t/partitions"), "3\n");
    let cfg = m.read("t/config");
    for want in [
        "# segment.bytes=5000",
        "# retention.ms=12345",
        "# compression.type=zstd",
    ] {
        assert!(cfg.lines().any(|l| l == want), "{want}: {cfg}");
    }
}

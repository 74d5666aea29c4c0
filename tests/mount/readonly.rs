//! `-o ro` changes no byte of the log dir: no recovery truncation, no retention, no
//! checkpoints, no index rebuild on disk, no `.lock` change; it still serves the valid
//! records. `-o ro,rw` is a read-write mount (the last flag wins). Real mounts.

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use crate::common::mount::TestMount;

/// Every entry below `dir`: path -> (mode, content or None for directories).
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, (u32, Option<Vec<u8>>)> {
    let mut out = BTreeMap::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let e = e.unwrap();
            let p = e.path();
            let md = std::fs::symlink_metadata(&p).unwrap();
            let mode = md.permissions().mode();
            if md.is_dir() {
                todo.push(p.clone());
                out.insert(p, (mode, None));
            } else {
                out.insert(p.clone(), (mode, Some(std::fs::read(&p).unwrap())));
            }
        }
    }
    out
}

fn values(from: usize, to: usize) -> String {
    (from..to).map(|n| format!("v{n}\n")).collect()
}

#[test]
fn read_only_mount_writes_nothing() {
    let mut m = TestMount::start(&["--segment-bytes", "1000", "--index-interval-bytes", "100"]);
    m.ok("mkdir t");
    for i in 0..20 {
        let body = values(i * 5, i * 5 + 5);
        std::fs::write(m.dir.path().join("b"), body).unwrap();
        m.ok(&format!(
            "cat '{}' >> t/0/append",
            m.dir.path().join("b").display()
        ));
    }
    m.unmount();
    let dir = m.partition_dir("t", 0);
    let mut logs: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "log"))
        .collect();
    logs.sort();
    assert!(logs.len() >= 3, "want several segments, got {logs:?}");
    // A torn tail on the active segment, and a missing index on an inactive one.
    let active = logs.last().unwrap().clone();
    let base_of =
        |p: &PathBuf| -> i64 { p.file_stem().unwrap().to_str().unwrap().parse().unwrap() };
    let active_base = base_of(&active);
    let len = std::fs::metadata(&active).unwrap().len();
    std::fs::OpenOptions::new()
        .write(true)
        .open(&active)
        .unwrap()
        .set_len(len - 10)
        .unwrap();
    std::fs::remove_file(logs[1].with_extension("index")).unwrap();
    let second_base = base_of(&logs[1]) as usize;

    for clean in [true, false] {
        if !clean {
            // An unclean stop: the full recovery path runs, still in memory only.
            std::fs::remove_file(m.log_dirs[0].join(".kafka_cleanshutdown")).unwrap();
        }
        let before = snapshot(&m.log_dirs[0]);
        // Read-only, with retention that would delete everything and short task intervals.
        m.set_args(&[
            "-o",
            "ro,retention.bytes=1,log.retention.check.interval.ms=50,log.flush.offset.checkpoint.interval.ms=50",
        ]);
        m.remount();
        let r = &mut m;

        // Served: every valid record (the torn last batch is left out), also through the
        // segment whose index is missing.
        let all = r.ok("cat t/0/by-offset/0");
        assert_eq!(
            r.end_offset("t", 0),
            95,
            "the torn batch (95..99) must not be served"
        );
        assert!(active_base < 95);
        assert_eq!(all, values(0, 95));
        assert_eq!(
            r.ok(&format!("head -n 1 t/0/by-offset/{}", second_base + 2)),
            format!("v{}\n", second_base + 2)
        );
        // Writes are refused.
        r.fails_with("echo x >> t/0/append", "Read-only file system");
        r.fails_with("mkdir t2", "Read-only file system");
        r.fails_with("echo retention.ms=1 >> t/config", "Read-only file system");
        std::thread::sleep(std::time::Duration::from_millis(400));
        assert_eq!(r.read("t/0/log-start-offset"), "0\n", "retention ran");
        r.unmount();
        assert!(
            r.daemon_log().contains("nothing truncated") || clean,
            "the unclean ro mount did not report the torn tail:\n{}",
            r.daemon_log()
        );
        let after = snapshot(&m.log_dirs[0]);
        let changed: Vec<&PathBuf> = before
            .keys()
            .chain(after.keys())
            .filter(|k| before.get(*k) != after.get(*k))
            .collect();
        assert!(
            changed.is_empty(),
            "a read-only mount (clean={clean}) changed {changed:?}"
        );
    }
}

#[test]
fn ro_then_rw_is_a_read_write_mount() {
    let mut m = TestMount::start(&["-o", "ro,rw"]);
    m.ok("mkdir t && echo hello >> t/0/append");
    assert_eq!(m.ok("cat t/0/by-offset/0"), "hello\n");
    m.unmount();
    m.set_args(&["-o", "rw,ro"]);
    m.remount();
    m.fails_with("mkdir t2", "Read-only file system");
    m.fails_with("echo again >> t/0/append", "Read-only file system");
    assert_eq!(m.ok("cat t/0/by-offset/0"), "hello\n");
    m.unmount();
}

#[test]
fn a_read_only_mount_of_a_missing_log_dir_fails_and_creates_nothing() {
    let mut m = TestMount::start(&[]);
    m.unmount();
    let missing = m.dir.path().join("never-created");
    let mut cmd = m.mount_command();
    cmd.arg("--log-dir").arg(&missing).args(["-o", "ro"]);
    let out = cmd.output().unwrap();
    assert!(
        !out.status.success(),
        "a read-only mount of a missing dir succeeded"
    );
    assert!(!missing.exists(), "a read-only mount created its log dir");
}

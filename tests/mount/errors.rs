//! Every row of the error table of docs/contract.md, through a real mount, each with the errno it
//! names and a log line saying why.

use crate::common::decode::{batches, decode_log};
use crate::common::mount::{Options, TestMount};

#[test]
fn invalid_topic_names_are_einval() {
    let m = TestMount::start(&[]);
    let long = "x".repeat(250);
    for bad in ["'a b'", "'a*'", "'é'", "'a:b'", &long] {
        m.fails_with(&format!("mkdir {bad}"), "Invalid argument");
    }
    // `.` and `..` exist already as directory entries.
    m.fails("mkdir .");
    m.fails("mkdir ..");
    let ok = "x".repeat(249);
    m.ok(&format!("mkdir {ok} a.b_c-D9"));
    assert_eq!(m.ok("ls").lines().count(), 2);
    assert!(m.daemon_log().contains("invalid topic name"));
}

#[test]
fn an_existing_topic_is_eexist() {
    let m = TestMount::start(&[]);
    m.ok("mkdir t");
    m.fails_with("mkdir t", "File exists");
    m.ok("mkdir -p t");
}

#[test]
fn creating_renaming_or_deleting_other_files_is_eperm() {
    let m = TestMount::start(&[]);
    m.ok("mkdir t");
    m.ok("mkdir u");
    for script in [
        "touch newfile",
        "touch t/newfile",
        "touch t/0/newfile",
        "/bin/echo x > t/0/by-offset/newfile",
        "mkdir t/sub",
        "mkdir t/0/sub",
        "mkdir t/7",
        "rm -f t/config",
        "rm -f t/0/append",
        "rm -f t/0/log-end-offset",
        "rmdir t/0",
        "rmdir t/0/segments",
        "mv t/append t/other",
        "mv t v",
        "mv t/0 u/1",
        "ln -s t/config link",
        "ln t/config t/hardlink",
        "mknod t/fifo p",
        "chmod 777 t/append",
        "chown 1:1 t/config",
    ] {
        m.fails_with(script, "Operation not permitted");
    }
    assert_eq!(m.ok("ls"), "t\nu\n");
    assert_eq!(
        m.ok("ls t"),
        "0\nappend\nappend.jsonl\nappend.kv\nby-offset\nby-time\nconfig\nfollow\ngroups\nmaildir\npartitions\ntable\n"
    );
}

#[test]
fn mode_bits_refuse_writes_of_read_only_files_and_append_files_read_as_empty() {
    let m = TestMount::start(&[]);
    m.ok("mkdir t");
    m.ok("echo x >> t/0/append");
    assert_eq!(m.ok("cat t/append t/0/append t/0/append.jsonl"), "");
    for script in [
        "/bin/echo 9 > t/0/log-end-offset",
        "/bin/echo 9 >> t/0/log-start-offset",
        "/bin/echo x >> t/0/by-offset/0",
    ] {
        m.fails_with(script, "Permission denied");
    }
    m.ok("test -w t/0/append && test -r t/0/append");
    m.ok("test -r t/0/log-end-offset && ! test -w t/0/log-end-offset");
    m.ok("test -r t/config && test -w t/config");
    assert_eq!(m.end_offset("t", 0), 1);
    assert!(m.daemon_log().contains("does not allow"));
}

#[test]
fn a_full_disk_is_enospc_and_leaves_no_partial_batch() {
    let m = TestMount::with(Options {
        args: ["--segment-index-bytes", "4096"].map(String::from).to_vec(),
        tmpfs_size: Some("1m".into()),
        ..Options::default()
    });
    m.ok("mkdir t");
    let chunk: String = (0..2000)
        .map(|i| format!("line-{i:06}-{}\n", "z".repeat(50)))
        .collect();
    let f = m.dir.path().join("chunk");
    std::fs::write(&f, &chunk).unwrap();
    let mut appended = 0;
    let mut err = String::new();
    for _ in 0..40 {
        let out = m.sh(&format!("cat {} >> t/0/append", f.display()));
        if !out.status.success() {
            err = String::from_utf8_lossy(&out.stderr).into_owned();
            break;
        }
        appended += 2000;
    }
    assert!(
        err.contains("No space left on device"),
        "expected ENOSPC, got: {err:?}"
    );
    // Every batch in the log is whole and valid; the log ends after the last whole batch.
    let end = m.end_offset("t", 0);
    assert!(end >= appended, "lost records: {end} < {appended}");
    let mut total = 0;
    for name in m
        .ok("ls t/0/segments")
        .lines()
        .filter(|n| n.ends_with(".log"))
    {
        let bytes = std::fs::read(m.path(&format!("t/0/segments/{name}"))).unwrap();
        total += batches(&bytes).iter().map(|b| b.1 as i64).sum::<i64>();
    }
    assert_eq!(total, end);
    assert_eq!(m.ok("wc -l < t/0/by-offset/0").trim(), end.to_string());
    // An independent decoder agrees: only whole, valid batches are on disk.
    for name in m
        .ok("ls t/0/segments")
        .lines()
        .filter(|n| n.ends_with(".log"))
    {
        decode_log(
            &std::fs::read(m.path(&format!("t/0/segments/{name}"))).unwrap(),
            name,
        );
    }
    // Once the filesystem has room again, appends continue at the next offset.
    let st = std::process::Command::new("mount")
        .args(["-o", "remount,size=8m"])
        .arg(&m.log_dirs[0])
        .status()
        .unwrap();
    assert!(st.success());
    m.ok("echo after >> t/0/append");
    assert_eq!(m.ok(&format!("cat t/0/by-offset/{end}")), "after\n");
}

#[test]
fn every_error_is_logged_once_with_its_reason() {
    let m = TestMount::start(&[]);
    m.fails("mkdir 'bad name'");
    m.fails("touch nothing-here");
    let log = m.daemon_log();
    assert_eq!(
        log.lines()
            .filter(|l| l.contains("bad name") && l.contains("Invalid argument"))
            .count(),
        1,
        "{log}"
    );
    assert!(
        log.lines()
            .any(|l| l.contains("nothing-here") && l.contains("cannot be created")),
        "{log}"
    );
}

//! `segments/` files through FUSE passthrough: the kernel reads the real files itself, and
//! no read request of such an open file reaches the daemon (counted in its debug log, which
//! names every read of a segment file it serves). With `--no-passthrough` the daemon serves
//! them, byte for byte the same. Real mounts (as root: passthrough needs CAP_SYS_ADMIN).

use std::collections::BTreeSet;

use crate::common::mount::{TestMount, wait_until};

const SEG: &str = "t/0/segments/00000000000000000000";

/// A topic of a few MiB in segments of about 1 MiB.
fn filled(args: &[&str]) -> TestMount {
    let mut all = vec!["--segment-bytes", "1048576"];
    all.extend_from_slice(args);
    let m = TestMount::start(&all);
    m.ok("mkdir t");
    m.ok("seq 1 300000 | sed 's/$/-some-record-value/' >> t/0/append");
    assert_eq!(m.end_offset("t", 0), 300000);
    m
}

/// The handles the daemon opened with passthrough, from its debug log.
fn passthrough_handles(log: &str) -> BTreeSet<u64> {
    log.lines()
        .filter_map(|l| l.split_once("open file ").map(|(_, r)| r))
        .filter(|r| r.contains(": passthrough to the real file"))
        .filter_map(|r| r.split(':').next()?.parse().ok())
        .collect()
}

/// (handle, bytes) of every read of a segment file the daemon served, from its debug log.
fn served_reads(log: &str) -> Vec<(u64, u64)> {
    log.lines()
        .filter_map(|l| l.split_once("read of open file ").map(|(_, r)| r))
        .filter_map(|r| {
            let (fh, rest) = r.split_once(" (a segment file) served: ")?;
            let bytes = rest.split(' ').next()?;
            Some((fh.parse().ok()?, bytes.parse().ok()?))
        })
        .collect()
}

/// The same bytes at the same offsets through the mount and from the real file.
fn check_reads(m: &TestMount) {
    let real = m.partition_dir("t", 0);
    let names: Vec<String> = m.ok("ls t/0/segments").lines().map(String::from).collect();
    let logs: Vec<&String> = names.iter().filter(|n| n.ends_with(".log")).collect();
    assert!(logs.len() >= 3, "expected several segments: {names:?}");
    for n in &names {
        m.ok(&format!(
            "cat t/0/segments/{n} | cmp - '{}'",
            real.join(n).display()
        ));
    }
    let log = format!("{SEG}.log");
    let raw = real.join("00000000000000000000.log");
    let raw = raw.display();
    for dd in [
        "bs=1 skip=12345 count=777",
        "bs=4096 skip=3 count=5",
        "bs=65536 skip=7 count=1",
        "bs=1000000 skip=1 count=1",
        "bs=1 skip=1048000 count=100000",
    ] {
        let through = m.ok(&format!(
            "dd if={log} {dd} status=none | od -An -tx1 | md5sum"
        ));
        let direct = m.ok(&format!(
            "dd if='{raw}' {dd} status=none | od -An -tx1 | md5sum"
        ));
        assert_eq!(through, direct, "dd {dd}");
    }
    // Reads past the end give nothing; pread at scattered offsets, and mmap, agree.
    assert_eq!(
        m.ok(&format!(
            "dd if={log} bs=1 skip=99999999 count=10 status=none | wc -c"
        )),
        "0\n"
    );
    let script = format!(
        r#"
import mmap, os
a = os.open("{log}", os.O_RDONLY)
b = os.open("{raw}", os.O_RDONLY)
size = os.fstat(b).st_size
assert os.fstat(a).st_size == size, (os.fstat(a).st_size, size)
for off in (0, 1, 4095, 4096, 99999, size // 2, size - 1, size):
    for n in (1, 100, 8192, 200000):
        assert os.pread(a, n, off) == os.pread(b, n, off), (off, n)
with mmap.mmap(a, 0, prot=mmap.PROT_READ) as ma, mmap.mmap(b, 0, prot=mmap.PROT_READ) as mb:
    assert ma[:] == mb[:]
print("same")
"#
    );
    assert_eq!(m.ok(&format!("python3 -c '{script}'")), "same\n");
}

#[test]
fn segment_reads_go_to_the_real_file() {
    let m = filled(&[]);
    check_reads(&m);
    let log = m.daemon_log();
    let handles = passthrough_handles(&log);
    assert!(handles.len() >= 9, "passthrough opens: {handles:?}\n{log}");
    let served = served_reads(&log);
    assert!(
        served.is_empty(),
        "reads reached the daemon: {:?}",
        &served[..served.len().min(10)]
    );
    assert!(!log.contains("passthrough refused"), "{log}");
}

#[test]
fn without_passthrough_the_daemon_serves_the_same_bytes() {
    let m = filled(&["--no-passthrough"]);
    check_reads(&m);
    let log = m.daemon_log();
    assert!(passthrough_handles(&log).is_empty(), "{log}");
    let served = served_reads(&log);
    let total: u64 = served.iter().map(|(_, n)| n).sum();
    let size: u64 = m
        .ok("cat t/0/segments/*.log | wc -c")
        .trim()
        .parse()
        .unwrap();
    assert!(size > 3 << 20, "{size}");
    assert!(
        total >= size,
        "the daemon served {total} bytes of segment files, the .log files are {size}"
    );
    // The `-o` form too.
    let mut m = m;
    m.unmount();
    m.set_args(&["-o", "no_passthrough"]);
    m.remount();
    let before = served_reads(&m.daemon_log()).len();
    m.ok(&format!("cat {SEG}.log > /dev/null"));
    assert!(served_reads(&m.daemon_log()).len() > before);
}

#[test]
fn opens_of_one_file_share_its_backing_and_see_it_grow() {
    let m = TestMount::start(&[]);
    m.ok("mkdir t");
    m.ok("echo first >> t/0/append");
    let log = format!("{SEG}.log");
    let raw = m.partition_dir("t", 0).join("00000000000000000000.log");
    let script = format!(
        r#"
import os, subprocess
a = os.open("{log}", os.O_RDONLY)
b = os.open("{log}", os.O_RDONLY)
first = os.pread(a, 1 << 20, 0)
assert first == os.pread(b, 1 << 20, 0) == open("{raw}", "rb").read()
with open("t/0/append", "w") as w:
    w.write("second\n")
# The active segment grew: both open files read the new bytes.
now = open("{raw}", "rb").read()
assert len(now) > len(first)
assert os.pread(a, 1 << 20, 0) == now and os.pread(b, 1 << 20, 0) == now
assert b"second" in now
os.close(a)
assert os.pread(b, 1 << 20, 0) == now
os.close(b)
# Every open closed: the file is registered again at its next open.
c = os.open("{log}", os.O_RDONLY)
assert os.pread(c, 1 << 20, 0) == now
os.close(c)
print("ok")
"#,
        raw = raw.display()
    );
    assert_eq!(m.ok(&format!("python3 -c '{script}'")), "ok\n");
    let daemon = m.daemon_log();
    assert_eq!(passthrough_handles(&daemon).len(), 3, "{daemon}");
    assert_eq!(
        daemon
            .lines()
            .filter(|l| l.contains(": passthrough to the real file") && l.contains("shared"))
            .count(),
        1,
        "the second open shares the first one's backing file\n{daemon}"
    );
    assert!(served_reads(&daemon).is_empty(), "{daemon}");
    // The files' sizes still come from the daemon, fresh at each stat.
    m.ok("echo third >> t/0/append");
    assert_eq!(
        m.ok(&format!("stat -c %s {log}")).trim(),
        std::fs::metadata(&raw).unwrap().len().to_string()
    );
}

#[test]
fn a_segment_replaced_while_open_through_passthrough() {
    use std::os::unix::fs::{FileExt, MetadataExt};
    let m = TestMount::start(&["--segment-bytes", "400", "--log-cleaner-backoff-ms", "50"]);
    m.ok("mkdir t");
    m.ok("echo cleanup.policy=compact >> t/config");
    m.ok("echo min.cleanable.dirty.ratio=1 >> t/config");
    for i in 0..80 {
        m.ok(&format!(
            r#"echo '{{"key":"k{}","value":"v{i}"}}' >> t/0/append.jsonl"#,
            i % 4
        ));
    }
    let log = m.path(&format!("{SEG}.log"));
    let raw = m.partition_dir("t", 0).join("00000000000000000000.log");
    let before = std::fs::read(&raw).unwrap();
    let held = std::fs::File::open(&log).unwrap();
    let mut buf = vec![0u8; before.len() + 100];
    assert_eq!(held.read_at(&mut buf, 0).unwrap(), before.len());
    // The cleaner rewrites the first segments into a new 00000000000000000000.log.
    m.ok("echo min.cleanable.dirty.ratio=0.5 >> t/config");
    wait_until("the cleaner checkpoints t-0", || {
        m.first_dirty("t", 0).is_some()
    });
    let after = std::fs::read(&raw).unwrap();
    assert_ne!(after, before, "the segment was rewritten");
    // The name is another file now, so another inode (as on a disk): a new open reads the
    // new file through its own backing, the held one its old file, and fstat of each shows
    // its own file.
    let old_ino = std::fs::metadata(&log).unwrap().ino();
    let opens = passthrough_handles(&m.daemon_log()).len();
    let new = std::fs::File::open(&log).unwrap();
    assert_ne!(
        new.metadata().unwrap().ino(),
        held.metadata().unwrap().ino()
    );
    assert_eq!(old_ino, new.metadata().unwrap().ino());
    let mut got = vec![0u8; after.len() + 100];
    assert_eq!(new.read_at(&mut got, 0).unwrap(), after.len());
    assert_eq!(&got[..after.len()], &after[..]);
    let n = held.read_at(&mut buf, 0).unwrap();
    assert_eq!(&buf[..n], &before[..]);
    assert_eq!(held.metadata().unwrap().len(), before.len() as u64);
    assert_eq!(new.metadata().unwrap().len(), after.len() as u64);
    let daemon = m.daemon_log();
    assert_eq!(passthrough_handles(&daemon).len(), opens + 1, "{daemon}");
    assert!(served_reads(&daemon).is_empty(), "{daemon}");
}

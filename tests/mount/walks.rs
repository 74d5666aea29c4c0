//! Walking a topic with the programs people use: `cp -r`, `tar` and `grep -r` exit 0 (an
//! append file reads as empty), and `tar --sparse` / `cp --sparse=always` keep the
//! preallocated `segments/` indexes sparse, from lseek's SEEK_DATA / SEEK_HOLE answered as the
//! real files answer them.

use std::os::unix::fs::MetadataExt;
use std::path::Path;

use crate::common::mount::TestMount;

/// A topic of two partitions with index entries (a small index interval), a keyed record, a
/// JSON record and a needle to find.
fn topic(m: &TestMount) {
    m.ok("mkdir t && echo 2 > t/partitions");
    // One batch per echo: an index entry about every second batch.
    m.ok("for i in $(seq 1 200); do echo \"line-$i\" >> t/0/append; done");
    m.ok("echo needle >> t/1/append");
    m.ok("echo '{\"key\":\"k\",\"value\":\"v\"}' >> t/append.jsonl");
}

/// Runs `script` in the mount: exit 0 and nothing on stderr.
fn clean(m: &TestMount, script: &str) -> String {
    let out = m.sh(script);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "`{script}` failed: {err}");
    assert!(err.is_empty(), "`{script}`: {err}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn cp_tar_and_grep_of_a_topic_exit_0_and_append_files_read_as_empty() {
    let m = TestMount::start(&["--index-interval-bytes", "100"]);
    topic(&m);
    // Mode 0600: the owner reads (nothing) and writes.
    clean(
        &m,
        "test -r t/0/append && test -w t/0/append && test -r t/append.jsonl",
    );
    assert_eq!(
        clean(&m, "cat t/append t/0/append t/1/append.kv | wc -c"),
        "0\n"
    );
    assert_eq!(
        clean(&m, "stat -c %a t/append t/0/append.jsonl"),
        "600\n600\n"
    );
    let copy = m.dir.path().join("copy");
    clean(&m, &format!("cp -r t {}", copy.display()));
    for f in ["append", "append.jsonl", "0/append", "1/append.kv"] {
        assert_eq!(std::fs::read(copy.join(f)).unwrap(), b"", "{f}");
    }
    // The copied segments are the log dir's files, byte for byte.
    let real = m.log_dirs[0].join("t-0/00000000000000000000.log");
    assert_eq!(
        std::fs::read(copy.join("0/segments/00000000000000000000.log")).unwrap(),
        std::fs::read(&real).unwrap()
    );
    assert_eq!(
        clean(&m, "grep -rl needle t"),
        "t/1/segments/00000000000000000000.log\n"
    );
    let tar = m.dir.path().join("t.tar");
    clean(&m, &format!("tar cf {} t", tar.display()));
    let listed = clean(&m, &format!("tar tf {}", tar.display()));
    assert!(listed.lines().any(|l| l == "t/0/append"), "{listed}");
    assert!(
        listed
            .lines()
            .any(|l| l == "t/1/segments/00000000000000000000.log")
    );
}

#[test]
fn a_walk_right_after_a_change_sees_its_times_at_once() {
    let m = TestMount::start(&[]);
    m.ok("mkdir t && echo 2 > t/partitions");
    let tar = m.dir.path().join("t.tar");
    let times = "stat -c %Y.%y t t/0 t/0/by-offset t/table t/append";
    // Each change is followed at once by a walk: the directories' times the kernel holds
    // (kept a second) are those of the change, so tar sees one ctime before and after
    // reading each directory ("file changed as we read it", exit 1, otherwise).
    for change in [
        "echo a >> t/0/append",
        "echo b >> t/1/append",
        "echo v > t/table/k",
        "echo 'retention.ms=3600000' >> t/config",
        "echo c >> t/0/append",
    ] {
        let before = clean(&m, times);
        m.ok(change);
        let after = clean(&m, times);
        assert_ne!(before, after, "`{change}` moved the times at once");
        clean(&m, &format!("tar cf {} t", tar.display()));
    }
}

/// lseek(SEEK_DATA / SEEK_HOLE) from each offset, as Python's os.lseek answers it (or the
/// errno).
fn seeks(path: &Path, offsets: &[i64]) -> String {
    let script = r#"
import os, sys
fd = os.open(sys.argv[1], os.O_RDONLY)
for off in map(int, sys.argv[2:]):
    for whence in (os.SEEK_DATA, os.SEEK_HOLE):
        try:
            print(os.lseek(fd, off, whence), end=' ')
        except OSError as e:
            print('errno', e.errno, end=' ')
    print()
"#;
    let out = std::process::Command::new("python3")
        .arg("-c")
        .arg(script)
        .arg(path)
        .args(offsets.iter().map(|o| o.to_string()))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn sparse_walks(args: &[&str]) {
    let m = TestMount::start(args);
    topic(&m);
    let seg = "t/0/segments/00000000000000000000";
    // SEEK_DATA / SEEK_HOLE through the mount answer as the real files do.
    for ext in ["index", "timeindex", "log"] {
        let real = m.log_dirs[0].join(format!("t-0/00000000000000000000.{ext}"));
        let size = std::fs::metadata(&real).unwrap().len() as i64;
        let offsets = [0, 1, 4095, 4096, 8192, size / 2, size - 1, size, size + 10];
        let want = seeks(&real, &offsets);
        assert_eq!(
            seeks(&m.path(&format!("{seg}.{ext}")), &offsets),
            want,
            "{ext}"
        );
        if ext == "index" {
            // Entries from 0, then a hole to the preallocated end.
            let first: Vec<i64> = want
                .lines()
                .next()
                .unwrap()
                .split_whitespace()
                .map(|n| n.parse().unwrap())
                .collect();
            assert!(first[0] == 0 && first[1] > 0 && first[1] < size, "{want}");
        }
    }
    // A file that is not a segment is all data up to its size.
    assert_eq!(
        seeks(&m.path("t/0/log-end-offset"), &[0, 3, 4]),
        "0 4 \n3 4 \nerrno 6 errno 6 \n"
    );

    // tar --sparse stores the holes as holes: a few KiB, not the 20 MiB of the indexes.
    let tar = m.dir.path().join("t.tar");
    clean(&m, &format!("tar --sparse -cf {} t", tar.display()));
    let size = std::fs::metadata(&tar).unwrap().len();
    assert!(size < 200 * 1024, "tar --sparse: {size} bytes");
    let out = m.dir.path().join("x");
    std::fs::create_dir(&out).unwrap();
    clean(
        &m,
        &format!("tar -xf {} -C {}", tar.display(), out.display()),
    );
    let index = out.join(format!("{seg}.index"));
    let real_index = m.log_dirs[0].join("t-0/00000000000000000000.index");
    assert_eq!(
        std::fs::read(&index).unwrap(),
        std::fs::read(&real_index).unwrap()
    );

    // cp --sparse=always keeps them sparse (few blocks for a 10 MiB index).
    let copy = m.dir.path().join("copy");
    clean(&m, &format!("cp -r --sparse=always t {}", copy.display()));
    let copied = copy.join("0/segments/00000000000000000000.index");
    let md = std::fs::metadata(&copied).unwrap();
    assert_eq!(md.len(), 10 * 1024 * 1024);
    assert!(md.blocks() * 512 <= 64 * 1024, "{} blocks", md.blocks());
    assert_eq!(
        std::fs::read(&copied).unwrap(),
        std::fs::read(&real_index).unwrap()
    );
}

#[test]
fn tar_sparse_and_cp_sparse_keep_indexes_sparse() {
    sparse_walks(&["--index-interval-bytes", "100"]);
}

#[test]
fn tar_sparse_keeps_indexes_sparse_without_passthrough() {
    sparse_walks(&["--index-interval-bytes", "100", "--no-passthrough"]);
}

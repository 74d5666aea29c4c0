//! Reliability on a real mount: a topic deleted and created again under the same name while
//! files of the old one are open, a record too large inside one large write, and operations
//! that fail half way leaving no trace.

use std::path::Path;
use std::process::Command;

use crate::common::decode::{decode_partition_dir, log_files};
use crate::common::mount::{self, Options, TestMount, file_names, tail};

/// The values of every record in a partition directory's `.log` files, decoded with the
/// kafka-protocol crate (offsets checked dense from 0), and the names of those files.
fn stored(dir: &Path) -> (Vec<Vec<u8>>, Vec<String>) {
    let records = decode_partition_dir(dir);
    for (i, r) in records.iter().enumerate() {
        assert_eq!(r.offset, i as i64, "{}: offsets dense from 0", r.file);
    }
    (
        records.into_iter().map(|r| r.value).collect(),
        log_files(dir),
    )
}

/// Runs a python3 script with the mountpoint as argv[1]; returns its stdout.
fn python(m: &TestMount, script: &str) -> String {
    let out = Command::new("python3")
        .arg("-c")
        .arg(script)
        .arg(&m.mnt)
        .output()
        .expect("run python3");
    assert!(
        out.status.success(),
        "python3 failed: {}\n--- daemon log ---\n{}",
        String::from_utf8_lossy(&out.stderr),
        tail(&m.daemon_log(), 40)
    );
    String::from_utf8(out.stdout).unwrap()
}

const REUSE_SCRIPT: &str = r#"
import errno, os, sys
mnt = sys.argv[1]
os.chdir(mnt)
def outcome(f):
    try:
        r = f()
        return "ok:%r" % (r,)
    except OSError as e:
        return "err:" + errno.errorcode.get(e.errno, str(e.errno))

old_ino = os.stat("t").st_ino
old_part_ino = os.stat("t/0").st_ino
append = os.open("t/0/append", os.O_WRONLY)
topic_append = os.open("t/append", os.O_WRONLY)
stream = os.open("t/0/by-offset/0", os.O_RDONLY)
first = os.read(stream, 4)
stream2 = os.open("t/0/by-offset/1", os.O_RDONLY)
seg_name = sorted(n for n in os.listdir("t/0/segments") if n.endswith(".log"))[0]
seg = os.open("t/0/segments/" + seg_name, os.O_RDONLY)
config = os.open("t/config", os.O_RDWR)
partitions = os.open("t/partitions", os.O_RDWR)
leo = os.open("t/0/log-end-offset", os.O_RDONLY)
# A process whose working directory is inside the old topic.
os.chdir("t/0")
os.rmdir(os.path.join(mnt, "t"))
os.mkdir(os.path.join(mnt, "t"))
with open(os.path.join(mnt, "t/0/append"), "w") as f:
    f.write("new1\n")
print("first", first)
print("write", outcome(lambda: os.write(append, b"old-write\n")))
print("topic_write", outcome(lambda: os.write(topic_append, b"old-topic-write\n")))
print("partial", outcome(lambda: os.write(append, b"old-partial")))
print("close_partial", outcome(lambda: os.close(append)))
print("stream_read", outcome(lambda: os.read(stream, 1 << 16)))
print("stream_reread", outcome(lambda: os.pread(stream, 100, 0)))
print("stream2_read", outcome(lambda: os.read(stream2, 1 << 16)))
print("segment_read", outcome(lambda: os.pread(seg, 100, 0)))
print("config_write", outcome(lambda: os.write(config, b"retention.ms=1234\n")))
print("partitions_write", outcome(lambda: os.write(partitions, b"5\n")))
print("leo_read", outcome(lambda: os.pread(leo, 100, 0)))
print("fstat_stream", outcome(lambda: os.fstat(stream).st_size))
print("fstat_leo", outcome(lambda: os.fstat(leo).st_size))
print("fstat_config", outcome(lambda: os.fstat(config).st_size))
print("cwd_list", outcome(lambda: os.listdir(".")))
print("cwd_open", outcome(lambda: os.open("append", os.O_WRONLY)))
print("cwd_stat", outcome(lambda: os.stat(".").st_ino))
os.chdir(mnt)
print("new_ino_differs", os.stat("t").st_ino != old_ino, os.stat("t/0").st_ino != old_part_ino)
print("new_list", sorted(os.listdir("t")))
print("new_partitions", open("t/partitions").read().strip())
"#;

/// Item: rmdir + mkdir of the same name while files of the old topic are open.
#[test]
fn rmdir_mkdir_with_open_handles() {
    let mut m = TestMount::start(&["--segment-bytes", "200"]);
    m.ok("mkdir t && for i in 1 2 3 4 5 6; do echo old-$i-xxxxxxxxxxxxxxxxxxxxxxxx >> t/0/append; done");
    assert!(
        m.ok("ls t/0/segments")
            .lines()
            .filter(|n| n.ends_with(".log"))
            .count()
            > 1,
        "the old topic has several segments"
    );
    let out = python(&m, REUSE_SCRIPT);
    let get = |key: &str| -> String {
        out.lines()
            .find_map(|l| l.strip_prefix(&format!("{key} ")))
            .unwrap_or_else(|| panic!("no {key} in {out}"))
            .to_string()
    };
    assert_eq!(get("first"), "b'old-'");
    let stale = |key: &str| {
        let v = get(key);
        assert!(
            v == "err:ESTALE" || v == "err:ENOENT",
            "{key}: a handle of the deleted topic must fail, got {v}\n{out}"
        );
    };
    for key in [
        "write",
        "topic_write",
        "stream_read",
        "stream_reread",
        "stream2_read",
        "config_write",
        "partitions_write",
        "leo_read",
        "cwd_open",
        "cwd_stat",
    ] {
        stale(key);
    }
    // fstat of a file of the deleted topic (which `cat` makes first) says so, also when a
    // new topic has its name.
    for key in ["fstat_stream", "fstat_leo", "fstat_config"] {
        assert_eq!(get(key), "err:ESTALE", "{key}\n{out}");
    }
    // An open segment file read by the kernel itself (FUSE passthrough) reads on in its
    // file, as an unlinked file does: the old topic's bytes, never the new one's. Served by
    // the daemon, it fails as the other handles do.
    let segment = get("segment_read");
    if m.daemon_log().contains("passthrough to the real file") {
        assert!(
            segment.starts_with("ok:") && segment.contains("old-1-") && !segment.contains("new1"),
            "segment_read: {segment}"
        );
    } else {
        stale("segment_read");
    }
    // Listing a removed working directory shows nothing of the new topic: empty, as for a
    // removed directory on a disk filesystem, or the stale inode's ESTALE.
    let cwd_list = get("cwd_list");
    assert!(
        cwd_list == "ok:[]" || cwd_list == "err:ENOENT" || cwd_list == "err:ESTALE",
        "the old working directory shows nothing of the new topic: {cwd_list}"
    );
    assert_eq!(get("new_ino_differs"), "True True");
    assert_eq!(
        get("new_list"),
        "['0', 'append', 'append.jsonl', 'append.kv', 'by-offset', 'by-time', 'config', 'follow', 'groups', 'maildir', 'partitions', 'table']"
    );
    assert_eq!(get("new_partitions"), "1");

    // The new topic holds only its own record, in its own single segment.
    let check = |m: &TestMount| {
        assert_eq!(m.read("t/partitions"), "1\n");
        assert_eq!(m.end_offset("t", 0), 1);
        assert_eq!(m.read("t/0/by-offset/0"), "new1\n");
        assert!(!m.read("t/config").contains("retention.ms=1234"));
        let (values, logs) = stored(&m.partition_dir("t", 0));
        assert_eq!(values, vec![b"new1".to_vec()]);
        assert_eq!(logs, vec!["00000000000000000000.log".to_string()]);
        let parts: Vec<String> = file_names(&m.log_dirs[0])
            .into_iter()
            .filter(|n| n.starts_with("t-"))
            .collect();
        assert_eq!(parts, vec!["t-0".to_string()]);
    };
    check(&m);
    m.unmount();
    m.remount();
    check(&m);
}

/// Sets the daemon's soft open-file limit with prlimit(1) (the hard one stays: raising it
/// again would need CAP_SYS_RESOURCE).
fn set_fd_limit(m: &TestMount, n: usize, hard: usize) {
    let st = Command::new("prlimit")
        .arg(format!("--pid={}", m.pid()))
        .arg(format!("--nofile={n}:{hard}"))
        .status()
        .expect("run prlimit");
    assert!(st.success(), "prlimit failed");
}

fn open_fds(m: &TestMount) -> usize {
    std::fs::read_dir(format!("/proc/{}/fd", m.pid()))
        .unwrap()
        .count()
}

/// The `<topic>-*` directories in the log dirs.
fn partition_dirs(m: &TestMount, topic: &str) -> Vec<String> {
    let mut out: Vec<String> = m
        .log_dirs
        .iter()
        .flat_map(|d| std::fs::read_dir(d).unwrap())
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(&format!("{topic}-")) && !n.ends_with("-delete"))
        .collect();
    out.sort();
    out
}

/// Item: a mkdir that fails (EMFILE at the daemon's fd limit, ENOSPC on a full disk) leaves
/// no trace: not listed, no directory on disk, not there after a remount; and a failed
/// `echo N > partitions` adds no partition.
#[test]
fn failed_mkdir_leaves_no_trace() {
    let mut m = TestMount::start(&["--num-partitions", "4"]);
    m.ok("mkdir keep && echo k1 >> keep/0/append");
    // Room for the first partition's files but not for all four.
    let limits = std::fs::read_to_string(format!("/proc/{}/limits", m.pid())).unwrap();
    let original: usize = limits
        .lines()
        .find(|l| l.starts_with("Max open files"))
        .and_then(|l| l.split_whitespace().nth(4))
        .and_then(|n| n.parse().ok())
        .expect("the daemon's hard fd limit (its soft one is raised to it)");
    let fds = open_fds(&m);
    set_fd_limit(&m, fds + 4, original);
    m.fails_with("mkdir t", "Too many open files");
    assert!(!m.ok("ls").lines().any(|l| l == "t"), "t is not listed");
    m.fails_with("ls t", "No such file or directory");
    m.fails_with("echo x >> t/append", "nonexistent");
    assert_eq!(partition_dirs(&m, "t"), Vec::<String>::new());

    // Growing a topic past the limit fails and adds none of the partitions.
    // coreutils echo names the errno (dash's builtin says "I/O error" for any).
    m.fails_with("/bin/echo 9 > keep/partitions", "Too many open files");
    assert_eq!(m.read("keep/partitions"), "4\n");
    m.fails_with("ls keep/4", "No such file or directory");
    assert_eq!(
        partition_dirs(&m, "keep"),
        ["keep-0", "keep-1", "keep-2", "keep-3"]
    );

    set_fd_limit(&m, original, original);
    m.unmount();
    m.remount();
    assert_eq!(m.ok("ls"), "keep\n");
    assert_eq!(m.read("keep/partitions"), "4\n");
    assert_eq!(partition_dirs(&m, "t"), Vec::<String>::new());
    // With descriptors to spare, both work and are whole.
    m.ok("mkdir t && echo 6 > keep/partitions");
    assert_eq!(m.read("t/partitions"), "4\n");
    assert_eq!(m.read("keep/partitions"), "6\n");
    assert_eq!(m.read("keep/0/by-offset/0"), "k1\n");
}

/// Item: a mkdir on a full disk either fails leaving no trace or succeeds whole; it never
/// fails after creating the topic.
#[test]
fn failed_mkdir_on_a_full_disk_leaves_no_trace() {
    let mut m = TestMount::with(Options {
        args: ["--num-partitions", "3"].map(String::from).to_vec(),
        tmpfs_size: Some("1m".into()),
        ..Options::default()
    });
    m.ok("mkdir keep && echo k1 >> keep/0/append");
    // Fill the log dir's filesystem to the last block.
    let fill = m.log_dirs[0].join("fill");
    let _ = Command::new("dd")
        .arg("if=/dev/zero")
        .arg(format!("of={}", fill.display()))
        .arg("bs=4k")
        .output()
        .unwrap();
    let mut results = Vec::new();
    for name in ["t1", "t2", "t3"] {
        let failed = !m.sh(&format!("mkdir {name}")).status.success();
        let listed = m.ok("ls").lines().any(|l| l == name);
        assert_eq!(
            listed,
            !failed,
            "mkdir {name} {} but the topic is {}listed",
            if failed { "failed" } else { "succeeded" },
            if listed { "" } else { "not " }
        );
        if failed {
            assert_eq!(partition_dirs(&m, name), Vec::<String>::new());
        } else {
            assert_eq!(partition_dirs(&m, name).len(), 3);
        }
        results.push((name, failed));
    }
    std::fs::remove_file(&fill).unwrap();
    m.unmount();
    m.remount();
    let listed = m.ok("ls");
    for (name, failed) in results {
        assert_eq!(
            listed.lines().any(|l| l == name),
            !failed,
            "after a remount, {name} is there exactly when its mkdir succeeded"
        );
    }
    assert_eq!(m.read("keep/0/by-offset/0"), "k1\n");
}

const OVERSIZED_SCRIPT: &str = r#"
import errno, os, sys
os.chdir(sys.argv[1])
def err(e):
    return "err:" + errno.errorcode.get(e.errno, str(e.errno))

def write_loop(path, buf):
    # What coreutils' full_write and most C writers do: loop on short writes, stop on error.
    fd = os.open(path, os.O_WRONLY | os.O_APPEND)
    out, off = [], 0
    try:
        while off < len(buf):
            n = os.write(fd, buf[off:])
            out.append(str(n))
            off += n
    except OSError as e:
        out.append(err(e))
    try:
        os.close(fd)
    except OSError as e:
        out.append("close " + err(e))
    return " ".join(out)

def file_write(path, buf, mode):
    out = []
    f = open(path, mode)
    try:
        f.write(buf if "b" in mode else buf.decode())
        out.append("ok")
    except OSError as e:
        out.append(err(e))
    try:
        f.close()
    except OSError as e:
        out.append("close " + err(e))
    return " ".join(out)

two = b"good1\n" + b"X" * 2000000 + b"\ngood2\n"
three = b"good1\n" + b"X" * 3000000 + b"\ngood2\n"
jsonl = b'{"value":"good1"}\n{"value":"' + b"X" * 2000000 + b'"}\n{"value":"good2"}\n'
print("loop", write_loop("a/0/append", two))
print("loop3", write_loop("b/0/append", three))
print("binary", file_write("c/0/append", two, "ab"))
print("text", file_write("d/0/append", two, "a"))
print("topic", write_loop("e/append", two))
print("jsonl", write_loop("f/0/append.jsonl", jsonl))
# The handle goes on working after the refusal.
fd = os.open("a/0/append", os.O_WRONLY)
os.write(fd, b"good3\n" + b"X" * 2000000)
try:
    os.write(fd, b"X" * 10)
    print("partial_overflow", "ok")
except OSError as e:
    print("partial_overflow", err(e))
try:
    os.write(fd, b"XXXX\nnot-stored\n")
    print("line_end", "ok")
except OSError as e:
    print("line_end", err(e))
print("after", os.write(fd, b"good4\n"))
os.close(fd)
"#;

/// Item: a record larger than max.message.bytes inside one large write fails with EMSGSIZE
/// and no part of it ever becomes a record, also when the writer retries the rest of a
/// short write (Python's os.write loop, its file objects, coreutils cat).
#[test]
fn oversized_record_in_large_write() {
    let m = TestMount::start(&[]);
    m.ok("for t in a b c d e f g; do mkdir $t; done");
    let out = python(&m, OVERSIZED_SCRIPT);
    let get = |key: &str| -> String {
        out.lines()
            .find_map(|l| l.strip_prefix(&format!("{key} ")))
            .unwrap_or_else(|| panic!("no {key} in {out}"))
            .to_string()
    };
    // The first request (good1 and the line's head) is taken: a short count; the rest
    // (the line's end, then good2) is refused.
    for key in ["loop", "loop3", "topic", "jsonl"] {
        let v = get(key);
        assert!(
            v.ends_with("err:EMSGSIZE"),
            "{key}: the writer is told EMSGSIZE: {v}\n{out}"
        );
    }
    for key in ["binary", "text"] {
        let v = get(key);
        assert!(
            v.starts_with("err:EMSGSIZE"),
            "{key}: file.write raises EMSGSIZE: {v}\n{out}"
        );
    }
    // The oversized line from coreutils cat, reading it from a file.
    let big = m.dir.path().join("big");
    let mut content = b"good1\n".to_vec();
    content.extend(std::iter::repeat_n(b'X', 2_000_000));
    content.extend_from_slice(b"\ngood2\n");
    std::fs::write(&big, &content).unwrap();
    m.fails_with(
        &format!("cat {} >> g/0/append", big.display()),
        "Message too long",
    );
    // Going on with a line already too long is refused up to the line's end.
    assert_eq!(get("partial_overflow"), "err:EMSGSIZE");
    assert_eq!(get("line_end"), "err:EMSGSIZE");
    assert_eq!(get("after"), "6");

    let expect = |topic: &str, want: &[&str]| {
        let (values, _) = stored(&m.partition_dir(topic, 0));
        let values: Vec<String> = values
            .iter()
            .map(|v| {
                assert!(
                    v.len() < 100,
                    "{topic}: a fragment of {} bytes was stored",
                    v.len()
                );
                String::from_utf8(v.clone()).unwrap()
            })
            .collect();
        assert_eq!(values, want, "{topic}");
    };
    expect("a", &["good1", "good3", "good4"]);
    for t in ["b", "c", "d", "e", "g"] {
        expect(t, &["good1"]);
    }
    // JSON Lines: the stored record's value is good1 (decoded from its JSON line).
    expect("f", &["good1"]);
    assert_eq!(
        m.ok("cat a/0/by-offset/0"),
        "good1\ngood3\ngood4\n",
        "what cat shows agrees"
    );
}

const FULL_DISK_SCRIPT: &str = r#"
import errno, os, sys
os.chdir(sys.argv[1])
logs = sys.argv[2]
payload = b"".join(b"l%06d\n" % i for i in range(131072))
st = os.statvfs(logs)
free = st.f_bavail * st.f_frsize
fill = os.path.join(logs, "fill")
with open(fill, "wb") as f:
    f.write(b"\0" * max(0, free - 1500 * 1024))
fd = os.open("t/0/append", os.O_WRONLY)
counts, off = [], 0
try:
    while off < len(payload):
        n = os.write(fd, payload[off:])
        counts.append(str(n))
        off += n
except OSError as e:
    counts.append("err:" + errno.errorcode.get(e.errno, str(e.errno)))
print("taken", off)
print("counts", " ".join(counts))
os.remove(fill)
while off < len(payload):
    off += os.write(fd, payload[off:])
os.close(fd)
print("done", off)
"#;

/// Item (a failure half done): one write whose lines need several batches, where a later
/// batch fails (a full disk), reports exactly the bytes of the lines appended (a short
/// count), never a failure after appending some: a writer that retries the rest stores
/// each line once.
#[test]
fn failed_batch_after_appended_ones_is_a_short_write() {
    let m = TestMount::with(Options {
        args: ["--segment-index-bytes", "4096"].map(String::from).to_vec(),
        tmpfs_size: Some("6m".into()),
        ..Options::default()
    });
    m.ok("mkdir t");
    let out = Command::new("python3")
        .arg("-c")
        .arg(FULL_DISK_SCRIPT)
        .arg(&m.mnt)
        .arg(&m.log_dirs[0])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{text}{}\n{}",
        String::from_utf8_lossy(&out.stderr),
        tail(&m.daemon_log(), 20)
    );
    let counts = text
        .lines()
        .find_map(|l| l.strip_prefix("counts "))
        .unwrap()
        .to_string();
    assert!(
        counts.ends_with("err:ENOSPC"),
        "the disk filled during the write: {counts}"
    );
    let taken: usize = text
        .lines()
        .find_map(|l| l.strip_prefix("taken "))
        .unwrap()
        .parse()
        .unwrap();
    assert!(
        taken > 0,
        "the first batches went in and were reported: {counts}"
    );
    let (values, _) = stored(&m.partition_dir("t", 0));
    let want: Vec<Vec<u8>> = (0..131072)
        .map(|i| format!("l{i:06}").into_bytes())
        .collect();
    assert_eq!(values.len(), want.len(), "each line once: {counts}");
    assert!(values == want, "each line once, in order");
}

/// Unmounts, when dropped, whatever is still mounted below a log dir.
struct InnerMounts(std::path::PathBuf);

impl Drop for InnerMounts {
    fn drop(&mut self) {
        let info = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
        let below = format!("{}/", self.0.display());
        let mut points: Vec<&str> = info
            .lines()
            .filter_map(|l| l.split(' ').nth(4))
            .filter(|p| p.starts_with(&below))
            .collect();
        points.sort_by_key(|p| std::cmp::Reverse(p.len()));
        for p in points {
            mount::force_unmount(Path::new(p));
        }
    }
}

/// Item (failures half done), rmdir: once the topic is gone, rmdir reports success even when
/// its files cannot all be removed now (they are removed at the next start), and a topic of
/// the same name can be created and deleted again meanwhile.
#[test]
fn rmdir_that_cannot_remove_every_file_completes() {
    let mut m = TestMount::start(&[]);
    let _inner = InnerMounts(m.log_dirs[0].clone());
    let busy = |m: &TestMount| {
        // A mountpoint inside the partition dir: removing it fails with EBUSY.
        let d = m.partition_dir("t", 0).join("busy");
        std::fs::create_dir(&d).unwrap();
        let st = Command::new("mount")
            .args(["-t", "tmpfs", "-o", "size=64k", "tmpfs"])
            .arg(&d)
            .status()
            .unwrap();
        assert!(st.success());
    };
    for round in 0..2 {
        m.ok("mkdir t && echo a >> t/0/append");
        busy(&m);
        m.ok("rmdir t");
        m.fails_with("ls t", "No such file or directory");
        assert_eq!(
            partition_dirs(&m, "t"),
            Vec::<String>::new(),
            "round {round}"
        );
    }
    let leftovers: Vec<std::path::PathBuf> = std::fs::read_dir(&m.log_dirs[0])
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with("-delete"))
        .collect();
    assert_eq!(leftovers.len(), 2, "{leftovers:?}");
    for l in &leftovers {
        mount::force_unmount(&l.join("busy"));
    }
    m.unmount();
    m.remount();
    assert_eq!(m.ok("ls"), "");
    let left: Vec<String> = file_names(&m.log_dirs[0])
        .into_iter()
        .filter(|n| n.ends_with("-delete"))
        .collect();
    assert_eq!(left, Vec::<String>::new(), "removed at the next start");
}

const RACE_SCRIPT: &str = r#"
import errno, os, sys, threading, time
os.chdir(sys.argv[1])
res = {}
def writer():
    fd = os.open("t/0/append", os.O_WRONLY)
    n = 0
    try:
        while True:
            os.write(fd, b"old-%d\n" % n)
            n += 1
    except OSError as e:
        res["writer"] = errno.errorcode[e.errno]
def reader():
    fd = os.open("t/0/by-offset/0", os.O_RDONLY)
    try:
        while True:
            os.pread(fd, 65536, 0)
            os.read(fd, 65536)
    except OSError as e:
        res["reader"] = errno.errorcode[e.errno]
ts = [threading.Thread(target=f) for f in (writer, reader, writer, reader)]
for t in ts:
    t.start()
time.sleep(0.5)
os.rmdir("t")
os.mkdir("t")
with open("t/0/append", "w") as f:
    f.write("new1\n")
for t in ts:
    t.join(30)
    assert not t.is_alive(), "a handle of the deleted topic went on working"
print("writer", res.get("writer"))
print("reader", res.get("reader"))
"#;

/// Item (rmdir + mkdir with handles open), racing: writers and readers busy on the old
/// topic while it is deleted and created again; they all fail, and the new topic holds
/// only its own record.
#[test]
fn rmdir_mkdir_while_writing_and_reading() {
    let m = TestMount::start(&["--segment-bytes", "4096"]);
    m.ok("mkdir t && echo first >> t/0/append");
    let out = python(&m, RACE_SCRIPT);
    assert!(out.contains("writer ESTALE"), "{out}");
    assert!(out.contains("reader ESTALE"), "{out}");
    let (values, logs) = stored(&m.partition_dir("t", 0));
    assert_eq!(values, vec![b"new1".to_vec()]);
    assert_eq!(logs.len(), 1, "{logs:?}");
    assert_eq!(m.end_offset("t", 0), 1);
}

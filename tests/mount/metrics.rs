//! `<mountpoint>/@metrics` through a real mount, parsed by an independent Prometheus parser
//! (Python's `prometheus_client`): the offsets equal `log-end-offset` and `log-start-offset`,
//! the group lag equals what `groups/<G>/offsets` shows, the bytes appended equal the bytes
//! the segment files grew by; fresh at each open.

use std::collections::BTreeMap;
use std::process::Command;

use crate::common::mount::{Options, TestMount};

/// The samples of `@metrics`, parsed by prometheus_client: "name{k=v,...}" -> value.
pub(crate) fn scrape(m: &TestMount) -> BTreeMap<String, f64> {
    let script = r#"
import sys
from prometheus_client.parser import text_string_to_metric_families
text = open('@metrics').read()
for fam in text_string_to_metric_families(text):
    for s in fam.samples:
        labels = ','.join('%s=%s' % kv for kv in sorted(s.labels.items()))
        name = s.name + ('{%s}' % labels if labels else '')
        print('%s %s %r' % (fam.type, name, s.value))
"#;
    let out = Command::new("python3")
        .arg("-c")
        .arg(script)
        .current_dir(&m.mnt)
        .output()
        .expect("run python3");
    assert!(
        out.status.success(),
        "prometheus_client could not parse @metrics: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| {
            let mut parts = l.split(' ');
            let _type = parts.next().unwrap();
            let name = parts.next().unwrap().to_string();
            let value: f64 = parts.next().unwrap().parse().unwrap();
            (name, value)
        })
        .collect()
}

fn segment_bytes(m: &TestMount, topic: &str, p: u32) -> u64 {
    std::fs::read_dir(m.partition_dir(topic, p))
        .unwrap()
        .map(|e| e.unwrap())
        .filter(|e| e.file_name().to_string_lossy().ends_with(".log"))
        .map(|e| e.metadata().unwrap().len())
        .sum()
}

#[test]
fn metrics_parsed_by_prometheus_client_equal_the_tree() {
    let m = TestMount::start(&["--num-partitions", "2"]);
    m.ok("mkdir t");
    m.ok("seq 1 10 >> t/0/append");
    m.ok("seq 1 4 >> t/1/append");
    m.ok("printf 'a\\nb\\n' >> t/1/append");
    m.ok("echo '0 3' > t/groups/g/offsets");
    m.ok("echo '1 1' > t/groups/g/offsets");
    m.ok("cat t/0/by-offset/0 > /dev/null");
    let s = scrape(&m);
    for p in 0..2 {
        let labels = format!("partition={p},topic=t");
        assert_eq!(
            s[&format!("topicfs_log_end_offset{{{labels}}}")] as i64,
            m.end_offset("t", p)
        );
        assert_eq!(
            s[&format!("topicfs_log_start_offset{{{labels}}}")] as i64,
            m.read(&format!("t/{p}/log-start-offset"))
                .trim()
                .parse::<i64>()
                .unwrap()
        );
        assert_eq!(
            s[&format!("topicfs_log_size_bytes{{{labels}}}")] as u64,
            segment_bytes(&m, "t", p)
        );
        assert_eq!(s[&format!("topicfs_log_segments{{{labels}}}")], 1.0);
    }
    // Lag as groups/g/offsets shows it (`partition committed log-end lag`).
    let offsets = m.read("t/groups/g/offsets");
    let mut lags = 0;
    for line in offsets.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f[3] == "-" {
            continue;
        }
        let key = format!("topicfs_group_lag{{group=g,partition={},topic=t}}", f[0]);
        assert_eq!(s[&key] as i64, f[3].parse::<i64>().unwrap(), "{offsets}");
        lags += 1;
    }
    assert_eq!(lags, 2, "{offsets}");
    assert_eq!(
        s["topicfs_group_lag{group=g,partition=0,topic=t}"] as i64,
        10 - 3
    );
    // Counters: every record and byte appended since the daemon started (the log was empty).
    assert_eq!(s["topicfs_records_appended_total{topic=t}"], 16.0);
    assert_eq!(
        s["topicfs_bytes_appended_total{topic=t}"] as u64,
        segment_bytes(&m, "t", 0) + segment_bytes(&m, "t", 1)
    );
    assert!(s["topicfs_bytes_read_total{topic=t}"] as u64 >= segment_bytes(&m, "t", 0));
    assert_eq!(s["topicfs_waiting_readers"], 0.0);
    for name in [
        "topicfs_cleaner_runs_total",
        "topicfs_bytes_cleaned_total",
        "topicfs_retention_deleted_segments_total",
        "topicfs_recovered_partitions_total",
        "topicfs_producer_errors_total",
        "topicfs_consumer_errors_total",
    ] {
        assert!(s.contains_key(name), "{name} in {s:?}");
    }
    // Fresh at each open.
    m.ok("seq 1 5 >> t/0/append");
    let again = scrape(&m);
    assert_eq!(again["topicfs_log_end_offset{partition=0,topic=t}"], 15.0);
    assert_eq!(again["topicfs_records_appended_total{topic=t}"], 21.0);
    // `@` starts no topic name: the file hides none, and is not listed among the topics.
    m.fails_with("mkdir @metrics", "");
    assert!(!m.ok("ls").contains("@metrics"));
}

#[test]
fn metrics_waiting_readers_counts_a_follow_read() {
    let m = TestMount::start(&["--num-partitions", "1"]);
    m.ok("mkdir t");
    let mut child = Command::new("cat")
        .arg(m.path("t/0/follow/latest"))
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    crate::common::mount::wait_until("the follow read waits", || {
        scrape(&m)["topicfs_waiting_readers"] == 1.0
    });
    child.kill().unwrap();
    child.wait().unwrap();
}

/// Counters since the daemon started never go down: a topic removed and made again counts on
/// from what the removed one had counted.
#[test]
fn metrics_counters_do_not_go_down_when_a_topic_is_made_again() {
    let m = TestMount::start(&["--num-partitions", "2"]);
    m.ok(
        "mkdir t && printf 'a\\nb\\nc\\n' >> t/0/append && printf 'd\\ne\\nf\\ng\\n' >> t/1/append",
    );
    m.ok("cat t/0/by-offset/0 > /dev/null");
    let records = "topicfs_records_appended_total{topic=t}";
    let appended = "topicfs_bytes_appended_total{topic=t}";
    let read = "topicfs_bytes_read_total{topic=t}";
    let before = scrape(&m);
    assert_eq!(before[records], 7.0);
    assert!(before[appended] > 0.0 && before[read] > 0.0, "{before:?}");
    m.ok("rmdir t && mkdir t");
    let again = scrape(&m);
    for name in [records, appended, read] {
        assert_eq!(again[name], before[name], "{name}");
    }
    m.ok("echo h >> t/0/append");
    let after = scrape(&m);
    assert_eq!(after[records], 8.0);
    assert!(after[appended] > before[appended]);
    assert_eq!(after[read], before[read]);
}

/// `topicfs_fuse_transport{kind}` and the requests served over io_uring.
fn transport(m: &TestMount) -> (String, f64) {
    let s = scrape(m);
    let kinds: Vec<&String> = s
        .iter()
        .filter(|(k, v)| k.starts_with("topicfs_fuse_transport{") && **v == 1.0)
        .map(|(k, _)| k)
        .collect();
    assert_eq!(kinds.len(), 1, "one transport in use: {s:?}");
    let ring = s["topicfs_fuse_ring_requests_total"];
    (kinds[0].clone(), ring)
}

/// With `-o io_uring` the requests come over the rings (this kernel has the transport; as
/// root the daemon sets fuse.enable_uring when it is N): @metrics says so, and its count of
/// requests served over the rings grows by at least one a write and a lookup made.
#[test]
fn io_uring_carries_the_requests() {
    let m = TestMount::start(&["-o", "io_uring"]);
    assert_eq!(
        std::fs::read_to_string("/sys/module/fuse/parameters/enable_uring")
            .unwrap()
            .trim(),
        "Y"
    );
    m.ok("mkdir t");
    let (kind, before) = transport(&m);
    assert_eq!(kind, "topicfs_fuse_transport{kind=io_uring}");
    m.ok("for i in $(seq 1 50); do echo $i >> t/0/append; stat t/0/by-offset/$i > /dev/null; done");
    let (_, after) = transport(&m);
    // Each loop: open, write, flush, release of append, lookup of by-offset/N (and more).
    assert!(after - before >= 250.0, "{before} -> {after}");
    assert_eq!(m.read("t/0/by-offset/49"), "50\n");
    assert!(
        m.daemon_log().contains("FUSE requests come over io_uring"),
        "{}",
        m.daemon_log()
    );
    // Each queue's thread went on SCHED_IDLE where the daemon may leave it again: it is
    // there now, or it took its own policy back when kept waiting for its CPU.
    let rings = threads_named(m.pid(), "fuse-ring-").len();
    assert!(rings >= 1);
    let s = scrape(&m);
    let (aside, back) = (
        s["topicfs_fuse_rings_aside"],
        s["topicfs_fuse_ring_policy_back_total"],
    );
    assert!(aside <= rings as f64, "{aside} of {rings}");
    // The daemon runs as the tests do: with CAP_SYS_NICE it may leave SCHED_IDLE.
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let caps = status
        .lines()
        .find_map(|l| l.strip_prefix("CapEff:"))
        .map(|c| u64::from_str_radix(c.trim(), 16).unwrap())
        .unwrap();
    let sys_nice = caps & (1 << 23) != 0; // CAP_SYS_NICE
    if !sys_nice && m.daemon_log().contains("keep their scheduling policy") {
        assert_eq!(aside + back, 0.0);
    } else {
        assert!(aside + back >= rings as f64, "{aside} + {back} of {rings}");
    }
    // A stream read served on a ring starts the read-ahead threads: they run under the
    // process's policy, not the SCHED_IDLE of the ring's thread that started them. (A
    // relative start: a file the kernel caches is read ahead by the kernel instead.)
    m.ok("seq 1 300000 >> t/0/append && cat t/0/by-offset/earliest > /dev/null");
    let policies: Vec<String> = threads_named(m.pid(), "read-ahead-")
        .iter()
        .map(|stat| {
            stat.rsplit(')')
                .next()
                .unwrap()
                .split(' ')
                .nth(39)
                .unwrap()
                .to_string()
        })
        .collect();
    assert!(!policies.is_empty(), "no read-ahead thread");
    assert!(policies.iter().all(|p| p == "0"), "policies {policies:?}");
}

/// The stat lines of process `pid`'s threads whose name starts with `prefix`.
fn threads_named(pid: i32, prefix: &str) -> Vec<String> {
    std::fs::read_dir(format!("/proc/{pid}/task"))
        .unwrap()
        .filter_map(|t| {
            let dir = t.unwrap().path();
            let comm = std::fs::read_to_string(dir.join("comm")).ok()?;
            comm.starts_with(prefix)
                .then(|| std::fs::read_to_string(dir.join("stat")).ok())
                .flatten()
        })
        .collect()
}

/// Without the option the requests come over /dev/fuse (unless the test run asks every mount
/// for io_uring: TOPICFS_TEST_TRANSPORT=io_uring), and none over a ring.
#[test]
fn the_transport_is_the_one_asked_for() {
    let m = TestMount::start(&[]);
    m.ok("mkdir t && echo a >> t/0/append");
    let (kind, ring) = transport(&m);
    if std::env::var("TOPICFS_TEST_TRANSPORT").as_deref() == Ok("io_uring") {
        assert_eq!(kind, "topicfs_fuse_transport{kind=io_uring}");
        assert!(ring > 0.0);
    } else {
        assert_eq!(kind, "topicfs_fuse_transport{kind=dev_fuse}");
        assert_eq!(ring, 0.0);
        assert_eq!(scrape(&m)["topicfs_fuse_rings_aside"], 0.0);
    }
}

/// The start of each probe below: `t(name, f)` notes what `f` answers, or its errno's name.
const ANSWERS: &str = r#"
import os, errno
out = []
def t(name, f):
    try: out.append(f"{name} {f()}")
    except OSError as e: out.append(f"{name} {errno.errorcode[e.errno]}")
"#;

/// What a mount answers to the operations the io_uring dispatcher decodes itself, as plain
/// text: attributes (size, blocks, st_blksize, mode, nlink), statfs, TCGETS, lseek
/// (SEEK_DATA, SEEK_HOLE, SEEK_END), xattrs, access, the refused operations and their
/// errnos (mknod, symlink, link, fallocate, renameat2 flags), a write and its read back,
/// a poll, and a listing of 150 topics (three pages of entries) with its types.
const PROBE: &str = r#"
import select, ctypes
def st(p):
    s = os.stat(p); return (s.st_size, s.st_blocks, s.st_blksize, oct(s.st_mode), s.st_nlink)
for p in ["t", "t/0/append", "t/0/by-offset/0", "t/groups/g/records",
          "t/0/segments/00000000000000000000.log"]:
    t("stat " + p, lambda: st(p))
    if not os.path.isdir(p) and "append" not in p:
        fd = os.open(p, os.O_RDONLY)
        t(" isatty", lambda: os.isatty(fd))
        t(" data", lambda: os.lseek(fd, 0, os.SEEK_DATA))
        t(" hole", lambda: os.lseek(fd, 0, os.SEEK_HOLE))
        t(" end", lambda: os.lseek(fd, 0, os.SEEK_END))
        t(" pread", lambda: len(os.pread(fd, 1 << 20, 0)))
        os.close(fd)
s = os.statvfs(".")
out.append(f"statfs {s.f_bsize} {s.f_namemax}")
t("getxattr", lambda: os.getxattr("t/0/append", "user.x"))
t("listxattr", lambda: os.listxattr("t/0/append"))
t("setxattr", lambda: os.setxattr("t/0/append", "user.x", b"1"))
t("access", lambda: (os.access("t/0/by-offset/0", os.W_OK), os.access("t/0/append", os.W_OK)))
t("readlink", lambda: os.readlink("t/0/append"))
t("mknod", lambda: os.mknod("t/fifo", 0o600 | 0o10000))
t("symlink", lambda: os.symlink("x", "t/sl"))
t("link", lambda: os.link("t/0/append", "t/9"))
t("unlink", lambda: os.unlink("t/77"))
t("mkdir", lambda: os.mkdir("a" * 300))
fd = os.open("t/0/append", os.O_WRONLY | os.O_APPEND)
t("write", lambda: os.write(fd, b"x" * 200000 + b"\n"))
t("fallocate", lambda: os.posix_fallocate(fd, 0, 10))
t("chmod", lambda: os.chmod("t/0/append", 0o600))
os.close(fd)
t("read", lambda: len(open("t/0/by-offset/2", "rb").read()))
fd = os.open("t/0/follow/latest", os.O_RDONLY | os.O_NONBLOCK)
p = select.poll(); p.register(fd, select.POLLIN)
t("poll", lambda: p.poll(0))
t("nonblock", lambda: os.read(fd, 10))
os.close(fd)
libc = ctypes.CDLL(None, use_errno=True)
for flag in (1, 2, 4):
    r = libc.renameat2(-100, b"t", -100, b"u", flag)
    out.append(f"renameat2 {flag} {r} {errno.errorcode.get(ctypes.get_errno()) if r else ''}")
t("rename", lambda: os.rename("t/0", "t/1"))
with os.scandir(".") as it:
    out.append(str(sorted((e.name, e.is_dir()) for e in it)))
print("\n".join(out))
"#;

/// What a mount answers in each view's files, as plain text: `table/` (a key written, read,
/// truncated at open, a held `.name` renamed to a key, removed; the listing; a refused link),
/// a topic's maildir (a delivery through tmp/, a file created in new/, refusals), a group's
/// maildir (the records listed, read, taken to cur/ with a flag, the refused renames into
/// and out of it, a refused link), a group's `offsets` and `records` (busy while its maildir
/// has taken records), `@log` and `@metrics` (their modes), and the modes and sizes of all
/// of them.
const VIEWS: &str = r#"
def st(p):
    s = os.stat(p); return (s.st_size, oct(s.st_mode), s.st_nlink)
def put(p, data, mode="w"):
    with open(p, mode) as f: return f.write(data)
def get(p):
    with open(p) as f: return f.read()
def get_settled(p, want, tries=3000):
    import time
    # A close that wrote nothing leaves storing the empty value to the release, which the
    # kernel sends after close(2) returned: read until it is in (at most 30 s).
    for _ in range(tries):
        v = get(p)
        if v == want: return v
        time.sleep(0.01)
    return v
t("table write", lambda: put("v/table/k1", "one"))
t("table read", lambda: get("v/table/k1"))
t("table stat", lambda: st("v/table/k1"))
t("table held", lambda: put("v/table/.k2.swp", "two"))
t("table held stat", lambda: st("v/table/.k2.swp"))
t("table rename", lambda: os.rename("v/table/.k2.swp", "v/table/k2"))
t("table read2", lambda: get("v/table/k2"))
t("table truncate", lambda: put("v/table/k1", ""))
t("table read3", lambda: get_settled("v/table/k1", ""))
t("table unlink", lambda: os.unlink("v/table/k2"))
t("table ls", lambda: sorted(os.listdir("v/table")))
t("table link", lambda: os.link("v/table/k1", "v/table/k3"))
for d in ["v/maildir", "v/maildir/tmp", "v/maildir/new", "v/maildir/cur"]:
    t("stat " + d, lambda: st(d))
t("tmp write", lambda: put("v/maildir/tmp/m1", "Subject: a\n\nbody one\n"))
t("tmp stat", lambda: st("v/maildir/tmp/m1"))
t("deliver", lambda: os.rename("v/maildir/tmp/m1", "v/maildir/new/m1"))
t("new write", lambda: put("v/maildir/new/m2", "Subject: b\n\nbody two\n"))
t("cur write", lambda: put("v/maildir/cur/m3", "x"))
t("table to maildir", lambda: os.rename("v/table/k1", "v/maildir/new/k1"))
t("table ls2", lambda: sorted(os.listdir("v/table")))
g = "v/groups/g/maildir"
for d in [g, g + "/new", g + "/cur", g + "/tmp"]:
    t("stat " + d, lambda: st(d))
names = sorted(os.listdir(g + "/new"))
out.append(f"group new {names}")
for n in names:
    t("read " + n, lambda: get(g + "/new/" + n))
    t("stat " + n, lambda: st(g + "/new/" + n))
if names:
    t("take", lambda: os.rename(g + "/new/" + names[0], g + "/cur/" + names[0] + ":2,S"))
t("group cur", lambda: sorted(os.listdir(g + "/cur")))
t("group new2", lambda: sorted(os.listdir(g + "/new")))
t("into group", lambda: os.rename("v/table/m1", g + "/new/m1"))
t("link into group", lambda: os.link("v/table/m1", g + "/new/m4"))
t("out of group", lambda: os.rename(g + "/cur/" + names[0] + ":2,S", "v/table/x"))
t("group tmp write", lambda: put(g + "/tmp/x", "x"))
t("records", lambda: get("v/groups/g/records"))
t("offsets", lambda: get("v/groups/g/offsets"))
t("groups ls", lambda: sorted(os.listdir("v/groups/g")))
for p in ["@log", "@metrics"]:
    t("mode " + p, lambda: oct(os.stat(p).st_mode))
print("\n".join(out))
"#;

/// The io_uring transport answers every operation as /dev/fuse does: the same probes on a
/// mount of each give the same text (every view's files too).
#[test]
fn both_transports_answer_alike() {
    let setup = "mkdir t && printf 'a\\nb\\n' >> t/0/append && cat t/groups/g/records > /dev/null \
                 && for i in $(seq 1 150); do mkdir topic-with-a-long-name-$i; done";
    let dev = TestMount::start(&[]);
    dev.ok(setup);
    let ring = TestMount::start(&["-o", "io_uring"]);
    ring.ok(setup);
    let (_, before) = transport(&ring);
    let probe = [ANSWERS, PROBE].concat();
    let answered = ring.python(&probe, &[]);
    assert_eq!(dev.python(&probe, &[]), answered);
    dev.ok("mkdir v");
    ring.ok("mkdir v");
    let probe = [ANSWERS, VIEWS].concat();
    let views = ring.python(&probe, &[]);
    assert_eq!(dev.python(&probe, &[]), views);
    let (kind, after) = transport(&ring);
    assert_eq!(kind, "topicfs_fuse_transport{kind=io_uring}");
    assert!(after - before > 100.0, "{before} -> {after}");
    // The probe reached what it asks about (not only errors).
    assert!(answered.contains(" isatty True"), "{answered}");
    assert!(answered.contains("write 200001"), "{answered}");
    assert!(
        answered.contains("('topic-with-a-long-name-150', True)"),
        "{answered}"
    );
    // The views' probe reached them: a delivery, a take, a rename refused by the rule of
    // a group's maildir.
    assert!(views.contains("deliver None"), "{views}");
    assert!(views.contains("group cur ['0-0:2,S']"), "{views}");
    assert!(views.contains("into group EPERM"), "{views}");
}

/// Rings whose buffers cannot be had (an address-space limit here; strict overcommit
/// elsewhere) leave the mount on /dev/fuse with one log line saying why, where the daemon
/// used to abort. A CPU's ring reserves 512 MiB of address space (its entries' payloads),
/// so with two CPUs or more 800 MiB holds the daemon but not the rings.
#[test]
fn rings_without_memory_fall_back_to_dev_fuse() {
    let cpus = std::fs::read_to_string("/sys/devices/system/cpu/possible").unwrap();
    assert_ne!(
        cpus.trim(),
        "0",
        "this test needs two possible CPUs or more"
    );
    let m = TestMount::with(Options {
        args: vec!["-o".into(), "io_uring".into()],
        address_space: Some(800 << 20),
        ..Options::default()
    });
    m.ok("mkdir t && echo a >> t/0/append");
    assert_eq!(m.read("t/0/by-offset/0"), "a\n");
    let (kind, ring) = transport(&m);
    assert_eq!(kind, "topicfs_fuse_transport{kind=dev_fuse}");
    assert_eq!(ring, 0.0);
    let log = m.daemon_log();
    let why = "io_uring transport not used (no memory for the ring entries'";
    assert_eq!(log.matches(why).count(), 1, "{log}");
}

//! Consuming that every program can trust (docs/contract.md, "Consuming"): group readers and
//! follow files under fork, subprocess and dup, rebalances, bash's `while read`, O_NONBLOCK,
//! poll, and tree walks. Real programs (python3, bash, coreutils) through real mounts.

use std::collections::HashMap;
use std::process::{Child, Command, Output, Stdio};
use std::time::Duration;

use crate::common::mount::{TestMount, wait_until};

/// The IDLE reader started with `args`, and the first line it prints (the records it read).
fn idle_reader(m: &TestMount, args: &[&str]) -> (std::process::Child, String) {
    let mut r = py_command(m, "idle", IDLE)
        .args(args)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(r.stdout.as_mut().unwrap()),
        &mut first,
    )
    .unwrap();
    (r, first)
}

/// Writes `script` next to the mount and runs `python3` on it in the mountpoint (killed after
/// 30 s: a reader that hangs fails its test).
fn py_command(m: &TestMount, name: &str, script: &str) -> Command {
    let path = m.dir.path().join(format!("{name}.py"));
    std::fs::write(&path, script).unwrap();
    let mut cmd = Command::new("timeout");
    cmd.args(["-s", "KILL", "30", "python3"])
        .arg(&path)
        .current_dir(m.path(""));
    cmd
}

fn py(m: &TestMount, name: &str, script: &str) -> Output {
    py_command(m, name, script).output().expect("run python3")
}

/// A script run with `args` that must succeed: its standard output.
fn py_stdout(m: &TestMount, name: &str, script: &str, args: &[&str]) -> String {
    let out = py_command(m, name, script)
        .args(args)
        .output()
        .expect("run python3");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{name} {args:?}: {stdout} {}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

fn finish(m: &TestMount, child: Child) -> String {
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "reader failed ({}): {}\n--- daemon log (tail) ---\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr),
        crate::common::mount::tail(&m.daemon_log(), 30)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// Appends `lines` to `<topic>/<p>/append` in one write.
fn append(m: &TestMount, topic: &str, p: u32, lines: &[String]) {
    let body: String = lines.iter().map(|l| format!("{l}\n")).collect();
    std::fs::OpenOptions::new()
        .append(true)
        .open(m.path(&format!("{topic}/{p}/append")))
        .unwrap()
        .write_all_at_once(body.as_bytes());
}

trait WriteAll {
    fn write_all_at_once(self, data: &[u8]);
}

impl WriteAll for std::fs::File {
    fn write_all_at_once(mut self, data: &[u8]) {
        use std::io::Write;
        self.write_all(data).unwrap();
    }
}

/// Record `i` of partition `p`: `p<p>-<i:06>-` padded with x to `len` bytes.
fn record(p: u32, i: usize, len: usize) -> String {
    let head = format!("p{p}-{i:06}-");
    format!("{head}{}", "x".repeat(len - head.len()))
}

/// How many times each line occurs.
fn counts<'a>(lines: impl Iterator<Item = &'a str>) -> HashMap<&'a str, usize> {
    let mut c = HashMap::new();
    for l in lines {
        *c.entry(l).or_insert(0) += 1;
    }
    c
}

/// Python: a group reader's descriptor shared with children (subprocess.run, fork + exit) and
/// a dup closed, then another program opens the group.
const SHARED_DESCRIPTOR: &str = r#"
import os, subprocess, sys
fd = os.open('t/groups/g/records', os.O_RDONLY)
got = os.read(fd, 20)
subprocess.run(['true'])
pid = os.fork()
if pid == 0:
    os._exit(0)
os.waitpid(pid, 0)
os.close(os.dup(fd))
try:
    with open('t/groups/g/records', 'rb') as other:
        other.read()
    print('second reader opened', file=sys.stderr)
except OSError as e:
    print('second reader refused', e.errno, file=sys.stderr)
while True:
    b = os.read(fd, 65536)
    if not b:
        break
    got += b
os.close(fd)
sys.stdout.write(got.decode())
"#;

#[test]
fn item2_a_descriptor_shared_with_a_child_is_one_reader() {
    let m = TestMount::start(&[]);
    m.ok("mkdir t");
    let want: Vec<String> = (0..300).map(|i| record(0, i, 40)).collect();
    append(&m, "t", 0, &want);
    let out = py(&m, "shared", SHARED_DESCRIPTOR);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    // The reader is still the group's reader after the children's and the dup's closes.
    assert!(
        stderr.contains(&format!("second reader refused {}", libc::EBUSY)),
        "{stderr}"
    );
    let got = String::from_utf8(out.stdout).unwrap();
    assert_eq!(got.lines().collect::<Vec<_>>(), want);
    // Its last close committed everything it read.
    assert_eq!(m.read("t/groups/g/offsets"), "0 300 300 0\n");
    // A reader opening right after a close is not refused (the release comes after close).
    m.ok("echo more >> t/0/append");
    assert_eq!(
        m.ok("cat t/groups/g/records; cat t/groups/g/records"),
        "more\n"
    );
}

/// Python: a follow reader of a 2-partition topic whose descriptor a child and a dup share;
/// it prints what it reads for `secs` seconds.
const SHARED_FOLLOW: &str = r#"
import os, select, subprocess, sys, time
secs = float(sys.argv[1])
fd = os.open('t/groups/g/follow', os.O_RDONLY)
subprocess.run(['true'])
pid = os.fork()
if pid == 0:
    os._exit(0)
os.waitpid(pid, 0)
os.close(os.dup(fd))
sys.stderr.write('ready\n'); sys.stderr.flush()
p = select.poll()
p.register(fd, select.POLLIN)
got = b''
end = time.time() + secs
while time.time() < end:
    if p.poll(100):
        got += os.read(fd, 65536)
os.close(fd)
sys.stdout.write(got.decode())
"#;

#[test]
fn item2_a_follow_reader_whose_descriptor_a_child_shared_keeps_its_partitions() {
    let m = TestMount::start(&["--num-partitions", "2"]);
    m.ok("mkdir t");
    let mut a = py_command(&m, "follow_a", SHARED_FOLLOW);
    let mut a = a
        .arg("4")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Ready once the children exited and the dup was closed.
    let mut err = std::io::BufReader::new(a.stderr.take().unwrap());
    let mut line = String::new();
    std::io::BufRead::read_line(&mut err, &mut line).unwrap();
    assert_eq!(line, "ready\n");
    let mut b = crate::common::readers::spawn(&m, "exec timeout 3 cat t/groups/g/follow");
    std::thread::sleep(Duration::from_millis(500));
    let want: Vec<String> = (0..2)
        .flat_map(|p| (0..50).map(move |i| record(p, i, 30)))
        .collect();
    for p in 0..2 {
        append(&m, "t", p, &want[p as usize * 50..(p as usize + 1) * 50]);
    }
    let got_b = {
        let out = std::mem::take(&mut b.stdout);
        let mut s = String::new();
        std::io::Read::read_to_string(&mut out.unwrap(), &mut s).unwrap();
        b.wait().unwrap();
        s
    };
    a.stderr = Some(err.into_inner());
    let got_a = finish(&m, a);
    // Each record went to one reader: the two readers share the partitions.
    let all = counts(got_a.lines().chain(got_b.lines()));
    for w in &want {
        assert_eq!(
            all.get(w.as_str()),
            Some(&1),
            "{w}: a got {} lines, b {}",
            got_a.lines().count(),
            got_b.lines().count()
        );
    }
    assert!(
        !got_a.is_empty() && !got_b.is_empty(),
        "a: {got_a}\nb: {got_b}"
    );
}

/// Python: a line reader of `groups/g/follow` reading `size`-byte pieces for `secs` seconds
/// (os.read: every byte it gets is a byte the mount delivered).
const PIECES: &str = r#"
import os, select, sys, time, random
size, secs = int(sys.argv[1]), float(sys.argv[2])
fd = os.open('t/groups/g/follow', os.O_RDONLY)
p = select.poll()
p.register(fd, select.POLLIN)
got = b''
end = time.time() + secs
while time.time() < end:
    if p.poll(50):
        got += os.read(fd, random.randint(1, size))
        time.sleep(0.001)
os.close(fd)
sys.stdout.write(got.decode())
"#;

#[test]
fn item1_a_rebalance_never_glues_records() {
    let m = TestMount::start(&["--num-partitions", "2"]);
    m.ok("mkdir t");
    let n = 1500;
    let want: Vec<String> = (0..2)
        .flat_map(|p| (0..n).map(move |i| record(p, i, 120)))
        .collect();
    for p in 0..2u32 {
        append(&m, "t", p, &want[p as usize * n..(p as usize + 1) * n]);
    }
    // Reader A reads pieces that never line up with records; others join and leave while
    // it reads, each a rebalance that takes a partition from A and gives it back.
    let a = {
        let mut c = py_command(&m, "pieces", PIECES);
        c.args(["200", "6"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    std::thread::sleep(Duration::from_millis(300));
    let mut others = Vec::new();
    for _ in 0..8 {
        let mut c = py_command(&m, "pieces", PIECES);
        let child = c
            .args(["300", "0.4"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        others.push(finish(&m, child));
        std::thread::sleep(Duration::from_millis(100));
    }
    let got_a = finish(&m, a);
    // Every reader's lines are whole records; only a reader's last piece may end inside one
    // (it closed there; that record was not committed and another reader got it whole).
    let mut whole = Vec::new();
    for (who, got) in std::iter::once(&got_a).chain(&others).enumerate() {
        let mut lines: Vec<&str> = got.split_inclusive('\n').collect();
        if lines.last().is_some_and(|l| !l.ends_with('\n')) {
            let last = lines.pop().unwrap();
            assert!(
                want.iter().any(|w| w.starts_with(last)),
                "reader {who} ended in {last:?}, not the head of a record"
            );
        }
        for l in lines {
            let l = l.strip_suffix('\n').unwrap();
            assert!(
                l.len() == 120 && want.iter().any(|w| w == l),
                "reader {who} got a glued or cut line: {l:?}"
            );
            whole.push(l);
        }
    }
    // Read whole exactly once each (no reader crashed), every record of the topic.
    let c = counts(whole.into_iter());
    let twice: Vec<_> = c.iter().filter(|(_, n)| **n > 1).map(|(l, _)| *l).collect();
    assert!(twice.is_empty(), "read twice: {twice:?}");
    // What nobody read yet is left for the group.
    let rest = m.ok("timeout 2 cat t/groups/g/follow || true");
    let c2 = counts(c.keys().copied().chain(rest.lines()));
    for w in &want {
        assert_eq!(c2.get(w.as_str()), Some(&1), "{w}");
    }
    wait_until("group idle", || {
        m.sh("cat t/groups/g/records").status.success()
    });
}

#[test]
fn item4_bash_while_read_reads_every_line_and_commits_what_it_kept() {
    let m = TestMount::start(&[]);
    m.ok("mkdir t");
    let want: Vec<String> = (0..300).map(|i| record(0, i, 50)).collect();
    append(&m, "t", 0, &want);
    // Ten lines, then the loop leaves: only those ten are committed.
    let ten = m.ok(
        "exec bash -c 'n=0; while read -r l; do echo \"$l\"; n=$((n+1)); \
         [ $n = 10 ] && break; done < t/groups/g/records'",
    );
    assert_eq!(ten.lines().collect::<Vec<_>>(), want[..10]);
    assert_eq!(m.read("t/groups/g/offsets"), "0 10 300 290\n");
    // The rest, every line, by a loop that reads to the end.
    let rest = m.ok("exec bash -c 'while read -r l; do echo \"$l\"; done < t/groups/g/records'");
    assert_eq!(rest.lines().collect::<Vec<_>>(), want[10..]);
    assert_eq!(m.read("t/groups/g/offsets"), "0 300 300 0\n");
    // The kernel keeps the file position (`head` and bash seek to where they stopped); a
    // read before the last record delivered is refused, as on a pipe.
    append(&m, "t", 0, &want[..2]);
    let out = m.ok("exec python3 -c \"import os
fd = os.open('t/groups/g/records', os.O_RDONLY)
a = os.read(fd, 4096)
print(os.lseek(fd, 0, os.SEEK_CUR) == len(a))
b = os.read(fd, 4096)
os.lseek(fd, 0, os.SEEK_SET)
try:
    os.read(fd, 4096); print('read again')
except OSError as e:
    print(e.errno)\"");
    assert_eq!(out, format!("True\n{}\n", libc::ESPIPE));
    assert_eq!(m.read("t/groups/g/offsets"), "0 302 302 0\n");
}

/// Python: reads `path` opened with O_NONBLOCK until EAGAIN, then waits in poll for one more
/// record (`t/0/append` gets it from a child), and reads that.
const NONBLOCK: &str = r#"
import errno, os, select, subprocess, sys
path = sys.argv[1]
fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
got = b''
while True:
    try:
        b = os.read(fd, 65536)
    except BlockingIOError as e:
        assert e.errno == errno.EAGAIN
        break
    assert b, 'EOF from a follow file'
    got += b
print('before', got.decode().split())
subprocess.run(['sh', '-c', 'sleep 0.3; echo late >> t/0/append'])
p = select.poll()
p.register(fd, select.POLLIN)
assert p.poll(30000), 'poll did not report the new record'
print('after', os.read(fd, 65536).decode().split())
try:
    os.read(fd, 65536)
    print('read did not fail')
except BlockingIOError:
    print('EAGAIN again')
"#;

/// Python: edge-triggered epoll (as tokio and mio use it) on `path` opened with O_NONBLOCK:
/// each round appends one record, waits for an event and reads until EAGAIN. An edge comes
/// only with a wakeup, so each new record must notify, also after the file was readable.
const EPOLL_ET: &str = r#"
import os, select, subprocess, sys
fd = os.open(sys.argv[1], os.O_RDONLY | os.O_NONBLOCK)
def drain():
    got = b''
    while True:
        try:
            b = os.read(fd, 65536)
        except BlockingIOError:
            return got.decode().split()
        assert b, 'EOF from a follow file'
        got += b
ep = select.epoll()
ep.register(fd, select.EPOLLIN | select.EPOLLET)
print('before', drain(), flush=True)
for i in range(4):
    subprocess.run(['sh', '-c', f'echo x{i} >> t/0/append'])
    print('event', bool(ep.poll(5.0)), 'read', drain(), flush=True)
"#;

#[test]
fn item5_edge_triggered_epoll_is_told_of_every_new_record() {
    let m = TestMount::start(&[]);
    m.ok("mkdir t && printf 'a\\n' >> t/0/append");
    for path in ["t/0/follow/latest", "t/groups/g/follow"] {
        let stdout = py_stdout(&m, "epoll_et", EPOLL_ET, &[path]);
        let rounds: Vec<&str> = stdout.lines().skip(1).collect();
        let want: Vec<String> = (0..4)
            .map(|i| format!("event True read ['x{i}']"))
            .collect();
        assert_eq!(rounds, want, "{path}: {stdout}");
    }
}

#[test]
fn item5_o_nonblock_read_at_the_log_end_is_eagain() {
    let m = TestMount::start(&[]);
    m.ok("mkdir t && printf 'a\\nb\\n' >> t/0/append");
    for (path, before) in [
        ("t/0/follow/earliest", "['a', 'b']"),
        ("t/groups/g/follow", "['a', 'b', 'late']"),
    ] {
        let stdout = py_stdout(&m, "nonblock", NONBLOCK, &[path]);
        assert!(stdout.starts_with(&format!("before {before}")), "{stdout}");
        assert!(stdout.contains("after ['late']"), "{path}: {stdout}");
        assert!(stdout.ends_with("EAGAIN again\n"), "{path}: {stdout}");
    }
}

/// Python: a group follow reader that reads the bytes of `n` records, then waits: in
/// `select` (`how` = select) or elsewhere (sleep), for `secs` seconds.
const IDLE: &str = r#"
import os, select, sys, time
n, how, secs = int(sys.argv[1]), sys.argv[2], float(sys.argv[3])
fd = os.open('t/groups/g/follow', os.O_RDONLY)
got = b''
while got.count(b'\n') < n:
    got += os.read(fd, 8 * (n - got.count(b'\n')))
print(got.count(b'\n'), flush=True)
if how == 'select':
    select.select([fd], [], [], secs)
else:
    time.sleep(secs)
os.close(fd)
"#;

#[test]
fn item6_an_idle_reader_gets_its_delivered_records_committed() {
    let m = TestMount::start(&[]);
    m.ok("mkdir t");
    // Records of 8 bytes with the newline.
    let want: Vec<String> = (0..20).map(|i| format!("rec-{i:03}")).collect();
    append(&m, "t", 0, &want[..10]);
    // In select at the log end: committed as the reader starts to wait.
    let (mut r, first) = idle_reader(&m, &["10", "select", "25"]);
    assert_eq!(first, "10\n");
    // Once it waits in select (its poll answered), the commit is made: no time asserted.
    wait_until("the reader waiting in select", || in_select(&r));
    assert_eq!(m.read("t/groups/g/offsets"), "0 10 10 0\n");
    // `timeout` passes SIGTERM on to the reader.
    crate::common::readers::kill(&r, libc::SIGTERM);
    r.wait().unwrap();
    // Busy elsewhere with records left unread: committed within the 5 s interval.
    append(&m, "t", 0, &want[10..]);
    // It sleeps 25 s: a commit seen within 20 s is the interval's, not its close's.
    let (mut r, first) = idle_reader(&m, &["5", "sleep", "25"]);
    assert_eq!(first, "5\n");
    let start = std::time::Instant::now();
    while m.read("t/groups/g/offsets") != "0 15 20 5\n" {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "an idle reader's records not committed: {}",
            m.read("t/groups/g/offsets")
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    // `timeout` passes SIGTERM on to the reader.
    crate::common::readers::kill(&r, libc::SIGTERM);
    r.wait().unwrap();
}

/// Whether the Python under `timeout` (the child of `r`) sleeps in select(2).
fn in_select(r: &std::process::Child) -> bool {
    let pid = r.id();
    let children =
        std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children")).unwrap_or_default();
    children.split_whitespace().any(|c| {
        // Asleep in select, its poll of the file answered (not waiting for the daemon).
        std::fs::read_to_string(format!("/proc/{c}/wchan"))
            .is_ok_and(|w| w.starts_with("poll_schedule_timeout"))
    })
}

#[test]
fn item11_walking_the_tree_never_consumes() {
    let m = TestMount::start(&["--num-partitions", "2"]);
    m.ok("mkdir t && printf 'a\\nb\\n' >> t/0/append");
    assert_eq!(m.ok("cat t/groups/g/records"), "a\nb\n");
    m.ok("printf 'needle\\nc\\n' >> t/1/append && echo d >> t/0/append");
    let before = m.read("t/groups/g/offsets");
    // `ls groups/` lists the groups; a group lists what does not consume.
    assert_eq!(m.ok("ls t/groups"), "g\n");
    assert_eq!(m.ok("ls t/groups/g"), "maildir\noffsets\n");
    let dest = m.dir.path().join("copy");
    for walk in [
        format!("cp -r t {}", dest.display()),
        "grep -r needle t".to_string(),
        "tar cf /dev/null t".to_string(),
        "find t -type f -exec cat {} +".to_string(),
        "du -a t".to_string(),
    ] {
        let out = m.sh(&format!("timeout -s KILL 20 {walk}"));
        assert_ne!(out.status.code(), None, "`{walk}` hung and was killed");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            !stderr.contains("records") && !stderr.contains("follow"),
            "`{walk}`: {stderr}"
        );
        assert_eq!(m.read("t/groups/g/offsets"), before, "`{walk}` consumed");
    }
    // The record files still open by name.
    assert_eq!(m.ok("cat t/groups/g/records | sort"), "c\nd\nneedle\n");
}

/// Python: writes of lines around the largest one a topic with the default
/// max.message.bytes (1048588) stores, with what each write returned or its errno. The
/// buffers are placed in pages (mmap) as given: the kernel cuts a write into requests of at
/// most 1 MiB at page boundaries.
const LONG_LINES: &str = r#"
import mmap, os
def write(data, at=0):
    buf = mmap.mmap(-1, at + len(data))
    buf[at:] = data
    fd = os.open('t/0/append', os.O_WRONLY | os.O_APPEND)
    try:
        r = os.write(fd, memoryview(buf)[at:])
    except OSError as e:
        r = 'errno %d' % e.errno
    try:
        os.close(fd)
    except OSError as e:
        r = '%s, close errno %d' % (r, e.errno)
    return r
# The largest line: 61 bytes of batch header, 11 of record around the value.
print(write(b'y' * 1048516 + b'\n'))
print(write(b'y' * 1048517 + b'\n'))
# Where Python puts a new 2 MB bytes object: 48 bytes into a page (the first request then
# holds 1048528 bytes of the line).
print(write(b'y' * 2000000 + b'\n', 48))
print(write(b'y' * 2000000 + b'\n'))
print(write(b'a\n' + b'y' * 2000000 + b'\n'))
"#;

#[test]
fn item12_a_write_of_a_line_that_can_never_be_stored_is_emsgsize() {
    let m = TestMount::start(&[]);
    m.ok("mkdir t");
    let stdout = py_stdout(&m, "long_lines", LONG_LINES, &[]);
    let emsgsize = format!("errno {}", libc::EMSGSIZE);
    assert_eq!(
        stdout.lines().collect::<Vec<_>>(),
        ["1048517", &emsgsize, &emsgsize, &emsgsize, "2"],
        "{}",
        crate::common::mount::tail(&m.daemon_log(), 20)
    );
    // Stored: the largest line, and the line before the one too long.
    assert_eq!(m.end_offset("t", 0), 2);
    assert_eq!(m.ok("tail -c 2 t/0/by-offset/1"), "a\n");
}

#[test]
fn item3_commits_die_with_their_topic() {
    let mut m = TestMount::start(&[]);
    m.ok("mkdir t && printf 'a\\nb\\n' >> t/0/append");
    assert_eq!(m.ok("cat t/groups/g/records"), "a\nb\n");
    assert_eq!(m.read("t/groups/g/offsets"), "0 2 2 0\n");
    m.ok("rmdir t && mkdir t && printf 'new\\n' >> t/0/append");
    // The new topic has no commits: its first record is read.
    assert_eq!(m.ok("ls t/groups"), "");
    assert_eq!(m.read("t/groups/g/offsets"), "0 - 1 -\n");
    // And the deletion is in __consumer_offsets (tombstones): a remount loads no commit.
    m.unmount();
    m.mount();
    assert_eq!(m.read("t/groups/g/offsets"), "0 - 1 -\n");
    assert_eq!(m.ok("cat t/groups/g/records"), "new\n");
}

#[test]
fn item8_consumer_offsets_is_guarded() {
    let m = TestMount::start(&[]);
    m.ok("mkdir t && echo a >> t/0/append && cat t/groups/g/records");
    let o = "__consumer_offsets";
    m.fails_with(&format!("rmdir {o}"), "Operation not permitted");
    assert_eq!(m.read("t/groups/g/offsets"), "0 1 1 0\n");
    m.fails_with(
        &format!("/bin/echo cleanup.policy=delete > {o}/config"),
        "Invalid argument",
    );
    m.fails_with(
        &format!("/bin/echo 60 > {o}/partitions"),
        "Operation not permitted",
    );
    assert_eq!(m.read(&format!("{o}/partitions")), "50\n");
    // Reading it as a group, records and follow, writes nothing to it.
    let ends = |m: &TestMount| -> Vec<i64> { (0..50).map(|p| m.end_offset(o, p)).collect() };
    let before = ends(&m);
    // A commit's value holds its time in binary, which may hold a newline byte: the records
    // are counted as JSON Lines.
    let got = m.ok(&format!(
        "cat {o}/groups/reader/records > /dev/null && cat {o}/groups/reader/records.jsonl | wc -l"
    ));
    assert_eq!(got.trim(), "1");
    m.ok(&format!(
        "timeout 3 cat {o}/groups/reader/follow > /dev/null || true"
    ));
    assert_eq!(ends(&m), before);
    assert_eq!(m.ok(&format!("ls {o}/groups")), "");
}

#[test]
fn item7_partitions_added_while_a_follow_reader_runs_reach_it() {
    let m = TestMount::start(&[]);
    m.ok("mkdir t && echo p0-a >> t/0/append");
    // A group's follow reader, and a whole-topic one (no group).
    let mut r = crate::common::readers::spawn(&m, "exec cat t/groups/g/follow");
    let mut w = crate::common::readers::spawn(&m, "exec cat t/follow/earliest");
    let readers = [
        crate::common::readers::lines_of(&mut r),
        crate::common::readers::lines_of(&mut w),
    ];
    for lines in &readers {
        assert_eq!(
            crate::common::readers::next_line(lines, Duration::from_secs(30)).as_deref(),
            Some("p0-a")
        );
    }
    m.ok("echo 3 > t/partitions && echo p2-a >> t/2/append && echo p1-a >> t/1/append");
    for (lines, who) in readers.iter().zip(["group", "whole topic"]) {
        let mut got: Vec<String> = (0..2)
            .filter_map(|_| crate::common::readers::next_line(lines, Duration::from_secs(30)))
            .collect();
        got.sort();
        assert_eq!(got, ["p1-a", "p2-a"], "{who}");
    }
    for mut c in [r, w] {
        crate::common::readers::kill(&c, libc::SIGTERM);
        crate::common::readers::exits_within(&mut c, Duration::from_secs(30));
    }
    assert_eq!(m.read("t/groups/g/offsets"), "0 1 1 0\n1 1 1 0\n2 1 1 0\n");
}

/// Python: `poll` on a whole-topic follow file that has read everything, then a partition is
/// added and written to: the poller is told (the kernel polls again over the new partition).
const POLL_NEW_PARTITION: &str = r#"
import os, select, subprocess, time
fd = os.open('t/follow/earliest', os.O_RDONLY | os.O_NONBLOCK)
p = select.poll()
p.register(fd, select.POLLIN)
assert p.poll(30000), 'the first record'
print('first', os.read(fd, 65536).decode().split(), flush=True)
print('idle', p.poll(200), flush=True)
subprocess.run(['sh', '-c', 'echo 2 > t/partitions && echo p1-a >> t/1/append'])
# The partition is taken (within about a second; the bound leaves room for a loaded machine).
print('told', bool(p.poll(30000)), flush=True)
print('read', os.read(fd, 65536).decode().split(), flush=True)
"#;

#[test]
fn item7_a_poller_of_a_whole_topic_follow_file_is_told_of_a_new_partition() {
    let m = TestMount::start(&[]);
    m.ok("mkdir t && echo p0-a >> t/0/append");
    let stdout = py_stdout(&m, "poll_new_partition", POLL_NEW_PARTITION, &[]);
    assert_eq!(
        stdout, "first ['p0-a']\nidle []\ntold True\nread ['p1-a']\n",
        "{stdout}"
    );
}

#[test]
fn item10_any_kafka_group_id_is_listed_and_opens() {
    let mut m = TestMount::start(&[]);
    m.ok("mkdir t && printf 'a\\nb\\n' >> t/0/append");
    // (name in groups/, the group id it stands for)
    let groups = [
        ("sp ace", "sp ace"),
        ("grün:x", "grün:x"),
        ("a%2Fb", "a/b"),
        ("%", ""),
        ("50%25", "50%"),
        ("%2E", "."),
        ("%2E%2E", ".."),
    ];
    for (name, _) in groups {
        assert_eq!(
            m.ok(&format!("head -n 1 't/groups/{name}/records'")),
            "a\n",
            "{name}"
        );
    }
    let mut names: Vec<&str> = groups.iter().map(|(n, _)| *n).collect();
    names.sort();
    let listed = m.ok("ls -a t/groups | LC_ALL=C sort");
    let mut want = vec![".", ".."];
    want.extend(names.iter());
    want.sort();
    assert_eq!(listed.lines().collect::<Vec<_>>(), want);
    // A name that is no group's, or not the one way a group is named.
    m.fails_with("ls t/groups/bad%name", "No such file or directory");
    m.fails_with("ls t/groups/a%2fb", "No such file or directory");
    m.fails_with("ls t/groups/%41", "No such file or directory");
    // The commits are the group ids' own (Kafka's records): they survive a remount. `head
    // -n 1` used one record: one is committed.
    m.unmount();
    m.mount();
    for (name, _) in groups {
        assert_eq!(
            m.read(&format!("t/groups/{name}/offsets")),
            "0 1 2 1\n",
            "{name}"
        );
    }
    let dir = m.partition_dir(
        "__consumer_offsets",
        topicfs::consumer_offsets::partition_for("a/b", 50),
    );
    // An OffsetCommit key: version, then the group as an int16-length string.
    let seen = crate::common::decode::decode_dir_records(&dir)
        .iter()
        .filter_map(|r| r.key.as_ref())
        .any(|key| key.get(2..7) == Some(b"\x00\x03a/b"));
    assert!(seen, "no commit of group \"a/b\" in {}", dir.display());
}

#[test]
fn item9_reading_a_group_needs_the_permission_to_reset_it() {
    use std::os::unix::fs::PermissionsExt;
    let m = TestMount::start(&["--allow-other"]);
    // The mountpoint's temp dir is root's 0700: let the other user reach the mountpoint.
    std::fs::set_permissions(m.dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    m.ok("mkdir t && printf 'a\\nb\\n' >> t/0/append && echo 0 1 > t/groups/g/offsets");
    assert_eq!(
        m.ok("stat -c %a t/groups/g/offsets t/groups/g/records t/groups/g/follow.jsonl"),
        "644\n400\n400\n"
    );
    let nobody = |script: &str| crate::common::mount::as_nobody(&m.path(""), script);
    // Another user sees the group's commits, but neither resets nor reads it.
    let out = nobody("cat t/groups/g/offsets");
    assert!(out.status.success(), "{out:?}");
    assert_eq!(String::from_utf8_lossy(&out.stdout), "0 1 2 1\n");
    for script in [
        "echo latest > t/groups/g/offsets",
        "cat t/groups/g/records",
        "cat t/groups/g/records.jsonl",
        "timeout 2 cat t/groups/g/follow",
        "timeout 2 cat t/groups/g/follow.jsonl",
    ] {
        let out = nobody(script);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            !out.status.success() && err.contains("Permission denied"),
            "`{script}` as another user: {err}"
        );
    }
    assert_eq!(m.read("t/groups/g/offsets"), "0 1 2 1\n");
    // The owner reads it.
    assert_eq!(m.ok("cat t/groups/g/records"), "b\n");
}

/// Python: the group soak. A producer appends to every partition (the topic grows from 2 to
/// 3 partitions midway) while readers of one group open `follow`, read random sizes, fork
/// children that exit, close dups, and close, 3 at a time for `secs` seconds; a last reader
/// drains the rest. Each reader's bytes are checked: whole records only (a reader's last
/// bytes may be the head of one), each partition in order; every record read whole at least
/// once, and none twice (nobody crashed).
const SOAK: &str = r#"
import os, random, select, sys, threading, time
secs = float(sys.argv[1])
random.seed(int(sys.argv[2]))
produced = {}
stop = threading.Event()

def producer():
    seq = {}
    grown = False
    start = time.time()
    while not stop.is_set():
        if not grown and time.time() - start > secs / 2:
            with open('t/partitions', 'w') as f:
                f.write('3\n')
            grown = True
        parts = 3 if grown else 2
        p = random.randrange(parts)
        n = random.randint(1, 20)
        lines = []
        for _ in range(n):
            i = seq.get(p, 0)
            seq[p] = i + 1
            line = 'p%d-%06d-' % (p, i) + 'x' * random.randint(0, 150)
            produced[line] = (p, i)
            lines.append(line + '\n')
        fd = os.open('t/%d/append' % p, os.O_WRONLY | os.O_APPEND)
        os.write(fd, ''.join(lines).encode())
        os.close(fd)
        time.sleep(random.uniform(0.001, 0.02))

def reader(out, secs, drain=False):
    fd = os.open('t/groups/g/follow', os.O_RDONLY)
    poll = select.poll()
    poll.register(fd, select.POLLIN)
    got = []
    end = time.time() + secs
    idle_since = time.time()
    while time.time() < end:
        if not poll.poll(50):
            if drain and time.time() - idle_since > 2:
                break
            continue
        got.append(os.read(fd, random.randint(1, 400)))
        idle_since = time.time()
        r = random.random()
        if r < 0.02:
            pid = os.fork()
            if pid == 0:
                os._exit(0)
            os.waitpid(pid, 0)
        elif r < 0.04:
            os.close(os.dup(fd))
    os.close(fd)
    out.append(b''.join(got))

threads = [threading.Thread(target=producer)]
threads[0].start()
outs = []
start = time.time()
active = []
while time.time() - start < secs:
    active = [t for t in active if t.is_alive()]
    while len(active) < 3:
        t = threading.Thread(target=reader, args=(outs, random.uniform(0.3, 3)))
        t.start()
        active.append(t)
    time.sleep(random.uniform(0.05, 0.4))
stop.set()
threads[0].join()
for t in active:
    t.join()
reader(outs, 30, drain=True)

whole = {}
for who, data in enumerate(outs):
    text = data.decode()
    lines = text.split('\n')
    last = lines.pop()
    assert last == '' or any(l.startswith(last) for l in produced), \
        'reader %d ended in %r, not the head of a record' % (who, last)
    seen = {}
    for l in lines:
        assert l in produced, 'reader %d got a glued or cut line %r' % (who, l)
        p, i = produced[l]
        assert seen.get(p, -1) < i, 'reader %d: %r out of order' % (who, l)
        seen[p] = i
        whole[l] = whole.get(l, 0) + 1
missing = [l for l in produced if l not in whole]
twice = [l for l, n in whole.items() if n > 1]
assert not missing, '%d records never read whole, e.g. %r' % (len(missing), missing[:3])
assert not twice, '%d records read twice, e.g. %r' % (len(twice), twice[:3])
print(len(outs), 'readers', len(produced), 'records')
"#;

#[test]
fn item13_group_soak_every_record_whole_and_once() {
    let m = TestMount::start(&["--num-partitions", "2"]);
    m.ok("mkdir t");
    let seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
        % 1000;
    let out = py_command(&m, "soak", SOAK)
        .args(["20", &seed.to_string()])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "soak (seed {seed}) failed: {}{}\n--- daemon log (tail) ---\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
        crate::common::mount::tail(&m.daemon_log(), 30)
    );
    let summary = String::from_utf8_lossy(&out.stdout);
    eprintln!("soak (seed {seed}): {summary}");
    let readers: usize = summary.split(' ').next().unwrap().parse().unwrap();
    assert!(readers > 10, "{summary}");
    // Nothing is left for the group.
    assert!(
        m.read("t/groups/g/offsets")
            .lines()
            .all(|l| l.ends_with(" 0")),
        "{}",
        m.read("t/groups/g/offsets")
    );
}

/// Python: reader A of a 2-partition topic whose records are all in partition 1: it reads 5
/// bytes (inside the first record), lets another reader join (the test starts it on the
/// `joined` line), stays idle `secs` seconds, then reads on for 1 s.
const STALLED: &str = r#"
import os, select, sys, time
secs = float(sys.argv[1])
fd = os.open('t/groups/g/follow', os.O_RDONLY)
got = os.read(fd, 5)
print('inside', flush=True)
sys.stdin.readline()
time.sleep(secs)
p = select.poll()
p.register(fd, select.POLLIN)
end = time.time() + 1
while time.time() < end:
    if p.poll(100):
        got += os.read(fd, 65536)
os.close(fd)
print(got.decode(), end='')
"#;

#[test]
fn item1_a_reader_stopped_inside_a_record_gives_its_partition_up_after_a_while() {
    use std::io::{BufRead, Write};
    let m = TestMount::start(&["--num-partitions", "2"]);
    m.ok("mkdir t");
    let want: Vec<String> = (0..3).map(|i| record(1, i, 40)).collect();
    append(&m, "t", 1, &want);
    // A stays idle 25 s: B's records within 20 s come from its partition given up.
    let mut a = py_command(&m, "stalled", STALLED)
        .arg("25")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = std::io::BufReader::new(a.stdout.take().unwrap());
    let mut line = String::new();
    out.read_line(&mut line).unwrap();
    assert_eq!(line, "inside\n");
    // B joins: the range assignor gives it partition 1, which A is inside a record of.
    let mut b = crate::common::readers::spawn(&m, "exec cat t/groups/g/follow");
    let lines = crate::common::readers::lines_of(&mut b);
    writeln!(a.stdin.as_mut().unwrap()).unwrap();
    let start = std::time::Instant::now();
    // Held while A may finish its line, then B's: from the last commit, the record whole.
    assert_eq!(
        crate::common::readers::next_line(&lines, Duration::from_secs(2)),
        None,
        "partition 1 moved while A was inside a record of it"
    );
    let got: Vec<String> = (0..3)
        .filter_map(|_| crate::common::readers::next_line(&lines, Duration::from_secs(30)))
        .collect();
    assert_eq!(got, want, "after {:?}", start.elapsed());
    assert!(
        start.elapsed() < Duration::from_secs(20),
        "{:?}",
        start.elapsed()
    );
    // A got the rest of its line, nothing glued to it, and nothing of partition 1 after it.
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut out, &mut rest).unwrap();
    a.wait().unwrap();
    assert_eq!(rest, format!("{}\n", want[0]));
    crate::common::readers::kill(&b, libc::SIGTERM);
    crate::common::readers::exits_within(&mut b, Duration::from_secs(30));
    assert_eq!(m.read("t/groups/g/offsets"), "0 0 0 0\n1 3 3 0\n");
}

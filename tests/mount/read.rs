//! Reading through the mount (docs/contract.md): `by-offset/N` and `by-time/T` stream the
//! records from the start record to the log end as it was at open; ENOENT for names that do
//! not open, never cached; starts inside a batch and inside a compressed batch. Real mounts.

use std::io::{Read, Seek, SeekFrom};

use crate::common::decode::batches;
use crate::common::mount::TestMount;

fn input(m: &TestMount, name: &str, content: &str) -> String {
    let p = m.dir.path().join(name);
    std::fs::write(&p, content).unwrap();
    p.display().to_string()
}

/// Partition 0 of topic `t` holding records "r0".."r19" in four batches of five.
fn twenty_records(m: &TestMount) {
    m.ok("mkdir t");
    for b in 0..4 {
        let lines: String = (b * 5..b * 5 + 5).map(|i| format!("r{i}\n")).collect();
        let f = input(m, &format!("batch{b}"), &lines);
        m.ok(&format!("cat {f} >> t/0/append"));
    }
    assert_eq!(m.end_offset("t", 0), 20);
}

/// How many `.log` files `t/0/segments/` lists.
fn log_segments(m: &TestMount) -> u32 {
    m.ok("ls t/0/segments | grep -c '\\.log$'")
        .trim()
        .parse()
        .unwrap()
}

fn records(from: usize, to: usize) -> String {
    (from..to).map(|i| format!("r{i}\n")).collect()
}

#[test]
fn by_offset_streams_from_the_start_record_to_the_end() {
    let m = TestMount::start(&[]);
    twenty_records(&m);
    assert_eq!(m.read("t/0/by-offset/0"), records(0, 20));
    // 7 sits in the middle of the second batch.
    assert_eq!(m.ok("head -n 1 t/0/by-offset/7"), "r7\n");
    assert_eq!(m.ok("head -n 3 t/0/by-offset/5"), records(5, 8));
    assert_eq!(m.read("t/0/by-offset/17"), records(17, 20));
    assert_eq!(m.ok("tail -n 2 t/0/by-offset/0"), records(18, 20));
    assert_eq!(m.ok("wc -l < t/0/by-offset/0").trim(), "20");
    assert_eq!(m.ok("wc -l < t/0/by-offset/19").trim(), "1");
    // The log end is an empty file; past it nothing opens.
    assert_eq!(m.read("t/0/by-offset/20"), "");
    m.fails_with("cat t/0/by-offset/21", "No such file or directory");
    for bad in [
        "abc",
        "--1",
        "+3",
        "0x10",
        "99999999999999999999",
        "1.0",
        "' 1'",
    ] {
        m.fails_with(
            &format!("cat t/0/by-offset/{bad}"),
            "No such file or directory",
        );
    }
    assert_eq!(m.ok("ls t/0/by-offset"), "");
    // The listing stays empty after lookups.
    assert_eq!(m.ok("ls -a t/0/by-offset"), ".\n..\n");
}

#[test]
fn a_failed_lookup_is_not_cached() {
    let m = TestMount::start(&[]);
    m.ok("mkdir t");
    m.fails_with("cat t/0/by-offset/2", "No such file or directory");
    m.fails_with("test -e t/0/by-offset/2 || cat t/0/by-offset/2", "No such");
    m.ok("echo a >> t/0/append; echo b >> t/0/append; echo c >> t/0/append");
    assert_eq!(m.read("t/0/by-offset/2"), "c\n");
    m.ok("test -e t/0/by-offset/3");
    m.fails_with("cat t/0/by-offset/4", "No such file or directory");
    m.ok("echo d >> t/0/append; echo e >> t/0/append");
    assert_eq!(m.read("t/0/by-offset/4"), "e\n");
}

#[test]
fn an_open_file_ends_at_the_log_end_of_its_open() {
    let m = TestMount::start(&[]);
    twenty_records(&m);
    // A stream (the last ten records at open) and a file the kernel caches, read without
    // asking their size, and the cached file again, asked its size (read_to_string asks
    // fstat first), which is its length now.
    let mut stream = std::fs::File::open(m.path("t/0/by-offset/-10")).unwrap();
    let mut cached = std::fs::File::open(m.path("t/0/by-offset/10")).unwrap();
    let mut sized = std::fs::File::open(m.path("t/0/by-offset/10")).unwrap();
    m.ok("echo late >> t/0/append");
    for f in [&mut stream, &mut cached] {
        let mut s = Vec::new();
        let mut buf = [0u8; 7];
        loop {
            let n = f.read(&mut buf).unwrap();
            if n == 0 {
                break;
            }
            s.extend_from_slice(&buf[..n]);
        }
        assert_eq!(String::from_utf8(s).unwrap(), records(10, 20));
    }
    let mut s = String::new();
    sized.read_to_string(&mut s).unwrap();
    assert_eq!(s, records(10, 20) + "late\n");
    // A seek back rereads the same records: the stream still ends where the open ended;
    // the cached file, read to its end, grows as the log did.
    for (f, tail) in [(&mut stream, ""), (&mut cached, "late\n")] {
        f.seek(SeekFrom::Start(4)).unwrap();
        let mut again = String::new();
        f.read_to_string(&mut again).unwrap();
        assert_eq!(again, records(10, 20)[4..].to_string() + tail);
    }
    // A fresh open sees the new record.
    assert_eq!(m.ok("tail -n 1 t/0/by-offset/10"), "late\n");
    assert_eq!(m.ok("tail -n 1 t/0/by-offset/-10"), "late\n");
    // dd skips forward with lseek.
    assert_eq!(
        m.ok("dd if=t/0/by-offset/0 bs=4 skip=3 count=1 status=none"),
        "r4\nr"
    );
}

#[test]
fn by_time_starts_at_the_first_record_at_or_after_t() {
    let m = TestMount::start(&[]);
    m.ok("mkdir t");
    // Writes at distinct milliseconds (the sleeps only separate timestamps).
    for i in 0..6 {
        m.ok(&format!("echo w{i} >> t/0/append; sleep 0.01"));
    }
    let log = std::fs::read(m.partition_dir("t", 0).join("00000000000000000000.log")).unwrap();
    let ts: Vec<i64> = batches(&log)
        .iter()
        .map(|(o, _, _)| {
            let at = log_position(&log, *o);
            topicfs::record::BatchHeader::parse(&log[at..])
                .unwrap()
                .max_timestamp
        })
        .collect();
    assert_eq!(ts.len(), 6);
    assert!(ts.windows(2).all(|w| w[0] < w[1]), "{ts:?}");
    assert_eq!(m.read("t/0/by-time/0"), "w0\nw1\nw2\nw3\nw4\nw5\n");
    assert_eq!(m.read(&format!("t/0/by-time/{}", ts[3])), "w3\nw4\nw5\n");
    assert_eq!(
        m.read(&format!("t/0/by-time/{}", ts[3] - 1)),
        "w3\nw4\nw5\n"
    );
    assert_eq!(
        m.ok(&format!("head -n 1 t/0/by-time/{}", ts[2] + 1)),
        "w3\n"
    );
    assert_eq!(m.read(&format!("t/0/by-time/{}", ts[5])), "w5\n");
    // After the last record: an empty file (it grows), not ENOENT.
    assert_eq!(m.read(&format!("t/0/by-time/{}", ts[5] + 1)), "");
    m.fails_with("cat t/0/by-time/soon", "No such file or directory");
    assert_eq!(m.ok("ls t/0/by-time"), "");
}

/// The byte position of the batch with base offset `base`.
fn log_position(log: &[u8], base: i64) -> usize {
    let mut pos = 0;
    loop {
        let h = topicfs::record::BatchHeader::parse(&log[pos..]).unwrap();
        if h.base_offset == base {
            return pos;
        }
        pos += h.size();
    }
}

#[test]
fn a_start_inside_a_compressed_batch_is_exact() {
    let m = TestMount::start(&[]);
    m.ok("mkdir t");
    m.ok("echo compression.type=gzip >> t/config");
    let f = input(&m, "ten", &records(0, 10));
    m.ok(&format!("cat {f} >> t/0/append"));
    let log = std::fs::read(m.path("t/0/segments/00000000000000000000.log")).unwrap();
    let h = topicfs::record::BatchHeader::parse(&log).unwrap();
    assert_eq!(h.compression().unwrap(), topicfs::record::Compression::Gzip);
    assert_eq!(h.records_count, 10);
    assert_eq!(m.ok("head -n 1 t/0/by-offset/4"), "r4\n");
    assert_eq!(m.read("t/0/by-offset/7"), records(7, 10));
}

#[test]
fn a_long_log_reads_whole_and_in_order() {
    let m = TestMount::start(&["--segment-bytes", "50000"]);
    m.ok("mkdir t");
    let all = records(0, 20000);
    let f = input(&m, "many", &all);
    m.ok(&format!("cat {f} >> t/0/append"));
    assert!(log_segments(&m) > 3);
    assert_eq!(m.read("t/0/by-offset/0"), all);
    assert_eq!(m.ok("head -n 1 t/0/by-offset/12345"), "r12345\n");
    assert_eq!(
        m.ok("cat t/0/by-offset/0 | md5sum"),
        m.ok(&format!("md5sum < {f}"))
    );
}

#[test]
fn reading_many_segments_does_not_pile_up_descriptors() {
    let m = TestMount::start(&["--segment-bytes", "300"]);
    m.ok("mkdir t");
    m.ok(
        "for i in $(seq 0 199); do echo \"segment-record-$i-padding-padding\" >> t/0/append; done",
    );
    let segments = m
        .ok("ls t/0/segments")
        .lines()
        .filter(|n| n.ends_with(".log"))
        .count();
    assert!(segments > 40, "{segments} segments");
    let fds = || {
        std::fs::read_dir(format!("/proc/{}/fd", m.pid()))
            .unwrap()
            .count()
    };
    let before = fds();
    for i in (0..200).step_by(3) {
        assert_eq!(
            m.ok(&format!("head -n 1 t/0/by-offset/{i}")),
            format!("segment-record-{i}-padding-padding\n")
        );
    }
    assert_eq!(m.ok("cat t/0/by-offset/0 | wc -l").trim(), "200");
    assert!(
        fds() <= before + 2,
        "descriptors grew from {before} to {}",
        fds()
    );
}

/// `fstat` of an open stream shows exactly the bytes it reads (docs/contract.md), whether
/// the segments' counts were kept by this daemon's appends or counted after a remount, from a
/// segment's start or from inside one, and for a file opened before more records were
/// appended (its length and its bytes end at the log end of its open). JSON lines, measured
/// only by formatting them, show at open their length when the first read's 32 KiB hold it,
/// 0 otherwise (a stdio open costs a lookup), and the length once read to the end.
#[test]
fn fstat_of_an_open_stream_is_the_length_it_reads() {
    let mut m = TestMount::start(&["--segment-bytes", "50000"]);
    m.ok("mkdir t");
    let f = input(&m, "many", &records(0, 20000));
    m.ok(&format!("cat {f} >> t/0/append"));
    let script = r#"
import os, sys
tag = sys.argv[1]
def read_all(fd):
    data = b""
    while piece := os.read(fd, 1 << 20):
        data += piece
    os.close(fd)
    return data
def check(name):
    fd = os.open(name, os.O_RDONLY)
    size = os.fstat(fd).st_size
    data = b""
    while piece := os.read(fd, 1 << 20):
        data += piece
    at_end = os.fstat(fd).st_size
    os.close(fd)
    # JSON lines beyond the first read's 32 KiB: 0 at open (never a part of the length).
    # (Streams: relative starts. Decimal starts are files the kernel caches: their length.)
    base = name.rsplit("/", 1)[1]
    stream = base.startswith("-") or base.startswith("earliest")
    want = 0 if stream and name.endswith(".jsonl") and len(data) > 32768 else len(data)
    assert (size, at_end) == (want, len(data)), (name, size, at_end, len(data))
    return data
names = ["t/0/by-offset/0", "t/0/by-offset/12345", "t/0/by-offset/19999",
         "t/0/by-offset/20000", "t/0/by-offset/0.jsonl", "t/0/by-offset/777.jsonl",
         "t/0/by-offset/19990.jsonl", "t/0/by-offset/earliest.jsonl",
         "t/0/by-offset/-19223.jsonl", "t/0/by-offset/-10.jsonl"]
for n in names:
    check(n)
# A stream opened, then more records appended: fstat and the bytes stop at the log end of
# the open. (Asked after the append: its count must leave out the records appended since.)
fd = os.open("t/0/by-offset/earliest", os.O_RDONLY)
cached = os.open("t/0/by-offset/0", os.O_RDONLY)
with open("t/0/append", "a") as a:
    a.write(f"later-{tag}-1\nlater-{tag}-2\n")
size = os.fstat(fd).st_size
data = read_all(fd)
assert len(data) == size and b"later-" + tag.encode() not in data, (len(data), size)
# A cached file shows its length now at fstat as at stat, and reads up to it.
size = os.fstat(cached).st_size
data = read_all(cached)
assert len(data) == size and data.endswith(f"later-{tag}-2\n".encode()), (len(data), size)
print(check("t/0/by-offset/0").decode().splitlines()[-1])
"#;
    let path = m.dir.path().join("fstat.py");
    std::fs::write(&path, script).unwrap();
    assert!(log_segments(&m) > 3);
    let run = |m: &TestMount, tag: &str| m.ok(&format!("python3 {} {tag}", path.display()));
    assert_eq!(run(&m, "a"), "later-a-2\n");
    // rsync copies the length shown at open: a JSON lines stream within the first read's
    // 32 KiB whole, a longer one as empty (docs/contract.md).
    m.ok("rsync t/0/by-offset/-12.jsonl ../small.jsonl && rsync t/0/by-offset/earliest.jsonl ../big.jsonl");
    let small = m.read("t/0/by-offset/-12.jsonl");
    assert!(small.len() > 1000, "{small}");
    assert_eq!(m.ok("cat ../small.jsonl"), small);
    assert_eq!(m.ok("wc -c < ../big.jsonl"), "0\n");
    // A cached JSON lines file shows its length: rsync copies it whole.
    m.ok("rsync t/0/by-offset/0.jsonl ../whole.jsonl");
    assert_eq!(
        m.ok("cmp ../whole.jsonl t/0/by-offset/0.jsonl && echo same"),
        "same\n"
    );
    // After a remount every segment is counted anew.
    m.unmount();
    m.remount();
    assert_eq!(run(&m, "b"), "later-b-2\n");
    assert_eq!(m.end_offset("t", 0), 20004);
}

/// Issue item "a stdio open is a lookup, not a scan": Python's `open()` + `readline` of
/// `by-offset/N` (a buffered reader asks for `st_blksize`, 1 MiB, at once) reads about the
/// batch holding N from the log, not a mebibyte of records; the line is record N, and a whole
/// read of the same file still gives every record after it; the same for JSON lines. Measured
/// by `@metrics`' `topicfs_bytes_read` (bytes of batches read from the log for readers), not
/// by time.
#[test]
fn a_stdio_open_is_a_lookup_not_a_scan() {
    let m = TestMount::start(&[]);
    m.ok("mkdir t");
    let script = r#"
import os, re, sys
def bytes_read():
    text = open("@metrics").read()
    m = re.search(r'^topicfs_bytes_read(?:_total)?\{topic="t"\} (\d+)', text, re.M)
    return int(m.group(1))
# 200,000 lines of 8 bytes in writes of 32 KiB: batches of 4,096 records (~64 KiB of log),
# 1.6 MB of lines in all.
data = b"".join(b"%07d\n" % i for i in range(200000))
fd = os.open("t/0/append", os.O_WRONLY | os.O_APPEND)
for i in range(0, len(data), 32768):
    os.write(fd, data[i:i + 32768])
os.close(fd)
# A stream asks for 1 MiB; a cached lines file for 32 KiB (the kernel reads ahead).
assert os.stat("t/0/by-offset/earliest.jsonl").st_blksize == 1 << 20
assert os.stat("t/0/by-offset/0").st_blksize == 32 << 10
for n in (0, 77777, 150001):
    before = bytes_read()
    with open(f"t/0/by-offset/{n}", "rb") as f:
        line = f.readline()
    used = bytes_read() - before
    assert line == b"%07d\n" % n, (n, line)
    # A few batches (64 KiB of lines is at most three here); 1 MiB of lines is ~2 MiB of log.
    assert used < 512 * 1024, (n, used)
    print(n, used, file=sys.stderr)
with open("t/0/by-offset/150001", "rb") as f:
    assert f.readline() == b"0150001\n"
    assert f.read() == data[150002 * 8:]
def json_lookup(name, n):
    before = bytes_read()
    with open(name, "rb") as f:
        line = f.readline()
    used = bytes_read() - before
    assert b'"offset":%d,' % n in line, (n, line)
    assert used < 512 * 1024, (n, used)
# JSON lines streams too: the open's fstat does not format the rest of the partition to
# measure it.
for n in (0, 77777):
    json_lookup(f"t/0/by-offset/-{200000 - n}.jsonl", n)
# A cached JSON lines file: the partition's first stat formats every record once (its
# table); later opens cost a lookup.
before = bytes_read()
os.stat("t/0/by-offset/0.jsonl")
assert bytes_read() - before > len(data), (bytes_read() - before, len(data))
for n in (0, 77777, 150001):
    json_lookup(f"t/0/by-offset/{n}.jsonl", n)
print("ok")
"#;
    let path = m.dir.path().join("stdio.py");
    std::fs::write(&path, script).unwrap();
    assert_eq!(m.ok(&format!("python3 {}", path.display())), "ok\n");
}

/// The contract's price of the lookup above: the first read of an open stream answers at most
/// 32 KiB whatever it asks, later reads are filled to the size asked. `dd bs=1M count=1`
/// (one read) gets 32 KiB, with `iflag=fullblock` (reads until the block is full) the whole
/// MiB; `cat`, `cp` and `tar` loop, so they copy every byte.
#[test]
fn a_first_read_answers_at_most_32_kib_and_later_reads_in_full() {
    let m = TestMount::start(&[]);
    m.ok("mkdir t");
    // 3 MiB of lines: 196,608 lines of 16 bytes.
    m.ok("seq -f '%015g' 196608 > ../lines && cat ../lines > t/0/append");
    let bytes = |cmd: &str| m.ok(cmd).trim().parse::<u64>().unwrap();
    // A stream (a relative start).
    let stream = "t/0/by-offset/earliest";
    assert_eq!(
        bytes(&format!("dd if={stream} bs=1M count=1 status=none | wc -c")),
        32 * 1024
    );
    assert_eq!(
        bytes(&format!(
            "dd if={stream} bs=1M count=1 iflag=fullblock status=none | wc -c"
        )),
        1 << 20
    );
    // Two reads of 1 MiB: the first short, the second full.
    assert_eq!(
        bytes(&format!("dd if={stream} bs=1M count=2 status=none | wc -c")),
        32 * 1024 + (1 << 20)
    );
    m.ok(&format!("cp {stream} ../copy && cmp ../copy ../lines"));
    // A cached lines file answers every read in full.
    assert_eq!(
        bytes("dd if=t/0/by-offset/0 bs=1M count=1 status=none | wc -c"),
        1 << 20
    );
}

/// A lookup's first read decodes the lines it asks for, not the rest of their batch; the
/// reads after it go on inside that batch. Readers that start small and go on, or stop
/// early, in a batch of 20,000 short records: `dd bs=4k`, Python's `os.read` of 4 KiB then
/// larger reads, a forked reader sharing the descriptor, bash `read` lines, `head`, `sed q`.
#[test]
fn reads_that_start_small_go_on_inside_the_batch() {
    let m = TestMount::start(&[]);
    // One write of 20,000 lines: one batch.
    m.ok("mkdir t && seq 0 19999 > /tmp/seq.$$ && cat /tmp/seq.$$ >> t/0/append && rm /tmp/seq.$$");
    let want = |from: usize| -> String { (from..20_000).map(|i| format!("{i}\n")).collect() };
    assert_eq!(
        m.ok("dd if=t/0/by-offset/7000 bs=4k status=none"),
        want(7000)
    );
    assert_eq!(
        m.ok("dd if=t/0/by-offset/7000 bs=100 count=1 status=none"),
        want(7000)[..100]
    );
    let script = r#"
import os
fd = os.open("t/0/by-offset/12345", os.O_RDONLY)
first = os.read(fd, 4096)
if os.fork() == 0:
    os.write(1, first + os.read(fd, 10))
    os._exit(0)
os.wait()
rest = b""
while True:
    b = os.read(fd, 1 << 20)
    if not b:
        break
    rest += b
os.write(1, b"|" + rest)
"#;
    let out = m.ok(&format!("python3 -c '{script}'"));
    let (child, rest) = out.split_once('|').unwrap();
    let w = want(12345);
    assert_eq!(child, &w[..4096 + 10]);
    assert_eq!(rest, &w[4096 + 10..]);
    assert_eq!(
        m.ok("{ read a; read b; read c; echo \"$a $b $c\"; } < t/0/by-offset/19990"),
        "19990 19991 19992\n"
    );
    assert_eq!(m.ok("head -n 2 t/0/by-offset/5"), "5\n6\n");
    assert_eq!(m.ok("sed 3q t/0/by-offset/19000"), "19000\n19001\n19002\n");
    assert_eq!(m.ok("cat t/0/by-offset/0"), want(0));
}

//! Stream files through the page cache (docs/contract.md, "The page cache"): a local lines or
//! JSON lines file (`by-offset/N`, `by-offset/A..B`, `by-time/T` for an absolute T, and their
//! `.jsonl`) shows its true size at `stat` by path and at `fstat`, a second `cat` of it is
//! answered by the kernel (the daemon reads nothing of the log: `@metrics`), memory maps and
//! the dataframe libraries read exactly what `cat` reads (each compared with its own read of
//! a plain copy of those bytes), an append grows it at its end, and no event that changes what
//! a name shows (compaction, retention, a topic made again, a truncation found at recovery)
//! leaves a stale byte or size for a new open, while a reader that held the old file open and
//! mapped reads on its old bytes. Every other stream (and in remote mode every file) shows
//! size 0 at `stat` by path.

use std::io::Write;
use std::os::unix::fs::MetadataExt;
use std::os::unix::process::ExitStatusExt;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::Receiver;
use std::time::Duration;

use crate::common::mount::{TestMount, wait_until};
use crate::common::readers::{lines_of, next_line};
use crate::metrics::scrape;
use crate::mmap::{READ_ALL, no_signal, objects, python};

/// What a new look at a name shows: `stat` by path, the bytes `cat` reads, `fstat` of an
/// open made after them, and the inode number `stat` gives.
#[derive(Debug)]
struct Look {
    stat: u64,
    bytes: Vec<u8>,
    fstat: u64,
    ino: u64,
}

/// Looks at `name` (stat by path first, before anything read it) and asserts its size is
/// true: `stat` and `fstat` both show the bytes `cat` reads.
fn look(m: &TestMount, name: &str) -> Look {
    let meta = std::fs::metadata(m.path(name)).unwrap_or_else(|e| panic!("stat {name}: {e}"));
    let out = Command::new("cat")
        .arg(name)
        .current_dir(&m.mnt)
        .output()
        .expect("run cat");
    assert!(out.status.success(), "cat {name}: {out:?}");
    let file = std::fs::File::open(m.path(name)).unwrap();
    let fstat = file.metadata().unwrap().len();
    let seen = Look {
        stat: meta.len(),
        bytes: out.stdout,
        fstat,
        ino: meta.ino(),
    };
    assert_eq!(
        (seen.stat, seen.fstat),
        (seen.bytes.len() as u64, seen.bytes.len() as u64),
        "{name}: stat and fstat against the bytes cat reads"
    );
    seen
}

/// Bytes of record batches the daemon has read from `topic`'s log for readers.
fn daemon_read(m: &TestMount, topic: &str) -> f64 {
    scrape(m)[&format!("topicfs_bytes_read_total{{topic={topic}}}")]
}

/// The page-cached files of the 30,000 objects of `t/0`, lines (from the start, the first 100
/// left out, a range, a time) and JSON lines. The test adds by-time names of the records'
/// own timestamps.
const CACHED: [&str; 6] = [
    "t/0/by-offset/0",
    "t/0/by-offset/100",
    "t/0/by-offset/100..20000",
    "t/0/by-time/1970-01-01T00:00:00Z",
    "t/0/by-offset/0.jsonl",
    "t/0/by-offset/100.jsonl",
];

/// Maps each file given both ways (MAP_SHARED read-only, MAP_PRIVATE), then numpy.memmap
/// read-only and copy-on-write: a line per map, `kind length equal-to-a-read`.
const MAPS: &str = r#"
import sys, numpy
for name in sys.argv[1:]:
    whole = read_all(name)
    for kind in ("shared", "private"):
        fd = os.open(name, os.O_RDONLY)
        flags = mmap.MAP_SHARED if kind == "shared" else mmap.MAP_PRIVATE
        m = mmap.mmap(fd, 0, flags=flags, prot=mmap.PROT_READ)
        print(kind, len(m), m[:] == whole)
        m.close()
        os.close(fd)
    for mode in ("r", "c"):
        a = numpy.memmap(name, dtype=numpy.uint8, mode=mode)
        print("numpy-" + mode, len(a), a.tobytes() == whole)
"#;

/// Reads pairs `FILE COPY` (a file of the mount, a plain copy of the bytes `cat` read of it)
/// with polars (`read_ndjson`, `scan_ndjson`), pyarrow, pandas and DuckDB: a line per library
/// and pair, `library rows equal-to-the-copy's`.
const FRAMES: &str = r#"
import sys, duckdb, pandas, polars, pyarrow.json
def duck(path):
    quoted = path.replace("'", "''")
    return duckdb.connect().sql(f"select * from read_json_auto('{quoted}')").fetchall()
readers = [
    ("polars.read_ndjson", polars.read_ndjson, len, lambda a, b: a.equals(b)),
    ("polars.scan_ndjson", lambda p: polars.scan_ndjson(p).collect(), len, lambda a, b: a.equals(b)),
    ("pyarrow.json", pyarrow.json.read_json, lambda t: t.num_rows, lambda a, b: a.equals(b)),
    ("pandas", lambda p: pandas.read_json(p, lines=True), len, lambda a, b: a.equals(b)),
    ("duckdb", duck, len, lambda a, b: a == b),
]
args = sys.argv[1:]
for name, copy in zip(args[::2], args[1::2]):
    for what, read, rows, same in readers:
        ours, oracle = read(name), read(copy)
        print(what, rows(ours), same(ours, oracle))
"#;

/// Lines and JSON lines files of a local topic are read through the page cache: their true
/// size at `stat` and `fstat`, a second `cat` the daemon does not see, maps and dataframe
/// libraries reading what `cat` reads, and an append that grows a file at its end (what was
/// cached stays cached); every stream file shows size 0.
#[test]
fn a_lines_file_is_read_through_the_page_cache() {
    let m = TestMount::start(&[]);
    objects(&m);
    // The first cat goes to the daemon, the second one is the kernel's.
    let before = daemon_read(&m, "t");
    let first = look(&m, "t/0/by-offset/0");
    let after_first = daemon_read(&m, "t");
    assert!(after_first > before, "the first read went to the log");
    let again = m.ok("cat t/0/by-offset/0");
    assert_eq!(again.as_bytes(), first.bytes);
    assert_eq!(
        daemon_read(&m, "t"),
        after_first,
        "the daemon read the log for a second cat of an unchanged file"
    );
    // by-time names: the absolute time of a record inside the log (ms) and of the last one.
    let stamps: Vec<i64> = m
        .read("t/0/by-offset/0.jsonl")
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["timestamp"].as_i64())
        .map(Option::unwrap)
        .collect();
    let read = daemon_read(&m, "t");
    m.ok("cat t/0/by-offset/0.jsonl > /dev/null");
    assert_eq!(
        daemon_read(&m, "t"),
        read,
        "a second cat of by-offset/0.jsonl"
    );
    let mut names: Vec<String> = CACHED.iter().map(|n| n.to_string()).collect();
    for t in [stamps[15_000], stamps[stamps.len() - 1]] {
        let from = stamps.iter().position(|s| *s >= t).unwrap();
        let name = format!("t/0/by-time/{t}");
        assert_eq!(
            look(&m, &name).bytes,
            look(&m, &format!("t/0/by-offset/{from}")).bytes,
            "{name}"
        );
        names.push(name);
    }
    let looks: Vec<Look> = names.iter().map(|n| look(&m, n)).collect();
    assert_eq!(looks[0].bytes, first.bytes);
    let lines = |b: &[u8]| b.iter().filter(|c| **c == b'\n').count();
    assert_eq!(lines(&looks[2].bytes), 19_900, "by-offset/100..20000");
    assert_eq!(looks[3].bytes, first.bytes, "by-time/1970-01-01T00:00:00Z");
    maps_read_what_cat_reads(&m, &names, &looks);
    // The objects as lines, and as JSON lines (the objects in their values).
    let frames = [0, 1, 4, 5];
    dataframes_read_what_cat_reads(
        &m,
        &frames.map(|i| names[i].clone()),
        &frames.map(|i| &looks[i]),
    );
    an_append_grows_the_file_at_its_end(&m, &first);
    streams_show_size_zero(&m);
}

/// MAP_SHARED and MAP_PRIVATE maps, and numpy.memmap both ways, of each file: its whole
/// length, the bytes `cat` read; none killed by a signal.
fn maps_read_what_cat_reads(m: &TestMount, names: &[String], looks: &[Look]) {
    let args: Vec<&str> = names.iter().map(String::as_str).collect();
    let script = format!("import mmap\n{READ_ALL}{MAPS}");
    let out = no_signal(&python(m, &script, &args), "the maps");
    let got: Vec<&str> = out.lines().collect();
    assert_eq!(got.len(), 4 * names.len(), "{out}");
    for ((name, seen), maps) in names.iter().zip(looks).zip(got.chunks(4)) {
        for (kind, line) in ["shared", "private", "numpy-r", "numpy-c"].iter().zip(maps) {
            assert_eq!(
                *line,
                format!("{kind} {} True", seen.bytes.len()),
                "{name} mapped"
            );
        }
    }
}

/// polars, pyarrow, pandas and DuckDB read each file as they read a plain copy of the bytes
/// `cat` read of it, every line a row.
fn dataframes_read_what_cat_reads(m: &TestMount, names: &[String], looks: &[&Look]) {
    let mut args = Vec::new();
    for (i, (name, seen)) in names.iter().zip(looks).enumerate() {
        let copy = m.dir.path().join(format!("copy-{i}.ndjson"));
        std::fs::write(&copy, &seen.bytes).unwrap();
        args.push(name.clone());
        args.push(copy.to_string_lossy().into_owned());
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = no_signal(&python(m, FRAMES, &args), "the dataframe readers");
    let got: Vec<&str> = out.lines().collect();
    assert_eq!(got.len(), 5 * names.len(), "{out}");
    for ((name, seen), reads) in names.iter().zip(looks).zip(got.chunks(5)) {
        let rows = seen.bytes.iter().filter(|c| **c == b'\n').count();
        for line in reads {
            let (what, rest) = line.split_once(' ').unwrap();
            assert_eq!(rest, format!("{rows} True"), "{what} of {name}");
        }
    }
}

/// Streams (the last N, a relative time, whole topics, a follow file) show size 0 at `stat`
/// by path (their `fstat` is their length so far, which GNU `tail -f` follows: see
/// `read::fstat_of_an_open_stream_is_the_length_it_reads`); their maps are tested in
/// `mmap::`.
fn streams_show_size_zero(m: &TestMount) {
    let sized = with_a_size(
        m,
        &[
            "t/0/by-offset/-100",
            "t/0/by-offset/-100.jsonl",
            "t/0/by-time/-1d",
            "t/by-offset/earliest",
            "t/by-time/1970-01-01T00:00:00Z",
            "t/0/follow/0",
        ],
    );
    assert!(sized.is_empty(), "streams with a size: {sized:#?}");
}

/// The names whose `stat` by path shows a size, with it.
fn with_a_size(m: &TestMount, names: &[&str]) -> Vec<String> {
    names
        .iter()
        .filter_map(|name| {
            let stat = std::fs::metadata(m.path(name)).unwrap().len();
            (stat != 0).then(|| format!("{name}: stat {stat}"))
        })
        .collect()
}

/// One more object appended: a new `cat` ends with it, `stat` grew by its bytes and so did the
/// `fstat` of a descriptor opened before it. (The kernel drops a file's cached pages when it
/// sees its size change: the new `cat` is read from the daemon again, every byte of it.)
fn an_append_grows_the_file_at_its_end(m: &TestMount, first: &Look) {
    let held = std::fs::File::open(m.path("t/0/by-offset/0")).unwrap();
    let held_range = look(m, "t/0/by-offset/100..20000");
    let line = "{\"n\": 30000, \"s\": \"appended\"}\n";
    m.ok(&format!(
        "printf '%s\\n' '{}' >> t/0/append",
        line.trim_end()
    ));
    let grown = look(m, "t/0/by-offset/0");
    assert_eq!(grown.bytes, [&first.bytes[..], line.as_bytes()].concat());
    assert_eq!(grown.stat, first.stat + line.len() as u64);
    assert_eq!(
        held.metadata().unwrap().len(),
        grown.stat,
        "fstat of a descriptor opened before the append"
    );
    let by_time = look(m, "t/0/by-time/1970-01-01T00:00:00Z");
    assert_eq!(by_time.bytes, grown.bytes);
    // A closed range does not grow.
    assert_eq!(look(m, "t/0/by-offset/100..20000").bytes, held_range.bytes);
}

/// A Python process holding `name` open and mapped (MAP_SHARED and MAP_PRIVATE), given a
/// plain copy of the bytes `cat` read of it: it reads the first 4 KiB through each (a reader
/// that has just begun), prints `ready SIZE SAME SAME`, then at a line on its stdin drops the
/// pages the kernel holds of the file (so every page is read from the daemon again) and
/// prints `after SHARED-LEN PRIVATE-LEN FSTAT SAME SAME SAME`: whether both maps and a read of
/// the descriptor give the bytes of the copy.
const HOLDER: &str = r#"
import mmap, os, sys
fd = os.open(sys.argv[1], os.O_RDONLY)
old = open(sys.argv[2], "rb").read()
size = os.fstat(fd).st_size
shared = mmap.mmap(fd, size, flags=mmap.MAP_SHARED, prot=mmap.PROT_READ)
private = mmap.mmap(fd, size, flags=mmap.MAP_PRIVATE, prot=mmap.PROT_READ)
def read_fd():
    data, pos = b"", 0
    while True:
        piece = os.pread(fd, 1 << 16, pos)
        if not piece:
            return data
        data, pos = data + piece, pos + len(piece)
print("ready", size, shared[:4096] == old[:4096], private[:4096] == old[:4096], flush=True)
for _ in sys.stdin:
    for m in (shared, private):
        m.madvise(mmap.MADV_DONTNEED)
    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    print("after", len(shared), len(private), os.fstat(fd).st_size,
          shared[:] == old, private[:] == old, read_fd()[:size] == old, flush=True)
"#;

/// Starts [`HOLDER`] on `name` (whose bytes `cat` read are `bytes`); returns it, its stdout
/// lines and the size it mapped.
fn hold(m: &TestMount, name: &str, bytes: &[u8]) -> (Child, Receiver<String>, u64) {
    let copy = m.dir.path().join("held");
    std::fs::write(&copy, bytes).unwrap();
    let mut child = Command::new("python3")
        .arg("-c")
        .arg(HOLDER)
        .arg(name)
        .arg(&copy)
        .current_dir(&m.mnt)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("run python3");
    let rx = lines_of(&mut child);
    let ready = next_line(&rx, Duration::from_secs(60)).unwrap_or_default();
    let words: Vec<&str> = ready.split(' ').collect();
    assert!(
        words.len() == 4 && words[0] == "ready" && words[2..] == ["True", "True"],
        "the holder of {name}: {ready:?}"
    );
    (child, rx, words[1].parse().unwrap())
}

/// Asks the holder to read its file again; asserts its maps kept their length, its `fstat`
/// did not shrink and every read gave its old bytes; then ends it and checks it was killed by
/// no signal (SIGBUS).
fn still_reads_its_bytes(mut child: Child, rx: &Receiver<String>, size: u64) {
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(b"again\n").unwrap();
    let after = next_line(rx, Duration::from_secs(60));
    drop(stdin);
    let status = child.wait().unwrap();
    assert_eq!(status.signal(), None, "the holder was killed ({after:?})");
    let after = after.expect("the holder answered");
    let words: Vec<&str> = after.split(' ').collect();
    assert_eq!(words.len(), 7, "{after}");
    assert_eq!(words[1..3], [size.to_string(), size.to_string()], "{after}");
    let fstat: u64 = words[3].parse().unwrap();
    assert!(fstat >= size, "the held file shrank: {after}");
    assert_eq!(words[4..], ["True", "True", "True"], "{after}");
}

/// A compaction rewrites the log: a new `cat` and `stat` of `by-offset/0` show the compacted
/// log and its size under a new inode number, while a reader that held the old file open and
/// mapped reads its old bytes, its maps as long as they were, never killed by SIGBUS.
#[test]
fn no_stale_byte_after_a_compaction() {
    let m = TestMount::start(&[
        "--num-partitions",
        "1",
        "--segment-bytes",
        "5000",
        "--log-cleaner-backoff-ms",
        "50",
    ]);
    m.ok("mkdir t");
    m.ok("echo cleanup.policy=compact >> t/config");
    // Cleaning waits: a ratio of 1 is never exceeded.
    m.ok("echo min.cleanable.dirty.ratio=1 >> t/config");
    // Values of 4 KiB: the file is more than the kernel reads ahead of a first page.
    let value = |i: i64| format!("v{i}-{}", "x".repeat(4096));
    let keyed: String = (0..80)
        .map(|i| format!("{{\"key\":\"k{}\",\"value\":\"{}\"}}\n", i % 4, value(i)))
        .collect();
    std::fs::write(m.dir.path().join("keyed.jsonl"), &keyed).unwrap();
    m.ok(&format!(
        "while read -r line; do printf '%s\\n' \"$line\" >> t/0/append.jsonl; done < {}",
        m.dir.path().join("keyed.jsonl").display()
    ));
    assert_eq!(m.end_offset("t", 0), 80);
    let old = look(&m, "t/0/by-offset/0");
    let all: String = (0..80).map(|i| value(i) + "\n").collect();
    assert_eq!(old.bytes, all.as_bytes());
    let old_jsonl = look(&m, "t/0/by-offset/0.jsonl");
    let (holder, rx, size) = hold(&m, "t/0/by-offset/0", &old.bytes);
    assert_eq!(size, old.stat);
    m.ok("echo min.cleanable.dirty.ratio=0.5 >> t/config");
    wait_until("the cleaner checkpoints t-0", || {
        m.first_dirty("t", 0).is_some()
    });
    let end = m.first_dirty("t", 0).unwrap();
    assert!(end > 0 && end < 80, "{end}");
    // Below the first dirty offset the latest value of each key, everything from it on.
    // (Record i has key i % 4: the latest below `end` of its key when i + 4 >= end.)
    let want: String = (0..80)
        .filter(|i| i + 4 >= end)
        .map(|i| value(i) + "\n")
        .collect();
    assert!(want.len() < all.len());
    let new = look(&m, "t/0/by-offset/0");
    assert!(
        new.bytes == want.as_bytes(),
        "by-offset/0 is not the compacted log"
    );
    assert_ne!(
        new.ino, old.ino,
        "the compacted by-offset/0 kept its inode number"
    );
    // The JSON lines too: the offsets left, under a new inode number.
    let jsonl = look(&m, "t/0/by-offset/0.jsonl");
    let offsets: Vec<i64> = String::from_utf8(jsonl.bytes)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["offset"].as_i64())
        .map(Option::unwrap)
        .collect();
    assert_eq!(
        offsets,
        (0..80).filter(|i| i + 4 >= end).collect::<Vec<_>>()
    );
    assert_ne!(
        jsonl.ino, old_jsonl.ino,
        "by-offset/0.jsonl kept its inode number"
    );
    still_reads_its_bytes(holder, &rx, size);
}

/// Retention removes the oldest segments, a topic is deleted and made again, the daemon is
/// killed and its log's torn tail cut at recovery: each time a new `cat` and `stat` of the
/// names show the new bytes and their size, under new inode numbers; a name whose bytes did
/// not change keeps its number across the kill and the mount. A reader that held the file
/// open and mapped across the retention reads its old bytes.
#[test]
fn no_stale_byte_after_retention_a_topic_made_again_or_a_recovery() {
    let mut m = TestMount::start(&["--retention-check-interval-ms", "100"]);
    // Retention: the log start moves past offset 0. 3,000 lines of 100 bytes in batches of
    // 100 lines, in segments of 50,000 bytes.
    m.ok("mkdir r && echo segment.bytes=50000 >> r/config");
    m.python(
        r#"
with open("r/0/append", "w") as f:
    for i in range(0, 3000, 100):
        f.write("".join("record-%05d-%s\n" % (j, "x" * 86) for j in range(i, i + 100)))
        f.flush()
"#,
        &[],
    );
    let record = |i: i64| format!("record-{i:05}-{}\n", "x".repeat(86));
    let all: String = (0..3000).map(record).collect();
    let by_time = "r/0/by-time/1970-01-01T00:00:00Z";
    let old = [look(&m, "r/0/by-offset/0"), look(&m, by_time)];
    assert!(old.iter().all(|l| l.bytes == all.as_bytes()));
    // A reader that has read the first page of the file when retention runs.
    let (holder, rx, size) = hold(&m, "r/0/by-offset/0", &old[0].bytes);
    assert_eq!(size, old[0].stat);
    m.ok("echo retention.bytes=60000 >> r/config");
    wait_until("retention deleted segments", || {
        m.read("r/0/log-start-offset").trim() != "0"
    });
    let start: i64 = m.read("r/0/log-start-offset").trim().parse().unwrap();
    let left: String = (start..3000).map(record).collect();
    m.fails_with("cat r/0/by-offset/0", "No such file or directory");
    m.fails_with("stat r/0/by-offset/0", "No such file or directory");
    let new = look(&m, by_time);
    assert_eq!(String::from_utf8_lossy(&new.bytes), left);
    assert_ne!(new.ino, old[1].ino, "{by_time} kept its inode number");
    assert_eq!(look(&m, &format!("r/0/by-offset/{start}")).bytes, new.bytes);
    still_reads_its_bytes(holder, &rx, size);

    // A topic deleted and made again under its name, with fewer bytes than before.
    m.ok("mkdir t && printf 'old-1\\nold-2\\n' >> t/0/append");
    let names = [
        "t/0/by-offset/0",
        "t/0/by-time/1970-01-01T00:00:00Z",
        "t/0/by-offset/0.jsonl",
    ];
    let old: Vec<Look> = names.iter().map(|n| look(&m, n)).collect();
    assert!(
        old[..2].iter().all(|l| l.bytes == b"old-1\nold-2\n"),
        "{old:?}"
    );
    m.ok("rmdir t && mkdir t && echo new >> t/0/append");
    for (name, old) in names.iter().zip(&old) {
        let new = look(&m, name);
        let shown = String::from_utf8_lossy(&new.bytes).into_owned();
        // A JSON line's value is the line without its newline.
        let value = match name.ends_with(".jsonl") {
            true => serde_json::from_str::<serde_json::Value>(&shown).unwrap()["value"]
                .as_str()
                .unwrap()
                .to_string(),
            false => shown.replacen('\n', "", 1),
        };
        assert_eq!(value, "new", "{name}: {shown}");
        assert_ne!(new.ino, old.ino, "{name} kept its inode number");
    }

    // kill -9, then the last batch torn on disk: the mount after it cuts it off.
    m.ok("mkdir k u && echo a >> k/0/append && echo b >> k/0/append && echo c >> k/0/append");
    m.ok("echo same >> u/0/append");
    let k = look(&m, "k/0/by-offset/0");
    let u = look(&m, "u/0/by-offset/0");
    assert_eq!(k.bytes, b"a\nb\nc\n");
    m.kill9();
    let log = m.partition_dir("k", 0).join("00000000000000000000.log");
    m.ok(&format!("truncate -s -10 {}", log.display()));
    m.remount();
    assert_eq!(m.end_offset("k", 0), 2);
    let k_after = look(&m, "k/0/by-offset/0");
    assert_eq!(k_after.bytes, b"a\nb\n");
    assert_ne!(k_after.ino, k.ino, "k/0/by-offset/0 kept its inode number");
    let u_after = look(&m, "u/0/by-offset/0");
    assert_eq!(u_after.bytes, u.bytes);
    assert_eq!(
        u_after.ino, u.ino,
        "u/0/by-offset/0 changed its inode number"
    );
}

/// Remote mode (over librdkafka's mock cluster): `by-offset/N` and `by-time/T` stay streams,
/// size 0 at `stat` by path; mapping them maps nothing or is refused, never SIGBUS.
#[cfg(feature = "remote")]
#[test]
fn remote_lines_files_are_streams_of_size_zero() {
    let mock = rdkafka::mocking::MockCluster::new(1).unwrap();
    mock.create_topic("t", 1, 1).unwrap();
    // The mock cluster does not answer DescribeConfigs (max.message.bytes, asked at the first
    // append): a short client timeout lets the append pass that question quickly.
    let client = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(client.path(), "message.timeout.ms=1000\n").unwrap();
    let m = TestMount::with(crate::common::mount::Options {
        log_dirs: 0,
        args: vec![
            "--bootstrap-servers".to_string(),
            mock.bootstrap_servers(),
            "--client-config".to_string(),
            client.path().to_string_lossy().into_owned(),
        ],
        ..Default::default()
    });
    m.ok("seq 1 2000 >> t/0/append");
    let names = [
        "t/0/by-offset/0",
        "t/0/by-offset/100",
        "t/0/by-time/1970-01-01T00:00:00Z",
    ];
    // Maps read what `cat` reads, or are refused (an empty file cannot be mapped).
    let script = format!("{READ_ALL}{}", crate::mmap::MAP);
    for name in names {
        for kind in ["shared", "private"] {
            let out = no_signal(&python(&m, &script, &[name, kind]), name);
            assert!(
                out.starts_with("refused") || out.ends_with(" True\n"),
                "{name} {kind}: {out}"
            );
        }
    }
    assert_eq!(m.read("t/0/by-offset/1999"), "2000\n");
    let sized = with_a_size(&m, &names);
    assert!(sized.is_empty(), "remote files with a size: {sized:#?}");
}

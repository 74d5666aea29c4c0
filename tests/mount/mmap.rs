//! Memory maps of stream files (docs/contract.md, "Memory maps"): a program that maps the
//! size `fstat` shows (Python's `mmap`, `numpy.memmap`, polars) reads exactly the bytes `cat`
//! reads, or is refused, or maps nothing; it is never killed by SIGBUS (a short read is the
//! end of a file to the kernel's page cache, and a mapping faulting past it would be). Each
//! program runs in a process of its own whose end is checked for a signal.

use std::os::unix::process::ExitStatusExt;
use std::process::{Command, Output};

use crate::common::mount::TestMount;

/// The stream files checked, with the fewest lines each holds: lines and JSON lines from the
/// start and from inside the log, by time (absolute and relative), from the end (`-N`),
/// topic-wide (by offset and by time), and a follow file.
const STREAMS: [(&str, usize); 10] = [
    ("t/0/by-offset/0", 30_000),
    ("t/0/by-offset/100", 29_900),
    ("t/0/by-offset/0.jsonl", 30_000),
    ("t/0/by-offset/100.jsonl", 29_900),
    ("t/0/by-time/1970-01-01T00:00:00Z", 30_000),
    ("t/0/by-offset/-100", 100),
    ("t/0/by-time/-1d", 30_000),
    ("t/by-offset/earliest", 30_000),
    ("t/by-time/1970-01-01T00:00:00Z", 30_000),
    ("t/0/follow/0", 30_000),
];

/// Partition 0 of `t` holding 30,000 JSON objects, one a line (about 1.3 MB of lines: far
/// past a first read's 32 KiB).
pub(crate) fn objects(m: &TestMount) {
    m.ok("mkdir t");
    m.python(
        r#"
with open("t/0/append", "w") as f:
    for i in range(0, 30000, 1000):
        f.write("".join('{"n": %d, "s": "%s"}\n' % (j, "x" * (j % 50)) for j in range(i, i + 1000)))
"#,
        &[],
    );
    assert_eq!(m.end_offset("t", 0), 30000);
}

/// Runs `script` (`python3 -c`, with `args`) in the mount, in a process of its own.
pub(crate) fn python(m: &TestMount, script: &str, args: &[&str]) -> Output {
    Command::new("python3")
        .arg("-c")
        .arg(script)
        .args(args)
        .current_dir(&m.mnt)
        .output()
        .expect("run python3")
}

/// Asserts `out` ended without a signal (SIGBUS is 7) and succeeded; returns its stdout.
pub(crate) fn no_signal(out: &Output, what: &str) -> String {
    assert_eq!(
        out.status.signal(),
        None,
        "{what} was killed by a signal; stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.status.success(),
        "{what} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout.clone()).expect("utf-8 output")
}

/// Reads a file to its end (a follow file: to where it waits), without blocking.
pub(crate) const READ_ALL: &str = r#"
import os
def read_all(name):
    fd = os.open(name, os.O_RDONLY | os.O_NONBLOCK)
    data = b""
    while True:
        try:
            piece = os.read(fd, 1 << 16)
        except BlockingIOError:
            break
        if not piece:
            break
        data += piece
    os.close(fd)
    return data
"#;

/// Maps the file the way Python's `mmap` does (the size `fstat` shows) and reads every byte
/// of the map: prints `refused` with the reason, or the bytes mapped and whether they are
/// the first bytes a read of the file gives.
pub(crate) const MAP: &str = r#"
import mmap, sys
name, kind = sys.argv[1], sys.argv[2]
flags = mmap.MAP_SHARED if kind == "shared" else mmap.MAP_PRIVATE
fd = os.open(name, os.O_RDONLY)
try:
    m = mmap.mmap(fd, 0, flags=flags, prot=mmap.PROT_READ)
except (ValueError, OSError) as e:
    print("refused", type(e).__name__)
    sys.exit(0)
mapped = m[:]
whole = read_all(name)
print("mapped", len(mapped), mapped == whole[:len(mapped)])
"#;

#[test]
fn a_mapped_stream_reads_what_cat_reads_or_maps_nothing() {
    let m = TestMount::start(&[]);
    objects(&m);
    let groups = ["t/groups/g/records", "t/groups/g/follow"];
    let script = format!("{READ_ALL}{MAP}");
    let mut mapped_whole = 0;
    for name in STREAMS.map(|(n, _)| n).into_iter().chain(groups) {
        for kind in ["shared", "private"] {
            let out = no_signal(&python(&m, &script, &[name, kind]), name);
            let words: Vec<&str> = out.split_whitespace().collect();
            match words[..] {
                ["refused", _] => {}
                ["mapped", n, "True"] => mapped_whole += usize::from(n != "0"),
                _ => panic!("{name} {kind}: {out}"),
            }
        }
    }
    // A lines file from an offset knows its length at open: MAP_PRIVATE maps all of it
    // (MAP_SHARED is refused on a file the kernel does not cache).
    assert!(mapped_whole >= 2, "no stream was mapped whole");
    // numpy maps read-only with MAP_SHARED, a copy-on-write map with MAP_PRIVATE.
    let numpy = format!(
        "{READ_ALL}{}",
        r#"
import sys, numpy
for mode in ("r", "c"):
    try:
        a = numpy.memmap(sys.argv[1], dtype=numpy.uint8, mode=mode)
    except (ValueError, OSError) as e:
        print(mode, "refused")
        continue
    # Read only once mapped: a group's file read is a take.
    print(mode, a.tobytes() == read_all(sys.argv[1])[:len(a)])
"#
    );
    for name in STREAMS.map(|(n, _)| n).into_iter().chain(groups) {
        let out = no_signal(&python(&m, &numpy, &[name]), name);
        for line in out.lines() {
            assert!(
                line.ends_with(" True") || line.ends_with(" refused"),
                "{name}: {out}"
            );
        }
    }
    // Nothing was taken (a group's files map nothing): the group's position is the log
    // start, every record still to read.
    assert_eq!(m.ok("cat t/groups/g/offsets"), "0 0 30000 30000\n");
}

/// polars reads a file through a memory map of the size `fstat` shows (MAP_SHARED, then
/// MAP_PRIVATE where that is refused): it reads every record of a lines file, and never dies
/// of a stream.
#[test]
fn polars_reads_a_stream_and_is_never_killed_by_one() {
    let m = TestMount::start(&[]);
    objects(&m);
    let script = r#"
import sys, polars
name = sys.argv[1]
for read in (lambda: polars.read_ndjson(name), lambda: polars.scan_ndjson(name).collect()):
    try:
        print(read().height)
    except Exception as e:
        print("refused", type(e).__name__)
"#;
    for (name, fewest) in STREAMS.iter().filter(|(n, _)| !n.contains("follow")) {
        let out = no_signal(&python(&m, script, &[name]), name);
        for line in out.lines() {
            let whole = line.parse::<usize>().is_ok_and(|n| n >= *fewest);
            // Every record, nothing, or an error: never a part of the records.
            assert!(
                whole || line == "0" || line.starts_with("refused"),
                "{name}: {out}"
            );
            if !name.contains(".jsonl") && !name.contains('-') && name.contains("/0/") {
                assert!(whole, "{name}: {out}");
            }
        }
    }
}

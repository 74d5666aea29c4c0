//! Appending through the mount (docs/contract.md): lines to records, one batch per write
//! request, partial lines held per open file, `>` and `>>`, round-robin topic appends,
//! writers that never interleave inside a line, large writes, EMSGSIZE, fsync. Real mounts.

use std::io::Write;

use crate::common::decode::batches;
use crate::common::mount::TestMount;

/// The batches of partition `p`'s first segment, read through `segments/`.
fn segment_batches(m: &TestMount, topic: &str, p: u32) -> Vec<(i64, usize, Vec<Vec<u8>>)> {
    let bytes =
        std::fs::read(m.path(&format!("{topic}/{p}/segments/00000000000000000000.log"))).unwrap();
    batches(&bytes)
}

fn values(b: &[(i64, usize, Vec<Vec<u8>>)]) -> Vec<String> {
    b.iter()
        .flat_map(|(_, _, v)| v)
        .map(|v| String::from_utf8(v.clone()).unwrap())
        .collect()
}

/// Writes `content` to a file next to the mount, for `cat FILE >> ...` (one write per 128 KiB).
fn input(m: &TestMount, name: &str, content: &[u8]) -> String {
    let p = m.dir.path().join(name);
    std::fs::write(&p, content).unwrap();
    p.display().to_string()
}

#[test]
fn each_line_is_a_record_and_each_write_one_batch() {
    let m = TestMount::start(&[]);
    m.ok("mkdir t");
    let abc = input(&m, "abc", b"a\nb\nc\n");
    m.ok(&format!("cat {abc} >> t/0/append"));
    m.ok("echo d >> t/0/append");
    m.ok("echo >> t/0/append"); // an empty line is an empty record
    let b = segment_batches(&m, "t", 0);
    let shape: Vec<(i64, usize)> = b.iter().map(|(o, n, _)| (*o, *n)).collect();
    assert_eq!(shape, [(0, 3), (3, 1), (4, 1)]);
    assert_eq!(values(&b), ["a", "b", "c", "d", ""]);
    assert_eq!(m.read("t/0/log-end-offset"), "5\n");
    assert_eq!(m.read("t/0/by-offset/0"), "a\nb\nc\nd\n\n");
    // No key, no headers, a CreateTime timestamp near now.
    let log = std::fs::read(m.partition_dir("t", 0).join("00000000000000000000.log")).unwrap();
    let view = topicfs::record::BatchView::new(&log).unwrap();
    let mut scratch = Vec::new();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64;
    for r in view.records(&mut scratch).unwrap() {
        let r = r.unwrap();
        assert_eq!(r.key, None);
        assert_eq!(r.header_count, 0);
        assert!(r.timestamp > now - 3_600_000 && r.timestamp <= now, "{r:?}");
    }
}

#[test]
fn a_partial_line_waits_for_the_next_write_or_close() {
    let m = TestMount::start(&[]);
    m.ok("mkdir t");
    // Builtins writing pieces of lines to one open file; a child (/bin/true) inherits the
    // descriptor and exits without cutting the line in two. Closing the group appends "xyz".
    m.ok("{ printf abc; /bin/true; printf 'def\\nxy'; printf z; } >> t/0/append; cat t/0/log-end-offset");
    assert_eq!(m.read("t/0/log-end-offset"), "2\n");
    assert_eq!(m.read("t/0/by-offset/0"), "abcdef\nxyz\n");

    // Each open file keeps its own partial line.
    let open = || {
        std::fs::OpenOptions::new()
            .append(true)
            .open(m.path("t/0/append"))
            .unwrap()
    };
    let (mut one, mut two) = (open(), open());
    one.write_all(b"one-").unwrap();
    two.write_all(b"two-").unwrap();
    two.write_all(b"x\n").unwrap();
    assert_eq!(m.end_offset("t", 0), 3);
    one.write_all(b"y\n").unwrap();
    two.write_all(b"pending").unwrap();
    assert_eq!(m.end_offset("t", 0), 4);
    drop(two);
    // close(2) returned: the pending line is in the log.
    assert_eq!(m.end_offset("t", 0), 5);
    drop(one);
    assert_eq!(m.read("t/0/by-offset/2"), "two-x\none-y\npending\n");
}

#[test]
fn truncating_redirects_append_too() {
    let m = TestMount::start(&[]);
    m.ok("mkdir t");
    m.ok("echo one > t/0/append");
    m.ok("echo two > t/0/append");
    m.ok(": > t/0/append");
    m.ok("echo three >> t/0/append");
    assert_eq!(m.read("t/0/by-offset/0"), "one\ntwo\nthree\n");
    m.ok("truncate -s 0 t/0/append");
    assert_eq!(m.end_offset("t", 0), 3);
    m.fails_with("truncate -s 10 t/0/append", "Operation not permitted");
}

#[test]
fn the_topic_append_spreads_writes_round_robin() {
    let m = TestMount::start(&["--num-partitions", "3"]);
    m.ok("mkdir t");
    m.ok("for i in 1 2 3 4 5 6; do echo $i >> t/append; done");
    let ends: Vec<i64> = (0..3).map(|p| m.end_offset("t", p)).collect();
    assert_eq!(ends, [2, 2, 2]);
    let mut all: Vec<String> = (0..3)
        .flat_map(|p| {
            m.read(&format!("t/{p}/by-offset/0"))
                .lines()
                .map(String::from)
                .collect::<Vec<_>>()
        })
        .collect();
    all.sort();
    assert_eq!(all, ["1", "2", "3", "4", "5", "6"]);
    // One write's lines stay together in one batch of one partition.
    let f = input(&m, "three", b"x\ny\nz\n");
    m.ok(&format!("cat {f} > t/append"));
    let ends: Vec<i64> = (0..3).map(|p| m.end_offset("t", p)).collect();
    assert_eq!(ends.iter().sum::<i64>(), 9);
    assert_eq!(ends.iter().filter(|&&e| e == 5).count(), 1, "{ends:?}");
    let p = ends.iter().position(|&e| e == 5).unwrap() as u32;
    assert_eq!(m.read(&format!("t/{p}/by-offset/2")), "x\ny\nz\n");
}

#[test]
fn concurrent_writers_never_interleave_inside_a_line() {
    let m = TestMount::start(&[]);
    m.ok("mkdir t");
    let writers = 4;
    let per_writer = 2000;
    let mut files = Vec::new();
    for w in 0..writers {
        let mut content = String::new();
        for i in 0..per_writer {
            // ~150 bytes per line: cat's 128 KiB writes end in the middle of lines.
            content.push_str(&format!("writer-{w}-line-{i:05}-{}\n", "x".repeat(130)));
        }
        files.push(input(&m, &format!("w{w}"), content.as_bytes()));
    }
    let script: String = files
        .iter()
        .map(|f| format!("cat {f} >> t/0/append & "))
        .collect::<String>()
        + "wait";
    m.ok(&script);
    let out = m.read("t/0/by-offset/0");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), writers * per_writer);
    let mut next = vec![0usize; writers];
    for l in &lines {
        let rest = l.strip_prefix("writer-").expect(l);
        let (w, rest) = rest.split_once("-line-").expect(l);
        let w: usize = w.parse().unwrap();
        let expected = format!("{:05}-{}", next[w], "x".repeat(130));
        assert_eq!(rest, expected, "writer {w}'s lines out of order or torn");
        next[w] += 1;
    }
    assert_eq!(next, vec![per_writer; writers]);
}

#[test]
fn a_megabyte_write_is_appended_whole() {
    let m = TestMount::start(&[]);
    m.ok("mkdir t");
    // Short lines: one 1 MiB write request's batch would pass max.message.bytes, so it is
    // split into batches that fit, with no line lost or torn.
    let mut content = Vec::new();
    let mut n = 0;
    while content.len() < (1 << 20) + 5000 {
        content.extend_from_slice(format!("{n:07}\n").as_bytes());
        n += 1;
    }
    let f = input(&m, "big", &content);
    m.ok(&format!(
        "dd if={f} of=t/0/append bs=2M oflag=append conv=notrunc status=none"
    ));
    assert_eq!(m.end_offset("t", 0), n);
    let back = std::fs::read(m.path("t/0/by-offset/0")).unwrap();
    assert_eq!(back.len(), content.len());
    assert!(back == content, "content differs");
    for (_, _, v) in segment_batches(&m, "t", 0) {
        assert!(!v.is_empty());
    }
}

#[test]
fn a_record_larger_than_max_message_bytes_is_emsgsize_and_nothing_is_appended() {
    let m = TestMount::start(&["--message-max-bytes", "1000"]);
    m.ok("mkdir t");
    m.ok("echo small >> t/0/append");
    let big = "y".repeat(2000);
    m.fails_with(
        &format!("/bin/echo {big} >> t/0/append"),
        "Message too long",
    );
    // One oversized line among small ones: the whole write fails, nothing is appended.
    let mixed = input(&m, "mixed", format!("ok1\n{big}\nok2\n").as_bytes());
    m.fails_with(&format!("cat {mixed} >> t/0/append"), "Message too long");
    // A partial line that outgrows the limit fails at write, not silently at close.
    m.fails_with(
        "head -c 3000 /dev/zero | tr '\\0' z >> t/0/append",
        "Message too long",
    );
    assert_eq!(m.end_offset("t", 0), 1);
    m.ok("echo after >> t/0/append");
    assert_eq!(m.read("t/0/by-offset/0"), "small\nafter\n");
    let log = m.daemon_log();
    assert!(
        log.contains("Message too long") || log.contains("exceeds"),
        "no log line says why:\n{log}"
    );
}

#[test]
fn fsync_makes_appends_durable() {
    let m = TestMount::start(&[]);
    m.ok("mkdir t");
    let f = input(&m, "lines", b"1\n2\n3\n");
    m.ok(&format!(
        "dd if={f} of=t/0/append oflag=append conv=notrunc,fsync status=none"
    ));
    // fsync advanced the recovery point and wrote the checkpoint.
    let cp =
        std::fs::read_to_string(m.log_dirs[0].join("recovery-point-offset-checkpoint")).unwrap();
    assert!(cp.lines().any(|l| l == "t 0 3"), "checkpoint:\n{cp}");
}

#[test]
fn appends_to_different_partitions_run_side_by_side() {
    let m = TestMount::start(&["--num-partitions", "4"]);
    m.ok("mkdir t");
    let mut content = String::new();
    for i in 0..3000 {
        content.push_str(&format!("{i}\n"));
    }
    let f = input(&m, "n", content.as_bytes());
    m.ok(&format!(
        "for p in 0 1 2 3; do (for k in 1 2 3; do cat {f} >> t/$p/append; cat t/$p/by-offset/0 > /dev/null; done) & done; wait"
    ));
    for p in 0..4 {
        assert_eq!(m.end_offset("t", p), 9000);
        assert_eq!(
            m.read(&format!("t/{p}/by-offset/6000")),
            content,
            "partition {p}"
        );
    }
}

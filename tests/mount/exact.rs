//! A group's record files are consumed exactly as used: the programs that read a buffer, use
//! part of it and stop (`head`, `sed q`, `awk exit`, `grep -m`, Python and Java buffered
//! readers, bash `read`) commit exactly the records they used, print no error and exit 0;
//! the next reader of the group starts at the next record.

use crate::common::mount::TestMount;

/// `n` records of 60 bytes (61 with the newline).
fn records(n: usize) -> Vec<String> {
    (0..n)
        .map(|i| format!("r{i:04}-{}", "x".repeat(54)))
        .collect()
}

fn fill(m: &TestMount, topic: &str, lines: &[String]) {
    let body: String = lines.iter().map(|l| format!("{l}\n")).collect();
    std::fs::write(m.path(&format!("{topic}/0/append")), body).unwrap();
}

/// The committed offset of G in partition 0 (`-` as -1).
fn committed(m: &TestMount, topic: &str, group: &str) -> i64 {
    let text = m.read(&format!("{topic}/groups/{group}/offsets"));
    let field = text.split_whitespace().nth(1).unwrap().to_string();
    field.parse().unwrap_or(-1)
}

/// Runs `script`: it must exit 0 with nothing on stderr; its stdout.
fn clean(m: &TestMount, script: &str) -> String {
    let out = m.sh(script);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && err.is_empty(),
        "`{script}`: {} stderr: {err}",
        out.status
    );
    String::from_utf8(out.stdout).unwrap()
}

const JAVA_TAKE: &str = r#"
import java.io.*;
public class Take {
    public static void main(String[] a) throws Exception {
        int k = Integer.parseInt(a[1]);
        try (BufferedReader r = new BufferedReader(new FileReader(a[0]))) {
            for (int i = 0; i < k; i++) System.out.println(r.readLine());
        }
    }
}
"#;

/// Each program takes K records of `file` (a group file of topic t, group g): it prints
/// exactly those, and the group's commit moves by exactly K. `{f}` is the file, `{k}` K.
fn programs() -> Vec<(&'static str, String)> {
    vec![
        ("head", "head -n {k} {f}".into()),
        ("head from stdin", "head -n {k} < {f}".into()),
        ("sed", "sed {k}q {f}".into()),
        ("awk", "awk '{print} NR=={k}{exit}' {f}".into()),
        ("grep -m", "grep -m {k} r {f}".into()),
        ("grep -m from stdin", "grep -m {k} r < {f}".into()),
        (
            "python for-loop",
            "python3 -c \"import sys
for i, l in enumerate(open(sys.argv[1])):
    print(l, end='')
    if i + 1 == {k}: break\" {f}"
                .into(),
        ),
        (
            "python binary readline",
            "python3 -c \"import sys
f = open(sys.argv[1], 'rb')
for _ in range({k}): sys.stdout.write(f.readline().decode())\" {f}"
                .into(),
        ),
        ("java BufferedReader", "java {java} {f} {k}".into()),
        (
            "bash read",
            "bash -c 'exec 3< {f}; for i in $(seq {k}); do read -r l <&3; echo \"$l\"; done'"
                .into(),
        ),
    ]
}

#[test]
fn programs_that_stop_early_commit_exactly_what_they_used() {
    let m = TestMount::start(&[]);
    m.ok("mkdir t");
    let dir = tempfile::tempdir().unwrap();
    let java = dir.path().join("Take.java");
    std::fs::write(&java, JAVA_TAKE).unwrap();
    let want = records(400);
    fill(&m, "t", &want);
    for file in ["records", "follow", "records.jsonl", "follow.jsonl"] {
        // A group per file: each starts at 0.
        let group = file.replace('.', "-");
        let f = format!("t/groups/{group}/{file}");
        let mut at = 0usize;
        for (k, (name, script)) in programs().iter().enumerate() {
            let k = k % 3 + 1;
            let script = script
                .replace("{k}", &k.to_string())
                .replace("{f}", &f)
                .replace("{java}", &java.display().to_string());
            let out = clean(&m, &script);
            let lines: Vec<&str> = out.lines().collect();
            assert_eq!(lines.len(), k, "{name} on {file}: {out}");
            for (i, line) in lines.iter().enumerate() {
                assert!(
                    line.contains(&want[at + i]),
                    "{name} on {file}: line {i} is {line}, not record {}",
                    at + i
                );
            }
            at += k;
            assert_eq!(
                committed(&m, "t", &group),
                at as i64,
                "{name} on {file} took {k}"
            );
        }
        // The next reader starts at the next record.
        let next = clean(&m, &format!("head -n 1 {f}"));
        assert!(next.contains(&want[at]), "{file}: {next}");
    }
}

#[test]
fn records_of_several_partitions_and_large_records_are_taken_whole() {
    let m = TestMount::start(&["--num-partitions", "3"]);
    m.ok("mkdir t");
    // Records larger than bash's and stdio's buffers, in three partitions.
    for p in 0..3 {
        let body: String = (0..20)
            .map(|i| format!("p{p}-{i:02}-{}\n", "y".repeat(9000)))
            .collect();
        std::fs::write(m.path(&format!("t/{p}/append")), body).unwrap();
    }
    let sum = |m: &TestMount| -> i64 {
        m.read("t/groups/g/offsets")
            .lines()
            .map(|l| {
                l.split_whitespace()
                    .nth(1)
                    .unwrap()
                    .parse::<i64>()
                    .unwrap_or(0)
            })
            .sum()
    };
    let out = clean(&m, "head -n 4 t/groups/g/records");
    assert_eq!(out.lines().count(), 4);
    assert!(out.lines().all(|l| l.len() == 9006), "whole records");
    assert_eq!(sum(&m), 4);
    let out = clean(
        &m,
        "bash -c 'for i in 1 2 3; do read -r l; echo ${#l}; done < t/groups/g/records'",
    );
    assert_eq!(out, "9006\n9006\n9006\n");
    assert_eq!(sum(&m), 7);
    // `cat` takes the rest, every record once.
    let rest = clean(&m, "cat t/groups/g/records");
    assert_eq!(rest.lines().count(), 60 - 7);
    assert_eq!(sum(&m), 60);
}

#[test]
fn readers_that_take_one_record_each_go_round_the_partitions() {
    let m = TestMount::start(&["--num-partitions", "3"]);
    m.ok("mkdir t");
    for p in 0..3 {
        let body: String = (0..5).map(|i| format!("p{p}-{i}\n")).collect();
        std::fs::write(m.path(&format!("t/{p}/append")), body).unwrap();
    }
    // Each `head -n 1` takes the next partition's next record, not always partition 0's.
    let taken: Vec<String> = (0..6)
        .map(|_| clean(&m, "head -n 1 t/groups/g/records"))
        .collect();
    assert_eq!(
        taken.concat(),
        "p0-0\np1-0\np2-0\np0-1\np1-1\np2-1\n",
        "one record each, round the partitions"
    );
    // What is left is read once.
    let rest = clean(&m, "cat t/groups/g/records");
    assert_eq!(rest.lines().count(), 15 - 6);
    assert!(!rest.contains("p0-0\n") && !rest.contains("p2-1\n"));
}

#[test]
fn small_reads_get_one_record_and_bulk_reads_whole_records() {
    let m = TestMount::start(&[]);
    m.ok("mkdir t");
    fill(&m, "t", &records(5000));
    // st_blksize is below the bulk size: Python's buffered files read a record at a time.
    assert_eq!(m.ok("stat -c %o t/groups/g/records"), "65536\n");
    let sizes = m.ok("python3 -c \"import os
fd = os.open('t/groups/g/records', os.O_RDONLY)
print(len(os.read(fd, 65536)), len(os.read(fd, 131071)), len(os.read(fd, 131072)))\"");
    // 60-byte lines: one, one, then as many whole and partial as 128 KiB holds.
    assert_eq!(sizes, "61 61 131072\n");
    // The record cut at the end of the bulk read is not committed: 2 + 2148 whole ones.
    assert_eq!(committed(&m, "t", "g"), 2 + 131072 / 61);
    // `cat` reads in bulk: every record once, at well over a record a request.
    let all = clean(&m, "cat t/groups/h/records");
    assert_eq!(all.lines().count(), 5000);
    assert_eq!(committed(&m, "t", "h"), 5000);
}

#[test]
fn a_group_file_reads_as_a_terminal_and_other_files_do_not() {
    let m = TestMount::start(&[]);
    m.ok("mkdir t");
    fill(&m, "t", &records(3));
    let isatty = |path: &str| {
        m.ok(&format!(
            "python3 -c \"import os; fd = os.open('{path}', os.O_RDONLY); print(os.isatty(fd))\""
        ))
    };
    assert_eq!(isatty("t/groups/g/records"), "True\n");
    assert_eq!(isatty("t/groups/g/follow.jsonl"), "True\n");
    // Whole-topic reads commit nothing and read in full buffers; plain files are files.
    assert_eq!(isatty("t/by-offset/earliest"), "False\n");
    assert_eq!(isatty("t/0/by-offset/0"), "False\n");
    assert_eq!(isatty("t/config"), "False\n");
    // Opening and asking takes nothing: the next reader starts at the first record.
    assert!(committed(&m, "t", "g") <= 0);
    assert!(clean(&m, "head -n 1 t/groups/g/records").starts_with("r0000-"));
}

#[test]
fn bash_read_n_and_read_s_set_the_terminal_and_take_what_they_read() {
    let m = TestMount::start(&[]);
    m.ok("mkdir t");
    fill(&m, "t", &records(4));
    // `read -n` and `read -s` set the terminal's modes (tcsetattr) and put them back: both
    // succeed. `read -n 3` uses three bytes of r0000: nothing is committed.
    let out = clean(
        &m,
        "bash -c 'read -n 3 x < t/groups/g/records; echo \"$x\"'",
    );
    assert_eq!(out, "r00\n");
    assert!(committed(&m, "t", "g") <= 0);
    // A `read -n` that reaches the newline, then `read -s`: two whole records taken.
    let out = clean(
        &m,
        "bash -c 'exec 3< t/groups/g/records; read -n 100 x <&3; read -s y <&3; echo \"$x $y\"'",
    );
    let want = records(2);
    assert_eq!(out, format!("{} {}\n", want[0], want[1]));
    assert_eq!(committed(&m, "t", "g"), 2);
}

#[test]
fn a_seek_back_into_the_last_record_reads_it_again() {
    let m = TestMount::start(&[]);
    m.ok("mkdir t");
    // A record whose value holds a newline: bash's `read` takes the first line, seeks back
    // to its end, and the second `read` gets the rest.
    m.ok("printf '%s\\n' '{\"value\":\"a\\nb\"}' '{\"value\":\"c\"}' >> t/0/append.jsonl");
    let out = clean(
        &m,
        "bash -c '{ read x; read y; read z; echo \"$x $y $z\"; } < t/groups/g/records'",
    );
    assert_eq!(out, "a b c\n");
    assert_eq!(committed(&m, "t", "g"), 2);
    // less-like: read, seek to the start, read again: the same bytes; a seek before the
    // last record is ESPIPE.
    m.ok("mkdir u");
    fill(&m, "u", &records(3));
    let out = m.ok("python3 -c \"import os
fd = os.open('u/groups/h/records', os.O_RDONLY)
a = os.read(fd, 256)
os.lseek(fd, 0, os.SEEK_SET)
b = os.read(fd, 256)
c = os.read(fd, 256)
os.lseek(fd, 1, os.SEEK_SET)
try:
    os.read(fd, 256); print('read')
except OSError as e:
    print(a == b, len(c), e.errno)\"");
    assert_eq!(out, format!("True 61 {}\n", libc::ESPIPE));
}

//! `segments/`: the partition's real .log/.index/.timeindex files, read-only and byte for
//! byte, rolling at a small `--segment-bytes`. Real mounts.

use crate::common::decode::batches;
use crate::common::mount::{self, TestMount};

#[test]
fn segments_roll_and_read_byte_for_byte() {
    let m = TestMount::start(&["--segment-bytes", "1000", "--index-interval-bytes", "100"]);
    m.ok("mkdir t");
    for i in 0..60 {
        m.ok(&format!(
            "echo record-{i:03}-{} >> t/0/append",
            "v".repeat(40)
        ));
    }
    let names: Vec<String> = m.ok("ls t/0/segments").lines().map(String::from).collect();
    let logs: Vec<&String> = names.iter().filter(|n| n.ends_with(".log")).collect();
    assert!(logs.len() >= 3, "expected rolls: {names:?}");
    for l in &logs {
        let base = l.trim_end_matches(".log");
        assert_eq!(base.len(), 20);
        assert!(names.contains(&format!("{base}.index")), "{names:?}");
        assert!(names.contains(&format!("{base}.timeindex")), "{names:?}");
    }
    // Every file equals the real one, and the .log files hold every record in order.
    let real = m.partition_dir("t", 0);
    let mut next = 0i64;
    for n in &names {
        m.ok(&format!(
            "cmp t/0/segments/{n} '{}'",
            real.join(n).display()
        ));
        if n.ends_with(".log") {
            let bytes = std::fs::read(m.path(&format!("t/0/segments/{n}"))).unwrap();
            assert!(bytes.len() <= 1000, "{n} is {} bytes", bytes.len());
            let base: i64 = n.trim_end_matches(".log").parse().unwrap();
            assert_eq!(base, next, "segment names are base offsets");
            for (offset, count, _) in batches(&bytes) {
                assert_eq!(offset, next);
                next += count as i64;
            }
        }
    }
    assert_eq!(next, 60);
    assert_eq!(
        m.ok("head -n 1 t/0/by-offset/42"),
        format!("record-042-{}\n", "v".repeat(40))
    );
}

#[test]
fn segment_sizes_are_true_at_each_stat() {
    let m = TestMount::start(&[]);
    m.ok("mkdir t");
    let log = "t/0/segments/00000000000000000000.log";
    let real = m.partition_dir("t", 0).join("00000000000000000000.log");
    for i in 0..5 {
        m.ok(&format!("echo {i} >> t/0/append"));
        let shown: u64 = m.ok(&format!("stat -c %s {log}")).trim().parse().unwrap();
        assert_eq!(shown, std::fs::metadata(&real).unwrap().len());
        assert_eq!(m.ok(&format!("wc -c < {log}")).trim(), shown.to_string());
    }
}

#[test]
fn segments_are_read_only() {
    let m = TestMount::start(&[]);
    m.ok("mkdir t");
    m.ok("echo x >> t/0/append");
    let log = "t/0/segments/00000000000000000000.log";
    m.fails_with(&format!("/bin/echo junk >> {log}"), "Permission denied");
    m.fails_with(&format!("rm -f {log}"), "Operation not permitted");
    m.fails_with(
        &format!("mv {log} t/0/segments/x"),
        "Operation not permitted",
    );
    m.fails_with("touch t/0/segments/new.log", "Operation not permitted");
    m.fails_with(&format!("truncate -s 0 {log}"), "Permission denied");
    m.fails_with(&format!("chmod 666 {log}"), "Operation not permitted");
    m.fails_with("cat t/0/segments/00000000000000000099.log", "No such file");
    assert_eq!(m.end_offset("t", 0), 1);
}

#[test]
fn dump_log_reads_segments_through_the_mount() {
    let m = TestMount::start(&[]);
    m.ok("mkdir t");
    m.ok("echo first >> t/0/append && echo second >> t/0/append");
    let seg = "t/0/segments/00000000000000000000";
    let out = m.ok(&format!(
        "{} dump-log --files {seg}.log,{seg}.index --print-data-log",
        mount::BIN
    ));
    assert!(out.contains(&format!("Dumping {seg}.log")), "{out}");
    assert!(out.contains(&format!("Dumping {seg}.index")), "{out}");
    assert!(out.contains("payload: first"), "{out}");
    assert!(out.contains("payload: second"), "{out}");
    assert!(out.contains("isvalid: true"), "{out}");
}

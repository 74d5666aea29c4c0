//! Consumer groups through the mount (docs/contract.md, "Consuming"): `groups/<G>/records`,
//! `follow`, `offsets`, commits at close, partition sharing between follow readers, and
//! commits that survive a remount and a kill -9 of the daemon. The bytes in
//! `__consumer_offsets` are decoded by kafka-protocol, not by our codec. Real mounts.

use std::time::Duration;

use crate::common::mount::{TestMount, wait_until};
use crate::common::readers::{exits_within, kill, lines_of, spawn, wait_open};

/// Topic `t` with 3 partitions holding p0-0.., p1-0.., p2-0.. (`n` each).
fn three_partitions(m: &TestMount, n: usize) {
    m.ok("mkdir t && echo 3 > t/partitions");
    for p in 0..3 {
        let lines: String = (0..n).map(|i| format!("p{p}-{i}\n")).collect();
        std::fs::write(m.dir.path().join("in"), lines).unwrap();
        m.ok(&format!(
            "cat {} >> t/{p}/append",
            m.dir.path().join("in").display()
        ));
    }
}

fn sorted(s: &str) -> Vec<String> {
    let mut v: Vec<String> = s.lines().map(String::from).collect();
    v.sort();
    v
}

#[test]
fn records_reads_every_partition_from_the_commits_and_commits_at_close() {
    let m = TestMount::start(&["--num-partitions", "1"]);
    three_partitions(&m, 4);
    assert_eq!(m.ok("ls t/groups"), "");
    assert_eq!(m.read("t/groups/g/offsets"), "0 - 4 -\n1 - 4 -\n2 - 4 -\n");
    let all = m.ok("cat t/groups/g/records");
    let want: Vec<String> = (0..3)
        .flat_map(|p| (0..4).map(move |i| format!("p{p}-{i}")))
        .collect();
    let mut want_sorted = want.clone();
    want_sorted.sort();
    assert_eq!(sorted(&all), want_sorted);
    // Each partition in offset order.
    for p in 0..3 {
        let mine: Vec<&str> = all
            .lines()
            .filter(|l| l.starts_with(&format!("p{p}-")))
            .collect();
        assert_eq!(
            mine,
            (0..4).map(|i| format!("p{p}-{i}")).collect::<Vec<_>>()
        );
    }
    // Committed at close: the group is listed, its offsets are at the ends, nothing is left.
    assert_eq!(m.ok("ls t/groups"), "g\n");
    assert_eq!(m.read("t/groups/g/offsets"), "0 4 4 0\n1 4 4 0\n2 4 4 0\n");
    assert_eq!(m.ok("cat t/groups/g/records"), "");
    m.ok("echo p1-4 >> t/1/append");
    assert_eq!(m.ok("cat t/groups/g/records"), "p1-4\n");
    assert_eq!(m.read("t/groups/g/offsets"), "0 4 4 0\n1 5 5 0\n2 4 4 0\n");
}

#[test]
fn only_records_wholly_read_are_committed() {
    let m = TestMount::start(&[]);
    m.ok("mkdir t");
    let lines: String = (0..2000).map(|i| format!("record-{i:05}\n")).collect();
    std::fs::write(m.dir.path().join("in"), &lines).unwrap();
    m.ok(&format!(
        "cat {} >> t/0/append",
        m.dir.path().join("in").display()
    ));
    // Read 4096 bytes of records.jsonl and close: the next reader starts at the first record
    // whose newline was not delivered.
    let first = m.ok("head -c 4096 t/groups/g/records.jsonl");
    let whole = first.matches('\n').count();
    assert!(
        whole > 0 && !first.ends_with('\n'),
        "4096 bytes end inside a record"
    );
    let next = m.ok("head -n 1 t/groups/g/records.jsonl");
    assert!(
        next.starts_with(&format!(
            "{{\"topic\":\"t\",\"partition\":0,\"offset\":{whole},"
        )),
        "{next} after {whole} whole records"
    );
    assert!(next.contains(&format!("record-{whole:05}")), "{next}");
}

#[test]
fn records_is_ebusy_while_the_group_has_a_reader_and_offsets_resets() {
    let m = TestMount::start(&["--num-partitions", "1"]);
    three_partitions(&m, 3);
    let mut f = spawn(&m, "exec cat t/groups/g/follow > /dev/null");
    wait_open(&m, &f, "t/groups/g/follow");
    m.fails_with("cat t/groups/g/records", "Device or resource busy");
    m.fails_with(
        "/bin/echo earliest > t/groups/g/offsets",
        "Device or resource busy",
    );
    kill(&f, libc::SIGKILL);
    exits_within(&mut f, Duration::from_secs(30));
    // The killed reader's release committed what it had delivered.
    assert_eq!(m.read("t/groups/g/offsets"), "0 3 3 0\n1 3 3 0\n2 3 3 0\n");
    m.ok("echo earliest > t/groups/g/offsets");
    assert_eq!(m.read("t/groups/g/offsets"), "0 0 3 3\n1 0 3 3\n2 0 3 3\n");
    m.ok("printf '1 2\\n2 9\\n' > t/groups/g/offsets");
    assert_eq!(m.read("t/groups/g/offsets"), "0 0 3 3\n1 2 3 1\n2 3 3 0\n");
    assert_eq!(
        sorted(&m.ok("cat t/groups/g/records")),
        ["p0-0", "p0-1", "p0-2", "p1-2"]
    );
    m.fails_with("/bin/echo 'x y' > t/groups/g/offsets", "Invalid argument");
    m.ok("echo latest > t/groups/g/offsets");
    assert_eq!(m.ok("cat t/groups/g/records"), "");
    m.fails_with("cat t/groups/bad%name/records", "No such file or directory");
}

/// A reset line naming a partition the topic lacks is a malformed line: EINVAL, and nothing
/// of the open is applied (not even its good lines).
#[test]
fn offsets_line_for_a_partition_the_topic_lacks_is_einval_and_nothing_applied() {
    let m = TestMount::start(&["--num-partitions", "1"]);
    three_partitions(&m, 3);
    m.ok("echo latest > t/groups/g/offsets");
    let before = m.read("t/groups/g/offsets");
    assert_eq!(before, "0 3 3 0\n1 3 3 0\n2 3 3 0\n");
    m.fails_with(
        "/usr/bin/printf '0 1\\n3 0\\n' > t/groups/g/offsets",
        "Invalid argument",
    );
    m.fails_with(
        "/bin/echo 3 earliest > t/groups/g/offsets",
        "Invalid argument",
    );
    assert_eq!(m.read("t/groups/g/offsets"), before);
}

/// The lines two readers print until they have printed `n` together, then any more that come
/// within half a second (a record delivered twice).
fn lines_of_both(
    a: &std::sync::mpsc::Receiver<String>,
    b: &std::sync::mpsc::Receiver<String>,
    n: usize,
) -> (Vec<String>, Vec<String>) {
    let (mut ga, mut gb) = (Vec::new(), Vec::new());
    let drain = |ga: &mut Vec<String>, gb: &mut Vec<String>| {
        ga.extend(a.try_iter());
        gb.extend(b.try_iter());
    };
    wait_until(&format!("{n} lines"), || {
        drain(&mut ga, &mut gb);
        ga.len() + gb.len() >= n
    });
    std::thread::sleep(Duration::from_millis(500));
    drain(&mut ga, &mut gb);
    (ga, gb)
}

#[test]
fn two_follow_readers_share_the_partitions_and_the_one_left_takes_all() {
    let m = TestMount::start(&["--num-partitions", "1"]);
    three_partitions(&m, 0);
    // Each open joins the group and rebalances it before it returns: the first to open is
    // the first member.
    let mut a = spawn(&m, "exec cat t/groups/g/follow");
    let ra = lines_of(&mut a);
    wait_open(&m, &a, "t/groups/g/follow");
    let mut b = spawn(&m, "exec cat t/groups/g/follow");
    let rb = lines_of(&mut b);
    wait_open(&m, &b, "t/groups/g/follow");
    for p in 0..3 {
        m.ok(&format!("echo r{p} >> t/{p}/append"));
    }
    let (ga, gb) = lines_of_both(&ra, &rb, 3);
    // The range assignor: the first reader has partitions 0 and 1, the second 2.
    let mut both: Vec<String> = ga.iter().chain(&gb).cloned().collect();
    both.sort();
    assert_eq!(both, ["r0", "r1", "r2"], "a: {ga:?}, b: {gb:?}");
    assert_eq!(sorted(&ga.join("\n")), ["r0", "r1"]);
    assert_eq!(gb, ["r2"]);
    // The first leaves: the second takes every partition, from the commits.
    kill(&a, libc::SIGTERM);
    exits_within(&mut a, Duration::from_secs(30));
    for p in 0..3 {
        m.ok(&format!("echo s{p} >> t/{p}/append"));
    }
    let (_, gb) = lines_of_both(&ra, &rb, 3);
    assert_eq!(sorted(&gb.join("\n")), ["s0", "s1", "s2"]);
    kill(&b, libc::SIGTERM);
    exits_within(&mut b, Duration::from_secs(30));
    assert_eq!(m.read("t/groups/g/offsets"), "0 2 2 0\n1 2 2 0\n2 2 2 0\n");
}

#[test]
fn commits_survive_a_remount_and_a_kill_9_and_are_kafkas_records() {
    let mut m = TestMount::start(&[]);
    m.ok("mkdir t && printf 'a\\nb\\nc\\n' >> t/0/append");
    assert_eq!(m.ok("head -n 2 t/groups/g/records"), "a\nb\n");
    // head read the whole (small) file: every record was delivered.
    let after_head = m.read("t/groups/g/offsets");
    m.unmount();
    m.mount();
    assert_eq!(m.read("t/groups/g/offsets"), after_head);
    m.ok("echo d >> t/0/append");
    assert_eq!(m.ok("cat t/groups/g2/records"), "a\nb\nc\nd\n");
    m.kill9();
    m.mount();
    assert_eq!(m.read("t/groups/g2/offsets"), "0 4 4 0\n");
    assert_eq!(m.ok("ls t/groups"), "g\ng2\n");
    // __consumer_offsets is a topic of the tree that cannot be appended to.
    assert!(m.ok("ls").contains("__consumer_offsets"));
    m.fails_with(
        "echo x >> __consumer_offsets/0/append",
        "Operation not permitted",
    );
    m.unmount();
    // The commit of g2 in Kafka's format, read by kafka-protocol.
    let p = topicfs::consumer_offsets::partition_for("g2", 50);
    let dir = m.partition_dir("__consumer_offsets", p);
    let commits = offset_commits(&dir);
    assert_eq!(
        commits.last(),
        Some(&("g2".to_string(), "t".to_string(), 0, 4)),
        "{commits:?}"
    );
}

#[test]
fn kafkas_other_internal_topics_are_read_but_never_appended_to() {
    // What a broker's log dir holds besides __consumer_offsets: the transaction coordinator's
    // and the share coordinator's state. Only they write it.
    let m = TestMount::start(&[]);
    m.ok("mkdir __transaction_state __share_group_state plain");
    for t in ["__transaction_state", "__share_group_state"] {
        for f in ["0/append", "0/append.jsonl", "append.jsonl", "append.kv"] {
            m.fails_with(&format!("echo x >> {t}/{f}"), "Operation not permitted");
        }
        assert_eq!(m.ok(&format!("cat {t}/0/by-offset/0")), "");
    }
    m.ok("echo x >> plain/0/append");
}

/// The OffsetCommit records of a `__consumer_offsets` partition: batches decoded by
/// kafka-protocol, keys and values read by Kafka's schema (OffsetCommitKey: version int16,
/// group and topic as int16-length strings, partition int32; OffsetCommitValue: version
/// int16, offset int64...), written here from the schema, not from topicfs's codec.
pub(crate) fn offset_commits(dir: &std::path::Path) -> Vec<(String, String, i32, i64)> {
    fn string(b: &[u8], at: &mut usize) -> String {
        let n = i16::from_be_bytes([b[*at], b[*at + 1]]) as usize;
        let s = String::from_utf8(b[*at + 2..*at + 2 + n].to_vec()).unwrap();
        *at += 2 + n;
        s
    }
    crate::common::decode::decode_dir_records(dir)
        .into_iter()
        .filter_map(|r| {
            let (k, v) = (r.key?, r.value?);
            let version = i16::from_be_bytes([k[0], k[1]]);
            if version > 1 {
                return None; // GroupMetadata keys
            }
            let mut at = 2;
            let group = string(&k, &mut at);
            let topic = string(&k, &mut at);
            let partition = i32::from_be_bytes(k[at..at + 4].try_into().unwrap());
            let offset = i64::from_be_bytes(v[2..10].try_into().unwrap());
            Some((group, topic, partition, offset))
        })
        .collect()
}

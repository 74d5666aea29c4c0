//! Addressing records as kcat and kafka-consumer-groups do (docs/contract.md, "Addressing"):
//! offset forms (`earliest`, `latest`, `-K`, `A..B`), time forms (ISO-8601, dates, `now`,
//! durations before now, `T1..T2`) through real mounts, read by `cat`, `head` and Python.

use std::time::Duration;

use crate::common::mount::TestMount;
use crate::common::readers::{exits_within, spawn};

/// `printf` lines `0`..`n-1` into `t/0`, `per_write` records to a batch.
fn numbered(m: &TestMount, n: usize, per_write: usize) {
    let mut i = 0;
    while i < n {
        let lines: String = (i..(i + per_write).min(n))
            .map(|k| format!("{k}\\n"))
            .collect();
        m.ok(&format!("printf '{lines}' >> t/0/append"));
        i += per_write;
    }
}

/// Opens `file`, reads it to its EOF, appends `append` (JSON lines when it starts with `{`)
/// to `t/0`, reads on from the same open file; returns (first read, second read).
fn read_append_read(m: &TestMount, file: &str, append: &str) -> (String, String) {
    let target = if append.starts_with('{') {
        "t/0/append.jsonl"
    } else {
        "t/0/append"
    };
    let out = m.ok(&format!(
        "python3 - <<'EOF'
f = open({file:?})
first = f.read()
with open({target:?}, 'a') as w:
    w.write({append:?})
print(repr(first), repr(f.read()))
EOF"
    ));
    let (a, b) = out.trim_end().split_once(' ').unwrap();
    (unrepr(a), unrepr(b))
}

fn unrepr(s: &str) -> String {
    s.trim_matches('\'').replace("\\n", "\n")
}

fn range(a: usize, b: usize) -> String {
    (a..b).map(|k| format!("{k}\n")).collect()
}

#[test]
fn offset_forms_earliest_latest_last_k() {
    let m = TestMount::start(&[]);
    m.ok("mkdir t");
    numbered(&m, 10, 4);
    assert_eq!(m.read("t/0/by-offset/earliest"), range(0, 10));
    assert_eq!(m.read("t/0/by-offset/latest"), "");
    assert_eq!(m.read("t/0/by-offset/-3"), range(7, 10));
    assert_eq!(m.read("t/0/by-offset/-0"), "");
    // More than the log holds: from the log start (kcat's rule).
    assert_eq!(m.read("t/0/by-offset/-1000"), range(0, 10));
    let json = m.read("t/0/by-offset/-1.jsonl");
    assert!(json.contains("\"offset\":9"), "{json}");
    assert_eq!(m.ok("head -n 2 t/0/follow/-2"), "8\n9\n");
    // A decimal outside the log is still ENOENT; a malformed form too.
    m.fails_with("cat t/0/by-offset/11", "No such file");
    m.fails_with("cat t/0/by-offset/--1", "No such file");
    m.fails_with("cat t/0/by-offset/now", "No such file");
}

#[test]
fn offset_forms_latest_is_empty_then_grows() {
    let m = TestMount::start(&[]);
    m.ok("mkdir t");
    numbered(&m, 3, 3);
    let (first, then) = read_append_read(&m, "t/0/by-offset/latest", "new\n");
    assert_eq!((first.as_str(), then.as_str()), ("", "new\n"));
}

#[test]
fn offset_ranges_end_inside_plain_and_compressed_batches() {
    let m = TestMount::start(&[]);
    m.ok("mkdir t");
    numbered(&m, 10, 10);
    m.ok("echo compression.type=gzip >> t/config");
    let lines: String = (10..20).map(|k| format!("{k}\\n")).collect();
    m.ok(&format!("printf '{lines}' >> t/0/append"));
    assert_eq!(m.read("t/0/by-offset/3..6"), range(3, 6));
    assert_eq!(m.read("t/0/by-offset/12..15"), range(12, 15));
    assert_eq!(m.read("t/0/by-offset/8..13"), range(8, 13));
    assert_eq!(m.read("t/0/by-offset/earliest..2"), range(0, 2));
    assert_eq!(m.read("t/0/by-offset/-5..-2"), range(15, 18));
    assert_eq!(m.read("t/0/by-offset/5..5"), "");
    let json = m.read("t/0/by-offset/13..15.jsonl");
    assert_eq!(json.lines().count(), 2, "{json}");
    assert!(json.contains("\"offset\":14") && !json.contains("\"offset\":15"));
    // An end past the log end: the file grows up to it, not past it.
    let (first, then) = read_append_read(&m, "t/0/by-offset/18..21", "a\nb\nc\n");
    assert_eq!((first.as_str(), then.as_str()), ("18\n19\n", "a\n"));
}

/// The ms of 2026-12-04T16:49:00Z.
const T0: i64 = 1_796_402_940_000;

/// Records `0`..`n-1` into `t/0`, record k stamped T0 + k seconds, `per_write` to a batch.
fn stamped(m: &TestMount, n: i64, per_write: i64) {
    let mut k = 0;
    while k < n {
        let lines: String = (k..(k + per_write).min(n))
            .map(|i| format!("{{\"value\":\"{i}\",\"timestamp\":{}}}\\n", T0 + i * 1000))
            .collect();
        m.ok(&format!("printf '{lines}' >> t/0/append.jsonl"));
        k += per_write;
    }
}

#[test]
fn time_forms_iso_zones_fractions_and_dates() {
    let m = TestMount::start(&[]);
    m.ok("mkdir t");
    stamped(&m, 10, 3);
    assert_eq!(m.read(&format!("t/0/by-time/{}", T0 + 3000)), range(3, 10));
    assert_eq!(m.read("t/0/by-time/2026-12-04T16:49:03Z"), range(3, 10));
    // The same instant in fixed zones east and west (no DST rules involved).
    assert_eq!(
        m.read("t/0/by-time/2026-12-04T17:49:03+01:00"),
        range(3, 10)
    );
    assert_eq!(
        m.read("t/0/by-time/2026-12-04T11:49:03-05:00"),
        range(3, 10)
    );
    // Fractions: 2.5 s is after record 2, 3.000 s is record 3 itself.
    assert_eq!(m.read("t/0/by-time/2026-12-04T16:49:02.500Z"), range(3, 10));
    assert_eq!(m.read("t/0/by-time/2026-12-04T16:49:03.000Z"), range(3, 10));
    assert_eq!(m.read("t/0/by-time/2026-12-04T16:49:02.999Z"), range(3, 10));
    assert_eq!(m.read("t/0/by-time/2026-12-04T16:49:02.001Z"), range(3, 10));
    // A date is midnight UTC.
    assert_eq!(m.read("t/0/by-time/2026-12-04"), range(0, 10));
    // After the last record: an empty file, not ENOENT.
    assert_eq!(m.read("t/0/by-time/2026-12-05"), "");
    assert_eq!(m.read(&format!("t/0/by-time/{}", T0 + 9001)), "");
    // A zone is required; a zone name is not an offset.
    m.fails_with("cat t/0/by-time/2026-12-04T16:49:03", "No such file");
    m.fails_with("cat t/0/by-time/2026-12-04T16:49:03Z[UTC]", "No such file");
    assert_eq!(m.ok("head -n 1 t/0/follow/@2026-12-04T16:49:08Z"), "8\n");
}

#[test]
fn time_ranges_end_at_the_first_record_at_or_after_t2() {
    let m = TestMount::start(&[]);
    m.ok("mkdir t");
    stamped(&m, 10, 4);
    assert_eq!(
        m.read("t/0/by-time/2026-12-04T16:49:02Z..2026-12-04T16:49:05Z"),
        range(2, 5)
    );
    assert_eq!(
        m.read("t/0/by-time/2026-12-04T16:49:01.5Z..2026-12-04T16:49:06.5Z"),
        range(2, 7)
    );
    // Out of order timestamps: the end is the first record in offset order at or after T2.
    m.ok(&format!(
        "printf '{{\"value\":\"late\",\"timestamp\":{}}}\\n{{\"value\":\"early\",\"timestamp\":{}}}\\n' >> t/0/append.jsonl",
        T0 + 60_000,
        T0 + 1000
    ));
    assert_eq!(
        m.read("t/0/by-time/2026-12-04T16:49:08Z..2026-12-04T16:49:30Z"),
        "8\n9\n"
    );
    let json = m.read(&format!("t/0/by-time/{}..{}.jsonl", T0, T0 + 2000));
    assert_eq!(json.lines().count(), 2, "{json}");
    // An end no record has reached yet: the file grows until one does.
    let append = format!(
        "{{\"value\":\"in\",\"timestamp\":{}}}\n{{\"value\":\"out\",\"timestamp\":{}}}\n{{\"value\":\"x\",\"timestamp\":1}}\n",
        T0 + 100_000,
        T0 + 200_000
    );
    let (first, then) = read_append_read(
        &m,
        "t/0/by-time/2026-12-04T16:49:59Z..2026-12-04T16:52:00Z",
        &append,
    );
    assert_eq!((first.as_str(), then.as_str()), ("late\nearly\n", "in\n"));
}

#[test]
fn time_forms_now_and_durations_before_now() {
    let m = TestMount::start(&[]);
    m.ok("mkdir t");
    m.ok("printf 'a\\nb\\n' >> t/0/append");
    assert_eq!(m.read("t/0/by-time/-1h"), "a\nb\n");
    assert_eq!(m.read("t/0/by-time/-1d"), "a\nb\n");
    assert_eq!(m.read("t/0/by-time/-15m"), "a\nb\n");
    assert_eq!(m.read("t/0/by-time/-90s"), "a\nb\n");
    std::thread::sleep(Duration::from_millis(700));
    m.ok("echo c >> t/0/append");
    assert_eq!(m.read("t/0/by-time/-500ms"), "c\n");
    assert_eq!(m.read("t/0/by-time/-90s..-500ms"), "a\nb\n");
    std::thread::sleep(Duration::from_millis(20));
    assert_eq!(m.read("t/0/by-time/now"), "");
    // follow/@now: only what comes after the open.
    let mut head = spawn(&m, "exec head -n 1 t/0/follow/@now");
    crate::common::readers::wait_open(&m, &head, "t/0/follow/@now");
    m.ok("echo d >> t/0/append");
    let st = exits_within(&mut head, Duration::from_secs(30));
    assert!(st.success());
    let mut out = String::new();
    std::io::Read::read_to_string(head.stdout.as_mut().unwrap(), &mut out).unwrap();
    assert_eq!(out, "d\n");
    assert_eq!(m.ok("head -n 1 t/0/follow/@-1h"), "a\n");
}

#[test]
fn count_is_the_data_records_now() {
    let m = TestMount::start(&[]);
    m.ok("mkdir t && echo segment.bytes=1024 >> t/config");
    assert_eq!(m.read("t/0/count"), "0\n");
    numbered(&m, 200, 7);
    let segments = std::fs::read_dir(m.partition_dir("t", 0))
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .path()
                .extension()
                .is_some_and(|x| x == "log")
        })
        .count();
    assert!(segments > 2, "{segments} segments");
    assert_eq!(m.read("t/0/count"), "200\n");
    // stat's size is the text's.
    assert_eq!(m.ok("stat -c %s t/0/count"), "4\n");
    m.ok("echo one-more >> t/0/append");
    assert_eq!(m.ok("cat t/0/count"), "201\n");
    assert_eq!(m.ok("ls t/0 | grep -x count"), "count\n");
    m.fails_with("echo 5 > t/0/count", "Permission denied");
}

/// `t/groups/g/offsets` as (partition, committed) pairs.
fn committed(m: &TestMount) -> Vec<(u32, String)> {
    m.read("t/groups/g/offsets")
        .lines()
        .map(|l| {
            let f: Vec<&str> = l.split(' ').collect();
            (f[0].parse().unwrap(), f[1].to_string())
        })
        .collect()
}

fn at(pairs: &[(u32, &str)]) -> Vec<(u32, String)> {
    pairs.iter().map(|(p, o)| (*p, o.to_string())).collect()
}

#[test]
fn group_resets_as_kafka_consumer_groups() {
    let m = TestMount::start(&["--num-partitions", "2"]);
    m.ok("mkdir t");
    stamped(&m, 10, 4);
    m.ok("printf 'a\\nb\\nc\\n' >> t/1/append");
    m.ok("echo '0 earliest' > t/groups/g/offsets");
    assert_eq!(committed(&m), at(&[(0, "0"), (1, "-")]));
    m.ok("echo '1 latest' > t/groups/g/offsets");
    assert_eq!(committed(&m), at(&[(0, "0"), (1, "3")]));
    m.ok("echo '0 7' > t/groups/g/offsets");
    m.ok("echo 'shift-by -2' > t/groups/g/offsets");
    assert_eq!(committed(&m), at(&[(0, "5"), (1, "1")]));
    // Clamped to the log, as Kafka's tool clamps.
    m.ok("echo 'shift-by -100' > t/groups/g/offsets");
    assert_eq!(committed(&m), at(&[(0, "0"), (1, "0")]));
    m.ok("echo 'shift-by 100' > t/groups/g/offsets");
    assert_eq!(committed(&m), at(&[(0, "10"), (1, "3")]));
    m.ok("echo '0 1000' > t/groups/g/offsets");
    assert_eq!(committed(&m), at(&[(0, "10"), (1, "3")]));
    // bash's builtin printf writes a line at a time: each line of the open still starts from
    // what the lines before it set, also those of earlier writes.
    m.ok(r#"bash -c "printf '0 5\n1 1\nshift-by 1\nshift-by 1\n' > t/groups/g/offsets""#);
    assert_eq!(committed(&m), at(&[(0, "7"), (1, "3")]));
    // A time: the first record at or after it; none after it is the log end.
    m.ok("echo 'to-datetime 2026-12-04T17:49:03.500+01:00' > t/groups/g/offsets");
    assert_eq!(committed(&m), at(&[(0, "4"), (1, "0")]));
    // Durations before now: partition 1 was written now; partition 0 is stamped T0 on.
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64;
    let first_at = |ts: i64| {
        (0..10)
            .find(|k| T0 + k * 1000 >= ts)
            .unwrap_or(10)
            .to_string()
    };
    m.ok("echo 'by-duration PT1H' > t/groups/g/offsets");
    assert_eq!(
        committed(&m),
        vec![(0, first_at(now - 3_600_000)), (1, "0".to_string())]
    );
    m.ok("echo 'by-duration PT0S' > t/groups/g/offsets");
    let after = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64;
    assert_eq!(committed(&m)[1], (1, "3".to_string()));
    let p0 = &committed(&m)[0].1;
    assert!(*p0 == first_at(now) || *p0 == first_at(after), "{p0}");
    // A negative offset, or a line of no form, is EINVAL and changes nothing.
    let before = committed(&m);
    for bad in [
        "0 -1",
        "shift-by",
        "to-datetime soon",
        "by-duration 1h",
        "0 earliest x",
    ] {
        m.fails_with(
            &format!("/bin/echo '{bad}' > t/groups/g/offsets"),
            "Invalid argument",
        );
    }
    assert_eq!(committed(&m), before);
}

fn sorted_lines(s: &str) -> Vec<String> {
    let mut v: Vec<String> = s.lines().map(str::to_string).collect();
    v.sort();
    v
}

#[test]
fn whole_topic_reads_without_a_group() {
    let m = TestMount::start(&["--num-partitions", "3"]);
    m.ok("mkdir t");
    for p in 0..3 {
        let lines: String = (0..4)
            .map(|k| {
                format!(
                    "{{\"value\":\"p{p}-{k}\",\"timestamp\":{}}}\\n",
                    T0 + k * 1000
                )
            })
            .collect();
        m.ok(&format!("printf '{lines}' >> t/{p}/append.jsonl"));
    }
    let all: Vec<String> = (0..3)
        .flat_map(|p| (0..4).map(move |k| format!("p{p}-{k}")))
        .collect();
    let mut want = all.clone();
    want.sort();
    let earliest = m.read("t/by-offset/earliest");
    assert_eq!(sorted_lines(&earliest), want);
    // Each partition stays in offset order.
    for p in 0..3 {
        let mine: Vec<&str> = earliest
            .lines()
            .filter(|l| l.starts_with(&format!("p{p}-")))
            .collect();
        assert_eq!(mine, [0, 1, 2, 3].map(|k| format!("p{p}-{k}")));
    }
    assert_eq!(
        sorted_lines(&m.read("t/by-offset/-1")),
        ["p0-3", "p1-3", "p2-3"]
    );
    assert_eq!(m.read("t/by-offset/latest"), "");
    assert_eq!(
        sorted_lines(&m.read("t/by-time/2026-12-04T16:49:02Z")),
        ["p0-2", "p0-3", "p1-2", "p1-3", "p2-2", "p2-3"]
    );
    assert_eq!(
        sorted_lines(&m.read("t/by-time/2026-12-04T16:49:01Z..2026-12-04T16:49:02Z")),
        ["p0-1", "p1-1", "p2-1"]
    );
    let json: Vec<serde_json::Value> = m
        .read("t/by-offset/-1.jsonl")
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let mut parts: Vec<i64> = json
        .iter()
        .map(|r| r["partition"].as_i64().unwrap())
        .collect();
    parts.sort();
    assert_eq!(parts, [0, 1, 2]);
    assert!(json.iter().all(|r| r["topic"] == "t" && r["offset"] == 3));
    assert_eq!(
        sorted_lines(&m.ok("head -n 3 t/follow/-1")),
        ["p0-3", "p1-3", "p2-3"]
    );
    // follow/latest: only what comes after the open, from any partition.
    let mut head = spawn(&m, "exec head -n 1 t/follow/latest");
    crate::common::readers::wait_open(&m, &head, "t/follow/latest");
    m.ok("echo new >> t/2/append");
    assert!(exits_within(&mut head, Duration::from_secs(30)).success());
    let mut out = String::new();
    std::io::Read::read_to_string(head.stdout.as_mut().unwrap(), &mut out).unwrap();
    assert_eq!(out, "new\n");
    // No group was made, nothing committed.
    assert_eq!(m.ok("ls t/groups"), "");
    // A decimal offset or an offset range means nothing across partitions.
    m.fails_with("cat t/by-offset/1", "No such file");
    m.fails_with("cat t/by-offset/earliest..2", "No such file");
    assert_eq!(m.ok("ls t/by-offset"), "");
}

#[test]
fn earliest_and_count_follow_retention_moving_the_log_start() {
    let m = TestMount::start(&["--retention-check-interval-ms", "100"]);
    m.ok("mkdir t && echo segment.bytes=600 >> t/config");
    numbered(&m, 60, 3);
    // A follow stream opened at `earliest` before retention runs.
    let mut early = spawn(&m, "exec cat t/0/follow/earliest");
    let rx = crate::common::readers::lines_of(&mut early);
    assert_eq!(
        crate::common::readers::next_line(&rx, Duration::from_secs(30)).as_deref(),
        Some("0")
    );
    m.ok("echo retention.bytes=700 >> t/config");
    crate::common::mount::wait_until("retention deleted segments", || {
        m.read("t/0/log-start-offset").trim() != "0"
    });
    let start: usize = m.read("t/0/log-start-offset").trim().parse().unwrap();
    // `earliest` is the log start now; 0 is gone; count is what is left.
    assert_eq!(m.read("t/0/by-offset/earliest"), range(start, 60));
    m.fails_with("cat t/0/by-offset/0", "No such file");
    assert_eq!(m.read("t/0/count"), format!("{}\n", 60 - start));
    assert_eq!(m.read("t/0/by-offset/-1000"), range(start, 60));
    assert_eq!(m.ok("head -n 1 t/0/follow/earliest"), format!("{start}\n"));
    // The stream opened before goes on to the end, each record once, then to new ones.
    m.ok("echo after >> t/0/append");
    let mut got = vec!["0".to_string()];
    while got.last().map(String::as_str) != Some("after") {
        match crate::common::readers::next_line(&rx, Duration::from_secs(30)) {
            Some(l) => got.push(l),
            None => panic!("the early stream stopped after {got:?}"),
        }
    }
    let numbers: Vec<usize> = got[..got.len() - 1]
        .iter()
        .map(|l| l.parse().unwrap())
        .collect();
    assert!(numbers.windows(2).all(|w| w[0] < w[1]), "{numbers:?}");
    assert_eq!(numbers.last(), Some(&59));
    crate::common::readers::kill(&early, libc::SIGTERM);
}

#[test]
fn durations_and_times_cross_segment_boundaries() {
    let m = TestMount::start(&[]);
    m.ok("mkdir t && echo segment.bytes=500 >> t/config");
    stamped(&m, 40, 2);
    let segments = std::fs::read_dir(m.partition_dir("t", 0))
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .path()
                .extension()
                .is_some_and(|x| x == "log")
        })
        .count();
    assert!(segments > 3, "{segments} segments");
    assert_eq!(
        m.read("t/0/by-time/2026-12-04T16:49:07Z..2026-12-04T16:49:33Z"),
        range(7, 33)
    );
    assert_eq!(m.read("t/0/by-time/2026-12-04T16:49:35.5Z"), range(36, 40));
    // A duration before now reaching back over every segment (records stamped in 2026-12-04,
    // before or after the clock of the test: -100000d is always before them).
    assert_eq!(m.read("t/0/by-time/-100000d"), range(0, 40));
    assert_eq!(m.read("t/0/by-offset/5..37"), range(5, 37));
    assert_eq!(m.read("t/0/count"), "40\n");
}

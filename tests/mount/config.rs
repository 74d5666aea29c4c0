//! Topic configuration through `<topic>/config`, retention, compression and timestamp types,
//! through a real mount.

use crate::common::decode::batches;
use crate::common::mount::{TestMount, wait_until};

fn segment_logs(m: &TestMount, t: &str) -> Vec<String> {
    m.ok(&format!("ls {t}/0/segments"))
        .lines()
        .filter(|n| n.ends_with(".log"))
        .map(str::to_string)
        .collect()
}

#[test]
fn config_overrides_take_effect_and_survive_a_remount() {
    let mut m = TestMount::start(&["--retention-check-interval-ms", "100"]);
    m.ok("mkdir t");
    assert!(m.read("t/config").contains("segment.bytes=1073741824\n"));
    m.ok("echo segment.bytes=600 >> t/config");
    let cfg = m.read("t/config");
    assert!(
        cfg.starts_with("# topic overrides\nsegment.bytes=600\n# broker defaults\n"),
        "{cfg}"
    );
    m.ok(
        "for i in $(seq 1 40); do echo \"record-$i-xxxxxxxxxxxxxxxxxxxxxxxx\" >> t/0/append; done",
    );
    let logs = segment_logs(&m, "t");
    assert!(logs.len() >= 4, "rolled at 600 bytes: {logs:?}");
    // Bad keys and values are refused, and nothing changes (dash's builtin echo reports every
    // write error as "I/O error", so /bin/echo shows the errno).
    m.fails_with("/bin/echo nope=1 >> t/config", "Invalid argument");
    m.fails_with(
        "/bin/echo retention.ms=soon >> t/config",
        "Invalid argument",
    );
    m.fails_with(
        "/bin/echo compression.type=brotli >> t/config",
        "Invalid argument",
    );
    assert_eq!(m.read("t/config"), cfg);
    // Retention by size: the oldest segments go, log-start-offset moves, lookups below it fail.
    m.ok("echo retention.bytes=700 >> t/config");
    wait_until("retention deleted segments", || {
        m.read("t/0/log-start-offset").trim() != "0"
    });
    let start: i64 = m.read("t/0/log-start-offset").trim().parse().unwrap();
    assert!(start > 0 && start < 40);
    m.fails_with(
        &format!("cat t/0/by-offset/{}", start - 1),
        "No such file or directory",
    );
    assert_eq!(
        m.ok(&format!("head -n 1 t/0/by-offset/{start}")),
        format!("record-{}-xxxxxxxxxxxxxxxxxxxxxxxx\n", start + 1)
    );
    assert!(segment_logs(&m, "t").len() < logs.len());
    // Removing an override brings the default back; overrides survive a remount.
    m.ok("echo retention.bytes= >> t/config");
    assert!(m.read("t/config").contains("\n# retention.bytes=-1\n"));
    m.unmount();
    m.remount();
    assert!(
        m.read("t/config")
            .starts_with("# topic overrides\nsegment.bytes=600\n")
    );
    assert_eq!(m.read("t/0/log-start-offset").trim(), start.to_string());
    m.ok("mkdir u");
    assert!(
        m.read("u/config").contains("segment.bytes=1073741824\n"),
        "a new topic takes the broker defaults"
    );
}

#[test]
fn retention_by_time_empties_the_log_but_never_reuses_offsets() {
    let m = TestMount::start(&[
        "--retention-check-interval-ms",
        "100",
        "--segment-bytes",
        "400",
    ]);
    m.ok("mkdir t");
    m.ok("for i in $(seq 1 20); do echo \"old-$i-yyyyyyyyyyyyyyyyy\" >> t/0/append; done");
    m.ok("echo retention.ms=1 >> t/config");
    wait_until("every segment expired", || {
        m.read("t/0/log-start-offset").trim() == "20"
    });
    assert_eq!(m.read("t/0/log-end-offset"), "20\n");
    assert_eq!(m.ok("cat t/0/by-offset/20"), "");
    m.ok("echo retention.ms= >> t/config");
    m.ok("echo fresh >> t/0/append");
    assert_eq!(m.ok("cat t/0/by-offset/20"), "fresh\n");
}

#[test]
fn compression_and_log_append_time_as_kafka_writes_them() {
    let m = TestMount::start(&[]);
    m.ok("mkdir t");
    for (i, codec) in ["gzip", "snappy", "lz4", "zstd", "uncompressed"]
        .iter()
        .enumerate()
    {
        m.ok(&format!("echo compression.type={codec} >> t/config"));
        m.ok(&format!("printf '{codec}-a\\n{codec}-b\\n' >> t/0/append"));
        assert_eq!(
            m.ok(&format!("head -n 1 t/0/by-offset/{}", 2 * i + 1)),
            format!("{codec}-b\n")
        );
    }
    let name = &segment_logs(&m, "t")[0];
    let bytes = std::fs::read(m.path(&format!("t/0/segments/{name}"))).unwrap();
    // Attribute codec bits of each batch, read from the raw bytes (offset 21..23).
    let mut pos = 0;
    let mut codecs = Vec::new();
    while pos + 61 <= bytes.len() {
        let len = i32::from_be_bytes(bytes[pos + 8..pos + 12].try_into().unwrap()) as usize + 12;
        codecs.push(bytes[pos + 22] & 7);
        pos += len;
    }
    assert_eq!(codecs, vec![1, 2, 3, 4, 0]);
    // Every batch decodes with the independent decoder (the values, in order).
    let vals: Vec<Vec<u8>> = batches(&bytes).into_iter().flat_map(|b| b.2).collect();
    assert_eq!(vals.len(), 10);
    assert_eq!(vals[9], b"uncompressed-b".to_vec());
    // LogAppendTime: the batch carries the append time; by-time honours it.
    m.ok("echo message.timestamp.type=LogAppendTime >> t/config");
    let before = topicfs::util::clock::now_ms();
    m.ok(r#"echo '{"value":"stamped","timestamp":5}' >> t/0/append.jsonl"#);
    let line = m.read("t/0/by-offset/10.jsonl");
    let v: serde_json::Value = serde_json::from_str(line.trim()).unwrap();
    assert_eq!(v["timestampType"], "LogAppendTime");
    assert!(v["timestamp"].as_i64().unwrap() >= before, "{line}");
    assert_eq!(
        m.ok(&format!("head -n 1 t/0/by-time/{before}")),
        "stamped\n"
    );
}

#[test]
fn an_open_by_offset_stream_keeps_reading_what_retention_deletes() {
    use std::io::Read;
    let m = TestMount::start(&[
        "--retention-check-interval-ms",
        "100",
        "--segment-bytes",
        "50000",
    ]);
    m.ok("mkdir t");
    let lines: String = (0..6000)
        .map(|i| format!("streamed-{i:05}-{}\n", "s".repeat(80)))
        .collect();
    let f = m.dir.path().join("lines");
    std::fs::write(&f, &lines).unwrap();
    m.ok(&format!("cat {} >> t/0/append", f.display()));
    assert!(segment_logs(&m, "t").len() > 5);
    // A program opens the stream and reads only its first 8 KiB...
    let mut stream = std::fs::File::open(m.path("t/0/by-offset/0")).unwrap();
    let mut got = vec![0u8; 8192];
    stream.read_exact(&mut got).unwrap();
    // ...while retention deletes every segment it has not read yet.
    m.ok("echo retention.ms=1 >> t/config");
    wait_until("retention deleted everything", || {
        m.read("t/0/log-start-offset").trim() == "6000"
    });
    assert_eq!(segment_logs(&m, "t").len(), 1);
    stream.read_to_end(&mut got).unwrap();
    assert_eq!(String::from_utf8(got).unwrap(), lines);
    m.fails_with("cat t/0/by-offset/0", "No such file or directory");
}

#[test]
fn config_writes_are_applied_whole_or_not_at_all_with_kafkas_validators() {
    let mut m = TestMount::start(&[]);
    m.ok("mkdir t");
    let before = m.read("t/config");
    // A write with one bad line changes nothing, not even its good lines.
    m.fails_with(
        "/usr/bin/printf 'retention.ms=12345\\nbogus.key=1\\n' >> t/config",
        "Invalid argument",
    );
    assert_eq!(m.read("t/config"), before);
    // Out-of-range values are refused as Kafka's LogConfig refuses them, never clamped.
    for bad in [
        "retention.ms=-2",
        "flush.messages=0",
        "segment.bytes=99999999999",
        "segment.bytes=13",
        "segment.index.bytes=3",
        "max.message.bytes=-1",
        "compression.type=none",
        "message.timestamp.type=createtime",
    ] {
        m.fails_with(
            &format!("/usr/bin/printf '{bad}\\nsegment.ms=5000\\n' >> t/config"),
            "Invalid argument",
        );
        assert_eq!(m.read("t/config"), before, "{bad}");
        assert!(
            m.daemon_log()
                .contains(&format!("Invalid value {}", bad.split_once('=').unwrap().1))
        );
    }
    // The bounds themselves are valid; a good write applies all its lines at once.
    m.ok("printf 'retention.ms=-1\\nretention.bytes=-5\\nsegment.bytes=2147483647\\n' >> t/config");
    let cfg = m.read("t/config");
    for want in [
        "retention.ms=-1",
        "retention.bytes=-5",
        "segment.bytes=2147483647",
    ] {
        assert!(cfg.lines().any(|l| l == want), "{want}: {cfg}");
    }
    // A write without a trailing newline is a complete line, judged at write(); the open's
    // lines are applied at close, and none of them once a write of the open failed.
    let script = r#"
import os
fd = os.open("t/config", os.O_WRONLY | os.O_APPEND)
os.write(fd, b"retention.ms=777")
print("OPEN", open("t/config").read().count("retention.ms=777"))
os.close(fd)
fd = os.open("t/config", os.O_WRONLY | os.O_APPEND)
os.write(fd, b"retention.ms=888")
try:
    os.write(fd, b"retention.ms=-7")
    print("WRITE-ACCEPTED")
except OSError as e:
    print("WRITE-FAILED", e.errno)
os.close(fd)
"#;
    let out = m.ok(&format!("python3 -c '{script}'"));
    assert!(out.contains("OPEN 0\n"), "{out}");
    assert!(
        out.contains(&format!("WRITE-FAILED {}", libc::EINVAL)),
        "{out}"
    );
    let cfg = m.read("t/config");
    assert!(cfg.lines().any(|l| l == "retention.ms=777"), "{cfg}");
    // Persisted as applied.
    m.unmount();
    m.remount();
    let cfg = m.read("t/config");
    for want in [
        "retention.ms=777",
        "retention.bytes=-5",
        "segment.bytes=2147483647",
    ] {
        assert!(cfg.lines().any(|l| l == want), "{want}: {cfg}");
    }
    // partitions: also judged at write, whole.
    m.fails_with(
        "/usr/bin/printf '3\\n2\\n' > t/partitions",
        "Invalid argument",
    );
    assert_eq!(m.read("t/partitions"), "1\n");
    m.ok("printf 2 > t/partitions");
    assert_eq!(m.read("t/partitions"), "2\n");
}

#[test]
fn a_stored_override_the_validators_refuse_is_dropped_alone() {
    let mut m = TestMount::start(&[]);
    m.ok("mkdir t && echo segment.bytes=600 >> t/config");
    m.unmount();
    // An older topicfs stored values Kafka refuses (it accepted `none`, clamped nothing).
    let file = m.log_dirs[0].join("topicfs-topic-configs");
    let mut text = std::fs::read_to_string(&file).unwrap();
    text.push_str("t compression.type=none\nt flush.messages=0\n");
    std::fs::write(&file, text).unwrap();
    m.remount();
    let cfg = m.read("t/config");
    assert!(
        cfg.starts_with("# topic overrides\nsegment.bytes=600\n# broker defaults\n"),
        "{cfg}"
    );
    assert!(
        cfg.lines().any(|l| l == "# compression.type=producer"),
        "{cfg}"
    );
    let log = m.daemon_log();
    assert!(log.contains("ignoring stored config override compression.type=none"));
    assert!(log.contains("ignoring stored config override flush.messages=0"));
    // The topic stays configurable.
    m.ok("echo retention.ms=5000 >> t/config");
    assert!(m.read("t/config").lines().any(|l| l == "retention.ms=5000"));
}

#[test]
fn ms_keys_win_over_hours_and_minutes_on_the_command_line_as_in_kafka() {
    // Kafka: log.retention.ms > log.retention.minutes > log.retention.hours, and
    // log.roll.ms > log.roll.hours, whatever order they are given in.
    let mut m = TestMount::start(&[
        "--retention-ms",
        "5000",
        "--retention-hours",
        "2",
        "--retention-minutes",
        "3",
        "--roll-ms",
        "7000",
        "--roll-hours",
        "1",
    ]);
    m.ok("mkdir t");
    let cfg = m.read("t/config");
    assert!(cfg.contains("retention.ms=5000\n"), "{cfg}");
    assert!(cfg.contains("segment.ms=7000\n"), "{cfg}");
    m.unmount();
    m.set_args(&[
        "-o",
        "log.retention.ms=6000,log.retention.hours=2,log.retention.minutes=3",
    ]);
    m.remount();
    let cfg = m.read("t/config");
    assert!(cfg.contains("retention.ms=6000\n"), "{cfg}");
    m.unmount();
    m.set_args(&["-o", "log.retention.hours=2,log.retention.minutes=3"]);
    m.remount();
    let cfg = m.read("t/config");
    assert!(
        cfg.contains("retention.ms=180000\n"),
        "minutes win over hours: {cfg}"
    );
}

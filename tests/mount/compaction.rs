//! A compacted topic through a real mount: `cleanup.policy=compact` in `<topic>/config`,
//! records without a key refused (EINVAL), the cleaner thread cleaning in the background,
//! `by-offset/N` reading the compacted log (a removed offset opens at the next record), a
//! stream opened before a clean reading on across it, and the checkpoint in the log dir.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};

use crate::common::mount::{TestMount, wait_until};
use serde_json::Value;

/// (offset, key, value) of each line of a `.jsonl` read.
fn parse(jsonl: &str) -> Vec<(i64, String, Option<String>)> {
    jsonl
        .lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            (
                v["offset"].as_i64().unwrap(),
                v["key"].as_str().unwrap().to_string(),
                v["value"].as_str().map(str::to_string),
            )
        })
        .collect()
}

#[test]
fn a_compacted_topic_reads_through_by_offset_as_a_consumer_reads_it() {
    let m = TestMount::start(&[
        "--num-partitions",
        "1",
        "--segment-bytes",
        "400",
        "--log-cleaner-backoff-ms",
        "50",
    ]);
    m.ok("mkdir t");
    // Cleaning waits: a ratio of 1 is never exceeded.
    m.ok("echo cleanup.policy=compact >> t/config");
    m.ok("echo min.cleanable.dirty.ratio=1 >> t/config");
    assert!(m.read("t/config").contains("cleanup.policy=compact"));
    m.fails_with("/bin/echo no-key >> t/0/append", "Invalid argument");
    m.fails_with(
        r#"/bin/echo '{"value":"no key"}' >> t/0/append.jsonl"#,
        "Invalid argument",
    );
    let mut all = Vec::new();
    for i in 0..80 {
        let k = format!("k{}", i % 4);
        let v = format!("v{i}");
        m.ok(&format!(
            r#"echo '{{"key":"{k}","value":"{v}"}}' >> t/0/append.jsonl"#
        ));
        all.push((i as i64, k, Some(v)));
    }
    assert_eq!(m.end_offset("t", 0), 80);
    assert_eq!(parse(&m.read("t/0/by-offset/0.jsonl")), all);
    // A stream opened now reads one line, then the log is cleaned under it.
    let f = std::fs::File::open(m.path("t/0/by-offset/0.jsonl")).unwrap();
    let mut open_stream = BufReader::new(f);
    let mut first = String::new();
    open_stream.read_line(&mut first).unwrap();
    m.ok("echo min.cleanable.dirty.ratio=0.5 >> t/config");
    wait_until("the cleaner checkpoints t-0", || {
        m.first_dirty("t", 0).is_some()
    });
    let end = m.first_dirty("t", 0).unwrap();
    assert!(end > 0 && end < 80, "{end}");
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut open_stream, &mut rest).unwrap();
    assert_eq!(
        parse(&(first + &rest)),
        all,
        "a stream opened before the clean reads the log it opened"
    );
    // What a consumer of the compacted log gets: below the first dirty offset the latest
    // record of each key, everything after it.
    let mut latest: BTreeMap<&str, i64> = BTreeMap::new();
    for (o, k, _) in all.iter().filter(|r| r.0 < end) {
        latest.insert(k, *o);
    }
    let want: Vec<_> = all
        .iter()
        .filter(|(o, k, _)| *o >= end || latest.get(k.as_str()) == Some(o))
        .cloned()
        .collect();
    assert!(want.len() < all.len());
    assert_eq!(parse(&m.read("t/0/by-offset/0.jsonl")), want);
    assert_eq!(
        m.read("t/0/by-offset/0"),
        want.iter()
            .map(|r| format!("{}\n", r.2.as_deref().unwrap()))
            .collect::<String>()
    );
    // An offset the clean removed opens at the next record that exists.
    let gap = (0..end).find(|o| !want.iter().any(|r| r.0 == *o)).unwrap();
    let next = want.iter().find(|r| r.0 > gap).unwrap().clone();
    assert_eq!(
        parse(&m.ok(&format!("head -n 1 t/0/by-offset/{gap}.jsonl"))),
        vec![next]
    );
    // The log end and start do not move; segments/ lists no temporary file.
    assert_eq!(m.end_offset("t", 0), 80);
    assert_eq!(m.read("t/0/log-start-offset").trim(), "0");
    let listing = m.ok("ls t/0/segments");
    assert!(
        !listing.contains("cleaned") && !listing.contains("swap") && !listing.contains("deleted"),
        "{listing}"
    );
}

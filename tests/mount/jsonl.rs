//! JSON Lines through the mount: `append.jsonl` (key, value, headers, timestamp; keyed
//! records to Kafka's murmur2 partition) and `by-offset/<N>.jsonl` / `by-time/<T>.jsonl`.

use crate::common::mount::TestMount;
use serde_json::{Value, json};

fn json_lines(s: &str) -> Vec<Value> {
    s.lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{l}: {e}")))
        .collect()
}

#[test]
fn a_json_record_goes_in_and_comes_out_whole() {
    let m = TestMount::start(&[]);
    m.ok("mkdir t");
    m.ok(r#"echo '{"key":"k1","value":"v1","headers":{"h":"x","n":null},"timestamp":1585448614028}' >> t/0/append.jsonl"#);
    m.ok(r#"echo '{"value":{"base64":"AP8K"}}' >> t/0/append.jsonl"#);
    m.ok("echo plain >> t/0/append");
    let out = json_lines(&m.read("t/0/by-offset/0.jsonl"));
    assert_eq!(out.len(), 3);
    assert_eq!(
        out[0],
        json!({"topic": "t", "partition": 0, "offset": 0, "timestamp": 1585448614028i64, "timestampType": "CreateTime",
               "key": "k1", "value": "v1", "headers": [["h", "x"], ["n", null]]})
    );
    assert_eq!(out[1]["value"], json!({"base64": "AP8K"}));
    assert_eq!(out[1]["key"], Value::Null);
    assert_eq!(out[2]["value"], json!("plain"));
    assert_eq!(out[2]["headers"], json!([]));
    // The plain view shows the values.
    assert_eq!(m.ok("head -n 1 t/0/by-offset/0"), "v1\n");
    assert_eq!(m.read("t/0/by-offset/2.jsonl").lines().count(), 1);
    // by-time with the record's own timestamp.
    let t = json_lines(&m.read("t/0/by-time/1585448614028.jsonl"));
    assert_eq!(t[0]["offset"], json!(0));
    m.fails_with("cat t/0/by-offset/4.jsonl", "No such file or directory");
    assert_eq!(m.read("t/0/by-offset/3.jsonl"), "");
}

/// What `.jsonl` shows can be written back: a topic copied with `cat` has the same records.
#[test]
fn json_output_fed_back_to_append_jsonl_copies_the_records() {
    let m = TestMount::start(&[]);
    m.ok("mkdir t u");
    m.ok(r#"echo '{"key":"k1","value":"v1","headers":{"h":"x"},"timestamp":1585448614028}' >> t/0/append.jsonl"#);
    m.ok(r#"echo '{"value":{"base64":"AP8K"}}' >> t/0/append.jsonl"#);
    m.ok("cat t/0/by-offset/0.jsonl > u/0/append.jsonl");
    let (from, to) = (
        json_lines(&m.read("t/0/by-offset/0.jsonl")),
        json_lines(&m.read("u/0/by-offset/0.jsonl")),
    );
    assert_eq!(from.len(), 2);
    assert_eq!(to.len(), 2);
    for (a, b) in from.iter().zip(&to) {
        for field in ["offset", "timestamp", "key", "value", "headers"] {
            assert_eq!(a[field], b[field], "{field}: {a} {b}");
        }
        assert_eq!(b["topic"], json!("u"));
    }
}

#[test]
fn a_bad_json_line_is_einval_and_nothing_is_appended() {
    let m = TestMount::start(&[]);
    m.ok("mkdir t");
    let f = m.dir.path().join("mixed");
    std::fs::write(&f, "{\"value\":\"ok\"}\nnot json\n").unwrap();
    m.fails_with(
        &format!("cat {} >> t/0/append.jsonl", f.display()),
        "Invalid argument",
    );
    m.fails_with(
        r#"/bin/echo '{"value":1}' >> t/0/append.jsonl"#,
        "Invalid argument",
    );
    assert_eq!(m.end_offset("t", 0), 0);
    // Blank lines are skipped.
    m.ok(r#"printf '\n{"value":"a"}\n\n' >> t/0/append.jsonl"#);
    assert_eq!(m.read("t/0/by-offset/0"), "a\n");
}

#[test]
fn keyed_records_go_to_kafkas_murmur2_partition() {
    let m = TestMount::start(&["--num-partitions", "5"]);
    m.ok("mkdir t");
    let keys = [
        "21",
        "foobar",
        "abc",
        "a-little-bit-long-string",
        "k7",
        "k8",
        "k9",
    ];
    let lines: String = keys
        .iter()
        .map(|k| format!("{{\"key\":\"{k}\",\"value\":\"{k}\"}}\n"))
        .collect();
    let f = m.dir.path().join("keyed");
    std::fs::write(&f, lines).unwrap();
    m.ok(&format!("cat {} >> t/append.jsonl", f.display()));
    // Kafka: Utils.toPositive(Utils.murmur2("21")) = 1173551340, % 5 = 0.
    assert_eq!(topicfs::produce::partition_for_key(b"21", 5), 0);
    for k in keys {
        let p = topicfs::produce::partition_for_key(k.as_bytes(), 5);
        let values = m.read(&format!("t/{p}/by-offset/0"));
        assert!(values.lines().any(|v| v == k), "{k} not in partition {p}");
    }
    let total: i64 = (0..5).map(|p| m.end_offset("t", p)).sum();
    assert_eq!(total, keys.len() as i64);
    // Unkeyed records of one write stay together in one partition.
    let f2 = m.dir.path().join("unkeyed");
    std::fs::write(&f2, "{\"value\":\"u1\"}\n{\"value\":\"u2\"}\n").unwrap();
    m.ok(&format!("cat {} >> t/append.jsonl", f2.display()));
    let holders: Vec<u32> = (0..5)
        .filter(|p| m.read(&format!("t/{p}/by-offset/0")).contains("u1\nu2\n"))
        .collect();
    assert_eq!(holders.len(), 1);
}

#[test]
fn json_names_its_place_topic_and_partition() {
    let m = TestMount::start(&[]);
    m.ok("mkdir orders && echo 3 > orders/partitions");
    m.ok("echo a >> orders/2/append && echo b >> orders/0/append");
    for file in [
        "orders/2/by-offset/0.jsonl",
        "orders/2/by-time/0.jsonl",
        "orders/2/by-offset/earliest.jsonl",
    ] {
        let out = json_lines(&m.read(file));
        assert_eq!(out.len(), 1, "{file}");
        assert_eq!(out[0]["topic"], json!("orders"), "{file}");
        assert_eq!(out[0]["partition"], json!(2), "{file}");
        assert_eq!(out[0]["value"], json!("a"), "{file}");
    }
    let follow = json_lines(&m.ok("head -n 1 orders/0/follow/0.jsonl"));
    assert_eq!(follow[0]["topic"], json!("orders"));
    assert_eq!(follow[0]["partition"], json!(0));
    let group = json_lines(&m.read("orders/groups/g/records.jsonl"));
    assert_eq!(group.len(), 2);
    assert!(group.iter().all(|r| r["topic"] == json!("orders")));
}

//! `append.kv` (docs/contract.md, "Addressing"): `key<TAB>value` lines as
//! kafka-console-producer's `parse.key=true` reads them, at partition and topic level, with
//! `-o key.separator=S`. Real mounts.

use crate::common::mount::TestMount;
use serde_json::{Value, json};

fn json_lines(s: &str) -> Vec<Value> {
    s.lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn append_kv_lines_are_keyed_records() {
    let m = TestMount::start(&[]);
    m.ok("mkdir t");
    // Split at the first TAB; the value keeps later ones; an empty key is an empty key.
    m.ok("printf 'k1\\tv1\\nk2\\tv\\twith tab\\n\\tno key\\n' >> t/0/append.kv");
    let out = json_lines(&m.read("t/0/by-offset/0.jsonl"));
    assert_eq!(out.len(), 3);
    assert_eq!(
        (&out[0]["key"], &out[0]["value"]),
        (&json!("k1"), &json!("v1"))
    );
    assert_eq!(out[1]["value"], json!("v\twith tab"));
    assert_eq!(
        (&out[2]["key"], &out[2]["value"]),
        (&json!(""), &json!("no key"))
    );
    // A partial line waits for its end, as in `append`.
    m.ok("python3 -c \"
f = open('t/0/append.kv', 'a')
f.write('k'); f.flush(); f.write('3\\tv3\\n'); f.close()\"");
    assert_eq!(m.read("t/0/by-offset/3"), "v3\n");
}

#[test]
fn append_kv_line_without_separator_is_einval_and_nothing_appended() {
    let m = TestMount::start(&[]);
    m.ok("mkdir t");
    let f = m.dir.path().join("mixed");
    std::fs::write(&f, "a\t1\nb 2\nc\t3\n").unwrap();
    m.fails_with(
        &format!("cat {} >> t/0/append.kv", f.display()),
        "Invalid argument",
    );
    assert_eq!(m.end_offset("t", 0), 0);
    m.fails_with("/bin/echo lonely >> t/0/append.kv", "Invalid argument");
    assert_eq!(m.read("t/0/count"), "0\n");
}

#[test]
fn append_kv_key_separator_option() {
    let m = TestMount::start(&["-o", "key.separator=::"]);
    m.ok("mkdir t");
    m.ok("echo 'user::42::x' >> t/0/append.kv");
    let out = json_lines(&m.read("t/0/by-offset/0.jsonl"));
    assert_eq!(
        (&out[0]["key"], &out[0]["value"]),
        (&json!("user"), &json!("42::x"))
    );
    m.fails_with(
        "/usr/bin/printf 'a\\tb\\n' >> t/0/append.kv",
        "Invalid argument",
    );
}

#[test]
fn append_kv_topic_level_routes_by_murmur2() {
    let m = TestMount::start(&["--num-partitions", "5"]);
    m.ok("mkdir t");
    let keys = [
        "21",
        "foobar",
        "abc",
        "a-little-bit-long-string",
        "k7",
        "k8",
    ];
    let lines: String = keys.iter().map(|k| format!("{k}\tv-{k}\n")).collect();
    let f = m.dir.path().join("keyed");
    std::fs::write(&f, lines).unwrap();
    m.ok(&format!("cat {} >> t/append.kv", f.display()));
    // Kafka: Utils.toPositive(Utils.murmur2("21")) % 5 = 0.
    assert_eq!(m.read("t/0/by-offset/0").lines().next(), Some("v-21"));
    for k in keys {
        let p = topicfs::produce::partition_for_key(k.as_bytes(), 5);
        let got = json_lines(&m.read(&format!("t/{p}/by-offset/0.jsonl")));
        assert!(
            got.iter()
                .any(|r| r["key"] == json!(k) && r["value"] == json!(format!("v-{k}"))),
            "{k} not in partition {p}"
        );
    }
    let total: i64 = (0..5).map(|p| m.end_offset("t", p)).sum();
    assert_eq!(total, keys.len() as i64);
}

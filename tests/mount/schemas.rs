//! Schema-encoded values through the mount, against Confluent's own Python serdes
//! (tests/schema/oracle.py: confluent-kafka's AvroSerializer, ProtobufSerializer and
//! JSONSerializer with its mock registry). The registry's schemas are registered by appending
//! their `_schemas` records through `append.jsonl`, the serialized values go in raw through
//! `{"base64": ...}`; `cat`, `.jsonl`, `table/` and a group's maildir show what Confluent's
//! deserializers return, with the sizes of what they show; JSON written through `append` and
//! `append.jsonl` is stored so that Confluent's deserializers read it back equal (the bytes
//! read with `-o schema.decode=none`, not through topicfs's decoder).

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

use base64::Engine;
use serde_json::{Value, json};

use crate::common::mount::TestMount;
use crate::common::schema::{hex, oracle, unhex};

/// Writes argv[2] to the file argv[1] and closes it (a failed close fails the script).
const CLOSE_WRITE: &str = "import sys\nf = open(sys.argv[1], 'w')\nf.write(sys.argv[2])\nf.close()";

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

fn json_lines(s: &str) -> Vec<Value> {
    s.lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{l}: {e}")))
        .collect()
}

/// Appends `lines` (JSON lines) to `path` in the mount, one write.
fn append(m: &TestMount, path: &str, lines: &[Value]) {
    let mut text = String::new();
    for l in lines {
        text.push_str(&l.to_string());
        text.push('\n');
    }
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(m.path(path))
        .unwrap_or_else(|e| panic!("{path}: {e}"));
    f.write_all(text.as_bytes())
        .unwrap_or_else(|e| panic!("{path}: {e}"));
}

/// The size `stat` shows of a file of the mount.
fn size(m: &TestMount, rel: &str) -> u64 {
    std::fs::metadata(m.path(rel)).unwrap().len()
}

/// The schemas registered through `_schemas/append.jsonl`, and the oracle's cases appended
/// raw: one topic per case kind's topic, the cases of a topic in order, each keyed `k<i>`.
fn registered_and_produced(m: &TestMount, generated: &Value) -> Vec<(String, usize, Value)> {
    // Made as a registry makes it: one partition, compacted.
    m.ok("mkdir _schemas");
    assert_eq!(m.read("_schemas/partitions").trim(), "1");
    assert!(m.read("_schemas/config").contains("cleanup.policy=compact"));
    let records: Vec<Value> = generated["records"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| json!({"key": r["key"], "value": r["value"]}))
        .collect();
    append(m, "_schemas/append.jsonl", &records);
    let mut placed = Vec::new();
    for case in generated["cases"].as_array().unwrap() {
        let subject = case["subject"].as_str().unwrap();
        let topic = subject.strip_suffix("-value").unwrap().to_string();
        if !m.path(&topic).exists() {
            m.ok(&format!("mkdir {topic} && echo 1 > {topic}/partitions"));
        }
        let i = placed.iter().filter(|(t, _, _)| *t == topic).count();
        let bytes = unhex(case["hex"].as_str().unwrap());
        append(
            m,
            &format!("{topic}/0/append.jsonl"),
            &[json!({"key": format!("k{i}"), "value": {"base64": b64(&bytes)}})],
        );
        placed.push((topic, i, case.clone()));
    }
    placed
}

/// (topic, index in the topic, the oracle's case) of each value appended.
type Placed = Vec<(String, usize, Value)>;

/// (case kind, (topic, first offset written, the oracle's case)) of each JSON written.
type Written = Vec<(String, (String, i64, Value))>;

#[test]
fn confluent_serialized_values_show_as_json_in_every_view_and_json_written_reads_back() {
    let generated = oracle("generate", None);
    let mut m = TestMount::start(&[]);
    let placed = registered_and_produced(&m, &generated);
    assert!(placed.len() >= 8, "{placed:?}");
    streams_show_json(&m, &placed);
    table_and_maildir_show_json(&m, &placed);
    let written = json_written(&m, &placed);
    refusals_and_unknown_ids(&m, &placed);
    read_back_by_confluent(&mut m, &written);
}

/// Lines, `.jsonl`, whole-topic and group reads.
fn streams_show_json(m: &TestMount, placed: &Placed) {
    let topics: Vec<&str> = {
        let mut t: Vec<&str> = placed.iter().map(|(t, _, _)| t.as_str()).collect();
        t.dedup();
        t
    };
    // Lines: one compact JSON text per record, as the deserializer returns it.
    for topic in &topics {
        let cases: Vec<&Value> = placed
            .iter()
            .filter(|(t, _, _)| t == topic)
            .map(|(_, _, c)| &c["expected"])
            .collect();
        let text = m.read(&format!("{topic}/0/by-offset/0"));
        let shown = json_lines(&text);
        assert_eq!(shown.iter().collect::<Vec<_>>(), cases, "{topic}: {text}");
        assert!(!text.contains(": "), "compact: {text}");
        // The length fstat shows is what is read: `tail -c` seeks by it.
        let tail = m.ok(&format!("tail -c 20 {topic}/0/by-offset/0"));
        assert!(text.ends_with(&tail), "{topic}: {tail:?}");
        // A whole-topic read and a group's read decode too.
        assert_eq!(
            json_lines(&m.read(&format!("{topic}/by-offset/earliest"))),
            shown
        );
        assert_eq!(
            json_lines(&m.read(&format!("{topic}/groups/g/records"))),
            shown
        );
        // .jsonl: the JSON itself, with the schema id.
        let jl = json_lines(&m.read(&format!("{topic}/0/by-offset/0.jsonl")));
        for (line, (_, _, case)) in jl.iter().zip(placed.iter().filter(|(t, _, _)| t == topic)) {
            assert_eq!(line["value"], case["expected"], "{topic}");
            let bytes = unhex(case["hex"].as_str().unwrap());
            let id = u32::from_be_bytes(bytes[1..5].try_into().unwrap());
            assert_eq!(line["valueSchemaId"], json!(id), "{line}");
            assert!(line.get("keySchemaId").is_none(), "a string key: {line}");
        }
    }
}

/// `table/` and a group's maildir.
fn table_and_maildir_show_json(m: &TestMount, placed: &Placed) {
    // table/: a key's value as JSON, its size that of what is read.
    let (topic, i, case) = &placed[0];
    let at = format!("{topic}/table/k{i}");
    let text = m.read(&at);
    assert_eq!(
        serde_json::from_str::<Value>(&text).unwrap(),
        case["expected"]
    );
    assert_eq!(size(m, &at), text.len() as u64);
    // A group's maildir: each record a file of what it shows.
    let dir = format!("{topic}/groups/mail/maildir/new");
    let names = crate::common::mount::file_names(&m.path(&dir));
    let firsts: Vec<&Value> = placed
        .iter()
        .filter(|(t, _, _)| t == topic)
        .map(|(_, _, c)| &c["expected"])
        .collect();
    assert_eq!(names.len(), firsts.len(), "{names:?}");
    for name in &names {
        let at = format!("{dir}/{name}");
        let text = m.read(&at);
        let v: Value = serde_json::from_str(&text).unwrap();
        assert!(firsts.contains(&&v), "{v}");
        assert_eq!(size(m, &at), text.len() as u64, "{at}");
    }
}

/// JSON in the form shown, written through append lines, append.jsonl values and table/.
fn json_written(m: &TestMount, placed: &Placed) -> Written {
    // JSON written in the form shown: through append lines, append.jsonl values, table/.
    let mut written = Vec::new();
    for (topic, _, case) in placed {
        let kind = case["case"].as_str().unwrap();
        // A nested or second Protobuf message is decoded only (encoding writes the first).
        if kind == "refund" || kind == "item" || written.iter().any(|(k, _)| k == kind) {
            continue;
        }
        let text = case["expected"].to_string();
        let before = m.end_offset(topic, 0);
        m.ok(&format!(
            "printf '%s\\n' '{}' >> {topic}/append",
            text.replace('\'', "'\\''")
        ));
        append(
            m,
            &format!("{topic}/append.jsonl"),
            &[json!({"value": case["expected"]})],
        );
        std::fs::write(m.path(&format!("{topic}/table/w")), &text).unwrap();
        assert_eq!(m.end_offset(topic, 0), before + 3, "{topic}");
        written.push((kind.to_string(), (topic.clone(), before, case.clone())));
    }
    assert!(written.len() >= 3, "{written:?}");

    written
}

/// What does not match is refused; an unknown id is shown raw.
fn refusals_and_unknown_ids(m: &TestMount, placed: &Placed) {
    // A line that does not match: EINVAL, one @log line naming the line and the field,
    // nothing of that write stored.
    let (topic, _, _) = &placed[0];
    let before = m.end_offset(topic, 0);
    let two = format!("{}\n{{\"bogus\":1}}\n", placed[0].2["expected"]);
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(m.path(&format!("{topic}/append")))
        .unwrap();
    let err = f.write(two.as_bytes()).unwrap_err();
    assert_eq!(err.raw_os_error(), Some(libc::EINVAL), "{err}");
    drop(f);
    assert_eq!(
        m.end_offset(topic, 0),
        before,
        "nothing of the write stored"
    );
    let log = m.ok("tail -n 50 @log");
    assert!(
        log.lines()
            .any(|l| l.contains("append line 2") && l.contains("schema")),
        "{log}"
    );
    // A table/ value that does not match fails its close; nothing stored.
    let out = Command::new("python3")
        .args([
            "-c",
            CLOSE_WRITE,
            &format!("{topic}/table/bad"),
            r#"{"bogus":1}"#,
        ])
        .current_dir(&m.mnt)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && err.contains("Invalid argument"),
        "{err}"
    );
    assert_eq!(m.end_offset(topic, 0), before);
    // An unknown id is shown raw, never a failed read, with one @log line.
    let unknown = [0u8, 0, 0, 0x7f, 0x7f, b'r', b'a', b'w'];
    append(
        m,
        &format!("{topic}/0/append.jsonl"),
        &[json!({"value": {"base64": b64(&unknown)}})],
    );
    let raw = std::fs::read(m.path(&format!("{topic}/0/by-offset/{before}"))).unwrap();
    assert_eq!(raw, [&unknown[..], b"\n"].concat());
    let log = m.ok("tail -n 50 @log");
    assert!(log.contains("schema id 32639 is not known"), "{log}");
}

/// The bytes stored, read without decoding, read back by Confluent's deserializers.
fn read_back_by_confluent(m: &mut TestMount, written: &Written) {
    // The bytes stored, read without decoding: Confluent's deserializers read them back.
    m.unmount();
    m.set_args(&["-o", "schema.decode=none"]);
    m.remount();
    let mut asked = Vec::new();
    let mut expected = Vec::new();
    for (kind, (topic, from, case)) in written {
        let lines = json_lines(&m.read(&format!("{topic}/0/by-offset/{from}.jsonl")));
        for line in lines.iter().take(3) {
            let stored = match &line["value"] {
                Value::Object(o) => base64::engine::general_purpose::STANDARD
                    .decode(o["base64"].as_str().unwrap())
                    .unwrap(),
                Value::String(s) => s.as_bytes().to_vec(),
                other => panic!("stored as shown raw: {other}"),
            };
            assert!(line.get("valueSchemaId").is_none(), "not decoded: {line}");
            asked.push(json!({"case": kind, "hex": hex(&stored)}));
            expected.push(case["expected"].clone());
        }
    }
    let read_back = oracle("readback", Some(&Value::Array(asked)));
    assert_eq!(read_back, Value::Array(expected));
}

/// The registry stand-in (tests/schema/registry_server.py), stopped when dropped.
struct RegistryServer {
    child: std::process::Child,
    port: u16,
    asked: std::path::PathBuf,
    _dir: tempfile::TempDir,
}

impl RegistryServer {
    fn start(generated: &Value) -> RegistryServer {
        use std::io::BufRead;
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("generated.json");
        std::fs::write(&file, generated.to_string()).unwrap();
        let asked = dir.path().join("asked");
        std::fs::write(&asked, "").unwrap();
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/schema/registry_server.py");
        let mut child = Command::new("python3")
            .arg(&script)
            .arg(&file)
            .arg(&asked)
            .stdout(Stdio::piped())
            .spawn()
            .expect("python3 runs");
        let mut line = String::new();
        std::io::BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let port = line.trim().parse().expect("the server prints its port");
        RegistryServer {
            child,
            port,
            asked,
            _dir: dir,
        }
    }

    /// The paths asked so far.
    fn asked(&self) -> Vec<String> {
        std::fs::read_to_string(&self.asked)
            .unwrap()
            .lines()
            .map(str::to_string)
            .collect()
    }
}

impl Drop for RegistryServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Without `_schemas`, `schema.registry.url` (with basic auth) is asked: an id once, the
/// values shown as Confluent's deserializer returns them, JSON written stored in the
/// subject's latest schema (read back by Confluent's deserializer).
#[test]
fn a_registry_url_is_asked_once_per_id_where_schemas_is_missing() {
    let generated = oracle("generate", None);
    let server = RegistryServer::start(&generated);
    let url = format!(
        "schema.registry.url=http://127.0.0.1:1;http://127.0.0.1:{},schema.registry.basic.auth.user.info=user:secret",
        server.port
    );
    let mut m = TestMount::start(&["-o", &url]);
    m.ok("mkdir orders");
    let cases: Vec<&Value> = generated["cases"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["case"] == "avro")
        .collect();
    let lines: Vec<Value> = cases
        .iter()
        .map(|c| json!({"value": {"base64": b64(&unhex(c["hex"].as_str().unwrap()))}}))
        .collect();
    append(&m, "orders/0/append.jsonl", &lines);
    let expected: Vec<&Value> = cases.iter().map(|c| &c["expected"]).collect();
    for _ in 0..2 {
        let shown = json_lines(&m.read("orders/0/by-offset/0"));
        assert_eq!(shown.iter().collect::<Vec<_>>(), expected);
    }
    let id = u32::from_be_bytes(
        unhex(cases[0]["hex"].as_str().unwrap())[1..5]
            .try_into()
            .unwrap(),
    );
    let by_id = format!("/schemas/ids/{id}");
    assert_eq!(
        server.asked().iter().filter(|p| **p == by_id).count(),
        1,
        "{:?}",
        server.asked()
    );
    // Written: the subject's latest version asked, the JSON stored as its wire format.
    let text = cases[0]["expected"].to_string();
    append(
        &m,
        "orders/append.jsonl",
        &[json!({"value": cases[0]["expected"]})],
    );
    assert!(
        server
            .asked()
            .iter()
            .any(|p| p == "/subjects/orders-value/versions/latest"),
        "{:?}",
        server.asked()
    );
    let at = cases.len();
    assert_eq!(m.read(&format!("orders/0/by-offset/{at}")).trim_end(), text);
    m.unmount();
    m.set_args(&["-o", "schema.decode=none"]);
    m.remount();
    let line = &json_lines(&m.read(&format!("orders/0/by-offset/{at}.jsonl")))[0];
    let stored = match &line["value"] {
        Value::Object(o) => base64::engine::general_purpose::STANDARD
            .decode(o["base64"].as_str().unwrap())
            .unwrap(),
        Value::String(s) => s.as_bytes().to_vec(),
        other => panic!("{other}"),
    };
    let back = oracle(
        "readback",
        Some(&json!([{"case": "avro", "hex": hex(&stored)}])),
    );
    assert_eq!(back, json!([cases[0]["expected"]]));
}

/// A `_schemas` record of `subject`, version 1, as a registry writes it.
fn schema_record(subject: &str, id: u32, schema: &Value) -> Value {
    schema_version(subject, 1, id, schema)
}

/// A `_schemas` record of a subject's version, as a registry writes it.
fn schema_version(subject: &str, version: u32, id: u32, schema: &Value) -> Value {
    let key = json!({"keytype": "SCHEMA", "subject": subject, "version": version, "magic": 1});
    let value = json!({"subject": subject, "version": version, "id": id,
        "schema": schema.to_string(), "deleted": false});
    json!({"key": key.to_string(), "value": value.to_string()})
}

/// A topic with a key subject: `table/` names are the keys' JSON, a new name is stored as the
/// key subject's wire format (fastavro reads it back), `.jsonl` shows the key's JSON and id.
#[test]
fn keys_with_a_schema_are_named_by_their_json_in_table() {
    let m = TestMount::start(&[]);
    m.ok("mkdir _schemas keyed && echo 1 > keyed/partitions");
    let key_schema =
        json!({"type": "record", "name": "K", "fields": [{"name": "id", "type": "long"}]});
    append(
        &m,
        "_schemas/append.jsonl",
        &[
            schema_record("keyed-key", 1000, &key_schema),
            schema_record("keyed-value", 1001, &json!("string")),
        ],
    );
    // `_schemas` itself is never decoded: its records show as the registry wrote them.
    let reg = &json_lines(&m.read("_schemas/0/by-offset/0.jsonl"))[0];
    assert!(reg["key"].as_str().unwrap().contains("keyed-key"), "{reg}");
    assert!(reg.get("keySchemaId").is_none(), "{reg}");
    // Written by name: the key is `{"id":5}` in Avro, the value the JSON string in Avro.
    m.ok(r#"printf '"hello"' > 'keyed/table/{"id":5}'"#);
    assert_eq!(m.ok("ls keyed/table"), "{\"id\":5}\n");
    assert_eq!(m.read(r#"keyed/table/{"id":5}"#), "\"hello\"");
    let line = &json_lines(&m.read("keyed/0/by-offset/0.jsonl"))[0];
    assert_eq!(line["key"], json!({"id": 5}), "{line}");
    assert_eq!(line["value"], json!("hello"), "{line}");
    assert_eq!(line["keySchemaId"], json!(1000), "{line}");
    assert_eq!(line["valueSchemaId"], json!(1001), "{line}");
    // A name that does not match the key schema: EINVAL, nothing stored.
    let before = m.end_offset("keyed", 0);
    m.fails_with(r#"printf x > 'keyed/table/{"id":"x"}'"#, "Invalid argument");
    assert_eq!(m.end_offset("keyed", 0), before);
    // A maildir delivery that does not match the value schema fails its rename, nothing
    // stored, the file still in tmp/; one that matches is stored encoded.
    m.ok(r#"printf '{"not":"a string"}' > keyed/maildir/tmp/bad && printf '"fine"' > keyed/maildir/tmp/good"#);
    // (mv words rename's EINVAL as a move into a subdirectory: the errno is checked.)
    let errno = m.python(
        "import os, sys\ntry:\n    os.rename(sys.argv[1], sys.argv[2])\nexcept OSError as e:\n    print(e.errno)",
        &["keyed/maildir/tmp/bad", "keyed/maildir/new/bad"],
    );
    assert_eq!(errno.trim(), libc::EINVAL.to_string());
    assert_eq!(m.end_offset("keyed", 0), before);
    assert_eq!(m.ok("ls keyed/maildir/tmp"), "bad\ngood\n");
    m.ok("mv keyed/maildir/tmp/good keyed/maildir/new/good");
    let shown = json_lines(&m.read(&format!("keyed/0/by-offset/{before}.jsonl")));
    assert_eq!(shown[0]["value"], json!("fine"), "{:?}", shown);
    assert_eq!(shown[0]["valueSchemaId"], json!(1001));
    // The stored key and value, as fastavro reads them (Confluent's framing: 0, the id).
    let raw = m.python(
        r#"
import base64, io, json, sys, fastavro
from kafka.record.memory_records import MemoryRecords
import glob
data = open(glob.glob(sys.argv[1] + "/*.log")[0], "rb").read()
batch = MemoryRecords(data).next_batch()
r = next(iter(batch))
k, v = r.key, r.value
assert k[0] == 0 and int.from_bytes(k[1:5], "big") == 1000, k
assert v[0] == 0 and int.from_bytes(v[1:5], "big") == 1001, v
ks = fastavro.parse_schema(json.loads(sys.argv[2]))
print(json.dumps(fastavro.schemaless_reader(io.BytesIO(k[5:]), ks)))
print(json.dumps(fastavro.schemaless_reader(io.BytesIO(v[5:]), "string")))
"#,
        &[
            m.partition_dir("keyed", 0).to_str().unwrap(),
            &key_schema.to_string(),
        ],
    );
    assert_eq!(raw, "{\"id\": 5}\n\"hello\"\n");
}

/// Confluent's framing: byte 0, the id, the body.
fn wire(id: u32, body: &[u8]) -> Vec<u8> {
    [&[0u8][..], &id.to_be_bytes(), body].concat()
}

/// Values written before their schema, hostile ones among them: shown as stored (never a
/// failed read) until the schema is registered, then decoded where they decode, and as stored
/// again once a registry's tombstone or soft delete removes the version. JSON that does not
/// match is refused whole at each write; keyed JSON goes to the partition Kafka's producer
/// picks for the key's wire-format bytes.
#[test]
fn values_before_their_schema_after_its_deletion_and_hostile_ones_never_fail_a_read() {
    let m = TestMount::start(&[]);
    m.ok("mkdir _schemas late");
    let values = [
        wire(500, b"\x06abc"),
        // A string that claims 3 bytes and has 1; a length of 2^62.
        wire(500, b"\x06a"),
        wire(500, b"\xfe\xff\xff\xff\xff\xff\xff\xff\x7f"),
        // Too short for the wire format; an unknown id.
        vec![0, 0, 0, 1],
        wire(0x7f7f_7f7f, b"x"),
    ];
    let lines: Vec<Value> = values
        .iter()
        .enumerate()
        .map(|(i, v)| json!({"key": format!("k{i}"), "value": {"base64": b64(v)}}))
        .collect();
    append(&m, "late/0/append.jsonl", &lines);
    let raw: Vec<u8> = values
        .iter()
        .flat_map(|v| [&v[..], b"\n"].concat())
        .collect();
    let read = |rel: &str| std::fs::read(m.path(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"));
    assert_eq!(read("late/0/by-offset/0"), raw, "no schema yet: as stored");
    let string = json!("string");
    append(
        &m,
        "_schemas/append.jsonl",
        &[schema_record("late-value", 500, &string)],
    );
    let decoded: Vec<u8> = [&b"\"abc\"\n"[..], &raw[values[0].len() + 1..]].concat();
    assert_eq!(read("late/0/by-offset/0"), decoded);
    assert_eq!(read("late/table/k0"), b"\"abc\"");
    assert_eq!(size(&m, "late/table/k0"), 5);
    assert_eq!(read("late/table/k2"), values[2]);
    let log = m.ok("tail -n 50 @log");
    assert!(log.contains("schema id 500 does not decode"), "{log}");
    // The registry's hard delete (a tombstone), then a version soft deleted.
    let tombstone = json!({"keytype": "SCHEMA", "subject": "late-value", "version": 1, "magic": 1});
    append(
        &m,
        "_schemas/append.jsonl",
        &[json!({"key": tombstone.to_string(), "value": null})],
    );
    assert_eq!(read("late/0/by-offset/0"), raw, "deleted: as stored");
    append(
        &m,
        "_schemas/append.jsonl",
        &[schema_version("late-value", 2, 500, &string)],
    );
    assert_eq!(read("late/table/k0"), b"\"abc\"");
    let mut soft = schema_version("late-value", 2, 500, &string);
    let value = soft["value"]
        .as_str()
        .unwrap()
        .replace("\"deleted\":false", "\"deleted\":true");
    soft["value"] = json!(value);
    append(&m, "_schemas/append.jsonl", &[soft]);
    assert_eq!(read("late/table/k0"), values[0], "soft deleted: as stored");
    refused_writes_and_keyed_partitions(&m);
}

/// A topic of three partitions with a key and a value subject.
fn refused_writes_and_keyed_partitions(m: &TestMount) {
    m.ok("mkdir kp && echo 3 > kp/partitions");
    let key_schema =
        json!({"type": "record", "name": "K", "fields": [{"name": "id", "type": "long"}]});
    append(
        m,
        "_schemas/append.jsonl",
        &[
            schema_record("kp-key", 700, &key_schema),
            schema_record("kp-value", 701, &json!("string")),
        ],
    );
    let ends = |m: &TestMount| (0..3).map(|p| m.end_offset("kp", p)).sum::<i64>();
    // One write, its second line's key wrong: EINVAL, nothing of it stored, the line named.
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(m.path("kp/append.jsonl"))
        .unwrap();
    let err = f
        .write(b"{\"key\":{\"id\":1},\"value\":\"a\"}\n{\"key\":{\"id\":\"x\"},\"value\":\"b\"}\n")
        .unwrap_err();
    assert_eq!(err.raw_os_error(), Some(libc::EINVAL), "{err}");
    assert_eq!(ends(m), 0, "nothing of the write stored");
    let log = m.ok("tail -n 5 @log");
    assert!(
        log.contains("JSON line 2: key: does not match schema 700 of kp-key: field id"),
        "{log}"
    );
    // A file written straight into maildir/new/ that does not match: its close fails, it is
    // removed, nothing stored.
    let errno = m.python(
        "import sys\nf = open(sys.argv[1], 'w')\nf.write('{\"no\": 1}')\ntry:\n    f.close()\nexcept OSError as e:\n    print(e.errno)",
        &["kp/maildir/new/direct"],
    );
    assert_eq!(errno.trim(), libc::EINVAL.to_string());
    assert_eq!(
        m.ok("ls kp/maildir/new kp/maildir/tmp"),
        "kp/maildir/new:\n\nkp/maildir/tmp:\n"
    );
    assert_eq!(ends(m), 0);
    // Keyed JSON through the topic's append.jsonl and table/: each record in the partition
    // Kafka's default partitioner picks for the key's wire-format bytes.
    let lines: Vec<Value> = (0..12)
        .map(|n| json!({"key": {"id": n}, "value": format!("v{n}")}))
        .collect();
    append(m, "kp/append.jsonl", &lines);
    for n in 12..18 {
        std::fs::write(
            m.path(&format!("kp/table/{{\"id\":{n}}}")),
            format!("\"t{n}\""),
        )
        .unwrap();
    }
    assert_eq!(ends(m), 18);
    let misplaced = m.python(
        r#"
import io, json, sys, fastavro
from kafka.partitioner.default import murmur2
schema = fastavro.parse_schema(json.loads(sys.argv[1]))
for p in range(3):
    for line in open("kp/%d/by-offset/0.jsonl" % p):
        r = json.loads(line)
        body = io.BytesIO()
        fastavro.schemaless_writer(body, schema, r["key"])
        key = b"\x00" + (700).to_bytes(4, "big") + body.getvalue()
        if (murmur2(key) & 0x7fffffff) % 3 != p:
            print(r["key"], "in", p)
"#,
        &[&key_schema.to_string()],
    );
    assert_eq!(misplaced, "");
}

/// A key written under an older version of the key subject is listed by its JSON and opens,
/// is rewritten and removed by that name (SPEC 19: names are the decoded key's JSON text).
#[test]
fn a_key_under_an_older_key_schema_opens_by_its_listed_name() {
    let m = TestMount::start(&[]);
    m.ok("mkdir _schemas kv");
    let v1 = json!({"type": "record", "name": "K", "fields": [{"name": "id", "type": "long"}]});
    append(
        &m,
        "_schemas/append.jsonl",
        &[
            schema_record("kv-key", 900, &v1),
            schema_record("kv-value", 901, &json!("string")),
        ],
    );
    m.ok(r#"printf '"one"' > 'kv/table/{"id":1}'"#);
    let v2 = json!({"type": "record", "name": "K", "fields": [{"name": "id", "type": "long"},
        {"name": "region", "type": "string", "default": "eu"}]});
    append(
        &m,
        "_schemas/append.jsonl",
        &[schema_version("kv-key", 2, 902, &v2)],
    );
    m.ok(r#"printf '"two"' > 'kv/table/{"id":2,"region":"us"}'"#);
    assert_eq!(
        m.ok("ls kv/table"),
        "{\"id\":1}\n{\"id\":2,\"region\":\"us\"}\n"
    );
    // Every listed name opens.
    assert_eq!(
        m.ok("for f in kv/table/*; do cat \"$f\"; echo; done"),
        "\"one\"\n\"two\"\n"
    );
    // Rewritten by its name: the same key (id 900's bytes), not a second one.
    m.ok(r#"printf '"uno"' > 'kv/table/{"id":1}'"#);
    assert_eq!(m.ok("ls kv/table | wc -l").trim(), "2");
    assert_eq!(m.read(r#"kv/table/{"id":1}"#), "\"uno\"");
    m.ok(r#"rm 'kv/table/{"id":1}'"#);
    assert_eq!(m.ok("ls kv/table"), "{\"id\":2,\"region\":\"us\"}\n");
}

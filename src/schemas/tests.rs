//! The feed from `_schemas` and its topic's rules, against a log dir in a temp dir.

use std::sync::Arc;

use super::*;
use crate::config::BrokerConfig;
use crate::manager::LogManager;
use crate::record::RecordInput;

fn storage(dir: &std::path::Path) -> Arc<dyn Storage> {
    let mut c = BrokerConfig::default();
    c.log_dirs = vec![dir.to_path_buf()];
    c.num_partitions = 3;
    LogManager::open(c).unwrap()
}

/// Appends `n` registry records (keys and values as a registry writes them) to `_schemas`.
fn append_schemas(storage: &dyn Storage, first_version: u32, n: u32) {
    let topic = storage.topic(SCHEMAS_TOPIC).unwrap();
    let texts: Vec<(String, String)> = (first_version..first_version + n)
        .map(|v| {
            (
                format!(r#"{{"keytype":"SCHEMA","subject":"t-value","version":{v},"magic":1}}"#),
                format!(
                    r#"{{"subject":"t-value","version":{v},"id":{v},"schema":"\"string\"","deleted":false}}"#
                ),
            )
        })
        .collect();
    let records: Vec<RecordInput<'_>> = texts
        .iter()
        .map(|(k, v)| RecordInput {
            key: Some(k.as_bytes()),
            value: Some(v.as_bytes()),
            headers: &[],
            timestamp: 0,
        })
        .collect();
    topic.append(&records, 1 << 20).unwrap();
}

#[test]
fn schemas_is_made_as_a_registry_makes_it_and_stays_compacted() {
    let tmp = tempfile::tempdir().unwrap();
    let s = storage(tmp.path());
    let t = s.create_topic(SCHEMAS_TOPIC).unwrap();
    // One partition (a registry refuses any other count), compacted by an override.
    assert_eq!(t.partition_count(), 1);
    assert!(t.config_text().unwrap().contains("cleanup.policy=compact"));
    // Guarded as __consumer_offsets' is: never deleted by age.
    let change = [("cleanup.policy", Some("delete"))];
    assert!(s.check_topic_configs(SCHEMAS_TOPIC, &change).is_err());
    assert!(s.set_topic_configs(SCHEMAS_TOPIC, &change).is_err());
    s.set_topic_configs(SCHEMAS_TOPIC, &[("cleanup.policy", Some("compact,delete"))])
        .unwrap();
    // Another topic is made as any other.
    assert_eq!(s.create_topic("t").unwrap().partition_count(), 3);
    s.set_topic_configs("t", &[("cleanup.policy", Some("delete"))])
        .unwrap();
}

#[test]
fn the_feed_reads_schemas_whole_then_what_it_gains_each_record_once() {
    let tmp = tempfile::tempdir().unwrap();
    let s = storage(tmp.path());
    let schemas = Schemas::unfollowed(s.clone(), SchemaOptions::default());
    // No `_schemas` yet: nothing read, nothing decoded.
    schemas.refresh();
    assert_eq!(schemas.registry().generation(), 0);
    assert!(!schemas.decodes("t"));
    s.create_topic(SCHEMAS_TOPIC).unwrap();
    append_schemas(&*s, 1, 3);
    schemas.refresh();
    assert_eq!(schemas.registry().generation(), 3);
    // Read again: nothing new.
    schemas.refresh();
    assert_eq!(schemas.registry().generation(), 3);
    append_schemas(&*s, 4, 2);
    schemas.refresh();
    assert_eq!(schemas.registry().generation(), 5);
    // Some schema was read: topics are decoded, but never internal ones nor `_schemas`.
    assert!(schemas.decodes("t"));
    for internal in [SCHEMAS_TOPIC, "__consumer_offsets", "__transaction_state"] {
        assert!(!schemas.decodes(internal), "{internal}");
        assert!(schemas.for_topic(internal).is_none(), "{internal}");
    }
    assert!(schemas.for_topic("t").is_some());
    // Made again: read from its start (its one record, at offset 0, is a new version).
    s.delete_topic(SCHEMAS_TOPIC).unwrap();
    s.create_topic(SCHEMAS_TOPIC).unwrap();
    append_schemas(&*s, 6, 1);
    schemas.refresh();
    assert_eq!(schemas.registry().generation(), 6);
    assert!(schemas.registry().knows(6));
}

#[test]
fn the_switches_turn_decoding_and_encoding_off() {
    let tmp = tempfile::tempdir().unwrap();
    let s = storage(tmp.path());
    s.create_topic(SCHEMAS_TOPIC).unwrap();
    append_schemas(&*s, 1, 1);
    let off = SchemaOptions {
        decode: false,
        encode: false,
        ..SchemaOptions::default()
    };
    let schemas = Schemas::start(s.clone(), off);
    assert_eq!(schemas.registry().generation(), 1);
    assert!(!schemas.decodes("t"));
    assert!(schemas.for_topic("t").is_none());
    assert!(!schemas.encodes("t"));
    assert_eq!(schemas.store("t", false, b"\"x\"").unwrap(), None);
    schemas.shutdown();
}

#[test]
fn the_follow_thread_reads_what_is_appended_by_others() {
    let tmp = tempfile::tempdir().unwrap();
    let s = storage(tmp.path());
    let schemas = Schemas::start(s.clone(), SchemaOptions::default());
    // Made after the mount started: found by the follow thread, without a refresh.
    s.create_topic(SCHEMAS_TOPIC).unwrap();
    append_schemas(&*s, 1, 2);
    let until = std::time::Instant::now() + Duration::from_secs(30);
    while schemas.registry().generation() < 2 && std::time::Instant::now() < until {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(schemas.registry().generation(), 2);
    schemas.shutdown();
}

/// A registry's REST API in a thread: answers each `GET path` with `answers[path]` (404 when
/// absent), one request per connection; the paths asked, in order.
fn registry_stub(
    answers: std::collections::HashMap<String, String>,
) -> (String, Arc<Mutex<Vec<String>>>) {
    use std::io::{BufRead, BufReader, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let asked = Arc::new(Mutex::new(Vec::new()));
    let log = asked.clone();
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut conn) = conn else { return };
            let mut reader = BufReader::new(conn.try_clone().unwrap());
            let mut line = String::new();
            reader.read_line(&mut line).unwrap();
            let path = line.split(' ').nth(1).unwrap_or_default().to_string();
            loop {
                let mut header = String::new();
                if reader.read_line(&mut header).unwrap_or(0) <= 2 {
                    break;
                }
            }
            let (status, body) = match answers.get(&path) {
                Some(b) => ("200 OK", b.clone()),
                None => ("404 Not Found", r#"{"error_code":40403}"#.to_string()),
            };
            log.guard().push(path);
            let _ = write!(
                conn,
                "HTTP/1.1 {status}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    (url, asked)
}

/// Schemas over a log dir without `_schemas`, asking the registry at `url`.
fn asking(url: &str, dir: &std::path::Path) -> Arc<Schemas> {
    let mut rest = RestConfig::default();
    assert!(rest.set("schema.registry.url", url));
    let options = SchemaOptions {
        rest,
        ..SchemaOptions::default()
    };
    Schemas::unfollowed(storage(dir), options)
}

#[test]
fn rest_follows_references_of_references() {
    // Event references Order, which references Money: Confluent's answers name only the
    // direct references of each.
    let money = r#"{"type":"record","name":"Money","namespace":"t","fields":[{"name":"cents","type":"long"}]}"#;
    let order = r#"{"type":"record","name":"Order","namespace":"t","fields":[{"name":"m","type":"Money"}]}"#;
    let event = r#"{"type":"record","name":"Event","namespace":"t","fields":[{"name":"o","type":"Order"}]}"#;
    let answer = |subject: &str, id: u32, schema: &str, refs: serde_json::Value| {
        serde_json::json!({"subject": subject, "version": 1, "id": id, "schema": schema,
            "references": refs})
        .to_string()
    };
    let mut answers = std::collections::HashMap::new();
    let to_order = serde_json::json!([{"name": "t.Order", "subject": "order", "version": 1}]);
    let to_money = serde_json::json!([{"name": "t.Money", "subject": "money", "version": 1}]);
    answers.insert(
        "/schemas/ids/3".to_string(),
        answer("event-value", 3, event, to_order),
    );
    answers.insert(
        "/subjects/order/versions/1".to_string(),
        answer("order", 2, order, to_money),
    );
    answers.insert(
        "/subjects/money/versions/1".to_string(),
        answer("money", 1, money, serde_json::json!([])),
    );
    let (url, asked) = registry_stub(answers);
    let tmp = tempfile::tempdir().unwrap();
    let s = asking(&url, tmp.path());
    let mut out = Vec::new();
    assert_eq!(
        s.show("events", b"\x00\x00\x00\x00\x03\x0e", &mut out),
        Some(3)
    );
    assert_eq!(out, br#"{"o":{"m":{"cents":7}}}"#, "{:?}", asked.guard());
}

#[test]
fn binary_values_that_start_with_zero_do_not_flood_the_log_nor_the_registry() {
    // A topic of raw binary values (big-endian numbers, hashes) where a first byte 0 makes
    // each look like the wire format with an id of its own.
    let (url, asked) = registry_stub(std::collections::HashMap::new());
    let tmp = tempfile::tempdir().unwrap();
    let s = asking(&url, tmp.path());
    let mut out = Vec::new();
    for i in 0..20_000u32 {
        let value = [
            &[0u8][..],
            &i.wrapping_mul(2_654_435_761).to_be_bytes(),
            b"tail",
        ]
        .concat();
        assert_eq!(s.show("blobs", &value, &mut out), None);
    }
    assert!(out.is_empty());
    let logged = s.logged.guard()["blobs"].len();
    assert!(logged <= 100, "{logged} ids remembered as logged");
    let requests = asked.guard().len();
    assert!(requests <= 100, "{requests} requests to the registry");
}

#[test]
fn a_key_name_encodes_with_every_version_of_the_key_subject() {
    let tmp = tempfile::tempdir().unwrap();
    let s = Schemas::unfollowed(storage(tmp.path()), SchemaOptions::default());
    let registry = s.registry();
    let record = |subject: &str, version: u32, id: u32, schema: &str| {
        let key = format!(
            r#"{{"keytype":"SCHEMA","subject":"{subject}","version":{version},"magic":1}}"#
        );
        let value = serde_json::json!({"subject": subject, "version": version, "id": id,
            "schema": schema, "deleted": false});
        registry.apply_record(Some(key.as_bytes()), Some(value.to_string().as_bytes()));
    };
    let v1 = r#"{"type":"record","name":"K","fields":[{"name":"id","type":"long"}]}"#;
    let v2 = r#"{"type":"record","name":"K","fields":[{"name":"id","type":"long"},
        {"name":"region","type":"string","default":"eu"}]}"#;
    record("kv-key", 1, 900, v1);
    record("kv-key", 2, 902, v2);
    record("s-key", 1, 910, r#""string""#);
    // The latest first: {"id":1} with the default region ("eu"), then as version 1 wrote it.
    assert_eq!(
        s.keys_for_shown("kv", br#"{"id":1}"#),
        vec![
            b"\x00\x00\x00\x03\x86\x02\x04eu".to_vec(),
            b"\x00\x00\x00\x03\x84\x02".to_vec()
        ]
    );
    assert_eq!(
        s.keys_for_shown("kv", br#"{"id":"x"}"#),
        Vec::<Vec<u8>>::new()
    );
    // A string key: the name as a JSON string, and "5" as the string "5".
    assert_eq!(
        s.keys_for_shown("s", b"a/b"),
        vec![b"\x00\x00\x00\x03\x8e\x06a/b".to_vec()]
    );
    assert_eq!(
        s.keys_for_shown("s", b"5"),
        vec![b"\x00\x00\x00\x03\x8e\x025".to_vec()]
    );
    assert!(s.keys_for_shown("_schemas", b"5").is_empty());
}

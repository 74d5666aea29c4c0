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

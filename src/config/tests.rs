//! Unit tests of the configuration: the key table against the README, `--help`, the topic keys
//! and the defaults; Kafka's validators; the properties parser against Java's.

use super::*;

/// The README's table of options: the lines from its header to the first blank line.
fn readme_table() -> Vec<std::string::String> {
    let readme = include_str!("../../README.md");
    let start = readme
        .find(README_TABLE_HEADER)
        .expect("README.md has the table of options");
    readme[start..]
        .lines()
        .skip(2)
        .take_while(|l| l.starts_with('|'))
        .map(str::to_string)
        .collect()
}

#[test]
fn the_readme_table_is_the_key_table() {
    let want: Vec<_> = CONFIG_KEYS.iter().map(ConfigKey::readme_row).collect();
    assert_eq!(
        readme_table(),
        want,
        "README.md's table of options must be these rows:\n{}",
        want.join("\n")
    );
}

#[test]
fn the_key_table_matches_the_topic_keys_and_defaults() {
    let topic: Vec<&str> = CONFIG_KEYS.iter().filter_map(|k| k.topic).collect();
    let mut sorted_topic = topic.clone();
    let mut sorted_known = TOPIC_KEYS.to_vec();
    sorted_topic.sort();
    sorted_known.sort();
    assert_eq!(
        sorted_topic, sorted_known,
        "every topic key is in the table once"
    );
    let log = LogConfig::default();
    let broker = BrokerConfig::default();
    for k in CONFIG_KEYS {
        assert!(
            CONFIG_KEYS.iter().filter(|o| o.broker == k.broker).count() == 1,
            "{} twice",
            k.broker
        );
        // A documented numeric default is the value a fresh config has.
        if let (Some(d), Ok(_)) = (k.default, k.default.unwrap_or("").parse::<i64>()) {
            let mut c = broker.clone();
            c.set(k.broker, d).unwrap();
            assert_eq!(c, broker, "{} default {d}", k.broker);
        }
        if let (Some(t), Some(d)) = (k.topic, k.default)
            && d != NEVER_FORCED
        {
            assert_eq!(log.get_topic_key(t).as_deref(), Some(d), "{t}");
        }
        // Its validator knows the key, and rejects a value of the wrong type.
        if matches!(k.kind, KeyType::Int | KeyType::Long) {
            let e = broker.clone().set(k.broker, "x").unwrap_err().to_string();
            assert!(e.contains(k.broker), "{e}");
        }
    }
}

#[test]
fn defaults_match_kafka() {
    let c = BrokerConfig::default();
    // Kafka's documented defaults (its LogConfig and KafkaConfig), written here as the docs
    // give them: the config builds them from the key table.
    let l = &c.log;
    assert_eq!(l.segment_bytes, 1_073_741_824);
    assert_eq!(l.segment_ms, 604_800_000);
    assert_eq!(l.segment_index_bytes, 10_485_760);
    assert_eq!(l.index_interval_bytes, 4096);
    assert_eq!(l.retention_ms, 604_800_000);
    assert_eq!(l.retention_bytes, -1);
    assert_eq!(l.message_timestamp_type, TimestampType::CreateTime);
    assert_eq!(l.compression_type, "producer");
    assert_eq!(l.max_message_bytes, 1_048_588);
    assert_eq!(l.flush_messages, u64::MAX);
    assert_eq!(l.message_timestamp_before_max_ms, i64::MAX);
    assert_eq!(l.message_timestamp_after_max_ms, 3_600_000);
    assert_eq!(l.cleanup_policy, CleanupPolicy::delete());
    assert_eq!(l.min_cleanable_dirty_ratio, 0.5);
    assert_eq!(l.min_compaction_lag_ms, 0);
    assert_eq!(l.max_compaction_lag_ms, i64::MAX);
    assert_eq!(l.delete_retention_ms, 86_400_000);
    assert_eq!(*l, LogConfig::default());
    assert_eq!(c.log_dirs, vec![PathBuf::from("/tmp/topicfs-logs")]);
    assert_eq!(c.num_partitions, 1);
    assert_eq!(c.offsets_topic_num_partitions, 50);
    assert_eq!(c.retention_check_interval_ms, 300_000);
    assert_eq!(c.checkpoint_interval_ms, 60_000);
    assert!(c.cleaner_enable);
    assert_eq!(c.cleaner_backoff_ms, 15_000);
    assert_eq!(c.cleaner_dedupe_buffer_size, 134_217_728);
    assert!(!c.read_only && !c.read_committed && !c.allow_untrusted_log_dir);
    // The precedence flags stay unset: a later `log.roll.hours` still applies.
    let mut later = c.clone();
    later.set("log.roll.hours", "1").unwrap();
    assert_eq!(later.log.segment_ms, 3_600_000);
    later.set("log.retention.hours", "2").unwrap();
    assert_eq!(later.log.retention_ms, 7_200_000);
}

#[test]
fn properties_file_precedence_and_unknown_keys() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("server.properties");
    std::fs::write(
        &p,
        "# comment\nlog.roll.hours=1\nlog.roll.ms=5000\nbroker.id=3\nlog.segment.bytes = 4096\nlog.dirs=/a,/b\n",
    )
    .unwrap();
    let mut c = BrokerConfig::default();
    c.load_properties(&p).unwrap();
    assert_eq!(c.log.segment_ms, 5000);
    let q = dir.path().join("retention.properties");
    std::fs::write(&q, "log.retention.minutes=3\nlog.retention.hours=2\n").unwrap();
    let mut c2 = BrokerConfig::default();
    c2.load_properties(&q).unwrap();
    assert_eq!(c2.log.retention_ms, 180_000, "minutes win over hours");
    std::fs::write(
        &q,
        "log.retention.ms=7\nlog.retention.minutes=3\nlog.retention.hours=2\n",
    )
    .unwrap();
    let mut c3 = BrokerConfig::default();
    c3.load_properties(&q).unwrap();
    assert_eq!(c3.log.retention_ms, 7, "ms wins over minutes and hours");
    assert_eq!(c.log.segment_bytes, 4096);
    assert_eq!(c.log_dirs, vec![PathBuf::from("/a"), PathBuf::from("/b")]);
    assert!(c.set("log.segment.bytes", "x").is_err());
    assert!(c.log.clone().set_topic_key("nope", "1").is_err());
}

fn props(text: &str) -> Vec<(String, String)> {
    parse_properties(text).unwrap()
}

fn pair(k: &str, v: &str) -> (String, String) {
    (k.to_string(), v.to_string())
}

#[test]
fn properties_are_parsed_as_java_does() {
    // Separators: '=', ':', blanks; blanks and at most one separator after the key.
    assert_eq!(
        props("a=1\nb:2\nc 3\n  d \t = 4 \ne = = 5\nf\n"),
        vec![
            pair("a", "1"),
            pair("b", "2"),
            pair("c", "3"),
            pair("d", "4 "),
            pair("e", "= 5"),
            pair("f", ""),
        ]
    );
    // Continuations drop the continued line's leading blanks; an even number of
    // backslashes is a literal backslash and does not continue.
    assert_eq!(
        props("log.dirs=/a,\\\n     /b\nx=y\\\\\nz=w\n"),
        vec![pair("log.dirs", "/a,/b"), pair("x", "y\\"), pair("z", "w")]
    );
    // Comments (# and !, after blanks) never continue; a continued line may start with #.
    assert_eq!(
        props("# c \\\nk=v\n  ! other\nm=a\\\n#b\n"),
        vec![pair("k", "v"), pair("m", "a#b")]
    );
    // Escapes, in keys and values; CR and CRLF end lines; the last repeat wins.
    assert_eq!(
        props("k\\=ey\\:x\\ y=\\t\\u0041\\n\\q\r\ndup=1\rdup=2"),
        vec![pair("k=ey:x y", "\tA\nq"), pair("dup", "2")]
    );
    // A backslash at the end of the file is dropped; an empty continuation ends the line.
    assert_eq!(
        props("a=b\\\n\nc=d\\"),
        vec![pair("a", "b"), pair("c", "d")]
    );
    assert!(parse_properties("a=\\u12G4\n").is_err());
}

#[test]
fn properties_match_what_java_reads() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("tricky.properties");
    let text = "# comment \\\nnot.a.key=1\n   ! bang comment\n\
        log.dirs = /data/a,\\\n        /data/b, \\\n\t/data/c\n\
        key\\ with\\ spaces : value with spaces   \n\
        k\\=q\\:r=v=w:x\n\
        tab\\tkey\tval\\ttab\n\
        uni=\\u00e9\\u0041\\uD83D\\uDE00\n\
        trail=ends\\\\\n\
        cont=a\\\n#not-a-comment\n\
        empty\n\
        sep2 = = x\n\
        crlf=1\r\ncr=2\rff\x0c=3\n\
        dup=first\ndup=last\n\
        emptycont=x\\\n\nafter=y\n\
        odd\\q=\\z\n\
        eof=z\\";
    std::fs::write(&file, text).unwrap();
    let java = dir.path().join("Props.java");
    std::fs::write(
        &java,
        r#"import java.io.*; import java.util.*;
public class Props {
  static String esc(String s) {
StringBuilder b = new StringBuilder();
for (char c : s.toCharArray()) {
  if (c >= 0x20 && c < 0x7f && c != '\\') b.append(c); else b.append(String.format("\\u%04x", (int) c));
}
return b.toString();
  }
  public static void main(String[] a) throws Exception {
Properties p = new Properties();
try (InputStream in = new FileInputStream(a[0])) { p.load(in); }
for (String k : new TreeSet<>(p.stringPropertyNames())) System.out.println(esc(k) + "\t" + esc(p.getProperty(k)));
  }
}
"#,
    )
    .unwrap();
    let out = std::process::Command::new("java")
        .arg(&java)
        .arg(&file)
        .output()
        .expect("java is on PATH");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let esc = |s: &str| -> String {
        s.encode_utf16()
            .map(|u| {
                if (0x20..0x7f).contains(&u) && u != b'\\' as u16 {
                    (u as u8 as char).to_string()
                } else {
                    format!("\\u{u:04x}")
                }
            })
            .collect()
    };
    let java_pairs: Vec<String> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect();
    let mut ours: Vec<String> = props(text)
        .iter()
        .map(|(k, v)| format!("{}\t{}", esc(k), esc(v)))
        .collect();
    ours.sort();
    let mut java_sorted = java_pairs.clone();
    java_sorted.sort();
    assert!(java_sorted.len() > 15, "{java_sorted:?}");
    assert_eq!(ours, java_sorted);
}

#[test]
fn values_follow_kafka_validators() {
    let mut c = LogConfig::default();
    for (k, v) in [
        ("retention.ms", "-2"),
        ("flush.messages", "0"),
        ("segment.bytes", "99999999999"),
        ("segment.bytes", "13"),
        ("segment.index.bytes", "3"),
        ("index.interval.bytes", "-1"),
        ("max.message.bytes", "-1"),
        ("max.message.bytes", "2147483648"),
        ("segment.ms", "0"),
        ("compression.type", "none"),
        ("compression.type", "GZIP"),
        ("message.timestamp.type", "createtime"),
    ] {
        let e = c.set_topic_key(k, v).unwrap_err().to_string();
        assert!(
            e.contains(&format!("Invalid value {v} for configuration {k}")),
            "{e}"
        );
    }
    assert_eq!(c, LogConfig::default(), "nothing was changed");
    c.set_topic_key("retention.ms", "-1").unwrap();
    c.set_topic_key("retention.bytes", "-5").unwrap();
    c.set_topic_key("segment.bytes", "2147483647").unwrap();
    c.set_topic_key("max.message.bytes", "0").unwrap();
    c.set_topic_key("compression.type", "uncompressed").unwrap();
    assert_eq!(c.retention_bytes, -5);
    assert_eq!(c.segment_bytes, 2147483647);
    assert_eq!(c.write_compression(), Compression::None);
    let mut b = BrokerConfig::default();
    let e = b
        .set("log.segment.bytes", "99999999999")
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("configuration log.segment.bytes: Not a number of type INT"),
        "{e}"
    );
    assert!(b.set("num.partitions", "0").is_err());
    assert!(b.set("log.roll.hours", "0").is_err());
    assert!(b.set("log.retention.check.interval.ms", "0").is_err());
    assert!(
        b.set("log.flush.offset.checkpoint.interval.ms", "-1")
            .is_err()
    );
    // KafkaConfig.logRetentionTimeMillis: a negative broker retention means -1.
    b.set("log.retention.hours", "-3").unwrap();
    assert_eq!(b.log.retention_ms, -1);
    b.set("log.retention.ms", "-2").unwrap();
    assert_eq!(b.log.retention_ms, -1);
}

#[test]
fn cleanup_policy_and_cleaner_keys_follow_kafka() {
    let mut c = LogConfig::default();
    assert!(c.cleanup_policy.delete && !c.cleanup_policy.compact);
    c.set_topic_key("cleanup.policy", " compact , delete")
        .unwrap();
    assert!(c.cleanup_policy.compact && c.cleanup_policy.delete);
    assert_eq!(c.get_topic_key("cleanup.policy").unwrap(), "compact,delete");
    c.set_topic_key("cleanup.policy", "compact").unwrap();
    assert!(c.cleanup_policy.compact && !c.cleanup_policy.delete);
    for bad in ["", "compacted", "compact,x"] {
        let e = c
            .set_topic_key("cleanup.policy", bad)
            .unwrap_err()
            .to_string();
        assert!(e.contains("String must be one of: compact, delete"), "{e}");
    }
    assert!(c.set_topic_key("min.cleanable.dirty.ratio", "1.5").is_err());
    assert!(c.set_topic_key("min.cleanable.dirty.ratio", "x").is_err());
    c.set_topic_key("min.cleanable.dirty.ratio", "0.01")
        .unwrap();
    assert_eq!(c.min_cleanable_dirty_ratio, 0.01);
    assert!(c.set_topic_key("max.compaction.lag.ms", "0").is_err());
    assert!(c.set_topic_key("delete.retention.ms", "-1").is_err());
    assert!(c.set_topic_key("min.compaction.lag.ms", "-1").is_err());
    let ov = BTreeMap::new();
    let d = LogConfig::default();
    assert!(
        d.for_topic("__consumer_offsets", &ov)
            .unwrap()
            .cleanup_policy
            .compact
    );
    assert!(!d.for_topic("orders", &ov).unwrap().cleanup_policy.compact);
    let mut b = BrokerConfig::default();
    b.set("log.cleanup.policy", "compact").unwrap();
    b.set("log.cleaner.enable", "FALSE").unwrap();
    b.set("log.cleaner.backoff.ms", "100").unwrap();
    assert!(b.log.cleanup_policy.compact && !b.cleaner_enable);
    assert_eq!(b.cleaner_backoff_ms, 100);
    let e = b.set("log.cleaner.enable", "yes").unwrap_err().to_string();
    assert!(e.contains("log.cleaner.enable"), "{e}");
}

#[test]
fn item5_each_key_is_one_row_with_its_validator_and_accessor() {
    for k in CONFIG_KEYS {
        // A topic key is set and shown through its row; a broker-only key has its own setter.
        assert_eq!(k.topic.is_some(), k.topic_value.is_some(), "{}", k.broker);
        assert!(
            k.topic_value.is_some() || k.broker_set.is_some(),
            "{}",
            k.broker
        );
        if let (Some(t), Some(v)) = (k.topic, k.topic_value) {
            let mut c = LogConfig::default();
            let shown = (v.get)(&c);
            c.set_topic_key(t, &shown).unwrap();
            assert_eq!(c, LogConfig::default(), "{t}={shown} is the default");
            assert_eq!(c.get_topic_key(t), Some(shown));
        }
    }
    let mut c = LogConfig::default();
    c.set_topic_key("segment.bytes", " 4096 ").unwrap();
    assert_eq!(c.get_topic_key("segment.bytes").as_deref(), Some("4096"));
    // A broker key is no topic key.
    assert!(c.set_topic_key("log.segment.bytes", "4096").is_err());
    assert_eq!(c.get_topic_key("log.segment.bytes"), None);
    // Through its broker key, a topic key's validator names the broker key.
    let e = BrokerConfig::default()
        .set("log.segment.bytes", "1")
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("log.segment.bytes") && e.contains("at least 14"),
        "{e}"
    );
}

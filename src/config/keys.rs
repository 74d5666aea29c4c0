//! The one table of configuration keys ([`CONFIG_KEYS`]), as Kafka's `ConfigDef`: each key's
//! broker name, topic name, long option, Kafka type, unit, default, help, validator and
//! accessor, from which the long options, `-o`, `server.properties`, `<topic>/config` and the
//! README's table of options come.

/// Kafka's ConfigDef type of a key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeyType {
    Int,
    Long,
    String,
    List,
    Double,
    Boolean,
}

/// One configuration key, as Kafka's `ConfigDef` defines it. [`CONFIG_KEYS`] is the one list
/// the long options (their name, value name and help), `server.properties`, `-o`, the
/// `<topic>/config` keys and the README's table come from. Each row holds the key's validator
/// (Kafka's type and `atLeast`) and accessor, which [`super::BrokerConfig::set`],
/// [`super::LogConfig::set_topic_key`] and [`super::LogConfig::get_topic_key`] look up.
#[derive(Debug)]
pub struct ConfigKey {
    /// The `server.properties` key.
    pub broker: &'static str,
    /// The topic-level key it sets (`<topic>/config`, also accepted by `-o`).
    pub topic: Option<&'static str>,
    /// The long option of `topicfs mount` (without `--`), and an alias of it.
    pub option: Option<&'static str>,
    pub alias: Option<&'static str>,
    /// Kafka's type of the value (the validator checks it; the tests read it).
    #[cfg_attr(not(test), allow(dead_code))]
    pub kind: KeyType,
    /// The unit of the value, as the option's value name shows it.
    pub unit: &'static str,
    /// The default, as documented (`None`: unset).
    pub default: Option<&'static str>,
    pub help: &'static str,
    /// A topic key's validator and accessor (`None` for a broker-only key).
    pub topic_value: Option<TopicValue>,
    /// A broker key's validator and setter, where it is not its topic key's (`None`: the
    /// topic key's validator sets `BrokerConfig::log`).
    pub broker_set: Option<BrokerSet>,
    /// Whether the key is a default of every topic (a topic key, a coarser unit of one, the
    /// partitions of a new topic) rather than a setting of the daemon itself: it decides the
    /// option's heading in `--help` and the man page.
    pub topic_default: bool,
}

/// The documented default of `flush.messages`: no number, as Kafka's docs show none.
pub const NEVER_FORCED: &str = "never forced";

/// The `--help` heading of the long options of keys that are topic defaults.
pub const TOPIC_DEFAULTS_HEADING: &str = "Topic defaults";
/// The `--help` heading of the long options of the other keys.
pub const BROKER_DEFAULTS_HEADING: &str = "Broker defaults";

/// Sets one topic key (name, trimmed value) on a [`LogConfig`], validated as Kafka's
/// `LogConfig` defines it (type and validator; nothing is clamped).
pub type TopicSet = fn(&mut LogConfig, &str, &str) -> Result<()>;

/// A topic key's value as `config` shows it.
pub type TopicGet = fn(&LogConfig) -> std::string::String;

/// Sets one broker key (name, trimmed value) on a [`BrokerConfig`], validated as Kafka's
/// `KafkaConfig` defines it.
pub type BrokerSet = fn(&mut BrokerConfig, &str, &str) -> Result<()>;

/// A topic key's validator and accessor.
#[derive(Clone, Copy, Debug)]
pub struct TopicValue {
    pub set: TopicSet,
    pub get: TopicGet,
}

const fn key(
    broker: &'static str,
    topic: Option<&'static str>,
    option: Option<&'static str>,
    kind: KeyType,
    unit: &'static str,
    default: Option<&'static str>,
    help: &'static str,
) -> ConfigKey {
    ConfigKey {
        broker,
        topic,
        option,
        alias: None,
        kind,
        unit,
        default,
        help,
        topic_value: None,
        broker_set: None,
        topic_default: topic.is_some(),
    }
}

/// A broker-only key that is a default of every topic all the same (`num.partitions`,
/// `log.roll.hours`, `log.retention.hours`...).
const fn for_topics(k: ConfigKey) -> ConfigKey {
    ConfigKey {
        topic_default: true,
        ..k
    }
}

const fn topic_value(k: ConfigKey, set: TopicSet, get: TopicGet) -> ConfigKey {
    ConfigKey {
        topic_value: Some(TopicValue { set, get }),
        ..k
    }
}

const fn broker_set(k: ConfigKey, set: BrokerSet) -> ConfigKey {
    ConfigKey {
        broker_set: Some(set),
        ..k
    }
}

const fn aliased(k: ConfigKey, alias: &'static str) -> ConfigKey {
    ConfigKey {
        alias: Some(alias),
        ..k
    }
}

use KeyType::{Boolean, Double, Int, List, Long, String as Str};

use super::{
    BrokerConfig, COMPRESSION_TYPES, CleanupPolicy, LogConfig, broker_error, coarse_time_ms,
    kafka_bool, kafka_double_between, kafka_int, kafka_long, log_dirs,
};
use crate::error::{Error, Result};
use crate::record::TimestampType;

/// Every key topicfs honours, in the order of the README's table and `--help`.
pub const CONFIG_KEYS: &[ConfigKey] = &[
    broker_set(
        key(
            "log.dirs",
            None,
            Some("log-dir"),
            List,
            "DIR",
            Some(crate::base::DEFAULT_LOG_DIR),
            "the log dirs (repeat the option; ',' in server.properties, ':' in -o)",
        ),
        |c, k, v| {
            c.log_dirs = log_dirs(k, v)?;
            Ok(())
        },
    ),
    broker_set(
        key(
            "log.dir",
            None,
            None,
            List,
            "DIR",
            None,
            "the log dir, when log.dirs is not given",
        ),
        |c, k, v| {
            c.log_dirs = log_dirs(k, v)?;
            Ok(())
        },
    ),
    broker_set(
        for_topics(key(
            "num.partitions",
            None,
            Some("num-partitions"),
            Int,
            "N",
            Some("1"),
            "partitions of a new topic",
        )),
        |c, k, v| {
            c.num_partitions = kafka_int(k, v, Some(1))? as u32;
            Ok(())
        },
    ),
    broker_set(
        key(
            "offsets.topic.num.partitions",
            None,
            None,
            Int,
            "N",
            Some("50"),
            "partitions of `__consumer_offsets` when topicfs creates it",
        ),
        |c, k, v| {
            c.offsets_topic_num_partitions = kafka_int(k, v, Some(1))? as u32;
            Ok(())
        },
    ),
    topic_value(
        key(
            "log.segment.bytes",
            Some("segment.bytes"),
            Some("segment-bytes"),
            Int,
            "BYTES",
            Some("1073741824"),
            "roll a segment before it passes this size",
        ),
        |c, k, v| {
            c.segment_bytes = kafka_int(k, v, Some(14))? as u64;
            Ok(())
        },
        |c| c.segment_bytes.to_string(),
    ),
    broker_set(
        topic_value(
            key(
                "log.roll.ms",
                Some("segment.ms"),
                Some("roll-ms"),
                Long,
                "MS",
                None,
                "roll a segment older than this",
            ),
            |c, k, v| {
                c.segment_ms = kafka_long(k, v, Some(1))?;
                Ok(())
            },
            |c| c.segment_ms.to_string(),
        ),
        |c, k, v| {
            c.log
                .set_topic_key("segment.ms", v)
                .map_err(|e| broker_error(e, "segment.ms", k))?;
            c.roll_ms_set = true;
            Ok(())
        },
    ),
    broker_set(
        for_topics(key(
            "log.roll.hours",
            None,
            Some("roll-hours"),
            Int,
            "HOURS",
            Some("168"),
            "roll a segment older than this",
        )),
        |c, k, v| {
            let h = kafka_int(k, v, Some(1))? as i64;
            if !c.roll_ms_set {
                c.log.segment_ms = coarse_time_ms(k, h);
            }
            Ok(())
        },
    ),
    topic_value(
        aliased(
            key(
                "log.index.size.max.bytes",
                Some("segment.index.bytes"),
                Some("segment-index-bytes"),
                Int,
                "BYTES",
                Some("10485760"),
                "preallocated size of each index",
            ),
            "index-size-max-bytes",
        ),
        |c, k, v| {
            c.segment_index_bytes = kafka_int(k, v, Some(4))? as u64;
            Ok(())
        },
        |c| c.segment_index_bytes.to_string(),
    ),
    topic_value(
        key(
            "log.index.interval.bytes",
            Some("index.interval.bytes"),
            Some("index-interval-bytes"),
            Int,
            "BYTES",
            Some("4096"),
            "bytes appended between index entries",
        ),
        |c, k, v| {
            c.index_interval_bytes = kafka_int(k, v, Some(0))? as u64;
            Ok(())
        },
        |c| c.index_interval_bytes.to_string(),
    ),
    topic_value(
        key(
            "log.message.timestamp.type",
            Some("message.timestamp.type"),
            Some("message-timestamp-type"),
            Str,
            "TYPE",
            Some("CreateTime"),
            "CreateTime or LogAppendTime",
        ),
        |c, k, v| {
            c.message_timestamp_type = TimestampType::from_name(v).ok_or_else(|| {
                Error::InvalidConfig(format!(
                    "Invalid value {v} for configuration {k}: String must be one of: CreateTime, LogAppendTime"
                ))
            })?;
            Ok(())
        },
        |c| c.message_timestamp_type.name().to_string(),
    ),
    topic_value(
        key(
            "log.message.timestamp.before.max.ms",
            Some("message.timestamp.before.max.ms"),
            Some("message-timestamp-before-max-ms"),
            Long,
            "MS",
            Some("9223372036854775807"),
            "refuse CreateTime records older than now minus this",
        ),
        |c, k, v| {
            c.message_timestamp_before_max_ms = kafka_long(k, v, Some(0))?;
            Ok(())
        },
        |c| c.message_timestamp_before_max_ms.to_string(),
    ),
    topic_value(
        key(
            "log.message.timestamp.after.max.ms",
            Some("message.timestamp.after.max.ms"),
            Some("message-timestamp-after-max-ms"),
            Long,
            "MS",
            Some("3600000"),
            "refuse CreateTime records newer than now plus this",
        ),
        |c, k, v| {
            c.message_timestamp_after_max_ms = kafka_long(k, v, Some(0))?;
            Ok(())
        },
        |c| c.message_timestamp_after_max_ms.to_string(),
    ),
    broker_set(
        topic_value(
            key(
                "log.retention.ms",
                Some("retention.ms"),
                Some("retention-ms"),
                Long,
                "MS",
                None,
                "delete segments older than this (-1: never)",
            ),
            |c, k, v| {
                c.retention_ms = kafka_long(k, v, Some(-1))?;
                Ok(())
            },
            |c| c.retention_ms.to_string(),
        ),
        |c, k, v| {
            // KafkaConfig.logRetentionTimeMillis: LONG/INT without a validator, and any
            // negative result means -1 (no time limit).
            c.log.retention_ms = kafka_long(k, v, None)?.max(-1);
            c.retention_ms_set = true;
            Ok(())
        },
    ),
    broker_set(
        for_topics(key(
            "log.retention.minutes",
            None,
            Some("retention-minutes"),
            Int,
            "MINUTES",
            None,
            "delete segments older than this",
        )),
        |c, k, v| {
            let m = kafka_int(k, v, None)? as i64;
            if !c.retention_ms_set {
                c.log.retention_ms = coarse_time_ms(k, m);
            }
            Ok(())
        },
    ),
    broker_set(
        for_topics(key(
            "log.retention.hours",
            None,
            Some("retention-hours"),
            Int,
            "HOURS",
            Some("168"),
            "delete segments older than this",
        )),
        |c, k, v| {
            let h = kafka_int(k, v, None)? as i64;
            if !c.retention_ms_set {
                c.log.retention_ms = coarse_time_ms(k, h);
            }
            Ok(())
        },
    ),
    topic_value(
        key(
            "log.retention.bytes",
            Some("retention.bytes"),
            Some("retention-bytes"),
            Long,
            "BYTES",
            Some("-1"),
            "delete old segments past this partition size",
        ),
        |c, k, v| {
            // No validator: any negative value means no size limit.
            c.retention_bytes = kafka_long(k, v, None)?;
            Ok(())
        },
        |c| c.retention_bytes.to_string(),
    ),
    broker_set(
        key(
            "log.retention.check.interval.ms",
            None,
            Some("retention-check-interval-ms"),
            Long,
            "MS",
            Some("300000"),
            "how often retention runs",
        ),
        |c, k, v| {
            c.retention_check_interval_ms = kafka_long(k, v, Some(1))? as u64;
            Ok(())
        },
    ),
    topic_value(
        aliased(
            key(
                "log.flush.interval.messages",
                Some("flush.messages"),
                Some("flush-messages"),
                Long,
                "N",
                Some(NEVER_FORCED),
                "fsync every N records",
            ),
            "flush-interval-messages",
        ),
        |c, k, v| {
            let n = kafka_long(k, v, Some(1))?;
            c.flush_messages = if n == i64::MAX { u64::MAX } else { n as u64 };
            Ok(())
        },
        |c| match c.flush_messages {
            u64::MAX => i64::MAX.to_string(),
            n => n.to_string(),
        },
    ),
    broker_set(
        aliased(
            key(
                "log.flush.offset.checkpoint.interval.ms",
                None,
                Some("flush-offset-checkpoint-interval-ms"),
                Int,
                "MS",
                Some("60000"),
                "how often recovery points are written",
            ),
            "checkpoint-interval-ms",
        ),
        |c, k, v| {
            // INT atLeast(0); 0 means no periodic checkpoint (Kafka schedules it only once).
            c.checkpoint_interval_ms = kafka_int(k, v, Some(0))? as u64;
            Ok(())
        },
    ),
    topic_value(
        key(
            "message.max.bytes",
            Some("max.message.bytes"),
            Some("message-max-bytes"),
            Int,
            "BYTES",
            Some("1048588"),
            "the largest record batch accepted",
        ),
        |c, k, v| {
            c.max_message_bytes = kafka_int(k, v, Some(0))? as usize;
            Ok(())
        },
        |c| c.max_message_bytes.to_string(),
    ),
    topic_value(
        key(
            "compression.type",
            Some("compression.type"),
            Some("compression-type"),
            Str,
            "CODEC",
            Some("producer"),
            "producer, uncompressed, gzip, snappy, lz4 or zstd",
        ),
        |c, k, v| {
            if !COMPRESSION_TYPES.contains(&v) {
                return Err(Error::InvalidConfig(format!(
                    "Invalid value {v} for configuration {k}: String must be one of: {}",
                    COMPRESSION_TYPES.join(", ")
                )));
            }
            c.compression_type = v.to_string();
            Ok(())
        },
        |c| c.compression_type.clone(),
    ),
    topic_value(
        key(
            "log.cleanup.policy",
            Some("cleanup.policy"),
            Some("cleanup-policy"),
            List,
            "POLICY",
            Some("delete"),
            "delete, compact, or compact,delete (`__consumer_offsets` is compact)",
        ),
        |c, k, v| {
            c.cleanup_policy = CleanupPolicy::parse(k, v)?;
            Ok(())
        },
        |c| c.cleanup_policy.as_str().to_string(),
    ),
    broker_set(
        key(
            "log.cleaner.enable",
            None,
            Some("log-cleaner-enable"),
            Boolean,
            "BOOL",
            Some("true"),
            "run the cleaner of compacted topics",
        ),
        |c, k, v| {
            c.cleaner_enable = kafka_bool(k, v)?;
            Ok(())
        },
    ),
    topic_value(
        key(
            "log.cleaner.min.cleanable.ratio",
            Some("min.cleanable.dirty.ratio"),
            Some("min-cleanable-dirty-ratio"),
            Double,
            "RATIO",
            Some("0.5"),
            "clean a compacted log when more than this part of it is dirty",
        ),
        |c, k, v| {
            c.min_cleanable_dirty_ratio = kafka_double_between(k, v, 0.0, 1.0)?;
            Ok(())
        },
        |c| c.min_cleanable_dirty_ratio.to_string(),
    ),
    topic_value(
        key(
            "log.cleaner.min.compaction.lag.ms",
            Some("min.compaction.lag.ms"),
            Some("min-compaction-lag-ms"),
            Long,
            "MS",
            Some("0"),
            "records younger than this are not cleaned",
        ),
        |c, k, v| {
            c.min_compaction_lag_ms = kafka_long(k, v, Some(0))?;
            Ok(())
        },
        |c| c.min_compaction_lag_ms.to_string(),
    ),
    topic_value(
        key(
            "log.cleaner.max.compaction.lag.ms",
            Some("max.compaction.lag.ms"),
            Some("max-compaction-lag-ms"),
            Long,
            "MS",
            Some("9223372036854775807"),
            "clean a log holding a dirty record older than this, whatever its ratio",
        ),
        |c, k, v| {
            c.max_compaction_lag_ms = kafka_long(k, v, Some(1))?;
            Ok(())
        },
        |c| c.max_compaction_lag_ms.to_string(),
    ),
    topic_value(
        key(
            "log.cleaner.delete.retention.ms",
            Some("delete.retention.ms"),
            Some("delete-retention-ms"),
            Long,
            "MS",
            Some("86400000"),
            "keep tombstones this long after the first clean that saw them",
        ),
        |c, k, v| {
            c.delete_retention_ms = kafka_long(k, v, Some(0))?;
            Ok(())
        },
        |c| c.delete_retention_ms.to_string(),
    ),
    broker_set(
        key(
            "log.cleaner.backoff.ms",
            None,
            Some("log-cleaner-backoff-ms"),
            Long,
            "MS",
            Some("15000"),
            "how long the cleaner sleeps when no log needs cleaning",
        ),
        |c, k, v| {
            c.cleaner_backoff_ms = kafka_long(k, v, Some(0))? as u64;
            Ok(())
        },
    ),
    broker_set(
        key(
            "log.cleaner.dedupe.buffer.size",
            None,
            Some("log-cleaner-dedupe-buffer-size"),
            Long,
            "BYTES",
            Some("134217728"),
            "memory of the cleaner's offset map (24 bytes per key)",
        ),
        |c, k, v| {
            // Kafka: LONG; the map takes at least one slot's worth (24 bytes) per thread.
            c.cleaner_dedupe_buffer_size = kafka_long(k, v, Some(24))? as u64;
            Ok(())
        },
    ),
];

/// The header of the README's table of options ([`ConfigKey::readme_row`] gives its rows).
#[cfg(test)]
pub const README_TABLE_HEADER: &str =
    "| server.properties key | option | topic key | default | meaning |\n|---|---|---|---|---|\n";

/// The definition of a topic key (`segment.bytes`).
pub fn topic_key_def(topic: &str) -> Option<&'static ConfigKey> {
    CONFIG_KEYS.iter().find(|k| k.topic == Some(topic))
}

/// The definition of a broker key.
pub fn broker_key_def(broker: &str) -> Option<&'static ConfigKey> {
    CONFIG_KEYS.iter().find(|k| k.broker == broker)
}

impl ConfigKey {
    /// The `--help` heading of its long option.
    pub fn help_heading(&self) -> &'static str {
        if self.topic_default {
            TOPIC_DEFAULTS_HEADING
        } else {
            BROKER_DEFAULTS_HEADING
        }
    }

    /// The `--help` text of its long option.
    pub fn cli_help(&self) -> std::string::String {
        let default = self
            .default
            .map(|d| format!(" [default: {d}]"))
            .unwrap_or_default();
        // In the text, so the man page shows it too (clap_mangen leaves aliases out).
        let alias = self
            .alias
            .map(|a| format!(" [alias: --{a}]"))
            .unwrap_or_default();
        format!("{}: {}{default}{alias}", self.broker, self.help)
    }

    /// Its row of the README's table of options.
    #[cfg(test)]
    pub fn readme_row(&self) -> std::string::String {
        let option = match (self.option, self.broker) {
            (Some(o), "log.dirs") => format!("`--{o} {}` (repeat)", self.unit),
            (Some(o), _) => format!("`--{o}`"),
            (None, _) => "-".to_string(),
        };
        let topic = self.topic.map_or("-".to_string(), |t| format!("`{t}`"));
        let default = self.default.unwrap_or("unset");
        format!(
            "| {} | {option} | {topic} | {default} | {} |",
            self.broker, self.help
        )
    }
}

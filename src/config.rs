//! Broker and topic configuration: Kafka's `server.properties` keys, their defaults, and the
//! per-topic keys (`segment.bytes`, `retention.ms`, ...) a topic can override.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::record::{Compression, TimestampType};

pub const DEFAULT_LOG_DIR: &str = "/tmp/topicfs-logs";
const HOUR_MS: i64 = 3_600_000;

/// The effective configuration of one topic's logs.
#[derive(Clone, Debug, PartialEq)]
pub struct LogConfig {
    pub segment_bytes: u64,
    pub segment_ms: i64,
    pub segment_index_bytes: u64,
    pub index_interval_bytes: u64,
    pub retention_ms: i64,
    pub retention_bytes: i64,
    pub message_timestamp_type: TimestampType,
    /// `producer` or a codec name.
    pub compression_type: String,
    pub max_message_bytes: usize,
    /// Force an fsync every N records; `u64::MAX` never forces.
    pub flush_messages: u64,
    /// A CreateTime record older than now minus this is refused (Kafka 3.6+, KIP-937).
    pub message_timestamp_before_max_ms: i64,
    /// A CreateTime record newer than now plus this is refused (1 hour from Kafka 4.0).
    pub message_timestamp_after_max_ms: i64,
    /// `cleanup.policy`: `delete`, `compact`, or both.
    pub cleanup_policy: CleanupPolicy,
    /// Clean a compacted log when its dirty bytes are more than this part of it.
    pub min_cleanable_dirty_ratio: f64,
    /// Records younger than this stay uncleaned.
    pub min_compaction_lag_ms: i64,
    /// A dirty record older than this makes its log cleanable whatever the ratio.
    pub max_compaction_lag_ms: i64,
    /// How long tombstones (and transaction markers) stay after the first clean that saw them.
    pub delete_retention_ms: i64,
}

/// Kafka's `cleanup.policy` list: `delete`, `compact`, or both (in the order given).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CleanupPolicy {
    pub compact: bool,
    pub delete: bool,
    /// The list as written (`compact,delete`), shown by `config`.
    text: String,
}

impl CleanupPolicy {
    pub fn delete() -> CleanupPolicy {
        CleanupPolicy {
            compact: false,
            delete: true,
            text: "delete".to_string(),
        }
    }
    pub fn compact() -> CleanupPolicy {
        CleanupPolicy {
            compact: true,
            delete: false,
            text: "compact".to_string(),
        }
    }

    /// Parses a Kafka list value (`ValidList.in("compact", "delete")`, no empty list).
    pub fn parse(key: &str, v: &str) -> Result<CleanupPolicy> {
        let items: Vec<&str> = v.split(',').map(str::trim).collect();
        let bad = items.iter().find(|i| !matches!(**i, "compact" | "delete"));
        if v.trim().is_empty() || bad.is_some() {
            return Err(Error::InvalidConfig(format!(
                "Invalid value {} for configuration {key}: String must be one of: compact, delete",
                bad.copied().unwrap_or(v)
            )));
        }
        Ok(CleanupPolicy {
            compact: items.contains(&"compact"),
            delete: items.contains(&"delete"),
            text: items.join(","),
        })
    }

    pub fn as_str(&self) -> &str {
        &self.text
    }
}

impl Default for LogConfig {
    fn default() -> Self {
        LogConfig {
            segment_bytes: 1_073_741_824,
            segment_ms: 168 * HOUR_MS,
            segment_index_bytes: 10_485_760,
            index_interval_bytes: 4096,
            retention_ms: 168 * HOUR_MS,
            retention_bytes: -1,
            message_timestamp_type: TimestampType::CreateTime,
            compression_type: "producer".to_string(),
            max_message_bytes: 1_048_588,
            flush_messages: u64::MAX,
            message_timestamp_before_max_ms: i64::MAX,
            message_timestamp_after_max_ms: 3_600_000,
            cleanup_policy: CleanupPolicy::delete(),
            min_cleanable_dirty_ratio: 0.5,
            min_compaction_lag_ms: 0,
            max_compaction_lag_ms: i64::MAX,
            delete_retention_ms: 86_400_000,
        }
    }
}

/// The topic-level keys, in the order `config` shows them.
pub const TOPIC_KEYS: &[&str] = &[
    "segment.bytes",
    "segment.ms",
    "segment.index.bytes",
    "index.interval.bytes",
    "retention.ms",
    "retention.bytes",
    "message.timestamp.type",
    "compression.type",
    "max.message.bytes",
    "flush.messages",
    "message.timestamp.before.max.ms",
    "message.timestamp.after.max.ms",
    "cleanup.policy",
    "min.cleanable.dirty.ratio",
    "min.compaction.lag.ms",
    "max.compaction.lag.ms",
    "delete.retention.ms",
];

/// Kafka's ConfigDef `INT`: a 32-bit integer, with its `atLeast(min)` validator when given.
fn kafka_int(key: &str, v: &str, min: Option<i32>) -> Result<i32> {
    let n = v.trim().parse::<i32>().map_err(|_| {
        Error::InvalidConfig(format!(
            "Invalid value {v} for configuration {key}: Not a number of type INT"
        ))
    })?;
    at_least(key, n as i64, min.map(i64::from))?;
    Ok(n)
}

/// Kafka's ConfigDef `LONG`: a 64-bit integer, with its `atLeast(min)` validator when given.
fn kafka_long(key: &str, v: &str, min: Option<i64>) -> Result<i64> {
    let n = v.trim().parse::<i64>().map_err(|_| {
        Error::InvalidConfig(format!(
            "Invalid value {v} for configuration {key}: Not a number of type LONG"
        ))
    })?;
    at_least(key, n, min)?;
    Ok(n)
}

/// Kafka's ConfigDef `DOUBLE` with its `between(min, max)` validator.
fn kafka_double_between(key: &str, v: &str, min: f64, max: f64) -> Result<f64> {
    let n = v.trim().parse::<f64>().map_err(|_| {
        Error::InvalidConfig(format!(
            "Invalid value {v} for configuration {key}: Not a number of type DOUBLE"
        ))
    })?;
    if !(min..=max).contains(&n) {
        return Err(Error::InvalidConfig(format!(
            "Invalid value {n} for configuration {key}: Value must be no less than {min} and no more than {max}"
        )));
    }
    Ok(n)
}

/// Kafka's ConfigDef `BOOLEAN`: `true` or `false`, any case.
fn kafka_bool(key: &str, v: &str) -> Result<bool> {
    match v.trim().to_ascii_lowercase().as_str() {
        "true" => Ok(true),
        "false" => Ok(false),
        _ => Err(Error::InvalidConfig(format!(
            "Invalid value {v} for configuration {key}: Expected value to be either true or false"
        ))),
    }
}

fn at_least(key: &str, n: i64, min: Option<i64>) -> Result<()> {
    match min {
        Some(min) if n < min => Err(Error::InvalidConfig(format!(
            "Invalid value {n} for configuration {key}: Value must be at least {min}"
        ))),
        _ => Ok(()),
    }
}

/// A topic key's error, told with the broker key that was set (`log.segment.bytes`).
fn broker_error(e: Error, topic_key: &str, broker_key: &str) -> Error {
    match e {
        Error::InvalidConfig(m) => Error::InvalidConfig(m.replace(
            &format!("configuration {topic_key}:"),
            &format!("configuration {broker_key}:"),
        )),
        e => e,
    }
}

/// Kafka's `BrokerCompressionType` names (`ValidString.in`, case-sensitive): `none` is not one.
pub const COMPRESSION_TYPES: &[&str] =
    &["uncompressed", "zstd", "lz4", "snappy", "gzip", "producer"];

impl LogConfig {
    /// Sets one topic-level key (Kafka topic config name).
    pub fn set_topic_key(&mut self, key: &str, value: &str) -> Result<()> {
        let v = value.trim();
        match key {
            // Kafka's LogConfig definitions: type and validator of each key (nothing is clamped).
            "segment.bytes" => self.segment_bytes = kafka_int(key, v, Some(14))? as u64,
            "segment.ms" => self.segment_ms = kafka_long(key, v, Some(1))?,
            "segment.index.bytes" => self.segment_index_bytes = kafka_int(key, v, Some(4))? as u64,
            "index.interval.bytes" => {
                self.index_interval_bytes = kafka_int(key, v, Some(0))? as u64
            }
            "retention.ms" => self.retention_ms = kafka_long(key, v, Some(-1))?,
            // No validator: any negative value means no size limit.
            "retention.bytes" => self.retention_bytes = kafka_long(key, v, None)?,
            "message.timestamp.type" => {
                self.message_timestamp_type = TimestampType::from_name(v).ok_or_else(|| {
                    Error::InvalidConfig(format!(
                        "Invalid value {v} for configuration {key}: String must be one of: CreateTime, LogAppendTime"
                    ))
                })?
            }
            "compression.type" => {
                if !COMPRESSION_TYPES.contains(&v) {
                    return Err(Error::InvalidConfig(format!(
                        "Invalid value {v} for configuration {key}: String must be one of: {}",
                        COMPRESSION_TYPES.join(", ")
                    )));
                }
                self.compression_type = v.to_string();
            }
            "max.message.bytes" => {
                self.max_message_bytes = kafka_int(key, v, Some(0))? as usize
            }
            "flush.messages" => {
                let n = kafka_long(key, v, Some(1))?;
                self.flush_messages = if n == i64::MAX { u64::MAX } else { n as u64 };
            }
            "message.timestamp.before.max.ms" | "message.timestamp.after.max.ms" => {
                let n = kafka_long(key, v, Some(0))?;
                if key.contains("before") {
                    self.message_timestamp_before_max_ms = n;
                } else {
                    self.message_timestamp_after_max_ms = n;
                }
            }
            "cleanup.policy" => self.cleanup_policy = CleanupPolicy::parse(key, v)?,
            "min.cleanable.dirty.ratio" => {
                self.min_cleanable_dirty_ratio = kafka_double_between(key, v, 0.0, 1.0)?
            }
            "min.compaction.lag.ms" => self.min_compaction_lag_ms = kafka_long(key, v, Some(0))?,
            "max.compaction.lag.ms" => self.max_compaction_lag_ms = kafka_long(key, v, Some(1))?,
            "delete.retention.ms" => self.delete_retention_ms = kafka_long(key, v, Some(0))?,
            _ => {
                return Err(Error::InvalidConfig(format!(
                    "unknown topic config key {key:?}"
                )));
            }
        }
        Ok(())
    }

    /// The value of a topic-level key, as `config` shows it.
    pub fn get_topic_key(&self, key: &str) -> Option<String> {
        Some(match key {
            "segment.bytes" => self.segment_bytes.to_string(),
            "segment.ms" => self.segment_ms.to_string(),
            "segment.index.bytes" => self.segment_index_bytes.to_string(),
            "index.interval.bytes" => self.index_interval_bytes.to_string(),
            "retention.ms" => self.retention_ms.to_string(),
            "retention.bytes" => self.retention_bytes.to_string(),
            "message.timestamp.type" => self.message_timestamp_type.name().to_string(),
            "compression.type" => self.compression_type.clone(),
            "max.message.bytes" => self.max_message_bytes.to_string(),
            "flush.messages" => {
                if self.flush_messages == u64::MAX {
                    i64::MAX.to_string()
                } else {
                    self.flush_messages.to_string()
                }
            }
            "message.timestamp.before.max.ms" => self.message_timestamp_before_max_ms.to_string(),
            "message.timestamp.after.max.ms" => self.message_timestamp_after_max_ms.to_string(),
            "cleanup.policy" => self.cleanup_policy.as_str().to_string(),
            "min.cleanable.dirty.ratio" => self.min_cleanable_dirty_ratio.to_string(),
            "min.compaction.lag.ms" => self.min_compaction_lag_ms.to_string(),
            "max.compaction.lag.ms" => self.max_compaction_lag_ms.to_string(),
            "delete.retention.ms" => self.delete_retention_ms.to_string(),
            _ => return None,
        })
    }

    /// The codec new batches are written with (`producer` means as written: none for lines).
    pub fn write_compression(&self) -> Compression {
        Compression::from_name(&self.compression_type).unwrap_or(Compression::None)
    }

    /// Applies topic overrides on top of these defaults.
    pub fn with_overrides(&self, overrides: &BTreeMap<String, String>) -> Result<LogConfig> {
        self.for_topic("", overrides)
    }

    /// The config of topic `name`: these defaults, then its overrides. `__consumer_offsets`
    /// is compacted unless its overrides say otherwise (Kafka creates it with
    /// `cleanup.policy=compact`, so a log dir a broker wrote has it so).
    pub fn for_topic(&self, name: &str, overrides: &BTreeMap<String, String>) -> Result<LogConfig> {
        let mut c = self.clone();
        if name == crate::group::OFFSETS_TOPIC {
            c.cleanup_policy = CleanupPolicy::compact();
        }
        for (k, v) in overrides {
            c.set_topic_key(k, v)?;
        }
        Ok(c)
    }
}

/// The daemon's configuration: `server.properties` keys plus command-line options.
#[derive(Clone, Debug, PartialEq)]
pub struct BrokerConfig {
    pub log_dirs: Vec<PathBuf>,
    pub num_partitions: u32,
    /// `offsets.topic.num.partitions`: partitions of `__consumer_offsets` when topicfs
    /// creates it (an existing one keeps the count it has).
    pub offsets_topic_num_partitions: u32,
    pub retention_check_interval_ms: u64,
    /// How often recovery points are checkpointed (`log.flush.offset.checkpoint.interval.ms`).
    pub checkpoint_interval_ms: u64,
    pub log: LogConfig,
    /// A read-only mount (`-o ro`): nothing in the log dirs is written, renamed or deleted.
    pub read_only: bool,
    /// Accept a log dir that is owned by another user or writable by others.
    pub allow_untrusted_log_dir: bool,
    /// `log.cleaner.enable`: whether compacted topics are cleaned.
    pub cleaner_enable: bool,
    /// `log.cleaner.backoff.ms`: the cleaner's sleep when no log needs cleaning.
    pub cleaner_backoff_ms: u64,
    /// `log.cleaner.dedupe.buffer.size`: memory of the cleaner's offset map.
    pub cleaner_dedupe_buffer_size: u64,
    // Precedence helpers: Kafka lets *.ms win over *.hours whatever the order of the lines.
    roll_ms_set: bool,
    retention_ms_set: bool,
}

impl Default for BrokerConfig {
    fn default() -> Self {
        BrokerConfig {
            log_dirs: vec![PathBuf::from(DEFAULT_LOG_DIR)],
            num_partitions: 1,
            offsets_topic_num_partitions: 50,
            retention_check_interval_ms: 300_000,
            checkpoint_interval_ms: 60_000,
            log: LogConfig::default(),
            read_only: false,
            allow_untrusted_log_dir: false,
            cleaner_enable: true,
            cleaner_backoff_ms: 15_000,
            cleaner_dedupe_buffer_size: 134_217_728,
            roll_ms_set: false,
            retention_ms_set: false,
        }
    }
}

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
/// `<topic>/config` keys and the README's table come from. Each key's validator (Kafka's
/// type and `atLeast`) is applied by [`BrokerConfig::set`] and [`LogConfig::set_topic_key`].
#[derive(Debug)]
pub struct ConfigKey {
    /// The `server.properties` key.
    pub broker: &'static str,
    /// The topic-level key it sets (`<topic>/config`, also accepted by `-o`).
    pub topic: Option<&'static str>,
    /// The long option of `topicfs mount` (without `--`), and an alias of it.
    pub option: Option<&'static str>,
    pub alias: Option<&'static str>,
    pub kind: KeyType,
    /// The unit of the value, as the option's value name shows it.
    pub unit: &'static str,
    /// The default, as documented (`None`: unset).
    pub default: Option<&'static str>,
    pub help: &'static str,
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
    }
}

const fn aliased(k: ConfigKey, alias: &'static str) -> ConfigKey {
    ConfigKey {
        alias: Some(alias),
        ..k
    }
}

use KeyType::{Boolean, Double, Int, List, Long, String as Str};

/// Every key topicfs honours, in the order of the README's table and `--help`.
pub const CONFIG_KEYS: &[ConfigKey] = &[
    key(
        "log.dirs",
        None,
        Some("log-dir"),
        List,
        "DIR",
        Some("/tmp/topicfs-logs"),
        "the log dirs (repeat the option; ',' in server.properties, ':' in -o)",
    ),
    key(
        "log.dir",
        None,
        None,
        List,
        "DIR",
        None,
        "the log dir, when log.dirs is not given",
    ),
    key(
        "num.partitions",
        None,
        Some("num-partitions"),
        Int,
        "N",
        Some("1"),
        "partitions of a new topic",
    ),
    key(
        "offsets.topic.num.partitions",
        None,
        None,
        Int,
        "N",
        Some("50"),
        "partitions of `__consumer_offsets` when topicfs creates it",
    ),
    key(
        "log.segment.bytes",
        Some("segment.bytes"),
        Some("segment-bytes"),
        Int,
        "BYTES",
        Some("1073741824"),
        "roll a segment before it passes this size",
    ),
    key(
        "log.roll.ms",
        Some("segment.ms"),
        Some("roll-ms"),
        Long,
        "MS",
        None,
        "roll a segment older than this",
    ),
    key(
        "log.roll.hours",
        None,
        Some("roll-hours"),
        Int,
        "HOURS",
        Some("168"),
        "roll a segment older than this",
    ),
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
    key(
        "log.index.interval.bytes",
        Some("index.interval.bytes"),
        Some("index-interval-bytes"),
        Int,
        "BYTES",
        Some("4096"),
        "bytes appended between index entries",
    ),
    key(
        "log.message.timestamp.type",
        Some("message.timestamp.type"),
        Some("message-timestamp-type"),
        Str,
        "TYPE",
        Some("CreateTime"),
        "CreateTime or LogAppendTime",
    ),
    key(
        "log.message.timestamp.before.max.ms",
        Some("message.timestamp.before.max.ms"),
        Some("message-timestamp-before-max-ms"),
        Long,
        "MS",
        Some("9223372036854775807"),
        "refuse CreateTime records older than now minus this",
    ),
    key(
        "log.message.timestamp.after.max.ms",
        Some("message.timestamp.after.max.ms"),
        Some("message-timestamp-after-max-ms"),
        Long,
        "MS",
        Some("3600000"),
        "refuse CreateTime records newer than now plus this",
    ),
    key(
        "log.retention.ms",
        Some("retention.ms"),
        Some("retention-ms"),
        Long,
        "MS",
        None,
        "delete segments older than this (-1: never)",
    ),
    key(
        "log.retention.minutes",
        None,
        Some("retention-minutes"),
        Int,
        "MINUTES",
        None,
        "delete segments older than this",
    ),
    key(
        "log.retention.hours",
        None,
        Some("retention-hours"),
        Int,
        "HOURS",
        Some("168"),
        "delete segments older than this",
    ),
    key(
        "log.retention.bytes",
        Some("retention.bytes"),
        Some("retention-bytes"),
        Long,
        "BYTES",
        Some("-1"),
        "delete old segments past this partition size",
    ),
    key(
        "log.retention.check.interval.ms",
        None,
        Some("retention-check-interval-ms"),
        Long,
        "MS",
        Some("300000"),
        "how often retention runs",
    ),
    aliased(
        key(
            "log.flush.interval.messages",
            Some("flush.messages"),
            Some("flush-messages"),
            Long,
            "N",
            Some("never forced"),
            "fsync every N records",
        ),
        "flush-interval-messages",
    ),
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
    key(
        "message.max.bytes",
        Some("max.message.bytes"),
        Some("message-max-bytes"),
        Int,
        "BYTES",
        Some("1048588"),
        "the largest record batch accepted",
    ),
    key(
        "compression.type",
        Some("compression.type"),
        Some("compression-type"),
        Str,
        "CODEC",
        Some("producer"),
        "producer, uncompressed, gzip, snappy, lz4 or zstd",
    ),
    key(
        "log.cleanup.policy",
        Some("cleanup.policy"),
        Some("cleanup-policy"),
        List,
        "POLICY",
        Some("delete"),
        "delete, compact, or compact,delete (`__consumer_offsets` is compact)",
    ),
    key(
        "log.cleaner.enable",
        None,
        Some("log-cleaner-enable"),
        Boolean,
        "BOOL",
        Some("true"),
        "run the cleaner of compacted topics",
    ),
    key(
        "log.cleaner.min.cleanable.ratio",
        Some("min.cleanable.dirty.ratio"),
        Some("min-cleanable-dirty-ratio"),
        Double,
        "RATIO",
        Some("0.5"),
        "clean a compacted log when more than this part of it is dirty",
    ),
    key(
        "log.cleaner.min.compaction.lag.ms",
        Some("min.compaction.lag.ms"),
        Some("min-compaction-lag-ms"),
        Long,
        "MS",
        Some("0"),
        "records younger than this are not cleaned",
    ),
    key(
        "log.cleaner.max.compaction.lag.ms",
        Some("max.compaction.lag.ms"),
        Some("max-compaction-lag-ms"),
        Long,
        "MS",
        Some("9223372036854775807"),
        "clean a log holding a dirty record older than this, whatever its ratio",
    ),
    key(
        "log.cleaner.delete.retention.ms",
        Some("delete.retention.ms"),
        Some("delete-retention-ms"),
        Long,
        "MS",
        Some("86400000"),
        "keep tombstones this long after the first clean that saw them",
    ),
    key(
        "log.cleaner.backoff.ms",
        None,
        Some("log-cleaner-backoff-ms"),
        Long,
        "MS",
        Some("15000"),
        "how long the cleaner sleeps when no log needs cleaning",
    ),
    key(
        "log.cleaner.dedupe.buffer.size",
        None,
        Some("log-cleaner-dedupe-buffer-size"),
        Long,
        "BYTES",
        Some("134217728"),
        "memory of the cleaner's offset map (24 bytes per key)",
    ),
];

/// The header of the README's table of options ([`ConfigKey::readme_row`] gives its rows).
pub const README_TABLE_HEADER: &str =
    "| server.properties key | option | topic key | default | meaning |\n|---|---|---|---|---|\n";

/// The definition of a broker key.
pub fn broker_key_def(broker: &str) -> Option<&'static ConfigKey> {
    CONFIG_KEYS.iter().find(|k| k.broker == broker)
}

/// The definition of the key a long option (`segment-bytes`) sets. Panics on a name that is
/// not in [`CONFIG_KEYS`]: the long options are generated from it.
pub fn option_def(broker: &str) -> &'static ConfigKey {
    broker_key_def(broker).unwrap_or_else(|| panic!("{broker} is not in CONFIG_KEYS"))
}

impl ConfigKey {
    /// The `--help` text of its long option.
    pub fn cli_help(&self) -> std::string::String {
        let default = self
            .default
            .map(|d| format!(" [default: {d}]"))
            .unwrap_or_default();
        format!("{}: {}{default}", self.broker, self.help)
    }

    /// Its row of the README's table of options.
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

/// The time keys Kafka also takes in a coarser unit: (key, the `*.ms` key it stands for, its
/// unit in milliseconds). Kafka prefers `*.ms` over `*.minutes` over `*.hours`.
pub const COARSE_TIME_KEYS: &[(&str, &str, i64)] = &[
    ("log.roll.hours", "log.roll.ms", HOUR_MS),
    ("log.retention.minutes", "log.retention.ms", 60_000),
    ("log.retention.hours", "log.retention.ms", HOUR_MS),
];

/// `n` of a [`COARSE_TIME_KEYS`] key in milliseconds; a negative count is -1 (no limit).
pub fn coarse_time_ms(key: &str, n: i64) -> i64 {
    let unit = COARSE_TIME_KEYS
        .iter()
        .find(|(k, _, _)| *k == key)
        .map_or(1, |(_, _, unit)| *unit);
    if n < 0 { -1 } else { n.saturating_mul(unit) }
}

/// `pairs` ordered so that the key Kafka prefers is applied last, whatever their given order:
/// `*.hours` first, then `*.minutes`, then everything else (`*.ms`), each group in its given
/// order. The one precedence rule of server.properties, `-o` and the long options.
pub fn by_kafka_precedence<K: AsRef<str>, V>(mut pairs: Vec<(K, V)>) -> Vec<(K, V)> {
    pairs.sort_by_key(|(k, _)| {
        let k = k.as_ref();
        if k.ends_with(".hours") {
            0
        } else if k.ends_with(".minutes") {
            1
        } else {
            2
        }
    });
    pairs
}

impl BrokerConfig {
    /// Sets one broker key. Unknown keys are an error here; `load_properties` logs and skips them.
    pub fn set(&mut self, key: &str, value: &str) -> Result<()> {
        let v = value.trim();
        match key {
            "log.dirs" | "log.dir" => {
                let dirs: Vec<PathBuf> = v
                    .split(',')
                    .map(str::trim)
                    .filter(|s| !s.is_empty())
                    .map(PathBuf::from)
                    .collect();
                if dirs.is_empty() {
                    return Err(Error::InvalidConfig(format!("{key}: empty")));
                }
                self.log_dirs = dirs;
            }
            "num.partitions" => self.num_partitions = kafka_int(key, v, Some(1))? as u32,
            "offsets.topic.num.partitions" => {
                self.offsets_topic_num_partitions = kafka_int(key, v, Some(1))? as u32
            }
            "log.roll.ms" => {
                self.log
                    .set_topic_key("segment.ms", v)
                    .map_err(|e| broker_error(e, "segment.ms", key))?;
                self.roll_ms_set = true;
            }
            "log.roll.hours" => {
                let h = kafka_int(key, v, Some(1))? as i64;
                if !self.roll_ms_set {
                    self.log.segment_ms = coarse_time_ms(key, h);
                }
            }
            // KafkaConfig.logRetentionTimeMillis: LONG/INT without a validator, and any
            // negative result means -1 (no time limit).
            "log.retention.ms" => {
                self.log.retention_ms = kafka_long(key, v, None)?.max(-1);
                self.retention_ms_set = true;
            }
            "log.retention.minutes" => {
                let m = kafka_int(key, v, None)? as i64;
                if !self.retention_ms_set {
                    self.log.retention_ms = coarse_time_ms(key, m);
                }
            }
            "log.retention.hours" => {
                let h = kafka_int(key, v, None)? as i64;
                if !self.retention_ms_set {
                    self.log.retention_ms = coarse_time_ms(key, h);
                }
            }
            "log.retention.check.interval.ms" => {
                self.retention_check_interval_ms = kafka_long(key, v, Some(1))? as u64
            }
            "log.cleaner.enable" => self.cleaner_enable = kafka_bool(key, v)?,
            "log.cleaner.backoff.ms" => {
                self.cleaner_backoff_ms = kafka_long(key, v, Some(0))? as u64
            }
            // Kafka: LONG; the map takes at least one slot's worth (24 bytes) per thread.
            "log.cleaner.dedupe.buffer.size" => {
                self.cleaner_dedupe_buffer_size = kafka_long(key, v, Some(24))? as u64
            }
            // INT atLeast(0); 0 means no periodic checkpoint (Kafka schedules it only once).
            "log.flush.offset.checkpoint.interval.ms" => {
                self.checkpoint_interval_ms = kafka_int(key, v, Some(0))? as u64
            }
            _ => match broker_key_def(key).and_then(|k| k.topic) {
                Some(topic_key) => self
                    .log
                    .set_topic_key(topic_key, v)
                    .map_err(|e| broker_error(e, topic_key, key))?,
                _ => return Err(Error::InvalidConfig(format!("unknown key {key:?}"))),
            },
        }
        Ok(())
    }

    /// Reads a `server.properties` file as Java's `Properties.load` does (see
    /// [`parse_properties`]). Unknown keys are logged and ignored; bad values are errors.
    pub fn load_properties(&mut self, path: &Path) -> Result<()> {
        let bytes = std::fs::read(path).map_err(|e| {
            Error::InvalidConfig(format!("cannot read config file {}: {e}", path.display()))
        })?;
        // Java reads ISO-8859-1; a UTF-8 file (non-ASCII paths) is taken as UTF-8.
        let text = match String::from_utf8(bytes) {
            Ok(t) => t,
            Err(e) => e.into_bytes().iter().map(|&b| b as char).collect(),
        };
        let pairs = parse_properties(&text)
            .map_err(|e| Error::InvalidConfig(format!("config file {}: {e}", path.display())))?;
        let pairs = by_kafka_precedence(pairs);
        for (k, v) in pairs {
            if broker_key_def(&k).is_some() {
                self.set(&k, &v).map_err(|e| {
                    Error::InvalidConfig(format!("config file {}: {e}", path.display()))
                })?;
            } else {
                log::info!("config file {}: ignoring unknown key {k}", path.display());
            }
        }
        Ok(())
    }
}

/// Parses the text of a properties file exactly as `java.util.Properties.load` does: natural
/// lines end at `\n`, `\r` or `\r\n`; blank lines and lines whose first non-blank character
/// is `#` or `!` are skipped (a comment line never continues); a line ending in an odd number
/// of backslashes continues on the next one, whose leading blanks are dropped; the key ends
/// at the first unescaped `=`, `:` or blank, then blanks and at most one `=` or `:` are
/// skipped; `\t \n \r \f \uXXXX` are decoded and a backslash before any other character
/// stands for that character. Blanks are space, tab and form feed. The last of a repeated key
/// wins; the pairs come in the order their keys first appear.
pub fn parse_properties(text: &str) -> std::result::Result<Vec<(String, String)>, String> {
    let is_blank = |c: char| c == ' ' || c == '\t' || c == '\x0c';
    let chars: Vec<char> = text.chars().collect();
    let mut out: Vec<(String, String)> = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        // One logical line, as Java's LineReader returns it (escapes still in place).
        let mut line: Vec<char> = Vec::new();
        let mut skip_blank = true;
        let mut appended = false;
        let mut comment = false;
        let mut new_line = true;
        let mut backslash = false;
        let mut ended = false;
        while i < chars.len() {
            let c = chars[i];
            i += 1;
            if skip_blank {
                if is_blank(c) || (!appended && (c == '\r' || c == '\n')) {
                    continue;
                }
                skip_blank = false;
                appended = false;
            }
            if new_line {
                new_line = false;
                if c == '#' || c == '!' {
                    comment = true;
                }
            }
            if comment {
                if c == '\r' || c == '\n' {
                    if c == '\r' && chars.get(i) == Some(&'\n') {
                        i += 1;
                    }
                    comment = false;
                    new_line = true;
                    skip_blank = true;
                }
                continue;
            }
            if c != '\n' && c != '\r' {
                line.push(c);
                backslash = c == '\\' && !backslash;
                continue;
            }
            if c == '\r' && chars.get(i) == Some(&'\n') {
                i += 1;
            }
            if backslash {
                // A continuation: drop the backslash, skip the next line's leading blanks.
                line.pop();
                backslash = false;
                skip_blank = true;
                appended = true;
                continue;
            }
            ended = true;
            break;
        }
        if !ended && backslash {
            line.pop();
        }
        if line.is_empty() && !ended && i >= chars.len() && comment {
            break;
        }
        if line.is_empty() {
            continue;
        }
        // Split the key from the value.
        let mut key_len = 0;
        let mut value_start = line.len();
        let mut has_sep = false;
        let mut esc = false;
        while key_len < line.len() {
            let c = line[key_len];
            if (c == '=' || c == ':') && !esc {
                value_start = key_len + 1;
                has_sep = true;
                break;
            } else if is_blank(c) && !esc {
                value_start = key_len + 1;
                break;
            }
            esc = c == '\\' && !esc;
            key_len += 1;
        }
        while value_start < line.len() {
            let c = line[value_start];
            if !is_blank(c) {
                if !has_sep && (c == '=' || c == ':') {
                    has_sep = true;
                } else {
                    break;
                }
            }
            value_start += 1;
        }
        let key = unescape(&line[..key_len])?;
        let value = unescape(&line[value_start.min(line.len())..])?;
        match out.iter_mut().find(|(k, _)| *k == key) {
            Some(pair) => pair.1 = value,
            None => out.push((key, value)),
        }
    }
    Ok(out)
}

/// Java's `Properties.loadConvert`: decodes `\uXXXX`, `\t`, `\n`, `\r`, `\f`; a backslash
/// before any other character is dropped. A `\u` escape is UTF-16: surrogate pairs combine.
fn unescape(s: &[char]) -> std::result::Result<String, String> {
    let mut units: Vec<u16> = Vec::with_capacity(s.len());
    let mut i = 0;
    while i < s.len() {
        let c = s[i];
        i += 1;
        if c != '\\' || i >= s.len() {
            let mut buf = [0u16; 2];
            units.extend_from_slice(c.encode_utf16(&mut buf));
            continue;
        }
        let e = s[i];
        i += 1;
        let decoded = match e {
            'u' => {
                let hex: String = s
                    .get(i..i + 4)
                    .map(|h| h.iter().collect())
                    .unwrap_or_default();
                let v = (hex.len() == 4)
                    .then(|| u16::from_str_radix(&hex, 16).ok())
                    .flatten()
                    .filter(|_| hex.chars().all(|h| h.is_ascii_hexdigit()))
                    .ok_or_else(|| "Malformed \\uxxxx encoding.".to_string())?;
                i += 4;
                units.push(v);
                continue;
            }
            't' => '\t',
            'r' => '\r',
            'n' => '\n',
            'f' => '\x0c',
            other => other,
        };
        let mut buf = [0u16; 2];
        units.extend_from_slice(decoded.encode_utf16(&mut buf));
    }
    Ok(String::from_utf16_lossy(&units))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The README's table of options: the lines from its header to the first blank line.
    fn readme_table() -> Vec<std::string::String> {
        let readme = include_str!("../README.md");
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
                && d != "never forced"
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
        assert_eq!(c.log.segment_bytes, 1_073_741_824);
        assert_eq!(c.log.segment_ms, 604_800_000);
        assert_eq!(c.log.max_message_bytes, 1_048_588);
        assert_eq!(c.log_dirs, vec![PathBuf::from("/tmp/topicfs-logs")]);
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
}

//! The one table of configuration keys ([`CONFIG_KEYS`]): each key's broker name, topic name,
//! long option, Kafka type, unit, default and help, from which the long options, `-o`,
//! `server.properties`, `<topic>/config` and the README's table of options come.

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
/// type and `atLeast`) is applied by [`super::BrokerConfig::set`] and
/// [`super::LogConfig::set_topic_key`].
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

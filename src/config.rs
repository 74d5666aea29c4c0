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
];

fn parse_num<T: std::str::FromStr>(key: &str, v: &str) -> Result<T> {
    v.trim()
        .parse::<T>()
        .map_err(|_| Error::InvalidConfig(format!("{key}: {v:?} is not a valid number")))
}

impl LogConfig {
    /// Sets one topic-level key (Kafka topic config name).
    pub fn set_topic_key(&mut self, key: &str, value: &str) -> Result<()> {
        let v = value.trim();
        match key {
            "segment.bytes" => {
                let n: u64 = parse_num(key, v)?;
                if n < 14 {
                    return Err(Error::InvalidConfig(format!("{key}: must be >= 14")));
                }
                self.segment_bytes = n.min(i32::MAX as u64);
            }
            "segment.ms" => {
                let n: i64 = parse_num(key, v)?;
                if n < 1 {
                    return Err(Error::InvalidConfig(format!("{key}: must be >= 1")));
                }
                self.segment_ms = n;
            }
            "segment.index.bytes" => {
                let n: u64 = parse_num(key, v)?;
                if n < 12 {
                    return Err(Error::InvalidConfig(format!("{key}: must be >= 12")));
                }
                self.segment_index_bytes = n.min(i32::MAX as u64);
            }
            "index.interval.bytes" => self.index_interval_bytes = parse_num(key, v)?,
            "retention.ms" => self.retention_ms = parse_num::<i64>(key, v)?.max(-1),
            "retention.bytes" => self.retention_bytes = parse_num::<i64>(key, v)?.max(-1),
            "message.timestamp.type" => {
                self.message_timestamp_type = TimestampType::from_name(v).ok_or_else(|| {
                    Error::InvalidConfig(format!("{key}: {v:?} is not CreateTime or LogAppendTime"))
                })?
            }
            "compression.type" => {
                if v != "producer" && Compression::from_name(v).is_none() {
                    return Err(Error::InvalidConfig(format!(
                        "{key}: {v:?} is not one of producer, none, gzip, snappy, lz4, zstd"
                    )));
                }
                self.compression_type = v.to_string();
            }
            "max.message.bytes" => {
                let n: usize = parse_num(key, v)?;
                if n < 1 {
                    return Err(Error::InvalidConfig(format!("{key}: must be >= 1")));
                }
                self.max_message_bytes = n;
            }
            "flush.messages" => {
                let n: u64 = parse_num(key, v)?;
                self.flush_messages = n.max(1);
            }
            "message.timestamp.before.max.ms" | "message.timestamp.after.max.ms" => {
                let n: i64 = parse_num(key, v)?;
                if n < 0 {
                    return Err(Error::InvalidConfig(format!("{key}: must be >= 0")));
                }
                if key.contains("before") {
                    self.message_timestamp_before_max_ms = n;
                } else {
                    self.message_timestamp_after_max_ms = n;
                }
            }
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
            _ => return None,
        })
    }

    /// The codec new batches are written with (`producer` means as written: none for lines).
    pub fn write_compression(&self) -> Compression {
        Compression::from_name(&self.compression_type).unwrap_or(Compression::None)
    }

    /// Applies topic overrides on top of these defaults.
    pub fn with_overrides(&self, overrides: &BTreeMap<String, String>) -> Result<LogConfig> {
        let mut c = self.clone();
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
    pub retention_check_interval_ms: u64,
    /// How often recovery points are checkpointed (`log.flush.offset.checkpoint.interval.ms`).
    pub checkpoint_interval_ms: u64,
    pub log: LogConfig,
    /// A read-only mount (`-o ro`): nothing in the log dirs is written, renamed or deleted.
    pub read_only: bool,
    /// Accept a log dir that is owned by another user or writable by others.
    pub allow_untrusted_log_dir: bool,
    // Precedence helpers: Kafka lets *.ms win over *.hours whatever the order of the lines.
    roll_ms_set: bool,
    retention_ms_set: bool,
}

impl Default for BrokerConfig {
    fn default() -> Self {
        BrokerConfig {
            log_dirs: vec![PathBuf::from(DEFAULT_LOG_DIR)],
            num_partitions: 1,
            retention_check_interval_ms: 300_000,
            checkpoint_interval_ms: 60_000,
            log: LogConfig::default(),
            read_only: false,
            allow_untrusted_log_dir: false,
            roll_ms_set: false,
            retention_ms_set: false,
        }
    }
}

/// `server.properties` keys that topicfs honours, with the topic key each one sets.
pub const BROKER_KEYS: &[(&str, Option<&str>)] = &[
    ("log.dirs", None),
    ("log.dir", None),
    ("num.partitions", None),
    ("log.segment.bytes", Some("segment.bytes")),
    ("log.roll.ms", Some("segment.ms")),
    ("log.roll.hours", None),
    ("log.index.size.max.bytes", Some("segment.index.bytes")),
    ("log.index.interval.bytes", Some("index.interval.bytes")),
    ("log.message.timestamp.type", Some("message.timestamp.type")),
    ("log.retention.ms", Some("retention.ms")),
    ("log.retention.minutes", None),
    ("log.retention.hours", None),
    ("log.retention.bytes", Some("retention.bytes")),
    ("log.retention.check.interval.ms", None),
    ("log.flush.interval.messages", Some("flush.messages")),
    ("log.flush.offset.checkpoint.interval.ms", None),
    ("message.max.bytes", Some("max.message.bytes")),
    ("compression.type", Some("compression.type")),
    (
        "log.message.timestamp.before.max.ms",
        Some("message.timestamp.before.max.ms"),
    ),
    (
        "log.message.timestamp.after.max.ms",
        Some("message.timestamp.after.max.ms"),
    ),
];

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
            "num.partitions" => {
                let n: u32 = parse_num(key, v)?;
                if n < 1 {
                    return Err(Error::InvalidConfig(format!("{key}: must be >= 1")));
                }
                self.num_partitions = n;
            }
            "log.roll.ms" => {
                self.log.set_topic_key("segment.ms", v)?;
                self.roll_ms_set = true;
            }
            "log.roll.hours" => {
                let h: i64 = parse_num(key, v)?;
                if !self.roll_ms_set {
                    self.log
                        .set_topic_key("segment.ms", &(h * HOUR_MS).to_string())?;
                }
            }
            "log.retention.ms" => {
                self.log.set_topic_key("retention.ms", v)?;
                self.retention_ms_set = true;
            }
            "log.retention.minutes" => {
                let m: i64 = parse_num(key, v)?;
                if !self.retention_ms_set {
                    let ms = if m < 0 { -1 } else { m * 60_000 };
                    self.log.set_topic_key("retention.ms", &ms.to_string())?;
                }
            }
            "log.retention.hours" => {
                let h: i64 = parse_num(key, v)?;
                if !self.retention_ms_set {
                    let ms = if h < 0 { -1 } else { h * HOUR_MS };
                    self.log.set_topic_key("retention.ms", &ms.to_string())?;
                }
            }
            "log.retention.check.interval.ms" => {
                self.retention_check_interval_ms = parse_num::<u64>(key, v)?.max(1)
            }
            "log.flush.offset.checkpoint.interval.ms" => {
                self.checkpoint_interval_ms = parse_num::<u64>(key, v)?.max(1)
            }
            _ => match BROKER_KEYS.iter().find(|(k, _)| *k == key) {
                Some((_, Some(topic_key))) => self.log.set_topic_key(topic_key, v)?,
                _ => return Err(Error::InvalidConfig(format!("unknown key {key:?}"))),
            },
        }
        Ok(())
    }

    /// Reads a `server.properties`-style file: `key=value` (or `key: value`) lines, `#`/`!`
    /// comments. Unknown keys are logged and ignored; bad values are errors.
    pub fn load_properties(&mut self, path: &Path) -> Result<()> {
        let text = std::fs::read_to_string(path).map_err(|e| {
            Error::InvalidConfig(format!("cannot read config file {}: {e}", path.display()))
        })?;
        // Apply *.ms keys before *.hours keys regardless of order (Kafka's precedence).
        let mut pairs = Vec::new();
        for line in text.lines() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') || line.starts_with('!') {
                continue;
            }
            let (k, v) = match line.find(['=', ':']) {
                Some(i) => (line[..i].trim(), line[i + 1..].trim()),
                None => (line, ""),
            };
            pairs.push((k.to_string(), v.to_string()));
        }
        pairs.sort_by_key(|(k, _)| !(k.ends_with(".ms")));
        for (k, v) in pairs {
            if BROKER_KEYS.iter().any(|(bk, _)| *bk == k) {
                self.set(&k, &v)?;
            } else {
                log::info!("config file {}: ignoring unknown key {k}", path.display());
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        assert_eq!(c.log.segment_bytes, 4096);
        assert_eq!(c.log_dirs, vec![PathBuf::from("/a"), PathBuf::from("/b")]);
        assert!(c.set("log.segment.bytes", "x").is_err());
        assert!(c.log.clone().set_topic_key("nope", "1").is_err());
    }
}

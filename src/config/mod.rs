//! Broker and topic configuration: Kafka's `server.properties` keys, their defaults, and the
//! per-topic keys (`segment.bytes`, `retention.ms`, ...) a topic can override.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::record::{Compression, TimestampType};

mod keys;

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

/// The defaults of [`CONFIG_KEYS`]'s topic keys (those of a fresh [`BrokerConfig`]).
impl Default for LogConfig {
    fn default() -> Self {
        BrokerConfig::default().log
    }
}

impl LogConfig {
    /// A config before the key table's defaults are applied: every field set by a row of
    /// [`CONFIG_KEYS`] (a test checks that each one is), but `flush.messages`, whose row shows
    /// no number (`never forced`): `u64::MAX`.
    fn unset() -> LogConfig {
        LogConfig {
            segment_bytes: 0,
            segment_ms: 0,
            segment_index_bytes: 0,
            index_interval_bytes: 0,
            retention_ms: 0,
            retention_bytes: 0,
            message_timestamp_type: TimestampType::CreateTime,
            compression_type: String::new(),
            max_message_bytes: 0,
            flush_messages: u64::MAX,
            message_timestamp_before_max_ms: 0,
            message_timestamp_after_max_ms: 0,
            cleanup_policy: CleanupPolicy::delete(),
            min_cleanable_dirty_ratio: 0.0,
            min_compaction_lag_ms: 0,
            max_compaction_lag_ms: 0,
            delete_retention_ms: 0,
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

/// `log.dirs`: comma-separated directories, at least one.
fn log_dirs(key: &str, v: &str) -> Result<Vec<PathBuf>> {
    let dirs: Vec<PathBuf> = v
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(PathBuf::from)
        .collect();
    if dirs.is_empty() {
        return Err(Error::InvalidConfig(format!("{key}: empty")));
    }
    Ok(dirs)
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
    /// Sets one topic-level key (Kafka topic config name), by its row of [`CONFIG_KEYS`].
    pub fn set_topic_key(&mut self, key: &str, value: &str) -> Result<()> {
        match topic_key_def(key).and_then(|k| k.topic_value) {
            Some(t) => (t.set)(self, key, value.trim()),
            None => Err(Error::InvalidConfig(format!(
                "unknown topic config key {key:?}"
            ))),
        }
    }

    /// The value of a topic-level key, as `config` shows it.
    pub fn get_topic_key(&self, key: &str) -> Option<String> {
        topic_key_def(key)
            .and_then(|k| k.topic_value)
            .map(|t| (t.get)(self))
    }

    /// The codec new batches are written with (`producer` means as written: none for lines).
    pub fn write_compression(&self) -> Compression {
        Compression::from_name(&self.compression_type).unwrap_or(Compression::None)
    }

    /// The config of topic `name`: these defaults, then its overrides. `__consumer_offsets`
    /// and the schema registry's `_schemas` are compacted unless their overrides say
    /// otherwise (Kafka and the registry create them with `cleanup.policy=compact`, so a log
    /// dir a broker wrote has them so).
    pub fn for_topic(&self, name: &str, overrides: &BTreeMap<String, String>) -> Result<LogConfig> {
        let mut c = self.clone();
        if name == crate::base::OFFSETS_TOPIC || name == crate::schema::SCHEMAS_TOPIC {
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
    /// `isolation.level=read_committed`: streams show what a consumer with that setting
    /// reads (records of aborted transactions hidden, the last stable offset as their end).
    pub read_committed: bool,
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

/// The defaults of [`CONFIG_KEYS`], each row's documented default applied as
/// `server.properties` would set it (Kafka's precedence: `log.roll.hours` before
/// `log.roll.ms`); the mount's own switches (`read_only`, ...) off.
impl Default for BrokerConfig {
    fn default() -> Self {
        let mut c = BrokerConfig {
            log_dirs: Vec::new(),
            num_partitions: 0,
            offsets_topic_num_partitions: 0,
            retention_check_interval_ms: 0,
            checkpoint_interval_ms: 0,
            log: LogConfig::unset(),
            read_only: false,
            read_committed: false,
            allow_untrusted_log_dir: false,
            cleaner_enable: false,
            cleaner_backoff_ms: 0,
            cleaner_dedupe_buffer_size: 0,
            roll_ms_set: false,
            retention_ms_set: false,
        };
        let defaults: Vec<(&str, &str)> = CONFIG_KEYS
            .iter()
            .filter_map(|k| Some((k.broker, k.default?)))
            .filter(|(_, d)| *d != NEVER_FORCED)
            .collect();
        for (key, value) in by_kafka_precedence(defaults) {
            if let Err(e) = c.set(key, value) {
                unreachable!("the default of {key} is not a value of it: {e}");
            }
        }
        c
    }
}

pub use keys::*;

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
    /// Sets one broker key, by its row of [`CONFIG_KEYS`]: its own setter, or its topic
    /// key's (errors then name the broker key). Unknown keys are an error here;
    /// `load_properties` logs and skips them.
    pub fn set(&mut self, key: &str, value: &str) -> Result<()> {
        let v = value.trim();
        let def = broker_key_def(key);
        match def.map(|d| (d.broker_set, d.topic, d.topic_value)) {
            Some((Some(set), _, _)) => set(self, key, v),
            Some((None, Some(topic), Some(t))) => {
                (t.set)(&mut self.log, topic, v).map_err(|e| broker_error(e, topic, key))
            }
            _ => Err(Error::InvalidConfig(format!("unknown key {key:?}"))),
        }
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
        let (key_len, value_start) = split_key_value(&line);
        let key = unescape(&line[..key_len])?;
        let value = unescape(&line[value_start.min(line.len())..])?;
        match out.iter_mut().find(|(k, _)| *k == key) {
            Some(pair) => pair.1 = value,
            None => out.push((key, value)),
        }
    }
    Ok(out)
}

/// Where a logical line's key ends and its value starts, as `Properties.load` splits them:
/// the key ends at the first unescaped `=`, `:` or blank; then blanks and at most one `=` or
/// `:` are skipped.
fn split_key_value(line: &[char]) -> (usize, usize) {
    let is_blank = |c: char| c == ' ' || c == '\t' || c == '\x0c';
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
    (key_len, value_start)
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
mod tests;

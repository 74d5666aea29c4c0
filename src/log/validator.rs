//! The timestamp checks Kafka applies to records before they are appended.
//!
//! - A negative timestamp other than -1 (`NO_TIMESTAMP`) is refused, as Kafka's producer and
//!   `MemoryRecordsBuilder` refuse it ("Invalid negative timestamp").
//! - On a CreateTime topic, a timestamp more than `message.timestamp.before.max.ms` before now
//!   or more than `message.timestamp.after.max.ms` after now is refused, as
//!   `LogValidator.validateTimestamp` does (INVALID_TIMESTAMP). A LogAppendTime topic replaces
//!   the timestamps, so only the sign check applies there.

use crate::config::LogConfig;
use crate::error::{Error, Result};
use crate::record::{NO_TIMESTAMP, RecordInput, TimestampType};

/// Kafka's `LogValidator` refusal of a record without a key on a compacted topic
/// (INVALID_RECORD): the cleaner could not tell which records it supersedes.
pub fn validate_keys(
    records: &[RecordInput<'_>],
    cfg: &LogConfig,
    topic: &str,
    partition: u32,
) -> Result<()> {
    if cfg.cleanup_policy.compact && records.iter().any(|r| r.key.is_none()) {
        return Err(Error::InvalidRecord(format!(
            "Compacted topic cannot accept message without key in topic partition {topic}-{partition}."
        )));
    }
    Ok(())
}

/// Checks every record of one write; the first bad one fails the whole write.
pub fn validate_timestamps(
    records: &[RecordInput<'_>],
    cfg: &LogConfig,
    now_ms: i64,
) -> Result<()> {
    for (i, r) in records.iter().enumerate() {
        let ts = r.timestamp;
        if ts == NO_TIMESTAMP {
            continue;
        }
        if ts < 0 {
            return Err(Error::InvalidTimestamp(format!(
                "record {i}: invalid negative timestamp {ts} (only -1, no timestamp, is allowed)"
            )));
        }
        if cfg.message_timestamp_type != TimestampType::CreateTime {
            continue;
        }
        // Java's long arithmetic, as LogValidator.recordHasInvalidTimestamp computes it.
        let diff = now_ms.wrapping_sub(ts);
        if diff > cfg.message_timestamp_before_max_ms
            || diff.wrapping_neg() > cfg.message_timestamp_after_max_ms
        {
            return Err(Error::InvalidTimestamp(format!(
                "record {i}: timestamp {ts} is out of range; it should be within [{}, {}] \
                 (message.timestamp.before.max.ms={}, message.timestamp.after.max.ms={})",
                now_ms.saturating_sub(cfg.message_timestamp_before_max_ms),
                now_ms.saturating_add(cfg.message_timestamp_after_max_ms),
                cfg.message_timestamp_before_max_ms,
                cfg.message_timestamp_after_max_ms,
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(ts: i64) -> RecordInput<'static> {
        RecordInput {
            value: Some(b"v"),
            timestamp: ts,
            ..Default::default()
        }
    }

    #[test]
    fn kafka_defaults_bound_only_the_future() {
        let cfg = LogConfig::default();
        let now = 1_700_000_000_000;
        for ok in [
            NO_TIMESTAMP,
            0,
            1,
            now - 10 * 365 * 86_400_000,
            now,
            now + 3_600_000,
        ] {
            validate_timestamps(&[rec(ok)], &cfg, now).unwrap_or_else(|e| panic!("{ok}: {e}"));
        }
        for bad in [-2, -5, i64::MIN, now + 3_600_001, i64::MAX] {
            let e = validate_timestamps(&[rec(now), rec(bad)], &cfg, now).unwrap_err();
            assert!(matches!(e, Error::InvalidTimestamp(_)), "{bad}: {e}");
        }
    }

    #[test]
    fn before_max_and_log_append_time() {
        let mut cfg = LogConfig::default();
        cfg.set_topic_key("message.timestamp.before.max.ms", "1000")
            .unwrap();
        let now = 1_700_000_000_000;
        validate_timestamps(&[rec(now - 1000)], &cfg, now).unwrap();
        assert!(validate_timestamps(&[rec(now - 1001)], &cfg, now).is_err());
        cfg.set_topic_key("message.timestamp.type", "LogAppendTime")
            .unwrap();
        validate_timestamps(&[rec(now - 1001), rec(i64::MAX)], &cfg, now).unwrap();
        assert!(validate_timestamps(&[rec(-5)], &cfg, now).is_err());
        assert!(
            cfg.set_topic_key("message.timestamp.after.max.ms", "-1")
                .is_err()
        );
    }
}

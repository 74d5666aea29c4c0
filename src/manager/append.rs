//! A topic's topic-level appends (`<topic>/append`, `append.jsonl`, `append.kv`, `table/`):
//! the records routed to partitions by the producer rules of `crate::produce`.

use std::collections::BTreeMap;

use super::Topic;
use crate::base::{AppendResult, Appended};
use crate::log::validator;
use crate::produce::{append_batch, append_lines, route};
use crate::record::RecordInput;
use crate::record::lines::line_record;
use crate::util::clock::now_ms;

impl Topic {
    /// Appends one write's lines at topic level: they have no key, so they go together to the
    /// next partition in round-robin order, as [`Topic::append_routed`] sends their records.
    pub fn append_lines_routed(&self, parts: &[&[u8]], timestamp: i64) -> AppendResult {
        if parts.iter().all(|p| p.is_empty()) {
            return Ok(Appended::default());
        }
        validator::validate_timestamps(&[line_record(b"", timestamp)], &self.config(), now_ms())?;
        let p = self.next_round_robin();
        append_lines(&*self.partition(p)?, parts, timestamp)
    }

    /// Appends one write's records at topic level. Nothing is appended when one record cannot
    /// fit in a batch of its own (`max_record`, or the log's `max.message.bytes`) or has a
    /// refused timestamp. The records are routed by [`route`]; each partition gets the
    /// write's records for it as one batch (or as few as fit). The answer holds each
    /// partition appended to, also when a later one failed.
    pub fn append_routed(&self, records: &[RecordInput<'_>], max_record: usize) -> AppendResult {
        if records.is_empty() {
            return Ok(Appended::default());
        }
        validator::validate_timestamps(records, &self.config(), now_ms())?;
        let parts = route(records, self.partition_count(), max_record, || {
            self.next_round_robin()
        })?;
        if records.iter().all(|r| r.key.is_none()) {
            // One partition: as one batch, or split as it fits.
            return append_batch(&*self.partition(parts[0])?, records);
        }
        let mut by_partition: BTreeMap<u32, Vec<RecordInput<'_>>> = BTreeMap::new();
        for (r, p) in records.iter().zip(parts) {
            by_partition.entry(p).or_default().push(*r);
        }
        let mut appended = Appended::default();
        for (p, recs) in by_partition {
            let log = match self.partition(p) {
                Ok(log) => log,
                Err(e) => return Err(appended.stopped(e)),
            };
            appended = appended.then(append_batch(&log, &recs))?;
        }
        Ok(appended)
    }
}

#[cfg(test)]
mod tests {
    use crate::base::Appended;
    use crate::config::BrokerConfig;
    use crate::error::Error;
    use crate::manager::LogManager;
    use crate::produce::partition_for_key;
    use crate::record::RecordInput;
    use crate::util::clock::now_ms;

    fn rec<'a>(key: Option<&'a [u8]>, value: &'a [u8]) -> RecordInput<'a> {
        RecordInput::keyed(key, value)
    }

    #[test]
    fn item3_appended_holds_what_a_write_stored_before_a_later_partition_failed() {
        let d = tempfile::tempdir().unwrap();
        let mut c = BrokerConfig::default();
        c.log_dirs = vec![d.path().to_path_buf()];
        c.num_partitions = 2;
        let mgr = LogManager::open(c).unwrap();
        let t = mgr.create_topic("t").unwrap();
        // A compacted topic refuses a record without a key.
        mgr.set_topic_config("t", "cleanup.policy", Some("compact"))
            .unwrap();
        // The next unkeyed write goes to partition 1; the key goes to partition 0.
        while t.next_round_robin() != 0 {}
        let key = (0..)
            .map(|i| format!("k{i}"))
            .find(|k| partition_for_key(k.as_bytes(), 2) == 0)
            .unwrap();
        let now = now_ms();
        let records = [
            RecordInput {
                timestamp: now,
                ..rec(Some(key.as_bytes()), b"a")
            },
            RecordInput {
                timestamp: now,
                ..rec(None, b"b")
            },
        ];
        let err = t.append_routed(&records, 1 << 20).unwrap_err();
        assert!(
            matches!(err.error, Error::InvalidRecord(_)),
            "{:?}",
            err.error
        );
        assert_eq!(err.appended, Appended::to(0, 1));
        assert_eq!(t.partition(0).unwrap().log_end_offset(), 1);
        // Every partition of a write that all went in.
        let ok = t
            .append_routed(
                &[RecordInput {
                    timestamp: now,
                    ..rec(Some(key.as_bytes()), b"c")
                }],
                1 << 20,
            )
            .unwrap();
        assert_eq!(ok, Appended::to(0, 1));
    }
}

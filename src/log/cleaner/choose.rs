//! Which compacted log to clean, and up to where (Kafka's `LogCleanerManager.cleanableOffsets`,
//! `calculateCleanableBytes`, `maxCompactionDelay` and `grabFilthiestCompactedLog`).

use crate::error::Result;
use crate::log::PartitionLog;
use crate::log::segment::Check;

/// A log's cleanable section, as the cleaner sees it before a round.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LogToClean {
    /// The checkpointed first dirty offset (or the log start offset).
    pub first_dirty: i64,
    /// The base offset of the first segment that may not be cleaned (at most the active one).
    pub first_uncleanable: i64,
    /// Bytes of segments below the first dirty offset, and of the dirty segments.
    pub clean_bytes: u64,
    pub cleanable_bytes: u64,
    /// A dirty record is older than `max.compaction.lag.ms`.
    pub need_compaction_now: bool,
}

impl LogToClean {
    /// dirty / (clean + dirty).
    pub fn ratio(&self) -> f64 {
        let total = self.clean_bytes + self.cleanable_bytes;
        if total == 0 {
            0.0
        } else {
            self.cleanable_bytes as f64 / total as f64
        }
    }

    pub fn total_bytes(&self) -> u64 {
        self.clean_bytes + self.cleanable_bytes
    }

    /// Kafka's test for a log to be cleaned now: its dirty ratio is over
    /// `min.cleanable.dirty.ratio`, or a dirty record waited past `max.compaction.lag.ms`.
    pub fn is_cleanable(&self, min_ratio: f64) -> bool {
        self.total_bytes() > 0
            && ((self.need_compaction_now && self.cleanable_bytes > 0) || self.ratio() > min_ratio)
    }
}

/// The first dirty offset a checkpoint entry gives: the entry when it lies within
/// [log start, log end], else the log start offset (Kafka resets it so).
pub fn first_dirty_offset(log: &PartitionLog, checkpointed: Option<i64>) -> i64 {
    let start = log.log_start_offset();
    match checkpointed {
        Some(o) if o >= start && o <= log.log_end_offset() => o,
        Some(o) => {
            log::warn!(
                "{}-{}: cleaner checkpoint {o} is outside the log [{start}, {}]; cleaning from the log start",
                log.topic(),
                log.partition(),
                log.log_end_offset()
            );
            start
        }
        None => start,
    }
}

/// Where the next round over `log` would clean, at time `now`.
pub fn cleanable(log: &PartitionLog, checkpointed: Option<i64>, now: i64) -> Result<LogToClean> {
    let cfg = log.config();
    let segs = log.segments();
    let first_dirty = first_dirty_offset(log, checkpointed);
    let active_base = segs.last().map_or(0, |s| s.base_offset);
    // The dirty segments before the active one: the segment holding the first dirty offset
    // and every later one.
    let floor = segs
        .iter()
        .rposition(|s| s.base_offset <= first_dirty)
        .unwrap_or(0);
    let dirty_non_active = &segs[floor..segs.len().saturating_sub(1).max(floor)];
    // The last stable offset (an open transaction's first offset) is applied by the round,
    // which reads the producer state from the batch headers (`Cleaner::clean`).
    let mut uncleanable = log.log_end_offset().min(active_base);
    if cfg.min_compaction_lag_ms > 0 {
        let horizon = now.saturating_sub(cfg.min_compaction_lag_ms);
        for s in dirty_non_active {
            if s.largest_timestamp()? > horizon {
                uncleanable = uncleanable.min(s.base_offset);
                break;
            }
        }
    }
    let uncleanable = uncleanable.max(first_dirty);
    // Rounded down to a segment boundary: the segment holding it is not cleaned.
    let first_uncleanable = segs
        .iter()
        .rev()
        .find(|s| s.base_offset <= uncleanable)
        .map_or(active_base, |s| s.base_offset)
        .min(active_base);
    let clean_bytes = segs
        .iter()
        .filter(|s| s.base_offset < first_dirty)
        .map(|s| s.size())
        .sum();
    let cleanable_bytes = segs[floor..]
        .iter()
        .filter(|s| s.base_offset < first_uncleanable)
        .map(|s| s.size())
        .sum();
    let mut earliest = i64::MAX;
    for s in dirty_non_active {
        if let Some(b) = s.batches(0, s.size(), Check::Header).next().transpose()?
            && b.header.max_timestamp > 0
        {
            earliest = earliest.min(b.header.max_timestamp);
        }
        s.release_file();
    }
    let clean_until = now.saturating_sub(cfg.max_compaction_lag_ms.max(0));
    Ok(LogToClean {
        first_dirty,
        first_uncleanable,
        clean_bytes,
        cleanable_bytes,
        need_compaction_now: earliest < clean_until,
    })
}

//! The append path of a partition (Kafka's `UnifiedLog.append`): Kafka's record checks, one
//! batch encoded under the append lock at the log end, the roll when the active segment meets
//! a roll condition, the segment append, the log end moved and waiting readers woken.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use super::segment::{self, AppendMeta};
use super::{AppendInfo, LogSegment, PartitionLog, parse_segment_name, validator};
use crate::config::LogConfig;
use crate::error::{Error, Result};
use crate::os::safe_fs::{Access, Entry, Kind};
use crate::record::lines::line_record;
use crate::record::{BatchBuilder, BatchOptions, RecordInput, TimestampType};
use crate::util::clock::now_ms;
use crate::util::sync::{MutexExt, RwLockExt};

impl PartitionLog {
    /// Appends `records` as ONE batch with the next offsets. A batch larger than
    /// `max.message.bytes` is refused before anything is written. Returns once the batch is
    /// in the segment file and the indexes are updated.
    pub fn append(&self, records: &[RecordInput<'_>]) -> Result<AppendInfo> {
        self.online()?;
        let lines = records
            .iter()
            .map(|r| r.value.map_or(0, <[u8]>::len) as u64 + 1)
            .sum();
        self.append_with(records, lines, |b| {
            b.add_all(records);
            records.len()
        })
    }

    /// Appends the lines of each of `parts` (see [`crate::record::lines`]), all with
    /// `timestamp`, as ONE batch: what [`PartitionLog::append`] does with their records, each
    /// line encoded as it is found.
    pub fn append_lines(&self, parts: &[&[u8]], timestamp: i64) -> Result<AppendInfo> {
        if parts.iter().all(|p| p.is_empty()) {
            return self.append(&[]);
        }
        let mut lines = 0;
        for part in parts {
            lines += part.len() as u64 + u64::from(part.last().is_some_and(|&b| b != b'\n'));
        }
        // Every line has this record's shape and timestamp: the checks need only it.
        let shape = [line_record(b"", timestamp)];
        self.append_with(&shape, lines, |b| {
            parts.iter().map(|part| b.add_lines(part, timestamp)).sum()
        })
    }

    /// One batch: `checked` (the records, or one of their shape) passes Kafka's checks, then
    /// `add` encodes the records and returns how many; `lines` is the bytes a lines stream
    /// shows of them. One step: the batch is encoded at the log end, the segment rolled and
    /// the batch appended under one hold of the append lock, so offsets, append times and
    /// the order batches reach the segment agree.
    fn append_with(
        &self,
        checked: &[RecordInput<'_>],
        lines: u64,
        add: impl FnOnce(&mut BatchBuilder) -> usize,
    ) -> Result<AppendInfo> {
        if self.read_only {
            return Err(Error::ReadOnly);
        }
        self.online()?;
        let empty = || {
            let leo = self.log_end_offset();
            Ok(AppendInfo {
                first_offset: leo,
                last_offset: leo - 1,
            })
        };
        if checked.is_empty() {
            return empty();
        }
        let cfg = self.config();
        // One clock read for the checks; LogAppendTime reads it again under the lock, so
        // batches' append times follow their offsets (clock reads were 4 % of a one-line
        // append request's samples in `perf`).
        let now = now_ms();
        validator::validate_timestamps(checked, &cfg, now)?;
        validator::validate_keys(checked, &cfg, &self.topic, self.partition)?;
        let mut st = self.append.guard();
        let base = self.log_end_offset();
        let log_append_time = match cfg.message_timestamp_type {
            TimestampType::LogAppendTime => now_ms(),
            TimestampType::CreateTime => now,
        };
        let opts = BatchOptions {
            compression: cfg.write_compression(),
            timestamp_type: cfg.message_timestamp_type,
            log_append_time,
            partition_leader_epoch: st.leader_epoch,
            ..Default::default()
        };
        st.builder.begin(base, opts);
        let count = add(&mut st.builder);
        if count == 0 {
            return empty();
        }
        let max_ts = st.builder.max_timestamp();
        let last_offset = base + count as i64 - 1;
        let batch = st.builder.finish()?;
        let size = batch.len();
        let max = cfg.max_message_bytes;
        if size > max || size as u64 > cfg.segment_bytes {
            return Err(Error::RecordTooLarge {
                size,
                max: max.min(cfg.segment_bytes as usize),
            });
        }
        let active = self.maybe_roll(&cfg, size as u64, max_ts, base, last_offset)?;
        let meta = AppendMeta {
            last_offset,
            max_timestamp: max_ts,
            // Each line is its record's value and `\n`.
            value_bytes: lines - count as u64,
            records: count as u64,
        };
        active.append(batch, &meta, &cfg)?;
        self.last_append.store(now, Ordering::Relaxed);
        self.counters.appended(count as u64, size as u64);
        self.log_end_offset
            .store(last_offset + 1, Ordering::Release);
        self.waiters.log_end_moved(last_offset + 1);
        st.unflushed_messages += count as u64;
        if st.unflushed_messages >= cfg.flush_messages {
            st.unflushed_messages = 0;
            drop(st);
            self.flush()?;
        }
        Ok(AppendInfo {
            first_offset: base,
            last_offset,
        })
    }

    /// Kafka's `maybeRoll`: the active segment, or a new one when a batch of `size` bytes at
    /// [`base`, `last_offset`] with `max_ts` would meet one of its roll conditions.
    fn maybe_roll(
        &self,
        cfg: &LogConfig,
        size: u64,
        max_ts: i64,
        base: i64,
        last_offset: i64,
    ) -> Result<Arc<LogSegment>> {
        let active = self.active_segment();
        match active.should_roll(cfg, size, max_ts, last_offset)? {
            Some(reason) => {
                log::info!(
                    "{}-{}: rolling segment {} at offset {base} ({reason})",
                    self.topic,
                    self.partition,
                    active.base_offset
                );
                self.roll(&active, base, cfg)
            }
            None => Ok(active),
        }
    }

    pub(super) fn active_segment(&self) -> Arc<LogSegment> {
        self.segments
            .read_guard()
            .values()
            .next_back()
            .unwrap()
            .clone()
    }

    /// Seals the active segment and starts a new one at `base`. The sealed segment is flushed
    /// and the recovery point moves to `base`, as Kafka's roll does.
    pub(super) fn roll(
        &self,
        old: &Arc<LogSegment>,
        base: i64,
        cfg: &LogConfig,
    ) -> Result<Arc<LogSegment>> {
        if old.size() == 0 && old.base_offset == base {
            // Rolling onto an empty active segment with the same base offset: keep it.
            return Ok(old.clone());
        }
        let new = Arc::new(LogSegment::create(&self.dirfd, base, cfg)?);
        old.seal()?;
        self.segments.write_guard().insert(base, new.clone());
        old.set_active(false);
        old.flush().map_err(|e| self.take_offline(e))?;
        old.release_file();
        self.recovery_point.fetch_max(base, Ordering::AcqRel);
        self.carry_producer_snapshot(base)?;
        Ok(new)
    }

    /// Kafka writes a producer-state snapshot (`<offset>.snapshot`) at every roll and at
    /// shutdown, and at load deletes snapshots it does not expect. In a dir a broker wrote,
    /// carry the latest snapshot forward to `offset`: topicfs's batches have no producer ids,
    /// so the producer state at `offset` is the state of the latest snapshot.
    pub(super) fn carry_producer_snapshot(&self, offset: i64) -> Result<()> {
        let mut latest: Option<(i64, String)> = None;
        for Entry { name, kind, .. } in self.dirfd.entries()? {
            if let Some((off, "snapshot")) = parse_segment_name(&name)
                && kind == Kind::File
                && off <= offset
                && latest.as_ref().is_none_or(|(l, _)| off > *l)
            {
                latest = Some((off, name.clone()));
            }
        }
        let Some((off, name)) = latest else {
            return Ok(());
        };
        if off == offset {
            return Ok(());
        }
        let mut bytes = Vec::new();
        std::io::Read::read_to_end(
            &mut self.dirfd.open_file(&name, Access::ReadOnly)?,
            &mut bytes,
        )?;
        let target = format!("{}.snapshot", segment::file_prefix(offset));
        self.dirfd.write_atomic(&target, &bytes)?;
        Ok(())
    }

    /// Forces a new segment if the active one holds data (used before retention deletes all).
    pub fn roll_now(&self) -> Result<()> {
        let cfg = self.config();
        let _st = self.append.guard();
        let active = self.active_segment();
        if active.size() > 0 {
            self.roll(&active, self.log_end_offset(), &cfg)?;
        }
        Ok(())
    }
}

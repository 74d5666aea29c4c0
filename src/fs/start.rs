//! Where a lookup name's stream starts and ends in a partition, as the log is at its open
//! (`open_at`, `resolve_limit`), and a whole topic read without a group (`whole_topic`).

use std::sync::Arc;

use crate::addr::{Address, End, OffsetForm, Start};
use crate::error::{Error, Result};
use crate::fs::inode::{LookupBy, LookupName};
use crate::schemas::Schemas;
use crate::storage::{PartitionStore, RecordStream, TopicStore};

/// The end of a range, as far as it is known.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Limit {
    /// This offset, excluded.
    Offset(i64),
    /// The first record, in offset order, whose timestamp is at or after this (none has
    /// one yet): found when the log grows.
    Time(i64),
}

impl Limit {
    /// The offset past which nothing is served, as far as it is known.
    pub(super) fn cap(limit: Option<Limit>, offset: i64) -> i64 {
        match limit {
            Some(Limit::Offset(o)) => offset.min(o),
            _ => offset,
        }
    }
}

/// Where a name's stream starts in `log` now: its reader, from the first record it shows.
/// A decimal offset outside the log is OffsetOutOfRange (ENOENT): the storage's by-offset
/// rule, `PartitionStore::check_offset` (with `read_committed`, the end is the last stable
/// offset, where a reader may still start); a time after the last record starts at the log
/// end (an empty file that grows).
pub(super) fn open_at(
    log: &dyn PartitionStore,
    start: Start,
    now_ms: i64,
) -> Result<Box<dyn RecordStream>> {
    match start {
        Start::Offset(OffsetForm::At(n)) => {
            log.check_offset(n)?;
            log.read_from_offset(n)
        }
        Start::Offset(form) => {
            // Every other form names a place in the log.
            let (log_start, log_end) = (log.log_start_offset(), log.log_end_offset());
            log.read_from_offset(form.resolve(log_start, log_end).unwrap_or(log_end))
        }
        Start::Time(t) => {
            // The end before the search: a record appended meanwhile is in the stream.
            let log_end = log.log_end_offset();
            match log.read_from_time(t.resolve(now_ms)) {
                Err(Error::NoRecordAtOrAfter(_)) => log.read_from_offset(log_end),
                r => r,
            }
        }
    }
}

/// Where a range `A..B` or `T1..T2` ends in `log` now (never before `start`).
pub(super) fn resolve_limit(
    log: &dyn PartitionStore,
    addr: &Address,
    start: i64,
    now_ms: i64,
) -> Result<Option<Limit>> {
    let (log_start, log_end) = (log.log_start_offset(), log.log_end_offset());
    Ok(match addr.end {
        None => None,
        Some(End::Offset(form)) => Some(Limit::Offset(
            form.resolve_end(log_start, log_end).max(start),
        )),
        Some(End::Time(t)) => {
            let ts = t.resolve(now_ms);
            Some(match log.offset_for_time(ts)? {
                Some(o) => Limit::Offset(o.max(start)),
                None => Limit::Time(ts),
            })
        }
    })
}

/// `<topic>/by-offset/<X>`, `<topic>/by-time/<T>[..<T2>]`, `<topic>/follow/<X>`: every
/// partition from its own start (the name resolved in each), read as a group's records are
/// but without a group. By-offset and by-time end at each partition's log end at open (or
/// the range's end); follow never ends.
pub fn whole_topic(
    topic: Arc<dyn TopicStore>,
    name: &str,
    lookup: LookupName,
    schemas: Option<Arc<Schemas>>,
) -> Result<crate::group::GroupHandle> {
    let follow = lookup.by == LookupBy::Follow;
    let now = crate::util::clock::now_ms();
    let mut parts = Vec::new();
    for p in 0..topic.partition_count() {
        let log = topic.partition(p)?;
        let reader = open_at(&*log, lookup.addr.start, now)?;
        let next = reader.start_offset();
        let end = match resolve_limit(&*log, &lookup.addr, next, now)? {
            Some(Limit::Offset(o)) => Some(o.min(reader.end_offset())),
            _ if follow => None,
            _ => Some(reader.end_offset()),
        };
        parts.push(crate::group::WholeTopicPart {
            partition: p,
            log,
            reader,
            end,
        });
    }
    log::debug!("{name}: a whole-topic read of {} partitions", parts.len());
    Ok(
        crate::group::GroupHandle::whole_topic(topic, lookup.format, follow, parts)?
            .with_schemas(schemas),
    )
}

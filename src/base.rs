//! The shared bottom of the crate: the few names and types that layers far apart agree on,
//! kept here so that each layer imports only the layers below it (docs/architecture.md). It
//! imports nothing of the crate but `error`: the topic-name rule, the internal topics' names,
//! the default log dir, what a partition shows under `segments/`, a reader's waker, an
//! append's answer, and the rules every storage shares (the by-offset range, partition growth).

use std::collections::BTreeSet;
use std::path::PathBuf;

use crate::error::{Error, Result};

/// Kafka's topic name rule: 1..249 characters of `[a-zA-Z0-9._-]`, not `.` or `..`.
pub fn validate_topic_name(name: &str) -> Result<()> {
    let ok = !name.is_empty()
        && name.len() <= 249
        && name != "."
        && name != ".."
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'_' || b == b'-');
    if ok {
        Ok(())
    } else {
        Err(Error::InvalidTopicName(name.to_string()))
    }
}

/// The log dir used when none is given.
pub const DEFAULT_LOG_DIR: &str = "/tmp/topicfs-logs";

/// The internal topic of committed offsets.
pub const OFFSETS_TOPIC: &str = "__consumer_offsets";

/// Kafka's internal topics, as Kafka's `Topic.isInternal` knows them (`Topic.INTERNAL_TOPICS`):
/// shown and read as they are, never appended to through the tree. Kafka's coordinators write
/// them; topicfs writes `__consumer_offsets` itself, for its groups' commits, and leaves the
/// transactions' and share groups' state alone. Any other name, `__`-prefixed or not, is a
/// topic like any other, as in Kafka.
pub const INTERNAL_TOPICS: [&str; 3] =
    [OFFSETS_TOPIC, "__transaction_state", "__share_group_state"];

/// A file of the partition directory shown under `segments/`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SegmentFile {
    pub name: String,
    pub path: PathBuf,
}

/// Something to wake once (a reader waiting past a partition's log end). `is_stale` lets a
/// registry drop waiters nobody waits on any more (a reader that was answered another way).
pub trait Waker: Send + Sync {
    fn wake(&self);
    fn is_stale(&self) -> bool {
        false
    }
}

/// What one append stored: the first `records` records of the write, in `partitions`.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Appended {
    pub records: usize,
    pub partitions: BTreeSet<u32>,
}

impl Appended {
    /// `records` records stored in partition `p` (none: no partition).
    pub fn to(p: u32, records: usize) -> Appended {
        Appended {
            records,
            partitions: (records > 0).then_some(p).into_iter().collect(),
        }
    }

    /// What the write stored so far and then `next` of it: everything when `next` failed too.
    pub fn then(mut self, next: AppendResult) -> AppendResult {
        let (more, error) = match next {
            Ok(a) => (a, None),
            Err(e) => (e.appended, Some(e.error)),
        };
        self.records += more.records;
        self.partitions.extend(more.partitions);
        match error {
            None => Ok(self),
            Some(error) => Err(self.stopped(error)),
        }
    }

    /// The write stopped at `error`, with this much of it stored.
    pub fn stopped(self, error: Error) -> AppendError {
        AppendError {
            appended: self,
            error,
        }
    }
}

/// An append that stopped at `error` after it stored `appended` (the first records of the
/// write; none after them).
#[derive(Debug)]
pub struct AppendError {
    pub appended: Appended,
    pub error: Error,
}

/// Failed before anything was stored.
impl From<Error> for AppendError {
    fn from(error: Error) -> AppendError {
        Appended::default().stopped(error)
    }
}

impl From<AppendError> for Error {
    fn from(e: AppendError) -> Error {
        e.error
    }
}

/// An append's answer: what it stored, or where it stopped and what it stored before.
pub type AppendResult = std::result::Result<Appended, AppendError>;

/// The by-offset range rule, for every storage: `by-offset/N` (and a stream from N) exists
/// when log-start <= N <= log-end, the log end itself naming the empty stream that grows.
/// Ok(log end), else OffsetOutOfRange.
pub fn offset_in_range(offset: i64, log_start: i64, log_end: i64) -> Result<i64> {
    if offset < log_start || offset > log_end {
        return Err(crate::error::Error::OffsetOutOfRange {
            offset,
            log_start,
            log_end,
        });
    }
    Ok(log_end)
}

/// Partition counts only grow, as Kafka's CreatePartitions allows, for every storage:
/// Ok(true) when `requested` adds partitions to `current`, Ok(false) when it is `current`;
/// fewer, or none, is InvalidPartitionCount. (A new topic grows from 0.)
pub fn partition_growth(topic: &str, current: u32, requested: u32) -> Result<bool> {
    if requested < current || requested == 0 {
        return Err(crate::error::Error::InvalidPartitionCount {
            topic: topic.to_string(),
            current,
            requested,
        });
    }
    Ok(requested > current)
}

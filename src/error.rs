//! The storage core's error type. The FUSE layer maps each variant to exactly one errno
//! (`fs/errno.rs`). It is cloneable, so a refusal kept for a write sent again is answered
//! with the same error, and so the same errno.

use std::path::PathBuf;
use std::sync::Arc;

#[derive(Clone, Debug, thiserror::Error)]
pub enum Error {
    #[error(
        "invalid topic name {0:?}: Kafka allows 1..249 characters of [a-zA-Z0-9._-], not '.' or '..'"
    )]
    InvalidTopicName(String),
    #[error("topic {0} already exists")]
    TopicExists(String),
    /// Kafka's InvalidTopicException for names equal up to '.' and '_' (Topic.hasCollision).
    #[error(
        "Topic '{name}' collides with existing topic: {existing} ('.' and '_' are the same in Kafka's metric names)"
    )]
    TopicCollision { name: String, existing: String },
    #[error("unknown topic {0}")]
    UnknownTopic(String),
    #[error("topic {0} was deleted (this file belongs to it, not to a topic created since)")]
    TopicDeleted(String),
    #[error("unknown partition {topic}-{partition}")]
    UnknownPartition { topic: String, partition: u32 },
    #[error(
        "topic {topic} has {current} partitions; cannot change to {requested} (only growing is allowed)"
    )]
    InvalidPartitionCount {
        topic: String,
        current: u32,
        requested: u32,
    },
    #[error("offset {offset} is out of range [{log_start}, {log_end}]")]
    OffsetOutOfRange {
        offset: i64,
        log_start: i64,
        log_end: i64,
    },
    #[error("no record has a timestamp >= {0}")]
    NoRecordAtOrAfter(i64),
    #[error("record batch of {size} bytes exceeds the maximum of {max} bytes")]
    RecordTooLarge { size: usize, max: usize },
    #[error("invalid configuration: {0}")]
    InvalidConfig(String),
    #[error("invalid record: {0}")]
    InvalidRecord(String),
    #[error("invalid timestamp: {0}")]
    InvalidTimestamp(String),
    #[error("corrupt log: {0}")]
    Corrupt(String),
    #[error(
        "Failed to acquire lock on file .lock in {0}. Another topicfs daemon or a Kafka broker is using this directory."
    )]
    LogDirLocked(PathBuf),
    #[error("{0}")]
    UntrustedLogDir(String),
    #[error("log directory is offline after an I/O error: {0}")]
    LogDirOffline(PathBuf),
    /// The Kafka cluster refused or could not answer (remote mode): unreachable, timed out,
    /// not enough in-sync replicas... The text names Kafka's error.
    #[error("Kafka cluster: {0}")]
    Cluster(String),
    /// A consumer group is in use elsewhere (remote mode: it has active members).
    #[error("{0}")]
    GroupBusy(String),
    /// What a client may not do to an internal topic (`__consumer_offsets`).
    #[error("{0}")]
    InternalTopic(String),
    /// A write to a read-only mount or log dir.
    #[error("read-only file system")]
    ReadOnly,
    /// A write to a file that is not open for writing (or cannot be written at all).
    #[error("{0}")]
    NotWritable(String),
    /// What the disk or the kernel reported; shared, so the error can be cloned whole.
    #[error("{0}")]
    Io(Arc<std::io::Error>),
}

impl From<std::io::Error> for Error {
    fn from(e: std::io::Error) -> Error {
        Error::Io(Arc::new(e))
    }
}

/// A batch that fails its checks is a corrupt log.
impl From<crate::record::BatchError> for Error {
    fn from(e: crate::record::BatchError) -> Error {
        Error::Corrupt(e.to_string())
    }
}

pub type Result<T> = std::result::Result<T, Error>;

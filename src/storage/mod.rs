//! The one storage interface the fs core is built on. A [`Storage`] holds topics, a
//! [`TopicStore`] its partitions, a [`PartitionStore`] one partition's records, read through
//! a [`RecordStream`]. The local log (`local.rs`, over [`crate::manager::LogManager`]) is one
//! implementation; the tree never asks which one it has.

#[cfg(feature = "remote")]
mod cluster;
mod cluster_config;
mod local;
#[cfg(test)]
pub(crate) mod testing;

#[cfg(feature = "remote")]
pub use cluster::ClusterStorage;
pub use cluster_config::ClusterConfig;

use std::collections::BTreeMap;
use std::fs::File;
use std::path::PathBuf;
use std::sync::{Arc, RwLockReadGuard};

use crate::base::{AppendResult, INTERNAL_TOPICS, SegmentFile, Waker};
use crate::error::Result;
use crate::record::{BatchHeader, Record, RecordInput};

/// Holds a topic live (not deleted) while its storage is used: deletion waits for it.
pub struct Live<'a>(#[allow(dead_code)] Option<RwLockReadGuard<'a, bool>>);

impl<'a> Live<'a> {
    pub fn guarded(g: RwLockReadGuard<'a, bool>) -> Live<'a> {
        Live(Some(g))
    }
    /// For a storage whose deletions need no waiting.
    pub fn unguarded() -> Live<'a> {
        Live(None)
    }
}

pub trait Storage: Send + Sync {
    /// Topic names, sorted.
    fn topics(&self) -> Vec<String>;
    fn topic(&self, name: &str) -> Result<Arc<dyn TopicStore>>;
    /// Creates a topic with the default partition count and configs.
    fn create_topic(&self, name: &str) -> Result<Arc<dyn TopicStore>>;
    fn delete_topic(&self, name: &str) -> Result<()>;
    /// Grows a topic to `count` partitions (never shrinks: [`crate::base::partition_growth`]).
    fn set_partition_count(&self, topic: &str, count: u32) -> Result<()>;
    /// Whether this change of a topic's overrides (`Some` sets, `None` removes) would be
    /// accepted whole by [`Storage::set_topic_configs`]; nothing changes. A file of config
    /// lines asks at each write, so that a refusal reaches the writer at the write.
    fn check_topic_configs(&self, topic: &str, changes: &[(&str, Option<&str>)]) -> Result<()>;
    /// Sets (`Some`) or removes (`None`) topic config overrides, all or none.
    fn set_topic_configs(&self, topic: &str, changes: &[(&str, Option<&str>)]) -> Result<()>;
    /// Makes everything appended to one partition durable.
    fn sync_partition(&self, topic: &str, partition: u32) -> Result<()>;
    /// The local directories the data lives in (the tree's owner and mode, `df`); empty when
    /// the data is elsewhere.
    fn log_dirs(&self) -> Vec<PathBuf>;
    /// Clean shutdown.
    fn shutdown(&self) -> Result<()>;
    /// The consumer groups' committed offsets (loaded once, at mount).
    fn open_groups(self: Arc<Self>) -> Result<Arc<dyn GroupStore>>;
    /// Whether `topic` is one of Kafka's internal topics ([`INTERNAL_TOPICS`]): shown, but
    /// not appended to. Local and remote mode share the rule.
    fn is_internal(&self, topic: &str) -> bool {
        INTERNAL_TOPICS.contains(&topic)
    }
    /// What `@metrics` shows of the storage: each partition's offsets (by default; a storage
    /// with segment files adds their sizes), and the counters it keeps.
    fn sample(&self) -> crate::metrics::Sample {
        sample_offsets(self)
    }
}

/// Each partition's offsets as `@metrics` shows them: what every storage's
/// [`Storage::sample`] starts from.
pub fn sample_offsets<S: Storage + ?Sized>(storage: &S) -> crate::metrics::Sample {
    let mut s = crate::metrics::Sample::default();
    for t in storage.topics() {
        let Ok(topic) = storage.topic(&t) else {
            continue;
        };
        for p in 0..topic.partition_count() {
            let Ok(log) = topic.partition(p) else {
                continue;
            };
            s.partitions.push(crate::metrics::PartitionSample {
                topic: t.clone(),
                partition: p,
                log_start_offset: log.log_start_offset(),
                log_end_offset: log.log_end_offset(),
                ..Default::default()
            });
        }
    }
    s
}

/// Committed offsets of consumer groups: (group, topic, partition) -> the next offset to read.
pub trait GroupStore: Send + Sync {
    /// The groups with committed offsets on `topic`.
    fn groups_of(&self, topic: &str) -> Vec<String>;
    /// `group`'s committed offsets on `topic`, by partition.
    fn committed(&self, group: &str, topic: &str) -> BTreeMap<u32, i64>;
    /// Whether [`GroupStore::committed`] answers from what the mount holds, without asking
    /// anyone: `stat` of `groups/<G>/offsets` then shows its size. A store that asks a
    /// cluster says `false`, and the file's size is 0 until it is opened (as /proc's files),
    /// so that walking the tree asks the cluster nothing.
    fn committed_is_held(&self) -> bool {
        true
    }
    /// Commits (topic, partition, next offset) for `group`; stored once it returns Ok.
    fn commit(&self, group: &str, offsets: &[(&str, u32, i64)]) -> Result<()>;
    /// Whether commits keep their metadata string (OffsetCommit's `metadata`), which a
    /// group's maildir keeps its acknowledgements in. False by default.
    fn keeps_metadata(&self) -> bool {
        false
    }
    /// [`GroupStore::committed`], failing when the store cannot answer (rather than
    /// answering with no commits).
    fn try_committed(&self, group: &str, topic: &str) -> Result<BTreeMap<u32, i64>> {
        Ok(self.committed(group, topic))
    }
    /// `group`'s commits on `topic` with their metadata: partition -> (offset, metadata);
    /// fails when the store cannot answer.
    fn committed_with_metadata(
        &self,
        group: &str,
        topic: &str,
    ) -> Result<BTreeMap<u32, (i64, String)>> {
        Ok(self
            .committed(group, topic)
            .into_iter()
            .map(|(p, o)| (p, (o, String::new())))
            .collect())
    }
    /// Commits (topic, partition, next offset, metadata) for `group`; stored once it returns
    /// Ok. A store that does not keep metadata ([`GroupStore::keeps_metadata`]) drops it.
    fn commit_with_metadata(&self, group: &str, offsets: &[(&str, u32, i64, &str)]) -> Result<()> {
        let plain: Vec<(&str, u32, i64)> = offsets.iter().map(|&(t, p, o, _)| (t, p, o)).collect();
        self.commit(group, &plain)
    }
    /// Sets `group`'s committed offsets on `topic` to exactly `offsets`.
    fn reset(&self, group: &str, topic: &str, offsets: &BTreeMap<u32, i64>) -> Result<()>;
    /// Makes this mount one member of `group` for `topic`, for its `follow` readers.
    /// `None` (the default, local storage): the group has no members but this process's
    /// readers, and the fs core shares every partition among them itself. `Some`: the group
    /// also has members elsewhere; the partitions this mount owns arrive through `events`
    /// (on a thread of the storage), and the mount's commits go through the member.
    fn join(
        &self,
        _group: &str,
        _topic: &str,
        _events: Arc<dyn MemberEvents>,
    ) -> Result<Option<Arc<dyn GroupMember>>> {
        Ok(None)
    }
    /// `topic` was deleted: every group's commits on it go too (tombstones in
    /// `__consumer_offsets`, as Kafka's group coordinator writes when a topic is deleted), so
    /// a new topic of that name starts with none. By default nothing: a cluster's coordinator
    /// does it itself.
    fn topic_deleted(&self, _topic: &str) -> Result<()> {
        Ok(())
    }
    /// Fails with [`crate::error::Error::GroupBusy`] when `group` has active members outside
    /// this process (what `records` and `offsets` need: they read or set the group alone).
    fn check_idle(&self, _group: &str) -> Result<()> {
        Ok(())
    }
}

/// This mount as one member of a consumer group that has members elsewhere (see
/// [`GroupStore::join`]).
pub trait GroupMember: Send + Sync {
    /// Commits (topic, partition, next offset) as this member (its generation), so the
    /// group's coordinator accepts them while the member owns the partitions.
    fn commit(&self, offsets: &[(&str, u32, i64)]) -> Result<()>;
    /// Leaves the group (the other members rebalance); returns within the client's
    /// timeouts. Nothing is reported to the events after it returns.
    fn leave(&self);
}

/// What the fs core does when the partitions a group's coordinator gives this mount change.
pub trait MemberEvents: Send + Sync {
    /// From now on this mount owns exactly `partitions`. Called with the partitions left
    /// when some are taken away (an empty list in Kafka's eager protocol): it returns once
    /// the local readers gave up the others and committed what they delivered of them.
    fn owned(&self, partitions: &[u32]);
}

/// What one open append file handed to a storage that writes behind and the storage has not
/// yet acknowledged (see [`TopicStore::write_behind`]).
pub trait Unacknowledged: Send + Sync {
    /// Returns once every record appended through the file is acknowledged (within the
    /// storage's timeouts); the first failure among them since the last call, reported once.
    fn wait(&self) -> Result<()>;
}

pub trait TopicStore: Send + Sync {
    fn name(&self) -> &str;
    /// Unique among all topics of the process, deleted ones included: a topic created again
    /// under a deleted one's name has another.
    fn incarnation(&self) -> u64;
    /// What tells the topic from every other, the same after a remount, and (where the
    /// storage can tell) different for a topic deleted and created again under its name: the
    /// stable inode numbers of its files are derived from it. By default, its name.
    fn identity(&self) -> u64 {
        crate::util::stable_hash(&[self.name().as_bytes()])
    }
    /// TopicDeleted once the topic is deleted; otherwise a guard deletion waits for.
    fn live(&self) -> Result<Live<'_>>;
    fn partition_count(&self) -> u32;
    /// The partition count as the storage answers it now (the `partitions` file): an error
    /// when it cannot tell (a cluster that does not answer), never an old answer.
    fn partition_count_now(&self) -> Result<u32> {
        Ok(self.partition_count())
    }
    fn partition(&self, p: u32) -> Result<Arc<dyn PartitionStore>>;
    /// The `config` file: the topic's overrides as `key=value` lines (an error when the
    /// storage cannot tell them now).
    fn config_text(&self) -> Result<String>;
    /// The largest batch the topic accepts.
    fn max_message_bytes(&self) -> usize;
    /// When the topic last changed (an append to any partition, its config, its partition
    /// count), when known: the mtime of its directory and files.
    fn modified(&self) -> Option<std::time::SystemTime> {
        None
    }
    /// Appends one write's records at topic level, routed as Kafka's producer routes them
    /// (see [`crate::produce::route`]): the records appended and the partitions appended to
    /// (also when a later part of the write failed).
    fn append(&self, records: &[RecordInput<'_>], max_record: usize) -> AppendResult;
    /// Appends one write's lines at topic level (see [`crate::record::lines`]): by default as
    /// their records through [`TopicStore::append`].
    fn append_lines(&self, parts: &[&[u8]], timestamp: i64, max_record: usize) -> AppendResult {
        let records = crate::record::lines::line_records(parts, timestamp);
        self.append(&records, max_record)
    }
    /// The topic as one open append file of a storage that writes behind sees it: its
    /// appends return once handed over, and the [`Unacknowledged`] waits for them. None (the
    /// default): an append returns once stored.
    fn write_behind(&self) -> Option<(Arc<dyn TopicStore>, Arc<dyn Unacknowledged>)> {
        None
    }
}

pub trait PartitionStore: Send + Sync {
    fn partition(&self) -> u32;
    fn log_start_offset(&self) -> i64;
    fn log_end_offset(&self) -> i64;
    /// When the partition was last appended to (the mtime of its files and directory), when
    /// known.
    fn modified(&self) -> Option<std::time::SystemTime> {
        None
    }

    /// (log start, log end) as the storage answers them now (the `log-start-offset` and
    /// `log-end-offset` files): an error when it cannot tell (a cluster that does not
    /// answer), never an old answer.
    fn offsets_now(&self) -> Result<(i64, i64)> {
        Ok((self.log_start_offset(), self.log_end_offset()))
    }
    /// Ok(log end) when log-start <= `offset` <= log-end, else OffsetOutOfRange: the
    /// partition's offsets (as fresh as the storage needs them) held to
    /// [`crate::base::offset_in_range`].
    fn check_offset(&self, offset: i64) -> Result<i64>;
    /// The first offset whose record has a timestamp >= `ts`.
    fn offset_for_time(&self, ts: i64) -> Result<Option<i64>>;
    /// The records from `offset` to the log end as it is now.
    fn read_from_offset(&self, offset: i64) -> Result<Box<dyn RecordStream>>;
    /// The records from the first whose timestamp >= `ts` (NoRecordAtOrAfter when none).
    fn read_from_time(&self, ts: i64) -> Result<Box<dyn RecordStream>>;
    /// The bytes a lines stream shows of the data records at offsets in [from, to): each
    /// value and `\n` (the length `fstat` shows). By default the records are read and counted.
    fn lines_len(&self, from: i64, to: i64) -> Result<u64> {
        measure_records(&mut *self.read_from_offset(from)?, from, to, |_, r| {
            r.line_len()
        })
    }
    /// [`PartitionStore::lines_len`] where the store finds it from counts it keeps, without
    /// reading the records (a `stat` by path shows it); None where it would read them (by
    /// default; a local log under `read_committed` whose range holds aborted transactions).
    fn lines_len_counted(&self, _from: i64, _to: i64) -> Result<Option<u64>> {
        Ok(None)
    }
    /// Where a lines stream from `from` reaches its byte `byte` without reading the records
    /// before: (offset, bytes before it), at or before `byte` (see
    /// [`crate::log::PartitionLog::line_seek`]). None (the default): only by reading them.
    fn line_seek(&self, _from: i64, _byte: u64) -> Result<Option<(i64, u64)>> {
        Ok(None)
    }
    /// What the partition's records are, as a number that changes whenever a record kept
    /// changes or goes (retention, the cleaner, a log start moved), never at an append: a
    /// lines file's bytes at a generation only ever grow at their end. 0 (the default): a
    /// store whose files are never cached.
    fn generation(&self) -> u64 {
        0
    }
    /// The part of [`PartitionStore::generation`] that changes when records past the log
    /// start change (the cleaner, a recovery cut), not when the log start moves.
    fn rewrites(&self) -> u64 {
        0
    }
    /// Whether the partition is read with `read_committed` (its end is the last stable
    /// offset; aborted records are skipped).
    fn committed_only(&self) -> bool {
        false
    }
    /// Whether counts are found without reading the records: [`PartitionStore::record_count`]
    /// from counts kept per segment, and [`PartitionStore::lines_len`] when it starts at a
    /// batch boundary (a local log keeps line counts at batch boundaries). An open stream's
    /// `fstat` then decodes the stream's first batch, which its first read serves, and counts
    /// from after it, rather than reading that batch twice; `stat` of `count` shows its size.
    /// A store that counts by reading keeps `false`: the cluster keeps what a count fetched
    /// for the stream's reader, which must then read from the stream's start, and `count`'s
    /// size is 0 until it is opened (as /proc's files), so that walking the tree does not read
    /// the partition.
    fn counts_without_reading(&self) -> bool {
        false
    }
    /// The data records from the log start to the log end (`<p>/count`; control records and
    /// compacted gaps not counted). By default every record is read and counted.
    fn record_count(&self) -> Result<u64> {
        let (from, to) = (self.log_start_offset(), self.log_end_offset());
        measure_records(&mut *self.read_from_offset(from)?, from, to, |_, _| 1)
    }
    /// Appends `records` as one batch, or as few as fit `max.message.bytes`: the records
    /// appended (the first ones, when a later batch fails).
    fn append(&self, records: &[RecordInput<'_>]) -> AppendResult;
    /// Appends the lines of each of `parts` (see [`crate::record::lines`]), all with
    /// `timestamp`, as [`PartitionStore::append`] appends their records (by default, as them).
    fn append_lines(&self, parts: &[&[u8]], timestamp: i64) -> AppendResult {
        self.append(&crate::record::lines::line_records(parts, timestamp))
    }
    /// The partition as one open append file sees it (see [`TopicStore::write_behind`]).
    fn write_behind(&self) -> Option<(Arc<dyn PartitionStore>, Arc<dyn Unacknowledged>)> {
        None
    }
    /// Wakes `w` once the log end passes `offset` (at once if it already has), or when the
    /// partition goes away (topic deleted, shutdown).
    fn wait_for(&self, offset: i64, w: Arc<dyn Waker>);
    /// Whether the partition has replicas to show (`replicas`). (None by default: a storage
    /// that keeps one copy.)
    fn has_replicas(&self) -> bool {
        false
    }
    /// The `replicas` file, as the storage answers it now: `Leader: L\tReplicas: R,...\tIsr:
    /// I,...`, as `kafka-topics --describe` shows them.
    fn replicas_text(&self) -> Result<String> {
        Err(crate::error::Error::UnknownPartition {
            topic: String::new(),
            partition: self.partition(),
        })
    }
    /// Whether the partition has segment files to show (`segments/`).
    /// (None by default: a storage whose data is elsewhere.)
    fn has_segment_files(&self) -> bool {
        false
    }
    /// The partition's segment files (`segments/`), or None when it has none to show.
    fn segment_files(&self) -> Option<Vec<SegmentFile>> {
        None
    }
    /// Opens one of the files `segment_files` lists, for reading.
    fn open_segment_file(&self, name: &str) -> Result<File> {
        Err(crate::error::Error::from(std::io::Error::new(
            std::io::ErrorKind::NotFound,
            format!(
                "no segment file {name}: partition {} has none",
                self.partition()
            ),
        )))
    }
}

/// The sum of `measure` over the data records `reader` (opened at `from`) gives at offsets
/// in [from, to), each record once; it stops reading once it passed `to`.
pub fn measure_records(
    reader: &mut dyn RecordStream,
    from: i64,
    to: i64,
    mut measure: impl FnMut(&BatchHeader, &Record<'_>) -> u64,
) -> Result<u64> {
    let mut total = 0;
    let mut counted_to = from;
    while reader.next_batch_meta(&mut |h, r| {
        if r.offset >= counted_to && r.offset < to {
            total += measure(h, r);
            counted_to = r.offset + 1;
        }
    })? {
        if counted_to >= to {
            break;
        }
    }
    Ok(total)
}

/// Records from a start offset to an end fixed when the stream was opened.
pub trait RecordStream: Send {
    /// The offset the stream starts at (the first record is at or after it).
    fn start_offset(&self) -> i64;
    fn end_offset(&self) -> i64;
    /// Calls `f` for each data record of the next batch (control batches skipped).
    /// Ok(false) at the end.
    fn next_batch_meta(&mut self, f: &mut dyn FnMut(&BatchHeader, &Record<'_>)) -> Result<bool>;
    /// The offset after the last batch read whole, control batches included (those have no
    /// record to show, yet a stream has passed them); `i64::MIN` when the stream does not
    /// tell.
    fn passed(&self) -> i64 {
        i64::MIN
    }
    /// The next batch as a stream of lines shows it: the value and `\n` of each data record
    /// at offsets in [`*from`, `to`), appended to `out`, `*from` moved past each one written.
    /// Ok(false) at the end.
    fn next_batch_lines(&mut self, from: &mut i64, to: i64, out: &mut Vec<u8>) -> Result<bool> {
        self.next_batch_meta(&mut |_, r| {
            if r.offset >= *from && r.offset < to {
                out.extend_from_slice(r.value.unwrap_or_default());
                out.push(b'\n');
                *from = r.offset + 1;
            }
        })
    }
    /// [`Self::next_batch_lines`], which may stop inside the batch once `out` holds `stop`
    /// bytes (a lookup's first read); the next call then goes on from `*from`.
    fn next_lines_until(
        &mut self,
        from: &mut i64,
        to: i64,
        out: &mut Vec<u8>,
        _stop: usize,
    ) -> Result<bool> {
        self.next_batch_lines(from, to, out)
    }
}

#[cfg(test)]
mod tests {
    use crate::base::{offset_in_range, partition_growth};
    use crate::error::Error;

    #[test]
    fn item3_offset_in_range_is_the_by_offset_rule_of_every_storage() {
        // log-start <= N <= log-end: the log end names the empty stream that grows.
        assert_eq!(offset_in_range(100, 100, 150).unwrap(), 150);
        assert_eq!(offset_in_range(150, 100, 150).unwrap(), 150);
        assert_eq!(offset_in_range(0, 0, 0).unwrap(), 0);
        for n in [99, 151, -1, i64::MIN, i64::MAX] {
            match offset_in_range(n, 100, 150) {
                Err(Error::OffsetOutOfRange {
                    offset,
                    log_start: 100,
                    log_end: 150,
                }) => assert_eq!(offset, n),
                other => panic!("{n}: {other:?}"),
            }
        }
        // The names the tree resolves hold to it.
        use crate::addr::OffsetForm;
        assert_eq!(OffsetForm::At(150).resolve(100, 150), Some(150));
        assert_eq!(OffsetForm::At(151).resolve(100, 150), None);
    }

    #[test]
    fn item3_partition_counts_only_grow_in_every_storage() {
        assert!(partition_growth("t", 2, 5).unwrap());
        assert!(!partition_growth("t", 2, 2).unwrap());
        // A new topic grows from 0.
        assert!(partition_growth("t", 0, 1).unwrap());
        for (current, requested) in [(2, 1), (0, 0), (3, 0)] {
            match partition_growth("t", current, requested) {
                Err(Error::InvalidPartitionCount {
                    topic,
                    current: c,
                    requested: r,
                }) => assert_eq!((topic.as_str(), c, r), ("t", current, requested)),
                other => panic!("{current} -> {requested}: {other:?}"),
            }
        }
    }
}

//! Committed offsets of consumer groups, kept in `__consumer_offsets` as a Kafka broker keeps
//! them, and in memory for lookups.
//!
//! [`GroupOffsets::load`] reads every partition of `__consumer_offsets` (whatever count the
//! log dir has: a broker's dir often has 1 or 50) and keeps the latest commit of every
//! (group, topic, partition); a tombstone deletes it. [`GroupOffsets::commit`] appends one
//! batch of OffsetCommit records to the group's partition, creating the topic with
//! `offsets.topic.num.partitions` partitions on the first commit.
//!
//! The storage is reached through the narrow [`OffsetsStorage`] trait, implemented here for
//! [`LogManager`].

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};

use super::codec::{
    self, OffsetCommitKey, OffsetCommitValue, RecordKey, decode_key, decode_offset_value,
};
use crate::base::OFFSETS_TOPIC;
use crate::error::{Error, Result};
use crate::manager::LogManager;
use crate::record::{BatchHeader, Record, RecordInput};
use crate::util::clock::now_ms;
use crate::util::sync::MutexExt;

/// `offsets.topic.segment.bytes`, which Kafka gives the topic as `segment.bytes`.
pub const OFFSETS_TOPIC_SEGMENT_BYTES: u64 = 104_857_600;

/// What the offsets store needs from the storage: the `__consumer_offsets` topic's partition
/// count, its creation, one-batch appends and a scan of a partition.
pub trait OffsetsStorage: Send + Sync {
    /// The partition count of `__consumer_offsets`, `None` when it does not exist.
    fn offsets_partitions(&self) -> Option<u32>;
    /// Creates `__consumer_offsets` with `partitions` partitions; returns the count it has
    /// (the existing count when it was created meanwhile).
    fn create_offsets_topic(&self, partitions: u32) -> Result<u32>;
    /// Appends `records` as one batch to partition `partition`.
    fn append_offsets(&self, partition: u32, records: &[RecordInput<'_>]) -> Result<()>;
    /// Calls `f` for every data record of partition `partition`, from the log start to the
    /// log end, in offset order (control batches excluded).
    fn scan_offsets(
        &self,
        partition: u32,
        f: &mut dyn FnMut(&BatchHeader, &Record<'_>),
    ) -> Result<()>;
}

impl OffsetsStorage for LogManager {
    fn offsets_partitions(&self) -> Option<u32> {
        self.topic(OFFSETS_TOPIC).ok().map(|t| t.partition_count())
    }

    fn create_offsets_topic(&self, partitions: u32) -> Result<u32> {
        match self.create_topic_with_partitions(OFFSETS_TOPIC, partitions) {
            Ok(t) => {
                let segment_bytes = OFFSETS_TOPIC_SEGMENT_BYTES.to_string();
                // Kafka's offsets topic configs (`GroupCoordinator.offsetsTopicConfigs`).
                if let Err(e) = self.set_topic_configs(
                    OFFSETS_TOPIC,
                    &[
                        ("segment.bytes", Some(&segment_bytes)),
                        ("cleanup.policy", Some("compact")),
                    ],
                ) {
                    log::warn!(
                        "{OFFSETS_TOPIC}: segment.bytes/cleanup.policy not set (broker defaults kept): {e}"
                    );
                }
                Ok(t.partition_count())
            }
            Err(Error::TopicExists(_)) => Ok(self.topic(OFFSETS_TOPIC)?.partition_count()),
            Err(e) => Err(e),
        }
    }

    fn append_offsets(&self, partition: u32, records: &[RecordInput<'_>]) -> Result<()> {
        let t = self.topic(OFFSETS_TOPIC)?;
        let _live = t.live()?;
        t.partition(partition)?.append(records)?;
        Ok(())
    }

    fn scan_offsets(
        &self,
        partition: u32,
        f: &mut dyn FnMut(&BatchHeader, &Record<'_>),
    ) -> Result<()> {
        let t = self.topic(OFFSETS_TOPIC)?;
        let _live = t.live()?;
        let log = t.partition(partition)?;
        let mut reader = log.read_from_offset(log.log_start_offset())?;
        while reader.next_batch_meta(f)? {}
        Ok(())
    }
}

/// One topic's committed offsets of one group: partition -> commit.
type TopicCommits = BTreeMap<u32, OffsetCommitValue>;

#[derive(Default)]
struct State {
    /// group -> topic -> partition -> latest commit.
    groups: BTreeMap<String, BTreeMap<String, TopicCommits>>,
    /// The broker's share groups (a ShareGroupMetadata record not deleted since): no commit
    /// of theirs is written.
    share_groups: BTreeSet<String>,
}

impl State {
    fn apply(&mut self, key: OffsetCommitKey, value: Option<OffsetCommitValue>) {
        let Ok(p) = u32::try_from(key.partition) else {
            return;
        };
        match value {
            Some(v) => {
                self.groups
                    .entry(key.group)
                    .or_default()
                    .entry(key.topic)
                    .or_default()
                    .insert(p, v);
            }
            None => {
                if let Some(topics) = self.groups.get_mut(&key.group) {
                    if let Some(parts) = topics.get_mut(&key.topic) {
                        parts.remove(&p);
                        if parts.is_empty() {
                            topics.remove(&key.topic);
                        }
                    }
                    if topics.is_empty() {
                        self.groups.remove(&key.group);
                    }
                }
            }
        }
    }
}

/// What [`GroupOffsets::load`] found.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct LoadStats {
    /// Partitions of `__consumer_offsets` read (0 when it does not exist).
    pub partitions: u32,
    /// Offset commit records applied (tombstones included).
    pub commits: u64,
    /// Records of other types (group metadata, KIP-848 groups...) passed over.
    pub other: u64,
    /// Records in transactional batches, not applied (their markers are not seen here; an
    /// aborted commit must not move a group).
    pub transactional: u64,
    /// Records whose key or value could not be decoded (each logged).
    pub undecodable: u64,
}

/// The committed offsets of every consumer group, over an [`OffsetsStorage`].
pub struct GroupOffsets {
    storage: Arc<dyn OffsetsStorage>,
    /// `offsets.topic.num.partitions`, for the topic's creation.
    create_partitions: u32,
    /// Serialises commits, so the memory view follows the order of the log.
    state: Mutex<State>,
    #[cfg_attr(not(feature = "internals"), allow(dead_code))]
    stats: LoadStats,
}

impl GroupOffsets {
    /// Loads the latest commit of every key from every partition of `__consumer_offsets`, if
    /// it exists. `create_partitions` is the partition count used when a first commit creates
    /// the topic (`offsets.topic.num.partitions`). Undecodable records are logged and skipped.
    pub fn load(storage: Arc<dyn OffsetsStorage>, create_partitions: u32) -> Result<GroupOffsets> {
        let mut state = State::default();
        let mut stats = LoadStats::default();
        if let Some(n) = storage.offsets_partitions() {
            stats.partitions = n;
            for p in 0..n {
                let mut first_error: Option<String> = None;
                let mut bad = 0u64;
                storage.scan_offsets(p, &mut |h, r| {
                    let Some(k) = r.key else {
                        stats.other += 1;
                        return;
                    };
                    let key = match decode_key(k) {
                        Ok(RecordKey::OffsetCommit { key, .. }) => key,
                        Ok(RecordKey::ShareGroupMetadata { group }) => {
                            stats.other += 1;
                            if r.value.is_some() {
                                state.share_groups.insert(group);
                            } else {
                                state.share_groups.remove(&group);
                            }
                            return;
                        }
                        Ok(_) => {
                            stats.other += 1;
                            return;
                        }
                        Err(e) => {
                            bad += 1;
                            first_error.get_or_insert(format!("offset {}: key: {e}", r.offset));
                            return;
                        }
                    };
                    if h.is_transactional() {
                        stats.transactional += 1;
                        return;
                    }
                    let value = match r.value.map(decode_offset_value).transpose() {
                        Ok(v) => v,
                        Err(e) => {
                            bad += 1;
                            first_error.get_or_insert(format!("offset {}: value: {e}", r.offset));
                            return;
                        }
                    };
                    stats.commits += 1;
                    state.apply(key, value);
                })?;
                if let Some(e) = first_error {
                    log::warn!(
                        "{OFFSETS_TOPIC}-{p}: {bad} records not understood and skipped (first at {e})"
                    );
                    stats.undecodable += bad;
                }
            }
            if stats.transactional > 0 {
                log::warn!(
                    "{OFFSETS_TOPIC}: {} transactional offset commits not applied",
                    stats.transactional
                );
            }
            log::info!(
                "{OFFSETS_TOPIC}: {} partitions, {} commits read, {} groups",
                stats.partitions,
                stats.commits,
                state.groups.len()
            );
        }
        Ok(GroupOffsets {
            storage,
            create_partitions: create_partitions.max(1),
            state: Mutex::new(state),
            stats,
        })
    }

    /// What the load found.
    #[cfg(feature = "internals")]
    pub fn load_stats(&self) -> &LoadStats {
        &self.stats
    }

    /// Loads over a [`LogManager`], with its `offsets.topic.num.partitions`.
    pub fn open(mgr: Arc<LogManager>) -> Result<GroupOffsets> {
        let n = mgr.config().offsets_topic_num_partitions;
        GroupOffsets::load(mgr, n)
    }

    /// The `__consumer_offsets` partition count in use: the topic's own, or the one it will
    /// be created with.
    #[cfg(feature = "internals")]
    pub fn partitions(&self) -> u32 {
        self.storage
            .offsets_partitions()
            .unwrap_or(self.create_partitions)
    }

    /// The `__consumer_offsets` partition that holds `group`'s commits.
    #[cfg(feature = "internals")]
    pub fn partition_of(&self, group: &str) -> u32 {
        codec::partition_for(group, self.partitions())
    }

    /// Commits `offsets` (topic, partition, next offset to read) for `group`: one batch of
    /// OffsetCommit records (metadata "", no leader epoch, the commit time as record
    /// timestamp and commit timestamp) appended to the group's partition. The first commit
    /// creates `__consumer_offsets`. Once this returns Ok the offsets are visible to
    /// [`GroupOffsets::committed`]; on an error nothing changed in memory.
    pub fn commit(&self, group: &str, offsets: &[(&str, u32, i64)]) -> Result<()> {
        let with: Vec<(&str, u32, i64, &str)> =
            offsets.iter().map(|&(t, p, o)| (t, p, o, "")).collect();
        self.commit_with_metadata(group, &with)
    }

    /// [`GroupOffsets::commit`] of (topic, partition, next offset, metadata): each commit
    /// carries its metadata string, as a Kafka consumer's `commitSync` with
    /// `OffsetAndMetadata` does.
    pub fn commit_with_metadata(
        &self,
        group: &str,
        offsets: &[(&str, u32, i64, &str)],
    ) -> Result<()> {
        let now = now_ms();
        let entries: Vec<(OffsetCommitKey, Option<OffsetCommitValue>)> = offsets
            .iter()
            .map(|&(topic, partition, offset, metadata)| {
                let mut v = OffsetCommitValue::new(offset, now);
                v.metadata = metadata.to_string();
                Ok((offset_key(group, topic, partition)?, Some(v)))
            })
            .collect::<Result<_>>()?;
        self.write(group, entries, now)
    }

    /// Moves `group`'s committed offsets on `topic` to `offsets` (partition -> offset), as
    /// `kafka-consumer-groups --reset-offsets --execute` does: a commit of exactly those
    /// partitions, the others untouched.
    pub fn reset(&self, group: &str, topic: &str, offsets: &BTreeMap<u32, i64>) -> Result<()> {
        let list: Vec<(&str, u32, i64)> = offsets.iter().map(|(&p, &o)| (topic, p, o)).collect();
        self.commit(group, &list)
    }

    /// Deletes `group`'s committed offsets on `topic` (tombstones, as
    /// `kafka-consumer-groups --delete-offsets` writes). Nothing is written when it has none.
    pub fn delete_offsets(&self, group: &str, topic: &str) -> Result<()> {
        let parts: Vec<u32> = self.committed(group, topic).into_keys().collect();
        let entries = parts
            .into_iter()
            .map(|p| Ok((offset_key(group, topic, p)?, None)))
            .collect::<Result<_>>()?;
        self.write(group, entries, now_ms())
    }

    fn write(
        &self,
        group: &str,
        entries: Vec<(OffsetCommitKey, Option<OffsetCommitValue>)>,
        now: i64,
    ) -> Result<()> {
        if entries.is_empty() {
            return Ok(());
        }
        let mut encoded: Vec<(Vec<u8>, Option<Vec<u8>>)> = Vec::with_capacity(entries.len());
        for (k, v) in &entries {
            let key = codec::encode_offset_key(k).map_err(invalid)?;
            let value = v
                .as_ref()
                .map(codec::encode_offset_value)
                .transpose()
                .map_err(invalid)?;
            encoded.push((key, value));
        }
        let records: Vec<RecordInput<'_>> = encoded
            .iter()
            .map(|(k, v)| RecordInput {
                key: Some(k),
                value: v.as_deref(),
                headers: &[],
                timestamp: now,
            })
            .collect();
        let mut state = self.state.guard();
        if state.share_groups.contains(group) {
            return Err(Error::GroupBusy(format!(
                "group {group} is a share group of the broker: its progress is kept in \
                 __share_group_state, not in offset commits"
            )));
        }
        let n = match self.storage.offsets_partitions() {
            Some(n) => n,
            None => self.storage.create_offsets_topic(self.create_partitions)?,
        };
        self.storage
            .append_offsets(codec::partition_for(group, n), &records)?;
        for (k, v) in entries {
            state.apply(k, v);
        }
        Ok(())
    }

    /// `group`'s committed offsets on `topic`: partition -> next offset to read.
    pub fn committed(&self, group: &str, topic: &str) -> BTreeMap<u32, i64> {
        self.committed_values(group, topic)
            .into_iter()
            .map(|(p, v)| (p, v.offset))
            .collect()
    }

    /// Like [`GroupOffsets::committed`], with the whole commit (timestamp, metadata...).
    pub fn committed_values(&self, group: &str, topic: &str) -> BTreeMap<u32, OffsetCommitValue> {
        let state = self.state.guard();
        state
            .groups
            .get(group)
            .and_then(|t| t.get(topic))
            .cloned()
            .unwrap_or_default()
    }

    /// The groups with committed offsets on `topic`, sorted.
    pub fn groups_of(&self, topic: &str) -> Vec<String> {
        let state = self.state.guard();
        state
            .groups
            .iter()
            .filter(|(_, t)| t.contains_key(topic))
            .map(|(g, _)| g.clone())
            .collect()
    }

    /// Every group with committed offsets, sorted.
    #[cfg(feature = "internals")]
    pub fn groups(&self) -> Vec<String> {
        self.state.guard().groups.keys().cloned().collect()
    }
}

fn offset_key(group: &str, topic: &str, partition: u32) -> Result<OffsetCommitKey> {
    Ok(OffsetCommitKey {
        group: group.to_string(),
        topic: topic.to_string(),
        partition: i32::try_from(partition)
            .map_err(|_| Error::InvalidRecord(format!("partition {partition} out of range")))?,
    })
}

fn invalid(e: codec::CodecError) -> Error {
    Error::InvalidRecord(e.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::consumer_offsets::codec::encode_offset_key;

    /// An in-memory `__consumer_offsets`: per partition, the batches appended.
    #[derive(Default)]
    struct MemStorage {
        parts: Mutex<Option<Vec<Vec<Batch>>>>,
    }

    type Rec = (Option<Vec<u8>>, Option<Vec<u8>>, i64);

    struct Batch {
        transactional: bool,
        records: Vec<Rec>,
    }

    impl MemStorage {
        fn with_partitions(n: u32) -> MemStorage {
            let s = MemStorage::default();
            s.create_offsets_topic(n).unwrap();
            s
        }
        fn push(&self, p: u32, transactional: bool, records: Vec<Rec>) {
            self.parts.guard().as_mut().unwrap()[p as usize].push(Batch {
                transactional,
                records,
            });
        }
        fn batches(&self, p: u32) -> usize {
            self.parts.guard().as_ref().unwrap()[p as usize].len()
        }
    }

    impl OffsetsStorage for MemStorage {
        fn offsets_partitions(&self) -> Option<u32> {
            self.parts.guard().as_ref().map(|p| p.len() as u32)
        }
        fn create_offsets_topic(&self, partitions: u32) -> Result<u32> {
            let mut g = self.parts.guard();
            let p = g.get_or_insert_with(|| (0..partitions).map(|_| Vec::new()).collect());
            Ok(p.len() as u32)
        }
        fn append_offsets(&self, partition: u32, records: &[RecordInput<'_>]) -> Result<()> {
            let recs = records
                .iter()
                .map(|r| {
                    (
                        r.key.map(<[u8]>::to_vec),
                        r.value.map(<[u8]>::to_vec),
                        r.timestamp,
                    )
                })
                .collect();
            self.push(partition, false, recs);
            Ok(())
        }
        fn scan_offsets(
            &self,
            partition: u32,
            f: &mut dyn FnMut(&BatchHeader, &Record<'_>),
        ) -> Result<()> {
            let g = self.parts.guard();
            let mut offset = 0;
            for b in &g.as_ref().unwrap()[partition as usize] {
                let h = BatchHeader {
                    base_offset: offset,
                    length: 0,
                    partition_leader_epoch: -1,
                    magic: 2,
                    crc: 0,
                    attributes: if b.transactional { 0x10 } else { 0 },
                    last_offset_delta: b.records.len() as i32 - 1,
                    base_timestamp: 0,
                    max_timestamp: 0,
                    producer_id: -1,
                    producer_epoch: -1,
                    base_sequence: -1,
                    records_count: b.records.len() as i32,
                };
                for (k, v, ts) in &b.records {
                    f(
                        &h,
                        &Record {
                            offset,
                            timestamp: *ts,
                            key: k.as_deref(),
                            value: v.as_deref(),
                            header_count: 0,
                            headers_raw: &[],
                        },
                    );
                    offset += 1;
                }
            }
            Ok(())
        }
    }

    fn key(g: &str, t: &str, p: i32) -> Vec<u8> {
        encode_offset_key(&OffsetCommitKey {
            group: g.into(),
            topic: t.into(),
            partition: p,
        })
        .unwrap()
    }

    fn value(offset: i64, version: i16) -> Vec<u8> {
        codec::encode_offset_value_version(&OffsetCommitValue::new(offset, 1), version).unwrap()
    }

    #[test]
    fn first_commit_creates_the_topic_and_writes_one_batch_to_the_groups_partition() {
        let s = Arc::new(MemStorage::default());
        let g = GroupOffsets::load(s.clone(), 50).unwrap();
        assert_eq!(s.offsets_partitions(), None);
        assert!(g.committed("g1", "orders").is_empty());
        g.commit("g1", &[("orders", 0, 42), ("orders", 1, 7)])
            .unwrap();
        assert_eq!(s.offsets_partitions(), Some(50));
        assert_eq!(g.partition_of("g1"), 42);
        assert_eq!(s.batches(42), 1);
        assert_eq!((0..50).map(|p| s.batches(p)).sum::<usize>(), 1);
        assert_eq!(
            g.committed("g1", "orders"),
            BTreeMap::from([(0, 42), (1, 7)])
        );
        // The record is Kafka's: type 1 key, v3 value, the commit time as record timestamp.
        let parts = s.parts.guard();
        let (k, v, ts) = &parts.as_ref().unwrap()[42][0].records[0];
        assert_eq!(k.as_deref(), Some(&key("g1", "orders", 0)[..]));
        let v = decode_offset_value(v.as_deref().unwrap()).unwrap();
        assert_eq!(v.offset, 42);
        assert_eq!(v.commit_timestamp, *ts);
        assert_eq!(&v.metadata, "");
        assert_eq!(v.leader_epoch, -1);
        assert_eq!(
            &parts.as_ref().unwrap()[42][0].records[0]
                .1
                .as_ref()
                .unwrap()[..2],
            &[0, 3]
        );
    }

    #[test]
    fn load_takes_the_latest_commit_and_tombstones_delete() {
        let s = Arc::new(MemStorage::with_partitions(3));
        s.push(
            0,
            false,
            vec![
                (Some(key("a", "t", 0)), Some(value(1, 0)), 0),
                (Some(key("a", "t", 1)), Some(value(5, 1)), 0),
                (Some(vec![0, 2, 0, 1, b'a']), Some(vec![0, 3, 1, 2, 3]), 0),
                (None, Some(vec![1]), 0),
            ],
        );
        s.push(
            0,
            false,
            vec![(Some(key("a", "t", 0)), Some(value(2, 4)), 0)],
        );
        s.push(
            1,
            false,
            vec![
                (Some(key("b", "t", 0)), Some(value(9, 3)), 0),
                (Some(key("b", "u", 0)), Some(value(3, 2)), 0),
            ],
        );
        s.push(1, false, vec![(Some(key("b", "t", 0)), None, 0)]);
        let g = GroupOffsets::load(s.clone(), 50).unwrap();
        assert_eq!(g.committed("a", "t"), BTreeMap::from([(0, 2), (1, 5)]));
        assert!(g.committed("b", "t").is_empty());
        assert_eq!(g.committed("b", "u"), BTreeMap::from([(0, 3)]));
        assert_eq!(g.groups_of("t"), vec!["a".to_string()]);
        assert_eq!(g.groups_of("u"), vec!["b".to_string()]);
        assert_eq!(g.groups(), vec!["a".to_string(), "b".to_string()]);
        let st = g.load_stats();
        assert_eq!(st.partitions, 3);
        assert_eq!(st.commits, 6);
        assert_eq!(st.other, 2);
        assert_eq!(st.undecodable, 0);
        // The existing count is used, not offsets.topic.num.partitions.
        assert_eq!(g.partitions(), 3);
        let home = codec::partition_for("a", 3);
        let before = s.batches(home);
        g.commit("a", &[("t", 0, 10)]).unwrap();
        assert_eq!(s.batches(home), before + 1);
        assert_eq!(g.committed("a", "t")[&0], 10);
    }

    #[test]
    fn undecodable_and_transactional_records_are_skipped() {
        let s = Arc::new(MemStorage::with_partitions(1));
        s.push(
            0,
            false,
            vec![
                (Some(key("a", "t", 0)), Some(value(1, 3)), 0),
                (Some(key("a", "t", 0)), Some(vec![0, 9, 0]), 0),
                (Some(vec![0, 1, 0]), Some(value(5, 3)), 0),
            ],
        );
        s.push(
            0,
            true,
            vec![(Some(key("a", "t", 0)), Some(value(99, 3)), 0)],
        );
        let g = GroupOffsets::load(s, 50).unwrap();
        assert_eq!(g.committed("a", "t"), BTreeMap::from([(0, 1)]));
        assert_eq!(g.load_stats().undecodable, 2);
        assert_eq!(g.load_stats().transactional, 1);
    }

    #[test]
    fn reset_and_delete_offsets() {
        let s = Arc::new(MemStorage::default());
        let g = GroupOffsets::load(s.clone(), 4).unwrap();
        g.commit("g", &[("t", 0, 3), ("t", 1, 4), ("u", 0, 1)])
            .unwrap();
        g.reset("g", "t", &BTreeMap::from([(1, 0)])).unwrap();
        assert_eq!(g.committed("g", "t"), BTreeMap::from([(0, 3), (1, 0)]));
        g.delete_offsets("g", "t").unwrap();
        assert!(g.committed("g", "t").is_empty());
        assert_eq!(g.groups_of("t"), Vec::<String>::new());
        assert_eq!(g.groups_of("u"), vec!["g".to_string()]);
        // Reloading the same storage gives the same view.
        let g2 = GroupOffsets::load(s.clone(), 4).unwrap();
        assert!(g2.committed("g", "t").is_empty());
        assert_eq!(g2.committed("g", "u"), BTreeMap::from([(0, 1)]));
        // Nothing to delete, nothing to commit: no batch.
        let p = g.partition_of("g");
        let before = s.batches(p);
        g.delete_offsets("g", "t").unwrap();
        g.commit("g", &[]).unwrap();
        assert_eq!(s.batches(p), before);
    }

    #[test]
    fn a_share_group_of_the_broker_is_never_committed_for() {
        // ShareGroupMetadataKey (type 11, groupId as an int16-length string), as a broker
        // with share groups writes it; its value is not read, a tombstone deletes the group.
        let share_key = |g: &str| {
            let mut k = 11i16.to_be_bytes().to_vec();
            k.extend_from_slice(&(g.len() as i16).to_be_bytes());
            k.extend_from_slice(g.as_bytes());
            k
        };
        let s = Arc::new(MemStorage::with_partitions(1));
        s.push(
            0,
            false,
            vec![
                (Some(share_key("s")), Some(vec![0, 0, 0, 0, 0, 1]), 1),
                (Some(share_key("gone")), Some(vec![0, 0, 0, 0, 0, 1]), 1),
                (Some(key("c", "t", 0)), Some(value(2, 3)), 1),
                (Some(share_key("gone")), None, 1),
            ],
        );
        let g = GroupOffsets::load(s.clone(), 1).unwrap();
        assert_eq!(g.load_stats().undecodable, 0);
        let before = s.batches(0);
        let e = g.commit("s", &[("t", 0, 1)]).unwrap_err();
        assert!(
            matches!(&e, Error::GroupBusy(m) if m.contains("share group")),
            "{e}"
        );
        assert_eq!(s.batches(0), before);
        assert!(g.committed("s", "t").is_empty());
        g.commit("gone", &[("t", 0, 1)]).unwrap();
        g.commit("c", &[("t", 0, 3)]).unwrap();
        assert_eq!(g.committed("c", "t"), BTreeMap::from([(0, 3)]));
    }

    #[test]
    fn a_refused_commit_changes_nothing() {
        let s = Arc::new(MemStorage::default());
        let g = GroupOffsets::load(s.clone(), 2).unwrap();
        let long = "t".repeat(codec::MAX_STRING_LEN + 1);
        assert!(g.commit("g", &[("t", 0, 1), (&long, 0, 1)]).is_err());
        assert!(g.committed("g", "t").is_empty());
        assert_eq!(s.offsets_partitions(), None);
    }
}

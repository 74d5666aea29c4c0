//! The local log as a [`Storage`]: the log manager's topics and partitions, in Kafka's
//! on-disk format.

use std::collections::BTreeMap;
use std::fs::File;
use std::path::PathBuf;
use std::sync::Arc;

use super::{GroupStore, Live, PartitionStore, RecordStream, Storage, TopicStore};
use crate::base::{AppendResult, SegmentFile, Waker};
use crate::consumer_offsets::GroupOffsets;
use crate::error::Result;
use crate::log::{LogReader, PartitionLog};
use crate::manager::{LogManager, Topic};
use crate::metrics::{PartitionSample, Sample};
use crate::produce;
use crate::record::{BatchHeader, Record, RecordInput};

impl Storage for LogManager {
    fn topics(&self) -> Vec<String> {
        LogManager::topics(self)
    }
    fn topic(&self, name: &str) -> Result<Arc<dyn TopicStore>> {
        Ok(LogManager::topic(self, name)?)
    }
    fn create_topic(&self, name: &str) -> Result<Arc<dyn TopicStore>> {
        Ok(LogManager::create_topic(self, name)?)
    }
    fn delete_topic(&self, name: &str) -> Result<()> {
        LogManager::delete_topic(self, name)
    }
    fn set_partition_count(&self, topic: &str, count: u32) -> Result<()> {
        LogManager::set_partition_count(self, topic, count)
    }
    fn check_topic_configs(&self, topic: &str, changes: &[(&str, Option<&str>)]) -> Result<()> {
        LogManager::topic_config_with(self, topic, changes).map(|_| ())
    }
    fn set_topic_configs(&self, topic: &str, changes: &[(&str, Option<&str>)]) -> Result<()> {
        LogManager::set_topic_configs(self, topic, changes)
    }
    fn sync_partition(&self, topic: &str, partition: u32) -> Result<()> {
        let log = LogManager::topic(self, topic)?.partition(partition)?;
        self.flush(&log)
    }
    fn log_dirs(&self) -> Vec<PathBuf> {
        LogManager::log_dirs(self)
    }
    fn shutdown(&self) -> Result<()> {
        LogManager::shutdown(self)
    }
    fn open_groups(self: Arc<Self>) -> Result<Arc<dyn GroupStore>> {
        Ok(Arc::new(GroupOffsets::open(self)?))
    }
    fn sample(&self) -> Sample {
        let mut s = Sample::default();
        for t in LogManager::topics(self) {
            let Ok(topic) = LogManager::topic(self, &t) else {
                continue;
            };
            for log in topic.partitions() {
                let mut p = PartitionSample {
                    topic: t.clone(),
                    partition: log.partition(),
                    log_start_offset: log.log_start_offset(),
                    log_end_offset: log.log_end_offset(),
                    size_bytes: Some(log.size_in_bytes()),
                    segments: Some(log.segments().len() as u64),
                    ..Default::default()
                };
                Sample::counters(&mut p, log.counters());
                s.partitions.push(p);
            }
        }
        s.take_daemon(self.counters());
        s
    }
}

impl GroupStore for GroupOffsets {
    fn groups_of(&self, topic: &str) -> Vec<String> {
        GroupOffsets::groups_of(self, topic)
    }
    fn committed(&self, group: &str, topic: &str) -> BTreeMap<u32, i64> {
        GroupOffsets::committed(self, group, topic)
    }
    fn commit(&self, group: &str, offsets: &[(&str, u32, i64)]) -> Result<()> {
        GroupOffsets::commit(self, group, offsets)
    }
    fn keeps_metadata(&self) -> bool {
        true
    }
    fn committed_with_metadata(
        &self,
        group: &str,
        topic: &str,
    ) -> Result<BTreeMap<u32, (i64, String)>> {
        Ok(GroupOffsets::committed_values(self, group, topic)
            .into_iter()
            .map(|(p, v)| (p, (v.offset, v.metadata)))
            .collect())
    }
    fn commit_with_metadata(&self, group: &str, offsets: &[(&str, u32, i64, &str)]) -> Result<()> {
        GroupOffsets::commit_with_metadata(self, group, offsets)
    }
    fn reset(&self, group: &str, topic: &str, offsets: &BTreeMap<u32, i64>) -> Result<()> {
        GroupOffsets::reset(self, group, topic, offsets)
    }
    fn topic_deleted(&self, topic: &str) -> Result<()> {
        for group in GroupOffsets::groups_of(self, topic) {
            GroupOffsets::delete_offsets(self, &group, topic)?;
        }
        Ok(())
    }
}

impl TopicStore for Topic {
    fn name(&self) -> &str {
        Topic::name(self)
    }
    fn incarnation(&self) -> u64 {
        Topic::incarnation(self)
    }
    /// Its first partition's directory (see [`crate::os::safe_fs::Dir::identity`]): made
    /// with the topic, kept as long as it lives.
    fn identity(&self) -> u64 {
        match Topic::partition(self, 0) {
            Ok(p) => p.identity(),
            Err(_) => crate::util::stable_hash(&[self.name().as_bytes()]),
        }
    }
    fn live(&self) -> Result<Live<'_>> {
        Ok(Live::guarded(Topic::live(self)?))
    }
    fn partition_count(&self) -> u32 {
        Topic::partition_count(self)
    }
    fn partition(&self, p: u32) -> Result<Arc<dyn PartitionStore>> {
        Ok(Topic::partition(self, p)?)
    }
    fn config_text(&self) -> Result<String> {
        Ok(Topic::config_text(self))
    }
    fn max_message_bytes(&self) -> usize {
        self.config().max_message_bytes
    }
    fn modified(&self) -> Option<std::time::SystemTime> {
        Topic::modified(self)
    }
    fn append(&self, records: &[RecordInput<'_>], max_record: usize) -> AppendResult {
        self.append_routed(records, max_record)
    }
    fn append_lines(&self, parts: &[&[u8]], timestamp: i64, _max_record: usize) -> AppendResult {
        self.append_lines_routed(parts, timestamp)
    }
}

impl PartitionStore for PartitionLog {
    fn partition(&self) -> u32 {
        PartitionLog::partition(self)
    }
    fn log_start_offset(&self) -> i64 {
        PartitionLog::log_start_offset(self)
    }
    /// The end a consumer reads to: the last stable offset under `read_committed`.
    fn log_end_offset(&self) -> i64 {
        PartitionLog::read_end(self)
    }
    fn modified(&self) -> Option<std::time::SystemTime> {
        PartitionLog::modified(self)
    }
    /// Against the end a consumer reads to (the last stable offset under `read_committed`),
    /// as [`PartitionStore::log_end_offset`]: a reader may start past it (a group's commit
    /// there reads nothing yet), a `by-offset` name may not.
    fn check_offset(&self, offset: i64) -> Result<i64> {
        let (start, end) = (
            PartitionLog::log_start_offset(self),
            PartitionLog::read_end(self),
        );
        crate::base::offset_in_range(offset, start, end)
    }
    fn offset_for_time(&self, ts: i64) -> Result<Option<i64>> {
        PartitionLog::fetchable_offset_for_time(self, ts)
    }
    fn read_from_offset(&self, offset: i64) -> Result<Box<dyn RecordStream>> {
        Ok(Box::new(PartitionLog::read_isolated(self, offset)?))
    }
    fn lines_len(&self, from: i64, to: i64) -> Result<u64> {
        PartitionLog::lines_len_isolated(self, from, to)
    }
    fn counts_without_reading(&self) -> bool {
        true
    }
    fn lines_len_counted(&self, from: i64, to: i64) -> Result<Option<u64>> {
        PartitionLog::lines_len_counted(self, from, to)
    }
    fn line_seek(&self, from: i64, byte: u64) -> Result<Option<(i64, u64)>> {
        PartitionLog::line_seek(self, from, byte)
    }
    fn generation(&self) -> u64 {
        PartitionLog::generation(self)
    }
    fn committed_only(&self) -> bool {
        PartitionLog::committed_only(self)
    }
    fn rewrites(&self) -> u64 {
        PartitionLog::rewrites(self)
    }
    fn record_count(&self) -> Result<u64> {
        PartitionLog::record_count(self)
    }
    fn read_from_time(&self, ts: i64) -> Result<Box<dyn RecordStream>> {
        Ok(Box::new(PartitionLog::read_from_time(self, ts)?))
    }
    fn append(&self, records: &[RecordInput<'_>]) -> AppendResult {
        produce::append_batch(self, records)
    }
    fn append_lines(&self, parts: &[&[u8]], timestamp: i64) -> AppendResult {
        produce::append_lines(self, parts, timestamp)
    }
    fn wait_for(&self, offset: i64, w: Arc<dyn Waker>) {
        PartitionLog::wait_for(self, offset, w)
    }
    fn has_segment_files(&self) -> bool {
        true
    }
    fn segment_files(&self) -> Option<Vec<SegmentFile>> {
        Some(PartitionLog::segment_files(self))
    }
    fn open_segment_file(&self, name: &str) -> Result<File> {
        PartitionLog::open_segment_file(self, name)
    }
}

impl RecordStream for LogReader {
    fn start_offset(&self) -> i64 {
        LogReader::start_offset(self)
    }
    fn end_offset(&self) -> i64 {
        LogReader::end_offset(self)
    }
    fn next_batch_meta(&mut self, f: &mut dyn FnMut(&BatchHeader, &Record<'_>)) -> Result<bool> {
        LogReader::next_batch_meta(self, f)
    }
    fn next_batch_lines(&mut self, from: &mut i64, to: i64, out: &mut Vec<u8>) -> Result<bool> {
        LogReader::next_batch_lines(self, from, to, out)
    }
    fn next_lines_until(
        &mut self,
        from: &mut i64,
        to: i64,
        out: &mut Vec<u8>,
        stop: usize,
    ) -> Result<bool> {
        LogReader::next_lines_until(self, from, to, out, stop)
    }
    fn passed(&self) -> i64 {
        LogReader::passed(self)
    }
}

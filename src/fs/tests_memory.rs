//! The fs core over a second, in-memory [`Storage`]: the interface is all the tree needs.
//! One topic with one partition of values; no segment files.

use std::ffi::OsStr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use super::FsState;
use super::tests::{RO, ROOT, WO, errno_of, me, read_all, walk};
use crate::error::{Error, Result};
use crate::record::{BatchHeader, Record, RecordInput};
use crate::storage::{
    AppendResult, Appended, GroupStore, Live, PartitionStore, RecordStream, Storage, TopicStore,
    Waker,
};
use crate::util::sync::MutexExt;

#[derive(Default)]
struct Memory {
    values: Arc<Mutex<Vec<Vec<u8>>>>,
}

struct MemTopic(Arc<Mutex<Vec<Vec<u8>>>>);
struct MemPartition(Arc<Mutex<Vec<Vec<u8>>>>);
struct MemStream {
    values: Vec<Vec<u8>>,
    next: usize,
    end: i64,
}

impl Storage for Memory {
    fn topics(&self) -> Vec<String> {
        vec!["mem".into()]
    }
    fn topic(&self, name: &str) -> Result<Arc<dyn TopicStore>> {
        match name {
            "mem" => Ok(Arc::new(MemTopic(self.values.clone()))),
            _ => Err(Error::UnknownTopic(name.into())),
        }
    }
    fn create_topic(&self, name: &str) -> Result<Arc<dyn TopicStore>> {
        Err(Error::TopicExists(name.into()))
    }
    fn delete_topic(&self, name: &str) -> Result<()> {
        Err(Error::UnknownTopic(name.into()))
    }
    fn set_partition_count(&self, topic: &str, count: u32) -> Result<()> {
        Err(Error::InvalidPartitionCount {
            topic: topic.into(),
            current: 1,
            requested: count,
        })
    }
    fn check_topic_configs(&self, _: &str, _: &[(&str, Option<&str>)]) -> Result<()> {
        Err(Error::InvalidConfig("no configs here".into()))
    }
    fn set_topic_configs(&self, _: &str, _: &[(&str, Option<&str>)]) -> Result<()> {
        Err(Error::InvalidConfig("no configs here".into()))
    }
    fn sync_partition(&self, _: &str, _: u32) -> Result<()> {
        Ok(())
    }
    fn log_dirs(&self) -> Vec<PathBuf> {
        Vec::new()
    }
    fn shutdown(&self) -> Result<()> {
        Ok(())
    }
    fn open_groups(self: Arc<Self>) -> Result<Arc<dyn GroupStore>> {
        Ok(Arc::new(MemGroups::default()))
    }
    fn is_internal(&self, _topic: &str) -> bool {
        false
    }
}

/// Commits kept in memory: (group, topic, partition) -> offset.
#[derive(Default)]
pub(super) struct MemGroups(Mutex<std::collections::BTreeMap<(String, String, u32), i64>>);

impl GroupStore for MemGroups {
    fn groups_of(&self, topic: &str) -> Vec<String> {
        let m = self.0.guard();
        let mut g: Vec<String> = m
            .keys()
            .filter(|k| k.1 == topic)
            .map(|k| k.0.clone())
            .collect();
        g.dedup();
        g
    }
    fn committed(&self, group: &str, topic: &str) -> std::collections::BTreeMap<u32, i64> {
        let m = self.0.guard();
        m.iter()
            .filter(|(k, _)| k.0 == group && k.1 == topic)
            .map(|(k, v)| (k.2, *v))
            .collect()
    }
    fn commit(&self, group: &str, offsets: &[(&str, u32, i64)]) -> Result<()> {
        let mut m = self.0.guard();
        for (t, p, o) in offsets {
            m.insert((group.to_string(), t.to_string(), *p), *o);
        }
        Ok(())
    }
    fn reset(
        &self,
        group: &str,
        topic: &str,
        offsets: &std::collections::BTreeMap<u32, i64>,
    ) -> Result<()> {
        let list: Vec<(&str, u32, i64)> = offsets.iter().map(|(p, o)| (topic, *p, *o)).collect();
        self.commit(group, &list)
    }
}

impl TopicStore for MemTopic {
    fn name(&self) -> &str {
        "mem"
    }
    fn incarnation(&self) -> u64 {
        7
    }
    fn live(&self) -> Result<Live<'_>> {
        Ok(Live::unguarded())
    }
    fn partition_count(&self) -> u32 {
        1
    }
    fn partition(&self, p: u32) -> Result<Arc<dyn PartitionStore>> {
        match p {
            0 => Ok(Arc::new(MemPartition(self.0.clone()))),
            _ => Err(Error::UnknownPartition {
                topic: "mem".into(),
                partition: p,
            }),
        }
    }
    fn config_text(&self) -> Result<String> {
        Ok(String::new())
    }
    fn max_message_bytes(&self) -> usize {
        1 << 20
    }
    fn append(&self, records: &[RecordInput<'_>], _max_record: usize) -> AppendResult {
        // Its one partition counts as appended to, whatever the append stored.
        let mut r = MemPartition(self.0.clone()).append(records);
        match &mut r {
            Ok(a) => a.partitions.insert(0),
            Err(e) => e.appended.partitions.insert(0),
        };
        r
    }
}

impl PartitionStore for MemPartition {
    fn partition(&self) -> u32 {
        0
    }
    fn log_start_offset(&self) -> i64 {
        0
    }
    fn log_end_offset(&self) -> i64 {
        self.0.guard().len() as i64
    }
    fn check_offset(&self, offset: i64) -> Result<i64> {
        crate::storage::offset_in_range(offset, 0, self.log_end_offset())
    }
    fn offset_for_time(&self, _ts: i64) -> Result<Option<i64>> {
        Ok(None)
    }
    fn read_from_offset(&self, offset: i64) -> Result<Box<dyn RecordStream>> {
        let end = self.check_offset(offset)?;
        Ok(Box::new(MemStream {
            values: self.0.guard().clone(),
            next: offset as usize,
            end,
        }))
    }
    fn read_from_time(&self, ts: i64) -> Result<Box<dyn RecordStream>> {
        Err(Error::NoRecordAtOrAfter(ts))
    }
    fn append(&self, records: &[RecordInput<'_>]) -> AppendResult {
        let mut v = self.0.guard();
        for r in records {
            v.push(r.value.unwrap_or_default().to_vec());
        }
        Ok(Appended::to(0, records.len()))
    }
    fn wait_for(&self, offset: i64, w: Arc<dyn Waker>) {
        if self.log_end_offset() > offset {
            w.wake();
        }
    }
}

impl RecordStream for MemStream {
    fn start_offset(&self) -> i64 {
        self.next as i64
    }
    fn end_offset(&self) -> i64 {
        self.end
    }
    fn next_batch_meta(&mut self, f: &mut dyn FnMut(&BatchHeader, &Record<'_>)) -> Result<bool> {
        if self.next as i64 >= self.end {
            return Ok(false);
        }
        let offset = self.next as i64;
        let header = BatchHeader {
            base_offset: offset,
            length: 0,
            partition_leader_epoch: 0,
            magic: 2,
            crc: 0,
            attributes: 0,
            last_offset_delta: 0,
            base_timestamp: 5,
            max_timestamp: 5,
            producer_id: -1,
            producer_epoch: -1,
            base_sequence: -1,
            records_count: 1,
        };
        let record = Record {
            offset,
            timestamp: 5,
            key: None,
            value: Some(&self.values[self.next]),
            header_count: 0,
            headers_raw: &[],
        };
        f(&header, &record);
        self.next += 1;
        Ok(true)
    }
}

#[test]
fn the_tree_works_over_another_storage() {
    let fs = FsState::new(Arc::new(Memory::default())).unwrap();
    let w = fs.open(walk(&fs, "mem/0/append"), WO, me()).unwrap();
    fs.write(w.fh, b"x\ny\n", None).unwrap();
    let t = fs.open(walk(&fs, "mem/append"), WO, me()).unwrap();
    fs.write(t.fh, b"z\n", None).unwrap();
    fs.fsync(t.fh).unwrap();
    let r = fs.open(walk(&fs, "mem/0/by-offset/1"), RO, me()).unwrap();
    assert_eq!(read_all(&fs, r.fh), b"y\nz\n");
    let leo = fs
        .open(walk(&fs, "mem/0/log-end-offset"), RO, me())
        .unwrap();
    assert_eq!(read_all(&fs, leo.fh), b"3\n");
    // A storage without kept counts counts by reading.
    let count = fs.open(walk(&fs, "mem/0/count"), RO, me()).unwrap();
    assert_eq!(read_all(&fs, count.fh), b"3\n");
    // No segment files: no segments/ directory.
    let names: Vec<String> = (fs.readdir(walk(&fs, "mem/0"), 0, 0).unwrap())
        .into_iter()
        .map(|e| e.name)
        .collect();
    assert!(!names.contains(&"segments".to_string()), "{names:?}");
    // One copy of the data: no replicas file.
    assert!(!names.contains(&"replicas".to_string()), "{names:?}");
    assert!(names.contains(&"by-offset".to_string()), "{names:?}");
    assert_eq!(
        errno_of(fs.lookup(walk(&fs, "mem/0"), OsStr::new("segments"))),
        libc::ENOENT
    );
    assert_eq!(errno_of(fs.mkdir(ROOT, OsStr::new("mem"))), libc::EEXIST);
    // No log dirs: df shows nothing rather than failing.
    assert_eq!(fs.statfs().unwrap().blocks, 0);
}

/// A by-offset name found at its lookup and gone from the log at its open: the open fails
/// with ENOENT, from the storage's check where its reader starts (the stream checks nothing
/// itself).
#[test]
fn an_offset_gone_between_lookup_and_open_is_enoent_at_open() {
    let storage = Memory::default();
    let values = storage.values.clone();
    let fs = FsState::new(Arc::new(storage)).unwrap();
    let w = fs.open(walk(&fs, "mem/0/append"), WO, me()).unwrap();
    fs.write(w.fh, b"x\ny\n", None).unwrap();
    let ino = walk(&fs, "mem/0/by-offset/1");
    // The log end moves back to 0 (log start 0): offset 1 is no longer in it.
    values.guard().clear();
    assert_eq!(errno_of(fs.open(ino, RO, me())), libc::ENOENT);
    let dir = walk(&fs, "mem/0/by-offset");
    assert_eq!(errno_of(fs.lookup(dir, OsStr::new("1"))), libc::ENOENT);
    let r = fs.open(walk(&fs, "mem/0/by-offset/0"), RO, me()).unwrap();
    assert_eq!(read_all(&fs, r.fh), b"");
}

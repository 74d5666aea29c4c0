//! The one storage of the tests besides the real log (`cfg(test)`): topics of in-memory
//! partitions of values (no segment files, no log dirs), on a "cluster" that may stop
//! answering (remote mode's EIO) and may write behind (appends handed over, acknowledged
//! when waited on), with groups whose membership elsewhere a test may play ([`Probe`]).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use crate::base::{AppendResult, Appended, Waker};
use crate::error::{Error, Result};
use crate::record::{BatchHeader, Record, RecordInput};
use crate::storage::{
    GroupMember, GroupStore, Live, MemberEvents, PartitionStore, RecordStream, Storage, TopicStore,
    Unacknowledged,
};
use crate::util::sync::MutexExt;

/// How the storage behaves (all off: a local storage of one partition a topic).
#[derive(Default)]
pub(crate) struct Options {
    /// Partitions of a topic made by `mkdir` (at least 1).
    pub partitions: u32,
    /// Remote mode's shape: partitions have `replicas`.
    pub remote: bool,
    /// Appends of an open file are handed over, acknowledged when it waits.
    pub write_behind: bool,
    /// Groups have members elsewhere: the mount joins them through this probe.
    pub probe: Option<Probe>,
}

/// The storage's state, shared by every handle of it and by the test.
pub(crate) struct Cluster {
    topics: Mutex<BTreeMap<String, Arc<TopicData>>>,
    next_incarnation: AtomicU64,
    /// While set, every call that asks the cluster fails (EIO).
    pub down: AtomicBool,
    options: Options,
}

struct TopicData {
    name: String,
    incarnation: u64,
    parts: Vec<Arc<PartData>>,
}

/// One partition: the acknowledged values (offset = index) and the reads waiting past them.
#[derive(Default)]
pub(crate) struct PartData {
    pub values: Mutex<Vec<Vec<u8>>>,
    waiting: Mutex<Vec<(i64, Arc<dyn Waker>)>>,
}

impl PartData {
    fn push(&self, values: impl IntoIterator<Item = Vec<u8>>) {
        let end = {
            let mut v = self.values.guard();
            v.extend(values);
            v.len() as i64
        };
        let woken: Vec<Arc<dyn Waker>> = {
            let mut w = self.waiting.guard();
            let (now, later) = w.drain(..).partition(|(at, _)| *at < end);
            *w = later;
            now.into_iter().map(|(_, w)| w).collect()
        };
        for w in woken.iter().filter(|w| !w.is_stale()) {
            w.wake();
        }
    }
}

impl Cluster {
    pub(crate) fn answer(&self) -> Result<()> {
        match self.down.load(Ordering::SeqCst) {
            true => Err(Error::Cluster("no answer within 10ms".into())),
            false => Ok(()),
        }
    }

    /// Partition `p` of topic `name`.
    pub(crate) fn part(&self, name: &str, p: u32) -> Arc<PartData> {
        self.topics.guard()[name].parts[p as usize].clone()
    }

    /// The values of partition 0 of topic `name`.
    pub(crate) fn values(&self, name: &str) -> Vec<Vec<u8>> {
        self.part(name, 0).values.guard().clone()
    }
}

/// The storage over a [`Cluster`].
pub(crate) struct Mock(pub Arc<Cluster>);

impl Mock {
    /// A storage with `options` and the topics `topics`.
    pub(crate) fn new(options: Options, topics: &[&str]) -> Mock {
        let c = Arc::new(Cluster {
            topics: Mutex::new(BTreeMap::new()),
            next_incarnation: AtomicU64::new(7),
            down: AtomicBool::new(false),
            options,
        });
        let m = Mock(c);
        for t in topics {
            m.create_topic(t).unwrap();
        }
        m
    }
}

impl Storage for Mock {
    fn topics(&self) -> Vec<String> {
        // The last metadata, also while the cluster is down.
        self.0.topics.guard().keys().cloned().collect()
    }
    fn topic(&self, name: &str) -> Result<Arc<dyn TopicStore>> {
        match self.0.topics.guard().get(name) {
            Some(data) => Ok(Arc::new(MockTopic(self.0.clone(), data.clone(), None))),
            None => Err(Error::UnknownTopic(name.into())),
        }
    }
    fn create_topic(&self, name: &str) -> Result<Arc<dyn TopicStore>> {
        self.0.answer()?;
        {
            let mut topics = self.0.topics.guard();
            if topics.contains_key(name) {
                return Err(Error::TopicExists(name.into()));
            }
            let parts = (0..self.0.options.partitions.max(1))
                .map(|_| Arc::default())
                .collect();
            let data = TopicData {
                name: name.to_string(),
                incarnation: self.0.next_incarnation.fetch_add(1, Ordering::Relaxed),
                parts,
            };
            topics.insert(name.to_string(), Arc::new(data));
        }
        self.topic(name)
    }
    fn delete_topic(&self, name: &str) -> Result<()> {
        Err(Error::UnknownTopic(name.into()))
    }
    fn set_partition_count(&self, topic: &str, count: u32) -> Result<()> {
        self.0.answer()?;
        Err(Error::InvalidPartitionCount {
            topic: topic.into(),
            current: self.topic(topic)?.partition_count(),
            requested: count,
        })
    }
    fn check_topic_configs(&self, _: &str, _: &[(&str, Option<&str>)]) -> Result<()> {
        self.0.answer()?;
        Err(Error::InvalidConfig("no configs here".into()))
    }
    fn set_topic_configs(&self, _: &str, _: &[(&str, Option<&str>)]) -> Result<()> {
        self.0.answer()?;
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
        let inner: Arc<dyn GroupStore> = Arc::new(MemGroups::default());
        Ok(match &self.0.options.probe {
            Some(probe) => Arc::new(JoinedGroups {
                inner,
                probe: probe.clone(),
            }),
            None => inner,
        })
    }
    fn is_internal(&self, _topic: &str) -> bool {
        false
    }
}

/// A topic; with a held list, the view of one open file that writes behind.
struct MockTopic(Arc<Cluster>, Arc<TopicData>, Option<Arc<Held>>);

/// Partition `.3`; with a held list, as [`MockTopic`].
struct MockPartition(Arc<Cluster>, Arc<PartData>, Option<Arc<Held>>, u32);

/// What one open file wrote behind: delivered when waited on, if the cluster answers.
struct Held(Arc<Cluster>, Mutex<Vec<(Arc<PartData>, Vec<u8>)>>);

impl Unacknowledged for Held {
    fn wait(&self) -> Result<()> {
        let held = std::mem::take(&mut *self.1.guard());
        if held.is_empty() {
            return Ok(());
        }
        self.0.answer()?;
        for (part, value) in held {
            part.push([value]);
        }
        Ok(())
    }
}

fn held(c: &Arc<Cluster>) -> Option<Arc<Held>> {
    c.options
        .write_behind
        .then(|| Arc::new(Held(c.clone(), Mutex::new(Vec::new()))))
}

impl TopicStore for MockTopic {
    fn name(&self) -> &str {
        &self.1.name
    }
    fn incarnation(&self) -> u64 {
        self.1.incarnation
    }
    fn live(&self) -> Result<Live<'_>> {
        Ok(Live::unguarded())
    }
    fn partition_count(&self) -> u32 {
        self.1.parts.len() as u32
    }
    fn partition_count_now(&self) -> Result<u32> {
        self.0.answer().map(|()| self.partition_count())
    }
    fn partition(&self, p: u32) -> Result<Arc<dyn PartitionStore>> {
        match self.1.parts.get(p as usize) {
            Some(part) => Ok(Arc::new(MockPartition(
                self.0.clone(),
                part.clone(),
                self.2.clone(),
                p,
            ))),
            None => Err(Error::UnknownPartition {
                topic: self.1.name.clone(),
                partition: p,
            }),
        }
    }
    fn config_text(&self) -> Result<String> {
        self.0.answer().map(|()| "retention.ms=5\n".into())
    }
    fn max_message_bytes(&self) -> usize {
        1 << 20
    }
    fn append(&self, records: &[RecordInput<'_>], _max_record: usize) -> AppendResult {
        // Topic-level appends go to partition 0, which counts as appended to whatever the
        // append stored.
        let mut r = self.partition(0)?.append(records);
        match &mut r {
            Ok(a) => a.partitions.insert(0),
            Err(e) => e.appended.partitions.insert(0),
        };
        r
    }
    fn write_behind(&self) -> Option<(Arc<dyn TopicStore>, Arc<dyn Unacknowledged>)> {
        let held = held(&self.0)?;
        let view = MockTopic(self.0.clone(), self.1.clone(), Some(held.clone()));
        Some((Arc::new(view), held))
    }
}

impl PartitionStore for MockPartition {
    fn partition(&self) -> u32 {
        self.3
    }
    fn log_start_offset(&self) -> i64 {
        0
    }
    fn log_end_offset(&self) -> i64 {
        self.1.values.guard().len() as i64
    }
    fn offsets_now(&self) -> Result<(i64, i64)> {
        self.0.answer()?;
        Ok((0, self.log_end_offset()))
    }
    fn check_offset(&self, offset: i64) -> Result<i64> {
        self.0.answer()?;
        crate::base::offset_in_range(offset, 0, self.log_end_offset())
    }
    fn offset_for_time(&self, _ts: i64) -> Result<Option<i64>> {
        self.0.answer().map(|()| None)
    }
    fn read_from_offset(&self, offset: i64) -> Result<Box<dyn RecordStream>> {
        let end = self.check_offset(offset)?;
        Ok(Box::new(MemStream {
            values: self.1.values.guard().clone(),
            next: offset as usize,
            end,
        }))
    }
    fn read_from_time(&self, ts: i64) -> Result<Box<dyn RecordStream>> {
        Err(Error::NoRecordAtOrAfter(ts))
    }
    fn append(&self, records: &[RecordInput<'_>]) -> AppendResult {
        let values = records.iter().map(|r| r.value.unwrap_or_default().to_vec());
        match &self.2 {
            // Handed over: acknowledged when the file waits for it.
            Some(held) => (held.1.guard()).extend(values.map(|v| (self.1.clone(), v))),
            None => {
                self.0.answer()?;
                self.1.push(values);
            }
        }
        Ok(Appended::to(self.3, records.len()))
    }
    fn wait_for(&self, offset: i64, w: Arc<dyn Waker>) {
        let mut waiting = self.1.waiting.guard();
        if self.log_end_offset() > offset {
            drop(waiting);
            w.wake();
        } else {
            waiting.push((offset, w));
        }
    }
    fn has_replicas(&self) -> bool {
        self.0.options.remote
    }
    fn replicas_text(&self) -> Result<String> {
        self.0.answer()?;
        Ok("Leader: 2\tReplicas: 2,1,3\tIsr: 2,3\n".into())
    }
    fn write_behind(&self) -> Option<(Arc<dyn PartitionStore>, Arc<dyn Unacknowledged>)> {
        let held = held(&self.0)?;
        let view = MockPartition(self.0.clone(), self.1.clone(), Some(held.clone()), self.3);
        Some((Arc::new(view), held))
    }
}

/// A stream of the values a partition had at its open.
struct MemStream {
    values: Vec<Vec<u8>>,
    next: usize,
    end: i64,
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

/// Commits kept in memory: (group, topic, partition) -> offset.
#[derive(Default)]
pub(crate) struct MemGroups(Mutex<BTreeMap<(String, String, u32), i64>>);

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
    fn committed(&self, group: &str, topic: &str) -> BTreeMap<u32, i64> {
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
    fn reset(&self, group: &str, topic: &str, offsets: &BTreeMap<u32, i64>) -> Result<()> {
        let list: Vec<(&str, u32, i64)> = offsets.iter().map(|(p, o)| (topic, *p, *o)).collect();
        self.commit(group, &list)
    }
}

pub(crate) type Commits = Arc<Mutex<Vec<(String, u32, i64)>>>;

/// What a test sees of the groups' membership, and plays of it: the coordinator's reports
/// (`events`), joins and leaves, the commits made through the member and without one.
#[derive(Default, Clone)]
pub(crate) struct Probe {
    pub events: Arc<Mutex<Option<Arc<dyn MemberEvents>>>>,
    pub joins: Arc<AtomicUsize>,
    pub leaves: Arc<AtomicUsize>,
    pub member_commits: Commits,
    pub plain_commits: Commits,
    /// While set, `check_idle` of group `slow` waits for it (a cluster that answers late).
    pub idle_gate: Arc<Mutex<Option<std::sync::mpsc::Receiver<()>>>>,
    /// Set once `check_idle` of group `slow` waits.
    pub idle_waiting: Arc<AtomicBool>,
}

/// Groups with members elsewhere: a follow reader's first open joins through the probe.
struct JoinedGroups {
    inner: Arc<dyn GroupStore>,
    probe: Probe,
}

struct Member {
    inner: Arc<dyn GroupStore>,
    group: String,
    probe: Probe,
}

impl GroupStore for JoinedGroups {
    fn groups_of(&self, topic: &str) -> Vec<String> {
        self.inner.groups_of(topic)
    }
    fn committed(&self, group: &str, topic: &str) -> BTreeMap<u32, i64> {
        self.inner.committed(group, topic)
    }
    fn commit(&self, group: &str, offsets: &[(&str, u32, i64)]) -> Result<()> {
        let mut c = self.probe.plain_commits.guard();
        c.extend(offsets.iter().map(|(t, p, o)| (t.to_string(), *p, *o)));
        self.inner.commit(group, offsets)
    }
    fn reset(&self, group: &str, topic: &str, offsets: &BTreeMap<u32, i64>) -> Result<()> {
        self.inner.reset(group, topic, offsets)
    }
    fn check_idle(&self, group: &str) -> Result<()> {
        let gate = self.probe.idle_gate.guard().take();
        if let Some(gate) = gate.filter(|_| group == "slow") {
            self.probe.idle_waiting.store(true, Ordering::SeqCst);
            let _ = gate.recv_timeout(std::time::Duration::from_secs(20));
        }
        self.inner.check_idle(group)
    }
    fn join(
        &self,
        group: &str,
        _topic: &str,
        events: Arc<dyn MemberEvents>,
    ) -> Result<Option<Arc<dyn GroupMember>>> {
        self.probe.joins.fetch_add(1, Ordering::SeqCst);
        *self.probe.events.guard() = Some(events);
        Ok(Some(Arc::new(Member {
            inner: self.inner.clone(),
            group: group.to_string(),
            probe: self.probe.clone(),
        })))
    }
}

impl GroupMember for Member {
    fn commit(&self, offsets: &[(&str, u32, i64)]) -> Result<()> {
        let mut c = self.probe.member_commits.guard();
        c.extend(offsets.iter().map(|(t, p, o)| (t.to_string(), *p, *o)));
        self.inner.commit(&self.group, offsets)
    }
    fn leave(&self) {
        self.probe.leaves.fetch_add(1, Ordering::SeqCst);
    }
}

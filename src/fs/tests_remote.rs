//! The fs core over a storage shaped like remote mode: its data is elsewhere (a cluster that
//! may stop answering) and it may write behind (appends handed over, acknowledged later).

use std::ffi::OsStr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use super::FsState;
use super::tests::{RO, WO, errno_of, me, read_all, walk};
use crate::error::{Error, Result};
use crate::record::RecordInput;
use crate::storage::{
    AppendResult, Appended, GroupStore, Live, PartitionStore, RecordStream, Storage, TopicStore,
    Unacknowledged, Waker,
};
use crate::util::sync::MutexExt;

/// One topic `rem` of one partition on a "cluster": the acknowledged values, and whether it
/// answers.
#[derive(Default)]
struct Cluster {
    acked: Mutex<Vec<Vec<u8>>>,
    down: AtomicBool,
    write_behind: bool,
}

impl Cluster {
    fn answer(&self) -> Result<()> {
        match self.down.load(Ordering::SeqCst) {
            true => Err(Error::Cluster("no answer within 10ms".into())),
            false => Ok(()),
        }
    }
    fn values(&self) -> Vec<Vec<u8>> {
        self.acked.guard().clone()
    }
}

struct Remote(Arc<Cluster>);
struct RemTopic(Arc<Cluster>, Option<Arc<Held>>);
struct RemPartition(Arc<Cluster>, Option<Arc<Held>>);

/// What one open file wrote behind: delivered when waited on, if the cluster answers.
struct Held(Arc<Cluster>, Mutex<Vec<Vec<u8>>>);

impl Unacknowledged for Held {
    fn wait(&self) -> Result<()> {
        let held = std::mem::take(&mut *self.1.guard());
        if held.is_empty() {
            return Ok(());
        }
        self.0.answer()?;
        self.0.acked.guard().extend(held);
        Ok(())
    }
}

impl Storage for Remote {
    fn topics(&self) -> Vec<String> {
        // The last metadata, also while the cluster is down.
        vec!["rem".into()]
    }
    fn topic(&self, name: &str) -> Result<Arc<dyn TopicStore>> {
        match name {
            "rem" => Ok(Arc::new(RemTopic(self.0.clone(), None))),
            _ => Err(Error::UnknownTopic(name.into())),
        }
    }
    fn create_topic(&self, name: &str) -> Result<Arc<dyn TopicStore>> {
        Err(Error::TopicExists(name.into()))
    }
    fn delete_topic(&self, name: &str) -> Result<()> {
        Err(Error::UnknownTopic(name.into()))
    }
    fn check_topic_configs(&self, _: &str, _: &[(&str, Option<&str>)]) -> Result<()> {
        Err(Error::from(std::io::Error::other(
            "the cluster does not answer",
        )))
    }
    fn set_partition_count(&self, _: &str, _: u32) -> Result<()> {
        self.0.answer()
    }
    fn set_topic_configs(&self, _: &str, _: &[(&str, Option<&str>)]) -> Result<()> {
        self.0.answer()
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
        Ok(Arc::new(super::tests_memory::MemGroups::default()))
    }
    fn is_internal(&self, _topic: &str) -> bool {
        false
    }
}

impl TopicStore for RemTopic {
    fn name(&self) -> &str {
        "rem"
    }
    fn incarnation(&self) -> u64 {
        9
    }
    fn live(&self) -> Result<Live<'_>> {
        Ok(Live::unguarded())
    }
    fn partition_count(&self) -> u32 {
        1
    }
    fn partition_count_now(&self) -> Result<u32> {
        self.0.answer().map(|()| 1)
    }
    fn partition(&self, p: u32) -> Result<Arc<dyn PartitionStore>> {
        match p {
            0 => Ok(Arc::new(RemPartition(self.0.clone(), None))),
            _ => Err(Error::UnknownPartition {
                topic: "rem".into(),
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
        // Its one partition counts as appended to, whatever the append stored.
        let mut r = RemPartition(self.0.clone(), self.1.clone()).append(records);
        match &mut r {
            Ok(a) => a.partitions.insert(0),
            Err(e) => e.appended.partitions.insert(0),
        };
        r
    }
    fn write_behind(&self) -> Option<(Arc<dyn TopicStore>, Arc<dyn Unacknowledged>)> {
        let held = self.0.write_behind.then(|| held(&self.0))?;
        Some((Arc::new(RemTopic(self.0.clone(), Some(held.clone()))), held))
    }
}

fn held(c: &Arc<Cluster>) -> Arc<Held> {
    Arc::new(Held(c.clone(), Mutex::new(Vec::new())))
}

impl PartitionStore for RemPartition {
    fn partition(&self) -> u32 {
        0
    }
    fn log_start_offset(&self) -> i64 {
        0
    }
    fn log_end_offset(&self) -> i64 {
        self.0.acked.guard().len() as i64
    }
    fn offsets_now(&self) -> Result<(i64, i64)> {
        self.0.answer()?;
        Ok((0, self.log_end_offset()))
    }
    fn check_offset(&self, _offset: i64) -> Result<i64> {
        self.0.answer()?;
        Ok(self.log_end_offset())
    }
    fn offset_for_time(&self, _ts: i64) -> Result<Option<i64>> {
        self.0.answer().map(|()| None)
    }
    fn read_from_offset(&self, _offset: i64) -> Result<Box<dyn RecordStream>> {
        Err(Error::Cluster("reads are not part of this storage".into()))
    }
    fn read_from_time(&self, ts: i64) -> Result<Box<dyn RecordStream>> {
        Err(Error::NoRecordAtOrAfter(ts))
    }
    fn append(&self, records: &[RecordInput<'_>]) -> AppendResult {
        let values = records.iter().map(|r| r.value.unwrap_or_default().to_vec());
        match &self.1 {
            // Handed over: acknowledged when the file waits for it.
            Some(held) => held.1.guard().extend(values),
            None => {
                self.0.answer()?;
                self.0.acked.guard().extend(values);
            }
        }
        Ok(Appended::to(0, records.len()))
    }
    fn wait_for(&self, _offset: i64, w: Arc<dyn Waker>) {
        w.wake();
    }
    fn has_replicas(&self) -> bool {
        true
    }
    fn replicas_text(&self) -> Result<String> {
        self.0.answer()?;
        Ok("Leader: 2\tReplicas: 2,1,3\tIsr: 2,3\n".into())
    }
    fn write_behind(&self) -> Option<(Arc<dyn PartitionStore>, Arc<dyn Unacknowledged>)> {
        let held = self.0.write_behind.then(|| held(&self.0))?;
        Some((
            Arc::new(RemPartition(self.0.clone(), Some(held.clone()))),
            held,
        ))
    }
}

fn mount(write_behind: bool) -> (Arc<FsState>, Arc<Cluster>) {
    let c = Arc::new(Cluster {
        write_behind,
        ..Cluster::default()
    });
    (FsState::new(Arc::new(Remote(c.clone()))).unwrap(), c)
}

fn vals(v: &[&str]) -> Vec<Vec<u8>> {
    v.iter().map(|s| s.as_bytes().to_vec()).collect()
}

#[test]
fn item4_files_from_the_cluster_fail_with_eio_while_it_does_not_answer() {
    let (fs, c) = mount(false);
    let w = fs.open(walk(&fs, "rem/0/append"), WO, me()).unwrap();
    fs.write(w.fh, b"a\nb\n", None).unwrap();
    let files = [
        ("rem/0", "log-end-offset", "2\n"),
        ("rem/0", "log-start-offset", "0\n"),
        ("rem", "config", "retention.ms=5\n"),
        ("rem", "partitions", "1\n"),
    ];
    for (dir, name, want) in files {
        let f = fs
            .open(walk(&fs, &format!("{dir}/{name}")), RO, me())
            .unwrap();
        assert_eq!(read_all(&fs, f.fh), want.as_bytes(), "{dir}/{name}");
    }
    c.down.store(true, Ordering::SeqCst);
    for (dir, name, _) in files {
        let parent = walk(&fs, dir);
        // Neither its size (stat) nor its content: an old answer is never shown as current.
        assert_eq!(
            errno_of(fs.lookup(parent, OsStr::new(name))),
            libc::EIO,
            "{dir}/{name}"
        );
    }
    // Listings answer from the last metadata.
    let names: Vec<String> = (fs.readdir(walk(&fs, "rem/0"), 0, 0).unwrap())
        .into_iter()
        .map(|e| e.name)
        .collect();
    assert!(names.contains(&"log-end-offset".to_string()), "{names:?}");
    // The cluster answers again: so do the files.
    c.down.store(false, Ordering::SeqCst);
    let f = fs
        .open(walk(&fs, "rem/0/log-end-offset"), RO, me())
        .unwrap();
    assert_eq!(read_all(&fs, f.fh), b"2\n");
}

/// `count` is counted by reading the partition in remote mode: `stat` (`ls -l`, `find`, `du`,
/// `cp -r`) shows size 0 and reads nothing (this storage's reads fail), as /proc's files.
#[test]
fn stat_of_count_does_not_read_the_partition() {
    let (fs, _c) = mount(false);
    let (_, attr) = fs.lookup(walk(&fs, "rem/0"), OsStr::new("count")).unwrap();
    assert_eq!(attr.size, 0);
    let ino = walk(&fs, "rem/0/count");
    assert_eq!(fs.getattr(ino, None, 1).unwrap().1.size, 0);
    // Its content is counted at open (here: the read fails, and so does the open).
    assert_eq!(errno_of(fs.open(ino, RO, me())), libc::EIO);
}

#[test]
fn item1_write_behind_fsync_and_each_close_wait_for_the_acknowledgements() {
    let (fs, c) = mount(true);
    for path in ["rem/0/append", "rem/append"] {
        c.acked.guard().clear();
        let w = fs.open(walk(&fs, path), WO, me()).unwrap();
        fs.write(w.fh, b"a\nb\n", Some(1)).unwrap();
        // write() returned once handed over: nothing acknowledged yet.
        assert!(c.values().is_empty(), "{path}");
        fs.fsync(w.fh).unwrap();
        assert_eq!(c.values(), vals(&["a", "b"]), "{path}");
        fs.write(w.fh, b"c\nd", Some(1)).unwrap();
        // close of a dup'ed descriptor: waits for what was written so far.
        fs.flush(w.fh, 1).unwrap();
        assert_eq!(c.values(), vals(&["a", "b", "c", "d"]), "{path}");
        // A close with no partial line pending waits too.
        fs.write(w.fh, b"e\n", Some(1)).unwrap();
        fs.flush(w.fh, 1).unwrap();
        assert_eq!(c.values(), vals(&["a", "b", "c", "d", "e"]), "{path}");
        // ... and the last close has nothing left to wait for.
        fs.flush(w.fh, 1).unwrap();
        fs.release(w.fh).unwrap();
        assert_eq!(c.values(), vals(&["a", "b", "c", "d", "e"]), "{path}");
    }
}

#[test]
fn item1_write_behind_fsync_and_close_fail_with_eio_when_not_acknowledged() {
    let (fs, c) = mount(true);
    let w = fs.open(walk(&fs, "rem/0/append"), WO, me()).unwrap();
    c.down.store(true, Ordering::SeqCst);
    // Handed over: the write succeeds while the cluster is down.
    assert_eq!(fs.write(w.fh, b"lost\n", Some(1)).unwrap(), 5);
    assert_eq!(errno_of(fs.fsync(w.fh)), libc::EIO);
    fs.write(w.fh, b"lost too\n", Some(1)).unwrap();
    assert_eq!(errno_of(fs.flush(w.fh, 1)), libc::EIO);
    fs.release(w.fh).unwrap();
    assert!(c.values().is_empty());
    // Without write-behind the write itself fails.
    let (fs, c) = mount(false);
    let w = fs.open(walk(&fs, "rem/0/append"), WO, me()).unwrap();
    c.down.store(true, Ordering::SeqCst);
    assert_eq!(errno_of(fs.write(w.fh, b"x\n", Some(1))), libc::EIO);
}

#[test]
fn item5_replicas_shows_leader_replicas_and_isr_and_eio_when_down() {
    let (fs, c) = mount(false);
    let names: Vec<String> = (fs.readdir(walk(&fs, "rem/0"), 0, 0).unwrap())
        .into_iter()
        .map(|e| e.name)
        .collect();
    assert!(names.contains(&"replicas".to_string()), "{names:?}");
    let f = fs.open(walk(&fs, "rem/0/replicas"), RO, me()).unwrap();
    assert_eq!(
        read_all(&fs, f.fh),
        b"Leader: 2\tReplicas: 2,1,3\tIsr: 2,3\n"
    );
    assert_eq!(
        errno_of(fs.open(walk(&fs, "rem/0/replicas"), WO, me())),
        libc::EACCES
    );
    c.down.store(true, Ordering::SeqCst);
    assert_eq!(
        errno_of(fs.lookup(walk(&fs, "rem/0"), OsStr::new("replicas"))),
        libc::EIO
    );
}

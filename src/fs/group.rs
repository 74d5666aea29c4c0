//! `<topic>/groups/<G>/records`, `records.jsonl`, `follow` and `follow.jsonl`: the topic read
//! as consumer group G. Each assigned partition is read from G's committed offset (the log
//! start when G has none); partitions are interleaved batch by batch. The offset after the
//! last record whose newline reached the reader is committed: at release, before a follow
//! read waits, every 5 s while it reads, and for the partitions a rebalance takes away.

use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::handle::OneChange;
use super::stream::{compact, format_record};
use crate::error::{Error, Result};
use crate::fs::inode::Format;
use crate::storage::{GroupMember, GroupStore, PartitionStore, RecordStream, TopicStore};

/// How often a follow reader that keeps reading commits.
pub const COMMIT_INTERVAL: Duration = Duration::from_secs(5);

/// One assigned partition's read position.
struct Cursor {
    log: Arc<dyn PartitionStore>,
    reader: Option<Box<dyn RecordStream>>,
    /// The next offset to format.
    next: i64,
    /// Records at or past it are not served: the log end at open for `records`.
    end: Option<i64>,
}

pub struct GroupHandle {
    topic: Arc<dyn TopicStore>,
    group: String,
    format: Format,
    follow: bool,
    groups: Arc<dyn GroupStore>,
    /// The mount as a member of a group with members elsewhere: commits go through it.
    member: Option<Arc<dyn GroupMember>>,
    cursors: BTreeMap<u32, Cursor>,
    /// Where the round robin over partitions goes on.
    turn: u32,
    out: Vec<u8>,
    out_pos: usize,
    /// File offset of `out[out_pos]`.
    pos: u64,
    /// (file offset where a record's line ends, partition, offset after the record).
    marks: VecDeque<(u64, u32, i64)>,
    /// Per partition, the offset after the last record delivered whole.
    delivered: BTreeMap<u32, i64>,
    /// What this reader committed last.
    committed: BTreeMap<u32, i64>,
    last_commit: Instant,
    pending: Option<Error>,
}

impl GroupHandle {
    pub fn new(
        topic: Arc<dyn TopicStore>,
        group: &str,
        format: Format,
        follow: bool,
        groups: Arc<dyn GroupStore>,
        member: Option<Arc<dyn GroupMember>>,
        partitions: &[u32],
    ) -> Result<GroupHandle> {
        let mut h = GroupHandle {
            topic,
            group: group.to_string(),
            format,
            follow,
            groups,
            member,
            cursors: BTreeMap::new(),
            turn: 0,
            out: Vec::new(),
            out_pos: 0,
            pos: 0,
            marks: VecDeque::new(),
            delivered: BTreeMap::new(),
            committed: BTreeMap::new(),
            last_commit: Instant::now(),
            pending: None,
        };
        h.assign(partitions)?;
        Ok(h)
    }

    pub fn is_follow(&self) -> bool {
        self.follow
    }

    pub fn group(&self) -> &str {
        &self.group
    }

    /// The partitions this reader has.
    pub fn partitions(&self) -> Vec<u32> {
        self.cursors.keys().copied().collect()
    }

    /// Takes on `partitions` (those it does not have yet), each from G's committed offset.
    pub fn assign(&mut self, partitions: &[u32]) -> Result<()> {
        let committed = self.groups.committed(&self.group, self.topic.name());
        for &p in partitions {
            if self.cursors.contains_key(&p) {
                continue;
            }
            let log = self.topic.partition(p)?;
            let (start, end) = (log.log_start_offset(), log.log_end_offset());
            let next = committed
                .get(&p)
                .copied()
                .unwrap_or(start)
                .clamp(start, end);
            self.committed
                .insert(p, committed.get(&p).copied().unwrap_or(-1));
            self.delivered.insert(p, next);
            self.cursors.insert(
                p,
                Cursor {
                    log,
                    reader: None,
                    next,
                    end: (!self.follow).then_some(end),
                },
            );
        }
        Ok(())
    }

    /// Gives up every partition not in `keep`: commits what was delivered of them, and
    /// forgets what was read but not delivered (the kept partitions read it again). The
    /// partitions are given up also when the commit fails (its error is returned): another
    /// reader takes them on from the last commit.
    pub fn revoke_all_but(&mut self, keep: &[u32]) -> Result<()> {
        let committed = self.commit();
        self.out.truncate(self.out_pos);
        self.marks.clear();
        self.pending = None;
        self.cursors.retain(|p, _| keep.contains(p));
        self.delivered.retain(|p, _| keep.contains(p));
        self.committed.retain(|p, _| keep.contains(p));
        for (p, c) in self.cursors.iter_mut() {
            c.next = self.delivered[p];
            c.reader = None;
        }
        committed
    }

    /// Commits the delivered offsets that changed.
    pub fn commit(&mut self) -> Result<()> {
        let topic = self.topic.name().to_string();
        let changed: Vec<(&str, u32, i64)> = self
            .delivered
            .iter()
            .filter(|(p, d)| self.committed.get(p) != Some(d))
            .map(|(p, d)| (topic.as_str(), *p, *d))
            .collect();
        if changed.is_empty() {
            return Ok(());
        }
        match &self.member {
            Some(m) => m.commit(&changed)?,
            None => self.groups.commit(&self.group, &changed)?,
        }
        for (_, p, d) in &changed {
            self.committed.insert(*p, *d);
        }
        self.last_commit = Instant::now();
        Ok(())
    }

    /// For a follow reader with nothing to serve: the partitions and offsets to wait for.
    pub fn waits_at(&self) -> Option<Vec<(Arc<dyn PartitionStore>, i64)>> {
        (self.follow && self.buffered() == 0 && self.pending.is_none()).then(|| {
            self.cursors
                .values()
                .map(|c| (c.log.clone(), c.next))
                .collect()
        })
    }

    /// Whether a read would answer at once.
    pub fn readable_now(&self) -> bool {
        !self.follow
            || self.buffered() > 0
            || self.pending.is_some()
            || self
                .cursors
                .values()
                .any(|c| c.log.log_end_offset() > c.next)
    }

    fn buffered(&self) -> usize {
        self.out.len() - self.out_pos
    }

    /// The next bytes of the stream, at most `size`; reads go in order (`offset` may skip
    /// forward, never back). Empty: EOF, or for follow "nothing yet".
    pub fn read(&mut self, offset: u64, size: usize) -> Result<&[u8]> {
        if offset < self.pos {
            // A group's records are read in order: no seeking back (ESPIPE, as for a pipe).
            return Err(Error::Io(std::io::Error::from_raw_os_error(libc::ESPIPE)));
        }
        let skip = (offset - self.pos) as usize;
        let want = skip + size;
        if self.buffered() < want {
            self.fill(want)?;
        }
        let skipped = skip.min(self.buffered());
        self.out_pos += skipped;
        self.pos += skipped as u64;
        let n = self.buffered().min(size);
        let start = self.out_pos;
        self.out_pos += n;
        self.pos += n as u64;
        while let Some(&(end, p, next)) = self.marks.front() {
            if end > self.pos {
                break;
            }
            self.delivered.insert(p, next);
            self.marks.pop_front();
        }
        if self.follow
            && self.last_commit.elapsed() >= COMMIT_INTERVAL
            && let Err(e) = self.commit()
        {
            // These bytes are delivered now (and committed by a later commit): the read
            // answers them; the commit is tried again at the next interval.
            log::error!("group {}: periodic commit failed: {e}", self.group);
            self.last_commit = Instant::now();
        }
        Ok(&self.out[start..start + n])
    }

    /// Formats batches, partition after partition, until `want` bytes are buffered or no
    /// partition has more.
    fn fill(&mut self, want: usize) -> Result<()> {
        compact(&mut self.out, &mut self.out_pos);
        if self.buffered() == 0
            && let Some(e) = self.pending.take()
        {
            return Err(e);
        }
        let parts: Vec<u32> = self.cursors.keys().copied().collect();
        let mut idle = 0;
        while self.buffered() < want && !parts.is_empty() && idle < parts.len() {
            let p = parts[self.turn as usize % parts.len()];
            self.turn = self.turn.wrapping_add(1);
            match self.one_batch(p) {
                Ok(true) => idle = 0,
                Ok(false) => idle += 1,
                Err(e) if self.buffered() > 0 => {
                    self.pending = Some(e);
                    break;
                }
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    /// Formats the next batch of partition `p`; false when it has nothing now.
    fn one_batch(&mut self, p: u32) -> Result<bool> {
        let format = self.format;
        let base = self.pos + self.buffered() as u64;
        let c = self.cursors.get_mut(&p).expect("an assigned partition");
        let limit = c.end.unwrap_or_else(|| c.log.log_end_offset());
        if c.next >= limit {
            return Ok(false);
        }
        if c.reader.is_none() {
            let start = c.log.log_start_offset();
            if c.next < start {
                log::warn!(
                    "group {}: {}-{p} lost records {}..{start} to retention; going on from {start}",
                    self.group,
                    self.topic.name(),
                    c.next
                );
                c.next = start;
            }
            c.reader = Some(c.log.read_from_offset(c.next)?);
        }
        let reader = c.reader.as_mut().expect("opened above");
        let (out, marks, next) = (&mut self.out, &mut self.marks, &mut c.next);
        let out_start = out.len();
        let more = reader.next_batch_meta(&mut |h, r| {
            if r.offset < *next || r.offset >= limit {
                return;
            }
            format_record(format, Some(p), h, r, out);
            *next = r.offset + 1;
            marks.push_back((base + (out.len() - out_start) as u64, p, *next));
        })?;
        if !more {
            // This reader reached the log end it had: a new one next time (follow).
            c.reader = None;
        }
        Ok(more || self.out.len() > out_start)
    }
}

/// `<topic>/groups/<G>/offsets`: `partition committed log-end lag` lines as they were at
/// open; a write of `partition offset` lines, or `earliest` / `latest`, moves G's committed
/// offsets as `kafka-consumer-groups --reset-offsets` does. One open is one change
/// ([`OneChange`]): lines are checked as they are written and applied at close.
pub struct OffsetsHandle {
    topic: Arc<dyn TopicStore>,
    group: String,
    content: Vec<u8>,
    change: OneChange<(u32, i64)>,
}

impl OffsetsHandle {
    pub fn open(topic: Arc<dyn TopicStore>, group: &str, groups: &dyn GroupStore) -> Result<Self> {
        let committed = groups.committed(group, topic.name());
        let mut content = String::new();
        for p in 0..topic.partition_count() {
            let end = topic.partition(p)?.log_end_offset();
            match committed.get(&p) {
                Some(c) => content.push_str(&format!("{p} {c} {end} {}\n", (end - c).max(0))),
                None => content.push_str(&format!("{p} - {end} -\n")),
            }
        }
        Ok(OffsetsHandle {
            topic,
            group: group.to_string(),
            content: content.into_bytes(),
            change: OneChange::default(),
        })
    }

    pub fn group(&self) -> &str {
        &self.group
    }

    pub fn read(&self, offset: u64, size: usize) -> &[u8] {
        super::handle::slice_at(&self.content, offset, size)
    }

    /// Whether written lines wait to be applied.
    pub fn pending(&self) -> bool {
        self.change.pending()
    }

    /// One write: every line parsed and checked now (a negative offset, an unknown partition
    /// or a line of another form fails the write, and the whole open); applied at close.
    /// Offsets past the log's ends are moved to the nearer end, as Kafka's tool does.
    pub fn write(&mut self, data: &[u8], owner: Option<u64>) -> Result<()> {
        let (topic, group) = (&self.topic, &self.group);
        self.change.write(owner, || Self::check(topic, group, data))
    }

    fn check(topic: &Arc<dyn TopicStore>, group: &str, data: &[u8]) -> Result<Vec<(u32, i64)>> {
        let text = std::str::from_utf8(data)
            .map_err(|_| Error::InvalidRecord("offsets: the write is not UTF-8".into()))?;
        let bad = |l: &str| {
            Error::InvalidRecord(format!(
                "offsets: {l:?} is not `partition offset`, `earliest` or `latest`"
            ))
        };
        let count = topic.partition_count();
        let mut target = Vec::new();
        for line in text.lines().map(str::trim).filter(|l| !l.is_empty()) {
            match line {
                "earliest" | "latest" => {
                    for p in 0..count {
                        let log = topic.partition(p)?;
                        let o = if line == "earliest" {
                            log.log_start_offset()
                        } else {
                            log.log_end_offset()
                        };
                        target.push((p, o));
                    }
                }
                _ => {
                    let mut it = line.split_whitespace();
                    let (Some(p), Some(o), None) = (it.next(), it.next(), it.next()) else {
                        return Err(bad(line));
                    };
                    let (Ok(p), Ok(o)) = (p.parse::<u32>(), o.parse::<i64>()) else {
                        return Err(bad(line));
                    };
                    if o < 0 {
                        return Err(Error::InvalidRecord(format!(
                            "offsets: {line:?}: an offset is never negative"
                        )));
                    }
                    let log = topic.partition(p)?;
                    let (start, end) = (log.log_start_offset(), log.log_end_offset());
                    let clamped = o.clamp(start, end);
                    if clamped != o {
                        log::info!(
                            "group {group}: offset {o} of {}-{p} is outside [{start}, {end}]; set to {clamped}",
                            topic.name()
                        );
                    }
                    target.push((p, clamped));
                }
            }
        }
        Ok(target)
    }

    /// Drops the lines written through this open: nothing of it is applied.
    pub fn discard(&mut self) {
        self.change.take(None);
    }

    /// Moves G's committed offsets to the lines written through this open, at the close of
    /// the process that wrote them (`Some(owner)`) or at release (`None`); a partition given
    /// twice takes its last offset.
    pub fn apply(&mut self, groups: &dyn GroupStore, closer: Option<u64>) -> Result<()> {
        let target: BTreeMap<u32, i64> = self.change.take(closer).into_iter().collect();
        if target.is_empty() {
            return Ok(());
        }
        groups.reset(&self.group, self.topic.name(), &target)
    }
}

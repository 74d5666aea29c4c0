//! A topic read as consumer group G (`<topic>/groups/<G>/records`, `records.jsonl`, `follow`
//! and `follow.jsonl` of the tree). Each assigned partition is read from G's committed offset (the log
//! start when G has none); partitions are interleaved batch by batch. The offset after the
//! last record whose newline reached the reader is committed (a read hands out at most one
//! record, so what a program was delivered is what it used): at each close and at release,
//! before a follow read waits (or answers EAGAIN) and when `poll` finds nothing, every 5 s,
//! and for the partitions a rebalance takes away. A rebalance never cuts a record a reader
//! is inside of: its partition is held until the line is delivered (at most [`HOLD_LIMIT`]).

use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::error::{Error, Result};
use crate::render::{Format, compact, format_record};
use crate::schemas::Schemas;
use crate::storage::{GroupMember, GroupStore, PartitionStore, RecordStream, TopicStore};

/// What [`GroupHandle::read_or_wait`] did.
pub enum GroupRead<'a> {
    /// The bytes to answer with (empty: EOF), and whether a held partition was handed over
    /// by this read (the group is to be rebalanced).
    Data(&'a [u8], bool),
    /// A follow read at the end: it waits for these partitions' next records.
    Wait(Vec<(Arc<dyn PartitionStore>, i64)>),
}

/// One partition of a whole-topic read ([`GroupHandle::whole_topic`]).
pub struct WholeTopicPart {
    pub partition: u32,
    pub log: Arc<dyn PartitionStore>,
    /// Opened at the partition's start.
    pub reader: Box<dyn RecordStream>,
    /// Records at or past it are not served; `None`: never ends (follow).
    pub end: Option<i64>,
}

/// The smallest read that is served in full from a group's record files: programs that
/// read in requests this large (`cat`, `cp`, `dd bs=1M`: `cat` reads max(`st_blksize`,
/// 128 KiB)) use every byte they read. Smaller reads get at most one record: line readers
/// (stdio 4-8 KiB, Python's `st_blksize`, Java 8 KiB, grep 96 KiB, Node 64 KiB) stop early.
pub const BULK_READ: usize = 128 * 1024;

/// The `st_blksize` of a group's record files: below [`BULK_READ`], so that readers that
/// size their buffers by it (Python's buffered files) read a record at a time.
pub const LINE_IO_SIZE: u32 = 64 * 1024;

/// How often a follow reader that keeps reading commits.
pub const COMMIT_INTERVAL: Duration = Duration::from_secs(5);

/// How long a partition waits for the reader that is inside one of its records when a
/// rebalance gives it to another (see [`GroupHandle::give_up_held`]).
pub const HOLD_LIMIT: Duration = Duration::from_secs(5);

/// Where a record's line ends in the file, its partition, the offset after it.
type Mark = (u64, u32, i64);

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
    /// The partition of the last record delivered whole.
    last_part: Option<u32>,
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
    /// A descriptor of it was closed: the reader may be leaving (its release follows).
    closing: bool,
    /// File offset where the last record delivered whole ends.
    boundary: u64,
    /// The last record delivered whole, while a seek back may still give it back: where it
    /// started, its mark, and what `delivered` held for its partition before it.
    last: Option<(u64, Mark, Option<i64>)>,
    /// A partition a rebalance took away while the reader was inside one of its records:
    /// kept until that record's line is delivered (the rest of it is buffered), then
    /// committed and given away.
    held: Option<u32>,
    /// Since when it is held.
    held_since: Instant,
    /// Set when a held partition was given away: the group's readers are rebalanced.
    handed_over: bool,
    /// False for an internal topic (`__consumer_offsets`: a commit would be a record of the
    /// topic read, and a follow reader would read its own commits for ever) and for a
    /// whole-topic read without a group (`<topic>/by-offset/earliest`...): nothing is committed.
    commits: bool,
    /// A whole-topic read (`<topic>/follow/<X>`...), not a group's (whose id may be "").
    whole_topic: bool,
    /// The topic's schemas, when its keys and values are decoded.
    schemas: Option<Arc<Schemas>>,
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
            last_part: None,
            out: Vec::new(),
            out_pos: 0,
            pos: 0,
            marks: VecDeque::new(),
            delivered: BTreeMap::new(),
            committed: BTreeMap::new(),
            last_commit: Instant::now(),
            pending: None,
            closing: false,
            boundary: 0,
            last: None,
            held: None,
            held_since: Instant::now(),
            handed_over: false,
            commits: true,
            whole_topic: false,
            schemas: None,
        };
        h.assign(partitions)?;
        Ok(h)
    }

    /// `<topic>/by-offset/<X>`, `<topic>/by-time/<T>[..<T2>]`, `<topic>/follow/<X>`: every
    /// partition from its own start, interleaved as a group's records are, without a group:
    /// nothing is committed. `parts` are the partitions, each with a reader opened at its
    /// start and where it ends (`None`: never, for follow).
    pub fn whole_topic(
        topic: Arc<dyn TopicStore>,
        format: Format,
        follow: bool,
        parts: Vec<WholeTopicPart>,
    ) -> Result<GroupHandle> {
        let groups: Arc<dyn GroupStore> = Arc::new(NoGroups);
        let mut h = GroupHandle::new(topic, "", format, follow, groups, None, &[])?;
        h.commits = false;
        h.whole_topic = true;
        for part in parts {
            let next = part.reader.start_offset();
            h.delivered.insert(part.partition, next);
            h.cursors.insert(
                part.partition,
                Cursor {
                    log: part.log,
                    reader: Some(part.reader),
                    next,
                    end: part.end,
                },
            );
        }
        Ok(h)
    }

    /// Decodes the topic's keys and values with `schemas`.
    pub fn with_schemas(mut self, schemas: Option<Arc<Schemas>>) -> GroupHandle {
        self.schemas = schemas;
        self
    }

    /// A reader that never commits (of an internal topic): each open reads from G's
    /// commits as they are.
    pub fn without_commits(mut self) -> GroupHandle {
        self.commits = false;
        self
    }

    /// close(2) of one of its descriptors.
    pub fn closing(&mut self) {
        self.closing = true;
    }

    /// Whether a descriptor of it was closed and none of its reads came since: its release
    /// is most likely on its way.
    pub fn is_closing(&self) -> bool {
        self.closing
    }

    pub fn is_follow(&self) -> bool {
        self.follow
    }

    pub fn group(&self) -> &str {
        &self.group
    }

    /// Where the group's next reader starts its round robin: the partition after the one
    /// this reader delivered its last record from (`None`: it delivered none). A reader
    /// that takes one record (`head -n 1`) leaves the next its partition's neighbour.
    pub fn next_start(&self) -> Option<u32> {
        let last = self.last_part?;
        let next = self.cursors.range(last + 1..).next().map(|(p, _)| *p);
        next.or_else(|| self.cursors.keys().next().copied())
    }

    /// Starts the round robin at partition `p` (or the first one after it it has).
    pub fn start_at(&mut self, p: u32) {
        let i = self.cursors.range(..p).count();
        self.turn = if i < self.cursors.len() { i as u32 } else { 0 };
    }

    /// The partitions this reader has.
    #[cfg(test)]
    pub fn partitions(&self) -> Vec<u32> {
        self.cursors.keys().copied().collect()
    }

    /// Takes on `partitions` (those it does not have yet), each from G's committed offset,
    /// or after a record of it that is buffered (one a rebalance left it inside).
    pub fn assign(&mut self, partitions: &[u32]) -> Result<()> {
        let committed = self.groups.committed(&self.group, self.topic.name());
        for &p in partitions {
            if self.cursors.contains_key(&p) {
                continue;
            }
            let log = self.topic.partition(p)?;
            let (start, end) = (log.log_start_offset(), log.log_end_offset());
            let from = committed
                .get(&p)
                .copied()
                .unwrap_or(start)
                .clamp(start, end);
            let buffered = self.marks.iter().rev().find(|m| m.1 == p).map(|m| m.2);
            let next = buffered.unwrap_or(from);
            self.committed
                .entry(p)
                .or_insert(committed.get(&p).copied().unwrap_or(-1));
            self.delivered.entry(p).or_insert(from);
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
    ///
    /// A record whose head the reader already got is never cut: the rest of its line stays
    /// buffered as the reader's next bytes. When its partition is given up, the partition is
    /// held (see [`GroupHandle::held`]) until that line is delivered.
    pub fn revoke_all_but(&mut self, keep: &[u32]) -> Result<()> {
        let committed = self.commit();
        self.last = None;
        let partial = self
            .marks
            .front()
            .copied()
            .filter(|&(end, _, _)| self.pos > self.boundary && end > self.pos);
        self.marks.clear();
        match partial {
            Some((end, p, next)) => {
                self.out.truncate(self.out_pos + (end - self.pos) as usize);
                self.marks.push_back((end, p, next));
                // Held when it is still this reader's to give (not one it gave up already).
                let mine = self.cursors.contains_key(&p) || self.held == Some(p);
                let hold = (mine && !keep.contains(&p)).then_some(p);
                if hold.is_some() && self.held != hold {
                    self.held_since = Instant::now();
                }
                self.held = hold;
            }
            None => {
                self.out.truncate(self.out_pos);
                self.held = None;
            }
        }
        self.pending = None;
        let held = self.held;
        self.cursors.retain(|p, _| keep.contains(p));
        self.delivered
            .retain(|p, _| keep.contains(p) || Some(*p) == held);
        self.committed
            .retain(|p, _| keep.contains(p) || Some(*p) == held);
        for (p, c) in self.cursors.iter_mut() {
            c.next = match partial {
                Some((_, q, next)) if q == *p => next,
                _ => self.delivered[p],
            };
            c.reader = None;
        }
        committed
    }

    /// The partition a rebalance took away while the reader was inside one of its records:
    /// no other reader takes it on until [`GroupHandle::take_handed_over`].
    pub fn held(&self) -> Option<u32> {
        self.held
    }

    /// Whether a held partition was given away since the last call: the group is to be
    /// rebalanced so that another reader takes it on.
    pub fn take_handed_over(&mut self) -> bool {
        std::mem::take(&mut self.handed_over)
    }

    /// A partition held longer than [`HOLD_LIMIT`] (its reader stopped inside a record) is
    /// given away all the same: the reader still gets the rest of its line, and the new owner
    /// reads that record again from the last commit (whole). Returns whether it was.
    pub fn give_up_held(&mut self) -> bool {
        let Some(p) = self.held else {
            return false;
        };
        if self.held_since.elapsed() < HOLD_LIMIT {
            return false;
        }
        log::warn!(
            "group {}: a reader stopped inside a record of {}-{p} for {:?}: the partition moves on",
            self.group,
            self.topic.name(),
            HOLD_LIMIT
        );
        self.delivered.remove(&p);
        self.committed.remove(&p);
        self.held = None;
        self.handed_over = true;
        true
    }

    /// The held partition's record was delivered: it is committed and given away.
    fn hand_over(&mut self, p: u32) {
        self.last = None;
        if let Err(e) = self.commit() {
            log::error!(
                "group {}: commit of {}-{p} before giving it away: {e}",
                self.group,
                self.topic.name()
            );
        }
        self.delivered.remove(&p);
        self.committed.remove(&p);
        self.held = None;
        self.handed_over = true;
    }

    /// Commits the delivered offsets that changed.
    pub fn commit(&mut self) -> Result<()> {
        if !self.commits {
            return Ok(());
        }
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
        // What is committed is not given back by a seek.
        self.last = None;
        self.last_commit = Instant::now();
        Ok(())
    }

    /// The commit every [`COMMIT_INTERVAL`] of a follow reader: at its reads, and for a
    /// reader idle elsewhere (in `poll`, or busy with what it read) from the follow thread.
    pub fn commit_due(&mut self) {
        if self.follow
            && self.last_commit.elapsed() >= COMMIT_INTERVAL
            && let Err(e) = self.commit()
        {
            // What was delivered is committed by a later commit: tried again at the next
            // interval.
            log::error!("group {}: periodic commit failed: {e}", self.group);
            self.last_commit = Instant::now();
        }
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

    /// A whole-topic follow read (`<topic>/follow/<X>`, no group): the partitions added to
    /// the topic since it was opened are read too, from their start, as a subscriber picks
    /// them up at its next metadata refresh. Whether any was added.
    pub fn take_new_partitions(&mut self) -> Result<bool> {
        if !self.is_whole_topic_follow() {
            return Ok(false);
        }
        let new: Vec<u32> = (0..self.topic.partition_count())
            .filter(|p| !self.cursors.contains_key(p))
            .collect();
        if new.is_empty() {
            return Ok(false);
        }
        self.assign(&new)?;
        Ok(true)
    }

    /// A whole-topic follow read (no group).
    pub fn is_whole_topic_follow(&self) -> bool {
        self.whole_topic && self.follow
    }

    /// For a follow reader: its partitions at their log ends now, where the next records
    /// arrive.
    pub fn log_ends(&self) -> Vec<(Arc<dyn PartitionStore>, i64)> {
        self.cursors
            .values()
            .map(|c| (c.log.clone(), c.log.log_end_offset()))
            .collect()
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

    /// Moves the stream to file offset `offset` for the next read: where the last read ended,
    /// or back within the record being read or the last one delivered whole (bash's `read`
    /// and `head` seek back to the end of what they used, `less` to the start). A record
    /// seeked back into is delivered again, and committed only once its end is. False
    /// (nothing moves) elsewhere, across a commit or a rebalance's hand-over.
    pub fn seek_to(&mut self, offset: u64) -> bool {
        if offset >= self.pos {
            return offset == self.pos;
        }
        let floor = self.last.map_or(self.boundary, |l| l.0);
        let back = (self.pos - offset) as usize;
        if offset < floor || back > self.out_pos || self.held.is_some() {
            return false;
        }
        if offset < self.boundary {
            let Some((start, mark, prev)) = self.last.take() else {
                return false;
            };
            self.marks.push_front(mark);
            match prev {
                Some(d) => self.delivered.insert(mark.1, d),
                None => self.delivered.remove(&mark.1),
            };
            self.boundary = start;
        }
        self.out_pos -= back;
        self.pos = offset;
        true
    }

    /// Whether a read hands out at most one record (a reader that commits).
    pub fn reads_by_line(&self) -> bool {
        self.commits
    }

    /// The file offset the next read must be at: each read goes on where the last one ended
    /// (the kernel keeps the file position, so an `lseek` to where it is succeeds, as `head`
    /// and bash's `read` do at exit; the caller refuses a read elsewhere, as on a pipe).
    pub fn position(&self) -> u64 {
        self.pos
    }

    /// The next bytes of the stream, at most `size`. Empty: EOF, or for follow "nothing yet".
    ///
    /// A reader that commits gets at most one record per read smaller than [`BULK_READ`], as
    /// a terminal in canonical mode hands out one line: a program asks for more only when it
    /// used what it got, so what it was delivered when it closes is exactly what it used
    /// (`head -n K`, `sed Kq`, a Python loop that breaks). A bulk read, and any read of a
    /// whole-topic file (which commits nothing), is filled with whole records.
    #[cfg(test)]
    pub fn read(&mut self, size: usize) -> Result<&[u8]> {
        let r = self.read_range(size)?;
        Ok(&self.out[r])
    }

    /// A read of up to `size` bytes that, for a follow reader at the end, waits: what was
    /// delivered is committed first, and the answer names the partitions and offsets to wait
    /// for. [`GroupRead::Data`] tells too whether a held partition was handed over (the group
    /// is to be rebalanced).
    pub fn read_or_wait(&mut self, size: usize) -> Result<GroupRead<'_>> {
        let r = self.read_range(size)?;
        if !(r.is_empty() && self.follow) {
            let regroup = self.take_handed_over();
            return Ok(GroupRead::Data(&self.out[r], regroup));
        }
        // What was delivered is committed before the reader waits.
        if let Err(e) = self.commit() {
            log::error!("group {}: commit before waiting: {e}", self.group);
        }
        Ok(match self.waits_at() {
            None => GroupRead::Data(&[], false),
            Some(waits) => GroupRead::Wait(waits),
        })
    }

    /// The follow thread's care of a reader that may not be reading: its periodic commit,
    /// and a held partition given up after [`HOLD_LIMIT`]. Whether the group is to be
    /// rebalanced (a held partition was given away).
    pub fn tend(&mut self) -> bool {
        self.commit_due();
        self.give_up_held() && self.take_handed_over()
    }

    /// [`GroupHandle::read`]'s bytes, as a range of the output buffer.
    fn read_range(&mut self, size: usize) -> Result<std::ops::Range<usize>> {
        self.closing = false;
        let one = self.reads_by_line() && size < BULK_READ;
        let want = if one { 1 } else { size };
        if self.buffered() < want {
            self.fill(want)?;
        }
        let mut n = self.buffered().min(size);
        if one && let Some(&(end, _, _)) = self.marks.front() {
            n = n.min((end - self.pos) as usize);
        }
        let start = self.out_pos;
        self.out_pos += n;
        self.pos += n as u64;
        while let Some(&(end, p, next)) = self.marks.front() {
            if end > self.pos {
                break;
            }
            // The end of a line whose partition went elsewhere (see `give_up_held`) is not
            // this reader's to commit.
            let prev = self.delivered.get(&p).copied();
            if self.cursors.contains_key(&p) || self.held == Some(p) {
                self.delivered.insert(p, next);
            }
            self.last = Some((self.boundary, (end, p, next), prev));
            self.last_part = Some(p);
            self.boundary = end;
            self.marks.pop_front();
            if self.held == Some(p) {
                self.hand_over(p);
            }
        }
        self.commit_due();
        Ok(start..start + n)
    }

    /// Formats batches, partition after partition, until `want` bytes are buffered or no
    /// partition has more.
    fn fill(&mut self, want: usize) -> Result<()> {
        // The bytes a seek back may read again stay (from the last whole record's start).
        let floor = self.last.map_or(self.boundary, |l| l.0);
        let keep = ((self.pos - floor) as usize).min(self.out_pos);
        let mut from = self.out_pos - keep;
        compact(&mut self.out, &mut from);
        self.out_pos = from + keep;
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
        // A reader kept from an earlier read ends where the log ended then: when it gives
        // nothing more, a new one reads what came since (a read that does not wait, with
        // O_NONBLOCK, must see it now).
        let mut fresh = c.reader.is_none();
        loop {
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
            let topic = self.topic.name();
            let schemas = self.schemas.as_deref();
            let out_start = out.len();
            let more = reader.next_batch_meta(&mut |h, r| {
                if r.offset < *next || r.offset >= limit {
                    return;
                }
                format_record(format, topic, p, h, r, out, schemas);
                *next = r.offset + 1;
                marks.push_back((base + (out.len() - out_start) as u64, p, *next));
            })?;
            if !more {
                // This reader reached the log end it had: a new one next time (follow).
                c.reader = None;
            }
            let made = out.len() > out_start;
            if more || made || fresh {
                return Ok(more || made);
            }
            fresh = true;
        }
    }
}

/// The group store of a read without a group: none has offsets, nothing is stored.
struct NoGroups;

impl GroupStore for NoGroups {
    fn groups_of(&self, _topic: &str) -> Vec<String> {
        Vec::new()
    }
    fn committed(&self, _group: &str, _topic: &str) -> BTreeMap<u32, i64> {
        BTreeMap::new()
    }
    fn commit(&self, _group: &str, _offsets: &[(&str, u32, i64)]) -> Result<()> {
        Ok(())
    }
    fn reset(&self, _group: &str, _topic: &str, _offsets: &BTreeMap<u32, i64>) -> Result<()> {
        Ok(())
    }
}

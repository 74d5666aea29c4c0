//! read(2) and poll(2): answered at once, or (a follow file at the log end) kept and
//! answered when a record arrives; the stream length `fstat` shows a stream's reader; and the
//! core's side of the consumer-group engine (`crate::group`): a record file opened as a
//! reader that joins the group's membership, its leave at release, the readers' handles
//! lent to the membership's rebalances by file handle, and the terminal ioctls of the files
//! that read a line at a time.

use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

use super::follow::{self, Read};
use super::handle::{self, Handle};
use super::inode::{Format, TopicName};
use super::types::ReadReply;
use super::view::Mine;
use super::{FsError, FsResult, FsState, OpenFile, report};
use crate::group::{GroupHandle, GroupRead, Join, Membership, Readers};
use crate::storage::TopicStore;
use crate::util::sync::MutexExt;

impl FsState {
    /// The length of the stream `fh` (or the one the process of `pid` opened on `ino`).
    pub(super) fn stream_length(
        &self,
        ino: u64,
        fh: Option<u64>,
        pid: u32,
    ) -> FsResult<Option<u64>> {
        let fh = self.opened_by(ino, fh, pid);
        let Some(of) = fh.and_then(|fh| self.handles.guard().get(&fh).cloned()) else {
            return Ok(None);
        };
        let mut h = of.handle.guard();
        match &mut *h {
            Handle::Stream(s) => Ok(Some(s.length()?)),
            Handle::View(v) => Ok(v.length()),
            _ => Ok(None),
        }
    }

    /// The open stream file `fh`, or else the one the process of thread `pid` opened on
    /// `ino` (its `fstat` comes without the file).
    pub(super) fn opened_by(&self, ino: u64, fh: Option<u64>, pid: u32) -> Option<u64> {
        match fh {
            Some(fh) => Some(fh),
            None => {
                let opens = self.streams.guard().get(&ino).cloned();
                match opens {
                    None => None,
                    // The main thread of an opener (its thread id is its process id) is
                    // found without reading its /proc status.
                    Some(opens) => match opens.iter().find(|(_, g)| *g == pid) {
                        Some((fh, _)) => Some(*fh),
                        None => {
                            let tgid = crate::os::process::tgid_of(pid);
                            opens
                                .iter()
                                .find(|(_, g)| Some(*g) == tgid)
                                .map(|(fh, _)| *fh)
                        }
                    },
                }
            }
        }
    }

    /// Answers `reply` with up to `size` bytes at `offset` of the open file (straight from
    /// the handle's buffer: no copy). A follow file at the log end keeps the reply and
    /// answers it when a record arrives (`follow.rs`); `pid` is the reading thread.
    #[cfg(test)]
    pub fn read(&self, fh: u64, offset: u64, size: u32, pid: u32, reply: Box<dyn ReadReply>) {
        self.read_file(fh, offset, size, pid, false, reply)
    }

    /// [`FsState::read`] of a file opened (or set) with O_NONBLOCK when `nonblock`: a follow
    /// read at the log end fails with EAGAIN instead of waiting, as poll's contract implies.
    pub fn read_file(
        &self,
        fh: u64,
        offset: u64,
        size: u32,
        pid: u32,
        nonblock: bool,
        reply: Box<dyn ReadReply>,
    ) {
        let fail = |reply: Box<dyn ReadReply>, e: FsError| self.read_failed(fh, reply, e);
        let _g = match self.gate() {
            Ok(g) => g,
            Err(e) => return fail(reply, e),
        };
        let of = match self.handle(fh) {
            Ok(of) => of,
            Err(e) => return fail(reply, e),
        };
        let read = Read {
            fh,
            offset,
            size,
            pid,
            nonblock,
        };
        self.read_open(&of, read, reply);
    }

    /// A read kept at the log end (`follow.rs`), read again now: straight to its open file,
    /// which a release would have answered already (EBADF if it is another file now).
    pub(super) fn read_parked(&self, p: follow::Parked) {
        let fail = |reply: Box<dyn ReadReply>, e: FsError| self.read_failed(p.fh, reply, e);
        let _g = match self.gate() {
            Ok(g) => g,
            Err(e) => return fail(p.reply, e),
        };
        let open = self
            .handles
            .guard()
            .get(&p.fh)
            .is_some_and(|of| Arc::ptr_eq(of, &p.file));
        if !open {
            let why = format!("unknown file handle {}", p.fh);
            return fail(p.reply, FsError::Tree(libc::EBADF, why));
        }
        let read = Read {
            fh: p.fh,
            offset: p.offset,
            size: p.size,
            pid: p.pid,
            nonblock: false,
        };
        self.read_open(&p.file, read, p.reply);
    }

    /// A read of open file `of`: one match over the handle kinds under one lock of the
    /// handle, so that a read either answers or parks its reply, decided where it read.
    fn read_open(&self, of: &Arc<super::OpenFile>, r: Read, reply: Box<dyn ReadReply>) {
        let Read {
            fh,
            offset,
            size,
            nonblock,
            ..
        } = r;
        let fail = |reply: Box<dyn ReadReply>, e: FsError| self.read_failed(fh, reply, e);
        let live = of.live();
        let mut h = of.handle.guard();
        let follow = h.is_follow();
        let _live = match live {
            Ok(l) => l,
            // A follow file ends when its topic is deleted.
            Err(_) if follow => return reply.data(&[]),
            Err(e) => return fail(reply, e.into()),
        };
        if follow && self.ending.load(Ordering::Acquire) {
            return reply.data(&[]);
        }
        match &mut *h {
            Handle::Stream(s) => match s.read(offset, size as usize) {
                Ok(data) if !(data.is_empty() && follow) => reply.data(data),
                Ok(_) => {
                    let Some(at) = s.waits_at() else {
                        return reply.data(&[]);
                    };
                    if nonblock {
                        return reply.error(libc::EAGAIN);
                    }
                    let log = s.log().clone();
                    drop(h);
                    let waker = self.parking.park(of, r, reply);
                    log.wait_for(at, waker);
                }
                Err(e) => fail(reply, e.into()),
            },
            Handle::Group(_) => self.read_group(of, h, _live, r, reply),
            other => {
                if let Err(e) = answer_now(other, fh, offset, size as usize, reply) {
                    let (reply, e) = *e;
                    fail(reply, e);
                }
            }
        }
    }

    /// A read of a group's records (`h`, locked, of open file `of`): ESPIPE elsewhere than
    /// where the last read ended; at the end of a follow file, what was delivered is committed
    /// (by the group's reader) before it waits (EAGAIN with O_NONBLOCK).
    fn read_group(
        &self,
        of: &Arc<super::OpenFile>,
        mut h: std::sync::MutexGuard<'_, Handle>,
        live: Option<crate::storage::Live<'_>>,
        r: Read,
        reply: Box<dyn ReadReply>,
    ) {
        let fail = |reply: Box<dyn ReadReply>, e: FsError| self.read_failed(r.fh, reply, e);
        let Handle::Group(g) = &mut *h else {
            unreachable!("a group's records")
        };
        if !g.seek_to(r.offset) {
            let why = format!(
                "a read at {}, where the stream is at {}: a group's records are read in order",
                r.offset,
                g.position()
            );
            return fail(reply, FsError::Tree(libc::ESPIPE, why));
        }
        let waits = match g.read_or_wait(r.size as usize) {
            Ok(GroupRead::Data(data, regroup)) => {
                reply.data(data);
                if regroup {
                    let group = g.group().to_string();
                    drop(h);
                    drop(live);
                    self.regroup_of(of, &group);
                }
                return;
            }
            Ok(GroupRead::Wait(_)) if r.nonblock => return reply.error(libc::EAGAIN),
            Ok(GroupRead::Wait(waits)) => waits,
            Err(e) => return fail(reply, e.into()),
        };
        drop(h);
        let waker = self.parking.park(of, r, reply);
        for (log, at) in waits {
            log.wait_for(at, waker.clone());
        }
    }

    /// A failed read, logged with the path of its file.
    fn read_failed(&self, fh: u64, reply: Box<dyn ReadReply>, e: FsError) {
        let path = self.handles.guard().get(&fh).map(|of| of.ino);
        match path {
            Some(ino) => reply.error(report("read", &self.path(ino), e)),
            None => reply.error(report("read", &format!("(open file {fh})"), e)),
        }
    }

    /// `lseek(SEEK_DATA)` / `lseek(SEEK_HOLE)` of an open file (the kernel answers the other
    /// whences itself). A segment file answers from its real file, so the preallocated, sparse
    /// indexes keep their holes through `tar --sparse` and `cp --sparse`; any other file is
    /// data up to its size, as the kernel answers for a filesystem that knows no holes. ENXIO
    /// at or past the end, as lseek(2) says.
    pub fn lseek(&self, ino: u64, fh: u64, offset: i64, whence: i32, pid: u32) -> FsResult<i64> {
        {
            let _g = self.gate()?;
            let of = self.handle(fh)?;
            let segment = match &*of.handle.guard() {
                Handle::Segment(f) => Some(f.clone()),
                _ => None,
            };
            if let Some(f) = segment {
                return Ok(crate::os::stat::seek_data_or_hole(&f, offset, whence)?);
            }
        }
        let size = i64::try_from(self.getattr(ino, Some(fh), pid)?.1.size).unwrap_or(i64::MAX);
        match whence {
            _ if offset < 0 => Err(FsError::Tree(libc::ENXIO, "a negative offset".into())),
            _ if offset >= size => Err(FsError::Tree(
                libc::ENXIO,
                format!("offset {offset} is at or past the end ({size})"),
            )),
            libc::SEEK_DATA => Ok(offset),
            libc::SEEK_HOLE => Ok(size),
            _ => Err(FsError::Tree(libc::EINVAL, format!("whence {whence}"))),
        }
    }

    /// ioctl(2) `cmd` on `fh`: as the view that opened it answers (a group's record file,
    /// read a line at a time, answers the terminal's: see `groups::terminal_ioctl`);
    /// anything else: ENOTTY.
    pub fn ioctl(&self, fh: u64, cmd: u32) -> FsResult<()> {
        let answer = self
            .handle(fh)
            .ok()
            .and_then(|of| of.view.ioctl(&of.handle.guard(), cmd));
        match answer {
            Some(r) => r,
            None => Err(FsError::Tree(
                libc::ENOTTY,
                format!("ioctl {cmd:#x}: not a terminal"),
            )),
        }
    }

    /// `poll`: whether a read of `fh` would answer at once. When it would wait, `notify` is
    /// called once it would not (a record arrived, the topic went). A follow file readable
    /// now calls `notify` when the next record arrives: an edge-triggered epoll asks again
    /// only when notified, as a pipe wakes its readers at each write.
    pub fn poll(&self, fh: u64, notify: Box<dyn FnOnce() + Send>) -> FsResult<bool> {
        let _g = self.gate()?;
        let of = self.handle(fh)?;
        let Ok(_live) = of.live() else {
            return Ok(true);
        };
        let mut h = of.handle.guard();
        let (readable, waits) = match &mut *h {
            Handle::Stream(s) if !s.readable_now() => {
                (false, s.waits_at().map(|at| vec![(s.log().clone(), at)]))
            }
            Handle::Stream(s) if s.is_follow() => {
                let log = s.log().clone();
                let end = log.log_end_offset();
                (true, Some(vec![(log, end)]))
            }
            Handle::Group(g) if !g.readable_now() => {
                // The reader is about to wait: what it was delivered is committed, as before
                // a follow read waits.
                if let Err(e) = g.commit() {
                    log::error!("poll of open file {fh}: commit before waiting: {e}");
                }
                (false, g.waits_at())
            }
            Handle::Group(g) if g.is_follow() => (true, Some(g.log_ends())),
            _ => (true, None),
        };
        let Some(waits) = waits else {
            return Ok(true);
        };
        let generation = of.poll_generation.fetch_add(1, Ordering::AcqRel) + 1;
        let waker = Arc::new(follow::PollWaker {
            notify: Mutex::new(Some(notify)),
            generation,
            current: of.poll_generation.clone(),
        });
        drop(h);
        *of.poll_waker.guard() = Some(waker.clone());
        for (log, at) in waits {
            log.wait_for(at, waker.clone());
        }
        Ok(readable)
    }

    /// Every second, from the follow thread: the periodic commit of every follow group
    /// reader, also those that do not read now, and a rebalance where a held partition was
    /// given away; whole-topic follow reads take the partitions added to their topic, and a
    /// read of one that waits is answered again (with no lock held: a read takes them).
    pub(super) fn tend_group_readers(&self) {
        let grown: Vec<u64> = {
            let Ok(_g) = self.gate() else {
                return;
            };
            let open: Vec<(u64, Arc<super::OpenFile>)> = self
                .handles
                .guard()
                .iter()
                .map(|(fh, of)| (*fh, of.clone()))
                .collect();
            let mut grown = Vec::new();
            for (fh, of) in open {
                let Ok(live) = of.live() else { continue };
                let mut h = of.handle.guard();
                let Handle::Group(g) = &mut *h else { continue };
                if self.take_new_partitions(fh, &of, g) {
                    grown.push(fh);
                }
                if g.tend() {
                    let group = g.group().to_string();
                    drop(h);
                    drop(live);
                    self.regroup_of(&of, &group);
                }
            }
            grown
        };
        self.resume_readers(&grown);
    }

    /// A whole-topic follow read `g` (open file `fh`) takes the partitions added to its
    /// topic: whether it took any.
    fn take_new_partitions(&self, fh: u64, of: &super::OpenFile, g: &mut GroupHandle) -> bool {
        let Some(topic) = of.topic.as_ref().filter(|_| g.is_whole_topic_follow()) else {
            return false;
        };
        // The storage's answer for the topic carries its partition count now (in remote
        // mode, from the cluster's metadata).
        let name = super::TopicName::new(topic.name(), topic.incarnation());
        if self.topic(&name).is_err() {
            return false;
        }
        match g.take_new_partitions() {
            Ok(grown) => {
                if grown {
                    log::debug!("open file {fh}: reads the partitions added to its topic");
                }
                grown
            }
            Err(e) => {
                log::error!("open file {fh}: the topic's new partitions: {e}");
                false
            }
        }
    }

    /// The open files `fhs` read other partitions now: their waiting reads are answered
    /// again, and their pollers are told (the kernel polls again, over the new partitions).
    pub(super) fn resume_readers(&self, fhs: &[u64]) {
        for &fh in fhs {
            let waker = self
                .handles
                .guard()
                .get(&fh)
                .and_then(|of| of.poll_waker.guard().take());
            if let Some(w) = waker {
                crate::base::Waker::wake(&*w);
            }
            for p in self.parking.take_of(fh) {
                self.read_parked(p);
            }
        }
    }

    /// How many reads wait for records.
    #[cfg(test)]
    pub fn waiting_reads(&self) -> usize {
        self.parking.waiting()
    }

    /// Opens a record file of `group` as reader `fh`: the group's membership checks who else
    /// reads and gives it its partitions; `register` makes the handle an open file before
    /// the group's readers are unlocked (see [`Membership::join`]).
    pub(super) fn join_group<R>(
        &self,
        topic: &Arc<dyn TopicStore>,
        group: &str,
        (follow, format): (bool, Format),
        fh: u64,
        register: impl FnOnce(GroupHandle) -> R,
    ) -> FsResult<R> {
        let join = Join {
            topic,
            group,
            follow,
            format,
            id: fh,
            internal: self.storage.is_internal(topic.name()),
        };
        Ok(self.members.join(self, &join, register)?)
    }

    /// Reader `fh` of `group` leaves it (once): the others take over its partitions.
    /// `next_start`: where the group's next reader starts its round robin.
    pub(super) fn leave(&self, of: &OpenFile, group: &str, fh: u64, next_start: Option<u32>) {
        if let Some(topic) = &of.topic {
            self.members.leave(self, topic, group, fh, next_start);
        }
    }

    /// A reader of `group` gave away a partition it held: the group is rebalanced.
    pub(super) fn regroup_of(&self, of: &OpenFile, group: &str) {
        if let Some(topic) = &of.topic {
            self.members.regroup(self, topic, group);
        }
    }

    /// Whether `group` of `t` has a reader.
    pub(super) fn group_busy(&self, t: &TopicName, group: &str) -> bool {
        self.members.busy(t, t.incarnation(), group)
    }
}

/// A read not answered: its reply, given back with the error to answer.
type Unanswered = Box<(Box<dyn ReadReply>, FsError)>;

/// The read of a file that answers at once from what it holds (not a stream, a group's
/// records or `@log`); a failure gives the reply back with its error.
fn answer_now(
    h: &mut Handle,
    fh: u64,
    offset: u64,
    size: usize,
    reply: Box<dyn ReadReply>,
) -> Result<(), Unanswered> {
    let failed = |reply, e: FsError| Err(Box::new((reply, e)));
    match h {
        // A view's file (`@log` too: a read at its end ends, `tail -f` polls its length).
        Handle::View(v) => match v.read(offset, size) {
            Ok(data) => reply.data(&data),
            Err(e) => return failed(reply, e.into()),
        },
        Handle::Text(t) => reply.data(t.read(offset, size)),
        Handle::Segment(f) => match handle::read_file_at(f, offset, size) {
            Ok(data) => {
                // Never reached by an open file the kernel reads itself (passthrough).
                log::debug!(
                    "read of open file {fh} (a segment file) served: {} bytes at {offset}",
                    data.len()
                );
                reply.data(&data)
            }
            Err(e) => return failed(reply, e.into()),
        },
        // An append file reads as empty (a tree walk copies it as an empty file).
        Handle::Append(_) => reply.data(&[]),
        Handle::Stream(_) | Handle::Group(_) => {
            unreachable!("streams and group records are answered by read_file")
        }
    }
    Ok(())
}

impl Readers for FsState {
    fn membership(&self) -> &Membership {
        &self.members
    }

    fn with_reader(&self, id: u64, f: &mut dyn FnMut(&mut GroupHandle)) -> bool {
        let Some(of) = self.handles.guard().get(&id).cloned() else {
            return false;
        };
        let mut h = of.handle.guard();
        let Handle::Group(g) = &mut *h else {
            return false;
        };
        f(g);
        true
    }

    fn topic(&self, name: &str, incarnation: u64) -> Option<Arc<dyn TopicStore>> {
        FsState::topic(self, &TopicName::new(name, incarnation)).ok()
    }

    fn resume(&self, ids: &[u64]) {
        self.resume_readers(ids);
    }
}

/// ioctl(2) `cmd` on open file `h`: answered (with no data) only by a file that hands out
/// one line a read, as a terminal in canonical mode does (a group's record file that commits
/// what it delivers): `isatty` (TCGETS) succeeds, so programs that read a terminal line by
/// line (mawk) read it so and use every line they take; setting the terminal's modes (TCSETS,
/// TCSETSW, TCSETSF: bash's `read -n`, `read -s`) succeeds and changes nothing, as the line
/// discipline is the file's own. None for anything else (ENOTTY).
pub(super) fn terminal_ioctl(h: &Handle, cmd: u32) -> Mine<()> {
    let terminal = [libc::TCGETS, libc::TCSETS, libc::TCSETSW, libc::TCSETSF];
    let by_line = matches!(h, Handle::Group(g) if g.reads_by_line());
    (by_line && terminal.contains(&u64::from(cmd))).then_some(Ok(()))
}

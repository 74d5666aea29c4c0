//! An open `by-offset/<N>`, `by-time/<T>` or `follow/<N>` file (`.jsonl` too): the records
//! from the start, each value followed by `\n` (or one JSON object per line), produced as the
//! reader asks for them.
//!
//! `by-offset` and `by-time` end at the log end as it was at open: that is where the first
//! EOF is. After an EOF, a later read at the end goes on with the records appended since, as
//! a growing file does (`cat` stops at the first EOF, `tail -f` follows); a backward seek
//! rereads up to the end reached so far. A `follow` file never ends:
//! at the log end a read waits (the caller parks it, see [`StreamHandle::waits_at`]).

use std::sync::Arc;

use crate::error::{Error, Result};
use crate::fs::inode::{Format, LookupBy, LookupName};
use crate::render::{compact, format_record};
use crate::schemas::Schemas;
use crate::storage::{PartitionStore, RecordStream, TopicStore, measure_records};

use super::ahead::{self, Ahead};
use super::measure::{KEPT_BEHIND, Measure, SEEK_AFTER};
use super::start::{Limit, open_at, resolve_limit};
use super::windows::{Window, Windows};

/// An open stream file: its cursor, which a read-ahead thread holds while it prepares the
/// next reply (see [`StreamHandle::read`]).
pub struct StreamHandle {
    cursor: Option<Box<Cursor>>,
    ahead: Option<Ahead<Box<Cursor>>>,
    /// The replies the read-ahead prepared and the reader did not take yet: they come
    /// before the cursor's bytes.
    windows: Arc<Windows>,
    /// The bytes of the last reply, once they were taken out of the cursor's buffer for a
    /// read-ahead, or the window it was.
    reply: Window,
    /// Where the last read ended: a read starting there is sequential.
    last_end: u64,
    /// Consecutive sequential reads of at least [`READ_AHEAD_MIN`] bytes.
    sequential: u32,
    follow: bool,
    /// For a file the kernel caches (see [`StreamHandle::cached`]): where its bytes are.
    cached: Option<Arc<dyn Measure>>,
    /// A cached file's first offset and the end it has until its reader reached it (the
    /// log end at open, or the range's end), with its length once counted.
    open_range: (i64, Option<i64>),
    open_len: Option<u64>,
    /// The cached file's reader got the bytes up to its open's length, or the kernel asked
    /// its size there once (see [`StreamHandle::open_cap`]).
    reached: bool,
    /// The furthest byte a read was answered to.
    read_to: u64,
    log: Arc<dyn PartitionStore>,
    /// The topic a read-ahead holds live (see [`StreamHandle::kept_live_by`]).
    topic: Option<Arc<dyn TopicStore>>,
}

/// Reads ahead from the second of consecutive sequential reads of at least this size (a
/// lookup such as `head -n 1` reads little and stops: it gets no read-ahead).
const READ_AHEAD_MIN: usize = 64 * 1024;

/// The first read of an open stream answers at most this much when it asks for more than
/// [`MAP_READ_MAX`]: a buffered reader asks for `st_blksize` (1 MiB, [`crate::fs::IO_SIZE`])
/// at its first `readline` (the kernel may split it where the buffer is not page-aligned,
/// into requests still far over that), and a lookup must not decode (nor copy) a mebibyte of
/// records for one line. Smaller reads are answered in full (`tail` and `tar` read 8 or 10
/// KiB at a time and take a short read for the end), and so are the kernel's reads for a
/// memory map, to which a short answer is the end of the file: a map past it would die of
/// SIGBUS. The reads after the first are filled to the size asked.
pub const FIRST_READ_MAX: usize = 32 * 1024;

/// The largest read the kernel makes for a memory map: its read-ahead, which the mount sets
/// to this (`max_readahead` at INIT; the kernel's own default).
pub const MAP_READ_MAX: usize = 128 * 1024;

/// Whether a stream's first read of `size` bytes is answered with at most
/// [`FIRST_READ_MAX`]: a buffered reader's first, never a memory map's.
pub fn first_read_capped(size: usize) -> bool {
    size > MAP_READ_MAX
}

/// Where a stream is and the bytes it prepared.
struct Cursor {
    /// The topic's name (JSON lines name it).
    topic: Arc<str>,
    log: Arc<dyn PartitionStore>,
    name: LookupName,
    reader: Box<dyn RecordStream>,
    /// The first offset of the stream.
    start: i64,
    /// Records at or past this offset are not served (yet): the log end at open, moved on
    /// when the stream grows, never past the range's end.
    end: i64,
    /// Where a range ends (None: it has no end).
    limit: Option<Limit>,
    /// The offset after the last record formatted.
    next: i64,
    out: Vec<u8>,
    out_pos: usize,
    /// File offset of `out[out_pos]`.
    pos: u64,
    /// The reader has nothing more.
    eof: bool,
    /// An EOF was returned: the stream may grow from now on.
    eof_served: bool,
    /// An error met after some records were already buffered: those are served first, the
    /// error is returned by the read that would go past them (as a disk read fails only
    /// where the bad sector is).
    pending: Option<Error>,
    /// The stream's length up to an offset: (offset, bytes), for `fstat`.
    counted: (i64, u64),
    /// The topic's schemas, when its keys and values are decoded: its records are then
    /// formatted one by one (and counted so), never copied as lines.
    schemas: Option<Arc<Schemas>>,
    /// For a file the kernel caches (see [`StreamHandle::cached`]): the partition's
    /// generation at its open, and where the file's bytes are.
    cached: Option<(u64, u64, Arc<dyn Measure>)>,
}

impl StreamHandle {
    /// Opens the stream a lookup name asks for in `topic`'s partition `log` (ENOENT-class
    /// errors when it does not open); `schemas` decode what it shows.
    pub fn open(
        topic: &str,
        log: Arc<dyn PartitionStore>,
        name: LookupName,
        schemas: Option<Arc<Schemas>>,
    ) -> Result<StreamHandle> {
        let mut cursor = Cursor::open(Arc::from(topic), log.clone(), name)?;
        cursor.schemas = schemas;
        let open_range = (cursor.start, Some(cursor.end.max(cursor.start)));
        Ok(StreamHandle {
            follow: cursor.is_follow(),
            cursor: Some(Box::new(cursor)),
            ahead: None,
            windows: Arc::default(),
            reply: Window::default(),
            last_end: u64::MAX,
            sequential: 0,
            cached: None,
            open_range,
            open_len: None,
            reached: false,
            read_to: 0,
            log,
            topic: None,
        })
    }

    /// With `measure`, a file the kernel caches (`fs/cache.rs`): reads are answered in full,
    /// from what the log holds at the read, at any byte (from the place `measure` finds).
    pub fn cached(mut self, measure: Option<Arc<dyn Measure>>) -> StreamHandle {
        if let Some(c) = &mut self.cursor {
            c.cached = measure
                .clone()
                .map(|m| (c.log.generation(), c.log.rewrites(), m));
        }
        self.cached = measure;
        self
    }

    pub fn is_cached(&self) -> bool {
        self.cached.is_some()
    }

    /// The size a cached file shows at the kernel's GETATTR for a read past the `shown` size:
    /// its length at open up to its first EOF (the second ask at that length, or one after
    /// the reads got every byte), None from then on (it grows, as streams do after an EOF).
    pub fn open_cap(&mut self, shown: u64) -> Result<Option<u64>> {
        let Some(len) = self.open_len()? else {
            return Ok(None);
        };
        if shown >= len {
            if self.reached || self.read_to >= len {
                self.open_range.1 = None;
                return Ok(Some(shown));
            }
            self.reached = true;
        }
        Ok(Some(len.max(shown)))
    }

    /// A cached file's length at open, until its first EOF (None: from then on).
    fn open_len(&mut self) -> Result<Option<u64>> {
        let (start, Some(end)) = self.open_range else {
            return Ok(None);
        };
        let Some(measure) = &self.cached else {
            return Ok(None);
        };
        if self.open_len.is_none() {
            match measure.len(start, end)? {
                Some(len) => self.open_len = Some(len),
                None => self.open_range.1 = None,
            }
        }
        Ok(self.open_len)
    }

    pub fn is_follow(&self) -> bool {
        self.follow
    }

    /// The partition it reads.
    pub fn log(&self) -> &Arc<dyn PartitionStore> {
        &self.log
    }

    /// For a follow stream with nothing to serve: the offset whose arrival it waits for.
    pub fn waits_at(&self) -> Option<i64> {
        // A cursor away on a read-ahead is never a follow stream's.
        self.cursor.as_ref().and_then(|c| c.waits_at())
    }

    /// Whether a read would return at once (data, an error or an EOF).
    pub fn readable_now(&self) -> bool {
        self.cursor.as_ref().is_none_or(|c| c.readable_now())
    }

    /// Makes read-aheads hold `topic` live while they read (deletion waits for them).
    pub fn kept_live_by(mut self, topic: Arc<dyn TopicStore>) -> StreamHandle {
        self.topic = Some(topic);
        self
    }

    /// The cursor, back from its read-ahead if it is away, with the windows it prepared
    /// and the reader did not take put back in front of its bytes.
    fn cursor(&mut self) -> Result<&mut Cursor> {
        if let Some(ahead) = self.ahead.take() {
            self.windows.stop();
            self.cursor = ahead.wait();
            if self.cursor.is_none() {
                log::error!(
                    "partition {}: the read-ahead of a stream failed (a panic); its reads fail with EIO until it is opened again",
                    self.log.partition()
                );
            }
        }
        if let Some(c) = &mut self.cursor
            && !self.windows.is_empty()
        {
            c.put_back(self.windows.drain());
        }
        self.cursor.as_deref_mut().ok_or_else(|| {
            Error::from(std::io::Error::other(
                "the stream's read-ahead failed: the file must be opened again",
            ))
        })
    }

    /// Bytes at `offset`, at most `size`. Sequential reads continue from the cursor. An
    /// empty answer is an EOF, or, for a follow stream, "nothing yet" ([`Self::waits_at`]).
    ///
    /// From the second sequential read on, the answer's bytes are moved out of the cursor,
    /// and the cursor goes to a read-ahead thread to prepare the next `size` bytes while the
    /// caller hands these to the reader.
    pub fn read(&mut self, offset: u64, size: usize) -> Result<&[u8]> {
        let size = match self.last_end {
            u64::MAX if first_read_capped(size) && !self.is_cached() => FIRST_READ_MAX,
            _ => size,
        };
        let follow = self.follow;
        let sequential = offset == self.last_end && size >= READ_AHEAD_MIN;
        self.sequential = if sequential { self.sequential + 1 } else { 0 };
        // A cached file is read ahead by the kernel (several reads under way at once).
        let read_ahead = self.sequential > 0 && !follow && !self.is_cached();
        if read_ahead && let Some(w) = self.window(offset, size) {
            self.last_end = offset + w.len as u64;
            self.read_to = self.read_to.max(self.last_end);
            let sent = std::mem::replace(&mut self.reply, w);
            self.windows.give_back(sent.buf);
            self.keep_reading_ahead(size);
            return Ok(self.reply.bytes());
        }
        let cursor = self.cursor()?;
        let (start, n) = cursor.read(offset, size)?;
        let end = offset + n as u64;
        self.last_end = end;
        self.read_to = self.read_to.max(end);
        let mut cursor = self.cursor.take().expect("the cursor is here");
        // Only when the next read would decode (what is left is less than a reply: the copy
        // below is never more than one reply, whatever the batches' size).
        if !(read_ahead && n == size && cursor.buffered() < size && cursor.more_to_read()) {
            let cursor = self.cursor.insert(cursor);
            return Ok(&cursor.out[start..start + n]);
        }
        // The reply keeps the buffer; the cursor goes on with the bytes after it.
        let sent = std::mem::take(&mut self.reply);
        self.windows.give_back(sent.buf);
        self.reply = cursor.take_window(start, n, self.windows.buffer());
        self.read_ahead(cursor, size);
        Ok(self.reply.bytes())
    }

    /// The window prepared for a read of `size` at `offset`, if there is one (waiting for
    /// the read-ahead preparing it).
    fn window(&mut self, offset: u64, size: usize) -> Option<Window> {
        let ahead = self.ahead.as_ref();
        self.windows
            .take(offset, size, || ahead.is_none_or(|a| a.started()))
    }

    /// After a window was taken: a read-ahead that stopped with windows prepared (and could
    /// go on) is started again.
    fn keep_reading_ahead(&mut self, size: usize) {
        if self.windows.is_running() {
            return;
        }
        if let Some(ahead) = self.ahead.take() {
            self.cursor = ahead.wait();
        }
        if let Some(cursor) = self.cursor.take_if(|c| c.more_to_read()) {
            self.read_ahead(cursor, size);
        }
    }

    /// Hands `cursor` to a read-ahead that prepares windows of `size` bytes.
    fn read_ahead(&mut self, mut cursor: Box<Cursor>, size: usize) {
        let topic = self.topic.clone();
        let windows = self.windows.clone();
        windows.start();
        self.ahead = Some(ahead::spawn(move || {
            let _running = windows.running();
            while windows.wants_more() {
                // Deletion waits for a read-ahead as for any request; a deleted topic's
                // stream prepares nothing (its next read fails, or ends a follow file).
                let Ok(_live) = topic.as_deref().map(|t| t.live()).transpose() else {
                    break;
                };
                cursor.fill_ahead(size);
                // The end, or an error: the reader's own read serves what is left.
                if cursor.buffered() < size {
                    break;
                }
                let (start, pos) = (cursor.out_pos, cursor.pos);
                cursor.out_pos += size;
                cursor.pos += size as u64;
                windows.push(cursor.take_window(start, size, windows.buffer()));
                debug_assert_eq!(pos + size as u64, cursor.pos);
            }
            cursor
        }));
    }

    /// The stream's length so far, as `fstat` of the open file shows it (see
    /// [`Cursor::length`]).
    pub fn length(&mut self) -> Result<u64> {
        self.cursor()?.length()
    }
}

impl Drop for StreamHandle {
    /// A read-ahead still preparing windows stops after the one under way.
    fn drop(&mut self) {
        self.windows.stop();
    }
}

impl Cursor {
    fn open(topic: Arc<str>, log: Arc<dyn PartitionStore>, name: LookupName) -> Result<Cursor> {
        let now = crate::util::clock::now_ms();
        let reader = open_at(&*log, name.addr.start, now)?;
        let start = reader.start_offset();
        let limit = resolve_limit(&*log, &name.addr, start, now)?;
        Ok(Cursor {
            topic,
            end: Limit::cap(limit, reader.end_offset()),
            limit,
            log,
            name,
            reader,
            start,
            next: start,
            out: Vec::new(),
            out_pos: 0,
            pos: 0,
            eof: false,
            eof_served: false,
            pending: None,
            counted: (start, 0),
            schemas: None,
            cached: None,
        })
    }

    fn is_follow(&self) -> bool {
        self.name.by == LookupBy::Follow
    }

    fn waits_at(&self) -> Option<i64> {
        (self.is_follow() && self.buffered() == 0 && self.pending.is_none()).then_some(self.next)
    }

    fn readable_now(&self) -> bool {
        !self.is_follow()
            || self.buffered() > 0
            || self.pending.is_some()
            || self.log.log_end_offset() > self.next
    }

    /// Bytes at `offset`, at most `size`, as (start, length) in `out`.
    fn read(&mut self, offset: u64, size: usize) -> Result<(usize, usize)> {
        if self.cached.is_some() && offset < self.pos && self.pos - offset <= self.out_pos as u64 {
            // The kernel's reads of a cached file come out of order: the bytes behind the
            // cursor are kept (see `fill_until`).
            let back = (self.pos - offset) as usize;
            self.out_pos -= back;
            self.pos = offset;
        } else if self.cached.is_some() && (offset < self.pos || offset > self.pos + SEEK_AFTER) {
            self.seek(offset)?;
        } else if offset < self.pos {
            self.restart()?;
        }
        // Skip forward (a seek past the cursor).
        while self.pos < offset {
            if self.buffered() == 0 && !self.fill(64 * 1024)? {
                if self.cached.is_some()
                    && let Some(e) = self.pending.take()
                {
                    return Err(e);
                }
                self.eof_served = true;
                return Ok((0, 0));
            }
            let n = (self.buffered() as u64).min(offset - self.pos) as usize;
            self.out_pos += n;
            self.pos += n as u64;
        }
        if self.buffered() < size {
            // A first read (a lookup's) decodes the lines it asks for, not the rest of their
            // batch: a batch can hold thousands of short records.
            let first = self.pos == 0 && self.out.is_empty() && size <= FIRST_READ_MAX;
            self.fill_until(size, first)?;
        }
        let n = self.buffered().min(size);
        // A cached file's short answer is its end to the kernel, which fills the rest of the
        // pages with zeros: an error met before the end fails the whole read instead.
        if self.cached.is_some()
            && n < size
            && let Some(e) = self.pending.take()
        {
            return Err(e);
        }
        if n == 0 {
            self.eof_served = true;
        }
        let start = self.out_pos;
        self.out_pos += n;
        self.pos += n as u64;
        Ok((start, n))
    }

    /// Whether a read-ahead could prepare anything: the stream has not ended (nor been
    /// read to its end, after which it grows) and met no error.
    fn more_to_read(&self) -> bool {
        !self.eof && !self.eof_served && self.pending.is_none()
    }

    /// Prepares `size` bytes past those buffered (on a read-ahead thread). An error is kept
    /// for the read that reaches it.
    fn fill_ahead(&mut self, size: usize) {
        if let Err(e) = self.fill(size) {
            self.pending.get_or_insert(e);
        }
    }

    fn buffered(&self) -> usize {
        self.out.len() - self.out_pos
    }

    /// The reply `out[start..start + n]` (read already: `out_pos` is past it), which keeps
    /// the buffer; the cursor goes on with the bytes after it, in `buf`.
    fn take_window(&mut self, start: usize, n: usize, mut buf: Vec<u8>) -> Window {
        debug_assert_eq!(self.out_pos, start + n);
        buf.clear();
        // Room for the next reply and a batch past it from the start: a buffer grown by
        // doubling copies itself at each step.
        buf.reserve(2 * n);
        buf.extend_from_slice(&self.out[start + n..]);
        let taken = std::mem::replace(&mut self.out, buf);
        self.out_pos = 0;
        Window {
            pos: self.pos - n as u64,
            buf: taken,
            start,
            len: n,
        }
    }

    /// Windows taken out and not served go back in front of the bytes buffered.
    fn put_back(&mut self, windows: std::collections::VecDeque<Window>) {
        let Some(first) = windows.front() else {
            return;
        };
        let pos = first.pos;
        let mut out =
            Vec::with_capacity(windows.iter().map(|w| w.len).sum::<usize>() + self.buffered());
        for w in &windows {
            debug_assert_eq!(pos + out.len() as u64, w.pos);
            out.extend_from_slice(w.bytes());
        }
        out.extend_from_slice(&self.out[self.out_pos..]);
        self.out = out;
        self.out_pos = 0;
        self.pos = pos;
    }

    /// Whether the stream goes on past the end it had: always for follow and cached files,
    /// after an EOF for the others.
    fn grows(&self) -> bool {
        self.is_follow() || self.cached.is_some() || self.eof_served
    }

    /// Moves a cached file's cursor near byte `offset`: to the batch boundary the log's
    /// kept counts find at or before it (the rest is skipped by reading), or to the start.
    fn seek(&mut self, offset: u64) -> Result<()> {
        // The log's counts tell where bytes are only while its records are the ones the file
        // showed: after a rewrite, the cursor reads forward on the segments it started on,
        // and cannot go back.
        let Some((generation, _, measure)) = &self.cached else {
            return Ok(());
        };
        if *generation != self.log.generation() {
            if offset >= self.pos {
                return Ok(());
            }
            return Err(self.rewritten(&format!("again at byte {offset}, behind the bytes kept")));
        }
        let Some((at, bytes)) = measure.seek(self.start, offset)? else {
            return if offset < self.pos {
                self.restart()
            } else {
                Ok(())
            };
        };
        // Forward only when it saves reading (the bytes buffered reach no further).
        if offset >= self.pos && bytes <= self.pos + self.buffered() as u64 {
            return Ok(());
        }
        if at <= self.start {
            return self.restart();
        }
        self.reader = self.log.read_from_offset(at)?;
        self.end = Limit::cap(self.limit, self.reader.end_offset());
        self.next = at;
        self.out.clear();
        self.out_pos = 0;
        self.pos = bytes;
        self.eof = false;
        self.pending = None;
        Ok(())
    }

    /// A cached file read `where` after its log was rewritten (EIO).
    fn rewritten(&self, at: &str) -> Error {
        let p = self.log.partition();
        let e = format!("partition {p}: a cached file read {at} after the log was rewritten");
        Error::from(std::io::Error::other(e + ": open it again"))
    }

    /// Opens a new reader from `next` when the log has grown past the stream's end.
    fn grow(&mut self) -> Result<bool> {
        if let Some(Limit::Time(ts)) = self.limit
            && let Some(o) = self.log.offset_for_time(ts)?
        {
            self.limit = Some(Limit::Offset(o.max(self.start)));
        }
        let (start, end) = (self.log.log_start_offset(), self.log.log_end_offset());
        if Limit::cap(self.limit, end) <= self.next {
            return Ok(false);
        }
        // A cached file grows only with the records its size counted: once the cleaner
        // rewrote the log, or retention took the records past the cursor, those may be
        // others or gone (its reads fail there, never with other bytes than it promised).
        if let Some((_, rewrites, _)) = &self.cached
            && (*rewrites != self.log.rewrites() || self.next < start)
        {
            return Err(self.rewritten(&format!("past offset {}", self.next)));
        }
        if self.next < start {
            log::warn!(
                "a stream at offset {} lost records {}..{start} to retention; going on from {start}",
                self.next,
                self.next
            );
            self.next = start;
        }
        self.reader = self.log.read_from_offset(self.next)?;
        self.end = Limit::cap(self.limit, self.reader.end_offset());
        self.eof = false;
        Ok(true)
    }

    /// Decodes batches until `want` bytes are buffered or the end is reached. Returns whether
    /// anything is buffered.
    fn fill(&mut self, want: usize) -> Result<bool> {
        self.fill_until(want, false)
    }

    /// [`Self::fill`]; with `inside`, lines are decoded until `want` bytes are buffered even
    /// inside a batch (the rest of that batch is decoded by the next fill, which reads it
    /// again from its start).
    fn fill_until(&mut self, want: usize, inside: bool) -> Result<bool> {
        match self.cached {
            // A cached file keeps the last bytes read behind the cursor, for the kernel's
            // reads that come out of order.
            Some(_) if self.out_pos > 2 * KEPT_BEHIND => {
                let cut = self.out_pos - KEPT_BEHIND;
                self.out.drain(..cut);
                self.out_pos -= cut;
            }
            Some(_) => {}
            None => compact(&mut self.out, &mut self.out_pos),
        }
        let stop = match inside {
            true => self.out_pos + want,
            false => usize::MAX,
        };
        if self.buffered() == 0
            && let Some(e) = self.pending.take()
        {
            return Err(e);
        }
        let format = self.name.format;
        // Where the last growth began: one that read nothing there ends the fill.
        let mut grew_at = None;
        while self.pending.is_none() && self.buffered() < want {
            if self.eof {
                if grew_at == Some(self.next) || !(self.grows() && self.grow()?) {
                    break;
                }
                grew_at = Some(self.next);
            }
            let (out, end, next) = (&mut self.out, self.end, &mut self.next);
            let (topic, partition) = (&*self.topic, self.log.partition());
            let schemas = self.schemas.as_deref();
            let more = match format {
                Format::Lines | Format::Kv if schemas.is_none() => {
                    self.reader.next_lines_until(next, end, out, stop)
                }
                _ => self.reader.next_batch_meta(&mut |h, r| {
                    if r.offset >= end || r.offset < *next {
                        return;
                    }
                    format_record(format, topic, partition, h, r, out, schemas);
                    *next = r.offset + 1;
                }),
            };
            if more.is_ok() {
                // Past the batches read, control batches too: a stream ending in a
                // transaction marker must not reopen at it after its EOF.
                self.next = self.next.max(self.reader.passed().min(self.end));
            }
            match more {
                Ok(true) => {}
                Ok(false) => self.eof = true,
                Err(e) if self.out.len() > self.out_pos => {
                    self.pending = Some(e);
                    break;
                }
                Err(e) => return Err(e),
            }
        }
        Ok(self.buffered() > 0)
    }

    /// A backward seek: reopen at the start, up to the end the stream has reached (a
    /// by-offset or by-time stream grows again only after its next EOF).
    fn restart(&mut self) -> Result<()> {
        self.reader = self.log.read_from_offset(self.start)?;
        self.next = self.start;
        self.eof_served = false;
        self.out.clear();
        self.out_pos = 0;
        self.pos = 0;
        self.eof = false;
        self.pending = None;
        Ok(())
    }

    /// The stream's length so far, as `fstat` of the open file shows it to its reader (GNU
    /// `tail -f` reads when it grows): the bytes from the start up to the stream's end; once
    /// the reader has read all of those, up to the log end, and the stream then goes on to
    /// what it was shown. Each record is counted once.
    ///
    /// Where that length is not known without reading the records (see
    /// [`Cursor::counts_without_reading`]), a stdio open costs a lookup, not a read of the
    /// stream: before anything is read, the first read's bytes are prepared (as a lookup
    /// does), and the length is shown when they reach the stream's end, 0 otherwise (never
    /// a part of it, from which `tail -n` would go back; a program that finds no size reads
    /// to the EOF, as from a /proc file). Once reading, the bytes decoded so far; once read
    /// to its end, up to the log end as above, counting only the records appended.
    fn length(&mut self) -> Result<u64> {
        if !self.counts_without_reading() {
            if self.untouched()
                && let Err(e) = self.fill(FIRST_READ_MAX)
            {
                self.pending = Some(e);
            }
            let decoded = (self.next, self.pos + self.buffered() as u64);
            if decoded.0 > self.counted.0 {
                self.counted = decoded;
            }
            if self.is_follow() {
                return Ok(self.counted.1);
            }
            // Read to its end (`tail` reads a file's last bytes, not up to its EOF): from
            // here on the stream grows, counted below.
            let read_to_end = (self.eof || self.next >= self.end) && self.buffered() == 0;
            if !self.grows() && !read_to_end {
                return Ok(if self.pos == 0 && !self.eof {
                    0
                } else {
                    self.counted.1
                });
            }
        }
        self.count_first_batch();
        let (counted_to, at_end) = self.count_to(self.end)?;
        if counted_to <= self.end && !self.grows() && self.pos < at_end {
            return Ok(at_end);
        }
        let (_, now) = self.count_to(Limit::cap(self.limit, self.log.log_end_offset()))?;
        if now > at_end {
            self.eof_served = true;
        }
        Ok(now)
    }

    /// Whether the stream's length is found without reading its records: lines (not JSON
    /// lines nor decoded values, formatted to be measured) of a store that keeps line counts
    /// (a local log; the cluster keeps none).
    fn counts_without_reading(&self) -> bool {
        self.name.format != Format::Jsonl
            && self.schemas.is_none()
            && self.log.counts_without_reading()
    }

    /// Whether nothing of the stream was counted, decoded or met yet (a follow stream
    /// excepted, which is never measured ahead of its reader).
    fn untouched(&self) -> bool {
        self.counted == (self.start, 0)
            && self.pos == 0
            && self.out.is_empty()
            && !self.eof
            && self.pending.is_none()
            && !self.is_follow()
    }

    /// Before anything is counted or read (a stdio open's `fstat`, then its first read):
    /// where the log counts lines without reading from a batch boundary on, the first batch
    /// is decoded now, once for the count and for the read, and the count goes on from after
    /// it (counting from the start offset would read the records before it in its batch, and
    /// the read would decode that batch again). An error is kept for the read.
    fn count_first_batch(&mut self) {
        if !self.untouched() || !self.counts_without_reading() {
            return;
        }
        if let Err(e) = self.fill(1) {
            self.pending = Some(e);
            return;
        }
        if self.pending.is_none() {
            self.counted = (self.next, self.out.len() as u64);
        }
    }

    /// Extends the count of the stream's bytes to `limit`; returns (offset, bytes) counted.
    fn count_to(&mut self, limit: i64) -> Result<(i64, u64)> {
        let (from, mut bytes) = self.counted;
        if limit <= from {
            return Ok(self.counted);
        }
        let from = from.max(self.log.log_start_offset());
        bytes += match self.name.format {
            Format::Lines | Format::Kv if self.schemas.is_none() => {
                self.log.lines_len(from, limit)?
            }
            // JSON lines and decoded values are formatted to be counted.
            format => {
                let mut scratch = Vec::new();
                let mut reader = self.log.read_from_offset(from)?;
                measure_records(&mut *reader, from, limit, |h, r| {
                    scratch.clear();
                    format_record(
                        format,
                        &self.topic,
                        self.log.partition(),
                        h,
                        r,
                        &mut scratch,
                        self.schemas.as_deref(),
                    );
                    scratch.len() as u64
                })?
            }
        };
        self.counted = (limit, bytes);
        Ok(self.counted)
    }
}

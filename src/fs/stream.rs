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
use crate::fs::inode::{EARLIEST, Format, LATEST, LookupBy, LookupName};
use crate::jsonl;
use crate::record::{BatchHeader, Record};
use crate::storage::{PartitionStore, RecordStream};

pub struct StreamHandle {
    log: Arc<dyn PartitionStore>,
    name: LookupName,
    reader: Box<dyn RecordStream>,
    /// The first offset of the stream.
    start: i64,
    /// Records at or past this offset are not served (yet): the log end at open, moved on
    /// when the stream grows.
    end: i64,
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
}

/// One record as a stream shows it: `value\n`, or a JSON line (with `"partition"` first
/// when a file reads several partitions).
pub(super) fn format_record(
    format: Format,
    partition: Option<u32>,
    h: &BatchHeader,
    r: &Record<'_>,
    out: &mut Vec<u8>,
) {
    match format {
        Format::Lines => {
            out.extend_from_slice(r.value.unwrap_or_default());
            out.push(b'\n');
        }
        Format::Jsonl => jsonl::format_record_of(partition, r, h.timestamp_type(), out),
    }
}

/// How many bytes [`format_record`] makes of a record; a line is counted without copying it
/// (`fstat` of a stream counts the records up to its end: `cat` asks before it reads).
fn formatted_len(format: Format, h: &BatchHeader, r: &Record<'_>, scratch: &mut Vec<u8>) -> u64 {
    match format {
        Format::Lines => r.value.map_or(0, <[u8]>::len) as u64 + 1,
        Format::Jsonl => {
            scratch.clear();
            format_record(format, None, h, r, scratch);
            scratch.len() as u64
        }
    }
}

/// Drops the consumed front of a stream's buffer once it is half the buffer (moving the
/// unread tail on every refill copied the data a second time).
pub(super) fn compact(out: &mut Vec<u8>, out_pos: &mut usize) {
    if *out_pos > 0 && *out_pos * 2 >= out.len() {
        out.drain(..*out_pos);
        *out_pos = 0;
    }
}

impl StreamHandle {
    /// Opens the stream a lookup name asks for (ENOENT-class errors when it does not open).
    pub fn open(log: Arc<dyn PartitionStore>, name: LookupName) -> Result<StreamHandle> {
        let reader = match (name.by, name.start) {
            (LookupBy::Offset, n) => log.read_from_offset(n)?,
            (LookupBy::Time, ts) => log.read_from_time(ts)?,
            (LookupBy::Follow, EARLIEST) => log.read_from_offset(log.log_start_offset())?,
            (LookupBy::Follow, LATEST) => log.read_from_offset(log.log_end_offset())?,
            (LookupBy::Follow, n) => log.read_from_offset(n)?,
        };
        let start = reader.start_offset();
        Ok(StreamHandle {
            end: reader.end_offset(),
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
        })
    }

    pub fn is_follow(&self) -> bool {
        self.name.by == LookupBy::Follow
    }

    /// For a follow stream with nothing to serve: the offset whose arrival it waits for.
    pub fn waits_at(&self) -> Option<i64> {
        (self.is_follow() && self.buffered() == 0 && self.pending.is_none()).then_some(self.next)
    }

    /// Whether a read would return at once (data, an error or an EOF).
    pub fn readable_now(&self) -> bool {
        !self.is_follow()
            || self.buffered() > 0
            || self.pending.is_some()
            || self.log.log_end_offset() > self.next
    }

    /// The partition it reads.
    pub fn log(&self) -> &Arc<dyn PartitionStore> {
        &self.log
    }

    /// Bytes at `offset`, at most `size`. Sequential reads continue from the cursor. An
    /// empty answer is an EOF, or, for a follow stream, "nothing yet" ([`Self::waits_at`]).
    pub fn read(&mut self, offset: u64, size: usize) -> Result<&[u8]> {
        if offset < self.pos {
            self.restart()?;
        }
        // Skip forward (a seek past the cursor).
        while self.pos < offset {
            if self.buffered() == 0 && !self.fill(64 * 1024)? {
                self.eof_served = true;
                return Ok(&[]);
            }
            let n = (self.buffered() as u64).min(offset - self.pos) as usize;
            self.out_pos += n;
            self.pos += n as u64;
        }
        if self.buffered() < size {
            self.fill(size)?;
        }
        let n = self.buffered().min(size);
        if n == 0 {
            self.eof_served = true;
        }
        let start = self.out_pos;
        self.out_pos += n;
        self.pos += n as u64;
        Ok(&self.out[start..start + n])
    }

    fn buffered(&self) -> usize {
        self.out.len() - self.out_pos
    }

    /// Whether the stream goes on past the end it had: always for follow, after an EOF for
    /// the others.
    fn grows(&self) -> bool {
        self.is_follow() || self.eof_served
    }

    /// Opens a new reader from `next` when the log has grown past the stream's end.
    fn grow(&mut self) -> Result<bool> {
        let (start, end) = (self.log.log_start_offset(), self.log.log_end_offset());
        if end <= self.next {
            return Ok(false);
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
        self.end = self.reader.end_offset();
        self.eof = false;
        Ok(true)
    }

    /// Decodes batches until `want` bytes are buffered or the end is reached. Returns whether
    /// anything is buffered.
    fn fill(&mut self, want: usize) -> Result<bool> {
        compact(&mut self.out, &mut self.out_pos);
        if self.buffered() == 0
            && let Some(e) = self.pending.take()
        {
            return Err(e);
        }
        let format = self.name.format;
        while self.pending.is_none() && self.buffered() < want {
            if self.eof && !(self.grows() && self.grow()?) {
                break;
            }
            let (out, end, next) = (&mut self.out, self.end, &mut self.next);
            let more = match format {
                Format::Lines => self.reader.next_batch_lines(next, end, out),
                Format::Jsonl => self.reader.next_batch_meta(&mut |h, r| {
                    if r.offset >= end || r.offset < *next {
                        return;
                    }
                    format_record(format, None, h, r, out);
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
    pub fn length(&mut self) -> Result<u64> {
        let (counted_to, at_end) = self.count_to(self.end)?;
        if counted_to <= self.end && !self.grows() && self.pos < at_end {
            return Ok(at_end);
        }
        let (_, now) = self.count_to(self.log.log_end_offset())?;
        if now > at_end {
            self.eof_served = true;
        }
        Ok(now)
    }

    /// Extends the count of the stream's bytes to `limit`; returns (offset, bytes) counted.
    fn count_to(&mut self, limit: i64) -> Result<(i64, u64)> {
        let (from, mut bytes) = self.counted;
        if limit <= from {
            return Ok(self.counted);
        }
        let from = from.max(self.log.log_start_offset());
        let mut reader = self.log.read_from_offset(from)?;
        let format = self.name.format;
        let mut scratch = Vec::new();
        let mut counted_to = from;
        while reader.next_batch_meta(&mut |h, r| {
            if r.offset < limit && r.offset >= counted_to {
                bytes += formatted_len(format, h, r, &mut scratch);
                counted_to = r.offset + 1;
            }
        })? {
            if counted_to >= limit {
                break;
            }
        }
        self.counted = (limit.max(counted_to), bytes);
        Ok(self.counted)
    }
}

//! The batch framing, written once (Kafka's `FileLogInputStream.nextBatch`): the 17-byte
//! prefix read, its size field checked, the whole batch fetched from a mapping or a read
//! window, then the segment's validity rule ([`LogSegment::check_batch`]). Every reader of a
//! `.log` goes through [`LogSegment::next_batch`] (readers, recovery, the clean mount's tail
//! check, the cleaner, the by-time lookup through [`LogSegment::checked_batch_at`]) or, for
//! headers only, [`LogSegment::header_at`] (lookups, the scans of batch headers); each decides
//! what a torn or invalid batch means to it. [`frame`] alone serves a `.swap` file read before
//! it is a segment.

use std::fmt;

use super::*;

/// Why the bytes at a position are not a batch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NotABatch {
    /// Fewer than the 17 prefix bytes are left before the limit.
    PartialHeader { limit: u64 },
    /// The size field is below the smallest batch.
    Size(i32),
    /// The batch the size field announces runs past the limit.
    PastEnd { size: usize, limit: u64 },
    /// The file ends at byte `at`, before the limit.
    ShortFile { at: u64, limit: u64 },
    /// A whole batch that fails the validity rule (CRC, magic, offsets).
    Invalid(String),
}

impl NotABatch {
    /// The byte the problem is at, for a batch starting at `pos`.
    pub fn at(&self, pos: u64) -> u64 {
        match self {
            NotABatch::ShortFile { at, .. } => *at,
            _ => pos,
        }
    }
}

impl fmt::Display for NotABatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NotABatch::PartialHeader { limit } => {
                write!(f, "a partial batch header before the end ({limit} bytes)")
            }
            NotABatch::Size(s) => write!(f, "invalid batch size {s}"),
            NotABatch::PastEnd { size, limit } => write!(
                f,
                "a batch of {size} bytes runs past the end of the segment ({limit} bytes)"
            ),
            NotABatch::ShortFile { limit, .. } => {
                write!(
                    f,
                    "the file ends before the {limit} bytes the segment holds"
                )
            }
            NotABatch::Invalid(e) => f.write_str(e),
        }
    }
}

/// The framing of the batch whose prefix is `prefix`, at `pos` of a segment holding `limit`
/// bytes: its whole size on disk.
pub fn frame(prefix: &[u8], pos: u64, limit: u64) -> Result<usize, NotABatch> {
    let Some((_, size_field, _)) = BatchHeader::peek(prefix) else {
        return Err(NotABatch::PartialHeader { limit });
    };
    if size_field < MIN_SIZE_FIELD {
        return Err(NotABatch::Size(size_field));
    }
    let size = size_field as usize + LOG_OVERHEAD;
    if pos + size as u64 > limit {
        return Err(NotABatch::PastEnd { size, limit });
    }
    Ok(size)
}

/// Where a scan takes a segment's bytes from: a mapping covering the scan's limit, or a read
/// window over the segment.
pub enum BatchSource<'a> {
    Mapped(&'a [u8]),
    Window(&'a mut ReadWindow),
}

/// What a scan finds at a position.
pub enum Scanned<'a> {
    /// A whole batch that passed the validity rule.
    Batch(BatchView<'a>),
    /// The position is the limit: no more batches.
    End,
    /// Not a batch (a torn tail, corruption): the caller decides what that means.
    Not(NotABatch),
}

/// A sequential scan of a segment's batches through a read window, each checked against the
/// offsets of the one before.
pub struct BatchScan<'s> {
    seg: &'s LogSegment,
    window: &'s mut ReadWindow,
    pub pos: u64,
    limit: u64,
    /// The last offset of the previous batch.
    pub prev_last: Option<i64>,
}

impl BatchScan<'_> {
    /// The batch at the scan's position; a batch moves the scan past it.
    pub fn next_batch(&mut self) -> io::Result<Scanned<'_>> {
        let found = self.seg.next_batch(
            BatchSource::Window(&mut *self.window),
            self.pos,
            self.limit,
            self.prev_last,
        )?;
        if let Scanned::Batch(v) = &found {
            self.prev_last = Some(v.header.last_offset());
            self.pos += v.bytes.len() as u64;
        }
        Ok(found)
    }
}

impl LogSegment {
    /// Kafka's `nextBatch`: the batch at `pos` of the segment's first `limit` bytes, framed
    /// and checked by [`LogSegment::check_batch`] (after `prev_last`, the previous batch's last
    /// offset). A mapping must cover `limit`.
    pub fn next_batch<'a>(
        &self,
        src: BatchSource<'a>,
        pos: u64,
        limit: u64,
        prev_last: Option<i64>,
    ) -> io::Result<Scanned<'a>> {
        if pos >= limit {
            return Ok(Scanned::End);
        }
        if pos + PREFIX_SIZE as u64 > limit {
            return Ok(Scanned::Not(NotABatch::PartialHeader { limit }));
        }
        let bytes = match src {
            BatchSource::Mapped(m) => {
                let size = match frame(&m[pos as usize..], pos, limit) {
                    Ok(s) => s,
                    Err(e) => return Ok(Scanned::Not(e)),
                };
                &m[pos as usize..pos as usize + size]
            }
            BatchSource::Window(w) => {
                let prefix = w.read(self, pos, PREFIX_SIZE, limit)?;
                if prefix.len() < PREFIX_SIZE {
                    let at = pos + prefix.len() as u64;
                    return Ok(Scanned::Not(NotABatch::ShortFile { at, limit }));
                }
                let size = match frame(prefix, pos, limit) {
                    Ok(s) => s,
                    Err(e) => return Ok(Scanned::Not(e)),
                };
                let bytes = w.read(self, pos, size, limit)?;
                if bytes.len() < size {
                    let at = pos + bytes.len() as u64;
                    return Ok(Scanned::Not(NotABatch::ShortFile { at, limit }));
                }
                bytes
            }
        };
        Ok(match self.check_batch(bytes, prev_last) {
            Ok(view) => Scanned::Batch(view),
            Err(e) => Scanned::Not(NotABatch::Invalid(e)),
        })
    }

    /// The whole batch at `pos` (of the segment's first `limit` bytes), checked, for a lookup
    /// whose header scan found it there: anything else is corruption.
    pub fn checked_batch_at<'w>(
        &self,
        window: &'w mut ReadWindow,
        pos: u64,
        limit: u64,
    ) -> io::Result<BatchView<'w>> {
        match self.next_batch(BatchSource::Window(window), pos, limit, None)? {
            Scanned::Batch(view) => Ok(view),
            Scanned::End => Err(corrupt(
                &self.log_path,
                pos,
                "no batch at the segment's end",
            )),
            Scanned::Not(e) => Err(corrupt(&self.log_path, e.at(pos), e)),
        }
    }

    /// A sequential scan of the batches in [`pos`, `limit`) through `window`.
    pub fn scan<'s>(&'s self, window: &'s mut ReadWindow, pos: u64, limit: u64) -> BatchScan<'s> {
        window.clear();
        BatchScan {
            seg: self,
            window,
            pos,
            limit,
            prev_last: None,
        }
    }

    /// The header of the batch at `pos`, if a whole valid-looking batch starts there
    /// (within `limit` bytes of the file); its CRC is not checked.
    pub fn header_at(&self, pos: u64, limit: u64) -> io::Result<Option<BatchHeader>> {
        if pos + HEADER_SIZE as u64 > limit {
            return Ok(None);
        }
        let mut h = [0u8; HEADER_SIZE];
        if self.read_at(&mut h, pos)? < HEADER_SIZE || frame(&h, pos, limit).is_err() {
            return Ok(None);
        }
        Ok(BatchHeader::parse(&h).ok())
    }

    /// The one rule of what a valid batch is, wherever bytes are read back (recovery, the
    /// clean-mount tail check, every read): whole, magic 2, CRC-32C, offsets inside this
    /// segment (within a 4-byte relative offset) and after `prev_last`, the previous batch's
    /// last offset.
    pub fn check_batch<'a>(
        &self,
        bytes: &'a [u8],
        prev_last: Option<i64>,
    ) -> Result<BatchView<'a>, String> {
        let view = BatchView::new(bytes)
            .and_then(|v| v.ensure_valid().map(|_| v))
            .map_err(|e| e.to_string())?;
        let h = view.header;
        if h.base_offset < self.base_offset
            || h.last_offset_delta < 0
            || h.last_offset() - self.base_offset > i32::MAX as i64
            || prev_last.is_some_and(|l| h.base_offset <= l)
        {
            return Err(format!(
                "batch offsets {}..{} are out of sequence (segment base offset {}, previous batch ended at {:?})",
                h.base_offset,
                h.last_offset(),
                self.base_offset,
                prev_last
            ));
        }
        Ok(view)
    }

    /// Whether the index entry (`offset`, `pos`) points at the batch it names: the batch at
    /// `pos` ends at `offset` (Kafka indexes a batch by its last offset).
    pub(super) fn entry_points_at_batch(
        &self,
        offset: i64,
        pos: u32,
        limit: u64,
    ) -> io::Result<bool> {
        Ok(matches!(
            self.header_at(pos as u64, limit)?,
            Some(h) if h.last_offset() == offset
        ))
    }

    /// The header of the batch at `pos` for a reader: None exactly at `limit`; anything else
    /// that is not the start of a whole batch inside the segment is corruption (an error
    /// naming the file and position), never the end of the segment.
    pub fn batch_at(&self, pos: u64, limit: u64) -> io::Result<Option<BatchHeader>> {
        if pos >= limit {
            return Ok(None);
        }
        match self.header_at(pos, limit)? {
            Some(h) if h.base_offset >= self.base_offset && h.last_offset_delta >= 0 => Ok(Some(h)),
            Some(h) => Err(corrupt(
                &self.log_path,
                pos,
                format!(
                    "batch offsets {}..{} are outside the segment (base offset {})",
                    h.base_offset,
                    h.last_offset(),
                    self.base_offset
                ),
            )),
            None => Err(corrupt(
                &self.log_path,
                pos,
                format!("no whole batch starts here (segment holds {limit} bytes)"),
            )),
        }
    }

    /// Scans batch headers from `start` to the first batch whose last offset >= `target`.
    /// Returns it and the bytes skipped on the way.
    pub fn find_batch(&self, target: i64, start: u64) -> io::Result<(Option<BatchPos>, u64)> {
        let limit = self.size();
        let mut pos = start;
        while let Some(h) = self.batch_at(pos, limit)? {
            if h.last_offset() >= target {
                return Ok((
                    Some(BatchPos {
                        position: pos,
                        header: h,
                    }),
                    pos - start,
                ));
            }
            pos += h.size() as u64;
        }
        Ok((None, pos - start))
    }

    /// Kafka's `translateOffset`: index lookup, then a bounded scan. The entry found must
    /// point at the batch it names (last offset = the entry's offset); one that does not makes
    /// the index untrusted and the scan starts at the segment's first byte.
    pub fn translate_offset(&self, target: i64) -> io::Result<(Option<BatchPos>, u64)> {
        self.ensure_indexes()?;
        if self.index_untrusted.load(Ordering::Acquire) {
            return self.find_batch(target, 0);
        }
        let (entry_offset, start) = self.offset_index.lookup(target)?;
        if start == 0 {
            return self.find_batch(target, 0);
        }
        // The batch at the entry's position is read once: checked against the entry, then
        // either it holds the target or the scan goes on after it.
        let limit = self.size();
        match self.header_at(start as u64, limit)? {
            Some(h) if h.last_offset() == entry_offset => {
                if h.last_offset() >= target {
                    return Ok((
                        Some(BatchPos {
                            position: start as u64,
                            header: h,
                        }),
                        0,
                    ));
                }
                let (found, skipped) = self.find_batch(target, start as u64 + h.size() as u64)?;
                Ok((found, skipped + h.size() as u64))
            }
            _ => {
                log::warn!(
                    "{}: entry (offset {entry_offset}, position {start}) of {} does not point at a batch; not using the index",
                    self.log_path.display(),
                    self.offset_index.path().display()
                );
                self.index_untrusted.store(true, Ordering::Release);
                self.find_batch(target, 0)
            }
        }
    }
}

//! The batch framing and the one scan of a segment's batches, written once (Kafka's
//! `batchesFrom` / `FileLogInputStream.nextBatch`): [`LogSegment::batches`] reads, from a
//! position to a limit, each batch's header by position ([`Check::Header`]) or the whole
//! batch from a mapping or a read window ([`Check::Full`]), checks it by the segment's
//! validity rule ([`LogSegment::check_batch`], whose header part is
//! [`LogSegment::check_header`]), and stops at the first bytes that are not a batch. Every
//! reader of a `.log` scans through it (readers, recovery, the clean mount's tail check, the
//! cleaner and the producer state, lookups, the `.swap` files an interrupted clean left);
//! each decides what a stop means to it.

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
fn frame(prefix: &[u8], pos: u64, limit: u64) -> Result<usize, NotABatch> {
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

/// How much of each batch a scan reads and checks.
pub enum Check<'w> {
    /// The 61-byte header alone, read by position: its framing, magic and offsets
    /// ([`LogSegment::check_header`]); not the CRC.
    Header,
    /// The whole batch, from a mapping or a read window: the whole validity rule
    /// ([`LogSegment::check_batch`]), every time (recovery, the cleaner, which rewrites what
    /// it reads, the tail check).
    Full(BatchSource<'w>),
    /// The same for a reader: the CRC-32C of a batch a check passed since the segment was
    /// opened is not computed again ([`LogSegment::check_batch_at`], [`Trust::Read`]).
    Read(BatchSource<'w>),
}

/// What a check of a batch takes as checked already ([`LogSegment::check_batch_at`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Trust {
    /// Nothing: every CRC is computed ([`Check::Full`]).
    Nothing,
    /// A reader's batch ([`Check::Read`]), framed where the one before it ended or where an
    /// offset lookup found it: one inside the checked prefix or a checked run.
    Read,
    /// A batch a scan from an index entry framed (a lookup by time): one that starts a
    /// checked run.
    Place,
}

/// One batch a scan found.
pub struct Batch<'a> {
    pub position: u64,
    pub header: BatchHeader,
    /// The whole batch, checked (a [`Check::Full`] or [`Check::Read`] scan only).
    pub view: Option<BatchView<'a>>,
}

/// Kafka's `batchesFrom`: the batches of a segment from a position to a limit, each checked
/// against the offsets of the one before. The one stop rule: the scan ends at the limit, or
/// at the first bytes that are not a batch (a short or corrupt header, a batch running past
/// the limit, one failing the check), which it keeps ([`Batches::stopped`]) for the caller to
/// decide what they mean: the torn tail recovery cuts, or corruption a reader reports.
pub struct Batches<'s> {
    seg: &'s LogSegment,
    check: Check<'s>,
    pos: u64,
    limit: u64,
    prev_last: Option<i64>,
    stopped: Option<NotABatch>,
}

impl<'s> Batches<'s> {
    /// The scan checks its first batch against `prev_last`, the last offset of the batch
    /// before its start.
    pub fn after(mut self, prev_last: Option<i64>) -> Self {
        self.prev_last = prev_last;
        self
    }

    /// The next batch; None at the limit or at a stop.
    pub fn next_batch(&mut self) -> io::Result<Option<Batch<'_>>> {
        if self.stopped.is_some() || self.pos >= self.limit {
            return Ok(None);
        }
        let (seg, pos, limit, prev_last) = (self.seg, self.pos, self.limit, self.prev_last);
        let found = match &mut self.check {
            Check::Header => seg.header_of(pos, limit, prev_last)?.map(|h| (h, None)),
            Check::Full(src) => seg
                .whole_batch(src, pos, limit, prev_last, Trust::Nothing)?
                .map(|v| (v.header, Some(v))),
            Check::Read(src) => seg
                .whole_batch(src, pos, limit, prev_last, Trust::Read)?
                .map(|v| (v.header, Some(v))),
        };
        match found {
            Ok((header, view)) => {
                self.prev_last = Some(header.last_offset());
                self.pos += header.size() as u64;
                Ok(Some(Batch {
                    position: pos,
                    header,
                    view,
                }))
            }
            Err(e) => {
                self.stopped = Some(e);
                Ok(None)
            }
        }
    }

    /// Where the next batch would start: past the last batch found.
    pub fn pos(&self) -> u64 {
        self.pos
    }

    /// The last offset of the last batch found (or the one given to [`Batches::after`]).
    pub fn prev_last(&self) -> Option<i64> {
        self.prev_last
    }

    /// What the scan stopped at before its limit, at [`Batches::pos`].
    pub fn stopped(&self) -> Option<&NotABatch> {
        self.stopped.as_ref()
    }

    /// For a reader, bytes that are not a batch before the limit are corruption: an error
    /// naming the file and byte.
    pub fn ensure_whole(&self) -> io::Result<()> {
        match &self.stopped {
            Some(e) => Err(corrupt(&self.seg.log_path, e.at(self.pos), e)),
            None => Ok(()),
        }
    }
}

impl Iterator for Batches<'_> {
    type Item = io::Result<BatchPos>;

    /// The position and header of each batch; a stop ends the iteration.
    fn next(&mut self) -> Option<Self::Item> {
        match self.next_batch() {
            Ok(b) => b.map(|b| {
                Ok(BatchPos {
                    position: b.position,
                    header: b.header,
                })
            }),
            Err(e) => Some(Err(e)),
        }
    }
}

impl LogSegment {
    /// The batches in [`from`, `limit`) of the segment, read and checked as `check` says (a
    /// mapping must cover `limit`); see [`Batches`].
    pub fn batches<'s>(&'s self, from: u64, limit: u64, check: Check<'s>) -> Batches<'s> {
        Batches {
            seg: self,
            check,
            pos: from,
            limit,
            prev_last: None,
            stopped: None,
        }
    }

    /// The header at `pos` (< `limit`) if a batch whose header passes the check starts there.
    fn header_of(
        &self,
        pos: u64,
        limit: u64,
        prev_last: Option<i64>,
    ) -> io::Result<Result<BatchHeader, NotABatch>> {
        if pos + HEADER_SIZE as u64 > limit {
            return Ok(Err(NotABatch::PartialHeader { limit }));
        }
        let mut h = [0u8; HEADER_SIZE];
        let end = pos + HEADER_SIZE as u64;
        // From the readers' mapping when there is one (below the segment's size, as every
        // read of a mapping): a lookup's scan of headers then makes no system call.
        let n = match self.cached_mapping(end).filter(|_| end <= self.size()) {
            Some(m) => {
                h.copy_from_slice(&m[pos as usize..end as usize]);
                HEADER_SIZE
            }
            None => self.read_at(&mut h, pos)?,
        };
        if n < HEADER_SIZE {
            let at = pos + n as u64;
            return Ok(Err(NotABatch::ShortFile { at, limit }));
        }
        if let Err(e) = frame(&h, pos, limit) {
            return Ok(Err(e));
        }
        let header = match BatchHeader::parse(&h) {
            Ok(header) => header,
            Err(e) => return Ok(Err(NotABatch::Invalid(e.to_string()))),
        };
        Ok(self
            .check_header(&header, prev_last)
            .map(|()| header)
            .map_err(NotABatch::Invalid))
    }

    /// Kafka's `nextBatch`: the whole batch at `pos` (< `limit`), framed and checked by
    /// [`LogSegment::check_batch_at`], with what `trust` allows it to take as checked.
    fn whole_batch<'a>(
        &self,
        src: &'a mut BatchSource<'_>,
        pos: u64,
        limit: u64,
        prev_last: Option<i64>,
        trust: Trust,
    ) -> io::Result<Result<BatchView<'a>, NotABatch>> {
        let bytes = match src {
            BatchSource::Mapped(m) => {
                if pos + PREFIX_SIZE as u64 > limit {
                    return Ok(Err(NotABatch::PartialHeader { limit }));
                }
                match frame(&m[pos as usize..], pos, limit) {
                    Ok(size) => &m[pos as usize..pos as usize + size],
                    Err(e) => return Ok(Err(e)),
                }
            }
            BatchSource::Window(w) => match self.window_bytes(w, pos, limit)? {
                Ok(bytes) => bytes,
                Err(e) => return Ok(Err(e)),
            },
        };
        Ok(self
            .check_batch_at(pos, bytes, prev_last, trust)
            .map_err(NotABatch::Invalid))
    }

    /// The bytes of the batch framed at `pos` (< `limit`), read through `w`.
    fn window_bytes<'w>(
        &self,
        w: &'w mut ReadWindow,
        pos: u64,
        limit: u64,
    ) -> io::Result<Result<&'w [u8], NotABatch>> {
        if pos + PREFIX_SIZE as u64 > limit {
            return Ok(Err(NotABatch::PartialHeader { limit }));
        }
        let prefix = w.read(self, pos, PREFIX_SIZE, limit)?;
        if prefix.len() < PREFIX_SIZE {
            let at = pos + prefix.len() as u64;
            return Ok(Err(NotABatch::ShortFile { at, limit }));
        }
        let size = match frame(prefix, pos, limit) {
            Ok(s) => s,
            Err(e) => return Ok(Err(e)),
        };
        let bytes = w.read(self, pos, size, limit)?;
        if bytes.len() < size {
            let at = pos + bytes.len() as u64;
            return Ok(Err(NotABatch::ShortFile { at, limit }));
        }
        Ok(Ok(bytes))
    }

    /// The whole batch at `pos` (of the segment's first `limit` bytes), checked, for a lookup
    /// whose header scan found it there: anything else is corruption. Its CRC is computed
    /// even inside the checked prefix: the scan started where an index entry pointed, which
    /// nothing checked (a position inside a batch could frame bytes of its records). Only a
    /// batch checked at this very position, a run's start, is trusted ([`Trust::Place`]).
    pub fn checked_batch_at<'w>(
        &self,
        window: &'w mut ReadWindow,
        pos: u64,
        limit: u64,
    ) -> io::Result<BatchView<'w>> {
        let checked = match self.window_bytes(window, pos, limit)? {
            Ok(bytes) => self
                .check_batch_at(pos, bytes, None, Trust::Place)
                .map_err(NotABatch::Invalid),
            Err(e) => Err(e),
        };
        checked.map_err(|e| corrupt(&self.log_path, e.at(pos), e))
    }

    /// The one rule of what a valid batch is, wherever bytes are read back (recovery, the
    /// clean-mount tail check, the cleaner, and readers through
    /// [`LogSegment::check_batch_at`]): whole, magic 2, CRC-32C, and a header passing
    /// [`LogSegment::check_header`].
    pub fn check_batch<'a>(
        &self,
        bytes: &'a [u8],
        prev_last: Option<i64>,
    ) -> Result<BatchView<'a>, String> {
        let view = BatchView::new(bytes)
            .and_then(|v| v.ensure_valid().map(|_| v))
            .map_err(|e| e.to_string())?;
        self.check_header(&view.header, prev_last)?;
        Ok(view)
    }

    /// [`LogSegment::check_batch`] of the batch at `pos`, keeping what the segment knows of
    /// the checks passed since it was opened ([`checked::Checked`]): a prefix of whole
    /// batches from its start, grown by a batch that passes where it ends, and runs of whole
    /// batches that passed elsewhere (lookups, and reads that go on from them). A batch
    /// `trust` lets it take as checked is framed and its header checked, not its CRC: a
    /// segment's bytes cost one CRC pass while it is open (up to a thousand runs of them),
    /// however often and from wherever they are read. The daemon owns
    /// its log dir while mounted and never rewrites bytes below a segment's size; recovery,
    /// the one cut below it, checks every CRC and forgets what lay past the cut. What this
    /// gives up: bytes that change under the mount after a read checked them (another
    /// process, or the disk) are served as they are until unmount. A Kafka broker computes
    /// no CRC when it serves a fetch; its consumers compute one for each fetch, as every read
    /// here did before.
    pub(super) fn check_batch_at<'a>(
        &self,
        pos: u64,
        bytes: &'a [u8],
        prev_last: Option<i64>,
        trust: Trust,
    ) -> Result<BatchView<'a>, String> {
        let len = bytes.len() as u64;
        let trusted = match trust {
            Trust::Nothing => false,
            Trust::Read => self.checked.covers(pos, len),
            Trust::Place => self.checked.at(pos, len),
        };
        if trusted {
            let view = BatchView::new(bytes).map_err(|e| e.to_string())?;
            self.check_header(&view.header, prev_last)?;
            // Checked before: where the prefix ends, it extends it as a check does.
            self.checked.trusted(pos, len);
            return Ok(view);
        }
        let view = self.check_batch(bytes, prev_last)?;
        // The prefix grows only from its end: a batch framed anywhere else (at a position an
        // index entry gave) never stretches it over bytes no check framed.
        self.checked.passed(pos, len, trust != Trust::Nothing);
        Ok(view)
    }

    /// How many bytes from the segment's start whole checks have passed since it was opened.
    #[cfg(any(test, feature = "internals"))]
    pub fn checked_prefix(&self) -> u64 {
        self.checked.prefix()
    }

    /// How many runs of batches checked away from the prefix the segment remembers.
    #[cfg(any(test, feature = "internals"))]
    pub fn checked_runs(&self) -> usize {
        self.checked.runs()
    }

    /// The part of [`LogSegment::check_batch`] a header shows (what scans of headers check):
    /// offsets inside this segment (within a 4-byte relative offset) and after `prev_last`,
    /// the previous batch's last offset.
    pub fn check_header(&self, h: &BatchHeader, prev_last: Option<i64>) -> Result<(), String> {
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
        Ok(())
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
            self.batches(pos as u64, limit, Check::Header).next_batch()?,
            Some(b) if b.header.last_offset() == offset
        ))
    }

    /// Scans batch headers from `start` to the first batch whose last offset >= `target`.
    /// Returns it and the bytes skipped on the way; bytes that are not a batch before the
    /// segment's end are corruption.
    pub fn find_batch(&self, target: i64, start: u64) -> io::Result<(Option<BatchPos>, u64)> {
        Self::find_in(
            self.batches(start, self.size(), Check::Header),
            target,
            start,
        )
    }

    /// [`LogSegment::find_batch`] going on with `batches`, which started at `start`.
    fn find_in(
        mut batches: Batches<'_>,
        target: i64,
        start: u64,
    ) -> io::Result<(Option<BatchPos>, u64)> {
        for b in &mut batches {
            let b = b?;
            if b.header.last_offset() >= target {
                return Ok((Some(b), b.position - start));
            }
        }
        batches.ensure_whole()?;
        Ok((None, batches.pos() - start))
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
        let start = start as u64;
        let mut batches = self.batches(start, self.size(), Check::Header);
        match batches.next().transpose()? {
            Some(b) if b.header.last_offset() == entry_offset => {
                if b.header.last_offset() >= target {
                    return Ok((Some(b), 0));
                }
                Self::find_in(batches, target, start)
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

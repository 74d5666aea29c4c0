//! LogSegment: one `.log` file and its `.index` / `.timeindex`. Owns append (its index entries
//! by [`IndexBuilder`]), the four roll conditions (`should_roll`) and the seal at a roll;
//! recovery (validate, truncate, rebuild) is in `segment/recover.rs`, the batch framing, the
//! one scan of batches ([`LogSegment::batches`]) and the lookups in `segment/scan.rs`.

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use memmap2::{Mmap, MmapOptions};

use super::index_builder::{IndexBuilder, IndexEntries, MappedIndexes};
use super::offset_index::OffsetIndex;
use super::time_index::TimeIndex;
use crate::config::LogConfig;
use crate::os::safe_fs::{Access, Dir};
use crate::record::{
    BatchHeader, BatchView, HEADER_SIZE, LOG_OVERHEAD, MIN_SIZE_FIELD, PREFIX_SIZE,
};
use crate::util::read_window::{ReadAt, ReadWindow};
use crate::util::sync::MutexExt;

mod checked;
mod recover;
mod scan;

pub use scan::{BatchSource, Check, NotABatch};

/// `00000000000000000042` for 42.
pub fn file_prefix(base_offset: i64) -> String {
    format!("{base_offset:020}")
}

pub fn log_name(base: i64) -> String {
    format!("{}.log", file_prefix(base))
}
pub fn index_name(base: i64) -> String {
    format!("{}.index", file_prefix(base))
}
pub fn time_index_name(base: i64) -> String {
    format!("{}.timeindex", file_prefix(base))
}

/// The name a deleted file lives on under until its last reader lets go.
pub fn deleted_name(name: &str) -> String {
    format!("{name}.deleted")
}

/// An error naming the file and byte position of bytes that are not a valid batch.
pub fn corrupt(path: &Path, pos: u64, what: impl std::fmt::Display) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        format!("corrupt segment {} at byte {pos}: {what}", path.display()),
    )
}

/// Append-side state, touched only under the partition's append lock (and briefly by readers
/// asking for the largest timestamp).
#[derive(Debug, Clone, Copy)]
struct SegmentAppendState {
    /// Kafka's index rules: bytes since the last index entry, the largest timestamp in the
    /// segment and the last offset of the first batch that has it.
    index: IndexBuilder,
    /// Whether the largest timestamp reflects the whole segment (false until loaded lazily).
    max_timestamp_known: bool,
    /// The max timestamp of the first batch (Kafka's `rollingBasedTimestamp`).
    rolling_base_timestamp: Option<i64>,
}

/// What one batch appended to a segment looks like to the index rule. The offset that goes
/// with its max timestamp is its last offset (Kafka's shallow offset for v2 batches).
pub struct AppendMeta {
    pub last_offset: i64,
    pub max_timestamp: i64,
    /// The bytes of the batch's record values (a null value counts 0).
    pub value_bytes: u64,
    /// The batch's data records.
    pub records: u64,
}

/// The data records of a segment's first batches and the bytes of their values (what the
/// length of a stream of them is derived from). Appends keep it and a count extends it from
/// where it stopped, so a segment is counted once, not at every `fstat`. The same count taken
/// at batch boundaries about every [`COUNT_MARK_SPACING`] bytes is kept beside it (the
/// segment's count marks), so the count before any offset is a mark plus a scan of at most
/// that many bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecordCount {
    /// The batches in [0, pos) of the `.log` are counted.
    pub pos: u64,
    /// The offset after the last batch counted (the base offset when none is).
    pub next: i64,
    /// The bytes of the values of the data records counted.
    pub value_bytes: u64,
    /// The data records counted (`<p>/count`).
    pub records: u64,
}

/// The bytes of `.log` between two count marks (at least; a mark sits at a batch boundary).
pub const COUNT_MARK_SPACING: u64 = 32 * 1024;

pub struct LogSegment {
    pub base_offset: i64,
    /// The partition directory: every file of the segment is opened relative to it, never
    /// following a symlink.
    dir: Arc<Dir>,
    log_name: String,
    log_path: PathBuf,
    /// A read-only mount: nothing is written, truncated, renamed or deleted.
    read_only: bool,
    /// Set when an index entry did not point at a batch boundary: lookups then scan the
    /// segment from its start instead of trusting the index.
    index_untrusted: AtomicBool,
    /// The open `.log`; released for inactive segments when nobody reads them, so a log of
    /// thousands of segments does not hold thousands of descriptors.
    log: Mutex<Option<Arc<File>>>,
    /// A read-only mapping of the `.log` for readers (see [`LogSegment::mapping`]); released
    /// with the descriptor.
    map: Mutex<Option<Arc<Mmap>>>,
    /// How much of an active segment's file a mapping reserves: the segment size it may grow
    /// to (`segment.bytes` when it was opened).
    map_reserve: u64,
    /// Whether this is the active (appended-to) segment.
    active: AtomicBool,
    /// Set once retention deleted it: the `.log` lives on as `*.log.deleted` for readers.
    deleted: AtomicBool,
    size: AtomicU64,
    pub offset_index: OffsetIndex,
    pub time_index: TimeIndex,
    state: Mutex<SegmentAppendState>,
    created: Instant,
    index_interval_bytes: u64,
    /// Set once both index files passed the sanity check (or were rebuilt).
    indexes_checked: AtomicBool,
    check_lock: Mutex<()>,
    count: Mutex<RecordCount>,
    /// Counts at batch boundaries, in position order, at least [`COUNT_MARK_SPACING`] apart
    /// (the start of the segment, a count of nothing, is implied).
    count_marks: Mutex<Vec<RecordCount>>,
    /// The batches a whole check passed since the segment was opened: a prefix of whole
    /// batches, and the places of those checked elsewhere. A reader frames such a batch and
    /// checks its offsets again, not its CRC (see [`LogSegment::check_batch_at`]).
    checked: checked::Checked,
}

/// A batch's position and header, found by a scan.
#[derive(Debug, Clone, Copy)]
pub struct BatchPos {
    pub position: u64,
    pub header: BatchHeader,
}

impl LogSegment {
    /// A segment over existing (or new) files; nothing is read until it is needed.
    pub fn open(
        dir: &Arc<Dir>,
        base_offset: i64,
        cfg: &LogConfig,
        size: u64,
        read_only: bool,
    ) -> LogSegment {
        LogSegment::open_with_suffix(dir, base_offset, cfg, size, read_only, "")
    }

    /// A segment whose files carry `suffix` after their normal names (a read-only mount
    /// serving the `.swap` files of an interrupted clean it may not rename).
    pub fn open_with_suffix(
        dir: &Arc<Dir>,
        base_offset: i64,
        cfg: &LogConfig,
        size: u64,
        read_only: bool,
        suffix: &str,
    ) -> LogSegment {
        let log_name = format!("{}{suffix}", log_name(base_offset));
        LogSegment {
            base_offset,
            dir: dir.clone(),
            log_path: dir.join(&log_name),
            log_name,
            read_only,
            index_untrusted: AtomicBool::new(false),
            log: Mutex::new(None),
            map: Mutex::new(None),
            map_reserve: cfg.segment_bytes,
            active: AtomicBool::new(false),
            deleted: AtomicBool::new(false),
            size: AtomicU64::new(size),
            offset_index: OffsetIndex::new(
                dir.clone(),
                format!("{}{suffix}", index_name(base_offset)),
                base_offset,
                cfg.segment_index_bytes,
                read_only,
            ),
            time_index: TimeIndex::new(
                dir.clone(),
                format!("{}{suffix}", time_index_name(base_offset)),
                base_offset,
                cfg.segment_index_bytes,
                read_only,
            ),
            state: Mutex::new(SegmentAppendState {
                index: IndexBuilder::new(base_offset, cfg.index_interval_bytes),
                max_timestamp_known: size == 0,
                rolling_base_timestamp: None,
            }),
            created: Instant::now(),
            index_interval_bytes: cfg.index_interval_bytes,
            indexes_checked: AtomicBool::new(size == 0),
            check_lock: Mutex::new(()),
            count: Mutex::new(RecordCount {
                pos: 0,
                next: base_offset,
                value_bytes: 0,
                records: 0,
            }),
            count_marks: Mutex::new(Vec::new()),
            checked: checked::Checked::default(),
        }
    }

    /// Sanity-checks both index files the first time they are used; a missing, truncated,
    /// oversized or corrupt index is rebuilt from the `.log`.
    pub fn ensure_indexes(&self) -> io::Result<()> {
        if self.indexes_checked.load(Ordering::Acquire) {
            return Ok(());
        }
        // Deletion takes the same lock: a rebuild never runs on a segment being deleted.
        let _g = self.check_lock.guard();
        if self.indexes_checked.load(Ordering::Acquire) {
            return Ok(());
        }
        if self.deleted.load(Ordering::Acquire) {
            // A deleted segment is only read to its end by the readers it had: never rebuild
            // (that would recreate its files); lookups scan it from the start.
            self.index_untrusted.store(true, Ordering::Release);
            self.indexes_checked.store(true, Ordering::Release);
            return Ok(());
        }
        let size = self.size();
        let mut problem = self.offset_index.sanity_check(size).err();
        if problem.is_none() {
            self.indexes_checked.store(true, Ordering::Release);
            let next = self.read_next_offset()?.0.unwrap_or(self.base_offset);
            problem = self.time_index.sanity_check(next).err();
        }
        if let Some(p) = problem {
            log::warn!("{p}; rebuilding the indexes of {}", self.log_path.display());
            let cfg = LogConfig {
                index_interval_bytes: self.index_interval_bytes,
                ..LogConfig::default()
            };
            self.offset_index.close();
            self.time_index.close();
            if !self.read_only {
                self.dir.remove_if_exists(self.offset_index.name())?;
                self.dir.remove_if_exists(self.time_index.name())?;
            }
            // A read-only mount rebuilds in memory and serves up to the last valid batch.
            self.recover(&cfg)?;
            self.seal()?;
        }
        self.indexes_checked.store(true, Ordering::Release);
        // The check read the tail of the .log; an inactive segment need not keep it open.
        self.release_file();
        Ok(())
    }

    /// Creates a new, empty segment with preallocated indexes, then fsyncs the directory. The
    /// only place a `.log` is ever created (O_EXCL: an existing file or link of that name is
    /// removed first).
    pub fn create(dir: &Arc<Dir>, base_offset: i64, cfg: &LogConfig) -> io::Result<LogSegment> {
        for name in [
            log_name(base_offset),
            index_name(base_offset),
            time_index_name(base_offset),
        ] {
            if dir.kind(&name)?.is_some() {
                log::warn!(
                    "deleting existing file {} before creating a new segment",
                    dir.join(&name).display()
                );
                dir.remove(&name)?;
            }
        }
        let seg = LogSegment::open(dir, base_offset, cfg, 0, false);
        seg.set_active(true);
        *seg.log.guard() = Some(Arc::new(dir.create_new(&seg.log_name)?));
        seg.offset_index.open_active()?;
        seg.time_index.open_active()?;
        // The new names are durable before anything is appended: an fsync of the `.log`
        // alone does not make its directory entry survive a power cut.
        dir.sync()?;
        Ok(seg)
    }

    pub fn log_path(&self) -> &Path {
        &self.log_path
    }

    /// The open `.log` (or, once deleted, its `.log.deleted`). Never creates a file: the
    /// deleted flag and the rename change together under the same lock, so a reader reopening
    /// a segment that retention is deleting finds one of the two names.
    pub fn file(&self) -> io::Result<Arc<File>> {
        let mut g = self.log.guard();
        if let Some(f) = g.as_ref() {
            return Ok(f.clone());
        }
        let f = if self.deleted.load(Ordering::Acquire) {
            self.dir
                .open_file(&deleted_name(&self.log_name), Access::ReadOnly)?
        } else if self.read_only {
            self.dir.open_file(&self.log_name, Access::ReadOnly)?
        } else {
            self.dir.open_file(&self.log_name, Access::ReadWrite)?
        };
        let f = Arc::new(f);
        *g = Some(f.clone());
        Ok(f)
    }

    /// Marks this segment as the one appended to (its handles stay open).
    pub fn set_active(&self, active: bool) {
        self.active.store(active, Ordering::Release);
    }

    /// Closes the `.log` descriptor of an inactive segment (readers holding it keep theirs; the
    /// next use reopens it). A deleted segment keeps its descriptor until it is dropped: its
    /// `.log.deleted` name may be taken by a later segment of the same base offset (a cleaned
    /// segment replaced again), so it is never reopened by name.
    pub fn release_file(&self) {
        if !self.active.load(Ordering::Acquire) && !self.deleted.load(Ordering::Acquire) {
            *self.log.guard() = None;
            *self.map.guard() = None;
        }
    }

    /// The mapping readers already share, if it covers the first `end` bytes: none is made.
    pub fn cached_mapping(&self, end: u64) -> Option<Arc<Mmap>> {
        self.map
            .guard()
            .as_ref()
            .filter(|m| m.len() as u64 >= end)
            .cloned()
    }

    /// A read-only mapping of the `.log` covering at least its first `end` bytes, for readers
    /// to take batches from the page cache without copying them; None when `end` is past the
    /// segment's size, the file is shorter than that size, or mapping fails (the reader then
    /// reads by position).
    ///
    /// A mapped file that is cut below the bytes read from it would kill the daemon (SIGBUS).
    /// Only bytes below [`LogSegment::size`] are ever read through a mapping, and the daemon
    /// itself only ever cuts a file above that size (a failed append) or before mapping it
    /// (recovery at load or at the first index check, which a mapping waits for); the log
    /// dir is one no other user may write (`logdir_trust`) and its `.lock` keeps out other
    /// daemons and brokers. The file's length is checked against
    /// the size when it is mapped. An active segment is mapped up to the size it may grow to
    /// (pages past the end of the file are reserved, never touched), so the records appended
    /// after mapping are read through the same mapping.
    pub fn mapping(&self, end: u64) -> Option<Arc<Mmap>> {
        if let Some(m) = self.cached_mapping(end) {
            return Some(m);
        }
        // The one lazy cut of a file is the recovery an index check may run: mapped only
        // once it is done (its lock waits for a check under way).
        self.ensure_indexes().ok()?;
        let _checked = self.check_lock.guard();
        let mut g = self.map.guard();
        if let Some(m) = g.as_ref()
            && m.len() as u64 >= end
        {
            return Some(m.clone());
        }
        let size = self.size();
        if end > size || size == 0 || size > usize::MAX as u64 {
            return None;
        }
        let file = self.file().ok()?;
        let file_len = file.metadata().ok()?.len();
        if file_len < size {
            // The reader reports the short file by reading it.
            return None;
        }
        let len = if self.active.load(Ordering::Acquire) {
            size.max(self.map_reserve.min(usize::MAX as u64))
        } else {
            size
        };
        // SAFETY: a read-only shared mapping; only bytes below `size()` (present in the file,
        // checked above, and never cut while the daemon runs, see above) are read through it.
        let m = match unsafe { MmapOptions::new().len(len as usize).map(&*file) } {
            Ok(m) => m,
            Err(e) => {
                log::debug!(
                    "{}: not mapped ({e}); reading by position",
                    self.log_path.display()
                );
                return None;
            }
        };
        let m = Arc::new(m);
        *g = Some(m.clone());
        Some(m)
    }

    /// Bytes of complete batches in the `.log`.
    pub fn size(&self) -> u64 {
        self.size.load(Ordering::Acquire)
    }

    pub fn read_at(&self, buf: &mut [u8], pos: u64) -> io::Result<usize> {
        // A failing disk's error names the segment (its errno is kept for the reader).
        self.file()?
            .read_full_at(buf, pos)
            .map_err(|e| crate::os::safe_fs::with_path(&self.log_path, e))
    }

    fn ensure_max_timestamp(&self, st: &mut SegmentAppendState) -> io::Result<()> {
        if st.max_timestamp_known {
            return Ok(());
        }
        // Kafka reads the last time-index entry; when the index is empty, scan batch headers.
        if let Some((ts, off)) = self.time_index.last_entry()? {
            st.index.set_max_timestamp(ts, off);
        }
        if st.index.max_timestamp().0 < 0 {
            for b in self.batches(0, self.size(), Check::Header) {
                let h = b?.header;
                if h.max_timestamp > st.index.max_timestamp().0 {
                    st.index.set_max_timestamp(h.max_timestamp, h.last_offset());
                }
            }
        }
        st.max_timestamp_known = true;
        Ok(())
    }

    /// The largest timestamp in the segment (-1 when it holds none).
    pub fn largest_timestamp(&self) -> io::Result<i64> {
        self.ensure_indexes()?;
        let mut st = self.state.guard();
        self.ensure_max_timestamp(&mut st)?;
        Ok(st.index.max_timestamp().0)
    }

    /// Kafka's `shouldRoll`, checked before appending a batch of `size` bytes.
    pub fn should_roll(
        &self,
        cfg: &LogConfig,
        size: u64,
        max_ts: i64,
        last_offset: i64,
    ) -> io::Result<Option<&'static str>> {
        let cur = self.size();
        if cur > cfg.segment_bytes.saturating_sub(size) {
            return Ok(Some("segment.bytes"));
        }
        if cur > 0 {
            let mut st = self.state.guard();
            if st.rolling_base_timestamp.is_none() {
                st.rolling_base_timestamp = self
                    .batches(0, cur, Check::Header)
                    .next()
                    .transpose()?
                    .map(|b| b.header.max_timestamp);
            }
            let waited = match st.rolling_base_timestamp {
                Some(t) if t >= 0 => max_ts - t,
                _ => self.created.elapsed().as_millis() as i64,
            };
            if waited > cfg.segment_ms {
                return Ok(Some("segment.ms"));
            }
        }
        if self.offset_index.is_full()? {
            return Ok(Some("a full offset index"));
        }
        if self.time_index.is_full()? {
            return Ok(Some("a full time index"));
        }
        let rel = last_offset - self.base_offset;
        if !(0..=i32::MAX as i64).contains(&rel) {
            return Ok(Some("an offset past the 4-byte relative offset"));
        }
        Ok(None)
    }

    /// Makes sure index entries can be written without faulting on a full disk.
    pub fn reserve_index_space(&self) -> io::Result<()> {
        self.offset_index.reserve_next()?;
        self.time_index.reserve_next()
    }

    /// Appends one encoded batch at the end of the `.log`, then applies Kafka's index rules
    /// ([`IndexBuilder`]). On a failed write the file is cut back, so no partial batch stays.
    pub fn append(&self, batch: &[u8], meta: &AppendMeta, cfg: &LogConfig) -> io::Result<()> {
        let position = self.size();
        let mut st = self.state.guard();
        self.ensure_max_timestamp(&mut st)?;
        // The topic's current `index.interval.bytes`: an override applies from the next batch.
        st.index.set_interval(cfg.index_interval_bytes);
        if st.index.entry_due() {
            self.reserve_index_space()?;
        }
        let f = self.file()?;
        if let Err(e) = f.write_all_at(batch, position) {
            let _ = f.set_len(position);
            return Err(e);
        }
        if st.rolling_base_timestamp.is_none() && position == 0 {
            st.rolling_base_timestamp = Some(meta.max_timestamp);
        }
        st.index.add(
            &mut self.mapped_indexes(),
            position,
            batch.len() as u64,
            meta.last_offset,
            meta.max_timestamp,
        )?;
        self.size
            .store(position + batch.len() as u64, Ordering::Release);
        let mut count = self.count.guard();
        if count.pos == position {
            self.note_count_mark(*count);
            *count = RecordCount {
                pos: position + batch.len() as u64,
                next: meta.last_offset + 1,
                value_bytes: count.value_bytes + meta.value_bytes,
                records: count.records + meta.records,
            };
        }
        Ok(())
    }

    /// The record count so far (see [`RecordCount`]): it may stop before the segment's end.
    pub fn record_count(&self) -> RecordCount {
        *self.count.guard()
    }

    /// Keeps a count that reaches further than the one kept.
    pub fn store_record_count(&self, count: RecordCount) {
        let mut kept = self.count.guard();
        if count.pos > kept.pos {
            *kept = count;
        }
    }

    /// Keeps `count` (taken at a batch boundary) as a count mark when it lies far enough past
    /// the last one.
    pub fn note_count_mark(&self, count: RecordCount) {
        let mut marks = self.count_marks.guard();
        let last = marks.last().map_or(0, |m| m.pos);
        if count.pos >= last + COUNT_MARK_SPACING {
            marks.push(count);
        }
    }

    /// The last count mark before `offset`: the count of every batch before a boundary whose
    /// next offset is at most `offset` (the segment's start when there is none).
    pub fn count_mark_before(&self, offset: i64) -> RecordCount {
        let marks = self.count_marks.guard();
        let i = marks.partition_point(|m| m.next <= offset);
        match i {
            0 => RecordCount {
                pos: 0,
                next: self.base_offset,
                value_bytes: 0,
                records: 0,
            },
            i => marks[i - 1],
        }
    }

    /// The last count mark whose lines (values and `\n`s) before it are at most `bytes`.
    pub fn count_mark_within(&self, bytes: u64) -> Option<RecordCount> {
        let marks = self.count_marks.guard();
        let i = marks.partition_point(|m| super::line_bytes(m) <= bytes);
        i.checked_sub(1).map(|i| marks[i])
    }

    /// Forgets the record count (the `.log` was rewritten from its start).
    fn reset_record_count(&self) {
        self.count_marks.guard().clear();
        *self.count.guard() = RecordCount {
            pos: 0,
            next: self.base_offset,
            value_bytes: 0,
            records: 0,
        };
    }

    /// Kafka's `onBecomeInactiveSegment` / close: final time-index entry, trim both indexes.
    pub fn seal(&self) -> io::Result<()> {
        if self.read_only {
            return Ok(());
        }
        let mut st = self.state.guard();
        self.ensure_max_timestamp(&mut st)?;
        st.index.seal(&mut self.mapped_indexes(), self.size())?;
        self.offset_index.trim()?;
        self.time_index.trim()?;
        Ok(())
    }

    pub fn flush(&self) -> io::Result<()> {
        let f = self.log.guard().clone();
        if let Some(f) = f {
            f.sync_data()?;
        }
        self.offset_index.flush()?;
        self.time_index.flush()
    }

    /// Sets the append state of a segment that was loaded without recovery.
    pub fn set_bytes_since_last_index_entry(&self) -> io::Result<()> {
        let start = self
            .offset_index
            .last_entry()?
            .map(|(_, p)| p as u64)
            .unwrap_or(0);
        self.state
            .guard()
            .index
            .set_bytes_since_last_entry(self.size().saturating_sub(start));
        Ok(())
    }

    /// The segment's index files as the place [`IndexBuilder`] writes entries to.
    fn mapped_indexes(&self) -> MappedIndexes<'_> {
        MappedIndexes {
            offsets: &self.offset_index,
            times: &self.time_index,
        }
    }

    /// Closes the files (unmapping the indexes).
    pub fn close(&self) {
        self.offset_index.close();
        self.time_index.close();
        *self.log.guard() = None;
        *self.map.guard() = None;
    }

    /// Deletes the segment as Kafka does: its files are renamed to `*.deleted`; the indexes go
    /// at once, the `.log` when the last reader holding this segment lets go of it (so an
    /// open `by-offset` stream keeps reading what it started on). A `.deleted` file left by
    /// a stop is removed at the next load.
    pub fn delete_files(&self) -> crate::error::Result<()> {
        if self.read_only {
            return Err(crate::error::Error::ReadOnly);
        }
        let _check = self.check_lock.guard();
        self.offset_index.close();
        self.time_index.close();
        // Renames and the flag change under the file lock: `file()` sees either the old name
        // with the flag clear or the new name with it set.
        let mut g = self.log.guard();
        if g.is_none() {
            // Held open from now on for the readers this segment still has.
            match self.dir.open_file(&self.log_name, Access::ReadOnly) {
                Ok(f) => *g = Some(Arc::new(f)),
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) => return Err(e.into()),
            }
        }
        let txn = format!("{}.txnindex", file_prefix(self.base_offset));
        for name in [
            self.log_name.as_str(),
            self.offset_index.name(),
            self.time_index.name(),
            txn.as_str(),
        ] {
            let d = deleted_name(name);
            match self.dir.rename(name, &d) {
                Ok(()) if name != self.log_name => self.dir.remove(&d)?,
                Ok(()) => self.deleted.store(true, Ordering::Release),
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) => return Err(e.into()),
            }
        }
        self.deleted.store(true, Ordering::Release);
        Ok(())
    }
}

impl ReadAt for LogSegment {
    fn read_full_at(&self, buf: &mut [u8], pos: u64) -> io::Result<usize> {
        self.read_at(buf, pos)
    }
}

impl Drop for LogSegment {
    fn drop(&mut self) {
        if self.deleted.load(Ordering::Acquire) {
            let _ = self.dir.remove_if_exists(&deleted_name(&self.log_name));
        }
    }
}

//! PartitionLog: one partition's log — segments keyed by base offset, append, roll, the
//! indexed lookups by offset and by time, load and recovery. Knows nothing about FUSE.

mod append;
pub mod cleaner;
pub mod index;
pub mod index_builder;
pub mod isolation;
mod loader;
pub mod offset_index;
mod reader;
pub mod segment;
pub mod time_index;
pub mod validator;
pub mod waiters;

use std::collections::BTreeMap;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};

use self::segment::{BatchPos, Check};
use crate::base::{SegmentFile, Waker};
use crate::config::LogConfig;
use crate::error::{Error, Result};
use crate::os::safe_fs::{Access, Dir};
use crate::record::BatchBuilder;
use crate::util::clock::now_ms;
use crate::util::read_window::ReadWindow;
use crate::util::sync::{MutexExt, RwLockExt};
pub use reader::LogReader;
pub use segment::LogSegment;

/// Offsets given to one appended batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AppendInfo {
    pub first_offset: i64,
    pub last_offset: i64,
}

struct LogAppendState {
    builder: BatchBuilder,
    unflushed_messages: u64,
    leader_epoch: i32,
}

/// How a partition was opened.
#[derive(Debug, Clone, Copy)]
pub struct LoadParams {
    pub recovery_point: i64,
    pub log_start_offset: i64,
    pub had_clean_shutdown: bool,
    /// A read-only mount: recovery and index rebuilds happen in memory only; nothing in the
    /// directory is written, truncated, renamed or deleted.
    pub read_only: bool,
}

pub struct PartitionLog {
    topic: String,
    partition: u32,
    dir: PathBuf,
    /// The open partition directory every file operation is relative to.
    dirfd: Arc<Dir>,
    read_only: bool,
    config: RwLock<Arc<LogConfig>>,
    segments: RwLock<BTreeMap<i64, Arc<LogSegment>>>,
    append: Mutex<LogAppendState>,
    log_end_offset: AtomicI64,
    log_start_offset: AtomicI64,
    recovery_point: AtomicI64,
    /// Bytes scanned by the last lookup's forward scan (for tests and diagnostics).
    last_lookup_scan: AtomicU64,
    /// Times the cleaner replaced segments since the log was loaded, and 1 for a recovery
    /// that cut invalid bytes off its end (see [`PartitionLog::generation`]).
    rewrites: AtomicU64,
    /// Readers waiting for records past the log end.
    waiters: waiters::Waiters,
    /// Held by whatever removes or replaces segments (retention, a cleaning round), so the
    /// two never work on the same segments at once.
    structure: Mutex<()>,
    /// Set when an fsync failed: what it covered may never have reached the disk while the
    /// page cache still shows it (and a second fsync would report success), so nothing of
    /// the partition is served or written until the next mount recovers it from the disk.
    offline: std::sync::atomic::AtomicBool,
    /// When the last append was (ms since the epoch; at load, the newest `.log`'s mtime;
    /// 0: not known): the mtime of the partition's files and directory.
    last_append: AtomicI64,
    /// Set when the partition is read with `isolation.level=read_committed`.
    isolation: std::sync::OnceLock<isolation::Isolation>,
    /// Records and bytes appended and read since the daemon started (`@metrics`).
    counters: Arc<crate::metrics::LogCounters>,
}

/// The bytes a lines stream makes of the records `count` counts: each value and `\n`.
fn line_bytes(count: &segment::RecordCount) -> u64 {
    count.value_bytes + count.records
}

/// Parses `00000000000000000042.log` style names into (base offset, suffix).
pub fn parse_segment_name(name: &str) -> Option<(i64, &str)> {
    let (num, suffix) = name.split_once('.')?;
    if num.len() != 20 || !num.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some((num.parse().ok()?, suffix))
}

impl PartitionLog {
    /// Creates an empty partition directory and its first segment.
    pub fn create(
        dir: &Path,
        topic: &str,
        partition: u32,
        config: Arc<LogConfig>,
    ) -> Result<PartitionLog> {
        match Dir::create(dir, 0o755) {
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
            r => drop(r?),
        }
        // The directory's entry in the log dir survives a power cut from here on (its first
        // segment's files are made durable as it is created).
        if let Some(parent) = dir.parent() {
            Dir::open_log_dir(parent)?.sync()?;
        }
        let log = PartitionLog::load(
            dir,
            topic,
            partition,
            config,
            LoadParams {
                recovery_point: 0,
                log_start_offset: 0,
                had_clean_shutdown: true,
                read_only: false,
            },
        )?;
        // Made now (its files' listing came before its first segment did).
        let _ = log
            .last_append
            .compare_exchange(0, now_ms(), Ordering::Relaxed, Ordering::Relaxed);
        Ok(log)
    }

    pub fn topic(&self) -> &str {
        &self.topic
    }
    pub fn partition(&self) -> u32 {
        self.partition
    }
    pub fn dir(&self) -> PathBuf {
        self.dir.clone()
    }
    /// When the partition was last appended to, as far as known (the files' mtime).
    pub fn modified(&self) -> Option<std::time::SystemTime> {
        let ms = self.last_append.load(Ordering::Relaxed);
        (ms > 0).then(|| std::time::UNIX_EPOCH + std::time::Duration::from_millis(ms as u64))
    }
    pub fn log_start_offset(&self) -> i64 {
        self.log_start_offset.load(Ordering::Acquire)
    }
    pub fn log_end_offset(&self) -> i64 {
        self.log_end_offset.load(Ordering::Acquire)
    }
    pub fn recovery_point(&self) -> i64 {
        self.recovery_point.load(Ordering::Acquire)
    }
    pub fn config(&self) -> Arc<LogConfig> {
        self.config.read_guard().clone()
    }
    pub fn set_config(&self, cfg: Arc<LogConfig>) {
        *self.config.write_guard() = cfg;
    }
    #[cfg(any(test, feature = "internals"))]
    /// Bytes the last lookup scanned forward from its index entry.
    pub fn last_lookup_scan_bytes(&self) -> u64 {
        self.last_lookup_scan.load(Ordering::Relaxed)
    }

    pub fn segments(&self) -> Vec<Arc<LogSegment>> {
        self.segments.read_guard().values().cloned().collect()
    }

    /// Records and bytes appended and read since the daemon started.
    pub fn counters(&self) -> &crate::metrics::LogCounters {
        &self.counters
    }

    pub fn size_in_bytes(&self) -> u64 {
        self.segments.read_guard().values().map(|s| s.size()).sum()
    }

    /// fsyncs the active segment and its indexes; the recovery point becomes the log end.
    pub fn flush(&self) -> Result<()> {
        if self.read_only {
            return Ok(());
        }
        self.online()?;
        let leo = self.log_end_offset();
        let segs = self.snapshot_from(self.recovery_point());
        for s in segs {
            s.flush().map_err(|e| self.take_offline(e))?;
        }
        self.recovery_point.fetch_max(leo, Ordering::AcqRel);
        Ok(())
    }

    /// Whether an fsync failed (see the `offline` field): every later use fails with EIO.
    pub fn is_offline(&self) -> bool {
        self.offline.load(Ordering::Acquire)
    }

    fn online(&self) -> Result<()> {
        if self.is_offline() {
            return Err(Error::LogDirOffline(self.dir.clone()));
        }
        Ok(())
    }

    /// Takes the partition offline after a failed fsync, with one log line.
    fn take_offline(&self, e: std::io::Error) -> Error {
        if !self.offline.swap(true, Ordering::AcqRel) {
            log::error!(
                "{}-{}: fsync failed ({e}): the partition is offline (its files fail with EIO) until the next mount recovers it from the disk",
                self.topic,
                self.partition
            );
            self.waiters.close();
        }
        Error::LogDirOffline(self.dir.clone())
    }

    /// Wakes `w` once the log end passes `offset`, or when the partition closes. A
    /// `read_committed` reader held at an open transaction waits for the next append (the
    /// last stable offset does not move while the transaction stays open).
    pub fn wait_for(&self, offset: i64, w: Arc<dyn Waker>) {
        let offset = match self.isolation.get() {
            Some(i) if i.open_from.is_some_and(|o| o <= offset) => {
                offset.max(self.log_end_offset())
            }
            _ => offset,
        };
        self.waiters.register(offset, w, || self.log_end_offset());
    }

    /// Reads the partition as a `read_committed` consumer from now on: learns the
    /// transactions its batches leave open (a scan of the batch headers).
    pub fn set_read_committed(&self) -> Result<()> {
        let segments = self.snapshot_from(i64::MIN);
        let found = isolation::Isolation::scan(&segments)?;
        if let Some(o) = found.open_from {
            log::info!(
                "{}-{}: a transaction is open from offset {o}: read_committed streams stop there",
                self.topic,
                self.partition
            );
        }
        let _ = self.isolation.set(found);
        Ok(())
    }

    /// The end a reader reads up to: the log end, or with `read_committed` the last stable
    /// offset (Kafka's end offset for that isolation level).
    pub fn read_end(&self) -> i64 {
        let leo = self.log_end_offset();
        self.isolation.get().map_or(leo, |i| i.stable_end(leo))
    }

    /// A reader from `offset` as the partition's isolation level shows it: with
    /// `read_committed`, up to the last stable offset and without the batches of aborted
    /// transactions (those the `.txnindex` files name, as Kafka's fetch collects them).
    pub fn read_isolated(&self, offset: i64) -> Result<LogReader> {
        let Some(iso) = self.isolation.get() else {
            return self.read_from_offset(offset);
        };
        self.online()?;
        let end = iso.stable_end(self.check_offset(offset)?);
        if offset >= end {
            return Ok(LogReader::new(Vec::new(), offset, offset));
        }
        let segments = self.snapshot_from(offset);
        let filter = isolation::AbortedFilter::collect(&self.dirfd, &segments, offset, end)?;
        let mut reader = self.reader_dropping(segments, offset, end, filter)?;
        reader.counted_by(self.counters.clone());
        Ok(reader)
    }

    /// A reader of `segments` from `offset` to `end` without the batches `filter` names.
    fn reader_dropping(
        &self,
        segments: Vec<Arc<LogSegment>>,
        offset: i64,
        end: i64,
        filter: isolation::AbortedFilter,
    ) -> Result<LogReader> {
        let mut reader = LogReader::new(segments, offset, end).dropping(filter);
        reader.position_at(offset, &self.last_lookup_scan)?;
        Ok(reader)
    }

    /// `lines_len` as the isolation level shows the records: with `read_committed` the range
    /// ends at the last stable offset, and a range holding aborted transactions is read.
    pub fn lines_len_isolated(&self, from: i64, to: i64) -> Result<u64> {
        if self.isolation.get().is_none() {
            return self.lines_len(from, to);
        }
        self.online()?;
        let to = to.min(self.read_end());
        if from >= to {
            return Ok(0);
        }
        let segments = self.snapshot_from(from);
        let filter = isolation::AbortedFilter::collect(&self.dirfd, &segments, from, to)?;
        if filter.is_empty() {
            return self.lines_len(from, to);
        }
        // Not counted in the bytes read: this measures the range.
        let mut reader = self.reader_dropping(segments, from, to, filter)?;
        let (mut at, mut out, mut total) = (from, Vec::new(), 0);
        while reader.next_batch_lines(&mut at, to, &mut out)? {
            total += out.len() as u64;
            out.clear();
        }
        Ok(total)
    }

    /// `lines_len_isolated` where it is found from the kept counts alone: None for a range
    /// that holds aborted transactions under `read_committed` (measured only by reading it).
    pub fn lines_len_counted(&self, from: i64, to: i64) -> Result<Option<u64>> {
        if self.isolation.get().is_some() {
            self.online()?;
            let to = to.min(self.read_end());
            if from >= to {
                return Ok(Some(0));
            }
            let segments = self.snapshot_from(from);
            if !isolation::AbortedFilter::collect(&self.dirfd, &segments, from, to)?.is_empty() {
                return Ok(None);
            }
        }
        self.lines_len(from, to).map(Some)
    }

    /// What tells this partition's directory from every other (see [`Dir::identity`]).
    pub fn identity(&self) -> u64 {
        self.dirfd.identity()
    }

    /// The cleaner's replacements since the load (and 1 for a recovery that cut the log).
    pub fn rewrites(&self) -> u64 {
        self.rewrites.load(Ordering::Acquire)
    }

    /// Whether the log is read with `read_committed`.
    pub fn committed_only(&self) -> bool {
        self.isolation.get().is_some()
    }

    /// What the records kept from the log start on are, as a number: it changes when the
    /// log start moves (retention, a deletion of records), the cleaner replaces segments or
    /// a recovery cut the log's end, never at an append or a roll. It is the same after a
    /// remount for a log left as it was (the cleaner's replacements are counted since the
    /// load, from 0).
    pub fn generation(&self) -> u64 {
        crate::util::stable_hash(&[
            &self.log_start_offset().to_le_bytes(),
            &self.rewrites.load(Ordering::Acquire).to_le_bytes(),
        ])
    }

    /// Where a lines stream from offset `from` reaches its byte `byte`, as far as the kept
    /// counts tell without reading more than a mark interval: (offset, bytes before it) of
    /// the last batch boundary at or after `from` with a count mark (or a segment's end)
    /// whose lines from `from` are at most `byte`; (from, 0) when none is. None under
    /// `read_committed` (the counts hold aborted records a stream skips).
    pub fn line_seek(&self, from: i64, byte: u64) -> Result<Option<(i64, u64)>> {
        if self.isolation.get().is_some() {
            return Ok(None);
        }
        let mut found = (from, 0);
        // The lines from `from` to the start of the segment at hand.
        let mut before = 0u64;
        for seg in self.snapshot_from(from) {
            let count = LogReader::count_segment(&seg)?;
            let lo = match from > seg.base_offset {
                true => LogReader::segment_lines_before(&seg, from, count)?,
                false => 0,
            };
            let in_seg = line_bytes(&count).saturating_sub(lo);
            if before + in_seg <= byte {
                before += in_seg;
                found = (count.next.max(from), before);
                continue;
            }
            if let Some(mark) = seg.count_mark_within(lo + (byte - before))
                && mark.next > from
            {
                found = (mark.next, before + line_bytes(&mark) - lo);
            }
            break;
        }
        Ok(Some(found))
    }

    /// Wakes every waiter for good: the partition is deleted or closing.
    pub fn close_waiters(&self) {
        self.waiters.close();
    }

    /// Clean close: seals the active segment (final time entry, trimmed indexes) and syncs.
    pub fn close(&self) -> Result<()> {
        self.close_waiters();
        if self.read_only {
            for s in self.segments() {
                s.close();
            }
            return Ok(());
        }
        let _st = self.append.guard();
        if self.is_offline() {
            // Nothing is flushed nor checkpointed as flushed: the next mount recovers it.
            for s in self.segments() {
                s.close();
            }
            return Err(Error::LogDirOffline(self.dir.clone()));
        }
        let active = self.active_segment();
        // A partition with nothing unflushed needs no fsync (as Kafka skips it).
        let idle = self.recovery_point() >= self.log_end_offset();
        active.seal()?;
        if !idle {
            active.flush()?;
        }
        for s in self.segments() {
            s.close();
        }
        self.carry_producer_snapshot(self.log_end_offset())?;
        self.recovery_point
            .store(self.log_end_offset(), Ordering::Release);
        Ok(())
    }

    /// Opens one of the files `segment_files` lists, for reading (never following a link).
    pub fn open_segment_file(&self, name: &str) -> Result<std::fs::File> {
        if !self.segment_files().iter().any(|f| f.name == name) {
            return Err(Error::from(std::io::Error::new(
                std::io::ErrorKind::NotFound,
                format!(
                    "{} is not a live segment file",
                    self.dir.join(name).display()
                ),
            )));
        }
        Ok(self.dirfd.open_file(name, Access::ReadOnly)?)
    }

    /// The live `.log`, `.index` and `.timeindex` files.
    pub fn segment_files(&self) -> Vec<SegmentFile> {
        let mut out = Vec::new();
        for s in self.segments() {
            for p in [
                s.log_path().to_path_buf(),
                s.offset_index.path().to_path_buf(),
                s.time_index.path().to_path_buf(),
            ] {
                out.push(SegmentFile {
                    name: p.file_name().unwrap().to_string_lossy().into_owned(),
                    path: p,
                });
            }
        }
        out
    }

    /// The segment holding `offset` (floor lookup on base offsets) and every later one.
    fn snapshot_from(&self, offset: i64) -> Vec<Arc<LogSegment>> {
        let map = self.segments.read_guard();
        let from = map
            .range(..=offset)
            .next_back()
            .map(|(b, _)| *b)
            .unwrap_or(i64::MIN);
        map.range(from..).map(|(_, s)| s.clone()).collect()
    }

    /// A reader of the records from `offset` to the log end as it is now. The start is found
    /// as Kafka finds it: floor segment, index binary search, forward scan of at most one
    /// index interval.
    pub fn read_from_offset(&self, offset: i64) -> Result<LogReader> {
        self.online()?;
        let end = self.check_offset(offset)?;
        if offset == end {
            // Nothing to read (`follow/latest`, a stream opened at the log end): a reader
            // given the active segment would check every batch of it to find that out.
            return Ok(LogReader::new(Vec::new(), offset, end));
        }
        let segments = self.snapshot_from(offset);
        let mut reader = LogReader::new(segments, offset, end);
        reader.position_at(offset, &self.last_lookup_scan)?;
        reader.counted_by(self.counters.clone());
        Ok(reader)
    }

    /// The bytes a lines stream shows of the data records at offsets in [from, to): each value
    /// and `\n`. Each segment is counted once and remembered (appends keep the count), with
    /// count marks along it, so a range's bytes in a segment are a subtraction of two counts,
    /// each a mark plus a scan of at most one mark interval: `fstat` of an open stream costs
    /// what a lookup costs, wherever it starts.
    pub fn lines_len(&self, from: i64, to: i64) -> Result<u64> {
        let mut total = 0;
        for seg in self.snapshot_from(from) {
            if seg.base_offset >= to {
                break;
            }
            let count = LogReader::count_segment(&seg)?;
            // Records appended since the range's end was taken are not in it.
            let hi = match to < count.next {
                true => LogReader::segment_lines_before(&seg, to, count)?,
                false => line_bytes(&count),
            };
            let lo = match from > seg.base_offset {
                true => LogReader::segment_lines_before(&seg, from, count)?,
                false => 0,
            };
            total += hi.checked_sub(lo).ok_or_else(|| {
                Error::Corrupt(format!(
                    "{}: lines before offset {from} ({lo} bytes) exceed those before {to} ({hi})",
                    seg.log_path().display()
                ))
            })?;
        }
        Ok(total)
    }

    /// The data records from the log start to the log end (`<p>/count`): control records
    /// and compacted gaps are not counted. Segments are counted from their kept counts
    /// (see [`segment::RecordCount`]); a log start inside a segment is counted from there by reading.
    pub fn record_count(&self) -> Result<u64> {
        let from = self.log_start_offset();
        let mut total = 0;
        for seg in self.snapshot_from(from) {
            if from > seg.base_offset {
                total += LogReader::segment_records_from(&seg, from)?;
                continue;
            }
            total += LogReader::count_segment(&seg)?.records;
        }
        Ok(total)
    }

    /// `by-offset/N` exists when log-start-offset <= N <= log-end-offset. Returns the log end.
    pub fn check_offset(&self, offset: i64) -> Result<i64> {
        let end = self.log_end_offset();
        crate::base::offset_in_range(offset, self.log_start_offset(), end)
    }

    /// The first offset whose record has a timestamp >= `ts` (Kafka's `fetchOffsetByTimestamp`).
    pub fn offset_for_time(&self, ts: i64) -> Result<Option<i64>> {
        let end = self.log_end_offset();
        let start = self.log_start_offset();
        let segs = self.snapshot_from(start);
        let mut scratch = Vec::new();
        for seg in segs {
            if seg.largest_timestamp()? < ts {
                continue;
            }
            // Kafka's findOffsetByTimestamp: the time index gives a starting position only;
            // records are filtered by the log start offset.
            let (_, time_off) = seg.time_index.lookup(ts)?;
            let from = start;
            let (_, pos) = seg.offset_index.lookup(time_off.max(start))?;
            let limit = seg.size();
            let mut window = ReadWindow::new(16 * 1024, 1 << 20);
            let mut batches = seg.batches(pos as u64, limit, Check::Header);
            for b in &mut batches {
                let BatchPos {
                    position,
                    header: h,
                } = b?;
                if h.base_offset >= end {
                    break;
                }
                // Control batches count, as in Kafka's searchForTimestamp (readers skip them).
                if h.max_timestamp >= ts && h.last_offset() >= from {
                    let view = seg.checked_batch_at(&mut window, position, limit)?;
                    for r in view.records(&mut scratch)? {
                        let r = r?;
                        if r.timestamp >= ts && r.offset >= from {
                            return Ok(Some(r.offset));
                        }
                    }
                }
            }
            batches.ensure_whole()?;
            seg.release_file();
        }
        Ok(None)
    }

    /// [`PartitionLog::offset_for_time`] as Kafka's ListOffsets answers a consumer: an offset
    /// at or past the end it reads to (the last stable offset under `read_committed`) is none.
    pub fn fetchable_offset_for_time(&self, ts: i64) -> Result<Option<i64>> {
        Ok(self.offset_for_time(ts)?.filter(|o| *o < self.read_end()))
    }

    /// A reader from the first record whose timestamp >= `ts`.
    pub fn read_from_time(&self, ts: i64) -> Result<LogReader> {
        self.online()?;
        match self.fetchable_offset_for_time(ts)? {
            Some(off) => self.read_isolated(off),
            None => Err(Error::NoRecordAtOrAfter(ts)),
        }
    }

    /// Deletes the oldest segments while `predicate(segment, next_base)` holds, never the
    /// active one (rolled first if every segment qualifies). Returns how many were deleted.
    pub fn delete_old_segments(
        &self,
        mut predicate: impl FnMut(&LogSegment, u64) -> bool,
    ) -> Result<usize> {
        if self.read_only {
            return Ok(0);
        }
        let _structure = self.structure.guard();
        let segs = self.segments();
        let mut deletable = Vec::new();
        for (i, s) in segs.iter().enumerate() {
            let is_last = i + 1 == segs.len();
            if is_last && s.size() == 0 {
                break;
            }
            if !predicate(s, s.size()) {
                break;
            }
            deletable.push(s.clone());
        }
        if deletable.is_empty() {
            return Ok(0);
        }
        if deletable.len() == segs.len() {
            self.roll_now()?;
        }
        let next_base = {
            let map = self.segments.read_guard();
            let last = deletable.last().unwrap().base_offset;
            map.range(last + 1..)
                .next()
                .map(|(b, _)| *b)
                .unwrap_or(self.log_end_offset())
        };
        self.log_start_offset.fetch_max(next_base, Ordering::AcqRel);
        {
            let mut map = self.segments.write_guard();
            for s in &deletable {
                map.remove(&s.base_offset);
            }
        }
        for s in &deletable {
            log::info!(
                "{}-{}: deleting segment {} (log start offset now {next_base})",
                self.topic,
                self.partition,
                s.base_offset
            );
            s.delete_files()?;
        }
        Ok(deletable.len())
    }
}

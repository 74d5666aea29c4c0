//! PartitionLog: one partition's log — segments keyed by base offset, append, roll, the
//! indexed lookups by offset and by time, load and recovery. Knows nothing about FUSE.

pub mod index;
pub mod offset_index;
pub mod segment;
pub mod time_index;
pub mod validator;

use std::collections::BTreeMap;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{SystemTime, UNIX_EPOCH};

use crate::config::LogConfig;
use crate::error::{Error, Result};
use crate::record::{
    BatchBuilder, BatchHeader, BatchOptions, LOG_OVERHEAD, MIN_SIZE_FIELD, PREFIX_SIZE, Record,
    RecordInput,
};
use crate::safe_fs::{Access, Dir, Entry, Kind};
pub use segment::LogSegment;
use segment::{AppendMeta, BatchPos};

pub fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

/// Offsets given to one appended batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AppendInfo {
    pub first_offset: i64,
    pub last_offset: i64,
}

/// A file of the partition directory shown under `segments/`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SegmentFile {
    pub name: String,
    pub path: PathBuf,
}

struct AppendState {
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
    append: Mutex<AppendState>,
    log_end_offset: AtomicI64,
    log_start_offset: AtomicI64,
    recovery_point: AtomicI64,
    /// Bytes scanned by the last lookup's forward scan (for tests and diagnostics).
    last_lookup_scan: AtomicU64,
}

/// The largest epoch in a partition's `leader-epoch-checkpoint` (Kafka's `epoch startOffset`
/// checkpoint), if the file exists and parses.
fn read_latest_leader_epoch(dir: &Dir) -> Option<i32> {
    let mut text = String::new();
    std::io::Read::read_to_string(
        &mut dir
            .open_file("leader-epoch-checkpoint", Access::ReadOnly)
            .ok()?,
        &mut text,
    )
    .ok()?;
    text.lines()
        .skip(2)
        .filter_map(|l| l.split_whitespace().next()?.parse::<i32>().ok())
        .max()
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
        PartitionLog::load(
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
        )
    }

    /// Opens an existing partition directory as Kafka's `LogLoader` does: removes leftover
    /// temporary files, loads segments (lazily), recovers from the recovery point after an
    /// unclean shutdown, and preallocates the active segment's indexes.
    pub fn load(
        dir: &Path,
        topic: &str,
        partition: u32,
        config: Arc<LogConfig>,
        params: LoadParams,
    ) -> Result<PartitionLog> {
        // A symlink as the partition directory, or as any file in it, is refused: the daemon
        // never follows a link out of its log dir.
        let dirfd = Arc::new(Dir::open(dir)?);
        let ro = params.read_only;
        let mut logs: BTreeMap<i64, u64> = BTreeMap::new();
        let mut indexes: Vec<(i64, String)> = Vec::new();
        let mut swaps: Vec<String> = Vec::new();
        // The files present, from the one listing (check_indexes asks it, not the disk).
        let mut present: std::collections::HashSet<String> = std::collections::HashSet::new();
        for entry in dirfd.entries()? {
            let (name, kind) = (entry.name, entry.kind);
            let is_segment_file = parse_segment_name(&name).is_some()
                || name.ends_with(".deleted")
                || name.ends_with(".cleaned")
                || name.ends_with(".swap");
            if is_segment_file && kind != Kind::File {
                return Err(Error::Io(std::io::Error::new(
                    std::io::ErrorKind::InvalidData,
                    format!(
                        "{} is a {}, not a regular file: refusing to load {topic}-{partition}",
                        dirfd.join(&name).display(),
                        if kind == Kind::Symlink {
                            "symlink"
                        } else {
                            "non-regular file"
                        }
                    ),
                )));
            }
            if name.ends_with(".deleted") || name.ends_with(".cleaned") {
                if !ro {
                    log::info!("{topic}-{partition}: removing leftover {name}");
                    dirfd.remove(&name)?;
                }
                continue;
            }
            if name.ends_with(".swap") {
                swaps.push(name);
                continue;
            }
            match parse_segment_name(&name) {
                Some((base, "log")) => {
                    logs.insert(base, entry.len);
                }
                Some((base, "index" | "timeindex" | "txnindex")) => {
                    present.insert(name.clone());
                    indexes.push((base, name));
                }
                _ => {}
            }
        }
        for swap in swaps {
            let target = swap.trim_end_matches(".swap").to_string();
            if ro {
                log::warn!(
                    "{topic}-{partition}: leaving {swap} as it is (read-only mount); serving {target}"
                );
                continue;
            }
            // A compaction/split result that was ready to be swapped in: complete the swap.
            log::info!("{topic}-{partition}: completing swap of {target}");
            dirfd.rename(&swap, &target)?;
            present.insert(target.clone());
            if let Some((base, "log")) = parse_segment_name(&target) {
                let len = dirfd
                    .open_file(&target, Access::ReadOnly)?
                    .metadata()?
                    .len();
                logs.insert(base, len);
            }
        }
        for (base, name) in indexes {
            if !logs.contains_key(&base) && !ro {
                log::warn!(
                    "{topic}-{partition}: found an orphaned index file {}, deleting it",
                    dirfd.join(&name).display()
                );
                dirfd.remove(&name)?;
            }
        }
        let mut segments: BTreeMap<i64, Arc<LogSegment>> = BTreeMap::new();
        for (&base, &size) in &logs {
            segments.insert(
                base,
                Arc::new(LogSegment::open(&dirfd, base, &config, size, ro)),
            );
        }
        let log = PartitionLog {
            topic: topic.to_string(),
            partition,
            dir: dir.to_path_buf(),
            dirfd: dirfd.clone(),
            read_only: ro,
            config: RwLock::new(config.clone()),
            segments: RwLock::new(segments),
            append: Mutex::new(AppendState {
                builder: BatchBuilder::new(),
                unflushed_messages: 0,
                leader_epoch: 0,
            }),
            log_end_offset: AtomicI64::new(0),
            log_start_offset: AtomicI64::new(0),
            recovery_point: AtomicI64::new(params.recovery_point),
            last_lookup_scan: AtomicU64::new(0),
        };
        log.check_indexes(params.had_clean_shutdown, &present)?;
        if !params.had_clean_shutdown {
            log.recover_from(params.recovery_point)?;
        }
        let mut segs = log.segments.write().unwrap();
        if segs.is_empty() {
            let base = params.log_start_offset.max(0);
            let seg = if ro {
                // Nothing to serve and nothing may be created: an empty segment in memory.
                LogSegment::open(&dirfd, base, &config, 0, true)
            } else {
                LogSegment::create(&dirfd, base, &config)?
            };
            segs.insert(base, Arc::new(seg));
        }
        let active = segs.values().next_back().unwrap().clone();
        let first_base = *segs.keys().next().unwrap();
        drop(segs);
        active.set_active(true);
        if params.had_clean_shutdown && active.size() > 0 {
            // The clean-shutdown marker vouches for what was closed cleanly, not for bytes
            // changed since: check the active segment's tail before anything is appended
            // after it.
            if let Some(problem) = active.tail_problem()? {
                log::warn!(
                    "{topic}-{partition}: the active segment {} fails its tail check after a clean shutdown ({problem}); recovering it",
                    active.log_path().display()
                );
                log.recover_segment(&active, &config)?;
            }
        }
        active.ensure_indexes()?;
        if !ro {
            active.offset_index.open_active()?;
            active.time_index.open_active()?;
        }
        active.set_bytes_since_last_index_entry()?;
        let (next, epoch) = active.read_next_offset()?;
        let leo = next.unwrap_or(active.base_offset);
        log.log_end_offset.store(leo, Ordering::Release);
        log.log_start_offset.store(
            params.log_start_offset.max(first_base).min(leo),
            Ordering::Release,
        );
        let rp = if params.had_clean_shutdown {
            leo
        } else {
            params.recovery_point.min(leo)
        };
        log.recovery_point.store(rp, Ordering::Release);
        // New batches carry the latest leader epoch the partition has seen (a broker's
        // leader-epoch-checkpoint, or the last batch), so a broker can take the dir back.
        let checkpointed = read_latest_leader_epoch(&dirfd).unwrap_or(0);
        log.append.lock().unwrap().leader_epoch = epoch.unwrap_or(0).max(checkpointed).max(0);
        Ok(log)
    }

    /// Detects missing or corrupt index files. After a clean shutdown, each segment's indexes
    /// are checked as they load; a missing `.index` forces that segment's recovery.
    /// `present` holds the names of the files the directory listing found.
    fn check_indexes(
        &self,
        clean: bool,
        present: &std::collections::HashSet<String>,
    ) -> Result<()> {
        let segs: Vec<Arc<LogSegment>> = self.segments.read().unwrap().values().cloned().collect();
        let cfg = self.config();
        for seg in segs {
            let missing = !present.contains(seg.offset_index.name())
                || !present.contains(seg.time_index.name());
            if missing {
                if clean {
                    log::warn!(
                        "{}-{}: index files of segment {} are missing, rebuilding them",
                        self.topic,
                        self.partition,
                        seg.base_offset
                    );
                }
                self.recover_segment(&seg, &cfg)?;
            }
        }
        Ok(())
    }

    fn recover_segment(&self, seg: &LogSegment, cfg: &LogConfig) -> Result<u64> {
        let (truncated, _) = seg.recover(cfg)?;
        seg.seal()?;
        seg.release_file();
        if truncated > 0 && self.read_only {
            log::warn!(
                "{}-{}: segment {} ({}) has {truncated} invalid bytes at its end; serving up to the last valid batch (read-only mount: nothing truncated)",
                self.topic,
                self.partition,
                seg.base_offset,
                seg.log_path().display()
            );
        } else if truncated > 0 {
            log::warn!(
                "{}-{}: truncated {truncated} invalid bytes at the end of segment {} ({})",
                self.topic,
                self.partition,
                seg.base_offset,
                seg.log_path().display()
            );
        }
        Ok(truncated)
    }

    /// Recovers every segment from the one holding `recovery_point`; a segment that lost bytes
    /// ends the log: later segments are deleted.
    fn recover_from(&self, recovery_point: i64) -> Result<()> {
        let segs = self.snapshot_from(recovery_point);
        let cfg = self.config();
        let total = segs.len();
        for (i, seg) in segs.iter().enumerate() {
            log::info!(
                "{}-{}: recovering unflushed segment {} ({}/{total})",
                self.topic,
                self.partition,
                seg.base_offset,
                i + 1
            );
            let truncated = self.recover_segment(seg, &cfg)?;
            if truncated > 0 {
                let mut map = self.segments.write().unwrap();
                for later in &segs[i + 1..] {
                    log::warn!(
                        "{}-{}: deleting segment {} after the truncation point",
                        self.topic,
                        self.partition,
                        later.base_offset
                    );
                    map.remove(&later.base_offset);
                    if !self.read_only {
                        later.delete_files()?;
                    }
                }
                break;
            }
        }
        // An empty segment other than the first one carries no data: keep only if it is last.
        Ok(())
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
        self.config.read().unwrap().clone()
    }
    pub fn set_config(&self, cfg: Arc<LogConfig>) {
        *self.config.write().unwrap() = cfg;
    }
    /// Bytes the last lookup scanned forward from its index entry.
    pub fn last_lookup_scan_bytes(&self) -> u64 {
        self.last_lookup_scan.load(Ordering::Relaxed)
    }

    pub fn segments(&self) -> Vec<Arc<LogSegment>> {
        self.segments.read().unwrap().values().cloned().collect()
    }

    pub fn size_in_bytes(&self) -> u64 {
        self.segments
            .read()
            .unwrap()
            .values()
            .map(|s| s.size())
            .sum()
    }

    /// Appends `records` as ONE batch with the next offsets. A batch larger than
    /// `max.message.bytes` is refused before anything is written. Returns once the batch is
    /// in the segment file and the indexes are updated.
    pub fn append(&self, records: &[RecordInput<'_>]) -> Result<AppendInfo> {
        if self.read_only {
            return Err(Error::Io(std::io::Error::from_raw_os_error(libc::EROFS)));
        }
        if records.is_empty() {
            let leo = self.log_end_offset();
            return Ok(AppendInfo {
                first_offset: leo,
                last_offset: leo - 1,
            });
        }
        let cfg = self.config();
        validator::validate_timestamps(records, &cfg, now_ms())?;
        validator::validate_keys(records, &cfg, &self.topic, self.partition)?;
        let mut st = self.append.lock().unwrap();
        let base = self.log_end_offset();
        let now = now_ms();
        let opts = BatchOptions {
            compression: cfg.write_compression(),
            timestamp_type: cfg.message_timestamp_type,
            log_append_time: now,
            partition_leader_epoch: st.leader_epoch,
            ..Default::default()
        };
        st.builder.begin(base, opts);
        for r in records {
            st.builder.add(r);
        }
        let max_ts = st.builder.max_timestamp();
        let last_offset = base + records.len() as i64 - 1;
        let batch = st.builder.finish()?;
        let size = batch.len();
        let max = cfg.max_message_bytes;
        if size > max || size as u64 > cfg.segment_bytes {
            return Err(Error::RecordTooLarge {
                size,
                max: max.min(cfg.segment_bytes as usize),
            });
        }
        let active = self.active_segment();
        let active = match active.should_roll(&cfg, size as u64, max_ts, last_offset)? {
            Some(reason) => {
                log::info!(
                    "{}-{}: rolling segment {} at offset {base} ({reason})",
                    self.topic,
                    self.partition,
                    active.base_offset
                );
                self.roll(&active, base, &cfg)?
            }
            None => active,
        };
        let meta = AppendMeta {
            last_offset,
            max_timestamp: max_ts,
        };
        active.append(batch, &meta, &cfg)?;
        self.log_end_offset
            .store(last_offset + 1, Ordering::Release);
        st.unflushed_messages += records.len() as u64;
        if st.unflushed_messages >= cfg.flush_messages {
            st.unflushed_messages = 0;
            drop(st);
            self.flush()?;
        }
        Ok(AppendInfo {
            first_offset: base,
            last_offset,
        })
    }

    fn active_segment(&self) -> Arc<LogSegment> {
        self.segments
            .read()
            .unwrap()
            .values()
            .next_back()
            .unwrap()
            .clone()
    }

    /// Seals the active segment and starts a new one at `base`. The sealed segment is flushed
    /// and the recovery point moves to `base`, as Kafka's roll does.
    fn roll(&self, old: &Arc<LogSegment>, base: i64, cfg: &LogConfig) -> Result<Arc<LogSegment>> {
        if old.size() == 0 && old.base_offset == base {
            // Rolling onto an empty active segment with the same base offset: keep it.
            return Ok(old.clone());
        }
        let new = Arc::new(LogSegment::create(&self.dirfd, base, cfg)?);
        old.seal()?;
        self.segments.write().unwrap().insert(base, new.clone());
        old.set_active(false);
        old.flush()?;
        old.release_file();
        self.recovery_point.fetch_max(base, Ordering::AcqRel);
        self.carry_producer_snapshot(base)?;
        Ok(new)
    }

    /// Kafka writes a producer-state snapshot (`<offset>.snapshot`) at every roll and at
    /// shutdown, and at load deletes snapshots it does not expect. In a dir a broker wrote,
    /// carry the latest snapshot forward to `offset`: topicfs's batches have no producer ids,
    /// so the producer state at `offset` is the state of the latest snapshot.
    fn carry_producer_snapshot(&self, offset: i64) -> Result<()> {
        let mut latest: Option<(i64, String)> = None;
        for Entry { name, kind, .. } in self.dirfd.entries()? {
            if let Some((off, "snapshot")) = parse_segment_name(&name)
                && kind == Kind::File
                && off <= offset
                && latest.as_ref().is_none_or(|(l, _)| off > *l)
            {
                latest = Some((off, name.clone()));
            }
        }
        let Some((off, name)) = latest else {
            return Ok(());
        };
        if off == offset {
            return Ok(());
        }
        let mut bytes = Vec::new();
        std::io::Read::read_to_end(
            &mut self.dirfd.open_file(&name, Access::ReadOnly)?,
            &mut bytes,
        )?;
        let target = format!("{}.snapshot", segment::file_prefix(offset));
        self.dirfd.write_atomic(&target, &bytes)?;
        Ok(())
    }

    /// Forces a new segment if the active one holds data (used before retention deletes all).
    pub fn roll_now(&self) -> Result<()> {
        let cfg = self.config();
        let _st = self.append.lock().unwrap();
        let active = self.active_segment();
        if active.size() > 0 {
            self.roll(&active, self.log_end_offset(), &cfg)?;
        }
        Ok(())
    }

    /// fsyncs the active segment and its indexes; the recovery point becomes the log end.
    pub fn flush(&self) -> Result<()> {
        if self.read_only {
            return Ok(());
        }
        let leo = self.log_end_offset();
        let segs = self.snapshot_from(self.recovery_point());
        for s in segs {
            s.flush()?;
        }
        self.recovery_point.fetch_max(leo, Ordering::AcqRel);
        Ok(())
    }

    /// Clean close: seals the active segment (final time entry, trimmed indexes) and syncs.
    pub fn close(&self) -> Result<()> {
        if self.read_only {
            for s in self.segments() {
                s.close();
            }
            return Ok(());
        }
        let _st = self.append.lock().unwrap();
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
            return Err(Error::Io(std::io::Error::new(
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
        let map = self.segments.read().unwrap();
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
        let end = self.check_offset(offset)?;
        let segments = self.snapshot_from(offset);
        let mut reader = LogReader::new(segments, offset, end);
        if offset < end {
            reader.position_at(offset, &self.last_lookup_scan)?;
        }
        Ok(reader)
    }

    /// `by-offset/N` exists when log-start-offset <= N <= log-end-offset. Returns the log end.
    pub fn check_offset(&self, offset: i64) -> Result<i64> {
        let end = self.log_end_offset();
        let start = self.log_start_offset();
        if offset < start || offset > end {
            return Err(Error::OffsetOutOfRange {
                offset,
                log_start: start,
                log_end: end,
            });
        }
        Ok(end)
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
            let mut p = pos as u64;
            let mut buf = Vec::new();
            while let Some(h) = seg.batch_at(p, limit)? {
                if h.base_offset >= end {
                    break;
                }
                // Control batches count, as in Kafka's searchForTimestamp (readers skip them).
                if h.max_timestamp >= ts && h.last_offset() >= from {
                    buf.resize(h.size(), 0);
                    seg.read_at(&mut buf, p)?;
                    let view = seg
                        .check_batch(&buf, None)
                        .map_err(|e| segment::corrupt(seg.log_path(), p, e))?;
                    for r in view
                        .records(&mut scratch)
                        .map_err(|e| Error::Corrupt(e.to_string()))?
                    {
                        let r = r.map_err(|e| Error::Corrupt(e.to_string()))?;
                        if r.timestamp >= ts && r.offset >= from {
                            return Ok(Some(r.offset));
                        }
                    }
                }
                p += h.size() as u64;
            }
            seg.release_file();
        }
        Ok(None)
    }

    /// A reader from the first record whose timestamp >= `ts`.
    pub fn read_from_time(&self, ts: i64) -> Result<LogReader> {
        match self.offset_for_time(ts)? {
            Some(off) => self.read_from_offset(off),
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
            let map = self.segments.read().unwrap();
            let last = deletable.last().unwrap().base_offset;
            map.range(last + 1..)
                .next()
                .map(|(b, _)| *b)
                .unwrap_or(self.log_end_offset())
        };
        self.log_start_offset.fetch_max(next_base, Ordering::AcqRel);
        {
            let mut map = self.segments.write().unwrap();
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

/// Streams the records of one partition from a start offset to the end offset fixed at open.
/// Holds its own snapshot of the segments, so appends and retention never disturb it.
pub struct LogReader {
    segments: Vec<Arc<LogSegment>>,
    seg: usize,
    pos: u64,
    start: i64,
    end: i64,
    buf: Vec<u8>,
    buf_pos: u64,
    buf_len: usize,
    scratch: Vec<u8>,
    chunk: usize,
    /// The last offset of the last batch read: the next one must start after it.
    last_served: Option<i64>,
}

impl Drop for LogReader {
    /// A reader closed mid-segment (a lookup that read one line) closes that segment's `.log`
    /// if it is inactive, so lookups across thousands of segments do not pile up descriptors.
    fn drop(&mut self) {
        if let Some(s) = self.segments.get(self.seg) {
            s.release_file();
        }
    }
}

/// Reads start small (a lookup needs one batch) and double up to this size while streaming.
const READ_CHUNK: usize = 256 * 1024;
const FIRST_READ_CHUNK: usize = 16 * 1024;

impl LogReader {
    fn new(segments: Vec<Arc<LogSegment>>, start: i64, end: i64) -> LogReader {
        LogReader {
            segments,
            seg: 0,
            pos: 0,
            start,
            end,
            buf: Vec::new(),
            buf_pos: 0,
            buf_len: 0,
            scratch: Vec::new(),
            chunk: FIRST_READ_CHUNK,
            last_served: None,
        }
    }

    pub fn end_offset(&self) -> i64 {
        self.end
    }
    pub fn start_offset(&self) -> i64 {
        self.start
    }

    fn position_at(&mut self, offset: i64, scan: &AtomicU64) -> Result<()> {
        while self.seg < self.segments.len() {
            let s = &self.segments[self.seg];
            let (found, scanned): (Option<BatchPos>, u64) = s.translate_offset(offset)?;
            scan.store(scanned, Ordering::Relaxed);
            if let Some(bp) = found {
                self.pos = bp.position;
                return Ok(());
            }
            self.next_segment();
        }
        Ok(())
    }

    /// Moves to the start of the next segment, closing the one left behind if it is inactive.
    fn next_segment(&mut self) {
        if let Some(s) = self.segments.get(self.seg) {
            s.release_file();
        }
        self.seg += 1;
        self.pos = 0;
        self.buf_len = 0;
    }

    /// Makes bytes [pos, pos+n) of the current segment available in `buf` (the caller checked
    /// they lie below the segment's size). A file shorter than that size is an error.
    fn fill(&mut self, n: usize, limit: u64) -> Result<usize> {
        let have_from = self.buf_pos;
        let have_to = self.buf_pos + self.buf_len as u64;
        if self.pos >= have_from && self.pos + n as u64 <= have_to {
            return Ok((self.pos - have_from) as usize);
        }
        let want = n.max(self.chunk).min((limit - self.pos) as usize).max(n);
        self.chunk = (self.chunk * 2).min(READ_CHUNK);
        if self.buf.len() < want {
            self.buf.resize(want, 0);
        }
        let seg = &self.segments[self.seg];
        let got = seg.read_at(&mut self.buf[..want], self.pos)?;
        self.buf_pos = self.pos;
        self.buf_len = got;
        if got < n {
            return Err(segment::corrupt(
                seg.log_path(),
                self.pos + got as u64,
                format!("the file ends before the {limit} bytes the segment holds"),
            )
            .into());
        }
        Ok(0)
    }

    /// The error for bytes at `pos` of the current segment that are not a valid batch.
    fn corrupt_here(&self, pos: u64, what: impl std::fmt::Display) -> Error {
        segment::corrupt(self.segments[self.seg].log_path(), pos, what).into()
    }

    /// Decodes the next batch and calls `f` for each data record in [start, end) (control
    /// batches are skipped). Returns Ok(false) at the end.
    pub fn next_batch(&mut self, f: &mut dyn FnMut(&Record<'_>)) -> Result<bool> {
        self.next_batch_meta(&mut |_, r| f(r))
    }

    /// Like [`LogReader::next_batch`], also passing each record's batch header (timestamp
    /// type, producer fields...).
    pub fn next_batch_meta(
        &mut self,
        f: &mut dyn FnMut(&BatchHeader, &Record<'_>),
    ) -> Result<bool> {
        loop {
            if self.seg >= self.segments.len() {
                return Ok(false);
            }
            let limit = self.segments[self.seg].size();
            if self.pos >= limit {
                self.next_segment();
                continue;
            }
            if self.pos + PREFIX_SIZE as u64 > limit {
                return Err(self.corrupt_here(
                    self.pos,
                    format!("a partial batch header before the end ({limit} bytes)"),
                ));
            }
            let at = self.fill(PREFIX_SIZE, limit)?;
            let size_field = i32::from_be_bytes(self.buf[at + 8..at + 12].try_into().unwrap());
            let base = i64::from_be_bytes(self.buf[at..at + 8].try_into().unwrap());
            if base >= self.end {
                self.segments[self.seg].release_file();
                self.seg = self.segments.len();
                return Ok(false);
            }
            if size_field < MIN_SIZE_FIELD {
                return Err(self.corrupt_here(self.pos, format!("invalid batch size {size_field}")));
            }
            let size = size_field as usize + LOG_OVERHEAD;
            if self.pos + size as u64 > limit {
                return Err(self.corrupt_here(
                    self.pos,
                    format!(
                        "a batch of {size} bytes runs past the end of the segment ({limit} bytes)"
                    ),
                ));
            }
            let at = self.fill(size, limit)?;
            // Every batch served is verified by the segment's one validity rule.
            let view = match self.segments[self.seg]
                .check_batch(&self.buf[at..at + size], self.last_served)
            {
                Ok(v) => v,
                Err(e) => return Err(self.corrupt_here(self.pos, e)),
            };
            let h = view.header;
            self.last_served = Some(h.last_offset());
            let pos = self.pos;
            self.pos += size as u64;
            if h.last_offset() < self.start || h.is_control() {
                continue;
            }
            let (start, end) = (self.start, self.end);
            let path = self.segments[self.seg].log_path();
            let bad =
                |e: crate::record::BatchError| -> Error { segment::corrupt(path, pos, e).into() };
            let records = view.records(&mut self.scratch).map_err(bad)?;
            for r in records {
                let r = r.map_err(bad)?;
                if r.offset >= start && r.offset < end {
                    f(&view.header, &r);
                }
            }
            return Ok(true);
        }
    }
}

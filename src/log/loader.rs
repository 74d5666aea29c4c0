//! Loading a partition as Kafka's `LogLoader` does: leftover temporary files, completed
//! swaps, orphaned indexes, index checks, and recovery of unflushed segments after an unclean
//! shutdown.

use std::collections::{BTreeMap, HashSet};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64};
use std::sync::{Arc, Mutex, OnceLock, RwLock};

use super::cleaner::swap::PendingSwap;
use super::{LoadParams, LogAppendState, LogSegment, PartitionLog, cleaner, parse_segment_name};
use crate::config::LogConfig;
use crate::error::{Error, Result};
use crate::os::safe_fs::{Access, Dir, Entry, Kind};
use crate::record::BatchBuilder;

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

/// A partition being loaded (Kafka's `LogLoader`): its segments before the [`PartitionLog`]
/// over them is built.
struct Loader<'a> {
    topic: &'a str,
    partition: u32,
    dirfd: Arc<Dir>,
    config: Arc<LogConfig>,
    read_only: bool,
    segments: BTreeMap<i64, Arc<LogSegment>>,
}

/// What loading leaves the log at; the [`PartitionLog`] is built from it.
struct LoadedOffsets {
    log_end_offset: i64,
    log_start_offset: i64,
    recovery_point: i64,
    /// The leader epoch new batches carry.
    leader_epoch: i32,
    /// The newest `.log`'s modification time (ms since the epoch; 0: none).
    last_append: i64,
}

/// The segment files one listing found.
#[derive(Default)]
struct SegmentFiles {
    /// `.log` files: base offset and size.
    logs: BTreeMap<i64, u64>,
    /// Index files: base offset and name.
    indexes: Vec<(i64, String)>,
    /// Every index file present (check_indexes asks it, not the disk).
    present: HashSet<String>,
}

impl PartitionLog {
    /// Opens an existing partition directory as Kafka's `LogLoader` does: lists it (completing
    /// an interrupted clean), removes orphaned indexes, opens the segments (lazily), recovers
    /// from the recovery point after an unclean shutdown, and finishes the active segment.
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
        let name = format!("{topic}-{partition}");
        let ro = params.read_only;
        let (entries, last_append) = list_files(&dirfd, &name, ro)?;
        let pending = pending_swaps(&dirfd, &entries, &name, ro)?;
        let files = segment_files(entries, &pending);
        remove_orphaned_indexes(&dirfd, &files, &name, ro)?;
        let mut loader = Loader {
            topic,
            partition,
            segments: open_segments(&dirfd, &config, &files.logs, &pending, ro),
            dirfd,
            config,
            read_only: ro,
        };
        loader.check_indexes(params.had_clean_shutdown, &files.present)?;
        if !params.had_clean_shutdown {
            loader.recover_from(params.recovery_point)?;
        }
        let offsets = loader.finish_active(&params, last_append)?;
        Ok(loader.build(dir, offsets))
    }
}

/// The partition directory's files, any interrupted clean completed first (Kafka's temp-file
/// pass), and the modification time of its newest `.log` (the partition's last append, as
/// the files tell it). A segment file that is not a regular file refuses the load.
fn list_files(dirfd: &Arc<Dir>, name: &str, ro: bool) -> Result<(Vec<Entry>, i64)> {
    let mut entries = dirfd.entries()?;
    let last_append = entries
        .iter()
        .filter(|e| e.name.ends_with(".log"))
        .filter_map(|e| e.modified?.duration_since(std::time::UNIX_EPOCH).ok())
        .max()
        .map_or(0, |d| d.as_millis() as i64);
    for entry in &entries {
        let is_segment_file = parse_segment_name(&entry.name).is_some()
            || entry.name.ends_with(".deleted")
            || entry.name.ends_with(".cleaned")
            || entry.name.ends_with(".swap");
        if is_segment_file && entry.kind != Kind::File {
            return Err(Error::from(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!(
                    "{} is a {}, not a regular file: refusing to load {name}",
                    dirfd.join(&entry.name).display(),
                    if entry.kind == Kind::Symlink {
                        "symlink"
                    } else {
                        "non-regular file"
                    }
                ),
            )));
        }
    }
    if !ro && cleaner::swap::has_temp_files(&entries) {
        // An interrupted clean is completed or undone.
        cleaner::swap::complete_interrupted(dirfd, &entries, name)?;
        entries = dirfd.entries()?;
    }
    Ok((entries, last_append))
}

/// The `.swap` segments a read-only mount serves: it may not complete an interrupted clean,
/// so it serves what completing it would leave, instead of the files they replace.
fn pending_swaps(dirfd: &Arc<Dir>, entries: &[Entry], name: &str, ro: bool) -> Result<PendingSwap> {
    if !ro || !entries.iter().any(|e| e.name.ends_with(".swap")) {
        return Ok(PendingSwap::default());
    }
    let p = cleaner::swap::pending(dirfd, entries)?;
    log::warn!(
        "{name}: an interrupted clean left .swap files (read-only mount: left as they are); serving segments {:?} from them instead of the files of offsets {:?}",
        p.logs.keys().collect::<Vec<_>>(),
        p.replaced
    );
    Ok(p)
}

/// Sorts the listing into `.log` files and index files, leaving out what a pending swap
/// replaces and the leftovers (`.deleted`, `.cleaned`).
fn segment_files(entries: Vec<Entry>, pending: &PendingSwap) -> SegmentFiles {
    let mut files = SegmentFiles::default();
    for entry in entries {
        let name = entry.name;
        if name.ends_with(".deleted") || name.ends_with(".cleaned") {
            continue;
        }
        if let Some(stem) = name.strip_suffix(".swap") {
            // Only a read-only mount gets here: nothing may be renamed or deleted.
            if let Some((base, "index" | "timeindex")) = parse_segment_name(stem)
                && pending.logs.contains_key(&base)
            {
                files.present.insert(name.clone());
            }
            continue;
        }
        match parse_segment_name(&name) {
            Some((base, _))
                if pending.replaced.contains(&base) || pending.logs.contains_key(&base) => {}
            Some((base, "log")) => {
                files.logs.insert(base, entry.len);
            }
            Some((base, "index" | "timeindex" | "txnindex")) => {
                files.present.insert(name.clone());
                files.indexes.push((base, name));
            }
            _ => {}
        }
    }
    files
}

/// Deletes index files without their `.log` (a read-only mount leaves them).
fn remove_orphaned_indexes(dirfd: &Dir, files: &SegmentFiles, name: &str, ro: bool) -> Result<()> {
    if ro {
        return Ok(());
    }
    for (base, index) in &files.indexes {
        if !files.logs.contains_key(base) {
            log::warn!(
                "{name}: found an orphaned index file {}, deleting it",
                dirfd.join(index).display()
            );
            dirfd.remove(index)?;
        }
    }
    Ok(())
}

/// The segments over the `.log` files (and a read-only mount's pending `.swap` ones); nothing
/// is read yet.
fn open_segments(
    dirfd: &Arc<Dir>,
    config: &LogConfig,
    logs: &BTreeMap<i64, u64>,
    pending: &PendingSwap,
    ro: bool,
) -> BTreeMap<i64, Arc<LogSegment>> {
    let mut segments = BTreeMap::new();
    for (&base, &size) in logs {
        segments.insert(
            base,
            Arc::new(LogSegment::open(dirfd, base, config, size, ro)),
        );
    }
    for (&base, &size) in &pending.logs {
        let seg = LogSegment::open_with_suffix(dirfd, base, config, size, ro, ".swap");
        segments.insert(base, Arc::new(seg));
    }
    segments
}

impl Loader<'_> {
    /// The log over the loaded segments, at the offsets loading left it at: built once.
    fn build(self, dir: &Path, offsets: LoadedOffsets) -> PartitionLog {
        PartitionLog {
            topic: self.topic.to_string(),
            partition: self.partition,
            dir: dir.to_path_buf(),
            dirfd: self.dirfd,
            read_only: self.read_only,
            config: RwLock::new(self.config),
            segments: RwLock::new(self.segments),
            append: Mutex::new(LogAppendState {
                builder: BatchBuilder::new(),
                unflushed_messages: 0,
                leader_epoch: offsets.leader_epoch,
            }),
            log_end_offset: AtomicI64::new(offsets.log_end_offset),
            log_start_offset: AtomicI64::new(offsets.log_start_offset),
            recovery_point: AtomicI64::new(offsets.recovery_point),
            last_lookup_scan: AtomicU64::new(0),
            rewrites: AtomicU64::new(0),
            waiters: Default::default(),
            structure: Mutex::new(()),
            offline: AtomicBool::new(false),
            last_append: AtomicI64::new(offsets.last_append),
            isolation: OnceLock::new(),
            counters: Default::default(),
        }
    }

    /// The active segment made ready for appends (created when the log has none; after a
    /// clean shutdown, its tail checked), and the offsets the log starts at.
    fn finish_active(&mut self, params: &LoadParams, last_append: i64) -> Result<LoadedOffsets> {
        let ro = self.read_only;
        if self.segments.is_empty() {
            let base = params.log_start_offset.max(0);
            let seg = if ro {
                // Nothing to serve and nothing may be created: an empty segment in memory.
                LogSegment::open(&self.dirfd, base, &self.config, 0, true)
            } else {
                LogSegment::create(&self.dirfd, base, &self.config)?
            };
            self.segments.insert(base, Arc::new(seg));
        }
        let active = self.segments.values().next_back().unwrap().clone();
        let first_base = *self.segments.keys().next().unwrap();
        active.set_active(true);
        if params.had_clean_shutdown && active.size() > 0 {
            // The clean-shutdown marker vouches for what was closed cleanly, not for bytes
            // changed since: check the active segment's tail before anything is appended
            // after it.
            if let Some(problem) = active.tail_problem()? {
                log::warn!(
                    "{}-{}: the active segment {} fails its tail check after a clean shutdown ({problem}); recovering it",
                    self.topic,
                    self.partition,
                    active.log_path().display()
                );
                let cfg = self.config.clone();
                self.recover_segment(&active, &cfg)?;
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
        // New batches carry the latest leader epoch the partition has seen (a broker's
        // leader-epoch-checkpoint, or the last batch), so a broker can take the dir back.
        let checkpointed = read_latest_leader_epoch(&self.dirfd).unwrap_or(0);
        Ok(LoadedOffsets {
            log_end_offset: leo,
            log_start_offset: params.log_start_offset.max(first_base).min(leo),
            recovery_point: if params.had_clean_shutdown {
                leo
            } else {
                params.recovery_point.min(leo)
            },
            leader_epoch: epoch.unwrap_or(0).max(checkpointed).max(0),
            last_append,
        })
    }

    /// Detects missing or corrupt index files. After a clean shutdown, each segment's indexes
    /// are checked as they load; a missing `.index` forces that segment's recovery.
    /// `present` holds the names of the files the directory listing found.
    fn check_indexes(&self, clean: bool, present: &HashSet<String>) -> Result<()> {
        let segs: Vec<Arc<LogSegment>> = self.segments.values().cloned().collect();
        let cfg = self.config.clone();
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
    fn recover_from(&mut self, recovery_point: i64) -> Result<()> {
        let from = self
            .segments
            .range(..=recovery_point)
            .next_back()
            .map_or(i64::MIN, |(b, _)| *b);
        let segs: Vec<Arc<LogSegment>> = self
            .segments
            .range(from..)
            .map(|(_, s)| s.clone())
            .collect();
        let cfg = self.config.clone();
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
                let map = &mut self.segments;
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
}

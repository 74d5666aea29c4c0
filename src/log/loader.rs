//! Loading a partition as Kafka's `LogLoader` does: leftover temporary files, completed
//! swaps, orphaned indexes, index checks, and recovery of unflushed segments after an unclean
//! shutdown.

use std::collections::{BTreeMap, HashSet};
use std::path::Path;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};

use super::{LoadParams, LogAppendState, LogSegment, PartitionLog, cleaner, parse_segment_name};
use crate::config::LogConfig;
use crate::error::{Error, Result};
use crate::os::safe_fs::{Access, Dir, Kind};
use crate::record::BatchBuilder;
use crate::util::sync::{MutexExt, RwLockExt};

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

impl PartitionLog {
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
        // The files present, from the one listing (check_indexes asks it, not the disk).
        let mut present: HashSet<String> = HashSet::new();
        let mut entries = dirfd.entries()?;
        // The partition's last append, as the files tell it: the newest `.log`.
        let last_append = entries
            .iter()
            .filter(|e| e.name.ends_with(".log"))
            .filter_map(|e| e.modified?.duration_since(std::time::UNIX_EPOCH).ok())
            .max()
            .map_or(0, |d| d.as_millis() as i64);
        for entry in &entries {
            let name = &entry.name;
            let is_segment_file = parse_segment_name(name).is_some()
                || name.ends_with(".deleted")
                || name.ends_with(".cleaned")
                || name.ends_with(".swap");
            if is_segment_file && entry.kind != Kind::File {
                return Err(Error::from(std::io::Error::new(
                    std::io::ErrorKind::InvalidData,
                    format!(
                        "{} is a {}, not a regular file: refusing to load {topic}-{partition}",
                        dirfd.join(name).display(),
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
            // Kafka's temp-file pass: an interrupted clean is completed or undone.
            cleaner::swap::complete_interrupted(&dirfd, &entries, &format!("{topic}-{partition}"))?;
            entries = dirfd.entries()?;
        }
        // A read-only mount may not complete an interrupted clean: it serves what completing it
        // would leave, the `.swap` segments instead of the files they replace.
        let pending = if ro && entries.iter().any(|e| e.name.ends_with(".swap")) {
            let p = cleaner::swap::pending(&dirfd, &entries)?;
            log::warn!(
                "{topic}-{partition}: an interrupted clean left .swap files (read-only mount: left as they are); serving segments {:?} from them instead of the files of offsets {:?}",
                p.logs.keys().collect::<Vec<_>>(),
                p.replaced
            );
            p
        } else {
            cleaner::swap::PendingSwap::default()
        };
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
                    present.insert(name.clone());
                }
                continue;
            }
            match parse_segment_name(&name) {
                Some((base, _))
                    if pending.replaced.contains(&base) || pending.logs.contains_key(&base) => {}
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
        for (&base, &size) in &pending.logs {
            segments.insert(
                base,
                Arc::new(LogSegment::open_with_suffix(
                    &dirfd, base, &config, size, ro, ".swap",
                )),
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
            append: Mutex::new(LogAppendState {
                builder: BatchBuilder::new(),
                unflushed_messages: 0,
                leader_epoch: 0,
            }),
            log_end_offset: AtomicI64::new(0),
            log_start_offset: AtomicI64::new(0),
            recovery_point: AtomicI64::new(params.recovery_point),
            last_lookup_scan: AtomicU64::new(0),
            waiters: Default::default(),
            structure: Mutex::new(()),
            offline: std::sync::atomic::AtomicBool::new(false),
            last_append: AtomicI64::new(last_append),
            isolation: std::sync::OnceLock::new(),
            counters: Default::default(),
        };
        log.check_indexes(params.had_clean_shutdown, &present)?;
        if !params.had_clean_shutdown {
            log.recover_from(params.recovery_point)?;
        }
        let mut segs = log.segments.write_guard();
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
        log.append.guard().leader_epoch = epoch.unwrap_or(0).max(checkpointed).max(0);
        Ok(log)
    }

    /// Detects missing or corrupt index files. After a clean shutdown, each segment's indexes
    /// are checked as they load; a missing `.index` forces that segment's recovery.
    /// `present` holds the names of the files the directory listing found.
    fn check_indexes(&self, clean: bool, present: &HashSet<String>) -> Result<()> {
        let segs: Vec<Arc<LogSegment>> = self.segments.read_guard().values().cloned().collect();
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
                let mut map = self.segments.write_guard();
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

//! The cleaner thread of the log manager (Kafka's `LogCleaner` / `CleanerThread` with
//! `LogCleanerManager`): every pass picks the compacted partition with the highest dirty ratio
//! over its `min.cleanable.dirty.ratio` (or with a dirty record older than
//! `max.compaction.lag.ms`), cleans it, and records its new first dirty offset in the log
//! dir's `cleaner-offset-checkpoint`; then compacted topics whose policy also says `delete`
//! get their time and size retention. With nothing to clean it sleeps
//! `log.cleaner.backoff.ms`.

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use super::{CLEANER_OFFSET_CHECKPOINT, LogManager};
use crate::checkpoint::{self, Offsets};
use crate::error::Result;
use crate::log::PartitionLog;
use crate::log::cleaner::{CleanRound, Cleaner, choose};
use crate::util::clock::now_ms;
use crate::util::sync::{CondvarExt, MutexExt, RwLockExt};

/// The cleaner's state in the log manager.
pub(super) struct CleanerState {
    /// Each log dir's `cleaner-offset-checkpoint`: (topic, partition) → first dirty offset.
    checkpoints: Mutex<BTreeMap<PathBuf, Offsets>>,
    /// Created at the first round (its offset map is `log.cleaner.dedupe.buffer.size`).
    cleaner: Mutex<Option<Cleaner>>,
    /// Set at shutdown: a round under way stops between batches and removes its `.cleaned`
    /// files.
    pub(super) stop: AtomicBool,
    /// Partitions whose round failed (Kafka's uncleanable partitions): not tried again until
    /// the next start.
    uncleanable: Mutex<HashSet<(String, u32)>>,
}

impl CleanerState {
    /// Reads every dir's checkpoint (a missing file is empty; an unreadable one is logged
    /// and taken as empty: cleaning then starts from each log's start).
    pub(super) fn load(dirs: &[PathBuf]) -> CleanerState {
        let mut checkpoints = BTreeMap::new();
        for d in dirs {
            let path = d.join(CLEANER_OFFSET_CHECKPOINT);
            let offsets = checkpoint::read(&path).unwrap_or_else(|e| {
                log::warn!("{e}; cleaning every compacted log from its start");
                Offsets::new()
            });
            checkpoints.insert(d.clone(), offsets);
        }
        CleanerState {
            checkpoints: Mutex::new(checkpoints),
            cleaner: Mutex::new(None),
            stop: AtomicBool::new(false),
            uncleanable: Mutex::new(HashSet::new()),
        }
    }
}

/// What one pass of the cleaner did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CleanedLog {
    pub topic: String,
    pub partition: u32,
    pub round: CleanRound,
}

/// A partition to clean: its dirty ratio, topic, log and what it would clean.
type Filthiest = (
    f64,
    Arc<super::Topic>,
    Arc<PartitionLog>,
    choose::LogToClean,
);

impl LogManager {
    /// The first dirty offset the cleaner checkpoint holds for a partition.
    pub fn cleaner_checkpoint(&self, topic: &str, partition: u32) -> Option<i64> {
        let cps = self.cleaner.checkpoints.guard();
        cps.values()
            .find_map(|o| o.get(&(topic.to_string(), partition)).copied())
    }

    /// Drops a deleted topic's entries (a topic created again under its name starts clean),
    /// and rewrites the checkpoints that held some, as Kafka does when a partition goes.
    pub(super) fn forget_cleaner_checkpoints(&self, topic: &str) {
        let mut cps = self.cleaner.checkpoints.guard();
        for (root, offsets) in cps.iter_mut() {
            let before = offsets.len();
            offsets.retain(|(t, _), _| t != topic);
            if offsets.len() != before
                && let Err(e) = write_checkpoint(root, offsets)
            {
                log::warn!(
                    "{}: cleaner-offset-checkpoint not rewritten: {e}",
                    root.display()
                );
            }
        }
    }

    fn compacted_partitions(&self) -> Vec<(Arc<super::Topic>, Arc<PartitionLog>)> {
        let topics: Vec<Arc<super::Topic>> = self.topics.read_guard().values().cloned().collect();
        topics
            .into_iter()
            .filter(|t| t.config().cleanup_policy.compact)
            .flat_map(|t| t.partitions().into_iter().map(move |p| (t.clone(), p)))
            .collect()
    }

    /// Kafka's `grabFilthiestCompactedLog`: the compacted partition with the highest dirty
    /// ratio among those cleanable now (not marked uncleanable by a failed round), with its
    /// topic and what it would clean.
    fn grab_filthiest(&self, now: i64) -> Result<Option<Filthiest>> {
        let mut best: Option<Filthiest> = None;
        for (t, l) in self.compacted_partitions() {
            let key = (l.topic().to_string(), l.partition());
            if self.cleaner.uncleanable.guard().contains(&key) {
                continue;
            }
            let cp = self.cleaner_checkpoint(&key.0, key.1);
            let ltc = choose::cleanable(&l, cp, now)?;
            if !ltc.is_cleanable(l.config().min_cleanable_dirty_ratio) {
                continue;
            }
            if best.as_ref().is_none_or(|(r, ..)| ltc.ratio() > *r) {
                best = Some((ltc.ratio(), t, l, ltc));
            }
        }
        Ok(best)
    }

    /// One pass of the cleaner: cleans the filthiest compacted partition that is cleanable
    /// now, and checkpoints it. None when no partition needs cleaning.
    pub fn clean_filthiest(&self) -> Result<Option<CleanedLog>> {
        if self.config.read_only {
            return Ok(None);
        }
        let now = now_ms();
        let Some((ratio, topic, log, ltc)) = self.grab_filthiest(now)? else {
            return Ok(None);
        };
        // A topic being deleted waits for the round; a deleted one is not cleaned.
        let Ok(_live) = topic.live() else {
            return Ok(None);
        };
        log::info!(
            "cleaning {}-{} (dirty ratio {ratio:.3}, dirty bytes {}, offsets [{}, {}))",
            log.topic(),
            log.partition(),
            ltc.cleanable_bytes,
            ltc.first_dirty,
            ltc.first_uncleanable
        );
        let mut guard = self.cleaner.cleaner.guard();
        let cleaner = guard.get_or_insert_with(|| {
            let memory = self.config.cleaner_dedupe_buffer_size.min(i32::MAX as u64) as usize;
            Cleaner::new(memory)
        });
        let started = std::time::Instant::now();
        let round = cleaner.clean(
            &log,
            ltc.first_dirty,
            ltc.first_uncleanable,
            now,
            &self.cleaner.stop,
        );
        drop(guard);
        let round = match round {
            Ok(Some(r)) => r,
            Ok(None) => return Ok(None),
            Err(e) if self.cleaner.stop.load(Ordering::Acquire) => {
                log::info!("{}-{}: {e}", log.topic(), log.partition());
                return Ok(None);
            }
            Err(e) => {
                log::error!(
                    "{}-{}: cleaning failed, not cleaned again until the next start: {e}",
                    log.topic(),
                    log.partition()
                );
                crate::metrics::DaemonCounters::add(&self.counters.cleaner_failures, 1);
                self.cleaner
                    .uncleanable
                    .guard()
                    .insert((log.topic().to_string(), log.partition()));
                return Err(e);
            }
        };
        let s = round.stats;
        crate::metrics::DaemonCounters::add(&self.counters.cleaner_runs, 1);
        crate::metrics::DaemonCounters::add(&self.counters.bytes_cleaned, s.bytes_read);
        let secs = started.elapsed().as_secs_f64().max(1e-9);
        log::info!(
            "{}-{}: cleaned up to offset {} in {secs:.3}s: {} of {} records kept, {} -> {} bytes ({:.1} MB/s), {} segments into {}",
            log.topic(),
            log.partition(),
            round.end_offset,
            s.records_kept,
            s.records_read,
            s.bytes_read,
            s.bytes_written,
            (s.bytes_read + s.map_bytes_read) as f64 / secs / 1e6,
            s.segments_replaced,
            s.segments_written
        );
        self.set_cleaner_checkpoint(&log, round.end_offset)?;
        Ok(Some(CleanedLog {
            topic: log.topic().to_string(),
            partition: log.partition(),
            round,
        }))
    }

    /// Records `offset` as the partition's first dirty offset and rewrites its dir's
    /// checkpoint (entries of partitions that no longer exist are dropped, as Kafka does).
    fn set_cleaner_checkpoint(&self, log: &PartitionLog, offset: i64) -> Result<()> {
        let dir = log.dir();
        let Some(root) = dir.parent() else {
            return Ok(());
        };
        let live: HashSet<(String, u32)> = self
            .all_partitions()
            .iter()
            .filter(|l| l.dir().parent() == Some(root))
            .map(|l| (l.topic().to_string(), l.partition()))
            .collect();
        let mut cps = self.cleaner.checkpoints.guard();
        let entry = cps.entry(root.to_path_buf()).or_default();
        entry.retain(|k, _| live.contains(k));
        entry.insert((log.topic().to_string(), log.partition()), offset);
        write_checkpoint(root, entry)
    }

    /// Retention of compacted topics whose policy is also `delete` (Kafka runs it from the
    /// cleaner thread, the retention pass skips compacted logs).
    pub fn run_compacted_retention(&self) -> Result<usize> {
        let now = now_ms();
        let mut deleted = 0;
        let topics: Vec<Arc<super::Topic>> = self.topics.read_guard().values().cloned().collect();
        for t in topics {
            let policy = t.config().cleanup_policy.clone();
            if !(policy.compact && policy.delete) {
                continue;
            }
            let Ok(_live) = t.live() else { continue };
            deleted += self.retention_of(&t, now)?;
        }
        if deleted > 0 {
            self.write_checkpoints()?;
        }
        Ok(deleted)
    }

    /// Starts the cleaner thread (not on a read-only mount, nor with `log.cleaner.enable`
    /// false).
    pub(super) fn start_cleaner(self: &Arc<Self>) {
        if self.config.read_only || !self.config.cleaner_enable {
            return;
        }
        let weak: Weak<LogManager> = Arc::downgrade(self);
        let bg = self.background.clone();
        let backoff = Duration::from_millis(self.config.cleaner_backoff_ms);
        let h = crate::os::cpu::spawn("topicfs-cleaner".into(), move || {
            loop {
                let Some(mgr) = weak.upgrade() else { return };
                if mgr.cleaner.stop.load(Ordering::Acquire) {
                    return;
                }
                let cleaned = match mgr.clean_filthiest() {
                    Ok(r) => r.is_some(),
                    Err(e) => {
                        log::error!("cleaner: {e}");
                        false
                    }
                };
                if let Err(e) = mgr.run_compacted_retention() {
                    log::error!("retention of compacted topics failed: {e}");
                }
                drop(mgr);
                if cleaned {
                    continue;
                }
                let stop = bg.stop.guard();
                let stop = bg.wake.wait_timeout_while_guard(stop, backoff, |s| !*s);
                if *stop {
                    return;
                }
            }
        })
        .expect("spawn cleaner thread");
        self.threads.guard().push(h);
    }
}

fn write_checkpoint(root: &Path, offsets: &Offsets) -> Result<()> {
    checkpoint::write(&root.join(CLEANER_OFFSET_CHECKPOINT), offsets)?;
    Ok(())
}

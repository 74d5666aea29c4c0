//! LogManager: the log dirs (lock, meta.properties, checkpoints, clean-shutdown marker), the
//! topics and their partitions, placement of new partitions on the least-loaded dir, load and
//! recovery at start, periodic checkpoints and retention, clean shutdown.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{self, Read};
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, RwLock, RwLockReadGuard, Weak};
use std::time::{Duration, Instant};

use crate::base::validate_topic_name;
use crate::checkpoint::{self, Offsets};
use crate::config::{BrokerConfig, LogConfig, TOPIC_KEYS};
use crate::error::{Error, Result};
use crate::log::{LoadParams, PartitionLog};
use crate::util::clock::now_ms;
use crate::util::sync::{CondvarExt, MutexExt, RwLockExt};

mod append;
mod cleaner;
mod load;
mod root_files;
mod topics;

pub const RECOVERY_POINT_CHECKPOINT: &str = "recovery-point-offset-checkpoint";
pub const LOG_START_OFFSET_CHECKPOINT: &str = "log-start-offset-checkpoint";
pub const REPLICATION_OFFSET_CHECKPOINT: &str = "replication-offset-checkpoint";
pub const CLEANER_OFFSET_CHECKPOINT: &str = "cleaner-offset-checkpoint";
pub const CLEAN_SHUTDOWN_FILE: &str = ".kafka_cleanshutdown";
pub const META_PROPERTIES: &str = "meta.properties";
pub const LOCK_FILE: &str = ".lock";
/// Topic config overrides (a plain file: Kafka ignores files in a log dir's root).
pub const TOPIC_CONFIG_FILE: &str = "topicfs-topic-configs";
/// Present (in every log dir) while partitions are being created: `<topic> <from> <to>`. A
/// load that finds it removes those partitions: a creation cut short by a crash is undone.
pub const CREATING_FILE: &str = "topicfs-creating-partitions";

/// `orders-3` -> ("orders", 3); None for Kafka's `-delete`, `-future`, `-stray` dirs and others.
pub fn parse_partition_dir(name: &str) -> Option<(String, u32)> {
    if name.ends_with("-delete") || name.ends_with("-future") || name.ends_with("-stray") {
        return None;
    }
    let (topic, p) = name.rsplit_once('-')?;
    if p.is_empty() || !p.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    validate_topic_name(topic).ok()?;
    Some((topic.to_string(), p.parse().ok()?))
}

struct LogDir {
    path: PathBuf,
    _lock: Option<File>,
    /// The broker epoch of the clean-shutdown marker found at start (a Kafka broker's), kept
    /// so the marker written at our clean shutdown tells the broker the same thing.
    broker_epoch: std::sync::atomic::AtomicI64,
}

fn read_checkpoint_or_warn(path: &Path) -> Offsets {
    checkpoint::read(path).unwrap_or_else(|e| {
        log::warn!("{e}; treating every offset in it as 0");
        Offsets::new()
    })
}

/// Incarnation numbers: each topic created or loaded gets the next one, so a topic deleted
/// and created again under the same name is told apart from the old one.
static NEXT_INCARNATION: AtomicU64 = AtomicU64::new(1);

/// A topic: its partitions and its config overrides.
pub struct Topic {
    name: String,
    incarnation: u64,
    /// `true` once the topic is deleted. Users of its storage hold the read side
    /// ([`Topic::live`]); deletion takes the write side, so it waits for them and nobody
    /// touches the storage of a deleted topic afterwards.
    deleted: RwLock<bool>,
    partitions: RwLock<Vec<Arc<PartitionLog>>>,
    overrides: Mutex<BTreeMap<String, String>>,
    config: RwLock<Arc<LogConfig>>,
    round_robin: AtomicU32,
    /// When the topic itself last changed (made, config, partition count), ms since the
    /// epoch; 0 when not since the mount.
    changed: std::sync::atomic::AtomicI64,
}

/// Proof that a topic is not deleted, held while its storage is used.
pub type LiveTopic<'a> = RwLockReadGuard<'a, bool>;

impl Topic {
    fn new(
        name: String,
        partitions: Vec<Arc<PartitionLog>>,
        overrides: BTreeMap<String, String>,
        config: Arc<LogConfig>,
    ) -> Topic {
        Topic {
            name,
            incarnation: NEXT_INCARNATION.fetch_add(1, Ordering::Relaxed),
            deleted: RwLock::new(false),
            partitions: RwLock::new(partitions),
            overrides: Mutex::new(overrides),
            config: RwLock::new(config),
            round_robin: AtomicU32::new(0),
            changed: std::sync::atomic::AtomicI64::new(0),
        }
    }

    /// Notes a change of the topic itself (made, config, partition count) now.
    pub(crate) fn touch(&self) {
        self.changed
            .store(crate::util::clock::now_ms(), Ordering::Relaxed);
    }

    /// The topic's last change: its own, or the last append to any partition.
    pub fn modified(&self) -> Option<std::time::SystemTime> {
        let own = self.changed.load(Ordering::Relaxed);
        let own = (own > 0).then(|| std::time::UNIX_EPOCH + Duration::from_millis(own as u64));
        self.partitions
            .read_guard()
            .iter()
            .filter_map(|p| p.modified())
            .chain(own)
            .max()
    }

    pub fn name(&self) -> &str {
        &self.name
    }
    /// Unique to this topic among all topics of the process, the deleted ones included.
    pub fn incarnation(&self) -> u64 {
        self.incarnation
    }
    /// Fails with TopicDeleted once the topic is deleted; otherwise deletion waits until the
    /// returned guard is dropped. Do not take it twice in one thread (deletion waiting for the
    /// write side would block the second read).
    pub fn live(&self) -> Result<LiveTopic<'_>> {
        let g = self.deleted.read_guard();
        if *g {
            return Err(Error::TopicDeleted(self.name.clone()));
        }
        Ok(g)
    }
    pub fn partition_count(&self) -> u32 {
        self.partitions.read_guard().len() as u32
    }
    pub fn partition(&self, p: u32) -> Result<Arc<PartitionLog>> {
        self.partitions
            .read_guard()
            .get(p as usize)
            .cloned()
            .ok_or_else(|| Error::UnknownPartition {
                topic: self.name.clone(),
                partition: p,
            })
    }
    pub fn partitions(&self) -> Vec<Arc<PartitionLog>> {
        self.partitions.read_guard().clone()
    }
    /// The partition for the next unkeyed topic-level write (round-robin).
    pub fn next_round_robin(&self) -> u32 {
        let n = self.partition_count().max(1);
        self.round_robin.fetch_add(1, Ordering::Relaxed) % n
    }
    pub fn config(&self) -> Arc<LogConfig> {
        self.config.read_guard().clone()
    }
    pub fn overrides(&self) -> BTreeMap<String, String> {
        self.overrides.guard().clone()
    }
    /// The `config` file: the overrides as `key=value` lines, then the broker defaults the
    /// topic takes as `# key=value` comments, so writing the file back changes nothing.
    pub fn config_text(&self) -> String {
        let cfg = self.config();
        let ov = self.overrides();
        let mut s = String::new();
        if !ov.is_empty() {
            s.push_str("# topic overrides\n");
            for k in TOPIC_KEYS.iter().filter(|k| ov.contains_key(**k)) {
                s.push_str(&format!(
                    "{k}={}\n",
                    cfg.get_topic_key(k).unwrap_or_default()
                ));
            }
        }
        s.push_str("# broker defaults\n");
        for k in TOPIC_KEYS.iter().filter(|k| !ov.contains_key(**k)) {
            s.push_str(&format!(
                "# {k}={}\n",
                cfg.get_topic_key(k).unwrap_or_default()
            ));
        }
        s
    }
}

struct Background {
    stop: Mutex<bool>,
    wake: Condvar,
}

pub struct LogManager {
    config: BrokerConfig,
    dirs: Vec<LogDir>,
    topics: RwLock<BTreeMap<String, Arc<Topic>>>,
    /// Serialises topic creation, deletion and partition growth.
    admin: Mutex<()>,
    checkpoint_lock: Mutex<()>,
    shut_down: AtomicBool,
    background: Arc<Background>,
    threads: Mutex<Vec<std::thread::JoinHandle<()>>>,
    cleaner: cleaner::CleanerState,
    /// The cleaner's, retention's and recovery's work since start (`@metrics`).
    counters: crate::metrics::DaemonCounters,
}

impl LogManager {
    pub fn config(&self) -> &BrokerConfig {
        &self.config
    }

    /// EROFS on a read-only mount (the kernel refuses writes first; this is the core's own
    /// guard).
    fn writable(&self) -> Result<()> {
        if self.config.read_only {
            return Err(Error::ReadOnly);
        }
        Ok(())
    }

    pub fn log_dirs(&self) -> Vec<PathBuf> {
        self.dirs.iter().map(|d| d.path.clone()).collect()
    }

    pub fn topics(&self) -> Vec<String> {
        self.topics.read_guard().keys().cloned().collect()
    }

    pub fn topic(&self, name: &str) -> Result<Arc<Topic>> {
        self.topics
            .read_guard()
            .get(name)
            .cloned()
            .ok_or_else(|| Error::UnknownTopic(name.to_string()))
    }

    fn all_partitions(&self) -> Vec<Arc<PartitionLog>> {
        self.topics
            .read_guard()
            .values()
            .flat_map(|t| t.partitions())
            .collect()
    }

    /// fsyncs one partition; its recovery point becomes its log end, and is checkpointed.
    pub fn flush(&self, log: &PartitionLog) -> Result<()> {
        log.flush()?;
        self.write_checkpoints()
    }

    /// Writes the recovery-point, log-start-offset and replication checkpoints of every dir.
    pub fn write_checkpoints(&self) -> Result<()> {
        if self.config.read_only {
            return Ok(());
        }
        let _g = self.checkpoint_lock.guard();
        let parts = self.all_partitions();
        for d in &self.dirs {
            let (mut rp, mut lso, mut hw) = (Offsets::new(), Offsets::new(), Offsets::new());
            for l in parts
                .iter()
                .filter(|l| l.dir().parent() == Some(d.path.as_path()))
            {
                let key = (l.topic().to_string(), l.partition());
                rp.insert(key.clone(), l.recovery_point());
                hw.insert(key.clone(), l.log_end_offset());
                let first = l.segments().first().map(|s| s.base_offset).unwrap_or(0);
                if l.log_start_offset() > first {
                    lso.insert(key, l.log_start_offset());
                }
            }
            checkpoint::write(&d.path.join(RECOVERY_POINT_CHECKPOINT), &rp)?;
            checkpoint::write(&d.path.join(LOG_START_OFFSET_CHECKPOINT), &lso)?;
            checkpoint::write(&d.path.join(REPLICATION_OFFSET_CHECKPOINT), &hw)?;
        }
        Ok(())
    }

    /// One retention pass (Kafka's `deleteOldSegments` with cleanup.policy=delete).
    pub fn run_retention(&self) -> Result<usize> {
        let now = now_ms();
        let mut deleted = 0;
        let topics: Vec<Arc<Topic>> = self.topics.read_guard().values().cloned().collect();
        for t in topics {
            // A topic deleted meanwhile is skipped; deletion waits for a pass under way.
            let Ok(_live) = t.live() else { continue };
            // Compacted topics (`__consumer_offsets` among them) are the cleaner thread's.
            if t.config().cleanup_policy.compact {
                continue;
            }
            deleted += self.retention_of(&t, now)?;
        }
        if deleted > 0 {
            self.write_checkpoints()?;
        }
        Ok(deleted)
    }

    fn retention_of(&self, t: &Topic, now: i64) -> Result<usize> {
        let mut deleted = 0;
        for l in t.partitions() {
            let cfg = l.config();
            if cfg.retention_ms >= 0 {
                deleted += l.delete_old_segments(|s, _| match s.largest_timestamp() {
                    Ok(ts) if ts >= 0 => now - ts > cfg.retention_ms,
                    _ => false,
                })?;
            }
            if cfg.retention_bytes >= 0 {
                let total = l.size_in_bytes() as i64;
                let mut diff = total - cfg.retention_bytes;
                if diff > 0 {
                    deleted += l.delete_old_segments(|_, size| {
                        if diff - size as i64 >= 0 {
                            diff -= size as i64;
                            true
                        } else {
                            false
                        }
                    })?;
                }
            }
        }
        crate::metrics::DaemonCounters::add(
            &self.counters.retention_deleted_segments,
            deleted as u64,
        );
        Ok(deleted)
    }

    /// The daemon's counters (`@metrics`).
    pub fn counters(&self) -> &crate::metrics::DaemonCounters {
        &self.counters
    }

    fn start_background(self: &Arc<Self>) {
        if self.config.read_only {
            // Retention and checkpoints write the log dir: a read-only mount runs neither.
            return;
        }
        let weak: Weak<LogManager> = Arc::downgrade(self);
        let bg = self.background.clone();
        // 0: no periodic checkpoint (flushes, admin operations and shutdown still write them).
        let cp = match self.config.checkpoint_interval_ms {
            0 => Duration::from_secs(100 * 365 * 86_400),
            ms => Duration::from_millis(ms),
        };
        let rt = Duration::from_millis(self.config.retention_check_interval_ms);
        let h = crate::os::cpu::spawn("topicfs-tasks".into(), move || {
            let mut next_cp = Instant::now() + cp;
            let mut next_rt = Instant::now() + rt.min(Duration::from_secs(30));
            loop {
                let wait = next_cp
                    .min(next_rt)
                    .saturating_duration_since(Instant::now());
                let stop = bg.stop.guard();
                let stop = bg.wake.wait_timeout_while_guard(stop, wait, |s| !*s);
                if *stop {
                    return;
                }
                drop(stop);
                let Some(mgr) = weak.upgrade() else { return };
                let now = Instant::now();
                if now >= next_rt {
                    if let Err(e) = mgr.run_retention() {
                        log::error!("retention failed: {e}");
                    }
                    next_rt = now + rt;
                }
                if now >= next_cp {
                    if let Err(e) = mgr.write_checkpoints() {
                        log::error!("checkpoint failed: {e}");
                    }
                    next_cp = now + cp;
                }
            }
        })
        .expect("spawn background thread");
        self.threads.guard().push(h);
        self.start_cleaner();
    }

    /// Clean shutdown: seals and syncs every partition, writes the checkpoints and Kafka's
    /// clean-shutdown marker. Idempotent.
    pub fn shutdown(&self) -> Result<()> {
        if self.shut_down.swap(true, Ordering::SeqCst) {
            return Ok(());
        }
        self.cleaner.stop.store(true, Ordering::Release);
        *self.background.stop.guard() = true;
        self.background.wake.notify_all();
        for h in self.threads.guard().drain(..) {
            let _ = h.join();
        }
        let mut first_err = None;
        // A log dir holding a partition taken offline by a failed fsync gets no clean-shutdown
        // marker: the next mount recovers it from its recovery point.
        let mut unclean = std::collections::BTreeSet::new();
        for l in self.all_partitions() {
            if l.is_offline() {
                l.close_waiters();
                let _ = l.close();
                if let Some(parent) = l.dir().parent() {
                    unclean.insert(parent.to_path_buf());
                }
                continue;
            }
            if let Err(e) = l.close() {
                log::error!("{}-{}: close failed: {e}", l.topic(), l.partition());
                first_err.get_or_insert(e);
            }
        }
        self.write_checkpoints()?;
        if let Some(e) = first_err {
            return Err(e);
        }
        if self.config.read_only {
            log::info!("read-only mount closed; nothing written");
            return Ok(());
        }
        for d in self.dirs.iter().filter(|d| !unclean.contains(&d.path)) {
            let epoch = d.broker_epoch.load(Ordering::Relaxed);
            checkpoint::write_atomic(
                &d.path.join(CLEAN_SHUTDOWN_FILE),
                format!("{{\"version\":0,\"brokerEpoch\":{epoch}}}").as_bytes(),
            )?;
        }
        log::info!("clean shutdown complete");
        Ok(())
    }
}

impl Drop for LogManager {
    fn drop(&mut self) {
        self.cleaner.stop.store(true, Ordering::Release);
        *self.background.stop.guard() = true;
        self.background.wake.notify_all();
    }
}

fn read_topic_overrides(dirs: &[PathBuf]) -> BTreeMap<String, BTreeMap<String, String>> {
    let mut out: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
    for d in dirs {
        let Ok(text) = crate::os::safe_fs::read_to_string(&d.join(TOPIC_CONFIG_FILE)) else {
            continue;
        };
        for line in text.lines() {
            if line.starts_with('#') {
                continue;
            }
            if let Some((t, kv)) = line.split_once(' ')
                && let Some((k, v)) = kv.split_once('=')
            {
                out.entry(t.to_string())
                    .or_default()
                    .insert(k.to_string(), v.to_string());
            }
        }
    }
    out
}

/// Removes a partition directory this process created (a failed creation's leftovers).
fn remove_partition_dir(dir: &Path) {
    match std::fs::remove_dir_all(dir) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => log::error!("cannot remove {}: {e}", dir.display()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn topic_names_follow_kafka_rules() {
        for ok in ["orders", "a", "A.b_c-9", &"x".repeat(249)] {
            assert!(validate_topic_name(ok).is_ok(), "{ok}");
        }
        for bad in ["", ".", "..", "a/b", "a b", "é", &"x".repeat(250), "a\0b"] {
            assert!(validate_topic_name(bad).is_err(), "{bad:?}");
        }
        assert_eq!(parse_partition_dir("orders-3"), Some(("orders".into(), 3)));
        assert_eq!(
            parse_partition_dir("my-topic-12"),
            Some(("my-topic".into(), 12))
        );
        assert_eq!(parse_partition_dir("orders-3.abc-delete"), None);
        assert_eq!(parse_partition_dir("orders"), None);
        assert_eq!(parse_partition_dir("orders-x"), None);
    }

    /// A panic while the background's stop flag was held does not end the background threads
    /// (retention, checkpoints, the cleaner): their waits recover the lock.
    #[test]
    fn background_threads_outlive_a_poisoned_stop_flag() {
        let d = tempfile::tempdir().unwrap();
        let mut c = BrokerConfig::default();
        c.log_dirs = vec![d.path().to_path_buf()];
        c.retention_check_interval_ms = 10;
        let mgr = LogManager::open(c).unwrap();
        let bg = mgr.background.clone();
        let r = std::thread::spawn(move || {
            let _g = bg.stop.guard();
            panic!("a holder of the stop flag panics");
        })
        .join();
        assert!(r.is_err() && mgr.background.stop.is_poisoned());
        mgr.background.wake.notify_all();
        std::thread::sleep(Duration::from_millis(300));
        let threads = mgr.threads.guard();
        assert!(!threads.is_empty());
        assert!(threads.iter().all(|h| !h.is_finished()));
        drop(threads);
        mgr.shutdown().unwrap();
    }
}

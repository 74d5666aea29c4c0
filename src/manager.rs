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

use crate::checkpoint::{self, Offsets};
use crate::config::{BrokerConfig, LogConfig, TOPIC_KEYS};
use crate::error::{Error, Result};
use crate::log::{LoadParams, PartitionLog, now_ms};
use crate::sync::{MutexExt, RwLockExt};

mod cleaner;
pub use cleaner::CleanedLog;

pub const RECOVERY_POINT_CHECKPOINT: &str = "recovery-point-offset-checkpoint";
pub const LOG_START_OFFSET_CHECKPOINT: &str = "log-start-offset-checkpoint";
pub const REPLICATION_OFFSET_CHECKPOINT: &str = "replication-offset-checkpoint";
pub const CLEANER_OFFSET_CHECKPOINT: &str = "cleaner-offset-checkpoint";
pub const CLEAN_SHUTDOWN_FILE: &str = ".kafka_cleanshutdown";
pub const META_PROPERTIES: &str = "meta.properties";
pub const LOCK_FILE: &str = ".lock";
/// Topic config overrides (a plain file: Kafka ignores files in a log dir's root).
pub const TOPIC_CONFIG_FILE: &str = "topicfs-topic-configs";

/// Kafka's topic name rule: 1..249 characters of `[a-zA-Z0-9._-]`, not `.` or `..`.
pub fn validate_topic_name(name: &str) -> Result<()> {
    let ok = !name.is_empty()
        && name.len() <= 249
        && name != "."
        && name != ".."
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'_' || b == b'-');
    if ok {
        Ok(())
    } else {
        Err(Error::InvalidTopicName(name.to_string()))
    }
}

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

/// `brokerEpoch` of a `.kafka_cleanshutdown` marker (`{"version":0,"brokerEpoch":N}`).
fn marker_broker_epoch(path: &Path) -> Option<i64> {
    let text = crate::safe_fs::read_to_string(path).ok()?;
    let v: serde_json::Value = serde_json::from_str(&text).ok()?;
    v.get("brokerEpoch")?.as_i64()
}

/// Takes Kafka's `.lock` with an open-file-description lock: it conflicts with the POSIX
/// record lock a Kafka broker holds (Java's FileChannel.tryLock) and with a second topicfs.
/// A read-only mount takes a read lock on an existing `.lock` (opened read-only; a missing one
/// is left missing): it still conflicts with a broker's or a read-write topicfs's write lock.
fn lock_dir(dir: &Path, read_only: bool) -> Result<Option<File>> {
    let d = crate::safe_fs::Dir::open_log_dir(dir)?;
    let f = if read_only {
        match d.open_file(LOCK_FILE, crate::safe_fs::Access::ReadOnly) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            r => r?,
        }
    } else {
        match d.open_file(LOCK_FILE, crate::safe_fs::Access::ReadWrite) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => d.create_new(LOCK_FILE)?,
            r => r?,
        }
    };
    // SAFETY: zeroed flock is a valid value; fcntl on an fd we own.
    let mut fl: libc::flock = unsafe { std::mem::zeroed() };
    fl.l_type = if read_only {
        libc::F_RDLCK
    } else {
        libc::F_WRLCK
    } as _;
    fl.l_whence = libc::SEEK_SET as _;
    let rc = unsafe { libc::fcntl(f.as_raw_fd(), libc::F_OFD_SETLK, &fl) };
    if rc != 0 {
        let e = io::Error::last_os_error();
        return match e.raw_os_error() {
            Some(libc::EAGAIN) | Some(libc::EACCES) => Err(Error::LogDirLocked(dir.to_path_buf())),
            _ => Err(e.into()),
        };
    }
    Ok(Some(f))
}

fn random_uuid_base64() -> String {
    use base64::Engine;
    let mut b = [0u8; 16];
    if File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut b))
        .is_err()
    {
        let t = now_ms() as u128 ^ ((std::process::id() as u128) << 64);
        b = t.to_le_bytes();
    }
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    let s = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(b);
    if s.starts_with('-') {
        random_uuid_base64()
    } else {
        s
    }
}

fn java_date_now() -> String {
    let t = (now_ms() / 1000) as libc::time_t;
    // SAFETY: gmtime_r writes into our tm.
    let mut tm: libc::tm = unsafe { std::mem::zeroed() };
    unsafe { libc::gmtime_r(&t, &mut tm) };
    const DAYS: [&str; 7] = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"];
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    format!(
        "{} {} {:02} {:02}:{:02}:{:02} UTC {}",
        DAYS[tm.tm_wday as usize % 7],
        MONTHS[tm.tm_mon as usize % 12],
        tm.tm_mday,
        tm.tm_hour,
        tm.tm_min,
        tm.tm_sec,
        tm.tm_year + 1900
    )
}

/// Creates the root files of a new log dir; existing ones (a Kafka broker's) are left as they are.
fn init_root_files(dir: &Path) -> Result<()> {
    let meta = dir.join(META_PROPERTIES);
    if !meta.exists() {
        let text = format!(
            "#\n#{}\ncluster.id={}\ndirectory.id={}\nnode.id=1\nversion=1\n",
            java_date_now(),
            random_uuid_base64(),
            random_uuid_base64()
        );
        checkpoint::write_atomic(&meta, text.as_bytes())?;
    }
    for name in [
        RECOVERY_POINT_CHECKPOINT,
        LOG_START_OFFSET_CHECKPOINT,
        REPLICATION_OFFSET_CHECKPOINT,
        CLEANER_OFFSET_CHECKPOINT,
    ] {
        let p = dir.join(name);
        if !p.exists() {
            checkpoint::write(&p, &Offsets::new())?;
        }
    }
    Ok(())
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
        }
    }

    pub fn name(&self) -> &str {
        &self.name
    }
    /// Unique to this topic among all topics of the process, the deleted ones included.
    pub fn incarnation(&self) -> u64 {
        self.incarnation
    }
    pub fn is_deleted(&self) -> bool {
        *self.deleted.read_guard()
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
    /// The effective configuration: overrides first, then the broker defaults.
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
            s.push_str("# broker defaults\n");
        }
        for k in TOPIC_KEYS.iter().filter(|k| !ov.contains_key(**k)) {
            s.push_str(&format!(
                "{k}={}\n",
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
}

impl LogManager {
    /// Locks every log dir, creates the root files of new ones, loads every partition
    /// (recovering it after an unclean shutdown), and starts the checkpoint and retention tasks.
    pub fn open(config: BrokerConfig) -> Result<Arc<LogManager>> {
        let mut config = config;
        for path in config.log_dirs.iter_mut() {
            // A read-only mount creates nothing: its log dirs must exist.
            *path = crate::logdir_trust::prepare(
                path,
                config.allow_untrusted_log_dir,
                !config.read_only,
            )?;
        }
        let mut dirs = Vec::new();
        for path in &config.log_dirs {
            let lock = lock_dir(path, config.read_only)?;
            if !config.read_only {
                init_root_files(path)?;
            }
            dirs.push(LogDir {
                path: path.clone(),
                _lock: lock,
                broker_epoch: std::sync::atomic::AtomicI64::new(-1),
            });
        }
        let mut overrides = read_topic_overrides(&config.log_dirs);
        // A stored override the validators now refuse (an older topicfs clamped or accepted
        // it) is dropped alone, so the topic keeps its other overrides and stays configurable.
        for (t, ov) in overrides.iter_mut() {
            ov.retain(|k, v| match config.log.clone().set_topic_key(k, v) {
                Ok(()) => true,
                Err(e) => {
                    log::warn!("topic {t}: ignoring stored config override {k}={v}: {e}");
                    false
                }
            });
        }
        let counts = partition_counts(&dirs)?;
        let mut found: BTreeMap<String, BTreeMap<u32, Arc<PartitionLog>>> = BTreeMap::new();
        for dir in &dirs {
            let marker = dir.path.join(CLEAN_SHUTDOWN_FILE);
            let clean = marker.exists();
            if clean {
                if let Some(epoch) = marker_broker_epoch(&marker) {
                    dir.broker_epoch.store(epoch, Ordering::Relaxed);
                }
                if !config.read_only {
                    let d = crate::safe_fs::Dir::open_log_dir(&dir.path)?;
                    d.remove(CLEAN_SHUTDOWN_FILE)?;
                    d.sync()?;
                }
            }
            let recovery = read_checkpoint_or_warn(&dir.path.join(RECOVERY_POINT_CHECKPOINT));
            let starts = read_checkpoint_or_warn(&dir.path.join(LOG_START_OFFSET_CHECKPOINT));
            let mut parts = Vec::new();
            for entry in std::fs::read_dir(&dir.path)? {
                let entry = entry?;
                let name = entry.file_name().to_string_lossy().into_owned();
                let ft = entry.file_type()?;
                if ft.is_symlink() && parse_partition_dir(&name).is_some() {
                    return Err(Error::Io(io::Error::new(
                        io::ErrorKind::InvalidData,
                        format!(
                            "partition directory {} is a symlink: refusing to follow it (move the directory itself into the log dir)",
                            entry.path().display()
                        ),
                    )));
                }
                if !ft.is_dir() {
                    continue;
                }
                match parse_partition_dir(&name) {
                    Some((t, _)) if t == "__cluster_metadata" => {}
                    Some((t, p)) => parts.push((t, p, entry.path())),
                    None => {
                        if name.ends_with("-delete") {
                            log::info!("removing deleted partition dir {name}");
                            let _ = std::fs::remove_dir_all(entry.path());
                        }
                    }
                }
            }
            parts.retain(|(t, p, path)| {
                let n = counts.get(t).copied().unwrap_or(0);
                if *p < n {
                    return true;
                }
                log::warn!(
                    "{}: partition {p} is outside topic {t}'s partitions 0..{n} (partition {n} is missing); left alone, not served",
                    path.display()
                );
                false
            });
            let started = Instant::now();
            if clean {
                log::info!(
                    "Skipping recovery of {} logs from {} since clean shutdown file was found",
                    parts.len(),
                    dir.path.display()
                );
            } else if !parts.is_empty() {
                log::info!(
                    "Recovering {} logs from {} since no clean shutdown file was found",
                    parts.len(),
                    dir.path.display()
                );
            }
            let total = parts.len();
            for (i, (t, p, path)) in parts.into_iter().enumerate() {
                let key = (t.clone(), p);
                let cfg = Arc::new(
                    config
                        .log
                        .for_topic(&t, overrides.get(&t).unwrap_or(&BTreeMap::new()))
                        .unwrap_or_else(|e| {
                            log::warn!("topic {t}: ignoring invalid stored config override: {e}");
                            config.log.clone()
                        }),
                );
                let params = LoadParams {
                    recovery_point: recovery.get(&key).copied().unwrap_or(0),
                    log_start_offset: starts.get(&key).copied().unwrap_or(0),
                    had_clean_shutdown: clean,
                    read_only: config.read_only,
                };
                let log = PartitionLog::load(&path, &t, p, cfg, params)?;
                if !clean && total > 10 && (i + 1) % (total / 10).max(1) == 0 {
                    log::info!(
                        "recovery of {}: {}/{total} partitions",
                        dir.path.display(),
                        i + 1
                    );
                }
                if found.get(&t).is_some_and(|m| m.contains_key(&p)) {
                    return Err(Error::Corrupt(format!(
                        "partition {t}-{p} exists in more than one log dir"
                    )));
                }
                found.entry(t).or_default().insert(p, Arc::new(log));
            }
            log::info!(
                "loaded {total} partitions from {} in {:?}",
                dir.path.display(),
                started.elapsed()
            );
        }
        let mgr = Arc::new(LogManager {
            config: config.clone(),
            dirs,
            topics: RwLock::new(BTreeMap::new()),
            admin: Mutex::new(()),
            checkpoint_lock: Mutex::new(()),
            shut_down: AtomicBool::new(false),
            background: Arc::new(Background {
                stop: Mutex::new(false),
                wake: Condvar::new(),
            }),
            threads: Mutex::new(Vec::new()),
            cleaner: cleaner::CleanerState::load(&config.log_dirs),
        });
        {
            let mut topics = mgr.topics.write_guard();
            for (name, parts) in found {
                let ov = overrides.get(&name).cloned().unwrap_or_default();
                let cfg = parts.values().next().unwrap().config();
                let mut list: Vec<Arc<PartitionLog>> = Vec::new();
                let max = *parts.keys().next_back().unwrap();
                for p in 0..=max {
                    match parts.get(&p) {
                        Some(l) => list.push(l.clone()),
                        None if config.read_only => {
                            return Err(Error::Corrupt(format!(
                                "topic {name}: partition {p} is missing (a read-only mount cannot create it)"
                            )));
                        }
                        None => {
                            log::warn!("topic {name}: partition {p} is missing, creating it empty");
                            let dir = mgr.least_loaded_dir_with(&topics);
                            list.push(Arc::new(PartitionLog::create(
                                &dir.join(format!("{name}-{p}")),
                                &name,
                                p,
                                cfg.clone(),
                            )?));
                        }
                    }
                }
                topics.insert(name.clone(), Arc::new(Topic::new(name, list, ov, cfg)));
            }
        }
        mgr.write_checkpoints()?;
        mgr.start_background();
        Ok(mgr)
    }

    pub fn config(&self) -> &BrokerConfig {
        &self.config
    }

    /// EROFS on a read-only mount (the kernel refuses writes first; this is the core's own
    /// guard).
    fn writable(&self) -> Result<()> {
        if self.config.read_only {
            return Err(Error::Io(io::Error::from_raw_os_error(libc::EROFS)));
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

    fn least_loaded_dir_with(&self, topics: &BTreeMap<String, Arc<Topic>>) -> PathBuf {
        self.least_loaded_dir_given(topics, &[])
    }

    /// The least-loaded log dir, counting `pending` (partitions being created) too.
    fn least_loaded_dir_given(
        &self,
        topics: &BTreeMap<String, Arc<Topic>>,
        pending: &[Arc<PartitionLog>],
    ) -> PathBuf {
        let mut counts: BTreeMap<PathBuf, usize> =
            self.dirs.iter().map(|d| (d.path.clone(), 0)).collect();
        let existing = topics.values().flat_map(|t| t.partitions());
        for p in existing.chain(pending.iter().cloned()) {
            if let Some(parent) = p.dir().parent()
                && let Some(c) = counts.get_mut(parent)
            {
                *c += 1;
            }
        }
        // Ties go to the dir listed first.
        self.dirs
            .iter()
            .min_by_key(|d| counts[&d.path])
            .map(|d| d.path.clone())
            .expect("at least one log dir")
    }

    /// Creates partitions `from..to` of `topic`, all or none: when one fails, the directories
    /// of those already made (and of the failed one) are removed and the error returned.
    fn new_partitions(
        &self,
        topics: &BTreeMap<String, Arc<Topic>>,
        topic: &str,
        from: u32,
        to: u32,
        cfg: Arc<LogConfig>,
    ) -> Result<Vec<Arc<PartitionLog>>> {
        let mut made: Vec<Arc<PartitionLog>> = Vec::new();
        for p in from..to {
            let dir = self
                .least_loaded_dir_given(topics, &made)
                .join(format!("{topic}-{p}"));
            let res = if dir.exists() {
                Err(Error::Corrupt(format!(
                    "partition directory {} already exists",
                    dir.display()
                )))
            } else {
                // The directory may exist without its segment: it was ours, remove it.
                PartitionLog::create(&dir, topic, p, cfg.clone())
                    .inspect_err(|_| remove_partition_dir(&dir))
            };
            match res {
                Ok(l) => made.push(Arc::new(l)),
                Err(e) => {
                    let dirs: Vec<PathBuf> = made.iter().map(|l| l.dir()).collect();
                    // Closes their files before removing them.
                    drop(made);
                    for d in dirs {
                        remove_partition_dir(&d);
                    }
                    return Err(e);
                }
            }
        }
        Ok(made)
    }

    /// Writes the checkpoints after a change that is already done: a failure is logged, not
    /// returned (the change stands; the next periodic checkpoint writes them).
    fn checkpoint_after(&self, what: &str) {
        if let Err(e) = self.write_checkpoints() {
            log::error!("{what}: checkpoints not written (retried at the next interval): {e}");
        }
    }

    /// Creates a topic with `num.partitions` partitions, each on the least-loaded log dir.
    /// All or nothing: when a partition cannot be created, no trace of the topic is left.
    pub fn create_topic(&self, name: &str) -> Result<Arc<Topic>> {
        self.create_topic_with_partitions(name, self.config.num_partitions)
    }

    /// Like [`LogManager::create_topic`], with `partitions` partitions (at least 1).
    pub fn create_topic_with_partitions(&self, name: &str, partitions: u32) -> Result<Arc<Topic>> {
        validate_topic_name(name)?;
        if partitions == 0 {
            return Err(Error::InvalidPartitionCount {
                topic: name.to_string(),
                current: 0,
                requested: 0,
            });
        }
        self.writable()?;
        let _admin = self.admin.guard();
        if self.topics.read_guard().contains_key(name) {
            return Err(Error::TopicExists(name.to_string()));
        }
        let unified = |t: &str| t.replace('.', "_");
        if let Some(existing) = self
            .topics
            .read_guard()
            .keys()
            .find(|t| unified(t) == unified(name))
        {
            return Err(Error::TopicCollision {
                name: name.to_string(),
                existing: existing.clone(),
            });
        }
        // Overrides left behind by a deletion that could not remove them are not this topic's.
        if read_topic_overrides(&self.config.log_dirs).contains_key(name) {
            self.set_overrides_locked(name, None)?;
        }
        let cfg = Arc::new(self.config.log.for_topic(name, &BTreeMap::new())?);
        let parts = {
            let topics = self.topics.read_guard();
            self.new_partitions(&topics, name, 0, partitions, cfg.clone())?
        };
        let topic = Arc::new(Topic::new(name.to_string(), parts, BTreeMap::new(), cfg));
        self.topics
            .write_guard()
            .insert(name.to_string(), topic.clone());
        log::info!("created topic {name} with {partitions} partitions");
        self.checkpoint_after(&format!("create topic {name}"));
        Ok(topic)
    }

    /// Deletes a topic and its data (Kafka style: rename to `-delete`, then remove). Waits
    /// for the users of its storage ([`Topic::live`]); afterwards every one fails.
    /// Either every partition directory is renamed and the topic is gone, or none is and the
    /// topic stays as it was.
    pub fn delete_topic(&self, name: &str) -> Result<()> {
        self.writable()?;
        let topic = self.topic(name)?;
        // Taken before the admin lock: a user holding `live` may wait for the admin lock.
        let mut deleted = topic.deleted.write_guard();
        let _admin = self.admin.guard();
        if *deleted
            || !self
                .topics
                .read_guard()
                .get(name)
                .is_some_and(|t| Arc::ptr_eq(t, &topic))
        {
            return Err(Error::UnknownTopic(name.to_string()));
        }
        let mut renamed: Vec<(PathBuf, PathBuf)> = Vec::new();
        for log in topic.partitions() {
            let dir = log.dir();
            let mut del = dir.clone().into_os_string();
            // Unique per incarnation: a leftover of an earlier deletion never collides.
            del.push(format!(
                ".{}-{}-delete",
                std::process::id(),
                topic.incarnation()
            ));
            let del = PathBuf::from(del);
            if let Err(e) = std::fs::rename(&dir, &del) {
                for (dir, del) in renamed.iter().rev() {
                    if let Err(e) = std::fs::rename(del, dir) {
                        log::error!("cannot rename {} back: {e}", del.display());
                    }
                }
                return Err(e.into());
            }
            renamed.push((dir, del));
        }
        *deleted = true;
        self.topics.write_guard().remove(name);
        for log in topic.partitions() {
            log.close_waiters();
            for s in log.segments() {
                s.close();
            }
        }
        // Done from here on: what cannot be cleaned now is cleaned at the next start.
        for (_, del) in &renamed {
            if let Err(e) = std::fs::remove_dir_all(del) {
                log::warn!(
                    "{} not removed (removed at the next start): {e}",
                    del.display()
                );
            }
        }
        if let Err(e) = self.set_overrides_locked(name, None) {
            log::warn!(
                "topic {name}: config overrides not removed (ignored by a new topic of that name): {e}"
            );
        }
        self.forget_cleaner_checkpoints(name);
        log::info!("deleted topic {name}");
        drop(deleted);
        self.checkpoint_after(&format!("delete topic {name}"));
        Ok(())
    }

    /// Grows a topic to `n` partitions; shrinking is refused. All new partitions are created
    /// or none.
    pub fn set_partition_count(&self, topic: &str, n: u32) -> Result<()> {
        self.writable()?;
        let _admin = self.admin.guard();
        let t = self.topic(topic)?;
        let current = t.partition_count();
        if n < current || n == 0 {
            return Err(Error::InvalidPartitionCount {
                topic: topic.to_string(),
                current,
                requested: n,
            });
        }
        if n == current {
            return Ok(());
        }
        let made = {
            let topics = self.topics.read_guard();
            self.new_partitions(&topics, topic, current, n, t.config())?
        };
        t.partitions.write_guard().extend(made);
        log::info!("topic {topic}: partitions {current} -> {n}");
        self.checkpoint_after(&format!("topic {topic}: partitions {current} -> {n}"));
        Ok(())
    }

    /// Sets (`Some`) or removes (`None` or empty) a topic config override, applied to every
    /// partition at once and persisted.
    pub fn set_topic_config(&self, topic: &str, key: &str, value: Option<&str>) -> Result<()> {
        self.set_topic_configs(topic, &[(key, value)])
    }

    /// Sets or removes several overrides as one change: every key and value is validated
    /// first (Kafka's validators), then all are persisted once and applied at once; on any
    /// error nothing changes. A key given twice takes its last value.
    pub fn set_topic_configs(&self, topic: &str, changes: &[(&str, Option<&str>)]) -> Result<()> {
        self.writable()?;
        let _admin = self.admin.guard();
        let t = self.topic(topic)?;
        let mut ov = t.overrides();
        for (key, value) in changes {
            let key = key.trim();
            if !TOPIC_KEYS.contains(&key) {
                return Err(Error::InvalidConfig(format!(
                    "unknown topic config key {key:?}"
                )));
            }
            match value.map(str::trim).filter(|v| !v.is_empty()) {
                Some(v) => {
                    self.config.log.clone().set_topic_key(key, v)?;
                    ov.insert(key.to_string(), v.to_string());
                }
                None => {
                    ov.remove(key);
                }
            }
        }
        let cfg = Arc::new(self.config.log.for_topic(topic, &ov)?);
        self.set_overrides_locked(topic, Some(ov.clone()))?;
        *t.overrides.guard() = ov;
        *t.config.write_guard() = cfg.clone();
        for l in t.partitions() {
            l.set_config(cfg.clone());
        }
        Ok(())
    }

    fn set_overrides_locked(
        &self,
        topic: &str,
        ov: Option<BTreeMap<String, String>>,
    ) -> Result<()> {
        let mut all = read_topic_overrides(&self.config.log_dirs);
        match ov {
            Some(o) if !o.is_empty() => {
                all.insert(topic.to_string(), o);
            }
            _ => {
                all.remove(topic);
            }
        }
        let mut text = String::from("# topic config overrides: <topic> <key>=<value>\n");
        for (t, o) in &all {
            for (k, v) in o {
                text.push_str(&format!("{t} {k}={v}\n"));
            }
        }
        for d in &self.dirs {
            checkpoint::write_atomic(&d.path.join(TOPIC_CONFIG_FILE), text.as_bytes())?;
        }
        Ok(())
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
        Ok(deleted)
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
        let h = std::thread::Builder::new()
            .name("topicfs-tasks".into())
            .spawn(move || {
                let mut next_cp = Instant::now() + cp;
                let mut next_rt = Instant::now() + rt.min(Duration::from_secs(30));
                loop {
                    let wait = next_cp
                        .min(next_rt)
                        .saturating_duration_since(Instant::now());
                    let stop = bg.stop.guard();
                    let (stop, _) = bg.wake.wait_timeout_while(stop, wait, |s| !*s).unwrap();
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
        for l in self.all_partitions() {
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
        for d in &self.dirs {
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

/// The partition count of each topic found in the log dirs: partitions 0..n where every one
/// of 0..n has a directory. A directory past a gap (`t-7000` without `t-1`) is stray: the
/// count never comes from the largest number seen, so one stray directory cannot make the
/// mount create thousands of empty partitions.
fn partition_counts(dirs: &[LogDir]) -> Result<BTreeMap<String, u32>> {
    let mut present: BTreeMap<String, std::collections::BTreeSet<u32>> = BTreeMap::new();
    for dir in dirs {
        for entry in std::fs::read_dir(&dir.path)? {
            let entry = entry?;
            if !entry.file_type()?.is_dir() {
                continue;
            }
            if let Some((t, p)) = parse_partition_dir(&entry.file_name().to_string_lossy()) {
                present.entry(t).or_default().insert(p);
            }
        }
    }
    Ok(present
        .into_iter()
        .map(|(t, ps)| {
            let n = (0u32..).take_while(|p| ps.contains(p)).count() as u32;
            (t, n)
        })
        .collect())
}

fn read_topic_overrides(dirs: &[PathBuf]) -> BTreeMap<String, BTreeMap<String, String>> {
    let mut out: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
    for d in dirs {
        let Ok(text) = crate::safe_fs::read_to_string(&d.join(TOPIC_CONFIG_FILE)) else {
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
}

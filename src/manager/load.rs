//! Loading the log dirs at start, along Kafka's `LogManager.loadLogs`: prepare each dir (trust
//! check, `.lock`, root files), load the topic config overrides, undo a creation a crash cut
//! short, scan the partition directories once, load each dir's partitions (recovering them
//! after an unclean shutdown), then assemble the topics.

use std::collections::{BTreeMap, BTreeSet};
use std::io;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, RwLock};
use std::time::{Duration, Instant};

use super::root_files::{init_root_files, lock_dir, marker_broker_epoch};
use super::*;

/// Topic name → config overrides.
type Overrides = BTreeMap<String, BTreeMap<String, String>>;

/// A partition directory found by the scan.
struct FoundDir {
    topic: String,
    partition: u32,
    path: PathBuf,
}

/// Every topic's loaded partitions by number.
type Loaded = BTreeMap<String, BTreeMap<u32, Arc<PartitionLog>>>;

impl LogManager {
    /// [`LogManager::open`] as a unit test opens a log dir it opened before: a child that
    /// another test thread forked still holds, between its fork and its exec, a copy of the
    /// lock's descriptor (an open file description's lock lives as long as any copy), so a
    /// taken lock is tried again for up to 30 s. Any other error is the test's.
    #[cfg(test)]
    pub fn open_in_test(config: BrokerConfig) -> Arc<LogManager> {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        loop {
            match LogManager::open(config.clone()) {
                Err(crate::Error::LogDirLocked(_)) if std::time::Instant::now() < deadline => {
                    std::thread::sleep(std::time::Duration::from_millis(10));
                }
                r => return r.expect("open the test's log dir"),
            }
        }
    }

    /// Locks every log dir, creates the root files of new ones, loads every partition
    /// (recovering it after an unclean shutdown), and starts the checkpoint and retention tasks.
    pub fn open(config: BrokerConfig) -> Result<Arc<LogManager>> {
        let (config, dirs) = prepare_dirs(config)?;
        let overrides = load_overrides(&config);
        let unfinished = undo_unfinished_creation(&dirs, config.read_only)?;
        let scanned = scan_partition_dirs(&dirs, &unfinished)?;
        let mut loaded = Loaded::new();
        let mut recovered = 0u64;
        for (dir, parts) in dirs.iter().zip(scanned) {
            recovered += load_dir(&config, &overrides, dir, parts, &mut loaded)?;
        }
        let mgr = Arc::new(LogManager {
            config: config.clone(),
            dirs,
            topics: RwLock::new(assemble_topics(loaded, &overrides)),
            admin: Mutex::new(()),
            checkpoint_lock: Mutex::new(()),
            shut_down: AtomicBool::new(false),
            background: Arc::new(Background {
                stop: Mutex::new(false),
                wake: Condvar::new(),
            }),
            threads: Mutex::new(Vec::new()),
            cleaner: super::cleaner::CleanerState::load(&config.log_dirs),
            counters: crate::metrics::DaemonCounters {
                recovered_partitions: recovered.into(),
                ..Default::default()
            },
        });
        mgr.write_checkpoints()?;
        mgr.start_background();
        Ok(mgr)
    }
}

/// Checks each log dir is trusted (creating it unless read-only), takes its `.lock` and
/// creates the root files of a new one.
fn prepare_dirs(mut config: BrokerConfig) -> Result<(BrokerConfig, Vec<LogDir>)> {
    for path in config.log_dirs.iter_mut() {
        // A read-only mount creates nothing: its log dirs must exist.
        *path = crate::os::logdir_trust::prepare(
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
    Ok((config, dirs))
}

/// The stored topic config overrides. One the validators now refuse (an older topicfs
/// clamped or accepted it) is dropped alone, so the topic keeps its other overrides and stays
/// configurable.
fn load_overrides(config: &BrokerConfig) -> Overrides {
    let mut overrides = read_topic_overrides(&config.log_dirs);
    for (t, ov) in overrides.iter_mut() {
        ov.retain(|k, v| match config.log.clone().set_topic_key(k, v) {
            Ok(()) => true,
            Err(e) => {
                log::warn!("topic {t}: ignoring stored config override {k}={v}: {e}");
                false
            }
        });
    }
    overrides
}

/// Undoes a creation of partitions a crash cut short ([`CREATING_FILE`]): their directories
/// are removed (a read-only mount leaves them and does not serve them). Returns them.
fn undo_unfinished_creation(dirs: &[LogDir], read_only: bool) -> Result<BTreeSet<(String, u32)>> {
    let mut unfinished = BTreeSet::new();
    for dir in dirs {
        let text = match crate::os::safe_fs::read_to_string(&dir.path.join(CREATING_FILE)) {
            Ok(t) => t,
            Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
            Err(e) => return Err(e.into()),
        };
        for line in text.lines() {
            let f: Vec<&str> = line.split_whitespace().collect();
            if let [t, from, to] = f[..]
                && let (Ok(from), Ok(to)) = (from.parse::<u32>(), to.parse::<u32>())
            {
                unfinished.extend((from..to).map(|p| (t.to_string(), p)));
            }
        }
    }
    if unfinished.is_empty() || read_only {
        return Ok(unfinished);
    }
    for dir in dirs {
        for (t, p) in &unfinished {
            let d = dir.path.join(format!("{t}-{p}"));
            if d.exists() {
                log::warn!(
                    "{}: its creation was cut short by a crash: removed",
                    d.display()
                );
                remove_partition_dir(&d);
            }
        }
        let root = crate::os::safe_fs::Dir::open_log_dir(&dir.path)?;
        root.sync()?;
        root.remove_if_exists(CREATING_FILE)?;
        root.sync()?;
    }
    Ok(unfinished)
}

/// One listing of every log dir: the partition directories each serves. A topic has
/// partitions 0..n where every one of 0..n has a directory; a directory past a gap
/// (`t-7000` without `t-1`) is stray and left alone: the count never comes from the largest
/// number seen, so one stray directory cannot make the mount serve thousands of partitions.
/// A partition directory that is a symlink refuses the mount; Kafka's `-delete` directories
/// are removed.
fn scan_partition_dirs(
    dirs: &[LogDir],
    unfinished: &BTreeSet<(String, u32)>,
) -> Result<Vec<Vec<FoundDir>>> {
    let mut per_dir = Vec::new();
    for dir in dirs {
        let mut parts = Vec::new();
        for entry in std::fs::read_dir(&dir.path)? {
            let entry = entry?;
            let name = entry.file_name().to_string_lossy().into_owned();
            let ft = entry.file_type()?;
            if ft.is_symlink() && parse_partition_dir(&name).is_some() {
                return Err(Error::from(io::Error::new(
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
                Some((t, p)) if unfinished.contains(&(t.clone(), p)) => {}
                Some((topic, partition)) => parts.push(FoundDir {
                    topic,
                    partition,
                    path: entry.path(),
                }),
                None if name.ends_with("-delete") => {
                    log::info!("removing deleted partition dir {name}");
                    let _ = std::fs::remove_dir_all(entry.path());
                }
                None => {}
            }
        }
        per_dir.push(parts);
    }
    let mut present: BTreeMap<&str, BTreeSet<u32>> = BTreeMap::new();
    for d in per_dir.iter().flatten() {
        present.entry(&d.topic).or_default().insert(d.partition);
    }
    let counts: BTreeMap<String, u32> = present
        .into_iter()
        .map(|(t, ps)| {
            (
                t.to_string(),
                (0u32..).take_while(|p| ps.contains(p)).count() as u32,
            )
        })
        .collect();
    for parts in per_dir.iter_mut() {
        parts.retain(|d| {
            let n = counts.get(&d.topic).copied().unwrap_or(0);
            if d.partition < n {
                return true;
            }
            log::warn!(
                "{}: partition {} is outside topic {}'s partitions 0..{n} (partition {n} is missing); left alone, not served",
                d.path.display(),
                d.partition,
                d.topic
            );
            false
        });
    }
    Ok(per_dir)
}

/// Whether the dir was shut down cleanly: Kafka's clean-shutdown marker, whose broker epoch is
/// kept for ours and which is removed (unless read-only) once it is read.
fn take_clean_marker(dir: &LogDir, read_only: bool) -> Result<bool> {
    let marker = dir.path.join(CLEAN_SHUTDOWN_FILE);
    if !marker.exists() {
        return Ok(false);
    }
    if let Some(epoch) = marker_broker_epoch(&marker) {
        dir.broker_epoch.store(epoch, Ordering::Relaxed);
    }
    if !read_only {
        let d = crate::os::safe_fs::Dir::open_log_dir(&dir.path)?;
        d.remove(CLEAN_SHUTDOWN_FILE)?;
        d.sync()?;
    }
    Ok(true)
}

/// Loads the partitions found in one log dir into `loaded`, from its checkpoints, recovering
/// them after an unclean shutdown. Returns how many were recovered.
fn load_dir(
    config: &BrokerConfig,
    overrides: &Overrides,
    dir: &LogDir,
    parts: Vec<FoundDir>,
    loaded: &mut Loaded,
) -> Result<u64> {
    let clean = take_clean_marker(dir, config.read_only)?;
    let recovery = read_checkpoint_or_warn(&dir.path.join(RECOVERY_POINT_CHECKPOINT));
    let starts = read_checkpoint_or_warn(&dir.path.join(LOG_START_OFFSET_CHECKPOINT));
    let started = Instant::now();
    let total = parts.len();
    if clean {
        log::info!(
            "Skipping recovery of {total} logs from {} since clean shutdown file was found",
            dir.path.display()
        );
    } else if total > 0 {
        log::info!(
            target: "topicfs::progress",
            "Recovering {total} logs from {} since no clean shutdown file was found",
            dir.path.display()
        );
    }
    // Long work reports progress (the terminal of the waiting mount, systemd's STATUS=) once
    // a second.
    let mut reported = Instant::now();
    for (i, d) in parts.into_iter().enumerate() {
        let key = (d.topic.clone(), d.partition);
        let params = LoadParams {
            recovery_point: recovery.get(&key).copied().unwrap_or(0),
            log_start_offset: starts.get(&key).copied().unwrap_or(0),
            had_clean_shutdown: clean,
            read_only: config.read_only,
        };
        let log = load_partition(config, overrides, &d, params)?;
        if reported.elapsed() >= Duration::from_secs(1) {
            reported = Instant::now();
            log::info!(
                target: "topicfs::progress",
                "{} {}: {}/{total} partitions",
                if clean { "loading" } else { "recovering" },
                dir.path.display(),
                i + 1
            );
        }
        let parts = loaded.entry(d.topic).or_default();
        if parts.contains_key(&d.partition) {
            return Err(Error::Corrupt(format!(
                "partition {}-{} exists in more than one log dir",
                key.0, key.1
            )));
        }
        parts.insert(d.partition, Arc::new(log));
    }
    log::info!(
        "loaded {total} partitions from {} in {:?}",
        dir.path.display(),
        started.elapsed()
    );
    Ok(if clean { 0 } else { total as u64 })
}

/// Loads one partition with its topic's config.
fn load_partition(
    config: &BrokerConfig,
    overrides: &Overrides,
    d: &FoundDir,
    params: LoadParams,
) -> Result<PartitionLog> {
    let t = &d.topic;
    let cfg = Arc::new(
        config
            .log
            .for_topic(t, overrides.get(t).unwrap_or(&BTreeMap::new()))
            .unwrap_or_else(|e| {
                log::warn!("topic {t}: ignoring invalid stored config override: {e}");
                config.log.clone()
            }),
    );
    let log = PartitionLog::load(&d.path, t, d.partition, cfg, params)?;
    // A log topicfs creates holds no transaction: only loaded ones are scanned.
    if config.read_committed && t != crate::base::OFFSETS_TOPIC {
        log.set_read_committed()?;
    }
    Ok(log)
}

/// The topics of the loaded partitions. The scan serves only partitions 0..n that all have a
/// directory, so each topic's partitions are exactly 0..n.
fn assemble_topics(loaded: Loaded, overrides: &Overrides) -> BTreeMap<String, Arc<Topic>> {
    let mut topics = BTreeMap::new();
    for (name, parts) in loaded {
        debug_assert!(parts.keys().copied().eq(0..parts.len() as u32));
        let ov = overrides.get(&name).cloned().unwrap_or_default();
        let list: Vec<Arc<PartitionLog>> = parts.into_values().collect();
        let cfg = list[0].config();
        topics.insert(name.clone(), Arc::new(Topic::new(name, list, ov, cfg)));
    }
    topics
}

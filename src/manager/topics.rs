//! Topic administration: creating a topic (all or nothing, placed on the least loaded log
//! dir), deleting it (waiting for its users, then renaming its dirs away), growing it, and its
//! config overrides, validated whole and applied at once.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use super::*;

impl LogManager {
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
        // All or nothing across a crash too: the marker is durable before the first
        // directory is made and removed once the last one is durable.
        let marker = format!("{topic} {from} {to}\n");
        for d in &self.dirs {
            checkpoint::write_atomic(&d.path.join(CREATING_FILE), marker.as_bytes())?;
        }
        let made = self.make_partitions(topics, topic, from, to, cfg);
        // On success each partition directory was synced into its log dir as it was made.
        for d in &self.dirs {
            let removed = crate::os::safe_fs::Dir::open_log_dir(&d.path).and_then(|root| {
                root.remove_if_exists(CREATING_FILE)
                    .and_then(|()| root.sync())
            });
            if let Err(e) = removed {
                // The partitions stand; a crash before the next removal undoes them.
                log::error!("{}: {CREATING_FILE} not removed: {e}", d.path.display());
            }
        }
        made
    }

    fn make_partitions(
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
    /// The schema registry's `_schemas` is made as a registry makes it: one partition,
    /// `cleanup.policy=compact`.
    pub fn create_topic(&self, name: &str) -> Result<Arc<Topic>> {
        if name != crate::schema::SCHEMAS_TOPIC {
            return self.create_topic_with_partitions(name, self.config.num_partitions);
        }
        let t = self.create_topic_with_partitions(name, 1)?;
        // Compacted by its config even without the override (see `LogConfig::for_topic`).
        if let Err(e) = self.set_topic_configs(name, &[("cleanup.policy", Some("compact"))]) {
            log::warn!("{name}: cleanup.policy=compact not written: {e}");
        }
        Ok(t)
    }

    /// Like [`LogManager::create_topic`], with `partitions` partitions (at least 1).
    pub fn create_topic_with_partitions(&self, name: &str, partitions: u32) -> Result<Arc<Topic>> {
        validate_topic_name(name)?;
        crate::base::partition_growth(name, 0, partitions)?;
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
        topic.touch();
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
        if name == crate::base::OFFSETS_TOPIC {
            return Err(Error::InternalTopic(format!(
                "{name} is the consumer groups' internal topic: it cannot be deleted"
            )));
        }
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
        // The renames are durable before the deletion is reported done: after a power cut
        // the topic stays deleted (the next load removes the `-delete` dirs).
        if let Err(e) = sync_parents(renamed.iter().map(|(_, del)| del.as_path())) {
            for (dir, del) in renamed.iter().rev() {
                if let Err(e) = std::fs::rename(del, dir) {
                    log::error!("cannot rename {} back: {e}", del.display());
                }
            }
            return Err(e.into());
        }
        *deleted = true;
        self.topics.write_guard().remove(name);
        let logs = topic.partitions();
        self.counters
            .topic_deleted(name, logs.iter().map(|l| l.counters()));
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
        if topic == crate::base::OFFSETS_TOPIC {
            // A group's partition is its hash modulo the count: growing it moves groups.
            return Err(Error::InternalTopic(format!(
                "{topic} is the consumer groups' internal topic: its partition count is fixed"
            )));
        }
        let _admin = self.admin.guard();
        let t = self.topic(topic)?;
        let current = t.partition_count();
        if !crate::base::partition_growth(topic, current, n)? {
            return Ok(());
        }
        let made = {
            let topics = self.topics.read_guard();
            self.new_partitions(&topics, topic, current, n, t.config())?
        };
        t.partitions.write_guard().extend(made);
        t.touch();
        log::info!("topic {topic}: partitions {current} -> {n}");
        self.checkpoint_after(&format!("topic {topic}: partitions {current} -> {n}"));
        Ok(())
    }

    /// Sets (`Some`) or removes (`None` or empty) a topic config override, applied to every
    /// partition at once and persisted.
    #[cfg(feature = "internals")]
    pub fn set_topic_config(&self, topic: &str, key: &str, value: Option<&str>) -> Result<()> {
        self.set_topic_configs(topic, &[(key, value)])
    }

    /// Whether one override (`Some`) or its removal (`None` or empty) would be accepted: a
    /// topic config key, and a value Kafka's validator takes for it. Nothing changes.
    pub fn check_topic_config(&self, key: &str, value: Option<&str>) -> Result<()> {
        let key = key.trim();
        if !TOPIC_KEYS.contains(&key) {
            return Err(Error::InvalidConfig(format!(
                "unknown topic config key {key:?}"
            )));
        }
        match value.map(str::trim).filter(|v| !v.is_empty()) {
            Some(v) => self.config.log.clone().set_topic_key(key, v),
            None => Ok(()),
        }
    }

    /// Sets or removes several overrides as one change: every key and value is validated
    /// first (Kafka's validators), then all are persisted once and applied at once; on any
    /// error nothing changes. A key given twice takes its last value.
    pub fn set_topic_configs(&self, topic: &str, changes: &[(&str, Option<&str>)]) -> Result<()> {
        self.writable()?;
        let _admin = self.admin.guard();
        let t = self.topic(topic)?;
        let (ov, cfg) = self.topic_config_with(topic, changes)?;
        let cfg = Arc::new(cfg);
        self.set_overrides_locked(topic, Some(ov.clone()))?;
        *t.overrides.guard() = ov;
        *t.config.write_guard() = cfg.clone();
        for l in t.partitions() {
            l.set_config(cfg.clone());
        }
        t.touch();
        Ok(())
    }

    /// The overrides and the config `topic` would have with `changes` made to its overrides
    /// (each key and value checked by Kafka's validators, and the whole: `__consumer_offsets`
    /// keeps `compact`). Nothing changes.
    pub fn topic_config_with(
        &self,
        topic: &str,
        changes: &[(&str, Option<&str>)],
    ) -> Result<(BTreeMap<String, String>, LogConfig)> {
        let mut ov = self.topic(topic)?.overrides();
        for (key, value) in changes {
            self.check_topic_config(key, *value)?;
            let key = key.trim();
            match value.map(str::trim).filter(|v| !v.is_empty()) {
                Some(v) => {
                    ov.insert(key.to_string(), v.to_string());
                }
                None => {
                    ov.remove(key);
                }
            }
        }
        let cfg = self.config.log.for_topic(topic, &ov)?;
        if topic == crate::base::OFFSETS_TOPIC && !cfg.cleanup_policy.compact {
            // Its records are the latest commit of each key: deleting by age loses commits.
            return Err(Error::InvalidConfig(format!(
                "{topic} is the consumer groups' internal topic: its cleanup.policy keeps compact"
            )));
        }
        if topic == crate::schema::SCHEMAS_TOPIC && !cfg.cleanup_policy.compact {
            // Its records are the schemas: deleting by age loses them.
            return Err(Error::InvalidConfig(format!(
                "{topic} is the schema registry's topic: its cleanup.policy keeps compact"
            )));
        }
        Ok((ov, cfg))
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
}

/// fsyncs the log dir of each of `paths` once.
fn sync_parents<'a>(paths: impl Iterator<Item = &'a std::path::Path>) -> std::io::Result<()> {
    let mut done = std::collections::BTreeSet::new();
    for p in paths {
        if let Some(parent) = p.parent()
            && done.insert(parent.to_path_buf())
        {
            crate::os::safe_fs::Dir::open_log_dir(parent)?.sync()?;
        }
    }
    Ok(())
}

//! A live Kafka cluster as a [`Storage`] (remote mode), through librdkafka: topics are the
//! cluster's, appends are produced with an idempotent `acks=all` producer and return once
//! acknowledged, reads fetch from the brokers, group offsets commit to the cluster. Nothing
//! is stored locally; `segments/` is absent.

mod admin;
mod batch;
mod block;
mod group_offsets;
mod member;
mod produce;
mod read;

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use rdkafka::ClientConfig;
use rdkafka::admin::AdminClient;
use rdkafka::client::DefaultClientContext;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::error::{KafkaError, RDKafkaErrorCode};

use super::cluster_config::KAFKA_MAX_MESSAGE_BYTES;
use super::{ClusterConfig, GroupStore, Live, PartitionStore, Storage, TopicStore, Unacknowledged};
use crate::base::{AppendResult, Appended};
use crate::error::{Error, Result};
use crate::record::RecordInput;
use crate::util::sync::MutexExt;
use produce::Stamped;

/// The bytes a record adds to the counters of `@metrics` in remote mode, where the batches
/// are the cluster's: its key, value and headers.
fn record_bytes(m: &impl rdkafka::Message) -> u64 {
    use rdkafka::message::Headers as _;
    let headers: usize = m.headers().map_or(0, |h| {
        h.iter()
            .map(|hd| hd.key.len() + hd.value.map_or(0, <[u8]>::len))
            .sum()
    });
    record_size(m.key(), m.payload(), headers)
}

/// The same from a record's parts: its key, value and the bytes of its headers' keys and
/// values.
fn record_size(key: Option<&[u8]>, value: Option<&[u8]>, header_bytes: usize) -> u64 {
    let len = |b: Option<&[u8]>| b.map_or(0, <[u8]>::len);
    (len(key) + len(value) + header_bytes) as u64
}

/// A librdkafka client's config, which makes the client as the process: librdkafka starts
/// the client's threads (the main one, a broker's) on the thread that makes it, and they keep
/// that thread's CPUs and scheduling policy. The request that makes a client may be served by
/// an io_uring queue's thread, pinned to one CPU and on SCHED_IDLE (`os::cpu::StepAside`):
/// the client's threads would be too, and nothing can tell them to leave.
struct Config(ClientConfig);

impl Config {
    fn set(&mut self, key: &str, value: impl Into<String>) -> &mut Config {
        self.0.set(key, value);
        self
    }

    fn create<T: rdkafka::config::FromClientConfig>(&self) -> rdkafka::error::KafkaResult<T> {
        crate::os::cpu::as_the_process_while(|| self.0.create())
    }

    fn create_with_context<C, T>(&self, ctx: C) -> rdkafka::error::KafkaResult<T>
    where
        C: rdkafka::ClientContext,
        T: rdkafka::config::FromClientConfigAndContext<C>,
    {
        crate::os::cpu::as_the_process_while(|| self.0.create_with_context(ctx))
    }
}

impl ClusterConfig {
    /// A client config: bootstrap servers, then `defaults` (unless the user's file sets the
    /// key), then the user's properties.
    fn client_config(&self, defaults: &[(&str, String)]) -> Config {
        let mut c = ClientConfig::new();
        c.set("bootstrap.servers", &self.bootstrap_servers);
        for (k, v) in defaults {
            if self.get(k).is_none() {
                c.set(*k, v);
            }
        }
        for (k, v) in &self.client {
            c.set(k, v);
        }
        Config(c)
    }

    /// `isolation.level` for the consumers: read_uncommitted unless the mount says
    /// read_committed (librdkafka's own default is read_committed).
    fn isolation_level(&self) -> &'static str {
        if self.read_committed {
            "read_committed"
        } else {
            "read_uncommitted"
        }
    }

    /// A consumer that belongs to no group: metadata, watermarks, offsets for times, reads.
    fn plain_consumer(&self) -> Result<BaseConsumer> {
        let t = self.timeout().as_millis().to_string();
        self.client_config(&[
            ("enable.partition.eof", "true".into()),
            // librdkafka assigns partitions only to a consumer with a group id; this one
            // never joins it nor commits (reads are assigned, not subscribed).
            ("group.id", "topicfs-reader".into()),
            ("enable.auto.commit", "false".into()),
            ("enable.auto.offset.store", "false".into()),
            // The mount's isolation level, as local mode reads the log.
            ("isolation.level", self.isolation_level().into()),
            ("socket.timeout.ms", t.clone()),
            ("session.timeout.ms", "45000".into()),
            ("topic.metadata.refresh.interval.ms", "10000".into()),
            // A stream reads as fast as its reader takes the records: once the prefetch
            // queue is full, the next fetch waits 10 ms, not librdkafka's default second
            // (a 99 MB read stalled about a second every 30 MB).
            ("fetch.queue.backoff.ms", "10".into()),
        ])
        .create()
        .map_err(|e| kafka("cannot create a consumer", e))
    }
}

/// Closes a librdkafka client on a thread of its own: it can take up to a second to shut down
/// its broker threads, and a client is often let go of inside a request.
pub(super) fn close_later<T: Send + 'static>(client: T) {
    let _ = crate::os::cpu::spawn("consumer-close".into(), move || drop(client));
}

/// A Kafka error as the storage error it is (a log line names Kafka's error).
pub(crate) fn kafka(what: &str, e: KafkaError) -> Error {
    match e.rdkafka_error_code() {
        Some(code) => code_error(what, code, &e.to_string()),
        None => Error::Cluster(format!("{what}: {e}")),
    }
}

fn code_error(what: &str, code: RDKafkaErrorCode, text: &str) -> Error {
    use RDKafkaErrorCode as C;
    match code {
        C::MessageSizeTooLarge | C::MessageBatchTooLarge => {
            Error::Cluster(format!("{what}: {text} (MESSAGE_TOO_LARGE)")).too_large()
        }
        C::InvalidConfig | C::InvalidRequest | C::PolicyViolation | C::InvalidReplicationFactor => {
            Error::InvalidConfig(format!("{what}: {text}"))
        }
        C::InvalidTopic => Error::InvalidTopicName(format!("{what}: {text}")),
        _ => Error::Cluster(format!("{what}: {text}")),
    }
}

impl Error {
    /// A produce refused for its size: EMSGSIZE, with Kafka's words in the log.
    fn too_large(self) -> Error {
        log::warn!("{self}");
        Error::RecordTooLarge { size: 0, max: 0 }
    }
}

/// The topics as the cluster last described them.
struct Metadata {
    at: Instant,
    /// Changed by us since: asked again at the next use.
    stale: bool,
    partitions: BTreeMap<String, u32>,
}

impl Metadata {
    /// Changed by us, or older than [`METADATA_TTL`]: to be asked again.
    fn is_old(&self) -> bool {
        self.stale || self.at.elapsed() >= METADATA_TTL
    }
}

/// The last failure of one kind of request that waited out the client's timeout. For one
/// timeout's time after it, that request fails again at once: a cluster that stops answering
/// costs a caller one client timeout, not one for each call (a `cat` is a lookup, an open
/// and a read; a `stat` right after is one more), nor one for each caller waiting in turn.
#[derive(Default)]
struct NoAnswer(Mutex<Option<(Instant, Error)>>);

impl NoAnswer {
    /// `request`, unless the last one waited out `timeout` less than `timeout` ago: then its
    /// failure again.
    fn ask<T>(&self, timeout: Duration, request: impl FnOnce() -> Result<T>) -> Result<T> {
        if let Some((at, e)) = &*self.0.guard()
            && at.elapsed() < timeout
        {
            return Err(e.clone());
        }
        let t0 = Instant::now();
        let r = request();
        match &r {
            Ok(_) => *self.0.guard() = None,
            // A quick refusal (an unknown topic...) is asked again at the next call.
            Err(e) if t0.elapsed() >= timeout / 2 => {
                *self.0.guard() = Some((Instant::now(), e.clone()));
            }
            Err(_) => {}
        }
        r
    }
}

/// How long a metadata answer is reused (a `mkdir`/`rmdir` of ours refreshes it at once).
const METADATA_TTL: Duration = Duration::from_millis(1000);

pub(crate) struct Inner {
    cfg: ClusterConfig,
    timeout: Duration,
    admin: AdminClient<DefaultClientContext>,
    producer: produce::Producer,
    /// Metadata, watermarks and offsets for times.
    meta: BaseConsumer,
    metadata: Mutex<Option<Metadata>>,
    /// A background metadata refresh is under way.
    refreshing: AtomicBool,
    /// The last metadata request that got no answer.
    metadata_no_answer: NoAnswer,
    topics: Mutex<HashMap<String, Arc<ClusterTopic>>>,
    next_incarnation: AtomicU64,
    watch: Arc<read::Watch>,
    closed: AtomicBool,
    me: Weak<Inner>,
    /// Produce requests and fetches that failed (`@metrics`).
    counters: Arc<crate::metrics::DaemonCounters>,
    /// Each partition's records and bytes produced and fetched for readers (`@metrics`).
    book: Arc<crate::metrics::CounterBook>,
}

/// The cluster storage; clones share one set of clients.
#[derive(Clone)]
pub struct ClusterStorage(Arc<Inner>);

impl ClusterStorage {
    /// Connects: fails (with Kafka's words) when the cluster cannot be reached within the
    /// client's timeout.
    pub fn connect(cfg: ClusterConfig) -> Result<ClusterStorage> {
        let timeout = cfg.timeout();
        let admin: AdminClient<DefaultClientContext> = cfg
            .client_config(&[])
            .create()
            .map_err(|e| kafka("cannot create the admin client", e))?;
        let meta = cfg.plain_consumer()?;
        // The cluster answers, or the mount fails now.
        let md = meta
            .fetch_metadata(None, timeout)
            .map_err(|e| kafka(&format!("cannot reach {}", cfg.bootstrap_servers), e))?;
        log::info!(
            "connected to the Kafka cluster at {} ({} brokers, {} topics)",
            cfg.bootstrap_servers,
            md.brokers().len(),
            md.topics().len()
        );
        let book = Arc::new(crate::metrics::CounterBook::default());
        let producer = produce::Producer::new(&cfg, book.clone())?;
        let inner = Arc::new_cyclic(|me| Inner {
            timeout,
            admin,
            producer,
            meta,
            metadata: Mutex::new(None),
            refreshing: AtomicBool::new(false),
            metadata_no_answer: NoAnswer::default(),
            topics: Mutex::new(HashMap::new()),
            next_incarnation: AtomicU64::new(1),
            watch: read::Watch::start(me.clone()),
            closed: AtomicBool::new(false),
            me: me.clone(),
            counters: Default::default(),
            book,
            cfg,
        });
        Ok(ClusterStorage(inner))
    }
}

impl Inner {
    fn arc(&self) -> Arc<Inner> {
        self.me.upgrade().expect("the storage outlives its topics")
    }

    /// Produces `records[i]` to partition `parts[i]` of `topic` within the client's timeout
    /// (see [`produce::Producer::send`]): how many were acknowledged (with `behind`: handed
    /// over) before the first that failed, and that failure, counted in the metrics.
    fn produce(
        &self,
        topic: &str,
        records: &[RecordInput<'_>],
        parts: &[u32],
        behind: Option<&Arc<produce::Unacked>>,
        stamped: Stamped,
    ) -> (usize, Result<()>) {
        let mut done = 0;
        let res = self.producer.send(
            topic,
            records,
            parts,
            self.timeout,
            &mut done,
            behind,
            stamped,
        );
        if res.is_err() {
            crate::metrics::DaemonCounters::add(&self.counters.producer_errors, 1);
        }
        (done, res)
    }

    /// The topics and partition counts (`fresh`: asked now). Otherwise an old answer (see
    /// [`Metadata::is_old`]) is still returned at once while a background refresh asks the
    /// cluster again, so a lookup never waits for a cluster that is down once it has been
    /// seen.
    fn metadata(&self, fresh: bool) -> Result<BTreeMap<String, u32>> {
        if !fresh && let Some(m) = self.metadata.guard().as_ref() {
            if m.is_old() {
                self.refresh_in_background();
            }
            return Ok(m.partitions.clone());
        }
        self.fetch_metadata()
    }

    /// Starts a thread asking the cluster for its topics, unless one is under way.
    fn refresh_in_background(&self) {
        if self.refreshing.swap(true, Ordering::SeqCst) {
            return;
        }
        let inner = self.arc();
        let spawned = crate::os::cpu::spawn("metadata".into(), move || {
            if let Err(e) = inner.fetch_metadata() {
                log::warn!("{e}; the topics known before are shown");
            }
            inner.refreshing.store(false, Ordering::SeqCst);
        });
        if spawned.is_err() {
            self.refreshing.store(false, Ordering::SeqCst);
        }
    }

    /// Asks the cluster for its topics now and caches the answer.
    fn fetch_metadata(&self) -> Result<BTreeMap<String, u32>> {
        let md = self.metadata_no_answer.ask(self.timeout, || {
            self.meta
                .fetch_metadata(None, self.timeout)
                .map_err(|e| kafka("metadata", e))
        })?;
        let partitions: BTreeMap<String, u32> = md
            .topics()
            .iter()
            .filter(|t| t.error().is_none())
            .map(|t| (t.name().to_string(), t.partitions().len() as u32))
            .collect();
        *self.metadata.guard() = Some(Metadata {
            at: Instant::now(),
            stale: false,
            partitions: partitions.clone(),
        });
        // Topics gone from the cluster: their files become stale.
        let mut topics = self.topics.guard();
        topics.retain(|name, t| {
            let keep = partitions.contains_key(name);
            if !keep {
                t.deleted.store(true, Ordering::SeqCst);
                self.watch.wake_topic(name);
            }
            keep
        });
        Ok(partitions)
    }

    fn topic(&self, name: &str, fresh: bool) -> Result<Arc<ClusterTopic>> {
        // A name an old answer lacks may have been created since (by another client): asked
        // now, not in the background.
        let missing = self
            .metadata
            .guard()
            .as_ref()
            .is_some_and(|m| m.is_old() && !m.partitions.contains_key(name));
        let md = self.metadata(fresh || missing)?;
        let Some(&count) = md.get(name) else {
            return Err(Error::UnknownTopic(name.to_string()));
        };
        let mut topics = self.topics.guard();
        let t = topics.entry(name.to_string()).or_insert_with(|| {
            Arc::new(ClusterTopic {
                inner: self.arc(),
                name: name.to_string(),
                incarnation: self.next_incarnation.fetch_add(1, Ordering::SeqCst),
                partitions: Mutex::new(Vec::new()),
                count: AtomicU32::new(count),
                deleted: AtomicBool::new(false),
                round_robin: AtomicU32::new(0),
                max_message_bytes: Mutex::new(None),
                config_no_answer: NoAnswer::default(),
            })
        });
        t.count.store(count, Ordering::SeqCst);
        Ok(t.clone())
    }

    /// What is cached changed by our own call (`deleted`: that topic is gone): the next use
    /// asks the cluster again, and meanwhile the rest of the answer is kept, so a cluster
    /// that goes down right after never leaves lookups without one.
    fn expire(&self, deleted: Option<&str>) {
        if let Some(m) = self.metadata.guard().as_mut() {
            m.stale = true;
            if let Some(name) = deleted {
                m.partitions.remove(name);
            }
        }
    }
}

impl Storage for ClusterStorage {
    fn topics(&self) -> Vec<String> {
        match self.0.metadata(false) {
            Ok(md) => md.into_keys().collect(),
            Err(e) => {
                log::error!("listing topics: {e}");
                Vec::new()
            }
        }
    }
    fn topic(&self, name: &str) -> Result<Arc<dyn TopicStore>> {
        Ok(self.0.topic(name, false)?)
    }
    fn create_topic(&self, name: &str) -> Result<Arc<dyn TopicStore>> {
        crate::base::validate_topic_name(name)?;
        admin::create_topic(&self.0, name)?;
        self.0.expire(None);
        // The controller created it; wait until the metadata a broker serves shows it.
        let deadline = Instant::now() + self.0.timeout;
        loop {
            match self.0.topic(name, true) {
                Ok(t) if t.partition_count() > 0 => return Ok(t),
                Err(Error::UnknownTopic(_)) | Ok(_) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(50))
                }
                Ok(_) | Err(Error::UnknownTopic(_)) => {
                    return Err(Error::Cluster(format!(
                        "topic {name} was created but its metadata did not show within {:?}",
                        self.0.timeout
                    )));
                }
                Err(e) => return Err(e),
            }
        }
    }
    fn delete_topic(&self, name: &str) -> Result<()> {
        admin::delete_topic(&self.0, name)?;
        if let Some(t) = self.0.topics.guard().remove(name) {
            t.deleted.store(true, Ordering::SeqCst);
        }
        self.0.watch.wake_topic(name);
        self.0.expire(Some(name));
        Ok(())
    }
    fn set_partition_count(&self, topic: &str, count: u32) -> Result<()> {
        let t = self.0.topic(topic, true)?;
        let current = t.partition_count();
        if !crate::base::partition_growth(topic, current, count)? {
            return Ok(());
        }
        admin::create_partitions(&self.0, topic, count)?;
        self.0.expire(None);
        let deadline = Instant::now() + self.0.timeout;
        while self.0.topic(topic, true)?.partition_count() < count && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(50));
        }
        Ok(())
    }
    fn check_topic_configs(&self, topic: &str, changes: &[(&str, Option<&str>)]) -> Result<()> {
        if changes.iter().any(|(k, _)| k.trim().is_empty()) {
            return Err(Error::InvalidConfig("an empty config key".to_string()));
        }
        // The cluster's own validators, on a change it does not apply (validate_only).
        self.0.topic(topic, true)?;
        admin::alter_configs(&self.0, topic, changes, admin::Alter::ValidateOnly)
    }
    fn set_topic_configs(&self, topic: &str, changes: &[(&str, Option<&str>)]) -> Result<()> {
        let t = self.0.topic(topic, true)?;
        admin::alter_configs(&self.0, topic, changes, admin::Alter::Apply)?;
        // Read back while the cluster answers, not at the next open of an append file.
        *t.max_message_bytes.guard() = None;
        TopicStore::max_message_bytes(&*t);
        Ok(())
    }
    fn sync_partition(&self, _topic: &str, _partition: u32) -> Result<()> {
        // Every write returned only once the cluster acknowledged it (acks=all).
        Ok(())
    }
    fn log_dirs(&self) -> Vec<PathBuf> {
        Vec::new()
    }
    fn shutdown(&self) -> Result<()> {
        if self.0.closed.swap(true, Ordering::SeqCst) {
            return Ok(());
        }
        self.0.watch.stop();
        self.0.producer.flush(self.0.timeout)
    }
    fn open_groups(self: Arc<Self>) -> Result<Arc<dyn GroupStore>> {
        Ok(Arc::new(group_offsets::ClusterGroups::new(self.0.clone())))
    }
    /// The offsets and counters of every partition. A cluster that does not answer costs
    /// one client timeout in all: after the first partition whose offsets could not be had,
    /// the rest show the ones last known.
    fn sample(&self) -> crate::metrics::Sample {
        let mut s = crate::metrics::Sample::default();
        let mut ask = true;
        for t in self.topics() {
            let Ok(topic) = self.0.topic(&t, false) else {
                continue;
            };
            for p in 0..topic.count() {
                let Ok(part) = topic.part(p) else {
                    continue;
                };
                let marks = match ask {
                    true => part.marks(false),
                    false => Ok(part.last_marks()),
                };
                let (start, end) = marks.unwrap_or_else(|e| {
                    log::error!("{e}; @metrics shows the offsets last known");
                    ask = false;
                    part.last_marks()
                });
                let mut ps = crate::metrics::PartitionSample {
                    topic: t.clone(),
                    partition: p,
                    log_start_offset: start,
                    log_end_offset: end,
                    ..Default::default()
                };
                crate::metrics::Sample::counters(&mut ps, &self.0.book.of(&t, p));
                s.partitions.push(ps);
            }
        }
        s.take_daemon(&self.0.counters);
        s
    }
}

pub(crate) struct ClusterTopic {
    inner: Arc<Inner>,
    name: String,
    incarnation: u64,
    partitions: Mutex<Vec<Arc<read::ClusterPartition>>>,
    count: AtomicU32,
    deleted: AtomicBool,
    round_robin: AtomicU32,
    max_message_bytes: Mutex<Option<usize>>,
    /// The last request for the topic's config that got no answer.
    config_no_answer: NoAnswer,
}

impl ClusterTopic {
    fn count(&self) -> u32 {
        self.count.load(Ordering::SeqCst)
    }

    fn part(&self, p: u32) -> Result<Arc<read::ClusterPartition>> {
        if p >= self.partition_count() {
            return Err(Error::UnknownPartition {
                topic: self.name.clone(),
                partition: p,
            });
        }
        let mut parts = self.partitions.guard();
        while parts.len() <= p as usize {
            let n = parts.len() as u32;
            parts.push(Arc::new(read::ClusterPartition::new(
                self.inner.clone(),
                &self.name,
                n,
            )));
        }
        Ok(parts[p as usize].clone())
    }
}

impl TopicStore for ClusterTopic {
    fn name(&self) -> &str {
        &self.name
    }
    fn incarnation(&self) -> u64 {
        self.incarnation
    }
    fn live(&self) -> Result<Live<'_>> {
        if !self.deleted.load(Ordering::SeqCst) {
            // Notices a deletion by someone else within the metadata's lifetime.
            let _ = self.inner.metadata(false);
        }
        if self.deleted.load(Ordering::SeqCst) {
            return Err(Error::TopicDeleted(self.name.clone()));
        }
        Ok(Live::unguarded())
    }
    fn partition_count(&self) -> u32 {
        self.count.load(Ordering::SeqCst)
    }
    fn partition_count_now(&self) -> Result<u32> {
        Ok(self.inner.topic(&self.name, true)?.count())
    }
    fn partition(&self, p: u32) -> Result<Arc<dyn PartitionStore>> {
        Ok(self.part(p)?)
    }
    fn config_text(&self) -> Result<String> {
        let entries = self.config_no_answer.ask(self.inner.timeout, || {
            admin::topic_overrides(&self.inner, &self.name)
        })?;
        Ok(entries.iter().map(|(k, v)| format!("{k}={v}\n")).collect())
    }
    fn max_message_bytes(&self) -> usize {
        let mut cached = self.max_message_bytes.guard();
        if let Some(v) = *cached {
            return v;
        }
        match admin::topic_config(&self.inner, &self.name, "max.message.bytes") {
            Ok(v) => {
                let v = v
                    .and_then(|v| v.parse().ok())
                    .unwrap_or(KAFKA_MAX_MESSAGE_BYTES);
                *cached = Some(v);
                v
            }
            // Not kept: asked again at the next open. The cluster refuses what is too large
            // anyway (EMSGSIZE).
            Err(e) => {
                log::warn!(
                    "{e}; {}: the default max.message.bytes is assumed",
                    self.name
                );
                KAFKA_MAX_MESSAGE_BYTES
            }
        }
    }
    fn append(&self, records: &[RecordInput<'_>], max_record: usize) -> AppendResult {
        self.append_to(records, max_record, None, Stamped::AsGiven)
    }
    fn append_lines(&self, parts: &[&[u8]], timestamp: i64, max_record: usize) -> AppendResult {
        let records = crate::record::lines::line_records(parts, timestamp);
        self.append_to(&records, max_record, None, Stamped::ByClock)
    }
    fn write_behind(&self) -> Option<(Arc<dyn TopicStore>, Arc<dyn Unacknowledged>)> {
        if !self.inner.cfg.write_behind {
            return None;
        }
        let file = produce::Unacked::new(&self.name);
        let topic = self.inner.topics.guard().get(&self.name).cloned();
        // A topic deleted since has no file to write to (the append fails as before).
        let topic = topic.filter(|t| t.incarnation == self.incarnation)?;
        let view = BehindTopic {
            topic,
            file: file.clone(),
        };
        Some((Arc::new(view), file))
    }
}

impl ClusterTopic {
    /// Appends one write's records (see [`TopicStore::append`]); with `behind`, returns once
    /// they are handed to the producer.
    fn append_to(
        &self,
        records: &[RecordInput<'_>],
        max_record: usize,
        behind: Option<&Arc<produce::Unacked>>,
        stamped: Stamped,
    ) -> AppendResult {
        if records.is_empty() {
            return Ok(Appended::default());
        }
        let count = self.partition_count().max(1);
        let parts = crate::produce::route(records, count, max_record, || {
            self.round_robin.fetch_add(1, Ordering::Relaxed) % count
        })?;
        let (done, res) = self
            .inner
            .produce(&self.name, records, &parts, behind, stamped);
        let appended = Appended {
            records: done,
            partitions: parts[..done].iter().copied().collect(),
        };
        for p in appended.partitions.iter() {
            if let Ok(part) = self.part(*p) {
                part.appended();
            }
        }
        match res {
            Ok(()) => Ok(appended),
            Err(e) => Err(appended.stopped(e)),
        }
    }
}

/// A topic as one open append file that writes behind sees it (`--write-behind`): its
/// appends return once handed to the producer and are counted in `file` until acknowledged.
struct BehindTopic {
    topic: Arc<ClusterTopic>,
    file: Arc<produce::Unacked>,
}

impl TopicStore for BehindTopic {
    fn name(&self) -> &str {
        &self.topic.name
    }
    fn incarnation(&self) -> u64 {
        self.topic.incarnation
    }
    fn live(&self) -> Result<Live<'_>> {
        self.topic.live()
    }
    fn partition_count(&self) -> u32 {
        self.topic.partition_count()
    }
    fn partition_count_now(&self) -> Result<u32> {
        self.topic.partition_count_now()
    }
    fn partition(&self, p: u32) -> Result<Arc<dyn PartitionStore>> {
        self.topic.partition(p)
    }
    fn config_text(&self) -> Result<String> {
        self.topic.config_text()
    }
    fn max_message_bytes(&self) -> usize {
        self.topic.max_message_bytes()
    }
    fn append(&self, records: &[RecordInput<'_>], max_record: usize) -> AppendResult {
        self.topic
            .append_to(records, max_record, Some(&self.file), Stamped::AsGiven)
    }
    fn append_lines(&self, parts: &[&[u8]], timestamp: i64, max_record: usize) -> AppendResult {
        let records = crate::record::lines::line_records(parts, timestamp);
        self.topic
            .append_to(&records, max_record, Some(&self.file), Stamped::ByClock)
    }
}

#[cfg(test)]
mod tests;

//! A mount's schemas: one [`Registry`] per mount, fed by the registry's own topic
//! `_schemas` of the mount's storage (its log dir, or its cluster), read whole at start and
//! followed as it grows; and what the views ask of it: the JSON a key or value shows as
//! ([`Schemas::show`]), the wire format JSON written by a client is stored as
//! ([`Schemas::store`]).

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::{Arc, Condvar, Mutex, Weak};
use std::time::Duration;

use crate::schema::{DecodeError, EncodeError, Kind, Registry, SCHEMAS_TOPIC, subject_for};
use crate::storage::{Storage, TopicStore};
use crate::util::sync::{CondvarExt, MutexExt};

pub mod rest;
pub use rest::RestConfig;

/// What a mount does with schema-encoded keys and values (`-o schema.decode=none`,
/// `-o schema.encode=none`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SchemaOptions {
    /// Keys and values in the wire format with a known id are shown as JSON.
    pub decode: bool,
    /// JSON written to a topic whose subject exists is stored in the wire format.
    pub encode: bool,
    /// A registry's REST API, asked for what `_schemas` does not hold
    /// (`schema.registry.url`...).
    pub rest: RestConfig,
}

impl Default for SchemaOptions {
    fn default() -> Self {
        SchemaOptions {
            decode: true,
            encode: true,
            rest: RestConfig::default(),
        }
    }
}

/// How many ids of one topic are logged as shown raw: a topic of binary values whose first
/// byte is 0 (each an "id" of its own) would otherwise log a line per record.
const MAX_LOGGED_IDS: usize = 20;

/// How often the follow thread looks for records of `_schemas` appended by others (and for
/// the topic itself, until it exists).
const FOLLOW_EVERY: Duration = Duration::from_secs(1);

/// Where the feed is in `_schemas`: the incarnation of the topic read, and the next offset of
/// each partition.
#[derive(Default)]
struct Feed {
    incarnation: Option<u64>,
    next: BTreeMap<u32, i64>,
}

/// A mount's schemas (shared by every thread of it).
pub struct Schemas {
    registry: Arc<Registry>,
    options: SchemaOptions,
    storage: Arc<dyn Storage>,
    feed: Mutex<Feed>,
    /// The ids of each topic already logged as shown raw: one `@log` line each, for the
    /// first [`MAX_LOGGED_IDS`] of a topic.
    logged: Mutex<HashMap<String, HashSet<u32>>>,
    /// Set when the mount ends: the follow thread stops.
    stop: (Mutex<bool>, Condvar),
    /// The registry's REST API, when the mount names one.
    rest: Option<rest::Rest>,
}

impl Schemas {
    /// The schemas of `storage`: its `_schemas` read whole now, then followed by a thread.
    pub fn start(storage: Arc<dyn Storage>, options: SchemaOptions) -> Arc<Schemas> {
        let s = Schemas::unfollowed(storage, options);
        s.catch_up(true);
        let weak = Arc::downgrade(&s);
        let spawned = std::thread::Builder::new()
            .name("schemas".into())
            .spawn(move || follow(weak));
        if let Err(e) = spawned {
            log::error!("{SCHEMAS_TOPIC}: no thread to follow it ({e}): read at opens only");
        }
        s
    }

    /// The schemas of `storage`, read only when asked ([`Schemas::refresh`]).
    pub fn unfollowed(storage: Arc<dyn Storage>, options: SchemaOptions) -> Arc<Schemas> {
        let rest = match options.rest.urls.is_empty() {
            true => None,
            false => rest::Rest::new(&options.rest)
                .inspect_err(|e| log::error!("schema registry not asked: {e}"))
                .ok(),
        };
        Arc::new(Schemas {
            rest,
            registry: Arc::new(Registry::new()),
            options,
            storage,
            feed: Mutex::new(Feed::default()),
            logged: Mutex::new(HashMap::new()),
            stop: (Mutex::new(false), Condvar::new()),
        })
    }

    #[cfg(test)]
    pub fn registry(&self) -> &Arc<Registry> {
        &self.registry
    }

    /// Stops the follow thread.
    pub fn shutdown(&self) {
        *self.stop.0.guard() = true;
        self.stop.1.notify_all();
    }

    /// Reads what `_schemas` holds past what was read (appends made through the mount are
    /// seen by the next view opened after them).
    pub fn refresh(&self) {
        self.catch_up(false);
    }

    /// Whether keys and values of `topic` are decoded: decoding is on, the topic is neither
    /// one of Kafka's internal topics nor `_schemas`, and some schema was ever read (a mount
    /// without schemas keeps the views' plain paths).
    pub fn decodes(&self, topic: &str) -> bool {
        self.options.decode
            && (self.registry.generation() > 0 || self.rest.is_some())
            && is_decodable_topic(topic)
    }

    /// Whether what is written to `topic` may be encoded.
    pub fn encodes(&self, topic: &str) -> bool {
        self.options.encode && is_decodable_topic(topic)
    }

    /// `Some(self)` for a topic whose keys and values are decoded (see [`Schemas::decodes`]),
    /// after reading what `_schemas` gained.
    pub fn for_topic(self: &Arc<Self>, topic: &str) -> Option<Arc<Schemas>> {
        if !self.options.decode || !is_decodable_topic(topic) {
            return None;
        }
        self.refresh();
        self.decodes(topic).then(|| self.clone())
    }

    /// Appends the JSON `bytes` of `topic` show as, when they are in the wire format with a
    /// known id, and returns the id; otherwise `out` is left as it was (the caller shows the
    /// bytes raw), and an unknown id or undecodable bytes are logged once per topic and id.
    pub fn show(&self, topic: &str, bytes: &[u8], out: &mut Vec<u8>) -> Option<u32> {
        let id = Registry::wire_id(bytes)?;
        let mut answer = self.registry.decode_into(bytes, out);
        if answer == Err(DecodeError::UnknownId(id))
            && let Some(rest) = &self.rest
            && rest.fetch_id(&self.registry, id)
        {
            answer = self.registry.decode_into(bytes, out);
        }
        match answer {
            Ok(id) => Some(id),
            Err(DecodeError::NotWire) => None,
            Err(DecodeError::UnknownId(id)) => {
                self.log_once(topic, id, || format!("schema id {id} is not known"));
                None
            }
            Err(DecodeError::Bad { id, reason }) => {
                self.log_once(topic, id, || {
                    let kind = match self.registry.kind(id) {
                        Some(Kind::Avro) => "an Avro value",
                        Some(Kind::Protobuf) => "a Protobuf value",
                        Some(Kind::Json) => "a JSON Schema value",
                        None => "a value",
                    };
                    format!("{kind} of schema id {id} does not decode: {reason}")
                });
                None
            }
        }
    }

    /// What `value` of `topic` shows as, when `schemas` decode it: its JSON text.
    pub fn shown(schemas: Option<&Schemas>, topic: &str, value: &[u8]) -> Option<Vec<u8>> {
        let mut out = Vec::new();
        schemas?.show(topic, value, &mut out).map(|_| out)
    }

    /// What a key of `topic` shows as in `table/` names, when `schemas` decode it: its JSON
    /// text, or the string itself for a JSON string.
    pub fn shown_key(schemas: Option<&Schemas>, topic: &str, key: &[u8]) -> Option<Vec<u8>> {
        let text = Schemas::shown(schemas, topic, key)?;
        Some(match serde_json::from_slice::<serde_json::Value>(&text) {
            Ok(serde_json::Value::String(s)) => s.into_bytes(),
            _ => text,
        })
    }

    /// The key of `topic` that shows as `shown` in `table/` names: `shown` (as JSON, else as
    /// a JSON string) in the key subject's latest schema's wire format. `Ok(None)`: the topic
    /// has no key subject.
    pub fn key_for_shown(&self, topic: &str, shown: &[u8]) -> Result<Option<Vec<u8>>, EncodeError> {
        if !is_decodable_topic(topic) {
            return Ok(None);
        }
        let subject = subject_for(topic, true);
        self.refresh_subject(&subject);
        if self.registry.latest_id(&subject).is_none() {
            return Ok(None);
        }
        let as_json = serde_json::from_slice::<serde_json::Value>(shown).is_ok();
        let first = match as_json {
            true => self.registry.encode(&subject, shown),
            false => Ok(None),
        };
        match (first, std::str::from_utf8(shown)) {
            (Ok(Some(k)), _) => Ok(Some(k)),
            (first, Ok(s)) => {
                let text = serde_json::to_vec(s).unwrap_or_default();
                match self.registry.encode(&subject, &text) {
                    Ok(k) => Ok(k),
                    Err(e) => first.and(Err(e)),
                }
            }
            (first, Err(_)) => first,
        }
    }

    /// Every key of `topic` that may show as `shown` in `table/` names: `shown` (as JSON,
    /// and as a JSON string) in the wire format of each version of the key subject, the
    /// latest first, each once. A key stored under an older version is one of them, so that
    /// the name it is listed by finds it.
    pub fn keys_for_shown(&self, topic: &str, shown: &[u8]) -> Vec<Vec<u8>> {
        if !is_decodable_topic(topic) {
            return Vec::new();
        }
        let subject = subject_for(topic, true);
        self.refresh_subject(&subject);
        let mut texts = Vec::new();
        if serde_json::from_slice::<serde_json::Value>(shown).is_ok() {
            texts.push(shown.to_vec());
        }
        if let Ok(s) = std::str::from_utf8(shown) {
            texts.push(serde_json::to_vec(s).unwrap_or_default());
        }
        let mut keys: Vec<Vec<u8>> = Vec::new();
        for id in self.registry.subject_ids(&subject) {
            for text in &texts {
                if let Ok(k) = self.registry.encode_with(id, text)
                    && !keys.contains(&k)
                {
                    keys.push(k);
                }
            }
        }
        keys
    }

    fn log_once(&self, topic: &str, id: u32, what: impl FnOnce() -> String) {
        let mut logged = self.logged.guard();
        let ids = match logged.get_mut(topic) {
            Some(ids) => ids,
            None => logged.entry(topic.to_string()).or_default(),
        };
        if ids.len() > MAX_LOGGED_IDS || ids.contains(&id) {
            return;
        }
        ids.insert(id);
        if ids.len() > MAX_LOGGED_IDS {
            log::warn!("{topic}: more values shown as stored, of other ids: not logged");
        } else {
            log::warn!("{topic}: {}; shown as stored", what());
        }
    }

    /// What JSON `text` written as a key (`key`) or value of `topic` is stored as: the
    /// subject's latest schema's wire format, or `None` when the topic has no such subject
    /// (or encoding is off): stored as written.
    pub fn store(
        &self,
        topic: &str,
        key: bool,
        text: &[u8],
    ) -> Result<Option<Vec<u8>>, EncodeError> {
        if !self.encodes(topic) {
            return Ok(None);
        }
        self.refresh_subject(&subject_for(topic, key));
        self.store_known(topic, key, text)
    }

    /// [`Schemas::store`] with the schemas as last read: for the lines of one write, after
    /// [`Schemas::has_subject`] read what `_schemas` gained once for all of them.
    pub fn store_known(
        &self,
        topic: &str,
        key: bool,
        text: &[u8],
    ) -> Result<Option<Vec<u8>>, EncodeError> {
        if !self.encodes(topic) {
            return Ok(None);
        }
        self.registry.encode(&subject_for(topic, key), text)
    }

    /// Reads what `_schemas` gained, and asks the REST API (once a while) for the
    /// subject's latest version.
    fn refresh_subject(&self, subject: &str) {
        self.refresh();
        if let Some(rest) = &self.rest {
            rest.fetch_latest(&self.registry, subject);
        }
    }

    /// Whether `topic` has a subject for its keys (`key`) or values: what is written to it
    /// is JSON to encode.
    pub fn has_subject(&self, topic: &str, key: bool) -> bool {
        self.encodes(topic) && {
            let subject = subject_for(topic, key);
            self.refresh_subject(&subject);
            self.registry.latest_id(&subject).is_some()
        }
    }

    /// Applies the records of `_schemas` past those read. `now`: the log end is asked of the
    /// storage now (the follow thread), not as last known.
    fn catch_up(&self, now: bool) {
        // One reader at a time; a view opened meanwhile does not wait for the follow thread.
        let mut feed = match self.feed.try_lock() {
            Ok(feed) => feed,
            Err(std::sync::TryLockError::Poisoned(e)) => e.into_inner(),
            Err(std::sync::TryLockError::WouldBlock) if now => self.feed.guard(),
            Err(std::sync::TryLockError::WouldBlock) => return,
        };
        // Until the topic is found, a cluster is asked only by the follow thread.
        let local = !self.storage.log_dirs().is_empty();
        if feed.incarnation.is_none() && !now && !local {
            return;
        }
        let topic = match self.schemas_topic(now) {
            Some(t) => t,
            None => return,
        };
        if feed.incarnation != Some(topic.incarnation()) {
            // Made again since: its records are read from the start.
            *feed = Feed {
                incarnation: Some(topic.incarnation()),
                next: BTreeMap::new(),
            };
        }
        for p in 0..topic.partition_count() {
            if let Err(e) = self.read_partition(&*topic, p, &mut feed, now) {
                log::warn!("{SCHEMAS_TOPIC}-{p}: {e}");
            }
        }
    }

    /// `_schemas`, when the storage has it (asked of a cluster's listing, which is held, so
    /// that a cluster without it is not asked at each look).
    fn schemas_topic(&self, now: bool) -> Option<Arc<dyn TopicStore>> {
        if now && !self.storage.topics().iter().any(|t| t == SCHEMAS_TOPIC) {
            return None;
        }
        self.storage.topic(SCHEMAS_TOPIC).ok()
    }

    fn read_partition(
        &self,
        topic: &dyn TopicStore,
        p: u32,
        feed: &mut Feed,
        now: bool,
    ) -> crate::error::Result<()> {
        let log = topic.partition(p)?;
        let end = match now {
            true => log.offsets_now()?.1,
            false => log.log_end_offset(),
        };
        let next = feed.next.entry(p).or_insert(0);
        let from = (*next).max(log.log_start_offset());
        if from >= end {
            return Ok(());
        }
        let mut reader = log.read_from_offset(from)?;
        let mut at = from;
        while at < end
            && reader.next_batch_meta(&mut |_, r| {
                if r.offset >= at && r.offset < end {
                    self.registry.apply_record(r.key, r.value);
                    at = r.offset + 1;
                }
            })?
        {}
        // Past control batches and compacted gaps too.
        *next = at.max(reader.passed().min(end));
        Ok(())
    }
}

/// Whether a topic's keys and values may be schema-encoded: not Kafka's internal topics nor
/// the registry's own.
pub fn is_decodable_topic(topic: &str) -> bool {
    topic != SCHEMAS_TOPIC && !crate::base::INTERNAL_TOPICS.contains(&topic)
}

/// The follow thread: reads what `_schemas` gains, every [`FOLLOW_EVERY`], until the mount
/// ends.
fn follow(schemas: Weak<Schemas>) {
    loop {
        let Some(s) = schemas.upgrade() else { return };
        {
            let stopped = s.stop.0.guard();
            let stopped = s
                .stop
                .1
                .wait_timeout_while_guard(stopped, FOLLOW_EVERY, |stop| !*stop);
            if *stopped {
                return;
            }
        }
        s.catch_up(true);
    }
}

#[cfg(test)]
mod tests;

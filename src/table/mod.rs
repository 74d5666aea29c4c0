//! A topic as a table of keys (`<topic>/table/`): the latest record of every key.
//!
//! [`KeyIndex`] holds, for each key seen in the log, where its latest record is (partition,
//! offset) with that record's timestamp and value length; values are read from the log when
//! asked for (one positioned read: the offset index, then the batch holding the record).
//! The index is built from the log at first use and kept current by reading, before each use,
//! the records appended since (by any writer: the table's own files, `append.jsonl`, other
//! producers in remote mode), so every append path keeps it current.
//!
//! Memory: a slot of 40 bytes per key, a hash-map entry (64-bit digest -> slot number, 16
//! bytes, at hashbrown's load factor) and the key bytes in one arena. Compaction never
//! removes a key's latest record (but an expired tombstone, which the table does not show
//! anyway); retention may, and then the key is gone from the table, as it is for a consumer
//! reading the topic from its start.

pub mod names;

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hash, Hasher};
use std::sync::Mutex;

use crate::error::Result;
use crate::storage::{PartitionStore, TopicStore};
use crate::util::sync::MutexExt;

/// `value_len` of a key whose latest record is a tombstone, or whose record is gone.
const TOMBSTONE: u32 = u32::MAX;

/// The bit of `value_len` set when the value may be schema-encoded (it starts as
/// Confluent's wire format does): its shown length is then found by decoding it.
const WIRE: u32 = 1 << 31;

/// Where the latest record of one key is.
#[derive(Clone, Copy, Debug)]
struct Slot {
    key_at: u64,
    key_len: u32,
    partition: u32,
    offset: i64,
    timestamp: i64,
    value_len: u32,
}

/// The latest record of a key, as the index knows it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Latest {
    pub partition: u32,
    pub offset: i64,
    pub timestamp: i64,
    pub value_len: u64,
    /// The value starts as Confluent's wire format does (it may show as JSON).
    pub wire: bool,
}

/// The digests are already uniform: the map uses them as they are.
#[derive(Default)]
struct PassThrough(u64);

impl Hasher for PassThrough {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(b);
        }
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }
}

fn digest(key: &[u8]) -> u64 {
    let mut h = std::hash::DefaultHasher::new();
    key.hash(&mut h);
    h.finish()
}

#[derive(Default)]
struct Inner {
    /// The next offset to read, per partition.
    next: Vec<i64>,
    slots: Vec<Slot>,
    by_digest: HashMap<u64, u32, BuildHasherDefault<PassThrough>>,
    /// Keys whose digest another key already has (64-bit digests: practically never).
    collided: HashMap<Box<[u8]>, u32>,
    arena: Vec<u8>,
    built: bool,
}

impl Inner {
    fn key(&self, s: &Slot) -> &[u8] {
        &self.arena[s.key_at as usize..s.key_at as usize + s.key_len as usize]
    }

    fn find(&self, key: &[u8]) -> Option<u32> {
        let i = *self.by_digest.get(&digest(key))?;
        if self.key(&self.slots[i as usize]) == key {
            return Some(i);
        }
        self.collided.get(key).copied()
    }

    /// A record of `key` at (partition, offset): the key's latest one from now on, unless the
    /// key's latest is in another partition with a later timestamp.
    fn put(
        &mut self,
        key: &[u8],
        partition: u32,
        offset: i64,
        timestamp: i64,
        value: Option<&[u8]>,
    ) {
        let value_len = value.map_or(TOMBSTONE, |v| {
            let len = (v.len() as u64).min(u64::from(WIRE) - 1) as u32;
            match crate::schema::Registry::wire_id(v) {
                Some(_) => len | WIRE,
                None => len,
            }
        });
        if let Some(i) = self.find(key) {
            let s = &mut self.slots[i as usize];
            if s.partition != partition && s.timestamp > timestamp {
                return;
            }
            (s.partition, s.offset, s.timestamp, s.value_len) =
                (partition, offset, timestamp, value_len);
            return;
        }
        let i = self.slots.len() as u32;
        self.slots.push(Slot {
            key_at: self.arena.len() as u64,
            key_len: key.len() as u32,
            partition,
            offset,
            timestamp,
            value_len,
        });
        self.arena.extend_from_slice(key);
        match self.by_digest.entry(digest(key)) {
            std::collections::hash_map::Entry::Vacant(v) => {
                v.insert(i);
            }
            std::collections::hash_map::Entry::Occupied(_) => {
                self.collided.insert(key.into(), i);
            }
        }
    }
}

/// The key index of one topic (see the module's documentation).
#[derive(Default)]
pub struct KeyIndex {
    inner: Mutex<Inner>,
}

/// One entry of a listing: the slot number (stable while the index lives) and the key.
pub struct Listed {
    pub slot: u64,
    pub key: Vec<u8>,
}

impl KeyIndex {
    #[cfg(feature = "internals")]
    pub fn new() -> KeyIndex {
        KeyIndex::default()
    }

    /// Reads what was appended to `topic` since the last call (the whole log the first
    /// time) into the index.
    pub fn refresh(&self, topic: &dyn TopicStore) -> Result<()> {
        let mut inner = self.inner.guard();
        let started = (!inner.built).then(std::time::Instant::now);
        let count = topic.partition_count() as usize;
        if inner.next.len() < count {
            inner.next.resize(count, 0);
        }
        for p in 0..count {
            let log = topic.partition(p as u32)?;
            let end = log.log_end_offset();
            let from = inner.next[p].max(log.log_start_offset());
            if from >= end {
                inner.next[p] = inner.next[p].max(end);
                continue;
            }
            let mut stream = log.read_from_offset(from)?;
            let stop = stream.end_offset();
            let mut reached = from;
            while stream.next_batch_meta(&mut |_, r| {
                if r.offset >= from
                    && let Some(k) = r.key
                {
                    inner.put(k, p as u32, r.offset, r.timestamp, r.value);
                }
                reached = reached.max(r.offset + 1);
            })? {}
            inner.next[p] = reached.max(stop).max(from);
        }
        if let Some(started) = started {
            inner.built = true;
            inner.arena.shrink_to_fit();
            inner.slots.shrink_to_fit();
            log::info!(
                "{}: key index of table/ built from the log: {} keys in {:.3}s",
                topic.name(),
                inner.slots.len(),
                started.elapsed().as_secs_f64()
            );
        }
        Ok(())
    }

    /// The latest record of `key` when it is a value still in the log (not a tombstone,
    /// not removed by retention).
    pub fn get(&self, topic: &dyn TopicStore, key: &[u8]) -> Result<Option<Latest>> {
        let found = {
            let inner = self.inner.guard();
            inner.find(key).map(|i| inner.slots[i as usize])
        };
        let Some(s) = found.filter(|s| s.value_len != TOMBSTONE) else {
            return Ok(None);
        };
        if s.offset < topic.partition(s.partition)?.log_start_offset() {
            return Ok(None);
        }
        Ok(Some(latest(&s)))
    }

    /// The value and timestamp of `key`'s latest record, read from the log at its offset.
    /// A record no longer there (retention, or the topic written again under the index) is
    /// taken out of the table.
    pub fn value(&self, topic: &dyn TopicStore, key: &[u8]) -> Result<Option<(Vec<u8>, i64)>> {
        let Some(l) = self.get(topic, key)? else {
            return Ok(None);
        };
        let log = topic.partition(l.partition)?;
        if let Some(v) = read_value(&*log, l.offset, key)? {
            return Ok(Some(v));
        }
        let mut inner = self.inner.guard();
        if let Some(i) = inner.find(key) {
            let s = &mut inner.slots[i as usize];
            if (s.partition, s.offset) == (l.partition, l.offset) {
                s.value_len = TOMBSTONE;
            }
        }
        Ok(None)
    }

    /// Up to `max` keys with a value, from slot `from` on (a listing continues where the last
    /// call stopped, without building the rest). `starts` is each partition's log start.
    pub fn list(&self, from: u64, max: usize, starts: &[i64]) -> Vec<Listed> {
        let inner = self.inner.guard();
        let mut out = Vec::new();
        for (i, s) in inner.slots.iter().enumerate().skip(from as usize) {
            if out.len() >= max {
                break;
            }
            let gone = starts
                .get(s.partition as usize)
                .is_none_or(|&st| s.offset < st);
            if s.value_len == TOMBSTONE || gone {
                continue;
            }
            out.push(Listed {
                slot: i as u64,
                key: inner.key(s).to_vec(),
            });
        }
        out
    }

    /// The keys the index holds (tombstoned ones included).
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.inner.guard().slots.len()
    }

    #[cfg(test)]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Bytes the index holds on the heap (its capacity, not its use).
    #[cfg(feature = "internals")]
    pub fn heap_bytes(&self) -> usize {
        let inner = self.inner.guard();
        inner.slots.capacity() * std::mem::size_of::<Slot>()
            + inner.by_digest.capacity() * (std::mem::size_of::<(u64, u32)>() + 1)
            + inner.arena.capacity()
            + inner.next.capacity() * 8
            + inner.collided.keys().map(|k| k.len() + 32).sum::<usize>()
    }
}

fn latest(s: &Slot) -> Latest {
    Latest {
        partition: s.partition,
        offset: s.offset,
        timestamp: s.timestamp,
        value_len: u64::from(s.value_len & !WIRE),
        wire: s.value_len & WIRE != 0,
    }
}

/// The value and timestamp of the record at `offset` of `log` if it is there with `key`: one
/// positioned read (the batch holding the offset).
fn read_value(log: &dyn PartitionStore, offset: i64, key: &[u8]) -> Result<Option<(Vec<u8>, i64)>> {
    if offset < log.log_start_offset() || offset >= log.log_end_offset() {
        return Ok(None);
    }
    let mut stream = log.read_from_offset(offset)?;
    let mut found = None;
    let mut passed = false;
    while found.is_none() && !passed {
        let more = stream.next_batch_meta(&mut |_, r| {
            if r.offset == offset && r.key == Some(key) {
                found = Some((r.value.unwrap_or_default().to_vec(), r.timestamp));
            }
            passed |= r.offset >= offset;
        })?;
        if !more {
            break;
        }
    }
    Ok(found)
}

#[cfg(test)]
mod tests;

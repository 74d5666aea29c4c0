//! Where the bytes of a file the kernel caches are (`fs/cache.rs`): its length over a range
//! of offsets, and the record near a byte. Lines come from the counts each segment keeps
//! ([`crate::storage::PartitionStore::lines_len_counted`], `line_seek`); JSON lines from a
//! table of their own per partition, made by formatting each record once and extended as
//! the log grows: the bytes before an offset about every [`JSONL_MARK_SPACING`] bytes.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use crate::error::Result;
use crate::fs::inode::{Format, TopicName};
use crate::render::format_record;
use crate::storage::PartitionStore;
use crate::util::sync::MutexExt;

/// The bytes a cached file's open keeps behind its cursor: more than the kernel's reads
/// under way at once (12 background requests of its 128 KiB read-ahead), which the daemon's
/// threads may answer in any order.
pub const KEPT_BEHIND: usize = 2 * 1024 * 1024;

/// A cached file's read this far past its cursor starts from the nearest place a `Measure`
/// finds instead of reading the bytes between (see `Cursor::seek` in fs/stream.rs).
pub const SEEK_AFTER: u64 = 1024 * 1024;

/// A cached file's bytes as the log lays them out.
pub trait Measure: Send + Sync {
    /// The bytes the records at offsets in [from, to) show (None: not known without
    /// reading them, the file is then a stream).
    fn len(&self, from: i64, to: i64) -> Result<Option<u64>>;
    /// Where a file starting at offset `from` reaches its byte `byte`: (offset, bytes
    /// before it), at or before `byte` (None: only by reading from `from`).
    fn seek(&self, from: i64, byte: u64) -> Result<Option<(i64, u64)>>;
}

/// Lines: the segments' kept counts.
pub struct Lines(pub Arc<dyn PartitionStore>);

impl Measure for Lines {
    fn len(&self, from: i64, to: i64) -> Result<Option<u64>> {
        self.0.lines_len_counted(from, to)
    }
    fn seek(&self, from: i64, byte: u64) -> Result<Option<(i64, u64)>> {
        self.0.line_seek(from, byte)
    }
}

/// A partition's table, shared by the files that read it.
type Shared = Arc<Mutex<Table>>;

/// The JSON lines tables of the mount's partitions.
#[derive(Default)]
pub struct JsonlTables(Mutex<HashMap<(TopicName, u32), Shared>>);

impl JsonlTables {
    /// The measure of partition `p` of topic `t` (`log`) as JSON lines.
    pub fn of(&self, t: &TopicName, log: Arc<dyn PartitionStore>) -> Jsonl {
        let key = (t.clone(), log.partition());
        let table = self.0.guard().entry(key).or_default().clone();
        Jsonl {
            topic: Arc::from(&**t),
            log,
            table,
        }
    }

    /// Forgets topic `topic`'s tables (it was deleted).
    pub fn forget(&self, topic: &str) {
        self.0.guard().retain(|(t, _), _| &**t != topic);
    }
}

/// One partition's JSON lines, from its log start: (offset, bytes before it) at record
/// boundaries, and how far it is counted; for one generation of the log.
#[derive(Default)]
pub struct Table {
    generation: u64,
    marks: Vec<(i64, u64)>,
    to: (i64, u64),
}

/// The JSON lines bytes between two marks (at least; a mark sits after a record).
pub const JSONL_MARK_SPACING: u64 = 64 * 1024;

/// A partition's JSON lines.
pub struct Jsonl {
    topic: Arc<str>,
    log: Arc<dyn PartitionStore>,
    table: Arc<Mutex<Table>>,
}

impl Jsonl {
    /// The bytes of the records in [from, to), each formatted.
    fn measure(&self, from: i64, to: i64) -> Result<u64> {
        if from >= to {
            return Ok(0);
        }
        let mut scratch = Vec::new();
        let mut reader = self.log.read_from_offset(from)?;
        crate::storage::measure_records(&mut *reader, from, to, |h, r| {
            scratch.clear();
            let p = self.log.partition();
            format_record(Format::Jsonl, &self.topic, p, h, r, &mut scratch, None);
            scratch.len() as u64
        })
    }

    /// The table counted to the log end now (made again for a new generation).
    fn counted(&self) -> Result<std::sync::MutexGuard<'_, Table>> {
        let mut t = self.table.guard();
        let (generation, start) = (self.log.generation(), self.log.log_start_offset());
        if t.generation != generation || t.marks.is_empty() {
            *t = Table {
                generation,
                marks: vec![(start, 0)],
                to: (start, 0),
            };
        }
        let end = self.log.log_end_offset();
        if t.to.0 >= end {
            return Ok(t);
        }
        let (mut at, mut bytes) = t.to;
        let mut last_mark = t.marks.last().map_or(0, |m| m.1);
        let mut marks = Vec::new();
        let mut scratch = Vec::new();
        let mut reader = self.log.read_from_offset(at)?;
        let p = self.log.partition();
        while reader.next_batch_meta(&mut |h, r| {
            if r.offset < at || r.offset >= end {
                return;
            }
            scratch.clear();
            format_record(Format::Jsonl, &self.topic, p, h, r, &mut scratch, None);
            bytes += scratch.len() as u64;
            at = r.offset + 1;
            if bytes >= last_mark + JSONL_MARK_SPACING {
                marks.push((at, bytes));
                last_mark = bytes;
            }
        })? {
            if at >= end {
                break;
            }
        }
        t.marks.extend(marks);
        // Past control records and gaps too: the next count starts at the end.
        t.to = (end.max(at), bytes);
        Ok(t)
    }

    /// The bytes before offset `offset` (from the log start).
    fn before(&self, t: &Table, offset: i64) -> Result<u64> {
        if offset >= t.to.0 {
            return Ok(t.to.1);
        }
        let i = t.marks.partition_point(|m| m.0 <= offset);
        let (at, bytes) = t.marks[i.saturating_sub(1)];
        Ok(bytes + self.measure(at, offset)?)
    }
}

impl Measure for Jsonl {
    fn len(&self, from: i64, to: i64) -> Result<Option<u64>> {
        let t = self.counted()?;
        let from = from.max(t.marks[0].0);
        Ok(Some(
            self.before(&t, to)?.saturating_sub(self.before(&t, from)?),
        ))
    }

    fn seek(&self, from: i64, byte: u64) -> Result<Option<(i64, u64)>> {
        let t = self.counted()?;
        let base = self.before(&t, from)?;
        let i = t.marks.partition_point(|m| m.1 <= base + byte);
        Ok(Some(match t.marks[..i].last() {
            Some(&(at, bytes)) if at > from => (at, bytes - base),
            _ => (from, 0),
        }))
    }
}

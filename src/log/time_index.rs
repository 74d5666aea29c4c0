//! TimeIndex: the `.timeindex` file, 12-byte entries (8-byte timestamp, 4-byte relative offset).
//! Entries only grow in timestamp; one slot is kept for the final entry written at roll.

use std::io;
use std::sync::Arc;

use super::index::LazyIndex;
use crate::os::safe_fs::Dir;
use crate::record::be;

pub const ENTRY_SIZE: usize = 12;

fn ts(e: &[u8]) -> i64 {
    be::i64_at(e, 0)
}
fn rel(e: &[u8]) -> i64 {
    be::i32_at(e, 8) as i64
}

pub struct TimeIndex {
    pub base_offset: i64,
    idx: LazyIndex,
}

impl TimeIndex {
    pub fn new(
        dir: Arc<Dir>,
        name: String,
        base_offset: i64,
        max_size: u64,
        read_only: bool,
    ) -> TimeIndex {
        TimeIndex {
            base_offset,
            idx: LazyIndex::new(dir, name, ENTRY_SIZE, max_size, read_only),
        }
    }

    /// Largest entry with timestamp <= `target`: (timestamp, offset), or (-1, base offset).
    pub fn lookup(&self, target: i64) -> io::Result<(i64, i64)> {
        self.idx
            .with(|idx| match idx.largest_lower_bound(target, ts) {
                Some(i) => (ts(idx.entry(i)), self.base_offset + rel(idx.entry(i))),
                None => (-1, self.base_offset),
            })
    }

    pub fn last_entry(&self) -> io::Result<Option<(i64, i64)>> {
        self.idx.with(|idx| match idx.entries() {
            0 => None,
            n => Some((
                ts(idx.entry(n - 1)),
                self.base_offset + rel(idx.entry(n - 1)),
            )),
        })
    }

    /// Kafka: full when one slot is left (it is kept for the final entry).
    pub fn is_full(&self) -> io::Result<bool> {
        self.idx.with(|i| i.entries() + 1 >= i.max_entries())
    }

    /// The bytes of one entry: the timestamp, then the offset relative to `base_offset`.
    pub fn encode_entry(base_offset: i64, timestamp: i64, offset: i64) -> [u8; ENTRY_SIZE] {
        let mut e = [0u8; ENTRY_SIZE];
        e[0..8].copy_from_slice(&timestamp.to_be_bytes());
        e[8..12].copy_from_slice(&((offset - base_offset) as i32).to_be_bytes());
        e
    }

    /// Appends (timestamp, offset); whether an entry is due is Kafka's rule, applied by
    /// [`super::index_builder::IndexBuilder`].
    pub fn append(&self, timestamp: i64, offset: i64) -> io::Result<()> {
        let e = Self::encode_entry(self.base_offset, timestamp, offset);
        self.idx.with_mut(|i| i.append(&e))
    }

    /// Timestamps strictly increasing, offsets non-decreasing, >= base and below `next_offset`.
    pub fn sanity_check(&self, next_offset: i64) -> Result<(), String> {
        self.idx.check_length("Time index file", "12")?;
        self.idx
            .with(|idx| {
                let (mut prev_ts, mut prev_rel) = (i64::MIN, 0i64);
                for i in 0..idx.entries() {
                    let (t, r) = (ts(idx.entry(i)), rel(idx.entry(i)));
                    if t <= prev_ts || r < prev_rel || self.base_offset + r >= next_offset.max(self.base_offset + 1) {
                        return Err(format!(
                            "time index {} entry {i} (timestamp {t}, offset {}) is out of order or past the log",
                            self.path().display(),
                            self.base_offset + r
                        ));
                    }
                    (prev_ts, prev_rel) = (t, r);
                }
                Ok(())
            })
            .map_err(|e| e.to_string())?
    }
}

/// The shared mechanics (open, preallocate, trim, flush, close...) are [`LazyIndex`]'s.
impl std::ops::Deref for TimeIndex {
    type Target = LazyIndex;
    fn deref(&self) -> &LazyIndex {
        &self.idx
    }
}

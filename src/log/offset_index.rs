//! OffsetIndex: the `.index` file, 8-byte entries (4-byte relative offset, 4-byte position).

use std::io;
use std::sync::Arc;

use super::index::LazyIndex;
use crate::os::safe_fs::Dir;
use crate::record::be;

pub const ENTRY_SIZE: usize = 8;

fn rel(e: &[u8]) -> i64 {
    be::i32_at(e, 0) as i64
}
fn pos(e: &[u8]) -> u32 {
    be::u32_at(e, 4)
}

pub struct OffsetIndex {
    pub base_offset: i64,
    idx: LazyIndex,
}

impl OffsetIndex {
    pub fn new(
        dir: Arc<Dir>,
        name: String,
        base_offset: i64,
        max_size: u64,
        read_only: bool,
    ) -> OffsetIndex {
        OffsetIndex {
            base_offset,
            idx: LazyIndex::new(dir, name, ENTRY_SIZE, max_size, read_only),
        }
    }

    /// Largest entry with offset <= `target`, or (base offset, 0).
    pub fn lookup(&self, target: i64) -> io::Result<(i64, u32)> {
        self.idx.with(
            |idx| match idx.largest_lower_bound(target - self.base_offset, rel) {
                Some(i) => (self.base_offset + rel(idx.entry(i)), pos(idx.entry(i))),
                None => (self.base_offset, 0),
            },
        )
    }

    pub fn last_entry(&self) -> io::Result<Option<(i64, u32)>> {
        self.idx.with(|idx| match idx.entries() {
            0 => None,
            n => Some((
                self.base_offset + rel(idx.entry(n - 1)),
                pos(idx.entry(n - 1)),
            )),
        })
    }

    pub fn is_full(&self) -> io::Result<bool> {
        self.idx.with(|i| i.is_full())
    }

    /// The bytes of one entry: offset relative to `base_offset`, then the byte position.
    pub fn encode_entry(base_offset: i64, offset: i64, position: u32) -> [u8; ENTRY_SIZE] {
        let mut e = [0u8; ENTRY_SIZE];
        e[0..4].copy_from_slice(&((offset - base_offset) as i32).to_be_bytes());
        e[4..8].copy_from_slice(&position.to_be_bytes());
        e
    }

    pub fn append(&self, offset: i64, position: u32) -> io::Result<()> {
        let e = Self::encode_entry(self.base_offset, offset, position);
        self.idx.with_mut(|i| i.append(&e))
    }

    /// Checks every entry: relative offsets strictly increasing and >= 0, positions strictly
    /// increasing and inside the log. A file that is not a whole number of entries is corrupt.
    pub fn sanity_check(&self, log_size: u64) -> Result<(), String> {
        self.idx.check_length("Index file", "8")?;
        self.idx
            .with(|idx| {
                let (mut prev_rel, mut prev_pos) = (-1i64, -1i64);
                for i in 0..idx.entries() {
                    let (r, p) = (rel(idx.entry(i)), pos(idx.entry(i)) as i64);
                    if r <= prev_rel || p <= prev_pos || p as u64 >= log_size.max(1) {
                        return Err(format!(
                            "index {} entry {i} (offset {}, position {p}) is out of order or past the log ({log_size} bytes)",
                            self.path().display(),
                            self.base_offset + r
                        ));
                    }
                    (prev_rel, prev_pos) = (r, p);
                }
                Ok(())
            })
            .map_err(|e| e.to_string())?
    }
}

/// The shared mechanics (open, preallocate, trim, flush, close...) are [`LazyIndex`]'s.
impl std::ops::Deref for OffsetIndex {
    type Target = LazyIndex;
    fn deref(&self) -> &LazyIndex {
        &self.idx
    }
}

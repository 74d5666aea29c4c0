//! OffsetIndex: the `.index` file, 8-byte entries (4-byte relative offset, 4-byte position).

use std::io;
use std::path::{Path, PathBuf};
use std::sync::{RwLock, RwLockReadGuard, RwLockWriteGuard};

use super::index::IndexFile;

pub const ENTRY_SIZE: usize = 8;

fn rel(e: &[u8]) -> i64 {
    i32::from_be_bytes(e[0..4].try_into().unwrap()) as i64
}
fn pos(e: &[u8]) -> u32 {
    u32::from_be_bytes(e[4..8].try_into().unwrap())
}

/// A lazily opened offset index (the file is only mapped on first use).
pub struct OffsetIndex {
    pub base_offset: i64,
    path: PathBuf,
    max_size: u64,
    inner: RwLock<Option<IndexFile>>,
}

impl OffsetIndex {
    pub fn new(path: PathBuf, base_offset: i64, max_size: u64) -> OffsetIndex {
        OffsetIndex {
            base_offset,
            path,
            max_size,
            inner: RwLock::new(None),
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    fn read(&self) -> io::Result<RwLockReadGuard<'_, Option<IndexFile>>> {
        {
            let g = self.inner.read().unwrap();
            if g.is_some() {
                return Ok(g);
            }
        }
        drop(self.write()?);
        Ok(self.inner.read().unwrap())
    }

    /// Exclusive access, opening the file if needed (without preallocating).
    pub fn write(&self) -> io::Result<RwLockWriteGuard<'_, Option<IndexFile>>> {
        let mut g = self.inner.write().unwrap();
        if g.is_none() {
            *g = Some(IndexFile::open(
                &self.path,
                ENTRY_SIZE,
                self.max_size,
                false,
            )?);
        }
        Ok(g)
    }

    /// Opens for appending: preallocated to the max size.
    pub fn open_active(&self) -> io::Result<()> {
        let mut g = self.inner.write().unwrap();
        match g.as_mut() {
            Some(i) => i.resize(self.max_size.max(i.file_len()))?,
            None => {
                *g = Some(IndexFile::open(
                    &self.path,
                    ENTRY_SIZE,
                    self.max_size,
                    true,
                )?)
            }
        }
        Ok(())
    }

    pub fn is_open(&self) -> bool {
        self.inner.read().unwrap().is_some()
    }

    /// Largest entry with offset <= `target`, or (base offset, 0).
    pub fn lookup(&self, target: i64) -> io::Result<(i64, u32)> {
        let g = self.read()?;
        let idx = g.as_ref().unwrap();
        let t = target - self.base_offset;
        Ok(match idx.largest_lower_bound(t, rel) {
            Some(i) => {
                let e = idx.entry(i);
                (self.base_offset + rel(e), pos(e))
            }
            None => (self.base_offset, 0),
        })
    }

    pub fn last_entry(&self) -> io::Result<Option<(i64, u32)>> {
        let g = self.read()?;
        let idx = g.as_ref().unwrap();
        Ok(match idx.entries() {
            0 => None,
            n => {
                let e = idx.entry(n - 1);
                Some((self.base_offset + rel(e), pos(e)))
            }
        })
    }

    pub fn entries(&self) -> io::Result<usize> {
        Ok(self.read()?.as_ref().unwrap().entries())
    }

    pub fn is_full(&self) -> io::Result<bool> {
        Ok(self.read()?.as_ref().unwrap().is_full())
    }

    pub fn append(&self, offset: i64, position: u32) -> io::Result<()> {
        let mut g = self.write()?;
        let idx = g.as_mut().unwrap();
        let mut e = [0u8; ENTRY_SIZE];
        e[0..4].copy_from_slice(&((offset - self.base_offset) as i32).to_be_bytes());
        e[4..8].copy_from_slice(&position.to_be_bytes());
        idx.append(&e)
    }

    pub fn reserve_next(&self) -> io::Result<()> {
        self.write()?.as_mut().unwrap().reserve_next()
    }

    pub fn trim(&self) -> io::Result<()> {
        let mut g = self.inner.write().unwrap();
        if let Some(i) = g.as_mut() {
            i.trim_to_valid_size()?;
        }
        Ok(())
    }

    pub fn reset(&self) -> io::Result<()> {
        let mut g = self.inner.write().unwrap();
        match g.as_mut() {
            Some(i) => i.reset(self.max_size),
            None => {
                let _ = std::fs::remove_file(&self.path);
                *g = Some(IndexFile::open(
                    &self.path,
                    ENTRY_SIZE,
                    self.max_size,
                    true,
                )?);
                Ok(())
            }
        }
    }

    pub fn flush(&self) -> io::Result<()> {
        if let Some(i) = self.inner.read().unwrap().as_ref() {
            i.flush()?;
        }
        Ok(())
    }

    /// Unmaps and closes the file.
    pub fn close(&self) {
        *self.inner.write().unwrap() = None;
    }

    /// Checks every entry: relative offsets strictly increasing and >= 0, positions strictly
    /// increasing and inside the log. A file that is not a whole number of entries is corrupt.
    pub fn sanity_check(&self, log_size: u64) -> Result<(), String> {
        let len = std::fs::metadata(&self.path)
            .map_err(|e| format!("{}: {e}", self.path.display()))?
            .len();
        if len % ENTRY_SIZE as u64 != 0 {
            return Err(format!(
                "Index file {} is corrupt, found {len} bytes which is neither positive nor a multiple of 8",
                self.path.display()
            ));
        }
        let g = self.read().map_err(|e| e.to_string())?;
        let idx = g.as_ref().unwrap();
        let (mut prev_rel, mut prev_pos) = (-1i64, -1i64);
        for i in 0..idx.entries() {
            let e = idx.entry(i);
            let (r, p) = (rel(e), pos(e) as i64);
            if r <= prev_rel || p <= prev_pos || p as u64 >= log_size.max(1) {
                return Err(format!(
                    "index {} entry {i} (offset {}, position {p}) is out of order or past the log ({log_size} bytes)",
                    self.path.display(),
                    self.base_offset + r
                ));
            }
            prev_rel = r;
            prev_pos = p;
        }
        Ok(())
    }
}

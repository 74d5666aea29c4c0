//! TimeIndex: the `.timeindex` file, 12-byte entries (8-byte timestamp, 4-byte relative offset).
//! Entries only grow in timestamp; one slot is kept for the final entry written at roll.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::{RwLock, RwLockReadGuard, RwLockWriteGuard};

use super::index::IndexFile;

pub const ENTRY_SIZE: usize = 12;

fn ts(e: &[u8]) -> i64 {
    i64::from_be_bytes(e[0..8].try_into().unwrap())
}
fn rel(e: &[u8]) -> i64 {
    i32::from_be_bytes(e[8..12].try_into().unwrap()) as i64
}

pub struct TimeIndex {
    pub base_offset: i64,
    path: PathBuf,
    max_size: u64,
    inner: RwLock<Option<IndexFile>>,
}

impl TimeIndex {
    pub fn new(path: PathBuf, base_offset: i64, max_size: u64) -> TimeIndex {
        TimeIndex {
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

    fn write(&self) -> io::Result<RwLockWriteGuard<'_, Option<IndexFile>>> {
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

    /// Largest entry with timestamp <= `target`: (timestamp, offset), or (-1, base offset).
    pub fn lookup(&self, target: i64) -> io::Result<(i64, i64)> {
        let g = self.read()?;
        let idx = g.as_ref().unwrap();
        Ok(match idx.largest_lower_bound(target, ts) {
            Some(i) => {
                let e = idx.entry(i);
                (ts(e), self.base_offset + rel(e))
            }
            None => (-1, self.base_offset),
        })
    }

    pub fn last_entry(&self) -> io::Result<Option<(i64, i64)>> {
        let g = self.read()?;
        let idx = g.as_ref().unwrap();
        Ok(match idx.entries() {
            0 => None,
            n => {
                let e = idx.entry(n - 1);
                Some((ts(e), self.base_offset + rel(e)))
            }
        })
    }

    pub fn entries(&self) -> io::Result<usize> {
        Ok(self.read()?.as_ref().unwrap().entries())
    }

    /// Kafka: full when one slot is left (it is kept for the final entry).
    pub fn is_full(&self) -> io::Result<bool> {
        let g = self.read()?;
        let i = g.as_ref().unwrap();
        Ok(i.entries() + 1 >= i.max_entries())
    }

    /// Appends (timestamp, offset) only if the timestamp is larger than the last entry's.
    pub fn maybe_append(
        &self,
        timestamp: i64,
        offset: i64,
        skip_full_check: bool,
    ) -> io::Result<()> {
        let mut g = self.write()?;
        let idx = g.as_mut().unwrap();
        if !skip_full_check && idx.entries() + 1 >= idx.max_entries() {
            return Ok(());
        }
        if idx.entries() > 0 && timestamp <= ts(idx.entry(idx.entries() - 1)) {
            return Ok(());
        }
        if timestamp < 0 || idx.is_full() {
            return Ok(());
        }
        let mut e = [0u8; ENTRY_SIZE];
        e[0..8].copy_from_slice(&timestamp.to_be_bytes());
        e[8..12].copy_from_slice(&((offset - self.base_offset) as i32).to_be_bytes());
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

    pub fn close(&self) {
        *self.inner.write().unwrap() = None;
    }

    /// Timestamps strictly increasing, offsets non-decreasing and >= base, whole entries.
    pub fn sanity_check(&self, next_offset: i64) -> Result<(), String> {
        let len = std::fs::metadata(&self.path)
            .map_err(|e| format!("{}: {e}", self.path.display()))?
            .len();
        if len % ENTRY_SIZE as u64 != 0 {
            return Err(format!(
                "Time index file {} is corrupt, found {len} bytes which is neither positive nor a multiple of 12",
                self.path.display()
            ));
        }
        let g = self.read().map_err(|e| e.to_string())?;
        let idx = g.as_ref().unwrap();
        let (mut prev_ts, mut prev_rel) = (i64::MIN, 0i64);
        for i in 0..idx.entries() {
            let e = idx.entry(i);
            let (t, r) = (ts(e), rel(e));
            if t <= prev_ts
                || r < prev_rel
                || self.base_offset + r >= next_offset.max(self.base_offset + 1)
            {
                return Err(format!(
                    "time index {} entry {i} (timestamp {t}, offset {}) is out of order or past the log",
                    self.path.display(),
                    self.base_offset + r
                ));
            }
            prev_ts = t;
            prev_rel = r;
        }
        Ok(())
    }
}

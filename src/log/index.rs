//! The mmap mechanics both sparse indexes share, as Kafka's `AbstractIndex`: preallocate to the
//! max size rounded down to whole entries, append, binary-search "largest entry <= target",
//! trim to the valid entries, reset, resize. Opened lazily (Kafka's `LazyIndex`).

use std::fs::File;
use std::io::{self, Write};
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use memmap2::{MmapMut, MmapOptions};

use crate::os::safe_fs::{Access, Dir};
use crate::util::sync::RwLockExt;

const PAGE: u64 = 4096;

/// One memory-mapped index file with fixed-size entries.
pub struct IndexFile {
    dir: Arc<Dir>,
    name: String,
    path: PathBuf,
    /// Entries live only in memory: a read-only mount's private mapping, or a rebuilt index
    /// a read-only mount may not write. Nothing reaches the file.
    memory_only: bool,
    /// Open while the index may change (the active segment's); an inactive index keeps only
    /// its mapping, so thousands of segments do not hold thousands of descriptors.
    file: Option<File>,
    mmap: Option<MmapMut>,
    entry_size: usize,
    entries: usize,
    /// Length of the file (and the mapping), a whole number of entries.
    len: u64,
    /// Highest byte offset known to have disk blocks reserved (see `reserve`).
    reserved_to: u64,
}

impl IndexFile {
    /// Opens (or creates) the index. A new or empty file is preallocated to `max_size` rounded
    /// down to whole entries; an existing one is taken as full of entries, as Kafka does.
    pub fn open(
        dir: &Arc<Dir>,
        name: &str,
        entry_size: usize,
        max_size: u64,
        preallocate: bool,
    ) -> io::Result<Self> {
        let file = match dir.open_file(name, Access::ReadWrite) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => dir.create_new(name)?,
            r => r?,
        };
        let existing = file.metadata()?.len();
        let mut idx = IndexFile {
            dir: dir.clone(),
            name: name.to_string(),
            path: dir.join(name),
            memory_only: false,
            file: Some(file),
            mmap: None,
            entry_size,
            entries: (existing / entry_size as u64) as usize,
            len: existing,
            reserved_to: existing,
        };
        if existing == 0 {
            idx.entries = 0;
            if preallocate {
                idx.resize(max_size)?;
            }
        } else if existing % entry_size as u64 != 0 || preallocate {
            let target = if preallocate {
                max_size.max(existing)
            } else {
                existing
            };
            idx.resize(target)?;
        } else {
            idx.map()?;
        }
        Ok(idx)
    }

    /// Opens the index without ever writing it: a private (copy-on-write) mapping of the file,
    /// whole entries only; a missing file is an empty index.
    pub fn open_read_only(dir: &Arc<Dir>, name: &str, entry_size: usize) -> io::Result<Self> {
        let file = match dir.open_file(name, Access::ReadOnly) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => None,
            r => Some(r?),
        };
        let len = match &file {
            Some(f) => f.metadata()?.len() / entry_size as u64 * entry_size as u64,
            None => 0,
        };
        let mmap = match &file {
            Some(f) if len > 0 => {
                // SAFETY: a private mapping of a file we only read; it lives no longer than
                // `self`.
                Some(unsafe { MmapOptions::new().len(len as usize).map_copy(f)? })
            }
            _ => None,
        };
        Ok(IndexFile::memory_only(dir, name, entry_size, mmap, len))
    }

    /// An index whose entries are `mmap` (`len` bytes, whole entries) and never reach a file.
    fn memory_only(
        dir: &Arc<Dir>,
        name: &str,
        entry_size: usize,
        mmap: Option<MmapMut>,
        len: u64,
    ) -> Self {
        IndexFile {
            dir: dir.clone(),
            name: name.to_string(),
            path: dir.join(name),
            memory_only: true,
            file: None,
            mmap,
            entry_size,
            entries: (len / entry_size as u64) as usize,
            len,
            reserved_to: len,
        }
    }

    /// An index held only in memory, holding exactly `entries`.
    pub fn in_memory(
        dir: &Arc<Dir>,
        name: &str,
        entry_size: usize,
        entries: &[u8],
    ) -> io::Result<Self> {
        let len = entries.len() / entry_size * entry_size;
        let mmap = if len > 0 {
            let mut m = MmapMut::map_anon(len)?;
            m.copy_from_slice(&entries[..len]);
            Some(m)
        } else {
            None
        };
        Ok(IndexFile::memory_only(
            dir, name, entry_size, mmap, len as u64,
        ))
    }

    fn map(&mut self) -> io::Result<()> {
        self.mmap = if self.len == 0 {
            None
        } else {
            // SAFETY: the file is owned by this index; the mapping lives no longer than `self`.
            Some(unsafe { MmapMut::map_mut(self.file()?)? })
        };
        Ok(())
    }

    #[cfg(any(test, feature = "internals"))]
    pub fn path(&self) -> &Path {
        &self.path
    }
    pub fn entries(&self) -> usize {
        self.entries
    }
    pub fn max_entries(&self) -> usize {
        (self.len / self.entry_size as u64) as usize
    }
    pub fn file_len(&self) -> u64 {
        self.len
    }
    pub fn is_full(&self) -> bool {
        self.entries >= self.max_entries()
    }

    /// Entry `i` (< entries or < max_entries for raw inspection).
    pub fn entry(&self, i: usize) -> &[u8] {
        let m = self.mmap.as_ref().expect("entry of an empty index");
        &m[i * self.entry_size..(i + 1) * self.entry_size]
    }

    /// Makes sure the disk blocks behind the next entry exist, so writing through the mapping
    /// can never fault on a full disk: ENOSPC is returned here instead.
    pub fn reserve_next(&mut self) -> io::Result<()> {
        let end = ((self.entries + 1) * self.entry_size) as u64;
        if end <= self.reserved_to || end > self.len {
            return Ok(());
        }
        let start = (self.entries * self.entry_size) as u64 / PAGE * PAGE;
        let want = (start + 16 * PAGE).min(self.len) - start;
        // SAFETY: plain syscall on an fd we own.
        let rc = unsafe {
            libc::fallocate(
                self.file()?.as_raw_fd(),
                libc::FALLOC_FL_KEEP_SIZE,
                start as libc::off_t,
                want as libc::off_t,
            )
        };
        if rc != 0 {
            let e = io::Error::last_os_error();
            if e.raw_os_error() != Some(libc::EOPNOTSUPP) {
                return Err(e);
            }
        }
        self.reserved_to = start + want;
        Ok(())
    }

    /// Appends one entry. The caller checked `is_full` and called `reserve_next`.
    pub fn append(&mut self, entry: &[u8]) -> io::Result<()> {
        debug_assert_eq!(entry.len(), self.entry_size);
        if self.is_full() {
            return Err(io::Error::other(format!(
                "index {} is full ({} entries)",
                self.path.display(),
                self.entries
            )));
        }
        self.reserve_next()?;
        let at = self.entries * self.entry_size;
        let m = self.mmap.as_mut().expect("mapped");
        m[at..at + self.entry_size].copy_from_slice(entry);
        self.entries += 1;
        Ok(())
    }

    /// Resizes the file and mapping to `size` rounded down to whole entries (at least the valid
    /// entries).
    pub fn resize(&mut self, size: u64) -> io::Result<()> {
        let es = self.entry_size as u64;
        let rounded = (size / es * es).max(self.entries as u64 * es);
        if rounded == self.len && (self.mmap.is_some() || rounded == 0) {
            return Ok(());
        }
        self.mmap = None;
        self.file()?.set_len(rounded)?;
        self.len = rounded;
        self.reserved_to = self.reserved_to.min(rounded);
        self.map()
    }

    /// Shrinks the file to exactly its valid entries (at roll and close).
    pub fn trim_to_valid_size(&mut self) -> io::Result<()> {
        self.resize((self.entries * self.entry_size) as u64)
    }

    pub fn flush(&self) -> io::Result<()> {
        if self.memory_only {
            return Ok(());
        }
        if let Some(m) = &self.mmap {
            m.flush()?;
        }
        match &self.file {
            Some(f) => f.sync_all(),
            None => Ok(()),
        }
    }

    /// The file, reopened if it was released.
    fn file(&mut self) -> io::Result<&File> {
        if self.memory_only {
            return Err(io::Error::new(
                io::ErrorKind::PermissionDenied,
                format!(
                    "{} is held in memory only (read-only mount)",
                    self.path.display()
                ),
            ));
        }
        if self.file.is_none() {
            self.file = Some(self.dir.open_file(&self.name, Access::ReadWrite)?);
        }
        Ok(self.file.as_ref().unwrap())
    }

    /// Closes the descriptor, keeping the mapping (for an index that no longer changes).
    pub fn release_file(&mut self) {
        self.file = None;
    }

    /// Index of the largest entry whose key is <= `target`, by binary search over the valid
    /// entries; `None` when the index is empty or every key is larger.
    pub fn largest_lower_bound(&self, target: i64, key: impl Fn(&[u8]) -> i64) -> Option<usize> {
        if self.entries == 0 || key(self.entry(0)) > target {
            return None;
        }
        let (mut lo, mut hi) = (0usize, self.entries - 1);
        while lo < hi {
            let mid = (lo + hi).div_ceil(2);
            if key(self.entry(mid)) <= target {
                lo = mid;
            } else {
                hi = mid - 1;
            }
        }
        Some(lo)
    }
}

/// An index file opened lazily (Kafka's `LazyIndex`): nothing is mapped until first use.
/// Readers share the mapping; appends, trims and resets take it exclusively.
pub struct LazyIndex {
    dir: Arc<Dir>,
    name: String,
    path: PathBuf,
    entry_size: usize,
    max_size: u64,
    /// Never write the file (a read-only mount).
    read_only: bool,
    inner: std::sync::RwLock<Option<IndexFile>>,
}

impl LazyIndex {
    pub fn new(
        dir: Arc<Dir>,
        name: String,
        entry_size: usize,
        max_size: u64,
        read_only: bool,
    ) -> LazyIndex {
        LazyIndex {
            path: dir.join(&name),
            dir,
            name,
            entry_size,
            max_size,
            read_only,
            inner: std::sync::RwLock::new(None),
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// Runs `f` on the open index (opening it, without preallocating, if needed).
    pub fn with<R>(&self, f: impl FnOnce(&IndexFile) -> R) -> io::Result<R> {
        {
            let g = self.inner.read_guard();
            if let Some(i) = g.as_ref() {
                return Ok(f(i));
            }
        }
        self.with_mut(|i| Ok(f(i)))
    }

    /// Runs `f` with exclusive access (opening the file if needed).
    pub fn with_mut<R>(&self, f: impl FnOnce(&mut IndexFile) -> io::Result<R>) -> io::Result<R> {
        let mut g = self.inner.write_guard();
        if g.is_none() {
            // Opened for reading: keep the mapping, close the descriptor (reopened if the index
            // is ever resized or synced). A missing file (a deleted segment's) is an empty
            // index, never recreated: lookups then scan the segment from its start.
            let idx = if self.read_only {
                IndexFile::open_read_only(&self.dir, &self.name, self.entry_size)?
            } else {
                match self.dir.open_file(&self.name, Access::ReadOnly) {
                    Err(e) if e.kind() == io::ErrorKind::NotFound => {
                        IndexFile::in_memory(&self.dir, &self.name, self.entry_size, &[])?
                    }
                    _ => {
                        let mut idx = IndexFile::open(
                            &self.dir,
                            &self.name,
                            self.entry_size,
                            self.max_size,
                            false,
                        )?;
                        idx.release_file();
                        idx
                    }
                }
            };
            *g = Some(idx);
        }
        f(g.as_mut().unwrap())
    }

    /// Opens for appending: preallocated to the max size, entries kept. The descriptor is
    /// closed once the file is mapped: entries are written through the mapping, and the file
    /// is reopened only to resize, reserve blocks or sync (so an active segment holds one
    /// descriptor, its `.log`, not three).
    pub fn open_active(&self) -> io::Result<()> {
        if self.read_only {
            return self.with(|_| ());
        }
        let mut g = self.inner.write_guard();
        match g.as_mut() {
            Some(i) if !i.memory_only => {
                i.resize(self.max_size.max(i.file_len()))?;
                i.release_file();
                Ok(())
            }
            _ => {
                let mut idx =
                    IndexFile::open(&self.dir, &self.name, self.entry_size, self.max_size, true)?;
                idx.release_file();
                *g = Some(idx);
                Ok(())
            }
        }
    }

    pub fn entries(&self) -> io::Result<usize> {
        self.with(|i| i.entries())
    }

    /// Reserves the disk blocks of the next entry (reopening the file for that, then closing it
    /// again: it is needed once per 16 pages of entries).
    pub fn reserve_next(&self) -> io::Result<()> {
        self.with_mut(|i| {
            let had = i.file.is_some();
            let r = i.reserve_next();
            if !had {
                i.release_file();
            }
            r
        })
    }

    /// Shrinks to the valid entries, if open.
    pub fn trim(&self) -> io::Result<()> {
        match self.inner.write_guard().as_mut() {
            Some(i) if i.memory_only => Ok(()),
            Some(i) => {
                i.trim_to_valid_size()?;
                i.release_file();
                Ok(())
            }
            None => Ok(()),
        }
    }

    pub fn flush(&self) -> io::Result<()> {
        match self.inner.write_guard().as_mut() {
            Some(i) if !i.memory_only => {
                let had = i.file.is_some();
                i.file()?;
                let r = i.flush();
                if !had {
                    i.release_file();
                }
                r
            }
            _ => Ok(()),
        }
    }

    /// How many entries the preallocated file holds.
    pub fn max_entries(&self) -> usize {
        (self.max_size / self.entry_size as u64) as usize
    }

    /// Replaces the file with exactly `entries` (a rebuilt index), atomically: written to a
    /// temporary file and renamed over. One write instead of truncating, preallocating and
    /// trimming a mapped file.
    pub fn replace_with(&self, entries: &[u8]) -> io::Result<()> {
        let mut g = self.inner.write_guard();
        *g = None;
        if self.read_only {
            *g = Some(IndexFile::in_memory(
                &self.dir,
                &self.name,
                self.entry_size,
                entries,
            )?);
            return Ok(());
        }
        let tmp = format!("{}.tmp", self.name);
        self.dir.remove_if_exists(&tmp)?;
        self.dir.create_new(&tmp)?.write_all(entries)?;
        self.dir.rename(&tmp, &self.name)
    }

    /// Unmaps and closes the file.
    pub fn close(&self) {
        *self.inner.write_guard() = None;
    }

    /// The file's length must be a whole number of entries.
    pub fn check_length(&self, what: &str, width: &str) -> Result<(), String> {
        let len = self
            .dir
            .open_file(&self.name, Access::ReadOnly)
            .and_then(|f| f.metadata())
            .map_err(|e| format!("{}: {e}", self.path.display()))?
            .len();
        if len % self.entry_size as u64 != 0 {
            return Err(format!(
                "{what} {} is corrupt, found {len} bytes which is neither positive nor a multiple of {width}",
                self.path.display()
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(e: &[u8]) -> i64 {
        crate::record::be::i32_at(e, 0) as i64
    }

    #[test]
    fn preallocates_rounds_down_and_trims() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("0.index");
        let dir = Arc::new(Dir::open(d.path()).unwrap());
        let mut i = IndexFile::open(&dir, "0.index", 8, 100, true).unwrap();
        assert_eq!(i.file_len(), 96);
        assert_eq!(i.max_entries(), 12);
        for k in [3i32, 7, 9] {
            let mut e = k.to_be_bytes().to_vec();
            e.extend_from_slice(&(k * 10).to_be_bytes());
            i.append(&e).unwrap();
        }
        i.trim_to_valid_size().unwrap();
        assert_eq!(std::fs::metadata(&p).unwrap().len(), 24);
        drop(i);
        let i = IndexFile::open(&dir, "0.index", 8, 100, false).unwrap();
        assert_eq!(i.entries(), 3);
    }

    #[test]
    fn binary_search_edges() {
        let d = tempfile::tempdir().unwrap();
        let dir = Arc::new(Dir::open(d.path()).unwrap());
        let mut i = IndexFile::open(&dir, "x", 8, 8 * 4, true).unwrap();
        assert_eq!(i.largest_lower_bound(5, key), None, "empty");
        for k in [10i32, 20, 30, 40] {
            let mut e = k.to_be_bytes().to_vec();
            e.extend_from_slice(&[0; 4]);
            i.append(&e).unwrap();
        }
        assert!(i.is_full());
        assert!(i.append(&[0; 8]).is_err());
        assert_eq!(i.largest_lower_bound(5, key), None, "before first");
        assert_eq!(i.largest_lower_bound(10, key), Some(0), "first");
        assert_eq!(i.largest_lower_bound(25, key), Some(1), "between");
        assert_eq!(i.largest_lower_bound(40, key), Some(3), "last");
        assert_eq!(i.largest_lower_bound(1000, key), Some(3), "after last");
    }
}

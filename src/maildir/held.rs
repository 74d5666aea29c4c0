//! A file of a maildir's `tmp/` (or one being written straight into `new/`): held by the
//! mount, not yet a record. Small ones are kept in memory; past [`IN_MEMORY`] bytes the
//! bytes move to a file of the mount's own that has no name (`O_TMPFILE`, in the first log
//! dir's root, never in a partition's folder), so nothing is left of it after a crash.

use std::fs::File;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use crate::error::{Error, Result};

/// The bytes a held file keeps in memory before it moves them to a file.
pub const IN_MEMORY: u64 = 256 * 1024;

/// The permission bits of a held file, as of a `table/` key.
pub const HELD_MODE: u16 = 0o644;

/// One held file.
pub struct Held {
    mem: Vec<u8>,
    spill: Option<File>,
    len: u64,
    mtime: SystemTime,
    spill_dir: PathBuf,
    /// Its permission bits: 0644, or fewer when its writer took some away (`mkstemp`).
    mode: u16,
    /// Renamed into `new/` or `cur/`: it is a record now, and takes no more writes.
    delivered: bool,
}

impl Held {
    /// An empty file, which spills into `spill_dir` when it grows large.
    pub fn new(spill_dir: &Path) -> Held {
        Held {
            mem: Vec::new(),
            spill: None,
            len: 0,
            mtime: SystemTime::now(),
            spill_dir: spill_dir.to_path_buf(),
            mode: HELD_MODE,
            delivered: false,
        }
    }

    /// What a file delivered and closed still shows for a while under the name it was
    /// delivered as: its size, time and mode, no bytes.
    pub fn delivered_as(len: u64, mtime: SystemTime, mode: u16, spill_dir: &Path) -> Held {
        Held {
            len,
            mtime,
            mode,
            delivered: true,
            ..Held::new(spill_dir)
        }
    }

    /// Whether it was renamed into `new/` or `cur/` (a record now: writes are refused).
    pub fn delivered(&self) -> bool {
        self.delivered
    }

    /// It was renamed into `new/` or `cur/`.
    pub fn mark_delivered(&mut self) {
        self.delivered = true;
    }

    /// Its permission bits.
    pub fn mode(&self) -> u16 {
        self.mode
    }

    /// chmod(2): the bits of [`HELD_MODE`] may be taken away and given back (a temporary
    /// file's writer makes it 0600, then gives it its final mode); false, changing nothing,
    /// for any other bit, and for any mode but its own once it is delivered. What becomes of the file (a record) has no mode of its own.
    pub fn set_mode(&mut self, mode: u32) -> bool {
        // Delivered, it keeps its mode: setting it to what it is succeeds (a mail client
        // sets the mode of the file it just made).
        if self.delivered {
            return mode & 0o7777 == u32::from(self.mode);
        }
        if mode & 0o7777 & !u32::from(HELD_MODE) != 0 {
            return false;
        }
        self.mode = (mode & 0o777) as u16;
        true
    }

    pub fn len(&self) -> u64 {
        self.len
    }

    /// (Clippy's pair of `len`, for the crate's open face under `internals`.)
    #[cfg(feature = "internals")]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn mtime(&self) -> SystemTime {
        self.mtime
    }

    /// Whether its bytes are in a file rather than in memory.
    #[cfg(test)]
    pub fn spilled(&self) -> bool {
        self.spill.is_some()
    }

    /// Writes `data` at `offset` (a hole before it reads as zeros).
    pub fn write_at(&mut self, offset: u64, data: &[u8]) -> Result<()> {
        let end = offset
            .checked_add(data.len() as u64)
            .ok_or_else(|| Error::from(std::io::Error::from_raw_os_error(libc::EFBIG)))?;
        if self.spill.is_none() && end > IN_MEMORY {
            let f = spill_file(&self.spill_dir)?;
            f.write_all_at(&self.mem, 0)?;
            self.mem = Vec::new();
            self.spill = Some(f);
        }
        match &self.spill {
            Some(f) => f.write_all_at(data, offset)?,
            None => {
                let (o, e) = (offset as usize, end as usize);
                if self.mem.len() < e {
                    self.mem.resize(e, 0);
                }
                self.mem[o..e].copy_from_slice(data);
            }
        }
        self.len = self.len.max(end);
        self.mtime = SystemTime::now();
        Ok(())
    }

    /// Up to `size` bytes from `offset`.
    pub fn read_at(&self, offset: u64, size: usize) -> Result<Vec<u8>> {
        let end = offset.saturating_add(size as u64).min(self.len);
        if offset >= end {
            return Ok(Vec::new());
        }
        match &self.spill {
            None => Ok(self.mem[offset as usize..end as usize].to_vec()),
            Some(f) => {
                let mut buf = vec![0u8; (end - offset) as usize];
                f.read_exact_at(&mut buf, offset)?;
                Ok(buf)
            }
        }
    }

    /// Cuts or extends (with zeros) the file to `len` bytes.
    pub fn truncate(&mut self, len: u64) -> Result<()> {
        match &self.spill {
            Some(f) => f.set_len(len)?,
            None if len > IN_MEMORY => {
                self.write_at(len - 1, &[0])?;
                if let Some(f) = &self.spill {
                    f.set_len(len)?;
                }
            }
            None => self.mem.resize(len as usize, 0),
        }
        self.len = len;
        self.mtime = SystemTime::now();
        Ok(())
    }

    /// The whole content, as the value of one record with `key`: EMSGSIZE (nothing read)
    /// when that record's batch would be over `max` bytes (`max.message.bytes`), naming the
    /// batch's size, which the limit applies to.
    pub fn bytes(&self, key: &[u8], max: usize) -> Result<Vec<u8>> {
        let len = usize::try_from(self.len).unwrap_or(usize::MAX);
        let batch = crate::produce::lone_record_batch_size(Some(key), len);
        if len > max || batch > max {
            return Err(Error::RecordTooLarge { size: batch, max });
        }
        self.read_at(0, self.len as usize)
    }
}

/// A file without a name in `dir`, where the system allows one; else a named file removed at
/// once.
fn spill_file(dir: &Path) -> Result<File> {
    let unnamed = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(libc::O_TMPFILE | libc::O_CLOEXEC | libc::O_NOFOLLOW)
        .mode(0o600)
        .open(dir);
    match unnamed {
        Ok(f) => Ok(f),
        Err(_) => {
            static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
            let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let path = dir.join(format!(".topicfs-held-{}-{n}", std::process::id()));
            let f = std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .create_new(true)
                .custom_flags(libc::O_CLOEXEC | libc::O_NOFOLLOW)
                .mode(0o600)
                .open(&path)?;
            std::fs::remove_file(&path)?;
            Ok(f)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_files_stay_in_memory_large_ones_spill_to_an_unnamed_file() {
        let dir = tempfile::tempdir().unwrap();
        let mut h = Held::new(dir.path());
        h.write_at(0, b"hello").unwrap();
        h.write_at(10, b"x").unwrap();
        assert_eq!(h.bytes(b"k", 100).unwrap(), b"hello\0\0\0\0\0x");
        assert!(!h.spilled());
        let big = vec![7u8; IN_MEMORY as usize];
        h.write_at(11, &big).unwrap();
        assert!(h.spilled());
        assert_eq!(h.len(), 11 + IN_MEMORY);
        let all = h.bytes(b"k", usize::MAX).unwrap();
        assert_eq!(&all[..11], b"hello\0\0\0\0\0x");
        assert!(all[11..].iter().all(|&b| b == 7));
        // The spill file has no name in the directory.
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
        // Refused by the size of the batch its record makes, which the error names.
        let batch = crate::produce::lone_record_batch_size(Some(b"k"), h.len() as usize);
        assert!(
            matches!(h.bytes(b"k", 100), Err(Error::RecordTooLarge { size, max: 100 }) if size == batch)
        );
        h.truncate(3).unwrap();
        assert_eq!(h.bytes(b"k", 100).unwrap(), b"hel");
        assert_eq!(h.read_at(1, 10).unwrap(), b"el");
    }
}
